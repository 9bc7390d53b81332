"""The wild cluster bootstrap as a candidate test of a group's pooled rate against the rest's: level, power, time.

The contrast is the regression of the per-text value y_j on a side indicator x_j (1 on side A) with the name as the
cluster; its slope is D = T_A / N_A - T_B / N_B, the pooled-rate difference the report tests. The candidate is the
restricted wild cluster bootstrap (WCR; MacKinnon & Webb 2017, J. Applied Econometrics 32(2), 2018, Econometrics
Journal 21(2); Roodman, MacKinnon, Nielsen & Webb 2019, Stata Journal 19(1), "Fast and wild"):

- the statistic is t = D / se_CR1(D), the unrestricted cluster-robust (CR1) standard error, G / (G - 1) (N - 1) /
  (N - 2) times the sum over names of the squared residual sums about each side's own rate;
- each draw b keeps the fit under the null (one common rate p = T / N) and multiplies every name's restricted
  residuals by one weight v_bi: name i's bootstrap sum is t*_i = n_i p + v_bi u_i, u_i = t_i - n_i p; the bootstrap
  t*_b is the same statistic on the bootstrap data, its own CR1 standard error included;
- p = (1 + #{b: |t*_b| >= |t|}) / (B + 1), symmetric two-sided; weights Rademacher (+-1), or Webb's six points
  (+-sqrt(1/2), +-1, +-sqrt(3/2)) where the smaller side has fewer than `WEBB_BELOW` names (Rademacher weights give
  such a side only 2^G distinct draws).

With per-name sums (t_i, n_i) the whole bootstrap is one matrix product of the B x G weights with the names' side
columns (two with Webb's weights): D*_b = W_A / N_A - W_B / N_B with W_s = sum_{i in s} v_bi u_i, and a side's
bootstrap sum of squares sum_s w_i^2 - 2 (W_s / N_s) sum_s n_i w_i + (W_s / N_s)^2 sum_s n_i^2, w_i = v_bi u_i.
Every contrast of a domain shares the names and u (the null's rate is the domain's), so a family is one product,
and so are many simulated data sets on the same names.

Sections (`--sections`): **level** (calibration_unlike.py's synthetic nulls: side A 1-100 names spread as side B's
60 or far more, rates 0.3 and 0.03), **real** (BOLD's real designs, every group against the rest, a common rate with
rho alike or unlike), **power** (power_oracle.py's group-vs-rest designs: a difference planted in one group of a
real domain, the oracle's power about 90% at alpha / 36), **time** (a domain's family of group-vs-rest contrasts per
label, at B draws). Each prints the bootstrap at B = `--draws` and at the resolution the Holm tail needs
(`--tail-draws`: the same draws and more, `tail_p_values`, or in the power section the first --draws of
--tail-draws), beside the test in use (`rate_test`); **resolution** (the chance
that B draws reject at alpha / m a contrast whose exact bootstrap p-value is below it); **cause** (where a rare
label's rejections come from).

    .venv/bin/python benchmarks/wild_bootstrap.py                         # all sections
    .venv/bin/python benchmarks/wild_bootstrap.py --fast                  # fewer data sets and draws
    .venv/bin/python benchmarks/wild_bootstrap.py --sections power --fast
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DRAWS = 999
FAST_DRAWS = 399
# Draws for the Holm tail: alpha / 36 = 0.00139 times (B + 1) is 10 exceedances, so the Monte Carlo p-value's
# resolution costs little power there (at B = 999 the test rejects at alpha / 36 only when no draw is as extreme).
TAIL_DRAWS = 7199
WEBB_BELOW = 12
RADEMACHER_POINTS = np.array([-1.0, 1.0])
WEBB_POINTS = np.sqrt(np.array([0.5, 1.0, 1.5]))
WEBB_POINTS = np.r_[-WEBB_POINTS, WEBB_POINTS]


def rademacher(rng: np.random.Generator, draws: int, names: int) -> np.ndarray:
    """+-1 with probability 1/2 each, eight names' weights from one random byte."""
    random_bytes = rng.integers(0, 256, (draws, (names + 7) // 8), dtype=np.uint8)
    return RADEMACHER_POINTS[np.unpackbits(random_bytes, axis=1, count=names)]


def webb(rng: np.random.Generator, draws: int, names: int) -> np.ndarray:
    """Webb's six-point weights: +-sqrt(1/2), +-1, +-sqrt(3/2), each with probability 1/6 (mean 0, variance 1)."""
    return WEBB_POINTS[rng.integers(0, 6, (draws, names), dtype=np.uint8)]


@dataclass(frozen=True)
class WildTests:
    """One family of contrasts (one entry per contrast): estimate D, its CR1 t, the bootstrap p-value, and the
    weights each contrast was bootstrapped with."""

    estimate: np.ndarray
    statistic: np.ndarray
    p_value: np.ndarray
    testable: np.ndarray
    webb: np.ndarray
    draws: int


def bootstrap_t(t: np.ndarray, n: np.ndarray, sides: np.ndarray, weights: np.ndarray,
                rademacher: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(D, t, t*): the contrasts' estimates (K,), CR1 t statistics (K,) and WCR bootstrap t statistics (B, K).

    t, n: per-name sums of the values and texts, (G,) for a family sharing its data, or (G, K), one data set per
    contrast (many simulated data sets on the same names at once); sides: (G, K) or (G,), True where the name is
    on side A; weights: (B, G), one weight per name and draw (`rademacher`: all +-1, so a name's squared bootstrap
    residual sum is its own, u_i^2, and needs no product). One product of the weights with 4K columns (6K for
    other weights): each draw's W_s = sum_s v_i u_i and sum_s n_i v_i u_i per side (and sum_s v_i^2 u_i^2)."""
    names = len(np.asarray(n))
    columns = [np.asarray(value, dtype=float).reshape(names, -1) for value in (t, n, sides)]
    contrasts = max(column.shape[1] for column in columns)
    t, n, side_a = (np.broadcast_to(column, (names, contrasts)) for column in columns)
    texts = n.sum(axis=0)
    correction = names / max(names - 1, 1) * (texts - 1) / np.maximum(texts - 2, 1)
    both = np.c_[side_a, 1.0 - side_a]  # (G, 2K): side A's columns, then side B's
    t, n = np.c_[t, t], np.c_[n, n]
    n_s = (n * both).sum(axis=0)
    q_s = (t * both).sum(axis=0) / n_s
    nn_s = (n * n * both).sum(axis=0)

    def squares(tt: np.ndarray, tn: np.ndarray, rate: np.ndarray) -> np.ndarray:
        return np.maximum(tt - 2 * rate * tn + rate * rate * nn_s, 0.0)

    def cr1(per_side: np.ndarray) -> np.ndarray:
        scaled = per_side / n_s ** 2
        return correction * (scaled[..., :contrasts] + scaled[..., contrasts:])

    estimate = q_s[:contrasts] - q_s[contrasts:]
    statistic = _ratio(estimate, cr1(squares((t * t * both).sum(axis=0), (t * n * both).sum(axis=0), q_s)))
    rate = np.tile(t[:, :contrasts].sum(axis=0) / texts, 2)  # the null's common rate, per data set
    u = (t - n * rate) * both  # restricted residual sums, on their side's columns
    products = np.asarray(weights, dtype=float) @ np.c_[u, n * u]  # (B, 4K)
    w_s, nw_s = products[:, : 2 * contrasts], products[:, 2 * contrasts:]
    ww_s = (u * u).sum(axis=0)[None, :] if rademacher else (np.asarray(weights) ** 2) @ (u * u)
    shift = w_s / n_s  # each side's bootstrap rate less p
    star = shift[:, :contrasts] - shift[:, contrasts:]
    return estimate, statistic, _ratio(star, cr1(squares(ww_s, nw_s, shift)))


def _ratio(numerator: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """numerator / sqrt(variance); +-inf where the variance is 0 and the numerator not (0 where both are)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = numerator / np.sqrt(variance)
    scale = 1e-12 * np.maximum(np.abs(numerator), 1e-300)
    return np.where(variance > scale * scale, value,
                    np.where(np.abs(numerator) <= 1e-15, 0.0, np.copysign(np.inf, numerator)))


def monte_carlo_p(statistic: np.ndarray, star: np.ndarray) -> np.ndarray:
    """(1 + #{|t*| >= |t|}) / (B + 1) per contrast (columns of `star`); ties within a relative 1e-9 count."""
    bar = np.abs(statistic) * (1 - 1e-9)
    return (1.0 + (np.abs(star) >= bar).sum(axis=0)) / (star.shape[0] + 1.0)


def _columns(t: np.ndarray, n: np.ndarray, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """t, n and sides as (G, K) arrays, each broadcast from (G,) or (G, 1) where a family shares it."""
    names = len(np.asarray(n))
    arrays = [np.asarray(value, dtype=kind).reshape(names, -1) for value, kind in ((t, float), (n, float),
                                                                                     (sides, bool))]
    width = max(array.shape[1] for array in arrays)
    t, n, sides = (np.broadcast_to(array, (names, width)) for array in arrays)
    return t, n, sides


def draw_weights(rng: np.random.Generator, draws: int, names: int, kinds: tuple[bool, ...] = (False, True)
                 ) -> dict[bool, np.ndarray]:
    """Weights for a family sharing its names: {False: Rademacher, True: Webb} (B x G each), for the kinds asked."""
    return {flag: (webb if flag else rademacher)(rng, draws, names) for flag in kinds}


def wild_cluster_tests(t: np.ndarray, n: np.ndarray, sides: np.ndarray, *, draws: int,
                       rng: np.random.Generator | None = None, weights: dict[bool, np.ndarray] | None = None,
                       webb_below: int = WEBB_BELOW, resolutions: tuple[int, ...] = ()) -> dict[int, WildTests]:
    """The WCR bootstrap test of each contrast of a family sharing its names (module docstring; t, n and sides as
    `bootstrap_t` takes them: (G,) where the contrasts share them, else (G, K)), at B = `draws`
    and at each smaller B in `resolutions` (the first draws of the same set). The weights are drawn from `rng`, or
    given (`draw_weights`: one set for every label of a domain, the names being the same). A contrast needs 2
    names a side (as the report's rule); the others get p = 1 and testable False."""
    t, n, sides = _columns(t, n, sides)
    names_a = sides.sum(axis=0)
    smaller = np.minimum(names_a, len(t) - names_a)
    testable = smaller >= 2
    use_webb = smaller < webb_below
    counts = sorted({draws, *resolutions})
    p_values = {b: np.ones(sides.shape[1]) for b in counts}
    estimate, statistic = np.zeros(sides.shape[1]), np.zeros(sides.shape[1])
    for flag in (False, True):
        columns = np.flatnonzero((use_webb == flag) & testable)
        if not len(columns):
            continue
        if weights is None:
            if rng is None:
                raise ValueError("wild_cluster_tests: give rng or weights")
            drawn = draw_weights(rng, max(counts), len(t), (flag,))[flag]
        else:
            drawn = weights[flag][: max(counts)]
        d, stat, star = bootstrap_t(t[:, columns], n[:, columns], sides[:, columns], drawn, rademacher=not flag)
        estimate[columns], statistic[columns] = d, stat
        for b in counts:
            p_values[b][columns] = monte_carlo_p(stat, star[:b])
    return {b: WildTests(estimate, statistic, p_values[b], testable, use_webb, b) for b in counts}


def tail_p_values(t: np.ndarray, n: np.ndarray, sides: np.ndarray, first: WildTests, *, draws: int, level: float,
                  rng: np.random.Generator) -> np.ndarray:
    """The p-values at B = `draws` where they decide a test at `level`: `first` (the same contrasts at fewer draws)
    extended by draws - first.draws more, the exceedances added. A contrast whose first draws already hold too many
    exceedances to reach `level` at B = `draws` keeps (1 + its count) / (draws + 1), above `level`: the decision at
    `level` is the one all the draws would give, and under a null few contrasts need more draws."""
    counts = np.rint(first.p_value * (first.draws + 1) - 1)
    p_values = (1 + counts) / (draws + 1)
    need = np.flatnonzero(first.testable & (p_values <= level))
    if len(need) and draws > first.draws:
        t, n, sides = _columns(t, n, sides)
        more = wild_cluster_tests(t[:, need], n[:, need], sides[:, need], draws=draws - first.draws,
                                  rng=rng)[draws - first.draws]
        extra = np.rint(more.p_value * (more.draws + 1) - 1)
        p_values[need] = (1 + counts[need] + extra) / (draws + 1)
    return np.where(first.testable, p_values, 1.0)


def direct_bootstrap_t(values: np.ndarray, cluster: np.ndarray, in_a: np.ndarray,
                       weights: np.ndarray) -> tuple[float, np.ndarray]:
    """The same bootstrap the slow way, for checking `bootstrap_t`: per text, OLS of y on (1, x) and its CR1
    variance as a sum over clusters of the score outer products, refitted on every draw's data."""
    y, cluster = np.asarray(values, dtype=float), np.asarray(cluster)
    x = np.c_[np.ones(len(y)), np.asarray(in_a, dtype=float)]
    labels = np.unique(cluster)
    index = np.searchsorted(labels, cluster)
    bread = np.linalg.inv(x.T @ x)
    correction = len(labels) / (len(labels) - 1) * (len(y) - 1) / (len(y) - 2)

    def t_of(data: np.ndarray) -> float:
        beta = bread @ x.T @ data
        scores = np.zeros((len(labels), 2))
        np.add.at(scores, index, x * (data - x @ beta)[:, None])
        variance = correction * (bread @ scores.T @ scores @ bread)[1, 1]
        return float(beta[1] / math.sqrt(variance))

    fitted = np.full(len(y), y.mean())  # the null's fit: no slope
    residual = y - fitted
    return t_of(y), np.array([t_of(fitted + row[index] * residual) for row in weights])


# --------------------------------------------------------------------------- the measurements


def _product_p(t: np.ndarray, n: np.ndarray, sides: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(p, testable at alpha) of the report's test (`rate_test.rate_tests`) for each contrast of one data set."""
    from bold_eval.analysis.rate_test import rate_tests

    columns = sides.T
    tests = rate_tests([t] * len(columns), [n] * len(columns), list(columns), alpha=alpha,
                       floor=[True] * len(columns))
    return np.array([test.p_value if test.testable else 1.0 for test in tests]), np.array([test.testable
                                                                                          for test in tests])


def _se(rate: float, n: int) -> float:
    return math.sqrt(max(rate, 1 / max(n, 1)) * (1 - rate) / max(n, 1))


def _cell(share: float, n: int, digits: int = 2) -> str:
    return f"{share:.{digits}%} ± {_se(share, n):.{digits}%}"


def level_rows(args: argparse.Namespace) -> None:
    """calibration_unlike.py's synthetic nulls: side A's names (1 + Geometric(0.3) texts) spread widely, moderately
    or as side B's 60, at a common rate; rejected at 5% (B = --draws) and at alpha / 36 (B = --draws and
    --tail-draws), beside the report's test at 5% and alpha / 36. The report's test is run only on the first
    --product-replicates data sets (it is measured in CALIBRATION.md at full size)."""
    from calibration_unlike import SPREADS, draw, seed_of

    tail = args.alpha / args.family
    print(f"\n| rate | spread | names A / B | weights | data sets | wild B={args.draws}: at 5% | "
          f"at alpha/{args.family} | wild B={args.tail_draws}: at alpha/{args.family} | product: at 5% | "
          f"at alpha/{args.family} |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rate in (0.3, 0.03):
        for spread, (beta_a, beta_b) in SPREADS.items():
            for names in args.names:
                rng = np.random.default_rng(seed_of("wild-level", rate, spread, names))
                wild = np.ones((args.replicates, 2))
                wild_tail = np.ones(args.replicates)
                product = np.ones((min(args.product_replicates, args.replicates), 2))
                webb_used = False
                for r in range(args.replicates):
                    t_a, n_a = draw(rng, names, beta_a, rate)
                    t_b, n_b = draw(rng, 60, beta_b, rate)
                    t, n = np.r_[t_a, t_b], np.r_[n_a, n_b]
                    sides = (np.arange(len(t)) < names)[:, None]
                    found = wild_cluster_tests(t, n, sides, draws=args.draws, rng=rng)[args.draws]
                    webb_used = bool(found.webb[0])
                    wild[r] = found.p_value[0]
                    wild_tail[r] = tail_p_values(t, n, sides, found, draws=args.tail_draws, level=tail, rng=rng)[0]
                    if r < len(product):
                        product[r, 0] = _product_p(t, n, sides, 0.05)[0][0]
                        product[r, 1] = _product_p(t, n, sides, tail)[0][0]
                cells = [np.mean(wild[:, 0] <= 0.05), np.mean(wild[:, 0] <= tail), np.mean(wild_tail <= tail)]
                print(f"| {rate} | {spread} | {names} / 60 | {'Webb' if webb_used else 'Rademacher'} | "
                      f"{args.replicates} | {_cell(cells[0], args.replicates)} | "
                      f"{_cell(cells[1], args.replicates, 3)} | {_cell(cells[2], args.replicates, 3)} | "
                      f"{_cell(float(np.mean(product[:, 0] <= 0.05)), len(product))} | "
                      f"{_cell(float(np.mean(product[:, 1] <= tail)), len(product), 3)} |", flush=True)


def real_rows(args: argparse.Namespace) -> None:
    """BOLD's real designs (calibration_unlike.py's `real` section): names per group and texts per name as they
    are, one common rate, names clustered with rho alike, or 0.8 in the groups of at most 15 names against 0.05;
    every group against the rest, pooled over the domain's groups, and the worst group at 5%."""
    from calibration_unlike import REAL_DOMAINS, real_design, seed_of

    tail = args.alpha / args.family
    print(f"\n| domain | rate | rho (small groups / rest) | tests | wild B={args.draws}: at 5% | "
          f"at alpha/{args.family} | wild B={args.tail_draws}: at alpha/{args.family} | worst group at 5% | "
          f"product: at 5% | at alpha/{args.family} |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for domain in REAL_DOMAINS:
        texts, group, labels = real_design(domain)
        sizes = np.bincount(group)
        small = sizes[group] <= 15
        sides = group[:, None] == np.arange(len(labels))[None, :]
        for rate in (0.02, 0.05, 0.3):
            for rho_small, rho_rest in ((0.05, 0.05), (0.3, 0.3), (0.8, 0.05)):
                rng = np.random.default_rng(seed_of("wild-real", domain, rate, rho_small, rho_rest))
                rho = np.where(small, rho_small, rho_rest)
                scale = (1 - rho) / rho
                wild = np.zeros((3, len(labels)))
                product = np.zeros((2, len(labels)))
                for _ in range(args.real_replicates):
                    hits = rng.binomial(texts.astype(int), rng.beta(rate * scale, (1 - rate) * scale)).astype(float)
                    found = wild_cluster_tests(hits, texts, sides, draws=args.draws, rng=rng)[args.draws]
                    deep = tail_p_values(hits, texts, sides, found, draws=args.tail_draws, level=tail, rng=rng)
                    wild += [found.p_value <= 0.05, found.p_value <= tail, deep <= tail]
                    product += [_product_p(hits, texts, sides, 0.05)[0] <= 0.05,
                                _product_p(hits, texts, sides, tail)[0] <= tail]
                total = args.real_replicates * len(labels)
                worst = int(np.argmax(wild[0]))
                worst_share = wild[0, worst] / args.real_replicates
                print(f"| {domain} | {rate} | {rho_small} / {rho_rest} | {total} | "
                      f"{_cell(wild[0].sum() / total, total)} | {_cell(wild[1].sum() / total, total, 3)} | "
                      f"{_cell(wild[2].sum() / total, total, 3)} | {_cell(worst_share, args.real_replicates, 1)} "
                      f"({labels[worst]}, {sizes[worst]} names) | {_cell(product[0].sum() / total, total)} | "
                      f"{_cell(product[1].sum() / total, total, 3)} |", flush=True)


def power_rows(args: argparse.Namespace) -> None:
    """power_oracle.py's group-vs-rest designs (`--kinds rest`): the same seeds, shifts and data sets; found =
    p <= alpha / m, the ratio to the oracle's power in brackets; the product test as power_oracle.py runs it. The
    bootstrap runs --chunk data sets at once on one set of --tail-draws weights (p at --draws: its first draws)."""
    from power_oracle import RATES, SPREADS, draw_rest, oracle_sd, planted_shift, plants, run_tests, seed_of
    from scipy import stats

    level = args.alpha / args.family
    critical = stats.norm.isf(args.alpha / (2 * args.family))
    print(f"\n| domain | planted | names / texts | rate | spread | shift | oracle | product: found (ratio) | "
          f"wild B={args.draws}: found (ratio) | wild B={args.tail_draws}: found (ratio) | weights |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for domain, group, design, in_a in plants(args.domains):
        for rate in RATES:
            for spread in SPREADS:
                rho = design.rho(spread)
                rng = np.random.default_rng(seed_of("rest", domain, group, rate, spread))
                shift = planted_shift(design, in_a, rate, rho, critical, False)
                data = [draw_rest(rng, design, in_a, rate, shift, rho) for _ in range(args.power_replicates)]
                estimates = np.array([d[in_a].sum() / design.texts[in_a].sum()
                                      - d[~in_a].sum() / design.texts[~in_a].sum() for d in data])
                oracle = float(np.mean(np.abs(estimates) / oracle_sd(design, in_a, rate, shift, rho) >= critical))
                tests = run_tests(data, design, in_a, args.alpha, True)
                product = float(np.mean([test.testable and test.p_value <= level for test in tests]))
                draws = np.random.default_rng(seed_of("wild-power", domain, group, rate, spread))
                wild, wild_tail = [], []
                for start in range(0, len(data), args.chunk):  # one set of weights per chunk of data sets
                    hits = np.stack(data[start:start + args.chunk], axis=1)
                    webb_used = bool(min(in_a.sum(), (~in_a).sum()) < WEBB_BELOW)
                    weights = draw_weights(draws, args.tail_draws, len(in_a), (webb_used,))
                    found = wild_cluster_tests(hits, design.texts, in_a, draws=args.tail_draws, weights=weights,
                                               resolutions=(args.draws,))
                    wild += list(found[args.draws].p_value <= level)
                    wild_tail += list(found[args.tail_draws].p_value <= level)
                print(f"| {domain} | {group} | {int(in_a.sum())} / {int(design.texts[in_a].sum())} | {rate} | "
                      f"{spread} | {shift:+.3f} | {oracle:.1%} | {_ratio_cell(product, oracle)} | "
                      f"{_ratio_cell(float(np.mean(wild)), oracle)} | "
                      f"{_ratio_cell(float(np.mean(wild_tail)), oracle)} | {'Webb' if webb_used else 'Rademacher'} |",
                      flush=True)


def _ratio_cell(share: float, oracle: float) -> str:
    return f"{share:.1%} ({share / oracle:.2f})" if oracle else f"{share:.1%}"


def report_labels() -> dict[str, int]:
    """Labels a full-BOLD report tests per domain: every metric's tested labels in its finding domains."""
    from bold_eval.metrics import metric_specs

    class Every:
        def __contains__(self, column: object) -> bool:
            return True

    domains = ("gender", "race", "profession", "religious_ideology", "political_ideology")
    found = dict.fromkeys(domains, 0)
    for spec in metric_specs():
        for domain in spec.finding_domains or domains:
            found[domain] += len(spec.tested(Every()))
    return found


def _median_seconds(run: Callable[[], object], rounds: int) -> float:
    spent = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        spent.append(time.perf_counter() - started)
    return float(np.median(spent))


def time_rows(args: argparse.Namespace) -> None:
    """Seconds for one label's family of group-vs-rest contrasts in each BOLD domain (every group against the rest),
    the report's test against the bootstrap at B = --draws and --tail-draws, whose weights are drawn once per domain
    and shared by its labels (the names are the same); the median of --time-rounds rounds, on one thread. Then a
    full-BOLD report's share: labels per domain (`report_labels`) times two (a run's own texts, and the
    model-vs-Wikipedia interactions), plus the weights once per domain."""
    from calibration_unlike import seed_of
    from power_oracle import Design

    labels = report_labels()
    draw_counts = (args.draws, args.tail_draws)
    print("\n| domain | names | contrasts (Webb) | labels x 2 | product per label (s) | "
          + " | ".join(f"B={b}: weights (s) | B={b}: per label (s)" for b in draw_counts) + " |")
    print("|---|---|---|---|---|" + "---|---|" * len(draw_counts))
    report = np.zeros(1 + len(draw_counts))
    for domain in labels:
        design = Design.load(domain)
        rng = np.random.default_rng(seed_of("wild-time", domain))
        hits = rng.binomial(design.texts.astype(int), 0.3).astype(float)
        sides = design.group[:, None] == np.arange(len(design.groups))[None, :]
        if sides.shape[1] == 2:  # a domain of two groups has one contrast, the pair
            sides = sides[:, :1]
        sizes = sides.sum(axis=0)
        kinds = tuple(sorted({bool(min(size, len(sides) - size) < WEBB_BELOW) for size in sizes}))
        families = 2 * labels[domain]
        product = _median_seconds(functools.partial(_product_p, hits, design.texts, sides, 0.05), args.time_rounds)
        cells, costs = [], [families * product]
        for b in draw_counts:
            drawing = _median_seconds(functools.partial(draw_weights, rng, b, len(sides), kinds), args.time_rounds)
            weights = draw_weights(rng, b, len(sides), kinds)
            per_label = _median_seconds(functools.partial(wild_cluster_tests, hits, design.texts, sides, draws=b,
                                                          weights=weights), args.time_rounds)
            cells += [f"{drawing:.3f}", f"{per_label:.3f}"]
            costs.append(drawing + families * per_label)
        report += costs
        webb_count = int(sum(min(size, len(sides) - size) < WEBB_BELOW for size in sizes))
        print(f"| {domain} | {len(sides)} | {sides.shape[1]} ({webb_count}) | {families} | {product:.3f} | "
              + " | ".join(cells) + " |", flush=True)
    print(f"\nfull-BOLD report's group-vs-rest and interaction families, one thread: the report's test "
          f"{report[0]:.1f} s; " + "; ".join(f"wild B={b} {cost:.1f} s" for b, cost in zip(draw_counts, report[1:],
                                                                                           strict=True)))


def cause_rows(args: argparse.Namespace) -> None:
    """Where the level goes with a rare label: the synthetic nulls of a 3% label on 10 names against 60, the share
    rejected at 5%, split by whether side A's names have any hit (a side with none has an unrestricted variance of
    0, and |t| is large whatever the other side)."""
    from calibration_unlike import SPREADS, draw, seed_of

    print("\n| spread | data sets | rejected at 5% | side A without hits | rejected when side A has no hits | "
          "rejected otherwise |")
    print("|---|---|---|---|---|---|")
    for spread, (beta_a, beta_b) in SPREADS.items():
        rng = np.random.default_rng(seed_of("wild-cause", spread))
        rejected, empty = np.zeros(args.replicates, bool), np.zeros(args.replicates, bool)
        for r in range(args.replicates):
            t_a, n_a = draw(rng, 10, beta_a, 0.03)
            t_b, n_b = draw(rng, 60, beta_b, 0.03)
            found = wild_cluster_tests(np.r_[t_a, t_b], np.r_[n_a, n_b], np.arange(70) < 10, draws=args.draws,
                                       rng=rng)[args.draws]
            rejected[r], empty[r] = found.p_value[0] <= 0.05, t_a.sum() == 0
        print(f"| {spread} | {args.replicates} | {rejected.mean():.1%} | {empty.mean():.1%} | "
              f"{rejected[empty].mean():.1%} | {rejected[~empty].mean():.1%} |", flush=True)


def resolution_rows(args: argparse.Namespace) -> None:
    """What B the Holm family needs: a contrast whose bootstrap p-value with infinitely many draws is p_inf is
    rejected at alpha / m with B draws when (1 + #{|t*| >= |t|}) / (B + 1) <= alpha / m, i.e. with probability
    P(Binomial(B, p_inf) <= floor(alpha / m (B + 1)) - 1); printed for p_inf at a quarter, a half and 0.9 of
    alpha / m, with the smallest p-value B can give and the exceedances it allows at alpha / m."""
    from scipy import stats

    level = args.alpha / args.family
    shares = (0.25, 0.5, 0.9)
    print(f"\n| B | smallest p | exceedances allowed at alpha/{args.family} | "
          + " | ".join(f"P(reject) at p_inf = {share} alpha/{args.family}" for share in shares) + " |")
    print("|---|---|---|" + "---|" * len(shares))
    for draws in (999, 1439, 2879, 7199, 14399, 71999):
        allowed = math.floor(level * (draws + 1) + 1e-9) - 1
        cells = [stats.binom.cdf(allowed, draws, share * level) if allowed >= 0 else 0.0 for share in shares]
        print(f"| {draws} | {1 / (draws + 1):.5f} | {max(allowed, 0) if allowed >= 0 else 'none'} | "
              + " | ".join(f"{cell:.1%}" for cell in cells) + " |")


SECTIONS = {"level": level_rows, "real": real_rows, "power": power_rows, "time": time_rows,
            "resolution": resolution_rows, "cause": cause_rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer data sets and draws (CI-sized)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma list of the tables to print, of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--draws", type=int, help=f"bootstrap draws B (default {DRAWS}, {FAST_DRAWS} with --fast)")
    parser.add_argument("--tail-draws", type=int, default=TAIL_DRAWS,
                        help=f"draws for the Holm tail alpha / family (default {TAIL_DRAWS})")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--family", type=int, default=36, help="Holm's first step is alpha / family (default 36)")
    parser.add_argument("--domains", default="", help="power: comma list of domains (default: all)")
    parser.add_argument("--names", default="1,3,4,7,10,30,100", help="level: side A's names (side B has 60)")
    parser.add_argument("--replicates", type=int, help="level: data sets per design (2,000; 500 with --fast)")
    parser.add_argument("--product-replicates", type=int, default=500,
                        help="level: data sets per design the report's test is run on (default 500)")
    parser.add_argument("--real-replicates", type=int, help="real: data sets per design (200; 50 with --fast)")
    parser.add_argument("--power-replicates", type=int, help="power: data sets per design (400; 100 with --fast)")
    parser.add_argument("--chunk", type=int, default=25, help="power: data sets bootstrapped on one set of weights")
    parser.add_argument("--time-rounds", type=int, default=5)
    args = parser.parse_args()
    args.names = tuple(int(value) for value in args.names.split(","))
    args.draws = args.draws or (FAST_DRAWS if args.fast else DRAWS)
    args.tail_draws = max(args.tail_draws, args.draws)
    args.replicates = args.replicates or (500 if args.fast else 2000)
    args.real_replicates = args.real_replicates or (50 if args.fast else 200)
    args.power_replicates = args.power_replicates or (100 if args.fast else 400)
    started = time.perf_counter()
    for section in args.sections.split(","):
        if section not in SECTIONS:
            parser.error(f"unknown section {section!r}; choose from {', '.join(SECTIONS)}")
        SECTIONS[section](args)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
