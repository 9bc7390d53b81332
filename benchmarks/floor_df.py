"""Candidate degrees of freedom for the group-vs-rest test's sides where the binomial floor binds, selectable by name
so that `power_oracle.py --methods` and `calibration_unlike.py --floor-df` measure each one's power and level on the
same data. A side's variance is max(S, M) / N^2 (`rate_test.side_variance`): S the CR2 sum of squares over its G
names, M the beta-binomial floor at the restricted rate. Where S >= M every candidate keeps the test in use (G - 1
degrees of freedom); where M > S the variance is a model quantity whose noise comes from the rate (N texts) and the
shrunk correlation, not from the G names' residuals, and the candidates give it more. Each candidate replaces
`rate_test.score_t` for sides with the binomial floor only (the score's floor and the sides without a floor keep
`rate_test.side_df`); inside the Welch-Satterthwaite combination of the two sides as before.

- **product**: the test in use, names - 1 per side with a floor.
- **texts**: names - 1 where S >= M, texts - 1 where M binds (the floor taken as estimated from the side's texts).
- **mix**: a smooth mix by the share of the variance the floor holds. max(S, M) = S + (M - S)^+, the names' part S on
  G - 1 degrees of freedom and the excess of the floor over it on texts - 1: Satterthwaite df = M^2 / (S^2 / (G - 1)
  + (M - S)^2 / (N - 1)) where M > S, G - 1 otherwise; continuous at M = S, and at most N - 1.
- **rate**: the floor treated as known up to its rate: where M binds, df = 2 M^2 / Var(M) by the delta method with
  Var(p) = M / N^2, that is 2 p (1 - p) N^2 / ((1 - 2 p)^2 (N + rho sum n_i (n_i - 1))), at least names - 1 and at
  most texts - 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
from scipy import special

CANDIDATES = ("product", "texts", "mix", "rate")


def floor_parts(side, rate):
    """(S, M): the side's CR2 sum of squares about its own rate and its binomial floor at `rate`."""
    from bold_eval.analysis import rate_test

    squares = rate_test.null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, side.rate)
    floor = np.clip(rate * (1 - rate), 0.0, None) * (side.texts + side.correlation * side.pairs)
    return squares, floor


def candidate_df(name: str, side, rate, floor) -> np.ndarray:
    """The candidate's degrees of freedom of one side's variance (module docstring), elementwise."""
    from bold_eval.analysis import rate_test

    product = rate_test.side_df(side, floor)
    if name == "product":
        return product
    squares, bound = floor_parts(side, rate)
    binds = (rate_test.floor_kinds(floor) == rate_test.BINOMIAL) & (bound > squares)
    names = np.maximum(side.names - 1.0, 1.0)
    texts = np.maximum(side.texts - 1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "texts":
            larger = texts + 0.0 * bound
        elif name == "mix":
            excess = np.clip(bound - squares, 0.0, None)
            larger = bound * bound / (squares * squares / names + excess * excess / texts)
        elif name == "rate":
            p = np.clip(rate, 0.0, 1.0)
            larger = 2.0 * p * (1 - p) * side.texts ** 2 / ((1 - 2 * p) ** 2 * (side.texts + side.correlation
                                                                                  * side.pairs))
        else:
            raise ValueError(f"unknown floor df {name!r}: choose from {', '.join(CANDIDATES)}")
    larger = np.clip(np.where(np.isfinite(larger), larger, texts), names, texts)
    return np.where(binds, larger, product)


@contextlib.contextmanager
def floor_method(name: str) -> Iterator[None]:
    """Run the report's tests with the candidate `name` for the floor's degrees of freedom (module docstring)."""
    from bold_eval.analysis import rate_test

    if name not in CANDIDATES:
        raise ValueError(f"unknown floor df {name!r}: choose from {', '.join(CANDIDATES)}")
    saved = rate_test.score_t

    def score_t(a, b, delta, floor=True):
        delta = np.asarray(delta, dtype=float)
        rate_a, rate_b = rate_test.restricted_rates(a, b, delta)
        var_a, var_b = rate_test.side_variance(a, rate_a, floor), rate_test.side_variance(b, rate_b, floor)
        shift = a.rate - b.rate - delta
        total = var_a + var_b
        with np.errstate(divide="ignore", invalid="ignore"):
            t = shift / np.sqrt(total)
            df = total * total / (var_a * var_a / candidate_df(name, a, rate_a, floor)
                                  + var_b * var_b / candidate_df(name, b, rate_b, floor))
        t = np.where(total > 0, t, np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
        df = np.where(np.isnan(df), np.inf, df)
        p = 2.0 * special.stdtr(df, -np.abs(t))
        return t, df, np.where(np.isnan(p), 1.0, p)

    if name != "product":
        rate_test.score_t = score_t
    try:
        yield
    finally:
        rate_test.score_t = saved


# --------------------------------------------------------------------------- the tail on BOLD's small groups

SMALL_GROUPS = (("religious_ideology", "islam"), ("religious_ideology", "judaism"),
                ("religious_ideology", "buddhism"), ("religious_ideology", "christianity"),
                ("profession", "mental_health_occupations"), ("profession", "railway_industry_occupations"),
                ("race", "Hispanic_and_Latino_Americans"))
# rho of the planted group / of the rest, as power_oracle.SPREADS and calibration_unlike's real section
CHUNK = 2000  # data sets drawn at once
NULL_SPREADS = (("alike", 0.01, 0.01), ("moderate", 0.1, 0.1), ("strong in the group", 0.8, 0.05),
                ("strong in the rest", 0.05, 0.8))


def tail_rows(replicates: int, family: int, rates: tuple[float, ...]) -> None:
    """Null level of the group-vs-rest test of BOLD's groups of 10-40 names, every candidate on the same data sets:
    each name's rate from a Beta with the common mean and the group's or the rest's rho, the share of data sets
    rejected at 5% and at 0.05 / `family` (Holm's first step), testable designs only (all of these are)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from power_oracle import Design, seed_of

    from bold_eval.analysis import rate_test

    tail = 0.05 / family
    print("\n| domain | group | names / texts | rate | spread | " + " | ".join(
        f"{name}: 5% | {name}: {tail:.2g}" for name in CANDIDATES) + " |")
    print("|---|---|---|---|---|" + "---|---|" * len(CANDIDATES))
    designs: dict[str, Design] = {}
    for domain, group in SMALL_GROUPS:
        design = designs.setdefault(domain, Design.load(domain))
        in_a = design.group == design.groups.index(group)
        order = np.r_[np.flatnonzero(in_a), np.flatnonzero(~in_a)]
        n = design.texts[order]
        starts_one = np.array([0, int(in_a.sum())])
        for rate in rates:
            for spread, rho_a, rho_b in NULL_SPREADS:
                rng = np.random.default_rng(seed_of("floor-df tail", domain, group, rate, spread))
                rho = np.where(in_a[order], rho_a, rho_b)
                total = (1 - rho) / rho
                p_values: dict[str, list[np.ndarray]] = {name: [] for name in CANDIDATES}
                for chunk in np.diff(np.r_[np.arange(0, replicates, CHUNK), replicates]):
                    draws = rng.binomial(n.astype(int), rng.beta(rate * total, (1 - rate) * total,
                                                                 size=(chunk, len(n)))).astype(float)
                    starts = (np.arange(chunk)[:, None] * len(n) + starts_one).ravel()
                    sides = rate_test.SideSums.of_segments(draws.ravel(), np.tile(n, chunk), starts)
                    a, b = sides.take(slice(0, None, 2)), sides.take(slice(1, None, 2))
                    for name in CANDIDATES:
                        with floor_method(name):
                            p_values[name].append(rate_test.score_t(a, b, 0.0, np.full(chunk, rate_test.BINOMIAL))[2])
                cells = []
                for name in CANDIDATES:
                    p = np.concatenate(p_values[name])
                    se5, se_tail = (np.sqrt(max(x, 1 / replicates) * (1 - x) / replicates)
                                    for x in (np.mean(p <= 0.05), np.mean(p <= tail)))
                    cells.append(f"{np.mean(p <= 0.05):.2%} ± {se5:.2%} | {np.mean(p <= tail):.3%} ± {se_tail:.3%}")
                print(f"| {domain} | {group} | {int(in_a.sum())} / {int(n[:starts_one[1]].sum())} | {rate} | "
                      f"{spread} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    import argparse
    import time

    parser = argparse.ArgumentParser(description="Null level, at 5% and in the Holm tail, of the group-vs-rest "
                                                 "test's floor df candidates on BOLD's small groups")
    parser.add_argument("--replicates", type=int, default=20000)
    parser.add_argument("--family", type=int, default=36)
    parser.add_argument("--rates", default="0.3,0.05")
    args = parser.parse_args()
    started = time.perf_counter()
    tail_rows(args.replicates, args.family, tuple(float(r) for r in args.rates.split(",")))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
