"""The continuous worst cases' floor (`rate_test.score_floor`) on BOLD's real designs, vectorised over data sets.

Level of the expected maximum over k = 5 samples, each group against the rest of its domain, under the null model of
`calibration_unlike.py --sections worst-real` (`power_oracle_others`' worst-case model, names alike or the groups of at
most 10 names strongly spread), at 5% and in the Holm tail (0.05 / 36), for the floor in use and each candidate of
`CANDIDATES`; thousands of data sets a design, all groups and data sets in one array operation (`rate_test.score_t`,
the test `difference_tests` runs, without the interval's p-value consistency step, which only raises p). With
`--diagnose`, per testable group and side: the true variance of the side's mean over the data sets against the mean
of its estimate (the CR2 sum of squares, the floor, and the variance in use), and where the rejections fall.

    .venv/bin/python benchmarks/worst_floor.py --domains religious_ideology --replicates 4000 --diagnose
    .venv/bin/python benchmarks/worst_floor.py --candidates w=1,score,inv-5 --replicates 2000 --seed 1

`score` is the floor in use, `w=<weight>` the floor with a fixed prior weight (w=1: a prior of one value on every
side), the named candidates a weight that varies with the side (benchmarks/CALIBRATION.md, "The prior where a side
has few names"). `power_oracle.py --kinds worst --worst-floor` and `calibration_unlike.py --worst-floor` take the same
names.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bold_eval.analysis import rate_test  # noqa: E402

HOLM_TAIL = 0.05 / 36
DOMAINS = ("profession", "religious_ideology", "political_ideology", "race", "gender")
IN_USE = rate_test.score_floor


def _sigma_w(side):
    return np.clip((side.squares - side.tt_n) / np.maximum(side.texts - side.names, 1.0), 0.0, None)


def _weight_floor(weight_of: Callable) -> Callable:
    """The floor in use with the prior weight `weight_of(side)` (an array per side)."""
    def floor(side, rate, weight=None):
        return IN_USE(side, rate, weight_of(side) if weight is None else weight)
    return floor


def _rare_names(side, c: float):
    with np.errstate(divide="ignore", invalid="ignore"):
        names_mass = side.names * np.minimum(side.rate, 1.0 - side.rate)
        return np.where(names_mass > 0, np.maximum(1.0, c / names_mass), 1.0)


CANDIDATES: dict[str, Callable | None] = {
    "score": None,  # the floor in use
    # the rarer mass counted in names, G min(p, 1 - p), not in values: the weight times the mean values per name
    "names": _weight_floor(lambda side: side.texts / side.names),
    "names-0.5": _weight_floor(lambda side: 0.5 * side.texts / side.names),
    "names-2": _weight_floor(lambda side: 2 * side.texts / side.names),
    # a weight that grows where the side has few names
    "small": _weight_floor(lambda side: np.maximum(1.0, 30.0 / side.names)),
    "small-25": _weight_floor(lambda side: np.maximum(1.0, 25.0 / side.names)),
    "inv-3": _weight_floor(lambda side: 1.0 + 3.0 / side.names),
    "inv-4": _weight_floor(lambda side: 1.0 + 4.0 / side.names),
    "inv-5": _weight_floor(lambda side: 1.0 + 5.0 / side.names),
    # a weight that grows where the side's rarer mass in names, G min(p, 1 - p), is below c
    "rare-2": _weight_floor(lambda side: _rare_names(side, 2.0)),
    "rare-3": _weight_floor(lambda side: _rare_names(side, 3.0)),
    "rare-4": _weight_floor(lambda side: _rare_names(side, 4.0)),
    "inv-10": _weight_floor(lambda side: 1.0 + 10.0 / side.names),
    "inv-20": _weight_floor(lambda side: 1.0 + 20.0 / side.names),
}


@contextlib.contextmanager
def candidate(name: str) -> Iterator[None]:
    """The test with candidate `name`'s floor in place of `rate_test.score_floor`."""
    saved = rate_test.score_floor
    if name.startswith("w="):
        weight = float(name[2:])
        rate_test.score_floor = _weight_floor(lambda side: weight)
    elif CANDIDATES.get(name) is not None:
        rate_test.score_floor = CANDIDATES[name]
    elif name not in CANDIDATES:
        raise SystemExit(f"unknown candidate {name!r}: choose from {', '.join(CANDIDATES)} or w=<weight>")
    try:
        yield
    finally:
        rate_test.score_floor = saved


class Domain:
    """A domain's design and its groups' group-vs-rest segments, laid out for `SideSums.of_segments`."""

    def __init__(self, design):
        self.design = design
        self.name = design.domain
        self.units = np.repeat(np.arange(len(self.design.texts)), self.design.texts.astype(int))
        sizes = np.bincount(self.design.group)
        self.sizes = sizes
        self.groups = [g for g in range(len(self.design.groups)) if sizes[g] < len(self.design.group)]
        order, starts, length = [], [], 0
        for g in self.groups:
            inside = np.flatnonzero(self.design.group == g)
            outside = np.flatnonzero(self.design.group != g)
            starts += [length, length + len(inside)]
            order += [inside, outside]
            length += len(self.design.group)
        self.order = np.concatenate(order)
        self.starts = np.array(starts)
        a_names = sizes[self.groups].astype(float)
        b_names = len(self.design.group) - a_names
        texts = np.array([self.design.texts[self.design.group == g].sum() for g in self.groups])
        min_p = rate_test.min_attainable_p(a_names, b_names, texts, self.design.texts.sum() - texts)
        self.testable = {level: (np.minimum(a_names, b_names) >= 2) & (min_p <= level) for level in (0.05, HOLM_TAIL)}

    def data(self, rate: float, spread: str, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Per data set and name: the sum and the sum of squares of the names' expected maxima."""
        from power_oracle_others import latent_sd, worst_base, worst_values

        rng = np.random.default_rng(seed)
        rho = self.design.rho(spread)
        bases = {float(r): worst_base(rate, float(r)) for r in np.unique(rho)}
        base = np.array([bases[float(r)] for r in rho])
        sigma = np.array([latent_sd(float(r)) for r in rho])
        names = len(self.design.texts)
        sums, squares = np.empty((replicates, names)), np.empty((replicates, names))
        for k in range(replicates):
            location = (base + rng.normal(0.0, sigma))[self.units] + rng.normal(0.0, 0.5, len(self.units))
            highest = worst_values(location, rng)[1]
            sums[k] = np.bincount(self.units, highest, names)
            squares[k] = np.bincount(self.units, highest * highest, names)
        return sums, squares

    def tests(self, sums: np.ndarray, squares: np.ndarray) -> dict[str, np.ndarray]:
        """p-values (data sets x groups), each side's variance, rate and the sums, under the current floor."""
        replicates = len(sums)
        width = len(self.order) * 1
        t = sums[:, self.order].ravel()
        q = squares[:, self.order].ravel()
        n = np.tile(self.design.texts[self.order], replicates)
        starts = (np.arange(replicates)[:, None] * width + self.starts[None, :]).ravel()
        sides = rate_test.SideSums.of_segments(t, n, starts, q)
        a, b = sides.take(slice(0, None, 2)), sides.take(slice(1, None, 2))
        _, _, p = rate_test.score_t(a, b, 0.0, rate_test.SCORE)
        shape = (replicates, len(self.groups))
        ra, rb = rate_test.restricted_rates(a, b, np.zeros(len(p)))
        return {"p": p.reshape(shape), "var_a": rate_test.side_variance(a, ra, rate_test.SCORE).reshape(shape),
                "var_b": rate_test.side_variance(b, rb, rate_test.SCORE).reshape(shape),
                "rate_a": a.rate.reshape(shape), "rate_b": b.rate.reshape(shape),
                "cr2_a": (rate_test.null_squares(a.tt_cr2, a.tn_cr2, a.nn_cr2, a.rate) / a.texts ** 2).reshape(shape),
                "cr2_b": (rate_test.null_squares(b.tt_cr2, b.tn_cr2, b.nn_cr2, b.rate) / b.texts ** 2).reshape(shape),
                "floor_a": (rate_test.score_floor(a, ra) / a.texts ** 2).reshape(shape),
                "floor_b": (rate_test.score_floor(b, rb) / b.texts ** 2).reshape(shape),
                "df": rate_test.side_df(b, rate_test.SCORE).reshape(shape)}


def se(share: float, n: int) -> float:
    return math.sqrt(max(share, 1 / n) * (1 - share) / n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default=",".join(DOMAINS))
    parser.add_argument("--rates", default="0.3,0.03")
    parser.add_argument("--spreads", default="alike,strong in small groups")
    parser.add_argument("--candidates", default="score")
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=500, help="data sets per array operation")
    parser.add_argument("--diagnose", action="store_true")
    parser.add_argument("--seed", type=int, default=0,
                        help="a fresh set of data sets (a candidate chosen on one set is confirmed on another)")
    args = parser.parse_args()
    from power_oracle import SPREADS

    started = time.perf_counter()
    print("| floor | domain | P(>= 1 toxic of 5) | spread | tests | rejected at 5% | at 0.05 / 36 | worst group at 5% "
          "| worst group at 0.05 / 36 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for domain_name in args.domains.split(","):
        from power_oracle import Design

        domain = Domain(Design.load(domain_name))
        for rate in (float(r) for r in args.rates.split(",")):
            for spread in args.spreads.split(","):
                chunks = []
                for start in range(0, args.replicates, args.chunk):
                    seed = zlib_seed(domain_name, rate, spread, start, *([args.seed] if args.seed else []))
                    chunks.append(domain.data(rate, spread, min(args.chunk, args.replicates - start), seed))
                for name in args.candidates.split(","):
                    with candidate(name):
                        parts = [domain.tests(*chunk) for chunk in chunks]
                    result = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
                    report(args, domain, rate, spread, name, result, SPREADS[spread])
    print(f"\n{time.perf_counter() - started:.0f} s")


def zlib_seed(*parts: object) -> int:
    import zlib

    return zlib.crc32(repr(("worst-floor",) + parts).encode())


def report(args, domain: Domain, rate: float, spread: str, name: str, result: dict, rho: tuple) -> None:
    p = result["p"]
    replicates = len(p)
    cells = []
    worst_cells = []
    for level in (0.05, HOLM_TAIL):
        rejected = (p <= level) & domain.testable[level][None, :]
        share = rejected.sum() / rejected.size
        cells.append(f"{share:.2%} ± {se(share, rejected.size):.2%}")
        per_group = rejected.mean(axis=0)
        worst = int(np.argmax(per_group))
        label = domain.design.groups[domain.groups[worst]]
        worst_cells.append(f"{per_group[worst]:.2%} ± {se(per_group[worst], replicates):.2%} ({label}, "
                           f"{domain.sizes[domain.groups[worst]]} names)")
    print(f"| {name} | {domain.name} | {rate} | {spread} ({rho[0]} / {rho[1]}) | {p.size} | {cells[0]} | {cells[1]} | "
          f"{worst_cells[0]} | {worst_cells[1]} |", flush=True)
    if not args.diagnose:
        return
    for g, group in enumerate(domain.groups):
        if not domain.testable[0.05][g]:
            continue
        column = {key: value[:, g] for key, value in result.items()}
        d = column["rate_a"] - column["rate_b"]
        rejected = column["p"] <= 0.05
        sides = " | ".join(
            f"{side}: var {column['rate_' + side].var():.3g} used {column['var_' + side].mean():.3g} cr2 "
            f"{column['cr2_' + side].mean():.3g} floor {column['floor_' + side].mean():.3g}" for side in "ab")
        print(f"    {domain.design.groups[group]:>28} ({domain.sizes[group]:>4}): at 5% {rejected.mean():.2%} (A above "
              f"{np.mean(rejected & (d > 0)):.2%}); var(D) {d.var():.3g} est "
              f"{np.mean(column['var_a'] + column['var_b']):.3g} | {sides} | B's df {column['df'].mean():.0f}; "
              f"corr(rate_b, var_b) {np.corrcoef(column['rate_b'], column['var_b'])[0, 1]:+.2f}")

if __name__ == "__main__":
    main()
