"""Worst cases over a prompt's k samples, per group: RealToxicityPrompts' expected maximum and probability (Gehman
et al. 2020) and their analogues for other metrics (each metric's `MetricSpec.worst_cases`).

An addition to the paper, which scores one text per prompt. Each prompt's k samples are reduced to one value
(the highest or lowest score, or whether any sample carries the harmful label), so the prompt,
not the text, is the unit; a group's value is the mean over its prompts, with the name-level interval of the
findings' test in its one-sample form (`rate_test.unit_rate_interval`: a person's or page's prompts stay together):
the binomial floor for "any of k", the score's own floor (`rate_test.score_floor`) for a highest or lowest score,
as the findings test them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import pandas as pd

from bold_eval.analysis.clustered import cluster_ids, confidence_label
from bold_eval.analysis.rate_test import BINOMIAL, SCORE, unit_rate_interval
from bold_eval.analysis.results import WorstCaseView
from bold_eval.analysis.scores import TestedLabel
from bold_eval.metrics import metric_specs
from bold_eval.metrics.spec import WorstCase

# The findings' label shape (`TestedLabel`). The value is True for an "any" worst case (the per-prompt column
# holds booleans) and None for max / min (a per-prompt mean is compared).
Label = TestedLabel

PROMPT_COLUMNS = ["prompt_id", "domain", "group", "category", "name"]


def worst_cases(columns: Sequence[str] | pd.Index) -> list[tuple[str, WorstCase, tuple[str, ...] | None]]:
    """(metric, worst case, domains) for every worst case whose column the scores table has."""
    return [(spec.name, case, spec.finding_domains) for spec in metric_specs() for case in spec.worst_cases
            if case.column in columns]


def score_bounds(column: str) -> tuple[float, float] | None:
    """The range a max / min worst case's per-prompt column can take (`WorstCase.bounds`), None for any other
    column: the findings test such a score mapped onto [0, 1] by its own range."""
    for spec in metric_specs():
        for case in spec.worst_cases:
            if case.prompt_column == column and not case.binary:
                return case.bounds
    return None


def samples_per_prompt(scores: pd.DataFrame) -> tuple[int, int]:
    """(fewest, most) texts per prompt."""
    sizes = scores.groupby("prompt_id", sort=False).size()
    return (int(sizes.min()), int(sizes.max())) if len(sizes) else (0, 0)


def prompt_worst_cases(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per prompt: its ids, `samples` (k), and `worst_<key>` per worst case (null where no sample of the
    prompt has the column, e.g. a metric outside its domains)."""
    ids = [column for column in PROMPT_COLUMNS if column in scores.columns]
    grouped = scores.groupby("prompt_id", sort=True)
    frame = grouped[ids[1:]].first()
    frame["samples"] = grouped.size()
    for _, case, _ in worst_cases(scores.columns):
        values = scores[case.column]
        if case.reduce == "any":
            present = values.notna()
            hit = values.eq(case.value) & present
            reduced = hit.groupby(scores["prompt_id"]).any().astype(object)
            reduced[~present.groupby(scores["prompt_id"]).any()] = None
            frame[case.prompt_column] = reduced.reindex(frame.index)
        else:
            numbers = pd.to_numeric(values, errors="coerce")
            reduced = numbers.groupby(scores["prompt_id"]).agg(case.reduce)
            frame[case.prompt_column] = reduced.reindex(frame.index).astype(float)
    return frame.reset_index()


def worst_case_labels(columns: Sequence[str] | pd.Index) -> list[Label]:
    """The findings' labels for the worst cases: compared across groups on the per-prompt frame."""
    return [TestedLabel(metric, f"{case.title} (worst of k)", case.prompt_column, True if case.binary else None,
                        domains) for metric, case, domains in worst_cases(columns)]


class WorstCaseSummary(TypedDict):
    """One group's (or domain's) worst case: k, prompts, names, the mean over prompts and its interval."""

    k: int
    k_min: int
    prompts: int
    names: int
    value: float
    ci_low: float
    ci_high: float


def _summary(part: pd.DataFrame, clusters: pd.Series, case: WorstCase, alpha: float) -> WorstCaseSummary:
    values = part[case.prompt_column].astype(float)
    # The name-level interval of the group's mean, the one the findings print (a score mapped by its range);
    # none for a group of one name. Its coverage by number of names: benchmarks/CALIBRATION.md.
    low, high = unit_rate_interval(values.to_numpy(), clusters[part.index].to_numpy(), alpha=alpha,
                                   bounds=(0.0, 1.0) if case.binary else case.bounds,
                                   floor=BINOMIAL if case.binary else SCORE)
    return {"k": int(part["samples"].max()), "k_min": int(part["samples"].min()), "prompts": len(part),
            "names": int(clusters[part.index].nunique()), "value": float(values.mean()), "ci_low": low,
            "ci_high": high}


def worst_case_view(scores: pd.DataFrame, *, alpha: float = 0.05, seed: int = 0) -> WorstCaseView:
    """Per domain, group and worst case: prompts, names, k, the mean over prompts and its interval.

    With one sample per prompt there is no worst case to take, and the view says so instead. (`seed` is kept
    for callers: the name-level intervals draw nothing.)
    """
    fewest, most = samples_per_prompt(scores)
    cases = worst_cases(scores.columns)
    if most < 2:
        return WorstCaseView(skipped="one sample per prompt: a worst case needs several (bold-eval run "
                                     "--num-samples k; RealToxicityPrompts uses k = 25)")
    if not cases:
        having = ", ".join(spec.display_name for spec in metric_specs() if spec.worst_cases)
        return WorstCaseView(skipped=f"no metric with a worst case ({having}) was scored")
    frame = prompt_worst_cases(scores)
    rows, domain_rows = [], []
    for metric, case, _ in cases:
        data = frame[frame[case.prompt_column].notna()]
        clusters = pd.Series(cluster_ids(data, "name"), index=data.index)
        for (domain, group), part in data.groupby(["domain", "group"], sort=True):
            rows.append({"metric": metric, "measure": case.key, "title": case.title, "domain": domain,
                         "group": group, **_summary(part, clusters, case, alpha)})
        for domain, part in data.groupby("domain", sort=True):
            domain_rows.append({"metric": metric, "measure": case.key, "title": case.title, "domain": domain,
                                "groups": int(part["group"].nunique()), **_summary(part, clusters, case, alpha)})
    table = pd.DataFrame(rows)
    notes = [f"samples per prompt vary from {fewest} to {most}: a prompt with fewer samples has a lower worst case "
             "(finish the run to compare groups on equal k)"] if fewest != most else []
    return WorstCaseView(
        tables={"worst_case": table, "worst_case_domain": pd.DataFrame(domain_rows)}, k=most, k_min=fewest,
        notes=notes,
        interval=f"{confidence_label(alpha)} intervals with the name as the unit, the one-sample form of the "
                 "findings' test (a score mapped onto [0, 1] by its range; none for a group of one name)",
        definitions={case.key: {"title": case.title, "metric": metric, "column": case.column, "reduce": case.reduce,
                                "source": case.source} for metric, case, _ in cases})
