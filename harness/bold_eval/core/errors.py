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
