"""Cells and files: numbers as the report prints them, pipe tables, CSV + markdown tables written atomically."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.analysis.statistics import wilson_interval
from bold_eval.core.resources import atomic_write_bytes


def quantity(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and its noun, which agrees with it: "1 model", "24 prompts", "2,000 texts"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def markdown(frame: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """A pipe table; undefined values (NaN, e.g. a male : female ratio with no female text) print empty."""
    if frame.empty:
        return "_(no rows)_"
    return frame.astype(object).where(frame.notna(), None).to_markdown(index=False, floatfmt=floatfmt, missingval="")


def pipe_table(frame: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """A pipe table of a whole results table, column by column: numbers right-aligned with `floatfmt`, text
    left-aligned, undefined values empty. tabulate infers a type per cell, too slow for the findings tables of
    all of BOLD (hundreds of rows x 30 columns; benchmarks/RESULTS.md, "report time"); the report's own small
    tables use it."""
    if frame.empty:
        return "_(no rows)_"
    columns, right = [], []
    for name in frame.columns:
        values = frame[name]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if pd.api.types.is_float_dtype(values):
            cells = [format(value, floatfmt) if np.isfinite(value) else ("" if np.isnan(value) else str(value))
                     for value in values.to_numpy(dtype=float)]
        else:
            cells = ["" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
                     for value in values.to_numpy(dtype=object)]
        columns.append([str(name), *cells])
        right.append(numeric)
    widths = [max(len(cell) for cell in column) for column in columns]
    rows = []
    for index in range(len(frame) + 1):
        cells = [column[index].rjust(width) if is_right else column[index].ljust(width)
                 for column, width, is_right in zip(columns, widths, right, strict=True)]
        rows.append("| " + " | ".join(cells) + " |")
    rule = ["-" * (width + 1) + ":" if is_right else ":" + "-" * (width + 1) for width, is_right in zip(widths, right,
                                                                                                        strict=True)]
    rows.insert(1, "|" + "|".join(rule) + "|")
    return "\n".join(rows)


def write_table(frame: pd.DataFrame, folder: Path, name: str) -> None:
    """tables/<name>.csv and .md, written atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / f"{name}.csv", frame.to_csv(index=False).encode("utf-8"))
    atomic_write_bytes(folder / f"{name}.md", (pipe_table(frame) + "\n").encode("utf-8"))


def format_p(p_value: Any) -> str:
    if p_value is None or pd.isna(p_value):
        return "n/a"
    # "<0.001 (3.2e-07)" rather than a bare number, which markdown tables would round to 0.000.
    return f"<0.001 ({p_value:.1e})" if p_value < 0.001 else f"{p_value:.3f}"


def rate_cell(count: int, total: int, alpha: float) -> str:
    """"p [low, high] (n=N)": a proportion always with its Wilson interval and its size."""
    low, high = wilson_interval(count, total, alpha=alpha)
    return f"{count / total:.3f} [{low:.3f}, {high:.3f}] (n={total})"


def signed_cell(value: float, low: float, high: float) -> str:
    if pd.isna(low) or pd.isna(high):
        return f"{value:+.3f} [no interval]"
    return f"{value:+.3f} [{low:+.3f}, {high:+.3f}]"


def to_jsonable(value: Any) -> Any:
    """Frames become lists of records; NaN / inf become None; numpy scalars become Python ones."""
    if isinstance(value, pd.DataFrame):
        return [to_jsonable(record) for record in value.to_dict(orient="records")]
    if isinstance(value, pd.Series):
        return to_jsonable(value.tolist())
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, np.ndarray)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def format_interval(proportion: float, low: float, high: float) -> str:
    if pd.isna(proportion):
        return ""
    if pd.isna(low):
        return f"{proportion:.3f}"
    return f"{proportion:.3f} [{low:.3f}, {high:.3f}]"
