"""The paper's view of each metric: label shares per group with intervals and its tests (Figures 3-5, Tables 4-6, 9-11)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from bold_eval.analysis.clustered import (
    MIN_EXPECTED,
)
from bold_eval.analysis.results import MetricView
from bold_eval.analysis.statistics import (
    domain_chi_squares,
    pair_test,
    pair_tests,
    proportion_table,
)
from bold_eval.analysis.table3 import (
    gender_polarity_view,
)
from bold_eval.data.bold import GENDER_PAIR, RACE_PAIR, RELIGION_PAIR
from bold_eval.metrics import metric_spec
from bold_eval.metrics.psycholinguistic import CATEGORY_COLUMNS, HEADERS
from bold_eval.metrics.spec import MetricSpec


def tested_targets(metric: str) -> tuple[str, dict[str, Any]]:
    """(scores-table column, {label name: value that marks a text}) of a metric whose tested labels
    (`MetricSpec.tested_labels`) share one column: the chi-square and pair tests of its view."""
    tested = metric_spec(metric).tested_labels
    if not isinstance(tested, Mapping):
        raise ValueError(f"{metric}'s tested labels depend on the run's columns; use MetricSpec.tested(columns)")
    columns = {column for column, _ in tested.values()}
    if len(columns) != 1:
        raise ValueError(f"{metric}'s tested labels span several columns: {sorted(columns)}")
    return next(iter(columns)), {label: value for label, (_, value) in tested.items()}


def _label_tests(scores: pd.DataFrame, metric: str, pairs: Sequence[tuple[str, str, str]], *,
                 alpha: float, min_expected: int) -> list[dict[str, Any]]:
    """A metric's tested labels: chi-square across each domain's groups, then the paper's pairs."""
    column, targets = tested_targets(metric)
    return [*domain_chi_squares(scores, column, targets, min_expected),
            *pair_tests(scores, pairs, column, targets, alpha=alpha, min_expected=min_expected)]


def sentiment_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                   min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """Figures 3-5: positive/neutral/negative shares per domain and group (VADER, Section 4.1).

    Tests: chi-square across each domain's groups for positive and for negative (Section 6.1.3),
    and male vs female two-proportion tests (Section 6.1.2).
    """
    table = proportion_table(scores, tested_targets("sentiment")[0], ci=ci, alpha=alpha, seed=seed)
    tests = _label_tests(scores, "sentiment", [GENDER_PAIR], alpha=alpha, min_expected=min_expected)
    return MetricView(tables={"sentiment": table}, tests=tests)


def toxicity_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                  min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """Figure 3 / Section 6.1.3: toxic_ratio (share of texts with any toxic label) per group."""
    column, targets = tested_targets("toxicity")
    table = proportion_table(scores, column, targets, ci=ci, alpha=alpha, seed=seed)
    table = table.drop(columns="label").rename(columns={"count": "toxic", "proportion": "toxic_ratio"})
    tests = _label_tests(scores, "toxicity", [GENDER_PAIR], alpha=alpha, min_expected=min_expected)
    return MetricView(tables={"toxic_ratio": table}, tests=tests)


def regard_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """Table 5: regard label shares for the gender and race groups (Section 4.3 limits regard to them).

    Tests: chi-square across groups for positive and negative regard, and the Table 5 pairs
    (male vs female; African vs European Americans).
    """
    column = tested_targets("regard")[0]
    data = scores[scores["domain"].isin(metric_spec("regard").domains or ()) & scores[column].notna()]
    if data.empty:
        return MetricView(skipped="no regard labels in the gender or race domains (regard is only defined there, "
                                  "Section 4.3)")
    table = proportion_table(data, column, ci=ci, alpha=alpha, seed=seed)
    tests = _label_tests(data, "regard", [GENDER_PAIR, RACE_PAIR], alpha=alpha, min_expected=min_expected)
    return MetricView(tables={"regard": table}, tests=tests)


def psycholinguistic_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                          min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """Tables 9-11 (category shares per group) and Tables 4, 6 (pair differences, with tests).

    A text is in "valence (-ve)" when its valence label is negative, in "joy" when `is_joy`
    (Section 4.4). The differences are male minus female (Table 4: American_actors minus
    American_actresses) and Christianity minus Islam (Table 6), each with a two-proportion test.
    """
    categories = {name: spec for name, spec in CATEGORY_COLUMNS.items() if spec[0] in scores.columns}
    missing = sorted(set(CATEGORY_COLUMNS) - set(categories))
    tables = []
    for name, (column, value) in categories.items():
        table = proportion_table(scores, column, {name: value}, ci=ci, alpha=alpha, seed=seed)
        tables.append(table)
    proportions = pd.concat(tables, ignore_index=True).rename(columns={"label": "category"})
    proportions = proportions.sort_values(["domain", "group"], kind="stable").reset_index(drop=True)
    tables = {"psycholinguistic": proportions}
    for table_name, pair in (("psycholinguistic_gender_difference", GENDER_PAIR),
                             ("psycholinguistic_religion_difference", RELIGION_PAIR)):
        rows = []
        for name, (column, value) in categories.items():
            result = pair_test(scores, pair, column, value, label=name, alpha=alpha, min_expected=min_expected)
            if result:
                rows.append({"category": name, "header": HEADERS[name], **result})
        if rows:
            tables[table_name] = pd.DataFrame(rows)
    notes = [f"psycholinguistic columns absent for: {', '.join(missing)}"] if missing else []
    return MetricView(tables=tables, tests=[], notes=notes)


def label_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
               min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """The view of a metric the paper does not have: each label column's shares per group with intervals
    (one table per column), chi-square across each domain's groups for every tested label, and the paper's
    pairs (male vs female, African vs European Americans, Christianity vs Islam) where the run has them."""
    data = scores if spec.domains is None else scores[scores["domain"].isin(spec.domains)]
    columns = [column for column in (*spec.labels, *spec.boolean_columns) if column in data.columns]
    if data.empty or not columns:
        return MetricView(skipped=f"no {spec.name} scores in this run's domains")
    tables = {}
    for column in dict.fromkeys(columns):
        labels = spec.labels.get(column)
        if labels is None or set(labels) == {True, False}:
            labels = {column.removeprefix(f"{spec.name}_"): True}
        name = spec.name if len(columns) == 1 else column
        tables[name] = proportion_table(data[data[column].notna()], column, labels, ci=ci, alpha=alpha, seed=seed)
    tests = []
    by_column: dict[str, dict[str, Any]] = {}
    for label, (column, value) in spec.tested(data.columns).items():
        by_column.setdefault(column, {})[label] = value
    for column, targets in by_column.items():
        tested = data[data[column].notna()]
        tests += [*domain_chi_squares(tested, column, targets, min_expected),
                  *pair_tests(tested, [GENDER_PAIR, RACE_PAIR, RELIGION_PAIR], column, targets, alpha=alpha,
                              min_expected=min_expected)]
    return MetricView(tables=tables, tests=tests)


# The paper's own views; any other metric gets `label_view` from its spec (`metric_view`).
PAPER_VIEWS: dict[str, Callable[..., MetricView]] = {
    "sentiment": sentiment_view,
    "toxicity": toxicity_view,
    "regard": regard_view,
    "psycholinguistic": psycholinguistic_view,
    "gender_polarity": gender_polarity_view,
}


def metric_view(metric: str) -> Callable[..., MetricView]:
    """The function computing metric's tables and tests: (scores, ci=, alpha=, min_expected=, seed=) -> view."""
    if metric in PAPER_VIEWS:
        return PAPER_VIEWS[metric]
    return functools.partial(label_view, metric_spec(metric))
