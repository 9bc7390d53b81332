"""Level of the interactions' degrees-of-freedom candidates (`interaction_df.py`) on one pass over the data: the
tests without the floor differ between the candidates only in each side's degrees of freedom (or in how the two
sides' are combined), so the variances and t are computed once per data set and every candidate's p-value from
them. The data are `calibration_unlike.py`'s, with its seeds: the paired-worst section's interaction designs
(`--section synthetic`: 20,000 data sets per design, `--fast` 2,000) and the real-interaction section's BOLD
designs (`--section real`: 2,000 data sets per setting, `--fast` 500). Rejected at 5%, 1% and 0.05 / 72 (the
interactions' Holm step). The synthetic section also prints "true rho (known)" and "true rho moved (known)": the
effective names counted at the design's own correlation (`known_correlations`), a yardstick, not a test.

    nice .venv/bin/python benchmarks/interaction_level.py --section synthetic
    nice .venv/bin/python benchmarks/interaction_level.py --names 12,16,20,24 --spreads strong --rates 0.3
    nice .venv/bin/python benchmarks/interaction_level.py --fast --section real
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration_unlike import (  # noqa: E402
    REAL_DOMAINS,
    interaction_data,
    real_design,
    real_interaction_draws,
    seed_of,
)
from interaction_df import (  # noqa: E402
    correlation_quantile,
    effective_df,
    few_names_move,
    paired_sides,
    raw_correlation,
)

from bold_eval.analysis import rate_test  # noqa: E402

ALPHAS = (0.05, 0.01, 0.05 / 72)


def correlations(side: Any) -> dict[str, np.ndarray]:
    """Each candidate's within-name correlation for the effective names (`interaction_df.py`'s names)."""
    rho, names = rate_test.value_correlation(side), side.names
    pairs = names * (names - 1)
    found = {"moments": rho, "rho-median": correlation_quantile(side, 0.5),
             "rho-upper-90": correlation_quantile(side, 0.1), "rho-upper-95": correlation_quantile(side, 0.05),
             "rho-1": np.ones_like(rho)}
    for weight in (2.0, 4.0):
        found[f"rho-prior-{weight:g}"] = (names * rho + weight) / (names + weight)
    for weight in (17.0, 25.0):
        found[f"rho-g2-{weight:g}"] = rho + (1 - rho) * np.minimum(weight / names ** 2, 1.0)
    for weight in (18.0, 24.0):
        found[f"rho-pairs-{weight:g}"] = (pairs * rho + weight) / (pairs + weight)
    for power, weight in ((3.0, 170.0), (4.0, 1700.0)):
        found[f"rho-g{power:g}-{weight:g}"] = few_names_move(names, rho, weight, power)
    raw = raw_correlation(side)
    for power, weight in ((2.0, 17.0), (3.0, 170.0)):
        found[f"rho-raw-g{power:g}-{weight:g}"] = few_names_move(names, raw, weight, power)
    found["product"] = rate_test.df_correlation(names, rho)
    return found


def known_correlations(spread: str, rate: float) -> tuple[float, float]:
    """The true intra-class correlation of `calibration_unlike.interaction_data`'s per-prompt differences on side A
    and side B: (Var(model rate) + Var(reference rate)) / (2 rate (1 - rate)), each rate Beta with mean `rate` and
    a + b = c having variance rate (1 - rate) / (c + 1) (the model's c by the spread, the reference's 20)."""
    side_a, side_b = {"strong": (1.0, 100.0), "exchangeable": (3.33, 3.33)}[spread]
    return (1.0 / (side_a + 1) + 1.0 / 21.0) / 2.0, (1.0 / (side_b + 1) + 1.0 / 21.0) / 2.0


def rejected(a: Any, b: Any, known: tuple[float, float] | None = None) -> dict[str, np.ndarray]:
    """Per candidate ("product": the test in use, its Welch count at most `rate_test.WELCH_CAP` times the fewer of
    its sides' df; "uncapped": the same not capped; "hsu": the moments' sides on the fewer of their df; "hsu-2":
    the test in use's count at most 2 times the fewer; every other candidate's Welch count not capped), whether each
    contrast is rejected
    at each of `ALPHAS` (an array alphas x contrasts); untestable contrasts are not rejected. With `known`, the
    sides' true correlations, also "true rho (known)" and "true rho moved (known)": the effective names at the
    truth, and at the truth moved as `rate_test.df_correlation` moves the estimate (not tests: yardsticks)."""
    var_a, var_b = rate_test.side_variance(a, a.rate, False), rate_test.side_variance(b, b.rate, False)
    total = var_a + var_b
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(total > 0, (a.rate - b.rate) / np.sqrt(total), 0.0)
    least = rate_test.min_attainable_p(a.names, b.names, a.texts, b.texts)
    enough = np.minimum(a.names, b.names) >= 2
    rho_a, rho_b = correlations(a), correlations(b)
    if known is not None:
        for side, rho, value in ((a, rho_a, known[0]), (b, rho_b, known[1])):
            rho["true rho (known)"] = np.full(np.shape(side.names), value)
            rho["true rho moved (known)"] = rate_test.df_correlation(side.names, rho["true rho (known)"])
    result = {}
    caps = {"product": rate_test.WELCH_CAP, "hsu": 1.0, "hsu-2": 2.0}
    for name in [*rho_a, "uncapped", "hsu", "hsu-2"]:
        key = "moments" if name == "hsu" else "product" if name in ("uncapped", "hsu-2") else name
        df_a, df_b = effective_df(a, rho_a[key]), effective_df(b, rho_b[key])
        df = rate_test.welch_df(var_a, var_b, df_a, df_b)
        if name in caps:
            df = np.minimum(df, caps[name] * np.minimum(df_a, df_b))
        p = 2 * special.stdtr(df, -np.abs(t))
        result[name] = np.array([(p <= alpha) & (least <= alpha) & enough for alpha in ALPHAS])
    return result


def _cells(shares: np.ndarray, count: int) -> str:
    return " | ".join(f"{share:.3%} ± {math.sqrt(max(share, 1 / count) * (1 - share) / count):.3%}"
                      for share in shares)


def synthetic(replicates: int, sizes: tuple[int, ...] = (7, 10, 30, 100),
              spreads: tuple[str, ...] = ("strong", "exchangeable"), rates: tuple[float, ...] = (0.3, 0.03),
              seed_tag: str = "") -> None:
    """The synthetic designs (`calibration_unlike.interaction_data`) with its seeds, or with a second set of seeds
    named by `seed_tag` (an independent replicate of the same designs)."""
    print("| spread | rate | names A / B | candidate | at 5% | at 1% | at 0.05 / 72 |\n|---|---|---|---|---|---|---|")
    for spread in spreads:
        for rate in rates:
            for names in sizes:
                rng = np.random.default_rng(seed_of(f"interaction-{seed_tag}" if seed_tag else "interaction", rate,
                                                     spread, names))
                t, n, q = [], [], []
                for _ in range(replicates):
                    d, side, unit = interaction_data(rng, names, spread, rate)
                    y = (d - d.min()) / (d.max() - d.min())  # mapped by the observed range, as the report does
                    for part in (side, ~side):
                        _, index = np.unique(unit[part], return_inverse=True)
                        t.append(np.bincount(index, weights=y[part]))
                        n.append(np.bincount(index).astype(float))
                        q.append(np.bincount(index, weights=y[part] ** 2))
                for name, found in rejected(*paired_sides(t, n, q), known_correlations(spread, rate)).items():
                    print(f"| {spread} | {rate} | {names} / 60 | {name} | {_cells(found.mean(axis=1), replicates)} |",
                          flush=True)


def real(replicates: int) -> None:
    """BOLD's designs as `calibration_unlike.real_interaction_rows` draws them; pooled over every group and
    setting, and the worst group in its worst setting."""
    pooled: dict[str, np.ndarray] = {}
    worst: dict[str, np.ndarray] = {}
    tests = 0
    for domain in REAL_DOMAINS:
        texts, group, names = real_design(domain)
        small = np.bincount(group)[group] <= 10
        for rate in (0.3, 0.03):
            for rho_small, rho_rest in ((0.01, 0.01), (0.8, 0.05)):
                for own in (0.5, 1.0):
                    t, n, q = [], [], []
                    for sums, squares in real_interaction_draws(texts, small, domain, rate, rho_small, rho_rest, own,
                                                                replicates):
                        for g in range(len(names)):
                            for part in (group == g, group != g):
                                t.append(sums[part])
                                n.append(texts[part])
                                q.append(squares[part])
                    for name, found in rejected(*paired_sides(t, n, q)).items():
                        pooled[name] = pooled.get(name, 0) + found.sum(axis=1)
                        by_group = found.reshape(len(ALPHAS), replicates, len(names)).mean(axis=1).max(axis=1)
                        worst[name] = np.maximum(worst.get(name, 0), by_group)
                    tests += replicates * len(names)
    print("| candidate | pooled at 5% | at 1% | at 0.05 / 72 | worst group at 5% | at 1% | at 0.05 / 72 |")
    print("|---|---|---|---|---|---|---|")
    for name in pooled:
        print(f"| {name} | {_cells(pooled[name] / tests, tests)} | "
              + " | ".join(f"{share:.2%}" for share in worst[name]) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer data sets (CI-sized)")
    parser.add_argument("--section", choices=("synthetic", "real"), default="synthetic")
    parser.add_argument("--names", default="7,10,30,100", help="synthetic: side A's names in each design (against 60)")
    parser.add_argument("--spreads", default="strong,exchangeable", help="synthetic: side A's spreads")
    parser.add_argument("--rates", default="0.3,0.03", help="synthetic: the label rates")
    parser.add_argument("--seed-tag", default="",
                        help="synthetic: a name for an independent set of seeds for the same designs (default: "
                             "calibration_unlike's seeds)")
    args = parser.parse_args()
    if args.section == "synthetic":
        synthetic(2000 if args.fast else 20000, tuple(int(value) for value in args.names.split(",")),
                  tuple(args.spreads.split(",")), tuple(float(value) for value in args.rates.split(",")), args.seed_tag)
    else:
        real(500 if args.fast else 2000)


if __name__ == "__main__":
    main()
