"""Metric labels onto human labels: by name, by the paper's numeric codes, or by an explicit map."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bold_eval.core.errors import InputError, UsageError
from bold_eval.validation.labels import (
    Label,
    canonical_label,
    declared_label_set,
)
from bold_eval.validation.scores import (
    Scored,
    ScoreView,
)


def map_labels(
    view: ScoreView,
    metric_labels: Sequence[str],
    classes: Mapping[Label, str],
    label_map: Mapping[str, Any] | None = None,
) -> dict[str, Label | None]:
    """{metric label: human label} for every metric label.

    Explicit `label_map` entries come first. Other labels match a human class by name (or by
    the label itself, case-insensitive); when the human labels are plain numbers without names, a
    metric label maps to its numeric code in the paper (positive = 1, male = -1, toxic = 1, ...,
    Section 6.3). A metric label in `view.optional` may stay unmatched (None: predicting it counts
    as a miss); any other unmatched label is an error asking for an explicit map.
    """
    mapping: dict[str, Label | None] = {}
    for metric_label, human in (label_map or {}).items():
        if metric_label not in metric_labels:
            raise UsageError(
                f"label map names {metric_label!r}, which is not a {view.metric} label; its labels: "
                f"{list(metric_labels)}"
            )
        human = canonical_label(human, f"label map value for {metric_label!r}")
        if human not in classes:
            raise UsageError(
                f"label map sends {metric_label!r} to {human!r}, which is not in the human label set {list(classes)}"
            )
        mapping[metric_label] = human
    by_name: dict[str, Label] = {}
    for label, name in classes.items():
        by_name.setdefault(str(name).lower(), label)
        by_name.setdefault(str(label).lower(), label)
    # Plain numbers (no names) follow the paper's coding: a metric label maps to its code even when
    # no text carries it, so that e.g. "neutral" predictions are misses against a -1/1 label set.
    numeric_codes = all(isinstance(label, int) and name == str(label) for label, name in classes.items())
    unmatched = []
    for metric_label in metric_labels:
        if metric_label in mapping:
            continue
        code = view.codes.get(metric_label)
        if metric_label.lower() in by_name:
            mapping[metric_label] = by_name[metric_label.lower()]
        elif code is not None and numeric_codes:
            mapping[metric_label] = code
        elif metric_label in view.optional or metric_label not in view.codes:
            mapping[metric_label] = None
        else:
            unmatched.append(metric_label)
    if unmatched:
        shown = ", ".join(f"{label}: {name}" if name != str(label) else str(label) for label, name in classes.items())
        raise UsageError(
            f"{view.metric} label(s) {', '.join(unmatched)} have no counterpart in the human label set ({shown}); "
            "state the mapping with label_map={METRIC_LABEL: HUMAN_LABEL} (CLI: --label-map METRIC_LABEL=HUMAN_LABEL)"
        )
    return mapping


def human_classes(label_set: Mapping[Any, str] | Sequence[Any] | str | None, human: list[Label]) -> dict[Label, str]:
    """{label: name} of the human label set: the declared one (every label must be in it), else the labels seen."""
    classes = declared_label_set(label_set)
    if classes is None:
        return {label: str(label) for label in sorted(set(human), key=lambda label: (isinstance(label, str), label))}
    outside = [(index, label) for index, label in enumerate(human) if label not in classes]
    if outside:
        index, label = outside[0]
        raise UsageError(
            f"human label {label!r} (text {index}) is not in the declared label set {list(classes)} "
            f"({len(outside)} text(s) outside it); declare it (label_set=, CLI --labels) or fix the labels"
        )
    return classes


def compared_classes(
    classes: Mapping[Label, str], human: list[Label], exclude_labels: Sequence[Any]
) -> tuple[list[Label], list[Label]]:
    """(excluded labels, compared labels): the human classes left out of the comparison and the rest."""
    excluded_set = [canonical_label(value, "exclude label") for value in exclude_labels]
    unknown = [label for label in excluded_set if label not in classes]
    if unknown:
        raise UsageError(f"excluded label(s) {unknown} are not in the human label set {list(classes)}")
    compared = [label for label in classes if label not in excluded_set]
    if all(label in excluded_set for label in human):
        raise InputError(f"every text carries an excluded label ({excluded_set}); nothing to compare")
    return excluded_set, compared


def name_numeric_classes(classes: dict[Label, str], mapping: Mapping[str, Label | None]) -> None:
    """A plain number takes the name of the metric label(s) mapped onto it (1 -> "positive"), in place."""
    for label, name in classes.items():
        named_by = [metric_label for metric_label, human_label in mapping.items() if human_label == label]
        if isinstance(label, int) and name == str(label) and named_by:
            classes[label] = "/".join(named_by)


def axis_positions(
    scored: Scored, compared: list[Label], classes: Mapping[Label, str], mapping: Mapping[str, Label | None]
) -> dict[Label, float]:
    """Each compared human class sits on the score axis where the metric labels mapped to it sit."""
    view = scored.view
    order: dict[Label, float] = {}
    for label in compared:
        codes = [view.codes[m] for m, human_label in mapping.items() if human_label == label and m in view.codes]
        if not codes:
            raise UsageError(
                f"human label {label!r} ({classes[label]}) has no counterpart among the {view.metric} labels "
                f"{list(scored.metric_labels)}; exclude it (exclude_labels=, CLI --exclude-label) or map a "
                f"metric label to it (label_map=, CLI --label-map)"
            )
        order[label] = float(np.mean(codes))
    return order


def label_positions(scored: Scored, order: Mapping[Label, float], mapping: Mapping[str, Label | None]) -> np.ndarray:
    """Each text's metric label on the human label order, for Table 8's label-level ρ.

    A label mapped onto a compared human class takes that class's position; one mapped elsewhere
    keeps its own code (sentiment's neutral = 0 against a positive/negative set); one without a code
    (regard's "other") has no position (NaN) and is left out of the label-level ρ.
    """
    codes = scored.view.codes
    positions: dict[str, float] = {}
    for metric_label in mapping:
        human_label = mapping[metric_label]
        if human_label is not None and human_label in order:
            positions[metric_label] = order[human_label]
        else:
            positions[metric_label] = float(codes[metric_label]) if metric_label in codes else math.nan
    return np.array([positions.get(str(label), math.nan) for label in scored.labels], dtype=np.float64)


def class_indices(
    human: list[Label], metric_labels: np.ndarray, compared: list[Label], mapping: Mapping[str, Label | None]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(included, human index, predicted index) per text, the indices over the included texts only.

    0..k-1 are the compared human classes (Table 8 order), k a metric label that maps to no compared
    class; a text with an excluded human label is not included.
    """
    index_of: dict[Label | None, int] = {label: i for i, label in enumerate(compared)}
    k = len(compared)
    human_index = np.array([index_of.get(label, -1) for label in human], dtype=np.int64)
    included = human_index >= 0
    predicted_index = np.array([index_of.get(mapping.get(str(label)), k) for label in metric_labels], dtype=np.int64)
    return included, human_index[included], predicted_index[included]
