"""The generation phase of `bold-eval run`: the prompts, the generator, the folder's resume check, the texts.

Select the prompts (`bold_eval.data.selection`), build the generator (`bold_eval.generation.base`), check that the
folder resumes with these settings (`bold_eval.generation.resume`), generate what is missing, each process its
share of the items into its own file, and merge the processes' files (`bold_eval.runfolder.merge.merge_generations`).
Everything the phase holds (the model, the BOLD rows, k work items per prompt) is freed when it returns, before
scoring: memory must not grow with k beyond the stored texts.

`run.json` holds the generation settings and the batch schedule once every process has loaded its model, before any
generation is written (a failed load writes nothing, and a folder without generations is free to reuse); a rerun
with other settings stops with the list of differences, and a resume replays the recorded batches
(`bold_eval.generation.batching.BatchPlan`). Under `accelerate launch` / `torchrun` each process generates the
pending items among every n-th selected item into its own `generations.rank<r>.jsonl`; after a barrier, process 0
merges them into `generations.jsonl` (canonical BOLD order).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from bold_eval.core.errors import DamagedFileError, UsageError
from bold_eval.core.version import versions
from bold_eval.data.selection import select_prompts
from bold_eval.generation.base import (
    Generated,
    GenerationSettings,
    GenerationStats,
    Generator,
    GeneratorContext,
    WorkItem,
)
from bold_eval.generation.batching import BatchPlan
from bold_eval.generation.choice import build_generator
from bold_eval.generation.resume import check_resumable, folder_plans, generation_settings, resume_schedule
from bold_eval.runfolder.json_files import read_run_record, write_run_record
from bold_eval.runfolder.jsonl import append_records, generation_keys, generation_record
from bold_eval.runfolder.layout import GENERATIONS_FILE, SHARD_PATTERN, shard_file
from bold_eval.runfolder.merge import MergedGenerations, merge_generations, saved_generations
from bold_eval.runfolder.records import RunRecord


class PhaseSettings(GenerationSettings, Protocol):
    """What the phase reads of the run's configuration (`bold_eval.run.RunConfig`, a dataclass, has these fields)."""

    out: Path
    device: str
    domains: Sequence[str] | None
    limit: int | None
    sample_seed: int
    data_dir: str | None
    allow_modified_data: bool
    progress: bool
    command: str | None
    on_batch_written: Callable[[list[WorkItem]], None] | None


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during `run`; `saved` says what is on disk, so the CLI can say how to resume."""

    def __init__(self, saved: str):
        super().__init__(saved)
        self.saved = saved




def generation_phase(config: PhaseSettings, state: Any, timings: dict[str, float]
                      ) -> tuple[MergedGenerations, RunRecord] | None:
    """Select the prompts, check the folder resumes, generate what is missing (every process its share), merge
    the processes' files; on process 0, the merged generations and run.json's record, else None. Everything it
    holds (the model, the BOLD rows, k work items per prompt) is freed when it returns, before scoring (memory
    must not grow with k beyond the stored texts)."""
    rank, world, out = state.process_index, state.num_processes, Path(config.out)
    selected = _selected_prompts(config, timings)
    modified_data = _modified_data(config)
    rows = {row["prompt_id"]: row for row in selected.to_dict(orient="records")}
    device = str(state.device) if world > 1 and config.device == "auto" else config.device
    context = GeneratorContext(rows, device, state.main_process_first)
    config, generator, settings = _generator_for(out, config, context, selected)
    schedule = _start_folder(out, state, settings, config.batch_size)
    previous = read_run_record(out) if schedule else None
    wanted = [(prompt_id, sample) for prompt_id in selected["prompt_id"] for sample in range(config.num_samples)]
    # Each process's items are fixed by the selection (not by what is left), and so is its batch plan.
    mine = [WorkItem(prompt_id, sample, rows[prompt_id]["prompt"]) for prompt_id, sample in wanted[rank::world]]
    plan = BatchPlan(mine, list(schedule)) if generator.plans_batches else None
    shard = shard_file(out, rank) if world > 1 else out / GENERATIONS_FILE
    stats, pending = None, 0
    try:
        done = _done(out, shard, state)
        todo = [item for item in mine if (item.prompt_id, item.sample) not in done]
        pending = sum(1 for key in wanted if key not in done)  # the same on every process
        start_record = (lambda: _start_record(out, generator, settings, plan, modified_data, config.command)) \
            if state.is_main_process else (lambda: None)
        if pending:
            started = time.perf_counter()
            _load_and_start(generator, state, start_record)
            timed(timings, "load_model_s", started)
        if todo:
            started = time.perf_counter()
            # process 0 rewrites the start record when its batch schedule changes (auto batch size, out of memory)
            stats = _generate(generator, todo, plan, shard, rows, config, config.progress and state.is_main_process,
                              start_record)
            timed(timings, "generate_s", started)
    except KeyboardInterrupt as error:
        raise RunInterrupted(saved_generations(out, wanted)) from error
    state.wait_for_everyone()
    if not state.is_main_process:
        return None
    merged = merge_generations(out, wanted)
    counts = {"processes": world, "generated_now": pending, "resumed": len(wanted) - pending}
    return merged, _run_record(config, generator, settings, merged, stats, counts, previous, modified_data)


# --------------------------------------------------------------------------- its steps


def _generator_for(out: Path, config: PhaseSettings, context: GeneratorContext,
                   selected: pd.DataFrame) -> tuple[PhaseSettings, Any, dict[str, Any]]:
    """The run's generator and its settings, with the plans `out`'s generations were made with (`folder_plans`)."""
    def built(config: PhaseSettings) -> tuple[Generator, dict[str, Any]]:
        generator = build_generator(config, context)
        return generator, generation_settings(generator, selected, limit=config.limit, sample_seed=config.sample_seed,
                                              num_samples=config.num_samples)

    generator, settings = built(config)
    implied = folder_plans(out, settings, config.generator_options)
    if implied:
        # the settings are a dataclass (RunConfig) that satisfies the protocol
        config = replace(config, generator_options={**config.generator_options, **implied})  # type: ignore[type-var]
        generator, settings = built(config)
    return config, generator, settings


def partial_state(device: str) -> Any:
    """accelerate's process state: one process normally, several under accelerate launch / torchrun."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=device == "cpu" or not torch.cuda.is_available())


def timed(timings: dict[str, float], name: str, started: float) -> None:
    timings[name] = round(time.perf_counter() - started, 3)


def _modified_data(config: PhaseSettings) -> list[str] | None:
    """The local BOLD files that differ from the pinned release, when the user allowed them (run.json)."""
    from bold_eval.data.bold import allowed_modifications

    return allowed_modifications(config.data_dir, config.allow_modified_data or None)


def _selected_prompts(config: PhaseSettings, timings: dict[str, float]) -> pd.DataFrame:
    from bold_eval.data.bold import load_bold

    started = time.perf_counter()
    bold = load_bold("all", data_dir=config.data_dir, allow_modified=config.allow_modified_data or None)
    selected = select_prompts(bold.to_pandas(), config.domains, config.limit, seed=config.sample_seed)
    if selected.empty:
        raise UsageError("no prompts selected")
    timed(timings, "load_data_s", started)
    return selected


def _start_folder(out: Path, state: Any, settings: dict[str, Any], batch_size: int | str) -> list[tuple[int, int]]:
    """Check the folder resumes with these settings (every process, so all stop together) and
    return the batch schedule to replay. Nothing is written: run.json's start record waits until
    every process has loaded its model (`_load_and_start`), so a failed start leaves the folder reusable."""
    out.mkdir(parents=True, exist_ok=True)
    check_resumable(out, settings)
    schedule = resume_schedule(out, batch_size)
    state.wait_for_everyone()
    return schedule


def _start_record(out: Path, generator: Generator, settings: dict[str, Any], plan: BatchPlan | None,
                  modified_data: list[str] | None, command: str | None = None) -> None:
    """run.json while generations.jsonl is being written: the settings and the batch schedule, so
    an interrupted run resumes with the same batches. Rewritten only when they change."""
    try:
        record = read_run_record(out)
    except DamagedFileError:  # a stale start record: the folder holds no generations (`check_resumable` ran)
        record = None
    schedule = [list(segment) for segment in plan.schedule] if plan is not None else None
    if (record is not None and record.generation_settings == settings and record.batch_schedule == schedule
            and record.status == "generating"):
        return
    write_run_record(out, RunRecord(status="generating", model=generator.info().get("name"),
                                    generator=generator.kind, generator_settings=generator.settings(),
                                    generation_settings=settings, batch_schedule=schedule,
                                    batch_size=schedule[-1][1] if schedule else None, modified_data=modified_data,
                                    command=command))


def _load_and_start(generator: Generator, state: Any, start_record: Callable[[], None]) -> None:
    """Load the model on every process, then process 0 writes run.json's start record, then all go on.

    The start record must exist before any process writes a generation: under several processes
    another process may finish a batch before process 0 does, and generations next to a run.json
    without settings cannot be resumed. Writing it only after every load succeeded keeps a failed
    load from leaving a record behind (and a record without generations never blocks a rerun).
    """
    generator.load()  # every process calls it: the loads are ordered by main_process_first, a collective
    state.wait_for_everyone()
    if state.is_main_process:
        start_record()
    state.wait_for_everyone()


def _done(out: Path, shard: Path, state: Any) -> set[tuple[str, int]]:
    """The (prompt_id, sample) pairs already in a generations file of the folder."""
    done = generation_keys(shard, repair=True)  # drops a torn last line of this process's own file
    state.wait_for_everyone()  # no other process writes to this process's file
    for path in [out / GENERATIONS_FILE, *sorted(out.glob(SHARD_PATTERN))]:
        if path != shard:
            done |= generation_keys(path)
    return done


def _generate(generator: Generator, items: list[WorkItem], plan: BatchPlan | None, shard: Path,
              rows: Mapping[str, Mapping[str, Any]], config: PhaseSettings, progress: bool,
              start_record: Callable[[], None]) -> GenerationStats:
    """Generate `items` (in the batches of `plan` when the generator plans batches), appending each
    finished batch to this process's file; `start_record` runs before each append (run.json)."""
    def write_batch(batch: list[WorkItem], results: list[Generated]) -> None:
        start_record()
        append_records(shard, [generation_record(rows[item.prompt_id], item.sample, result.continuation,
                                                 result.num_new_tokens, result.ended_in_trace)
                               for item, result in zip(batch, results, strict=True)])
        if config.on_batch_written is not None:
            config.on_batch_written(batch)

    return generator.generate(items, on_batch=write_batch, progress=progress, plan=plan)


def _run_record(config: PhaseSettings, generator: Generator, settings: dict[str, Any], generations: MergedGenerations,
                stats: GenerationStats | None, counts: dict[str, int], previous: RunRecord | None,
                modified_data: list[str] | None) -> RunRecord:
    """run.json of a finished generation phase (scoring adds its own fields)."""
    info = generator.info()
    record = RunRecord(
        model=config.model, generator=generator.kind, generator_settings=generator.settings(), model_info=info,
        generation_settings=settings, num_samples=config.num_samples, domains=settings["domains"],
        limit=config.limit, generated_tokens=generations.new_tokens, versions=versions(),
        modified_data=modified_data, command=config.command, processes=counts["processes"],
        generated_now=counts["generated_now"], resumed=counts["resumed"],
    )
    if previous is not None:  # nothing generated now: keep how the folder's texts were batched
        record.batch_size, record.batch_schedule = previous.batch_size, previous.batch_schedule
    if stats is not None and stats.batch_schedule:
        record.batch_schedule = [list(segment) for segment in stats.batch_schedule]
    if stats is not None:
        # tokens/s of this invocation's generation phase (process 0's share under several processes)
        record.tokens_per_second = round(stats.new_tokens / stats.seconds, 2) if stats.seconds else None
        record.batch_size = stats.batch_size
        record.out_of_memory_retries = stats.out_of_memory_retries
    return record
