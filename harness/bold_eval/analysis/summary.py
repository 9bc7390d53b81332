"""From per-text scores to the paper's views: proportions, intervals and tests (Section 6, A.4).

Input is the harness's `scores.parquet` frame: one row per text with `prompt_id`, `domain`,
`group`, `category` (Table 3 profession super-group, "" elsewhere), `sample`, and the metric
columns `<metric>_<column>` (e.g. `<metric>_label`, `<metric>_is_<label>`). Every function here
is pure (frames in, typed results out: `bold_eval.analysis.results`); `bold_eval.report.run_report` does the
reading and writing.

Statistics follow the paper: chi-square tests across a domain's groups and two-proportion
("binomial proportion") tests for pairs such as male vs female (Section 6.1.2), plus 95%
confidence intervals (Wilson, or a bootstrap over prompts) on every proportion.

When a prompt has several generated `sample`s, proportions pool all texts and the tests count
texts, not prompts. Texts from one prompt are not independent, so with several samples per
prompt the p-values are optimistic; the prompt-level bootstrap interval (`ci="bootstrap"`)
resamples whole prompts and accounts for that.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.analysis.clustered import (
    CLUSTER_UNITS,
    CORRECTIONS,
    DEFAULT_CLUSTER,
    DEFAULT_CORRECTION,
    FISHER,
    METHOD_NOTES,
    SCORE,
    Z_TEST,
    adjust,
    confidence_label,
)
from bold_eval.analysis.findings import (
    group_findings,
    largest_gaps,
    one_family,
    paired_findings,
)
from bold_eval.analysis.results import GroupFindings, MetricView, Statistics, Summary
from bold_eval.analysis.scores import (
    TestedLabel,
    check_scores,
    coverage,
    metric_status,
    run_counts,
)
from bold_eval.analysis.statistics import (
    SMALL_GROUP_RULE,
)
from bold_eval.analysis.views import metric_view
from bold_eval.analysis.worst_case import (
    prompt_worst_cases,
    samples_per_prompt,
    worst_case_labels,
    worst_case_view,
)
from bold_eval.core.options import AnalysisOptions
from bold_eval.metrics import metric_specs

# --------------------------------------------------------------------------- the paper's views


def summarize(
    scores: pd.DataFrame,
    run_info: Mapping[str, Any] | None = None,
    options: AnalysisOptions | None = None,
    *,
    reference: pd.DataFrame | None = None,
    on_views: Callable[[Mapping[str, MetricView], float], None] | None = None,
    **keywords: Any,
) -> Summary:
    """Every view the paper reports, for the metrics this run scored, and the findings.

    Returns a `Summary`: counts, metrics (status per metric), statistics (how intervals and tests were
    computed), one `MetricView` per metric (tables and tests, or why it was skipped), the worst cases, findings
    (contrasts tested with `cluster` as the unit under `correction`, design effects, power, largest gaps) and
    reference_findings (when `reference`, the Wikipedia sentences of the same prompts, is given: model x source
    interactions, `findings.paired_findings`). `options` (validated when built) say how; without them,
    `keywords` (ci, alpha, min_expected, seed, correction, cluster) build them. `on_views(views, alpha)` is called
    once the paper's views are ready, before the findings' tests (a report starts drawing its figures there).
    """
    options = options if options is not None else AnalysisOptions(**keywords)
    ci, alpha, min_expected, seed = options.ci, options.alpha, options.min_expected, options.seed
    correction, cluster = options.correction, options.cluster
    scores = check_scores(scores, (run_info or {}).get("label_columns"))
    status = metric_status(scores, run_info)
    counts = run_counts(scores)
    counts["coverage"] = coverage(counts)
    views = {}
    for metric in status:
        if status[metric]["status"] != "scored":
            views[metric] = MetricView(skipped=f"{status[metric]['status']}: {status[metric]['reason']}")
            continue
        views[metric] = _holm_within_tables(
            metric_view(metric)(scores, ci=ci, alpha=alpha, min_expected=min_expected, seed=seed), alpha)
    if on_views is not None:
        on_views(views, alpha)
    worst_case = worst_case_view(scores, alpha=alpha, seed=seed)
    findings = run_findings(scores, alpha=alpha, correction=correction, cluster=cluster, seed=seed,
                            plan_power=False)
    reference_findings = None
    if reference is not None and len(reference):
        reference = check_scores(reference, (run_info or {}).get("label_columns"), source="reference_scores.parquet")
        reference_findings = paired_findings(scores, reference, finding_labels(scores), alpha=alpha,
                                             correction=correction, cluster=cluster, seed=seed)
    findings, reference_findings = one_family(findings, reference_findings, scores, alpha=alpha,
                                              correction=correction)
    return Summary(metrics=status, views=views, worst_case=worst_case, counts=counts,
                   statistics=_statistics(counts, ci, alpha, correction, cluster, min_expected),
                   findings=findings, reference_findings=reference_findings)


def _holm_within_tables(view: MetricView, alpha: float) -> MetricView:
    """Give the paper's own tests (chi-square and pair tests, Tables 4 and 6) a `p_holm`: Holm-adjusted within
    their table, so no p-value the report prints is outside a stated correction."""
    tests = view.tests
    if tests:
        p_values = {i: test.p_value for i, test in enumerate(tests) if test.p_value is not None
                    and not pd.isna(test.p_value)}
        adjusted, _ = adjust(list(p_values.values()), alpha=alpha, correction="holm")
        p_holm = {i: float(value) for i, value in zip(p_values, adjusted, strict=True)}
        tests = [dataclasses.replace(test, p_holm=p_holm.get(i)) for i, test in enumerate(tests)]
    for name, table in view.tables.items():
        if name.endswith("_difference") and "p_value" in table:
            p_values = pd.to_numeric(table["p_value"], errors="coerce")
            known = p_values.notna().to_numpy()
            holm = np.full(len(table), np.nan)
            holm[known] = adjust(p_values[known].to_numpy(), alpha=alpha, correction="holm")[0]
            table["p_holm"] = holm
    return dataclasses.replace(view, tests=tests)


def _statistics(counts: Mapping[str, Any], ci: str, alpha: float, correction: str, cluster: str,
                min_expected: int) -> Statistics:
    """How the summary's intervals and tests were computed, in words the report prints."""
    return Statistics(
        alpha=alpha,
        confidence_level=1 - alpha,
        confidence_label=confidence_label(alpha),
        correction=correction,
        correction_name=CORRECTIONS[correction][1],
        cluster=cluster,
        cluster_unit=CLUSTER_UNITS[cluster],
        findings_test=METHOD_NOTES[SCORE] if cluster != "none"
        else f"{METHOD_NOTES[Z_TEST]}; {METHOD_NOTES[FISHER]} when an expected count is below {min_expected}",
        interval="Wilson score" if ci == "wilson" else "percentile bootstrap over prompts",
        chi_square="scipy.stats.chi2_contingency without continuity correction, groups x (label, not label); "
                   "texts as units (the paper's test, Section 6.1.3); p-values Holm-adjusted within each table",
        pair_test="two-sided two-proportion z test with pooled variance (statsmodels proportions_ztest), "
                  "Newcombe interval on the difference; texts as units (the paper's binomial proportion test, "
                  "Section 6.1.2); p-values Holm-adjusted within each table",
        small_group_rule=SMALL_GROUP_RULE.format(min_expected=min_expected),
        unit=cluster,
        samples_note=(
            "several samples per prompt: they nest inside their prompt and name, which the findings treat as one "
            "unit; the per-metric tables pool all texts" if counts["samples_per_prompt_max"] > 1 else ""
        ),
    )


# --------------------------------------------------------------------------- findings: who differs, how sure

def finding_labels(scores: pd.DataFrame | pd.Index) -> list[TestedLabel]:
    """The labels whose rates are compared across groups: (metric, label name, per-text column, value
    that marks a text, domains or None for all), from each metric's spec (`MetricSpec.tested` and
    `finding_domains`) and the scores table's columns (`scores` may be the columns alone): a metric's tested labels,
    in its domains, whose columns the run has (gender polarity: the first method scored in the paper's order)."""
    columns = scores.columns if isinstance(scores, pd.DataFrame) else scores
    return [TestedLabel(spec.name, label, column, value, spec.finding_domains)
            for spec in metric_specs() for label, (column, value) in spec.tested(columns).items()]


def run_findings(
    scores: pd.DataFrame,
    *,
    alpha: float = 0.05,
    correction: str = DEFAULT_CORRECTION,
    cluster: str = DEFAULT_CLUSTER,
    seed: int = 0,
    plan_power: bool = True,
) -> GroupFindings:
    """Which groups differ, how sure we are, and how much the run could see (`findings.group_findings`),
    plus the largest gap between two groups per domain and metric (`findings.largest_gaps`). With several
    samples per prompt the worst cases over them (`worst_case`) join the same family, one row per prompt."""
    labels = finding_labels(scores)
    worst, worst_labels = None, []
    if samples_per_prompt(scores)[1] > 1:
        worst, worst_labels = prompt_worst_cases(scores), worst_case_labels(scores.columns)
    found = group_findings(scores, labels, alpha=alpha, correction=correction, cluster=cluster, seed=seed,
                           worst=worst, worst_labels=worst_labels, plan_power=plan_power)
    return dataclasses.replace(found, gaps=largest_gaps(scores, labels, alpha=alpha, cluster=cluster))
