"""Two sources' rates on the same prompts (a model against Wikipedia, two models): the paired score-type test.

`bold-eval compare`'s overall difference and the leaderboard ask whether source A's expected pooled rate of a label
equals source B's on the same prompts, the name as the unit. The sign-flip test over names' summed differences
is exact only when each name's difference is symmetric about the hypothesis; when one source treats names far
more unevenly than the other (a model that is negative about a few people and never about the rest), a rare label's
differences are skewed: on religion's 80 pages the sign flip separated equal models in 10.5% of data sets at a
family-wise 5%, and gave p <= 0.001 five times too often (benchmarks/leaderboard_calibration.py, CALIBRATION.md). Here, as in `rate_test`, the variance is taken under the hypothesis and
each source's share of it cannot fall below what its rate allows:

- per name i: t_Ai and t_Bi, the sums of the two sources' per-prompt rates (values in [0, 1]), n_i prompts;
- rates restricted to p_A - p_B = delta (`rate_test.restricted_rates`);
- V = V_A + V_B - 2 C, V_s = `rate_test.side_variance` (the null-imposed cluster-robust sum of squares or the
  beta-binomial floor with the shrunk within-name correlation, whichever is larger) and C = sum_i (t_Ai - n_i p_A)
  (t_Bi - n_i p_B) / N^2, the pairing's covariance; without floors V is sum_i (e_Ai - e_Bi)^2 / N^2 >= 0, the
  null-imposed cluster-robust variance of the paired difference, and the floors only raise it;
- t(delta) = (p_hat_A - p_hat_B - delta) / sqrt(V), on G - 1 degrees of freedom.

The interval is {delta: p(delta) > alpha} (a grid on [-1, 1], refined at each end), and the p-value is raised to
the largest p at or beyond 0 where p(delta) is not monotone, so the two never disagree about zero. Calibration:
benchmarks/leaderboard_calibration.py and calibration_unlike.py --sections overall (CALIBRATION.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from bold_eval.analysis.rate_test import SideSums, restricted_rates, side_variance

GRID = 401
BISECTIONS = 40


@dataclass(frozen=True)
class PairedSums:
    """Each test's two sides on the same names (`SideSums` fields are arrays, one entry per test) and the sum of
    their per-name products."""

    a: SideSums
    b: SideSums
    ab: np.ndarray

    @classmethod
    def of(cls, t_a: np.ndarray, t_b: np.ndarray, n: np.ndarray) -> PairedSums:
        """From per-name sums, names x tests (`t_a`, `t_b`) and the names' prompts `n` (shared by every test)."""
        t_a, t_b, n = (np.asarray(value, dtype=float) for value in (t_a, t_b, n))
        names, tests = t_a.shape
        starts = np.arange(tests) * names
        counts = np.tile(n, tests)
        return cls(a=SideSums.of_segments(t_a.T.ravel(), counts, starts),
                   b=SideSums.of_segments(t_b.T.ravel(), counts, starts), ab=(t_a * t_b).sum(axis=0))

    def column(self) -> PairedSums:
        """Every field as a column, to broadcast against a grid of deltas (one row per test)."""
        index = (slice(None), None)
        return PairedSums(self.a.take(index), self.b.take(index), np.asarray(self.ab)[index])


def paired_t(sums: PairedSums, delta: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """(t, two-sided p) of p_A - p_B = delta, elementwise (delta broadcasts against the tests)."""
    rate_a, rate_b = restricted_rates(sums.a, sums.b, np.asarray(delta, dtype=float))
    a, b = sums.a, sums.b
    cross = (sums.ab - rate_b * a.tn - rate_a * b.tn + rate_a * rate_b * a.nn) / (a.texts * a.texts)
    total = np.maximum(side_variance(a, rate_a) + side_variance(b, rate_b) - 2 * cross, 0.0)
    shift = a.rate - b.rate - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(total > 0, shift / np.sqrt(total), np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
    df = np.maximum(a.names - 1, 1)
    return t, 2.0 * special.stdtr(df, -np.abs(t))


def paired_rate_tests(t_a: np.ndarray, t_b: np.ndarray, n: np.ndarray, *,
                      alpha: float) -> tuple[np.ndarray, ...]:
    """Per test (columns of `t_a` and `t_b`, names x tests; `n` the names' prompts): (estimate, interval low,
    high, t, p). Needs 2 names or more."""
    sums = PairedSums.of(t_a, t_b, n)
    estimate = sums.a.rate - sums.b.rate
    statistic, p_value = paired_t(sums, 0.0)
    column = sums.column()
    grid = np.sort(np.concatenate([np.broadcast_to(np.linspace(-1.0, 1.0, GRID), (len(estimate), GRID)),
                                   np.zeros((len(estimate), 1)), estimate[:, None]], axis=1), axis=1)
    grid_p = paired_t(column, grid)[1]
    accepted = (grid_p > alpha) | (grid == estimate[:, None])
    last = grid.shape[1] - 1
    first_in = np.argmax(accepted, axis=1)
    last_in = last - np.argmax(accepted[:, ::-1], axis=1)
    rows = np.arange(len(estimate))
    low = _bisect(sums, grid[rows, first_in], grid[rows, np.maximum(first_in - 1, 0)], alpha)
    high = _bisect(sums, grid[rows, last_in], grid[rows, np.minimum(last_in + 1, last)], alpha)
    away = np.where(estimate[:, None] > 0, grid <= 0, grid >= 0)
    beyond = np.where(away, grid_p, -np.inf).max(axis=1)
    p_value = np.where(estimate == 0, 1.0, np.maximum(p_value, beyond))
    return estimate, low, high, statistic, p_value


def _bisect(sums: PairedSums, inside: np.ndarray, outside: np.ndarray, alpha: float) -> np.ndarray:
    """The accepted end between each `inside` (accepted) and `outside` (rejected, or equal at the range's end)."""
    inside, outside = inside.astype(float).copy(), outside.astype(float).copy()
    for _ in range(BISECTIONS):
        middle = (inside + outside) / 2
        keep = paired_t(sums, middle)[1] > alpha
        inside = np.where(keep, middle, inside)
        outside = np.where(keep, outside, middle)
    return inside
