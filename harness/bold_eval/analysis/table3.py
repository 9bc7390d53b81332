"""Table 3 and Figure 2: texts classified male and female per profession, ratios with page-bootstrap intervals."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import bootstrap, norm

from bold_eval.analysis.clustered import (
    MIN_EXPECTED,
)
from bold_eval.analysis.results import MetricView
from bold_eval.analysis.scores import (
    label_sets,
    page_names,
)
from bold_eval.analysis.statistics import (
    chi_square_across_groups,
    proportion_table,
    wilson_interval,
)
from bold_eval.data.bold import profession_categories
from bold_eval.metrics.spec import MetricSpec


def scored_methods(spec: MetricSpec, columns: Collection[str]) -> dict[str, str]:
    """The methods of a "gender_ratio" metric (`GenderRatio.methods`) scored in this run, in the paper's order
    (offline, gender polarity has unigram matching only): method -> (label column, display name)."""
    return {method: (f"{spec.name}_{method}_label", display) for method, display in spec.view.methods.items()
            if f"{spec.name}_{method}_label" in columns}


def _gender_table(spec: MetricSpec, texts: pd.DataFrame, by: list[str], ci: str, alpha: float,
                  seed: int) -> pd.DataFrame:
    blocks = []
    for method, (column, display) in scored_methods(spec, texts.columns).items():
        long = proportion_table(texts, column, ("male", "female"), by=by, ci=ci, alpha=alpha, seed=seed)
        wide = long.pivot_table(index=by, columns="label", values=["count", "proportion", "ci_low", "ci_high"],
                                sort=False)
        block = pd.DataFrame(index=wide.index)
        block["method"] = method
        block["method_name"] = display
        block["total"] = long.groupby(by, sort=False)["total"].first()
        for gender in ("male", "female"):
            block[gender] = wide[("count", gender)].astype(int)
        male, female = block["male"], block["female"]
        block["male_to_female"] = male_to_female(male, female)
        for gender in ("male", "female"):
            block[f"{gender}_proportion"] = wide[("proportion", gender)]
            block[f"{gender}_ci_low"] = wide[("ci_low", gender)]
            block[f"{gender}_ci_high"] = wide[("ci_high", gender)]
        block["male_minus_female"] = block["male_proportion"] - block["female_proportion"]
        # Male and female shares come from the same texts (one multinomial), so the difference's variance
        # is (p_m + p_f - (p_m - p_f)^2) / n; a normal-approximation interval, clipped to [-1, 1].
        spread = norm.ppf(1 - alpha / 2) * np.sqrt(
            (block["male_proportion"] + block["female_proportion"] - block["male_minus_female"] ** 2) / block["total"])
        block["male_minus_female_ci_low"] = (block["male_minus_female"] - spread).clip(lower=-1.0)
        block["male_minus_female_ci_high"] = (block["male_minus_female"] + spread).clip(upper=1.0)
        blocks.append(block.reset_index())
    return pd.concat(blocks, ignore_index=True)


# Resamples of the page bootstrap behind Table 3's male : female intervals and the Section 6.2 average.
RATIO_RESAMPLES = 9999


def male_to_female(male: Any, female: Any) -> Any:
    """male # / female # (Table 3): infinite with male texts and no female one, undefined (NaN) with neither."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(np.asarray(male, dtype=float), np.asarray(female, dtype=float))


def _to_unit(ratio: Any) -> Any:
    """r / (1 + r): the ratio's order on [0, 1], with an infinite ratio at 1."""
    ratio = np.asarray(ratio, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(ratio), 1.0, ratio / (1 + ratio))


def _from_unit(unit: float) -> float:
    return float("inf") if unit >= 1 else float(unit / (1 - unit))


Strata = Sequence[tuple[np.ndarray, np.ndarray]]  # per category: male and female texts of each page


def _page_bootstrap(strata: Strata, combine: Callable[[list[tuple[Any, Any]]], Any], *, alpha: float,
                    seed: int, n_resamples: int = RATIO_RESAMPLES) -> tuple[float, float]:
    """Percentile interval of a ratio statistic, resampling Wikipedia pages within each category.

    `combine` maps the categories' (male, female) totals to the statistic. Each category's page indices are
    one sample, which scipy resamples independently of the others (paired=False: stratified); an index
    keeps its page's male and female counts together. Percentiles are taken of r / (1 + r), which keeps a
    resample without female texts (r infinite) in order, and mapped back. A category of one page has
    nothing to resample and enters fixed.
    """
    varying = [len(male) >= 2 for male, _ in strata]
    if not any(varying):
        return float("nan"), float("nan")

    def statistic(*indices: np.ndarray, axis: int = -1) -> np.ndarray:
        picks = iter(indices)
        totals = []
        for (male, female), resampled in zip(strata, varying, strict=True):
            if resampled:
                index = next(picks).astype(int)
                totals.append((male[index].sum(axis=axis), female[index].sum(axis=axis)))
            else:
                totals.append((male.sum(), female.sum()))
        with np.errstate(divide="ignore", invalid="ignore"):
            return _to_unit(combine(totals))

    samples = tuple(np.arange(len(male)) for (male, _), resampled in zip(strata, varying, strict=True) if resampled)
    result = bootstrap(samples, statistic, paired=False, vectorized=True, n_resamples=n_resamples,
                       confidence_level=1 - alpha, method="percentile", batch=1000, rng=np.random.default_rng(seed))
    return _from_unit(result.confidence_interval.low), _from_unit(result.confidence_interval.high)


def _pooled(totals: list[tuple[Any, Any]]) -> Any:
    return male_to_female(sum(male for male, _ in totals), sum(female for _, female in totals))


def _average(totals: list[tuple[Any, Any]]) -> Any:
    return sum(male_to_female(male, female) for male, female in totals) / len(totals)


def ratio_interval(strata: Strata, *, alpha: float = 0.05, seed: int = 0,
                   n_resamples: int = RATIO_RESAMPLES) -> tuple[float, float, float, str]:
    """All male texts / all female texts of the strata, with its page-bootstrap interval and a note.

    One stratum is a Table 3 cell; several give the pooled ratio. Without female texts the ratio is
    infinite and every resample too, so the lower end is the Wilson bound with the pages as the unit:
    none of k pages female bounds the female share by z^2 / (k + z^2), the ratio below by k / z^2
    (and, without male texts, the ratio 0 above by z^2 / k).
    """
    male = float(sum(m.sum() for m, _ in strata))
    female = float(sum(f.sum() for _, f in strata))
    pages = sum(len(m) for m, _ in strata)
    ratio = float(male_to_female(male, female))
    if male + female == 0:
        return ratio, float("nan"), float("nan"), "no text classified male or female: the ratio is undefined"
    if female == 0 or male == 0:
        _, share_high = wilson_interval(0, pages, alpha=alpha)
        bound = (1 - share_high) / share_high
        if female == 0:
            return ratio, bound, float("inf"), (f"no female text: the ratio is infinite; the lower end is the Wilson "
                                                f"bound over its {pages} page(s), as no resample has a female text")
        return ratio, 0.0, 1 / bound, (f"no male text: the ratio is 0; the upper end is the Wilson bound over its "
                                       f"{pages} page(s), as no resample has a male text")
    low, high = _page_bootstrap(strata, _pooled, alpha=alpha, seed=seed, n_resamples=n_resamples)
    return ratio, low, high, "" if not np.isnan(low) else "one page per category: nothing to resample, no interval"


def average_ratio(strata: Mapping[str, tuple[np.ndarray, np.ndarray]], *, alpha: float = 0.05, seed: int = 0,
                  n_resamples: int = RATIO_RESAMPLES) -> tuple[float, float, float, str]:
    """Section 6.2's summary of Table 3: the mean of the categories' male : female ratios, with an interval
    from the page bootstrap stratified by category. Undefined (NaN) when a category has no female text."""
    undefined = [category for category, (male, female) in strata.items() if female.sum() == 0]
    if undefined:
        return (float("nan"), float("nan"), float("nan"),
                f"undefined: {', '.join(undefined)} {'has' if len(undefined) == 1 else 'have'} no female text, "
                "so its ratio is infinite or undefined")
    estimate = float(_average([(male.sum(), female.sum()) for male, female in strata.values()]))
    low, high = _page_bootstrap(list(strata.values()), _average, alpha=alpha, seed=seed, n_resamples=n_resamples)
    return estimate, low, high, ""


def _page_strata(categorized: pd.DataFrame, column: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """category -> (male, female) texts per page, over the pages with a text classified male or female."""
    label = categorized[column]
    pages = pd.DataFrame({"category": categorized["category"].to_numpy(), "name": page_names(categorized).to_numpy(),
                          "male": label.eq("male").to_numpy(dtype=int), "female": label.eq("female").to_numpy(dtype=int)})
    pages = pages[pages["male"] + pages["female"] > 0].groupby(["category", "name"], sort=False)[["male", "female"]].sum()
    strata = {category: (np.zeros(0), np.zeros(0)) for category in pd.unique(categorized["category"])}
    for category, part in pages.groupby(level="category", sort=False):
        strata[category] = (part["male"].to_numpy(dtype=float), part["female"].to_numpy(dtype=float))
    return strata


def _with_ratio_intervals(spec: MetricSpec, table: pd.DataFrame, categorized: pd.DataFrame, alpha: float,
                          seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3 with each male : female's page-bootstrap interval, and the Section 6.2 summary per method."""
    pages = page_names(categorized).groupby(categorized["category"]).nunique()
    cells, summary = [], []
    for method, (column, display) in scored_methods(spec, categorized.columns).items():
        strata = _page_strata(categorized, column)
        for category, stratum in strata.items():
            ratio, low, high, note = ratio_interval([stratum], alpha=alpha, seed=seed)
            cells.append({"method": method, "category": category, "pages": int(pages[category]),
                          "male_to_female_ci_low": low, "male_to_female_ci_high": high, "male_to_female_note": note})
        average, average_low, average_high, average_note = average_ratio(strata, alpha=alpha, seed=seed)
        pooled, pooled_low, pooled_high, pooled_note = ratio_interval(list(strata.values()), alpha=alpha, seed=seed)
        summary.append({
            "method": method, "method_name": display, "categories": len(strata),
            "male": int(sum(male.sum() for male, _ in strata.values())),
            "female": int(sum(female.sum() for _, female in strata.values())),
            "average_male_to_female": average, "average_ci_low": average_low, "average_ci_high": average_high,
            "pooled_male_to_female": pooled, "pooled_ci_low": pooled_low, "pooled_ci_high": pooled_high,
            "note": "; ".join(note for note in (average_note, pooled_note and f"pooled: {pooled_note}") if note),
        })
    return table.merge(pd.DataFrame(cells), on=["method", "category"], how="left"), pd.DataFrame(summary)


def _category_table(spec: MetricSpec, categorized: pd.DataFrame, ci: str, alpha: float,
                    seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3 in the paper's order (methods, then super-groups), with its intervals, and Section 6.2's summary."""
    method_rank = {name: rank for rank, name in enumerate(spec.view.methods)}
    category_rank = {name: rank for rank, name in enumerate(profession_categories())}
    table = _gender_table(spec, categorized, ["category"], ci, alpha, seed)
    table = table.assign(
        _method=table["method"].map(method_rank),
        _category=table["category"].map(category_rank).fillna(len(category_rank)),
    ).sort_values(["_method", "_category", "category"])
    table = table.drop(columns=["_method", "_category"]).reset_index(drop=True)
    return _with_ratio_intervals(spec, table, categorized, alpha, seed)


def _group_table(spec: MetricSpec, texts: pd.DataFrame, by: list[str], ci: str, alpha: float,
                 seed: int) -> pd.DataFrame:
    """Male and female per group (Figure 2), methods in the paper's order, groups outside a super-group last."""
    method_rank = {name: rank for rank, name in enumerate(spec.view.methods)}
    table = _gender_table(spec, texts, by, ci, alpha, seed)
    return (table.assign(_method=table["method"].map(method_rank),
                         _uncategorized=table["category"].eq("") if "category" in by else False)
            .sort_values(["_method", "_uncategorized", *by]).drop(columns=["_method", "_uncategorized"])
            .reset_index(drop=True))


def gender_ratio_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                      min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """View kind "gender_ratio" (`GenderRatio`): Table 3 and Figure 2, texts classified male / female in the
    metric's tested domain (gender polarity: profession, Section 4.5).

    `<metric>_category`: per Table 3 super-group (`category`), male and female counts and male_to_female ratio
    per method (Gender-Max, Gender-Wavg, unigram matching), the ratio with a 1 - alpha interval from a bootstrap
    over Wikipedia pages (`name`; a page's sentences are not independent). `<metric>_ratio_summary`: per method,
    Section 6.2's average of those ratios and the pooled ratio (all male / all female texts), each with its
    interval. `<metric>_group`: the same per fine-grained group, with `male_minus_female` (Figure 2 plots the
    first method). Tests: chi-square across super-groups of the male / female / neutral distribution per method.
    """
    domain = spec.finding_domains[0]  # MetricSpec checks that a "gender_ratio" metric names it
    texts = scores[scores["domain"] == domain]
    if texts.empty:
        return MetricView(skipped=f"no texts in the {domain} domain")
    has_category = "category" in texts.columns
    by = ["category", "group"] if has_category else ["group"]
    if has_category:
        texts = texts.assign(category=texts["category"].fillna("").astype(str))
        # Groups outside the four Table 3 super-groups have category "".
        categorized = texts[texts["category"] != ""]
    else:
        categorized = texts.iloc[:0]  # no super-groups: no Table 3, no tests
    tables: dict[str, pd.DataFrame] = {}
    tests = []
    if not categorized.empty:
        tables[f"{spec.name}_category"], tables[f"{spec.name}_ratio_summary"] = _category_table(
            spec, categorized, ci, alpha, seed)
        for column, display in scored_methods(spec, categorized.columns).values():
            result = chi_square_across_groups(categorized, column, label_sets()[column],
                                              label=f"{display}: male/female/neutral",
                                              group_column="category", min_expected=min_expected)
            tests.append({"domain": domain, **result})
    tables[f"{spec.name}_group"] = _group_table(spec, texts, by, ci, alpha, seed)
    token_columns = [c for c in (f"{spec.name}_male_tokens", f"{spec.name}_female_tokens") if c in texts]
    if token_columns and not categorized.empty:
        tables[f"{spec.name}_tokens"] = (
            categorized.groupby("category", sort=True)[token_columns].sum().astype(int)
            .rename(columns=lambda c: c.removeprefix(f"{spec.name}_")).reset_index()
        )
    return MetricView(tables=tables, tests=tests)
