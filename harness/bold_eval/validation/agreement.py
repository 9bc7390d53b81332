"""Does a metric agree with people? Section 6.3 and Table 8 of the paper, for any metric and labelled set.

The paper compares each automatic metric with crowd-worker labels and reports "(1) Spearman's
ρ correlation coefficient, and (2) accuracy, precision, recall and f1-score by assuming human
annotations as truth ... on a per-class basis and ... the average of per-class scores weighted by
the number of samples in each class" (Section 6.3), and plots the metric's continuous score per
human label (Figure 6). `validate` does the same for one metric score on any labelled texts:

1. the metric runs through its scorer (`bold_eval.metrics.<name>.load_scorer(**options)`);
2. its labels are mapped onto the human label set (by name, or by the paper's numeric codes
   male = -1, female = 1, positive = 1, negative = -1, neutral = 0, toxic = 1, Section 6.3), and
   the mapping is part of the record;
3. Spearman's ρ between the metric's labels and the human labels, both placed on the label order
   (Table 8's ρ, computed "between labels computed with automatic metrics and labels from human
   annotations", Section 6.3), accuracy, per-class precision / recall / F1 / support and their
   class-size-weighted averages come from scipy and scikit-learn, with paired bootstrap intervals;
   ρ between the continuous score and the human label is reported next to it (`spearman_rho_score`).

`bold_eval.validation.report` writes the record as validation.json, Table 8 and Figure 6.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from bold_eval.core.errors import InputError, UsageError
from bold_eval.core.version import __version__
from bold_eval.metrics import metric_spec
from bold_eval.metrics.common import check_texts
from bold_eval.validation.labels import (
    Label,
    canonical_label,
)
from bold_eval.validation.mapping import (
    axis_positions,
    class_indices,
    compared_classes,
    human_classes,
    label_positions,
    map_labels,
    name_numeric_classes,
)
from bold_eval.validation.scores import (
    Scored,
    ScoreView,
    score_view,
)

DEFAULTS: dict[str, Any] = {
    "confidence_level": 0.95,
    "n_resamples": 9999,  # scipy.stats.bootstrap's default
    "seed": 0,
}
# BCa corrects the percentile interval for bias and skew, which matter for a correlation near 1; its
# jackknife costs n statistics over n - 1 texts, so above this many texts the percentile interval is used.
BCA_MAX_TEXTS = 5000
# Bootstrap resamples are scored in batches of at most this many resampled texts (memory bound).
_BOOTSTRAP_BATCH_ELEMENTS = 2_000_000


# --------------------------------------------------------------------------- scoring


# --------------------------------------------------------------------------- label mapping


# --------------------------------------------------------------------------- what a validation finds


@dataclass(frozen=True)
class ClassScores:
    """One human class's precision, recall, F1 and support (Section 6.3), and its human label once known."""

    precision: float
    recall: float
    f1: float
    support: int
    label: Label | None = None

    def as_dict(self) -> dict[str, Label | float]:
        scores: dict[str, Label | float] = {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                                            "support": self.support}
        return scores if self.label is None else {"label": self.label, **scores}


@dataclass(frozen=True)
class AgreementIntervals:
    """Paired bootstrap intervals (low, high; None when undefined) of both ρ and accuracy, and how they were drawn."""

    spearman_rho: tuple[float | None, float | None]
    spearman_rho_score: tuple[float | None, float | None]
    accuracy: tuple[float | None, float | None]
    confidence_level: float
    method: str
    n_resamples: int
    seed: int

    def as_dict(self) -> dict[str, object]:
        return {"spearman_rho": list(self.spearman_rho), "spearman_rho_score": list(self.spearman_rho_score),
                "accuracy": list(self.accuracy), "confidence_level": self.confidence_level, "method": self.method,
                "n_resamples": self.n_resamples, "seed": self.seed}


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of texts per human class (rows) and the class the metric's label maps to (columns, the last one
    for a label that maps to no compared class)."""

    columns: list[str]
    counts: list[list[int]]
    rows: ClassVar[str] = "human class"

    def as_dict(self) -> dict[str, object]:
        return {"rows": self.rows, "columns": self.columns, "counts": self.counts}


@dataclass(frozen=True)
class Agreement:
    """Section 6.3's comparison of a metric with human labels (`agreement`): Table 8's ρ between the metric's and
    the human labels over the `spearman_n` texts whose metric label is on the label order (and its p-value), ρ of
    the continuous score, accuracy, per-class and class-size-weighted scores, intervals, the texts whose label maps
    to no compared class, and the confusion matrix. ρ and p-values are None when undefined."""

    n: int
    spearman_rho: float | None
    spearman_p_value: float | None
    spearman_n: int
    spearman_rho_score: float | None
    spearman_p_value_score: float | None
    accuracy: float
    per_class: dict[str, ClassScores]
    weighted: dict[str, float]
    intervals: AgreementIntervals
    predicted_outside: int
    confusion_matrix: ConfusionMatrix

    def as_dict(self) -> dict[str, object]:
        return {"n": self.n, "spearman_rho": self.spearman_rho, "spearman_p_value": self.spearman_p_value,
                "spearman_n": self.spearman_n, "spearman_rho_score": self.spearman_rho_score,
                "spearman_p_value_score": self.spearman_p_value_score, "accuracy": self.accuracy,
                "per_class": {name: scores.as_dict() for name, scores in self.per_class.items()},
                "weighted": dict(self.weighted), "intervals": self.intervals.as_dict(),
                "predicted_outside": self.predicted_outside, "confusion_matrix": self.confusion_matrix.as_dict()}


@dataclass(frozen=True)
class ComparedClass:
    """A human class compared: its label, its name (Table 8's column) and its place on the label order."""

    label: Label
    name: str
    axis_position: float


@dataclass(frozen=True)
class ValidationRecord:
    """validation.json (`as_dict`): what was compared and how (the metric, its score, options and thresholds, the
    source of the human labels, the classes, the label mapping, the excluded texts), then the `Agreement`."""

    metric: str
    score: str
    table8_row: str
    score_description: str
    metric_options: Any  # the options as JSON (`_jsonable`)
    thresholds: dict[str, float]
    source: dict[str, Any]  # the labelled source's own description (files, checksums, citation)
    classes: list[ComparedClass]
    label_mapping: dict[str, Label | None]
    excluded_labels: dict[str, int]
    agreement: Agreement
    bold_eval_version: str = __version__

    @property
    def excluded(self) -> int:
        return int(sum(self.excluded_labels.values()))

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> ValidationRecord:
        """A record read back from validation.json (`as_dict`'s mapping)."""
        intervals, matrix = record["intervals"], record["confusion_matrix"]
        found = Agreement(
            n=record["n"], spearman_rho=record["spearman_rho"], spearman_p_value=record["spearman_p_value"],
            spearman_n=record["spearman_n"], spearman_rho_score=record["spearman_rho_score"],
            spearman_p_value_score=record["spearman_p_value_score"], accuracy=record["accuracy"],
            per_class={name: ClassScores(**scores) for name, scores in record["per_class"].items()},
            weighted=dict(record["weighted"]),
            intervals=AgreementIntervals(
                spearman_rho=tuple(intervals["spearman_rho"]),
                spearman_rho_score=tuple(intervals["spearman_rho_score"]),
                accuracy=tuple(intervals["accuracy"]), confidence_level=intervals["confidence_level"],
                method=intervals["method"], n_resamples=intervals["n_resamples"], seed=intervals["seed"]),
            predicted_outside=record["predicted_outside"],
            confusion_matrix=ConfusionMatrix(columns=list(matrix["columns"]), counts=list(matrix["counts"])))
        return cls(metric=record["metric"], score=record["score"], table8_row=record["table8_row"],
                   score_description=record["score_description"], metric_options=record["metric_options"],
                   thresholds=dict(record["thresholds"]), source=dict(record["source"]),
                   classes=[ComparedClass(**entry) for entry in record["classes"]],
                   label_mapping=dict(record["label_mapping"]), excluded_labels=dict(record["excluded_labels"]),
                   agreement=found, bold_eval_version=record["bold_eval_version"])

    def as_dict(self) -> dict[str, object]:
        numbers = self.agreement.as_dict()
        return {
            "metric": self.metric, "score": self.score, "table8_row": self.table8_row,
            "score_description": self.score_description, "metric_options": self.metric_options,
            "thresholds": self.thresholds, "source": self.source,
            "classes": [{"label": entry.label, "name": entry.name, "axis_position": entry.axis_position}
                        for entry in self.classes],
            "label_mapping": dict(self.label_mapping), "n": numbers.pop("n"), "excluded": self.excluded,
            "excluded_labels": self.excluded_labels, **numbers, "bold_eval_version": self.bold_eval_version,
        }


# --------------------------------------------------------------------------- statistics


def _nan_to_none(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _spearman_along(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman's ρ of each resample: Pearson's r of the ranks (scipy), vectorized over resamples."""
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a resample with one human class only has no ρ (nan)
        return stats.pearsonr(stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis), axis=axis).statistic


def paired_bootstrap_interval(
    data: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    method: str = "BCa",
) -> tuple[float | None, float | None]:
    """scipy.stats.bootstrap interval, texts resampled with all their columns (paired); None if undefined.

    An interval is undefined (None) when a column is constant (accuracy 1.0, ρ of a constant score)
    or, for BCa, when scipy cannot compute it.
    """
    from scipy import stats

    n = len(data[0])
    # A paired statistic (a correlation) needs two pairs in each of BCa's leave-one-out samples.
    if n < (3 if len(data) > 1 else 2) or any(np.ptp(column) == 0 for column in data):
        return None, None  # every resample would give the same value, or none
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate samples: scipy warns and returns nan, reported as None
        result = stats.bootstrap(
            data, statistic, paired=len(data) > 1, vectorized=True, n_resamples=n_resamples,
            confidence_level=confidence_level, method=method, rng=np.random.default_rng(seed),
            batch=max(1, _BOOTSTRAP_BATCH_ELEMENTS // n),
        )
    return _nan_to_none(result.confidence_interval.low), _nan_to_none(result.confidence_interval.high)


def _per_class_scores(
    human: np.ndarray, predicted: np.ndarray, class_names: Sequence[str]
) -> tuple[dict[str, ClassScores], dict[str, float]]:
    """Per-class precision / recall / F1 / support and their class-size-weighted averages (Section 6.3)."""
    from sklearn.metrics import precision_recall_fscore_support

    classes = list(range(len(class_names)))
    precision, recall, f1, support = precision_recall_fscore_support(
        human, predicted, labels=classes, average=None, zero_division=0.0
    )
    weighted = precision_recall_fscore_support(human, predicted, labels=classes, average="weighted", zero_division=0.0)
    per_class = {
        name: ClassScores(precision=float(precision[i]), recall=float(recall[i]), f1=float(f1[i]),
                          support=int(support[i]))
        for i, name in enumerate(class_names)
    }
    return per_class, {"precision": float(weighted[0]), "recall": float(weighted[1]), "f1": float(weighted[2])}


def _agreement_intervals(
    human: np.ndarray,
    predicted: np.ndarray,
    scores: np.ndarray,
    human_order: np.ndarray,
    predicted_order: np.ndarray,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> AgreementIntervals:
    """Paired bootstrap intervals for both ρ and accuracy; BCa up to BCA_MAX_TEXTS texts, percentile above.

    The label-level ρ resamples the texts whose metric label has a place on the label order.
    """
    correct = (human == predicted).astype(np.float64)
    method = "BCa" if human.size <= BCA_MAX_TEXTS else "percentile"
    interval = functools.partial(paired_bootstrap_interval, confidence_level=confidence_level,
                                 n_resamples=n_resamples, seed=seed, method=method)
    placed = np.isfinite(predicted_order)
    rho_ci = interval((predicted_order[placed], human_order[placed]), _spearman_along)
    rho_score_ci = interval((scores, human_order), _spearman_along)
    accuracy_ci = interval((correct,), np.mean)
    return AgreementIntervals(
        spearman_rho=rho_ci, spearman_rho_score=rho_score_ci, accuracy=accuracy_ci,
        confidence_level=confidence_level,
        method=f"{method} bootstrap (scipy.stats.bootstrap), texts resampled with their human label, "
               "metric label and score (paired)",
        n_resamples=n_resamples, seed=seed,
    )


def _spearman(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    """(ρ, p-value) from scipy.stats.spearmanr (average ranks for ties); None when an input is constant."""
    from scipy import stats

    if x.size < 2:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input has no ρ: nan, reported as None
        result = stats.spearmanr(x, y)
    return _nan_to_none(result.statistic), _nan_to_none(result.pvalue)


def agreement(
    human: np.ndarray,
    predicted: np.ndarray,
    scores: np.ndarray,
    human_order: np.ndarray,
    predicted_order: np.ndarray,
    class_names: Sequence[str],
    *,
    confidence_level: float = DEFAULTS["confidence_level"],
    n_resamples: int = DEFAULTS["n_resamples"],
    seed: int = DEFAULTS["seed"],
) -> Agreement:
    """Section 6.3's comparison of one metric with human labels, taken as truth.

    `human`: class index per text (0..k-1, the order of `class_names`); `predicted`: the class
    index the metric's label maps to, or k when it maps to no compared class (counted as a miss);
    `scores`: the metric's continuous score; `human_order`: each text's human class position on the
    label order (the score axis); `predicted_order`: the position of the metric's label on the same
    order, NaN for a label with no place on it (regard's "other").

    Table 8's ρ (`spearman_rho`) is between `predicted_order` and `human_order` over the texts with a
    placed metric label (`spearman_n`); `spearman_rho_score` is between `scores` and `human_order`.
    """
    from sklearn.metrics import accuracy_score, confusion_matrix

    human = np.asarray(human, dtype=np.int64)
    predicted = np.asarray(predicted, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    human_order = np.asarray(human_order, dtype=np.float64)
    predicted_order = np.asarray(predicted_order, dtype=np.float64)
    k = len(class_names)

    placed = np.isfinite(predicted_order)
    rho, p_value = _spearman(predicted_order[placed], human_order[placed])
    rho_score, p_value_score = _spearman(scores, human_order)
    per_class, weighted = _per_class_scores(human, predicted, class_names)
    intervals = _agreement_intervals(
        human, predicted, scores, human_order, predicted_order,
        confidence_level=confidence_level, n_resamples=n_resamples, seed=seed,
    )
    matrix = confusion_matrix(human, predicted, labels=[*range(k), k])[:k]
    return Agreement(
        n=int(human.size),
        spearman_rho=rho,
        spearman_p_value=p_value,
        spearman_n=int(placed.sum()),
        spearman_rho_score=rho_score,
        spearman_p_value_score=p_value_score,
        accuracy=float(accuracy_score(human, predicted)),
        per_class=per_class,
        weighted=weighted,
        intervals=intervals,
        predicted_outside=int((predicted == k).sum()),
        confusion_matrix=ConfusionMatrix(columns=[*class_names, "(no compared class)"],
                                         counts=matrix.astype(int).tolist()),
    )


# --------------------------------------------------------------------------- the validation


@dataclass
class Validation:
    """The validation record (validation.json) and the per-text arrays behind it (figures, predictions)."""

    record: ValidationRecord
    texts: list[str]
    human_labels: list[Label]
    included: np.ndarray  # bool per text: not excluded
    scores: np.ndarray
    metric_labels: np.ndarray
    view: ScoreView


def _jsonable(value: Any) -> Any:
    """Options as JSON: numbers, strings, lists and dicts as they are, anything else (a model object) as repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return repr(value)


def _check_inputs(
    metric: str, texts: Sequence[str], human_labels: Sequence[Any], confidence_level: float, n_resamples: int
) -> tuple[list[str], list[Label]]:
    """The texts and canonical human labels, after refusing what cannot be validated."""
    metric_spec(metric)  # a UsageError naming the valid metrics when unknown
    texts = check_texts(texts, "texts")
    if isinstance(human_labels, str):
        raise InputError("`human_labels` must be a list with one label per text, got a single string")
    human = [canonical_label(value, f"human_labels[{index}]") for index, value in enumerate(human_labels)]
    if len(human) != len(texts):
        raise InputError(f"`texts` has {len(texts)} entries but `human_labels` has {len(human)}; one label per text")
    if not texts:
        raise InputError("no texts to validate on")
    if not 0.0 < confidence_level < 1.0:
        raise UsageError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if int(n_resamples) < 1:
        raise UsageError(f"n_resamples must be a positive integer, got {n_resamples}")
    return texts, human


def _validation_record(
    scored: Scored,
    stats: Agreement,
    classes: Mapping[Label, str],
    compared: list[Label],
    order: Mapping[Label, float],
    mapping: Mapping[str, Label | None],
    excluded_counts: dict[str, int],
    source: Mapping[str, Any] | None,
) -> ValidationRecord:
    """validation.json: what was compared and how, then `agreement`'s numbers."""
    view = scored.view
    return ValidationRecord(
        metric=view.metric,
        score=view.score,
        table8_row=view.row_name,
        score_description=view.description,
        metric_options=_jsonable(scored.options),
        thresholds=scored.thresholds,
        source=dict(source) if source is not None else {"name": "texts and human_labels passed to validate"},
        classes=[ComparedClass(label=label, name=classes[label], axis_position=order[label]) for label in compared],
        label_mapping=dict(mapping),
        excluded_labels=excluded_counts,
        agreement=stats,
    )


def run_validation(
    metric: str,
    texts: Sequence[str],
    human_labels: Sequence[Any],
    *,
    score: str | None = None,
    label_set: Mapping[Any, str] | Sequence[Any] | str | None = None,
    label_map: Mapping[str, Any] | None = None,
    exclude_labels: Sequence[Any] = (),
    source: Mapping[str, Any] | None = None,
    confidence_level: float = DEFAULTS["confidence_level"],
    n_resamples: int = DEFAULTS["n_resamples"],
    seed: int = DEFAULTS["seed"],
    **options: Any,
) -> Validation:
    """`validate`, also returning the per-text arrays that the figures and predictions.csv need."""
    texts, human = _check_inputs(metric, texts, human_labels, confidence_level, n_resamples)
    classes = human_classes(label_set, human)
    excluded_set, compared = compared_classes(classes, human, exclude_labels)

    scored = score_view(metric, texts, score, **options)
    mapping = map_labels(scored.view, scored.metric_labels, classes, label_map)
    name_numeric_classes(classes, mapping)
    order = axis_positions(scored, compared, classes, mapping)
    # Table 8 lists classes from the top of the axis down (positive, neutral, negative; female, neutral,
    # male) unless the label set was declared in an order of its own.
    if label_set is None:
        compared.sort(key=lambda label: -order[label])

    included, human_index, predicted_index = class_indices(human, scored.labels, compared, mapping)
    human_order = np.array([order[label] for label in compared])[human_index]
    predicted_order = label_positions(scored, order, mapping)[included]
    scores = np.asarray(scored.scores, dtype=np.float64)
    class_names = [classes[label] for label in compared]
    if len(set(class_names)) < len(class_names):
        raise UsageError(f"the human label set gives two classes the same name: {class_names}")
    stats = agreement(
        human_index, predicted_index, scores[included], human_order, predicted_order, class_names,
        confidence_level=confidence_level, n_resamples=int(n_resamples), seed=seed,
    )
    stats = dataclasses.replace(stats, per_class={
        name: dataclasses.replace(stats.per_class[name], label=label)
        for name, label in zip(class_names, compared, strict=True)})

    excluded_counts = {classes[label]: int(sum(1 for h in human if h == label)) for label in excluded_set}
    record = _validation_record(scored, stats, classes, compared, order, mapping, excluded_counts, source)
    return Validation(record, texts, human, included, scores, np.asarray(scored.labels, dtype=object), scored.view)


def validate(metric: str, texts: Sequence[str], human_labels: Sequence[Any], **options: Any) -> dict[str, object]:
    """Table 8 for one metric: agreement of `metric` on `texts` with `human_labels` (taken as truth).

    Returns the record written as validation.json: n, spearman_rho (Table 8's ρ between the metric's
    labels and the human labels; + p-value and spearman_n), spearman_rho_score (ρ between the continuous
    score and the human label; + p-value), accuracy, per_class {name: label, precision, recall, f1,
    support}, weighted {precision, recall, f1}, excluded, intervals (95% paired bootstrap for both ρ
    and accuracy), label_mapping, classes,
    metric_options, source. Validation keywords: score, label_set, label_map, exclude_labels,
    source, confidence_level, n_resamples, seed; every other keyword is a metric option
    (`bold_eval.metrics.<metric>.load_scorer`), e.g. model= for toxicity and regard.
    """
    return run_validation(metric, texts, human_labels, **options).record.as_dict()


