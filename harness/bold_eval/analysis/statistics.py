"""The paper's text-level statistics (Section 6.1): proportions with intervals, chi-square and two-proportion tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import bootstrap, chi2_contingency
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint, proportions_ztest

from bold_eval.analysis.results import ChiSquareTest, PairTest, TwoProportionTest
from bold_eval.analysis.scores import (
    label_sets,
)
from bold_eval.core.options import MIN_EXPECTED  # noqa: F401 (re-exported) Cochran's rule: every expected count >= 5

SMALL_GROUP_RULE = (
    "a group is too small for the chi-square / z approximation when any of its expected counts "
    "under the null hypothesis is below {min_expected} (Cochran's rule); tests involving such a "
    "group are flagged reliable=false"
)


def wilson_interval(count: Any, total: Any, *, alpha: float = 0.05) -> tuple[Any, Any]:
    """Wilson score interval for count/total (arrays allowed); NaN where total is 0."""
    count = np.asarray(count, dtype=float)
    total = np.asarray(total, dtype=float)
    safe_total = np.where(total > 0, total, 1.0)
    low, high = proportion_confint(count, safe_total, alpha=alpha, method="wilson")
    low = np.where(total > 0, low, np.nan)
    high = np.where(total > 0, high, np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def cluster_bootstrap_interval(
    hits: pd.Series,
    clusters: pd.Series,
    *,
    alpha: float = 0.05,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a proportion, resampling whole clusters (prompts).

    Resampling prompts rather than texts keeps the several samples of one prompt together, so
    the interval is honest when a prompt was generated more than once.
    """
    per_cluster = (
        pd.DataFrame({"hit": hits.astype(float).to_numpy(), "cluster": clusters.to_numpy()})
        .groupby("cluster", sort=False)["hit"]
        .agg(["sum", "count"])
    )
    if len(per_cluster) < 2:
        return float("nan"), float("nan")

    def pooled(hit_sum: np.ndarray, count: np.ndarray, axis: int = -1) -> np.ndarray:
        return hit_sum.sum(axis=axis) / count.sum(axis=axis)

    result = bootstrap(
        (per_cluster["sum"].to_numpy(), per_cluster["count"].to_numpy()),
        pooled,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=1 - alpha,
        method="percentile",
        batch=500,
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _contingency_table(frame: pd.DataFrame, column: str, labels: Sequence[Any] | None, target: Any,
                       group_column: str) -> pd.DataFrame:
    """Groups x (target, not target), or groups x labels; null labels and empty columns left out."""
    data = frame[frame[column].notna()]
    values = data[column].eq(target) if target is not None else data[column]
    observed = _crosstab(data[group_column], values)
    if target is not None:
        observed = observed.reindex(columns=[True, False], fill_value=0)
        observed.columns = [str(target), f"not {target}"]
    elif labels is not None:
        observed = observed.reindex(columns=list(labels), fill_value=0)
    return observed.loc[:, observed.sum(axis=0) > 0]


def _crosstab(rows: pd.Series, columns: pd.Series) -> pd.DataFrame:
    """`pd.crosstab(rows, columns)` by factorize and bincount: the counts of each pair of values, both sorted, rows
    and columns that only a null fills left out."""
    row_codes, row_values = pd.factorize(rows, sort=True)
    column_codes, column_values = pd.factorize(columns, sort=True)
    kept = (row_codes >= 0) & (column_codes >= 0)
    cells = np.bincount(row_codes[kept] * len(column_values) + column_codes[kept],
                        minlength=len(row_values) * len(column_values)).reshape(len(row_values), len(column_values))
    filled_rows, filled_columns = cells.sum(axis=1) > 0, cells.sum(axis=0) > 0
    return pd.DataFrame(cells[filled_rows][:, filled_columns],
                        index=pd.Index(row_values[filled_rows], name=rows.name),
                        columns=pd.Index(column_values[filled_columns], name=columns.name))


def chi_square_across_groups(
    frame: pd.DataFrame,
    column: str,
    labels: Sequence[Any] | None = None,
    *,
    target: Any = None,
    label: str | None = None,
    group_column: str = "group",
    min_expected: int = MIN_EXPECTED,
    domain: str = "",
) -> ChiSquareTest:
    """Chi-square test of independence between group and label (Sections 6.1.3, 6.2).

    With `target`, the table is group x (target, not target): "is the proportion of negative
    labels the same in every group". Without it, group x every label. Texts with a null
    label are left out; labels that never occur are dropped (their expected count is 0).
    No continuity correction, so with two groups the statistic equals the squared z of
    `two_proportion_test`. Groups with an expected count below `min_expected` are listed in
    `small_groups` and the result is flagged `reliable: False`. `label` names the test in the
    result (default: the target as text), `domain` the domain the texts are from.
    """
    observed = _contingency_table(frame, column, labels, target, group_column)
    untested = ChiSquareTest(domain=domain, column=column,
                             label=str(target) if label is None and target is not None else label,
                             groups=[str(group) for group in observed.index], n=int(observed.to_numpy().sum()),
                             rule=SMALL_GROUP_RULE.format(min_expected=min_expected))
    if observed.shape[0] < 2:
        return dataclasses.replace(untested, note=f"needs at least 2 groups with texts, found {observed.shape[0]}")
    if observed.shape[1] < 2:
        return dataclasses.replace(untested, note="every text has the same label; the test is undefined")
    test = chi2_contingency(observed.to_numpy(), correction=False)
    expected = pd.DataFrame(test.expected_freq, index=observed.index, columns=observed.columns)
    small = expected.index[(expected < min_expected).any(axis=1)]
    return dataclasses.replace(
        untested,
        statistic=float(test.statistic),
        dof=int(test.dof),
        p_value=float(test.pvalue),
        min_expected=float(expected.to_numpy().min()),
        small_groups=[str(group) for group in small],
        reliable=len(small) == 0,
        note=f"expected count < {min_expected} in: {', '.join(map(str, small))}" if len(small) else "",
    )


def two_proportion_test(
    count_a: int,
    total_a: int,
    count_b: int,
    total_b: int,
    *,
    alpha: float = 0.05,
    min_expected: int = MIN_EXPECTED,
) -> TwoProportionTest:
    """Two-sided two-proportion z test (pooled variance), the paper's "binomial proportion test".

    Returns both proportions, the difference a - b with its Newcombe (Wilson-based) interval,
    z and p. Flags the pair as unreliable when an expected count under the pooled proportion
    is below `min_expected` (same rule as the chi-square test).
    """
    for name, value in (("total_a", total_a), ("total_b", total_b)):
        if value <= 0:
            raise ValueError(f"{name} must be positive to compare proportions, got {value}")
    for name, count, total in (("count_a", count_a, total_a), ("count_b", count_b, total_b)):
        if not 0 <= count <= total:
            raise ValueError(f"{name}={count} must lie between 0 and its total {total}")
    proportion_a, proportion_b = count_a / total_a, count_b / total_b
    pooled = (count_a + count_b) / (total_a + total_b)
    low, high = confint_proportions_2indep(
        count_a, total_a, count_b, total_b, method="newcomb", compare="diff", alpha=alpha
    )
    untested = TwoProportionTest(count_a=int(count_a), total_a=int(total_a), proportion_a=proportion_a,
                                 count_b=int(count_b), total_b=int(total_b), proportion_b=proportion_b,
                                 difference=proportion_a - proportion_b, ci_low=float(low), ci_high=float(high))
    if pooled in (0.0, 1.0):
        return dataclasses.replace(
            untested, note="no variation: every text in both groups has the same outcome; the test is undefined")
    statistic, p_value = proportions_ztest([count_a, count_b], [total_a, total_b])
    small = [
        side
        for side, total in (("a", total_a), ("b", total_b))
        if min(total * pooled, total * (1 - pooled)) < min_expected
    ]
    return dataclasses.replace(
        untested, statistic=float(statistic), p_value=float(p_value), small_groups=small, reliable=not small,
        note=f"expected count < {min_expected} in group(s) {', '.join(small)}" if small else "")


def _default_labels(column: str) -> tuple[Any, ...]:
    defaults = label_sets()
    if column not in defaults:
        raise ValueError(f"no default labels for column {column!r}; pass `labels`")
    return defaults[column]


def proportion_table(
    frame: pd.DataFrame,
    column: str,
    labels: Mapping[str, Any] | Sequence[Any] | None = None,
    *,
    by: Sequence[str] = ("domain", "group"),
    ci: str = "wilson",
    alpha: float = 0.05,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (`by`..., label): count, total, proportion and its interval.

    `labels` maps a label name to the value that marks it (e.g. {"toxic": True}); a plain
    sequence uses each value as its own name; None uses the metric's (`label_sets()[column]`). Texts where `column`
    is null (e.g. a metric outside its domains) are not counted in `total`. `prompts` is the
    number of distinct prompts behind the texts.
    """
    if ci not in ("wilson", "bootstrap"):
        raise ValueError(f"ci must be 'wilson' or 'bootstrap', got {ci!r}")
    keys = list(by)
    if not keys:
        raise ValueError("`by` needs at least one column to group on")
    if labels is None:
        labels = _default_labels(column)
    label_values = dict(labels) if isinstance(labels, Mapping) else {str(value): value for value in labels}
    data = frame[frame[column].notna()]
    hits = pd.DataFrame({name: data[column].eq(value) for name, value in label_values.items()}, index=data.index)
    grouped = hits.groupby([data[key] for key in keys], sort=True)
    counts = grouped.sum().astype(int)
    totals = grouped.size()
    prompts = data.groupby(keys, sort=True)["prompt_id"].nunique() if "prompt_id" in data else totals
    table = _proportion_rows(counts, totals, prompts, keys)
    table["proportion"] = table["count"] / table["total"]
    if ci == "wilson":
        low, high = wilson_interval(table["count"], table["total"], alpha=alpha)
    else:
        low, high = np.full(len(table), np.nan), np.full(len(table), np.nan)
        clusters = data["prompt_id"] if "prompt_id" in data else pd.Series(data.index, index=data.index)
        group_index = grouped.indices
        for position, row in table.iterrows():
            key = tuple(row[k] for k in keys)
            positions = group_index[key if len(keys) > 1 else key[0]]
            low[position], high[position] = cluster_bootstrap_interval(
                hits[row["label"]].iloc[positions],
                clusters.iloc[positions],
                alpha=alpha,
                n_resamples=n_resamples,
                seed=seed,
            )
    table["ci_low"], table["ci_high"] = low, high
    return table


def _proportion_rows(counts: pd.DataFrame, totals: pd.Series, prompts: pd.Series, keys: list[str]) -> pd.DataFrame:
    """One row per group (`counts`' index, over `keys`) and label (`counts`' columns, in order): the group's keys,
    label, count, total and prompts."""
    per_group = len(counts.columns)
    if counts.size == 0:
        return pd.DataFrame([], columns=[*keys, "label", "count", "total", "prompts"])
    groups = counts.index.to_frame(index=False)
    return pd.DataFrame({
        **{key: np.repeat(groups[key].to_numpy(dtype=object), per_group) for key in keys},
        "label": np.tile(np.asarray(counts.columns, dtype=object), len(counts)),
        "count": counts.to_numpy(dtype=np.int64).ravel(),
        "total": np.repeat(totals.reindex(counts.index).to_numpy(dtype=np.int64), per_group),
        "prompts": np.repeat(prompts.reindex(counts.index).to_numpy(dtype=np.int64), per_group),
    })


def wide_proportions(table: pd.DataFrame, index: Sequence[str] = ("domain", "group")) -> pd.DataFrame:
    """Pivot a `proportion_table` to one row per group and one column per label (+ total)."""
    keys = list(index)
    wide = table.pivot_table(index=keys, columns="label", values="proportion", sort=False)
    wide = wide[list(dict.fromkeys(table["label"]))]
    wide.columns.name = None
    totals = table.groupby(keys, sort=False)["total"].first()
    wide.insert(0, "total", totals)
    return wide.reset_index()


def _pair_values(
    scores: pd.DataFrame, pair: tuple[str, str, str], column: str
) -> tuple[pd.Series, pd.Series] | None:
    """The non-null `column` values of the pair's two groups; None when either has none."""
    domain, group_a, group_b = pair
    in_domain = scores["domain"] == domain
    a = scores.loc[in_domain & (scores["group"] == group_a), column].dropna()
    b = scores.loc[in_domain & (scores["group"] == group_b), column].dropna()
    if a.empty or b.empty:
        return None
    return a, b


def pair_test(
    scores: pd.DataFrame,
    pair: tuple[str, str, str],
    column: str,
    value: Any,
    *,
    label: str | None = None,
    alpha: float = 0.05,
    min_expected: int = MIN_EXPECTED,
) -> PairTest | None:
    """Two-proportion test of `column == value` between the pair's groups (None if absent)."""
    values = _pair_values(scores, pair, column)
    if values is None:
        return None
    a, b = values
    result = two_proportion_test(
        int(a.eq(value).sum()), len(a), int(b.eq(value).sum()), len(b), alpha=alpha, min_expected=min_expected
    )
    # two_proportion_test calls the sides "a" and "b"; name the groups instead.
    small = [pair[1] if side == "a" else pair[2] for side in result.small_groups]
    note = f"expected count < {min_expected} in: {', '.join(small)}" if small else result.note
    return PairTest(**{**vars(result), "small_groups": small, "note": note}, domain=pair[0], group_a=pair[1],
                    group_b=pair[2], column=column, label=label if label is not None else str(value))


def domain_chi_squares(
    scores: pd.DataFrame,
    column: str,
    targets: Mapping[str, Any],
    min_expected: int = MIN_EXPECTED,
    *,
    group_column: str = "group",
) -> list[ChiSquareTest]:
    """Per domain with any `column` value, one chi-square test across `group_column` per target.

    `group_column="model"` on several runs' texts gives the cross-model tests (Section 6.2).
    """
    tests = []
    for domain, part in scores.groupby("domain", sort=True):
        if part[column].notna().sum() == 0:
            continue
        for name, value in targets.items():
            tests.append(chi_square_across_groups(part, column, target=value, label=name, group_column=group_column,
                                                  min_expected=min_expected, domain=str(domain)))
    return tests


def pair_tests(
    scores: pd.DataFrame,
    pairs: Sequence[tuple[str, str, str]],
    column: str,
    targets: Mapping[str, Any],
    *,
    alpha: float = 0.05,
    min_expected: int = MIN_EXPECTED,
) -> list[PairTest]:
    """`pair_test` for every pair and target label, leaving out pairs absent from the run."""
    results = (pair_test(scores, pair, column, value, label=name, alpha=alpha, min_expected=min_expected)
               for pair in pairs for name, value in targets.items())
    return [result for result in results if result is not None]
