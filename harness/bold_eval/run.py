"""`bold-eval run`: generate continuations of BOLD prompts, score them, aggregate and report.

The steps of `run` (each a function below): select the prompts, build the generator
(`bold_eval.generators`), check the folder can be resumed with these settings, generate what
is missing, merge the per-process files, and score (`bold_eval.scoring.score_generations`).

Output folder (names and records in `bold_eval.runfolder`):
- `generations.jsonl`: one record per (prompt_id, sample), appended batch by batch (one write +
  fsync per batch). A crash can only tear the last line, which the next run detects and drops; a
  rerun of the same command regenerates nothing already there. `run.json` holds the generation
  settings from the start, and a rerun with different settings stops with the list of differences.
- `scores.parquet`, `run.json`, and the report (`summary.json`, `report.md`, figures).

Under `accelerate launch` / `torchrun` each process generates every n-th pending item into its own
`generations.rank<r>.jsonl`; after a barrier, process 0 merges them into `generations.jsonl`
(canonical BOLD order), then scores and reports.
"""

from __future__ import annotations

import hashlib
import time
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.generate import DecodingConfig, Generated, GenerationStats, WorkItem, make_decoding
from bold_eval.generators import Generator, GeneratorContext, build_generator
from bold_eval.runfolder import (
    GENERATIONS_FILE,
    RUN_FILE,
    SHARD_PATTERN,
    RunRecord,
    append_records,
    generation_record,
    read_generations,
    read_run_record,
    record_key,
    shard_file,
    write_generations,
    write_run_record,
)
from bold_eval.scoring import SCORE_ON, parse_metrics, score_generations, versions


class ConfigMismatchError(ValueError):
    """The output folder holds generations made with other settings."""


@dataclass
class RunConfig:
    """Everything `bold-eval run` needs; defaults are the paper's (appendix A.2, Section 3.3).

    `generator` picks a `bold_eval.generators` kind ("auto": the Wikipedia baseline for
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
    data_dir: str | None = None
    metrics: Sequence[str] | None = None
    metric_options: Mapping[str, Mapping[str, Any]] | None = None
    anonymize: bool = True
    score_on: str = "full"
    progress: bool = True
    # Called after each batch is on disk (progress reporting; tests use it to interrupt a run).
    on_batch_written: Callable[[list[WorkItem]], None] | None = None


# --------------------------------------------------------------------------- prompt selection


def select_prompts(frame: pd.DataFrame, domains: Sequence[str] | None = None, limit: int | None = None,
                   seed: int = 0) -> pd.DataFrame:
    """The prompts of `domains`; with `limit`, a seeded random sample of at most `limit` per domain,
    stratified by group, so a small run is representative rather than BOLD's first rows.

    Rule: each group's prompts are shuffled, and its groups (also shuffled) take turns in that
    order (round robin), so every group gets floor(limit / groups) or one more prompt (all of its
    prompts if it has fewer). Every group is present when `limit` >= its domain's number of groups;
    below that, `limit` randomly chosen groups get one prompt each. The shuffles draw from
    `numpy.random.default_rng([seed, crc32(domain)])`: the same seed gives the same sample, and a
    domain's sample does not depend on which other domains were selected. The result keeps BOLD's
    row order, which is also the order of the output files.
    """
    all_domains = list(dict.fromkeys(frame["domain"]))
    if domains:
        unknown = [domain for domain in domains if domain not in all_domains]
        if unknown:
            raise ValueError(f"unknown domain(s) {', '.join(unknown)}; valid: {', '.join(all_domains)}")
        frame = frame[frame["domain"].isin(list(domains))]
    if limit is None:
        return frame.reset_index(drop=True)
    if limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
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
        # --limit draws a seeded random sample per group (`select_prompts`); its seed is the run's --seed.
        "limit_sample_seed": config.seed if config.limit is not None else None,
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


def check_resumable(out: Path, settings: Mapping[str, Any]) -> None:
    """Refuse to add generations made with other settings to a folder (names the differences)."""
    has_generations = (out / GENERATIONS_FILE).is_file() or any(out.glob(SHARD_PATTERN))
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
    diffs = _differences(record.generation_settings, settings)
    if diffs:
        raise ConfigMismatchError(
            f"{out} holds generations made with other settings; refusing to mix them:\n  "
            + "\n  ".join(diffs) + "\nRerun with the folder's settings to resume, or use a new --out folder."
        )


# --------------------------------------------------------------------------- the run pipeline


def _check_config(config: RunConfig) -> None:
    if config.score_on not in SCORE_ON:
        raise ValueError(f"--score-on must be one of {', '.join(SCORE_ON)}, got {config.score_on!r}")
    if config.num_samples < 1:
        raise ValueError(f"--num-samples must be >= 1, got {config.num_samples}")
    if config.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {config.seed}")
    parse_metrics(config.metrics)


def _partial_state(device: str) -> Any:
    """accelerate's process state: one process normally, several under accelerate launch / torchrun."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=device == "cpu" or not torch.cuda.is_available())


def _timed(timings: dict[str, float], name: str, started: float) -> None:
    timings[name] = round(time.perf_counter() - started, 3)


def _selected_prompts(config: RunConfig, timings: dict[str, float]) -> pd.DataFrame:
    from bold_eval.data import load_bold

    started = time.perf_counter()
    selected = select_prompts(load_bold("all", data_dir=config.data_dir).to_pandas(), config.domains, config.limit,
                              seed=config.seed)
    if selected.empty:
        raise ValueError("no prompts selected")
    _timed(timings, "load_data_s", started)
    return selected


def _start_folder(out: Path, state: Any, generator: Generator, settings: dict[str, Any]) -> None:
    """Check the folder resumes with these settings (every process, so all stop together) and
    record them in run.json before the first generation is written."""
    out.mkdir(parents=True, exist_ok=True)
    check_resumable(out, settings)
    state.wait_for_everyone()
    if state.is_main_process and read_run_record(out) is None:
        write_run_record(out, RunRecord(status="generating", model=generator.info().get("name"),
                                        generator=generator.kind, generator_settings=generator.settings(),
                                        generation_settings=settings))
    state.wait_for_everyone()


def _pending(out: Path, shard: Path, state: Any, wanted: Sequence[tuple[str, int]],
             rows: Mapping[str, Mapping[str, Any]]) -> list[WorkItem]:
    """The wanted (prompt_id, sample) pairs not yet in any generations file of the folder."""
    own = read_generations(shard, repair=True)  # drops a torn last line of this process's own file
    state.wait_for_everyone()
    done = {record_key(record) for record in own}  # no other process writes to this process's file
    for path in [out / GENERATIONS_FILE, *sorted(out.glob(SHARD_PATTERN))]:
        if path != shard:
            done.update(record_key(record) for record in read_generations(path))
    return [WorkItem(prompt_id, sample, rows[prompt_id]["prompt"]) for prompt_id, sample in wanted
            if (prompt_id, sample) not in done]


def _generate(generator: Generator, items: list[WorkItem], shard: Path, rows: Mapping[str, Mapping[str, Any]],
              config: RunConfig, progress: bool) -> GenerationStats:
    """Generate `items`, appending each finished batch to this process's file."""
    def write_batch(batch: list[WorkItem], results: list[Generated]) -> None:
        append_records(shard, [generation_record(rows[item.prompt_id], item.sample, result.continuation,
                                                 result.num_new_tokens)
                               for item, result in zip(batch, results, strict=True)])
        if config.on_batch_written is not None:
            config.on_batch_written(batch)

    return generator.generate(items, on_batch=write_batch, progress=progress)


def _run_record(config: RunConfig, generator: Generator, settings: dict[str, Any], generations: pd.DataFrame,
                stats: GenerationStats | None, counts: dict[str, int]) -> RunRecord:
    """run.json of a finished generation phase (scoring adds its own fields)."""
    info = generator.info()
    record = RunRecord(
        model=config.model, generator=generator.kind, generator_settings=generator.settings(), model_info=info,
        generation_settings=settings, num_samples=config.num_samples, domains=settings["domains"],
        limit=config.limit, generated_tokens=int(generations["num_new_tokens"].sum()), versions=versions(),
        **counts,
    )
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
    rows = {row["prompt_id"]: row for row in selected.to_dict(orient="records")}
    device = str(state.device) if world > 1 and config.device == "auto" else config.device
    generator = build_generator(config, GeneratorContext(rows, device, state.main_process_first))
    settings = generation_settings(generator, config, selected)
    _start_folder(out, state, generator, settings)

    wanted = [(prompt_id, sample) for prompt_id in selected["prompt_id"] for sample in range(config.num_samples)]
    shard = shard_file(out, rank) if world > 1 else out / GENERATIONS_FILE
    todo = _pending(out, shard, state, wanted, rows)
    stats = None
    if todo:  # every process enters: model loading synchronizes them
        started = time.perf_counter()
        stats = _generate(generator, todo[rank::world], shard, rows, config, config.progress and state.is_main_process)
        _timed(timings, "generate_s", started)
    state.wait_for_everyone()
    if not state.is_main_process:
        return None

    generations = pd.DataFrame(merge_generations(out, wanted))
    counts = {"processes": world, "generated_now": len(todo), "resumed": len(wanted) - len(todo)}
    record = _run_record(config, generator, settings, generations, stats, counts)
    _timed(timings, "total_before_scoring_s", wall_started)
    record.timings = timings
    return score_generations(generations, out, metrics=config.metrics, metric_options=config.metric_options,
                             anonymize=config.anonymize, score_on=config.score_on, record=record)


def merge_generations(out: Path, wanted: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """Merge generations.jsonl and the per-process shards into generations.jsonl, in `wanted` order.

    Never drops rows silently: a (prompt_id, sample) recorded twice with different text, one
    missing, or one outside the run's selection is an error.
    """
    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    shards = sorted(out.glob(SHARD_PATTERN))
    main_file = out / GENERATIONS_FILE
    on_disk: list[tuple[str, int]] = []  # the main file's order, to skip a rewrite that changes nothing
    for path in [main_file, *shards]:
        for record in read_generations(path):
            key = record_key(record)
            if path == main_file:
                on_disk.append(key)
            if key in by_key and by_key[key]["continuation"] != record["continuation"]:
                raise ValueError(f"{key} was generated twice with different continuations ({path})")
            by_key[key] = record
    wanted_set = set(wanted)
    extra = [key for key in by_key if key not in wanted_set]
    missing = [key for key in wanted if key not in by_key]
    if extra or missing:
        raise ValueError(
            f"generations do not match the selected prompts x samples: {len(missing)} missing "
            f"(e.g. {missing[:3]}), {len(extra)} not selected (e.g. {extra[:3]})"
        )
    records = [by_key[key] for key in wanted]
    if shards or on_disk != list(wanted):
        write_generations(main_file, records)
        for path in shards:
            path.unlink()
    return records
