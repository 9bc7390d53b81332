"""Nulls where groups share a rate but not a spread, at BOLD's group sizes: the findings' test, and others beside it.

The studentized permutation test is exact for exchangeable names, but BOLD's small groups (1 to 22
pages in religion) may vary more from page to page than the rest of their domain. Here every name's rate has the
same mean (0.3, or 0.03 for a rare label); side A's names are drawn from a widely spread Beta and side B's (60
names) from a tight one, or both alike (exchangeable). Names have 1 + Geometric(0.3) texts (mean 3.3, a long
tail). Printed per design: the share of data sets the findings' test (`analysis.rate_test`) rejects
at 5% and at 0.1% (where Holm's thresholds sit), the share the design cannot test (too few names: counted as
not rejected), and the permutation test's rate at 5%, with Monte Carlo standard errors; then the coverage
of the score test's 95% interval at a planted difference, and the power of both tests for planted differences
where names are plentiful. Three more tables (`--sections real,paired-worst,rate-coverage`): group-vs-rest
tests on BOLD's own designs (profession, religion, politics: their names per group and texts per name) with rare
and common labels and unlike within-name correlations; the tests without the binomial floor (model-vs-Wikipedia
interactions and continuous worst cases) under unlike-spread nulls; and the coverage of the name-level interval
of one group's rate by number of names. `--sections real-interaction`: the interactions of two runs on BOLD's own
designs, every group against the rest, where no gap differs. `--interaction-method` runs every section with one of
the candidate degrees of freedom or variances for the tests without the floor (`interaction_df.py`), `--floor-df` with
one of the candidate degrees of freedom of the group-vs-rest test where its floor binds (`floor_df.py`).

    .venv/bin/python benchmarks/calibration_unlike.py            # about an hour on 2 cores
    .venv/bin/python benchmarks/calibration_unlike.py --fast     # about 12 minutes
    .venv/bin/python benchmarks/calibration_unlike.py --fast --sections real,rate-coverage
    .venv/bin/python benchmarks/calibration_unlike.py --fast --sections real-interaction --interaction-method bm
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

SPREADS = {  # (side A's Beta, side B's Beta) at mean 0.3; the rare label scales the first parameter
    "strong": ((0.3, 0.7), (30.0, 70.0)),
    "moderate": ((1.0, 2.33), (6.0, 14.0)),
    "exchangeable": ((1.0, 2.33), (1.0, 2.33)),
}


def seed_of(*parts: object) -> int:
    """A seed from a design's parameters that is the same in every process (`hash` of a string is not)."""
    return zlib.crc32(repr(parts).encode())


def draw(rng: np.random.Generator, names: int, beta: tuple[float, float], rate: float, shift: float = 0.0):
    """Per name: texts n and labelled texts t, the names' rates from a Beta with mean `rate` (+ `shift`)."""
    a, b = beta
    if rate != 0.3:  # the same spread (a + b) around another mean
        a, b = rate * (a + b), (1 - rate) * (a + b)
    rates = np.clip(rng.beta(a, b, names) + shift, 0.0, 1.0)
    n = 1 + np.minimum(rng.geometric(0.3, names) - 1, 59)
    return rng.binomial(n, rates).astype(float), n.astype(float)


def score_p(t_a, n_a, t_b, n_b) -> tuple[float, float]:
    """(p of the score test, smallest p its design can give)."""
    from bold_eval.analysis.rate_test import SideSums, min_attainable_p, score_t

    a, b = SideSums.of(t_a, n_a), SideSums.of(t_b, n_b)
    return float(score_t(a, b, 0.0)[2]), min_attainable_p(a.names, b.names, a.texts, b.texts)


def permutation_p(t_a, n_a, t_b, n_b, seed: int) -> float:
    """p of the studentized cluster permutation test (`baselines.cluster_difference_test`) on the same names."""
    from baselines import cluster_difference_test

    names = np.arange(len(t_a) + len(t_b))
    t, n = np.r_[t_a, t_b], np.r_[n_a, n_b]
    values = np.concatenate([np.r_[np.ones(int(h)), np.zeros(int(m - h))] for h, m in zip(t, n, strict=True)])
    return cluster_difference_test(values, np.repeat(names < len(t_a), n.astype(int)), np.repeat(names, n.astype(int)),
                                   method="permutation", seed=seed).p_value


def level_rows(args: argparse.Namespace) -> None:
    print("| rate | spread | names A / B | score: rejected at 5% | at 0.1% | untestable at 5% | permutation at 5% |")
    print("|---|---|---|---|---|---|---|")
    for rate in (0.3, 0.03):
        for spread, (beta_a, beta_b) in SPREADS.items():
            for names in args.names:
                rng = np.random.default_rng(seed_of(rate, spread, names))
                p_values, floors, old = [], [], []
                for replicate in range(args.replicates):
                    t_a, n_a = draw(rng, names, beta_a, rate)
                    t_b, n_b = draw(rng, 60, beta_b, rate)
                    if t_a.sum() + t_b.sum() in (0, n_a.sum() + n_b.sum()):
                        p_values.append(1.0), floors.append(1.0)
                        continue
                    p, floor = score_p(t_a, n_a, t_b, n_b)
                    p_values.append(p), floors.append(floor)
                    if replicate < args.old_replicates:
                        old.append(permutation_p(t_a, n_a, t_b, n_b, replicate))
                p_values, floors = np.array(p_values), np.array(floors)
                at_5 = np.mean((p_values <= 0.05) & (floors <= 0.05))
                at_01 = np.mean((p_values <= 0.001) & (floors <= 0.001))
                old_5 = np.nanmean(np.array(old) <= 0.05) if old else math.nan
                print(f"| {rate} | {spread} | {names} / 60 | {at_5:.2%} ± {_se(at_5, len(p_values)):.2%} | "
                      f"{at_01:.3%} ± {_se(at_01, len(p_values)):.3%} | {np.mean(floors > 0.05):.0%} | "
                      f"{old_5:.1%} ± {_se(old_5, len(old)):.1%} |", flush=True)


REAL_DOMAINS = ("profession", "religious_ideology", "political_ideology")


def real_design(domain: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """BOLD's own design for one domain: texts per name, each name's group index, and the group names."""
    from bold_eval.data.bold import load_bold

    frame = load_bold(domain).to_pandas()
    per_name = frame.groupby(["group", "name"]).size().reset_index(name="texts")
    groups = sorted(per_name["group"].unique())
    return (per_name["texts"].to_numpy(float), per_name["group"].map(groups.index).to_numpy(), groups)


def real_design_rows(args: argparse.Namespace) -> None:
    """Group-vs-rest tests on BOLD's real designs (names per group and texts per name as they are) where every
    name's rate has the same mean: rare labels (2%, 5%) and a common one (30%), names clustered with intra-class
    correlation rho, and the unlike case where the groups with at most 15 names have rho 0.8 against 0.05 for
    the rest. Pooled over the domain's groups: the share of tests rejected at 5% and at 0.1%, and the worst
    group's rate at 5%."""
    print("\n| domain | rate | rho (small groups / rest) | tests | rejected at 5% | at 0.1% | untestable at 5% | "
          "worst group at 5% |")
    print("|---|---|---|---|---|---|---|---|")
    for domain in REAL_DOMAINS:
        texts, group, names = real_design(domain)
        sizes = np.bincount(group)
        small = sizes[group] <= 15
        for rate in (0.02, 0.05, 0.3):
            for rho_small, rho_rest in ((0.05, 0.05), (0.3, 0.3), (0.8, 0.05)):
                rng = np.random.default_rng(seed_of(domain, rate, rho_small, rho_rest))
                rho = np.where(small, rho_small, rho_rest)
                scale = (1 - rho) / rho
                rejected = np.zeros((2, len(names)))
                untestable = np.zeros(len(names))
                for _ in range(args.real_replicates):
                    rates = rng.beta(rate * scale, (1 - rate) * scale)
                    hits = rng.binomial(texts.astype(int), rates).astype(float)
                    for g in range(len(names)):
                        in_a = group == g
                        p, floor = score_p(hits[in_a], texts[in_a], hits[~in_a], texts[~in_a])
                        untestable[g] += floor > 0.05
                        rejected[0, g] += (p <= 0.05) and (floor <= 0.05)
                        rejected[1, g] += (p <= 0.001) and (floor <= 0.001)
                total = args.real_replicates * len(names)
                at_5, at_01 = rejected[0].sum() / total, rejected[1].sum() / total
                worst = int(np.argmax(rejected[0]))
                worst_rate = rejected[0, worst] / args.real_replicates
                print(f"| {domain} | {rate} | {rho_small} / {rho_rest} | {total} | {at_5:.2%} ± {_se(at_5, total):.2%} "
                      f"| {at_01:.3%} ± {_se(at_01, total):.3%} | {untestable.sum() / total:.0%} | "
                      f"{worst_rate:.1%} ± {_se(worst_rate, args.real_replicates):.1%} ({names[worst]}, "
                      f"{sizes[worst]} names) |", flush=True)


def worst_real_rows(args: argparse.Namespace) -> None:
    """Group-vs-rest tests of the expected maximum over k = 5 samples on BOLD's real designs, every group null:
    `power_oracle_others`' worst-case model (each sample's toxicity expit(b + u_name + v_prompt + e), the names
    holding rho of the latent variance; b solved so that P(>= 1 toxic of 5) is the rate), names alike (rho 0.01) or
    the groups of at most 10 names strongly spread (rho 0.8) against 0.05 for the rest. Each group against the rest
    of its domain by `clustered.difference_tests` with the score's range (as `findings.group_findings` tests a
    continuous worst case); pooled over the domain's groups: the share rejected at 5% and at 0.1%, the untestable
    share, the worst group's rate at 5%, and the 95% intervals' coverage of the true difference, 0."""
    from power_oracle import SPREADS as ORACLE_SPREADS
    from power_oracle import Design
    from power_oracle_others import latent_sd, worst_base, worst_floor, worst_values

    from bold_eval.analysis.clustered import difference_tests

    print("\n| domain | P(>= 1 toxic of 5) | spread (rho small groups / rest) | tests | rejected at 5% | at 0.1% | "
          "untestable at 5% | worst group at 5% | 95% interval covers 0 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for domain in (args.worst_domains.split(",") if args.worst_domains else REAL_DOMAINS + ("race", "gender")):
        design = Design.load(domain)
        units = np.repeat(np.arange(len(design.texts)), design.texts.astype(int))
        sizes = np.bincount(design.group)
        groups = [g for g in range(len(design.groups)) if sizes[g] < len(design.group)]
        sides = [design.group[units] == g for g in groups]
        for rate in (0.3, 0.03):
            for spread in ("alike", "strong in small groups"):
                rng = np.random.default_rng(seed_of("worst-real", domain, rate, spread))
                rho = design.rho(spread)
                bases = {float(r): worst_base(rate, float(r)) for r in np.unique(rho)}
                base = np.array([bases[float(r)] for r in rho])
                sigma = np.array([latent_sd(float(r)) for r in rho])
                rejected, covered = np.zeros((2, len(groups))), np.zeros(len(groups))
                untestable = np.zeros(len(groups))
                for _ in range(args.real_replicates):
                    location = (base + rng.normal(0.0, sigma))[units] + rng.normal(0.0, 0.5, len(units))
                    highest = worst_values(location, rng)[1]
                    for k, level in enumerate((0.05, 0.001)):
                        with worst_floor(args.worst_floor):
                            tests = difference_tests([highest] * len(groups), sides, [units] * len(groups),
                                                     alpha=level, bounds=[(0.0, 1.0)] * len(groups))
                        rejected[k] += [test.testable and test.p_value <= level for test in tests]
                        if k == 0:
                            untestable += [not test.testable for test in tests]
                            covered += [test.testable and test.ci_low <= 0 <= test.ci_high for test in tests]
                total = args.real_replicates * len(groups)
                at_5, at_01 = rejected[0].sum() / total, rejected[1].sum() / total
                worst = int(np.argmax(rejected[0]))
                worst_rate = rejected[0, worst] / args.real_replicates
                testable = total - untestable.sum()
                cover = covered.sum() / testable if testable else math.nan
                small, rest = ORACLE_SPREADS[spread]
                print(f"| {domain} | {rate} | {spread} ({small} / {rest}) | {total} | {at_5:.2%} ± "
                      f"{_se(at_5, total):.2%} | {at_01:.3%} ± {_se(at_01, total):.3%} | "
                      f"{untestable.sum() / total:.0%} | {worst_rate:.1%} ± "
                      f"{_se(worst_rate, args.real_replicates):.1%} "
                      f"({design.groups[groups[worst]]}, {sizes[groups[worst]]} names) | {cover:.1%} |", flush=True)


def real_interaction_rows(args: argparse.Namespace) -> None:
    """Interactions of two runs on BOLD's real designs (profession, religion, politics: their names per group and
    prompts per name) where no group's gap differs between the runs: per name a rate p_i from a Beta with mean
    `rate` and intra-class correlation rho (0.8 in the groups of at most 10 names and 0.05 in the rest, or 0.01
    everywhere), each run's own view of the name q = expit(logit p_i + u), u ~ N(0, own spread) per run and name
    (`power_oracle_others.py`'s compare model; the larger spread makes the names' mean differences vary more), one
    text per prompt and run. Every group against the rest of its domain, as the report and compare test it (the
    per-prompt differences mapped onto [0, 1] by their range, (d + 1) / 2, `rate_test.rate_tests` without the
    floor). Pooled over the domain's groups: the share rejected at 5% and at 0.1%, and the worst group at 5% and
    at 0.1% (its name, pages and prompts)."""

    from bold_eval.analysis.rate_test import rate_tests

    print("\n| domain | rate | rho (small groups / rest) | own spread | tests | rejected at 5% | at 0.1% | "
          "worst group at 5% | worst group at 0.1% |")
    print("|---|---|---|---|---|---|---|---|---|")
    for domain in REAL_DOMAINS:
        texts, group, names = real_design(domain)
        sizes = np.bincount(group)
        small = sizes[group] <= 10
        for rate in (0.3, 0.03):
            for rho_small, rho_rest in ((0.01, 0.01), (0.8, 0.05)):
                for own in (0.5, 1.0):
                    sums, squares = [], []
                    for summed, squared in real_interaction_draws(texts, small, domain, rate, rho_small, rho_rest,
                                                                  own, args.real_interaction_replicates):
                        sums += [summed] * len(names)
                        squares += [squared] * len(names)
                    sides = [group == g for g in range(len(names))] * args.real_interaction_replicates
                    rejected = np.zeros((2, len(names)))
                    for k, alpha in enumerate((0.05, 0.001)):
                        tests = rate_tests(sums, [texts] * len(sums), sides, alpha=alpha, floor=[False] * len(sums),
                                           squares=squares)
                        found = np.array([test.testable and test.p_value <= alpha for test in tests])
                        rejected[k] = found.reshape(-1, len(names)).sum(axis=0)
                    total = args.real_interaction_replicates * len(names)
                    at_5, at_01 = rejected[0].sum() / total, rejected[1].sum() / total
                    cells = []
                    for k in (0, 1):
                        worst = int(np.argmax(rejected[k]))
                        share = rejected[k, worst] / args.real_interaction_replicates
                        cells.append(f"{share:.2%} ± {_se(share, args.real_interaction_replicates):.2%} "
                                     f"({names[worst]}, {sizes[worst]} names, {int(texts[group == worst].sum())})")
                    print(f"| {domain} | {rate} | {rho_small} / {rho_rest} | {own} | {total} | {at_5:.2%} ± "
                          f"{_se(at_5, total):.2%} | {at_01:.3%} ± {_se(at_01, total):.3%} | {cells[0]} | "
                          f"{cells[1]} |", flush=True)


def real_interaction_draws(texts: np.ndarray, small: np.ndarray, domain: str, rate: float, rho_small: float,
                           rho_rest: float, own: float, replicates: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Null data sets of two runs on BOLD's real names (`real_interaction_rows`): each name's common rate from a
    Beta with the names' intra-class correlation (rho_small in groups of at most 10 names, `small`), each run's
    own logit noise `own`, and per data set each name's summed per-text differences mapped onto [0, 1] and their
    squares. Seeded by the setting, so every script that draws a setting draws the same data sets."""
    from scipy import special

    rng = np.random.default_rng(seed_of("real-interaction", domain, rate, rho_small, own))
    rho = np.where(small, rho_small, rho_rest)
    scale = (1 - rho) / rho
    for _ in range(replicates):
        logit = special.logit(np.clip(rng.beta(rate * scale, (1 - rate) * scale), 1e-9, 1 - 1e-9))
        q_a, q_b = special.expit(logit + rng.normal(0.0, own, (2, len(texts))))
        up, down = q_b * (1 - q_a), q_a * (1 - q_b)
        counts = rng.multinomial(texts.astype(int), np.stack([up, down, 1 - up - down], axis=1))
        yield counts[:, 0] + 0.5 * counts[:, 2], counts[:, 0] + 0.25 * counts[:, 2]


def _beta(rng: np.random.Generator, mean: float, total: float, size: int) -> np.ndarray:
    return rng.beta(mean * total, (1 - mean) * total, size)


def interaction_data(rng: np.random.Generator, names_a: int, spread: str, rate: float,
                     shift: float = 0.0) -> tuple[np.ndarray, ...]:
    """One null data set of model-vs-Wikipedia interactions: per prompt d = model label - reference label (one
    sample each), names with 1 + Geometric(0.3) prompts. Reference rates Beta(rate, a + b = 20) on both sides;
    the model's rates have the same mean on both sides, spread widely on side A (a + b = 1) and tightly on side B
    (a + b = 100) when `spread` is "strong", alike (a + b = 3.33) when "exchangeable". E[d] = 0 on both sides:
    the gap does not change, whatever the spreads. `shift` raises side A's model rates (kept in [0, 1]): a
    planted interaction."""
    totals = {"strong": (1.0, 100.0), "exchangeable": (3.33, 3.33)}[spread]
    names = np.r_[np.zeros(names_a, bool), np.ones(60, bool)]
    prompts = 1 + np.minimum(rng.geometric(0.3, len(names)) - 1, 59)
    model = np.r_[np.clip(_beta(rng, rate, totals[0], names_a) + shift, 0.0, 1.0), _beta(rng, rate, totals[1], 60)]
    reference = _beta(rng, rate, 20.0, len(names))
    unit = np.repeat(np.arange(len(names)), prompts)
    d = (rng.random(len(unit)) < model[unit]).astype(float) - (rng.random(len(unit)) < reference[unit])
    return d, ~names[unit], unit


def worst_case_data(rng: np.random.Generator, names_a: int, spread: str, rate: float) -> tuple[np.ndarray, ...]:
    """One null data set of a continuous worst case per prompt (e.g. the expected maximum toxicity over k
    samples): per prompt a value in [0, 1] from Beta(mu_i, a + b = 20) around its name's mean mu_i, which has
    the same mean `rate` on both sides but a wide spread on side A when `spread` is "strong"."""
    totals = {"strong": (1.0, 100.0), "exchangeable": (3.33, 3.33)}[spread]
    names = np.r_[np.zeros(names_a, bool), np.ones(60, bool)]
    prompts = 1 + np.minimum(rng.geometric(0.3, len(names)) - 1, 59)
    means = np.clip(np.r_[_beta(rng, rate, totals[0], names_a), _beta(rng, rate, totals[1], 60)], 1e-3, 1 - 1e-3)
    unit = np.repeat(np.arange(len(names)), prompts)
    return rng.beta(means[unit] * 20, (1 - means[unit]) * 20), ~names[unit], unit


def paired_and_worst_rows(args: argparse.Namespace) -> None:
    """Tests of values that are not 0/1: the model-vs-Wikipedia interactions (per-prompt differences, no floor),
    a continuous worst case in [0, 1] (a toxicity) and the same on [-1, 1] (a compound score, mapped onto [0, 1]
    by its range as the report does; both get the binomial floor), under nulls with unlike spreads, at 5% and 0.1%,
    through the report's own `clustered.difference_tests` (every data set of a design in one batch)."""
    from power_oracle_others import worst_floor

    from bold_eval.analysis.clustered import difference_tests

    print("\n| test | rate | spread | names A / B | rejected at 5% | at 0.1% | untestable at 5% |")
    print("|---|---|---|---|---|---|---|")
    def compound_data(rng: np.random.Generator, names_a: int, spread: str, rate: float) -> tuple[np.ndarray, ...]:
        values, side, unit = worst_case_data(rng, names_a, spread, rate)
        return 2 * values - 1, side, unit  # a score on [-1, 1], as VADER's compound

    def worst_interaction_data(rng: np.random.Generator, names_a: int, spread: str,
                               rate: float) -> tuple[np.ndarray, ...]:
        """compare's interaction of two runs' worst cases: per prompt the run's worst case and the baseline's,
        both continuous in [0, 1]; the run's names spread as `spread` says, the baseline's alike (a + b = 20)."""
        run, side, unit = worst_case_data(rng, names_a, spread, rate)
        means = np.clip(_beta(rng, rate, 20.0, int(unit.max()) + 1), 1e-3, 1 - 1e-3)
        baseline = rng.beta(means[unit] * 20, (1 - means[unit]) * 20)
        return run - baseline, side, unit, run, baseline

    def compare_worst_tests(sets: list[tuple[np.ndarray, ...]], alpha: float) -> list[tuple[bool, float]]:
        """(testable, p) per data set through compare's own test of continuous worst cases."""
        from bold_eval.analysis.paired_rate_test import continuous_interaction_tests

        p_values = continuous_interaction_tests([(run, base, unit, side) for _, side, unit, run, base in sets],
                                                alpha=alpha)[4]
        return [(True, float(p)) for p in p_values]

    kinds = (("interaction", interaction_data, None), ("worst case in [0, 1]", worst_case_data, (0.0, 1.0)),
             ("worst case in [-1, 1]", compound_data, (-1.0, 1.0)),  # the compound's range, as the report maps it
             ("worst-case interaction (compare, before: differences alone)", worst_interaction_data, None),
             ("worst-case interaction (compare)", worst_interaction_data, "continuous"))
    for kind, make, bounds in kinds:
        if args.paired_kinds and kind not in re.split(r",(?! )", args.paired_kinds):  # "[0, 1]" holds a comma
            continue
        rates = {"interaction": (0.3, 0.03), "worst-case interaction (compare)": (0.2, 0.03),
                 "worst case in [0, 1]": (0.2, 0.03), "worst case in [-1, 1]": (0.2, 0.03)}.get(kind, (0.2,))
        if args.paired_rates:
            rates = tuple(float(rate) for rate in args.paired_rates.split(","))
        for rate in rates:
            for spread in args.paired_spreads.split(","):
                for names in args.paired_names:
                    rng = np.random.default_rng(seed_of(kind, rate, spread, names))
                    sets = [make(rng, names, spread, rate) for _ in range(args.paired_replicates)]
                    total = len(sets)
                    if bounds == "continuous":
                        at_5, at_01 = compare_worst_tests(sets, 0.05), compare_worst_tests(sets, 0.001)
                    else:
                        ranges = [bounds] * len(sets)
                        triples = [case[:3] for case in sets]
                        with worst_floor(args.worst_floor):
                            at_5 = [(test.testable, test.p_value) for test in
                                    difference_tests(*zip(*triples, strict=True), alpha=0.05, bounds=ranges)]
                            at_01 = [(test.testable, test.p_value) for test in
                                     difference_tests(*zip(*triples, strict=True), alpha=0.001, bounds=ranges)]
                    rejected_5 = np.mean([testable and p <= 0.05 for testable, p in at_5])
                    rejected_01 = np.mean([testable and p <= 0.001 for testable, p in at_01])
                    untestable = np.mean([not testable for testable, _ in at_5])
                    print(f"| {kind} | {rate} | {spread} | {names} / 60 | {rejected_5:.2%} ± "
                          f"{_se(rejected_5, total):.2%} | {rejected_01:.3%} ± {_se(rejected_01, total):.3%} | "
                          f"{untestable:.0%} |", flush=True)


def compare_worst_power_rows(args: argparse.Namespace) -> None:
    """Power of compare's test of two runs' continuous worst cases (`continuous_interaction_tests`) against the test
    of their differences alone (`difference_tests`, before), for a planted +0.1 in the run's worst cases on side A."""
    from bold_eval.analysis.clustered import difference_tests
    from bold_eval.analysis.paired_rate_test import continuous_interaction_tests

    print("\n| planted | spread | names A / B | compare's test: found at 5% | differences alone (before) |")
    print("|---|---|---|---|---|")
    for spread in ("strong", "exchangeable"):
        for names in (30, 100):
            rng = np.random.default_rng(seed_of("worst-power", spread, names))
            sets = []
            for _ in range(args.power_replicates):
                run, side, unit = worst_case_data(rng, names, spread, 0.2)
                run = np.where(side, np.clip(run + 0.1, 0.0, 1.0), run)
                means = np.clip(_beta(rng, 0.2, 20.0, int(unit.max()) + 1), 1e-3, 1 - 1e-3)
                sets.append((run, rng.beta(means[unit] * 20, (1 - means[unit]) * 20), unit, side))
            new = continuous_interaction_tests(sets, alpha=0.05)[4]
            old = difference_tests([x - y for x, y, _, _ in sets], [side for *_, side in sets],
                                   [unit for _, _, unit, _ in sets], alpha=0.05)
            found_old = np.mean([test.testable and test.p_value <= 0.05 for test in old])
            print(f"| +0.1 | {spread} | {names} / 60 | {np.mean(new <= 0.05):.0%} | {found_old:.0%} |", flush=True)


@contextlib.contextmanager
def without_cr2():
    """The tests with the plain null-imposed sum of squares (no CR2 adjustment, the variance about the rates the
    hypothesis imposes), for the comparison tables; the product's code is untouched outside the block."""
    from bold_eval.analysis import rate_test

    today = rate_test.side_variance

    def plain(side, rate, floor=True):
        squares = rate_test.null_squares(side.tt, side.tn, side.nn, rate)
        binomial = np.clip(rate * (1 - rate), 0.0, None) * (side.texts + side.correlation * side.pairs)
        floored = rate_test.floor_kinds(floor) != rate_test.NO_FLOOR
        return np.maximum(squares, np.where(floored, binomial, 0.0)) / (side.texts * side.texts)

    rate_test.side_variance = plain
    try:
        yield
    finally:
        rate_test.side_variance = today


def interaction_power_rows(args: argparse.Namespace) -> None:
    """Power of the model-vs-Wikipedia interaction test for a planted interaction (side A's model rates raised by
    `shift`, kept in [0, 1]), the findings' test against the plain null-imposed sum of squares, at 5%, through the
    report's `difference_tests`; names spread strongly or alike, 60 names on side B."""
    from bold_eval.analysis.clustered import difference_tests

    print("\n| rate | planted interaction | spread | names A / B | data sets | power, CR2 (today) | power, plain sum |")
    print("|---|---|---|---|---|---|---|")
    for rate, shift in ((0.3, 0.1), (0.03, 0.05)):
        for spread in ("strong", "exchangeable"):
            for names in (10, 30, 100):
                rng = np.random.default_rng(seed_of("interaction-power", rate, shift, spread, names))
                sets = [interaction_data(rng, names, spread, rate, shift) for _ in range(args.power_replicates)]

                today = _power(difference_tests(*zip(*sets, strict=True), alpha=0.05))
                with without_cr2():
                    before = _power(difference_tests(*zip(*sets, strict=True), alpha=0.05))
                print(f"| {rate} | +{shift} | {spread} | {names} / 60 | {len(sets)} | {today:.1%} ± "
                      f"{_se(today, len(sets)):.1%} | {before:.1%} ± {_se(before, len(sets)):.1%} |", flush=True)


def _power(tests: list) -> float:
    return float(np.mean([test.testable and test.p_value <= 0.05 for test in tests]))


def interaction_coverage_rows(args: argparse.Namespace) -> None:
    """Coverage of the interaction intervals at a planted interaction: the model-vs-Wikipedia interaction of a
    label (side A's model rates raised by 0.1, kept in [0, 1]; the report's and compare's `difference_tests`) and
    compare's interaction of two runs' continuous worst cases (side A's run means raised by 0.1;
    `continuous_interaction_tests`), by number of names on side A (60 on side B), names spread strongly or alike.
    The true interaction is computed from the spreads (the clipping at 1 moves it a little below 0.1)."""
    from bold_eval.analysis.clustered import difference_tests
    from bold_eval.analysis.paired_rate_test import continuous_interaction_tests

    draws = np.random.default_rng(0)
    print("\n| interaction | spread | names A / B | true interaction | 95% interval covers | mean width |")
    print("|---|---|---|---|---|---|")
    for spread in ("strong", "exchangeable"):
        total = {"strong": 1.0, "exchangeable": 3.33}[spread]
        label_truth = float(np.clip(_beta(draws, 0.3, total, 400_000) + 0.1, 0, 1).mean()) - 0.3
        base = np.clip(_beta(draws, 0.2, total, 400_000), 1e-3, 1 - 1e-3)
        worst_truth = float(np.clip(base + 0.1, 1e-3, 1 - 1e-3).mean() - base.mean())
        for names in (10, 30, 100):
            rng = np.random.default_rng(seed_of("interaction-coverage", spread, names))
            sets = [interaction_data(rng, names, spread, 0.3, 0.1) for _ in range(args.coverage_replicates // 5)]
            tests = difference_tests(*zip(*sets, strict=True), alpha=0.05)
            covered = [test.ci_low <= label_truth <= test.ci_high for test in tests if test.testable]
            widths = [test.ci_high - test.ci_low for test in tests if test.testable]
            print(f"| label (0.3) | {spread} | {names} / 60 | {label_truth:+.3f} | {np.mean(covered):.1%} ± "
                  f"{_se(float(np.mean(covered)), len(covered)):.1%} | {np.mean(widths):.3f} |", flush=True)
            worst = []
            for _ in range(args.coverage_replicates // 5):
                run, side, unit = worst_case_data(rng, names, spread, 0.2)
                run = np.where(side, np.clip(run + 0.1, 0.0, 1.0), run)
                means = np.clip(_beta(rng, 0.2, 20.0, int(unit.max()) + 1), 1e-3, 1 - 1e-3)
                worst.append((run, rng.beta(means[unit] * 20, (1 - means[unit]) * 20), unit, side))
            _, low, high, _, _ = continuous_interaction_tests(worst, alpha=0.05)
            share = float(np.mean((low <= worst_truth) & (worst_truth <= high)))
            print(f"| worst case (compare) | {spread} | {names} / 60 | {worst_truth:+.3f} | {share:.1%} ± "
                  f"{_se(share, len(worst)):.1%} | {np.mean(high - low):.3f} |", flush=True)


def rate_coverage_rows(args: argparse.Namespace) -> None:
    """Coverage of the name-level 95% interval of one group's rate (`rate_test.rate_interval`, the findings'
    rate cells) by number of names, for names alike (ICC 0.05), moderately (0.3) and widely spread (0.8), at a
    common and a rare rate, with its mean width."""
    from bold_eval.analysis.rate_test import rate_interval

    print("\n| rate | rho | names | 95% rate interval covers | mean width |")
    print("|---|---|---|---|---|")
    for rate in (0.3, 0.03):
        for rho in (0.05, 0.3, 0.8):
            scale = (1 - rho) / rho
            for names in (2, 3, 5, 10, 30, 100):
                rng = np.random.default_rng(seed_of(rate, rho, names))
                covered, width = 0, 0.0
                for _ in range(args.coverage_replicates):
                    n = 1 + np.minimum(rng.geometric(0.3, names) - 1, 59)
                    t = rng.binomial(n, rng.beta(rate * scale, (1 - rate) * scale, names)).astype(float)
                    low, high, _ = rate_interval(t, n.astype(float), alpha=0.05)
                    covered += low <= rate <= high
                    width += high - low
                share = covered / args.coverage_replicates
                print(f"| {rate} | {rho} | {names} | {share:.1%} ± {_se(share, args.coverage_replicates):.1%} | "
                      f"{width / args.coverage_replicates:.3f} |", flush=True)


def worst_coverage_rows(args: argparse.Namespace) -> None:
    """Coverage of a group's interval for a continuous worst case (a mean score in [0, 1], the worst-case table's
    interval: `rate_test.rate_interval` on the scores with the score's floor, as `worst_case.worst_case_view` calls
    it) by number of names: per prompt a Beta(mu_i, a + b = 20) around its name's mean, the names' means Beta with
    mean 0.2 and a + b = 1 (widely spread), 3.33 or 20."""
    from power_oracle_others import worst_floor

    from bold_eval.analysis import rate_test
    from bold_eval.analysis.rate_test import rate_interval

    floor = {"binomial": rate_test.BINOMIAL, "none": rate_test.NO_FLOOR}.get(args.worst_floor, rate_test.SCORE)

    print("\n| name spread (a + b) | names | 95% interval covers | mean width |")
    print("|---|---|---|---|")
    for total in (1.0, 3.33, 20.0):
        for names in (2, 3, 5, 10, 30, 100):
            rng = np.random.default_rng(seed_of(total, names))
            covered, width = 0, 0.0
            for _ in range(args.coverage_replicates):
                prompts = 1 + np.minimum(rng.geometric(0.3, names) - 1, 59)
                means = np.clip(_beta(rng, 0.2, total, names), 1e-3, 1 - 1e-3)
                unit = np.repeat(np.arange(names), prompts)
                values = rng.beta(means[unit] * 20, (1 - means[unit]) * 20)
                sums, squares = np.bincount(unit, weights=values), np.bincount(unit, weights=values * values)
                with worst_floor(args.worst_floor):
                    low, high, _ = rate_interval(sums, np.bincount(unit).astype(float), alpha=0.05, floor=floor,
                                                 squares=squares)
                covered += low <= 0.2 <= high
                width += high - low
            share = covered / args.coverage_replicates
            print(f"| {total} | {names} | {share:.1%} ± {_se(share, args.coverage_replicates):.1%} | "
                  f"{width / args.coverage_replicates:.3f} |", flush=True)


def overall_rows(args: argparse.Namespace) -> None:
    """compare's overall difference of two runs (`compare.paired_difference` with the runs' rates: the paired
    score-type test over names and the interval that inverts it; `--overall-method sign-flip`: the sign-flip test
    over names, `baselines.sign_flip_difference`): per prompt d = run's label - baseline's, names with
    1 + Geometric(0.3) prompts, each name's rates in the two runs drawn independently (Beta with the run's mean and
    a + b shown), so names differ in their own mean difference and in its spread even under the null of equal mean
    rates; the run's names spread "strongly" (a + b = 1) against a tight baseline (20), or alike (3.33 each).
    The names' groups are the test's strata (`strata_of`: one group of a single name, the rest in three).
    Printed: the share of data sets rejected at 5% and at 0.1% under the null (equal rates), and the coverage of the
    95% interval of the true mean difference under the null and at a planted +0.1."""
    from baselines import sign_flip_difference

    from bold_eval.analysis.compare import paired_difference
    from bold_eval.analysis.results import PairedDifference

    def test(d: np.ndarray, unit: np.ndarray, x: np.ndarray, y: np.ndarray, alpha: float,
             seed: int) -> PairedDifference:
        if args.overall_method == "sign-flip":
            return sign_flip_difference(d, unit, alpha=alpha, seed=seed)
        return paired_difference(d, unit, alpha=alpha, rates=(x, y), groups=strata_of(int(unit.max()) + 1)[unit])

    print(f"\noverall differences by the {args.overall_method} test")

    print("\n| baseline rate | run rate | spread (run / baseline) | names | rejected at 5% | at 0.1% | "
          "95% interval covers | untestable |")
    print("|---|---|---|---|---|---|---|---|")
    designs = [(0.3, 0.3), (0.03, 0.03), (0.3, 0.4)]
    for base, run in designs:
        for spread, (total_run, total_base) in (("strong", (1.0, 20.0)), ("exchangeable", (3.33, 3.33))):
            for names in (2, 3, 5, 10, 30, 100):
                rng = np.random.default_rng(seed_of(base, run, spread, names))
                rejected_5 = rejected_01 = covered = untestable = 0
                for replicate in range(args.overall_replicates):
                    prompts = 1 + np.minimum(rng.geometric(0.3, names) - 1, 59)
                    unit = np.repeat(np.arange(names), prompts)
                    rate_run, rate_base = _beta(rng, run, total_run, names), _beta(rng, base, total_base, names)
                    x = (rng.random(len(unit)) < rate_run[unit]).astype(float)
                    y = (rng.random(len(unit)) < rate_base[unit]).astype(float)
                    d = x - y
                    result = test(d, unit, x, y, 0.05, replicate)
                    untestable += not result.testable
                    covered += result.ci_low <= run - base <= result.ci_high
                    if result.testable and result.p_value <= 0.05:
                        rejected_5 += 1
                        rejected_01 += test(d, unit, x, y, 0.001, replicate).p_value <= 0.001
                total = args.overall_replicates
                cells = [rejected_5 / total, rejected_01 / total, covered / total]
                level = "" if run == base else " (power)"
                print(f"| {base} | {run} | {spread} | {names} | {cells[0]:.2%} ± {_se(cells[0], total):.2%}{level} | "
                      f"{cells[1]:.3%} ± {_se(cells[1], total):.3%}{level} | {cells[2]:.1%} ± "
                      f"{_se(cells[2], total):.1%} | {untestable / total:.0%} |", flush=True)


def strata_of(names: int) -> np.ndarray:
    """The names' groups in the overall section: name 0 alone (a group of one name, as BOLD has), the others split
    into three groups of about equal size (fewer with fewer names)."""
    rest = np.arange(names - 1)
    return np.r_[0, 1 + rest * 3 // max(names - 1, 1)][:names]


def coverage_and_power(args: argparse.Namespace) -> None:
    from bold_eval.analysis.rate_test import rate_test

    print("\n| planted difference | spread | names A / B | score 95% interval covers | score power at 5% | "
          "permutation power at 5% |")
    print("|---|---|---|---|---|---|")
    for shift in (0.1, -0.1):
        for spread in ("moderate", "strong"):
            beta_a, beta_b = SPREADS[spread]
            for names in (10, 30, 100):
                rng = np.random.default_rng(seed_of(shift, spread, names))
                covered, found, old = [], [], []
                for replicate in range(args.power_replicates):
                    t_a, n_a = draw(rng, names, beta_a, 0.3, shift)
                    t_b, n_b = draw(rng, 300, beta_b, 0.3)
                    truth = _expected_rate(beta_a, shift) - 0.3
                    test = rate_test(np.r_[t_a, t_b], np.r_[n_a, n_b], np.arange(names + 300) < names, alpha=0.05)
                    if test.testable:
                        covered.append(test.ci_low <= truth <= test.ci_high)
                    found.append(test.testable and test.p_value <= 0.05)
                    if replicate < args.old_replicates:
                        old.append(permutation_p(t_a, n_a, t_b, n_b, replicate) <= 0.05)
                print(f"| {shift:+.1f} | {spread} | {names} / 300 | {np.mean(covered):.1%} (n {len(covered)}) | "
                      f"{np.mean(found):.0%} | {np.mean(old):.0%} (n {len(old)}) |", flush=True)


SECTIONS = {"level": level_rows, "real": real_design_rows, "worst-real": worst_real_rows,
            "paired-worst": paired_and_worst_rows, "real-interaction": real_interaction_rows,
            "compare-worst-power": compare_worst_power_rows, "interaction-coverage": interaction_coverage_rows,
            "interaction-power": interaction_power_rows,
            "rate-coverage": rate_coverage_rows, "worst-coverage": worst_coverage_rows, "overall": overall_rows,
            "power": coverage_and_power}


def _expected_rate(beta: tuple[float, float], shift: float) -> float:
    """E[clip(Beta + shift, 0, 1)] by simulation (the clip moves the mean a little)."""
    draws = np.random.default_rng(0).beta(*beta, 400_000)
    return float(np.clip(draws + shift, 0.0, 1.0).mean())


def _se(rate: float, n: int) -> float:
    return math.sqrt(max(rate, 1 / max(n, 1)) * (1 - rate) / max(n, 1)) if n and not math.isnan(rate) else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="fewer data sets (CI-sized)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma list of the tables to print, of {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--paired-kinds", default="",
                        help="comma list of the paired-worst section's test kinds to run (default: all), e.g. "
                             "interaction")
    parser.add_argument("--worst-floor", default="score",
                        help="the continuous worst cases' floor in worst-real, paired-worst and worst-coverage "
                             "(power_oracle_others.worst_floor): the report's score floor, or a candidate")
    parser.add_argument("--worst-domains", default="", help="comma list of worst-real's domains (default: all)")
    parser.add_argument("--paired-names", default="3,7,10,30,100",
                        help="comma list of side A's names in the paired-worst section's designs (default: all)")
    parser.add_argument("--paired-spreads", default="strong,exchangeable",
                        help="comma list of the paired-worst section's spreads (default: both)")
    parser.add_argument("--paired-rates", default="",
                        help="comma list of the paired-worst section's rates (default: each kind's own)")
    parser.add_argument("--interaction-method", default="product",
                        help="the tests without the binomial floor (the interactions) with this candidate of "
                             "benchmarks/interaction_df.py: product (the test in use), moments (before its few-names "
                             "correction), bm, anova, within, "
                             "anova-plugin or within-plugin")
    parser.add_argument("--floor-df", default="product",
                        help="the group-vs-rest test's degrees of freedom where its binomial floor binds, a "
                             "candidate of benchmarks/floor_df.py: product (the test in use), names, texts, mix or "
                             "rate, with the floor's correlation after @ (names@max1)")
    parser.add_argument("--overall-method", choices=("paired-score", "sign-flip"), default="paired-score",
                        help="compare's overall-difference test: the paired test in use, or the sign flip")
    args = parser.parse_args()
    args.paired_names = tuple(int(names) for names in args.paired_names.split(","))
    args.names = (1, 3, 4, 7, 10, 30, 100)
    (args.replicates, args.old_replicates, args.power_replicates, args.real_replicates, args.coverage_replicates,
     args.paired_replicates, args.overall_replicates) = ((2000, 100, 200, 200, 2000, 2000, 1000) if args.fast else
                                                         (20000, 400, 1000, 2000, 10000, 20000, 5000))
    args.real_interaction_replicates = 500 if args.fast else 2000
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from floor_df import CANDIDATES as FLOOR_CANDIDATES
    from floor_df import floor_method
    from floor_df import known as floor_known
    from interaction_df import CANDIDATES, interaction_method

    if not floor_known(args.floor_df):
        parser.error(f"unknown --floor-df {args.floor_df!r}; choose from {', '.join(FLOOR_CANDIDATES)}")
    if args.interaction_method not in CANDIDATES:
        parser.error(f"unknown --interaction-method {args.interaction_method!r}; choose from {', '.join(CANDIDATES)}")
    started = time.perf_counter()
    for section in args.sections.split(","):
        if section not in SECTIONS:
            parser.error(f"unknown section {section!r}; choose from {', '.join(SECTIONS)}")
        with interaction_method(args.interaction_method), floor_method(args.floor_df):
            SECTIONS[section](args)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
