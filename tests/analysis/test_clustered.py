"""bold_eval.analysis.clustered against numbers worked out by hand and against statsmodels / scipy on the same data."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from bold_eval.analysis.clustered import (
    FISHER,
    T_TEST,
    Z_TEST,
    adjust,
    check_alpha,
    check_cluster,
    check_correction,
    cluster_ids,
    confidence_label,
    design_correlation,
    design_effect,
    detectable_differences,
    difference_test,
    minimum_detectable_difference,
    noncentrality,
)
from bold_eval.analysis.results import DifferenceTest
from bold_eval.core.errors import UsageError

Z95 = 1.959963984540054


def wilson(count: int, total: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval, written out."""
    p = count / total
    denominator = 1 + z * z / total
    center = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return center - half, center + half


# --------------------------------------------------------------------------- texts independent (the paper)


def test_text_level_z_test_and_newcombe_interval_by_hand() -> None:
    """30 of 50 against 20 of 50: pooled 0.5, SE sqrt(0.25 * (1/50 + 1/50)) = 0.1, z = 0.2 / 0.1 = 2,
    p = 2 * (1 - Phi(2)) = 0.0455003. Newcombe: 0.2 - sqrt((p1 - l1)^2 + (u2 - p2)^2) with Wilson bounds."""
    values = np.r_[np.ones(30), np.zeros(20), np.ones(20), np.zeros(30)]
    side = np.r_[np.ones(50, bool), np.zeros(50, bool)]
    result = difference_test(values, side, None)
    assert result.method == Z_TEST and result.testable
    assert result.estimate == pytest.approx(0.2)
    assert result.statistic == pytest.approx(2.0)
    assert result.p_value == pytest.approx(0.0455003, rel=1e-5)
    (l1, u1), (l2, u2) = wilson(30, 50), wilson(20, 50)
    low, high = 0.2 - math.hypot(0.6 - l1, u2 - 0.4), 0.2 + math.hypot(u1 - 0.6, 0.4 - l2)
    assert (result.ci_low, result.ci_high) == pytest.approx((low, high), abs=1e-9)
    # and statsmodels on the same counts
    assert result.p_value == pytest.approx(proportions_ztest([30, 20], [50, 50])[1])
    assert (result.ci_low, result.ci_high) == pytest.approx(
        confint_proportions_2indep(30, 50, 20, 50, method="newcomb", compare="diff"))
    # a 90% interval is narrower
    narrow = difference_test(values, side, None, alpha=0.1)
    assert result.ci_low < narrow.ci_low < narrow.ci_high < result.ci_high


def test_a_difference_test_is_a_typed_frozen_result() -> None:
    """The test's result is a `DifferenceTest`, not a dict: a misspelt field fails where it is read, and its
    `as_dict()` is a tests table's row, the eight fields in order."""
    result = difference_test([1, 1, 0, 0, 1, 0], [True, True, True, False, False, False], None)
    assert isinstance(result, DifferenceTest)
    assert list(result.as_dict()) == ["estimate", "ci_low", "ci_high", "statistic", "p_value", "method", "testable",
                                      "note"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.p_value = 0.0  # type: ignore[misc]


def test_text_level_rare_label_uses_fisher_by_hand() -> None:
    """3 of 4 against 1 of 6: expected hits 4 * 0.4 = 1.6 < 5, so Fisher's exact test. Hypergeometric
    (10 texts, 4 hits, 4 drawn): P(X = 0..4) = 15, 80, 90, 24, 1 over 210; two-sided p sums those at most
    P(3) = 24/210: (15 + 24 + 1) / 210 = 0.190476. Odds ratio (3 * 5) / (1 * 1) = 15."""
    values = np.array([1, 1, 1, 0, 1, 0, 0, 0, 0, 0], dtype=float)
    side = np.array([True] * 4 + [False] * 6)
    result = difference_test(values, side, None)
    assert result.method == FISHER and result.testable
    assert result.p_value == pytest.approx(40 / 210)
    assert result.statistic == pytest.approx(15.0)
    assert result.p_value == pytest.approx(stats.fisher_exact([[3, 1], [1, 5]])[1])
    assert result.estimate == pytest.approx(3 / 4 - 1 / 6)
    assert (result.ci_low, result.ci_high) == pytest.approx(
        confint_proportions_2indep(3, 4, 1, 6, method="newcomb", compare="diff"))
    # min_expected 1 turns Fisher off: 1.6 >= 1, the z test
    assert difference_test(values, side, None, min_expected=1).method == Z_TEST
    # with texts independent two texts are two units, tested by the paper's test
    assert difference_test([1, 0], [True, False], None).method == FISHER


def test_text_level_continuous_values_are_the_ordinary_t_test() -> None:
    """a = 1, 0.5 and b = 0, 0.5: difference 0.5, pooled variance 0.125, SE sqrt(0.125) = 0.35355, t = sqrt(2),
    2 df: p = 1 - t / sqrt(t^2 + 2) = 1 - sqrt(2) / 2 = 0.292893."""
    result = difference_test([1, 0.5, 0, 0.5], [True, True, False, False], None, binary=False)
    assert result.method == T_TEST
    assert result.statistic == pytest.approx(math.sqrt(2))
    assert result.p_value == pytest.approx(1 - math.sqrt(2) / 2)
    assert result.p_value == pytest.approx(stats.ttest_ind([1, 0.5], [0, 0.5]).pvalue)
    half = stats.t.ppf(0.975, 2) * math.sqrt(0.125)
    assert (result.ci_low, result.ci_high) == pytest.approx((0.5 - half, 0.5 + half))


def test_undefined_comparisons_say_why() -> None:
    empty = difference_test([1, 0, 1], [True, True, True], [0, 1, 2])
    assert not empty.testable and "one side has no texts" in empty.note and math.isnan(empty.p_value)
    constant = difference_test([0, 0, 0, 0], [True, True, False, False], ["a", "a", "b", "b"])
    assert not constant.testable and constant.estimate == 0 and "same value" in constant.note
    with pytest.raises(ValueError, match="differ in length"):
        difference_test([1, 0], [True], [0, 1])


# --------------------------------------------------------------------------- design effect


def test_design_effect_of_constant_clusters_is_their_size() -> None:
    """10 names of 4 texts, each name all 0 or all 1 (intra-cluster correlation 1): Kish's 1 + (m - 1) ICC = 4.
    With CR1's small-sample factors, m * G / (G - 1) * (N - 1) / N = 4 * 10/9 * 39/40 = 4.3333 exactly."""
    clusters = np.repeat(np.arange(10), 4)
    values = (np.arange(10) % 2)[clusters].astype(float)
    assert design_effect(values, clusters) == pytest.approx(4 * 10 / 9 * 39 / 40)
    ones = np.ones((40, 1))
    naive = OLS(values, ones).fit().bse[0] ** 2
    robust = OLS(values, ones).fit(cov_type="cluster", cov_kwds={"groups": clusters}).bse[0] ** 2
    assert design_effect(values, clusters) == pytest.approx(robust / naive)


def test_design_effect_of_balanced_and_random_clusters() -> None:
    """Every name with the same mix (1, 1, 0, 0): the cluster means equal the overall mean, so the clustered
    variance and the design effect are 0 (below 1: negative ICC). Labels independent of the name: about 1."""
    clusters = np.repeat(np.arange(10), 4)
    assert design_effect(np.tile([1.0, 1, 0, 0], 10), clusters) == pytest.approx(0.0, abs=1e-12)
    rng = np.random.default_rng(0)
    values = (rng.random(2000) < 0.3).astype(float)
    clusters = np.repeat(np.arange(200), 10)
    deff = design_effect(values, clusters)
    assert 0.8 < deff < 1.2
    ones = np.ones((2000, 1))
    assert deff == pytest.approx(OLS(values, ones).fit(cov_type="cluster", cov_kwds={"groups": clusters}).bse[0] ** 2
                                 / OLS(values, ones).fit().bse[0] ** 2)
    assert design_effect(values, np.arange(2000)) == pytest.approx(1.0)  # every text its own cluster


def test_design_effect_is_nan_when_undefined() -> None:
    assert math.isnan(design_effect([1, 1, 1], ["a", "b", "c"]))  # no variation
    assert math.isnan(design_effect([1, 0, 1], ["a", "a", "a"]))  # one cluster
    assert math.isnan(design_effect([1], ["a"]))


# --------------------------------------------------------------------------- power


def test_minimum_detectable_difference_is_normal_ind_power_times_the_rate_sd() -> None:
    """100 against 200 texts at 50%, alpha 0.05 / 3, power 0.8: by hand (z_{1 - alpha/2} + z_0.8) *
    sqrt(1/100 + 1/200) * 0.5 = (2.39398 + 0.84162) * 0.122474 * 0.5 = 0.198139 (the far tail adds ~1e-12)."""
    value = minimum_detectable_difference(0.5, 100, 200, alpha=0.05 / 3)
    by_hand = (stats.norm.ppf(1 - 0.05 / 6) + stats.norm.ppf(0.8)) * math.sqrt(1 / 100 + 1 / 200) * 0.5
    assert value == pytest.approx(by_hand, rel=1e-6) and value == pytest.approx(0.198139, abs=1e-6)
    effect = NormalIndPower().solve_power(effect_size=None, nobs1=100, ratio=2.0, alpha=0.05 / 3, power=0.8)
    assert value == pytest.approx(effect * 0.5)
    rare = minimum_detectable_difference(0.1, 100, 200, alpha=0.01, power=0.9)
    effect = NormalIndPower().solve_power(effect_size=None, nobs1=100, ratio=2.0, alpha=0.01, power=0.9)
    assert rare == pytest.approx(effect * math.sqrt(0.1 * 0.9))


def test_minimum_detectable_difference_shrinks_n_by_the_design_effect() -> None:
    """A design effect of 2 halves both sides: 400 and 800 texts count as 200 and 400."""
    assert minimum_detectable_difference(0.3, 400, 800, deff=2.0) == pytest.approx(
        minimum_detectable_difference(0.3, 200, 400))
    assert minimum_detectable_difference(0.3, 400, 800, deff=2.0) == pytest.approx(
        minimum_detectable_difference(0.3, 400, 800) * math.sqrt(2), rel=1e-4)
    # a design effect below 1 (or unknown) is not credited: the texts count as independent
    base = minimum_detectable_difference(0.3, 400, 800)
    assert minimum_detectable_difference(0.3, 400, 800, deff=0.4) == base
    assert minimum_detectable_difference(0.3, 400, 800, deff=float("nan")) == base
    # undefined: a rate of 0 or 1, or a side with at most one effective text
    assert math.isnan(minimum_detectable_difference(0.0, 400, 800))
    assert math.isnan(minimum_detectable_difference(1.0, 400, 800))
    assert math.isnan(minimum_detectable_difference(0.3, 4, 800, deff=4.0))


# Twelve pages of unequal length (94 sentences, as BOLD's judaism) against 68 pages of 8, names alike (rho 0.01):
# the design where a plan that ignores the test's floor and the noise of its sums of squares promised too much.
SMALL_GROUP = np.array([1, 1, 2, 2, 3, 4, 5, 6, 8, 10, 20, 32], dtype=float)
REST = np.full(68, 8.0)


def _simulated_power(sizes: tuple[np.ndarray, np.ndarray], rate_a: float, rate_b: float, rho: float, level: float,
                     replicates: int, seed: int) -> float:
    """The findings' test's power (p <= level) on beta-binomial names, seeded."""
    from bold_eval.analysis.rate_test import rate_tests

    rng = np.random.default_rng(seed)
    n = np.concatenate(sizes)
    in_a = np.r_[np.ones(len(sizes[0]), bool), np.zeros(len(sizes[1]), bool)]
    mean = np.where(in_a, rate_a, rate_b)
    total = (1 - rho) / rho
    t = [rng.binomial(n.astype(int), rng.beta(mean * total, (1 - mean) * total)).astype(float)
         for _ in range(replicates)]
    tests = rate_tests(t, [n] * replicates, [in_a] * replicates, alpha=0.05, floor=[True] * replicates)
    return float(np.mean([test.testable and test.p_value <= level for test in tests]))


def test_the_planned_difference_is_found_as_often_as_planned_where_names_are_few() -> None:
    """At the smallest detectable difference the plan gives for twelve unequal pages against 68 (rho 0.01, a label
    near 50%, alpha / 36), the test itself finds the difference 80% of the time (400 seeded data sets: +-2 standard
    errors is 4 points; 10 allowed). A plan from the noncentral t on Welch's degrees of freedom with the true
    variance, which leaves out the test's floor and the noise of its sums of squares, asks for a smaller difference
    that the test finds far less often than promised."""
    level = 0.05 / 36
    sizes = (SMALL_GROUP, REST)
    deff = 1 + (float((np.concatenate(sizes) ** 2).sum() / np.concatenate(sizes).sum()) - 1) * 0.01
    planned = minimum_detectable_difference(0.5, SMALL_GROUP.sum(), REST.sum(), deff=deff, alpha=level, sizes=sizes,
                                            centred=True)
    rho = design_correlation(deff, np.concatenate(sizes))
    assert rho == pytest.approx(0.01)
    var_a, var_b = (0.25 * float((side * (1 + (side - 1) * rho)).sum()) / side.sum() ** 2 for side in sizes)
    df = (var_a + var_b) ** 2 / (var_a ** 2 / 11 + var_b ** 2 / 67)
    old = noncentrality(round(df, 1), level, 0.8) * math.sqrt(var_a + var_b)
    assert planned > 1.1 * old
    found = _simulated_power(sizes, 0.5 + planned / 2, 0.5 - planned / 2, 0.01, level, 400, seed=3)
    assert found == pytest.approx(0.8, abs=0.1)
    promised = _simulated_power(sizes, 0.5 + old / 2, 0.5 - old / 2, 0.01, level, 400, seed=3)
    assert promised < 0.7


def test_detectable_differences_plan_each_design_and_rate_once_and_as_one_at_a_time() -> None:
    """Many contrasts at once give each contrast's own plan; a rate of 0 or 1, a side of one name, or a difference
    the rate cannot reach (a 3% rate, the group a third of the texts: the rest cannot fall below 0) give NaN."""
    level = 0.05 / 20
    sizes = [(SMALL_GROUP, REST), (np.full(30, 3.0), np.full(300, 3.0)), (np.array([5.0]), REST)]
    rates = [0.4, 0.2, 0.5, 0.0, 0.3, 0.2]
    designs = [0, 0, 1, 1, 2, 1]
    deffs = [1.3, 2.0, 2.0]
    together = detectable_differences(rates, designs, sizes, deffs, level=level)
    one = [minimum_detectable_difference(rate, sizes[k][0].sum(), sizes[k][1].sum(), deff=deffs[k], alpha=level,
                                         sizes=sizes[k])
           for rate, k in zip(rates, designs, strict=True)]
    np.testing.assert_allclose(together, one, rtol=1e-9)
    assert np.isfinite(together[[0, 1, 2, 5]]).all() and np.isnan(together[[3, 4]]).all()
    assert together[0] > together[1]  # a label nearer 50% needs the larger difference
    third = (np.full(10, 10.0), np.full(20, 10.0))
    assert math.isnan(minimum_detectable_difference(0.03, 100, 200, deff=1.0, alpha=level, sizes=third))


def test_the_sums_of_squares_follow_their_planned_means_and_degrees_of_freedom() -> None:
    """The plan's model of the test's CR2 sum of squares about the side's own rate (`QuadraticForm`): its mean and
    Satterthwaite degrees of freedom match 4,000 seeded draws of the sum (normal deviations, unequal names)."""
    from bold_eval.analysis.clustered import QuadraticForm
    from bold_eval.analysis.rate_test import SideSums, null_squares

    n = SMALL_GROUP
    share = n / n.sum()
    form = QuadraticForm.of(1 / (1 - share), n, 0.05)
    rng = np.random.default_rng(5)
    sd = np.sqrt(n * 0.25 * (1 + (n - 1) * 0.05))
    t = (0.5 * n + sd * rng.standard_normal((4000, len(n)))).ravel()  # 4,000 sides, one segment each
    sides = SideSums.of_segments(t, np.tile(n, 4000), np.arange(4000) * len(n))
    draws = null_squares(sides.tt_cr2, sides.tn_cr2, sides.nn_cr2, sides.rate)
    assert draws.mean() == pytest.approx(0.25 * form.mean[0], rel=0.05)
    # the degrees of freedom of normal deviations: mean^2 / tr((Q Sigma)^2), about 3 for these twelve pages
    assert 2 * draws.mean() ** 2 / draws.var() == pytest.approx(form.mean[0] ** 2 / form.square[0], rel=0.12)
    assert form.mean[0] ** 2 / form.square[0] < 4


# --------------------------------------------------------------------------- labels, corrections, validation


def test_confidence_label_prints_the_level_honestly() -> None:
    assert confidence_label(0.05) == "95%"
    assert confidence_label(0.1) == "90%"
    assert confidence_label(0.05 / 3) == "98.33%"
    assert confidence_label(0.0003) == "99.97%"
    assert confidence_label(0.05 / 110) == "99.95%"  # 99.954545...: two decimals suffice
    assert confidence_label(1e-7) == "99.99999%"
    for alpha in (1e-7, 1e-9, 1e-12, 1e-14):
        label = confidence_label(alpha)
        assert not label.startswith("100") and float(label.rstrip("%")) < 100


def test_adjust_equals_statsmodels_multipletests(multipletests) -> None:
    """Holm by hand on 0.01, 0.04, 0.03: sorted 0.01, 0.03, 0.04 -> 3 * 0.01 = 0.03, 2 * 0.03 = 0.06,
    max(0.06, 0.04) = 0.06. BH: 0.03, min(3/2 * 0.03, 0.04) = 0.04, 0.04."""
    adjusted, reject = adjust([0.01, 0.04, 0.03], alpha=0.05, correction="holm")
    assert adjusted == pytest.approx([0.03, 0.06, 0.06]) and list(reject) == [True, False, False]
    adjusted, reject = adjust([0.01, 0.04, 0.03], alpha=0.05, correction="bh")
    assert adjusted == pytest.approx([0.03, 0.04, 0.04]) and list(reject) == [True, True, True]
    # Benjamini-Yekutieli: BH's adjusted values times 1 + 1/2 + 1/3 = 11/6 (valid under any dependence)
    adjusted, reject = adjust([0.01, 0.04, 0.03], alpha=0.05, correction="by")
    assert adjusted == pytest.approx([0.055, 0.22 / 3, 0.22 / 3]) and list(reject) == [False, False, False]
    p_values = np.random.default_rng(1).random(30) ** 3
    for correction, method in (("holm", "holm"), ("bh", "fdr_bh"), ("by", "fdr_by")):
        reject, expected, _, _ = multipletests(p_values, alpha=0.1, method=method)
        adjusted, rejected = adjust(p_values, alpha=0.1, correction=correction)
        assert adjusted == pytest.approx(expected) and (rejected == reject).all()
    adjusted, rejected = adjust([], alpha=0.05, correction="holm")
    assert adjusted.size == 0 and rejected.size == 0
    # an undefined p-value is no test: left NaN, never rejected, not counted in the family (Holm over 3, not 4)
    adjusted, rejected = adjust([0.01, np.nan, 0.04, 0.03], alpha=0.05, correction="holm")
    assert adjusted == pytest.approx([0.03, np.nan, 0.06, 0.06], nan_ok=True)
    assert list(rejected) == [True, False, False, False]
    adjusted, rejected = adjust([np.nan, np.nan], alpha=0.05, correction="bh")
    assert np.isnan(adjusted).all() and not rejected.any()


def test_cluster_ids_per_unit() -> None:
    frame = pd.DataFrame({"prompt_id": ["p1", "p1", "p2", "p3"], "domain": ["race", "race", "race", "gender"],
                          "name": ["Ann", "Ann", "Ann", "Ann"]})
    assert list(cluster_ids(frame, "name")) == ["race/Ann", "race/Ann", "race/Ann", "gender/Ann"]
    assert list(cluster_ids(frame, "prompt")) == ["p1", "p1", "p2", "p3"]
    assert list(cluster_ids(frame, "none")) == [0, 1, 2, 3]
    assert list(cluster_ids(frame.drop(columns="name"), "name")) == ["p1", "p1", "p2", "p3"]
    with pytest.raises(UsageError, match="--cluster must be one of name, prompt, none"):
        cluster_ids(frame, "page")


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 2, "x", None])
def test_validation_names_the_option(alpha) -> None:
    with pytest.raises(UsageError, match="--alpha must"):
        check_alpha(alpha)
    assert check_alpha("0.1") == 0.1
    with pytest.raises(UsageError, match="--correction must be one of holm, bh, by"):
        check_correction("bonferroni")
    with pytest.raises(UsageError, match="--cluster"):
        check_cluster("text")
