"""A test of equal rates that holds when groups differ in size and spread, and finds what is there.

Texts are clustered by name: name i has n_i texts, t_i of them with the label. The hypothesis the report prints
is that two sides have the same expected *pooled rate*, delta = E[T_A]/N_A - E[T_B]/N_B = 0, not that their names
are exchangeable. The test is a cluster-robust t with the name as the unit:

- per side, V_s = max(S_s, M_s) / N_s^2. S_s = sum_i (t_i - n_i q_s)^2 / (1 - n_i / N_s) is the CR2 cluster-robust
  sum of squares about the side's own rate q_s (each name's squared residual divided by one less its leverage in
  that rate; Bell & McCaffrey 2002, Pustejovsky & Tipton 2018). Taken about the side's own rate, not the rate the
  hypothesis imposes, S_s does not absorb the difference being tested: a long page in a group with a real
  difference would otherwise inflate the variance by its texts squared times the difference squared.
- M_s = p_s (1 - p_s) [N_s + rho_s sum_i n_i (n_i - 1)] is a floor for values in [0, 1]: the beta-binomial variance
  at the rate p_s restricted to the hypothesis (least squares, inside [0, 1]), with a within-name correlation
  rho_s. A few names that agree by chance, or a rare label, make S_s small while revealing little of the spread;
  the floor keeps the variance at what the rate allows. rho_s shrinks the side's moment estimate rho_hat_s (the
  intra-class correlation by DerSimonian-Laird moments about q_s, truncated at 0) towards 1, the worst case of
  names all or nothing: rho_s = (k_s rho_hat_s + w) / (k_s + w), w = `WORST_CASE_WEIGHT`, k_s = min(hits, misses,
  names) on the side: the evidence on rho is the fewer of the side's rarer outcomes and its names (rho_hat's noise
  shrinks with the names, not with the texts: 13 names of 1-167 texts agree by chance in a few data sets in a
  hundred, and 100 rarer outcomes against w would leave rho_s near 0). A side whose texts all carry one label
  (m_s = 0) gets rho_s = 1. No value in [0, 1] with
  mean p varies more than p (1 - p) (Bhatia-Davis), so the floor holds for any value in [0, 1].
- A continuous score (`floor` SCORE: a worst case over k samples such as the expected maximum toxicity, mapped onto
  [0, 1] by its range) varies far less than p (1 - p) about its mean, and that floor would bind far above its
  variance. Its floor is the score's own (`score_floor`): sigma_w^2 N_s + tau_s^2 sum_i n_i^2, the pooled
  within-name variance and the between-name variance shrunk towards the most the mean allows by the side's rarer
  mass, as rho_s is shrunk above, against a prior that weighs more where the side has few names.
- Values mapped onto [0, 1] from a wider range (`floor` False or NO_FLOOR: a per-prompt difference of two sources)
  have S_s alone.
- t(delta) = (D - delta) / sqrt(V_A + V_B) on Welch-Satterthwaite degrees of freedom (`side_df`): names - 1 per
  side with either floor; without a floor, each side's effective number of names less one, since names of unequal
  length carry unequal shares of the variance, at a within-name correlation moved towards 1 for a side of few names
  (`df_correlation`), and the Welch count at most `WELCH_CAP` times the fewer of the two sides' (`welch_df`).

The interval is {delta: p(delta) > alpha} (the floor moves with delta), so it excludes 0 exactly when p <= alpha.

A contrast is tested only where its design could give evidence at alpha: both sides need 2 names, and
`min_attainable_p`, the smallest p-value a null-imposed score test could give on the design (its names and text
counts only, not the labels), must reach alpha; otherwise the contrast is reported as "too few names to test a
rate" and left out of the corrected family. A rule that does not look at the labels cannot harm the family's error
rate (Tarone 1990). Level, coverage and power against an oracle that knows the true variance, at BOLD's own
designs: benchmarks/CALIBRATION.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

import numpy as np
import pandas as pd
from scipy import special

# Interval search: a uniform grid on [-1, 1], a finer one within 12 standard errors of the estimate, then each
# end refined by zooming (a 64-point grid per round, the bracket shrinking 63-fold each time: 3 rounds take a
# bracket of 0.1 standard errors to 4e-7 of one, far below the 3 decimals the report prints).
GRID_WIDE = 201
# The prior weight, in worst-case outcomes (every name all or nothing), that pulls a side's within-name correlation
# towards 1 against the fewer of its rarer outcomes and its names (`within_name_correlation`); chosen by measurement
# (benchmarks/CALIBRATION.md, "Power against an oracle" and "Group vs rest: the floor's correlation").
WORST_CASE_WEIGHT = 0.1
GRID_LOCAL = 201
REFINE_ROUNDS = 3
# A side's floor (`side_variance`): the beta-binomial variance (labels, and values with a binomial bound), the
# continuous score's own (`score_floor`), or none (values mapped onto [0, 1] from a wider range).
BINOMIAL, SCORE, NO_FLOOR = "binomial", "score", "none"
# The prior weight, in values at the most between-name variance the mean allows, that `score_floor` puts against
# the side's rarer mass: SCORE_PRIOR_WEIGHT (1 + SCORE_PRIOR_NAMES / names) (`score_prior_weight`), growing where a
# side has few names to estimate its between-name variance from; chosen by measurement (benchmarks/CALIBRATION.md,
# "The worst cases' floor").
SCORE_PRIOR_WEIGHT = 1.0
SCORE_PRIOR_NAMES = 4.0
FLOORS = (BINOMIAL, SCORE, NO_FLOOR)
# How far `df_correlation` moves a side's estimated within-name correlation towards 1: FEW_NAMES_WEIGHT / G^2 of the
# way for G names (17% at 10 names, 2% at 30); chosen by measurement (benchmarks/CALIBRATION.md, "Interaction
# degrees of freedom: the candidates").
FEW_NAMES_WEIGHT = 17.0
# Without a floor, the Welch-Satterthwaite count is at most WELCH_CAP times the fewer of the two sides' degrees of
# freedom (`welch_df`): Welch leans towards the larger side exactly when the small side's variance comes out small,
# which is when its t is largest; 1 is Hsu's (1938) fewer degrees of freedom. Chosen by measurement
# (benchmarks/CALIBRATION.md, "Interactions below their effective-names bound: where the power goes").
WELCH_CAP = 1.5


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
    correlation: float  # rho_s: within-name correlation, shrunk towards 1 by the side's rarer outcomes and names
    # tt, tn, nn with each name weighted by 1 / (1 - n_i / N_s): its CR2 leverage adjustment (`side_variance`)
    tt_cr2: float
    tn_cr2: float
    nn_cr2: float
    n3: float  # sum n_i^3 and sum n_i^4: the effective number of names (`side_df`)
    n4: float
    squares: float  # sum of the texts' squared values (the hits, for 0/1 texts) and sum_i t_i^2 / n_i
    tt_n: float

    @classmethod
    def of(cls, t: np.ndarray, n: np.ndarray, squares: np.ndarray | None = None) -> SideSums:
        """One side's sums (each field a scalar): `of_segments` with one segment."""
        return cls.of_segments(np.asarray(t, dtype=float), np.asarray(n, dtype=float), np.array([0]),
                               squares).take(0)

    @classmethod
    def of_segments(cls, t: np.ndarray, n: np.ndarray, starts: np.ndarray,
                    squares: np.ndarray | None = None) -> SideSums:
        """Many sides at once, each field an array: the units of side k are t[starts[k]:starts[k + 1]] (every
        segment non-empty); `squares`, each unit's sum of squared values, is its sum t for 0/1 texts."""
        def total(values: np.ndarray) -> np.ndarray:
            return np.add.reduceat(values, starts)

        names = np.diff(np.r_[starts, len(t)]).astype(float)
        hits, texts, pairs, tt_n = total(t), total(n), total(n * (n - 1)), total(t * t / n)
        tau2 = _tau2(names, hits, texts, tt_n, pairs)
        share = n / np.repeat(texts, names.astype(int))  # a name's leverage in its side's pooled rate
        weight = np.where(share < 1.0, 1.0 / np.maximum(1.0 - share, 1e-12), 1.0)
        return cls(names=names, hits=hits, texts=texts, tt=total(t * t), tn=total(t * n), nn=total(n * n),
                   pairs=pairs, tau2=tau2, correlation=within_name_correlation(tau2, hits, texts, names),
                   tt_cr2=total(weight * t * t), tn_cr2=total(weight * t * n), nn_cr2=total(weight * n * n),
                   n3=total(n ** 3), n4=total(n ** 4), squares=total(t if squares is None else squares), tt_n=tt_n)

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


def within_name_correlation(tau2: Any, hits: Any, texts: Any, names: Any = None) -> Any:
    """rho_s = (k rho_hat + w) / (k + w), w = `WORST_CASE_WEIGHT`, k = min(hits, misses, `names`): the moment
    estimate of the intra-class correlation, shrunk towards 1 by the fewer of the side's rarer outcomes and its names
    (module docstring; without `names`, by the rarer outcomes alone: compare's paired floor, whose sides share their
    names); 1 when the side has no hits or no misses. Elementwise over arrays."""
    tau2, hits, texts = (np.asarray(value, dtype=float) for value in (tau2, hits, texts))
    rarer = np.minimum(hits, texts - hits)
    evidence = rarer if names is None else np.minimum(rarer, np.asarray(names, dtype=float))
    rate = hits / texts
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = np.minimum(1.0, np.divide(tau2, rate * (1.0 - rate)))
        shrunk = (evidence * estimate + WORST_CASE_WEIGHT) / (evidence + WORST_CASE_WEIGHT)
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


def floor_kinds(floor: Any) -> np.ndarray:
    """Each side's floor as one of `FLOORS` (elementwise): True is the binomial floor, False none."""
    kinds = np.asarray(floor)
    if kinds.dtype == bool:
        return np.where(kinds, BINOMIAL, NO_FLOOR)
    unknown = set(np.unique(kinds).tolist()) - set(FLOORS)
    if unknown:
        raise ValueError(f"unknown floor {sorted(unknown)}: choose from {', '.join(FLOORS)}")
    return kinds


def side_variance(side: SideSums, rate: np.ndarray, floor: Any = True) -> np.ndarray:
    """Variance of the side's pooled rate, max(S_CR2, floor(rate)) / N^2 (module docstring): the CR2 cluster-robust
    sum of squares about the side's own rate and, by the side's `floor` (`floor_kinds`: one per side when the fields
    are arrays), at least the beta-binomial variance at the hypothesised `rate` (values in [0, 1]), the continuous
    score's `score_floor`, or nothing."""
    kind = floor_kinds(floor)
    squares = null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, side.rate)
    bound = np.where(kind == BINOMIAL, binomial_floor(side, rate), np.where(kind == SCORE, score_floor(side, rate),
                                                                             0.0))
    return np.maximum(squares, bound) / (side.texts * side.texts)


def binomial_floor(side: SideSums, rate: Any) -> np.ndarray:
    """M = p (1 - p) (N + rho_s sum n_i (n_i - 1)): the beta-binomial floor at `rate` (module docstring)."""
    return np.clip(rate * (1 - rate), 0.0, None) * (side.texts + side.correlation * side.pairs)


class ValueSums(Protocol):
    """The sums `score_floor` reads: a side's names G, values N, their sum T, sum of squares Q, and per name its sum
    t_i and count n_i as sum n_i^2 (nn) and sum t_i^2 / n_i (tt_n); fields scalars or arrays."""

    @property
    def names(self) -> Any: ...
    @property
    def texts(self) -> Any: ...
    @property
    def hits(self) -> Any: ...
    @property
    def squares(self) -> Any: ...
    @property
    def nn(self) -> Any: ...
    @property
    def tt_n(self) -> Any: ...
    @property
    def rate(self) -> Any: ...


def score_prior_weight(names: Any) -> Any:
    """The prior weight `score_floor` puts on the ceiling of the between-name variance, in values: SCORE_PRIOR_WEIGHT
    (1 + SCORE_PRIOR_NAMES / G) for a side of G names (elementwise). A side of few names estimates its between-name
    variance from few names, however many values they hold; where the rest of a domain holds a few strongly spread
    names, the rest's rate and its variance are low together in the same data sets, and a small side's floor is what
    keeps the test at its level (benchmarks/CALIBRATION.md, "The worst cases' floor")."""
    names = np.asarray(names, dtype=float)
    with np.errstate(divide="ignore"):
        return SCORE_PRIOR_WEIGHT * (1.0 + SCORE_PRIOR_NAMES / np.maximum(names, 1.0))


def score_floor(side: ValueSums, rate: Any, weight: Any = None) -> np.ndarray:
    """The floor of a continuous score in [0, 1] whose expected mean is `rate`: sigma_w^2 N + tau_s^2 sum n_i^2, where
    sigma_w^2 is the pooled within-name variance and tau_s^2 the between-name variance shrunk towards the most the
    mean allows (rate (1 - rate) - sigma_w^2, Bhatia-Davis) by the side's rarer mass over its values m = min(sum of
    the values, sum of their complements): (m tau_hat^2 + w tau_max^2) / (m + w), as a label's within-name correlation
    is shrunk by its rarer outcomes (`within_name_correlation`); w = `score_prior_weight` of the side's names unless
    `weight` is given. A score concentrated about its mean (a prompt's highest of k toxicities) varies far less than
    p (1 - p), the binomial floor, and this floor follows it."""
    within_df = np.maximum(side.texts - side.names, 1.0)
    sigma_w = np.clip((side.squares - side.tt_n) / within_df, 0.0, None)
    p = side.rate
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = side.tt_n - 2 * p * side.hits + p * p * side.texts  # sum_i n_i (mean_i - p)^2
        tau_hat = np.clip((spread - (side.names - 1) * sigma_w) / (side.texts - side.nn / side.texts), 0.0, None)
    tau_hat = np.where(np.isfinite(tau_hat), tau_hat, 0.0)
    tau_max = np.clip(rate * (1 - rate) - sigma_w, 0.0, None)
    rarer = np.minimum(side.hits, side.texts - side.hits)
    weight = score_prior_weight(side.names) if weight is None else weight
    with np.errstate(divide="ignore", invalid="ignore"):
        tau_s = np.where(rarer + weight > 0, (rarer * np.minimum(tau_hat, tau_max) + weight * tau_max)
                         / (rarer + weight), tau_max)
    return sigma_w * side.texts + tau_s * side.nn


def side_df(side: SideSums, floor: Any = True) -> np.ndarray:
    """Degrees of freedom of a side's variance. With a `floor` (binomial or the score's), names - 1: the floor
    steadies the variance where a few names would leave the sum of squares unsteady. Without one, the side's effective
    number of names less one, (sum v_i)^2 / sum v_i^2 - 1 with v_i = n_i (1 + (n_i - 1) rho) each name's share of
    the variance at the values' intra-class correlation rho (`value_correlation`; a Satterthwaite approximation,
    Bell & McCaffrey 2002): ten names of which one holds most of the texts are worth far fewer than ten. With names
    alike it is the most degrees of freedom any variance estimate unbiased whatever the names' spread can have.
    Chosen by measurement, both ways (benchmarks/CALIBRATION.md, "Power against an oracle"), and kept against the CR2
    sum's Bell-McCaffrey degrees of freedom and variances built on the within-name spread, which found more and
    rejected more true nulls ("Interaction degrees of freedom: the candidates", `benchmarks/interaction_df.py`).
    At least 1. For a side of few names rho is moved towards 1 (`df_correlation`)."""
    rho = df_correlation(side.names, value_correlation(side))
    total = side.texts + rho * side.pairs
    squares = side.nn + 2 * rho * (side.n3 - side.nn) + rho * rho * (side.n4 - 2 * side.n3 + side.nn)
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = np.where(squares > 0, total * total / squares, 1.0)
    kind = floor_kinds(floor)
    return np.maximum(np.where(kind == NO_FLOOR, np.minimum(effective, side.names), side.names) - 1.0, 1.0)


def df_correlation(names: Any, rho: Any) -> Any:
    """The correlation at which `side_df` counts a side's effective names: the estimate rho moved towards 1 by
    FEW_NAMES_WEIGHT / G^2 of the way for G names (all of it below 5 names), elementwise. From a few names the moment
    estimate is noisy and truncated at 0, and it comes out low exactly when the names happen to look alike, which is
    when the CR2 sum is small and the t large: counted at that estimate, 7 or 10 widely spread names against 60 take
    more degrees of freedom than their names carry and reject 5.6% of true nulls at 5% (1.6% at 1%). The move
    fades as 1 / G^2 (2% of the way at 30 names): a correction of order 1 / G, or an upper confidence limit of rho,
    costs the small, unequal groups' power (benchmarks/CALIBRATION.md, "Interaction degrees of freedom: the
    candidates")."""
    names, rho = np.asarray(names, dtype=float), np.asarray(rho, dtype=float)
    with np.errstate(divide="ignore"):
        share = np.minimum(FEW_NAMES_WEIGHT / (names * names), 1.0)
    result = rho + (1.0 - rho) * share
    return float(result) if np.ndim(result) == 0 else result


def value_correlation(side: SideSums) -> np.ndarray:
    """The intra-class correlation of values that are not 0/1 texts, tau2 / (tau2 + sigma_w^2), by one-way ANOVA
    moments: sigma_w^2 the pooled within-name variance, tau2 the between-name variance about the side's rate
    (truncated at 0). 0 when the side holds no between-name information."""
    within = np.clip((side.squares - side.tt_n) / np.maximum(side.texts - side.names, 1.0), 0.0, None)
    p = side.rate
    spread = side.tt_n - 2 * p * side.hits + p * p * side.texts
    with np.errstate(divide="ignore", invalid="ignore"):
        tau2 = np.clip((spread - (side.names - 1) * within) / (side.texts - side.nn / side.texts), 0.0, None)
        rho = tau2 / (tau2 + within)
    return np.where(np.isfinite(rho), rho, 0.0)


def score_t(a: SideSums, b: SideSums, delta: np.ndarray | float,
            floor: Any = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, degrees of freedom, two-sided p) of the hypothesis p_A - p_B = delta, for each delta."""
    delta = np.asarray(delta, dtype=float)
    rate_a, rate_b = restricted_rates(a, b, delta)
    var_a, var_b = side_variance(a, rate_a, floor), side_variance(b, rate_b, floor)
    shift = a.rate - b.rate - delta
    total = var_a + var_b
    with np.errstate(divide="ignore", invalid="ignore"):
        t = shift / np.sqrt(total)
    df = welch_df(var_a, var_b, side_df(a, floor), side_df(b, floor), floor_kinds(floor) == NO_FLOOR)
    t = np.where(total > 0, t, np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
    p = 2.0 * special.stdtr(df, -np.abs(t))
    return t, df, np.where(np.isnan(p), 1.0, p)


def welch_df(var_a: Any, var_b: Any, df_a: Any, df_b: Any, capped: Any = False) -> np.ndarray:
    """The Welch-Satterthwaite degrees of freedom of V_A + V_B (inf where both are 0), elementwise; where `capped`
    (the tests without a floor), at most `WELCH_CAP` times the fewer of `df_a` and `df_b`. With few, widely spread
    names on one side, the Welch count at the side's estimated effective names rejected 1.1-1.2% of true nulls at
    1% and up to twice alpha in the Holm tail (12-24 names against 60); capped, every measured design holds both."""
    total = var_a + var_b
    with np.errstate(divide="ignore", invalid="ignore"):
        df = total * total / (var_a * var_a / df_a + var_b * var_b / df_b)
    df = np.where(np.isnan(df), np.inf, df)
    return np.where(capped, np.minimum(df, WELCH_CAP * np.minimum(df_a, df_b)), df)


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


def rate_test(t: np.ndarray, n: np.ndarray, in_a: np.ndarray, *, alpha: float, floor: bool | str = True,
              squares: np.ndarray | None = None) -> RateTest:
    """Score-type cluster-robust test of equal pooled rates, with its (1 - alpha) test-inversion interval.

    t: labelled texts (or summed values in [0, 1]) per unit, n: texts per unit, in_a: the unit's side; `floor`:
    the side's floor (`floor_kinds`: True the binomial floor of values in [0, 1], SCORE a continuous score's, False
    none; `side_variance`)."""
    return rate_tests([t], [n], [in_a], alpha=alpha, floor=[floor], squares=None if squares is None else [squares])[0]


def rate_tests(t: Sequence[np.ndarray], n: Sequence[np.ndarray], in_a: Sequence[np.ndarray], *, alpha: float,
               floor: Sequence[bool | str], squares: Sequence[np.ndarray] | None = None) -> list[RateTest]:
    """`rate_test` for a family of contrasts at once (one entry of each list per contrast), every step an array
    operation over the family: a report tests hundreds of contrasts, and one at a time the numpy calls' overhead
    was most of its analysis. Each side of each contrast must hold at least one unit. `squares`: each unit's sum of
    squared values, where they are not 0/1 texts (the score's floor and the degrees of freedom of a test without a
    floor read them)."""
    parts_t, parts_n, parts_q, sizes = [], [], [], []
    for k, (values, counts, side) in enumerate(zip(t, n, in_a, strict=True)):
        values, counts, side = (np.asarray(values, dtype=float), np.asarray(counts, dtype=float),
                                np.asarray(side, dtype=bool))
        squared = values if squares is None else np.asarray(squares[k], dtype=float)
        parts_t += [values[side], values[~side]]
        parts_n += [counts[side], counts[~side]]
        parts_q += [squared[side], squared[~side]]
        sizes += [int(side.sum()), int((~side).sum())]
    if not parts_t:
        return []
    if min(sizes) == 0:
        raise ValueError("rate_tests: every side of every contrast needs at least one unit")
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    sides = SideSums.of_segments(np.concatenate(parts_t), np.concatenate(parts_n), starts, np.concatenate(parts_q))
    a, b = sides.take(slice(0, None, 2)), sides.take(slice(1, None, 2))
    floors = floor_kinds(np.array([BINOMIAL if kind is True else NO_FLOOR if kind is False else kind
                                   for kind in floor], dtype=object).astype(str))
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
        note = (f"too few names to test a rate ({int(a.names[k])} against {int(b.names[k])}): a design this small "
                f"gives a score test no p-value below {min_p[k]:.2g}, above alpha = {alpha:g}")
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


def rate_interval(t: np.ndarray, n: np.ndarray, *, alpha: float, floor: bool | str = True,
                  squares: np.ndarray | None = None) -> tuple[float, float, str]:
    """(low, high, note): the name-level (1 - alpha) interval of one side's pooled rate:
    {p0: |T/N - p0| / sqrt(V(p0)) below the t quantile on G - 1 df}, V(p0) = max(S_hat G / (G - 1), M(p0)) / N^2:
    the cluster-robust (CR1) sum of squares about the side's own rate, or, when larger, the side's floor at p0
    (`floor`, as `side_variance`): the beta-binomial variance with the shrunk within-name correlation, which keeps
    the interval wide where the names are few or agree by chance (a Wilson-type interval on the names' effective
    sample size); for a continuous score (`floor` SCORE, `squares` each name's sum of squared values) its
    `score_floor`, the accepted p0 found on a grid and each end bisected. The null-imposed S of the two-side test is
    not used here: with one side it bounds |t| by about sqrt(G) at every p0, and 5 names would give [0, 1].
    Coverage by number of names: benchmarks/CALIBRATION.md. A side of one name has no interval (nothing to
    estimate its spread from); the note says so. Many sides with the binomial floor or none: `rate_intervals`."""
    t, n = np.asarray(t, dtype=float), np.asarray(n, dtype=float)
    nan = float("nan")
    if len(t) < 2:
        return nan, nan, "one name: no name-level interval"
    kind = str(floor_kinds(floor))
    if kind != SCORE:
        low, high = rate_intervals([t], [n], alpha=alpha, floor=kind == BINOMIAL)
        return float(low[0]), float(high[0]), ""
    side = SideSums.of(t, n, squares)
    critical = float(special.stdtrit(side.names - 1, 1.0 - alpha / 2))
    low, high = _wald_ends(side, critical)
    floor_low, floor_high = _score_floor_ends(side, critical)
    return max(0.0, float(min(low, floor_low))), min(1.0, float(max(high, floor_high))), ""


def _wald_ends(side: SideSums, critical: Any) -> tuple[Any, Any]:
    """The ends accepted by the cluster-robust spread about the estimate alone (CR1, Wald), elementwise."""
    spread = null_squares(side.tt, side.tn, side.nn, side.rate) * side.names / (side.names - 1)
    half = critical * np.sqrt(spread) / side.texts
    return side.rate - half, side.rate + half


def rate_intervals(t: Sequence[np.ndarray], n: Sequence[np.ndarray], *, alpha: float,
                   floor: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """`rate_interval` of many sides of labels at once (side k: per-name hits t[k] and texts n[k]), with the
    binomial floor or none: arrays of the lows and highs, NaN for a side of fewer than two names. p0 is accepted
    when (estimate - p0)^2 <= c^2 max(A, B(p0)) / N^2, i.e. when either part accepts it; each part accepts an
    interval around the estimate, so the set is the hull of the two: A's Wald ends and B's Wilson ends, B(p0) =
    p0 (1 - p0) (N + rho sum n (n - 1)) being Wilson's on N^2 / (N + rho sum n (n - 1)) texts."""
    sizes = np.array([len(values) for values in t], dtype=int)
    low, high = np.full(len(sizes), np.nan), np.full(len(sizes), np.nan)
    kept = np.flatnonzero(sizes >= 2)
    if not len(kept):
        return low, high
    starts = np.r_[0, np.cumsum(sizes[kept])[:-1]]
    side = SideSums.of_segments(np.concatenate([np.asarray(t[k], dtype=np.float64) for k in kept]),
                                np.concatenate([np.asarray(n[k], dtype=np.float64) for k in kept]), starts)
    critical = special.stdtrit(side.names - 1, 1.0 - alpha / 2)
    wald_low, wald_high = _wald_ends(side, critical)
    if floor:
        estimate = side.rate
        effective = side.texts * side.texts / (side.texts + side.correlation * side.pairs)
        c2 = critical * critical / effective
        centre = (estimate + c2 / 2) / (1 + c2)
        half_width = critical / (1 + c2) * np.sqrt(estimate * (1 - estimate) / effective + c2 / (4 * effective))
        wald_low, wald_high = np.minimum(wald_low, centre - half_width), np.maximum(wald_high, centre + half_width)
    low[kept], high[kept] = np.maximum(0.0, wald_low), np.minimum(1.0, wald_high)
    return low, high


def _score_floor_ends(side: SideSums, critical: float) -> tuple[float, float]:
    """The lowest and highest p0 in [0, 1] with (estimate - p0)^2 N^2 <= c^2 `score_floor`(p0): a grid (the
    estimate always accepted), then both ends at once zoomed in as `_refine` does (a 64-point grid per round between
    the last accepted and the first rejected point)."""
    estimate, texts = float(side.rate), float(side.texts)

    def accepted(p0: np.ndarray) -> np.ndarray:
        return ((estimate - p0) ** 2 * texts * texts <= critical * critical * score_floor(side, p0)) | (p0 == estimate)

    grid = np.union1d(np.linspace(0.0, 1.0, 2 * GRID_WIDE), [estimate])
    inside = accepted(grid)
    first, last = int(np.argmax(inside)), len(grid) - 1 - int(np.argmax(inside[::-1]))
    keep = np.array([grid[first], grid[last]])
    drop = np.array([grid[max(first - 1, 0)], grid[min(last + 1, len(grid) - 1)]])
    steps = np.linspace(0.0, 1.0, 64)
    for _ in range(REFINE_ROUNDS + 1):
        points = keep[:, None] + (drop - keep)[:, None] * steps
        ok = accepted(points)
        ok[:, 0] = True
        first_rejected = np.where(ok.all(axis=1), 63, np.argmin(ok, axis=1))
        rows = np.arange(2)
        keep, drop = points[rows, np.maximum(first_rejected - 1, 0)], points[rows, first_rejected]
    return float(keep[0]), float(keep[1])


def unit_rate_interval(values: np.ndarray, units: np.ndarray, *, alpha: float,
                       bounds: tuple[float, float] = (0.0, 1.0), floor: bool | str = True) -> tuple[float, float]:
    """`rate_interval` of per-text (or per-prompt) `values` whose unit is `units`: the values mapped onto [0, 1]
    by `bounds` (a score's range), summed per unit (with their squares, for a continuous score's floor), and the
    interval read back in the values' own units. `floor` as `rate_interval`'s: the binomial floor for labels, SCORE
    for a continuous score (the findings' test of a continuous worst case uses the same)."""
    low, span = bounds[0], bounds[1] - bounds[0]
    codes, _ = pd.factorize(np.asarray(units))
    mapped = (np.asarray(values, dtype=float) - low) / span
    start, end, _ = rate_interval(np.bincount(codes, weights=mapped), np.bincount(codes), alpha=alpha, floor=floor,
                                  squares=np.bincount(codes, weights=mapped * mapped))
    return low + span * start, low + span * end
