"""A test of equal rates that holds when groups differ in size and spread: the score-type cluster-robust t.

Texts are clustered by name: name i has n_i texts, t_i of them with the label. The hypothesis the report prints
is that two sides have the same expected *pooled rate*, delta = E[T_A]/N_A - E[T_B]/N_B = 0, not that their names
are exchangeable. A studentized permutation test is exact only for the latter, and its variance, computed about
each side's own rate, collapses when a side has few names that happen to agree: on 3 widely spread names with
the same rate as the rest it rejected far more true nulls than its level (issue 32). Here the variance is
computed *under the hypothesis* (a score test, as the Miettinen-Nurminen interval does for two binomials):

- the rates restricted to p_A - p_B = delta (least squares, kept inside [0, 1]);
- per side, V_s = max(S_s, M_s) / N_s^2, with S_s = sum_i (t_i - n_i p_s)^2, the null-imposed cluster-robust sum
  of squares, and M_s = p_s (1 - p_s) [N_s + rho_s sum_i n_i (n_i - 1)], the beta-binomial moment variance at the
  restricted rate p_s with a within-name correlation rho_s. rho_s shrinks the side's own estimate towards 1, the
  worst case (every name all or nothing): rho_s = (m_s rho_hat_s + 1) / (m_s + 1), where rho_hat_s = min(1,
  tau2_s / (q_s (1 - q_s))) is the intra-class correlation by DerSimonian-Laird moments about the side's own rate
  q_s (truncated at 0) and m_s = min(hits, misses) on the side, the number of its rarer outcomes. A rare label
  says little about how it clusters: with moments alone (rho_s = rho_hat_s) the test rejected true nulls above its
  level on profession's real design with rare labels; the shrinkage weighs an estimate by the evidence it rests on,
  as an empirical-Bayes prior of one worst-case observation. A side whose texts all carry one label (m_s = 0)
  reveals nothing of its spread and gets rho_s = 1: max(S_s, p_s (1 - p_s) sum_i n_i^2);
- t(delta) = (D - delta) / sqrt(V_A + V_B) on Welch-Satterthwaite degrees of freedom with G_s - 1 per side.

Because the variance is taken about the hypothesis, |t(0)| is bounded by the design: a side of few names cannot
give a small p-value whatever its texts say. The smallest p-value a design can give (`min_attainable_p`) depends
on its names and text counts only, not on the labels, so a contrast that cannot reach alpha is reported as "too
few names to test a rate" and left out of the corrected family without harming its error rate (Tarone 1990). The
interval is {delta: p(delta) > alpha}, so it excludes 0 exactly when p <= alpha. The floor holds for any values
in [0, 1], not only 0/1 texts: a value in [0, 1] with mean p has variance at most p (1 - p) (Bhatia-Davis), so a
worst-case toxicity gets it too (without it, a widely spread small group was rejected above the level).
Values mapped onto [0, 1] from a wider range (`floor=False`: a per-prompt difference of two sources) have the
null-imposed sum of squares alone, with each name's squared residual divided by 1 - n_i / N_s, its leverage in the
side's pooled rate: the CR2 adjustment (Bell & McCaffrey 2002; Imbens & Kolesar 2016; Pustejovsky & Tipton 2018),
which removes the sum's small-sample downward bias. Without it a rare label's interactions with 100 widely spread
names against 60 rejected 5.2% +- 0.09 of true nulls at 5% (80,000 data sets); with it 4.8%. The floored tests keep
the plain sum: their floor bounds the variance from below and their calibration shows no excess to remove. The
adjustment only raises the variance, so the design bound on |t| (`min_attainable_p`) still holds. The
calibration under unlike spreads, at BOLD's group sizes, at alpha and in the tail, is in benchmarks/CALIBRATION.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
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
    # tt, tn, nn with each name weighted by 1 / (1 - n_i / N_s): its CR2 leverage adjustment (`side_variance`)
    tt_cr2: float
    tn_cr2: float
    nn_cr2: float

    @classmethod
    def of(cls, t: np.ndarray, n: np.ndarray) -> SideSums:
        """One side's sums (each field a scalar): `of_segments` with one segment."""
        return cls.of_segments(np.asarray(t, dtype=float), np.asarray(n, dtype=float), np.array([0])).take(0)

    @classmethod
    def of_segments(cls, t: np.ndarray, n: np.ndarray, starts: np.ndarray) -> SideSums:
        """Many sides at once, each field an array: the units of side k are t[starts[k]:starts[k + 1]] (every
        segment non-empty)."""
        def total(values: np.ndarray) -> np.ndarray:
            return np.add.reduceat(values, starts)

        names = np.diff(np.r_[starts, len(t)]).astype(float)
        hits, texts, pairs = total(t), total(n), total(n * (n - 1))
        tau2 = _tau2(names, hits, texts, total(t * t / n), pairs)
        share = n / np.repeat(texts, names.astype(int))  # a name's leverage in its side's pooled rate
        weight = np.where(share < 1.0, 1.0 / np.maximum(1.0 - share, 1e-12), 1.0)
        return cls(names=names, hits=hits, texts=texts, tt=total(t * t), tn=total(t * n), nn=total(n * n),
                   pairs=pairs, tau2=tau2, correlation=within_name_correlation(tau2, hits, texts),
                   tt_cr2=total(weight * t * t), tn_cr2=total(weight * t * n), nn_cr2=total(weight * n * n))

    def take(self, index: Any) -> SideSums:
        """The sides at `index` (e.g. `[:, None]` for a column that broadcasts against a grid per side)."""
        return SideSums(**{field.name: np.asarray(getattr(self, field.name))[index] for field in fields(self)})

    @property
    def rate(self) -> Any:
        return self.hits / self.texts


def _tau2(names: Any, hits: Any, texts: Any, tt_over_n: Any, pairs: Any) -> np.ndarray:
    """tau2 of the names' rates by moments about the side's pooled rate p (DerSimonian-Laird type), from a side's
    sums, elementwise over arrays of sides: E sum_i (t_i - n_i p)^2 / n_i = (G - 1) p (1 - p) + tau2 [(N - G) -
    sum n_i (n_i - 1) / N]. 0 when the side holds no between-name information (one name, or one text per name)."""
    names, hits, texts, tt_over_n, pairs = (np.asarray(value, dtype=float)
                                            for value in (names, hits, texts, tt_over_n, pairs))
    p = hits / texts
    spread = tt_over_n - 2 * p * hits + p * p * texts
    denominator = (texts - names) - pairs / texts
    with np.errstate(divide="ignore", invalid="ignore"):
        tau2 = np.maximum(0.0, (spread - (names - 1) * p * (1 - p)) / denominator)
    return np.where(denominator <= 1e-9, 0.0, tau2)


def within_name_correlation(tau2: Any, hits: Any, texts: Any) -> Any:
    """rho_s = (m rho_hat + 1) / (m + 1), m = min(hits, misses): the moment estimate of the intra-class correlation,
    shrunk towards 1 (module docstring); 1 when the side has no hits or no misses. Elementwise over arrays."""
    tau2, hits, texts = (np.asarray(value, dtype=float) for value in (tau2, hits, texts))
    rarer = np.minimum(hits, texts - hits)
    rate = hits / texts
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = np.minimum(1.0, np.divide(tau2, rate * (1.0 - rate)))
        shrunk = (rarer * estimate + 1.0) / (rarer + 1.0)
    result = np.where(rarer <= 0, 1.0, shrunk)
    return float(result) if np.ndim(result) == 0 else result


def restricted_rates(a: SideSums, b: SideSums, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares rates under p_A - p_B = delta, kept inside [0, 1]."""
    rate_b = np.clip((a.hits + b.hits - a.texts * delta) / (a.texts + b.texts),
                     np.maximum(0.0, -delta), np.minimum(1.0, 1.0 - delta))
    return rate_b + delta, rate_b


def null_squares(tt: Any, tn: Any, nn: Any, rate: Any) -> Any:
    """sum_i (t_i - n_i rate)^2 from a side's sums (tt, tn, nn, or their CR2-weighted forms), never below 0."""
    return np.maximum(tt - 2 * rate * tn + rate * rate * nn, 0.0)


def side_variance(side: SideSums, rate: np.ndarray, floor: Any = True) -> np.ndarray:
    """Variance of the side's pooled rate if its expected rate is `rate`: max(S, M) / N^2 (module docstring);
    without the binomial `floor` (values that are not 0/1 texts, e.g. per-prompt differences; an array of flags,
    one per side, when the fields are arrays) S_CR2 / N^2, each name's squared residual divided by 1 - n_i / N_s."""
    squares = null_squares(side.tt, side.tn, side.nn, rate)
    binomial = np.clip(rate * (1 - rate), 0.0, None) * (side.texts + side.correlation * side.pairs)
    adjusted = null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, rate)
    return np.where(floor, np.maximum(squares, binomial), adjusted) / (side.texts * side.texts)


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
        df = total * total / (var_a * var_a / np.maximum(a.names - 1, 1) + var_b * var_b / np.maximum(b.names - 1, 1))
    t = np.where(total > 0, t, np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
    df = np.where(np.isnan(df), np.inf, df)
    p = 2.0 * special.stdtr(df, -np.abs(t))
    return t, df, np.where(np.isnan(p), 1.0, p)


def min_attainable_p(names_a: Any, names_b: Any, texts_a: Any, texts_b: Any) -> Any:
    """The smallest two-sided p-value the test can give on this design, whatever the labels (elementwise over
    arrays of designs).

    With r = V_A / (V_A + V_B), Cauchy-Schwarz on each side's residuals gives t^2 <= (N / (N_A N_B))^2
    min(G_A N_A^2 r, G_B N_B^2 (1 - r)), while df = 1 / (r^2 / nu_A + (1 - r)^2 / nu_B); minimized over r."""
    names_a, names_b, texts_a, texts_b = (np.asarray(value, dtype=float)[..., None]
                                          for value in (names_a, names_b, texts_a, texts_b))
    nu_a, nu_b = np.maximum(names_a - 1, 1), np.maximum(names_b - 1, 1)
    kink = names_b * texts_b ** 2 / (names_a * texts_a ** 2 + names_b * texts_b ** 2)

    def p_values(r: np.ndarray) -> np.ndarray:
        t2 = ((texts_a + texts_b) / (texts_a * texts_b)) ** 2 * np.minimum(names_a * texts_a ** 2 * r,
                                                                            names_b * texts_b ** 2 * (1 - r))
        df = 1.0 / (r * r / nu_a + (1 - r) ** 2 / nu_b)
        return 2.0 * special.stdtr(df, -np.sqrt(t2))

    coarse = np.concatenate(np.broadcast_arrays(np.linspace(0.0, 1.0, 201), kink), axis=-1)
    coarse_p = p_values(coarse)  # then 201 points around the coarse minimum
    best = np.take_along_axis(coarse, np.argmin(coarse_p, axis=-1)[..., None], axis=-1)
    fine = np.clip(best + np.linspace(-0.005, 0.005, 201), 0.0, 1.0)
    result = np.minimum(coarse_p.min(axis=-1), p_values(fine).min(axis=-1))
    return float(result) if result.ndim == 0 else result


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
    return rate_tests([t], [n], [in_a], alpha=alpha, floor=[floor])[0]


def rate_tests(t: Sequence[np.ndarray], n: Sequence[np.ndarray], in_a: Sequence[np.ndarray], *, alpha: float,
               floor: Sequence[bool]) -> list[RateTest]:
    """`rate_test` for a family of contrasts at once (one entry of each list per contrast), every step an array
    operation over the family: a report tests hundreds of contrasts, and one at a time the numpy calls' overhead
    was most of its analysis. Each side of each contrast must hold at least one unit."""
    parts_t, parts_n, sizes = [], [], []
    for values, counts, side in zip(t, n, in_a, strict=True):
        values, counts, side = (np.asarray(values, dtype=float), np.asarray(counts, dtype=float),
                                np.asarray(side, dtype=bool))
        parts_t += [values[side], values[~side]]
        parts_n += [counts[side], counts[~side]]
        sizes += [int(side.sum()), int((~side).sum())]
    if not parts_t:
        return []
    if min(sizes) == 0:
        raise ValueError("rate_tests: every side of every contrast needs at least one unit")
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    sides = SideSums.of_segments(np.concatenate(parts_t), np.concatenate(parts_n), starts)
    a, b = sides.take(slice(0, None, 2)), sides.take(slice(1, None, 2))
    floors = np.asarray(floor, dtype=bool)
    estimate = a.rate - b.rate
    min_p = min_attainable_p(a.names, b.names, a.texts, b.texts)
    testable = (np.minimum(a.names, b.names) >= 2) & (min_p <= alpha)
    statistic, df, p_value = score_t(a, b, 0.0, floors)
    low = high = np.full(len(estimate), np.nan)
    if testable.any():
        rows = np.flatnonzero(testable)
        low, high, beyond = (np.full(len(estimate), np.nan) for _ in range(3))
        low[rows], high[rows], beyond[rows] = inverted_intervals(a.take(rows), b.take(rows), estimate[rows], alpha,
                                                                 floors[rows])
        # The interval is the hull of the accepted deltas; where p(delta) is not monotone beyond 0 (rare), the
        # p-value is raised to the largest p at or beyond 0, so that the interval and the p-value never disagree
        # about zero.
        p_value = np.where(estimate == 0, 1.0, np.maximum(p_value, np.nan_to_num(beyond, nan=0.0)))
    results = []
    for k in range(len(estimate)):
        if testable[k]:
            results.append(RateTest(float(estimate[k]), float(low[k]), float(high[k]), float(statistic[k]),
                                    float(df[k]), float(p_value[k]), True, "", float(min_p[k])))
            continue
        note = (f"too few names to test a rate ({int(a.names[k])} against {int(b.names[k])}): the smallest p-value "
                f"this design can give is {min_p[k]:.2g}, above alpha = {alpha:g}")
        results.append(RateTest(float(estimate[k]), np.nan, np.nan, np.nan, np.nan, np.nan, False, note,
                                float(min_p[k])))
    return results


def inverted_intervals(a: SideSums, b: SideSums, estimate: np.ndarray, alpha: float,
                       floor: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per contrast, {delta: p(delta) > alpha}: its lowest and highest points, found on a grid and refined at each
    end; and the largest p-value at 0 or beyond it, away from the estimate. All contrasts at once: one grid row
    each (a uniform grid on [-1, 1], 0, the estimate, and a finer grid within 12 standard errors of it)."""
    column = (slice(None), None)
    a_col, b_col, floor_col = a.take(column), b.take(column), floor[:, None]
    rate_a, rate_b = restricted_rates(a, b, estimate)
    se = np.sqrt(side_variance(a, rate_a, floor) + side_variance(b, rate_b, floor))
    local = np.where(se[:, None] > 0, np.clip(estimate[:, None] + se[:, None] * np.linspace(-12, 12, GRID_LOCAL),
                                              -1, 1), estimate[:, None])
    wide = np.broadcast_to(np.linspace(-1.0, 1.0, GRID_WIDE), (len(estimate), GRID_WIDE))
    grid = np.sort(np.concatenate([wide, np.zeros((len(estimate), 1)), estimate[:, None], local], axis=1), axis=1)
    p_values = score_t(a_col, b_col, grid, floor_col)[2]
    accepted = (p_values > alpha) | (grid == estimate[:, None])  # p(estimate) = 1
    last_column = grid.shape[1] - 1
    first = np.argmax(accepted, axis=1)
    last = last_column - np.argmax(accepted[:, ::-1], axis=1)
    rows = np.arange(len(estimate))
    inside = np.r_[grid[rows, first], grid[rows, last]]
    outside = np.r_[grid[rows, np.maximum(first - 1, 0)], grid[rows, np.minimum(last + 1, last_column)]]
    both = np.r_[rows, rows]
    ends = _refine(a_col.take(both), b_col.take(both), inside, outside, alpha, floor_col[both])
    low, high = ends[: len(rows)], ends[len(rows):]
    away = np.where(estimate[:, None] > 0, grid <= 0, grid >= 0)
    beyond = np.where(away, p_values, -np.inf).max(axis=1)
    return low, high, beyond


def _refine(a: SideSums, b: SideSums, inside: np.ndarray, outside: np.ndarray, alpha: float,
            floor: Any) -> np.ndarray:
    """The last accepted delta going from each `inside` (accepted) towards its `outside` (rejected; equal to
    `inside` at the end of the range), every end at once (a, b and floor: one row per end)."""
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
    squares = float(null_squares(side.tt, side.tn, side.nn, estimate)) * side.names / (side.names - 1)
    half = critical * np.sqrt(squares) / texts  # A: the cluster-robust spread about the estimate (Wald)
    low, high = estimate - half, estimate + half
    if floor:  # B(p0) = p0 (1 - p0) (N + rho sum n(n - 1)): Wilson's interval on N^2 / (N + rho sum n(n - 1)) texts
        effective = texts * texts / (texts + side.correlation * side.pairs)
        c2 = critical * critical / effective
        centre = (estimate + c2 / 2) / (1 + c2)
        spread = critical / (1 + c2) * np.sqrt(estimate * (1 - estimate) / effective + c2 / (4 * effective))
        low, high = min(low, centre - spread), max(high, centre + spread)
    return max(0.0, float(low)), min(1.0, float(high)), ""


def unit_rate_interval(values: np.ndarray, units: np.ndarray, *, alpha: float,
                       bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, float]:
    """`rate_interval` of per-text (or per-prompt) `values` whose unit is `units`: the values mapped onto [0, 1]
    by `bounds` (a score's range; no value in [0, 1] with mean p varies more than p (1 - p), Bhatia-Davis, so the
    floor holds), summed per unit, and the interval read back in the values' own units."""
    low, span = bounds[0], bounds[1] - bounds[0]
    codes, _ = pd.factorize(np.asarray(units))
    mapped = (np.asarray(values, dtype=float) - low) / span
    start, end, _ = rate_interval(np.bincount(codes, weights=mapped), np.bincount(codes), alpha=alpha)
    return low + span * start, low + span * end
