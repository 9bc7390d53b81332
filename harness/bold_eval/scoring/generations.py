"""Score generations with every requested metric (Section 4) and write the run folder's scores.

`score_generations` is where `bold-eval run` and `bold-eval score` meet: the same generations
give the same scores.parquet, run.json and report. It never imports the model modules, so scoring
generations made elsewhere needs no LM stack (only the Wikipedia generator, for the reference).

Beside a model's texts it scores the Wikipedia sentences of the same prompts with the same
scorers (reference_scores.parquet), so the report can ask whether the model's gap between
groups is larger than the human-written one (Section 6's group x source comparison). The
classifier scores of those sentences are cached across runs (`ReferenceCache`).

Each metric's per-text columns are prefixed `<metric>_` (e.g. `sentiment_label`). A metric whose
default model or resource is unavailable (`ResourceNotFoundError` from its `load_scorer`, e.g. the
default toxicity classifier offline) is skipped and its message kept for run.json and the report.
A resource the user named (`toxicity.model=PATH`, `psycholinguistic.lexicon_dir=DIR`, ...) that
cannot be found is their mistake, not an optional extra: it is an error, and the run stops before
scoring anything (its generations stay on disk for `bold-eval score` or a resumed run). Any other
error is a bug and propagates.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.core.errors import InputError, MissingFileError, UsageError
from bold_eval.core.resources import ResourceNotFoundError, atomic_write_bytes
from bold_eval.metrics import METRIC_NAMES, check_scorer_options, metric_module
from bold_eval.runfolder import (
    GENERATION_COLUMNS,
    RECORD_COLUMNS,
    REFERENCE_FILE,
    RunRecord,
    generation_record,
    write_run_record,
    write_scores,
)

# What the metrics read (Section 3.3 scores whole sentences; `continuation` drops the prompt).
SCORE_ON = ("full", "continuation")

# Section 4.3: "Since the regard classifier was only trained on a few groups, we limit calculation
# of this metrics to gender (female, male) and race (European American, African American) groups."
# BOLD's race domain has four groups; the paper's Table 5 reports regard for the two the classifier
# saw, but the classifier input does not depend on the group, so every gender and race row is
# scored and the report picks the groups it shows.
REGARD_DOMAINS = ("gender", "race")

# The reference's cache folder: $BOLD_EVAL_CACHE_DIR, else ~/.cache/bold-eval/reference.
REFERENCE_CACHE_ENV = "BOLD_EVAL_CACHE_DIR"
# Metrics whose reference scores are cached: a classifier's forward pass per text is slow, while the
# lexicon metrics score a text in microseconds and are always recomputed.
CACHED_METRICS = ("toxicity", "regard")


@dataclass
class ScoringResult:
    """Per-text metric columns (input order), which metrics were skipped and why, and timings."""

    columns: pd.DataFrame
    skipped: dict[str, str] = field(default_factory=dict)
    # Metrics scored with fewer methods than requested, and why (gender polarity without word2vec).
    partial: dict[str, str] = field(default_factory=dict)
    label_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def parse_metrics(metrics: str | Sequence[str] | None) -> list[str]:
    """`None`/"all" -> the five metrics; otherwise validated names in the paper's order."""
    if metrics is None or metrics == "all":
        return list(METRIC_NAMES)
    names = [name.strip() for name in (metrics.split(",") if isinstance(metrics, str) else metrics) if name.strip()]
    unknown = [name for name in names if name not in METRIC_NAMES]
    if unknown:
        raise UsageError(f"unknown metric(s) {', '.join(unknown)}; valid metrics: {', '.join(METRIC_NAMES)}")
    if not names:
        raise UsageError("no metric requested")
    return [name for name in METRIC_NAMES if name in names]


def _null_column(values: np.ndarray, size: int) -> np.ndarray | pd.Series:
    """A column of `size` nulls with the dtype family of `values` (for rows a metric does not score)."""
    if values.dtype.kind == "b":
        return pd.array([pd.NA] * size, dtype="boolean")
    if values.dtype.kind in "iu":
        return pd.array([pd.NA] * size, dtype="Int64")
    if values.dtype.kind == "f":
        return np.full(size, np.nan)
    return np.full(size, None, dtype=object)


def _spread(values: np.ndarray, rows: np.ndarray, size: int) -> Any:
    """Place `values` (scored for `rows`) into a full-length column, nulls elsewhere."""
    values = np.asarray(values)
    if len(rows) == size:
        return values
    column = _null_column(values, size)
    if isinstance(column, np.ndarray):
        column[rows] = values
        return column
    series = pd.Series(column)
    series.iloc[rows] = values
    return series.array


def check_metric_options(metric_options: Mapping[str, Mapping[str, Any]] | None) -> None:
    """Refuse options for unknown metrics and option names their `load_scorer` does not take, before
    any work (`run` calls this before generating)."""
    metric_options = dict(metric_options or {})
    unknown = [name for name in metric_options if name not in METRIC_NAMES]
    if unknown:
        raise UsageError(f"metric_options for unknown metric(s) {unknown}; valid: {', '.join(METRIC_NAMES)}")
    for name, options in metric_options.items():
        check_scorer_options(name, options)


# The options that name a metric's resource: when one is given, a missing resource is an error.
RESOURCE_OPTIONS = {
    "toxicity": ("model",),
    "regard": ("model",),
    "gender_polarity": ("embedding", "debiaswe_dir"),
    "psycholinguistic": ("lexicon", "lexicon_dir"),
}


def _named_resources(name: str, options: Mapping[str, Any]) -> list[str]:
    return [f"{name}.{key}={options[key]}" for key in RESOURCE_OPTIONS.get(name, ()) if options.get(key) is not None]


def _load_scorer(name: str, options: Mapping[str, Any], result: ScoringResult) -> Any:
    """The metric's scorer; gender polarity falls back to unigram matching without word2vec.

    Unigram matching (Section 4.5) needs no resource, so when the user did not choose `methods`
    and the embedding for Gender-Max / Gender-Wavg is unavailable, the run keeps the unigram
    counts and records why the other two are missing instead of dropping the whole metric.
    """
    module = metric_module(name)
    try:
        return module.load_scorer(**dict(options))
    except ResourceNotFoundError as error:
        if name != "gender_polarity" or "methods" in options or _named_resources(name, options):
            raise
        scorer = module.load_scorer(**{**options, "methods": ["unigram"]})
        result.partial[name] = f"Gender-Max and Gender-Wavg skipped, unigram matching only: {error}"
        return scorer


def _load_scorers(metrics: Sequence[str], metric_options: Mapping[str, Mapping[str, Any]], has_regard_rows: bool,
                  result: ScoringResult) -> dict[str, Any]:
    """Every metric's scorer, loaded before any is run, so a resource the user named that is missing
    stops the run before minutes of scoring; unavailable defaults go to `result.skipped`."""
    scorers: dict[str, Any] = {}
    for name in metrics:
        options = metric_options.get(name, {})
        if name == "regard" and not has_regard_rows:
            result.skipped[name] = "no gender or race rows in this run (regard is computed only on them, Section 4.3)"
            continue
        try:
            scorers[name] = _load_scorer(name, options, result)
        except ResourceNotFoundError as error:
            named = _named_resources(name, options)
            if named:
                raise MissingFileError(f"{error}\nYou chose {', '.join(named)}; fix that value, or leave it out to "
                                       f"use the default (a missing default is skipped and reported).") from error
            result.skipped[name] = str(error)
    return scorers


def _regard_rows(domains: Sequence[str]) -> np.ndarray:
    return np.flatnonzero(np.isin(np.asarray(domains, dtype=object), REGARD_DOMAINS))


def score_texts(
    texts: Sequence[str],
    domains: Sequence[str],
    metrics: Sequence[str],
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> ScoringResult:
    """Run each metric's scorer over `texts`; regard only on the gender and race rows."""
    if len(texts) != len(domains):
        raise ValueError(f"texts and domains must have the same length, got {len(texts)} and {len(domains)}")
    metric_options = dict(metric_options or {})
    check_metric_options(metric_options)
    result = ScoringResult(columns=pd.DataFrame(index=range(len(texts))))
    scorers = _load_scorers(parse_metrics(list(metrics)), metric_options, len(_regard_rows(domains)) > 0, result)
    _score_with(scorers, list(texts), domains, result)
    return result


def _score_with(scorers: Mapping[str, Any], texts: list[str], domains: Sequence[str], result: ScoringResult,
                cache: ReferenceCache | None = None) -> np.ndarray:
    """Fill `result` with every loaded scorer's columns for `texts`. With `cache`, the classifier
    metrics (CACHED_METRICS) read and extend it; returns, per text, whether a cached metric applied
    to it and every such metric found it in the cache."""
    regard_rows = _regard_rows(domains)
    columns: dict[str, Any] = {}
    applied, hit = np.zeros(len(texts), dtype=bool), np.ones(len(texts), dtype=bool)
    for name, scorer in scorers.items():
        started = time.perf_counter()
        rows = regard_rows if name == "regard" else np.arange(len(texts))
        if cache is not None and name in CACHED_METRICS:
            scored, cached = cache.score(name, scorer, [texts[i] for i in rows])
            applied[rows] = True
            hit[rows] &= cached
        else:
            scored = scorer([texts[i] for i in rows])
        for column, values in scored.items():
            values = np.asarray(values)
            if len(values) != len(rows):
                raise ValueError(f"metric {name} returned {len(values)} values for column {column}, expected {len(rows)}")
            columns[f"{name}_{column}"] = _spread(values, rows, len(texts))
        for column, labels in getattr(scorer, "label_columns", {}).items():
            result.label_columns[f"{name}_{column}"] = tuple(labels)
        result.seconds[name] = round(time.perf_counter() - started, 3)
    result.columns = pd.DataFrame(columns, index=range(len(texts)))
    return applied & hit


def parse_metric_options(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`["gender_polarity.methods=unigram", "toxicity.batch_size=64"]` -> {metric: {key: value}}.

    A value is read as JSON when it parses (numbers, booleans, lists), else kept as a string;
    `methods` also accepts a comma list.
    """
    options: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        metric, dot, key = name.partition(".")
        if not equals or not dot or not key or metric not in METRIC_NAMES:
            raise UsageError(f"--metric-option {pair!r}: expected METRIC.KEY=VALUE with METRIC in {', '.join(METRIC_NAMES)}")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        if key == "methods" and isinstance(parsed, str):
            parsed = [method.strip() for method in parsed.split(",") if method.strip()]
        options.setdefault(metric, {})[key] = parsed
    return options


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


# --------------------------------------------------------------------------- the reference's cache

# Packages whose versions can change a classifier's scores.
_CLASSIFIER_PACKAGES = ("bold-eval", "torch", "transformers", "tokenizers")
_TEXT_KEY = "text_sha256"


def reference_cache_dir() -> Path:
    """$BOLD_EVAL_CACHE_DIR, else ~/.cache/bold-eval/reference."""
    return Path(os.environ.get(REFERENCE_CACHE_ENV) or Path.home() / ".cache" / "bold-eval" / "reference").expanduser()


def _file_stamps(folder: Path) -> list[list[Any]]:
    """(name, size, mtime) of a model folder's files: a retrained model saved in place is a new scorer."""
    return [[path.name, path.stat().st_size, path.stat().st_mtime_ns] for path in sorted(folder.iterdir())
            if path.is_file()]


def scorer_fingerprint(name: str, options: Mapping[str, Any], scorer: Any) -> dict[str, Any]:
    """What determines a scorer's output for a given text: the metric, its options, the versions
    of the packages that run it and, for a classifier, which weights (Hub commit, or the local
    folder's files), with which labels, dtype and device kind."""
    found = versions()
    fingerprint: dict[str, Any] = {
        "metric": name, "options": dict(sorted(options.items())),
        "versions": {package: found.get(package) for package in _CLASSIFIER_PACKAGES},
        "labels": list(getattr(scorer, "labels", ())),
    }
    classifier = getattr(scorer, "classifier", None)
    if classifier is not None:
        folder = Path(str(classifier.name)).expanduser()
        local = folder.is_dir()
        fingerprint["classifier"] = {
            "name": str(folder.resolve()) if local else str(classifier.name),
            "commit": getattr(classifier.model.config, "_commit_hash", None),
            "files": _file_stamps(folder) if local else None,
            "labels": list(classifier.labels), "max_length": classifier.max_length,
            "dtype": str(classifier.dtype), "device": str(classifier.device).split(":")[0],
        }
    return fingerprint


class ReferenceCache:
    """Scores of the classifier metrics for texts scored before, across runs: one parquet file per
    metric and scorer fingerprint (`scorer_fingerprint`), a row per text keyed by its sha256.

    Only a cache: a file that cannot be read is ignored with a warning and rebuilt, one that
    cannot be written is skipped with a warning; neither stops a run.
    """

    def __init__(self, metric_options: Mapping[str, Mapping[str, Any]] | None = None, folder: Path | None = None):
        self.folder = Path(folder) if folder is not None else reference_cache_dir()
        self.metric_options = dict(metric_options or {})
        self.used: list[str] = []  # metrics that went through the cache, in scoring order

    def path(self, name: str, scorer: Any) -> tuple[Path, dict[str, Any]]:
        fingerprint = scorer_fingerprint(name, self.metric_options.get(name, {}), scorer)
        text = json.dumps(fingerprint, sort_keys=True, default=str)
        return self.folder / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:24]}.parquet", fingerprint

    def score(self, name: str, scorer: Any, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """`scorer`'s columns for `texts`, scoring only those not in the cache; and, per text,
        whether it came from the cache."""
        path, fingerprint = self.path(name, scorer)
        self.used.append(name)
        keys = [hashlib.sha256(text.encode("utf-8")).hexdigest() for text in texts]
        table = _read_cache(path)
        cached = np.asarray(pd.Index(keys).isin(table.index), dtype=bool) if table is not None \
            else np.zeros(len(keys), dtype=bool)
        missing = list(dict.fromkeys(key for key, found in zip(keys, cached, strict=True) if not found))
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            new = _scored_table(scorer, [text_of[key] for key in missing], missing)
            if table is not None and list(table.columns) != list(new.columns):
                warnings.warn(f"reference cache {path} has columns {list(table.columns)}, {name} now gives "
                              f"{list(new.columns)}; rebuilding it", stacklevel=2)
                table, cached = None, np.zeros(len(keys), dtype=bool)
                missing = list(dict.fromkeys(keys))
                new = _scored_table(scorer, [text_of[key] for key in missing], missing)
            table = new if table is None or table.empty else pd.concat([table, new])
            _write_cache(path, table, fingerprint)
        if table is None:  # no texts at all
            return {column: np.asarray(values) for column, values in scorer([]).items()}, cached
        rows = table.loc[keys]
        return {column: rows[column].to_numpy() for column in table.columns}, cached


def _scored_table(scorer: Any, texts: list[str], keys: list[str]) -> pd.DataFrame:
    scored = scorer(texts)
    return pd.DataFrame({column: np.asarray(values) for column, values in scored.items()},
                        index=pd.Index(keys, name=_TEXT_KEY))


def _read_cache(path: Path) -> pd.DataFrame | None:
    """A cache file indexed by text hash; None when absent or unreadable (with a warning)."""
    if not path.is_file():
        return None
    try:
        table = pd.read_parquet(path)
        if _TEXT_KEY not in table.columns or table[_TEXT_KEY].duplicated().any():
            raise ValueError(f"no unique {_TEXT_KEY} column")
        return table.set_index(_TEXT_KEY)
    except Exception as error:  # a cache never stops a run: whatever is wrong with the file, rebuild it
        warnings.warn(f"ignoring the unreadable reference cache {path} ({type(error).__name__}: {error}); "
                      "rebuilding it", stacklevel=3)
        return None


def _write_cache(path: Path, table: pd.DataFrame, fingerprint: Mapping[str, Any]) -> None:
    """The cache file and, beside it, its fingerprint as JSON (what the file's scores depend on)."""
    try:
        atomic_write_bytes(path, table.reset_index().to_parquet(index=False))
        label = path.with_suffix(".json")
        if not label.is_file():
            atomic_write_bytes(label, (json.dumps(fingerprint, indent=2, default=str) + "\n").encode("utf-8"))
    except OSError as error:
        warnings.warn(f"could not write the reference cache {path} ({error}); its scores will be computed again",
                      stacklevel=3)


# --------------------------------------------------------------------------- generations -> texts -> scores


def build_texts(generations: pd.DataFrame, *, anonymize: bool = True, score_on: str = "full") -> pd.Series:
    """The text each metric sees: prompt + continuation (`full`, like the Wikipedia baseline's whole
    sentence) or the continuation alone, with names and group terms anonymized (Section 3.3)."""
    if score_on not in SCORE_ON:
        raise UsageError(f"score_on must be one of {', '.join(SCORE_ON)}, got {score_on!r}")
    if score_on == "full":
        texts = (generations["prompt"] + generations["continuation"]).tolist()
    else:
        texts = generations["continuation"].tolist()
    if anonymize:
        from bold_eval.data.anonymize import anonymize_texts

        texts = anonymize_texts(texts, generations["domain"].tolist(), generations["group"].tolist(),
                                generations["name"].tolist())
    return pd.Series(texts, index=generations.index, name="text", dtype=object)


def check_generations(generations: pd.DataFrame) -> pd.DataFrame:
    """The generations with a fresh index; raises on missing columns, non-string texts or repeated keys."""
    missing = [column for column in GENERATION_COLUMNS if column not in generations.columns]
    if missing:
        raise InputError(f"generations lack column(s) {', '.join(missing)}; needed: {', '.join(GENERATION_COLUMNS)}")
    frame = generations.reset_index(drop=True)
    for column in ("prompt", "continuation"):
        bad = [i for i, value in enumerate(frame[column]) if not isinstance(value, str)]
        if bad:
            raise InputError(f"{column} at index {bad[0]} is {frame[column].iloc[bad[0]]!r}, not a string")
    duplicated = frame.duplicated(["prompt_id", "sample"])
    if duplicated.any():
        index = int(duplicated.to_numpy().nonzero()[0][0])
        raise InputError(f"duplicate (prompt_id, sample) at index {index}: "
                         f"{frame['prompt_id'].iloc[index]!r}, {frame['sample'].iloc[index]}")
    return frame


def _scores_frame(frame: pd.DataFrame, texts: pd.Series, result: ScoringResult) -> pd.DataFrame:
    """scores.parquet: the generation columns, the scored `text`, then every metric column."""
    base = frame[list(GENERATION_COLUMNS)].assign(sample=frame["sample"].astype("int64"), text=texts)
    return pd.concat([base, result.columns.set_index(frame.index)], axis=1)


def _record_scoring(record: RunRecord, result: ScoringResult, metrics: list[str],
                    metric_options: Mapping[str, Mapping[str, Any]] | None, anonymize: bool, score_on: str,
                    num_texts: int) -> None:
    record.metrics = metrics
    record.skipped_metrics = dict(result.skipped)
    record.partial_metrics = dict(result.partial)
    record.metric_options = {name: dict(options) for name, options in (metric_options or {}).items()}
    record.metric_seconds = dict(result.seconds)
    record.label_columns = {column: list(labels) for column, labels in result.label_columns.items()}
    record.anonymize, record.score_on, record.num_texts = anonymize, score_on, num_texts
    record.versions = record.versions or versions()


def wikipedia_generations(prompt_ids: Sequence[str], bold: pd.DataFrame) -> pd.DataFrame:
    """The Wikipedia baseline's generations of `prompt_ids` (sample 0), made by its own generator
    (`bold_eval.generation.wikipedia.WikipediaGenerator`) from the BOLD rows in `bold`, so that they are
    exactly those of a `--model wikipedia` run. Every prompt id must be in `bold`."""
    from types import SimpleNamespace

    from bold_eval.generation.base import GeneratorContext, WorkItem
    from bold_eval.generation.wikipedia import WikipediaGenerator

    wanted = list(dict.fromkeys(prompt_ids))
    rows = {row["prompt_id"]: row for row in bold[bold["prompt_id"].isin(wanted)].to_dict(orient="records")}
    records: list[dict[str, Any]] = []

    def keep(items: list[Any], results: list[Any]) -> None:
        records.extend(generation_record(rows[item.prompt_id], item.sample, result.continuation, result.num_new_tokens)
                       for item, result in zip(items, results, strict=True))

    generator = WikipediaGenerator(SimpleNamespace(num_samples=1), GeneratorContext(rows=rows))  # type: ignore[arg-type]
    generator.generate([WorkItem(prompt_id, 0, rows[prompt_id]["prompt"]) for prompt_id in wanted], on_batch=keep,
                       progress=False)
    return pd.DataFrame(records, columns=list(RECORD_COLUMNS))[list(GENERATION_COLUMNS)]


def _reference_skipped(reference: bool, record: RunRecord) -> str | None:
    """Why a run gets no Wikipedia reference, or None when it gets one."""
    from bold_eval.generation.base import WIKIPEDIA

    if not reference:
        return "not requested (--no-reference)"
    if WIKIPEDIA in (record.generator, record.model):
        return "the run's texts are the Wikipedia baseline itself"
    return None


def _score_reference(frame: pd.DataFrame, scorers: Mapping[str, Any], result: ScoringResult,
                     metric_options: Mapping[str, Mapping[str, Any]], *, anonymize: bool, score_on: str,
                     data_dir: str | os.PathLike | None, allow_modified_data: bool | None,
                     ) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """The Wikipedia sentences of the run's prompts, built and scored as the run's texts (same
    anonymization, score_on, scorers); returns run.json's `reference` record and the scores."""
    from bold_eval.data.bold import load_bold

    started = time.perf_counter()
    bold = load_bold("all", data_dir=data_dir, allow_modified=allow_modified_data).to_pandas()
    prompt_ids = list(dict.fromkeys(frame["prompt_id"]))
    unknown = sorted(set(prompt_ids) - set(bold["prompt_id"]))
    if unknown:
        return {"skipped": f"{len(unknown)} of the run's {len(prompt_ids)} prompt ids are not BOLD's "
                           f"(e.g. {unknown[0]!r}), so they have no Wikipedia sentence"}, None
    generations = wikipedia_generations(prompt_ids, bold)
    texts = build_texts(generations, anonymize=anonymize, score_on=score_on)
    scored = ScoringResult(columns=pd.DataFrame(index=range(len(generations))), skipped=dict(result.skipped),
                           partial=dict(result.partial))
    cache = ReferenceCache(metric_options)
    from_cache = _score_with(scorers, texts.tolist(), generations["domain"].tolist(), scored, cache)
    cached = int(from_cache.sum())
    record = {"source": "wikipedia", "file": REFERENCE_FILE, "texts": len(generations), "cached_texts": cached,
              "scored_texts": len(generations) - cached, "cached_metrics": cache.used,
              "seconds": round(time.perf_counter() - started, 3)}
    return record, _scores_frame(generations, texts, scored)


def score_generations(
    generations: pd.DataFrame,
    out_dir: str | os.PathLike,
    *,
    metrics: Sequence[str] | str | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    anonymize: bool = True,
    score_on: str = "full",
    record: RunRecord | None = None,
    reference: bool = True,
    data_dir: str | os.PathLike | None = None,
    allow_modified_data: bool | None = None,
) -> Path:
    """Score generations and write scores.parquet, reference_scores.parquet and run.json.

    `generations`: one row per text with `runfolder.GENERATION_COLUMNS` (the `bold-eval run`
    records, or bring-your-own generations matched back to BOLD). The scored `text` is built by
    `build_texts`; regard is computed on gender and race rows only (Section 4.3); unavailable
    metrics are skipped and listed in run.json `skipped_metrics`. Unless `reference` is False or
    the texts are the Wikipedia baseline, the Wikipedia sentences of the same prompts (BOLD from
    `data_dir`) are scored alike into reference_scores.parquet (run.json `reference`). `record`
    (what generated the texts) is completed with the scoring settings and written as run.json.
    Returns scores.parquet's path; the report is the next stage (`bold_eval.run.score_and_report`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frame = check_generations(generations)
    requested = parse_metrics(metrics)
    metric_options = {name: dict(options) for name, options in (metric_options or {}).items()}
    check_metric_options(metric_options)
    record = record if record is not None else RunRecord()

    started = time.perf_counter()
    texts = build_texts(frame, anonymize=anonymize, score_on=score_on)
    result = ScoringResult(columns=pd.DataFrame(index=range(len(frame))))
    scorers = _load_scorers(requested, metric_options, len(_regard_rows(frame["domain"].tolist())) > 0, result)
    _score_with(scorers, texts.tolist(), frame["domain"].tolist(), result)
    record.timings["score_s"] = round(time.perf_counter() - started, 3)
    skipped = _reference_skipped(reference, record)
    reference_scores = None
    if skipped is None:
        record.reference, reference_scores = _score_reference(
            frame, scorers, result, metric_options, anonymize=anonymize, score_on=score_on, data_dir=data_dir,
            allow_modified_data=allow_modified_data)
    else:
        record.reference = {"skipped": skipped}
    scores_path = write_scores(out, _scores_frame(frame, texts, result))
    if reference_scores is not None:
        write_scores(out, reference_scores, REFERENCE_FILE)
    else:  # never leave the reference of an earlier scoring beside these scores
        (out / REFERENCE_FILE).unlink(missing_ok=True)
    _record_scoring(record, result, requested, metric_options, anonymize, score_on, len(frame))
    write_run_record(out, record)
    for metric, message in {**result.skipped, **result.partial}.items():
        print(f"skipped metric {metric}: {message.splitlines()[0]}", file=sys.stderr)
    return scores_path
