"""A test of equal rates that holds when groups differ in size and spread: the score-type cluster-robust t.

Texts are clustered by name: name i has n_i texts, t_i of them with the label. The hypothesis the report prints
is that two sides have the same expected *pooled rate*, delta = E[T_A]/N_A - E[T_B]/N_B = 0, not that their names
are exchangeable. A studentized permutation test is exact only for the latter, and its variance, computed about
each side's own rate, collapses when a side has few names that happen to agree: on 3 widely spread names with
the same rate as the rest it rejected 21% of true nulls at 5% (issue 32). Here the variance is computed *under the
hypothesis* (a score test, as the Miettinen-Nurminen interval does for two binomials):

- the rates restricted to p_A - p_B = delta (least squares, kept inside [0, 1]);
- per side, V_s = max(S_s, M_s) / N_s^2, with S_s = sum_i (t_i - n_i p_s)^2, the null-imposed cluster-robust sum
  of squares, and M_s = p_s (1 - p_s) [N_s + rho_s sum_i n_i (n_i - 1)], the beta-binomial moment variance at the
  restricted rate p_s with a within-name correlation rho_s. rho_s shrinks the side's own estimate towards 1, the
  worst case (every name all or nothing): rho_s = (m_s rho_hat_s + 1) / (m_s + 1), where rho_hat_s = min(1,
  tau2_s / (q_s (1 - q_s))) is the intra-class correlation by DerSimonian-Laird moments about the side's own rate
  q_s (truncated at 0) and m_s = min(hits, misses) on the side, the number of its rarer outcomes. A rare label
  says little about how it clusters: with moments alone (rho_s = rho_hat_s) the test rejected 7-16% of true nulls
  at 5% on profession's real design with a 2% label; the shrinkage weighs an estimate by the evidence it rests on,
  as an empirical-Bayes prior of one worst-case observation. A side whose texts all carry one label (m_s = 0)
  reveals nothing of its spread and gets rho_s = 1: max(S_s, p_s (1 - p_s) sum_i n_i^2);
- t(delta) = (D - delta) / sqrt(V_A + V_B) on Welch-Satterthwaite degrees of freedom with G_s - 1 per side.

Because the variance is taken about the hypothesis, |t(0)| is bounded by the design: a side of few names cannot
give a small p-value whatever its texts say. The smallest p-value a design can give (`min_attainable_p`) depends
on its names and text counts only, not on the labels, so a contrast that cannot reach alpha is reported as "too
few names to test a rate" and left out of the corrected family without harming its error rate (Tarone 1990). The
interval is {delta: p(delta) > alpha}, so it excludes 0 exactly when p <= alpha. Values in [0, 1] that are not
0/1 (a per-prompt difference, a worst-case score) have no binomial floor: their variance is the null-imposed
sum of squares alone, and the design bound on |t| still holds. The calibration of 0/1 labels under unlike spreads, at BOLD's
group sizes, at alpha and in the tail, is in benchmarks/CALIBRATION.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

# Interval search: a uniform grid on [-1, 1], a finer one within 12 standard errors of the estimate, then each
# end refined by zooming (a 64-point grid per round, the bracket shrinking 63-fold each time: 3 rounds take a
# bracket of 0.1 standard errors to 4e-7 of one, far below the 3 decimals the report prints).
GRID_WIDE = 201
GRID_LOCAL = 201
REFINE_ROUNDS = 3


@dataclass(frozen=True)
class SideSums:
    """One side's sufficient statistics (G names, T hits, N texts and the sums the variances need)."""

    names: int
    hits: float
    texts: float
    tt: float
    tn: float
    nn: float
    pairs: float  # sum n_i (n_i - 1): text pairs within a name
    tau2: float  # between-name variance of the rates, moment estimate
    correlation: float  # rho_s: within-name correlation, shrunk towards 1 by the side's rarer outcomes

    @classmethod
    def of(cls, t: np.ndarray, n: np.ndarray) -> SideSums:
        hits, texts = float(t.sum()), float(n.sum())
        tau2 = between_name_variance(t, n)
        return cls(names=len(t), hits=hits, texts=texts, tt=float(t @ t), tn=float(t @ n), nn=float(n @ n),
                   pairs=float(n @ (n - 1)), tau2=tau2, correlation=within_name_correlation(tau2, hits, texts))

    @property
    def rate(self) -> float:
        return self.hits / self.texts


def between_name_variance(t: np.ndarray, n: np.ndarray) -> float:
    """tau2 of the names' rates by moments about the side's pooled rate p (DerSimonian-Laird type):
    E sum_i (t_i - n_i p)^2 / n_i = (G - 1) p (1 - p) + tau2 [(N - G) - sum n_i (n_i - 1) / N]. 0 when the side
    holds no between-name information (one name, or one text per name)."""
    names, texts = len(t), float(n.sum())
    p = float(t.sum()) / texts
    spread = float((t * t / n).sum() - 2 * p * t.sum() + p * p * texts)
    denominator = (texts - names) - float(n @ (n - 1)) / texts
    if denominator <= 1e-9:
        return 0.0
    return max(0.0, (spread - (names - 1) * p * (1 - p)) / denominator)


def within_name_correlation(tau2: float, hits: float, texts: float) -> float:
    """rho_s = (m rho_hat + 1) / (m + 1), m = min(hits, misses): the moment estimate of the intra-class correlation,
    shrunk towards 1 (module docstring); 1 when the side has no hits or no misses."""
    rarer = min(hits, texts - hits)
    if rarer <= 0:
        return 1.0
    rate = hits / texts
    estimate = min(1.0, tau2 / (rate * (1.0 - rate)))
    return (rarer * estimate + 1.0) / (rarer + 1.0)


def restricted_rates(a: SideSums, b: SideSums, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares rates under p_A - p_B = delta, kept inside [0, 1]."""
    rate_b = np.clip((a.hits + b.hits - a.texts * delta) / (a.texts + b.texts),
                     np.maximum(0.0, -delta), np.minimum(1.0, 1.0 - delta))
    return rate_b + delta, rate_b


def side_variance(side: SideSums, rate: np.ndarray, floor: bool = True) -> np.ndarray:
    """Variance of the side's pooled rate if its expected rate is `rate`: max(S, M) / N^2 (module docstring);
    S / N^2 alone without the binomial `floor` (values that are not 0/1 texts, e.g. per-prompt differences)."""
    squares = np.maximum(side.tt - 2 * rate * side.tn + rate * rate * side.nn, 0.0)
    binomial = np.clip(rate * (1 - rate), 0.0, None)
    use_floor = floor
    floor = binomial * (side.texts + side.correlation * side.pairs)
    return np.maximum(squares, floor if use_floor else 0.0) / (side.texts * side.texts)


def score_t(a: SideSums, b: SideSums, delta: np.ndarray | float,
            floor: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, degrees of freedom, two-sided p) of the hypothesis p_A - p_B = delta, for each delta."""
    delta = np.asarray(delta, dtype=float)
    rate_a, rate_b = restricted_rates(a, b, delta)
    var_a, var_b = side_variance(a, rate_a, floor), side_variance(b, rate_b, floor)
    shift = a.rate - b.rate - delta
    total = var_a + var_b
    with np.errstate(divide="ignore", invalid="ignore"):
        t = shift / np.sqrt(total)
        df = total * total / (var_a * var_a / max(a.names - 1, 1) + var_b * var_b / max(b.names - 1, 1))
    t = np.where(total > 0, t, np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
    df = np.where(np.isnan(df), np.inf, df)
    p = 2.0 * special.stdtr(df, -np.abs(t))
    return t, df, np.where(np.isnan(p), 1.0, p)


def min_attainable_p(names_a: int, names_b: int, texts_a: float, texts_b: float) -> float:
    """The smallest two-sided p-value the test can give on this design, whatever the labels.

    With r = V_A / (V_A + V_B), Cauchy-Schwarz on each side's residuals gives t^2 <= (N / (N_A N_B))^2
    min(G_A N_A^2 r, G_B N_B^2 (1 - r)), while df = 1 / (r^2 / nu_A + (1 - r)^2 / nu_B); minimized over r."""
    nu_a, nu_b = max(names_a - 1, 1), max(names_b - 1, 1)
    kink = names_b * texts_b ** 2 / (names_a * texts_a ** 2 + names_b * texts_b ** 2)

    def p_values(r: np.ndarray) -> np.ndarray:
        t2 = ((texts_a + texts_b) / (texts_a * texts_b)) ** 2 * np.minimum(names_a * texts_a ** 2 * r,
                                                                            names_b * texts_b ** 2 * (1 - r))
        df = 1.0 / (r * r / nu_a + (1 - r) ** 2 / nu_b)
        return 2.0 * special.stdtr(df, -np.sqrt(t2))

    coarse = np.unique(np.r_[np.linspace(0.0, 1.0, 201), kink])  # then 201 points around the coarse minimum
    best = coarse[int(np.argmin(p_values(coarse)))]
    fine = np.r_[coarse, np.clip(np.linspace(best - 0.005, best + 0.005, 201), 0.0, 1.0)]
    return float(np.min(p_values(fine)))


@dataclass(frozen=True)
class RateTest:
    """The test of one contrast: estimate, interval (test inversion), t, df, p, and whether it could test."""

    estimate: float
    ci_low: float
    ci_high: float
    statistic: float
    df: float
    p_value: float
    testable: bool
    note: str
    min_p: float


def rate_test(t: np.ndarray, n: np.ndarray, in_a: np.ndarray, *, alpha: float, floor: bool = True) -> RateTest:
    """Score-type cluster-robust test of equal pooled rates, with its (1 - alpha) test-inversion interval.

    t: labelled texts (or summed values in [0, 1]) per unit, n: texts per unit, in_a: the unit's side; `floor`:
    the binomial floor of 0/1 texts (`side_variance`)."""
    t, n, in_a = np.asarray(t, dtype=float), np.asarray(n, dtype=float), np.asarray(in_a, dtype=bool)
    nan = float("nan")
    a, b = SideSums.of(t[in_a], n[in_a]), SideSums.of(t[~in_a], n[~in_a])
    estimate = a.rate - b.rate
    min_p = min_attainable_p(a.names, b.names, a.texts, b.texts)
    if min(a.names, b.names) < 2 or min_p > alpha:
        note = (f"too few names to test a rate ({a.names} against {b.names}): the smallest p-value this design "
                f"can give is {min_p:.2g}, above alpha = {alpha:g}")
        return RateTest(estimate, nan, nan, nan, nan, nan, False, note, min_p)
    statistic, df, p_value = (float(value) for value in score_t(a, b, 0.0, floor))
    low, high, beyond = inverted_interval(a, b, estimate, alpha, floor)
    # The interval is the hull of the accepted deltas; where p(delta) is not monotone beyond 0 (rare), the p-value
    # is raised to the largest p at or beyond 0, so that the interval and the p-value never disagree about zero.
    p_value = 1.0 if estimate == 0 else max(p_value, beyond)
    return RateTest(estimate, low, high, statistic, df, p_value, True, "", min_p)


def inverted_interval(a: SideSums, b: SideSums, estimate: float, alpha: float,
                      floor: bool = True) -> tuple[float, float, float]:
    """{delta: p(delta) > alpha}: its lowest and highest points, found on a grid and refined at each end; and
    the largest p-value at 0 or beyond it, away from the estimate."""
    rate_a, rate_b = restricted_rates(a, b, np.asarray(estimate))
    se = float(np.sqrt(side_variance(a, rate_a, floor) + side_variance(b, rate_b, floor)))
    grid = [np.linspace(-1.0, 1.0, GRID_WIDE), [0.0, estimate]]
    if se > 0:
        grid.append(np.clip(estimate + se * np.linspace(-12, 12, GRID_LOCAL), -1, 1))
    grid = np.unique(np.concatenate(grid))
    p_values = score_t(a, b, grid, floor)[2]
    accepted = p_values > alpha
    accepted[grid == estimate] = True  # p(estimate) = 1
    inside = np.flatnonzero(accepted)
    first, last = inside[0], inside[-1]
    ends = _refine(a, b, np.array([grid[first], grid[last]]),
                   np.array([grid[max(first - 1, 0)], grid[min(last + 1, len(grid) - 1)]]), alpha, floor)
    low, high = ends
    beyond = p_values[grid <= 0] if estimate > 0 else p_values[grid >= 0]
    return float(low), float(high), float(beyond.max())


def _refine(a: SideSums, b: SideSums, inside: np.ndarray, outside: np.ndarray, alpha: float,
            floor: bool) -> np.ndarray:
    """The last accepted delta going from each `inside` (accepted) towards its `outside` (rejected; equal to
    `inside` at the end of the range), both ends of an interval at once."""
    inside, outside = inside.astype(float), outside.astype(float)
    steps = np.linspace(0.0, 1.0, 64)
    for _ in range(REFINE_ROUNDS):
        points = inside[:, None] + (outside - inside)[:, None] * steps  # one row of 64 points per end
        accepted = (score_t(a, b, points, floor)[2] > alpha).reshape(points.shape)
        accepted[:, 0] = True
        first_rejected = np.where(accepted.all(axis=1), 63, np.argmin(accepted, axis=1))
        done = accepted.all(axis=1)
        rows = np.arange(len(inside))
        inside = np.where(done, points[:, -1], points[rows, np.maximum(first_rejected - 1, 0)])
        outside = np.where(done, points[:, -1], points[rows, first_rejected])
    return inside


def rate_interval(t: np.ndarray, n: np.ndarray, *, alpha: float, floor: bool = True) -> tuple[float, float, str]:
    """(low, high, note): the name-level (1 - alpha) interval of one side's pooled rate:
    {p0: |T/N - p0| / sqrt(V(p0)) below the t quantile on G - 1 df}, V(p0) = max(S_hat G / (G - 1), M(p0)) / N^2:
    the cluster-robust (CR1) sum of squares about the side's own rate, or, when larger, the beta-binomial
    variance at p0 with the shrunk within-name correlation (`side_variance`'s M), which keeps the interval wide
    where the names are few or agree by chance (a Wilson-type interval on the names' effective sample size).
    The null-imposed S of the two-side test is not used here: with one side it bounds |t| by about sqrt(G) at
    every p0, and 5 names would give [0, 1]. Coverage by number of names: benchmarks/CALIBRATION.md. A side of
    one name has no interval (nothing to estimate its spread from); the note says so."""
    t, n = np.asarray(t, dtype=float), np.asarray(n, dtype=float)
    nan = float("nan")
    if len(t) < 2:
        return nan, nan, "one name: no name-level interval"
    side = SideSums.of(t, n)
    estimate, texts = side.rate, side.texts
    critical = float(special.stdtrit(side.names - 1, 1.0 - alpha / 2))
    # p0 is accepted when (estimate - p0)^2 <= c^2 max(A, B(p0)) / N^2, i.e. when either part accepts it; each
    # part accepts an interval around the estimate, so the set is the hull of the two, in closed form.
    squares = max(side.tt - 2 * estimate * side.tn + estimate * estimate * side.nn, 0.0) * side.names / (side.names - 1)
    half = critical * np.sqrt(squares) / texts  # A: the cluster-robust spread about the estimate (Wald)
    low, high = estimate - half, estimate + half
    if floor:  # B(p0) = p0 (1 - p0) (N + rho sum n(n - 1)): Wilson's interval on N^2 / (N + rho sum n(n - 1)) texts
        effective = texts * texts / (texts + side.correlation * side.pairs)
        c2 = critical * critical / effective
        centre = (estimate + c2 / 2) / (1 + c2)
        spread = critical / (1 + c2) * np.sqrt(estimate * (1 - estimate) / effective + c2 / (4 * effective))
        low, high = min(low, centre - spread), max(high, centre + spread)
    return max(0.0, float(low)), min(1.0, float(high)), ""
