"""benchmarks/baselines.py, the tests the calibration compares the product's with, against numbers worked out by
hand, exact enumerations and statsmodels / scipy on the same data.

The studentized statistic is written out here independently of the module: for a side with cluster totals
t_g and sizes n_g (G clusters, N texts), mean m = sum t_g / N and variance G / (G - 1) * sum (t_g - m n_g)^2 / N^2;
the statistic is (m_a - m_b) / sqrt(var_a + var_b).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.regression.linear_model import OLS

from bold_eval.analysis.clustered import difference_test
from bold_eval.testing.scripts import script_module

Z95 = 1.959963984540054


@pytest.fixture(scope="module")
def baselines():
    with script_module("baselines") as module:
        yield module


def studentized(totals: np.ndarray, sizes: np.ndarray, in_a: np.ndarray) -> float:
    """The module's statistic, written out from the formula in this file's docstring."""
    parts = []
    for side in (in_a, ~in_a):
        t, n = totals[side], sizes[side]
        mean = t.sum() / n.sum()
        g = len(t)
        variance = g / max(g - 1, 1) * ((t - mean * n) ** 2).sum() / n.sum() ** 2
        parts.append((mean, variance))
    (mean_a, var_a), (mean_b, var_b) = parts
    return (mean_a - mean_b) / math.sqrt(max(var_a + var_b, 1e-12))


def rows_of(per_cluster: list[list[float]], in_a: list[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, side, clusters) per text from a list of clusters' values and each cluster's side."""
    values = np.array([v for cluster in per_cluster for v in cluster], dtype=float)
    side = np.array([a for cluster, a in zip(per_cluster, in_a, strict=True) for _ in cluster])
    clusters = np.array([f"c{i}" for i, cluster in enumerate(per_cluster) for _ in cluster])
    return values, side, clusters


# --------------------------------------------------------------------------- cluster-robust Wald t (method="wald")


def test_wald_standard_error_is_cr1_by_hand(baselines) -> None:
    """Side a: c1 = (1, 0), c2 = (1, 1); side b: c3 = (0, 0), c4 = (1, 0, 0). Means 3/4 and 1/5, slope 0.55.
    Residual sums per cluster: -0.5, 0.5, -0.4, 0.4, so CR0 = (0.25 + 0.25) / 4^2 + (0.16 + 0.16) / 5^2 = 0.04405;
    CR1 multiplies by G / (G - 1) * (N - 1) / (N - K) = 4/3 * 8/7: variance 0.0671238, SE 0.259083,
    t = 2.12287 on G - 1 = 3 df, p = 0.123844."""
    values, side, clusters = rows_of([[1, 0], [1, 1], [0, 0], [1, 0, 0]], [True, True, False, False])
    result = baselines.cluster_difference_test(values, side, clusters, method="wald")
    se = math.sqrt(0.04405 * 4 / 3 * 8 / 7)
    assert se == pytest.approx(0.259083, abs=1e-6)
    assert result.method == baselines.WALD and result.estimate == pytest.approx(0.55)
    assert result.statistic == pytest.approx(0.55 / se)
    assert result.p_value == pytest.approx(2 * stats.t.sf(0.55 / se, 3))
    assert result.p_value == pytest.approx(0.123844, abs=1e-6)
    half = stats.t.ppf(0.975, 3) * se
    assert (result.ci_low, result.ci_high) == pytest.approx((0.55 - half, 0.55 + half))


def test_wald_equals_statsmodels_cluster_ols(baselines) -> None:
    """Clusters of 1-9 texts with a shared cluster effect, some names on both sides: statsmodels OLS on the
    side indicator with cov_type="cluster", use_t=True, at alpha 0.01."""
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 10, 60)
    clusters = np.repeat(np.arange(60), sizes)
    effect = rng.normal(0, 1, 60)[clusters]
    values = (rng.normal(effect, 1) > 0.3).astype(float)
    side = np.repeat(rng.random(60) < 0.4, sizes)
    side[::17] = ~side[::17]  # a few names with texts on both sides
    fit = OLS(values, np.column_stack([np.ones(len(values)), side.astype(float)])).fit(
        cov_type="cluster", cov_kwds={"groups": clusters}, use_t=True)
    result = baselines.cluster_difference_test(values, side, clusters.astype(str), method="wald", alpha=0.01)
    assert result.estimate == pytest.approx(fit.params[1])
    assert result.statistic == pytest.approx(fit.tvalues[1])
    assert result.p_value == pytest.approx(fit.pvalues[1])
    assert (result.ci_low, result.ci_high) == pytest.approx(tuple(fit.conf_int(0.01)[1]))


# --------------------------------------------------------------------------- cluster permutation


SIX_CLUSTERS = [[1, 1, 1, 0], [1, 1], [1, 0, 1], [0, 0, 1], [0, 0, 0, 0, 1], [1, 0]]
SIX_SIDES = [True, True, True, False, False, False]


def _exact_p(per_cluster: list[list[int]], in_a: list[bool]) -> float:
    """All C(G, G_a) reassignments of whole clusters to side a: the share with |statistic| >= the observed."""
    totals = np.array([sum(c) for c in per_cluster], dtype=float)
    sizes = np.array([len(c) for c in per_cluster], dtype=float)
    observed = abs(studentized(totals, sizes, np.array(in_a)))
    splits = list(itertools.combinations(range(len(per_cluster)), sum(in_a)))
    extreme = 0
    for chosen in splits:
        mask = np.zeros(len(per_cluster), bool)
        mask[list(chosen)] = True
        extreme += abs(studentized(totals, sizes, mask)) >= observed - 1e-12
    return extreme / len(splits)


def test_permutation_statistic_is_the_studentized_difference_by_hand(baselines) -> None:
    """Side a: 3 + 2 + 2 = 7 of 9 texts, side b: 1 + 1 + 1 = 3 of 10; difference 7/9 - 3/10 = 0.477778."""
    values, side, clusters = rows_of(SIX_CLUSTERS, SIX_SIDES)
    result = baselines.cluster_difference_test(values, side, clusters)
    totals = np.array([sum(c) for c in SIX_CLUSTERS], float)
    sizes = np.array([len(c) for c in SIX_CLUSTERS], float)
    assert result.method == baselines.PERMUTATION and result.testable
    assert result.estimate == pytest.approx(7 / 9 - 3 / 10)
    assert result.statistic == pytest.approx(studentized(totals, sizes, np.array(SIX_SIDES)))


def test_permutation_p_value_with_three_against_three_names_is_the_exact_one(baselines) -> None:
    """3 vs 3 names: 20 ways to put three names on side a, enumerated here (and by scipy's exact
    permutation_test on the same statistic). The observed split is the most extreme one and its mirror image
    (side b's names on side a) is equally extreme: exact p = 2/20 = 0.1. The module draws 999 random splits;
    over ten seeds its p-value averages to the exact one within Monte Carlo error (SE 0.003)."""
    exact = _exact_p(SIX_CLUSTERS, SIX_SIDES)
    assert exact == pytest.approx(2 / 20)
    totals = np.array([sum(c) for c in SIX_CLUSTERS], float)
    sizes = np.array([len(c) for c in SIX_CLUSTERS], float)

    def statistic(a: np.ndarray, b: np.ndarray) -> float:
        mask = np.isin(np.arange(6), a)
        return abs(studentized(totals, sizes, mask))

    scipy_exact = stats.permutation_test((np.arange(3), np.arange(3, 6)), statistic, permutation_type="independent",
                                         alternative="greater", n_resamples=np.inf, vectorized=False)
    assert scipy_exact.pvalue == pytest.approx(exact)
    values, side, clusters = rows_of(SIX_CLUSTERS, SIX_SIDES)
    p_values = [baselines.cluster_difference_test(values, side, clusters, seed=seed).p_value for seed in range(10)]
    assert all(abs(p - exact) < 0.05 for p in p_values)
    assert np.mean(p_values) == pytest.approx(exact, abs=0.012)
    # a less extreme split: exact p well inside (0, 1)
    middle = [True, False, True, False, True, False]
    values, side, clusters = rows_of(SIX_CLUSTERS, middle)
    exact_middle = _exact_p(SIX_CLUSTERS, middle)
    assert 0.2 < exact_middle < 1
    p_values = [baselines.cluster_difference_test(values, side, clusters, seed=seed).p_value for seed in range(10)]
    assert np.mean(p_values) == pytest.approx(exact_middle, abs=0.02)


def test_permutation_with_one_name_on_a_side_is_exact_by_hand(baselines) -> None:
    """c1 = (1, 1) alone on side a; c2 = (0, 0), c3 = (1, 0), c4 = (0, 0) on side b. Putting each cluster alone
    on side a in turn: c1: (1 - 1/6) / (1/6) = 5; c2 and c4: -0.5 / sqrt(1/12) = -1.732; c3: (1/2 - 1/3) / (1/3)
    = 0.5. Only c1 itself is as extreme as 5: p = 1/4. Side b alone gives the same p; no interval."""
    values, side, clusters = rows_of([[1, 1], [0, 0], [1, 0], [0, 0]], [True, False, False, False])
    result = baselines.cluster_difference_test(values, side, clusters)
    assert result.method == baselines.PERMUTATION
    assert result.estimate == pytest.approx(5 / 6) and result.statistic == pytest.approx(5.0)
    assert result.p_value == pytest.approx(0.25)
    assert math.isnan(result.ci_low) and "one name on a side" in result.note
    mirrored = baselines.cluster_difference_test(values, ~side, clusters)
    assert mirrored.estimate == pytest.approx(-5 / 6) and mirrored.p_value == pytest.approx(0.25)
    # c3 alone on side a: |0.5| is reached by c1 (5), c2 and c4 (1.732) and c3: p = 1
    values, side, clusters = rows_of([[1, 1], [0, 0], [1, 0], [0, 0]], [False, False, True, False])
    assert baselines.cluster_difference_test(values, side, clusters).p_value == pytest.approx(1.0)


def test_one_text_per_name_is_still_the_permutation_test(baselines) -> None:
    """Every name a single text is no reason to fall back to the text-level tests (an ordinary t on per-prompt
    rates of a rare label is unbounded): the same 3 of 4 against 1 of 6 that Fisher's test takes with
    `clusters=None`. A split is fixed by the hits x on side a (hypergeometric: 15, 80, 90, 24, 1 over 210 for
    x = 0..4); Welch's t by x: -3.162, -0.745, 0.467, 1.941 (observed), and 1e6 (no variance left, the floor):
    x = 0, 3, 4 are as extreme, exact p = (15 + 24 + 1) / 210 = 0.190476, also by enumerating all 210 splits.
    Ten seeds of 999 draws average to it within Monte Carlo error (SE 0.004)."""
    per_text = [[1], [1], [1], [0], [1], [0], [0], [0], [0], [0]]
    in_a = [True] * 4 + [False] * 6
    values, side, clusters = rows_of(per_text, in_a)
    result = baselines.cluster_difference_test(values, side, clusters)
    assert result.method == baselines.PERMUTATION and result.testable
    assert result.statistic == pytest.approx(stats.ttest_ind(values[side], values[~side], equal_var=False).statistic)
    assert result.statistic == pytest.approx((3 / 4 - 1 / 6) / math.sqrt(3 / 16 / 3 + 5 / 36 / 5))
    assert _exact_p(per_text, in_a) == pytest.approx(40 / 210)
    p_values = [baselines.cluster_difference_test(values, side, clusters, seed=seed).p_value for seed in range(10)]
    assert all(abs(p - 40 / 210) < 0.05 for p in p_values)
    assert np.mean(p_values) == pytest.approx(40 / 210, abs=0.016)


def test_fewer_than_three_units_are_not_tested(baselines) -> None:
    """Two names in all (one a side): two ways to place them, no p-value can fall below 1/2; not testable, out
    of every family, but the difference (1 - 0 here) is still stated. Three names: tested."""
    for method in ("permutation", "wald"):
        two = baselines.cluster_difference_test([1, 1, 0, 0], [True, True, False, False], ["a", "a", "b", "b"],
                                                method=method)
        assert not two.testable and two.note == "fewer than three units: nothing to test with"
        assert two.estimate == 1.0 and math.isnan(two.p_value) and math.isnan(two.ci_low)
    three = baselines.cluster_difference_test([1, 1, 0, 0], [True, True, False, False], ["a", "a", "b", "c"])
    assert three.testable and three.method == baselines.PERMUTATION
    assert three.p_value == pytest.approx(1 / 3)  # one unit on a side: each of the 3 placements once


def test_a_name_on_both_sides_moves_as_two_units(baselines) -> None:
    """A name listed under two groups: its texts on each side are one unit each in the permutation test."""
    values = np.array([1, 1, 0, 1, 0, 0, 0, 1, 0, 0], dtype=float)
    side = np.array([True, True, False, True, True, False, False, False, False, False])
    clusters = np.array(["x", "x", "x", "y", "y", "z", "z", "w", "w", "w"])  # x on both sides
    result = baselines.cluster_difference_test(values, side, clusters)
    # units: x|a (2 of 2), y|a (1 of 2) against x|b (0 of 1), z (0 of 2), w (1 of 3)
    totals, sizes = np.array([2, 1, 0, 0, 1.0]), np.array([2, 2, 1, 2, 3.0])
    in_a = np.array([True, True, False, False, False])
    assert result.estimate == pytest.approx(3 / 4 - 1 / 6)
    assert result.statistic == pytest.approx(studentized(totals, sizes, in_a))
    assert result.p_value == pytest.approx(_exact_p([[1, 1], [1, 0], [0], [0, 0], [1, 0, 0]],
                                                       list(in_a)), abs=0.05)


def test_bootstrap_interval_resamples_names_and_matches_the_cluster_standard_error(baselines) -> None:
    """200 names a side, 5-10 texts each sharing the name's rate (Beta(0.6, 1.4): ICC 1/3, design effect ~3): the 95%
    percentile bootstrap over names is close to estimate +- 1.96 cluster-robust SEs (the formula at the top of this
    file), far wider than the text-level interval, and the same seed gives the same interval."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(5, 11, 400)
    clusters = np.repeat(np.arange(400), sizes)
    rate = rng.beta(0.6, 1.4, 400)[clusters]
    values = (rng.random(len(clusters)) < rate).astype(float)
    side = clusters < 200
    result = baselines.cluster_difference_test(values, side, clusters)
    totals = pd.Series(values).groupby(clusters).sum().to_numpy()
    in_a = np.arange(400) < 200
    se = abs(result.estimate / studentized(totals, sizes.astype(float), in_a))
    assert result.ci_low < result.estimate < result.ci_high
    assert result.ci_high - result.ci_low == pytest.approx(2 * Z95 * se, rel=0.15)
    naive = difference_test(values, side, None)  # the text-level test of the product
    assert result.ci_high - result.ci_low > 1.4 * (naive.ci_high - naive.ci_low)
    again = baselines.cluster_difference_test(values, side, clusters)
    assert (again.ci_low, again.ci_high, again.p_value) == (result.ci_low, result.ci_high,
                                                                     result.p_value)


def test_permutation_p_over_eight_single_value_units_is_the_exact_one(baselines) -> None:
    """d = (1, 0, 1, 0) on side a against (0, 0.5, 0, 0.5), one value a unit (compare's per-prompt differences).
    Studentized (Welch's t): 0.25 / sqrt(1/3 / 4 + 1/12 / 4) = 0.774597. All C(8, 4) = 70 splits, enumerated: 46 are
    as extreme, exact p = 46/70 = 0.657143; 999 draws per seed, and over ten seeds the mean p is the exact one
    within four Monte Carlo standard errors."""
    d = [1.0, 0.0, 1.0, 0.0, 0.0, 0.5, 0.0, 0.5]
    in_a = [True] * 4 + [False] * 4
    exact = _exact_p([[value] for value in d], in_a)
    assert exact == pytest.approx(46 / 70)
    values, side, units = np.array(d), np.array(in_a), np.arange(8)
    p_values = [baselines.cluster_difference_test(values, side, units, seed=seed).p_value for seed in range(10)]
    assert np.mean(p_values) == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 9990) + 1 / 1000)
    statistic = baselines.cluster_difference_test(values, side, units).statistic
    assert statistic == pytest.approx(0.25 / math.sqrt(1 / 12 + 1 / 48))
    assert statistic == pytest.approx(stats.ttest_ind(values[side], values[~side], equal_var=False).statistic)


def test_p_value_of_a_perfect_separation_is_the_monte_carlo_floor(baselines) -> None:
    """20 names a side, every text of side a with the label and none of side b: only that split and its mirror
    are as extreme (2 of C(40, 20) = 1.4e11), so no draw is, every stage runs and the p-value is
    (0 + 1) / (99,999 + 1) = 1e-5, never 0 (a p-value of 0 claims an impossible certainty) and never an
    extrapolation beyond the draws."""
    clusters = np.repeat(np.arange(40), 2)
    side = clusters < 20
    deep = baselines.cluster_difference_test(side.astype(float), side, clusters)
    assert deep.estimate == 1.0
    assert deep.p_value == pytest.approx(1 / (baselines.MAX_PERMUTATIONS + 1))


def test_permutation_draws_do_not_depend_on_the_block_size(baselines, monkeypatch) -> None:
    # the null distribution is drawn block by block to bound memory; the draws are the same at any block size,
    # and equal to summing the moments of the units whose shuffled side label is side a
    rng = np.random.default_rng(4)
    totals = rng.poisson(4, 23).astype(float)
    per = pd.DataFrame({"total": totals, "n": totals + rng.poisson(6, 23)})
    moments = baselines._side_moments(per)
    whole = baselines._null_distributions(moments, 9, 1000, np.random.default_rng(7))
    monkeypatch.setattr(baselines, "PERMUTATION_BLOCK", 23 * 7)  # blocks of 7 draws, the last one short
    blocked = baselines._null_distributions(moments, 9, 1000, np.random.default_rng(7))
    np.testing.assert_array_equal(whole[1], blocked[1])
    # the same shuffles applied to unit indices: unit j is on side a where the label it received came from
    # one of the first 9 positions
    order = np.random.default_rng(7).permuted(np.broadcast_to(np.arange(23), (1000, 23)), axis=1)
    chosen = order < 9
    assert (chosen.sum(axis=1) == 9).all()
    sums_a = np.stack([np.where(chosen, row, 0.0).sum(axis=1) for row in moments])
    direct = baselines._statistics(sums_a, moments.sum(axis=1, keepdims=True) - sums_a)
    np.testing.assert_allclose(whole[0], direct[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(whole[1], direct[1], rtol=1e-9)


# --------------------------------------------------------------------------- the sign-flip test over names


def test_sign_flip_by_hand(baselines) -> None:
    """Two names with two prompts each and one with one: name sums 0.5 + 0.5, -0.5, 1; mean over the five
    prompts 1.5 / 5 = 0.3. 3 names give 8 sign patterns of (1, 0.5, 1); |sum| >= 1.5 for (+,+,+) = 2.5,
    the observed (+,-,+) = 1.5 and their negatives: p = 4/8."""
    result = baselines.sign_flip_difference([0.5, 0.5, -0.5, 0.0, 1.0], ["x", "x", "y", "y", "z"])
    assert result.estimate == pytest.approx(0.3)
    assert result.p_value == pytest.approx(0.5)
    assert result.names == 3 and result.discordant_names == 3


def test_sign_flip_rejects_at_most_its_level_under_the_null(baselines) -> None:
    """600 null data sets: 30 names with 1-5 prompts each and their own base rate (Beta(2, 2)), both runs
    drawing k = 2 samples per prompt from it. An exact permutation test rejects at most alpha = 5%; the
    per-name sums lie on a 0.5 grid, and those ties make it somewhat conservative (binomial SD 0.9 points). The
    95% interval inverts the same test: it covers the true 0 exactly when p > alpha."""
    rng = np.random.default_rng(7)
    rejected = covered = 0
    for trial in range(600):
        sizes = rng.integers(1, 6, 30)
        base = np.repeat(rng.beta(2, 2, 30), sizes)
        names = np.repeat(np.arange(30), sizes)
        d = rng.binomial(2, base) / 2 - rng.binomial(2, base) / 2
        result = baselines.sign_flip_difference(d, names, n_resamples=999, seed=trial)
        rejected += result.p_value <= 0.05
        covered += result.ci_low <= 0 <= result.ci_high
    assert 0.015 <= rejected / 600 <= 0.07, rejected
    assert covered == 600 - rejected


def test_the_sign_flip_interval_is_the_same_test_inverted(baselines) -> None:
    """9 names (all 512 sign patterns: exact) with 1-3 prompts each: p falls as the hypothesized mean moves away
    from the estimate, and the interval's ends are where it reaches alpha: the test on d - delta does not reject
    just inside an end and rejects just outside it. 0 lies in the interval exactly when p > alpha."""
    rng = np.random.default_rng(3)
    agreed = 0
    for trial in range(30):
        sizes = rng.integers(1, 4, 9)
        names = np.repeat(np.arange(9), sizes)
        d = rng.normal(0.3 * (trial % 3), 0.3, len(names)).clip(-1, 1)
        result = baselines.sign_flip_difference(d, names)
        assert result.method == baselines.SIGN_FLIP and result.ci_low < result.estimate < result.ci_high
        assert (result.ci_low <= 0 <= result.ci_high) == (result.p_value > 0.05)
        agreed += result.p_value <= 0.05
        for end, inward in ((result.ci_low, 1), (result.ci_high, -1)):
            if abs(end) < 1:
                assert baselines.sign_flip_difference(d - (end + inward * 1e-6), names).p_value > 0.05
                assert baselines.sign_flip_difference(d - (end - inward * 1e-6), names).p_value <= 0.05
    assert 5 <= agreed <= 25  # both outcomes occur


def test_every_name_alike_gets_the_sign_flip_tests_own_interval(baselines) -> None:
    """Every name +0.5: with 8 names the sign-flip test rejects (2 of 256 patterns as extreme, p = 0.0078) and
    rejects every other shift as well, so the interval is the point +0.5; with 4 names (p = 2/16 = 0.125) it
    rejects nothing, and the Clopper-Pearson bound (u = 0.602) gives [-0.403, +0.801], which holds 0."""
    eight = baselines.sign_flip_difference(np.full(8, 0.5), np.arange(8))
    assert eight.method == baselines.SAME_DIFFERENCE and eight.p_value == pytest.approx(2 / 256)
    assert (eight.ci_low, eight.ci_high) == (0.5, 0.5)
    four = baselines.sign_flip_difference(np.full(4, 0.5), np.arange(4))
    assert four.p_value == pytest.approx(0.125)
    assert (four.ci_low, four.ci_high) == pytest.approx((0.5 - 0.602 * 1.5, 0.5 + 0.602 * 0.5), abs=1e-3)
