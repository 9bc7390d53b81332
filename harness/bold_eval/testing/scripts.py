"""The repository's scripts (benchmarks/, reproduce/) as modules, for the tests that run small versions of them."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


@contextmanager
def script_module(name: str, folder: str = "benchmarks") -> Iterator[ModuleType]:
    """`folder/name.py` of a checkout, loaded as the module `name` and registered in sys.modules while in use
    (dataclasses resolve their module's annotations through it)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    assert spec is not None and spec.loader is not None  # a .py file always has a spec and a loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
