"""benchmarks/floor_df.py: the candidate degrees of freedom of the group-vs-rest test where its floor binds change
the test only there, and only upwards. Their power and level: benchmarks/CALIBRATION.md, "Group vs rest: degrees of
freedom where the floor binds"."""

from __future__ import annotations

import numpy as np
import pytest

from bold_eval.testing.scripts import script_module


def _sides(rng: np.random.Generator, replicates: int, n: np.ndarray, in_a: np.ndarray):
    from bold_eval.analysis.rate_test import SideSums

    order = np.r_[np.flatnonzero(in_a), np.flatnonzero(~in_a)]
    n = n[order]
    hits = rng.binomial(n.astype(int), rng.beta(0.6, 1.4, size=(replicates, len(n)))).astype(float)
    starts = (np.arange(replicates)[:, None] * len(n) + np.array([0, int(in_a.sum())])).ravel()
    sides = SideSums.of_segments(hits.ravel(), np.tile(n, replicates), starts)
    return sides.take(slice(0, None, 2)), sides.take(slice(1, None, 2))


def test_the_candidates_raise_the_df_only_where_the_floor_binds():
    """Names - 1 where the CR2 sum is at least the floor; more, and at most texts - 1, where the floor binds; the
    test in use untouched outside the context."""
    from bold_eval.analysis import rate_test

    rng = np.random.default_rng(5)
    n = np.r_[rng.integers(1, 40, 13), rng.integers(1, 20, 200)].astype(float)
    in_a = np.arange(len(n)) < 13
    a, b = _sides(rng, 200, n, in_a)
    floor = np.full(200, rate_test.BINOMIAL)
    rate_a, _ = rate_test.restricted_rates(a, b, np.zeros(200))
    before = rate_test.score_t(a, b, 0.0, floor)
    with script_module("floor_df") as candidates:
        squares, bound = candidates.floor_parts(a, rate_a)
        binds = bound > squares
        assert 0 < binds.sum() < 200
        names = a.names - 1
        for name in candidates.CANDIDATES[1:]:
            df = candidates.candidate_df(name, a, rate_a, floor)
            np.testing.assert_array_equal(df[~binds], names[~binds])
            assert np.all(df[binds] >= names[binds]) and np.all(df <= a.texts - 1)
            assert np.any(df[binds] > names[binds])
            with candidates.floor_method(name):
                p = rate_test.score_t(a, b, 0.0, floor)[2]
            assert np.mean(p <= before[2] + 1e-12) == pytest.approx(1.0)  # more df: never a larger p
        with candidates.floor_method("product"):
            np.testing.assert_array_equal(rate_test.score_t(a, b, 0.0, floor)[2], before[2])
    np.testing.assert_array_equal(rate_test.score_t(a, b, 0.0, floor)[2], before[2])
