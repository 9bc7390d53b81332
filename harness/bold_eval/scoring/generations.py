"""Score generations with every requested metric (Section 4) and write the run folder's scores.

`score_generations` is where `bold-eval run` and `bold-eval score` meet: the same generations
give the same scores.parquet, run.json and report. It never imports the model modules, so scoring
generations made elsewhere needs no LM stack (only the Wikipedia generator, for the reference).

Beside a model's texts it scores the Wikipedia sentences of the same prompts with the same
scorers (reference_scores.parquet), so the report can ask whether the model's gap between
groups is larger than the human-written one (Section 6's group x source comparison). The
classifier scores of those sentences are cached across runs (`ReferenceCache`).

Each metric's per-text columns are prefixed `<metric>_` (e.g. `sentiment_label`). A metric whose
default model or resource is unavailable (`ResourceNotFoundError` from its `load_scorer`, e.g. the
default toxicity classifier offline) is skipped and its message kept for run.json and the report.
A resource the user named (`toxicity.model=PATH`, `psycholinguistic.lexicon_dir=DIR`, ...) that
cannot be found is their mistake, not an optional extra: it is an error, and the run stops before
scoring anything (its generations stay on disk for `bold-eval score` or a resumed run). Any other
error is a bug and propagates.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bold_eval.core.errors import InputError
from bold_eval.core.version import versions
from bold_eval.runfolder import (
    REFERENCE_FILE,
    TRACE_COLUMN,
    RunRecord,
    write_run_record,
    write_scores,
)
from bold_eval.scoring.reference import _reference_skipped, _score_reference
from bold_eval.scoring.scorers import (
    ScoringResult,
    _scores_frame,
    check_metric_options,
    load_scorers,
    parse_metrics,
    score_with,
)
from bold_eval.scoring.texts import build_texts, check_generations

# --------------------------------------------------------------------------- the reference's cache


# --------------------------------------------------------------------------- generations -> texts -> scores


def without_traces(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rows to score and what was kept out: a text that ended inside a reasoning model's thinking trace
    (`TRACE_COLUMN`, `bold_eval.generation.chat`) has no answer, and scoring it as an empty continuation
    would score the prompt alone. Such rows stay in generations.jsonl; the count goes to run.json and the
    report. Generations without the column are returned whole, with {}."""
    if TRACE_COLUMN not in frame.columns:
        return frame, {}
    flags = frame[TRACE_COLUMN].fillna(False).astype(bool).to_numpy()
    kept = frame[~flags].drop(columns=[TRACE_COLUMN]).reset_index(drop=True)
    info = {"texts": len(frame), "ended_in_trace": int(flags.sum()),
            "prompts_without_text": len(set(frame["prompt_id"]) - set(kept["prompt_id"]))}
    if kept.empty:
        raise InputError(f"all {len(frame)} texts ended inside the model's thinking trace ({TRACE_COLUMN} in "
                         "generations.jsonl), so there is no answer to score. Use a new --out folder with a larger "
                         "--max-new-tokens, or switch thinking off (--chat-template-kwargs enable_thinking=false)")
    return kept, info



def _record_scoring(record: RunRecord, result: ScoringResult, metrics: list[str],
                    metric_options: Mapping[str, Mapping[str, Any]] | None, anonymize: bool, score_on: str,
                    num_texts: int) -> None:
    record.metrics = metrics
    record.skipped_metrics = dict(result.skipped)
    record.partial_metrics = dict(result.partial)
    record.metric_options = {name: dict(options) for name, options in (metric_options or {}).items()}
    record.metric_seconds = dict(result.seconds)
    record.label_columns = {column: list(labels) for column, labels in result.label_columns.items()}
    record.anonymize, record.score_on, record.num_texts = anonymize, score_on, num_texts
    record.versions = record.versions or versions()


def score_generations(
    generations: pd.DataFrame,
    out_dir: str | os.PathLike,
    *,
    metrics: Sequence[str] | str | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    anonymize: bool = True,
    score_on: str = "full",
    record: RunRecord | None = None,
    reference: bool = True,
    data_dir: str | os.PathLike | None = None,
    allow_modified_data: bool | None = None,
) -> Path:
    """Score generations and write scores.parquet, reference_scores.parquet and run.json.

    `generations`: one row per text with `runfolder.GENERATION_COLUMNS` (the `bold-eval run`
    records, or bring-your-own generations matched back to BOLD). The scored `text` is built by
    `build_texts`; regard is computed on gender and race rows only (Section 4.3); unavailable
    metrics are skipped and listed in run.json `skipped_metrics`. Unless `reference` is False or
    the texts are the Wikipedia baseline, the Wikipedia sentences of the same prompts (BOLD from
    `data_dir`) are scored alike into reference_scores.parquet (run.json `reference`). `record`
    (what generated the texts) is completed with the scoring settings and written as run.json.
    Texts that ended inside a thinking trace are kept out (`without_traces`; counted in run.json `thinking`).
    Returns scores.parquet's path; the report is the next stage (`bold_eval.run.score_and_report`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frame, thinking = without_traces(check_generations(generations))
    requested = parse_metrics(metrics)
    metric_options = {name: dict(options) for name, options in (metric_options or {}).items()}
    check_metric_options(metric_options)
    record = record if record is not None else RunRecord()
    record.thinking = thinking

    started = time.perf_counter()
    texts = build_texts(frame, anonymize=anonymize, score_on=score_on)
    result = ScoringResult(columns=pd.DataFrame(index=range(len(frame))))
    scorers = load_scorers(requested, metric_options, frame["domain"].tolist(), result)
    score_with(scorers, texts.tolist(), frame["domain"].tolist(), result)
    record.timings["score_s"] = round(time.perf_counter() - started, 3)
    skipped = _reference_skipped(reference, record)
    reference_scores = None
    if skipped is None:
        record.reference, reference_scores = _score_reference(
            frame, scorers, result, metric_options, anonymize=anonymize, score_on=score_on, data_dir=data_dir,
            allow_modified_data=allow_modified_data)
    else:
        record.reference = {"skipped": skipped}
    scores_path = write_scores(out, _scores_frame(frame, texts, result))
    if reference_scores is not None:
        write_scores(out, reference_scores, REFERENCE_FILE)
    else:  # never leave the reference of an earlier scoring beside these scores
        (out / REFERENCE_FILE).unlink(missing_ok=True)
    _record_scoring(record, result, requested, metric_options, anonymize, score_on, len(frame))
    write_run_record(out, record)
    for metric, message in {**result.skipped, **result.partial}.items():
        print(f"skipped metric {metric}: {message.splitlines()[0]}", file=sys.stderr)
    return scores_path
