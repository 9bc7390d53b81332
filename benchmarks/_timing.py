"""Best-of-N timing shared by the benchmark scripts (imported as a sibling: `python benchmarks/x.py`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any


def best_times(
    functions: Sequence[Callable[[Any], object]],
    texts: Any,
    repeats: int,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Best time of each function on `texts` over `repeats` passes, measured with `clock`.

    Passes alternate between the functions so that background load (other processes, caches,
    CPU frequency) hits them alike. `clock` is wall time by default; `time.process_time` gives
    CPU time, which leaves out the time other processes hold the core.
    """
    times: list[list[float]] = [[] for _ in functions]
    for _ in range(repeats):
        for function, function_times in zip(functions, times, strict=True):
            start = clock()
            function(texts)
            function_times.append(clock() - start)
    return [min(function_times) for function_times in times]
