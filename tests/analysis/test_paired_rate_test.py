"""compare's test of continuous worst cases: the side variance `continuous_variance` by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bold_eval.analysis.paired_rate_test import (
    PairedSums,
    continuous_variance,
    paired_covariance,
    paired_rate_tests,
    score_sums,
)


def test_continuous_variance_by_hand() -> None:
    """One side, names with values (0.1, 0.3), (0.0,), (0.6, 0.2, 0.4): 6 values summing to 1.6, at rate 0.25.
    Null-imposed sum of squares: (0.4 - 0.5)^2 + (0 - 0.25)^2 + (1.2 - 0.75)^2 = 0.275. Within-name variance
    sigma_w^2 = (0.66 - 0.56) / (6 - 3); between-name tau_hat^2 = (sum n_i (mean_i - p)^2 - 2 sigma_w^2) / (6 - 14/6)
    with p = 1.6 / 6; its ceiling tau_max^2 = 0.25 * 0.75 - sigma_w^2; shrunk by the rarer mass min(1.6, 4.4) = 1.6
    over the values against the prior weight w = 1 + 4 / 3 of 3 names (`rate_test.score_prior_weight`): tau_s^2 =
    (1.6 tau_hat^2 + w tau_max^2) / (1.6 + w). Floor sigma_w^2 * 6 + tau_s^2 * (4 + 1 + 9) beats 0.275, and the
    variance of the side's mean is floor / 36."""
    values = np.array([0.1, 0.3, 0.0, 0.6, 0.2, 0.4])
    side = score_sums(values, np.array([0, 0, 1, 2, 2, 2]), np.array([0]))
    sigma_w = (0.66 - 0.56) / 3
    p = 1.6 / 6
    tau_hat = (2 * (0.2 - p) ** 2 + (0.0 - p) ** 2 + 3 * (0.4 - p) ** 2 - 2 * sigma_w) / (6 - 14 / 6)
    tau_max = 0.25 * 0.75 - sigma_w
    weight = 1 + 4 / 3
    tau_s = (1.6 * tau_hat + weight * tau_max) / (1.6 + weight)
    floor = sigma_w * 6 + tau_s * 14
    assert floor > 0.275
    assert continuous_variance(side, np.array(0.25))[0] == pytest.approx(floor / 36)
    # far from the values' own mean the null-imposed sum of squares is the larger
    squares = (0.4 - 2 * 0.9) ** 2 + (0.0 - 0.9) ** 2 + (1.2 - 3 * 0.9) ** 2
    tau_max = 0.9 * 0.1 - sigma_w
    floor = sigma_w * 6 + (1.6 * tau_hat + weight * tau_max) / (1.6 + weight) * 14
    assert squares > floor
    assert continuous_variance(side, np.array(0.9))[0] == pytest.approx(squares / 36)


def _prompts(rng: np.random.Generator, n: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """0/1 values per prompt: name i's n_i prompts at rates[i]."""
    return (rng.random(int(n.sum())) < np.repeat(rates, n.astype(int))).astype(float)


def test_a_difference_in_one_stratum_is_not_spread_between_names() -> None:
    """Source B's rate is A's plus 0.5 on the names of stratum 1 only, every name exactly at its stratum's rate:
    about each stratum's own rate no name has a residual, so the variance is 0, while one stratum (the domain) takes
    the difference as spread between names."""
    n = np.array([4.0, 6, 2, 8, 4, 6, 2, 8])
    strata = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    t_a = 0.25 * n
    t_b = np.where(strata == 1, 0.75, 0.25) * n
    stratified = PairedSums.of(t_a[:, None], t_b[:, None], n, strata)
    assert stratified.squares_a[0] == pytest.approx(0.0)
    assert stratified.squares_b[0] == pytest.approx(0.0)
    assert stratified.cross[0] == pytest.approx(0.0)
    assert stratified.df[0] == 8 - 2
    one = PairedSums.of(t_a[:, None], t_b[:, None], n)
    share = n / n.sum()
    residual = t_b - n * t_b.sum() / n.sum()
    assert one.squares_b[0] == pytest.approx(float((residual ** 2 / (1 - share)).sum()))
    assert one.df[0] == 8 - 1


def test_stratified_variance_is_the_cr2_sandwich_of_a_regression_on_the_strata() -> None:
    """Without the floor, V_A + V_B - 2 C is the CR2 variance (Bell & McCaffrey) of the domain's pooled difference
    in a regression of the per-prompt differences on one indicator per stratum, the name as the cluster: computed
    here with explicit matrices, each cluster's residuals multiplied by (I - H_ii)^(-1/2)."""
    rng = np.random.default_rng(3)
    n = rng.integers(2, 9, 14).astype(float)
    strata = np.repeat([0, 1, 2], [5, 5, 4])
    x = _prompts(rng, n, rng.uniform(0.2, 0.8, 14))
    y = _prompts(rng, n, rng.uniform(0.2, 0.8, 14))
    unit = np.repeat(np.arange(14), n.astype(int))
    design = (strata[unit][:, None] == np.arange(3)[None, :]).astype(float)
    bread = np.linalg.inv(design.T @ design)
    d = x - y
    residual = d - design @ (bread @ design.T @ d)
    meat = np.zeros((3, 3))
    for i in range(14):
        rows = unit == i
        leverage = design[rows] @ bread @ design[rows].T
        values, vectors = np.linalg.eigh(np.eye(int(rows.sum())) - leverage)
        adjusted = vectors @ np.diag(values ** -0.5) @ vectors.T @ residual[rows]
        score = design[rows].T @ adjusted
        meat += np.outer(score, score)
    contrast = np.bincount(strata, weights=n) / n.sum()  # the pooled difference: the strata's rates by their texts
    expected = contrast @ bread @ meat @ bread @ contrast
    sums = PairedSums.of(np.bincount(unit, weights=x)[:, None], np.bincount(unit, weights=y)[:, None], n, strata)
    found = (sums.squares_a + sums.squares_b - 2 * sums.cross)[0] / n.sum() ** 2
    assert found == pytest.approx(expected)


def test_a_stratum_of_one_name_is_taken_about_the_domain_rate() -> None:
    """A name alone in its stratum has no residual about its stratum's rate; it is taken about the domain's rate
    with the domain's CR2 weight 1 / (1 - n_i / N) (R survey's lonely.psu = "adjust"), and the degrees of freedom
    count the lonely names' one mean: 6 names, strata of 3, 2 and 1 name: 6 - 2 - 1 = 3."""
    n = np.array([3.0, 5, 2, 4, 4, 6])
    strata = np.array([0, 0, 0, 1, 1, 2])
    t_a = np.array([1.0, 2, 1, 1, 3, 5])
    t_b = np.array([0.0, 1, 1, 2, 2, 1])
    sums = PairedSums.of(t_a[:, None], t_b[:, None], n, strata)
    residuals = []
    for t in (t_a, t_b):
        rate = np.array([t[:3].sum() / 10, t[3:5].sum() / 8, t.sum() / 24])[strata]
        residuals.append(t - n * rate)
    weight = 1 / (1 - n / np.array([10.0, 10, 10, 8, 8, 24]))
    assert sums.squares_a[0] == pytest.approx(float((weight * residuals[0] ** 2).sum()))
    assert sums.cross[0] == pytest.approx(float((weight * residuals[0] * residuals[1]).sum()))
    assert sums.df[0] == 3
    # two strata of one name each: both about the domain's rate, one mean between them
    twice = PairedSums.of(t_a[:, None], t_b[:, None], n, np.array([0, 0, 0, 0, 1, 2]))
    assert twice.df[0] == 6 - 1 - 1


def test_strata_none_is_one_stratum() -> None:
    """`strata=None` and every name in one stratum give the same test."""
    rng = np.random.default_rng(5)
    n = rng.integers(1, 12, 30).astype(float)
    t_a = rng.binomial(n.astype(int)[:, None], rng.beta(2, 5, (30, 3))).astype(float)
    t_b = rng.binomial(n.astype(int)[:, None], rng.beta(2, 6, (30, 3))).astype(float)
    none = paired_rate_tests(t_a, t_b, n, alpha=0.05)
    one = paired_rate_tests(t_a, t_b, n, alpha=0.05, strata=np.zeros(30, dtype=int))
    for left, right in zip(none, one, strict=True):
        np.testing.assert_allclose(left, right)


def test_stratified_test_finds_a_difference_one_group_carries() -> None:
    """A difference of 0.4 on 20 of 80 names, the rest equal: with the groups as strata the test rejects and its
    interval holds the true pooled difference; taken about one domain-wide difference the variance counts the
    planted group's difference as spread between names, and the interval is wider."""
    rng = np.random.default_rng(11)
    n = rng.integers(5, 16, 80).astype(float)
    strata = np.repeat([0, 1, 2, 3], 20)
    base = rng.beta(6, 14, 80)
    t_a = rng.binomial(n.astype(int), base).astype(float)
    t_b = rng.binomial(n.astype(int), np.where(strata == 0, base + 0.4, base)).astype(float)
    _, low, high, _, p_value = paired_rate_tests(t_b[:, None], t_a[:, None], n, alpha=0.05, strata=strata)
    _, low_one, high_one, _, p_one = paired_rate_tests(t_b[:, None], t_a[:, None], n, alpha=0.05)
    truth = 0.4 * n[:20].sum() / n.sum()
    assert p_value[0] < 0.001
    assert p_value[0] < p_one[0] / 10
    assert low[0] <= truth <= high[0]
    assert high[0] - low[0] < 0.85 * (high_one[0] - low_one[0])


def test_the_interval_inverts_the_test_with_each_source_floored_at_the_rate_each_difference_imposes() -> None:
    """A rare label (source B at 3%, source A at 3% plus 0.1 on one stratum's names), 40 names in two strata: at each
    end d of the interval, by hand, the rates d imposes (p_B = (T_A + T_B - N d) / 2N, p_A = p_B + d), each source's
    variance V_s = max(S_s, M_s) with its beta-binomial floor M_s = p_s (1 - p_s) (N + rho_s sum n_i (n_i - 1)) at
    its own imposed rate, less twice the pairing's covariance: the CR2 cross-product C moved towards r sqrt(V_A V_B)
    (r = C / sqrt(S_A S_B)) by (G_c - 2) / G_c of the way, G_c = (sum |c_i|)^2 / sum c_i^2 over the names' weighted
    residual products c_i about their stratum's rate, give p = alpha on names - strata degrees of freedom; a floor
    binds there, so the upper end is not that of the variance at 0 (the floors at the pooled rate), which puts p
    away from alpha there."""
    rng = np.random.default_rng(2)
    n = rng.integers(3, 20, 40).astype(float)
    strata = np.repeat([0, 1], 20)
    rate = rng.beta(0.3, 9.7, 40)
    t_b = rng.binomial(n.astype(int), rate).astype(float)
    t_a = rng.binomial(n.astype(int), np.where(strata == 0, rate + 0.1, rate)).astype(float)
    estimate, low, high, _, p_value = paired_rate_tests(t_a[:, None], t_b[:, None], n, alpha=0.05, strata=strata)
    sums = PairedSums.of(t_a[:, None], t_b[:, None], n, strata)
    total, pairs = n.sum(), (n * (n - 1)).sum()
    texts = np.bincount(strata, weights=n)[strata]
    weight = 1 / (1 - n / texts)
    residual_a, residual_b = (t - n * np.bincount(strata, weights=t)[strata] / texts for t in (t_a, t_b))
    squares_a, squares_b = (weight * residual_a ** 2).sum(), (weight * residual_b ** 2).sum()
    products = weight * residual_a * residual_b
    cross, names = products.sum(), np.abs(products).sum() ** 2 / (products ** 2).sum()
    assert 2 < names < 40

    def p_at(delta: float, imposed: float) -> tuple[float, bool]:
        rate_b = (t_a.sum() + t_b.sum() - total * imposed) / (2 * total)
        floors = [r * (1 - r) * (total + rho * pairs)
                  for r, rho in ((rate_b + imposed, sums.a.correlation[0]), (rate_b, sums.b.correlation[0]))]
        var_a, var_b = max(squares_a, floors[0]), max(squares_b, floors[1])
        covariance = cross + (names - 2) / names * (cross / np.sqrt(squares_a * squares_b) * np.sqrt(var_a * var_b)
                                                    - cross)
        t = (estimate[0] - delta) / np.sqrt((var_a + var_b - 2 * covariance) / total ** 2)
        return 2 * stats.t.sf(abs(t), 40 - 2), floors[0] > squares_a or floors[1] > squares_b

    assert p_value[0] == pytest.approx(p_at(0.0, 0.0)[0])
    for end in (low[0], high[0]):
        p_end, binds = p_at(end, end)
        assert p_end == pytest.approx(0.05, abs=1e-6)
        assert binds
    assert low[0] < 0 < 0.06 < high[0]
    assert abs(p_at(high[0], 0.0)[0] - 0.05) > 0.002


def test_the_pairing_covariance_follows_the_floors_only_where_more_than_two_names_carry_it() -> None:
    """`paired_covariance`: where no floor binds it is the CR2 cross-product C; where the floors bind it is C moved
    towards r sqrt(V_A V_B) by (G_c - 2) / G_c of the way, so none of it where one name carries every label of both
    sources (G_c = 1: their correlation is 1 by construction), and the variance of the difference is then larger."""
    n = np.full(12, 5.0)
    shared = np.array([3.0, 2, 0, 1, 0, 0, 2, 0, 1, 0, 0, 1])  # labels on several names of both sources
    alone = np.zeros(12)
    alone[0] = 4.0  # every label on one name
    for t_a, t_b, carried in ((shared, shared + np.r_[0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0], True),
                              (alone, alone * 0.5, False)):
        sums = PairedSums.of(t_a[:, None], t_b[:, None], n)
        r = sums.cross[0] / np.sqrt(sums.squares_a[0] * sums.squares_b[0])
        unfloored = paired_covariance(sums, sums.squares_a, sums.squares_b)
        assert unfloored[0] == pytest.approx(sums.cross[0])
        var_a, var_b = 3 * sums.squares_a, 2 * sums.squares_b  # as if both floors bound
        found = paired_covariance(sums, var_a, var_b)[0]
        share = (sums.cross_names[0] - 2) / sums.cross_names[0]
        if carried:
            assert sums.cross_names[0] > 3
            assert found == pytest.approx(sums.cross[0] + share * (r * np.sqrt(var_a * var_b)[0] - sums.cross[0]))
            assert found > 1.5 * sums.cross[0]
        else:
            assert sums.cross_names[0] < 2
            assert found == pytest.approx(sums.cross[0])
