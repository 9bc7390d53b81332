"""generations.jsonl: its lines parsed (every way a line can be wrong named by file and line), read line by line,
appended in whole lines, and rewritten atomically."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd

from bold_eval.core.errors import InputError
from bold_eval.core.resources import atomic_writer
from bold_eval.core.storage import storage_guard
from bold_eval.runfolder.layout import BOLD_COLUMNS, RECORD_COLUMNS, TRACE_COLUMN

# Fields every sample of a prompt repeats: one string object per distinct value instead of one per record,
# so k samples per prompt cost memory for their continuations only (BOLD x 25 is 591,975 records).
_REPEATED_FIELDS = ("prompt_id", "domain", "group", "category", "name", "prompt")


def _shared_strings(record: dict[str, Any]) -> dict[str, Any]:
    """`record` with its keys and repeated fields interned (`sys.intern`)."""
    shared = {}
    for key, value in record.items():
        if key in _REPEATED_FIELDS and isinstance(value, str):
            value = sys.intern(value)
        shared[sys.intern(key)] = value
    return shared


def iter_generations(path: Path, *, repair: bool = False) -> Iterator[dict[str, Any]]:
    """Records of a generations JSONL file (none if absent), one JSON object per line, read line by line
    so that memory holds one line at a time whatever the file's size (BOLD x 25 is 591,975 lines).

    A last line without its newline is the trace of an interrupted write: it is dropped (and cut
    from the file when `repair`, once the records are all read), as is a newline-terminated last line
    that does not parse. Any other bad line (not UTF-8, not JSON, not an object, a lone surrogate that
    could never be written back) is corruption and raises `InputError` naming the file and line.
    """
    for _, record in iter_generation_offsets(path, repair=repair):
        yield record


def iter_generation_offsets(path: Path, *, repair: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_generations` with each record's byte offset in the file (`read_generation_at` reads it again)."""
    if not path.is_file():
        return
    good_bytes, torn, number = 0, None, 0
    with storage_guard(path, "reading"), open(path, "rb") as handle:
        for line in handle:
            if torn is not None:  # an unparsable line with more after it: not a torn write but corruption
                raise _damaged_line(torn, path, number)
            number += 1
            if not line.endswith(b"\n"):
                break  # a torn last line
            try:
                record = parse_jsonl_line(line[:-1], path, number)
            except _NotJSONError as error:
                torn = error  # a torn write that happened to end in a newline byte, if nothing follows
                continue
            except InputError as error:
                raise _damaged_line(error, path, number) from None
            _check_key(record, path, number)
            offset = good_bytes
            good_bytes += len(line)
            yield offset, _shared_strings(record)
    if repair and good_bytes < path.stat().st_size:
        with storage_guard(path), open(path, "r+b") as handle:
            handle.truncate(good_bytes)
            handle.flush()
            os.fsync(handle.fileno())


def _damaged_line(error: InputError, path: Path, number: int) -> InputError:
    """`error` (line `number` of a run's generations file is not a record) with what to do about it."""
    kept = (f"; or keep the {number - 1} intact lines before it (`head -n {number - 1} {path} > {path}.kept && "
            f"mv {path}.kept {path}`) and run the same command again to generate the rest") if number > 1 else \
        "; or move it away and run the same command again to generate the texts anew"
    return InputError(f"{error} It was left as it is: restore it from a copy{kept}.")


def _check_key(record: Mapping[str, Any], path: Path, number: int) -> None:
    """Every record of a run's generations file is keyed by (prompt_id, sample): resume, the merge and the
    scores all match on that key, so a record without it (an edited or foreign file) is named here, not met
    later as a KeyError."""
    prompt_id, sample = record.get("prompt_id"), record.get("sample")
    if (not isinstance(prompt_id, str) or isinstance(sample, bool) or not isinstance(sample, int)
            or sample < 0):
        raise InputError(
            f"{path}, line {number}: a generations record needs a prompt_id (text) and a sample (a whole number "
            f">= 0); this one has prompt_id={prompt_id!r}, sample={sample!r}. The file was edited or is not "
            "the generations.jsonl of a bold-eval run: restore it, or move it away and run again to generate "
            "its prompts anew (`bold-eval score` takes generations made elsewhere)")


def read_generation_at(handle: BinaryIO, offset: int, path: Path) -> dict[str, Any]:
    """The record whose line starts at `offset` of the open generations file `handle` (`path` for errors)."""
    handle.seek(offset)
    return parse_jsonl_line(handle.readline().rstrip(b"\n"), path, 0)


def generation_frames(path: Path, rows: int) -> Iterator[pd.DataFrame]:
    """A generations file as frames of up to `rows` records each (at least one frame, empty for an empty
    file): what scoring reads, so that it never holds every record at once."""
    chunk: list[dict[str, Any]] = []
    yielded = False
    for record in iter_generations(path):
        chunk.append(record)
        if len(chunk) == rows:
            yield records_frame(chunk)
            chunk, yielded = [], True
    if chunk or not yielded:
        yield records_frame(chunk)


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The frame `pd.DataFrame(records)` would make (a field a record lacks is missing), with the record
    columns even when there are no records."""
    columns = list(dict.fromkeys(column for record in records for column in record)) or list(RECORD_COLUMNS)
    return pd.DataFrame({column: [record.get(column) for record in records] for column in columns}, columns=columns)


def read_generations(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """Every record of `iter_generations` as a list ([] if the file is absent)."""
    return list(iter_generations(path, repair=repair))


def generation_keys(path: Path, *, repair: bool = False) -> set[tuple[str, int]]:
    """The (prompt_id, sample) keys of a generations file, without holding its records."""
    return {record_key(record) for record in iter_generations(path, repair=repair)}


class _NotJSONError(InputError):
    """A line that does not parse as JSON (the trace of a torn write when it is the last one)."""


def parse_jsonl_line(line: bytes, path: str | Path, number: int) -> dict[str, Any]:
    """One JSONL line as a dict; every way it can be wrong is an `InputError` naming `path:number`."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}, line {number}: not valid UTF-8 (byte 0x{line[error.start]:02x} at column "
                         f"{error.start + 1}); the file must be UTF-8 encoded") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise _NotJSONError(f"{path}, line {number}: not valid JSON ({error.msg} at column {error.colno}); "
                         "the file is corrupted") from None
    except RecursionError:
        raise InputError(f"{path}, line {number}: JSON nested too deeply") from None
    if not isinstance(record, dict):
        raise InputError(f"{path}, line {number}: expected a JSON object, got {type(record).__name__}")
    _check_unicode(record, path, number)
    return record


def _check_unicode(value: Any, path: str | Path, number: int) -> None:
    """Reject lone surrogates (JSON "\\ud800" escapes): no UTF-8 text holds them, so they would
    fail later, far from the line that carries them."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InputError(f"{path}, line {number}: a string holds the lone surrogate "
                             f"U+{ord(value[error.start]):04X} "
                             "(an unpaired \\uD800-\\uDFFF escape), which is not text") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key, path, number)
            _check_unicode(item, path, number)
    elif isinstance(value, list):
        for item in value:
            _check_unicode(item, path, number)


def jsonl_bytes(records: Iterable[Mapping[str, Any]]) -> bytes:
    """One JSON object per line: the same bytes whether appended by a run or rewritten by a merge."""
    return "".join(jsonl_line(record) for record in records).encode("utf-8")


def jsonl_line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def append_records(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Append whole lines in one write, then flush and fsync: a crash, or a disk that fills, tears at most the
    last line (which the next run drops and regenerates)."""
    data = jsonl_bytes(records)
    with storage_guard(path), open(path, "ab") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_generations(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Replace a generations file atomically (the merge of the shards), written line by line."""
    with atomic_writer(path, sync=True) as handle:
        for record in records:
            handle.write(jsonl_line(record).encode("utf-8"))


def record_key(record: Mapping[str, Any]) -> tuple[str, int]:
    return str(record["prompt_id"]), int(record["sample"])


def generation_record(row: Mapping[str, Any], sample: int, continuation: str, num_new_tokens: int,
                      ended_in_trace: bool | None = None) -> dict[str, Any]:
    """One generations.jsonl line: the BOLD row's columns, the sample, the text and its token count, and
    (under a chat protocol that looks for thinking traces) whether the text ended inside one."""
    record = {column: row[column] for column in ("prompt_id", *BOLD_COLUMNS)}
    record.update(sample=int(sample), continuation=continuation, num_new_tokens=int(num_new_tokens))
    if ended_in_trace is not None:
        record[TRACE_COLUMN] = bool(ended_in_trace)
    return record
