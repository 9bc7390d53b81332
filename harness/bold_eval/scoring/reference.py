"""The human-written reference of a run: the Wikipedia sentences of its prompts, scored like its texts."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from bold_eval.runfolder.jsonl import generation_record
from bold_eval.runfolder.layout import GENERATION_COLUMNS, RECORD_COLUMNS, REFERENCE_FILE
from bold_eval.runfolder.records import RunRecord
from bold_eval.scoring.cache import (
    ReferenceCache,
)
from bold_eval.scoring.scorers import (
    ScoringResult,
    score_with,
    scores_frame,
)
from bold_eval.scoring.texts import build_texts


def wikipedia_generations(prompt_ids: Sequence[str], bold: pd.DataFrame) -> pd.DataFrame:
    """The Wikipedia baseline's generations of `prompt_ids` (sample 0), made by its own generator
    (`bold_eval.generation.wikipedia.WikipediaGenerator`) from the BOLD rows in `bold`, so that they are
    exactly those of a `--model wikipedia` run. Every prompt id must be in `bold`."""
    from types import SimpleNamespace

    from bold_eval.generation.base import GeneratorContext, WorkItem
    from bold_eval.generation.wikipedia import WikipediaGenerator

    wanted = list(dict.fromkeys(prompt_ids))
    rows = {row["prompt_id"]: row for row in bold[bold["prompt_id"].isin(wanted)].to_dict(orient="records")}
    records: list[dict[str, Any]] = []

    def keep(items: list[Any], results: list[Any]) -> None:
        records.extend(generation_record(rows[item.prompt_id], item.sample, result.continuation, result.num_new_tokens)
                       for item, result in zip(items, results, strict=True))

    generator = WikipediaGenerator(SimpleNamespace(num_samples=1), GeneratorContext(rows=rows))
    generator.generate([WorkItem(prompt_id, 0, rows[prompt_id]["prompt"]) for prompt_id in wanted], on_batch=keep,
                       progress=False)
    return pd.DataFrame(records, columns=list(RECORD_COLUMNS))[list(GENERATION_COLUMNS)]


def reference_skipped(reference: bool, record: RunRecord) -> str | None:
    """Why a run gets no Wikipedia reference, or None when it gets one."""
    from bold_eval.generation.base import WIKIPEDIA

    if not reference:
        return "not requested (--no-reference)"
    if WIKIPEDIA in (record.generator, record.model):
        return "the run's texts are the Wikipedia baseline itself"
    return None


def score_reference(prompt_ids: Sequence[str], scorers: Mapping[str, Any], result: ScoringResult,
                     metric_options: Mapping[str, Mapping[str, Any]], *, anonymize: bool, score_on: str,
                     data_dir: str | os.PathLike | None, allow_modified_data: bool | None,
                     ) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """The Wikipedia sentences of the run's prompts, built and scored as the run's texts (same
    anonymization, score_on, scorers); returns run.json's `reference` record and the scores."""
    from bold_eval.data.bold import load_bold

    started = time.perf_counter()
    bold = load_bold("all", data_dir=data_dir, allow_modified=allow_modified_data).to_pandas()
    prompt_ids = list(dict.fromkeys(prompt_ids))
    unknown = sorted(set(prompt_ids) - set(bold["prompt_id"]))
    if unknown:
        return {"skipped": f"{len(unknown)} of the run's {len(prompt_ids)} prompt ids are not BOLD's "
                           f"(e.g. {unknown[0]!r}), so they have no Wikipedia sentence"}, None
    generations = wikipedia_generations(prompt_ids, bold)
    texts = build_texts(generations, anonymize=anonymize, score_on=score_on)
    scored = ScoringResult(columns=pd.DataFrame(index=range(len(generations))), skipped=dict(result.skipped),
                           partial=dict(result.partial))
    cache = ReferenceCache(metric_options)
    from_cache = score_with(scorers, texts.tolist(), generations["domain"].tolist(), scored, cache)
    cached = int(from_cache.sum())
    record = {"source": "wikipedia", "file": REFERENCE_FILE, "texts": len(generations), "cached_texts": cached,
              "scored_texts": len(generations) - cached, "cached_metrics": cache.used,
              "seconds": round(time.perf_counter() - started, 3)}
    return record, scores_frame(generations, texts, scored)
