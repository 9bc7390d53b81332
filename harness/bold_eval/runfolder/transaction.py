"""The report as one unit: `report_transaction` writes a report into a staging folder and moves it in whole;
`recover_report` finishes a move a kill cut short; `remove_stale_temporaries` removes what killed commands left."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from bold_eval.core.errors import StorageError
from bold_eval.core.resources import TEMPORARY_SUFFIX, atomic_write_bytes, temporary_owner_alive, temporary_prefix
from bold_eval.core.storage import ENVIRONMENT_FAULTS, storage_error, storage_guard
from bold_eval.runfolder.layout import (
    FIGURES_DIR,
    HTML_REPORT_DIR,
    HTML_REPORT_FILE,
    REPORT_FILE,
    SUMMARY_FILE,
    TABLES_DIR,
)

# What one report is: replaced together or not at all.
REPORT_ITEMS = (REPORT_FILE, SUMMARY_FILE, TABLES_DIR, FIGURES_DIR, HTML_REPORT_FILE, HTML_REPORT_DIR)
# A complete new report waiting to be moved in (`report_transaction`); its manifest lists what it has.
PENDING_REPORT = ".report.pending"
_MANIFEST = ".manifest.json"
_OLD_PREFIX = ".old."


@contextlib.contextmanager
def report_transaction(run_dir: Path, items: Sequence[str] = REPORT_ITEMS) -> Iterator[Path]:
    """A staging folder inside `run_dir` to write a whole report into; when the block ends without error its
    items replace the report's (`REPORT_ITEMS`) together, and the old ones are gone. A kill before the commit
    leaves the old report (and a staging folder, removed by the next command that completes); a kill during
    it leaves `PENDING_REPORT`, which the next command reading or writing the folder moves in first
    (`recover_report`), so no reader ever gets report.md of one report beside summary.json of another.
    `items` are the names of one report (`compare` has its own)."""
    run_dir = Path(run_dir)
    recover_report(run_dir)
    with storage_guard(run_dir, "creating the report's staging folder in"):
        run_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=run_dir, prefix=temporary_prefix("report"), suffix=TEMPORARY_SUFFIX))
    try:
        try:
            yield staging
        except OSError as error:  # named by the report's folder, not by a file of the staging folder
            raise _report_fault(error, run_dir) from error
        with storage_guard(run_dir, "moving the new report into"):
            present = [item for item in items if (staging / item).exists()]
            atomic_write_bytes(staging / _MANIFEST, json.dumps({"items": list(items), "present": present}).encode())
            os.replace(staging, run_dir / PENDING_REPORT)  # the new report is complete: from here it rolls forward
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    recover_report(run_dir)
    remove_stale_temporaries(run_dir)


def _report_fault(error: OSError, run_dir: Path) -> OSError:
    """`error` as a `StorageError` naming the report's folder when it is a fault of the machine, else itself."""
    original = error.__cause__ if isinstance(error, StorageError) and isinstance(error.__cause__, OSError) else error
    if original.errno not in ENVIRONMENT_FAULTS:
        return error
    return storage_error(OSError(original.errno, original.strerror), run_dir, "writing the report into") or error


def recover_report(run_dir: Path) -> None:
    """Move a complete new report (`PENDING_REPORT`) into `run_dir`, finishing a commit a kill cut short.
    Every step can be repeated: an item still in the pending folder replaces the folder's (which is moved
    aside first), an item the new report lacks is moved aside, and the pending folder goes last."""
    pending = Path(run_dir) / PENDING_REPORT
    if not pending.is_dir():
        return
    with storage_guard(run_dir, "moving the new report into"):
        manifest = json.loads((pending / _MANIFEST).read_text(encoding="utf-8"))
        items, present = manifest["items"], set(manifest["present"])
        for item in items:
            new, current, old = pending / item, Path(run_dir) / item, pending / f"{_OLD_PREFIX}{item}"
            if new.exists() or item not in present:
                if current.is_dir() and not current.is_symlink():
                    shutil.rmtree(old, ignore_errors=True)
                    os.replace(current, old)
                elif current.exists() and not new.exists():
                    current.unlink()
            if new.exists():
                os.replace(new, current)  # a file replaces the old one in one step; a folder's old one is aside
        shutil.rmtree(pending)


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Remove what killed commands left in `run_dir`: the hidden `.<file>.<pid>.*.tmp` files of atomic writes
    and `.report.<pid>.*.tmp` staging folders whose process is gone (`temporary_owner_alive`): those of a
    command still running on the folder are kept. Called when a report completes. Returns what was removed."""
    removed: list[Path] = []
    run_dir = Path(run_dir)
    for path in sorted(run_dir.glob(f".*{TEMPORARY_SUFFIX}")) if run_dir.is_dir() else []:
        if temporary_owner_alive(path):
            continue
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:  # gone meanwhile, or not ours to remove: a leftover is harmless
            continue
        removed.append(path)
    return removed
