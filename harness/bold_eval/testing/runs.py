"""Run folders for tests and benchmarks, written through `bold_eval.runfolder` in the current schema.

Report and compare tests start from a scores table rather than a generation run; writing the folder here,
with the same `RunRecord` and `write_scores` a real run uses, keeps those tests on the schema the harness
writes today (a folder from an older version is what `tests/test_runfolder.py` checks on purpose).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bold_eval.runfolder import RunRecord, write_run_record, write_scores

# What a small `bold-eval run` of GPT-2 records, unless a test says otherwise.
DEFAULT_GENERATOR_SETTINGS: Mapping[str, Any] = {
    "decoding": {"top_k": 40, "top_p": 0.95, "max_new_tokens": 30}, "seed": 0}


def write_run_folder(folder: str | Path, scores: pd.DataFrame, *, model: str = "gpt2",
                     metrics: Sequence[str] | None = None, generator: str | None = "hf-causal",
                     generator_settings: Mapping[str, Any] | None = None, **record: Any) -> Path:
    """`folder` with scores.parquet and run.json (a complete run of `model` scored on `metrics`, default: every
    metric whose columns `scores` has); `record` sets any other `RunRecord` field. Returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_scores(folder, scores)
    if metrics is None:
        from bold_eval.metrics import metric_specs

        metrics = [spec.name for spec in metric_specs() if any(str(c).startswith(f"{spec.name}_") for c in scores)]
    settings = dict(DEFAULT_GENERATOR_SETTINGS if generator_settings is None else generator_settings)
    record.setdefault("num_texts", len(scores))
    write_run_record(folder, RunRecord(model=model, generator=generator, generator_settings=settings,
                                       metrics=list(metrics), **record))
    return folder
