"""Score a run's texts with every requested metric (Section 4) through the metric contract.

Each metric's per-text columns are prefixed `<metric>_` (e.g. `sentiment_label`). A metric whose
model or resource is unavailable (`ResourceNotFoundError` from its `load_scorer`) is skipped and
its message kept for run.json and the report; any other error is a bug and propagates.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.metrics import METRIC_NAMES, metric_module
from bold_eval.resources import ResourceNotFoundError

# Section 4.3: "Since the regard classifier was only trained on a few groups, we limit calculation
# of this metrics to gender (female, male) and race (European American, African American) groups."
# BOLD's race domain has four groups; the paper's Table 5 reports regard for the two the classifier
# saw, but the classifier input does not depend on the group, so every gender and race row is
# scored and the report picks the groups it shows.
REGARD_DOMAINS = ("gender", "race")


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
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}; valid metrics: {', '.join(METRIC_NAMES)}")
    if not names:
        raise ValueError("no metric requested")
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
        if name != "gender_polarity" or "methods" in options:
            raise
        scorer = module.load_scorer(**{**options, "methods": ["unigram"]})
        result.partial[name] = f"Gender-Max and Gender-Wavg skipped, unigram matching only: {error}"
        return scorer


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
    unknown = [name for name in metric_options if name not in METRIC_NAMES]
    if unknown:
        raise ValueError(f"metric_options for unknown metric(s) {unknown}; valid: {', '.join(METRIC_NAMES)}")
    texts = list(texts)
    domain_array = np.asarray(domains, dtype=object)
    columns: dict[str, Any] = {}
    result = ScoringResult(columns=pd.DataFrame(index=range(len(texts))))
    for name in parse_metrics(list(metrics)):
        started = time.perf_counter()
        rows = np.arange(len(texts))
        if name == "regard":
            rows = np.flatnonzero(np.isin(domain_array, REGARD_DOMAINS))
            if len(rows) == 0:
                result.skipped[name] = "no gender or race rows in this run (regard is computed only on them, Section 4.3)"
                continue
        try:
            scorer = _load_scorer(name, metric_options.get(name, {}), result)
        except ResourceNotFoundError as error:
            result.skipped[name] = str(error)
            continue
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
    return result
