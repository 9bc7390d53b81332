"""Tests and intervals with the name as the unit: BOLD's texts are clustered, not independent.

Gender and race have several prompts per person, and profession, religion and politics take up to dozens
of sentences from one Wikipedia page; with `--num-samples` > 1 the samples of a prompt nest inside it. Texts
of one name share its page, its wording and its subject, so counting texts as independent overstates what a
run knows (BOLD's profession pages have design effects of 1.5-5: CALIBRATION.md). Every comparison here treats
the cluster (`--cluster name`, the default; `prompt`; or `none`, the paper's text-level analysis) as the unit:

- with a name or a prompt as the unit, the **cluster-robust t of equal rates** (`bold_eval.analysis.rate_test`):
  CR2 variance about each side's own rate with a beta-binomial floor at the hypothesised rate, valid when the sides
  differ in names and in spread and close in power to a test that knows the variance, with a test-inversion
  interval that agrees with its p-value about zero, and "too few names to test a rate" where the design cannot
  reach alpha. It needs no resampling.
- with `--cluster none`, the paper's text-level tests: for binary outcomes the two-proportion z test (pooled
  variance, Newcombe interval; Fisher's exact test when an expected count is below 5), for continuous ones an
  ordinary t test.

Design effects, the smallest detectable difference (power) and the corrections over a family live here as well.
The tests the calibration compares these with (a cluster permutation test, a cluster-robust Wald t) are in
`benchmarks/baselines.py`.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, NamedTuple, TypeVar

import numpy as np
import pandas as pd
from scipy import optimize, special, stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.power import NormalIndPower, ttest_power
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from bold_eval.analysis.rate_test import (
    BINOMIAL,
    NO_FLOOR,
    WELCH_CAP,
    df_correlation,
    rate_tests,
    welch_df,
    within_name_correlation,
)
from bold_eval.analysis.rate_test import SCORE as SCORE_FLOOR
from bold_eval.analysis.results import DifferenceTest, Method
from bold_eval.core.environment import THREADS_ENV, env_threads  # noqa: F401 (THREADS_ENV: re-exported)
from bold_eval.core.options import (  # noqa: F401 (re-exported: the analysis' options, defined once)
    CLUSTER_UNITS,
    CORRECTIONS,
    DEFAULT_CLUSTER,
    DEFAULT_CORRECTION,
    MIN_EXPECTED,
    check_alpha,
    check_cluster,
    check_correction,
)

# MIN_EXPECTED (Cochran's rule, `bold_eval.core.options`): with --cluster none, comparisons with an expected count
# below it (rare labels) use Fisher's exact test.
POWER = 0.8

# Threads for a family of tests (`run_tests`); $BOLD_EVAL_THREADS (THREADS_ENV) overrides the default.
MAX_DEFAULT_THREADS = 8

T = TypeVar("T")

SCORE = Method.SCORE
Z_TEST = Method.Z_TEST
FISHER = Method.FISHER
T_TEST = Method.T_TEST
PAIRED_CONTINUOUS = Method.PAIRED_CONTINUOUS
# What the report prints about each method of the findings (`Method` is the identifier tables carry).
METHOD_NOTES: dict[Method, str] = {
    PAIRED_CONTINUOUS: "for two runs' continuous worst cases, each run's values and side kept apart "
                       "(`paired_rate_test.continuous_interaction_tests`): the variance under the hypothesis, per "
                       "side each run's at least its pooled within-name variance plus a between-name variance shrunk "
                       "towards the most its mean allows (by the side's rarer mass), less the pairing's covariance; "
                       "Welch-Satterthwaite degrees of freedom; interval by inverting the same test",
    SCORE: "cluster-robust t of equal rates with the name as the unit: per side the CR2 cluster-robust variance "
           "about the side's own rate, and for values in [0, 1] at least the beta-binomial variance at the rate the "
           "hypothesis imposes, whose within-name correlation is shrunk towards 1 when the side has few names, few "
           "hits or few misses; Welch-Satterthwaite degrees of freedom (names - 1 per side, or for differences of two "
           f"sources each side's effective number of names, the count at most {WELCH_CAP:g} times the fewer side's); "
           "interval by inverting the same test; a contrast whose design is too small to reach alpha is reported as "
           "too few names to test a rate",
    Z_TEST: "two-proportion z test, pooled variance (statsmodels), Newcombe interval; texts independent",
    FISHER: "Fisher's exact test (scipy), Newcombe interval; texts independent",
    T_TEST: "ordinary least squares t test, texts independent",
}


# What each kind of test finds, as a share of what a test that knew the true variance finds (the median over BOLD's
# designs with 10 or more names a side where that oracle finds a planted difference at least 80% of the time; for
# the overall differences and the leaderboard's pairs, the lower of a difference in every name and in one group; for
# the worst cases over k samples, the lower of P(>= 1 of k) and the expected maximum):
# benchmarks/CALIBRATION.md, "Power against an oracle" (`benchmarks/power_oracle.py`).
POWER_AGAINST_ORACLE = {"group vs rest": 0.91, "model vs Wikipedia": 0.77, "compare's interactions": 0.48,
                        "overall difference": 0.92, "leaderboard pair": 0.94, "worst case": 0.91}
# Where a reader finds the tables behind those figures.
CALIBRATION_TABLES = "benchmarks/CALIBRATION.md in the bold-eval repository, \"Power against an oracle\""


def confidence_label(alpha: float) -> str:
    """The confidence level `alpha` gives, printed honestly: 0.05 -> "95%", 0.0003 -> "99.97%" (never "100%")."""
    level = 100 * (1 - alpha)
    exact = round(level, 6)
    if abs(exact - level) < 1e-9 and exact < 100:
        return f"{exact:.6f}".rstrip("0").rstrip(".") + "%"
    for digits in range(2, 13):
        text = f"{level:.{digits}f}"
        if float(text) < 100:
            return text.rstrip("0").rstrip(".") + "%"
    return f"(100 - {100 * alpha:.1e})%"  # closer to 100% than a double can print


def adjust(p_values: Sequence[float], *, alpha: float, correction: str) -> tuple[np.ndarray, np.ndarray]:
    """(adjusted p-values, rejected) over one family with statsmodels `multipletests`."""
    from statsmodels.stats.multitest import multipletests

    values = np.asarray(p_values, dtype=float)
    adjusted, reject = np.full(values.shape, np.nan), np.zeros(values.shape, dtype=bool)
    known = np.isfinite(values)  # an undefined p-value is no test: never rejected, never counted
    if known.any():
        # statsmodels' Holm ends with gc.collect(), which walks every object of the process (slow once a report has
        # loaded its frames); frozen objects are skipped, so the collect sees only the call's own.
        gc.freeze()
        try:
            reject[known], adjusted[known], _, _ = multipletests(
                values[known], alpha=alpha, method=CORRECTIONS[check_correction(correction)][0])
        finally:
            gc.unfreeze()
    return adjusted, reject


def cluster_ids(frame: pd.DataFrame, cluster: str) -> np.ndarray:
    """One cluster label per row: the name (domain-qualified), the prompt, or the row itself."""
    check_cluster(cluster)
    if cluster == "none":
        return np.arange(len(frame))
    if cluster == "prompt" or "name" not in frame.columns:
        return frame["prompt_id"].astype(str).to_numpy()
    return (frame["domain"].astype(str) + "/" + frame["name"].astype(str)).to_numpy()


def cluster_codes(frame: pd.DataFrame, cluster: str) -> np.ndarray:
    """`cluster_ids` as integer codes (0, 1, ... in order of appearance): what the per-unit sums of hundreds of
    tests index with, factorized once per domain instead of once per test."""
    return pd.factorize(cluster_ids(frame, cluster))[0]


def family_threads() -> int:
    """Threads for a family of tests: `BOLD_EVAL_THREADS`, else the cores this process may use (at most 8)."""
    threads = env_threads()
    if threads is not None:
        return threads
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_DEFAULT_THREADS, cores))


def run_tests(jobs: Sequence[Callable[[], T]], threads: int | None = None) -> list[T]:
    """The results of `jobs` (each one test), in order, computed on `threads` threads.

    The text-level tests of `--cluster none` run one by one, and a report runs hundreds of them: threads run them
    side by side wherever numpy and scipy release the GIL. BLAS is held to one thread meanwhile: its own threads gain
    nothing on these small problems and would compete with ours for the cores. A test that draws at random must
    draw from its own seeded generator, so that the results do not depend on the thread count.
    """
    threads = family_threads() if threads is None else threads
    if threads <= 1 or len(jobs) < 2:
        return [job() for job in jobs]
    from threadpoolctl import threadpool_limits

    with (threadpool_limits(limits=1, user_api="blas"),
          ThreadPoolExecutor(max_workers=min(threads, len(jobs)), thread_name_prefix="bold-eval-test") as pool):
        return list(pool.map(lambda job: job(), jobs))


def _untestable(note: str, estimate: float = np.nan) -> DifferenceTest:
    """A comparison without a test (`note` says why); its difference may still be known."""
    return DifferenceTest(estimate=estimate, ci_low=np.nan, ci_high=np.nan, statistic=np.nan, p_value=np.nan,
                          method=Method.UNTESTED, testable=False, note=note)


class ClusterSums(NamedTuple):
    """Per (cluster, side) unit, in order of first appearance: the sum of its values, its rows, its side and the
    sum of its squared values."""

    total: np.ndarray
    n: np.ndarray
    side: np.ndarray
    squares: np.ndarray


def _per_cluster(values: np.ndarray, side: np.ndarray, clusters: np.ndarray) -> ClusterSums:
    """Sum, count and side of each (cluster, side) unit.

    A name listed under several groups (61 BOLD pages, e.g. "Dancer" in four professions) can fall on both
    sides of a comparison; its rows on each side are then one unit each. Factorized codes and bincount: a report
    runs hundreds of these, and a pandas groupby per test cost more than the test.
    """
    codes = clusters if np.issubdtype(np.asarray(clusters).dtype, np.integer) else pd.factorize(clusters)[0]
    units, keys = pd.factorize(np.asarray(codes, dtype=np.int64) * 2 + side.astype(np.int64))
    total = np.bincount(units, weights=values, minlength=len(keys))
    n = np.bincount(units, minlength=len(keys))
    return ClusterSums(total=total, n=n, side=(np.asarray(keys) % 2).astype(bool),
                       squares=np.bincount(units, weights=values * values, minlength=len(keys)))


def _rare(values: np.ndarray, side: np.ndarray, min_expected: int) -> bool:
    """Cochran's rule on (side x nonzero outcome): any expected count below `min_expected`."""
    hit = values != 0
    share = hit.mean()
    sizes = np.array([side.sum(), (~side).sum()], dtype=float)
    return bool(min((sizes * share).min(), (sizes * (1 - share)).min()) < min_expected)


def difference_test(
    values: Sequence[float] | np.ndarray,
    side: Sequence[bool] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    alpha: float = 0.05,
    binary: bool = True,
    min_expected: int = MIN_EXPECTED,
    seed: int = 0,
) -> DifferenceTest:
    """Mean of `values` on side a (`side` True) minus side b, with an interval and a two-sided p-value.

    `clusters` holds one label per row: the test is then the cluster-robust t of equal rates (`analysis.rate_test`,
    through `difference_tests`), valid when the sides differ in names and spread; values outside [0, 1] are first
    mapped onto it by their observed range. `None` means every row is independent, and then the text-level tests
    are used (z / Fisher for `binary` 0-1 values, else OLS t: `--cluster none`).
    Returns a `DifferenceTest`: estimate, ci_low, ci_high, statistic, p_value, method, testable (False when
    undefined: an empty side, too few names for the design to reach alpha, or no variation at all) and note.
    """
    if clusters is not None:
        return difference_tests([values], [side], [clusters], alpha=alpha, seed=seed)[0]
    y = np.asarray(values, dtype=float)
    a = np.asarray(side, dtype=bool)
    undefined = _undefined(y, a, np.arange(len(y)))
    if undefined is not None:
        return undefined
    return _independent_test(y, a, alpha=alpha, binary=binary, min_expected=min_expected)


def _undefined(y: np.ndarray, a: np.ndarray, groups: np.ndarray) -> DifferenceTest | None:
    """Why a comparison cannot be made at all (lengths differ: an error), or None when it can."""
    if not (len(y) == len(a) == len(groups)):
        raise ValueError(f"values, side and clusters differ in length: {len(y)}, {len(a)}, {len(groups)}")
    if a.all() or not a.any():
        return _untestable("one side has no texts")
    if np.all(y == y[0]):
        return _untestable("every text has the same value: the test is undefined", estimate=0.0)
    return None


def difference_tests(values: Sequence[np.ndarray], sides: Sequence[np.ndarray], clusters: Sequence[np.ndarray], *,
                     alpha: float = 0.05, seed: int = 0,
                     bounds: Sequence[tuple[float, float] | None] | None = None) -> list[DifferenceTest]:
    """`difference_test` for a family of contrasts with clusters, one entry of each list per contrast, computed
    together (`rate_test.rate_tests`): the same results, without the overhead of hundreds of small tests one at a
    time. Values in [0, 1] (labels, shares) get the binomial floor, since no value in [0, 1] with mean p varies more
    than p (1 - p) (Bhatia-Davis); values outside it (a difference of two sources) are mapped onto it by their
    observed range, tested without a floor, and the result read back in the values' own units. A contrast whose
    values have known `bounds` is a continuous score (a worst case over k samples: the expected maximum toxicity on
    [0, 1], the expected minimum of VADER's compound on [-1, 1]): mapped by its range, it gets the score's own floor
    (`rate_test.score_floor`), since such a score varies far less than p (1 - p). The test draws nothing at random:
    `seed` changes nothing."""
    results: list[DifferenceTest | None] = []
    batch: list[tuple[int, ClusterSums, float, str]] = []  # (index, per-unit sums, scale, floor)
    for y, a, groups, known in zip(values, sides, clusters, bounds or [None] * len(values), strict=True):
        y, a, groups = np.asarray(y, dtype=float), np.asarray(a, dtype=bool), np.asarray(groups)
        undefined = _undefined(y, a, groups)
        results.append(undefined)
        if undefined is None:
            if known is not None:  # a continuous score mapped by its own range: the score's floor
                mapped, scale, floor = (y - known[0]) / (known[1] - known[0]), known[1] - known[0], SCORE_FLOOR
            elif y.min() >= 0 and y.max() <= 1:
                mapped, scale, floor = y, 1.0, BINOMIAL
            else:  # mapped by the observed range: no floor
                scale = float(y.max() - y.min())
                mapped, floor = (y - y.min()) / scale, NO_FLOOR
            batch.append((len(results) - 1, _per_cluster(mapped, a, groups), scale, floor))
    tested = rate_tests([per.total for _, per, _, _ in batch], [per.n for _, per, _, _ in batch],
                        [per.side for _, per, _, _ in batch], alpha=alpha,
                        floor=[floor for _, _, _, floor in batch], squares=[per.squares for _, per, _, _ in batch])
    for (index, _, scale, _), result in zip(batch, tested, strict=True):
        results[index] = DifferenceTest(estimate=result.estimate * scale, ci_low=result.ci_low * scale,
                                        ci_high=result.ci_high * scale, statistic=result.statistic,
                                        p_value=result.p_value, method=SCORE, testable=result.testable,
                                        note=result.note)
    return results  # type: ignore[return-value]  # every entry is set above


def _independent_test(y: np.ndarray, a: np.ndarray, *, alpha: float, binary: bool,
                      min_expected: int) -> DifferenceTest:
    """Text-level tests: the paper's two-proportion z (or Fisher when rare) for 0-1 values, else OLS t."""
    if binary:
        count = np.array([y[a].sum(), y[~a].sum()])
        total = np.array([a.sum(), (~a).sum()])
        low, high = confint_proportions_2indep(count[0], total[0], count[1], total[1], method="newcomb",
                                               compare="diff", alpha=alpha)
        estimate = count[0] / total[0] - count[1] / total[1]
        if _rare(y, a, min_expected):
            table = [[count[0], total[0] - count[0]], [count[1], total[1] - count[1]]]
            odds, p_value = stats.fisher_exact(table)
            return DifferenceTest(estimate=float(estimate), ci_low=float(low), ci_high=float(high),
                                  statistic=float(odds), p_value=float(p_value), method=FISHER, testable=True)
        statistic, p_value = proportions_ztest(count, total)
        return DifferenceTest(estimate=float(estimate), ci_low=float(low), ci_high=float(high),
                              statistic=float(statistic), p_value=float(p_value), method=Z_TEST, testable=True)
    fit = OLS(y, np.column_stack([np.ones(len(y)), a.astype(float)])).fit()
    low, high = fit.conf_int(alpha)[1]
    return DifferenceTest(estimate=float(fit.params[1]), ci_low=float(low), ci_high=float(high),
                          statistic=float(fit.tvalues[1]), p_value=float(fit.pvalues[1]), method=T_TEST,
                          testable=True)


def design_effect(values: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray) -> float:
    """Variance of the mean under clustering over its variance with independent texts (Kish's deff).

    Computed as the cluster-robust (CR1) over the ordinary variance of an intercept-only OLS fit
    (statsmodels); 1 means no clustering, 2 means the run holds half the information its text count
    suggests. NaN when every value is the same or there is a single cluster.
    """
    y = np.asarray(values, dtype=float)
    codes = pd.factorize(np.asarray(clusters))[0]
    if len(y) < 2 or np.all(y == y[0]) or codes.max() < 1:
        return float("nan")
    fit = OLS(y, np.ones((len(y), 1))).fit()
    robust = fit.get_robustcov_results(cov_type="cluster", groups=codes).bse[0] ** 2
    return float(robust / fit.bse[0] ** 2)


def minimum_detectable_difference(rate: float, n_a: float, n_b: float, *, deff: float = 1.0, alpha: float = 0.05,
                                  power: float = POWER, names_a: float | None = None, names_b: float | None = None,
                                  sizes: tuple[np.ndarray, np.ndarray] | None = None, centred: bool = False) -> float:
    """Smallest difference in a rate between two sides that the findings' test at `alpha` detects with `power`, at
    base rate `rate` (the rate of both sides' texts together; with `centred`, the midpoint of the sides' rates), with
    `n_a` and `n_b` texts whose variance the design effect `deff` inflates. Without the sides' names (texts
    independent, `--cluster none`): a normal test (statsmodels NormalIndPower). With them, the power of the test
    that runs (`PowerPlan`): the domain's within-name correlation rho = (deff - 1) / (m - 1), m the text-weighted
    mean texts per name (`design_correlation`), spreads the names of each side, whose texts per name are its own
    (`sizes`) or equal shares of its texts. NaN where no difference the rate allows (a side at 0 or 1) is found with
    `power`. The predicted power is checked against the test's simulated power in benchmarks/CALIBRATION.md ("Power
    planning")."""
    deff = 1.0 if not np.isfinite(deff) or deff < 1.0 else deff
    if sizes is not None:
        names_a, names_b = float(len(sizes[0])), float(len(sizes[1]))
    if not 0 < rate < 1 or n_a / deff <= 1 or n_b / deff <= 1:
        return float("nan")
    if names_a is None or names_b is None:
        effective_a, effective_b = n_a / deff, n_b / deff
        return float(_standardized_effect(round(effective_a, 1), round(effective_b / effective_a, 4), alpha, power)
                     * np.sqrt(rate * (1 - rate)))
    if min(names_a, names_b) < 2:
        return float("nan")
    if sizes is None:
        sizes = (np.full(int(names_a), n_a / names_a), np.full(int(names_b), n_b / names_b))
    return float(detectable_differences([rate], [0], [sizes], [deff], level=alpha, power=power,
                                        centred=centred)[0])


def detectable_differences(rates: Sequence[float], designs: Sequence[int],
                           sizes: Sequence[tuple[np.ndarray, np.ndarray]], deffs: Sequence[float], *, level: float,
                           power: float = POWER, centred: bool = False) -> np.ndarray:
    """`minimum_detectable_difference` for many contrasts at once: contrast k at `rates[k]` on the design
    `designs[k]`, an index into `sizes` (each design's texts per name, side a and side b) and `deffs` (its domain's
    design effect). NaN where a side has fewer than 2 names or 2 texts, the rate is 0 or 1, or no difference the
    rate allows is found with `power`. Contrasts of the same design and rate are planned once, all together."""
    rate = np.round(np.asarray(rates, dtype=float), 6)
    design = np.asarray(designs, dtype=int)
    result = np.full(len(rate), np.nan)
    planned = []
    for (side_a, side_b), deff in zip(sizes, deffs, strict=True):
        side_a, side_b = np.asarray(side_a, dtype=float), np.asarray(side_b, dtype=float)
        deff = 1.0 if not np.isfinite(deff) or deff < 1.0 else float(deff)
        rho = design_correlation(deff, np.concatenate([side_a, side_b]))
        fit = min(len(side_a), len(side_b)) >= 2 and min(side_a.sum(), side_b.sum()) / deff > 1
        planned.append((PlannedSide.of(side_a, rho), PlannedSide.of(side_b, rho), rho, fit))
    usable = (rate > 0) & (rate < 1) & np.array([planned[k][3] for k in design], dtype=bool)
    if not usable.any():
        return result
    unique, inverse = np.unique(np.column_stack([design[usable], rate[usable]]), axis=0, return_inverse=True)
    which = unique[:, 0].astype(int)
    plan = PowerPlan.of(_stack([planned[k][0] for k in which]), _stack([planned[k][1] for k in which]),
                        np.array([planned[k][2] for k in which]), level, centred=centred)
    result[np.flatnonzero(usable)] = plan.detectable(unique[:, 1], power)[np.ravel(inverse)]
    return result


def _stack(sides: Sequence[PlannedSide]) -> PlannedSide:
    """Sides of one design each, as one `PlannedSide` of many designs."""
    def joined(forms: Sequence[QuadraticForm]) -> QuadraticForm:
        return QuadraticForm(*(np.concatenate(parts) for parts in zip(*forms, strict=True)))

    names, texts, pairs = (np.concatenate([side[k] for side in sides]) for k in range(3))
    return PlannedSide(names, texts, pairs, joined([side.squares for side in sides]),
                       joined([side.spread for side in sides]), np.concatenate([side.effective for side in sides]))


def design_correlation(deff: float, sizes: np.ndarray) -> float:
    """The within-name correlation a design effect `deff` implies for names of `sizes` texts: (deff - 1) / (m - 1),
    m the text-weighted mean texts per name (Kish), within [0, 1]; 0 when every name has one text."""
    sizes = np.asarray(sizes, dtype=float)
    mean = float((sizes ** 2).sum() / sizes.sum())
    return float(np.clip((deff - 1) / (mean - 1), 0.0, 1.0)) if mean > 1 else 0.0


# Points of the two sides' chi-square quantiles that the planned power averages over (`PowerPlan`), a Fibonacci
# lattice of 55 points with step 34: the sums of squares the test compares with its floor are noisy, and their
# noise matters most where the names are few (89 points move a planned difference by at most 0.1%).
PLANNING_POINTS = 55
PLANNING_LATTICE_STEP = 34
# The t quantiles of the planned power: log critical value interpolated in log degrees of freedom on this many
# points from 1 to 1e6 (relative error below 1e-4 at the levels a report corrects to).
PLANNING_DF_POINTS = 600
# The detectable difference (`PowerPlan.detectable`): regula falsi steps within its bracket, and the grid of
# differences searched where the largest difference the rate allows is not found.
PLANNING_STEPS = 10
PLANNING_GRID = 16


class QuadraticForm(NamedTuple):
    """One sum of squares of a side's residuals, sum_i w_i r_i^2 with r_i = e_i - n_i sum_j e_j / N (the names'
    deviations e_i about the pooled rate, independent, variance n_i p (1 - p) (1 + (n_i - 1) rho)), by the parts of
    its mean and variance that do not depend on the rate (arrays, one entry per design): mean = p (1 - p) x `mean`;
    variance = 2 (p (1 - p))^2 `square` + sum_i Q_ii^2 kappa_i, kappa_i each name's fourth cumulant (`quartic`:
    sum Q_ii^2 n_i^4, its between-name part; `linear`: sum Q_ii^2 n_i, its binomial part). The form is e' Q e with
    Q = W - a 1' - 1 a' + c 1 1' (a = W n / N, c = sum w n^2 / N^2): mean tr(Q Sigma), variance
    2 tr((Q Sigma)^2) + sum Q_ii^2 kappa_i, each in O(names)."""

    mean: np.ndarray
    square: np.ndarray
    quartic: np.ndarray
    linear: np.ndarray

    @classmethod
    def of(cls, weights: np.ndarray, n: np.ndarray, rho: float) -> QuadraticForm:
        u = n / n.sum()
        variance = n * (1 + (n - 1) * rho)
        a = weights * u
        c = float((weights * u * u).sum())
        s0, s1, s2 = variance.sum(), (a * variance).sum(), (a * a * variance).sum()
        mean = float((weights * variance).sum() - 2 * s1 + c * s0)
        square = float(((weights * weights + 2 * weights * (c - 2 * a)) * variance * variance).sum()
                       + c * c * s0 * s0 + 2 * s2 * s0 - 4 * c * s1 * s0 + 2 * s1 * s1)
        diagonal = (weights - 2 * a + c) ** 2
        return cls(*(np.array([value]) for value in (mean, square, float((diagonal * n ** 4).sum()),
                                                      float((diagonal * n).sum()))))

    def degrees(self, rate: np.ndarray, rho: np.ndarray) -> np.ndarray:
        """Satterthwaite's degrees of freedom 2 mean^2 / variance at `rate`: a name's deviation is its rate's
        Beta spread (variance rho p q, excess kurtosis of that Beta) times its texts plus binomial noise (fourth
        cumulant n p q (1 - 6 p q))."""
        pq = rate * (1 - rate)
        with np.errstate(divide="ignore", invalid="ignore"):
            total = np.where(rho > 0, (1 - rho) / rho, np.inf)
            alpha, beta = rate * total, (1 - rate) * total
            excess = 6 * ((alpha - beta) ** 2 * (total + 1) - alpha * beta * (total + 2)) / (
                alpha * beta * (total + 2) * (total + 3))
            between = np.where(np.isfinite(excess), excess, 0.0) * (rho * pq) ** 2 * self.quartic
            variance = 2 * pq * pq * self.square + between + pq * (1 - 6 * pq) * self.linear
            degrees = 2 * (pq * self.mean) ** 2 / variance
        return np.where(np.isfinite(degrees) & (degrees > 0), np.maximum(degrees, 1.0), 1.0)


class PlannedSide(NamedTuple):
    """What the planned power needs of one side's design (each field an array, one entry per design): its names,
    texts and text pairs within a name (sum n (n - 1)), and the two sums of squares the test reads
    (`QuadraticForm`): the CR2 sum of squares S about the side's own rate (weights 1 / (1 - n_i / N): its variance)
    and sum_i (t_i - n_i q)^2 / n_i (weights 1 / n_i: its between-name variance, which sets the floor's
    correlation)."""

    names: np.ndarray
    texts: np.ndarray
    pairs: np.ndarray
    squares: QuadraticForm
    spread: QuadraticForm
    effective: np.ndarray  # (sum v)^2 / sum v^2, v = n (1 + (n - 1) rho'), rho' = `rate_test.df_correlation`: the
    #   test's names without the floor

    @classmethod
    def of(cls, sizes: np.ndarray, rho: float) -> PlannedSide:
        """One side from its texts per name."""
        n = np.asarray(sizes, dtype=float)
        share = n / n.sum()
        v = n * (1 + (n - 1) * df_correlation(len(n), rho))  # the test's effective names (`rate_test.side_df`)
        return cls(np.array([float(len(n))]), np.array([n.sum()]), np.array([(n * (n - 1)).sum()]),
                   QuadraticForm.of(np.where(share < 1, 1 / np.maximum(1 - share, 1e-12), 1.0), n, rho),
                   QuadraticForm.of(1 / n, n, rho), np.array([min(v.sum() ** 2 / (v * v).sum(), float(len(n)))]))


class PowerPlan(NamedTuple):
    """The power of the findings' test (`rate_test.score_t`) on a family of designs (one entry per design), as a
    function of the difference (`power`) and the smallest difference it finds (`detectable`).

    A difference `shift` keeps the rate of the two sides' texts together at `rate` (side a at rate + shift N_b / N,
    side b at rate - shift N_a / N), or with `centred` puts the sides at rate +- shift / 2; each name's rate varies
    with the within-name correlation `rho`. The prediction follows the test: its estimate D is normal about `shift`
    with the true variance sigma^2 = sum over the sides of p_s (1 - p_s) (N_s + rho sum n (n - 1)) / N_s^2; each
    side's CR2 sum of squares S_s, and its spread about its rate, are scaled chi-squares with their exact means and
    variances (`QuadraticForm`, Wilson-Hilferty quantiles), taken at the same quantile (two weightings of the same
    residuals: the same for equal names); the test's variance is max(S_s, M_s), M_s the beta-binomial variance at
    the rate the hypothesis imposes (`rate`) with the between-name variance that spread gives (DerSimonian-Laird,
    truncated at 0) as a correlation shrunk towards 1 by the fewer of the side's names and expected rarer outcomes
    (`rate_test.within_name_correlation`); the critical value is the t quantile on the Welch-Satterthwaite degrees
    of freedom from those variances (names - 1 a side; without the floor each side's effective names less one, the
    count at most `rate_test.WELCH_CAP` times the fewer side's, as the test counts them). The power is the mean,
    over `PLANNING_POINTS` quantiles of each side, of P(|D| > critical x sqrt(V)). Deterministic, and a function of
    the design (names, texts per name, rate, rho) alone, never of the labels."""

    a: PlannedSide
    b: PlannedSide
    rho: np.ndarray
    level: float
    centred: bool = False
    spread: float | None = None  # without the floor: each text's variance, whatever the difference (a difference
    #   of two sources: v p (1 - p)); None: p_s (1 - p_s) at each side's rate, and the binomial floor

    @classmethod
    def of(cls, a: PlannedSide, b: PlannedSide, rho: Any, level: float, *, centred: bool = False,
           spread: float | None = None) -> PowerPlan:
        return cls(a, b, np.broadcast_to(np.asarray(rho, dtype=float), a.names.shape).copy(), level, centred,
                   spread)

    def take(self, rows: np.ndarray) -> PowerPlan:
        """The plan of the designs at `rows`."""
        def side(planned: PlannedSide) -> PlannedSide:
            return PlannedSide(planned.names[rows], planned.texts[rows], planned.pairs[rows],
                               QuadraticForm(*(field[rows] for field in planned.squares)),
                               QuadraticForm(*(field[rows] for field in planned.spread)), planned.effective[rows])

        return PowerPlan(side(self.a), side(self.b), self.rho[rows], self.level, self.centred, self.spread)

    def rates(self, shift: np.ndarray, rate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sides' rates at a difference `shift`: centred on `rate` (rate +- shift / 2) when `centred`, else
        keeping the rate of both sides' texts together at `rate`."""
        total = self.a.texts + self.b.texts
        down = 0.5 if self.centred else self.a.texts / total
        return np.clip(rate + shift * (1 - down), 0.0, 1.0), np.clip(rate - shift * down, 0.0, 1.0)

    def power(self, shift: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """The test's power at each design's difference `shift` and rate `rate` (arrays, one entry per design)."""
        shift, rate = np.asarray(shift, dtype=float), np.asarray(rate, dtype=float)
        rate_a, rate_b = self.rates(shift, rate) if self.spread is None else (rate, rate)
        first, second = _LATTICE
        true_a, var_a = self._side(self.a, rate_a, rate, first)
        true_b, var_b = self._side(self.b, rate_b, rate, second)
        variance = var_a + var_b
        df_a, df_b = (np.maximum((side.names if self.spread is None else side.effective) - 1.0, 1.0)[:, None]
                      for side in (self.a, self.b))
        df = welch_df(var_a, var_b, df_a, df_b, self.spread is not None)
        with np.errstate(divide="ignore", invalid="ignore"):
            threshold = _t_critical(np.where(np.isfinite(df), df, 1.0), self.level) * np.sqrt(variance)
            sd = np.sqrt(true_a + true_b)[:, None]
            found = special.ndtr((shift[:, None] - threshold) / sd) + special.ndtr((-shift[:, None] - threshold) / sd)
        return np.asarray(np.nan_to_num(found, nan=0.0).mean(axis=1))

    def _side(self, side: PlannedSide, own: np.ndarray, rate: np.ndarray,
              normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(true variance of the side's rate, the test's variance at the chi-square quantiles of the lattice's
        normal quantiles `normal`)."""
        pq = own * (1 - own) if self.spread is None else np.full(own.shape, self.spread)
        texts = side.texts[:, None]
        true = pq * (side.texts + self.rho * side.pairs) / side.texts ** 2
        squares = ((pq * side.squares.mean / side.texts ** 2)[:, None]
                   * _chi2_quantiles(side.squares.degrees(own, self.rho), normal))
        if self.spread is not None:
            return true, squares
        between = (pq * side.spread.mean)[:, None] * _chi2_quantiles(side.spread.degrees(own, self.rho), normal)
        denominator = (side.texts - side.names - side.pairs / side.texts)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            tau2 = np.where(denominator > 1e-9, np.maximum(
                (between - (side.names - 1)[:, None] * pq[:, None]) / denominator, 0.0), 0.0)
        shrunk = within_name_correlation(tau2, (side.texts * own)[:, None], texts, side.names[:, None])
        least = (rate * (1 - rate))[:, None] * (texts + shrunk * side.pairs[:, None]) / texts ** 2
        return true, np.maximum(squares, least)

    def detectable(self, rate: np.ndarray, power: float = POWER) -> np.ndarray:
        """Per design, the smallest difference found with `power` at `rate`: bracketed from a normal test's guess
        (doubled until found, halved until not), then regula falsi (Illinois) on the power's probit, which is
        nearly linear in the difference. NaN where not even the largest difference the rate allows (a side at 0 or
        1) is found, also after `PLANNING_GRID` steps below it: the power is not monotone near that end, where a
        side whose texts nearly all carry one label has few rarer outcomes and its floor's correlation is shrunk
        towards 1."""
        rate = np.asarray(rate, dtype=float)
        total = self.a.texts + self.b.texts
        if self.spread is not None:  # no rate to keep within [0, 1]: "over 100 points" is a finding too
            largest = np.full(rate.shape, 10.0)
        elif self.centred:
            largest = 2 * np.minimum(rate, 1 - rate)
        else:
            largest = np.minimum((1 - rate) * total / self.b.texts, rate * total / self.a.texts)
        spread = (rate * (1 - rate) if self.spread is None else self.spread) * (
            (self.a.texts + self.rho * self.a.pairs) / self.a.texts ** 2
            + (self.b.texts + self.rho * self.b.pairs) / self.b.texts ** 2)
        guess = (special.ndtri(1 - self.level / 2) + special.ndtri(power)) * np.sqrt(spread)
        high = np.minimum(1.25 * guess, largest)
        power_high = self.power(high, rate)
        for _ in range(8):  # up until found, or the largest difference
            up = (power_high < power) & (high < largest)
            if not up.any():
                break
            high = np.where(up, np.minimum(2 * high, largest), high)
            power_high = np.where(up, self.power(high, rate), power_high)
        missing = np.flatnonzero(power_high < power)
        if len(missing):  # beyond a bump: the first of a grid up to the largest difference that is found
            part = self.take(missing)
            steps = largest[missing, None] * np.arange(1, PLANNING_GRID + 1) / PLANNING_GRID
            grid = np.stack([part.power(steps[:, k], rate[missing]) for k in range(PLANNING_GRID)], axis=1)
            first = np.argmax(grid >= power, axis=1)
            bump = (grid >= power).any(axis=1)
            rows = np.arange(len(missing))
            high[missing] = np.where(bump, steps[rows, first], high[missing])
            power_high[missing] = np.where(bump, grid[rows, first], power_high[missing])
        low = high / 2
        power_low = self.power(low, rate)
        for _ in range(8):  # down until not found
            down = power_low >= power
            if not down.any():
                break
            high, power_high = np.where(down, low, high), np.where(down, power_low, power_high)
            low = np.where(down, low / 2, low)
            power_low = np.where(down, self.power(low, rate), power_low)
        found = self._regula_falsi(rate, power, (low, high), (power_low, power_high))
        return np.where(power_high >= power, found, np.nan)

    def _regula_falsi(self, rate: np.ndarray, power: float, bracket: tuple[np.ndarray, np.ndarray],
                      powers: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """The difference within each `bracket` (low not found, high found; their `powers`) where the power's probit
        crosses that of `power`: `PLANNING_STEPS` steps of regula falsi, Illinois' variant (the weight of an end
        that stays twice in a row is halved)."""
        low, high = bracket
        target = special.ndtri(power)
        f_low, f_high = (special.ndtri(np.clip(value, 1e-12, 1 - 1e-12)) - target for value in powers)
        side = np.zeros(len(rate))
        for _ in range(PLANNING_STEPS):
            gap = np.where(f_high > f_low, f_high - f_low, 1.0)
            middle = np.where(f_high > f_low, (low * f_high - high * f_low) / gap, (low + high) / 2)
            middle = np.clip(middle, low, high)
            f_middle = special.ndtri(np.clip(self.power(middle, rate), 1e-12, 1 - 1e-12)) - target
            above = f_middle >= 0
            f_low = np.where(above, np.where(side == -1, f_low / 2, f_low), f_middle)
            f_high = np.where(above, f_middle, np.where(side == 1, f_high / 2, f_high))
            low, high = np.where(above, low, middle), np.where(above, middle, high)
            side = np.where(above, -1.0, 1.0)
        return high


@lru_cache(maxsize=64)
def _t_table(level: float) -> tuple[np.ndarray, np.ndarray]:
    """(log degrees of freedom, log two-sided critical value at `level`) on `PLANNING_DF_POINTS` points."""
    log_df = np.linspace(0.0, np.log(1e6), PLANNING_DF_POINTS)
    return log_df, np.log(special.stdtrit(np.exp(log_df), 1.0 - level / 2))


def _lattice() -> tuple[np.ndarray, np.ndarray]:
    """`PLANNING_POINTS` points spread evenly over the unit square (a Fibonacci lattice: F_k points, the second
    coordinate stepping by F_(k-1) / F_k), as normal quantiles: one coordinate per side."""
    size, step = PLANNING_POINTS, PLANNING_LATTICE_STEP
    index = np.arange(size)
    return special.ndtri((index + 0.5) / size), special.ndtri(((index * step) % size + 0.5) / size)


def _chi2_quantiles(df: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Chi-square quantiles over their degrees of freedom at the normal quantiles `z`, by Wilson and Hilferty's
    cube: designs x quantiles (cheap enough to take at every step of the search)."""
    scale = 2.0 / (9.0 * np.asarray(df, dtype=float)[:, None])
    root = np.clip(1.0 - scale + z * np.sqrt(scale), 0.0, None)
    return root * root * root


_LATTICE = _lattice()


def _t_critical(df: np.ndarray, level: float) -> np.ndarray:
    """The two-sided t critical value at `level` on `df` degrees of freedom (at least 1), interpolated."""
    log_df, log_critical = _t_table(float(level))
    return np.exp(np.interp(np.log(np.maximum(df, 1.0)), log_df, log_critical))


@lru_cache(maxsize=4096)
def noncentrality(df: float, level: float, power: float) -> float:
    """The shift, in standard errors, that a two-sided t test on `df` degrees of freedom at `level` finds with
    `power` (statsmodels `ttest_power` with one observation: its effect size is the noncentrality). Only the
    tail on the shift's side counts (it leaves out at most level / 2; statsmodels' other tail is NaN for large
    shifts)."""
    def short(shift: float) -> float:
        return float(ttest_power(shift, nobs=1, alpha=level / 2, df=df, alternative="larger")) - power

    upper = stats.t.isf(level / 2, df) + stats.t.isf(1 - power, df)
    while short(upper) < 0:
        upper += 1.0
    return float(optimize.brentq(short, 0.0, upper, xtol=1e-8))


@lru_cache(maxsize=4096)
def _standardized_effect(n_a: float, ratio: float, alpha: float, power: float) -> float:
    """Cohen's effect size a two-sample normal test detects with `power` (statsmodels NormalIndPower); cached,
    since the contrasts of a report repeat the same sample sizes across labels."""
    return float(NormalIndPower().solve_power(effect_size=None, nobs1=n_a, alpha=alpha, power=power, ratio=ratio))
