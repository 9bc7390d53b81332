"""bold_eval.analysis.clustered against numbers worked out by hand and against statsmodels / scipy on the same data."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from bold_eval.analysis.clustered import (
    FISHER,
    SCORE,
    T_TEST,
    Z_TEST,
    adjust,
    check_alpha,
    check_cluster,
    check_correction,
    cluster_ids,
    confidence_label,
    design_effect,
    difference_test,
    minimum_detectable_difference,
)
from bold_eval.analysis.rate_test import SideSums, score_t
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


def rows_of(per_cluster: list[list[int]], in_a: list[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, side, clusters) per text from a list of clusters' 0-1 values and each cluster's side."""
    values = np.array([v for cluster in per_cluster for v in cluster], dtype=float)
    side = np.array([a for cluster, a in zip(per_cluster, in_a, strict=True) for _ in cluster])
    clusters = np.array([f"c{i}" for i, cluster in enumerate(per_cluster) for _ in cluster])
    return values, side, clusters


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


def test_adjust_equals_statsmodels_multipletests() -> None:
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


# --------------------------------------------------------------------------- the cluster-robust test of equal rates


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
    names with the values' intra-class correlation (one-way ANOVA moments). Side a: names with d = (1, 0, 1),
    (0, -1), (1, 1); side b: (0, 0), (-1, 0, 0), (0, 1), (-1,)."""
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
        return squares / texts ** 2, _effective_df([len(name) for name in side_names], rho)

    (var_a, df_a), (var_b, df_b) = variance_and_df(mapped[:3]), variance_and_df(mapped[3:])
    rate_a, rate_b = sum(map(sum, mapped[:3])) / 7, sum(map(sum, mapped[3:])) / 8
    t = (rate_a - rate_b) / math.sqrt(var_a + var_b)
    df = (var_a + var_b) ** 2 / (var_a ** 2 / df_a + var_b ** 2 / df_b)
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
    rejected = 0
    for _ in range(2000):
        sizes = rng.integers(2, 9, names_a + 60)
        rates = np.r_[rng.beta(0.3, 0.7, names_a), rng.beta(30, 70, 60)]
        hits = rng.binomial(sizes, rates).astype(float)
        in_a = np.arange(names_a + 60) < names_a
        a, b = SideSums.of(hits[in_a], sizes[in_a].astype(float)), SideSums.of(hits[~in_a], sizes[~in_a].astype(float))
        rejected += float(score_t(a, b, 0.0)[2]) <= 0.05
    assert rejected / 2000 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)


def test_within_name_correlation_shrinks_towards_one_by_the_rarer_outcomes() -> None:
    """rho = (m rho_hat + w) / (m + w) with m = min(hits, misses) and w = 0.1 worst-case outcomes: names that agree
    exactly (rho_hat = 0) with 3 hits give 0.1 / 3.1; a side with no hit or no miss gets the worst case, 1; and
    with many hits the side's own estimate wins."""
    from bold_eval.analysis.rate_test import WORST_CASE_WEIGHT, within_name_correlation

    assert WORST_CASE_WEIGHT == 0.1
    assert within_name_correlation(0.0, 3, 40) == pytest.approx(0.1 / 3.1)
    assert within_name_correlation(0.0, 0, 40) == within_name_correlation(0.0, 40, 40) == 1.0
    assert within_name_correlation(0.0, 37, 40) == pytest.approx(0.1 / 3.1)  # 3 misses: the rarer outcome
    tau2 = 0.1 * 0.5 * 0.5  # rho_hat = 0.1 at a rate of 0.5
    assert within_name_correlation(tau2, 500, 1000) == pytest.approx((500 * 0.1 + 0.1) / 500.1)
    side = SideSums.of(np.zeros(4), np.array([3.0, 2, 4, 1]))  # no hit: every name all or nothing under the null
    assert side.correlation == 1.0


@pytest.mark.parametrize("names", [2, 3, 5, 30])
def test_name_level_rate_interval_covers_a_spread_rate(names: int) -> None:
    """The one-sample interval of a pooled rate (`rate_test.rate_interval`) covers the true rate at least 95% of
    the time (minus 3 Monte Carlo SEs) when names are widely spread (ICC 0.8) or nearly alike, down to 2 names."""
    from bold_eval.analysis.rate_test import rate_interval

    rng = np.random.default_rng(names)
    for rho in (0.05, 0.8):
        scale = (1 - rho) / rho
        covered = 0
        for _ in range(600):
            n = rng.integers(1, 8, names).astype(float)
            t = rng.binomial(n.astype(int), rng.beta(0.3 * scale, 0.7 * scale, names)).astype(float)
            low, high, _ = rate_interval(t, n, alpha=0.05)
            covered += low <= 0.3 <= high
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
