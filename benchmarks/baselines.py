"""The tests the calibration and timing scripts compare the product's tests against.

bold-eval tests a contrast with the cluster-robust t of equal rates (`bold_eval.analysis.rate_test`) and an overall
difference of two runs with the paired one (`bold_eval.analysis.paired_rate_test`). The scripts in `benchmarks/`
measure those against:

- the **studentized cluster permutation test** (`cluster_difference_test`, `PERMUTATION`): the side labels of whole
  names are shuffled, the statistic is the difference over its cluster-robust standard error (Chung & Romano 2013,
  Ann. Statist. 41(2)), with a cluster bootstrap interval. Exact when names are exchangeable; on a few widely spread
  names against many tight ones at the same rate it rejects far more often than its level (CALIBRATION.md).
- the **cluster-robust Wald t** (`method="wald"`, `WALD`): statsmodels OLS on the side indicator,
  `cov_type="cluster"` (CR1), t on G - 1 df (Cameron & Miller 2015, J. Human Resources 50(2)). On BOLD's
  profession pages a few large pages dominate its variance, and it rejects shuffled-label nulls well above its level.
- the **sign-flip test over names** (`sign_flip_difference`, `sign_flip`, `SIGN_FLIP`): a one-sample permutation
  test of the mean per-prompt difference of two runs, the runs' labels swapped for all prompts of a name at once,
  with the interval that inverts it. Exact when each name's difference is symmetric about the mean; not when the
  runs treat names unlike.

Each returns what the product's test returns (a `DifferenceTest`, or the `PairedDifference` of
`compare.paired_difference`), so a script can put it in the product's place. The scripts run from the repository root as
`.venv/bin/python benchmarks/x.py` and import this module as `baselines`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.proportion import proportion_confint

from bold_eval.analysis.clustered import ClusterSums, _per_cluster, _undefined, _untestable, run_tests
from bold_eval.analysis.compare import difference_record
from bold_eval.analysis.results import DifferenceTest, PairedDifference

N_PERMUTATIONS = 9999
MAX_PERMUTATIONS = 99_999
# Draws x units per block of `_null_distributions`: about 8 MB per array whatever the number of draws.
PERMUTATION_BLOCK = 1_000_000
N_BOOTSTRAP = 999
# Fewer draws as extreme as the data than this: the p-value is too coarse, draw more (_monte_carlo_p).
PRECISE_COUNT = 10
# Sign patterns x names per block of random sign flips (`_flipped_sums`): about 8 MB whatever the draws.
FLIP_BLOCK = 1_000_000

WALD = "cluster-robust t"
PERMUTATION = "cluster permutation"
SIGN_FLIP = "sign-flip over names"
SAME_DIFFERENCE = "exact: every name differs alike"
METHOD_NOTES: dict[str, str] = {
    WALD: "OLS on the side indicator with cluster-robust (CR1) variance, t on names - 1 df (statsmodels)",
    PERMUTATION: "studentized permutation test that moves whole units between the two sides (999 draws, up to "
                 "99,999 when p < alpha; p-values down to 1e-5), interval from a bootstrap over units within each "
                 "side (scipy.stats.bootstrap, percentile)",
    SIGN_FLIP: "one-sample permutation test: the runs' labels are swapped for all prompts of a name at once "
               "(the sign of the name's summed difference flipped; 999 random flips, 9,999 where p <= alpha, all "
               "2^names flips when fewer); interval: the same test inverted (every shift of the mean it does not "
               "reject, on the same flips), so it excludes 0 exactly when p <= alpha",
    SAME_DIFFERENCE: "every name shows the same difference c: where the sign-flip test rejects (p <= alpha) it "
                     "rejects every other shift too and the interval is the point c; otherwise the Clopper-Pearson "
                     "bound u on the share of names that could differ from c (0 of n), interval "
                     "[c - u (1 + c), c + u (1 - c)], widened to 0 if need be",
}


# --------------------------------------------------------------------------- two sides: permutation and Wald


def cluster_difference_test(
    values: Sequence[float] | np.ndarray,
    side: Sequence[bool] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    alpha: float = 0.05,
    method: str = "permutation",
    n_permutations: int = N_PERMUTATIONS,
    n_bootstrap: int = N_BOOTSTRAP,
    seed: int = 0,
) -> DifferenceTest:
    """Mean of `values` on side a (`side` True) minus side b with the clusters as units: the studentized cluster
    permutation test with a bootstrap interval (`method="permutation"`) or the CR1 Wald t (`method="wald"`).

    `clusters` holds one label per row; `None` makes every row its own unit. Returns a `DifferenceTest` like
    `clustered.difference_test`'s; not testable on an empty side, values all alike, or fewer than three units.
    """
    if method not in ("permutation", "wald"):
        raise ValueError(f"method must be 'permutation' or 'wald', not {method!r}")
    y = np.asarray(values, dtype=float)
    a = np.asarray(side, dtype=bool)
    groups = np.arange(len(y)) if clusters is None else np.asarray(clusters)
    undefined = _undefined(y, a, groups)
    if undefined is not None:
        return undefined
    if len(pd.unique(groups)) < 3:  # the difference is known, only its test is not
        return _untestable("fewer than three units: nothing to test with",
                           estimate=float(y[a].mean() - y[~a].mean()))
    if method == "wald":
        return _wald(y, a, groups, alpha)
    return _permutation(_per_cluster(y, a, groups), alpha=alpha, n_permutations=n_permutations,
                        n_bootstrap=n_bootstrap, seed=seed)


def cluster_difference_tests(values: Sequence[np.ndarray], sides: Sequence[np.ndarray],
                             clusters: Sequence[np.ndarray], *, alpha: float = 0.05, seed: int = 0,
                             method: str = "permutation", bounds: Any = None) -> list[DifferenceTest]:
    """`cluster_difference_test` for a family of contrasts, one entry of each list per contrast, each with `seed`,
    on threads (`clustered.run_tests`). Takes `clustered.difference_tests`' arguments, so it can stand in for it;
    `bounds` is not used (the tests need no range)."""
    return run_tests([functools.partial(cluster_difference_test, y, a, groups, alpha=alpha, seed=seed, method=method)
                      for y, a, groups in zip(values, sides, clusters, strict=True)])


def _wald(y: np.ndarray, a: np.ndarray, groups: np.ndarray, alpha: float) -> DifferenceTest:
    """OLS of y on the side indicator; cluster-robust CR1 variance, t on G - 1 df (statsmodels)."""
    codes = pd.factorize(groups)[0]
    # statsmodels takes the square root of every diagonal element, and the intercept's can round to -1e-37
    # when names sit on both sides; only the slope's is used.
    with np.errstate(invalid="ignore"):
        fit = OLS(y, np.column_stack([np.ones(len(y)), a.astype(float)])).fit(
            cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
        low, high = fit.conf_int(alpha)[1]
        statistic, p_value = float(fit.tvalues[1]), float(fit.pvalues[1])
    return DifferenceTest(estimate=float(fit.params[1]), ci_low=float(low), ci_high=float(high), statistic=statistic,
                          p_value=p_value, method=WALD, testable=bool(np.isfinite(p_value)))


def _side_moments(per: ClusterSums) -> np.ndarray:
    """Per unit: total t, size n and the products t*t, t*n, n*n that a side's ratio variance needs, and 1."""
    t = per.total.astype(float)
    n = per.n.astype(float)
    return np.stack([t, n, t * t, t * n, n * n, np.ones_like(t)])


def _statistics(sums_a: np.ndarray, sums_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(difference in ratio means, that difference over its cluster-robust standard error) from the sides'
    summed moments. Studentizing keeps the permutation test valid when the sides differ in variance, not
    only under exchangeable names (Chung & Romano 2013, Ann. Statist. 41(2))."""
    sides = []
    for t, n, tt, tn, nn, g in (sums_a, sums_b):
        mean = t / n
        variance = (tt - 2 * mean * tn + mean * mean * nn) / (n * n) * g / np.maximum(g - 1, 1)
        sides.append((mean, variance))
    (mean_a, var_a), (mean_b, var_b) = sides
    difference = mean_a - mean_b
    return difference, difference / np.sqrt(np.maximum(var_a + var_b, 1e-12))


def _null_distributions(moments: np.ndarray, size_a: int, resamples: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Both statistics under `resamples` random reassignments of the units to the sides (sizes kept).

    Drawn with `Generator.permuted` over a block of rows at once: scipy.stats.permutation_test draws its
    permutations one by one in Python (about 12 us each), too slow for hundreds of tests x 10^4 draws.
    Each row shuffles the side labels themselves (`size_a` ones, then zeros), which gives the draw's 0/1
    membership matrix directly, without shuffling unit indices and scattering them into one (the time it saves
    is in benchmarks/RESULTS.md, "report time"). A block's side sums are one matrix product with that matrix, so a
    block holds `PERMUTATION_BLOCK` draws x units of memory whatever the test. The p-value below follows
    scipy's definition for random permutations, (k + 1) / (R + 1).
    """
    units = moments.shape[1]
    total = moments.sum(axis=1, keepdims=True)
    labels = np.zeros(units)
    labels[:size_a] = 1.0
    plain, studentized = [], []
    batch = max(1, PERMUTATION_BLOCK // units)
    for start in range(0, resamples, batch):
        rows = min(batch, resamples - start)
        members = rng.permuted(np.broadcast_to(labels, (rows, units)), axis=1)
        sums_a = moments @ members.T
        difference, statistic = _statistics(sums_a, total - sums_a)
        plain.append(difference)
        studentized.append(statistic)
    return np.concatenate(plain), np.concatenate(studentized)


def _permutation(per: ClusterSums, *, alpha: float, n_permutations: int, n_bootstrap: int,
                 seed: int) -> DifferenceTest:
    """Studentized permutation of whole clusters between the sides; bootstrap of clusters within each side.

    The p-value comes from `_monte_carlo_p`; with one unit on a side, from the exact distribution.
    """
    moments = _side_moments(per)
    in_a = per.side
    index_a, index_b = np.flatnonzero(in_a), np.flatnonzero(~in_a)
    estimate, observed = (float(value) for value in _statistics(moments[:, in_a].sum(axis=1),
                                                                moments[:, ~in_a].sum(axis=1)))
    if min(len(index_a), len(index_b)) < 2:
        p_value = _one_unit_permutation(moments, in_a, observed)
    else:
        p_value = _monte_carlo_p(moments, in_a, observed, alpha=alpha, n_permutations=n_permutations, seed=seed)
    totals, sizes = moments[0], moments[1]

    def mean_difference(x: np.ndarray, z: np.ndarray, axis: int = -1) -> np.ndarray:
        return (totals[x].sum(axis=axis) / sizes[x].sum(axis=axis)
                - totals[z].sum(axis=axis) / sizes[z].sum(axis=axis))

    low = high = np.nan
    note = ""
    if min(len(index_a), len(index_b)) >= 2:
        with np.errstate(invalid="ignore", divide="ignore"):
            interval = stats.bootstrap((index_a, index_b), mean_difference, vectorized=True,
                                       n_resamples=n_bootstrap, confidence_level=1 - alpha, method="percentile",
                                       rng=np.random.default_rng(seed))
        low, high = float(interval.confidence_interval.low), float(interval.confidence_interval.high)
    else:
        note = "one name on a side: no interval"
    return DifferenceTest(estimate=estimate, ci_low=low, ci_high=high, statistic=observed, p_value=p_value,
                          method=PERMUTATION, testable=True, note=note)


def _monte_carlo_p(moments: np.ndarray, in_a: np.ndarray, observed: float, *, alpha: float,
                   n_permutations: int, seed: int) -> float:
    """Permutation p-value, (k + 1) / (R + 1), with more draws only where they can matter.

    999 draws first, then `n_permutations`, then `MAX_PERMUTATIONS`, each stage only when the p-value so far
    is below alpha (a test that could survive a correction, which never lowers a p-value) and fewer than
    `PRECISE_COUNT` draws were as extreme as the data. A p-value is always the Monte Carlo one, so it is valid
    at every size (Phipson & Smyth 2010); the smallest it can be is 1 / (MAX_PERMUTATIONS + 1) = 1e-5, below
    Holm's first threshold for families of up to 5,000 tests at alpha = 0.05.
    """
    rng = np.random.default_rng(seed)
    p_value = 1.0
    for resamples in dict.fromkeys((min(999, n_permutations), n_permutations, max(n_permutations, MAX_PERMUTATIONS))):
        _, studentized = _null_distributions(moments, int(in_a.sum()), resamples, rng)
        extreme = int(np.sum(np.abs(studentized) >= abs(observed) * (1 - 1e-9)))
        p_value = (extreme + 1) / (resamples + 1)
        if p_value > alpha or extreme >= PRECISE_COUNT:
            break
    return float(p_value)


def _one_unit_permutation(moments: np.ndarray, in_a: np.ndarray, observed: float) -> float:
    """Exact permutation p-value when one side is a single unit: each of the G units takes its place once."""
    single_side = in_a if in_a.sum() == 1 else ~in_a
    total = moments.sum(axis=1, keepdims=True)
    _, values = _statistics(moments, total - moments)  # unit i alone on the single side
    if single_side is not in_a:
        values = -values
    return float(np.mean(np.abs(values) >= abs(observed) * (1 - 1e-9)))


# --------------------------------------------------------------------------- two runs: the sign-flip test


def sign_flip_difference(differences: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray, *,
                         alpha: float = 0.05, n_resamples: int = N_PERMUTATIONS, seed: int = 0) -> PairedDifference:
    """Mean over prompts of d = (run's rate) - (baseline's rate), tested by the sign-flip test over names: the
    `results.PairedDifference` of `compare.paired_difference`, in its place.

    Under "the two runs are exchangeable" the labels of the two runs can be swapped for all prompts of a name
    at once, which flips the sign of that name's summed d: a sign-flip permutation test over names' sums
    (`sign_flip`). The interval inverts that same test (the shifts delta it does not reject), so it excludes 0
    exactly when p <= alpha. When no prompt differs the difference is exactly 0 and its bound comes from the
    share of names that could differ, Clopper-Pearson with 0 of n names, [-u, +u]; such a row has nothing to
    test (its sign-flip distribution is a point). `statistic` is the CR1 cluster-robust t of the mean.
    """
    d = np.asarray(differences, dtype=float)
    result, codes, settled = difference_record(d, clusters, alpha=alpha, method=SIGN_FLIP)  # type: ignore[arg-type]
    if settled:
        return result
    units = result.names
    sums = np.bincount(codes, weights=d, minlength=units)
    counts = np.bincount(codes, minlength=units)
    upper = float(proportion_confint(0, units, alpha=alpha, method="beta")[1])
    p_value, low, high = sign_flip(sums, counts, alpha=alpha, n_resamples=n_resamples, seed=seed)
    result = dataclasses.replace(result, p_value=p_value, ci_low=max(low, -1.0), ci_high=min(high, 1.0),
                                 method=SIGN_FLIP, testable=True)
    means = sums / counts
    if np.ptp(means) <= 1e-12:
        return dataclasses.replace(result, **_same_difference(float(means[0]), upper, p_value, alpha))
    fit = OLS(d, np.ones((len(d), 1))).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    return dataclasses.replace(result, statistic=float(fit.tvalues[0]))


def _same_difference(common: float, upper: float, p_value: float, alpha: float) -> dict[str, Any]:
    """Every name differs by `common`: the sign-flip test rejects every other shift when p <= alpha (its
    interval is that point); otherwise the Clopper-Pearson bound on the share of names that could differ from it,
    widened to 0 if need be so that interval and test agree."""
    if p_value <= alpha:
        return {"ci_low": common, "ci_high": common, "method": SAME_DIFFERENCE,
                "note": f"every name differs by {common:+.3f}; the sign-flip test rejects every other difference"}
    low, high = max(common - upper * (1 + common), -1.0), min(common + upper * (1 - common), 1.0)
    return {"ci_low": min(low, 0.0), "ci_high": max(high, 0.0), "method": SAME_DIFFERENCE,
            "note": f"every name differs by {common:+.3f}"}


def _flipped_sums(sums: np.ndarray, counts: np.ndarray, resamples: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, bool]:
    """(flipped sums of d, flipped prompt counts, exact) per sign pattern of the names: all 2^names patterns
    when there are no more than `resamples` (exact), else `resamples` random ones, drawn in blocks of
    `FLIP_BLOCK` patterns x names."""
    units = len(sums)
    weights = np.stack([sums, counts.astype(float)], axis=1)
    if units < 63 and 2 ** units <= resamples:
        signs = 1.0 - 2.0 * ((np.arange(2 ** units)[:, None] >> np.arange(units)) & 1)
        flipped = signs @ weights
        return flipped[:, 0], flipped[:, 1], True
    parts = []
    batch = max(1, FLIP_BLOCK // units)
    for start in range(0, resamples, batch):
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(min(batch, resamples - start), units))
        parts.append(signs @ weights)
    flipped = np.concatenate(parts)
    return flipped[:, 0], flipped[:, 1], False


def sign_flip(sums: np.ndarray, counts: np.ndarray, *, alpha: float, n_resamples: int = N_PERMUTATIONS,
              seed: int = 0) -> tuple[float, float, float]:
    """(two-sided p-value, interval low, high) of the mean of d from the names' sums of d and prompt counts.

    Under H0: mean d = delta, each name's centred sum s_i - delta n_i is symmetric about 0, so its sign can be
    flipped; a pattern is as extreme as the data when |sum of flipped centred sums| >= |sum of centred sums|.
    For a pattern whose flipped counts b differ from the total N that holds for shifts x = delta - mean in an
    interval around 0, between the roots c / (b + N) and c / (b - N) (c: its flipped sum centred at the mean),
    so the p-value falls as delta moves away from the mean, and the interval (the delta with p > alpha) has
    the m-th largest and smallest roots as its ends, m the fewest patterns that keep p above alpha. The
    p-value is the test at delta = 0 on the same patterns: 0 lies in the interval exactly when p > alpha.
    999 random patterns first (scipy's (k + 1) / (R + 1)), all `n_resamples` where p <= alpha; all 2^names
    when there are no more.
    """
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    total, mean = counts.sum(), sums.sum() / counts.sum()
    for resamples in dict.fromkeys((min(999, n_resamples), n_resamples)):
        flipped, sizes, exact = _flipped_sums(sums, counts, resamples, np.random.default_rng(seed))
        centred = flipped - mean * sizes
        always = np.abs(sizes) >= total * (1 - 1e-12)  # every name flipped alike: as extreme at every delta
        with np.errstate(divide="ignore", invalid="ignore"):
            roots = np.stack([centred / (sizes + total), centred / (sizes - total)])
        low_roots = np.where(always, -np.inf, roots.min(axis=0))
        high_roots = np.where(always, np.inf, roots.max(axis=0))
        added, denominator = (0, len(sizes)) if exact else (1, len(sizes) + 1)
        shift = -mean  # delta = 0
        tolerance = 1e-9 * abs(shift) + 1e-15
        inside = (low_roots - tolerance <= shift) & (shift <= high_roots + tolerance)
        p_value = (int(inside.sum()) + added) / denominator
        if p_value > alpha or resamples == n_resamples:
            break
    needed = int(np.floor(alpha * denominator - added)) + 1  # patterns as extreme that keep p above alpha
    if needed <= 0:
        return float(p_value), -np.inf, np.inf
    if needed > len(sizes):
        return float(p_value), mean, mean
    high = np.sort(high_roots)[-needed] + tolerance
    low = np.sort(low_roots)[needed - 1] - tolerance
    return float(p_value), float(mean + low), float(mean + high)
