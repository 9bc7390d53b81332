"""`bold-eval run`: generate continuations of BOLD prompts, score them, aggregate and report.

Output folder:
- `generations.jsonl`: one record per (prompt_id, sample), appended batch by batch (one write +
  fsync per batch). A crash can only tear the last line, which the next run detects and drops; a
  rerun of the same command regenerates nothing already there. `run.json` holds the generation
  settings from the start, and a rerun with different settings stops with the list of differences.
- `scores.parquet`, `run.json`, and the report (`summary.json`, `report.md`, figures) written by
  `score_generations`, which `bold-eval score` shares for generations made elsewhere.

Under `accelerate launch` / `torchrun` each process generates every n-th pending item into its own
`generations.rank<r>.jsonl`; after a barrier, process 0 merges them into `generations.jsonl`
(canonical BOLD order), then scores and reports.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bold_eval.generate import DecodingConfig, Generated, WorkItem, generate_items, make_decoding
from bold_eval.models import WIKIPEDIA_ALIAS as WIKIPEDIA
from bold_eval.paths import RUN_FILE, SCORES_FILE
from bold_eval.resources import atomic_write_bytes
from bold_eval.scoring import parse_metrics, score_texts

GENERATIONS_FILE = "generations.jsonl"
SHARD_PATTERN = "generations.rank*.jsonl"
ROW_COLUMNS = ("prompt_id", "domain", "group", "category", "name", "prompt")
SCORE_ON = ("full", "continuation")


class ConfigMismatchError(ValueError):
    """The output folder holds generations made with other settings."""


@dataclass
class RunConfig:
    """Everything `bold-eval run` needs; defaults are the paper's (appendix A.2, Section 3.3)."""

    out: Path
    model: str = "embedded"
    gguf_file: str | None = None
    revision: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    batch_size: int | str = "auto"
    decoding: DecodingConfig = field(default_factory=make_decoding)
    seed: int = 0
    num_samples: int = 1
    domains: Sequence[str] | None = None
    limit: int | None = None
    data_dir: str | None = None
    metrics: Sequence[str] | None = None
    metric_options: Mapping[str, Mapping[str, Any]] | None = None
    anonymize: bool = True
    score_on: str = "full"
    progress: bool = True
    # Called after each batch is on disk (progress reporting; tests use it to interrupt a run).
    on_batch_written: Callable[[list[WorkItem]], None] | None = None


def parse_metric_options(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`["gender_polarity.methods=unigram", "toxicity.batch_size=64"]` -> {metric: {key: value}}.

    A value is read as JSON when it parses (numbers, booleans, lists), else kept as a string;
    `methods` also accepts a comma list.
    """
    from bold_eval.metrics import METRIC_NAMES

    options: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        metric, dot, key = name.partition(".")
        if not equals or not dot or not key or metric not in METRIC_NAMES:
            raise ValueError(f"--metric-option {pair!r}: expected METRIC.KEY=VALUE with METRIC in {', '.join(METRIC_NAMES)}")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        if key == "methods" and isinstance(parsed, str):
            parsed = [method.strip() for method in parsed.split(",") if method.strip()]
        options.setdefault(metric, {})[key] = parsed
    return options


# --------------------------------------------------------------------------- prompt selection


def select_prompts(frame: pd.DataFrame, domains: Sequence[str] | None = None, limit: int | None = None) -> pd.DataFrame:
    """The prompts of `domains`, at most `limit` per domain, stratified by group.

    Groups take turns (round robin, each in BOLD order), so `--limit 20` on the profession domain
    gives 1-2 prompts to each of its 18 groups instead of 20 prompts of the first group. The
    result keeps BOLD's row order, which is also the order of the output files.
    """
    all_domains = list(dict.fromkeys(frame["domain"]))
    if domains:
        unknown = [domain for domain in domains if domain not in all_domains]
        if unknown:
            raise ValueError(f"unknown domain(s) {', '.join(unknown)}; valid: {', '.join(all_domains)}")
        frame = frame[frame["domain"].isin(list(domains))]
    if limit is None:
        return frame.reset_index(drop=True)
    if limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    keep: list[int] = []
    for domain, rows in frame.groupby("domain", sort=False):
        rank_in_group = rows.groupby("group", sort=False).cumcount()
        group_order = rows["group"].map({group: i for i, group in enumerate(dict.fromkeys(rows["group"]))})
        ranked = rows.assign(_rank=rank_in_group, _group=group_order).sort_values(["_rank", "_group"], kind="stable")
        keep.extend(ranked.index[:limit])
        groups = rows["group"].nunique()
        if limit < groups:
            warnings.warn(f"--limit {limit} < {groups} groups in {domain}: {groups - limit} groups get no prompt",
                          stacklevel=2)
    return frame.loc[sorted(keep)].reset_index(drop=True)


# --------------------------------------------------------------------------- generations file


def read_generations(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """Records of a generations JSONL file ([] if absent).

    A last line without its newline or that does not parse is the trace of an interrupted write:
    it is dropped (and cut from the file when `repair`). A bad line anywhere else is corruption,
    not a crash, and raises with its line number.
    """
    if not path.is_file():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # tail is b"" when the file ends with a newline
    records = []
    good_bytes = 0
    for number, line in enumerate(complete, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(complete) and not tail:
                tail = line  # a torn write that happened to end in a newline byte
                break
            raise ValueError(f"{path}: line {number} is not valid JSON; the file is corrupted") from None
        records.append(record)
        good_bytes += len(line) + 1
    if tail and repair:
        with open(path, "r+b") as handle:
            handle.truncate(good_bytes)
            handle.flush()
            os.fsync(handle.fileno())
    return records


def append_records(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Append whole lines in one write, then flush and fsync: a crash tears at most the last line."""
    with open(path, "ab") as handle:
        handle.write(_jsonl_bytes(records))
        handle.flush()
        os.fsync(handle.fileno())


def _jsonl_bytes(records: Iterable[Mapping[str, Any]]) -> bytes:
    """One JSON object per line: the same bytes whether appended by a run or rewritten by a merge."""
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")


def _key(record: Mapping[str, Any]) -> tuple[str, int]:
    return str(record["prompt_id"]), int(record["sample"])


# --------------------------------------------------------------------------- run.json and settings


def versions() -> dict[str, str]:
    """Versions of the packages that shape the results."""
    import importlib.metadata

    found = {"python": platform.python_version()}
    for name in ("bold-eval", "torch", "transformers", "accelerate", "datasets", "tokenizers", "numpy", "pandas"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def generation_settings(config: RunConfig, selected: pd.DataFrame) -> dict[str, Any]:
    """The settings that determine generations.jsonl; a rerun must match them to resume."""
    digest = hashlib.sha256()
    for prompt_id, prompt in zip(selected["prompt_id"], selected["prompt"], strict=True):
        digest.update(f"{prompt_id}\t{prompt}\n".encode())
    settings: dict[str, Any] = {
        "model": config.model,
        "domains": sorted(set(selected["domain"])),
        "limit": config.limit,
        "prompts": len(selected),
        "prompts_sha256": digest.hexdigest(),
        "num_samples": config.num_samples,
    }
    if config.model != WIKIPEDIA:
        settings.update(gguf_file=config.gguf_file, revision=config.revision, dtype=config.dtype,
                        seed=config.seed, decoding=config.decoding.to_dict())
    return settings


def _differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    diffs = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            diffs.extend(_differences(a, b, f"{prefix}{key}."))
        elif a != b:
            diffs.append(f"{prefix}{key}: {a!r} in the folder, {b!r} now")
    return diffs


def check_resumable(out: Path, settings: Mapping[str, Any], key: str = "generation_settings") -> None:
    """Refuse to add generations made with other settings to a folder (names the differences)."""
    run_path = out / RUN_FILE
    has_generations = (out / GENERATIONS_FILE).is_file() or any(out.glob(SHARD_PATTERN))
    if not run_path.is_file():
        if has_generations:
            raise ConfigMismatchError(
                f"{out} holds generations but no {RUN_FILE}, so their settings are unknown; "
                "use a new --out folder (or delete the generations to start over)"
            )
        return
    stored = json.loads(run_path.read_text(encoding="utf-8")).get(key)
    if stored is None:
        if has_generations:
            raise ConfigMismatchError(f"{run_path} records no {key}; use a new --out folder")
        return
    diffs = _differences(stored, settings)
    if diffs:
        raise ConfigMismatchError(
            f"{out} holds generations made with other settings; refusing to mix them:\n  "
            + "\n  ".join(diffs) + "\nRerun with the folder's settings to resume, or use a new --out folder."
        )


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n").encode("utf-8"))


# --------------------------------------------------------------------------- scoring (shared with `score`)


def build_texts(generations: pd.DataFrame, *, anonymize: bool = True, score_on: str = "full") -> pd.Series:
    """The text each metric sees: prompt + continuation (`full`, like the Wikipedia baseline's whole
    sentence) or the continuation alone, with names and group terms anonymized (Section 3.3)."""
    if score_on not in SCORE_ON:
        raise ValueError(f"score_on must be one of {', '.join(SCORE_ON)}, got {score_on!r}")
    if score_on == "full":
        texts = (generations["prompt"] + generations["continuation"]).tolist()
    else:
        texts = generations["continuation"].tolist()
    if anonymize:
        from bold_eval.data import anonymize_texts

        texts = anonymize_texts(texts, generations["domain"].tolist(), generations["group"].tolist(),
                                generations["name"].tolist())
    return pd.Series(texts, index=generations.index, name="text", dtype=object)


def _validate_generations(generations: pd.DataFrame) -> pd.DataFrame:
    required = [*ROW_COLUMNS, "sample", "continuation"]
    missing = [column for column in required if column not in generations.columns]
    if missing:
        raise ValueError(f"generations lack column(s) {', '.join(missing)}; needed: {', '.join(required)}")
    frame = generations.reset_index(drop=True)
    for column in ("prompt", "continuation"):
        bad = [i for i, value in enumerate(frame[column]) if not isinstance(value, str)]
        if bad:
            raise ValueError(f"{column} at index {bad[0]} is {frame[column].iloc[bad[0]]!r}, not a string")
    duplicated = frame.duplicated(["prompt_id", "sample"])
    if duplicated.any():
        index = int(duplicated.to_numpy().nonzero()[0][0])
        raise ValueError(f"duplicate (prompt_id, sample) at index {index}: "
                         f"{frame['prompt_id'].iloc[index]!r}, {frame['sample'].iloc[index]}")
    return frame


def score_generations(
    generations: pd.DataFrame,
    out_dir: str | os.PathLike,
    *,
    metrics: Sequence[str] | str | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    anonymize: bool = True,
    score_on: str = "full",
    run_info: Mapping[str, Any] | None = None,
    report: bool = True,
) -> Path:
    """Score generations, write scores.parquet and run.json, and render the report.

    `generations`: one row per text with the BOLD columns `prompt_id, domain, group, category,
    name, prompt`, an int `sample` and the `continuation` string (the `bold-eval run` records,
    or bring-your-own generations matched back to BOLD). The scored `text` is built by
    `build_texts`; regard is computed on gender and race rows only (Section 4.3); unavailable
    metrics are skipped and listed in run.json `skipped_metrics`. `run_info` (model, decoding,
    seed, timings, ...) is merged into run.json. Returns the report path (report.md), or
    scores.parquet when `report=False`. `bold-eval run` and `bold-eval score` both end here,
    so the same generations give the same outputs.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frame = _validate_generations(generations)
    requested = parse_metrics(metrics)
    info = dict(run_info or {})
    timings = dict(info.get("timings") or {})

    started = time.perf_counter()
    texts = build_texts(frame, anonymize=anonymize, score_on=score_on)
    result = score_texts(texts.tolist(), frame["domain"].tolist(), requested, metric_options)
    timings["score_s"] = round(time.perf_counter() - started, 3)

    columns = [*ROW_COLUMNS, "sample", "continuation"]
    scores = pd.concat([frame[columns].assign(sample=frame["sample"].astype("int64"), text=texts),
                        result.columns.set_index(frame.index)], axis=1)
    atomic_write_bytes(out / SCORES_FILE, scores.to_parquet(index=False))

    info.update(
        metrics=requested,
        skipped_metrics=result.skipped,
        partial_metrics=result.partial,
        metric_options={name: dict(options) for name, options in (metric_options or {}).items()},
        metric_seconds=result.seconds,
        label_columns={column: list(labels) for column, labels in result.label_columns.items()},
        anonymize=anonymize,
        score_on=score_on,
        num_texts=len(scores),
        timings=timings,
    )
    info.setdefault("versions", versions())
    write_json(out / RUN_FILE, info)
    for metric, message in {**result.skipped, **result.partial}.items():
        print(f"skipped metric {metric}: {message.splitlines()[0]}", file=sys.stderr)
    if not report:
        return out / SCORES_FILE
    from bold_eval.report import write_report

    started = time.perf_counter()
    report_path = write_report(out)
    timings["report_s"] = round(time.perf_counter() - started, 3)
    info["timings"] = timings
    write_json(out / RUN_FILE, info)
    return Path(report_path)


# --------------------------------------------------------------------------- the run pipeline


def _partial_state(device: str) -> Any:
    """accelerate's process state: one process normally, several under accelerate launch / torchrun."""
    from accelerate import PartialState

    return PartialState(cpu=device == "cpu" or not _has_accelerator())


def _has_accelerator() -> bool:
    import torch

    return torch.cuda.is_available()


def _wikipedia_records(items: Sequence[WorkItem], rows: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The paper's baseline: the Wikipedia sentence the prompt was cut from, as the 'generation'."""
    records = []
    for item in items:
        row = rows[item.prompt_id]
        sentence = str(row["wikipedia"])
        if not sentence.startswith(row["prompt"]):
            raise ValueError(f"Wikipedia sentence of {item.prompt_id} does not start with its prompt")
        records.append(_record(row, item.sample, sentence[len(row["prompt"]):], 0))
    return records


def _record(row: Mapping[str, Any], sample: int, continuation: str, num_new_tokens: int) -> dict[str, Any]:
    record = {column: row[column] for column in ROW_COLUMNS}
    record.update(sample=int(sample), continuation=continuation, num_new_tokens=int(num_new_tokens))
    return record


def run(config: RunConfig) -> Path | None:
    """Generate (resuming), score and report. Returns the report path on process 0, None elsewhere."""
    from bold_eval.data import load_bold

    if config.score_on not in SCORE_ON:
        raise ValueError(f"--score-on must be one of {', '.join(SCORE_ON)}, got {config.score_on!r}")
    if config.num_samples < 1:
        raise ValueError(f"--num-samples must be >= 1, got {config.num_samples}")
    if config.model == WIKIPEDIA and config.num_samples != 1:
        raise ValueError("--model wikipedia has one text per prompt; --num-samples must be 1")
    if config.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {config.seed}")
    metrics = parse_metrics(config.metrics)
    out = Path(config.out)
    wall_started = time.perf_counter()
    timings: dict[str, float] = {}

    state = _partial_state(config.device)
    rank, world = state.process_index, state.num_processes
    out.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    bold = load_bold("all", data_dir=config.data_dir).to_pandas()
    selected = select_prompts(bold, config.domains, config.limit)
    if selected.empty:
        raise ValueError("no prompts selected")
    timings["load_data_s"] = round(time.perf_counter() - started, 3)
    rows = {row["prompt_id"]: row for row in selected.to_dict(orient="records")}
    wanted = [(prompt_id, sample) for prompt_id in selected["prompt_id"] for sample in range(config.num_samples)]

    settings = generation_settings(config, selected)
    check_resumable(out, settings)  # every process checks, so all stop together on a mismatch
    state.wait_for_everyone()
    if state.is_main_process and not (out / RUN_FILE).is_file():
        write_json(out / RUN_FILE, {"status": "generating", "model": config.model, "generation_settings": settings})
    state.wait_for_everyone()

    main_file = out / GENERATIONS_FILE
    shard = out / f"generations.rank{rank}.jsonl" if world > 1 else main_file
    own = read_generations(shard, repair=True)  # drops a torn last line of this process's own file
    state.wait_for_everyone()
    done = {_key(record) for record in own}  # no other process writes to this process's file
    for path in [main_file, *sorted(out.glob(SHARD_PATTERN))]:
        if path != shard:
            done.update(_key(record) for record in read_generations(path))
    todo = [WorkItem(prompt_id, sample, rows[prompt_id]["prompt"]) for prompt_id, sample in wanted
            if (prompt_id, sample) not in done]
    mine = todo[rank::world]

    model_info: dict[str, Any] = {"name": config.model}
    stats = None
    if config.model == WIKIPEDIA:
        if mine:
            append_records(shard, _wikipedia_records(mine, rows))
    elif todo:
        from bold_eval.models import load_model

        started = time.perf_counter()
        with state.main_process_first():  # process 0 fills the dequantized-GGUF cache for the others
            device = str(state.device) if world > 1 and config.device == "auto" else config.device
            loaded = load_model(config.model, gguf_file=config.gguf_file, dtype=config.dtype, device=device,
                                revision=config.revision)
        timings["load_model_s"] = round(time.perf_counter() - started, 3)
        model_info = loaded.info

        def write_batch(batch: list[WorkItem], results: list[Generated]) -> None:
            append_records(shard, [_record(rows[item.prompt_id], item.sample, result.continuation,
                                           result.num_new_tokens) for item, result in zip(batch, results, strict=True)])
            if config.on_batch_written is not None:
                config.on_batch_written(batch)

        import torch

        torch.manual_seed(config.seed)
        stats = generate_items(loaded.model, loaded.tokenizer, mine, config.decoding, seed=config.seed,
                               batch_size=config.batch_size, on_batch=write_batch,
                               progress=config.progress and state.is_main_process)
        timings["generate_s"] = round(stats.seconds, 3)
    state.wait_for_everyone()

    if not state.is_main_process:
        return None
    records = merge_generations(out, wanted)
    generations = pd.DataFrame(records)
    new_tokens = int(generations["num_new_tokens"].sum())
    run_info: dict[str, Any] = {
        "status": "complete",
        "model": config.model,
        "revision": model_info.get("revision", config.revision),
        "gguf_file": model_info.get("gguf_file", config.gguf_file),
        "model_info": model_info,
        "decoding": None if config.model == WIKIPEDIA else config.decoding.to_dict(),
        "max_new_tokens": None if config.model == WIKIPEDIA else config.decoding.max_new_tokens,
        "one_sentence": config.decoding.one_sentence if config.model != WIKIPEDIA else None,
        "seed": config.seed if config.model != WIKIPEDIA else None,
        "num_samples": config.num_samples,
        "domains": settings["domains"],
        "limit": config.limit,
        "processes": world,
        "generation_settings": settings,
        "generated_now": len(todo),
        "resumed": len(wanted) - len(todo),
        "generated_tokens": new_tokens,
        "versions": versions(),
    }
    if stats is not None:
        # tokens/s of this invocation's generation phase (process 0's share under several processes)
        run_info["tokens_per_second"] = round(stats.new_tokens / stats.seconds, 2) if stats.seconds else None
        run_info["batch_size"] = stats.batch_size
        run_info["out_of_memory_retries"] = stats.out_of_memory_retries
    timings["total_before_scoring_s"] = round(time.perf_counter() - wall_started, 3)
    run_info["timings"] = timings
    return score_generations(generations, out, metrics=metrics, metric_options=config.metric_options,
                             anonymize=config.anonymize, score_on=config.score_on, run_info=run_info)


def merge_generations(out: Path, wanted: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """Merge generations.jsonl and the per-process shards into generations.jsonl, in `wanted` order.

    Never drops rows silently: a (prompt_id, sample) recorded twice with different text, one
    missing, or one outside the run's selection is an error.
    """
    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    shards = sorted(out.glob(SHARD_PATTERN))
    main_file = out / GENERATIONS_FILE
    on_disk: list[tuple[str, int]] = []  # the main file's order, to skip a rewrite that changes nothing
    for path in [main_file, *shards]:
        for record in read_generations(path):
            key = _key(record)
            if path == main_file:
                on_disk.append(key)
            if key in by_key and by_key[key]["continuation"] != record["continuation"]:
                raise ValueError(f"{key} was generated twice with different continuations ({path})")
            by_key[key] = record
    wanted_set = set(wanted)
    extra = [key for key in by_key if key not in wanted_set]
    missing = [key for key in wanted if key not in by_key]
    if extra or missing:
        raise ValueError(
            f"generations do not match the selected prompts x samples: {len(missing)} missing "
            f"(e.g. {missing[:3]}), {len(extra)} not selected (e.g. {extra[:3]})"
        )
    records = [by_key[key] for key in wanted]
    if shards or on_disk != list(wanted):
        atomic_write_bytes(main_file, _jsonl_bytes(records))
        for path in shards:
            path.unlink()
    return records
