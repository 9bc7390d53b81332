"""Power of the findings' tests against an oracle, on BOLD's real designs.

A difference is planted in one group of a domain whose names and texts per name are BOLD's own (prompts per
person in gender and race, Wikipedia sentences per page elsewhere). Each name's rate is drawn from a Beta with the
group's mean and an intra-class correlation rho (the pages' spread); the planted group's mean is raised by `shift`.
The report's test (`rate_test.rate_tests`, as `clustered.difference_tests` calls it) is counted as finding the
plant when its p-value is at most alpha / m, the first step of Holm over a family of m tests (the report's family
for religion and politics with two labels is 36; `--family`). The **oracle** tests the same contrast with the true
variance of the estimate known: |D| / sd(D) against the normal quantile at alpha / (2 m). Its power is the bound
no test of the contrast can beat by much; the table prints both and their ratio.

Two kinds of contrast:
- **group vs rest** (the findings of a run's own texts): 0/1 labels, sd(D) from the beta-binomial variances;
- **model vs Wikipedia** (the report's first screen): per prompt one Wikipedia label at the page's rate r_i and one
  model label at m_i = r_i everywhere except the planted group, where m_i = clip(r_i + shift); the interaction is
  the group's gap in the model minus its gap in Wikipedia, tested on the per-prompt differences as the report does
  (mapped onto [0, 1], no binomial floor); sd(D) from 20,000 draws of the estimate alone.

The shift is chosen so that the oracle finds it about 90% of the time (normal approximation), so every row sits
where the targets apply (the report at >= 80% of the oracle with 10 or more names per side, >= 60% with 4-9).

The **t bound** is a second yardstick: how much of the oracle's power a test that estimates its variance from the
names cannot have. It is the power, in closed form, of the same contrast's t test when the variance's form is known
and only its scale is estimated, on the degrees of freedom the design gives: the statistic noncentral t with
noncentrality truth / sd(D) (the oracle's own numbers) on df degrees of freedom, against Student's quantile at
alpha / (2 m) on df (`t_power`). df is the Welch-Satterthwaite count of the true per-side variances,
(V_a + V_b)^2 / (V_a^2 / f_a + V_b^2 / f_b), V_s = sum of v_i over the side's names, v_i the true contribution of
name i to Var(D) (its beta-binomial variance, or n_i E[Var(y | name)] + n_i^2 Var(E[y | name]), times its weight
squared), in two variants (`t_bound`): f_s = the side's names less one ("names"), or its effective number of names
less one, (sum v_i)^2 / sum v_i^2 - 1 ("effective names"). A side of one name leaves no degrees of freedom (power
0). With many names both bounds are the oracle's z test; the table prints both, with their df, and the report's power
over the better of them. The names variant follows a standard one-sample result (Bakirov and Szekely 2006): for G
independent Gaussian values with unequal variances, Student's two-sided quantile on G - 1 df is, at levels of 5% or
less, the smallest critical value of the t statistic that keeps the level whatever the variances (Ibragimov and
Mueller 2010 build their few-cluster t test on it); the two-sided Welch form here carries it over as a yardstick, not
a proven ceiling: it is normal-theory (a skewed estimate, a rare label on few names, can pass it), a test that knows
more of the variance's form (the binomial floor) can beat it, and the report's own df are estimated.

    .venv/bin/python benchmarks/power_oracle.py                 # all designs, 400 data sets each
    .venv/bin/python benchmarks/power_oracle.py --fast          # 100 data sets each (CI-sized)
    .venv/bin/python benchmarks/power_oracle.py --methods score,wald --kinds rest
    .venv/bin/python benchmarks/power_oracle.py --fast --kinds compare,overall,leaderboard,worst

The kinds compare, overall, leaderboard and worst (compare's interactions and overall differences, the leaderboard's
pair tests, the worst cases over k samples) are simulated by `power_oracle_others.py`, on the same designs.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor_df import CANDIDATES as FLOOR_CANDIDATES  # noqa: E402
from floor_df import floor_method  # noqa: E402
from floor_df import known as floor_known  # noqa: E402
from interaction_df import CANDIDATES, interaction_method  # noqa: E402

# (domain, planted group): the four, plus a large and a small group where the domain has them
PLANTS = (("political_ideology", "liberalism"), ("political_ideology", "nationalism"),
          ("political_ideology", "populism"), ("religious_ideology", "christianity"),
          ("religious_ideology", "islam"), ("religious_ideology", "sikhism"),
          ("profession", "engineering_branches"), ("profession", "mental_health_occupations"),
          ("profession", "professional_driver_types"), ("race", "Hispanic_and_Latino_Americans"),
          ("race", "European_Americans"), ("gender", "American_actresses"))
# rho of the groups with at most 10 names / of the others
SPREADS = {"alike": (0.01, 0.01), "moderate": (0.1, 0.1), "strong in small groups": (0.8, 0.05)}
RATES = (0.3, 0.03)
TARGET_POWER = 0.9


def seed_of(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


@dataclass(frozen=True)
class Design:
    """One domain's real design: texts per name and each name's group."""

    domain: str
    texts: np.ndarray
    group: np.ndarray
    groups: list[str]

    @classmethod
    def load(cls, domain: str) -> Design:
        from bold_eval.data.bold import load_bold

        frame = load_bold(domain).to_pandas()
        per_name = frame.groupby(["group", "name"]).size().reset_index(name="texts")
        groups = sorted(per_name["group"].unique())
        return cls(domain, per_name["texts"].to_numpy(float), per_name["group"].map(groups.index).to_numpy(), groups)

    def rho(self, spread: str) -> np.ndarray:
        small, rest = SPREADS[spread]
        sizes = np.bincount(self.group)
        return np.where(sizes[self.group] <= 10, small, rest)


def _beta(rng: np.random.Generator, mean: np.ndarray, rho: np.ndarray) -> np.ndarray:
    total = (1 - rho) / rho
    return rng.beta(mean * total, (1 - mean) * total)


def rest_contributions(design: Design, in_a: np.ndarray, rate: float, shift: float,
                       rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each name's true variance contribution to the pooled-rate difference, group vs rest (the planted group's
    names, the rest's): its beta-binomial variance over its side's texts squared."""
    mean = np.where(in_a, rate + shift, rate)
    n = design.texts
    per_name = n * mean * (1 - mean) * (1 + (n - 1) * rho)
    return per_name[in_a] / n[in_a].sum() ** 2, per_name[~in_a] / n[~in_a].sum() ** 2


def oracle_sd(design: Design, in_a: np.ndarray, rate: float, shift: float, rho: np.ndarray) -> float:
    """sd of the pooled-rate difference, group vs rest, under the beta-binomial model."""
    return math.sqrt(sum(float(side.sum()) for side in rest_contributions(design, in_a, rate, shift, rho)))


# --------------------------------------------------------------------------- the t bound


@dataclass(frozen=True)
class TBound:
    """The power of the contrast's t test with the variance's form known and its scale estimated on the design's
    degrees of freedom (module docstring): each side's names less one (`names`), or each side's effective number of
    names less one (`effective`); with their degrees of freedom."""

    names: float
    effective: float
    names_df: float
    effective_df: float

    @property
    def better(self) -> float:
        return max(self.names, self.effective)


def t_power(noncentrality: float, df: float, level: float) -> float:
    """Two-sided power at `level` of a t test on `df` degrees of freedom whose statistic is noncentral t with this
    noncentrality: P(|T| >= t_{df}^{-1}(1 - level / 2)); df = inf is the z test (the oracle in closed form), df <= 0
    no test."""
    if df <= 0:
        return 0.0
    if not math.isfinite(df):
        critical = stats.norm.isf(level / 2)
        return float(stats.norm.sf(critical - noncentrality) + stats.norm.cdf(-critical - noncentrality))
    critical, shift = stats.t.isf(level / 2, df), abs(noncentrality)
    # the far tail as the near tail of -shift: scipy's nct.cdf far below the mean can come out NaN
    return float(stats.nct.sf(critical, df, shift) + np.nan_to_num(stats.nct.sf(critical, df, -shift)))


def welch_df(sides: list[np.ndarray], effective: bool) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of sides' variances, (sum_s V_s)^2 / sum_s V_s^2 / f_s, V_s
    the side's true variance (the sum of its names' contributions v_i) and f_s its names less one, or its effective
    number of names less one, (sum v_i)^2 / sum v_i^2 - 1 (`effective`); 0 where a side has a single name."""
    total = sum(float(v.sum()) for v in sides)
    shares = 0.0
    for v in sides:
        names = float(v.sum()) ** 2 / float((v * v).sum()) if effective and v.sum() > 0 else float(len(v))
        if names - 1 <= 1e-9:
            return 0.0
        shares += float(v.sum()) ** 2 / (names - 1)
    return total * total / shares if shares > 0 else math.inf


def t_bound(noncentrality: float, sides: list[np.ndarray], level: float) -> TBound:
    """`TBound` of a contrast whose estimate is the truth over its sd times `noncentrality` (the oracle's
    standardized shift), tested at `level` (alpha / m), whose sides' names contribute `sides` to its variance."""
    names_df, effective_df = welch_df(sides, False), welch_df(sides, True)
    return TBound(t_power(noncentrality, names_df, level), t_power(noncentrality, effective_df, level), names_df,
                  effective_df)


@functools.cache
def load_design(domain: str) -> Design:
    """`Design.load`, once per domain."""
    return Design.load(domain)


def plants(domains: str) -> Iterator[tuple[str, str, Design, np.ndarray]]:
    """(domain, planted group, the domain's design, the planted group's names) of each of `PLANTS` whose domain is in
    `domains` (a comma list; empty: every domain)."""
    for domain, group in PLANTS:
        if domains and domain not in domains.split(","):
            continue
        design = load_design(domain)
        yield domain, group, design, design.group == design.groups.index(group)


def planted_shift(design: Design, in_a: np.ndarray, rate: float, rho: np.ndarray, critical: float,
                  interaction: bool) -> float:
    """The shift the oracle finds with TARGET_POWER (normal approximation); for an interaction the variance of the
    difference of two labels per prompt is about twice a label's."""
    scale = math.sqrt(2.0) if interaction else 1.0
    target = critical + stats.norm.ppf(TARGET_POWER)

    def gap(shift: float) -> float:
        return shift / (scale * oracle_sd(design, in_a, rate, 0.0 if interaction else shift, rho)) - target

    upper = min(0.95 - rate, 0.6)
    return float(optimize.brentq(gap, 1e-6, upper)) if gap(upper) > 0 else upper


def draw_rest(rng: np.random.Generator, design: Design, in_a: np.ndarray, rate: float, shift: float,
              rho: np.ndarray) -> np.ndarray:
    """Labelled texts per name, group vs rest."""
    rates = _beta(rng, np.where(in_a, rate + shift, rate), rho)
    return rng.binomial(design.texts.astype(int), rates).astype(float)


def draw_interaction(rng: np.random.Generator, design: Design, in_a: np.ndarray, rate: float, shift: float,
                     rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per name the sum of the per-prompt differences mapped onto [0, 1], (d + 1) / 2 with d = model - Wikipedia,
    and the sum of their squares."""
    reference = _beta(rng, np.full(len(in_a), rate), rho)
    model = np.where(in_a, np.clip(reference + shift, 0.0, 1.0), reference)
    up, down = model * (1 - reference), (1 - model) * reference
    counts = rng.multinomial(design.texts.astype(int), np.stack([up, down, 1 - up - down], axis=1))
    return counts[:, 0] + 0.5 * counts[:, 2], counts[:, 0] + 0.25 * counts[:, 2]


@functools.cache
def _interaction_moments(rate: float, shift: float, rho: float) -> tuple[float, float]:
    """(E[Var(y | name)], Var(E[y | name])) of a per-prompt value y = (d + 1) / 2 of `draw_interaction` over 200,000
    draws of a name's Wikipedia rate r: y is 1 at m (1 - r), 0 at (1 - m) r and 0.5 otherwise, m = clip(r + shift)."""
    reference = _beta(np.random.default_rng(seed_of("moments", rate, rho)), np.full(200_000, rate),
                      np.full(200_000, rho))
    model = np.clip(reference + shift, 0.0, 1.0)
    up, down = model * (1 - reference), (1 - model) * reference
    mean = up + 0.5 * (1 - up - down)
    return float((up + 0.25 * (1 - up - down) - mean * mean).mean()), float(mean.var())


def interaction_contributions(design: Design, in_a: np.ndarray, rate: float, shift: float,
                              rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each name's true variance contribution to `interaction_estimate` (the planted group's names, the rest's):
    (2 / N_side)^2 (n_i E[Var(y | name)] + n_i^2 Var(E[y | name]))."""
    n = design.texts
    moments = np.array([_interaction_moments(rate, shift if planted else 0.0, float(r))
                        for r, planted in zip(rho, in_a, strict=True)])
    per_name = n * moments[:, 0] + n * n * moments[:, 1]
    return per_name[in_a] * (2 / n[in_a].sum()) ** 2, per_name[~in_a] * (2 / n[~in_a].sum()) ** 2


def interaction_truth(rng: np.random.Generator, rate: float, shift: float, rho: float) -> float:
    reference = _beta(rng, np.full(400_000, rate), np.full(400_000, rho))
    return float(np.clip(reference + shift, 0.0, 1.0).mean() - reference.mean())


# --------------------------------------------------------------------------- the methods compared


@contextlib.contextmanager
def method(name: str) -> Iterator[None]:
    """Run the report's tests with one variance: "product" (`rate_test` as it is), "score" (the test it
    replaced: the cluster-robust sum of squares about the rates restricted to the hypothesis, plain for 0/1 labels
    and CR2 without the floor, the floor's correlation shrunk by one worst-case outcome, names - 1 degrees of
    freedom per side), or one of the candidates for the tests without the floor (`interaction_df.CANDIDATES`:
    moments, bm, anova, within, ...; the floor's tests as they are), or one of the candidates for the
    floor's degrees of freedom where it binds, prefixed "floor-" (`floor_df.CANDIDATES`: floor-texts, floor-mix,
    floor-rate, or with the floor's correlation after "@": floor-names@max1, floor-product@g1; the tests without the
    floor as they are)."""
    from bold_eval.analysis import rate_test

    saved = {key: getattr(rate_test, key) for key in ("side_variance", "side_df", "WORST_CASE_WEIGHT")}

    def null(side, rate, floor=True):
        squares = rate_test.null_squares(side.tt, side.tn, side.nn, rate)
        binomial = np.clip(rate * (1 - rate), 0.0, None) * (side.texts + side.correlation * side.pairs)
        adjusted = rate_test.null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, rate)
        floored = rate_test.floor_kinds(floor) != rate_test.NO_FLOOR
        return np.where(floored, np.maximum(squares, binomial), adjusted) / (side.texts * side.texts)

    def names_less_one(side, floor=True, rate=None):
        return np.maximum(side.names - 1, 1)

    if name in CANDIDATES[1:]:
        with interaction_method(name):
            yield
        return
    if name.startswith("floor-") and floor_known(name[len("floor-"):]) and name != "floor-product":
        with floor_method(name[len("floor-"):]):
            yield
        return
    if name == "score":
        rate_test.side_variance, rate_test.side_df, rate_test.WORST_CASE_WEIGHT = null, names_less_one, 1.0
    elif name != "product":
        raise ValueError(f"unknown method {name!r}: product, score, {', '.join(CANDIDATES[1:])} or "
                         f"{', '.join('floor-' + c for c in FLOOR_CANDIDATES[1:])}")
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(rate_test, key, value)


def bound_cells(bound: TBound) -> str:
    """The two t bounds' table cells: each power with its degrees of freedom."""
    return " | ".join(f"{power:.1%} ({df:.1f})" for power, df in ((bound.names, bound.names_df),
                                                                  (bound.effective, bound.effective_df)))


def bound_ratio(found: float, bound: TBound) -> str:
    """The report's power over the better t bound's, or empty where neither bound can test."""
    return f"{found / bound.better:.2f}" if bound.better > 0 else ""


def run_tests(data: list, design: Design, in_a: np.ndarray, alpha: float, floor: bool):
    """The report's tests of each data set: 0/1 labels per name (`floor`), or (sums, sums of squares) per name."""
    from bold_eval.analysis.rate_test import rate_tests

    sums = data if floor else [t for t, _ in data]
    squares = None if floor else [q for _, q in data]
    return rate_tests(sums, [design.texts] * len(data), [in_a] * len(data), alpha=alpha, floor=[floor] * len(data),
                      squares=squares)


def interaction_estimate(data: tuple[np.ndarray, np.ndarray], design: Design, in_a: np.ndarray) -> float:
    t = data[0]
    return 2 * (t[in_a].sum() / design.texts[in_a].sum() - t[~in_a].sum() / design.texts[~in_a].sum())


def rows(args: argparse.Namespace) -> None:
    methods = args.methods.split(",")
    critical = {kind: stats.norm.isf(args.alpha / (2 * args.family * (2 if kind == "wikipedia" else 1)))
                for kind in ("rest", "wikipedia")}
    header = " | ".join(f"{m}: found (ratio) | {m}: found / t bound | {m}: 95% CI covers" for m in methods)
    print(f"\n| kind | domain | planted | names / texts | rate | spread | shift | oracle | t bound: names (df) | "
          f"t bound: effective names (df) | {header} |")
    print("|" + "---|" * (10 + 3 * len(methods)))
    for kind in [kind for kind in args.kinds.split(",") if kind in ("rest", "wikipedia")]:
        family = args.family * (2 if kind == "wikipedia" else 1)
        level = args.alpha / family
        for domain, group, design, in_a in plants(args.domains):
            for rate in RATES:
                for spread in SPREADS:
                    rho = design.rho(spread)
                    rng = np.random.default_rng(seed_of(kind, domain, group, rate, spread))
                    shift = planted_shift(design, in_a, rate, rho, critical[kind], kind == "wikipedia")
                    if kind == "rest":
                        data = [draw_rest(rng, design, in_a, rate, shift, rho) for _ in range(args.replicates)]
                        truth = shift
                        estimates = np.array([d[in_a].sum() / design.texts[in_a].sum()
                                              - d[~in_a].sum() / design.texts[~in_a].sum() for d in data])
                        sd = oracle_sd(design, in_a, rate, shift, rho)
                        sides = rest_contributions(design, in_a, rate, shift, rho)
                    else:
                        data = [draw_interaction(rng, design, in_a, rate, shift, rho)
                                for _ in range(args.replicates)]
                        truth = interaction_truth(rng, rate, shift, float(rho[in_a][0]))
                        extra = [draw_interaction(rng, design, in_a, rate, shift, rho)
                                 for _ in range(args.oracle_draws)]
                        sd = float(np.std([interaction_estimate(d, design, in_a) for d in extra]))
                        estimates = np.array([interaction_estimate(d, design, in_a) for d in data])
                        sides = interaction_contributions(design, in_a, rate, shift, rho)
                    bound = t_bound(truth / sd, list(sides), level)
                    oracle = float(np.mean(np.abs(estimates) / sd >= critical[kind]))
                    cells = []
                    for name in methods:
                        with method(name):  # testable and interval at the report's alpha; found at alpha / m
                            at_95 = run_tests(data, design, in_a, args.alpha, kind == "rest")
                        scale = 1.0 if kind == "rest" else 2.0
                        found = float(np.mean([t.testable and t.p_value <= level for t in at_95]))
                        covered = [t.ci_low * scale <= truth <= t.ci_high * scale for t in at_95 if t.testable]
                        cover = f"{np.mean(covered):.1%}" if covered else "untestable"
                        ratio = f" ({found / oracle:.2f})" if oracle else ""
                        cells.append(f"{found:.1%}{ratio} | {bound_ratio(found, bound)} | {cover}")
                    names, texts = int(in_a.sum()), int(design.texts[in_a].sum())
                    print(f"| {kind} | {domain} | {group} | {names} / {texts} | {rate} | {spread} | {shift:+.3f} | "
                          f"{oracle:.1%} | {bound_cells(bound)} | " + " | ".join(cells) + " |", flush=True)


def planning_rows(args: argparse.Namespace) -> None:
    """Power planning against simulation. Per domain, its typical group (`findings.power_table`: the group of median
    texts) and its smallest group of 4-9 names where it has one, at rho 0.01 and 0.1 (the domain's design effect
    from it): the smallest detectable difference the report prints (80% power at alpha / m), and the power predicted
    at half, once and 1.5 times it (`clustered.PowerPlan`, the plan the printed number came from), next to the test's
    power simulated at each on BOLD's real design (the group's own texts per name). Two plans: `power_table`'s, a
    label near 50% with the sides at 0.5 -+ shift / 2; and a findings row's `detectable` for a rare label, 3% of
    both sides' texts together, the group above the rest."""
    from bold_eval.analysis.clustered import PlannedSide, PowerPlan, design_correlation, minimum_detectable_difference
    from bold_eval.analysis.rate_test import min_attainable_p

    level = args.alpha / args.family
    print("\n| domain | group | names / texts | rho | design effect | rate (plan) | smallest detectable (80%) | "
          "shift | predicted power | simulated power |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for domain in ("gender", "race", "profession", "religious_ideology", "political_ideology"):
        if args.domains and domain not in args.domains.split(","):
            continue
        design = Design.load(domain)
        texts_per_group = np.bincount(design.group, weights=design.texts)
        names_per_group = np.bincount(design.group)
        order = np.argsort(texts_per_group, kind="stable")
        chosen = [int(order[len(order) // 2]) if len(order) > 2 else int(order[0])]
        small = [k for k in order if 4 <= names_per_group[k] <= 9]
        if small:
            chosen.append(int(small[len(small) // 2]))
        for group in chosen:
            in_a = design.group == group
            sizes = (design.texts[in_a], design.texts[~in_a])
            n_a, n_b = float(sizes[0].sum()), float(sizes[1].sum())
            g_a, g_b = float(in_a.sum()), float((~in_a).sum())
            for rho_value in (0.01, 0.1):
                rho = np.full(len(in_a), rho_value)
                deff = 1 + (float((design.texts ** 2).sum() / design.texts.sum()) - 1) * rho_value
                correlation = design_correlation(deff, design.texts)
                for rate, centred in ((0.5, True), (0.03, False)):
                    detectable = minimum_detectable_difference(rate, n_a, n_b, deff=deff, alpha=level, sizes=sizes,
                                                               centred=centred)
                    plan = PowerPlan.of(PlannedSide.of(sizes[0], correlation), PlannedSide.of(sizes[1], correlation),
                                        correlation, level, centred=centred)
                    label = f"{rate:g} ({'power table: 0.5 -+ shift / 2' if centred else 'a row: both sides'})"
                    if min_attainable_p(g_a, g_b, n_a, n_b) > args.alpha:
                        print(f"| {domain} | {design.groups[group]} | {int(g_a)} / {int(n_a)} | {rho_value} | "
                              f"{deff:.2f} | {label} | none (too few names to test) | | | |", flush=True)
                        continue
                    if not np.isfinite(detectable):
                        print(f"| {domain} | {design.groups[group]} | {int(g_a)} / {int(n_a)} | {rho_value} | "
                              f"{deff:.2f} | {label} | none (more than the rate allows) | | | |", flush=True)
                        continue
                    for factor in (0.5, 1.0, 1.5):
                        shift = detectable * factor
                        rate_a, rate_b = (float(value[0]) for value in plan.rates(np.array([shift]), np.array([rate])))
                        if not (0 < rate_b and rate_a < 1):
                            continue
                        predicted = float(plan.power(np.array([shift]), np.array([rate]))[0])
                        rng = np.random.default_rng(seed_of("planning", domain, group, rho_value, rate, factor))
                        data = []
                        for _ in range(args.replicates):
                            rates = _beta(rng, np.where(in_a, rate_a, rate_b), rho)
                            data.append(rng.binomial(design.texts.astype(int), rates).astype(float))
                        tests = run_tests(data, design, in_a, args.alpha, True)
                        simulated = float(np.mean([t.testable and t.p_value <= level for t in tests]))
                        print(f"| {domain} | {design.groups[group]} | {int(g_a)} / {int(n_a)} | {rho_value} | "
                              f"{deff:.2f} | {label} | {detectable:.3f} | {shift:.3f} | {predicted:.0%} | "
                              f"{simulated:.0%} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="100 data sets per design (CI-sized)")
    parser.add_argument("--methods", default="product,score",
                        help="comma list of product, score and the candidates for the tests without the floor "
                             "(moments, bm, anova, ...: benchmarks/interaction_df.py), the "
                             "candidates for the floor's df where it binds (floor-texts, floor-mix, floor-rate: "
                             "benchmarks/floor_df.py); "
                             "compare's rows are printed once per method other than score")
    parser.add_argument("--kinds", default="rest,wikipedia,planning",
                        help="comma list of rest, wikipedia, compare, overall, leaderboard, worst (power against the "
                             "oracle) and planning (the report's smallest detectable difference against simulated "
                             "power)")
    parser.add_argument("--domains", default="", help="comma list of domains (default: all)")
    parser.add_argument("--family", type=int, default=36, help="tests in the family (the interactions' is twice)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--worst-floor", default="score",
                        help="the continuous worst cases' floor (power_oracle_others.worst_floor): the report's "
                             "score floor, or a candidate measured against it")
    parser.add_argument("--paired-method", choices=("stratified", "one-stratum"), default="stratified",
                        help="overall, leaderboard: the paired test with the names' groups as strata (in use), or "
                             "with one stratum (the domain)")
    args = parser.parse_args()
    args.replicates = 100 if args.fast else 400
    args.oracle_draws = 2000 if args.fast else 20000
    kinds = args.kinds.split(",")
    others = ("compare", "overall", "leaderboard", "worst")
    unknown = [kind for kind in kinds if kind not in ("rest", "wikipedia", "planning", *others)]
    if unknown:
        parser.error(f"unknown --kinds {', '.join(unknown)}: choose from rest, wikipedia, planning, "
                     f"{', '.join(others)}")
    started = time.perf_counter()
    if set(kinds) & {"rest", "wikipedia"}:
        rows(args)
    if set(kinds) & set(others):
        import power_oracle_others

        power_oracle_others.rows(args, [kind for kind in kinds if kind in others])
    if "planning" in kinds:
        planning_rows(args)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
