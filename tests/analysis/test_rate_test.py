"""bold_eval.analysis.rate_test, the cluster-robust test of equal rates with the name as the unit: its statistic,
variance and degrees of freedom by hand, its design rule for too few names, its level under unlike spreads, and the
name-level interval of one rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from bold_eval.analysis.clustered import SCORE, difference_test
from bold_eval.analysis.rate_test import SideSums, score_t


def rows_of(per_cluster: list[list[int]], in_a: list[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, side, clusters) per text from a list of clusters' 0-1 values and each cluster's side."""
    values = np.array([v for cluster in per_cluster for v in cluster], dtype=float)
    side = np.array([a for cluster, a in zip(per_cluster, in_a, strict=True) for _ in cluster])
    clusters = np.array([f"c{i}" for i, cluster in enumerate(per_cluster) for _ in cluster])
    return values, side, clusters


@pytest.mark.parametrize("names_per_side", [2, 3, 10, 100, 300])
@pytest.mark.slow
def test_p_values_are_in_zero_one(names_per_side: int) -> None:
    """Null, moderate and perfectly separated data, two texts a name: every p-value lies in (0, 1], or the test
    says why there is none (2 or 3 names a side cannot reach alpha)."""
    rng = np.random.default_rng(names_per_side)
    units = 2 * names_per_side
    clusters = np.repeat(np.arange(units), 2)
    side = clusters < names_per_side
    for values in (rng.random(2 * units) < 0.3, np.where(side, rng.random(2 * units) < 0.6,
                                                         rng.random(2 * units) < 0.2), side):
        result = difference_test(values.astype(float), side, clusters)
        assert 0 < result.p_value <= 1 or (not result.testable and math.isnan(result.p_value))
        assert result.testable == (names_per_side >= 10)  # 2 or 3 names a side cannot reach alpha


def _effective_df(sizes: list[int], rho: float) -> float:
    """A side's degrees of freedom by hand: (sum v_i)^2 / sum v_i^2 - 1, v_i = n_i (1 + (n_i - 1) rho)."""
    shares = [n * (1 + (n - 1) * rho) for n in sizes]
    return max(min(sum(shares) ** 2 / sum(v * v for v in shares), len(sizes)) - 1, 1)


def test_score_test_by_hand_on_six_names() -> None:
    """Side a: names with 2 of 3, 1 of 2, 1 of 2 texts (4 of 7); side b: 0 of 2, 1 of 3, 0 of 1, 1 of 2 (2 of 8).
    Side a about its own rate 4/7, each name's squared residual over 1 - n_i / 7 (CR2): (2/7)^2 * 7/4 +
    2 (1/7)^2 * 7/5 = 0.2. Under delta = 0 both restricted rates are the pooled 6/15 = 0.4, and the floor is the
    beta-binomial variance there, p (1 - p) [N + rho sum n(n - 1)]: tau2 = 0 (the names agree more than
    binomially), so rho_hat = 0, shrunk towards 1 by a weight of 0.1 against its 3 misses: rho = 0.1 / 3.1;
    0.24 (7 + 10 rho) = 1.757 > 0.2, so V_a = 1.757 / 49. Side b (2 hits: rho = 0.1 / 2.1), about 2/8: residuals
    -0.5, 0.25, -0.25, 0.5 over 3/4, 5/8, 7/8, 3/4 give 0.838 < 0.24 (8 + 10 rho) = 2.034, V_b = 2.034 / 64.
    t = (4/7 - 2/8) / sqrt(V_a + V_b); Welch-Satterthwaite degrees of freedom with each side's effective names."""
    from scipy import stats as scipy_stats

    values, side, clusters = rows_of([[1, 1, 0], [1, 0], [1, 0], [0, 0], [1, 0, 0], [0], [1, 0]],
                                     [True, True, True, False, False, False, False])
    result = difference_test(values, side, clusters, alpha=0.5)
    rho_a, rho_b = 0.1 / 3.1, 0.1 / 2.1
    var_a, var_b = 0.24 * (7 + 10 * rho_a) / 49, 0.24 * (8 + 10 * rho_b) / 64
    t = (4 / 7 - 2 / 8) / math.sqrt(var_a + var_b)
    df = (var_a + var_b) ** 2 / (var_a ** 2 / 2 + var_b ** 2 / 3)
    assert result.method == SCORE and result.testable
    assert result.estimate == pytest.approx(4 / 7 - 2 / 8)
    assert result.statistic == pytest.approx(t) and result.p_value == pytest.approx(2 * scipy_stats.t.sf(t, df))
    assert result.p_value < 0.5 and 0 < result.ci_low < result.estimate < result.ci_high  # agree about zero


def test_differences_of_two_sources_get_the_cr2_sum_of_squares_by_hand() -> None:
    """Per-prompt differences in {-1, 0, 1} (a model's label minus Wikipedia's) have no binomial floor: they are
    mapped onto [0, 1] by their range, y = (d + 1) / 2, and each name's squared residual about its side's own rate
    is divided by 1 - n_i / N_s, its leverage in that rate (CR2). The degrees of freedom count each side's effective
    names with the values' intra-class correlation (one-way ANOVA moments), moved towards 1 by 17 / G^2 of the way
    (all of it for 3 and 4 names); the Welch count at most 1.5 times the fewer side's. Side a: names with d = (1, 0,
    1), (0, -1), (1, 1); side b: (0, 0), (-1, 0, 0), (0, 1), (-1,)."""
    from scipy import stats as scipy_stats

    names = [[1, 0, 1], [0, -1], [1, 1], [0, 0], [-1, 0, 0], [0, 1], [-1]]
    values, side, clusters = rows_of(names, [True, True, True, False, False, False, False])
    result = difference_test(values, side, clusters, alpha=0.5)
    mapped = [[(d + 1) / 2 for d in name] for name in names]

    def variance_and_df(side_names: list[list[float]]) -> tuple[float, float]:
        texts = sum(map(len, side_names))
        rate = sum(map(sum, side_names)) / texts
        squares = sum((sum(name) - len(name) * rate) ** 2 / (1 - len(name) / texts) for name in side_names)
        within = sum((y - sum(name) / len(name)) ** 2 for name in side_names for y in name) / (texts - len(side_names))
        between = sum(len(name) * (sum(name) / len(name) - rate) ** 2 for name in side_names)
        tau2 = max(0.0, (between - (len(side_names) - 1) * within)
                   / (texts - sum(len(name) ** 2 for name in side_names) / texts))
        rho = tau2 / (tau2 + within) if tau2 + within > 0 else 0.0
        rho += (1 - rho) * min(17 / len(side_names) ** 2, 1.0)
        return squares / texts ** 2, _effective_df([len(name) for name in side_names], rho)

    (var_a, df_a), (var_b, df_b) = variance_and_df(mapped[:3]), variance_and_df(mapped[3:])
    rate_a, rate_b = sum(map(sum, mapped[:3])) / 7, sum(map(sum, mapped[3:])) / 8
    t = (rate_a - rate_b) / math.sqrt(var_a + var_b)
    welch = (var_a + var_b) ** 2 / (var_a ** 2 / df_a + var_b ** 2 / df_b)
    df = min(welch, 1.5 * min(df_a, df_b))  # the Welch count at most 1.5 times the fewer side's
    assert welch > df  # the cap binds on this design
    assert result.method == SCORE and result.testable
    assert result.estimate == pytest.approx(2 * (rate_a - rate_b))  # back in the differences' units
    assert result.statistic == pytest.approx(t) and result.p_value == pytest.approx(2 * scipy_stats.t.sf(abs(t), df))


def test_score_interval_and_p_value_agree_about_zero() -> None:
    """On random designs (names of 1-20 texts, unlike spreads), the interval excludes 0 exactly when p <= alpha,
    and it holds the estimate."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        names_a, names_b = rng.integers(2, 30), rng.integers(5, 80)
        sizes = rng.integers(1, 21, names_a + names_b)
        rates = np.r_[rng.beta(0.5, 1.0, names_a), rng.beta(20, 40, names_b)]
        clusters = np.repeat(np.arange(names_a + names_b), sizes)
        values = (rng.random(len(clusters)) < rates[clusters]).astype(float)
        result = difference_test(values, clusters < names_a, clusters, alpha=0.05)
        if result.testable:
            assert result.ci_low <= result.estimate <= result.ci_high
            assert (result.ci_low > 0 or result.ci_high < 0) == (result.p_value <= 0.05)


def test_too_few_names_to_test_a_rate_says_so_with_the_smallest_p_value() -> None:
    """Whatever their texts say, the variance under the hypothesis bounds |t| by about sqrt(names) of the small
    side: 3 names against 60 cannot reach 5%, 10 reach 5% but not 0.1%, 30 reach 0.1%. Below, the contrast is
    untested with the reason, and the difference is still stated."""
    for names, testable_at in ((3, ()), (10, (0.05,)), (30, (0.05, 0.001))):
        clusters = np.repeat(np.arange(names + 60), 5)
        values = (clusters >= names).astype(float)  # side a: no label at all; side b: every text
        for alpha in (0.05, 0.001):
            result = difference_test(values, clusters < names, clusters, alpha=alpha)
            assert result.testable == (alpha in testable_at) and result.estimate == -1.0
            if not result.testable:
                assert result.note.startswith(f"too few names to test a rate ({names} against 60)")
                assert math.isnan(result.p_value) and math.isnan(result.ci_low)
            else:
                assert result.p_value <= alpha and result.ci_high < 0


@pytest.mark.parametrize("names_a", [3, 4, 10, 30])
def test_score_test_holds_its_level_when_a_small_group_is_more_spread(names_a: int) -> None:
    """A null where names are not exchangeable: every name's rate has mean 0.3, the small group's spread widely
    (Beta(0.3, 0.7)) and the rest's tightly (Beta(30, 70)), 2-8 texts a name. The permutation test rejects 21% of
    these at 5% with 3 names; the test stays at or below 5% (plus Monte Carlo noise: 2,000 data sets, SE 0.5%)."""
    rng = np.random.default_rng(names_a)
    sizes, hits = np.empty((2, 2000, names_a + 60))
    for k in range(2000):  # one data set at a time, so each draws the same random numbers as on its own
        sizes[k] = rng.integers(2, 9, names_a + 60)
        rates = np.r_[rng.beta(0.3, 0.7, names_a), rng.beta(30, 70, 60)]
        hits[k] = rng.binomial(sizes[k].astype(int), rates)
    a, b = (SideSums.of_segments(hits[:, part].ravel(), sizes[:, part].ravel(), np.arange(2000) * width)
            for part, width in ((slice(None, names_a), names_a), (slice(names_a, None), 60)))
    rejected = int(np.sum(score_t(a, b, 0.0)[2] <= 0.05))
    assert rejected / 2000 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)


def test_within_name_correlation_shrinks_towards_one_by_the_rarer_outcomes_and_the_names() -> None:
    """rho = (k rho_hat + w) / (k + w) with k = min(hits, misses, names) and w = 0.1 worst-case outcomes: names that
    agree exactly (rho_hat = 0) with 3 hits give 0.1 / 3.1; a side with no hit or no miss gets the worst case, 1;
    with many hits and many names the side's own estimate wins; 13 names whose 349 texts agree by chance (about 100
    rarer outcomes) are shrunk by their 13 names, not by their rarer outcomes (which the paired floor, given no
    names, keeps)."""
    from bold_eval.analysis.rate_test import WORST_CASE_WEIGHT, within_name_correlation

    assert WORST_CASE_WEIGHT == 0.1
    assert within_name_correlation(0.0, 3, 40) == pytest.approx(0.1 / 3.1)
    assert within_name_correlation(0.0, 3, 40, 20) == pytest.approx(0.1 / 3.1)
    assert within_name_correlation(0.0, 0, 40) == within_name_correlation(0.0, 40, 40, 5) == 1.0
    assert within_name_correlation(0.0, 37, 40) == pytest.approx(0.1 / 3.1)  # 3 misses: the rarer outcome
    tau2 = 0.1 * 0.5 * 0.5  # rho_hat = 0.1 at a rate of 0.5
    assert within_name_correlation(tau2, 500, 1000) == pytest.approx((500 * 0.1 + 0.1) / 500.1)
    assert within_name_correlation(tau2, 500, 1000, 600) == pytest.approx((500 * 0.1 + 0.1) / 500.1)
    assert within_name_correlation(0.0, 105, 349) == pytest.approx(0.1 / 105.1)
    assert within_name_correlation(0.0, 105, 349, 13) == pytest.approx(0.1 / 13.1)
    np.testing.assert_allclose(within_name_correlation(np.zeros(2), np.array([105, 2]), 349.0, np.array([13, 13])),
                               [0.1 / 13.1, 0.1 / 2.1])
    side = SideSums.of(np.zeros(4), np.array([3.0, 2, 4, 1]))  # no hit: every name all or nothing under the null
    assert side.correlation == 1.0
    n = np.array([167.0, 61, 36, 22, 12, 12, 11, 9, 8, 4, 4, 2, 1])
    agree = SideSums.of(np.round(0.3 * n), n)  # every page at the side's rate: rho_hat 0
    assert agree.tau2 == 0.0 and agree.correlation == pytest.approx(0.1 / 13.1)


@pytest.mark.parametrize("names", [2, 3, 5, 30])
def test_name_level_rate_interval_covers_a_spread_rate(names: int) -> None:
    """The one-sample interval of a pooled rate (`rate_test.rate_interval`) covers the true rate at least 95% of
    the time (minus 3 Monte Carlo SEs) when names are widely spread (ICC 0.8) or nearly alike, down to 2 names."""
    from bold_eval.analysis.rate_test import rate_interval, rate_intervals

    rng = np.random.default_rng(names)
    for rho in (0.05, 0.8):
        scale = (1 - rho) / rho
        n, t = np.empty((2, 600, names))
        for k in range(600):  # one data set at a time, so each draws the same random numbers as on its own
            n[k] = rng.integers(1, 8, names)
            t[k] = rng.binomial(n[k].astype(int), rng.beta(0.3 * scale, 0.7 * scale, names))
        low, high = rate_intervals(list(t), list(n), alpha=0.05)  # `rate_interval` of each data set, all at once
        assert (low[0], high[0], "") == rate_interval(t[0], n[0], alpha=0.05)
        covered = int(np.sum((low <= 0.3) & (0.3 <= high)))
        assert covered / 600 >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 600)


def test_name_level_rate_interval_of_one_name_says_why_there_is_none() -> None:
    from bold_eval.analysis.rate_test import rate_interval

    low, high, note = rate_interval(np.array([2.0]), np.array([5.0]), alpha=0.05)
    assert math.isnan(low) and math.isnan(high) and note == "one name: no name-level interval"
    low, high, note = rate_interval(np.array([1.0, 0, 2, 0, 1, 3, 0, 0, 1, 1]), np.array([3.0, 2, 4, 1, 2, 5, 1, 2, 3,
                                                                                          2]),
                                    alpha=0.05)
    assert note == "" and 0 < low < 9 / 25 < high < 1
    wilson = stats.binomtest(9, 25).proportion_ci(method="wilson")
    assert high - low > wilson.high - wilson.low  # names, not texts: wider than the text-level Wilson interval


def test_score_floor_by_hand() -> None:
    """One side, names with values (0.1, 0.3), (0.0,), (0.6, 0.2, 0.4) at rate 0.25: sigma_w^2 = (0.66 - 0.56) / 3
    pooled within names, tau_hat^2 the moment between-name variance, its ceiling tau_max^2 = 0.25 * 0.75 - sigma_w^2
    (Bhatia-Davis), shrunk by the rarer mass min(1.6, 4.4) = 1.6 against the prior weight on the ceiling, 1 (1 + 4 /
    3) for 3 names: floor = sigma_w^2 * 6 + tau_s^2 * (4 + 1 + 9); another weight w takes its place."""
    from bold_eval.analysis.rate_test import SCORE_PRIOR_NAMES, SCORE_PRIOR_WEIGHT, score_floor, score_prior_weight

    values = np.array([0.1, 0.3, 0.0, 0.6, 0.2, 0.4])
    side = SideSums.of(np.array([0.4, 0.0, 1.2]), np.array([2.0, 1, 3]), np.array([0.1, 0.0, 0.56]))
    assert side.squares == pytest.approx((values * values).sum())
    sigma_w = (0.66 - 0.56) / 3
    p = 1.6 / 6
    tau_hat = (2 * (0.2 - p) ** 2 + (0.0 - p) ** 2 + 3 * (0.4 - p) ** 2 - 2 * sigma_w) / (6 - 14 / 6)
    tau_max = 0.25 * 0.75 - sigma_w
    assert (SCORE_PRIOR_WEIGHT, SCORE_PRIOR_NAMES) == (1.0, 4.0)
    assert score_prior_weight(3) == pytest.approx(7 / 3)
    assert score_prior_weight(np.array([1, 4, 400])) == pytest.approx([5.0, 2.0, 1.01])
    for weight in (7 / 3, 1.0, 0.1):
        tau_s = (1.6 * tau_hat + weight * tau_max) / (1.6 + weight)
        assert score_floor(side, np.array(0.25), weight) == pytest.approx(sigma_w * 6 + tau_s * 14)
    assert score_floor(side, np.array(0.25)) == pytest.approx(score_floor(side, np.array(0.25), 7 / 3))


def _concentrated(rng: np.random.Generator, names: int, mean: float) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt a score near its name's mean (sd 0.15 within, 0.03 between names), 5 prompts a name: a prompt's
    highest of k toxicities varies about this much (variance 0.02-0.03), far less than a label's p (1 - p)."""
    means = mean + rng.normal(0.0, 0.03, names)
    units = np.repeat(np.arange(names), 5)
    return np.clip(means[units] + rng.normal(0.0, 0.15, len(units)), 0.0, 1.0), units


def test_a_concentrated_continuous_score_gets_its_own_variance_not_p_one_minus_p() -> None:
    """A continuous score with known bounds (the findings' expected maximum) is tested with the score's floor
    (`score_floor`): 20 names a side, 5 prompts each, 0.55 against 0.40. Its variance stays within a small factor
    of the true one, 20 (5 * 0.15^2 + 25 * 0.03^2) / 100^2 (the shrinkage's prior adds about as much again), not the
    binomial p (1 - p) per prompt, several times larger, that leaves the difference near the level."""
    from bold_eval.analysis.clustered import difference_tests
    from bold_eval.analysis.rate_test import BINOMIAL, SCORE, side_variance

    rng = np.random.default_rng(7)
    high, high_units = _concentrated(rng, 20, 0.55)
    low, low_units = _concentrated(rng, 20, 0.40)
    values, units = np.r_[high, low], np.r_[high_units, low_units + 20]
    side = SideSums.of(np.bincount(high_units, weights=high), np.full(20, 5.0),
                       np.bincount(high_units, weights=high * high))
    truth = 20 * (5 * 0.15 ** 2 + 25 * 0.03 ** 2) / 100 ** 2
    score = side_variance(side, np.array(0.475), SCORE)
    assert 0.7 * truth < score < 2.5 * truth
    assert side_variance(side, np.array(0.475), BINOMIAL) > 3 * score
    in_a = units < 20
    found = difference_tests([values], [in_a], [units], alpha=0.05, bounds=[(0.0, 1.0)])[0]
    assert found.p_value < 0.001 and 0.0 < found.ci_low < 0.15 < found.ci_high < 0.3
    labels = difference_tests([values], [in_a], [units], alpha=0.05)[0]  # no bounds: a share in [0, 1], binomial
    assert labels.p_value > 300 * found.p_value  # p(1 - p) per prompt: about the level, where the truth is far below
    assert labels.ci_high - labels.ci_low > 2 * (found.ci_high - found.ci_low)


def test_the_score_floor_is_tested_on_names_less_one_degrees_of_freedom() -> None:
    """With the score's floor (as with the binomial one) each side's degrees of freedom are its names less one;
    without a floor, its effective number of names less one, fewer where one name holds most values."""
    from bold_eval.analysis.rate_test import NO_FLOOR, SCORE, side_df

    n = np.array([40.0, 2, 2, 2, 2, 2])
    side = SideSums.of(0.3 * n, n, 0.3 * 0.3 * n + 0.01)
    assert side_df(side, SCORE) == side_df(side, True) == 5.0
    assert side_df(side, NO_FLOOR) < 2.0
    with pytest.raises(ValueError, match="unknown floor"):
        side_df(side, "wide")


def test_few_names_count_their_effective_names_at_a_larger_correlation() -> None:
    """Without a floor, a side's effective names are counted at its moment estimate of the within-name correlation
    moved towards 1 by 17 / G^2 of the way: 17% for 10 names, under 0.2% for 100, all of it for 4."""
    from bold_eval.analysis.rate_test import FEW_NAMES_WEIGHT, NO_FLOOR, df_correlation, side_df, value_correlation

    assert df_correlation(10, 0.0) == pytest.approx(FEW_NAMES_WEIGHT / 100)
    moved = df_correlation(np.array([4.0, 10.0, 100.0]), 0.5)
    assert moved == pytest.approx([1.0, 0.5 + 0.5 * 0.17, 0.5 + 0.5 * 0.0017])
    rng = np.random.default_rng(5)
    for names in (10, 100):
        n = rng.integers(1, 30, names).astype(float)
        t = rng.binomial(n.astype(int), 0.3).astype(float)  # names alike: the estimate is near 0
        side = SideSums.of(t, n)
        rho = df_correlation(names, value_correlation(side))
        assert side_df(side, NO_FLOOR) == pytest.approx(_effective_df(n.astype(int).tolist(), rho))
        assert side_df(side, NO_FLOOR) <= _effective_df(n.astype(int).tolist(), value_correlation(side))


def test_score_interval_of_a_continuous_score_inverts_its_one_sample_test() -> None:
    """`rate_interval` with the score's floor: every end is where |estimate - p0| = c sqrt(max(A, floor(p0))) / N
    (A the CR1 sum of squares), it holds the estimate, and it is narrower than the binomial floor's for a
    concentrated score; `unit_rate_interval` gives the same from per-prompt values."""
    from scipy import special

    from bold_eval.analysis.rate_test import SCORE, null_squares, rate_interval, score_floor, unit_rate_interval

    rng = np.random.default_rng(3)
    values, units = _concentrated(rng, 12, 0.3)
    t, n, q = (np.bincount(units, weights=w) for w in (values, np.ones(len(values)), values * values))
    low, high, note = rate_interval(t, n, alpha=0.05, floor=SCORE, squares=q)
    wide_low, wide_high, _ = rate_interval(t, n, alpha=0.05)
    side = SideSums.of(t, n, q)
    assert note == "" and low < side.rate < high and (high - low) < 0.8 * (wide_high - wide_low)
    critical = special.stdtrit(11, 0.975)
    cr1 = float(null_squares(side.tt, side.tn, side.nn, side.rate)) * 12 / 11
    for end in (low, high):
        bound = max(cr1, float(score_floor(side, np.array(end))))
        assert abs(side.rate - end) * side.texts == pytest.approx(critical * math.sqrt(bound), rel=1e-4)
    assert unit_rate_interval(values, units, alpha=0.05, floor=SCORE) == pytest.approx((low, high))


@pytest.mark.parametrize("total", [1.0, 20.0])
def test_score_interval_covers_a_continuous_scores_mean(total: float) -> None:
    """Coverage of the score-floor interval (the worst-case table's, for a continuous worst case) at 10 names of
    1 + Geometric(0.3) prompts, each prompt a Beta(mu_i, 20) about its name's mean, the means Beta with mean 0.2
    and a + b = `total` (widely spread, or alike): at least 93% minus 3 Monte Carlo SEs."""
    from bold_eval.analysis.rate_test import SCORE, rate_interval

    rng = np.random.default_rng(int(total))
    covered = 0
    for _ in range(300):
        prompts = 1 + np.minimum(rng.geometric(0.3, 10) - 1, 59)
        means = np.clip(rng.beta(0.2 * total, 0.8 * total, 10), 1e-3, 1 - 1e-3)
        units = np.repeat(np.arange(10), prompts)
        values = rng.beta(means[units] * 20, (1 - means[units]) * 20)
        low, high, _ = rate_interval(np.bincount(units, weights=values), prompts.astype(float), alpha=0.05,
                                     floor=SCORE, squares=np.bincount(units, weights=values * values))
        covered += low <= 0.2 <= high
    assert covered / 300 >= 0.93 - 3 * math.sqrt(0.07 * 0.93 / 300)


@pytest.mark.parametrize("floor", [True, False])
def test_rate_intervals_of_many_sides_are_each_sides_own_and_end_where_the_test_turns(floor: bool) -> None:
    """`rate_intervals` gives every side the interval it gets alone (no side's names leak into another's), NaN for a
    side of one name, and each end inside (0, 1) is where (estimate - p0)^2 N^2 = c^2 max(A, B(p0)): A the CR1 sum
    about the estimate, B the beta-binomial floor at p0 (none without a floor)."""
    from scipy import special

    from bold_eval.analysis.rate_test import null_squares, rate_intervals

    rng = np.random.default_rng(7)
    sizes = [1, 2, 5, 13, 40]
    t_list, n_list = [], []
    for size in sizes:
        n = rng.integers(1, 9, size).astype(float)
        t_list.append(rng.binomial(n.astype(int), rng.beta(0.6, 1.4, size)).astype(float))
        n_list.append(n)
    low, high = rate_intervals(t_list, n_list, alpha=0.05, floor=floor)
    assert math.isnan(low[0]) and math.isnan(high[0])
    for k in range(1, len(sizes)):
        alone = rate_intervals([t_list[k]], [n_list[k]], alpha=0.05, floor=floor)
        assert (alone[0][0], alone[1][0]) == pytest.approx((low[k], high[k]), abs=1e-12)
        side = SideSums.of(t_list[k], n_list[k])
        c = special.stdtrit(side.names - 1, 0.975)
        spread = null_squares(side.tt, side.tn, side.nn, side.rate) * side.names / (side.names - 1)
        for end in (low[k], high[k]):
            if 0 < end < 1:
                floor_part = end * (1 - end) * (side.texts + side.correlation * side.pairs) if floor else 0.0
                bound = c * c * max(spread, floor_part)
                assert (side.rate - end) ** 2 * side.texts ** 2 == pytest.approx(bound, rel=1e-9)
