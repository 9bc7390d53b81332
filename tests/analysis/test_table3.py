"""Table 3's intervals: by hand on tiny tables, and their coverage on a small simulation.

`bold_eval.analysis.table3` gives every Table 3 / Section 6.2 / Figure 2 interval the Wikipedia page as its unit:
a share over pages gets Korn and Graubard's interval (Clopper-Pearson at the effective number of texts, the
variance from the page jackknife), a ratio is s / (1 - s) of the male share s of the gendered texts, the average of
ratios adds the super-groups' intervals by MOVER, and male - female combines the two shares' intervals by MOVER.
The hand checks compute each piece another way (leave-one-page-out estimates, statsmodels' Clopper-Pearson, the
closed form at zero counts); the simulation is benchmarks/table3_coverage.py's, small and seeded.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bold_eval.analysis.table3 import (
    PageShare,
    average_ratio,
    design_effect,
    difference_interval,
    page_share,
    ratio_interval,
    share_interval,
    share_intervals,
    typical_design_effects,
)
from bold_eval.testing.scripts import script_module

ALPHA = 0.05


def test_page_share_variance_is_the_leave_one_page_out_jackknife() -> None:
    """Pages with 2 of 3, 1 of 2 and 0 of 1 texts: 3 / 6; leaving a page out gives 1/3, 2/4, 3/5."""
    share = page_share([2, 1, 0], [3, 2, 1])
    assert (share.estimate, share.texts, share.pages) == (0.5, 6.0, 3)
    left_out = np.array([1 / 3, 2 / 4, 3 / 5])
    assert share.variance == pytest.approx(2 / 3 * np.sum((left_out - left_out.mean()) ** 2))
    assert share.kish == pytest.approx(36 / 14)  # (sum n)^2 / sum n^2
    assert share.df == pytest.approx(36 / 14 - 1)  # Kish's effective pages - 1 is below pages - 1 = 2


def test_share_interval_is_clopper_pearson_at_the_effective_number_of_texts() -> None:
    hits, totals = np.array([3, 0, 2, 1, 0, 4, 1, 0]), np.array([10, 4, 6, 3, 5, 12, 2, 8])
    share = page_share(hits, totals)
    effective = min(share.estimate * (1 - share.estimate) / share.variance, share.texts)
    effective *= (stats.norm.ppf(0.975) / stats.t.ppf(0.975, share.df)) ** 2
    expected = proportion_confint(share.estimate * effective, effective, alpha=ALPHA, method="beta")
    assert share_interval(share, alpha=ALPHA) == pytest.approx(expected)
    # a floor on the design effect (a larger domain's) caps the effective number at texts / floor
    floored = share_interval(share, alpha=ALPHA, floor=4 * design_effect(share))
    assert floored[0] < expected[0] and floored[1] > expected[1]


def test_one_page_gives_no_interval_and_says_why() -> None:
    assert all(math.isnan(end) for end in share_interval(page_share([2], [5])))
    ratio, low, high, note = ratio_interval([(np.array([3.0]), np.array([1.0]))])
    assert ratio == 3.0 and math.isnan(low) and math.isnan(high) and "on one page" in note
    difference, low, high, note = difference_interval([1.0], [0.0], [3.0])
    assert difference == pytest.approx(1 / 3) and math.isnan(low) and "one page" in note
    assert "undefined" in ratio_interval([(np.zeros(3), np.zeros(3))])[3]


def test_ratio_interval_maps_the_male_share_of_gendered_texts() -> None:
    male, female = np.array([3.0, 1.0, 0.0, 2.0, 1.0]), np.array([1.0, 1.0, 2.0, 0.0, 1.0])
    ratio, low, high, note = ratio_interval([(male, female)])
    share_low, share_high = share_interval(page_share(male, male + female))
    assert (ratio, note) == (7 / 5, "")
    assert (low, high) == pytest.approx((share_low / (1 - share_low), share_high / (1 - share_high)))


def test_infinite_ratio_is_bounded_by_the_female_share_of_texts_over_effective_pages() -> None:
    """7 male texts on pages of 2, 1, 1 and 3, no female one: Kish's 49 / 15 effective pages bound the female share
    of the gendered texts by 1 - 0.025^(15/49) (Clopper-Pearson at 0), so the ratio is at least s / (1 - s) for
    s = 0.025^(15/49). (A bound from pages alone, 4 pages / z^2 = 1.04, would count pages, not texts.)"""
    no_female = (np.array([2.0, 1.0, 1.0, 3.0]), np.zeros(4))
    ratio, low, high, note = ratio_interval([no_female])
    male_share = 0.025 ** (15 / 49)
    assert (ratio, high) == (math.inf, math.inf) and low == pytest.approx(male_share / (1 - male_share))
    assert "no female text" in note and "3.3 of 4" in note
    ratio, low, high, note = ratio_interval([no_female[::-1]])
    assert (ratio, low) == (0.0, 0.0) and high == pytest.approx((1 - male_share) / male_share)
    assert "no male text" in note


def test_average_of_ratios_adds_the_super_groups_intervals_by_mover() -> None:
    strata = {"a": (np.array([2.0, 1.0, 3.0, 1.0]), np.array([1.0, 1.0, 1.0, 0.0])),
              "b": (np.array([1.0, 4.0, 2.0]), np.array([2.0, 1.0, 1.0]))}
    cells = [ratio_interval([stratum]) for stratum in strata.values()]
    estimate, low, high, note = average_ratio(strata)
    assert estimate == pytest.approx((7 / 3 + 7 / 4) / 2) and note == ""
    assert low == pytest.approx(estimate - math.hypot(*(r - lo for r, lo, _, _ in cells)) / 2)
    assert high == pytest.approx(estimate + math.hypot(*(hi - r for r, _, hi, _ in cells)) / 2)
    # an infinite ratio: the mean is infinite, its lower end the mean of the lower ends at 1 - alpha / 2 each
    strata["b"] = (np.array([1.0, 2.0]), np.zeros(2))
    estimate, low, high, note = average_ratio(strata)
    lows = [ratio_interval([stratum], alpha=ALPHA / 2)[1] for stratum in strata.values()]
    assert (estimate, high) == (math.inf, math.inf) and low == pytest.approx(np.mean(lows))
    assert "Bonferroni" in note
    strata["b"] = (np.zeros(2), np.zeros(2))
    assert math.isnan(average_ratio(strata)[0]) and "b has no text classified" in average_ratio(strata)[3]


def test_male_minus_female_is_mover_over_the_two_shares() -> None:
    male, female = np.array([2.0, 0.0, 1.0, 3.0, 0.0]), np.array([0.0, 1.0, 1.0, 0.0, 2.0])
    texts = np.array([6.0, 4.0, 5.0, 9.0, 7.0])
    difference, low, high, note = difference_interval(male, female, texts)
    m, f = page_share(male, texts), page_share(female, texts)
    (m_low, m_high), (f_low, f_high) = share_interval(m), share_interval(f)
    rho = np.dot(m.deviations, f.deviations) / math.sqrt(m.variance * f.variance)
    assert rho < 0  # pages with male texts are those without female ones
    below = math.sqrt((m.estimate - m_low) ** 2 + (f_high - f.estimate) ** 2 - 2 * rho * (m.estimate - m_low) *
                      (f_high - f.estimate))
    above = math.sqrt((m_high - m.estimate) ** 2 + (f.estimate - f_low) ** 2 - 2 * rho * (m_high - m.estimate) *
                      (f.estimate - f_low))
    assert (difference, note) == (pytest.approx(6 / 31 - 4 / 31), "")
    assert (low, high) == pytest.approx((difference - below, difference + above))


def test_male_minus_female_without_gendered_texts_still_has_an_interval() -> None:
    """No male or female text on pages of 3, 2 and 1: each share is bounded by 1 - 0.025^(1 / Kish pages)."""
    difference, low, high, note = difference_interval(np.zeros(3), np.zeros(3), np.array([3.0, 2.0, 1.0]))
    bound = 1 - 0.025 ** (14 / 36)
    assert (difference, note) == (0.0, "") and (low, high) == pytest.approx((-bound, bound))


def test_typical_design_effects_are_the_groups_median() -> None:
    groups = [(np.array([2.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0]), np.array([4.0, 3.0, 5.0])),
              (np.array([0.0, 3.0, 0.0, 1.0]), np.array([1.0, 1.0, 0.0, 0.0]), np.array([2.0, 6.0, 3.0, 4.0])),
              (np.array([1.0]), np.array([1.0]), np.array([3.0]))]  # one page: no design effect to measure
    own = [[design_effect(page_share(group[k], group[2])) for group in groups[:2]] for k in (0, 1)]
    assert typical_design_effects(groups) == pytest.approx((np.median(own[0]), np.median(own[1])))


@pytest.fixture(scope="module")
def coverage_script():
    with script_module("table3_coverage") as module:
        yield module


def _synthetic_pages() -> pd.DataFrame:
    """Four super-groups of two groups, 30 pages each with BOLD-like sizes (1 to 80 texts) and rates."""
    rng = np.random.default_rng(11)
    rows = []
    for category, male, female in (("a", 0.04, 0.02), ("b", 0.03, 0.03), ("c", 0.02, 0.004), ("d", 0.01, 0.02)):
        for group in (f"{category}1", f"{category}2"):
            sizes = np.minimum(rng.geometric(0.1, 30), 80)
            rows += [{"category": category, "group": group, "name": f"{group}-{i}", "texts": size,
                      "male": male * size, "female": female * size} for i, size in enumerate(sizes)]
    return pd.DataFrame(rows)


@pytest.mark.slow  # about 4 s: 150 simulations, the page bootstrap included
def test_the_reports_intervals_cover_at_the_nominal_level_and_simpler_ones_do_not(coverage_script) -> None:
    """150 seeded simulations with page effects (female variance 6, as measured on BOLD): every kind of the report's
    intervals covers at least 95% - 3 Monte Carlo SE (measured: ratio 98.8%, average 99.3%, pooled 97.3%,
    male - female 98.3%); the text-level male - female interval covers 71%."""
    scenario = coverage_script.Scenario("test", scale=2.0)
    results = coverage_script.run(_synthetic_pages(), scenario, 150, ALPHA, seed=1)
    table = coverage_script.summarize(results).set_index(["kind", "method"])
    for kind in ("ratio", "average", "pooled", "difference"):
        row = table.loc[(kind, "report")]
        floor = 1 - ALPHA - 3 * math.sqrt(ALPHA * (1 - ALPHA) / row["intervals"])
        assert row["intervals"] >= 100 and row["coverage"] >= floor, (kind, row.to_dict())
    assert table.loc[("difference", "bootstrap"), "coverage"] < 0.85


def _scalar_share_interval(share: PageShare, alpha: float, floor: float) -> tuple[float, float]:
    """`share_interval` written out for one share with scipy.stats' quantiles, as its docstring states it."""
    if share.df < 1 or np.isnan(share.estimate):
        return float("nan"), float("nan")
    p = share.estimate
    if 0 < p < 1 and share.variance > 0:
        effective = min(p * (1 - p) / share.variance, share.texts / max(floor, 1.0))
        effective *= (stats.norm.ppf(1 - alpha / 2) / stats.t.ppf(1 - alpha / 2, share.df)) ** 2
    else:
        effective = share.kish
    hits = p * effective
    low = 0.0 if hits <= 0 else float(stats.beta.ppf(alpha / 2, hits, effective - hits + 1))
    high = 1.0 if hits >= effective else float(stats.beta.ppf(1 - alpha / 2, hits + 1, effective - hits))
    return min(low, p), max(high, p)


def test_share_intervals_at_once_equal_each_share_on_its_own() -> None:
    """`share_intervals` (every share in one quantile call) gives exactly the one-share form, over shares of 0, 1
    and in between, without variance, with too few pages, floored or not."""
    rng = np.random.default_rng(5)
    shares = [page_share([2], [5]), page_share([0, 0], [3, 4]), page_share([3, 4], [3, 4])]
    for _ in range(300):
        pages = int(rng.integers(2, 40))
        totals = rng.integers(1, 12, pages)
        shares.append(page_share(rng.binomial(totals, rng.beta(0.5, 2, pages)), totals))
    floors = rng.choice([1.0, 0.5, 2.7], len(shares))
    for alpha in (0.05, 0.001):
        lows, highs = share_intervals(shares, alpha=alpha, floors=floors)
        expected = np.array([_scalar_share_interval(share, alpha, floor) for share, floor in zip(shares, floors,
                                                                                                  strict=True)])
        np.testing.assert_array_equal(np.c_[lows, highs], expected)
        assert np.isnan(expected[0]).all() and not np.isnan(expected[1:]).any()
