"""Where the paired test's standard error comes from when a rare label's floor binds, and what a candidate costs.

compare's overall difference and the leaderboard's pairs (`paired_rate_test.paired_rate_tests`) take each source's
variance as max(S_s, M_s), S_s the stratified CR2 sum of squares and M_s the beta-binomial floor at the rate the
hypothesis imposes on the source, less 2 C, the pairing's CR2 cross-product. The interval inverts the test: at each
candidate difference d0 the rates that d0 imposes (`rate_test.restricted_rates`) and each source floored at its own
imposed rate. Three sections, on the same simulated data for every variance:

- **decompose**: `power_oracle_others.py`'s two-run model (a person's rate shared by both models, each model's own
  view of them, the plant in one group or every name), each data set's variance at the true difference split into
  its parts: the report's; without the floors; the floors at each source's *true* variance (max(S_s, Var_s), the
  best floor there is); the floors' within-name correlation at its true value or at 0; the floors alone. Printed: the
  coverage of the 95% interval (|estimate - truth| <= t quantile x SE), E[V] over the true variance, the median SE
  over the true sd.
- **candidates**: the same designs, the report's test and interval against candidate variances (`CANDIDATES`),
  power at alpha / 40 (the oracle's alongside) and coverage of the printed interval.
- **level**: nulls with a rare or common label, 2-300 names, rejected at 5% and at 0.1%: calibration_unlike.py's
  overall designs (each source's per-name rates drawn apart: one source strongly spread, a + b = 1, against a tight
  one, a + b = 20, or both at 3.33) and nulls where both sources share each person's rate (a + b = 1 or 3.33) with or
  without each model's own view of them (logit sd 0.5), the pairing that the covariance term carries; the names'
  prompts 1 + Geometric(0.3) (at most 60), redrawn per batch of data sets, their strata `calibration_unlike.strata_of`.

    .venv/bin/python benchmarks/paired_floor.py --sections decompose,candidates --replicates 400
    .venv/bin/python benchmarks/paired_floor.py --sections level --replicates 10000
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parent))

import power_oracle_others as others  # noqa: E402
from calibration_unlike import strata_of  # noqa: E402
from power_oracle import load_design  # noqa: E402

from bold_eval.analysis import paired_rate_test as paired  # noqa: E402
from bold_eval.analysis.rate_test import restricted_rates  # noqa: E402

RARE_PLANTS = (("religious_ideology", "christianity"), ("religious_ideology", "islam"),
               ("religious_ideology", "sikhism"), ("religious_ideology", others.EVERY),
               ("political_ideology", "liberalism"), ("political_ideology", "populism"))
SPREAD_NAMES = ("alike", "moderate", "strong in small groups")
NULLS = {  # name: (per-name rates shared by both sources, a + b of the run (or the shared rate), of the baseline,
    # each model's own view (logit sd))
    "apart, strong": (False, 1.0, 20.0, 0.0), "apart, alike": (False, 3.33, 3.33, 0.0),
    "shared, a + b = 1": (True, 1.0, 1.0, 0.0), "shared, a + b = 1, own view": (True, 1.0, 1.0, 0.5),
    "shared, a + b = 3.33, own view": (True, 3.33, 3.33, 0.5)}


def effective_names(t_a: np.ndarray, t_b: np.ndarray, n: np.ndarray, strata: np.ndarray | None) -> np.ndarray:
    """`paired.effective_names` of the pairing's cross-product, w_i e_Ai e_Bi, per test."""
    codes = np.zeros(len(n), dtype=int) if strata is None else pd.factorize(np.asarray(strata))[0]
    residual_a, residual_b, weight = paired.stratified_residuals(t_a, t_b, n, codes)
    return paired.effective_names(weight * residual_a * residual_b)


def keep_none(names: np.ndarray) -> np.ndarray:
    return np.zeros_like(names)


def keep_all(names: np.ndarray) -> np.ndarray:
    return np.ones_like(names)


def keep_beyond_two(names: np.ndarray) -> np.ndarray:
    return np.clip((names - 2) / np.maximum(names, 1e-9), 0.0, 1.0)


@dataclass(frozen=True)
class Candidate:
    """A variance of the paired difference: `keep`, the share of the way from the pairing's cross-product C to
    r sqrt(V_A V_B) (r = C / sqrt(S_A S_B), the sources' residual correlation applied to their floored variances) by
    the effective names of the cross-product; `floor_correlation`, the floors' within-name correlation if not the
    estimate's."""

    keep: Callable[[np.ndarray], np.ndarray]
    floor_correlation: float | None = None


# the last but one is `paired.paired_covariance`, the test in use
CANDIDATES: dict[str, Candidate] = {
    "cross-product": Candidate(keep_none), "correlation on the floors": Candidate(keep_all),
    "in use": Candidate(keep_beyond_two), "in use, the floors' correlation 0": Candidate(keep_beyond_two, 0.0)}


def candidate_t(sums: paired.PairedSums, names: np.ndarray, candidate: Candidate,
                delta: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """(t, p) of p_A - p_B = delta with the candidate's variance; "in use" is `paired.paired_t`."""
    rate_a, rate_b = restricted_rates(sums.a, sums.b, np.asarray(delta, dtype=float))
    a, b = sums.a, sums.b
    if candidate.floor_correlation is not None:
        a, b = (dataclasses.replace(side, correlation=np.full_like(side.correlation, candidate.floor_correlation))
                for side in (a, b))
    var_a = np.maximum(sums.squares_a, paired.binomial_floor(a, rate_a))
    var_b = np.maximum(sums.squares_b, paired.binomial_floor(b, rate_b))
    product = sums.squares_a * sums.squares_b
    with np.errstate(divide="ignore", invalid="ignore"):
        correlation = np.clip(np.where(product > 0, sums.cross / np.sqrt(product), 0.0), -1.0, 1.0)
    covariance = sums.cross + candidate.keep(names) * (correlation * np.sqrt(var_a * var_b) - sums.cross)
    total = np.maximum(var_a + var_b - 2 * covariance, 0.0) / (sums.a.texts * sums.a.texts)
    shift = sums.a.rate - sums.b.rate - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(total > 0, shift / np.sqrt(total), np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
    return t, 2.0 * special.stdtr(sums.df, -np.abs(t))


def candidate_tests(t_a: np.ndarray, t_b: np.ndarray, n: np.ndarray, strata: np.ndarray | None, candidate: str,
                    alpha: float = 0.05) -> tuple[np.ndarray, ...]:
    """`paired.paired_rate_tests` with the candidate's covariance: (estimate, low, high, t, p)."""
    t_a, t_b, n = (np.asarray(value, dtype=float) for value in (t_a, t_b, n))
    sums = paired.PairedSums.of(t_a, t_b, n, strata)
    names = effective_names(t_a, t_b, n, strata)
    chosen = CANDIDATES[candidate]
    column, names_column = sums.column(), names[:, None]
    estimate = sums.a.rate - sums.b.rate
    statistic, p_value = candidate_t(sums, names, chosen, 0.0)

    def p_of(delta: np.ndarray) -> np.ndarray:
        if delta.ndim == 2:
            return candidate_t(column, names_column, chosen, delta)[1]
        return candidate_t(sums, names, chosen, delta)[1]

    low, high, p_value = paired.inverted(p_of, estimate, p_value, alpha, bound=1.0)
    return estimate, low, high, statistic, p_value


# --------------------------------------------------------------------------- the two-run model's data


class Planted:
    """One design of `power_oracle_others.overall_rows`: its data sets' per-name sums (source A the raised model),
    the true difference and its sd, and each source's true per-name variance and mean."""

    def __init__(self, domain: str, group: str, rate: float, spread: str, replicates: int):
        design = load_design(domain)
        planted = np.ones(len(design.group), bool) if group == others.EVERY else (
            design.group == design.groups.index(group))
        self.setting = others.Setting(design, planted, rate, design.rho(spread), replicates, 0.05,
                                      others.family_of("overall", 36))
        self.texts, self.strata = design.texts, design.group
        self.shift, self.truth, self.sd = others._planted_shift(self.setting, np.full(len(self.texts),
                                                                                      1 / self.texts.sum()))
        rng = np.random.default_rng(others.seed_of("paired_floor", domain, group, rate, spread))
        q = others._model_rates(rng, self.setting, self.shift, 2)
        q[1] = np.where(planted, others.raised(q[1], self.shift), q[1])
        t = others._name_sums(rng, q, self.texts)
        self.t_a, self.t_b = t[1].T, t[0].T

    def source_truth(self, raised: bool) -> tuple[np.ndarray, np.ndarray]:
        """(each name's true variance of its summed labels, its true mean rate) in one source."""
        rng = np.random.default_rng(5)
        setting, n = self.setting, self.texts
        variance, mean = np.zeros(len(n)), np.zeros(len(n))
        for rho in np.unique(setting.rho):
            q = others.model_rates(rng, others._beta(rng, setting.rate, rho, (others.MOMENT_DRAWS,)), 1)[0]
            for planted in (False, True):
                values = others.raised(q, self.shift) if planted and raised else q
                at = (setting.rho == rho) & (setting.planted == planted)
                variance[at] = n[at] * values.mean() * (1 - values.mean()) + n[at] * (n[at] - 1) * values.var()
                mean[at] = values.mean()
        return variance, mean


def decompose(args: argparse.Namespace) -> None:
    print("\n| planted | rate | spread | variance at the true difference | 95% interval covers | E[V] / true "
          "variance | median SE / true sd |")
    print("|---|---|---|---|---|---|---|")
    for domain, group in RARE_PLANTS:
        for spread in SPREAD_NAMES:
            data = Planted(domain, group, args.rate, spread, args.replicates)
            sums = paired.PairedSums.of(data.t_a, data.t_b, data.texts, data.strata)
            texts, reps = sums.a.texts[0], len(sums.df)
            estimate = sums.a.rate - sums.b.rate
            rate_a, rate_b = restricted_rates(sums.a, sums.b, np.full(reps, data.truth))
            (var_a, mean_a), (var_b, mean_b) = data.source_truth(True), data.source_truth(False)
            pairs = float((data.texts * (data.texts - 1)).sum())
            true_rho = [(v.sum() / (p * (1 - p)) - texts) / pairs
                        for v, p in ((var_a, (mean_a * data.texts).sum() / texts),
                                     (var_b, (mean_b * data.texts).sum() / texts))]

            def floor(side: object, rate: np.ndarray, rho: object) -> np.ndarray:
                return np.clip(rate * (1 - rate), 0, None) * (side.texts + rho * side.pairs)  # type: ignore[attr-defined]

            s_a, s_b, cross = sums.squares_a, sums.squares_b, sums.cross
            floored_a = np.maximum(s_a, paired.binomial_floor(sums.a, rate_a))
            floored_b = np.maximum(s_b, paired.binomial_floor(sums.b, rate_b))
            parts = {
                "the report's": floored_a + floored_b - 2 * paired.paired_covariance(sums, floored_a, floored_b),
                "the floors less the cross-product": floored_a + floored_b - 2 * cross,
                "no floor": s_a + s_b - 2 * cross,
                "floors at the true variances": np.maximum(s_a, var_a.sum()) + np.maximum(s_b, var_b.sum())
                - 2 * cross,
                "floors' correlation at its true value": np.maximum(s_a, floor(sums.a, rate_a, true_rho[0]))
                + np.maximum(s_b, floor(sums.b, rate_b, true_rho[1])) - 2 * cross,
                "floors' correlation 0": np.maximum(s_a, floor(sums.a, rate_a, 0.0))
                + np.maximum(s_b, floor(sums.b, rate_b, 0.0)) - 2 * cross,
                "floors alone": paired.binomial_floor(sums.a, rate_a) + paired.binomial_floor(sums.b, rate_b)
                - 2 * cross}
            critical = special.stdtrit(sums.df, 0.975)
            true_variance = (data.sd * texts) ** 2
            for name, variance in parts.items():
                se = np.sqrt(np.maximum(variance, 0.0)) / texts
                covers = np.mean(np.abs(estimate - data.truth) <= critical * se)
                print(f"| {group} | {args.rate} | {spread} | {name} | {covers:.1%} | "
                      f"{np.mean(variance) / true_variance:.2f} | {np.median(se) / data.sd:.2f} |", flush=True)


def candidates(args: argparse.Namespace) -> None:
    names = args.candidates.split(";")
    print("\n| planted | rate | spread | oracle | " + " | ".join(f"{name}: found (ratio), covers" for name in names)
          + " |")
    print("|---|---|---|---|" + "---|" * len(names))
    for domain, group in RARE_PLANTS:
        for spread in SPREAD_NAMES:
            data = Planted(domain, group, args.rate, spread, args.replicates)
            level = 0.05 / data.setting.family
            cells, oracle = [], 0.0
            for name in names:
                estimate, low, high, _, p_value = candidate_tests(data.t_a, data.t_b, data.texts, data.strata, name)
                oracle = float(np.mean(np.abs(estimate) / data.sd >= data.setting.critical))
                found = float(np.mean(p_value <= level))
                covers = float(np.mean((low <= data.truth) & (data.truth <= high)))
                cells.append(f"{found:.1%} ({found / oracle:.2f}), {covers:.1%}")
            print(f"| {group} | {args.rate} | {spread} | {oracle:.1%} | " + " | ".join(cells) + " |", flush=True)


def null_sums(rng: np.random.Generator, null: str, rate: float, names: int,
              replicates: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_a, t_b: names x data sets, the names' prompts) of one batch of a null design (`NULLS`)."""
    shared, total_a, total_b, own = NULLS[null]
    prompts = 1 + np.minimum(rng.geometric(0.3, names) - 1, 59)

    def beta(total: float) -> np.ndarray:
        return rng.beta(rate * total, (1 - rate) * total, (names, replicates))

    if shared:
        person = np.clip(beta(total_a), 1e-9, 1 - 1e-9)
        q_a, q_b = (special.expit(special.logit(person) + rng.normal(0.0, own, person.shape)) if own else person
                    for _ in range(2))
    else:
        q_a, q_b = beta(total_a), beta(total_b)
    t_a, t_b = (rng.binomial(prompts[:, None], q).astype(float) for q in (q_a, q_b))
    return t_a, t_b, prompts.astype(float)


def level(args: argparse.Namespace) -> None:
    names_list = [int(value) for value in args.names.split(",")]
    batches = max(args.replicates // args.batch, 1)
    print(f"\n{batches * args.batch} data sets a row (batches of {args.batch}, each with its own prompts per name)")
    chosen = args.candidates.split(";")
    print("\n| null | rate | names | " + " | ".join(f"{name}: at 5%, at 0.1%" for name in chosen) + " |")
    print("|---|---|---|" + "---|" * len(chosen))
    for null in args.nulls.split(";"):
        for rate in (0.03, 0.3):
            for names in names_list:
                counts = {name: np.zeros(3) for name in chosen}
                for batch in range(batches):
                    rng = np.random.default_rng(others.seed_of("paired_floor level", null, rate, names, batch))
                    t_a, t_b, prompts = null_sums(rng, null, rate, names, args.batch)
                    differ = (t_a != t_b).any(axis=0)  # the rest have nothing to test (`compare.paired_difference`)
                    for name in chosen:
                        p_value = candidate_tests(t_a[:, differ], t_b[:, differ], prompts, strata_of(names), name)[4]
                        counts[name] += [(p_value <= 0.05).sum(), (p_value <= 0.001).sum(), args.batch]
                cells = []
                for name in chosen:
                    at_5, at_01, total = counts[name]
                    cells.append(f"{at_5 / total:.2%} ± {_se(at_5 / total, total):.2%}, "
                                 f"{at_01 / total:.3%} ± {_se(at_01 / total, total):.3%}")
                print(f"| {null} | {rate} | {names} | " + " | ".join(cells) + " |", flush=True)


def _se(share: float, total: float) -> float:
    """Binomial standard error, with at least one event's worth where none was seen."""
    return float(np.sqrt(max(share, 1.0 / total) * (1 - share) / total))


SECTIONS = {"decompose": decompose, "candidates": candidates, "level": level}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default="decompose,candidates,level",
                        help=f"comma list of {', '.join(SECTIONS)}")
    parser.add_argument("--replicates", type=int, default=400, help="data sets a row")
    parser.add_argument("--rate", type=float, default=0.03, help="decompose, candidates: the label's rate")
    parser.add_argument("--names", default="2,3,5,10,30,100,300", help="level: names a domain")
    parser.add_argument("--nulls", default=";".join(NULLS), help=f"level: ';' list of {'; '.join(NULLS)}")
    parser.add_argument("--batch", type=int, default=2000, help="level: data sets that share their prompts")
    parser.add_argument("--candidates", default="cross-product;correlation on the floors;in use",
                        help=f"candidates, level: ';' list of {'; '.join(CANDIDATES)}")
    args = parser.parse_args()
    unknown = set(args.sections.split(",")) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown --sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    if set(args.nulls.split(";")) - set(NULLS):
        parser.error(f"unknown --nulls; choose from {'; '.join(NULLS)}")
    if set(args.candidates.split(";")) - set(CANDIDATES):
        parser.error(f"unknown --candidates; choose from {'; '.join(CANDIDATES)}")
    start = time.perf_counter()
    for section in args.sections.split(","):
        SECTIONS[section](args)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
