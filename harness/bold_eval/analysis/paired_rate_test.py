"""Two sources' rates on the same prompts (a model against Wikipedia, two models): the paired cluster-robust test.

`bold-eval compare`'s overall difference and the leaderboard ask whether source A's expected pooled rate of a label
equals source B's on the same prompts of a domain, the name as the unit and the domain's groups as fixed strata. A
sign-flip test over names' summed differences is exact only when each name's difference is symmetric about the
hypothesis, which a rare label's differences are not when one source treats names far more unevenly than the other.
Here, as in `rate_test`:

- per name i of stratum g (its group): t_Ai and t_Bi, the sums of the two sources' per-prompt rates (values in
  [0, 1]), n_i prompts; N_g the stratum's prompts, N the domain's;
- residuals about each stratum's own rate, e_si = t_si - n_i q_sg (q_sg = T_sg / N_g), so that a difference one
  group's names carry is a difference between strata, not spread between names. The pooled rate sum_g N_g q_sg / N
  is the contrast of a regression of the per-prompt values on one indicator per stratum; its CR2 variance (Bell &
  McCaffrey 2002), with the name as the cluster, is sum_i w_i e_i^2 / N^2 with w_i = 1 / (1 - n_i / N_g): name i's
  leverage in that regression is the block J / N_g, and the contrast weighs a name's prompts alike, so the
  adjustment (I - H_ii)^(-1/2) reduces to 1 / sqrt(1 - n_i / N_g) on the name's summed residual (checked against
  the explicit matrices in tests/analysis/test_paired_rate_test.py). This is the stratified cluster-robust
  (design-based) variance of a domain's pooled rate when the groups are fixed by the design, as BOLD's are;
- a name alone in its stratum has no residual about its own rate (its leverage is 1): it is taken about the
  domain's rate with weight 1 / (1 - n_i / N), which counts its stratum's difference from the domain as spread, the
  conservative choice (R survey's lonely.psu = "adjust"; BOLD has groups of one name). `strata=None` is one
  stratum, the domain: every residual about one domain-wide rate;
- V = V_A + V_B - 2 C: V_s = max(S_s, M_s) / N^2, S_s = sum_i w_i e_si^2, and M_s = `rate_test.side_variance`'s
  beta-binomial floor at the rate restricted to p_A - p_B = delta, one per source over the domain, its within-name
  correlation estimated about each stratum's own rate (`stratified_tau2`) and shrunk towards 1 by the source's
  rarer outcomes (`rate_test.within_name_correlation`); C the pairing's covariance (`paired_covariance`): the CR2
  cross-product sum_i w_i e_Ai e_Bi / N^2 where no floor binds, and where one does, moved towards the sources'
  residual correlation r = sum_i w_i e_Ai e_Bi / sqrt(S_A S_B) applied to the floored variances, r sqrt(V_A V_B),
  by (G_c - 2) / G_c of the way, G_c the effective number of names the cross-product rests on (Kish's, of the
  names' |w_i e_Ai e_Bi|). A floor raises a source's variance where its own sum of squares may fall short, but the
  cross-product, estimated from the same residuals, falls short with them: floored variances less the cross-product
  overstate the variance of the difference of two sources that see the same people (on religion's and politics'
  rare label 1.4-2.0 times the truth at the true difference, 1.1-4.0 times with each source floored at its exact
  true variance). Where one or two names carry the cross-product (a rare label on the same few names of both
  sources), their correlation is 1 by construction, so the move is none there.
  Without the floors V is the stratified CR2 variance of the paired difference, and the floors only raise it;
- t(delta) = (p_hat_A - p_hat_B - delta) / sqrt(V), on names less one per stratum of two names or more, less one
  for the lonely names (the domain mean they are taken about).

The interval is {delta: p(delta) > alpha} (a grid on [-1, 1], refined at each end): at each delta the rates it
imposes and each source floored at its own imposed rate, a test inversion. The p-value is raised to
the largest p at or beyond 0 where p(delta) is not monotone, so the two never disagree about zero. The floor
applies in every design: a rule that drops it where enough names carry the label gained power on religion's rare
label but over-rejected a rare label concentrated on few names even with 300 names. Level, coverage, power against
an oracle and what each candidate cost: benchmarks/leaderboard_calibration.py, calibration_unlike.py --sections
overall, power_oracle.py --kinds overall,leaderboard and paired_floor.py (CALIBRATION.md).

The second half is `bold-eval compare`'s interaction of two runs' continuous worst cases (`continuous_interaction_
tests`): a group's gap in one run minus the other's, each run's values and each side kept apart, since a test of
the per-prompt differences alone over-rejects when one run treats a group's names far more unevenly. Continuous
scores get a floor of their own (`continuous_variance` with `rate_test.score_floor`, the floor the one-run test
of a continuous worst case uses too): the binomial p (1 - p) per value would count a
concentrated score's within-name spread many times over.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse, special

from bold_eval.analysis.rate_test import (
    SideSums,
    null_squares,
    restricted_rates,
    score_floor,
    within_name_correlation,
)

GRID = 401
BISECTIONS = 40


@dataclass(frozen=True)
class PairedSums:
    """Each test's two sources on the same names (`SideSums` fields are arrays, one entry per test; their
    within-name correlations taken about each stratum's own rate, `stratified_tau2`) and the sums that do not move
    with the hypothesis: each source's stratified CR2 sum of squares and the pairing's stratified CR2 cross-product
    (`stratified_residuals`), the degrees of freedom and the effective number of names of the cross-product."""

    a: SideSums
    b: SideSums
    squares_a: np.ndarray
    squares_b: np.ndarray
    cross: np.ndarray
    df: np.ndarray
    cross_names: np.ndarray  # G_c: the effective number of names the cross-product rests on (`paired_covariance`)

    @classmethod
    def of(cls, t_a: np.ndarray, t_b: np.ndarray, n: np.ndarray, strata: np.ndarray | None = None) -> PairedSums:
        """From per-name sums, names x tests (`t_a`, `t_b`), the names' prompts `n` and their strata (one label per
        name, shared by every test; None: one stratum)."""
        t_a, t_b, n = (np.asarray(value, dtype=float) for value in (t_a, t_b, n))
        names, tests = t_a.shape
        codes = np.zeros(names, dtype=int) if strata is None else pd.factorize(np.asarray(strata))[0]
        starts = np.arange(tests) * names
        counts = np.tile(n, tests)
        a, b = (SideSums.of_segments(t.T.ravel(), counts, starts) for t in (t_a, t_b))
        a, b = (dataclasses.replace(side, correlation=within_name_correlation(stratified_tau2(t, n, codes),
                                                                              side.hits, side.texts))
                for side, t in ((a, t_a), (b, t_b)))
        residual_a, residual_b, weight = stratified_residuals(t_a, t_b, n, codes)
        sizes = np.bincount(codes)
        # names less one mean per stratum of two names or more, and one for the lonely names between them
        df = max(names - int((sizes >= 2).sum()) - int((sizes == 1).any()), 1)
        products = weight * residual_a * residual_b
        return cls(a=a, b=b, squares_a=(weight * residual_a ** 2).sum(axis=0),
                   squares_b=(weight * residual_b ** 2).sum(axis=0), cross=products.sum(axis=0),
                   df=np.full(tests, float(df)), cross_names=effective_names(products))

    def column(self) -> PairedSums:
        """Every field as a column, to broadcast against a grid of deltas (one row per test)."""
        index = (slice(None), None)
        return PairedSums(self.a.take(index), self.b.take(index),
                          *(np.asarray(getattr(self, key))[index]
                            for key in ("squares_a", "squares_b", "cross", "df", "cross_names")))


def effective_names(products: np.ndarray) -> np.ndarray:
    """Kish's effective number of names, (sum_i |c_i|)^2 / sum_i c_i^2, of each column of the names' contributions
    c_i (names x tests); 0 where none contributes."""
    size = np.abs(products)
    squares = (size * size).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(squares > 0, size.sum(axis=0) ** 2 / squares, 0.0)


def _indicator(codes: np.ndarray) -> sparse.csr_matrix:
    """strata x names, sparse: 1 where the name is in the stratum (a stratum's sums as one product, without the
    threads a dense product would start)."""
    return sparse.csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))),
                             shape=(int(codes.max()) + 1, len(codes)))


def stratified_residuals(t_a: np.ndarray, t_b: np.ndarray, n: np.ndarray,
                         codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(residuals of A, of B, names x tests; the names' CR2 weights, a column). Each name's sum less its prompts
    times its stratum's own rate, weighted by 1 / (1 - n_i / N_g), one less its leverage in that rate. A name alone
    in its stratum has no residual there: it is taken about the domain's rate with the domain's weight
    1 / (1 - n_i / N) (R survey's lonely.psu = "adjust")."""
    lonely = (np.bincount(codes) == 1)[codes]
    indicator = _indicator(codes)
    texts = indicator @ n
    total = n.sum()
    share = np.where(lonely, n / total, n / texts[codes])
    weight = np.where(share < 1.0, 1.0 / np.maximum(1.0 - share, 1e-12), 1.0)[:, None]
    residuals = []
    for t in (t_a, t_b):
        rate = np.where(lonely[:, None], (t.sum(axis=0) / total)[None, :], ((indicator @ t) / texts[:, None])[codes])
        residuals.append(t - n[:, None] * rate)
    return residuals[0], residuals[1], weight


def stratified_tau2(t: np.ndarray, n: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """tau2 of the names' rates about their own stratum's rate, per test (columns of `t`): `rate_test._tau2`'s
    moments summed over the strata, E sum_i (t_i - n_i p_g)^2 / n_i = sum_g [(G_g - 1) p_g (1 - p_g) + tau2 ((N_g -
    G_g) - sum_(i in g) n_i (n_i - 1) / N_g)], truncated at 0; a stratum of one name adds nothing to either side.
    0 where no stratum holds between-name information."""
    indicator = _indicator(codes)
    texts, sizes, pairs = indicator @ n, np.bincount(codes).astype(float), indicator @ (n * (n - 1))
    hits = indicator @ t  # strata x tests
    rate = hits / texts[:, None]
    spread = (t * t / n[:, None]).sum(axis=0) - (hits * rate).sum(axis=0)
    binomial = ((sizes - 1)[:, None] * rate * (1 - rate)).sum(axis=0)
    denominator = float(((texts - sizes) - pairs / texts).sum())
    if denominator <= 1e-9:
        return np.zeros(t.shape[1])
    return np.maximum(0.0, (spread - binomial) / denominator)


def binomial_floor(side: SideSums, rate: np.ndarray) -> np.ndarray:
    """`rate_test.side_variance`'s beta-binomial floor M = rate (1 - rate) (N + rho sum n_i (n_i - 1)), before the
    division by N^2."""
    return np.clip(rate * (1 - rate), 0.0, None) * (side.texts + side.correlation * side.pairs)


def paired_covariance(sums: PairedSums, var_a: np.ndarray, var_b: np.ndarray) -> np.ndarray:
    """The pairing's covariance (module docstring), before the division by N^2: the CR2 cross-product C moved
    towards r sqrt(V_A V_B), r = C / sqrt(S_A S_B) the sources' residual correlation and V_s = max(S_s, M_s) their
    floored variances, by (G_c - 2) / G_c of the way (none with two effective names or fewer). Where no floor binds,
    r sqrt(V_A V_B) is C itself."""
    product = sums.squares_a * sums.squares_b
    with np.errstate(divide="ignore", invalid="ignore"):
        correlation = np.clip(np.where(product > 0, sums.cross / np.sqrt(product), 0.0), -1.0, 1.0)
    names = np.maximum(sums.cross_names, 2.0)
    share = (names - 2.0) / names  # (G_c - 2) / G_c, 0 up to two effective names
    return sums.cross + share * (correlation * np.sqrt(var_a * var_b) - sums.cross)


def paired_t(sums: PairedSums, delta: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """(t, two-sided p) of p_A - p_B = delta, elementwise (delta broadcasts against the tests)."""
    rate_a, rate_b = restricted_rates(sums.a, sums.b, np.asarray(delta, dtype=float))
    a, b = sums.a, sums.b
    var_a = np.maximum(sums.squares_a, binomial_floor(a, rate_a))
    var_b = np.maximum(sums.squares_b, binomial_floor(b, rate_b))
    total = np.maximum(var_a + var_b - 2 * paired_covariance(sums, var_a, var_b), 0.0) / (a.texts * a.texts)
    shift = a.rate - b.rate - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(total > 0, shift / np.sqrt(total), np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
    return t, 2.0 * special.stdtr(sums.df, -np.abs(t))


def paired_rate_tests(t_a: np.ndarray, t_b: np.ndarray, n: np.ndarray, *, alpha: float,
                      strata: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Per test (columns of `t_a` and `t_b`, names x tests; `n` the names' prompts; `strata` each name's stratum,
    its group, None for one stratum): (estimate, interval low, high, t, p). Needs 2 names or more."""
    sums = PairedSums.of(t_a, t_b, n, strata)
    column = sums.column()
    estimate = sums.a.rate - sums.b.rate
    statistic, p_value = paired_t(sums, 0.0)

    def p_of(delta: np.ndarray) -> np.ndarray:
        return paired_t(column if delta.ndim == 2 else sums, delta)[1]

    low, high, p_value = inverted(p_of, estimate, p_value, alpha, bound=1.0)
    return estimate, low, high, statistic, p_value


def inverted(p_of: Callable[[np.ndarray], np.ndarray], estimate: np.ndarray, p_value: np.ndarray, alpha: float, *,
             bound: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, p) of {delta: p(delta) > alpha} per test: a grid on [-bound, bound] with 0 and the estimate,
    then each end bisected between its last accepted and first rejected point; p raised to the largest p at or
    beyond 0 (away from the estimate), so that interval and p-value never disagree about zero. `p_of` takes the
    deltas as one row per test (2-D) or one per test (1-D)."""
    grid = np.sort(np.concatenate([np.broadcast_to(np.linspace(-bound, bound, GRID), (len(estimate), GRID)),
                                   np.zeros((len(estimate), 1)), estimate[:, None]], axis=1), axis=1)
    grid_p = p_of(grid)
    accepted = (grid_p > alpha) | (grid == estimate[:, None])
    last = grid.shape[1] - 1
    first_in = np.argmax(accepted, axis=1)
    last_in = last - np.argmax(accepted[:, ::-1], axis=1)
    rows = np.arange(len(estimate))
    # both ends bisected at once: one row per test, its low end then its high end
    inside = np.stack([grid[rows, first_in], grid[rows, last_in]], axis=1).astype(float)
    outside = np.stack([grid[rows, np.maximum(first_in - 1, 0)], grid[rows, np.minimum(last_in + 1, last)]],
                       axis=1).astype(float)
    for _ in range(BISECTIONS):
        middle = (inside + outside) / 2
        keep = p_of(middle) > alpha
        inside, outside = np.where(keep, middle, inside), np.where(keep, outside, middle)
    away = np.where(estimate[:, None] > 0, grid <= 0, grid >= 0)
    p_value = np.where(estimate == 0, 1.0, np.maximum(p_value, np.where(away, grid_p, -np.inf).max(axis=1)))
    return inside[:, 0], inside[:, 1], p_value


# --------------------------------------------------------------------------- continuous values: an interaction


@dataclass(frozen=True)
class ScoreSums:
    """One source's continuous values in [0, 1] on one side (array fields, one entry per contrast): names G,
    values N, their sum T, sum of squares Q, the names' sums t_i with sum t_i^2 (tt), sum t_i n_i (tn), sum n_i^2
    (nn), sum t_i^2 / n_i (tt_n)."""

    names: np.ndarray
    texts: np.ndarray
    hits: np.ndarray
    squares: np.ndarray
    tt: np.ndarray
    tn: np.ndarray
    nn: np.ndarray
    tt_n: np.ndarray

    @property
    def rate(self) -> np.ndarray:
        return self.hits / self.texts

    def take(self, index: object) -> ScoreSums:
        return ScoreSums(**{name: np.asarray(value)[index] for name, value in self.__dict__.items()})


def continuous_variance(side: ScoreSums, rate: np.ndarray) -> np.ndarray:
    """Variance of a side's mean of continuous values in [0, 1] if their expected mean is `rate`: the larger of the
    null-imposed cluster-robust sum of squares and the score's floor `rate_test.score_floor` (the pooled within-name
    variance plus a between-name variance shrunk towards the most the mean allows by the side's rarer mass over its
    values; CALIBRATION.md)."""
    squares = null_squares(side.tt, side.tn, side.nn, rate)
    return np.maximum(squares, score_floor(side, rate)) / (side.texts * side.texts)


def score_sums(values: np.ndarray, codes: np.ndarray, starts: np.ndarray) -> ScoreSums:
    """`ScoreSums` of many sides at once: the values of side k are values[starts[k]:starts[k + 1]] (sorted so
    that each side's names are contiguous), `codes` their names (unique across sides)."""
    values = np.asarray(values, dtype=float)
    name_starts, name_side_starts = _name_segments(codes, starts)
    t = np.add.reduceat(values, name_starts)
    n = np.diff(np.r_[name_starts, len(values)]).astype(float)

    def per_side(per_name: np.ndarray) -> np.ndarray:
        return np.add.reduceat(per_name, name_side_starts)

    return ScoreSums(names=np.diff(np.r_[name_side_starts, len(t)]).astype(float), texts=per_side(n),
                     hits=per_side(t), squares=np.add.reduceat(values * values, starts), tt=per_side(t * t),
                     tn=per_side(t * n), nn=per_side(n * n), tt_n=per_side(t * t / n))


def continuous_interaction_tests(cases: list[tuple[np.ndarray, ...]], *, alpha: float) -> tuple[np.ndarray, ...]:
    """The interaction of two sources' continuous values in [0, 1] (a run's and a baseline's worst case per
    prompt), side A against side B, the name as the unit: per case (x, y, names, in_a), per prompt the two values,
    its name and its side. H0: (p_xA - p_yA) - (p_xB - p_yB) = delta, the four means moved onto it by least
    squares; each side's variance `continuous_variance` of x plus that of y less their covariance; Welch-
    Satterthwaite degrees of freedom with names - 1 per side. Returns (estimate, low, high, t, p) per case, the
    interval {delta: p(delta) > alpha} on [-2, 2]."""
    parts: dict[str, list[np.ndarray]] = {"x": [], "y": [], "codes": []}
    sizes, offset = [], 0
    for x, y, names, in_a in cases:
        in_a = np.asarray(in_a, dtype=bool)
        codes = np.asarray(pd.factorize(np.asarray(names))[0])
        for side in (in_a, ~in_a):
            order = np.argsort(codes[side], kind="stable")
            parts["x"].append(np.asarray(x, dtype=float)[side][order])
            parts["y"].append(np.asarray(y, dtype=float)[side][order])
            parts["codes"].append(codes[side][order] + offset)
            sizes.append(int(side.sum()))
            offset += len(codes) + 1
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    x_all, y_all, codes = (np.concatenate(parts[key]) for key in ("x", "y", "codes"))
    x, y = score_sums(x_all, codes, starts), score_sums(y_all, codes, starts)
    xy = np.add.reduceat(*_name_products(x_all, y_all, codes, starts))
    sides = (x.take(slice(0, None, 2)), y.take(slice(0, None, 2)), xy[0::2],
             x.take(slice(1, None, 2)), y.take(slice(1, None, 2)), xy[1::2])
    columns = tuple(side.take((slice(None), None)) if isinstance(side, ScoreSums) else side[:, None]
                    for side in sides)
    estimate = (sides[0].rate - sides[1].rate) - (sides[3].rate - sides[4].rate)
    statistic, p_value = _continuous_t(sides, np.zeros(len(estimate)))

    def p_of(delta: np.ndarray) -> np.ndarray:
        return _continuous_t(columns if delta.ndim == 2 else sides, delta)[1]

    low, high, p_value = inverted(p_of, estimate, p_value, alpha, bound=2.0)
    return estimate, low, high, statistic, p_value


def _continuous_t(sides: tuple[Any, ...], delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t, p) of the continuous interaction at `delta`; `sides` = (x_A, y_A, sum x*y per name on A, x_B, y_B, ...
    on B), broadcasting against `delta`."""
    xa, ya, cross_a, xb, yb, cross_b = sides
    estimate = (xa.rate - ya.rate) - (xb.rate - yb.rate)
    gap = delta - estimate
    total = xa.texts + xb.texts
    w_a, w_b = xb.texts / (2 * total), xa.texts / (2 * total)
    rates = ((np.clip(xa.rate + gap * w_a, 0, 1), np.clip(ya.rate - gap * w_a, 0, 1)),
             (np.clip(xb.rate - gap * w_b, 0, 1), np.clip(yb.rate + gap * w_b, 0, 1)))
    variances = []
    for (sx, sy, cross), (rx, ry) in zip(((xa, ya, cross_a), (xb, yb, cross_b)), rates, strict=True):
        covariance = (cross - ry * sx.tn - rx * sy.tn + rx * ry * sx.nn) / (sx.texts * sx.texts)
        variances.append(np.maximum(continuous_variance(sx, rx) + continuous_variance(sy, ry) - 2 * covariance, 0.0))
    var_a, var_b = variances
    shift = estimate - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(var_a + var_b > 0, shift / np.sqrt(var_a + var_b),
                     np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
        df = (var_a + var_b) ** 2 / (var_a ** 2 / np.maximum(xa.names - 1, 1)
                                     + var_b ** 2 / np.maximum(xb.names - 1, 1))
    df = np.where(np.isfinite(df), df, 1.0)
    return t, 2.0 * special.stdtr(df, -np.abs(t))


def _name_products(x: np.ndarray, y: np.ndarray, codes: np.ndarray,
                   starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per name: its sum of x times its sum of y, the index where each side starts among the names)."""
    name_starts, name_side_starts = _name_segments(codes, starts)
    return np.add.reduceat(x, name_starts) * np.add.reduceat(y, name_starts), name_side_starts


def _name_segments(codes: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where each name's values start, where each side starts among the names), for values sorted so that each
    side's names are contiguous (`codes` their names, `starts` where each side's values start)."""
    name_starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    side_of_name = np.searchsorted(starts, name_starts, side="right") - 1
    return name_starts, np.searchsorted(side_of_name, np.arange(len(starts)))
