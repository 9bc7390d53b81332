"""The paper's view of each metric: its tables and tests (Figures 3-5, Tables 3-6, 9-11), by the view kind its spec
names (`MetricSpec.view`, whose `ViewHooks.tables` names the function here or in `table3.py`), so that a metric of an
existing kind needs only its spec."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from bold_eval.analysis.clustered import (
    MIN_EXPECTED,
)
from bold_eval.analysis.results import CategoryTables, LabelTables, MetricView, PaperTest, RatioTables
from bold_eval.analysis.statistics import (
    domain_chi_squares,
    pair_test,
    pair_tests,
    proportion_table,
)
from bold_eval.data.bold import PAPER_PAIRS
from bold_eval.metrics import metric_spec
from bold_eval.metrics.spec import Categories, LabelRatio, LabelShares, MetricSpec, resolve_hook


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
    domains = spec.domains
    if domains.scored is None:
        return f"no {spec.name} scores in this run's domains"
    where = f", {domains.source}" if domains.source else ""
    return (f"no {spec.display_name} labels in the {' or '.join(domains.scored)} domains ({spec.display_name} is "
            f"only defined there{where})")


def _scored_rows(spec: MetricSpec, scores: pd.DataFrame) -> pd.DataFrame:
    """The rows of the domains the metric is scored in (`Domains.scored`; None: all)."""
    return scores if spec.domains.scored is None else scores[scores["domain"].isin(spec.domains.scored)]


def label_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
               min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """`LabelShares`: each label column's shares per group with intervals (one table per column, named after the
    metric when it has one: `LabelTables`), chi-square across each domain's groups for every tested label, and the
    paper's pairs of `LabelShares.pairs` where the run has them (Figures 3-5, Table 5)."""
    kind = spec.view
    assert isinstance(kind, LabelShares)  # the kind whose `ViewHooks.tables` this is
    data = _scored_rows(spec, scores)
    columns = list(dict.fromkeys(column for column in (*spec.labels, *spec.columns.boolean)
                                 if column in data.columns))
    data = data[data[columns].notna().any(axis=1)] if columns else data
    if data.empty or not columns:
        return MetricView(skipped=_skipped(spec))
    tables = {}
    for column in columns:
        declared = spec.labels.get(column)
        labels: Mapping[str, Any] | Sequence[Any] = (
            {column.removeprefix(f"{spec.name}_"): True} if declared is None or set(declared) == {True, False}
            else declared)
        tables[LabelTables.table_name(spec.name, column, len(columns))] = proportion_table(
            data[data[column].notna()], column, labels, ci=ci, alpha=alpha, seed=seed)
    tests = label_tests(spec, data, paper_pairs(kind.pairs), alpha=alpha, min_expected=min_expected)
    return MetricView(tables=LabelTables(tables), tests=tests)


def ratio_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
               min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """`LabelRatio`: the share of texts with the one tested label per group, as `<label>_ratio` with its interval and
    the count as `<label>` (toxic_ratio, Section 6.1.3: `RatioTables`); tested as `LabelShares` are."""
    kind = spec.view
    assert isinstance(kind, LabelRatio)
    data = _scored_rows(spec, scores)
    ((label, (column, value)),) = spec.tested(data.columns).items()
    table = proportion_table(data, column, {label: value}, ci=ci, alpha=alpha, seed=seed)
    table = table.drop(columns="label").rename(columns={"count": label, "proportion": RatioTables.table_name(label)})
    tests = label_tests(spec, data, paper_pairs(kind.pairs), alpha=alpha, min_expected=min_expected)
    return MetricView(tables=RatioTables(label, table), tests=tests)


def category_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                  min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """`Categories`: each category's share per group (Tables 9-11) and, per pair difference, the share in the pair's
    first group minus the second's with a two-proportion test (Tables 4, 6): `CategoryTables`.

    A text is in a category when its column holds the category's value: "valence (-ve)" when its valence label
    is negative, "joy" when `is_joy` (Section 4.4)."""
    kind = spec.view
    assert isinstance(kind, Categories)
    categories = {name: found for name, found in kind.categories.items() if found[0] in scores.columns}
    missing = [name for name in kind.categories if name not in categories]
    proportions = pd.concat([proportion_table(scores, column, {name: value}, ci=ci, alpha=alpha, seed=seed)
                             for name, (column, value) in categories.items()], ignore_index=True)
    proportions = proportions.rename(columns={"label": "category"})
    differences = {}
    for difference in kind.differences:
        (pair,) = paper_pairs((difference.domain,))
        rows = []
        for name, (column, value) in categories.items():
            result = pair_test(scores, pair, column, value, label=name, alpha=alpha, min_expected=min_expected)
            if result:
                rows.append({"category": name, "header": spec.presentation.headers.get(name, name), **result.row()})
        if rows:
            differences[difference.key] = pd.DataFrame(rows)
    notes = [f"{spec.name} columns absent for: {', '.join(sorted(missing))}"] if missing else []
    shares = proportions.sort_values(["domain", "group"], kind="stable").reset_index(drop=True)
    return MetricView(tables=CategoryTables(spec.name, shares, differences), tests=[], notes=notes)


def metric_view(metric: str) -> Callable[..., MetricView]:
    """The function computing metric's tables and tests, its view kind's `ViewHooks.tables`: (scores, ci=, alpha=,
    min_expected=, seed=) -> view."""
    spec = metric_spec(metric)
    tables: Callable[..., MetricView] = resolve_hook(spec.view.hooks.tables)
    return functools.partial(tables, spec)
