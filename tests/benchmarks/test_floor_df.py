"""benchmarks/floor_df.py: the candidate degrees of freedom of the group-vs-rest test's sides with the binomial floor
change the test only where they say. Their power and level: benchmarks/CALIBRATION.md, "Group vs rest: degrees of
freedom where the floor binds"."""

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
    """"product" is the test in use and "names" gives names - 1 everywhere (never a smaller p than the test in use);
    a candidate whose X is names keeps names - 1 where the CR2 sum binds; every candidate's df lies in [1, texts - 1];
    the test in use untouched outside the context."""
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
        np.testing.assert_array_equal(candidates.candidate_df("product", a, rate_a, floor),
                                      rate_test.side_df(a, floor, rate_a))
        for name in candidates.CANDIDATES:
            df = candidates.candidate_df(name, a, rate_a, floor)
            assert np.all(df >= 1.0) and np.all(df <= a.texts - 1)
            if candidates.parts(name)[0] == "names":
                np.testing.assert_array_equal(df[~binds], names[~binds])
        with candidates.floor_method("names"):
            p = rate_test.score_t(a, b, 0.0, floor)[2]
        assert np.all(p <= before[2] + 1e-12) and np.any(p < before[2])
        with candidates.floor_method("product"):
            np.testing.assert_array_equal(rate_test.score_t(a, b, 0.0, floor)[2], before[2])
        with pytest.raises(ValueError, match="unknown floor df"):
            candidates.parts("names+wide")
    np.testing.assert_array_equal(rate_test.score_t(a, b, 0.0, floor)[2], before[2])
