"""Where the model-vs-Wikipedia interactions lose power against their effective-names t bound.

`power_oracle.py --kinds wikipedia` prints, per design, the report's power and the effective-names t bound: the
power of the same contrast's t test with the variance's form known, on the Welch count of each side's effective
number of names less one. This script takes the same designs and the same data (power_oracle's seeds and draws:
with 400 data sets a design, `report` reproduces its found column with `--methods uncapped`) and swaps one
ingredient of the report's test at a time for its true value, on the same data sets:

- **report**: t = D / sqrt(V_A + V_B), V_s the CR2 sum about the side's own rate over N_s^2 (`rate_test`'s no-floor
  branch), on the Welch count of `rate_test.side_df` (the effective names at the values' estimated intra-class
  correlation moved towards 1 by 17 / G^2 of the way), not capped (the test in use caps it at `rate_test.WELCH_CAP`
  times the fewer side's; this decomposition measured the uncapped count, the bound's form);
- **(a) rho true**: each side's effective names at the true correlation of the values (moved as the report moves
  it), the Welch count still from the estimated variances; **(a) rho true, no move**: the same without the move;
- **(a+d) df of the bound**: the bound's own degrees of freedom (Welch of the true variances on the true effective
  names), the same t;
- **(b) V debiased**: each side's V scaled by its true variance over its mean across the data sets (the CR2 sum's
  bias), the report's df;
- **(c) df of V's spread**: the report's t on the Satterthwaite degrees of freedom of V_A + V_B measured across the
  data sets, 2 E[V]^2 / Var[V] (what V's own spread says, against the bound's count);
- **sd known, report's df** and **sd known, bound's df**: |D| / sd against the t quantile on those df (the df's cost
  alone, no variance estimated);
- **bound, simulated**: D / sqrt(Var(D) X / f), X ~ chi-square on the bound's f degrees of freedom, independent of
  D: the bound on this data's numerators (against `t bound`, the closed form on a normal D).

The true variances are power_oracle's contributions (`interaction_contributions`: n_i E[Var(y | name)] + n_i^2
Var(E[y | name])); the true correlation of a side is Var(E[y | name]) / (Var(E[y | name]) + E[Var(y | name)]) of its
names (0 where the model's rate is the reference's: power_oracle's data move every name of the planted group by
the same shift, so the values' names differ only where the shift is clipped at 1). Every p-value is read at
alpha / 72, the first Holm step of the interactions' family, as power_oracle does.

    nice .venv/bin/python benchmarks/interaction_gap.py            # 6 designs, 1,000 data sets each
    nice .venv/bin/python benchmarks/interaction_gap.py --fast     # 200 data sets each
    nice .venv/bin/python benchmarks/interaction_gap.py --replicates 400 --groups liberalism --rates 0.3
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import power_oracle as oracle  # noqa: E402
from interaction_df import effective_df, paired_sides  # noqa: E402

from bold_eval.analysis import rate_test  # noqa: E402

GROUPS = (("political_ideology", "nationalism"), ("political_ideology", "liberalism"),
          ("religious_ideology", "christianity"))
SPREADS = ("alike", "moderate")


@dataclass(frozen=True)
class Truth:
    """A design's true values on the report's scale (the differences mapped onto [0, 1]): each side's variance of
    its pooled value, effective names less one and within-name correlation; the planted interaction; the bound's
    degrees of freedom and closed-form power."""

    variance: tuple[float, float]
    names_df: tuple[float, float]
    correlation: tuple[float, float]
    interaction: float
    bound_df: float
    bound: float


def truth_of(design: oracle.Design, in_a: np.ndarray, rate: float, shift: float, rho: np.ndarray,
             interaction: float, sd: float, level: float) -> Truth:
    """`Truth` from power_oracle's contributions (on the differences' scale, 4 times the report's)."""
    sides = oracle.interaction_contributions(design, in_a, rate, shift, rho)
    variance = tuple(float(v.sum()) / 4 for v in sides)
    names_df = tuple(float(v.sum()) ** 2 / float((v * v).sum()) - 1 for v in sides)
    correlation = []
    for part, planted in ((in_a, True), (~in_a, False)):
        within, between = (np.array(value) for value in zip(*[
            oracle._interaction_moments(rate, shift if planted else 0.0, float(r)) for r in rho[part]], strict=True))
        correlation.append(float(between.mean() / (between.mean() + within.mean())))
    bound = oracle.t_bound(interaction / sd, list(sides), level)
    return Truth((variance[0], variance[1]), (names_df[0], names_df[1]), (correlation[0], correlation[1]),
                 interaction, bound.effective_df, bound.effective)


def sides_of(data: list[tuple[np.ndarray, np.ndarray]], texts: np.ndarray, in_a: np.ndarray) -> tuple[Any, Any]:
    """Side A's and side B's `rate_test.SideSums` of every data set (one entry per data set)."""
    t, n, q = [], [], []
    for sums, squares in data:
        for part in (in_a, ~in_a):
            t.append(sums[part])
            n.append(texts[part])
            q.append(squares[part])
    return paired_sides(t, n, q)


def found(t: np.ndarray, df: Any, level: float) -> float:
    """Share of the data sets whose two-sided t p-value on df is at most `level`."""
    return float(np.mean(2.0 * special.stdtr(np.broadcast_to(df, t.shape), -np.abs(t)) <= level))


def satterthwaite(values: np.ndarray) -> float:
    """2 E[V]^2 / Var[V] over the data sets: the degrees of freedom of a scaled chi-square with V's mean and spread."""
    return float(2 * values.mean() ** 2 / values.var())


def decompose(a: Any, b: Any, estimates: np.ndarray, truth: Truth, level: float,
              rng: np.random.Generator) -> dict[str, float]:
    """Each variant's power (module docstring) on the same data sets, and the numbers behind them."""
    var_a = rate_test.side_variance(a, a.rate, rate_test.NO_FLOOR)
    var_b = rate_test.side_variance(b, b.rate, rate_test.NO_FLOOR)
    t = estimates / np.sqrt(var_a + var_b)
    report_df_a, report_df_b = rate_test.side_df(a, rate_test.NO_FLOOR), rate_test.side_df(b, rate_test.NO_FLOOR)
    report_df = rate_test.welch_df(var_a, var_b, report_df_a, report_df_b)

    def true_rho_df(side: Any, rho: float, move: bool) -> np.ndarray:
        value = np.full(side.names.shape, rho)
        return effective_df(side, rate_test.df_correlation(side.names, value) if move else value)

    sd = float(np.sqrt(sum(truth.variance)))
    rho_true = [true_rho_df(side, rho, True) for side, rho in ((a, truth.correlation[0]), (b, truth.correlation[1]))]
    rho_true_plain = [true_rho_df(side, rho, False)
                      for side, rho in ((a, truth.correlation[0]), (b, truth.correlation[1]))]
    debiased_a = var_a * truth.variance[0] / var_a.mean()
    debiased_b = var_b * truth.variance[1] / var_b.mean()
    spread_df = satterthwaite(var_a + var_b)
    scaled = sd * np.sqrt(rng.chisquare(truth.bound_df, len(estimates)) / truth.bound_df)
    return {
        "report": found(t, report_df, level),
        "(a) rho true": found(t, rate_test.welch_df(var_a, var_b, *rho_true), level),
        "(a) rho true, no move": found(t, rate_test.welch_df(var_a, var_b, *rho_true_plain), level),
        "(a+d) df of the bound": found(t, truth.bound_df, level),
        "(b) V debiased": found(estimates / np.sqrt(debiased_a + debiased_b),
                                rate_test.welch_df(debiased_a, debiased_b, report_df_a, report_df_b), level),
        "(c) df of V's spread": found(t, spread_df, level),
        "sd known, report's df": found(estimates / sd, report_df, level),
        "sd known, bound's df": found(estimates / sd, truth.bound_df, level),
        "bound, simulated": found(estimates / scaled, truth.bound_df, level),
        "t bound": truth.bound,
        "oracle": float(np.mean(np.abs(estimates) / sd >= stats.norm.isf(level / 2))),
        # the numbers behind them
        "report df (median)": float(np.median(report_df)),
        "bound df": truth.bound_df,
        "V's spread df": spread_df,
        "rho A estimated (mean)": float(rate_test.value_correlation(a).mean()),
        "rho A true": truth.correlation[0],
        "E[V] / true V": float((var_a + var_b).mean() / sum(truth.variance)),
        "E[V_A] / true V_A": float(var_a.mean() / truth.variance[0]),
        "V_A's spread df": satterthwaite(var_a),
        "A's effective names - 1": truth.names_df[0],
        "A's df, report (median)": float(np.median(report_df_a)),
        "corr(D, V)": float(np.corrcoef(estimates, var_a + var_b)[0, 1]),
        "sd(D) / true sd": float(estimates.std() / sd),
    }


def design_rows(domain: str, group: str, rate: float, spread: str, replicates: int, draws: int, alpha: float,
                family: int) -> dict[str, float]:
    """One design's decomposition, on power_oracle's data for it (its seed and draws, in its order)."""
    design = oracle.load_design(domain)
    in_a = design.group == design.groups.index(group)
    rho = design.rho(spread)
    level = alpha / (2 * family)
    critical = stats.norm.isf(level / 2)
    rng = np.random.default_rng(oracle.seed_of("wikipedia", domain, group, rate, spread))
    shift = oracle.planted_shift(design, in_a, rate, rho, critical, True)
    data = [oracle.draw_interaction(rng, design, in_a, rate, shift, rho) for _ in range(replicates)]
    interaction = oracle.interaction_truth(rng, rate, shift, float(rho[in_a][0]))
    extra = [oracle.draw_interaction(rng, design, in_a, rate, shift, rho) for _ in range(draws)]
    sd = float(np.std([oracle.interaction_estimate(d, design, in_a) for d in extra]))
    truth = truth_of(design, in_a, rate, shift, rho, interaction, sd, level)
    a, b = sides_of(data, design.texts, in_a)
    estimates = np.asarray(a.rate - b.rate, dtype=float)
    result = decompose(a, b, estimates, truth, level, np.random.default_rng(oracle.seed_of("gap", domain, group)))
    result["oracle (power_oracle's sd)"] = float(np.mean(2 * np.abs(estimates) / sd >= critical))
    return result


POWERS = ("oracle (power_oracle's sd)", "t bound", "bound, simulated", "report", "(a) rho true",
          "(a) rho true, no move", "(a+d) df of the bound", "(b) V debiased", "(c) df of V's spread",
          "sd known, report's df", "sd known, bound's df")
NUMBERS = ("bound df", "report df (median)", "V's spread df", "A's effective names - 1", "A's df, report (median)",
           "V_A's spread df", "rho A true", "rho A estimated (mean)", "E[V] / true V", "E[V_A] / true V_A",
           "corr(D, V)", "sd(D) / true sd")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="200 data sets a design (2,000 draws for the sd)")
    parser.add_argument("--replicates", type=int, default=0, help="data sets a design (default 1,000; --fast 200)")
    parser.add_argument("--groups", default="", help="comma list of planted groups (default: " +
                        ", ".join(group for _, group in GROUPS) + ")")
    parser.add_argument("--rates", default="0.3", help="comma list of label rates (power_oracle's: 0.3, 0.03)")
    parser.add_argument("--spreads", default=",".join(SPREADS), help="comma list of power_oracle's spreads")
    parser.add_argument("--family", type=int, default=36, help="power_oracle's family (the interactions' is twice)")
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args()
    replicates = args.replicates or (200 if args.fast else 1000)
    draws = 2000 if args.fast else 20000
    chosen = [(domain, group) for domain, group in GROUPS if not args.groups or group in args.groups.split(",")]
    if not chosen:
        parser.error(f"unknown --groups {args.groups}: choose from {', '.join(g for _, g in GROUPS)}")
    started = time.perf_counter()
    columns = []
    for domain, group in chosen:
        for rate in (float(value) for value in args.rates.split(",")):
            for spread in args.spreads.split(","):
                result = design_rows(domain, group, rate, spread, replicates, draws, args.alpha, args.family)
                columns.append((f"{group} {rate:g} {spread}", result))
                print(f"... {columns[-1][0]} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    print(f"\n{replicates} data sets a design\n")
    for keys, cell in ((POWERS, "{:.1%}"), (NUMBERS, "{:.3g}")):
        print("| design | " + " | ".join(keys) + " |")
        print("|---|" + "---|" * len(keys))
        for name, result in columns:
            print(f"| {name} | " + " | ".join(cell.format(result[key]) for key in keys) + " |")
        print()
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
