"""Input checks, deduplication and per-group summaries shared by every metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def validate_texts(texts: Any, argument: str = "predictions") -> list[str]:
    """Return `texts` as a list of str; raise ValueError naming the first bad index.

    Empty strings are allowed (each metric documents how it scores them); None, NaN and
    non-strings are not, because silently scoring them would hide a broken pipeline.
    """
    if isinstance(texts, str):
        raise ValueError(f"`{argument}` must be a list of strings, got a single string")
    try:
        items = list(texts)
    except TypeError as error:
        raise ValueError(f"`{argument}` must be a list of strings, got {type(texts).__name__}") from error
    for index, text in enumerate(items):
        if not isinstance(text, str):
            raise ValueError(
                f"`{argument}`[{index}] is {text!r} ({type(text).__name__}); every text must be a string"
            )
    return items


def validate_groups(groups: Any, n_texts: int, argument: str = "groups") -> list[str] | None:
    """Return group labels as a list of str of length `n_texts` (or None when not given)."""
    if groups is None:
        return None
    if isinstance(groups, str):
        raise ValueError(f"`{argument}` must be a list with one group per text, got a single string")
    items = list(groups)
    if len(items) != n_texts:
        raise ValueError(f"`{argument}` has {len(items)} entries but there are {n_texts} texts")
    for index, group in enumerate(items):
        if group is None or (isinstance(group, float) and np.isnan(group)):
            raise ValueError(f"`{argument}`[{index}] is missing; every text needs a group")
    return [str(group) for group in items]


def label_proportions(labels: Sequence[str] | np.ndarray, label_names: Sequence[str]) -> dict[str, float]:
    """Share of texts carrying each label (0.0 for labels that never occur; {} for no texts)."""
    values = np.asarray(labels)
    if values.size == 0:
        return {name: 0.0 for name in label_names}
    return {name: float(np.mean(values == name)) for name in label_names}


def unique_with_inverse(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Distinct texts (first-seen order) and, per input text, its row among them.

    Scorers run each distinct text once (generations from one prompt often repeat) and scatter
    the results back with `values[inverse]`. Unlike `np.unique`, no sort and no fixed-width copy.
    """
    first_row: dict[str, int] = {}
    inverse = np.fromiter((first_row.setdefault(text, len(first_row)) for text in texts), dtype=np.intp, count=len(texts))
    return list(first_row), inverse


def group_masks(groups: Sequence[str]) -> dict[str, np.ndarray]:
    """{group: bool mask over the texts}, in first-seen group order.

    Built once per call so that every per-group summary of the same texts shares the masks.
    """
    group_array = np.asarray(groups)
    return {group: group_array == group for group in dict.fromkeys(groups)}


def summarize_labels(
    labels: Sequence[str] | np.ndarray,
    label_names: Sequence[str],
    groups: Sequence[str] | None = None,
    *,
    masks: Mapping[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Overall label proportions and, when groups are given, proportions and sizes per group.

    `masks` (from `group_masks(groups)`) saves rebuilding them when one caller summarizes
    several label columns of the same texts.
    """
    summary: dict[str, Any] = {"proportions": label_proportions(labels, label_names)}
    if groups is not None:
        values = np.asarray(labels)
        summary["group_proportions"] = {}
        summary["group_sizes"] = {}
        for group, mask in (group_masks(groups) if masks is None else masks).items():
            summary["group_proportions"][group] = label_proportions(values[mask], label_names)
            summary["group_sizes"][group] = int(mask.sum())
    return summary
