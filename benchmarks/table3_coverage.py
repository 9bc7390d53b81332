"""Do Table 3's intervals cover? Coverage of the report's intervals and of a page
bootstrap by simulation.

Table 3 (`bold_eval.analysis.table3`) prints, per profession super-group, male # : female # with an interval,
Section 6.2's average of those ratios and the pooled ratio with intervals, and per fine-grained group (Figure 2)
male share minus female share with an interval. This script makes data like BOLD's and counts how often each
interval holds the true value:

- **Pages as BOLD has them.** Every Wikipedia page of the profession domain keeps its number of sentences
  (1 to 167); its texts are classified male with probability p_m and female with probability p_f, where
  p_m = mu_m G_m and p_f = mu_f G_f with page effects G ~ Gamma(mean 1, variance phi), independent, capped at
  0.5 (a multinomial per page). mu is the super-group's (or group's) share of texts that unigram matching
  classifies male / female in BOLD's Wikipedia sentences; phi is 2 for male and 6 for female, the
  method-of-moments estimates from the same sentences (male 0.1-2.4, female 6.1-7.0 per super-group: female
  texts come in clumps, one page holds 19 of arts & entertainment's 66).
- **True values** are the ratios of expected counts, E[male texts] / E[female texts] = E[p_m] / E[p_f] (exact
  for the capped gamma), their mean over the four super-groups (the paper's "average of ratios"), the pooled
  ratio sum n mu_m / sum n mu_f, and E[p_m] - E[p_f] per group.
- **Scenarios**: `wikipedia` (the rates above), `model` (rates x 3: GPT-2's Table 3 counts are 2-3 times
  Wikipedia's), `stress` (female phi 12, twice the measured clumping), `small` (K pages drawn from each
  super-group's or group's pages per simulation, K = 2, 3, 5, 10, 30, rates x 3: a `--limit` run).

`bootstrap`: page-bootstrap percentile intervals (vectorized, 999 resamples), a Wilson bound over pages for an
infinite ratio, a text-level normal interval for male - female: the simple choices, for comparison.
`report`: `ratio_interval`, `average_ratio` and `difference_interval` as the report calls them. Coverage is counted
over the simulations where an interval is printed (`printed` says how often); "infinite" is the lower bound of
an infinite ratio (no female text) among the simulations that had none, against the true, finite ratio.
MC SE: the Monte Carlo standard error of a coverage, sqrt(c (1 - c) / n).

    .venv/bin/python benchmarks/table3_coverage.py [--sims 1000] [--scenarios wikipedia model stress small]
    .venv/bin/python benchmarks/table3_coverage.py --fast  # 200 simulations of `wikipedia` and `small`
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy
from scipy import stats

from bold_eval.analysis.table3 import (
    average_ratio,
    difference_interval,
    ratio_interval,
    typical_design_effects,
)

CAP = 0.5  # largest per-page probability of a label
PHI_MALE, PHI_FEMALE = 2.0, 6.0
SMALL_PAGES = (2, 3, 5, 10, 30)
OLD_RESAMPLES = 999


@dataclass(frozen=True)
class Scenario:
    """One data-generating setting: rates x `scale`, page-effect variances, and `pages` drawn per unit (0: all)."""

    name: str
    scale: float = 1.0
    phi_male: float = PHI_MALE
    phi_female: float = PHI_FEMALE
    pages: int = 0


def scenarios(names: Sequence[str]) -> list[Scenario]:
    """The named scenarios; `small` expands to one per page count."""
    table = {"wikipedia": [Scenario("wikipedia")], "model": [Scenario("model", scale=3.0)],
             "stress": [Scenario("stress", phi_female=12.0)],
             "small": [Scenario(f"small K={k}", scale=3.0, pages=k) for k in SMALL_PAGES]}
    return [scenario for name in names for scenario in table[name]]


def wikipedia_pages(data_dir: str | None = None) -> pd.DataFrame:
    """BOLD's profession pages: category, group, name, texts, and male / female texts by unigram matching."""
    from bold_eval.data.bold import load_bold
    from bold_eval.metrics.gender_polarity import GenderPolarityScorer
    from bold_eval.scoring.texts import build_texts

    bold = load_bold("profession", data_dir=data_dir).to_pandas()
    bold = bold.assign(continuation=[sentence[len(prompt):] for sentence, prompt in
                                     zip(bold["wikipedia"], bold["prompt"], strict=True)])
    labels = GenderPolarityScorer(methods=["unigram"])(build_texts(bold).tolist())["unigram_label"]
    frame = bold.assign(texts=1, male=(labels == "male").astype(int), female=(labels == "female").astype(int),
                        category=bold["category"].fillna(""))
    frame = frame[frame["category"] != ""]
    return frame.groupby(["category", "group", "name"], as_index=False)[["texts", "male", "female"]].sum()


@functools.cache
def capped_mean(mu: float, phi: float) -> float:
    """E[min(mu G, CAP)] for G ~ Gamma(shape 1 / phi, scale phi): the true rate of a label (cached: a unit's rates
    are the same in every simulation)."""
    shape, scale = 1 / phi, mu * phi
    return float(mu * stats.gamma.cdf(CAP, shape + 1, scale=scale) + CAP * stats.gamma.sf(CAP, shape, scale=scale))


def draw_pages(rng: np.random.Generator, sizes: np.ndarray, rates: tuple[float, float],
               scenario: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """Male and female texts per page: page effects, then a multinomial of the page's texts."""
    mu_m, mu_f = rates
    p_m = np.minimum(rng.gamma(1 / scenario.phi_male, mu_m * scenario.phi_male, len(sizes)), CAP)
    p_f = np.minimum(rng.gamma(1 / scenario.phi_female, mu_f * scenario.phi_female, len(sizes)), CAP)
    male = rng.binomial(sizes, p_m)
    female = rng.binomial(sizes - male, p_f / (1 - p_m))
    return male.astype(float), female.astype(float)


def _odds(share: float) -> float:
    return float("inf") if share >= 1 else float(share / (1 - share))


def bootstrap_ratio(rng: np.random.Generator, strata: list[tuple[np.ndarray, np.ndarray]], combine: str,
              alpha: float) -> tuple[float, float]:
    """The comparison interval: percentile page bootstrap (stratified), Wilson over pages without female texts."""
    male = sum(m.sum() for m, _ in strata)
    female = sum(f.sum() for _, f in strata)
    pages = sum(len(m) for m, _ in strata)
    if combine == "pooled" or len(strata) == 1:
        if male + female == 0:
            return float("nan"), float("nan")
        z2 = stats.norm.ppf(1 - alpha / 2) ** 2
        bound = pages / z2  # (1 - share) / share for Wilson's z^2 / (k + z^2): 0 of k pages
        if female == 0:
            return bound, float("inf")
        if male == 0:
            return 0.0, 1 / bound
    elif any(f.sum() == 0 for _, f in strata):
        return float("nan"), float("nan")  # the bootstrap's average is undefined
    totals = []
    for m, f in strata:
        if len(m) < 2:
            totals.append((np.full(OLD_RESAMPLES, m.sum()), np.full(OLD_RESAMPLES, f.sum())))
            continue
        picks = rng.integers(0, len(m), size=(OLD_RESAMPLES, len(m)))
        totals.append((m[picks].sum(axis=1), f[picks].sum(axis=1)))
    if all(len(m) < 2 for m, _ in strata):
        return float("nan"), float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        if combine == "pooled" or len(strata) == 1:
            statistic = sum(m for m, _ in totals) / sum(f for _, f in totals)
        else:
            statistic = sum(m / f for m, f in totals) / len(totals)
        unit = np.where(np.isinf(statistic), 1.0, statistic / (1 + statistic))
    low, high = np.quantile(unit, [alpha / 2, 1 - alpha / 2])
    return _odds(low), _odds(high)


def text_level_difference(male: np.ndarray, female: np.ndarray, texts: np.ndarray, alpha: float) -> tuple[float, float]:
    """The comparison's text-level normal interval of male share - female share."""
    total = texts.sum()
    p_m, p_f = male.sum() / total, female.sum() / total
    spread = stats.norm.ppf(1 - alpha / 2) * np.sqrt((p_m + p_f - (p_m - p_f) ** 2) / total)
    return max(p_m - p_f - spread, -1.0), min(p_m - p_f + spread, 1.0)


def _record(rows: list[dict], kind: str, unit: str, method: str, truth: float, low: float, high: float) -> None:
    printed = not (np.isnan(low) or np.isnan(high))
    rows.append({"kind": kind, "unit": unit, "method": method, "printed": printed,
                 "covered": bool(printed and low <= truth <= high), "width": high - low if printed else np.nan})


class Units:
    """Per super-group and per group: page sizes and true rates of one scenario."""

    def __init__(self, pages: pd.DataFrame, scenario: Scenario) -> None:
        self.scenario = scenario
        self.categories = self._units(pages, "category")
        self.groups = self._units(pages, "group")

    def _units(self, pages: pd.DataFrame, key: str) -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
        units = {}
        for name, part in pages.groupby(key, sort=True):
            texts = part["texts"].sum()
            rates = tuple(self.scenario.scale * max(part[label].sum(), 0.5) / texts for label in ("male", "female"))
            units[name] = (part["texts"].to_numpy(), rates)
        return units

    def truth(self, rates: tuple[float, float]) -> tuple[float, float]:
        return (capped_mean(rates[0], self.scenario.phi_male), capped_mean(rates[1], self.scenario.phi_female))

    def sizes(self, rng: np.random.Generator, sizes: np.ndarray) -> np.ndarray:
        k = self.scenario.pages
        return sizes if not k or k >= len(sizes) else rng.choice(sizes, k, replace=False)


def simulate_categories(rng: np.random.Generator, units: Units, rows: list[dict], alpha: float) -> None:
    """One simulation of Table 3: each super-group's ratio, the average of ratios and the pooled ratio."""
    strata, ratios, expected = {}, {}, [0.0, 0.0]
    for category, (sizes, rates) in units.categories.items():
        sizes = units.sizes(rng, sizes)
        male, female = draw_pages(rng, sizes, rates, units.scenario)
        true_m, true_f = units.truth(rates)
        ratios[category] = true_m / true_f
        expected[0] += true_m * sizes.sum()
        expected[1] += true_f * sizes.sum()
        gendered = (male + female) > 0
        strata[category] = (male[gendered], female[gendered])
        new = ratio_interval([strata[category]], alpha=alpha)
        boot = bootstrap_ratio(rng, [strata[category]], "pooled", alpha)
        kind = "infinite" if female.sum() == 0 and male.sum() > 0 else "ratio"
        _record(rows, kind, category, "bootstrap", ratios[category], *boot)
        _record(rows, kind, category, "report", ratios[category], new[1], new[2])
    average = float(np.mean(list(ratios.values())))
    new = average_ratio(strata, alpha=alpha)
    _record(rows, "average", f"{len(strata)} super-groups", "bootstrap", average,
            *bootstrap_ratio(rng, list(strata.values()), "average", alpha))
    _record(rows, "average", f"{len(strata)} super-groups", "report", average, new[1], new[2])
    rows[-1]["estimate"] = new[0]
    pooled = expected[0] / expected[1]
    new = ratio_interval(list(strata.values()), alpha=alpha)
    _record(rows, "pooled", f"{len(strata)} super-groups", "bootstrap", pooled, *bootstrap_ratio(rng,
                                                                                                 list(strata.values()),
                                                                                                 "pooled", alpha))
    _record(rows, "pooled", f"{len(strata)} super-groups", "report", pooled, new[1], new[2])


def simulate_groups(rng: np.random.Generator, units: Units, rows: list[dict], alpha: float) -> None:
    """One simulation of Figure 2: male share - female share per group, each group's design effects at least
    the groups' median, as the report computes them."""
    drawn = {}
    for group, (sizes, rates) in units.groups.items():
        sizes = units.sizes(rng, sizes)
        drawn[group] = (*draw_pages(rng, sizes, rates, units.scenario), sizes.astype(float))
    floors = typical_design_effects(list(drawn.values()))
    for group, (male, female, texts) in drawn.items():
        true_m, true_f = units.truth(units.groups[group][1])
        _record(rows, "difference", group, "bootstrap", true_m - true_f, *text_level_difference(male, female, texts,
                                                                                                alpha))
        new = difference_interval(male, female, texts, alpha=alpha, floors=floors)
        _record(rows, "difference", group, "report", true_m - true_f, new[1], new[2])


def run(pages: pd.DataFrame, scenario: Scenario, sims: int, alpha: float, seed: int) -> pd.DataFrame:
    """`sims` simulations of one scenario: one row per interval."""
    rng = np.random.default_rng(seed)
    units = Units(pages, scenario)
    rows: list[dict] = []
    for _ in range(sims):
        simulate_categories(rng, units, rows, alpha)
        simulate_groups(rng, units, rows, alpha)
    return pd.DataFrame(rows).assign(scenario=scenario.name)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Coverage (with MC SE), share printed and median width per scenario x kind x method; for ratios and
    differences, the lowest coverage over the units and the unit that has it."""
    lines = []
    for (scenario, kind, method), part in results.groupby(["scenario", "kind", "method"], sort=False):
        shown = part[part["printed"]]
        per_unit = shown.groupby("unit")["covered"].agg(["mean", "size"])
        per_unit = per_unit[per_unit["size"] >= 20]
        coverage = shown["covered"].mean() if len(shown) else np.nan
        worst = per_unit["mean"].idxmin() if len(per_unit) else ""
        lines.append({
            "scenario": scenario, "kind": kind, "method": method, "intervals": len(shown),
            "printed": part["printed"].mean(), "coverage": coverage,
            "mc_se": np.sqrt(coverage * (1 - coverage) / len(shown)) if len(shown) else np.nan,
            "worst unit": worst, "worst coverage": per_unit["mean"].min() if len(per_unit) else np.nan,
            "worst n": int(per_unit.loc[worst, "size"]) if worst else 0,
            "median width": shown["width"].median(),
        })
    return pd.DataFrame(lines)


def bias_lines(results: pd.DataFrame, pages: pd.DataFrame) -> list[str]:
    """The average of ratios against its true value, per scenario (the paper's estimate is biased upward)."""
    out = []
    for scenario, part in results[(results["kind"] == "average") & (results["method"] == "report")].groupby(
            "scenario", sort=False):
        spec = next(s for s in scenarios(["wikipedia", "model", "stress", "small"]) if s.name == scenario)
        units = Units(pages, spec)
        truth = np.mean([m / f for m, f in (units.truth(rates) for _, rates in units.categories.values())])
        estimates = part["estimate"].replace(np.inf, np.nan)
        out.append(f"{scenario}: mean of the estimated average of ratios {estimates.mean():.2f} (finite in "
                   f"{estimates.notna().mean():.0%} of simulations) against the true average {truth:.2f}")
    return out


def machine() -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (np.nan,) * 3
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {load[0]:.2f} / {load[1]:.2f}"
            f" / {load[2]:.2f}; Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
            f"pandas {pd.__version__}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000, help="simulations per scenario")
    parser.add_argument("--scenarios", nargs="+", default=["wikipedia", "model", "stress", "small"],
                        choices=["wikipedia", "model", "stress", "small"])
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None, help="BOLD's files (default: $BOLD_DATA_DIR or the pinned copy)")
    parser.add_argument("--fast", action="store_true", help="200 simulations of `wikipedia` and `small`")
    args = parser.parse_args(argv)
    if args.fast:
        args.sims, args.scenarios = 200, ["wikipedia", "small"]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    pages = wikipedia_pages(args.data_dir)
    start = time.perf_counter()
    results = pd.concat([run(pages, scenario, args.sims, args.alpha, args.seed + i)
                         for i, scenario in enumerate(scenarios(args.scenarios))], ignore_index=True)
    table = summarize(results)
    print(f"Table 3 interval coverage, nominal {1 - args.alpha:.0%}; {args.sims} simulations per scenario; "
          f"{time.perf_counter() - start:.0f} s")
    print(f"machine: {machine()}")
    print(table.to_string(index=False, float_format=lambda value: f"{value:.3f}"))
    print("\n".join(["", *bias_lines(results, pages)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
