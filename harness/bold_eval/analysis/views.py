"""The paper's view of each metric: its tables and tests (Figures 3-5, Tables 3-6, 9-11), by the view kind its spec
names (`MetricSpec.view`), so that a metric of an existing kind needs only its spec."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from bold_eval.analysis.clustered import (
    MIN_EXPECTED,
)
from bold_eval.analysis.results import MetricView, PaperTest
from bold_eval.analysis.statistics import (
    domain_chi_squares,
    pair_test,
    pair_tests,
    proportion_table,
)
from bold_eval.analysis.table3 import (
    gender_ratio_view,
)
from bold_eval.data.bold import PAPER_PAIRS
from bold_eval.metrics import metric_spec
from bold_eval.metrics.spec import MetricSpec


def paper_pairs(domains: tuple[str, ...] | None) -> list[tuple[str, str, str]]:
    """The paper's pairs (male vs female, African vs European Americans, Christianity vs Islam) of `domains`,
    in the paper's order; None: all of them."""
    return [pair for pair in PAPER_PAIRS if domains is None or pair[0] in domains]


def label_tests(spec: MetricSpec, data: pd.DataFrame, pairs: list[tuple[str, str, str]], *, alpha: float,
                min_expected: int) -> list[PaperTest]:
    """For every tested label (`MetricSpec.tested`): chi-square across each domain's groups, then the pairs."""
    by_column: dict[str, dict[str, Any]] = {}
    for label, (column, value) in spec.tested(data.columns).items():
        by_column.setdefault(column, {})[label] = value
    tests: list[PaperTest] = []
    for column, targets in by_column.items():
        tested = data[data[column].notna()]
        tests += [*domain_chi_squares(tested, column, targets, min_expected),
                  *pair_tests(tested, pairs, column, targets, alpha=alpha, min_expected=min_expected)]
    return tests


def _skipped(spec: MetricSpec) -> str:
    """Why a view has no texts: the metric is only defined in some domains, or none of this run's was scored."""
    if spec.domains is None:
        return f"no {spec.name} scores in this run's domains"
    where = f", {spec.domains_source}" if spec.domains_source else ""
    return (f"no {spec.display_name} labels in the {' or '.join(spec.domains)} domains ({spec.display_name} is only "
            f"defined there{where})")


def label_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
               min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """View kind "labels" (`LabelShares`): each label column's shares per group with intervals (one table per
    column, named after the metric when it has one), chi-square across each domain's groups for every tested label,
    and the paper's pairs of `LabelShares.pairs` where the run has them (Figures 3-5, Table 5)."""
    data = scores if spec.domains is None else scores[scores["domain"].isin(spec.domains)]
    columns = list(dict.fromkeys(column for column in (*spec.labels, *spec.boolean_columns) if column in data.columns))
    data = data[data[columns].notna().any(axis=1)] if columns else data
    if data.empty or not columns:
        return MetricView(skipped=_skipped(spec))
    tables = {}
    for column in columns:
        labels = spec.labels.get(column)
        if labels is None or set(labels) == {True, False}:
            labels = {column.removeprefix(f"{spec.name}_"): True}
        name = spec.name if len(columns) == 1 else column
        tables[name] = proportion_table(data[data[column].notna()], column, labels, ci=ci, alpha=alpha, seed=seed)
    tests = label_tests(spec, data, paper_pairs(spec.view.pairs), alpha=alpha, min_expected=min_expected)
    return MetricView(tables=tables, tests=tests)


def ratio_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
               min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """View kind "ratio" (`LabelRatio`): the share of texts with the one tested label per group, as `<label>_ratio`
    with its interval and the count as `<label>` (toxic_ratio, Section 6.1.3); tested as "labels" are."""
    data = scores if spec.domains is None else scores[scores["domain"].isin(spec.domains)]
    ((label, (column, value)),) = spec.tested(data.columns).items()
    table = proportion_table(data, column, {label: value}, ci=ci, alpha=alpha, seed=seed)
    table = table.drop(columns="label").rename(columns={"count": label, "proportion": f"{label}_ratio"})
    tests = label_tests(spec, data, paper_pairs(spec.view.pairs), alpha=alpha, min_expected=min_expected)
    return MetricView(tables={f"{label}_ratio": table}, tests=tests)


def category_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                  min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """View kind "categories" (`Categories`): each category's share per group (Tables 9-11) and, per pair difference,
    the share in the pair's first group minus the second's with a two-proportion test (Tables 4, 6).

    A text is in a category when its column holds the category's value: "valence (-ve)" when its valence label
    is negative, "joy" when `is_joy` (Section 4.4)."""
    kind = spec.view
    categories = {name: found for name, found in kind.categories.items() if found[0] in scores.columns}
    missing = [name for name in kind.categories if name not in categories]
    proportions = pd.concat([proportion_table(scores, column, {name: value}, ci=ci, alpha=alpha, seed=seed)
                             for name, (column, value) in categories.items()], ignore_index=True)
    proportions = proportions.rename(columns={"label": "category"})
    tables = {spec.name: proportions.sort_values(["domain", "group"], kind="stable").reset_index(drop=True)}
    for difference in kind.differences:
        (pair,) = paper_pairs((difference.domain,))
        rows = []
        for name, (column, value) in categories.items():
            result = pair_test(scores, pair, column, value, label=name, alpha=alpha, min_expected=min_expected)
            if result:
                rows.append({"category": name, "header": spec.headers.get(name, name), **result.row()})
        if rows:
            tables[f"{spec.name}_{difference.key}_difference"] = pd.DataFrame(rows)
    notes = [f"{spec.name} columns absent for: {', '.join(sorted(missing))}"] if missing else []
    return MetricView(tables=tables, tests=[], notes=notes)


# View kind (`MetricSpec.view.kind`) -> (spec, scores, ci=, alpha=, min_expected=, seed=) -> MetricView.
VIEW_KINDS: Mapping[str, Callable[..., MetricView]] = {
    "labels": label_view,
    "ratio": ratio_view,
    "categories": category_view,
    "gender_ratio": gender_ratio_view,
}


def metric_view(metric: str) -> Callable[..., MetricView]:
    """The function computing metric's tables and tests: (scores, ci=, alpha=, min_expected=, seed=) -> view."""
    spec = metric_spec(metric)
    return functools.partial(VIEW_KINDS[spec.view.kind], spec)
