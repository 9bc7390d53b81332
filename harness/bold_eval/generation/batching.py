"""Batches planned once from all items, so a resumed run writes exactly the texts of an uninterrupted one."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bold_eval.core.errors import UsageError
from bold_eval.generation.base import (
    BatchCallback,
    Generated,
    GenerationStats,
    WorkItem,
)

# A generator's own statistics (a GenerationStats subclass), handed back to it filled in.
Stats = TypeVar("Stats", bound=GenerationStats)

CPU_GENERATION_BATCH_SIZE = 64


GPU_START_GENERATION_BATCH_SIZE = 512


def _is_out_of_memory(error: BaseException) -> bool:
    import torch

    if isinstance(error, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


# The most rows `auto` starts with on a GPU, however small the model (larger batches also reach disk later).
GPU_MAX_GENERATION_BATCH_SIZE = 4096


def memory_batch_size(spare_bytes: int, row_bytes: int) -> int:
    """`--batch-size auto` on a GPU for a model whose rows need `row_bytes` each: the largest power of two whose
    rows fill at most half of `spare_bytes` (device memory beyond the weights), between
    GPU_START_GENERATION_BATCH_SIZE (a larger model still starts there and halves on out-of-memory) and
    GPU_MAX_GENERATION_BATCH_SIZE. On one H100 a GPT-2-small-sized model generated all of BOLD in 28 s in
    batches of 4,096 against 35 s in batches of 512 (benchmarks/RESULTS.md, "H100: all of BOLD end to end,
    DynamicCache")."""
    fit = spare_bytes // 2 // max(1, row_bytes)
    size = GPU_START_GENERATION_BATCH_SIZE
    while size * 2 <= min(fit, GPU_MAX_GENERATION_BATCH_SIZE):
        size *= 2
    return size


def default_batch_size(device: Any) -> int:
    """`--batch-size auto`: start large on accelerators (halved on out-of-memory); 64 on CPU, where
    the forward pass is compute-bound so bigger batches add little, and smaller ones reach disk
    (resume points) sooner."""
    return GPU_START_GENERATION_BATCH_SIZE if getattr(device, "type",
                                                      str(device)) != "cpu" else CPU_GENERATION_BATCH_SIZE


@dataclass
class BatchPlan:
    """The batches of one process: fixed by its full item list and the schedule, never by what is
    left, so that a resumed run regenerates exactly the batches of an uninterrupted one (under
    bfloat16 a token can depend on the batch its prompt runs in; see the module docstring).

    `items`: every item of this process, done or not. The plan sorts them by prompt length
    (longest first, ties by prompt_id and sample) and cuts them by `schedule`: (start, size)
    segments of that order, "from `start` on, batches of `size`". Empty: one segment of the
    generator's batch size, added by `run_batch_plan`. When `auto` halves on out-of-memory at
    position p, the segment (p, size // 2) replaces everything from p on, in place and before the
    next batch is handed over, so the caller can record it and a resume replays it.
    """

    items: Sequence[WorkItem]
    schedule: list[tuple[int, int]] = field(default_factory=list)


def item_key(item: WorkItem) -> tuple[str, int]:
    return item.prompt_id, item.sample


def _segment(schedule: Sequence[tuple[int, int]], position: int, total: int) -> tuple[int, int]:
    """(batch size, end of segment) in force at `position` of the plan."""
    size, end = schedule[0][1], total
    for index, (start, segment_size) in enumerate(schedule):
        if start <= position:
            size = segment_size
            end = schedule[index + 1][0] if index + 1 < len(schedule) else total
    return size, end


def run_batch_plan(todo: Sequence[WorkItem], plan: BatchPlan | None, *, lengths: Callable[[list[WorkItem]], list[int]],
                   batch_size: int | str, default_size: int, generate_batch: Callable[[list[WorkItem]],
                                                                                      list[Generated]],
                   on_batch: BatchCallback, stats: Stats, bar: Any) -> Stats:
    """Run the batches of `plan` that hold an item of `todo`, each exactly as planned (done items
    included, their results discarded); `on_batch` receives only the `todo` items of each batch.

    `lengths(items)` gives each item's prompt length in the generator's tokens; `generate_batch`
    makes one batch. With `batch_size` "auto", an out-of-memory error halves the batch and retries
    it (recorded in `plan.schedule`); any other error, or one with a fixed batch size, propagates.
    Without a plan, the plan is `todo` itself (no resume).
    """
    import torch

    plan = plan if plan is not None else BatchPlan(list(todo))
    items = list(plan.items)
    pending = {item_key(item) for item in todo}
    unplanned = pending - {item_key(item) for item in items}
    if unplanned:
        raise ValueError(f"{len(unplanned)} items to generate are not in the batch plan (e.g. {sorted(unplanned)[:3]})")
    auto = batch_size == "auto"
    if not plan.schedule:
        size = default_size if auto else int(batch_size)
        if size < 1:
            raise UsageError(f"batch size (--batch-size) must be >= 1 or auto, got {batch_size}")
        plan.schedule.append((0, size))
    item_lengths = lengths(items)
    ordered = [items[i] for i in sorted(range(len(items)),
                                        key=lambda i: (-item_lengths[i], items[i].prompt_id, items[i].sample))]
    started = time.perf_counter()
    position = 0
    while position < len(ordered):
        size, segment_end = _segment(plan.schedule, position, len(ordered))
        end = min(position + size, segment_end)
        batch = ordered[position:end]
        keep = [index for index, item in enumerate(batch) if item_key(item) in pending]
        if not keep:
            position = end
            continue
        try:
            results = generate_batch(batch)
        except Exception as error:
            if not (auto and _is_out_of_memory(error)) or len(batch) == 1:
                raise
            stats.out_of_memory_retries += 1
            plan.schedule[:] = [segment for segment in plan.schedule if segment[0] < position]
            plan.schedule.append((position, max(1, len(batch) // 2)))
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            continue
        chosen = [results[index] for index in keep]
        on_batch([batch[index] for index in keep], chosen)
        stats.new_tokens += sum(result.num_new_tokens for result in chosen)
        bar.update(len(keep))
        position = end
    stats.seconds = time.perf_counter() - started
    stats.batch_size = min(plan.schedule[-1][1], len(ordered))
    stats.batch_schedule = [(segment[0], segment[1]) for segment in plan.schedule]
    return stats
