"""run.json and summary.json: JSON written atomically, and read back as records; a file that is not what
bold-eval wrote is a `DamagedFileError` naming it and what to do."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bold_eval.core.errors import DamagedFileError, MissingFileError
from bold_eval.core.resources import atomic_write_bytes
from bold_eval.core.storage import storage_guard
from bold_eval.runfolder.layout import RUN_FILE, SUMMARY_FILE
from bold_eval.runfolder.records import RunRecord, SummaryRecord
from bold_eval.runfolder.transaction import recover_report


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Pretty JSON, written atomically (a reader never sees half a file)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))


RUN_RECORD_REMEDY = ("run.json records how the folder's texts were made. Restore it from a copy; or move it away: "
                     "`bold-eval report` then reports without the run's settings, and `bold-eval run` starts this "
                     "folder's generations anew only after generations.jsonl is moved away too (or use a new --out).")


def read_json_file(path: Path, remedy: str) -> dict[str, Any]:
    """A JSON object bold-eval wrote; a file that is not one (truncated, zero bytes, another format) is a
    `DamagedFileError` with `remedy`, and the file is left as it is."""
    with storage_guard(path, "reading"):
        data = path.read_bytes()
    if not data.strip():
        raise DamagedFileError(path, f"{len(data)} bytes, no JSON", remedy)
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise DamagedFileError(path, f"not UTF-8 text at byte {error.start}", remedy) from None
    except json.JSONDecodeError as error:
        raise DamagedFileError(path, f"not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}",
                               remedy) from None
    except RecursionError:
        raise DamagedFileError(path, "JSON nested too deeply", remedy) from None
    if not isinstance(parsed, dict):
        raise DamagedFileError(path, f"a JSON {type(parsed).__name__}, not an object", remedy)
    return parsed


# RunRecord fields read as mappings or lists by every stage: another type there is a damaged (or hand-edited) file.
_RECORD_SHAPES = {**{f.name: dict for f in dataclasses.fields(RunRecord) if f.default_factory is dict},
                  **{name: list for name in ("domains", "metrics", "batch_schedule", "modified_data")}}


def read_run_record(out: Path) -> RunRecord | None:
    """run.json of a folder as a record; None when the folder has none."""
    path = Path(out) / RUN_FILE
    if not path.is_file():
        return None
    data = read_json_file(path, RUN_RECORD_REMEDY)
    for name, shape in _RECORD_SHAPES.items():
        if data.get(name) is not None and not isinstance(data[name], shape):
            raise DamagedFileError(path, f"its {name!r} is a {type(data[name]).__name__}, not a "
                                   f"{'mapping' if shape is dict else 'list'}", RUN_RECORD_REMEDY)
    return RunRecord.from_dict(data, source=str(path))


def write_run_record(out: Path, record: RunRecord) -> None:
    write_json(Path(out) / RUN_FILE, record.to_dict())


def read_summary(run_dir: Path) -> SummaryRecord:
    run_dir = Path(run_dir)
    recover_report(run_dir)
    path = run_dir / SUMMARY_FILE
    if not path.is_file():
        raise MissingFileError(f"{path} not found; `bold-eval run` or `bold-eval report {run_dir}` writes it")
    remedy = f"`bold-eval report {run_dir}` writes it again from scores.parquet."
    data = read_json_file(path, remedy)
    for name in ("run", "counts", "metrics", "statistics"):
        if data.get(name) is not None and not isinstance(data[name], dict):
            raise DamagedFileError(path, f"its {name!r} is a {type(data[name]).__name__}, not a mapping", remedy)
    return SummaryRecord.from_dict(data, source=str(path))


def write_summary(run_dir: Path, summary: SummaryRecord) -> None:
    write_json(Path(run_dir) / SUMMARY_FILE, summary.to_dict())
