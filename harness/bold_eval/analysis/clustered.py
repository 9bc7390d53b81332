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
from scipy import optimize, stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.power import NormalIndPower, ttest_power
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from bold_eval.analysis.rate_test import BINOMIAL, NO_FLOOR, rate_tests
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
           "hypothesis imposes, whose within-name correlation is shrunk towards 1 when the side has few hits or few "
           "misses; Welch-Satterthwaite degrees of freedom (names - 1 per side, or each side's effective number of "
           "names for differences of two sources); interval by "
           "inverting the same test; a contrast whose design is too small to reach alpha is reported as too few "
           "names to test a rate",
    Z_TEST: "two-proportion z test, pooled variance (statsmodels), Newcombe interval; texts independent",
    FISHER: "Fisher's exact test (scipy), Newcombe interval; texts independent",
    T_TEST: "ordinary least squares t test, texts independent",
}


# What each kind of test finds, as a share of what a test that knew the true variance finds (the median over BOLD's
# designs with 10 or more names a side where that oracle finds a planted difference at least 80% of the time; for
# the overall differences and the leaderboard's pairs, the lower of a difference in every name and in one group):
# benchmarks/CALIBRATION.md, "Power against an oracle" (`benchmarks/power_oracle.py`).
POWER_AGAINST_ORACLE = {"group vs rest": 0.91, "model vs Wikipedia": 0.77, "compare's interactions": 0.60,
                        "overall difference": 0.62, "leaderboard pair": 0.79}
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
    ones = np.ones((len(y), 1))
    naive = OLS(y, ones).fit().bse[0] ** 2
    robust = OLS(y, ones).fit(cov_type="cluster", cov_kwds={"groups": codes}).bse[0] ** 2
    return float(robust / naive)


def minimum_detectable_difference(rate: float, n_a: float, n_b: float, *, deff: float = 1.0, alpha: float = 0.05,
                                  power: float = POWER, names_a: float | None = None, names_b: float | None = None,
                                  sizes: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """Smallest difference in a rate between two sides that the findings' test at `alpha` detects with `power`, at
    base rate `rate`, with `n_a` and `n_b` texts whose variance the design effect `deff` inflates. With the sides'
    names, as the test runs: a t on Welch-Satterthwaite degrees of freedom with names - 1 a side
    (`rate_test.score_t`), the shift SE x the noncentrality it needs (`noncentrality`); without them, a normal
    test (statsmodels NormalIndPower). With each side's texts per name (`sizes`), each side's own design effect:
    the domain's within-name correlation rho = (deff - 1) / (m - 1), m the text-weighted mean texts per name, gives
    a name of n texts the variance n (1 + (n - 1) rho), so a side whose texts sit on a few long pages needs a
    larger difference. The predicted power is checked against the test's simulated power in
    benchmarks/CALIBRATION.md ("Power planning")."""
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
    var_a, var_b = (rate * (1 - rate) * deff / n for n in (n_a, n_b))
    if sizes is not None:
        every = np.concatenate([np.asarray(side, dtype=float) for side in sizes])
        mean = float((every ** 2).sum() / every.sum())
        rho = float(np.clip((deff - 1) / (mean - 1), 0.0, 1.0)) if mean > 1 else 0.0
        var_a, var_b = (rate * (1 - rate) * float((np.asarray(side) * (1 + (np.asarray(side) - 1) * rho)).sum())
                        / float(np.sum(side)) ** 2 for side in sizes)
    df = (var_a + var_b) ** 2 / (var_a ** 2 / (names_a - 1) + var_b ** 2 / (names_b - 1))
    return float(noncentrality(round(float(df), 1), alpha, power) * np.sqrt(var_a + var_b))


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
