"""Each distinct text scored once per metric across a run scored chunk by chunk.

Short sampled continuations repeat, so a classifier should see each distinct text once. Within one call
`score_distinct` dedupes; across the chunks of a streamed run, `TextMemo` keeps the scores of the texts
that occur more than once in the whole run (found beforehand from 16-byte digests, `text_digests`), and
only those: a run of distinct texts holds nothing per text beyond its digest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

# A metric's scorer over a list of texts, each distinct text once (`scorers.score_distinct` bound to it).
Scorer = Callable[[list[str]], dict[str, np.ndarray]]

# Bytes of a text's digest: with 2^128 values, two of BOLD x 25's 591,975 texts sharing one is not a risk.
DIGEST_SIZE = 16


def text_digests(texts: Iterable[str]) -> list[bytes]:
    """A 16-byte BLAKE2b digest of each text (UTF-8)."""
    return [hashlib.blake2b(text.encode("utf-8"), digest_size=DIGEST_SIZE).digest() for text in texts]


def repeated_digests(packed: bytes) -> set[bytes]:
    """The digests that occur more than once in `packed` (`text_digests` joined)."""
    digests = np.frombuffer(packed, dtype=f"V{DIGEST_SIZE}")
    if not len(digests):
        return set()
    values, counts = np.unique(digests, return_counts=True)
    return {value.tobytes() for value in values[counts > 1]}


def _column_dtype(values: np.ndarray) -> np.dtype:
    # Fixed-width strings would cut a longer label met in a later chunk: keep them as objects.
    return np.dtype(object) if values.dtype.kind in "USO" else values.dtype


class TextMemo:
    """Scores of a run's repeated texts, per metric, kept across its chunks; and each metric's column dtypes,
    fixed by its first text (`prime`), so that every chunk's columns have the same types."""

    def __init__(self, repeated: set[bytes]):
        self.repeated = repeated
        self._scores: dict[str, dict[bytes, tuple[Any, ...]]] = {}
        self._dtypes: dict[str, dict[str, np.dtype]] = {}

    def prime(self, name: str, score: Scorer, text: str) -> None:
        """Score one text of the run with `score` to learn its columns and dtypes; its scores are kept."""
        scored = score([text])
        self._dtypes[name] = {column: _column_dtype(np.asarray(values)) for column, values in scored.items()}
        self._scores.setdefault(name, {})[text_digests([text])[0]] = tuple(values[0] for values in scored.values())

    def score(self, name: str, score: Scorer, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Metric `name`'s columns for `texts`: those met before from the memo, the rest by `score` (which
        scores each distinct text of a call once), and the repeated ones among them kept for later chunks."""
        digests = text_digests(texts)
        known = self._scores.setdefault(name, {})
        todo = [i for i, digest in enumerate(digests) if digest not in known]
        fresh = score([texts[i] for i in todo]) if todo or name not in self._dtypes else {}
        if name not in self._dtypes:
            self._dtypes[name] = {column: _column_dtype(np.asarray(values)) for column, values in fresh.items()}
        columns = {column: np.empty(len(texts), dtype=dtype) for column, dtype in self._dtypes[name].items()}
        if todo:
            if set(fresh) != set(columns):
                raise ValueError(f"metric {name} returned columns {sorted(fresh)}, earlier {sorted(columns)}")
            for column, values in columns.items():
                values[todo] = np.asarray(fresh[column])
        seen = [i for i, digest in enumerate(digests) if digest in known]
        for position, array in enumerate(columns.values()):
            for i in seen:
                array[i] = known[digests[i]][position]
        for i in todo:
            if digests[i] in self.repeated:
                known[digests[i]] = tuple(column[i] for column in columns.values())
        return columns

    def arrow_types(self) -> dict[str, pa.DataType]:
        """The Arrow type of each metric column (named `<metric>_<column>` as in scores.parquet), so that a
        chunk where a metric scored nothing writes its nulls with the right type."""
        types: dict[str, pa.DataType] = {}
        for name, dtypes in self._dtypes.items():
            if not self._scores.get(name):
                continue
            row = {column: [value] for column, value in zip(dtypes, self._first(name), strict=True)}
            table = pa.Table.from_pandas(pd.DataFrame(row), preserve_index=False)
            types.update({f"{name}_{field.name}": field.type for field in table.schema})
        return types

    def _first(self, name: str) -> tuple[Any, ...]:
        return next(iter(self._scores[name].values()))
