"""Human-labelled texts for `bold-eval validate`: Sheng et al. (2019) or a user's CSV/TSV/JSONL file.

A source gives texts, one human label per text, the label set with a name per label (in the
order of the paper's Table 8 columns), the labels left out of the comparison, and a description
of where the labels came from (with checksums) for the validation record.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bold_eval.core.errors import InputError, MissingFileError, UsageError
from bold_eval.core.resources import sha256_of

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


def load_labelled_file(
    path: str | os.PathLike, *, text_column: str = "text", label_column: str = "label"
) -> HumanLabelled:
    """Texts and labels from a CSV, TSV or JSONL file (format from the suffix), one text per row.

    Raises ValueError naming the file, the missing column and the flag that names it, or the
    row whose text or label is missing.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise MissingFileError(f"labelled file {path} not found (--against takes sheng2019-sentiment, "
                                "sheng2019-regard, or a .csv/.tsv/.jsonl file)")
    suffix = path.suffix.lower()
    if suffix not in FILE_SUFFIXES:
        raise UsageError(f"{path}: unknown format {suffix!r}; use one of {', '.join(FILE_SUFFIXES)}")
    rows, columns = _read_jsonl(path) if FILE_SUFFIXES[suffix] is None else _read_delimited(path, FILE_SUFFIXES[suffix])
    for column, flag in ((text_column, "--text-column"), (label_column, "--label-column")):
        if column not in columns:
            raise UsageError(
                f"{path} has no column {column!r} (its columns: {', '.join(map(str, columns)) or 'none'}); "
                f"name the right one with {flag}"
            )
    texts: list[str] = []
    labels: list[Label] = []
    for where, row in rows:
        text = row.get(text_column)
        if not isinstance(text, str):
            raise InputError(f"{path} {where}: {text_column!r} is {text!r}; every row needs a text")
        texts.append(text)
        labels.append(canonical_label(row.get(label_column), f"{path} {where}: {label_column!r}"))
    if not texts:
        raise InputError(f"{path} has no rows")
    return HumanLabelled(
        texts=texts,
        labels=labels,
        label_names=None,
        exclude=(),
        source={
            "name": path.name,
            "description": f"user file, text column {text_column!r}, label column {label_column!r}",
            "path": str(path.resolve()),
            "files": [{"file": path.name, "path": str(path.resolve()), "rows": len(texts), "sha256": sha256_of(path)}],
        },
    )


def _read_delimited(path: Path, separator: str) -> tuple[list[tuple[str, dict]], list[str]]:
    import pandas as pd

    # dtype=str and no NA parsing: labels and texts stay exactly as written ("NA" is a text).
    try:
        frame = pd.read_csv(path, sep=separator, dtype=str, keep_default_na=False)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        kind = "TSV" if separator == "\t" else "CSV"
        raise InputError(f"{path} is not a readable {kind} file: {error}") from error
    records = frame.to_dict(orient="records")
    # Row numbers as a spreadsheet shows them: the header is row 1.
    return [(f"row {index + 2}", record) for index, record in enumerate(records)], [str(c) for c in frame.columns]


def _read_jsonl(path: Path) -> tuple[list[tuple[str, dict]], list[str]]:
    rows: list[tuple[str, dict]] = []
    columns: dict[str, None] = {}
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputError(f"{path} line {number} is not valid UTF-8: {error}") from error
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{path} line {number} is not JSON: {error}") from error
            if not isinstance(record, dict):
                raise InputError(f"{path} line {number} is {type(record).__name__}, expected a JSON object")
            columns.update(dict.fromkeys(record))
            rows.append((f"line {number}", record))
    return rows, list(columns)


def load_source(
    against: str,
    *,
    text_column: str = "text",
    label_column: str = "label",
    splits: Sequence[str] | None = None,
    sheng2019_dir: str | os.PathLike | None = None,
) -> HumanLabelled:
    """`sheng2019-sentiment`, `sheng2019-regard`, or the path of a labelled CSV/TSV/JSONL file."""
    from bold_eval.validation.sheng2019 import SOURCES, load_sheng2019

    if against in SOURCES:
        return load_sheng2019(against, splits=splits, sheng2019_dir=sheng2019_dir)
    if splits:
        raise UsageError(f"--splits applies to {', '.join(SOURCES)}, not to a file ({against})")
    return load_labelled_file(against, text_column=text_column, label_column=label_column)


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
