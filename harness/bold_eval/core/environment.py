"""The environment variables bold-eval reads, each checked when a command starts.

A variable read only deep inside a run (the report's thread count after an hour of generation, a data
folder when the first metric loads) would fail after the work it should have prevented. `check_environment`
validates, before any work, every variable that the command about to run reads: whole numbers, on/off
flags and paths. Each reader parses its value through the same functions, so the check and the use agree.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from bold_eval.core.errors import DEBUG_ENV, UsageError

THREADS_ENV = "BOLD_EVAL_THREADS"
# Whether a report draws its figures in a worker process (`bold_eval.report.painter`): on, off, or unset (by size).
FIGURE_WORKER_ENV = "BOLD_EVAL_FIGURE_WORKER"
ALLOW_MODIFIED_ENV = "BOLD_ALLOW_MODIFIED_DATA"
OFFLINE_ENV = "BOLD_EVAL_OFFLINE"
# Where dequantized GGUF checkpoints are kept (`bold_eval.generation.loading.model_cache_dir`).
MODEL_CACHE_ENV = "BOLD_EVAL_MODEL_CACHE"
# A folder `bold-eval download` filled: every resource is looked up there, with the Hub off (`home_dir`).
HOME_ENV = "BOLD_EVAL_HOME"
_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")

# On/off variables of bold-eval's own, for every command.
FLAGS = (DEBUG_ENV, ALLOW_MODIFIED_ENV, OFFLINE_ENV)
# Variables naming a local copy of a resource: when set, the path must exist (the commands that read them).
PATHS = ("BOLD_DATA_DIR", "BOLD_LEXICON_DIR", "BOLD_DEBIASWE_DIR", "BOLD_SHENG2019_DIR", "BOLD_WORD2VEC", HOME_ENV)
# Cache folders: created when first used, so they need not exist, but must not be a file.
CACHES = ("BOLD_EVAL_CACHE", "BOLD_EVAL_CACHE_DIR", MODEL_CACHE_ENV)
# Which commands read which variables beyond the flags (a command not listed reads the flags only).
_READ_BY = {
    "run": (THREADS_ENV, FIGURE_WORKER_ENV, *PATHS, *CACHES),
    "score": (THREADS_ENV, FIGURE_WORKER_ENV, *PATHS, *CACHES),
    "report": (THREADS_ENV, FIGURE_WORKER_ENV),
    "compare": (THREADS_ENV,),
    "validate": (*PATHS, *CACHES),
    "dataset": ("BOLD_DATA_DIR", HOME_ENV, *CACHES),
    "publish": ("BOLD_DATA_DIR", *CACHES),
}


def env_flag(name: str) -> bool:
    """An on/off variable: 1/true/yes/on or 0/false/no/off (any case), unset or empty is off."""
    value = os.environ.get(name, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise UsageError(f"${name} must be on or off (1/true/yes/on or 0/false/no/off), got {os.environ[name]!r}; "
                     f"set it to one of those or unset it")


def env_switch(name: str) -> bool | None:
    """An on/off variable whose absence means "decide by the work" (`env_flag`'s values; None when unset or
    empty)."""
    return env_flag(name) if os.environ.get(name, "").strip() else None


def home_dir() -> Path | None:
    """$BOLD_EVAL_HOME: the folder `bold-eval download --to DIR` filled (None when unset or empty). When set, the
    classifiers, lexicons, word lists, embedding, BOLD files and models are looked up there first and nothing
    is downloaded: the Hub is off (`bold_eval.core.resources.offline`)."""
    value = os.environ.get(HOME_ENV, "").strip()
    return Path(value).expanduser().absolute() if value else None


# Subfolders of $BOLD_EVAL_HOME (`bold-eval download`): a huggingface_hub cache, and BOLD's upstream layout.
HOME_HUB = "hub"
HOME_BOLD = "bold"


@contextlib.contextmanager
def home_environment() -> Iterator[None]:
    """While a command runs with $BOLD_EVAL_HOME set: huggingface_hub's cache is its `hub/` folder and the Hub is
    off (HF_HUB_CACHE, HF_HUB_OFFLINE, HF_DATASETS_OFFLINE), for the libraries that read those variables when
    imported (the generation model's `from_pretrained`); the variables are restored afterwards."""
    home = home_dir()
    if home is None:
        yield
        return
    wanted = {"HF_HUB_CACHE": str(home / HOME_HUB), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def env_threads() -> int | None:
    """$BOLD_EVAL_THREADS as a whole number >= 1; None when unset or empty."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"${THREADS_ENV} must be a whole number >= 1 (threads for the report's tests), got "
                         f"{value!r}; set it to one, or unset it to use the cores this process may use")
    return int(value)


def _check_path(name: str) -> None:
    value = os.environ.get(name, "")
    if value and not Path(value).expanduser().exists():
        raise UsageError(f"${name} is {value!r}, which does not exist; point it at the local copy (a folder or "
                         f"file) or unset it")


def _check_cache(name: str) -> None:
    value = os.environ.get(name, "")
    if value and Path(value).expanduser().is_file():
        raise UsageError(f"${name} is {value!r}, a file; it must name a cache folder (new or existing)")


def check_environment(command: str | None, names: Iterable[str] | None = None) -> None:
    """Validate the variables `command` reads (`names` instead, when given); a bad one is a `UsageError`
    naming it and what it accepts."""
    for name in names if names is not None else (*FLAGS, *_READ_BY.get(command or "", ())):
        if name in FLAGS:
            env_flag(name)
        elif name == THREADS_ENV:
            env_threads()
        elif name == FIGURE_WORKER_ENV:
            env_switch(name)
        elif name in PATHS:
            _check_path(name)
        elif name in CACHES:
            _check_cache(name)
