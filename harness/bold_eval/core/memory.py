"""How the process allocates memory for tables."""

from __future__ import annotations

import os


def use_returning_allocator() -> None:
    """Let Arrow (pandas' string columns, parquet reads and writes) allocate from the system allocator.

    Arrow's default pool (mimalloc) keeps freed memory for reuse, so a run's peak memory would hold every table
    it ever converted; the system allocator gives large blocks back, and the peak grows with the rows a stage
    holds, not with every row once converted (BOLD x 25 is 591,975 texts). Measured in
    benchmarks/RESULTS.md ("k samples per prompt at scale"). $ARROW_DEFAULT_MEMORY_POOL, where set, wins.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
