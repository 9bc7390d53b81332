"""Human-labelled texts for `bold-eval validate`: Sheng et al. (2019) or a user's CSV/TSV/JSONL file.

A source gives texts, one human label per text, the label set with a name per label (in the
order of the paper's Table 8 columns), the labels left out of the comparison, and a description
of where the labels came from (with checksums) for the validation record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bold_eval.core.errors import InputError, UsageError

Label = int | str
FILE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".jsonl": None, ".ndjson": None}


@dataclass(frozen=True)
class HumanLabelled:
    """Texts with one human label each, and where they came from (for the validation record)."""

    texts: list[str]
    labels: list[Label]
    # Human label -> class name, in Table 8 column order; None when the source declares no set.
    label_names: dict[Label, str] | None
    # Labels left out of the comparison and counted as `excluded` (Sheng's 2 = "other").
    exclude: tuple[Label, ...]
    source: dict[str, Any]


def canonical_label(value: Any, where: str = "label") -> Label:
    """One label as an int when it is a whole number (1, 1.0, "1", True), else a stripped string.

    CSV files give "1", JSON gives 1 and pandas 1.0 for the same label; comparing canonical
    labels makes a declared set "-1,0,1" match all three. Missing values raise ValueError.
    """
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            raise InputError(f"{where} is missing (NaN); every text needs a human label")
        return int(value) if float(value).is_integer() else str(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise InputError(f"{where} is empty; every text needs a human label")
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if number.is_integer() else text
    if value is None:
        raise InputError(f"{where} is missing (None); every text needs a human label")
    raise InputError(f"{where} is {value!r} ({type(value).__name__}); labels must be numbers or strings")


def parse_label_set(text: str) -> dict[Label, str]:
    """`"1:positive,0:neutral,-1:negative"` or `"toxic,non-toxic"` -> {label: name}, in the given order."""
    declared: dict[Label, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        value, colon, name = item.partition(":")
        label = canonical_label(value, f"--labels item {item!r}")
        if label in declared:
            raise UsageError(f"--labels names {label!r} twice")
        declared[label] = name.strip() if colon and name.strip() else str(label)
    if not declared:
        raise UsageError(f"--labels {text!r} declares no label; e.g. --labels=1:positive,0:neutral,-1:negative")
    return declared


def parse_label_map(pairs: Sequence[str]) -> dict[str, Label]:
    """`["toxic=1", "non-toxic=0"]` -> {metric label: human label}."""
    mapping: dict[str, Label] = {}
    for pair in pairs:
        metric_label, equals, human = pair.partition("=")
        if not equals or not metric_label.strip() or not human.strip():
            raise UsageError(f"--label-map {pair!r}: expected METRIC_LABEL=HUMAN_LABEL, e.g. toxic=1")
        mapping[metric_label.strip()] = canonical_label(human, f"--label-map {pair!r}")
    return mapping


def declared_label_set(labels: Mapping[Any, str] | Sequence[Any] | None) -> dict[Label, str] | None:
    """A label set given as {label: name} or [label, ...] -> {canonical label: name}."""
    if labels is None:
        return None
    if isinstance(labels, str):
        return parse_label_set(labels)
    items = labels.items() if isinstance(labels, Mapping) else ((label, None) for label in labels)
    declared: dict[Label, str] = {}
    for value, name in items:
        label = canonical_label(value, f"label set entry {value!r}")
        if label in declared:
            raise UsageError(f"the label set names {label!r} twice")
        declared[label] = str(name) if name is not None else str(label)
    if not declared:
        raise UsageError("the label set is empty")
    return declared
