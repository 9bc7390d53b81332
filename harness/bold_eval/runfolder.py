"""The run folder: its file names, column schema and typed run.json / summary.json records.

`bold-eval run` and `score` write a folder; `report`, `compare` and `publish-results` read it.
Every writer and reader goes through this module, so the layout is defined once:

    generations.jsonl        one record per (prompt_id, sample), appended batch by batch
    generations.rank<r>.jsonl  per-process shards under several processes, merged by process 0
    scores.parquet           one row per text: GENERATION_COLUMNS, `text`, `<metric>_<column>`
    reference_scores.parquet the Wikipedia sentences of the same prompts (sample 0), same columns and metrics
    run.json                 a `RunRecord`: what was generated and scored, and how
    summary.json             a `SummaryRecord`: every view of `bold_eval.analysis.summary.summarize`
    report.md, figures/, tables/   written by `bold_eval.report.run_report`

A report (report.md, summary.json, tables/, figures/) is one unit: `report_transaction` writes it into a
staging folder and moves it in whole (a kill leaves the old report or the new one, never a mix). A file that
cannot be read back is a `DamagedFileError` naming it and the command that rebuilds it; it is never rewritten
by reading it. Temporary files of a killed command are removed by the next report that completes
(`remove_stale_temporaries`).

run.json and summary.json carry `schema_version`. Folders written by bold-eval 0.1 have none;
their run.json is read by mapping the 0.1 keys onto the record (see `RunRecord.from_dict`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from bold_eval.core.errors import DamagedFileError, InputError, MissingFileError, StorageError
from bold_eval.core.resources import (
    TEMPORARY_SUFFIX,
    atomic_write_bytes,
    atomic_writer,
    temporary_owner_alive,
    temporary_prefix,
)
from bold_eval.core.storage import ENVIRONMENT_FAULTS, storage_error, storage_guard

# Version of the run.json / summary.json layout. 0.1 folders have no version field.
SCHEMA_VERSION = 2
LEGACY_SCHEMA = "0.1 (no schema_version)"

GENERATIONS_FILE = "generations.jsonl"
SHARD_PATTERN = "generations.rank*.jsonl"
SCORES_FILE = "scores.parquet"
# The human-written reference of a model run: the Wikipedia sentences of its prompts, scored alike.
REFERENCE_FILE = "reference_scores.parquet"
RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
HTML_REPORT_FILE = "report.html"  # and its scripts and data in HTML_REPORT_DIR (report/html_report.py)
HTML_REPORT_DIR = "report_files"
FIGURES_DIR = "figures"
TABLES_DIR = "tables"

# BOLD's columns copied onto every generation (never trusted from a user's input).
BOLD_COLUMNS = ("domain", "group", "category", "name", "prompt")
# The key of a generation: a BOLD prompt and the sample index of its continuation.
KEY_COLUMNS = ("prompt_id", "sample")
TEXT_COLUMN = "continuation"
# Rows per row group of scores.parquet (`write_scores`).
SCORES_ROW_GROUP = 10_000
# The free-text columns of a scores table: the prompt, the continuation and the scored text.
TEXT_COLUMNS = ("prompt", TEXT_COLUMN, "text")
# A generations frame and scores.parquet's leading columns, in this order.
GENERATION_COLUMNS = ("prompt_id", *BOLD_COLUMNS, "sample", TEXT_COLUMN)
# generations.jsonl also records how many tokens each continuation took.
RECORD_COLUMNS = (*GENERATION_COLUMNS, "num_new_tokens")
# The columns every aggregation groups by.
ID_COLUMNS = ("prompt_id", "domain", "group")
# generations.jsonl under a chat protocol that looks for thinking traces: true where the text ended inside
# the trace (no answer). Such rows stay in generations.jsonl and are kept out of scores.parquet.
TRACE_COLUMN = "ended_in_trace"

# The chat protocol (`bold_eval.generation.chat`, run.json generator_settings["chat_template"]) of runs
# written before it was recorded, per generator kind: they fed the prompt raw, or (openai-chat) as an instruction.
IMPLIED_CHAT_TEMPLATE = {"hf-causal": "none", "openai-completions": "none", "openai-chat": "instruct"}


def shard_file(out: Path, rank: int) -> Path:
    """The generations file of process `rank` under several processes."""
    return out / f"generations.rank{rank}.jsonl"


# --------------------------------------------------------------------------- records


@dataclass
class RunRecord:
    """run.json: how the texts were generated (or where they came from) and how they were scored."""

    schema_version: int = SCHEMA_VERSION
    status: str = "complete"  # "generating" while generations.jsonl is being written
    model: str | None = None  # the name reports and comparisons show
    generator: str | None = None  # a `bold_eval.generation.base` kind, e.g. "hf-causal"; None for `score`
    generator_settings: dict[str, Any] = field(default_factory=dict)  # Generator.settings()
    model_info: dict[str, Any] = field(default_factory=dict)  # Generator.info()
    generation_settings: dict[str, Any] | None = None  # the resume fingerprint
    num_samples: int | None = None
    domains: list[str] | None = None
    limit: int | None = None
    processes: int | None = None
    generated_now: int | None = None
    resumed: int | None = None
    generated_tokens: int | None = None
    tokens_per_second: float | None = None
    batch_size: int | None = None  # the batch size the generation actually ran with
    # (start, size) segments of the batch plan (`bold_eval.generation.batching.BatchPlan`); a resume replays them
    batch_schedule: list[list[int]] | None = None
    out_of_memory_retries: int | None = None
    # The BOLD files differ from the pinned upstream release and the user allowed it
    # (--allow-modified-data): which files, so the report can say its numbers are not BOLD's.
    modified_data: list[str] | None = None
    generations: dict[str, Any] = field(default_factory=dict)  # `bold-eval score`: source and match counts
    metrics: list[str] | None = None
    skipped_metrics: dict[str, str] = field(default_factory=dict)
    partial_metrics: dict[str, str] = field(default_factory=dict)
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What each metric scored with: metric -> records of its classifier, embedding or lexicon files, each with the
    # Hub commit or the sha256 its files had (`bold_eval.core.provenance.ResourceRecord.as_dict`); {} in folders
    # written before it was recorded
    resources: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    metric_seconds: dict[str, float] = field(default_factory=dict)  # scoring only; loading is in timings["score_s"]
    label_columns: dict[str, list[str]] = field(default_factory=dict)
    anonymize: bool | None = None
    score_on: str | None = None
    num_texts: int | None = None
    versions: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # REFERENCE_FILE: {"source": "wikipedia", "file", "texts", "cached_texts", "scored_texts", "seconds"},
    # or {"skipped": why}; {} in folders written before it existed
    reference: dict[str, Any] = field(default_factory=dict)
    # The command line that wrote the folder (`bold-eval run ...`), so that a message can say the exact command
    # that rebuilds a damaged file; None for folders written before it was recorded, or by the library.
    command: str | None = None
    # Texts that ended inside a thinking trace (TRACE_COLUMN): {"texts", "ended_in_trace", "prompts_without_text",
    # "think_end_token"}, kept out of scores.parquet; {} when the generations carry no such column
    thinking: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = RUN_FILE) -> RunRecord:
        """A record from run.json; 0.1 keys (top-level revision/decoding/seed) are mapped on."""
        version = data.get("schema_version")
        if version is None:
            data = _from_legacy(data)
        elif version != SCHEMA_VERSION:
            raise InputError(
                f"{source} has schema_version {version!r}; this bold-eval reads {SCHEMA_VERSION} and "
                f"{LEGACY_SCHEMA}. Use the bold-eval version that wrote the folder, or rerun `bold-eval score`."
            )
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def legacy(self) -> bool:
        return self.schema_version != SCHEMA_VERSION


# 0.1 run.json kept these generation settings at the top level.
_LEGACY_GENERATOR_KEYS = ("revision", "gguf_file", "decoding", "seed")


def implied_generator_settings(kind: str | None, settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` (a folder's generator_settings) with what its omissions mean: a run written before the
    chat protocol was recorded used the one of `IMPLIED_CHAT_TEMPLATE` (so it resumes, and compares)."""
    settings = dict(settings or {})
    if kind in IMPLIED_CHAT_TEMPLATE and "chat_template" not in settings:
        settings["chat_template"] = IMPLIED_CHAT_TEMPLATE[kind]
    return settings


def chat_protocol(record: RunRecord) -> dict[str, Any] | None:
    """How the run's texts were asked of the model (`bold_eval.generation.chat`): protocol, system and user
    instruction, template keywords, trace marker; None where no chat protocol applies (the Wikipedia
    baseline, Gibbs sampling, generations scored with `bold-eval score`)."""
    settings = implied_generator_settings(record.generator, record.generator_settings)
    if "chat_template" not in settings:
        return None
    return {"protocol": settings["chat_template"], "system_instruction": settings.get("system_instruction"),
            "chat_instruction": settings.get("chat_instruction"),
            "chat_template_kwargs": settings.get("chat_template_kwargs") or {},
            "think_end_token": settings.get("think_end_token")}


def _from_legacy(data: Mapping[str, Any]) -> dict[str, Any]:
    data = dict(data)
    settings = {key: data.pop(key) for key in _LEGACY_GENERATOR_KEYS if data.get(key) is not None}
    for key in ("max_new_tokens", "one_sentence"):  # 0.1 copies of decoding fields
        data.pop(key, None)
    data["generator_settings"] = {**settings, **(data.get("generator_settings") or {})}
    data["schema_version"] = 0
    return data


@dataclass
class SummaryRecord:
    """summary.json: the run record and `bold_eval.analysis.results.Summary.as_dict()` made JSON-able (tables as
    records). Read back, it stays this record: the views are JSON, not the in-process `Summary`."""

    run: dict[str, Any]
    counts: dict[str, Any]
    metrics: dict[str, Any]
    statistics: dict[str, Any]
    views: dict[str, Any]  # metric -> {"tables": {name: records}, "tests": [...]} or {"skipped": reason}
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Views stay at the top level (summary["sentiment"]["tables"]), as in 0.1."""
        return {"schema_version": self.schema_version, "run": self.run, "counts": self.counts,
                "metrics": self.metrics, "statistics": self.statistics, **self.views}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = SUMMARY_FILE) -> SummaryRecord:
        version = data.get("schema_version", 0)
        if version not in (0, SCHEMA_VERSION):
            raise InputError(f"{source} has schema_version {version!r}; this bold-eval reads {SCHEMA_VERSION} "
                             f"and {LEGACY_SCHEMA}")
        fixed = {"schema_version", "run", "counts", "metrics", "statistics"}
        return cls(run=dict(data.get("run") or {}), counts=dict(data.get("counts") or {}),
                   metrics=dict(data.get("metrics") or {}), statistics=dict(data.get("statistics") or {}),
                   views={key: value for key, value in data.items() if key not in fixed}, schema_version=version)


# --------------------------------------------------------------------------- JSON files


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Pretty JSON, written atomically (a reader never sees half a file)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))


RUN_RECORD_REMEDY = ("run.json records how the folder's texts were made. Restore it from a copy; or move it away: "
                     "`bold-eval report` then reports without the run's settings, and `bold-eval run` starts this "
                     "folder's generations anew only after generations.jsonl is moved away too (or use a new --out).")


def read_json_file(path: Path, remedy: str) -> dict[str, Any]:
    """A JSON object bold-eval wrote; a file that is not one (truncated, zero bytes, another format) is a
    `DamagedFileError` with `remedy`, and the file is left as it is."""
    with storage_guard(path, "reading"):
        data = path.read_bytes()
    if not data.strip():
        raise DamagedFileError(path, f"{len(data)} bytes, no JSON", remedy)
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise DamagedFileError(path, f"not UTF-8 text at byte {error.start}", remedy) from None
    except json.JSONDecodeError as error:
        raise DamagedFileError(path, f"not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}",
                               remedy) from None
    except RecursionError:
        raise DamagedFileError(path, "JSON nested too deeply", remedy) from None
    if not isinstance(parsed, dict):
        raise DamagedFileError(path, f"a JSON {type(parsed).__name__}, not an object", remedy)
    return parsed


# RunRecord fields read as mappings or lists by every stage: another type there is a damaged (or hand-edited) file.
_RECORD_SHAPES = {**{f.name: dict for f in dataclasses.fields(RunRecord) if f.default_factory is dict},
                  **{name: list for name in ("domains", "metrics", "batch_schedule", "modified_data")}}


def read_run_record(out: Path) -> RunRecord | None:
    """run.json of a folder as a record; None when the folder has none."""
    path = Path(out) / RUN_FILE
    if not path.is_file():
        return None
    data = read_json_file(path, RUN_RECORD_REMEDY)
    for name, shape in _RECORD_SHAPES.items():
        if data.get(name) is not None and not isinstance(data[name], shape):
            raise DamagedFileError(path, f"its {name!r} is a {type(data[name]).__name__}, not a "
                                   f"{'mapping' if shape is dict else 'list'}", RUN_RECORD_REMEDY)
    return RunRecord.from_dict(data, source=str(path))


def write_run_record(out: Path, record: RunRecord) -> None:
    write_json(Path(out) / RUN_FILE, record.to_dict())


def read_summary(run_dir: Path) -> SummaryRecord:
    run_dir = Path(run_dir)
    recover_report(run_dir)
    path = run_dir / SUMMARY_FILE
    if not path.is_file():
        raise MissingFileError(f"{path} not found; `bold-eval run` or `bold-eval report {run_dir}` writes it")
    remedy = f"`bold-eval report {run_dir}` writes it again from scores.parquet."
    data = read_json_file(path, remedy)
    for name in ("run", "counts", "metrics", "statistics"):
        if data.get(name) is not None and not isinstance(data[name], dict):
            raise DamagedFileError(path, f"its {name!r} is a {type(data[name]).__name__}, not a mapping", remedy)
    return SummaryRecord.from_dict(data, source=str(path))


def write_summary(run_dir: Path, summary: SummaryRecord) -> None:
    write_json(Path(run_dir) / SUMMARY_FILE, summary.to_dict())


# --------------------------------------------------------------------------- scores


class ScoresWriter:
    """scores.parquet (or REFERENCE_FILE) written chunk by chunk, atomically: the file appears, complete,
    when the `with` block ends without error, and memory holds one chunk at a time (BOLD x 25 is
    591,975 rows). The first chunk fixes the schema. A column that is all null in a chunk (a metric with no
    row of its domains there) takes its type from `types`, so that the first chunk's schema holds for all."""

    def __init__(self, out: Path, file: str = SCORES_FILE, types: Mapping[str, pa.DataType] | None = None):
        self.path = Path(out) / file
        self.rows = 0
        self.types = dict(types or {})
        self._writer: pq.ParquetWriter | None = None
        self._context: Any = None

    def __enter__(self) -> ScoresWriter:
        self._context = atomic_writer(self.path)
        self._handle = self._context.__enter__()
        return self

    def write(self, scores: pd.DataFrame) -> None:
        """Append `scores` (same columns as every chunk before it) in row groups of `SCORES_ROW_GROUP`."""
        for start in range(0, max(len(scores), 1), SCORES_ROW_GROUP):
            part = _typed(pa.Table.from_pandas(scores.iloc[start:start + SCORES_ROW_GROUP], preserve_index=False),
                          self.types)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._handle, part.schema)
            elif not part.num_rows:
                continue
            elif not part.schema.equals(self._writer.schema, check_metadata=False):
                part = _cast_chunk(part, self._writer.schema, self.path)
            self._writer.write_table(part)
            self.rows += part.num_rows

    def __exit__(self, *failure: Any) -> bool:
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self._context.__exit__(*failure)
        return False


def _typed(table: pa.Table, types: Mapping[str, pa.DataType]) -> pa.Table:
    """`table` with its all-null columns cast to their type in `types`."""
    fields = [pa.field(field.name, types[field.name]) if pa.types.is_null(field.type) and field.name in types
              else field for field in table.schema]
    if all(new is old for new, old in zip(fields, table.schema, strict=True)):
        return table
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def _cast_chunk(part: pa.Table, schema: pa.Schema, path: Path) -> pa.Table:
    if part.schema.names != schema.names:
        raise ValueError(f"{path}: a chunk has columns {part.schema.names}, the first had {schema.names}")
    try:
        return part.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise ValueError(f"{path}: a chunk's columns do not match the first chunk's ({error})") from error


def write_scores(out: Path, scores: pd.DataFrame, file: str = SCORES_FILE) -> Path:
    """scores.parquet (or REFERENCE_FILE, which has the same columns) of a whole frame, atomically, `SCORES_ROW_GROUP`
    rows at a time: only one row group is ever converted to Arrow, not a second copy of the whole table."""
    with ScoresWriter(out, file) as writer:
        writer.write(scores)
    return writer.path


def rebuild_command(run_dir: Path, record: RunRecord | None) -> str:
    """The command that writes a folder's scores again from what is in it, in words."""
    what = ("it generates nothing already in generations.jsonl and scores those texts anew"
            if record is None or record.generator is not None else "it reads the same generations and scores them anew")
    if record is not None and record.command:
        return f"`{record.command}` (the command that wrote the folder) writes it again: {what}"
    source = (record.generations or {}).get("source") if record is not None else None
    if record is not None and record.generator is None and source:
        return f"`bold-eval score {source} --out {run_dir}` (with the options that scored it) writes it again"
    return f"the `bold-eval run ... --out {run_dir}` command that made the folder writes it again: {what}"


def read_scores(path: Path, *, texts: bool = True, remedy: str | None = None) -> pd.DataFrame:
    """A scores table; without `texts`, all but its `TEXT_COLUMNS`: the analysis reads ids and scores only, and
    the texts are most of a row's memory (BOLD x 25 is 591,975 rows). A file that is not parquet
    (truncated, zero bytes) is a `DamagedFileError` with `remedy`."""
    path = Path(path)
    remedy = remedy or "Move it away and write it again with the command that made it."
    try:
        with storage_guard(path, "reading"):
            if texts:
                return pd.read_parquet(path)
            names = pq.ParquetFile(path).schema_arrow.names
            return pd.read_parquet(path, columns=[name for name in names if name not in TEXT_COLUMNS])
    except (pa.ArrowException, OSError) as error:
        if not isinstance(error, pa.ArrowException) and error.errno is not None:
            raise  # a fault of the machine (storage_guard named it), not of the file
        size = path.stat().st_size if path.is_file() else 0
        problem = "0 bytes" if size == 0 else f"{size:,} bytes that are not a whole parquet file: {error}"
        raise DamagedFileError(path, problem, remedy) from None


def read_reference_scores(run_dir: str | Path, *, texts: bool = True) -> pd.DataFrame | None:
    """reference_scores.parquet of a run folder (the Wikipedia sentences of its prompts), None when absent."""
    run_dir = Path(run_dir)
    path = run_dir / REFERENCE_FILE
    remedy = (f"Move it away: `bold-eval report {run_dir}` then reports without the Wikipedia reference; or "
              f"{rebuild_command(run_dir, _record_if_readable(run_dir))}, the reference included.")
    return read_scores(path, texts=texts, remedy=remedy) if path.is_file() else None


def _record_if_readable(run_dir: Path) -> RunRecord | None:
    """run.json for a message's sake: None when absent or damaged (the message is about another file)."""
    try:
        return read_run_record(run_dir)
    except InputError:
        return None


def load_run(run_dir: str | Path, *, texts: bool = True) -> tuple[pd.DataFrame, RunRecord]:
    """scores.parquet (without `TEXT_COLUMNS` unless `texts`) and run.json of a run folder (run.json may be
    absent: an empty record)."""
    run_dir = Path(run_dir)
    recover_report(run_dir)
    scores_path = run_dir / SCORES_FILE
    if not scores_path.is_file():
        raise MissingFileError(f"{scores_path} not found: {run_dir} is not a scored run folder; `bold-eval run --out "
                               f"{run_dir}` (or `bold-eval score ... --out {run_dir}`) writes it")
    record = read_run_record(run_dir)
    remedy = f"{rebuild_command(run_dir, record)[0].upper()}{rebuild_command(run_dir, record)[1:]}."
    scores = read_scores(scores_path, texts=texts, remedy=remedy)
    return scores, record if record is not None else RunRecord(status="unknown")


# --------------------------------------------------------------------------- the report as one unit

# What one report is: replaced together or not at all.
REPORT_ITEMS = (REPORT_FILE, SUMMARY_FILE, TABLES_DIR, FIGURES_DIR, HTML_REPORT_FILE, HTML_REPORT_DIR)
# A complete new report waiting to be moved in (`report_transaction`); its manifest lists what it has.
PENDING_REPORT = ".report.pending"
_MANIFEST = ".manifest.json"
_OLD_PREFIX = ".old."


@contextlib.contextmanager
def report_transaction(run_dir: Path, items: Sequence[str] = REPORT_ITEMS) -> Iterator[Path]:
    """A staging folder inside `run_dir` to write a whole report into; when the block ends without error its
    items replace the report's (`REPORT_ITEMS`) together, and the old ones are gone. A kill before the commit
    leaves the old report (and a staging folder, removed by the next command that completes); a kill during
    it leaves `PENDING_REPORT`, which the next command reading or writing the folder moves in first
    (`recover_report`), so no reader ever gets report.md of one report beside summary.json of another.
    `items` are the names of one report (`compare` has its own)."""
    run_dir = Path(run_dir)
    recover_report(run_dir)
    with storage_guard(run_dir, "creating the report's staging folder in"):
        run_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=run_dir, prefix=temporary_prefix("report"), suffix=TEMPORARY_SUFFIX))
    try:
        try:
            yield staging
        except OSError as error:  # named by the report's folder, not by a file of the staging folder
            raise _report_fault(error, run_dir) from error
        with storage_guard(run_dir, "moving the new report into"):
            present = [item for item in items if (staging / item).exists()]
            atomic_write_bytes(staging / _MANIFEST, json.dumps({"items": list(items), "present": present}).encode())
            os.replace(staging, run_dir / PENDING_REPORT)  # the new report is complete: from here it rolls forward
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    recover_report(run_dir)
    remove_stale_temporaries(run_dir)


def _report_fault(error: OSError, run_dir: Path) -> OSError:
    """`error` as a `StorageError` naming the report's folder when it is a fault of the machine, else itself."""
    original = error.__cause__ if isinstance(error, StorageError) and isinstance(error.__cause__, OSError) else error
    if original.errno not in ENVIRONMENT_FAULTS:
        return error
    return storage_error(OSError(original.errno, original.strerror), run_dir, "writing the report into") or error


def recover_report(run_dir: Path) -> None:
    """Move a complete new report (`PENDING_REPORT`) into `run_dir`, finishing a commit a kill cut short.
    Every step can be repeated: an item still in the pending folder replaces the folder's (which is moved
    aside first), an item the new report lacks is moved aside, and the pending folder goes last."""
    pending = Path(run_dir) / PENDING_REPORT
    if not pending.is_dir():
        return
    with storage_guard(run_dir, "moving the new report into"):
        manifest = json.loads((pending / _MANIFEST).read_text(encoding="utf-8"))
        items, present = manifest["items"], set(manifest["present"])
        for item in items:
            new, current, old = pending / item, Path(run_dir) / item, pending / f"{_OLD_PREFIX}{item}"
            if new.exists() or item not in present:
                if current.is_dir() and not current.is_symlink():
                    shutil.rmtree(old, ignore_errors=True)
                    os.replace(current, old)
                elif current.exists() and not new.exists():
                    current.unlink()
            if new.exists():
                os.replace(new, current)  # a file replaces the old one in one step; a folder's old one is aside
        shutil.rmtree(pending)


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Remove what killed commands left in `run_dir`: the hidden `.<file>.<pid>.*.tmp` files of atomic writes
    and `.report.<pid>.*.tmp` staging folders whose process is gone (`temporary_owner_alive`): those of a
    command still running on the folder are kept. Called when a report completes. Returns what was removed."""
    removed: list[Path] = []
    run_dir = Path(run_dir)
    for path in sorted(run_dir.glob(f".*{TEMPORARY_SUFFIX}")) if run_dir.is_dir() else []:
        if temporary_owner_alive(path):
            continue
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:  # gone meanwhile, or not ours to remove: a leftover is harmless
            continue
        removed.append(path)
    return removed


# --------------------------------------------------------------------------- generations.jsonl


# Fields every sample of a prompt repeats: one string object per distinct value instead of one per record,
# so k samples per prompt cost memory for their continuations only (BOLD x 25 is 591,975 records).
_REPEATED_FIELDS = ("prompt_id", "domain", "group", "category", "name", "prompt")


def _shared_strings(record: dict[str, Any]) -> dict[str, Any]:
    """`record` with its keys and repeated fields interned (`sys.intern`)."""
    shared = {}
    for key, value in record.items():
        if key in _REPEATED_FIELDS and isinstance(value, str):
            value = sys.intern(value)
        shared[sys.intern(key)] = value
    return shared


def iter_generations(path: Path, *, repair: bool = False) -> Iterator[dict[str, Any]]:
    """Records of a generations JSONL file (none if absent), one JSON object per line, read line by line
    so that memory holds one line at a time whatever the file's size (BOLD x 25 is 591,975 lines).

    A last line without its newline is the trace of an interrupted write: it is dropped (and cut
    from the file when `repair`, once the records are all read), as is a newline-terminated last line
    that does not parse. Any other bad line (not UTF-8, not JSON, not an object, a lone surrogate that
    could never be written back) is corruption and raises `InputError` naming the file and line.
    """
    for _, record in iter_generation_offsets(path, repair=repair):
        yield record


def iter_generation_offsets(path: Path, *, repair: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_generations` with each record's byte offset in the file (`read_generation_at` reads it again)."""
    if not path.is_file():
        return
    good_bytes, torn, number = 0, None, 0
    with storage_guard(path, "reading"), open(path, "rb") as handle:
        for line in handle:
            if torn is not None:  # an unparsable line with more after it: not a torn write but corruption
                raise _damaged_line(torn, path, number)
            number += 1
            if not line.endswith(b"\n"):
                break  # a torn last line
            try:
                record = parse_jsonl_line(line[:-1], path, number)
            except _NotJSONError as error:
                torn = error  # a torn write that happened to end in a newline byte, if nothing follows
                continue
            except InputError as error:
                raise _damaged_line(error, path, number) from None
            _check_key(record, path, number)
            offset = good_bytes
            good_bytes += len(line)
            yield offset, _shared_strings(record)
    if repair and good_bytes < path.stat().st_size:
        with storage_guard(path), open(path, "r+b") as handle:
            handle.truncate(good_bytes)
            handle.flush()
            os.fsync(handle.fileno())


def _damaged_line(error: InputError, path: Path, number: int) -> InputError:
    """`error` (line `number` of a run's generations file is not a record) with what to do about it."""
    kept = (f"; or keep the {number - 1} intact lines before it (`head -n {number - 1} {path} > {path}.kept && "
            f"mv {path}.kept {path}`) and run the same command again to generate the rest") if number > 1 else \
        "; or move it away and run the same command again to generate the texts anew"
    return InputError(f"{error} It was left as it is: restore it from a copy{kept}.")


def _check_key(record: Mapping[str, Any], path: Path, number: int) -> None:
    """Every record of a run's generations file is keyed by (prompt_id, sample): resume, the merge and the
    scores all match on that key, so a record without it (an edited or foreign file) is named here, not met
    later as a KeyError."""
    prompt_id, sample = record.get("prompt_id"), record.get("sample")
    if (not isinstance(prompt_id, str) or isinstance(sample, bool) or not isinstance(sample, int)
            or sample < 0):
        raise InputError(
            f"{path}, line {number}: a generations record needs a prompt_id (text) and a sample (a whole number "
            f">= 0); this one has prompt_id={prompt_id!r}, sample={sample!r}. The file was edited or is not "
            "the generations.jsonl of a bold-eval run: restore it, or move it away and run again to generate "
            "its prompts anew (`bold-eval score` takes generations made elsewhere)")


def read_generation_at(handle: BinaryIO, offset: int, path: Path) -> dict[str, Any]:
    """The record whose line starts at `offset` of the open generations file `handle` (`path` for errors)."""
    handle.seek(offset)
    return parse_jsonl_line(handle.readline().rstrip(b"\n"), path, 0)


def generation_frames(path: Path, rows: int) -> Iterator[pd.DataFrame]:
    """A generations file as frames of up to `rows` records each (at least one frame, empty for an empty
    file): what scoring reads, so that it never holds every record at once."""
    chunk: list[dict[str, Any]] = []
    yielded = False
    for record in iter_generations(path):
        chunk.append(record)
        if len(chunk) == rows:
            yield records_frame(chunk)
            chunk, yielded = [], True
    if chunk or not yielded:
        yield records_frame(chunk)


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The frame `pd.DataFrame(records)` would make (a field a record lacks is missing), with the record
    columns even when there are no records."""
    columns = list(dict.fromkeys(column for record in records for column in record)) or list(RECORD_COLUMNS)
    return pd.DataFrame({column: [record.get(column) for record in records] for column in columns}, columns=columns)


def read_generations(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """Every record of `iter_generations` as a list ([] if the file is absent)."""
    return list(iter_generations(path, repair=repair))


def generation_keys(path: Path, *, repair: bool = False) -> set[tuple[str, int]]:
    """The (prompt_id, sample) keys of a generations file, without holding its records."""
    return {record_key(record) for record in iter_generations(path, repair=repair)}


class _NotJSONError(InputError):
    """A line that does not parse as JSON (the trace of a torn write when it is the last one)."""


def parse_jsonl_line(line: bytes, path: str | Path, number: int) -> dict[str, Any]:
    """One JSONL line as a dict; every way it can be wrong is an `InputError` naming `path:number`."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}, line {number}: not valid UTF-8 (byte 0x{line[error.start]:02x} at column "
                         f"{error.start + 1}); the file must be UTF-8 encoded") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise _NotJSONError(f"{path}, line {number}: not valid JSON ({error.msg} at column {error.colno}); "
                         "the file is corrupted") from None
    except RecursionError:
        raise InputError(f"{path}, line {number}: JSON nested too deeply") from None
    if not isinstance(record, dict):
        raise InputError(f"{path}, line {number}: expected a JSON object, got {type(record).__name__}")
    _check_unicode(record, path, number)
    return record


def _check_unicode(value: Any, path: str | Path, number: int) -> None:
    """Reject lone surrogates (JSON "\\ud800" escapes): no UTF-8 text holds them, so they would
    fail later, far from the line that carries them."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InputError(f"{path}, line {number}: a string holds the lone surrogate "
                             f"U+{ord(value[error.start]):04X} "
                             "(an unpaired \\uD800-\\uDFFF escape), which is not text") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key, path, number)
            _check_unicode(item, path, number)
    elif isinstance(value, list):
        for item in value:
            _check_unicode(item, path, number)


def jsonl_bytes(records: Iterable[Mapping[str, Any]]) -> bytes:
    """One JSON object per line: the same bytes whether appended by a run or rewritten by a merge."""
    return "".join(jsonl_line(record) for record in records).encode("utf-8")


def jsonl_line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def append_records(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Append whole lines in one write, then flush and fsync: a crash, or a disk that fills, tears at most the
    last line (which the next run drops and regenerates)."""
    data = jsonl_bytes(records)
    with storage_guard(path), open(path, "ab") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_generations(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Replace a generations file atomically (the merge of the shards), written line by line."""
    with atomic_writer(path, sync=True) as handle:
        for record in records:
            handle.write(jsonl_line(record).encode("utf-8"))


def record_key(record: Mapping[str, Any]) -> tuple[str, int]:
    return str(record["prompt_id"]), int(record["sample"])


def generation_record(row: Mapping[str, Any], sample: int, continuation: str, num_new_tokens: int,
                      ended_in_trace: bool | None = None) -> dict[str, Any]:
    """One generations.jsonl line: the BOLD row's columns, the sample, the text and its token count, and
    (under a chat protocol that looks for thinking traces) whether the text ended inside one."""
    record = {column: row[column] for column in ("prompt_id", *BOLD_COLUMNS)}
    record.update(sample=int(sample), continuation=continuation, num_new_tokens=int(num_new_tokens))
    if ended_in_trace is not None:
        record[TRACE_COLUMN] = bool(ended_in_trace)
    return record


# --------------------------------------------------------------------------- the merge of a run's files


def has_generations(out: Path) -> bool:
    """Whether the folder holds at least one generation (a file with only a torn line holds none)."""
    files = [out / GENERATIONS_FILE, *out.glob(SHARD_PATTERN)]
    return any(path.is_file() and b"\n" in path.read_bytes()[:1 << 20] for path in files)


def saved_generations(out: Path, wanted: Sequence[tuple[str, int]]) -> str:
    """How many of the wanted generations are on disk, and where."""
    files = [path for path in [out / GENERATIONS_FILE, *sorted(out.glob(SHARD_PATTERN))] if path.is_file()]
    done: set[tuple[str, int]] = set()
    for path in files:
        try:
            done |= generation_keys(path)
        except (ValueError, OSError):
            pass
    where = ", ".join(str(path) for path in files) or str(out / GENERATIONS_FILE)
    return f"{len(done & set(wanted))} of {len(wanted)} generations are in {where}"


@dataclass
class MergedGenerations:
    """generations.jsonl once every process's records are in it, in the run's order."""

    path: Path
    texts: int
    new_tokens: int


def merge_generations(out: Path, wanted: Sequence[tuple[str, int]]) -> MergedGenerations:
    """Merge generations.jsonl and the per-process shards into generations.jsonl, in `wanted` order.

    Never drops rows silently: a (prompt_id, sample) recorded twice with different text, one missing, or
    one outside the run's selection is an error. Nothing holds the records (BOLD x 25 is 591,975
    of them): a file already in order is only read through, and otherwise each record's place (file, byte
    offset, digest of its text) is indexed and the records are copied in order from there, line by line.
    """
    main_file = out / GENERATIONS_FILE
    shards = sorted(out.glob(SHARD_PATTERN))
    if not shards:
        tokens = _tokens_if_in_order(main_file, wanted)
        if tokens is not None:
            return MergedGenerations(main_file, len(wanted), tokens)
    files = [path for path in [main_file, *shards] if path.is_file()]
    where: dict[tuple[str, int], tuple[int, int, bytes]] = {}
    for number, path in enumerate(files):
        for offset, record in iter_generation_offsets(path):
            key = record_key(record)
            digest = hashlib.blake2b(json.dumps(record.get(TEXT_COLUMN), ensure_ascii=False).encode(),
                                     digest_size=16).digest()
            if key in where and where[key][2] != digest:
                raise InputError(f"{key} was generated twice with different continuations ({path})")
            where[key] = (number, offset, digest)
    wanted_set = set(wanted)
    extra = [key for key in where if key not in wanted_set]
    missing = [key for key in wanted if key not in where]
    if extra or missing:
        raise InputError(
            f"generations do not match the selected prompts x samples: {len(missing)} missing "
            f"(e.g. {missing[:3]}), {len(extra)} not selected (e.g. {extra[:3]})"
        )
    tokens = 0
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(path, "rb")) for path in files]

        def in_order() -> Iterator[dict[str, Any]]:
            nonlocal tokens
            for key in wanted:
                number, offset, _ = where[key]
                record = read_generation_at(handles[number], offset, files[number])
                tokens += int(record.get("num_new_tokens") or 0)
                yield record

        write_generations(main_file, in_order())
    for path in shards:
        path.unlink()
    return MergedGenerations(main_file, len(wanted), tokens)


def _tokens_if_in_order(path: Path, wanted: Sequence[tuple[str, int]]) -> int | None:
    """The generated tokens of `path` when its records are exactly `wanted`, in order (None otherwise)."""
    tokens, count = 0, 0
    for record in iter_generations(path):
        if count >= len(wanted) or record_key(record) != wanted[count]:
            return None
        tokens += int(record.get("num_new_tokens") or 0)
        count += 1
    return tokens if count == len(wanted) else None
