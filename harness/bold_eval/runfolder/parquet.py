"""scores.parquet and reference_scores.parquet: written chunk by chunk and atomically, read back whole or
without the texts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from bold_eval.core.errors import DamagedFileError
from bold_eval.core.resources import atomic_writer
from bold_eval.core.storage import storage_guard
from bold_eval.runfolder.layout import SCORES_FILE, SCORES_ROW_GROUP, TEXT_COLUMNS


class ScoresWriter:
    """scores.parquet (or REFERENCE_FILE) written chunk by chunk, atomically: the file appears, complete,
    when the `with` block ends without error, and memory holds one chunk at a time (BOLD x 25 is
    591,975 rows). The first chunk fixes the schema. A column that is all null in a chunk (a metric with no
    row of its domains there) takes its type from `types`, so that the first chunk's schema holds for all."""

    def __init__(self, out: Path, file: str = SCORES_FILE, types: Mapping[str, pa.DataType] | None = None):
        self.path = Path(out) / file
        self.rows = 0
        self.types = dict(types or {})
        self._writer: pq.ParquetWriter | None = None
        self._context: Any = None

    def __enter__(self) -> ScoresWriter:
        self._context = atomic_writer(self.path)
        self._handle = self._context.__enter__()
        return self

    def write(self, scores: pd.DataFrame) -> None:
        """Append `scores` (same columns as every chunk before it) in row groups of `SCORES_ROW_GROUP`."""
        for start in range(0, max(len(scores), 1), SCORES_ROW_GROUP):
            part = _typed(pa.Table.from_pandas(scores.iloc[start:start + SCORES_ROW_GROUP], preserve_index=False),
                          self.types)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._handle, part.schema)
            elif not part.num_rows:
                continue
            elif not part.schema.equals(self._writer.schema, check_metadata=False):
                part = _cast_chunk(part, self._writer.schema, self.path)
            self._writer.write_table(part)
            self.rows += part.num_rows

    def __exit__(self, *failure: Any) -> bool:
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self._context.__exit__(*failure)
        return False


def _typed(table: pa.Table, types: Mapping[str, pa.DataType]) -> pa.Table:
    """`table` with its all-null columns cast to their type in `types`."""
    fields = [pa.field(field.name, types[field.name]) if pa.types.is_null(field.type) and field.name in types
              else field for field in table.schema]
    if all(new is old for new, old in zip(fields, table.schema, strict=True)):
        return table
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def _cast_chunk(part: pa.Table, schema: pa.Schema, path: Path) -> pa.Table:
    if part.schema.names != schema.names:
        raise ValueError(f"{path}: a chunk has columns {part.schema.names}, the first had {schema.names}")
    try:
        return part.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise ValueError(f"{path}: a chunk's columns do not match the first chunk's ({error})") from error


def write_scores(out: Path, scores: pd.DataFrame, file: str = SCORES_FILE) -> Path:
    """scores.parquet (or REFERENCE_FILE, which has the same columns) of a whole frame, atomically, `SCORES_ROW_GROUP`
    rows at a time: only one row group is ever converted to Arrow, not a second copy of the whole table."""
    with ScoresWriter(out, file) as writer:
        writer.write(scores)
    return writer.path


def read_scores(path: Path, *, texts: bool = True, remedy: str | None = None) -> pd.DataFrame:
    """A scores table; without `texts`, all but its `TEXT_COLUMNS`: the analysis reads ids and scores only, and
    the texts are most of a row's memory (BOLD x 25 is 591,975 rows). A file that is not parquet
    (truncated, zero bytes) is a `DamagedFileError` with `remedy`."""
    path = Path(path)
    remedy = remedy or "Move it away and write it again with the command that made it."
    try:
        with storage_guard(path, "reading"):
            if texts:
                return pd.read_parquet(path)
            names = pq.ParquetFile(path).schema_arrow.names
            return pd.read_parquet(path, columns=[name for name in names if name not in TEXT_COLUMNS])
    except (pa.ArrowException, OSError) as error:
        if not isinstance(error, pa.ArrowException) and error.errno is not None:
            raise  # a fault of the machine (storage_guard named it), not of the file
        size = path.stat().st_size if path.is_file() else 0
        problem = "0 bytes" if size == 0 else f"{size:,} bytes that are not a whole parquet file: {error}"
        raise DamagedFileError(path, problem, remedy) from None
