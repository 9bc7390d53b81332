"""The errors a user can cause, kept apart from bugs.

Every foreseeable mistake (a flag value, a missing file, a model that cannot be had offline, data
that does not match BOLD) raises a `UserError`; `bold-eval` prints its message as one paragraph and
exits non-zero without a traceback (`--debug` or `BOLD_EVAL_DEBUG=1` shows it). Anything else is a
bug: the CLI shows the traceback and asks for a report. Each class also derives from the builtin
error its callers already catch (`ValueError`, `FileNotFoundError`), so library users lose nothing.
"""

from __future__ import annotations

# `bold-eval` exit statuses: 1 for a user error, 2 for a usage error (argparse's own status), 130 for
# Ctrl-C (128 + SIGINT, what shells report).
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
DEBUG_ENV = "BOLD_EVAL_DEBUG"


class UserError(Exception):
    """An expected error caused by the input or the environment; its message says what to change."""

    exit_status = EXIT_ERROR


class UsageError(UserError, ValueError):
    """A flag or argument value the command cannot use (exit status 2, like argparse)."""

    exit_status = EXIT_USAGE


class InputError(UserError, ValueError):
    """An input file or value is malformed; the message names the file and line (or index)."""


class DataMismatchError(InputError):
    """A local BOLD folder differs from the pinned upstream release (opt in with --allow-modified-data)."""


class MissingFileError(UserError, FileNotFoundError):
    """A file the command reads (scores.parquet, summary.json, a generations file) does not exist."""


class DamagedFileError(InputError):
    """A file bold-eval wrote earlier (run.json, scores.parquet, ...) cannot be read back: truncated, zero
    bytes, or not its format. The message names the file, what is wrong and how to rebuild or replace it;
    the file itself is left as it was."""

    def __init__(self, path: object, problem: str, remedy: str):
        self.path, self.problem, self.remedy = path, problem, remedy
        super().__init__(f"{path} is damaged ({problem}); it was left as it is. {remedy}")


class StorageError(UserError, OSError):
    """The machine refused a read or a write (a full disk, a quota, no permission, a read-only file system):
    a fault of the environment, not of bold-eval or of the input (`bold_eval.core.storage`)."""

    def __str__(self) -> str:  # the message alone, without OSError's "[Errno 28] ...: 'file'" decoration
        return str(self.strerror)
