"""Table 3 and Figure 2: texts classified male and female per profession, ratios and differences with intervals
that have the Wikipedia page as their unit."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import special
from scipy.stats import beta

from bold_eval.analysis.clustered import (
    MIN_EXPECTED,
)
from bold_eval.analysis.results import GenderRatioTables, MetricView, PaperTest
from bold_eval.analysis.scores import (
    label_sets,
    page_names,
)
from bold_eval.analysis.statistics import (
    chi_square_across_groups,
    proportion_table,
)
from bold_eval.data.bold import profession_categories
from bold_eval.metrics.spec import GenderRatio, MetricSpec


def _methods(spec: MetricSpec) -> Mapping[str, str]:
    """A `GenderRatio` metric's methods, in the paper's order: method -> display name."""
    assert isinstance(spec.view, GenderRatio)  # the kind whose `ViewHooks.tables` is `gender_ratio_view`
    return spec.view.methods


def scored_methods(spec: MetricSpec, columns: Collection[str]) -> dict[str, tuple[str, str]]:
    """The methods of a `GenderRatio` metric (`GenderRatio.methods`) scored in this run, in the paper's order
    (offline, gender polarity has unigram matching only): method -> (label column, display name)."""
    return {method: (f"{spec.name}_{method}_label", display) for method, display in _methods(spec).items()
            if f"{spec.name}_{method}_label" in columns}


def _gender_table(spec: MetricSpec, texts: pd.DataFrame, by: list[str], ci: str, alpha: float,
                  seed: int) -> pd.DataFrame:
    """Male and female counts, shares and ratio per `by` group and method; male minus female with its page-level
    interval (`difference_interval`)."""
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
        block = block.join(_difference_intervals(texts, column, by, alpha))
        blocks.append(block.reset_index())
    return pd.concat(blocks, ignore_index=True)


def _page_counts(texts: pd.DataFrame, column: str, by: list[str]) -> pd.DataFrame:
    """Per `by` group and Wikipedia page: male, female and all texts with a label in `column`."""
    scored = texts[texts[column].notna()]
    label = scored[column]
    frame = pd.DataFrame({**{key: scored[key].to_numpy() for key in by}, "name": page_names(scored).to_numpy(),
                          "male": label.eq("male").to_numpy(dtype=float),
                          "female": label.eq("female").to_numpy(dtype=float), "texts": 1.0})
    return frame.groupby([*by, "name"], sort=False)[["male", "female", "texts"]].sum()


def _difference_intervals(texts: pd.DataFrame, column: str, by: list[str], alpha: float) -> pd.DataFrame:
    """male_minus_female's page-level interval and note per `by` group (index: the `by` keys), each group's design
    effects at least the groups' median (`typical_design_effects`)."""
    counts = _page_counts(texts, column, by)
    # a scalar level for one key: pandas < 3 warns that a length-1 list will give tuple keys
    levels = list(range(len(by))) if len(by) > 1 else 0
    groups = dict(list(counts.groupby(level=levels, sort=False)))
    floors = typical_design_effects([(pages["male"], pages["female"], pages["texts"]) for pages in groups.values()])
    rows = {}
    for key, pages in groups.items():
        _, low, high, note = difference_interval(pages["male"], pages["female"], pages["texts"], alpha=alpha,
                                                 floors=floors)
        rows[key] = (low, high, note)
    index = (pd.MultiIndex.from_tuples(list(rows), names=by) if len(by) > 1
             else pd.Index([key[0] if isinstance(key, tuple) else key for key in rows], name=by[0]))
    return pd.DataFrame(list(rows.values()), index=index,
                        columns=["male_minus_female_ci_low", "male_minus_female_ci_high", "male_minus_female_note"])


def male_to_female(male: Any, female: Any) -> Any:
    """male # / female # (Table 3): infinite with male texts and no female one, undefined (NaN) with neither."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(np.asarray(male, dtype=float), np.asarray(female, dtype=float))


# Page-level intervals. A page's texts are not independent, so every interval below has the
# Wikipedia page (BOLD `name`) as its unit. A share sum(hits) / sum(totals) over pages (a ratio estimator) gets
# the Korn-Graubard interval: Clopper-Pearson at the effective sample size p(1 - p) / variance, the variance from
# the page jackknife, the sample size scaled by (z / t_df)^2. benchmarks/table3_coverage.py checks the coverage
# by simulation at BOLD's page sizes (benchmarks/RESULTS.md, "Table 3 intervals").


class PageShare(NamedTuple):
    """A share over pages with what its interval needs: `deviations` are the pages' scaled jackknife deviations
    (their squares sum to the variance; two shares of the same pages give their covariance)."""

    estimate: float
    texts: float
    pages: int
    deviations: np.ndarray
    variance: float
    df: float
    kish: float


def page_share(hits: Any, totals: Any, strata: Any = None) -> PageShare:
    """sum(hits) / sum(totals) with its page-jackknife variance, stratified when `strata` labels the pages.

    Degrees of freedom: the smallest of pages - strata, Kish's effective number of pages (sum n)^2 / sum n^2
    minus the strata, and Satterthwaite's 3 (sum d^2)^2 / sum d^4 of the deviations: a few pages carrying most
    texts or most of the variance leave fewer degrees of freedom than pages (Bell and McCaffrey 2002).
    """
    hits, totals = np.asarray(hits, dtype=float), np.asarray(totals, dtype=float)
    labels = np.zeros(len(totals), dtype=int) if strata is None else np.asarray(strata)
    keep = totals > 0
    hits, totals, labels = hits[keep], totals[keep], labels[keep]
    texts = float(totals.sum())
    estimate = float(hits.sum() / texts) if texts > 0 else float("nan")
    deviations = np.zeros(len(totals))
    for label in np.unique(labels):
        inside = labels == label
        count = int(inside.sum())
        if count >= 2:  # leave-one-page-out estimate minus the full one: -(h - p n) / (N - n)
            pseudo = (hits[inside] - estimate * totals[inside]) / np.maximum(texts - totals[inside], 1.0)
            deviations[inside] = (pseudo - pseudo.mean()) * np.sqrt((count - 1) / count)
    squares = deviations**2
    variance = float(squares.sum())
    strata_count = len(np.unique(labels))
    kish = texts**2 / float((totals**2).sum()) if texts > 0 else 0.0
    df = min(len(totals) - strata_count, max(kish - strata_count, 1.0))
    if variance > 0:
        df = min(df, max(3 * variance**2 / float((squares**2).sum()), 1.0))
    return PageShare(estimate, texts, len(totals), deviations, variance, float(df), kish)


def design_effect(share: PageShare) -> float:
    """variance / (p (1 - p) / texts), at least 1: how much the pages' clustering widens the share's interval."""
    p = share.estimate
    if not 0 < p < 1 or share.variance <= 0:
        return 1.0
    return max(share.variance * share.texts / (p * (1 - p)), 1.0)


def share_interval(share: PageShare, *, alpha: float = 0.05, floor: float = 1.0) -> tuple[float, float]:
    """Korn and Graubard's (1998) interval of a page share: Clopper-Pearson at the effective number of texts
    p(1 - p) / variance (at most texts / `floor`, a design effect measured on more pages), scaled by (z / t_df)^2
    for the variance's own uncertainty. A share of 0 or 1 has no variance to measure the clustering by: its
    effective number is Kish's number of pages, the worst case where each page's texts are all alike. NaN without
    two pages in a stratum."""
    lows, highs = share_intervals([share], alpha=alpha, floors=[floor])
    return float(lows[0]), float(highs[0])


def share_intervals(shares: Sequence[PageShare], *, alpha: float = 0.05,
                    floors: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`share_interval` of each share (with its floor), all in one quantile call: (lows, highs)."""
    p, variance, texts, df, kish = (np.array([getattr(share, field) for share in shares], dtype=float)
                                    for field in ("estimate", "variance", "texts", "df", "kish"))
    floor = np.maximum(np.ones(len(shares)) if floors is None else np.asarray(floors, dtype=float), 1.0)
    testable = (df >= 1) & ~np.isnan(p)
    clustered = testable & (0 < p) & (p < 1) & (variance > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        # special.ndtri and special.stdtrit: the normal's and t's quantiles (what scipy.stats' ppf computes); the
        # ratio squared by pow, as a scalar ** 2 is (numpy's array square, x * x, can differ in the last bit)
        ratio = special.ndtri(1 - alpha / 2) / special.stdtrit(np.where(clustered, df, 1.0), 1 - alpha / 2)
        scale = np.array([value ** 2 for value in ratio.tolist()])
        effective = np.where(clustered, np.minimum(p * (1 - p) / variance, texts / floor) * scale, kish)
        hits = p * effective
        ends = beta.ppf(np.repeat([alpha / 2, 1 - alpha / 2], len(shares)), np.r_[hits, hits + 1],
                        np.r_[effective - hits + 1, effective - hits])
    low = np.minimum(np.where(hits <= 0, 0.0, ends[:len(shares)]), p)
    high = np.maximum(np.where(hits >= effective, 1.0, ends[len(shares):]), p)
    return np.where(testable, low, np.nan), np.where(testable, high, np.nan)


def _odds(share: float) -> float:
    """r = s / (1 - s): the male share of gendered texts as male : female."""
    return float("inf") if share >= 1 else float(share / (1 - share))


Strata = Sequence[tuple[np.ndarray, np.ndarray]]  # per category: male and female texts of each page


def ratio_interval(strata: Strata, *, alpha: float = 0.05) -> tuple[float, float, float, str]:
    """All male texts / all female texts of the strata, with its page-level interval and a note.

    The ratio is s / (1 - s) for s the male share of the texts classified male or female, so its interval is
    s's mapped through s / (1 - s): one stratum's s gets `share_interval` (pages with such a text as units);
    several strata (the pooled ratio) add their shares' intervals, weighted by their gendered texts, by MOVER
    (`pooled_share_interval`). Without female texts s is 1 and the ratio infinite: the lower end comes from the
    upper bound on the female share of those texts, at Kish's effective number of pages.
    """
    male = float(sum(np.sum(m) for m, _ in strata))
    female = float(sum(np.sum(f) for _, f in strata))
    ratio = float(male_to_female(male, female))
    if male + female == 0:
        return ratio, float("nan"), float("nan"), "no text classified male or female: the ratio is undefined"
    if len(strata) == 1:
        low, high = share_interval(page_share(strata[0][0], np.add(strata[0][0], strata[0][1])), alpha=alpha)
    else:
        low, high = pooled_share_interval(strata, alpha=alpha)
    if np.isnan(low):
        where = "on one page" if len(strata) == 1 else "on one page in a super-group"
        return ratio, low, high, (f"no interval: the texts classified male or female are {where}, and an interval "
                                  "with pages as units needs two")
    effective = "" if len(strata) > 1 else (
        f", at the effective number of pages ({page_share(strata[0][0], np.add(*strata[0])).kish:.1f} of "
        f"{len(strata[0][0])})")
    if female == 0:
        return ratio, _odds(low), float("inf"), (
            "no female text: the ratio is infinite; the lower end is the Clopper-Pearson upper bound on the female "
            f"share of the gendered texts{effective}")
    if male == 0:
        return ratio, 0.0, _odds(high), (
            "no male text: the ratio is 0; the upper end is the Clopper-Pearson upper bound on the male share of "
            f"the gendered texts{effective}")
    return ratio, _odds(low), _odds(high), ""


def pooled_share_interval(strata: Strata, *, alpha: float = 0.05) -> tuple[float, float]:
    """The male share of all strata's gendered texts, sum w s, with w a stratum's share of those texts: MOVER
    (Zou and Donner 2008) over the strata's independent `share_interval`s, sum w s -/+ sqrt(sum w^2 (s - end)^2).
    NaN when a stratum with gendered texts has them on one page (its share's spread is unknown)."""
    shares = [share for share in (page_share(male, np.add(male, female)) for male, female in strata) if share.pages]
    texts = np.array([share.texts for share in shares])
    weights = texts / sum(share.texts for share in shares)
    estimates = np.array([share.estimate for share in shares])
    lows, highs = share_intervals(shares, alpha=alpha)
    if np.isnan(lows).any():
        return float("nan"), float("nan")
    pooled = float(weights @ estimates)
    return (max(pooled - float(np.sqrt(np.sum((weights * (estimates - lows)) ** 2))), 0.0),
            min(pooled + float(np.sqrt(np.sum((weights * (highs - estimates)) ** 2))), 1.0))


def average_ratio(strata: Mapping[str, tuple[np.ndarray, np.ndarray]], *,
                  alpha: float = 0.05) -> tuple[float, float, float, str]:
    """Section 6.2's summary of Table 3: the mean of the categories' male : female ratios (the paper's number,
    biased upward when a category has few female texts), with an interval for the mean of the true ratios.

    Categories share no page, so MOVER (Zou and Donner 2008) adds their ratios' intervals: the mean minus
    sqrt(sum (r - low)^2) / k and plus sqrt(sum (high - r)^2) / k. With an infinite ratio the mean is infinite;
    its lower end is the mean of the categories' lower ends at level 1 - alpha / k each (Bonferroni).
    """
    undefined = [category for category, (male, female) in strata.items() if male.sum() + female.sum() == 0]
    if undefined:
        return (float("nan"), float("nan"), float("nan"),
                f"undefined: {', '.join(undefined)} {'has' if len(undefined) == 1 else 'have'} no text classified "
                "male or female, so its ratio is undefined")
    cells = [ratio_interval([stratum], alpha=alpha) for stratum in strata.values()]
    estimate = float(np.mean([cell[0] for cell in cells]))
    lonely = [category for category, cell in zip(strata, cells, strict=True) if np.isnan(cell[1])]
    if lonely:
        return estimate, float("nan"), float("nan"), (
            f"no interval: {', '.join(lonely)} {'has' if len(lonely) == 1 else 'have'} none (one page)")
    if np.isinf(estimate):
        lows = [ratio_interval([stratum], alpha=alpha / len(strata))[1] for stratum in strata.values()]
        return estimate, float(np.mean(lows)), float("inf"), (
            "infinite: a super-group has no female text; the lower end averages the super-groups' lower ends at "
            f"level 1 - alpha / {len(strata)} each (Bonferroni)")
    ratios, low_ends, high_ends = (np.array([cell[i] for cell in cells]) for i in (0, 1, 2))
    count = len(cells)
    low = estimate - float(np.sqrt(np.sum((ratios - low_ends) ** 2))) / count
    high = estimate + float(np.sqrt(np.sum((high_ends - ratios) ** 2))) / count
    return estimate, max(low, 0.0), high, ""


def difference_interval(male: Any, female: Any, totals: Any, *, alpha: float = 0.05,
                        floors: tuple[float, float] = (1.0, 1.0)) -> tuple[float, float, float, str]:
    """Male share minus female share of all texts over pages (Figure 2), with its page-level interval.

    MOVER for a difference of two correlated shares (Zou and Donner 2008; Newcombe 1998 for one sample): each
    share's Korn-Graubard interval, combined with their page-jackknife correlation, so a group without a male or
    a female text still gets an interval from the zero share's upper bound.
    """
    male_share = page_share(male, totals)
    female_share = page_share(female, totals)
    difference = male_share.estimate - female_share.estimate
    (male_low, female_low), (male_high, female_high) = share_intervals([male_share, female_share], alpha=alpha,
                                                                       floors=floors)
    if np.isnan(male_low) or np.isnan(female_low):
        return difference, float("nan"), float("nan"), (
            "no interval: one page, and an interval with pages as units needs two")
    spread = np.sqrt(male_share.variance * female_share.variance)
    rho = float(np.dot(male_share.deviations, female_share.deviations) / spread) if spread > 0 else 0.0
    below = _mover_half(male_share.estimate - male_low, female_high - female_share.estimate, rho)
    above = _mover_half(male_high - male_share.estimate, female_share.estimate - female_low, rho)
    return difference, max(difference - below, -1.0), min(difference + above, 1.0), ""


def typical_design_effects(groups: Sequence[tuple[Any, Any, Any]]) -> tuple[float, float]:
    """The median over groups (male, female, texts per page) of their male and female shares' design effects:
    the floor of each group's own (`difference_interval`), so a group whose pages happen to miss the clumps of a
    label is not taken as less clustered than groups typically are."""
    floors = []
    for index in (0, 1):
        effects = [design_effect(share) for share in (page_share(group[index], group[2]) for group in groups)
                   if share.pages >= 2 and 0 < share.estimate < 1 and share.variance > 0]
        floors.append(float(np.median(effects)) if effects else 1.0)
    return floors[0], floors[1]


def _mover_half(first: float, second: float, rho: float) -> float:
    """One side of a MOVER difference interval: sqrt(a^2 + b^2 - 2 rho a b)."""
    return float(np.sqrt(max(first**2 + second**2 - 2 * rho * first * second, 0.0)))


def _page_strata(categorized: pd.DataFrame, column: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """category -> (male, female) texts per page, over the pages with a text classified male or female."""
    pages = _page_counts(categorized, column, ["category"])
    pages = pages[pages["male"] + pages["female"] > 0]
    strata = {category: (np.zeros(0), np.zeros(0)) for category in pd.unique(categorized["category"])}
    for category, part in pages.groupby(level="category", sort=False):
        strata[category] = (part["male"].to_numpy(dtype=float), part["female"].to_numpy(dtype=float))
    return strata


def _with_ratio_intervals(spec: MetricSpec, table: pd.DataFrame, categorized: pd.DataFrame,
                          alpha: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3 with each male : female's page-level interval, and the Section 6.2 summary per method."""
    pages = page_names(categorized).groupby(categorized["category"]).nunique()
    cells, summary = [], []
    for method, (column, display) in scored_methods(spec, categorized.columns).items():
        strata = _page_strata(categorized, column)
        for category, stratum in strata.items():
            ratio, low, high, note = ratio_interval([stratum], alpha=alpha)
            cells.append({"method": method, "category": category, "pages": int(pages[category]),
                          "male_to_female_ci_low": low, "male_to_female_ci_high": high, "male_to_female_note": note})
        average, average_low, average_high, average_note = average_ratio(strata, alpha=alpha)
        pooled, pooled_low, pooled_high, pooled_note = ratio_interval(list(strata.values()), alpha=alpha)
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
    method_rank = {name: rank for rank, name in enumerate(_methods(spec))}
    category_rank = {name: rank for rank, name in enumerate(profession_categories())}
    table = _gender_table(spec, categorized, ["category"], ci, alpha, seed)
    table = table.assign(
        _method=table["method"].map(method_rank),
        _category=table["category"].map(category_rank).fillna(len(category_rank)),
    ).sort_values(["_method", "_category", "category"])
    table = table.drop(columns=["_method", "_category"]).reset_index(drop=True)
    return _with_ratio_intervals(spec, table, categorized, alpha)


def _group_table(spec: MetricSpec, texts: pd.DataFrame, by: list[str], ci: str, alpha: float,
                 seed: int) -> pd.DataFrame:
    """Male and female per group (Figure 2), methods in the paper's order, groups outside a super-group last."""
    method_rank = {name: rank for rank, name in enumerate(_methods(spec))}
    table = _gender_table(spec, texts, by, ci, alpha, seed)
    return (table.assign(_method=table["method"].map(method_rank),
                         _uncategorized=table["category"].eq("") if "category" in by else False)
            .sort_values(["_method", "_uncategorized", *by]).drop(columns=["_method", "_uncategorized"])
            .reset_index(drop=True))


def gender_ratio_view(spec: MetricSpec, scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                      min_expected: int = MIN_EXPECTED, seed: int = 0) -> MetricView:
    """`GenderRatio`: Table 3 and Figure 2, texts classified male / female in the metric's tested domain (gender
    polarity: profession, Section 4.5), as `GenderRatioTables`.

    `<metric>_category`: per Table 3 super-group (`category`), male and female counts and male_to_female ratio per
    method (Gender-Max, Gender-Wavg, unigram matching), the ratio with a 1 - alpha interval with Wikipedia pages
    (`name`) as units (a page's sentences are not independent; `ratio_interval`). `<metric>_ratio_summary`: per method,
    Section 6.2's average of those ratios (`average_ratio`) and the pooled ratio (all male / all female texts), each
    with its interval. `<metric>_group`: the same per fine-grained group, with `male_minus_female` and its page-level
    interval (`difference_interval`; Figure 2 plots the first method). Where pages are too few for an interval, its ends
    are NaN and a `*_note` column says why. Tests: chi-square across super-groups of the male / female / neutral
    distribution per method.
    """
    domains = spec.finding_domains
    assert domains, f"{spec.name}: GenderRatio.check requires the domain it compares"
    domain = domains[0]
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
    category = ratio_summary = tokens = None
    tests: list[PaperTest] = []
    if not categorized.empty:
        category, ratio_summary = _category_table(spec, categorized, ci, alpha, seed)
        for column, display in scored_methods(spec, categorized.columns).values():
            tests.append(chi_square_across_groups(categorized, column, label_sets()[column],
                                                  label=f"{display}: male/female/neutral",
                                                  group_column="category", min_expected=min_expected, domain=domain))
    group = _group_table(spec, texts, by, ci, alpha, seed)
    token_columns = [c for c in (f"{spec.name}_male_tokens", f"{spec.name}_female_tokens") if c in texts]
    if token_columns and not categorized.empty:
        tokens = (categorized.groupby("category", sort=True)[token_columns].sum().astype(int)
                  .rename(columns=lambda c: c.removeprefix(f"{spec.name}_")).reset_index())
    return MetricView(tables=GenderRatioTables(spec.name, group, category, ratio_summary, tokens), tests=tests)
