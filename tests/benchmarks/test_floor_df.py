"""benchmarks/floor_df.py: the candidate degrees of freedom and floor correlations of the group-vs-rest test's sides
with the binomial floor change the test only where they say. Their power and level: benchmarks/CALIBRATION.md,
"Group vs rest: degrees of freedom where the floor binds" and "Group vs rest: the floor's correlation"."""

from __future__ import annotations

import numpy as np
import pytest

from bold_eval.testing.scripts import script_module


def _sides(rng: np.random.Generator, replicates: int, n: np.ndarray, in_a: np.ndarray, sums: type):
    order = np.r_[np.flatnonzero(in_a), np.flatnonzero(~in_a)]
    n = n[order]
    hits = rng.binomial(n.astype(int), rng.beta(2.7, 6.3, size=(replicates, len(n)))).astype(float)
    starts = (np.arange(replicates)[:, None] * len(n) + np.array([0, int(in_a.sum())])).ravel()
    sides = sums.of_segments(hits.ravel(), np.tile(n, replicates), starts)
    return sides.take(slice(0, None, 2)), sides.take(slice(1, None, 2))


def test_the_candidates_change_the_df_only_where_they_say() -> None:
    """"product" and "names" are the test in use (names - 1 with either floor); a candidate whose X is names keeps
    names - 1 where the CR2 sum binds; every candidate's df lies in [1, texts - 1]; the floor's own degrees of freedom
    where it binds never give a smaller p; the test in use untouched outside the context."""
    from bold_eval.analysis import rate_test

    rng = np.random.default_rng(5)
    n = np.r_[167, 61, 36, 22, 12, 12, 11, 9, 8, 4, 4, 2, 1, rng.integers(1, 20, 200)].astype(float)
    in_a = np.arange(len(n)) < 13
    floor = np.full(200, rate_test.BINOMIAL)
    with script_module("floor_df") as candidates:
        # the plain sums and those the Bell-McCaffrey candidates read
        a, b = _sides(rng, 200, n, in_a, candidates._interaction_df()._leverage_class(rate_test.SideSums))
        rate_a, _ = rate_test.restricted_rates(a, b, np.zeros(200))
        before = rate_test.score_t(a, b, 0.0, floor)
        squares, bound = candidates.floor_parts(a, rate_a)
        binds = bound > squares
        assert 0 < binds.sum() < 200
        names = a.names - 1
        for name in ("product", "names"):
            np.testing.assert_array_equal(candidates.candidate_df(name, a, rate_a, floor), rate_test.side_df(a, floor))
        for name in candidates.CANDIDATES:
            df = candidates.candidate_df(name, a, rate_a, floor)
            assert np.all(df >= 1.0) and np.all(df <= a.texts - 1)
            if candidates.parts(name)[0] == "names":
                np.testing.assert_array_equal(df[~binds], names[~binds])
        with candidates.floor_method("names+floor-mix"):
            p = rate_test.score_t(a, b, 0.0, floor)[2]
        assert np.all(p >= before[2] - 1e-12) and np.any(p > before[2])
        for name in ("product", "names"):
            with candidates.floor_method(name):
                np.testing.assert_array_equal(rate_test.score_t(a, b, 0.0, floor)[2], before[2])
        with pytest.raises(ValueError, match="unknown floor df"):
            candidates.parts("names+wide")
    np.testing.assert_array_equal(rate_test.score_t(a, b, 0.0, floor)[2], before[2])


def test_the_correlation_candidates_replace_only_the_floor_s_correlation() -> None:
    """"@rarer" is the correlation shrunk against the rarer outcomes alone (never above the test in use's, which
    counts the fewer of them and the names), "@max0.1" the test in use's; "@g", "@max" and "@ucl" lie in [0, 1] and
    "@max" and "@ucl" never below "@rarer"; `floor_method` builds the sides with the candidate's correlation, and a
    lower correlation never gives a larger p."""
    from bold_eval.analysis import rate_test

    rng = np.random.default_rng(7)
    n = np.r_[167, 61, 36, 22, 12, 12, 11, 9, 8, 4, 4, 2, 1, rng.integers(1, 20, 200)].astype(float)
    in_a = np.arange(len(n)) < 13
    floor = np.full(300, rate_test.BINOMIAL)
    with script_module("floor_df") as candidates:
        a, b = _sides(rng, 300, n, in_a, rate_test.SideSums)
        rarer = candidates.correlation_variant("rarer", a)
        assert np.all(rarer <= a.correlation + 1e-15) and np.any(rarer < a.correlation)
        np.testing.assert_allclose(candidates.correlation_variant("max0.1", a), a.correlation, rtol=1e-12)
        for option in ("g1", "max0.5", "ucl0.3"):
            rho = candidates.correlation_variant(option, a)
            assert np.all((rho >= 0) & (rho <= 1))
            if option != "g1":
                assert np.all(rho >= rarer - 1e-15)
        before = rate_test.score_t(a, b, 0.0, floor)[2]
        lower = rate_test.score_t(candidates.with_correlation(a, "rarer"), candidates.with_correlation(b, "rarer"),
                                  0.0, floor)[2]
        assert np.all(lower <= before + 1e-12) and np.any(lower < before)
        with candidates.floor_method("product@rarer"):
            built = rate_test.SideSums.of_segments(np.array([30.0, 18, 11]), np.array([100.0, 60, 37]), np.array([0]))
        plain = rate_test.SideSums.of_segments(np.array([30.0, 18, 11]), np.array([100.0, 60, 37]), np.array([0]))
        assert built.correlation == pytest.approx(candidates.correlation_variant("rarer", plain))
        assert candidates.known("names+floor-mix@ucl0.05") and not candidates.known("names@wide")
        with pytest.raises(ValueError, match="unknown floor correlation"):
            candidates.split("names@wide")


def test_the_floor_degrees_are_q_s_bell_mccaffrey_degrees_carried_to_the_floor() -> None:
    """`floor_degrees` against the traces computed with matrices: Q = sum (t_i - n_i q)^2 / n_i under a random
    intercept at rho, nu_Q = tr(W C)^2 / tr((W C)^2) (G - 1 at rho 0: Pearson's chi-square), carried to M by
    Satterthwaite, at least Popoviciu's bound on a value in an interval of width p (1 - p) sum n_i (n_i - 1) (the
    floor with rho_s in [0, 1]), which binds where few names have two texts; infinite where every name has one."""
    with script_module("floor_df") as candidates:
        floor_degrees = candidates.floor_degrees
    n = np.array([167.0, 61, 36, 22, 12, 12, 11, 9, 8, 4, 4, 2, 1])
    big_n, names, pairs = n.sum(), len(n), float((n * (n - 1)).sum())
    c = (big_n - names) - pairs / big_n
    for rho in (0.0, 0.1, 0.6):
        v = n * (1 + (n - 1) * rho)
        centre = np.eye(names) - np.outer(n / big_n, np.ones(names))
        wc = np.diag(1 / n) @ centre @ np.diag(v) @ centre.T
        nu = np.trace(wc) ** 2 / np.trace(wc @ wc)
        expected = nu * ((big_n + rho * pairs) * c / (pairs * np.trace(wc))) ** 2
        found = floor_degrees(names, big_n, (n * n).sum(), (n ** 3).sum(), rho)
        assert found == pytest.approx(max(expected, 8 * ((big_n + rho * pairs) / pairs) ** 2), rel=1e-9)
        if rho == 0.0:
            assert nu == pytest.approx(names - 1)
    assert np.isinf(floor_degrees(5, 5.0, 5.0, 5.0, 0.2))
    assert floor_degrees(9, 10.0, 12.0, 16.0, 0.1) == pytest.approx(8 * (10.2 / 2) ** 2)  # one name of two texts
