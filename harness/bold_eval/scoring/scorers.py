"""Every requested metric's scorer, loaded once, run over texts; columns prefixed with the metric's name."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from bold_eval.core.errors import MissingFileError, UsageError
from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics import check_scorer_options, metric_names, metric_spec
from bold_eval.metrics.common import unique_with_inverse
from bold_eval.runfolder.layout import GENERATION_COLUMNS
from bold_eval.scoring.cache import (
    ReferenceCache,
)
from bold_eval.scoring.dedupe import TextMemo


@dataclass
class ScoringResult:
    """Per-text metric columns (input order), which metrics were skipped and why, and timings."""

    columns: pd.DataFrame
    skipped: dict[str, str] = field(default_factory=dict)
    # Metrics scored with fewer methods than requested, and why (gender polarity without word2vec).
    partial: dict[str, str] = field(default_factory=dict)
    label_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def skipped_lines(result: ScoringResult) -> list[str]:
    """One line per metric skipped or scored in part (a resource missing offline), as `bold-eval run` prints it."""
    return [f"skipped metric {metric}: {message.splitlines()[0]}"
            for metric, message in {**result.skipped, **result.partial}.items()]


def parse_metrics(metrics: str | Sequence[str] | None) -> list[str]:
    """`None`/"all" -> every registered metric; otherwise validated names in the registry's (the paper's) order."""
    known = metric_names()
    if metrics is None or metrics == "all":
        return list(known)
    names = [name.strip() for name in (metrics.split(",") if isinstance(metrics, str) else metrics) if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UsageError(f"unknown metric(s) {', '.join(unknown)}; valid metrics: {', '.join(known)}")
    if not names:
        raise UsageError("no metric requested")
    return [name for name in known if name in names]


def _null_column(values: np.ndarray, size: int) -> np.ndarray | pd.Series:
    """A column of `size` nulls with the dtype family of `values` (for rows a metric does not score)."""
    if values.dtype.kind == "b":
        return pd.array([pd.NA] * size, dtype="boolean")
    if values.dtype.kind in "iu":
        return pd.array([pd.NA] * size, dtype="Int64")
    if values.dtype.kind == "f":
        return np.full(size, np.nan)
    return np.full(size, None, dtype=object)


def _spread(values: np.ndarray, rows: np.ndarray, size: int, nullable: bool = False) -> Any:
    """Place `values` (scored for `rows`) into a full-length column, nulls elsewhere; with `nullable`, a
    column that can hold nulls even where `rows` is every row (a streamed run's chunks share one schema)."""
    values = np.asarray(values)
    if len(rows) == size and not nullable:
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
    unknown = [name for name in metric_options if name not in metric_names()]
    if unknown:
        raise UsageError(f"metric_options for unknown metric(s) {unknown}; valid: {', '.join(metric_names())}")
    for name, options in metric_options.items():
        check_scorer_options(name, options)


def _named_resources(name: str, options: Mapping[str, Any]) -> list[str]:
    """The options the user gave that name one of the metric's resources (`Resources.options`)."""
    keys = metric_spec(name).resources.options
    return [f"{name}.{key}={options[key]}" for key in keys if options.get(key) is not None]


def _load_scorer(name: str, options: Mapping[str, Any], result: ScoringResult) -> Any:
    """The metric's scorer, or its fallback (`Resources.fallback`) when its default resource is missing.

    Gender polarity's unigram matching (Section 4.5) needs no resource, so when the user did not choose `methods`
    and the embedding for Gender-Max / Gender-Wavg is unavailable, the run keeps the unigram counts and records
    why the other two are missing instead of dropping the whole metric.
    """
    spec = metric_spec(name)
    fallback = spec.resources.fallback
    try:
        return spec.load_scorer(**dict(options))
    except ResourceNotFoundError as error:
        if (fallback is None or any(key in options for key in fallback.guard)
                or _named_resources(name, options)):
            raise
        scorer = spec.load_scorer(**{**options, **fallback.options})
        result.partial[name] = f"{fallback.note}: {error}"
        return scorer


def load_scorers(metrics: Sequence[str], metric_options: Mapping[str, Mapping[str, Any]], domains: Sequence[str],
                 result: ScoringResult) -> dict[str, Any]:
    """Every metric's scorer, loaded before any is run, so a resource the user named that is missing
    stops the run before minutes of scoring; unavailable defaults go to `result.skipped`, and so does a
    metric none of whose domains (`Domains.scored`) the texts are from."""
    scorers: dict[str, Any] = {}
    for name in metrics:
        options = metric_options.get(name, {})
        spec = metric_spec(name)
        if spec.domains.scored is not None and not len(metric_rows(name, domains)):
            where = f", {spec.domains.source}" if spec.domains.source else ""
            result.skipped[name] = (f"no {' or '.join(spec.domains.scored)} rows in this run ({name} is computed "
                                    f"only on them{where})")
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


def scorer_resources(scorers: Mapping[str, Any]) -> dict[str, list[dict[str, str]]]:
    """run.json's `resources`: per loaded metric, the records of the files it scores with (a scorer's
    `resources`: classifier weights with their Hub commit or checksum, embedding, lexicon files); metrics
    whose scorer records none (a model built in memory) are left out."""
    found = {name: [record.as_dict() for record in getattr(scorer, "resources", ())]
             for name, scorer in scorers.items()}
    return {name: records for name, records in found.items() if records}


def metric_rows(name: str, domains: Sequence[str]) -> np.ndarray:
    """Positions of the texts metric `name` scores: those of its domains (`Domains.scored`)."""
    spec_domains = metric_spec(name).domains.scored
    if spec_domains is None:
        return np.arange(len(domains))
    return np.flatnonzero(np.isin(np.asarray(domains, dtype=object), spec_domains))


def score_texts(
    texts: Sequence[str],
    domains: Sequence[str],
    metrics: Sequence[str],
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> ScoringResult:
    """Run each metric's scorer over `texts`, each on the rows of its domains (`Domains.scored`)."""
    if len(texts) != len(domains):
        raise ValueError(f"texts and domains must have the same length, got {len(texts)} and {len(domains)}")
    metric_options = dict(metric_options or {})
    check_metric_options(metric_options)
    result = ScoringResult(columns=pd.DataFrame(index=range(len(texts))))
    scorers = load_scorers(parse_metrics(list(metrics)), metric_options, domains, result)
    score_with(scorers, list(texts), domains, result)
    return result


# Distinct texts a scorer sees per call: bounds the memory of tokenization and per-call buffers, whatever
# the number of texts (BOLD x 25 samples is 591,975 texts); large enough that batching is unaffected.
CHUNK_TEXTS = 4_096


def score_distinct(scorer: Any, texts: list[str], name: str = "metric", *,
                   chunk: int = CHUNK_TEXTS) -> dict[str, np.ndarray]:
    """`scorer`'s columns for `texts`, each distinct text scored once (short sampled continuations repeat),
    `chunk` distinct texts per call, so memory beyond the texts and their columns stays bounded."""
    distinct, inverse = unique_with_inverse(texts)
    parts: list[dict[str, np.ndarray]] = []
    starts = range(0, len(distinct), chunk)
    for start in tqdm(starts, desc=f"scoring {name}", unit="chunk", disable=len(starts) < 3, leave=False):
        parts.append({column: np.asarray(values) for column, values in scorer(distinct[start:start + chunk]).items()})
    if not parts:
        parts.append({column: np.asarray(values) for column, values in scorer([]).items()})
    return {column: np.concatenate([part[column] for part in parts])[inverse] for column in parts[0]}


def score_with(scorers: Mapping[str, Any], texts: list[str], domains: Sequence[str], result: ScoringResult,
                cache: ReferenceCache | None = None, memo: TextMemo | None = None) -> np.ndarray:
    """Fill `result` with every loaded scorer's columns for `texts`. With `cache`, the classifier
    metrics (`Resources.cached`) read and extend it; returns, per text, whether a cached metric applied
    to it and every such metric found it in the cache. With `memo` (`texts` is one chunk of a streamed
    run), texts scored in an earlier chunk are not scored again, and every chunk's columns have one type
    (a metric of some domains gives nullable columns even in a chunk of its domains only)."""
    columns: dict[str, Any] = {}
    applied, hit = np.zeros(len(texts), dtype=bool), np.ones(len(texts), dtype=bool)
    for name, scorer in scorers.items():
        started = time.perf_counter()
        rows = metric_rows(name, domains)
        if cache is not None and metric_spec(name).resources.cached:
            scored, cached = cache.score(name, scorer, [texts[i] for i in rows])
            applied[rows] = True
            hit[rows] &= cached
        elif memo is not None:
            scored = memo.score(name, functools.partial(score_distinct, scorer, name=name), [texts[i] for i in rows])
        else:
            scored = score_distinct(scorer, [texts[i] for i in rows], name)
        for column, values in scored.items():
            values = np.asarray(values)
            if len(values) != len(rows):
                raise ValueError(f"metric {name} returned {len(values)} values for column {column}, expected "
                                 f"{len(rows)}")
            columns[f"{name}_{column}"] = _spread(values, rows, len(texts),
                                                  memo is not None and metric_spec(name).domains.scored is not None)
        for column, labels in getattr(scorer, "label_columns", {}).items():
            result.label_columns[f"{name}_{column}"] = tuple(labels)
        result.seconds[name] = round(time.perf_counter() - started, 3)
    result.columns = pd.DataFrame(columns, index=range(len(texts)))
    return applied & hit


def parse_metric_options(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`["<metric>.methods=unigram", "<metric>.batch_size=64"]` (`--metric-option`) -> {metric: {key: value}}.

    A value is read as JSON when it parses (numbers, booleans, lists), else kept as a string;
    `methods` also accepts a comma list, and `revision` (a Hub branch, tag or commit) is always the string given.
    """
    options: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        metric, dot, key = name.partition(".")
        if not equals or not dot or not key or metric not in metric_names():
            raise UsageError(f"--metric-option {pair!r}: expected METRIC.KEY=VALUE with METRIC in "
                             f"{', '.join(metric_names())}")
        try:
            parsed: Any = value if key == "revision" else json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        if key == "methods" and isinstance(parsed, str):
            parsed = [method.strip() for method in parsed.split(",") if method.strip()]
        options.setdefault(metric, {})[key] = parsed
    return options


def scores_frame(frame: pd.DataFrame, texts: pd.Series, result: ScoringResult) -> pd.DataFrame:
    """scores.parquet: the generation columns, the scored `text`, then every metric column."""
    base = frame[list(GENERATION_COLUMNS)].assign(sample=frame["sample"].astype("int64"), text=texts)
    return pd.concat([base, result.columns.set_index(frame.index)], axis=1)
