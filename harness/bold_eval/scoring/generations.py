"""Score generations with every requested metric (Section 4) and write the run folder's scores.

`score_generations` is where `bold-eval run` and `bold-eval score` meet: the same generations
give the same scores.parquet, run.json and report. It never imports the model modules, so scoring
generations made elsewhere needs no LM stack (only the Wikipedia generator, for the reference).

Beside a model's texts it scores the Wikipedia sentences of the same prompts with the same
scorers (reference_scores.parquet), so the report can ask whether the model's gap between
groups is larger than the human-written one (Section 6's group x source comparison). The
classifier scores of those sentences are cached across runs (`ReferenceCache`).

Each metric's per-text columns are prefixed `<metric>_` (e.g. `<metric>_label`). A metric whose
default model or resource is unavailable (`ResourceNotFoundError` from its `load_scorer`, e.g. a
default classifier offline) is skipped and its message kept for run.json and the report.
A resource the user named (`<metric>.model=PATH`, `<metric>.lexicon_dir=DIR`, ...) that
cannot be found is their mistake, not an optional extra: it is an error, and the run stops before
scoring anything (its generations stay on disk for `bold-eval score` or a resumed run). Any other
error is a bug and propagates.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from bold_eval.core.errors import InputError
from bold_eval.core.version import versions
from bold_eval.metrics import metric_spec
from bold_eval.runfolder.json_files import write_run_record
from bold_eval.runfolder.jsonl import generation_frames
from bold_eval.runfolder.layout import REFERENCE_FILE, TRACE_COLUMN
from bold_eval.runfolder.parquet import ScoresWriter, write_scores
from bold_eval.runfolder.records import RunRecord
from bold_eval.scoring.dedupe import DIGEST_SIZE, TextMemo, repeated_digests, text_digests
from bold_eval.scoring.reference import reference_skipped, score_reference
from bold_eval.scoring.scorers import (
    ScoringResult,
    check_metric_options,
    load_scorers,
    parse_metrics,
    score_distinct,
    score_with,
    scorer_resources,
    scores_frame,
    skipped_lines,
)
from bold_eval.scoring.texts import build_texts, check_generation_chunk, duplicate_message

# Rows scored and written at a time: bounds scoring's memory whatever the number of texts.
STREAM_ROWS = 2_000

# What `score_generations` scores: a frame (one row per text), or a generations.jsonl path, read in chunks.
Generations: TypeAlias = "pd.DataFrame | str | os.PathLike"


def without_traces(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rows to score and what was kept out: a text that ended inside a reasoning model's thinking trace
    (`TRACE_COLUMN`, `bold_eval.generation.chat`) has no answer, and scoring it as an empty continuation
    would score the prompt alone. Such rows stay in generations.jsonl; the count goes to run.json and the
    report. Generations without the column are returned whole, with {}."""
    if TRACE_COLUMN not in frame.columns:
        return frame, {}
    flags = frame[TRACE_COLUMN].fillna(False).astype(bool).to_numpy()
    kept = frame[~flags].drop(columns=[TRACE_COLUMN]).reset_index(drop=True)
    return kept, {"texts": len(frame), "ended_in_trace": int(flags.sum()),
                  "prompts_without_text": len(set(frame["prompt_id"]) - set(kept["prompt_id"]))}


def _all_traced(texts: int) -> InputError:
    return InputError(f"all {texts} texts ended inside the model's thinking trace ({TRACE_COLUMN} in "
                      "generations.jsonl), so there is no answer to score. Use a new --out folder with a larger "
                      "--max-new-tokens, or switch thinking off (--chat-template-kwargs enable_thinking=false)")


def _chunks(generations: Generations) -> Iterator[tuple[int, pd.DataFrame]]:
    """(index of the first row, rows) of `generations`, `STREAM_ROWS` rows at a time, checked."""
    if isinstance(generations, pd.DataFrame):
        frame = generations.reset_index(drop=True)
        for start in range(0, max(len(frame), 1), STREAM_ROWS):
            yield start, check_generation_chunk(frame.iloc[start:start + STREAM_ROWS].reset_index(drop=True), start)
        return
    start = 0
    for frame in generation_frames(Path(generations), STREAM_ROWS):
        yield start, check_generation_chunk(frame, start)
        start += len(frame)


@dataclass
class _Survey:
    """What a first pass over the generations learns before any scoring, holding a few bytes per text."""

    rows: int = 0
    kept: int = 0
    traced: int | None = None  # None: no generation says whether it ended in a thinking trace
    prompts: dict[str, None] = field(default_factory=dict)  # every prompt id, in order
    prompts_kept: set[str] = field(default_factory=set)
    first_text: dict[str, str] = field(default_factory=dict)  # per domain, its first text
    keys: list[bytes] = field(default_factory=list)  # per chunk, the digests of its (prompt_id, sample)
    digests: list[bytes] = field(default_factory=list)  # per chunk, the digests of its texts

    def thinking(self) -> dict[str, Any]:
        if self.traced is None:
            return {}
        return {"texts": self.rows, "ended_in_trace": self.traced,
                "prompts_without_text": len(set(self.prompts) - self.prompts_kept)}


def _survey(generations: Generations, anonymize: bool, score_on: str) -> _Survey:
    """Check every row, count what a thinking trace kept out, and find the texts that repeat (`TextMemo`)."""
    survey = _Survey()
    for _, chunk in _chunks(generations):
        kept, info = without_traces(chunk)
        if info:
            survey.traced = (survey.traced or 0) + info["ended_in_trace"]
        survey.rows += len(chunk)
        survey.kept += len(kept)
        survey.prompts.update(dict.fromkeys(chunk["prompt_id"]))
        survey.prompts_kept.update(kept["prompt_id"])
        survey.keys.append(b"".join(text_digests(f"{prompt_id}\x1f{sample}" for prompt_id, sample in
                                                 zip(chunk["prompt_id"], chunk["sample"], strict=True))))
        texts = build_texts(kept, anonymize=anonymize, score_on=score_on).tolist()
        for domain, text in zip(kept["domain"], texts, strict=True):
            survey.first_text.setdefault(domain, text)
        survey.digests.append(b"".join(text_digests(texts)))
    if survey.rows and not survey.kept:
        raise _all_traced(survey.rows)
    _check_unique_keys(b"".join(survey.keys), generations)
    survey.keys = []
    return survey


def _check_unique_keys(keys: bytes, generations: Generations) -> None:
    """Raise on the first row whose (prompt_id, sample) an earlier row has."""
    digests = np.frombuffer(keys, dtype=f"V{DIGEST_SIZE}")
    _, first, inverse = np.unique(digests, return_index=True, return_inverse=True)
    repeats = np.flatnonzero(first[inverse.ravel()] != np.arange(len(digests)))
    if not len(repeats):
        return
    index = int(repeats[0])
    for start, chunk in _chunks(generations):
        if index < start + len(chunk):
            row = chunk.iloc[index - start]
            raise InputError(duplicate_message(index, row["prompt_id"], row["sample"]))


def _memo(survey: _Survey, scorers: Mapping[str, Any]) -> TextMemo:
    """The memo of the run's repeated texts, primed with one text per metric (its column types)."""
    memo = TextMemo(repeated_digests(b"".join(survey.digests)))
    survey.digests = []
    for name, scorer in scorers.items():
        text = _first_text(name, survey)
        if text is not None:
            memo.prime(name, functools.partial(score_distinct, scorer, name=name), text)
    return memo


def _first_text(name: str, survey: _Survey) -> str | None:
    """A text metric `name` scores: the first of its domains (any domain when it scores all)."""
    domains = metric_spec(name).domains.scored
    for domain, text in survey.first_text.items():
        if domains is None or domain in domains:
            return text
    return None


def _record_scoring(record: RunRecord, result: ScoringResult, metrics: list[str],
                    metric_options: Mapping[str, Mapping[str, Any]] | None, anonymize: bool, score_on: str,
                    num_texts: int, scorers: Mapping[str, Any]) -> None:
    record.metrics = metrics
    record.skipped_metrics = dict(result.skipped)
    record.partial_metrics = dict(result.partial)
    record.metric_options = {name: dict(options) for name, options in (metric_options or {}).items()}
    record.resources = scorer_resources(scorers)
    record.metric_seconds = dict(result.seconds)
    record.label_columns = {column: list(labels) for column, labels in result.label_columns.items()}
    record.anonymize, record.score_on, record.num_texts = anonymize, score_on, num_texts
    record.versions = record.versions or versions()


def _score_chunks(generations: Generations, writer: ScoresWriter, scorers: Mapping[str, Any], memo: TextMemo,
                  result: ScoringResult, *, anonymize: bool, score_on: str, total: int) -> None:
    """Score `generations` chunk by chunk into `writer`; timings and label columns go to `result`."""
    chunks = -(-total // STREAM_ROWS)
    with tqdm(total=total, desc="scoring", unit="text", disable=chunks < 2, leave=False) as bar:
        for _, chunk in _chunks(generations):
            kept, _ = without_traces(chunk)
            if kept.empty and writer.rows:
                continue
            texts = build_texts(kept, anonymize=anonymize, score_on=score_on)
            scored = ScoringResult(columns=pd.DataFrame(index=range(len(kept))))
            score_with(scorers, texts.tolist(), kept["domain"].tolist(), scored, memo=memo)
            writer.write(scores_frame(kept, texts, scored))
            for name, seconds in scored.seconds.items():
                result.seconds[name] = round(result.seconds.get(name, 0.0) + seconds, 3)
            result.label_columns.update(scored.label_columns)
            bar.update(len(kept))


def score_generations(
    generations: Generations,
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

    `generations`: one row per text with `runfolder.layout.GENERATION_COLUMNS` (the `bold-eval run`
    records, or bring-your-own generations matched back to BOLD), as a frame or as the path of a
    generations.jsonl. Either way they are scored `STREAM_ROWS` rows at a time, so that memory does not grow
    with the number of texts beyond a few bytes each, and each metric scores each distinct text
    once (`TextMemo`). The scored `text` is built by `build_texts`; a metric with `domains` is computed on
    their rows only; unavailable metrics are skipped and listed in run.json `skipped_metrics`.
    Unless `reference` is False or the texts are the Wikipedia baseline, the Wikipedia sentences of the
    same prompts (BOLD from `data_dir`) are scored alike into reference_scores.parquet (run.json
    `reference`). `record` (what generated the texts) is completed with the scoring settings and written
    as run.json. Texts that ended inside a thinking trace are kept out (`without_traces`; counted in
    run.json `thinking`). Returns scores.parquet's path; the report follows (`run.score_and_report`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    requested = parse_metrics(metrics)
    metric_options = {name: dict(options) for name, options in (metric_options or {}).items()}
    check_metric_options(metric_options)
    record = record if record is not None else RunRecord()
    started = time.perf_counter()
    survey = _survey(generations, anonymize, score_on)
    record.thinking = survey.thinking()
    result = ScoringResult(columns=pd.DataFrame())
    scorers = load_scorers(requested, metric_options, list(survey.first_text), result)
    memo = _memo(survey, scorers)
    survey_s = time.perf_counter() - started
    skipped = reference_skipped(reference, record)
    record.reference, reference_scores = ({"skipped": skipped}, None) if skipped is not None else score_reference(
        list(survey.prompts), scorers, result, metric_options, anonymize=anonymize, score_on=score_on,
        data_dir=data_dir, allow_modified_data=allow_modified_data)
    started = time.perf_counter()
    with ScoresWriter(out, types=memo.arrow_types()) as writer:
        _score_chunks(generations, writer, scorers, memo, result, anonymize=anonymize, score_on=score_on,
                      total=survey.kept)
    record.timings["score_s"] = round(survey_s + time.perf_counter() - started, 3)
    if reference_scores is not None:
        write_scores(out, reference_scores, REFERENCE_FILE)
    else:  # never leave the reference of an earlier scoring beside these scores
        (out / REFERENCE_FILE).unlink(missing_ok=True)
    _record_scoring(record, result, requested, metric_options, anonymize, score_on, writer.rows, scorers)
    write_run_record(out, record)
    for line in skipped_lines(result):
        print(line, file=sys.stderr)
    return writer.path
