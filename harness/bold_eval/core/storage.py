"""Faults of the machine under a read or a write, as messages a user can act on.

A full disk is the commonest fault of a long run on a shared machine; a quota, a folder without write
permission and a read-only mount come next. Python reports them as an `OSError` with an errno and, for a
`write()`, without the file's name. `storage_guard(path, action)` wraps each place that writes a run
folder so that the error names the file; `storage_error` turns any such `OSError` into a `StorageError`
whose one paragraph says what happened, where, how much room is left and what to do. The CLI falls back
on it for an `OSError` raised anywhere else (`bold_eval.cli.main`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bold_eval.core.errors import StorageError, UsageError

_FREE_AND_RERUN = ("Free some space there (or point --out at a disk with room) and run the same command again: "
                   "what was finished before is kept and not redone.")
_PERMISSION = ("Give yourself {access} permission there (or choose another folder) and run the same command "
               "again.")
# errno -> (what happened, what to do): the faults of the environment that a user can fix.
ENVIRONMENT_FAULTS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space is left on the device", _FREE_AND_RERUN),
    errno.EDQUOT: ("the disk quota is exceeded", "Free some space within your quota (or point --out at "
                   "another disk) and run the same command again: what was finished before is kept and not redone."),
    errno.EFBIG: ("the file is larger than this file system allows", "Point --out at another file system and "
                  "run the command again."),
    errno.EACCES: ("permission denied", _PERMISSION),
    errno.EPERM: ("the operation is not permitted", _PERMISSION),
    errno.EROFS: ("the file system is read-only", "Choose a folder on a writable disk (copy a run folder "
                  "there first) and run the command again."),
    errno.EIO: ("the device reported an input/output error", "The disk or network mount is failing: check it, "
                "copy the folder to a healthy disk and run the same command again."),
    errno.ENOTDIR: ("a part of the path is a file, not a folder", "Choose another path (or move that file "
                    "away) and run the command again."),
    errno.EISDIR: ("it is a folder where a file was expected", "Move that folder away (or choose another "
                   "path) and run the command again."),
    errno.ENAMETOOLONG: ("the path is too long for this file system", "Choose a shorter path."),
}

# The faults a write() itself raises (a file's name is never attached to them).
WRITE_FAULTS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _free_space(path: Path) -> str:
    """', N MiB free there' for the nearest existing folder above `path` (empty when unknown)."""
    for folder in (path, *path.parents):
        if folder.is_dir():
            try:
                free = shutil.disk_usage(folder).free
            except OSError:
                return ""
            return f" ({free / 2**20:,.0f} MiB free on that file system now)"
    return ""


def storage_error(error: OSError, path: str | os.PathLike | None = None,
                  action: str = "writing") -> StorageError | None:
    """The `StorageError` for `error` (its own file name, else `path`), or None when it is not a fault of
    the environment (then it is a bug, and the caller re-raises it)."""
    if isinstance(error, StorageError):
        return error
    fault = ENVIRONMENT_FAULTS.get(error.errno or 0)
    if fault is None:
        return None
    what, remedy = fault
    access = "read and write" if "reading" in action and "writing" in action else \
        "read" if action.startswith("reading") else "write"
    remedy = remedy.format(access=access)
    where = error.filename or path
    place = f" {where}" if where is not None else " a file (its name was not given by the system)"
    room = _free_space(Path(where)) if where is not None and error.errno in (errno.ENOSPC, errno.EDQUOT) else ""
    found = StorageError(error.errno, f"{what} while {action}{place}{room}. {remedy}")
    found.filename = where
    return found


@contextlib.contextmanager
def storage_guard(path: str | os.PathLike, action: str = "writing") -> Iterator[None]:
    """Re-raise a fault of the environment inside the block as a `StorageError` naming `path`."""
    try:
        yield
    except OSError as error:
        found = storage_error(error, path, action)
        if found is None or found is error:
            raise
        raise found from error


def check_writable_folder(folder: str | os.PathLike, option: str = "--out") -> Path:
    """`folder` after writing and removing a probe file in it: a folder that cannot be written is named before
    any work, not after hours of generation. Folders it had to create for the probe are removed again, so a
    command that fails later leaves no trace."""
    folder = Path(folder).expanduser()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {folder} is a file, not a folder; choose a folder (new or a run folder)")
    created = [parent for parent in (folder, *folder.parents) if not parent.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd, probe = tempfile.mkstemp(dir=folder, prefix=f".write-check.{os.getpid()}.", suffix=".tmp")
            os.close(fd)
            os.unlink(probe)
        finally:
            for made in created:  # innermost first
                with contextlib.suppress(OSError):
                    made.rmdir()
    except OSError as error:  # named by the folder, not by the probe file
        found = storage_error(OSError(error.errno, error.strerror), folder, f"checking that bold-eval can write to "
                              f"{option}")
        if found is None:
            raise
        raise found from error
    return folder
