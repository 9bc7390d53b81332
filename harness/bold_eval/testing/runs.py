"""Run folders for tests and benchmarks, written through `bold_eval.runfolder` in the current schema.

Report and compare tests start from a scores table rather than a generation run; writing the folder here,
with the same `RunRecord` and `write_scores` a real run uses, keeps those tests on the schema the harness
writes today (a folder from an older version is what `tests/core/test_runfolder.py` checks on purpose).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.runfolder.json_files import write_run_record
from bold_eval.runfolder.layout import REFERENCE_FILE
from bold_eval.runfolder.parquet import write_scores
from bold_eval.runfolder.records import RunRecord

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


# Strings that would run if a page ever treated data as markup (report.html and leaderboard tests).
HOSTILE_TEXTS = (
    '</script><script>window.__pwned = "script"</script>',
    '<img src="x" onerror="window.__pwned = \'onerror\'">',
    '<a href="javascript:window.__pwned=\'link\'">click</a>',
    '"}); window.__pwned = "json"; //',
    "\u2028</SCRIPT ><svg onload=\"window.__pwned='svg'\">",
)
RACE_GROUPS = ("African_Americans", "Asian_Americans", "European_Americans", "Hispanic_and_Latino_Americans")


def planted_runs(folder: str | Path, models: Mapping[str, Mapping[str, float]], *, names: int = 30,
                 prompts: int = 3, seed: int = 0, hostile: bool = False, categories: bool = False) -> dict[str, Path]:
    """Run folders on the same race prompts: "wikipedia" (the Wikipedia sentences as a run of their own) and one
    per model of `models`, each scored on sentiment. Each name has a Wikipedia rate of negative sentiment (Beta,
    mean 0.15) and positive (mean 0.3); a model's negative rate is Wikipedia's plus `models[m]["shift"]` for every
    name, plus `models[m][group]` more in that group (a planted interaction). Every model run carries the
    Wikipedia scores of its prompts as its reference. `hostile` puts `HOSTILE_TEXTS` into continuations, a
    prompt and a name; `categories` puts the first two groups in super-group "first_two" and the others in
    "last_two" (as profession's super-groups). Returns {run: folder}."""
    folder = Path(folder)
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(RACE_GROUPS)), names)
    people = [f"Person_{i}" for i in range(len(groups))]
    if hostile:
        people[1] = HOSTILE_TEXTS[1]
    base_negative, base_positive = rng.beta(1.5, 8.5, len(groups)), rng.beta(3.0, 7.0, len(groups))
    rows = np.repeat(np.arange(len(groups)), prompts)
    ids = [f"race/{i}/{j}" for i in range(len(groups)) for j in range(prompts)]
    prompt_texts = [f"{people[i]} was" for i in rows]
    if hostile:
        prompt_texts[0] = HOSTILE_TEXTS[3] + " was"

    def scores(negative: np.ndarray, continuations: list[str]) -> pd.DataFrame:
        draw = rng.random(len(rows))
        label = np.where(draw < negative[rows], "negative",
                         np.where(draw > 1 - base_positive[rows], "positive", "neutral"))
        compound = np.where(label == "negative", -0.7, np.where(label == "positive", 0.7, 0.0))
        return pd.DataFrame({"prompt_id": ids, "domain": "race", "group": [RACE_GROUPS[g] for g in groups[rows]],
                             "category": [("first_two" if g < 2 else "last_two") if categories else ""
                                          for g in groups[rows]], "name": [people[i] for i in rows],
                                          "prompt": prompt_texts, "sample": 0,
                             "continuation": continuations,
                             "text": [f"{p} {c}" for p, c in zip(prompt_texts, continuations, strict=True)],
                             "sentiment_label": label,
                             "sentiment_compound": np.clip(compound + rng.normal(0, 0.05, len(rows)), -1, 1)})

    wiki_texts = [f"a sentence from Wikipedia number {k}." for k in range(len(rows))]
    wikipedia = scores(base_negative, wiki_texts)
    runs = {"wikipedia": write_run_folder(folder / "wikipedia", wikipedia, model="wikipedia", generator="wikipedia",
                                          generator_settings={})}
    for model, effects in models.items():
        negative = base_negative + effects.get("shift", 0.0)
        for g, group in enumerate(RACE_GROUPS):
            negative = negative + np.where(groups == g, effects.get(group, 0.0), 0.0)
        texts = [f"a text by {model} number {k}." for k in range(len(rows))]
        if hostile:
            texts[: len(HOSTILE_TEXTS)] = HOSTILE_TEXTS
        path = write_run_folder(folder / model.replace("/", "_").replace("<", "_").replace(">", "_")[:40],
                                scores(np.clip(negative, 0, 1), texts), model=model)
        write_scores(path, wikipedia, REFERENCE_FILE)
        runs[model] = path
    return runs
