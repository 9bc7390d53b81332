"""Where the report's PNG figures are drawn: in this process, or in one worker process beside the report's other work.

On all of BOLD a report draws eight figures, about a third of its time when drawn in its own process. A `Painter`
with a worker hands each figure to a child process (`python -m bold_eval.report.painter`, fed pickled jobs on its
standard input) and goes on: `write_report` hands over the paper's figures as soon as the views are ready, so they
are drawn while the findings are tested; `finish` waits for the last figure before the report is moved into place.
The child is a plain subprocess, not a `multiprocessing` start method, so the caller's main module is never
re-imported and no threaded process is forked.

The worker is used for runs of `WORKER_TEXTS` texts or more on a machine with two or more cores (below that,
starting Python and matplotlib again costs more than it saves); `BOLD_EVAL_FIGURE_WORKER` on or off (1/0,
true/false, ...) forces it. The figures are the same files either way.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from bold_eval.core.environment import FIGURE_WORKER_ENV, env_switch

WORKER_TEXTS = 5_000


def worker_wanted(texts: int) -> bool:
    """Whether a report of `texts` texts draws its figures in a worker (`FIGURE_WORKER_ENV` overrides)."""
    forced = env_switch(FIGURE_WORKER_ENV)
    if forced is not None:
        return forced
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return texts >= WORKER_TEXTS and cores >= 2


class Painter:
    """Draws `bold_eval.report.figures` plots now (`worker=False`) or in a worker process started at once, so that
    its imports overlap the caller's analysis. Use as a context manager: leaving it with an error stops the
    worker; `finish` (called by the report before it moves its files into place) waits for every figure and
    raises the first error the worker met (an `OSError` as itself, e.g. a full disk)."""

    def __init__(self, worker: bool = False) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        if worker:
            try:
                self._process = subprocess.Popen([sys.executable, "-m", "bold_eval.report.painter"],
                                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            except OSError:  # no second Python to start: draw here
                self._process = None

    @classmethod
    def for_texts(cls, texts: int) -> Painter:
        return cls(worker=worker_wanted(texts))

    @property
    def in_worker(self) -> bool:
        return self._process is not None

    def draw(self, plot: Callable[..., Path], *args: Any, path: Path, **keywords: Any) -> Path:
        """`plot(*args, path=path, **keywords)`, a function of `bold_eval.report.figures`; returns `path` (drawn by
        the time `finish` returns)."""
        if plot.__module__ != "bold_eval.report.figures":
            raise ValueError(f"{plot.__qualname__} is not a plot of bold_eval.report.figures")
        if self._process is None or self._process.stdin is None:
            return plot(*args, path=path, **keywords)
        try:
            pickle.dump((plot.__name__, args, {"path": path, **keywords}), self._process.stdin)
            self._process.stdin.flush()
        except BrokenPipeError:  # the worker died: `finish` reports why
            pass
        return path

    def finish(self) -> None:
        """Wait for every figure; raise the worker's first error."""
        process, self._process = self._process, None
        if process is None:
            return
        output, _ = process.communicate()
        try:
            error = pickle.loads(output) if output else None
        except Exception:  # noqa: BLE001 - a reply cut short: say what is known
            error = None
        if isinstance(error, BaseException):
            raise error
        if process.returncode != 0 or error is not None:
            raise RuntimeError(f"the figure worker ({sys.executable} -m bold_eval.report.painter) stopped with exit "
                               f"status {process.returncode} before drawing every figure; set {FIGURE_WORKER_ENV}=0 to "
                               "draw them in the report's own process")

    def __enter__(self) -> Painter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        process, self._process = self._process, None
        if process is not None:
            if kind is None:
                self._process = process
                self.finish()
            else:
                process.kill()
                process.communicate()


def _serve(jobs: IO[bytes], replies: IO[bytes]) -> int:
    """The worker: draw each pickled job from `jobs` until it ends; write the first error (or None) to `replies`."""
    from bold_eval.report import figures

    error: BaseException | None = None
    while True:
        try:
            name, args, keywords = pickle.load(jobs)
        except EOFError:
            break
        if error is not None:
            continue
        try:
            getattr(figures, name)(*args, **keywords)
        except Exception as failure:  # noqa: BLE001 - carried back to the report, which raises it
            error = failure
    try:
        reply = pickle.dumps(error)
    except Exception:  # noqa: BLE001 - an error that does not pickle travels as its message
        reply = pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}"))
    replies.write(reply)
    replies.flush()
    return 0 if error is None else 1


if __name__ == "__main__":
    replies = sys.stdout.buffer
    sys.stdout = sys.stderr  # anything a plot prints goes to standard error, not into the reply
    sys.exit(_serve(sys.stdin.buffer, replies))
