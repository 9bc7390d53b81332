"""`bold-eval run` and `bold-eval score`: generate (`bold_eval.generation.phase`), score, report.

`run` is the generation phase (prompts, generator, the folder's resume check, the texts, the merge of the processes'
files), then `score_and_report`: scoring (`bold_eval.scoring.generations.score_generations`) writes scores.parquet,
reference_scores.parquet and run.json, and the report (`bold_eval.report.run_report`) summary.json, tables,
figures and report.md, one unit. `score_file` brings generations made elsewhere to the same end. The folder's files
and records are defined in `bold_eval.runfolder`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bold_eval.core.devices import check_device
from bold_eval.core.errors import UsageError
from bold_eval.core.options import AnalysisOptions, ScoringOptions
from bold_eval.core.storage import check_writable_folder
from bold_eval.data.selection import select_prompts
from bold_eval.generation.base import WorkItem
from bold_eval.generation.decoding import DecodingConfig, make_decoding
from bold_eval.generation.phase import RunInterrupted, generation_phase, partial_state, timed
from bold_eval.generation.resume import ConfigMismatchError
from bold_eval.runfolder.json_files import write_run_record
from bold_eval.runfolder.layout import GENERATIONS_FILE
from bold_eval.runfolder.merge import merge_generations
from bold_eval.runfolder.records import RunRecord
from bold_eval.scoring.generations import Generations, score_generations
from bold_eval.scoring.scorers import check_metric_options, parse_metrics

# The chat protocol's entries of run.json's generator_settings (`generation.chat.ChatProtocol.settings`).
CHAT_SETTINGS = ("chat_template", "chat_instruction", "system_instruction", "think_end_token", "chat_template_kwargs")
# Re-exported: what `bold-eval run`'s callers catch and use.
__all__ = ["ConfigMismatchError", "RunConfig", "RunInterrupted", "merge_generations", "run", "score_and_report",
           "score_file", "select_prompts"]


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
    # Write the report after scoring (`--no-report`: stop at scores.parquet; `bold-eval report` writes it later).
    report: bool = True
    # The command line (`bold-eval run ...`), recorded in run.json so that messages can name it.
    command: str | None = None
    # Called after each batch is on disk (progress reporting; tests use it to interrupt a run).
    on_batch_written: Callable[[list[WorkItem]], None] | None = None

    def scoring_options(self) -> ScoringOptions:
        """How the run's texts are scored (validated when built)."""
        return ScoringOptions(metrics=self.metrics, metric_options=self.metric_options or {}, anonymize=self.anonymize,
                              score_on=self.score_on, reference=self.reference, data_dir=self.data_dir,
                              allow_modified_data=self.allow_modified_data or None)

    def analysis_options(self) -> AnalysisOptions:
        """How the run's report tests and estimates (validated when built)."""
        return AnalysisOptions(cluster=self.cluster)


# --------------------------------------------------------------------------- the run


def run(config: RunConfig) -> Path | None:
    """Generate (resuming), score and report. Returns the report's path (scores.parquet's without
    `config.report`) on process 0, None elsewhere."""
    _check_config(config)
    wall_started, timings = time.perf_counter(), dict[str, float]()
    state = partial_state(config.device)
    generated = generation_phase(config, state, timings)  # the model and the work items end with the phase
    if generated is None:
        return None  # another process than 0: process 0 scores and reports
    merged, record = generated
    timed(timings, "total_before_scoring_s", wall_started)
    record.timings = timings
    try:
        return score_and_report(merged.path, config.out, config.scoring_options(), config.analysis_options(),
                                record=record, report=config.report)
    except KeyboardInterrupt as error:
        raise RunInterrupted(f"all {merged.texts} generations are in {Path(config.out) / GENERATIONS_FILE}; "
                             "scoring was interrupted before scores.parquet was written") from error


def _check_config(config: RunConfig) -> None:
    """Every option of the run, before any work: the scoring and analysis options are validated when built."""
    config.scoring_options()
    config.analysis_options()
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
    parse_metrics(config.metrics)
    check_metric_options(config.metric_options)


def score_file(path: str | os.PathLike, out: str | os.PathLike, scoring: ScoringOptions,
               analysis: AnalysisOptions | None = None, *, from_format: str = "auto",
               domains: Sequence[str] | None = None,
               allow_partial: bool = False, model: str | None = None, command: str | None = None,
               report: bool = True, warn: Callable[[str], None] = lambda line: None) -> tuple[Path, int]:
    """`bold-eval score`: generations made elsewhere (a JSONL or parquet file, or lm-eval samples) keyed to BOLD,
    scored and reported like a run's (without `report`, scored only). `warn` gets each problem `allow_partial` let
    through. Returns the report's (or scores.parquet's) path and how many generations matched BOLD."""
    from bold_eval.data.bold import allowed_modifications
    from bold_eval.scoring.external import load_generations

    parse_metrics(scoring.metrics)  # the metrics and their options before the generations are read
    check_metric_options(scoring.metric_options)
    generations, matched, source = load_generations(
        Path(path), from_format=from_format, data_dir=scoring.data_dir, domains=domains, allow_partial=allow_partial,
        allow_modified=scoring.allow_modified_data)
    for line in matched.problems():
        warn(line)
    # generations from lm-eval, Inspect or lighteval carry how the model was asked (the chat protocol), so compare
    # can warn; an Inspect log also its decoding and seed (`generator_settings`, as `bold-eval run` records them)
    protocol = {key: source.pop(key) for key in CHAT_SETTINGS if key in source}
    settings = {**source.pop("generator_settings", {}), **protocol}
    record = RunRecord(model=model or source.get("model") or str(path),
                       generator_settings={key: value for key, value in settings.items() if value is not None},
                       generations={**matched.as_run_info(), **source},
                       modified_data=allowed_modifications(scoring.data_dir, scoring.allow_modified_data),
                       command=command)
    return score_and_report(generations, out, scoring, analysis, record=record, report=report), matched.matched_rows


def score_and_report(generations: Generations, out: str | os.PathLike, scoring: ScoringOptions | None = None,
                     analysis: AnalysisOptions | None = None, *, record: RunRecord | None = None,
                     report: bool = True) -> Path:
    """Score (`score_generations` with `scoring`), then write the report with `analysis` (`cluster` is its unit of
    independent information): where `bold-eval run` and `bold-eval score` end. The report's time joins run.json's
    timings. Returns report.md's path; without `report` (`--no-report`) scores.parquet's, and `bold-eval report`
    writes the report later."""
    scoring = scoring if scoring is not None else ScoringOptions()
    analysis = analysis if analysis is not None else AnalysisOptions()
    record = record if record is not None else RunRecord()
    scores_path = score_generations(generations, out, record=record, **scoring.keywords())
    if not report:
        return Path(scores_path)
    from bold_eval.report.run_report import write_report  # matplotlib: only once there is something to report

    started = time.perf_counter()
    report_path = write_report(Path(out), analysis)
    record.timings["report_s"] = round(time.perf_counter() - started, 3)
    write_run_record(Path(out), record)
    return Path(report_path)
