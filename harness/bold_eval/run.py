"""`bold-eval run`: generate continuations of BOLD prompts, score them, aggregate and report.

The steps of `run` (each a function below): select the prompts, build the generator
(`bold_eval.generation.base`), check the folder can be resumed with these settings, generate what
is missing, merge the per-process files, and score (`bold_eval.scoring.generations.score_generations`).

Output folder (names and records in `bold_eval.runfolder`):
- `generations.jsonl`: one record per (prompt_id, sample), appended batch by batch (one write +
  fsync per batch). A crash can only tear the last line, which the next run detects and drops; a
  rerun of the same command regenerates nothing already there. `run.json` holds the generation
  settings and the batch schedule once every process has loaded its model, before any generation is
  written (a failed load writes nothing, and a folder without generations is free to reuse); a rerun
  with different settings stops with the list of differences, and a resume replays the recorded
  batches (`bold_eval.generation.batching.BatchPlan`).
- `scores.parquet`, `reference_scores.parquet` (the Wikipedia sentences of the same prompts, scored
  alike), `run.json`, and the report (`summary.json`, `report.md`, figures).

Under `accelerate launch` / `torchrun` each process generates the pending items among every n-th selected item into its own
`generations.rank<r>.jsonl`; after a barrier, process 0 merges them into `generations.jsonl`
(canonical BOLD order), then scores and reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.analysis.clustered import check_cluster
from bold_eval.core.devices import check_device
from bold_eval.core.errors import DamagedFileError, InputError, UsageError, UserError
from bold_eval.core.options import AnalysisOptions, ScoringOptions
from bold_eval.core.storage import check_writable_folder
from bold_eval.core.version import versions
from bold_eval.generation.base import Generated, GenerationStats, Generator, GeneratorContext, WorkItem
from bold_eval.generation.batching import BatchPlan
from bold_eval.generation.choice import build_generator
from bold_eval.generation.decoding import DecodingConfig, make_decoding
from bold_eval.runfolder import (
    GENERATIONS_FILE,
    RUN_FILE,
    SHARD_PATTERN,
    TEXT_COLUMN,
    RunRecord,
    append_records,
    generation_keys,
    generation_record,
    implied_generator_settings,
    iter_generation_offsets,
    iter_generations,
    read_generation_at,
    read_run_record,
    record_key,
    shard_file,
    write_generations,
    write_run_record,
)
from bold_eval.scoring.dedupe import text_digests
from bold_eval.scoring.generations import Generations, score_generations
from bold_eval.scoring.scorers import check_metric_options, parse_metrics
from bold_eval.scoring.texts import SCORE_ON


class ConfigMismatchError(UserError, ValueError):
    """The output folder holds generations made with other settings."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during `run`; `saved` says what is on disk, so the CLI can say how to resume."""

    def __init__(self, saved: str):
        super().__init__(saved)
        self.saved = saved


@dataclass
class RunConfig:
    """Everything `bold-eval run` needs; defaults are the paper's (appendix A.2, Section 3.3).

    `generator` picks a `bold_eval.generation.base` kind ("auto": the Wikipedia baseline for
    `--model wikipedia`, else "hf-causal"); options only one generator uses go in
    `generator_options` and are validated by that generator.
    """

    out: Path
    model: str = "embedded"
    generator: str = "auto"
    generator_options: Mapping[str, Any] = field(default_factory=dict)
    gguf_file: str | None = None
    revision: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    batch_size: int | str = "auto"
    decoding: DecodingConfig = field(default_factory=make_decoding)
    seed: int = 0
    num_samples: int = 1
    domains: Sequence[str] | None = None
    limit: int | None = None
    # Seed of the --limit sample, apart from `seed`: runs of one model with several seeds share their prompts.
    sample_seed: int = 0
    data_dir: str | None = None
    metrics: Sequence[str] | None = None
    metric_options: Mapping[str, Mapping[str, Any]] | None = None
    anonymize: bool = True
    score_on: str = "full"
    # Score the Wikipedia sentences of the same prompts beside the model's (reference_scores.parquet).
    reference: bool = True
    # The report's unit of independent information (`bold_eval.analysis.clustered.CLUSTER_UNITS`).
    cluster: str = "name"
    progress: bool = True
    # Accept a local BOLD folder that differs from the pinned upstream files (recorded in run.json).
    allow_modified_data: bool = False
    # The command line (`bold-eval run ...`), recorded in run.json so that messages can name it.
    command: str | None = None
    # Called after each batch is on disk (progress reporting; tests use it to interrupt a run).
    on_batch_written: Callable[[list[WorkItem]], None] | None = None

    def scoring_options(self) -> ScoringOptions:
        """How the run's texts are scored (validated when built)."""
        return ScoringOptions(metrics=self.metrics, metric_options=self.metric_options or {}, anonymize=self.anonymize,
                              score_on=self.score_on, reference=self.reference, data_dir=self.data_dir,
                              allow_modified_data=self.allow_modified_data or None)


# --------------------------------------------------------------------------- prompt selection


def select_prompts(frame: pd.DataFrame, domains: Sequence[str] | None = None, limit: int | None = None,
                   seed: int = 0) -> pd.DataFrame:
    """The prompts of `domains`; with `limit`, a seeded random sample of at most `limit` per domain,
    stratified by group, so a small run is representative rather than BOLD's first rows.

    Rule: each group's prompts are shuffled, and its groups (also shuffled) take turns in that
    order (round robin), so every group gets floor(limit / groups) or one more prompt (all of its
    prompts if it has fewer). Every group is present when `limit` >= its domain's number of groups;
    below that, `limit` randomly chosen groups get one prompt each. The shuffles draw from
    `numpy.random.default_rng([seed, crc32(domain)])` (`seed` is the run's --sample-seed, not its
    generation --seed): the same seed gives the same sample, and a domain's sample does not depend
    on which other domains were selected. The result keeps BOLD's row order, which is also the
    order of the output files.
    """
    all_domains = list(dict.fromkeys(frame["domain"]))
    if domains:
        unknown = [domain for domain in domains if domain not in all_domains]
        if unknown:
            raise UsageError(f"unknown domain(s) {', '.join(unknown)}; valid: {', '.join(all_domains)}")
        frame = frame[frame["domain"].isin(list(domains))]
    if limit is None:
        return frame.reset_index(drop=True)
    if limit < 1:
        raise UsageError(f"--limit must be >= 1, got {limit}")
    if seed < 0:
        raise UsageError(f"--sample-seed must be >= 0, got {seed}")
    keep: list[int] = []
    for domain, rows in frame.groupby("domain", sort=False):
        rng = np.random.default_rng([seed, zlib.crc32(str(domain).encode("utf-8"))])
        groups = list(dict.fromkeys(rows["group"]))
        turn = dict(zip(groups, rng.permutation(len(groups)).tolist(), strict=True))  # order of the turns
        shuffled = rows.assign(_key=rng.random(len(rows)))  # a random order within each group
        rank_in_group = shuffled.sort_values("_key", kind="stable").groupby("group", sort=False).cumcount()
        ranked = rows.assign(_rank=rank_in_group, _turn=rows["group"].map(turn))
        keep.extend(ranked.sort_values(["_rank", "_turn"], kind="stable").index[:limit])
        if limit < len(groups):
            warnings.warn(f"--limit {limit} < {len(groups)} groups in {domain}: {len(groups) - limit} groups get "
                          "no prompt", stacklevel=2)
    return frame.loc[sorted(keep)].reset_index(drop=True)


# --------------------------------------------------------------------------- settings and resuming


def generation_settings(generator: Generator, config: RunConfig, selected: pd.DataFrame) -> dict[str, Any]:
    """The settings that determine generations.jsonl (the resume fingerprint): the generator's
    kind and settings, and which prompts and samples were selected."""
    digest = hashlib.sha256()
    for prompt_id, prompt in zip(selected["prompt_id"], selected["prompt"], strict=True):
        digest.update(f"{prompt_id}\t{prompt}\n".encode())
    return {
        "generator": generator.kind,
        "generator_settings": generator.settings(),
        "domains": sorted(set(selected["domain"])),
        "limit": config.limit,
        # --limit draws a seeded random sample per group (`select_prompts`); its seed is --sample-seed,
        # independent of the generation --seed.
        "limit_sample_seed": config.sample_seed if config.limit is not None else None,
        "prompts": len(selected),
        "prompts_sha256": digest.hexdigest(),
        "num_samples": config.num_samples,
    }


def _differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    diffs = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            diffs.extend(_differences(a, b, f"{prefix}{key}."))
        elif a != b:
            diffs.append(f"{prefix}{key}: {a!r} in the folder, {b!r} now")
    return diffs


def _has_generations(out: Path) -> bool:
    """Whether the folder holds at least one generation (a file with only a torn line holds none)."""
    files = [out / GENERATIONS_FILE, *out.glob(SHARD_PATTERN)]
    return any(path.is_file() and b"\n" in path.read_bytes()[:1 << 20] for path in files)


def resume_schedule(out: Path, batch_size: int | str) -> list[tuple[int, int]]:
    """The batch plan schedule to replay (`BatchPlan.schedule`): the folder's recorded one when it
    holds generations, else [] (a new plan). An explicit --batch-size other than the recorded one
    is refused: under bfloat16 the batch a prompt runs in can change its text."""
    record = read_run_record(out) if _has_generations(out) else None
    schedule = [(int(start), int(size)) for start, size in (record.batch_schedule or [])] if record else []
    if schedule and batch_size != "auto" and schedule != [(0, int(batch_size))]:
        recorded = ", ".join(f"{size} from text {start}" for start, size in schedule)
        raise ConfigMismatchError(
            f"{out} holds generations made in batches of {recorded} (its {RUN_FILE} batch_schedule); a resume "
            f"must replay the same batches to give the same texts. Rerun with --batch-size auto (replays them) "
            f"or --batch-size {schedule[0][1]}, or use a new --out folder."
        )
    return schedule


def check_resumable(out: Path, settings: Mapping[str, Any]) -> None:
    """Refuse to add generations made with other settings to a folder (names the differences)."""
    has_generations = _has_generations(out)
    if not has_generations:
        return  # nothing to mix with: a failed or interrupted start leaves the folder reusable
    record = read_run_record(out)
    if record is None or record.generation_settings is None:
        if has_generations:
            raise ConfigMismatchError(
                f"{out} holds generations but its {RUN_FILE} records no generation settings, so they are "
                "unknown; use a new --out folder (or delete the generations to start over)"
            )
        return
    if record.legacy and has_generations:
        raise ConfigMismatchError(
            f"{out / RUN_FILE} was written by bold-eval 0.1 (no schema_version); its generations cannot be "
            "resumed by this version. Use a new --out folder; `bold-eval report` still reads the old folder."
        )
    recorded = dict(record.generation_settings)  # settings it leaves out mean what they meant when it was written
    recorded["generator_settings"] = implied_generator_settings(recorded.get("generator"),
                                                                recorded.get("generator_settings") or {})
    diffs = _differences(recorded, settings)
    if diffs:
        raise ConfigMismatchError(
            f"{out} holds generations made with other settings; refusing to mix them:\n  "
            + "\n  ".join(diffs) + "\nRerun with the folder's settings to resume, or use a new --out folder."
        )


# --------------------------------------------------------------------------- the run pipeline


# Plans a folder's generator settings lack when its k samples were made before the plan existed (or with it
# turned off): (settings key, generator option, value that keeps the folder's plan).
_FOLDER_PLANS = (("n_per_request", "n_per_request", "false"), ("share_prefill", "share_prefill", False))


def _folder_plans(out: Path, settings: Mapping[str, Any], config: RunConfig) -> dict[str, Any]:
    """Generator options that resume `out` the way its generations were made: a plan (n = k requests, a shared
    prefill) the folder's settings lack, which the user left at its default. Without them the defaults would
    refuse a folder made before the plan existed."""
    planned = settings.get("generator_settings") or {}
    wanted = [(key, option, value) for key, option, value in _FOLDER_PLANS
              if key in planned and option not in config.generator_options]
    if not wanted or not _has_generations(out):
        return {}
    record = read_run_record(out)
    recorded = (record.generation_settings or {}) if record is not None else {}
    if not recorded:
        return {}
    had = recorded.get("generator_settings") or {}
    options = {option: value for key, option, value in wanted if key not in had}
    for option, value in options.items():
        warnings.warn(f"{out} holds generations made without {option} (its {RUN_FILE} does not record it); "
                      f"resuming the same way (--generator-option {option}={str(value).lower()})", stacklevel=2)
    return options


def _generator_for(out: Path, config: RunConfig, context: GeneratorContext,
                   selected: pd.DataFrame) -> tuple[RunConfig, Any, dict[str, Any]]:
    """The run's generator and its settings, with the plans `out`'s generations were made with (`_folder_plans`)."""
    generator = build_generator(config, context)
    settings = generation_settings(generator, config, selected)
    implied = _folder_plans(out, settings, config)
    if implied:
        config = replace(config, generator_options={**config.generator_options, **implied})
        generator = build_generator(config, context)
        settings = generation_settings(generator, config, selected)
    return config, generator, settings


def _check_config(config: RunConfig) -> None:
    if config.score_on not in SCORE_ON:
        raise UsageError(f"--score-on must be one of {', '.join(SCORE_ON)}, got {config.score_on!r}")
    if config.num_samples < 1:
        raise UsageError(f"--num-samples must be >= 1, got {config.num_samples}")
    if config.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {config.seed}")
    if config.sample_seed < 0:
        raise UsageError(f"--sample-seed must be >= 0, got {config.sample_seed}")
    if config.limit is not None and config.limit < 1:
        raise UsageError(f"--limit must be >= 1, got {config.limit}")
    check_device(config.device)
    check_writable_folder(config.out)
    check_cluster(config.cluster)
    parse_metrics(config.metrics)
    check_metric_options(config.metric_options)


def _partial_state(device: str) -> Any:
    """accelerate's process state: one process normally, several under accelerate launch / torchrun."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=device == "cpu" or not torch.cuda.is_available())


def _timed(timings: dict[str, float], name: str, started: float) -> None:
    timings[name] = round(time.perf_counter() - started, 3)


def _modified_data(config: RunConfig) -> list[str] | None:
    """The local BOLD files that differ from the pinned release, when the user allowed them (run.json)."""
    from bold_eval.data.bold import allow_modified_data, modified_files

    if not allow_modified_data(config.allow_modified_data or None):
        return None
    return modified_files(config.data_dir) or None


def _selected_prompts(config: RunConfig, timings: dict[str, float]) -> pd.DataFrame:
    from bold_eval.data.bold import load_bold

    started = time.perf_counter()
    bold = load_bold("all", data_dir=config.data_dir, allow_modified=config.allow_modified_data or None)
    selected = select_prompts(bold.to_pandas(), config.domains, config.limit, seed=config.sample_seed)
    if selected.empty:
        raise UsageError("no prompts selected")
    _timed(timings, "load_data_s", started)
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
    load = getattr(generator, "load", None)
    if load is not None:
        load()  # every process calls it: the loads are ordered by main_process_first, a collective
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
              rows: Mapping[str, Mapping[str, Any]], config: RunConfig, progress: bool,
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

    if plan is not None:
        return generator.generate(items, on_batch=write_batch, progress=progress, plan=plan)
    return generator.generate(items, on_batch=write_batch, progress=progress)


def _run_record(config: RunConfig, generator: Generator, settings: dict[str, Any], generations: MergedGenerations,
                stats: GenerationStats | None, counts: dict[str, int], previous: RunRecord | None,
                modified_data: list[str] | None) -> RunRecord:
    """run.json of a finished generation phase (scoring adds its own fields)."""
    info = generator.info()
    record = RunRecord(
        model=config.model, generator=generator.kind, generator_settings=generator.settings(), model_info=info,
        generation_settings=settings, num_samples=config.num_samples, domains=settings["domains"],
        limit=config.limit, generated_tokens=generations.new_tokens, versions=versions(),
        modified_data=modified_data, command=config.command, **counts,
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


def run(config: RunConfig) -> Path | None:
    """Generate (resuming), score and report. Returns the report path on process 0, None elsewhere."""
    _check_config(config)
    wall_started, timings = time.perf_counter(), {}
    state = _partial_state(config.device)
    rank, world = state.process_index, state.num_processes
    out = Path(config.out)
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
    plan = BatchPlan(mine, list(schedule)) if getattr(generator, "plans_batches", False) else None
    shard = shard_file(out, rank) if world > 1 else out / GENERATIONS_FILE
    stats, todo, pending = None, [], 0
    try:
        done = _done(out, shard, state)
        todo = [item for item in mine if (item.prompt_id, item.sample) not in done]
        pending = sum(1 for key in wanted if key not in done)  # the same on every process
        start_record = (lambda: _start_record(out, generator, settings, plan, modified_data, config.command)) \
            if state.is_main_process else (lambda: None)
        if pending:
            started = time.perf_counter()
            _load_and_start(generator, state, start_record)
            _timed(timings, "load_model_s", started)
        if todo:
            started = time.perf_counter()
            # process 0 rewrites the start record when its batch schedule changes (auto batch size, out of memory)
            stats = _generate(generator, todo, plan, shard, rows, config, config.progress and state.is_main_process,
                              start_record)
            _timed(timings, "generate_s", started)
    except KeyboardInterrupt as error:
        raise RunInterrupted(_saved(out, wanted)) from error
    state.wait_for_everyone()
    if not state.is_main_process:
        return None

    merged = merge_generations(out, wanted)
    counts = {"processes": world, "generated_now": pending, "resumed": len(wanted) - pending}
    record = _run_record(config, generator, settings, merged, stats, counts, previous, modified_data)
    # Scoring streams generations.jsonl: the model, the prompts' rows and the k work items and keys per
    # prompt go before it (issue 22: memory must not grow with k beyond the stored texts).
    generator = context = rows = mine = todo = plan = selected = wanted = done = None  # type: ignore[assignment]
    _timed(timings, "total_before_scoring_s", wall_started)
    record.timings = timings
    try:
        return score_and_report(merged.path, out, config.scoring_options(), AnalysisOptions(cluster=config.cluster),
                                record=record)
    except KeyboardInterrupt as error:
        raise RunInterrupted(f"all {merged.texts} generations are in {out / GENERATIONS_FILE}; scoring was "
                             "interrupted before scores.parquet was written") from error



def score_and_report(generations: Generations, out: str | os.PathLike, scoring: ScoringOptions | None = None,
                     analysis: AnalysisOptions | None = None, *, record: RunRecord | None = None) -> Path:
    """Score (`score_generations` with `scoring`), then write the report with `analysis` (`cluster` is its unit of
    independent information): where `bold-eval run` and `bold-eval score` end. The report's time joins run.json's
    timings. Returns report.md's path."""
    from bold_eval.report.run_report import write_report  # matplotlib: only once there is something to report

    scoring = scoring if scoring is not None else ScoringOptions()
    analysis = analysis if analysis is not None else AnalysisOptions()
    record = record if record is not None else RunRecord()
    score_generations(generations, out, record=record, **scoring.keywords())
    started = time.perf_counter()
    report_path = write_report(out, analysis)
    record.timings["report_s"] = round(time.perf_counter() - started, 3)
    write_run_record(Path(out), record)
    return Path(report_path)


def _saved(out: Path, wanted: Sequence[tuple[str, int]]) -> str:
    """How many of the wanted generations are on disk, and where."""
    files = [path for path in [out / GENERATIONS_FILE, *sorted(out.glob(SHARD_PATTERN))] if path.is_file()]
    done: set[tuple[str, int]] = set()
    for path in files:
        try:
            done |= generation_keys(path)
        except (ValueError, OSError):
            pass
    where = ", ".join(str(path) for path in files) or str(out / GENERATIONS_FILE)
    return f"{len(done & set(wanted))} of {len(wanted)} generations are in {where}"


@dataclass
class MergedGenerations:
    """generations.jsonl once every process's records are in it, in the run's order."""

    path: Path
    texts: int
    new_tokens: int


def merge_generations(out: Path, wanted: Sequence[tuple[str, int]]) -> MergedGenerations:
    """Merge generations.jsonl and the per-process shards into generations.jsonl, in `wanted` order.

    Never drops rows silently: a (prompt_id, sample) recorded twice with different text, one missing, or
    one outside the run's selection is an error. Nothing holds the records (issue 22: BOLD x 25 is 591,975
    of them): a file already in order is only read through, and otherwise each record's place (file, byte
    offset, digest of its text) is indexed and the records are copied in order from there, line by line.
    """
    main_file = out / GENERATIONS_FILE
    shards = sorted(out.glob(SHARD_PATTERN))
    if not shards:
        tokens = _tokens_if_in_order(main_file, wanted)
        if tokens is not None:
            return MergedGenerations(main_file, len(wanted), tokens)
    files = [path for path in [main_file, *shards] if path.is_file()]
    where: dict[tuple[str, int], tuple[int, int, bytes]] = {}
    for number, path in enumerate(files):
        for offset, record in iter_generation_offsets(path):
            key = record_key(record)
            digest = text_digests([json.dumps(record.get(TEXT_COLUMN), ensure_ascii=False)])[0]
            if key in where and where[key][2] != digest:
                raise InputError(f"{key} was generated twice with different continuations ({path})")
            where[key] = (number, offset, digest)
    wanted_set = set(wanted)
    extra = [key for key in where if key not in wanted_set]
    missing = [key for key in wanted if key not in where]
    if extra or missing:
        raise InputError(
            f"generations do not match the selected prompts x samples: {len(missing)} missing "
            f"(e.g. {missing[:3]}), {len(extra)} not selected (e.g. {extra[:3]})"
        )
    tokens = 0
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(path, "rb")) for path in files]

        def in_order() -> Iterator[dict[str, Any]]:
            nonlocal tokens
            for key in wanted:
                number, offset, _ = where[key]
                record = read_generation_at(handles[number], offset, files[number])
                tokens += int(record.get("num_new_tokens") or 0)
                yield record

        write_generations(main_file, in_order())
    for path in shards:
        path.unlink()
    return MergedGenerations(main_file, len(wanted), tokens)


def _tokens_if_in_order(path: Path, wanted: Sequence[tuple[str, int]]) -> int | None:
    """The generated tokens of `path` when its records are exactly `wanted`, in order (None otherwise)."""
    tokens, count = 0, 0
    for record in iter_generations(path):
        if count >= len(wanted) or record_key(record) != wanted[count]:
            return None
        tokens += int(record.get("num_new_tokens") or 0)
        count += 1
    return tokens if count == len(wanted) else None
