"""Per-text indicators of the tested labels, for harnesses that score one sample at a time (Inspect, lighteval).

Inspect's scorers and lighteval's sample-level metrics see one continuation at a time and aggregate numbers.
`TextScorer` loads every requested metric's scorer once (`scorers.load_scorers`, so a metric whose default
resource is missing offline is skipped with `bold-eval run`'s message, `skipped_lines`), scores the text that
`bold-eval run` scores (`texts.build_texts`: prompt plus continuation, anonymized) and turns each tested label of
each metric (`MetricSpec.tested`, the labels whose rates the report compares across groups) into a 0/1 value:
`sentiment_negative`, `toxicity_toxic`, `regard_negative`, `psycholinguistic_joy`, `gender_polarity_unigram_male`,
... A metric that does not apply to a text's domain (regard outside gender and race) gives NaN, which both
harnesses leave out of the rate. The rates are the report's shares; the report's intervals, tests and tables come
from reading the harness's log back (`scoring.external`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from bold_eval.metrics import metric_spec
from bold_eval.scoring.scorers import ScoringResult, load_scorers, parse_metrics, score_with, skipped_lines
from bold_eval.scoring.texts import build_texts

_PROBE = "The probe sentence is here."


@dataclass(frozen=True)
class Indicator:
    """One tested label as a 0/1 value per text: `key` names it in the harness's results."""

    key: str  # "sentiment_negative"
    metric: str
    label: str  # the report's label name ("negative", "valence (-ve)", "unigram male")
    column: str  # the scores column that holds it
    value: Any  # the value that marks a text


def indicator_key(metric: str, label: str) -> str:
    """`sentiment` + `negative` -> `sentiment_negative`; `valence (-ve)` -> `valence_negative` (a key Inspect's
    and lighteval's tables show as is)."""
    label = label.replace("(-ve)", "negative").replace("(+ve)", "positive")
    return re.sub(r"[^0-9a-z]+", "_", f"{metric} {label}".lower()).strip("_")


def metric_indicators(metric: str, columns: Sequence[str]) -> list[Indicator]:
    """The indicators of `metric` whose columns are among `columns`: its tested labels (`MetricSpec.tested`),
    for a metric that tests one of several label columns (gender polarity: the first method scored) each of
    them, so that every method scored gets its own rates."""
    spec = metric_spec(metric)
    if callable(spec.tested_labels):
        found: dict[str, tuple[str, Any]] = {}
        for column in spec.labels:
            if column in columns:
                found.update(spec.tested([column]))
    else:
        found = spec.tested(columns)
    return [Indicator(indicator_key(metric, label), metric, label, column, value)
            for label, (column, value) in found.items()]


class TextScorer:
    """The requested metrics' scorers, loaded once; `score` gives each text's indicators (`keys`, in order)."""

    def __init__(self, metrics: str | Sequence[str] | None = None,
                 metric_options: Mapping[str, Mapping[str, Any]] | None = None, *, anonymize: bool = True,
                 score_on: str = "full") -> None:
        self.metrics = parse_metrics(metrics)
        self.metric_options = {name: dict(options) for name, options in (metric_options or {}).items()}
        self.anonymize, self.score_on = anonymize, score_on
        self.loaded = ScoringResult(columns=pd.DataFrame())
        self.scorers = load_scorers(self.metrics, self.metric_options, _probe_domains(self.metrics), self.loaded)
        self.indicators = self._probe()

    @property
    def keys(self) -> list[str]:
        return [indicator.key for indicator in self.indicators]

    def skipped_lines(self) -> list[str]:
        """`bold-eval run`'s line for each metric skipped or scored in part (a resource missing offline)."""
        return skipped_lines(self.loaded)

    def _probe(self) -> list[Indicator]:
        """Which columns the loaded scorers give (gender polarity's methods depend on the resources found)."""
        indicators: list[Indicator] = []
        for name, scorer in self.scorers.items():
            domains = metric_spec(name).domains.scored
            result = ScoringResult(columns=pd.DataFrame(index=range(1)))
            score_with({name: scorer}, [_PROBE], [domains[0] if domains else "gender"], result)
            indicators.extend(metric_indicators(name, list(result.columns.columns)))
        return indicators

    def score(self, generations: pd.DataFrame) -> list[dict[str, float]]:
        """Each row's indicators ({key: 0.0 or 1.0, NaN where the metric does not apply}); `generations` has
        `runfolder.layout.GENERATION_COLUMNS` (prompt, continuation, domain, group, name, ...)."""
        texts = build_texts(generations, anonymize=self.anonymize, score_on=self.score_on)
        result = ScoringResult(columns=pd.DataFrame(index=range(len(generations))))
        score_with(self.scorers, texts.tolist(), generations["domain"].tolist(), result)
        columns = result.columns
        rows: list[dict[str, float]] = [{} for _ in range(len(generations))]
        for indicator in self.indicators:
            values = columns[indicator.column].tolist() if indicator.column in columns else [None] * len(rows)
            for row, value in zip(rows, values, strict=True):
                row[indicator.key] = _indicator(value, indicator.value)
        return rows


def _indicator(value: Any, marked: Any) -> float:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return math.nan
    return float(value == marked)


def _probe_domains(metrics: Sequence[str]) -> list[str]:
    """A domain each metric scores, so that `load_scorers` skips none for want of rows."""
    domains = {(metric_spec(name).domains.scored or ("gender",))[0] for name in metrics}
    return sorted(domains)
