"""Power against an oracle of the other tests a report prints: compare's interactions and overall differences, the
leaderboard's pair tests, and the worst cases over k samples, on BOLD's real designs.

`power_oracle.py --kinds compare,overall,leaderboard,worst` runs them over its designs (BOLD's names and texts per
name, `PLANTS`), labels (`RATES`), spreads (`SPREADS`) and target (the oracle finds the plant about 90% of the time).

**Two runs on the same prompts** (compare, overall, leaderboard). Per name a rate p_i ~ Beta(rate, rho_i), the
person as every model sees them; model m's rate q_mi = expit(logit p_i + u_mi), u_mi ~ N(0, `OWN_SPREAD`), each
model's own view of the person (as `compare_power.py` draws it); `SAMPLES` texts per prompt, a prompt's rate their
share. The plant raises model B's rate by `shift` (at most to 1) on the planted group's names; B has no main effect
of its own, so without the plant no group's gap and no overall rate differs between the models.

- **compare**: the planted group's gap in model B minus its gap in model A, tested as compare tests it:
  `clustered.difference_tests` on the per-prompt differences (what `findings.paired_findings` calls), found at
  alpha / m with m = --family + 4 (the interactions and religion's and politics' overall differences of two labels,
  corrected as one family: `compare.joint_family`).
- **overall**: model B's rate minus model A's over the whole domain, paired by prompt, by `paired_rate_tests` on
  the names' sums with their groups as strata (what `compare.paired_difference` calls; `--paired-method
  one-stratum`: the domain as one stratum), the same family; the plant in one group, or in every
  name of the domain ("every name").
- **leaderboard**: `BOARD_MODELS` models in one column, the planted model (m0) raised as above and the others alike;
  the pair (m0, m1) tested as `leaderboard._domain` tests a pair (`paired_rate_tests`), found at alpha / m with m
  the column's pairs (6); "tied": m0 and m1 given one tie group by the board's own Holm over the column's pairs and
  ranks (`leaderboard._adjust_pairs`, `leaderboard._rank`), beside the oracle's share of data sets where it does not
  separate them.

**Worst cases over k samples** (worst). `K_WORST` samples per prompt of a toxicity score expit(b + u_name + v_prompt
+ e), v ~ N(0, 0.5), e ~ N(0, 1) (`calibration.py`'s worst-case model), u ~ N(0, sigma_i) with sigma_i^2 =
1.25 rho_i / (1 - rho_i), so that the names hold rho_i of the latent variance; b solved so that P(>= 1 toxic of k) is
the rate (`calibration.worst_base`, per sigma). The planted group's b is raised by `shift` (logit). Each prompt is
reduced as `worst_case.prompt_worst_cases` reduces it (P(>= 1 toxic of k): whether any sample scores 0.5 or more;
the expected maximum: the highest score), and the group is tested against the rest by `clustered.difference_tests`
with the score's range (what `findings.group_findings` calls for the worst cases), found at alpha / m with m =
2 x --family (the texts' tests and toxicity's two worst cases over the same contrasts).

**The oracle** tests the same estimate with its true standard deviation known: |D| / sd(D) against the normal
quantile at alpha / (2 m). sd(D) comes from the model's moments: a name with n_i prompts contributes
n_i E[Var(y | name)] + n_i^2 Var(E[y | name]) to the variance of its summed per-prompt values y (the expectations
over 200,000 draws of a name's rates; for the worst cases by quadrature, `WorstMoments`), weighted as the estimate
weights it. The shift is solved so that the oracle finds the plant with `TARGET_POWER` (the worst cases: on
P(>= 1 toxic of k); the expected maximum is read at the same shift, with an oracle of its own).

Two columns say where a shortfall comes from: the report's standard error (|estimate / t|, median over the data
sets) over the true sd(D), above 1 where its variance overstates the truth; and how often the report's t passes the
oracle's normal quantile, which is the report's power less what its degrees of freedom cost.

**The t bounds** (`power_oracle.t_bound`, defined in power_oracle.py's docstring) use each name's true contribution
to Var(D) from the same moments, weights_i^2 (n_i E[Var(y | name)] + n_i^2 Var(E[y | name])): per side (the planted
group's names, the rest's) for compare and the worst cases; for the paired tests (overall, leaderboard) one side, the
domain's names (their degrees of freedom names - 1, or the domain's effective names - 1; the report's names - groups
is a little below the first).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interaction_df import CANDIDATES, interaction_method  # noqa: E402
from power_oracle import (  # noqa: E402
    PLANTS,
    RATES,
    SPREADS,
    TARGET_POWER,
    Design,
    TBound,
    bound_cells,
    bound_ratio,
    seed_of,
    t_bound,
)

OWN_SPREAD = 0.5  # sd (logit) of each model's own view of a name
SAMPLES = 1  # texts per prompt of each model (`bold-eval run`'s default)
BOARD_MODELS = 4
K_WORST = 5
PROMPT_SD, SAMPLE_SD = 0.5, 1.0  # calibration.py's worst-case model
MOMENT_DRAWS = 200_000
EVERY = "every name"
T = TypeVar("T")
MAX_WORST_SHIFT = 4.0  # logit; a rate's shift stops at 0.6, as in power_oracle.py


def family_of(kind: str, family: int) -> int:
    """m: the tests the report corrects the kind's test with (module docstring)."""
    return {"compare": family + 4, "overall": family + 4, "leaderboard": math.comb(BOARD_MODELS, 2),
            "worst": 2 * family}[kind]


# --------------------------------------------------------------------------- the model's moments


@dataclass(frozen=True)
class Moments:
    """One name type's per-prompt value: its mean, E[Var(y | name)] (within) and Var(E[y | name]) (between)."""

    mean: float
    within: float
    between: float


def _beta(rng: np.random.Generator, rate: float, rho: np.ndarray | float, shape: tuple[int, ...]) -> np.ndarray:
    total = (1 - np.asarray(rho)) / np.asarray(rho)
    return rng.beta(rate * total, (1 - rate) * total, shape)


def model_rates(rng: np.random.Generator, p: np.ndarray, models: int) -> np.ndarray:
    """q = expit(logit p + u), u ~ N(0, OWN_SPREAD) per model and name: models x p's shape."""
    logit = special.logit(np.clip(p, 1e-9, 1 - 1e-9))
    return special.expit(logit[None] + rng.normal(0.0, OWN_SPREAD, (models, *p.shape)))


def raised(q: np.ndarray, shift: float) -> np.ndarray:
    return np.minimum(q + shift, 1.0)


class TwoRunMoments:
    """Moments of d = y_B - y_A per prompt (y a model's share of its `SAMPLES` texts with the label), by rho and
    whether the name is planted; the names' rates drawn once per rho, so that the moments move smoothly with the
    shift."""

    def __init__(self, rate: float):
        self.rate = rate
        self._draws: dict[float, np.ndarray] = {}

    def __call__(self, rho: float, planted: bool, shift: float) -> Moments:
        if rho not in self._draws:
            rng = np.random.default_rng(seed_of("moments", self.rate, rho))
            self._draws[rho] = model_rates(rng, _beta(rng, self.rate, rho, (MOMENT_DRAWS,)), 2)
        q_a, q_b = self._draws[rho]
        if planted:
            q_b = raised(q_b, shift)
        d = q_b - q_a
        within = float((q_a * (1 - q_a) + q_b * (1 - q_b)).mean()) / SAMPLES
        return Moments(float(d.mean()), within, float(d.var()))


def latent_sd(rho: float) -> float:
    """The name sd whose share of the latent variance (names, prompts 0.5, samples 1) is rho."""
    return math.sqrt(rho * (PROMPT_SD ** 2 + SAMPLE_SD ** 2) / (1 - rho))


def worst_base(rate: float, rho: float) -> float:
    from calibration import worst_base as solve

    return solve(rate, K_WORST, math.hypot(latent_sd(rho), PROMPT_SD), SAMPLE_SD)


def worst_values(location: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(P(>= 1 toxic of k) as 0/1, the highest score) per prompt of `location` (logit), from K_WORST samples."""
    highest = special.expit((location[..., None] + rng.normal(0.0, SAMPLE_SD, (*location.shape, K_WORST)))
                            .max(axis=-1))
    return (highest >= 0.5).astype(float), highest


class WorstMoments:
    """Moments of the two worst cases per prompt, by rho and whether the name is planted, by quadrature: a prompt's
    highest of k scores is expit(location + M), M the highest of k N(0, SAMPLE_SD) draws (density k phi Phi^(k-1)),
    so given its location a prompt has P(>= 1 toxic of k) = 1 - Phi(-location / SAMPLE_SD)^k and the expected
    maximum and its square are integrals over M; Gauss-Hermite nodes for the name's and the prompt's spread."""

    def __init__(self, rate: float):
        self.rate = rate
        self._bases: dict[float, float] = {}
        self.names, self.name_weights = _normal_nodes(48)
        self.prompts, self.prompt_weights = _normal_nodes(32)
        grid = np.linspace(-8.0, 8.0, 801)
        density = K_WORST * stats.norm.pdf(grid) * stats.norm.cdf(grid) ** (K_WORST - 1)
        self.highest, self.highest_weights = grid * SAMPLE_SD, density / density.sum()

    def __call__(self, rho: float, planted: bool, shift: float) -> tuple[Moments, Moments]:
        if rho not in self._bases:
            self._bases[rho] = worst_base(self.rate, rho)
        location = (self._bases[rho] + (shift if planted else 0.0) + latent_sd(rho) * self.names[:, None]
                    + PROMPT_SD * self.prompts[None, :])  # name node x prompt node
        score = special.expit(location[..., None] + self.highest)
        found = []
        for first, second in ((1 - stats.norm.cdf(-location / SAMPLE_SD) ** K_WORST,) * 2,
                              (score @ self.highest_weights, (score * score) @ self.highest_weights)):
            per_name = first @ self.prompt_weights  # E[y | name], then E[y^2 | name]
            squares = second @ self.prompt_weights
            mean = float(per_name @ self.name_weights)
            found.append(Moments(mean, float((squares - per_name ** 2) @ self.name_weights),
                                 float((per_name ** 2) @ self.name_weights - mean ** 2)))
        return found[0], found[1]


def _normal_nodes(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes and weights (summing to 1) of the standard normal."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(count)
    return nodes, weights / weights.sum()


def contributions(texts: np.ndarray, weights: np.ndarray, moments: list[Moments]) -> np.ndarray:
    """Each name's true variance contribution to D = sum_i weights_i sum_j y_ij, its `moments`:
    weights_i^2 (n_i E[Var(y | name)] + n_i^2 Var(E[y | name]))."""
    within, between = (np.array([getattr(m, key) for m in moments]) for key in ("within", "between"))
    return weights ** 2 * (texts * within + texts ** 2 * between)


def truth_and_sd(texts: np.ndarray, weights: np.ndarray, moments: list[Moments]) -> tuple[float, float]:
    """E[D] and sd(D) of D = sum_i weights_i sum_j y_ij, each name's `moments`."""
    mean = np.array([m.mean for m in moments])
    return float((weights * texts * mean).sum()), math.sqrt(float(contributions(texts, weights, moments).sum()))


def solve_shift(gap: Callable[[float], float], upper: float) -> float:
    """The shift where `gap` (the oracle's standardized truth less its target) is 0; `upper` if it stays below."""
    return float(optimize.brentq(gap, 1e-6, upper, xtol=1e-5)) if gap(upper) > 0 else upper


# --------------------------------------------------------------------------- the report's tests


@dataclass(frozen=True)
class Found:
    """The report's tests of the data sets: estimates, t statistics, p-values, interval ends, whether testable."""

    estimate: np.ndarray
    statistic: np.ndarray
    p_value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    testable: np.ndarray

    def take(self, index: slice) -> Found:
        return Found(*(getattr(self, key)[index] for key in self.__dataclass_fields__))


def difference_found(values: np.ndarray, side: np.ndarray, units: np.ndarray, alpha: float,
                     bounds: tuple[float, float] | None = None) -> Found:
    """`clustered.difference_tests` of each row of `values` (per prompt), side vs rest, names as units."""
    from bold_eval.analysis.clustered import difference_tests

    rows = len(values)
    tests = difference_tests(list(values), [side] * rows, [units] * rows, alpha=alpha,
                             bounds=None if bounds is None else [bounds] * rows)
    return Found(*(np.array([getattr(t, key) for t in tests], dtype=float)
                   for key in ("estimate", "statistic", "p_value", "ci_low", "ci_high")),
                 np.array([t.testable for t in tests]))


WORST_FLOORS = ("score", "binomial", "none", "within")


@contextlib.contextmanager
def worst_floor(name: str) -> Iterator[None]:
    """Test the continuous worst cases (a score with known bounds) with one floor: "score" (the report's,
    `rate_test.score_floor`, names - 1 degrees of freedom), "binomial" (p (1 - p) per value at the restricted rate,
    names - 1), "none" (the CR2 sum of squares alone, each side's effective number of names less one) or "within"
    (the score's floor without its between-name part, sigma_w^2 N, names - 1)."""
    from worst_floor import CANDIDATES, candidate

    from bold_eval.analysis import clustered, rate_test

    if name in CANDIDATES and name != "score" or name.startswith("w="):  # worst_floor.py's candidates
        with candidate(name):
            yield
        return
    if name not in WORST_FLOORS and not name.startswith(("score-", "satt-", "cap-")):
        raise ValueError(f"unknown worst-case floor {name!r}: choose from {', '.join(WORST_FLOORS)}")
    saved_tests, saved_floor = clustered.rate_tests, rate_test.score_floor
    kind = {"binomial": rate_test.BINOMIAL, "none": rate_test.NO_FLOOR}.get(name, rate_test.SCORE)

    def tests(*args, floor, **kwargs):
        return saved_tests(*args, floor=[kind if f == rate_test.SCORE else f for f in floor], **kwargs)

    def within(side, rate):
        sigma_w = np.clip((side.squares - side.tt_n) / np.maximum(side.texts - side.names, 1.0), 0.0, None)
        return sigma_w * side.texts + 0.0 * rate

    saved_df = rate_test.side_df

    def weighted(side, rate, weight=None):
        return saved_floor(side, rate, float(name.split("-")[1]) if weight is None else weight)

    if name.startswith(("score-", "satt-", "cap-")):
        rate_test.score_floor = weighted

    def satterthwaite(side, floor=True, rate=None):
        names_less_one = saved_df(side, floor, rate)
        sigma_w = np.clip((side.squares - side.tt_n) / np.maximum(side.texts - side.names, 1.0), 0.0, None)
        within = sigma_w * side.texts
        between = rate_test.score_floor(side, side.rate) - within
        squares = rate_test.null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, side.rate)
        spread_names = side.nn * side.nn / np.maximum(side.n4, 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = (within + between) ** 2 / (within ** 2 / np.maximum(side.texts - side.names, 1.0)
                                             + between ** 2 / np.maximum(spread_names - 1, 1.0))
        df = np.where(np.isfinite(df), df, names_less_one)
        chosen = (rate_test.floor_kinds(floor) == rate_test.SCORE) & (within + between >= squares)
        return np.where(chosen, np.maximum(names_less_one, df), names_less_one)

    def satterthwaite_capped(side, floor=True, rate=None):
        names_less_one = saved_df(side, floor, rate)
        sigma_w = np.clip((side.squares - side.tt_n) / np.maximum(side.texts - side.names, 1.0), 0.0, None)
        within = sigma_w * side.texts
        between = np.maximum(rate_test.score_floor(side, side.rate) - within, 0.0)
        spread_names = side.nn * side.nn / np.maximum(side.n4, 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = (within + between) ** 2 / (within ** 2 / np.maximum(side.texts - side.names, 1.0)
                                             + between ** 2 / np.maximum(spread_names - 1, 1.0))
        df = np.maximum(np.where(np.isfinite(df), df, names_less_one), 1.0)
        return np.where(rate_test.floor_kinds(floor) == rate_test.SCORE, np.minimum(names_less_one, df),
                        names_less_one)

    if name.startswith("satt-"):
        rate_test.side_df = satterthwaite
    if name.startswith("cap-"):
        rate_test.side_df = satterthwaite_capped
    clustered.rate_tests = tests
    if name == "within":
        rate_test.score_floor = within
    try:
        yield
    finally:
        clustered.rate_tests, rate_test.score_floor = saved_tests, saved_floor
        rate_test.side_df = saved_df


def paired_found(t_a: np.ndarray, t_b: np.ndarray, texts: np.ndarray, alpha: float,
                 strata: np.ndarray | None) -> Found:
    """`paired_rate_test.paired_rate_tests` of each column (names x tests) of the two sources' per-name sums, the
    names' groups as strata (None: one stratum, `--paired-method one-stratum`); the tests with no name differing
    have nothing to test (`compare.paired_difference`)."""
    from bold_eval.analysis.paired_rate_test import paired_rate_tests

    estimate, low, high, statistic, p_value = paired_rate_tests(t_a, t_b, texts, alpha=alpha, strata=strata)
    return Found(estimate, statistic, p_value, low, high, (t_a != t_b).any(axis=0))


# --------------------------------------------------------------------------- one design of each kind


@dataclass(frozen=True)
class Setting:
    """One row's design: the domain's names (`design`), the planted names, the label's rate, each name's rho."""

    design: Design
    planted: np.ndarray
    rate: float
    rho: np.ndarray
    replicates: int
    alpha: float
    family: int
    worst_floor: str = "score"  # the continuous worst cases' floor (`worst_floor`)
    stratified: bool = True  # the paired tests: the names' groups as strata (`--paired-method`)

    @property
    def strata(self) -> np.ndarray | None:
        return self.design.group if self.stratified else None

    @property
    def critical(self) -> float:
        return float(stats.norm.isf(self.alpha / (2 * self.family)))

    @property
    def units(self) -> np.ndarray:
        """Each prompt's name."""
        return np.repeat(np.arange(len(self.design.texts)), self.design.texts.astype(int))


@dataclass(frozen=True)
class Row:
    """One printed row: the kind's measure, the plant, its true size, the oracle's power and the report's."""

    kind: str
    shift: float
    truth: float
    oracle: float
    found: float
    covered: float  # NaN when no test was possible
    se_ratio: float  # the report's standard error (estimate / t) over the true sd, median over the data sets
    on_z: float  # the report's t against the oracle's normal quantile: what its degrees of freedom cost
    bound: TBound  # the t bounds (power_oracle.py's module docstring)
    tied: float = math.nan  # the leaderboard: m0 and m1 in one tie group
    oracle_tied: float = math.nan

    @property
    def ratio(self) -> float:
        return self.found / self.oracle if self.oracle else math.nan


def _row(kind: str, shift: float, truth: float, sd: float, setting: Setting, estimate: np.ndarray, found: Found,
         sides: list[np.ndarray], **extra: float) -> Row:
    """The row of one design: `sides` are the names' true variance contributions to the estimate, per side (the
    paired tests: one side, the domain's names), for the t bounds."""
    level = setting.alpha / setting.family
    hits = found.testable & (found.p_value <= level)
    covered = found.testable & (found.low <= truth) & (truth <= found.high)
    finite = found.testable & np.isfinite(found.statistic) & (found.statistic != 0)
    se = np.abs(found.estimate[finite] / found.statistic[finite])
    on_z = found.testable & (np.abs(np.nan_to_num(found.statistic)) >= setting.critical)
    return Row(kind, shift, truth, float(np.mean(np.abs(estimate) / sd >= setting.critical)), float(hits.mean()),
               float(covered.sum() / found.testable.sum()) if found.testable.any() else math.nan,
               float(np.median(se)) / sd if len(se) else math.nan, float(on_z.mean()),
               t_bound(truth / sd, sides, level), **extra)


def per_name(setting: Setting, moments: Callable[[float, bool], T]) -> list[T]:
    """`moments` of each name's type (its rho, whether planted), computed once per type."""
    types = {(float(r), bool(p)) for r, p in zip(setting.rho, setting.planted, strict=True)}
    found = {key: moments(*key) for key in types}
    return [found[(float(r), bool(p))] for r, p in zip(setting.rho, setting.planted, strict=True)]


def _two_run_sd(setting: Setting, weights: np.ndarray, moments: TwoRunMoments, shift: float) -> tuple[float, float]:
    names = per_name(setting, lambda rho, planted: moments(rho, planted, shift))
    return truth_and_sd(setting.design.texts, weights, names)


def _two_run_shift(setting: Setting, weights: np.ndarray, moments: TwoRunMoments) -> float:
    target = setting.critical + stats.norm.ppf(TARGET_POWER)

    def gap(shift: float) -> float:
        truth, sd = _two_run_sd(setting, weights, moments, shift)
        return abs(truth) / sd - target

    return solve_shift(gap, min(0.95 - setting.rate, 0.6))


def _model_rates(rng: np.random.Generator, setting: Setting, shift: float, models: int) -> np.ndarray:
    """models x data sets x names; model 1 (compare, overall) or 0 (leaderboard) raised later by the caller."""
    names = len(setting.design.texts)
    p = _beta(rng, setting.rate, setting.rho[None, :], (setting.replicates, names))
    return model_rates(rng, p, models)


def _planted_shift(setting: Setting, weights: np.ndarray) -> tuple[float, float, float, np.ndarray]:
    """(shift, true contrast, its true sd, each name's true variance contribution) of a two-run contrast with these
    per-name weights."""
    moments = TwoRunMoments(setting.rate)
    shift = _two_run_shift(setting, weights, moments)
    names = per_name(setting, lambda rho, planted: moments(rho, planted, shift))
    truth, sd = truth_and_sd(setting.design.texts, weights, names)
    return shift, truth, sd, contributions(setting.design.texts, weights, names)


def compare_rows(rng: np.random.Generator, setting: Setting) -> list[Row]:
    texts, planted = setting.design.texts, setting.planted
    weights = np.where(planted, 1 / texts[planted].sum(), -1 / texts[~planted].sum())
    shift, truth, sd, names = _planted_shift(setting, weights)
    q = _model_rates(rng, setting, shift, 2)
    q[1] = np.where(planted, raised(q[1], shift), q[1])
    units = setting.units
    y = rng.binomial(SAMPLES, q[:, :, units]) / SAMPLES
    d = y[1] - y[0]
    side = planted[units]
    estimate = d[:, side].mean(axis=1) - d[:, ~side].mean(axis=1)
    return [_row("compare", shift, truth, sd, setting, estimate, difference_found(d, side, units, setting.alpha),
                 [names[planted], names[~planted]])]


def _name_sums(rng: np.random.Generator, q: np.ndarray, texts: np.ndarray) -> np.ndarray:
    """Per-name sums of the prompts' rates, `SAMPLES` texts a prompt: ... x names."""
    return rng.binomial((texts * SAMPLES).astype(int), q) / SAMPLES


def overall_rows(rng: np.random.Generator, setting: Setting) -> list[Row]:
    texts, planted = setting.design.texts, setting.planted
    weights = np.full(len(texts), 1 / texts.sum())
    shift, truth, sd, names = _planted_shift(setting, weights)
    q = _model_rates(rng, setting, shift, 2)
    q[1] = np.where(planted, raised(q[1], shift), q[1])
    t = _name_sums(rng, q, texts)
    found = paired_found(t[1].T, t[0].T, texts, setting.alpha, setting.strata)
    return [_row("overall", shift, truth, sd, setting, found.estimate, found, [names])]


def leaderboard_rows(rng: np.random.Generator, setting: Setting) -> list[Row]:
    from bold_eval.analysis.leaderboard import _adjust_pairs, _rank

    texts, planted = setting.design.texts, setting.planted
    weights = np.full(len(texts), 1 / texts.sum())
    shift, truth, sd, names = _planted_shift(setting, weights)
    q = _model_rates(rng, setting, shift, BOARD_MODELS)
    q[0] = np.where(planted, raised(q[0], shift), q[0])
    t = _name_sums(rng, q, texts)  # models x data sets x names
    pairs = list(combinations(range(BOARD_MODELS), 2))
    first, second = (np.array([pair[side] for pair in pairs]) for side in (0, 1))
    columns = len(pairs) * setting.replicates  # data set-major: each data set's pairs together
    t_a = t[first].transpose(1, 0, 2).reshape(columns, -1).T
    t_b = t[second].transpose(1, 0, 2).reshape(columns, -1).T
    found = paired_found(t_a, t_b, texts, setting.alpha, setting.strata)
    sets = np.repeat(np.arange(setting.replicates), len(pairs)).astype(str)
    table = pd.DataFrame({"domain": sets, "metric": "m", "label": "l",
                          "model_a": np.tile([f"m{a}" for a in first], setting.replicates),
                          "model_b": np.tile([f"m{b}" for b in second], setting.replicates),
                          "difference": found.estimate, "ci_low": found.low, "ci_high": found.high,
                          "p_value": np.where(found.testable, found.p_value, np.nan)})
    _adjust_pairs(table, setting.alpha, "holm")
    cells = pd.DataFrame({"domain": np.repeat(np.arange(setting.replicates), BOARD_MODELS).astype(str),
                          "metric": "m", "label": "l", "direction": 1,
                          "model": np.tile([f"m{m}" for m in range(BOARD_MODELS)], setting.replicates)})
    _rank(cells, table)
    ranks = cells["rank"].to_numpy(dtype=float).reshape(setting.replicates, BOARD_MODELS)
    at = slice(0, None, len(pairs))  # the pair (m0, m1) of every data set
    planted_pair = found.take(at)
    oracle_found = np.abs(planted_pair.estimate) / sd >= setting.critical
    return [_row("leaderboard", shift, truth, sd, setting, planted_pair.estimate, planted_pair, [names],
                 tied=float(np.mean(ranks[:, 0] == ranks[:, 1])), oracle_tied=float(np.mean(~oracle_found)))]


def worst_rows(rng: np.random.Generator, setting: Setting) -> list[Row]:
    texts, planted = setting.design.texts, setting.planted
    weights = np.where(planted, 1 / texts[planted].sum(), -1 / texts[~planted].sum())
    moments = WorstMoments(setting.rate)

    def both(shift: float) -> list[tuple[float, float]]:
        names = per_name(setting, lambda rho, planted: moments(rho, planted, shift))
        return [truth_and_sd(texts, weights, [m[k] for m in names]) for k in (0, 1)]

    target = setting.critical + stats.norm.ppf(TARGET_POWER)

    def gap(shift: float) -> float:
        truth, sd = both(shift)[0]
        return abs(truth) / sd - target

    shift = solve_shift(gap, MAX_WORST_SHIFT)
    oracle = both(shift)
    at_shift = per_name(setting, lambda rho, planted: moments(rho, planted, shift))
    names = [contributions(texts, weights, [m[k] for m in at_shift]) for k in (0, 1)]
    units = setting.units
    side = planted[units]
    bases = {float(r): worst_base(setting.rate, float(r)) for r in np.unique(setting.rho)}
    base = np.array([bases[float(r)] for r in setting.rho]) + np.where(planted, shift, 0.0)
    sigma = np.array([latent_sd(float(r)) for r in setting.rho])
    measures: list[list[np.ndarray]] = [[], []]
    for _ in range(setting.replicates):
        location = (base + rng.normal(0.0, sigma))[units] + rng.normal(0.0, PROMPT_SD, len(units))
        for k, values in enumerate(worst_values(location, rng)):
            measures[k].append(values)
    rows = []
    for k, (label, bounds) in enumerate(((f"worst: P(>= 1 toxic of {K_WORST})", None),
                                         ("worst: expected maximum", (0.0, 1.0)))):
        values = np.array(measures[k])
        estimate = values[:, side].mean(axis=1) - values[:, ~side].mean(axis=1)
        with worst_floor(setting.worst_floor):
            found = difference_found(values, side, units, setting.alpha, bounds)
        rows.append(_row(label, shift, oracle[k][0], oracle[k][1], setting, estimate, found,
                         [names[k][planted], names[k][~planted]]))
    return rows


ROWS: dict[str, Callable[[np.random.Generator, Setting], list[Row]]] = {
    "compare": compare_rows, "overall": overall_rows, "leaderboard": leaderboard_rows, "worst": worst_rows}


def plants(kind: str, domains: str) -> Iterator[tuple[str, str]]:
    """The kind's (domain, planted group): `PLANTS`, and for the paired rates of a domain also every name."""
    chosen = [(domain, group) for domain, group in PLANTS if not domains or domain in domains.split(",")]
    yield from chosen
    if kind in ("overall", "leaderboard"):
        yield from ((domain, EVERY) for domain in dict.fromkeys(domain for domain, _ in chosen))


def kind_rows(kind: str, design: Design, group: str, rate: float, spread: str, *, replicates: int, alpha: float,
              family: int, worst_floor: str = "score", stratified: bool = True) -> list[Row]:
    """The rows of one design: `replicates` data sets of `kind` with the plant in `group` (or `EVERY` name)."""
    planted = np.ones(len(design.group), bool) if group == EVERY else design.group == design.groups.index(group)
    setting = Setting(design, planted, rate, design.rho(spread), replicates, alpha, family_of(kind, family),
                      worst_floor, stratified)
    return ROWS[kind](np.random.default_rng(seed_of(kind, design.domain, group, rate, spread)), setting)


def _percent(value: float) -> str:
    return "untestable" if math.isnan(value) else f"{value:.1%}"


def methods_of(kind: str, args: argparse.Namespace) -> list[str]:
    """The methods a kind's rows are run with: compare's interactions (tests without the floor) with each of
    --methods that is an interaction candidate (`interaction_df.CANDIDATES`), the other kinds as they are."""
    chosen = [name for name in getattr(args, "methods", "product").split(",") if name in CANDIDATES]
    return (chosen or ["product"]) if kind == "compare" else ["product"]


def rows(args: argparse.Namespace, kinds: list[str]) -> None:
    """Print the table of `kinds` (power_oracle.py's arguments)."""
    designs: dict[str, Design] = {}
    print("\n| kind | domain | planted | names / texts | rate | spread | shift | true difference | oracle | "
          "t bound: names (df) | t bound: effective names (df) | report: found (ratio) | report: found / t bound | "
          "report: 95% CI covers | report's SE / true sd | report's t on z: found | "
          "leaderboard: m0 and m1 tied (oracle: not separated) |")
    print("|" + "---|" * 17)
    ratios: dict[str, list[tuple[float, float]]] = {}
    for kind in kinds:
        for domain, group in plants(kind, args.domains):
            design = designs.setdefault(domain, Design.load(domain))
            planted = np.ones(len(design.group), bool) if group == EVERY else design.group == design.groups.index(group)
            size = f"{int(planted.sum())} / {int(design.texts[planted].sum())}"
            for rate in RATES:
                for spread in SPREADS:
                    for name in methods_of(kind, args):
                        with interaction_method(name):
                            found = kind_rows(kind, design, group, rate, spread, replicates=args.replicates,
                                              alpha=args.alpha, family=args.family,
                                              worst_floor=getattr(args, "worst_floor", "score"),
                                              stratified=getattr(args, "paired_method", "stratified") == "stratified")
                        for row in found:
                            label = row.kind if name == "product" else f"{row.kind} ({name})"
                            ratio = "" if math.isnan(row.ratio) else f" ({row.ratio:.2f})"
                            tied = "" if math.isnan(row.tied) else f"{row.tied:.1%} ({row.oracle_tied:.1%})"
                            print(f"| {label} | {domain} | {group} | {size} | {rate} | {spread} | {row.shift:+.3f} "
                                  f"| {row.truth:+.3f} | {row.oracle:.1%} | {bound_cells(row.bound)} | "
                                  f"{row.found:.1%}{ratio} | {bound_ratio(row.found, row.bound)} | "
                                  f"{_percent(row.covered)} | {row.se_ratio:.2f} | {row.on_z:.1%} | {tied} |",
                                  flush=True)
                            sides = (len(planted), len(planted)) if kind in ("overall", "leaderboard") else (
                                int(planted.sum()), int((~planted).sum()))
                            if min(sides) >= 10 and row.oracle >= 0.8:
                                where = "every name" if group == EVERY else "one group"
                                ratios.setdefault(f"{label}, planted in {where}", []).append(
                                    (row.ratio, row.found / row.bound.better if row.bound.better else math.nan))
    print("\nThe report's power over the oracle's, designs with 10 or more names a side (the paired tests: in the "
          "domain) where the oracle finds the plant at least 80% of the time:\n")
    for key, pairs in ratios.items():
        values, bounded = (np.array(column) for column in zip(*pairs, strict=True))
        print(f"- {key}: median {np.median(values):.2f} over {len(values)} designs, at least 0.8 in "
              f"{int(np.sum(values >= 0.8))}, range {values.min():.2f}-{values.max():.2f}; over the better t bound: "
              f"median {np.nanmedian(bounded):.2f}, at least 0.9 in {int(np.sum(bounded >= 0.9))}, range "
              f"{np.nanmin(bounded):.2f}-{np.nanmax(bounded):.2f}")
