"""BOLD as lighteval custom tasks: `lighteval accelerate MODEL_ARGS "bold_eval|0" --custom-tasks
bold_eval.lighteval_tasks`.

One task per domain (`bold_eval:gender`, `bold_eval:race`, `bold_eval:profession`, `bold_eval:religious_ideology`,
`bold_eval:political_ideology`; `bold_eval` runs all five, lighteval's task superset; lighteval's own `bold:*` tasks
are HELM's copy scored by perplexity), one document per BOLD prompt, fed raw (the `none` protocol of `bold-eval
run`; a model under lighteval's chat template gets the prompt as a user message, which `bold-eval score` records
as such). Generation: at most 30 new tokens and the shared stopping rule (a line
break: `stop_sequence`, and `decoding.finish_continuation` on what comes back), as `bold-eval run`; the sampling
parameters are the model's (`generation_parameters={temperature:1.0,top_k:40,top_p:0.95}` in the model arguments
gives the paper's GPT-2 setting, appendix A.2.2; lighteval's default is greedy).

The metric `bold` scores each continuation with every metric of `bold-eval run` (`scoring.indicators`: the text
`bold-eval run` scores, each tested label a 0/1 value) and reports, per label, the rate over all documents
(`sentiment_negative`), each group's rate (`sentiment_negative:American_actors`) and standard errors clustered by
name (`..._stderr`; lighteval's own bootstrap treats documents as independent and skips metrics that report
groups). A metric whose resource is missing offline is skipped with `bold-eval run`'s message and its rates are
NaN. The documents come from `$BOLD_DATASET` (a folder written by `bold-eval dataset export` or a Hub repo), else
from an export of the BOLD files (`$BOLD_DATA_DIR`, else the pinned upstream) made once into bold-eval's cache.

`bold-eval score OUTPUT_DIR/details --out DIR` reads the details files back (`scoring.lighteval_details`) for the
full report, compare and leaderboard.
"""

from __future__ import annotations

import math
import os
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from lighteval.metrics.metrics_sample import SampleLevelComputation
from lighteval.metrics.utils.metric_utils import SampleLevelMetricGrouping
from lighteval.models.model_output import ModelResponse
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc, SamplingMethod

from bold_eval.core.options import DEFAULT_MAX_NEW_TOKENS
from bold_eval.core.resources import cache_dir
from bold_eval.data.bold import DOMAINS
from bold_eval.generation.decoding import finish_continuation, make_decoding
from bold_eval.metrics import metric_names, metric_spec
from bold_eval.runfolder.layout import BOLD_COLUMNS
from bold_eval.scoring.indicators import TextScorer, metric_indicators

# What each document carries (BOLD's columns), for the metric and for `bold-eval score`.
BOLD_FIELDS = ("prompt_id", *BOLD_COLUMNS)
DECODING = make_decoding()


def declared_keys(metrics: Sequence[str] | None = None) -> list[str]:
    """Every indicator the metrics can give (lighteval needs the metric names before any scorer loads); one a
    scorer does not give (a resource missing offline) is NaN."""
    keys: list[str] = []
    for name in metrics or metric_names():
        spec = metric_spec(name)
        columns = set(spec.labels) | set(spec.columns.boolean)
        if isinstance(spec.tested_labels, Mapping):
            columns |= {column for column, _ in spec.tested_labels.values()}
        keys.extend(indicator.key for indicator in metric_indicators(name, sorted(columns)))
    return keys


@lru_cache(maxsize=1)
def text_scorer() -> TextScorer:
    """Every metric's scorer, loaded at the first document; skipped metrics are reported as `bold-eval run` does."""
    scorer = TextScorer()
    for line in scorer.skipped_lines():
        print(line, file=sys.stderr)
    return scorer


class BoldIndicators(SampleLevelComputation):
    """A document's indicators, each with its group and name: {key: {"group", "name", "value": 0/1 or NaN}} (a
    mapping, so that lighteval's details parquet stores it as a struct)."""

    def compute(self, doc: Doc, model_response: ModelResponse, **kwargs: Any) -> dict[str, Any]:
        fields = doc.specific or {}
        texts = model_response.text_post_processed or model_response.text
        continuation = finish_continuation(texts[0] if texts else "", DECODING)
        frame = pd.DataFrame([{**{key: fields[key] for key in BOLD_FIELDS}, "continuation": continuation}])
        (values,) = text_scorer().score(frame)
        return {key: {"group": fields["group"], "name": fields["name"], "value": values.get(key, math.nan)}
                for key in KEYS}


class GroupRates:
    """The corpus aggregation of one indicator: the rate over all documents and per group, each with a standard
    error clustered by name (within the group)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __call__(self, items: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        kept = [(item["group"], item["name"], float(item["value"])) for item in items
                if not math.isnan(float(item["value"]))]
        results = {self.key: _mean(kept), f"{self.key}_stderr": clustered_stderr(kept)}
        by_group: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
        for item in kept:
            by_group[item[0]].append(item)
        for group, part in by_group.items():
            results[f"{self.key}:{group}"] = _mean(part)
            results[f"{self.key}:{group}_stderr"] = clustered_stderr(part)
        return results


def _mean(items: Sequence[tuple[str, str, float]]) -> float:
    return float(np.mean([value for _, _, value in items])) if items else math.nan


def clustered_stderr(items: Sequence[tuple[str, str, float]]) -> float:
    """The standard error of a mean with (group, name) as the cluster: sqrt(G / (G - 1) * sum over clusters of
    (sum of residuals)^2) / n, the cluster-robust (CR1) standard error of Inspect's `stderr(cluster=)` too."""
    if not items:
        return math.nan
    values = np.array([value for _, _, value in items])
    residuals = pd.Series(values - values.mean()).groupby([f"{group}/{name}" for group, name, _ in items]).sum()
    clusters = len(residuals)
    if clusters < 2:
        return 0.0
    return float(np.sqrt(clusters / (clusters - 1) * float((residuals ** 2).sum())) / len(values))


KEYS = declared_keys()
BOLD_METRIC = SampleLevelMetricGrouping(
    metric_name=KEYS,
    # every label is a rate of a harmful or skewed outcome except the positive ones (lower is better otherwise)
    higher_is_better={key: "positive" in key or key.endswith("_joy") for key in KEYS},
    category=SamplingMethod.GENERATIVE,
    sample_level_fn=BoldIndicators(),
    corpus_level_fn={key: GroupRates(key) for key in KEYS},
)


def bold_prompt(line: Mapping[str, Any], task_name: str) -> Doc:
    """One BOLD prompt as a lighteval document: the prompt is the whole query; the Wikipedia sentence it was cut
    from is kept as the (unscored) reference."""
    return Doc(task_name=task_name, query=line["prompt"], choices=[line["wikipedia"]], gold_index=0,
               specific={key: line[key] for key in BOLD_FIELDS})


def dataset_source() -> str:
    """`$BOLD_DATASET`, else bold-eval's export of the BOLD files in its cache (written once)."""
    source = os.environ.get("BOLD_DATASET")
    if source:
        return source
    folder = cache_dir() / "lighteval" / "bold"
    if not (folder / "README.md").is_file():
        from bold_eval.data.export import export_dataset

        export_dataset(folder)
    return str(Path(folder))


TASKS_TABLE = [
    LightevalTaskConfig(
        name=f"bold_eval:{domain}",
        prompt_function=bold_prompt,
        hf_repo=dataset_source(),
        hf_subset=domain,
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        few_shots_split=None,
        few_shots_select=None,
        generation_size=DEFAULT_MAX_NEW_TOKENS,
        stop_sequence=["\n"],
        metrics=[BOLD_METRIC],
        version=1,
    )
    for domain in DOMAINS
]
