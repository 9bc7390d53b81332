"""benchmarks/interaction_gap.py: the decomposition of the interactions' shortfall against their effective-names t
bound swaps one ingredient of the report's test at a time, and its "report" variant is the report's own test; the
candidates it led to (`interaction_df.py`'s rho-gK-C and rho-raw-gK-C) move only what they say. The table:
benchmarks/CALIBRATION.md, "Interactions below their effective-names bound: where the power goes"."""

from __future__ import annotations

import numpy as np

from bold_eval.testing.scripts import script_module


def _data(rng: np.random.Generator, replicates: int, n: np.ndarray, shift: float) -> list[tuple[np.ndarray, ...]]:
    """Per name the sum of per-prompt values in {0, 0.5, 1} and the sum of their squares, the first 12 names raised."""
    data = []
    for _ in range(replicates):
        up = np.where(np.arange(len(n)) < 12, 0.21 + shift, 0.21)
        counts = rng.multinomial(n.astype(int), np.stack([up, np.full(len(n), 0.21), 0.58 - (up - 0.21)], axis=1))
        data.append((counts[:, 0] + 0.5 * counts[:, 2], counts[:, 0] + 0.25 * counts[:, 2]))
    return data


def test_the_report_variant_is_the_report_and_each_swap_changes_one_ingredient() -> None:
    """On the same data: "report" rejects exactly where `rate_test.rate_tests` (no floor) gives p <= level; giving
    the decomposition the report's own variance as the truth leaves "(b) V debiased" as the report up to the scale
    of V; "(a+d) df of the bound" and "sd known, bound's df" read the bound's df; the powers lie in [0, 1]."""
    from bold_eval.analysis import rate_test

    rng = np.random.default_rng(3)
    n = np.r_[21, 8, 6, 5, 4, 3, 3, 2, 2, 1, 1, 1, rng.integers(1, 6, 80)].astype(float)
    in_a = np.arange(len(n)) < 12
    data = _data(rng, 30, n, 0.25)
    level = 0.05 / 72
    with script_module("interaction_gap") as gap:
        a, b = gap.sides_of(data, n, in_a)
        estimates = np.asarray(a.rate - b.rate, dtype=float)
        tests = rate_test.rate_tests([d[0] for d in data], [n] * len(data), [in_a] * len(data), alpha=0.05,
                                     floor=[False] * len(data), squares=[d[1] for d in data])
        var_a = rate_test.side_variance(a, a.rate, rate_test.NO_FLOOR)
        var_b = rate_test.side_variance(b, b.rate, rate_test.NO_FLOOR)
        truth = gap.Truth((float(var_a.mean()), float(var_b.mean())), (5.0, 40.0), (0.0, 0.0), 0.1, 8.0, 0.5)
        result = gap.decompose(a, b, estimates, truth, level, np.random.default_rng(1))
        assert result["report"] == np.mean([t.p_value <= level for t in tests])
        assert result["(b) V debiased"] == result["report"]
        assert result["(a+d) df of the bound"] == gap.found(estimates / np.sqrt(var_a + var_b), 8.0, level)
        assert result["sd known, bound's df"] == gap.found(estimates / np.sqrt(var_a.mean() + var_b.mean()), 8.0,
                                                           level)
        assert all(0.0 <= result[key] <= 1.0 for key in gap.POWERS if key in result)


def test_the_faster_fading_moves_agree_with_the_test_in_use_at_ten_names() -> None:
    """rho-g3-170 and rho-g4-1700 move 10 names as far as the test in use (17 / 10^2 of the way to 1) and less past
    10; the untruncated correlation is the truncated one wherever that is above 0, never below half the most negative
    the longest page allows, and its effective names stay within [1, names - 1]."""
    from bold_eval.analysis import rate_test

    with script_module("interaction_df") as candidates:
        rho = np.array([0.0, 0.05, 0.3])
        for power, weight in ((3.0, 170.0), (4.0, 1700.0)):
            at_ten = candidates.few_names_move(np.full(3, 10.0), rho, weight, power)
            assert np.allclose(at_ten, rate_test.df_correlation(np.full(3, 10.0), rho))
            assert np.all(candidates.few_names_move(np.full(3, 20.0), rho, weight, power)
                          < rate_test.df_correlation(np.full(3, 20.0), rho))
        rng = np.random.default_rng(4)
        n = np.r_[62, 22, 15, rng.integers(1, 5, 60)].astype(float)
        in_a = np.arange(len(n)) < 30
        data = _data(rng, 200, n, 0.0)
        with script_module("interaction_gap") as gap:
            a, _ = gap.sides_of(data, n, in_a)
        raw, truncated = candidates.raw_correlation(a), rate_test.value_correlation(a)
        assert np.allclose(raw[truncated > 0], truncated[truncated > 0])
        assert (raw < 0).any() and np.all(raw >= -0.5 / (62 - 1))
        df = candidates.effective_df(a, raw)
        assert np.all((df >= 1) & (df <= a.names - 1))
        assert np.all(df >= candidates.effective_df(a, truncated) - 1e-9)


def test_the_capped_welch_count_is_at_most_its_multiple_of_the_fewer_sides_df() -> None:
    """The test in use (`rate_test.WELCH_CAP` = 1.5) keeps the uncapped test's t and its Welch count wherever that
    is within 1.5 times the fewer of the two sides' degrees of freedom, and caps it there otherwise; the floor's
    tests are untouched."""
    from bold_eval.analysis import rate_test

    rng = np.random.default_rng(6)
    n = np.r_[21, 8, 6, 5, 4, 3, 3, 2, 2, 1, 1, 1, rng.integers(1, 6, 80)].astype(float)
    in_a = np.arange(len(n)) < 12
    with script_module("interaction_gap") as gap:
        a, b = gap.sides_of(_data(rng, 40, n, 0.0), n, in_a)
    none, binomial = np.full(40, rate_test.NO_FLOOR), np.full(40, rate_test.BINOMIAL)
    t, capped, _ = rate_test.score_t(a, b, 0.0, none)
    fewer = np.minimum(rate_test.side_df(a, none), rate_test.side_df(b, none))
    with script_module("interaction_df") as candidates, candidates.interaction_method("uncapped"):
        uncapped_t, df, _ = rate_test.score_t(a, b, 0.0, none)
        floored = rate_test.score_t(a, b, 0.0, binomial)[1]
    assert rate_test.WELCH_CAP == 1.5
    assert np.array_equal(uncapped_t, t)
    assert np.allclose(capped, np.minimum(df, 1.5 * fewer))
    assert (df > 1.5 * fewer).any() and (df <= 1.5 * fewer).any()
    assert np.array_equal(floored, rate_test.score_t(a, b, 0.0, binomial)[1])
