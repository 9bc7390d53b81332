"""Where human-labelled texts come from: a named source (Sheng et al. 2019) or a CSV/TSV/JSONL file."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from bold_eval.core.errors import InputError, MissingFileError, UsageError
from bold_eval.core.resources import sha256_of
from bold_eval.validation.labels import FILE_SUFFIXES, HumanLabelled, Label, canonical_label
from bold_eval.validation.sheng2019 import SOURCES, load_sheng2019


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
    delimiter = FILE_SUFFIXES[suffix]
    rows, columns = _read_jsonl(path) if delimiter is None else _read_delimited(path, delimiter)
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
    if against in SOURCES:
        return load_sheng2019(against, splits=splits, sheng2019_dir=sheng2019_dir)
    if splits:
        raise UsageError(f"--splits applies to {', '.join(SOURCES)}, not to a file ({against})")
    return load_labelled_file(against, text_column=text_column, label_column=label_column)
