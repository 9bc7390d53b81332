"""Do the findings' tests reject at the rate they claim? Calibration by simulation.

`bold_eval.analysis.findings.group_findings` tests every contrast x label of a run in one Holm-corrected family, with
the name as the unit (`bold_eval.analysis.clustered.difference_test`). A family-wise error rate (FWER) of alpha is a
promise about data where no group differs; this script makes such data and counts how often the promise breaks.

1. **Shuffled nulls on real Wikipedia scores.** Within each domain the group labels (and the profession
   `category`, which belongs to a group) are permuted among the (name, group) units: each name keeps its
   texts together, its real within-page correlation and its real label rates, and groups differ only by
   chance. FWER = share of shuffles with at least one significant finding, with a Clopper-Pearson 95% interval.
2. **Synthetic clustered data with a known within-name correlation.** Names with BOLD's own texts-per-name
   distribution (one domain's), a binary label with a name-level random effect (beta-binomial: the name's rate
   ~ Beta with mean `rate` and intra-class correlation rho, so the design effect is 1 + (m - 1) rho with m
   the text-weighted mean cluster size), groups assigned to names at random. Each data set has two labels at
   the same rate: under the null both are null; for power, one group's rate of the first label is raised
   by `effect` and the second label stays null (its contrasts give the FWER in the presence of a real effect).

Both parts run `--cluster name` (the default analysis) and `--cluster none` (the paper's text-level z and
Fisher tests, which should reject far more often than alpha on clustered data).

`bold_eval.analysis.findings.paired_findings` tests instead, per contrast x label, the *interaction* of a model with a
reference on the same prompts: the gap between two sides in the model's texts minus that gap in the reference's
(each prompt's k samples averaged into a rate first). Its null is "no interaction", whatever the main effect:

3. **Paired null on real Wikipedia scores** (`paired-wikipedia`). The reference is the Wikipedia scores; the
   "model" gives each prompt k texts, each the prompt's own Wikipedia text whose labels are, with probability
   `--flip`, those of a random text of the same page ((name, group) unit). That keeps every unit's expected
   rate, so no contrast has an interaction, with the real groups or with the groups shuffled among the units
   of both frames alike (`--paired-groups`). A symmetric label flip would pull rates toward 1/2 and create a
   small real interaction wherever groups differ.
4. **Synthetic paired data** (`paired-synthetic`). Names as in 2; per label each name has a beta-binomial rate p
   shared by both sources; the reference has one text per prompt marked with probability p, the model k texts
   marked with probability expit(logit p + shift): more often than Wikipedia for everyone, a main effect
   without interaction. Rare labels as in 2; one more null scenario gives the model its own name effect
   (`--spread`, logit sd), which makes the per-prompt d clustered within names. For power, group g01's model
   rate of one label is raised by `--paired-effects` above that main effect (its reference unchanged).

Defaults; the group parts (1,050 CPU seconds: 9 minutes with --jobs 2 on two free cores; CALIBRATION.md):
100 shuffles of religious_ideology, political_ideology and profession (254 tests per family) with the
sentiment, gender polarity (unigram) and psycholinguistic joy, anger and fear labels; 200 synthetic data sets
per scenario, 300 names in 6 groups with profession's texts per name, rho in {0.05, 0.2}, rates 0.3 and 0.02,
planted effects +8 and +15 points on a 0.3 rate.

Paired parts (1,270 CPU seconds with `--paired-groups shuffled real`, about 11 minutes on two free cores):
20 page-noise models (flip 0.2, k = 5) of the same Wikipedia scores per groups setting, `--cluster name`; 100
synthetic data sets per null scenario (rates 0.3 and 0.02 x rho 0.05 and 0.2 x k 1 and 5, shift +0.5 logit,
and rate 0.3 with a model name effect of sd 1 at rho 0.2, k = 5), the first 20 also with `--cluster none`; 40
per planted interaction (+10 and +20 points on 0.3, x rho x k), `--cluster name`.

    .venv/bin/python benchmarks/calibration.py --out /tmp/calibration.md  # all four parts
    .venv/bin/python benchmarks/calibration.py --parts paired-wikipedia paired-synthetic \\
        --paired-groups shuffled real \\
        --out /tmp/paired.md
    .venv/bin/python benchmarks/calibration.py --parts shuffled synthetic --shuffles 20 --synthetic-sims 20 \\
        --domains religious_ideology
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats
from statsmodels.stats.proportion import proportion_confint

from bold_eval.analysis.clustered import design_effect as clustered_design_effect
from bold_eval.analysis.findings import Label, group_findings, paired_findings, prompt_rates
from bold_eval.analysis.worst_case import prompt_worst_cases, worst_case_labels
from bold_eval.core.errors import MissingFileError, UsageError, UserError

PROJECT_ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("BOLD_DATA_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "bold"))
os.environ.setdefault("BOLD_LEXICON_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "lexicons"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

DEFAULT_DOMAINS = ("religious_ideology", "political_ideology", "profession")
DEFAULT_LABELS = ("sentiment", "gender_polarity", "psycholinguistic:joy", "psycholinguistic:anger",
                  "psycholinguistic:fear")
# Metrics that need no downloaded model; gender polarity by unigram matching (the Table 3 method that needs
# no embedding), so the baseline is the same on every machine.
SCORED_METRICS = ("sentiment", "psycholinguistic", "gender_polarity")
METRIC_OPTIONS = {"gender_polarity": {"methods": ["unigram"]}}
ID_COLUMNS = ("prompt_id", "domain", "group", "category", "name")
CLUSTERS = ("name", "none")
SYNTHETIC_DOMAIN = "synthetic"
PLANTED, NULL = "planted", "null"
# The synthetic model's shift: +0.5 on the logit scale of every name's rate (0.30 -> 0.41, 0.02 -> 0.03).
DEFAULT_SHIFT = 0.5
# The Wikipedia paired null's noise: a fifth of the model's texts take the labels of another text of the page.
DEFAULT_FLIP = 0.2
PAIRED_GROUPS = ("real", "shuffled")
# Worst cases over k samples: spreads of a prompt's location and of its samples around it (logit scale).
DEFAULT_PROMPT_SD = 0.5
DEFAULT_SAMPLE_SD = 1.0
# The planted worst cases whose power is counted (per-prompt column: short name).
WORST_POWER = {"worst_expected_max_toxicity": "max", "worst_toxicity_probability": "probability"}
WIKIPEDIA_WORST_COLUMNS = ("sentiment_compound", "sentiment_label")


# --------------------------------------------------------------------------- data


def wikipedia_scores(domains: Sequence[str], metrics: Sequence[str], data_dir: str | None = None) -> pd.DataFrame:
    """scores.parquet of `bold-eval run --model wikipedia` on `domains`, made in a temporary folder."""
    from bold_eval.run import RunConfig, run

    with tempfile.TemporaryDirectory(prefix="bold-calibration-") as tmp:
        options = {name: value for name, value in METRIC_OPTIONS.items() if name in metrics}
        run(RunConfig(out=Path(tmp), model="wikipedia", domains=list(domains), metrics=list(metrics),
                      metric_options=options, data_dir=data_dir, progress=False, report=False))
        return pd.read_parquet(Path(tmp) / "scores.parquet")


def read_scores(path: str, domains: Sequence[str]) -> pd.DataFrame:
    """A finished run's scores.parquet, restricted to `domains` (each must be there)."""
    if not Path(path).is_file():
        raise MissingFileError(f"--scores {path} does not exist; leave it out to score BOLD's Wikipedia sentences")
    scores = pd.read_parquet(path)
    missing = [column for column in ID_COLUMNS if column not in scores.columns]
    if missing:
        raise UsageError(f"--scores {path} lacks the column(s) {', '.join(missing)}; is it a bold-eval scores.parquet?")
    absent = sorted(set(domains) - set(scores["domain"].astype(str)))
    if absent:
        raise UsageError(f"--scores {path} has no texts of domain(s) {', '.join(absent)}")
    return scores[scores["domain"].isin(list(domains))].reset_index(drop=True)


def select_labels(labels: Sequence[Label], wanted: Sequence[str]) -> list[Label]:
    """The `finding_labels` named by `wanted`: a metric ("sentiment") or one label ("psycholinguistic:joy")."""
    chosen: list[Label] = []
    for token in wanted:
        metric, _, name = token.partition(":")
        found = [label for label in labels if label[0] == metric and (not name or label[1] == name)]
        if not found:
            known = ", ".join(f"{label[0]}:{label[1]}" for label in labels)
            raise UsageError(f"--labels {token!r} matches no label of these scores; known: {known}")
        chosen += [label for label in found if label not in chosen]
    return chosen


def slim(scores: pd.DataFrame, labels: Sequence[Label]) -> pd.DataFrame:
    """Only the columns the tests read (ids and label columns): cheaper to copy to worker processes."""
    columns = [c for c in ID_COLUMNS if c in scores.columns] + sorted({label[2] for label in labels})
    return scores[columns].reset_index(drop=True)


def shuffle_groups(scores: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Within each domain, the (group, category) labels permuted among the (name, group) units.

    A unit's texts stay together and keep their label values; each group keeps its number of units. A name
    listed under two groups (61 profession pages) is two units that move independently.
    """
    shuffled = scores.copy()
    carried = [c for c in ("group", "category") if c in scores.columns]
    for _, part in scores.groupby("domain", sort=True):
        codes = part.groupby(["name", "group"], sort=False).ngroup().to_numpy()
        first = np.unique(codes, return_index=True)[1]  # the first row of unit 0, 1, ...
        order = rng.permutation(len(first))
        for column in carried:
            shuffled.loc[part.index, column] = part[column].to_numpy()[first][order][codes]
    return shuffled


def beta_parameters(rate: float, rho: float) -> tuple[float, float]:
    """Beta(a, b) with mean `rate` and intra-class correlation 1 / (a + b + 1) = `rho` (beta-binomial)."""
    if not 0 < rate < 1 or not 0 < rho < 1:
        raise UsageError(f"a rate and rho must lie strictly between 0 and 1, got rate {rate} and rho {rho}")
    total = (1 - rho) / rho
    return rate * total, (1 - rate) * total


def design_effect(sizes: np.ndarray, rho: float) -> float:
    """Kish's design effect of a mean over clusters of `sizes` with intra-class correlation rho:
    1 + (m - 1) rho, m = sum n^2 / sum n (the text-weighted mean cluster size)."""
    sizes = np.asarray(sizes, dtype=float)
    return float(1 + (np.sum(sizes ** 2) / np.sum(sizes) - 1) * rho)


def bold_sizes(domain: str, data_dir: str | None = None) -> np.ndarray:
    """Texts per name in one BOLD domain (one Wikipedia sentence per prompt)."""
    from bold_eval.data.bold import load_bold

    frame = load_bold(domain, data_dir=data_dir).to_pandas()
    return frame.groupby("name").size().to_numpy()


@dataclass(frozen=True)
class Scenario:
    """One synthetic design: label rate, intra-class correlation, planted effect in group 1 (0: the null)."""

    rate: float
    rho: float
    effect: float = 0.0


@dataclass(frozen=True)
class Layout:
    """Synthetic names: the id columns of every prompt, prompts per name, each name's group (0-based), and per
    prompt its name and its position within the name."""

    columns: dict[str, Any]
    counts: np.ndarray
    group_of: np.ndarray
    rows: np.ndarray
    within: np.ndarray


def synthetic_names(sizes: np.ndarray, *, names: int, groups: int, rng: np.random.Generator) -> Layout:
    """`names` names with prompt counts drawn from `sizes`, in `groups` groups of (nearly) equal size."""
    if groups < 3:
        raise UsageError(f"--groups must be at least 3 (each group is tested against the rest), got {groups}")
    if names < 2 * groups:
        raise UsageError(f"--names must give each group at least two names, got {names} names for {groups} groups")
    counts = rng.choice(np.asarray(sizes), size=names, replace=True)
    group_of = rng.permutation(np.arange(names) % groups)
    rows = np.repeat(np.arange(names), counts)
    within = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    columns = {"prompt_id": [f"{SYNTHETIC_DOMAIN}/{name}/{j}" for name, j in zip(rows, within, strict=True)],
               "domain": SYNTHETIC_DOMAIN,
               "group": np.char.add("g", np.char.zfill((group_of[rows] + 1).astype(str), 2)),
               "name": np.char.add("n", rows.astype(str))}
    return Layout(columns, counts, group_of, rows, within)


def name_rates(layout: Layout, rate: float, rho: float, rng: np.random.Generator, planted: float = 0.0) -> np.ndarray:
    """Each name's own rate of a label: Beta with mean `rate` (`rate + planted` in group g01) and intra-class
    correlation rho; in g01 a + b is unchanged, so rho is the same there."""
    mean = np.full(len(layout.counts), rate)
    mean[layout.group_of == 0] += planted
    a, b = beta_parameters(rate, rho)
    return rng.beta(mean * (a + b), (1 - mean) * (a + b))


def synthetic_scores(sizes: np.ndarray, scenario: Scenario, *, names: int, groups: int,
                     rng: np.random.Generator) -> pd.DataFrame:
    """A scores frame of `names` names (sizes drawn from `sizes`) in `groups` groups of (nearly) equal size,
    with two beta-binomial labels at `scenario.rate`; the `planted` one is `rate + effect` in group g01."""
    layout = synthetic_names(sizes, names=names, groups=groups, rng=rng)
    frame = dict(layout.columns)
    for column in (PLANTED, NULL):
        p = name_rates(layout, scenario.rate, scenario.rho, rng, scenario.effect if column == PLANTED else 0.0)
        hits = rng.binomial(layout.counts, p)
        frame[column] = layout.within < hits[layout.rows]
    return pd.DataFrame(frame)


def synthetic_labels() -> list[Label]:
    return [("synthetic", PLANTED, PLANTED, True, None), ("synthetic", NULL, NULL, True, None)]


# --------------------------------------------------------------------------- paired data: a model and a reference


@dataclass(frozen=True)
class PairedScenario:
    """One synthetic model-vs-reference design: label rate and rho of the names, k samples per prompt, the
    model-wide shift (logit scale), an interaction planted in group g01 (0: the null) and the spread (sd,
    logit scale) of the model's own name effect: how far its view of a person departs from Wikipedia's."""

    rate: float
    rho: float
    samples: int
    shift: float = DEFAULT_SHIFT
    effect: float = 0.0
    spread: float = 0.0


def synthetic_pair(sizes: np.ndarray, scenario: PairedScenario, *, names: int, groups: int,
                   rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(model, reference) on the same prompts, two labels each. Each name has its own rate p of a label
    (`name_rates`, shared by both sources); the reference has one text per prompt, marked with probability p,
    the model `samples` texts per prompt, each marked with probability expit(logit p + shift + u) (more often
    than the reference for everyone: a main effect, no interaction), u ~ Normal(0, spread) per name, plus
    `effect` in group g01 for `planted`."""
    if scenario.samples < 1:
        raise UsageError(f"--samples must be at least 1, got {scenario.samples}")
    layout = synthetic_names(sizes, names=names, groups=groups, rng=rng)
    k, prompts = scenario.samples, len(layout.rows)
    reference: dict[str, Any] = {**layout.columns, "sample": 0}
    model: dict[str, Any] = {column: value if isinstance(value, str) else np.repeat(np.asarray(value), k)
                             for column, value in layout.columns.items()}
    model["sample"] = np.tile(np.arange(k), prompts)
    for column in (PLANTED, NULL):
        p = name_rates(layout, scenario.rate, scenario.rho, rng)
        reference[column] = rng.random(prompts) < p[layout.rows]
        u = rng.normal(0.0, scenario.spread, len(p)) if scenario.spread > 0 else 0.0
        q = special.expit(special.logit(np.clip(p, 1e-12, 1 - 1e-12)) + scenario.shift + u)
        if column == PLANTED:
            q[layout.group_of == 0] = np.minimum(q[layout.group_of == 0] + scenario.effect, 1.0)
        model[column] = rng.random(prompts * k) < np.repeat(q[layout.rows], k)
    return integer_ids(pd.DataFrame(model)), integer_ids(pd.DataFrame(reference))


def integer_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """`prompt_id` as integer codes (the same prompts give the same codes in frames of the same prompts).

    `paired_findings` calls Series.isin(prompt index) per contrast x label, and pandas 3 matches an Arrow
    string column against an index one value at a time (4 us a value: two thirds of a synthetic data set's
    time); integers go through a hash table. The tests and their results are the same."""
    codes = pd.factorize(frame["prompt_id"], sort=True)[0]
    return frame.assign(prompt_id=codes)


def page_noise_model(reference: pd.DataFrame, columns: Sequence[str], *, flip: float, samples: int,
                     rng: np.random.Generator) -> pd.DataFrame:
    """A "model" with no interaction with `reference` by construction: `samples` copies of each reference
    text, each of whose `columns` are, with probability `flip`, those of a random text of the same (name,
    group) unit (the prompt's own text included).

    Within a unit the expected number of marked model texts equals the reference's, whatever the group, so
    every contrast's expected interaction is exactly 0 given the reference. A symmetric label flip would not
    do: it pulls each text toward the other value, by -2 flip (p_a - p_b) on the gap of two groups whose
    reference rates differ (regression to 1/2), a real interaction."""
    if not 0 <= flip <= 1:
        raise UsageError(f"--flip must lie between 0 and 1, got {flip}")
    units = reference.groupby(["domain", "name", "group"], sort=False).ngroup().to_numpy()
    order = np.argsort(units, kind="stable")
    sizes = np.bincount(units)
    starts = np.cumsum(sizes) - sizes
    rows = np.repeat(np.arange(len(reference)), samples)
    unit = units[rows]
    donor = order[starts[unit] + (rng.random(len(rows)) * sizes[unit]).astype(int)]
    source = np.where(rng.random(len(rows)) < flip, donor, rows)
    model = reference.iloc[rows].reset_index(drop=True)
    model["sample"] = np.tile(np.arange(samples), len(reference))
    for column in columns:
        model[column] = reference[column].to_numpy()[source]
    return model


# --------------------------------------------------------------------------- worst cases over k samples


@dataclass(frozen=True)
class WorstScenario:
    """k samples per prompt of a toxicity-like score expit(base + u_name + v_prompt + e_sample), u ~ N(0, name_sd)
    (the clustering), v ~ N(0, prompt_sd), e ~ N(0, sample_sd), all on the logit scale; a sample is toxic at
    score >= 0.5. `rate` is the null's toxicity probability, P(at least one toxic sample of k), which fixes
    the base (`worst_base`); `effect` raises group g01's base (logit). In the paired design the model adds
    `shift` for everyone, u' ~ N(0, spread) per name of its own, and `effect` in g01; the reference has
    `reference_samples` samples per prompt (1 as against Wikipedia, k as in `bold-eval compare`)."""

    rate: float
    name_sd: float
    samples: int
    effect: float = 0.0
    prompt_sd: float = DEFAULT_PROMPT_SD
    sample_sd: float = DEFAULT_SAMPLE_SD
    reference_samples: int = 0  # 0: not paired
    shift: float = DEFAULT_SHIFT
    spread: float = 0.0

    @property
    def base(self) -> float:
        return worst_base(self.rate, self.samples, float(np.hypot(self.name_sd, self.prompt_sd)), self.sample_sd)

    def key(self) -> list[int]:
        """The scenario as non-negative integers, for seeding (a negative shift wraps around)."""
        return [self.samples, self.reference_samples, *(round(value * 1e6) % (1 << 64) for value in (
            self.rate, self.name_sd, self.effect, self.prompt_sd, self.sample_sd, self.shift, self.spread))]


@lru_cache(maxsize=256)
def worst_base(rate: float, samples: int, spread: float, sample_sd: float) -> float:
    """The base b at which P(at least one of `samples` samples toxic) = `rate`, when a prompt's location is
    N(b, spread^2) and a sample is toxic when location + e >= 0, e ~ N(0, sample_sd): 1 - E[Phi(-m / sample_sd)^k]
    over m, by Gauss-Hermite quadrature (numpy), solved with scipy's brentq."""
    if not 0 < rate < 1:
        raise UsageError(f"--worst-rates must lie strictly between 0 and 1, got {rate}")
    if sample_sd <= 0 or samples < 1:
        raise UsageError(f"a worst case needs sample_sd > 0 and k >= 1, got {sample_sd} and {samples}")
    from scipy import optimize

    nodes, weights = np.polynomial.hermite_e.hermegauss(96)
    weights = weights / weights.sum()

    def excess(base: float) -> float:
        none = stats.norm.cdf(-(base + spread * nodes) / sample_sd) ** samples
        return float(1 - weights @ none - rate)

    return float(optimize.brentq(excess, -40.0, 40.0, xtol=1e-10))


def repeat_prompts(layout: Layout, samples: int) -> dict[str, Any]:
    """The id columns of `layout` with each prompt repeated `samples` times, and a `sample` column."""
    columns: dict[str, Any] = {column: value if isinstance(value, str) else np.repeat(np.asarray(value), samples)
                               for column, value in layout.columns.items()}
    columns["sample"] = np.tile(np.arange(samples), len(layout.rows))
    return columns


def toxicity_samples(location: np.ndarray, samples: int, sample_sd: float,
                     rng: np.random.Generator) -> dict[str, np.ndarray]:
    """`samples` texts per prompt of the toxicity metric's columns: `toxicity_score` = expit(location + e) and
    `toxicity_is_toxic` = score >= 0.5 (Section 4.2's threshold)."""
    score = special.expit(np.repeat(location, samples) + rng.normal(0.0, sample_sd, len(location) * samples))
    return {"toxicity_score": score, "toxicity_is_toxic": score >= 0.5}


def sentiment_samples(location: np.ndarray, samples: int, sample_sd: float,
                      rng: np.random.Generator) -> dict[str, np.ndarray]:
    """`samples` texts per prompt of the sentiment metric's columns: compound = 1 - 2 expit(location + e + log 3),
    labelled negative at compound <= -0.5 (Section 4.1), i.e. where location + e >= 0: a sample is negative
    exactly when a toxicity sample of the same location would be toxic, so both measures share `rate`."""
    compound = 1 - 2 * special.expit(np.repeat(location, samples) + rng.normal(0.0, sample_sd, len(location) * samples)
                                     + np.log(3.0))
    label = np.where(compound <= -0.5, "negative", np.where(compound >= 0.5, "positive", "neutral"))
    return {"sentiment_compound": compound, "sentiment_label": label}


def worst_locations(layout: Layout, scenario: WorstScenario, rng: np.random.Generator) -> np.ndarray:
    """Per prompt: base + u_name + v_prompt (logit scale)."""
    u = rng.normal(0.0, scenario.name_sd, len(layout.counts))
    return scenario.base + u[layout.rows] + rng.normal(0.0, scenario.prompt_sd, len(layout.rows))


def worst_texts(sizes: np.ndarray, scenario: WorstScenario, *, names: int, groups: int,
                rng: np.random.Generator) -> pd.DataFrame:
    """k texts per prompt of `names` synthetic names with toxicity (g01's base raised by `effect`) and, as a
    second, independent measure that is null in every group, sentiment; both with the same name, prompt and
    sample spreads."""
    layout = synthetic_names(sizes, names=names, groups=groups, rng=rng)
    planted = np.where(layout.group_of[layout.rows] == 0, scenario.effect, 0.0)
    k, sd = scenario.samples, scenario.sample_sd
    frame = {**repeat_prompts(layout, k),
             **toxicity_samples(worst_locations(layout, scenario, rng) + planted, k, sd, rng),
             **sentiment_samples(worst_locations(layout, scenario, rng), k, sd, rng)}
    return integer_ids(pd.DataFrame(frame))


def worst_pair(sizes: np.ndarray, scenario: WorstScenario, *, names: int, groups: int,
               rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(model, reference) on the same prompts. Per prompt and measure one location base + u_name + v_prompt,
    shared by both; the reference has `reference_samples` samples around it, the model k samples around
    location + shift + u'_name (u' ~ N(0, spread): the model's own view of a name), + effect in g01 for
    toxicity. Without effect no group differs in the model's shift: no interaction."""
    if scenario.reference_samples < 1:
        raise UsageError(f"a paired worst case needs reference samples >= 1, got {scenario.reference_samples}")
    layout = synthetic_names(sizes, names=names, groups=groups, rng=rng)
    k, k_ref, sd = scenario.samples, scenario.reference_samples, scenario.sample_sd
    model, reference = repeat_prompts(layout, k), repeat_prompts(layout, k_ref)
    planted = np.where(layout.group_of[layout.rows] == 0, scenario.effect, 0.0)
    for draw, effect in ((toxicity_samples, planted), (sentiment_samples, 0.0)):
        location = worst_locations(layout, scenario, rng)
        own = rng.normal(0.0, scenario.spread, len(layout.counts))[layout.rows] if scenario.spread > 0 else 0.0
        reference.update(draw(location, k_ref, sd, rng))
        model.update(draw(location + scenario.shift + own + effect, k, sd, rng))
    return integer_ids(pd.DataFrame(model)), integer_ids(pd.DataFrame(reference))


# --------------------------------------------------------------------------- one simulation


def shuffled_trial(index: int, *, scores: pd.DataFrame, labels: Sequence[Label], seed: int, alpha: float,
                   correction: str, clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Shuffle `index`: per cluster unit, the family size, its significant findings and raw rejections."""
    shuffled = shuffle_groups(scores, np.random.default_rng([seed, index]))
    rows = []
    for cluster in clusters:
        tests = group_findings(shuffled, labels, alpha=alpha, correction=correction, cluster=cluster,
                               seed=index, plan_power=False).tests
        tests = tests[tests["testable"].astype(bool)]
        found = tests[tests["significant"].astype(bool)]
        rows.append({"cluster": cluster, "trial": index, "family": len(tests), "findings": len(found),
                     "raw": int((tests["p_value"] < alpha).sum()),
                     "where": [f"{r.domain} {r.contrast} {r.metric}:{r.label}" for r in found.itertuples()]})
    return rows


def synthetic_trial(index: int, *, scenario: Scenario, sizes: np.ndarray, names: int, groups: int, seed: int,
                    alpha: float, correction: str, clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Data set `index` of `scenario`: per cluster unit, false findings (among the true nulls), raw
    rejections, whether the planted group's contrast was found (significant and positive), design effect."""
    key = [seed, index, round(scenario.rate * 1e6), round(scenario.rho * 1e6), round(scenario.effect * 1e6)]
    frame = synthetic_scores(sizes, scenario, names=names, groups=groups, rng=np.random.default_rng(key))
    rows = []
    for cluster in clusters:
        result = group_findings(frame, synthetic_labels(), alpha=alpha, correction=correction, cluster=cluster,
                                seed=index, plan_power=False)
        tests = result.tests[result.tests["testable"].astype(bool)]
        # With a planted effect every contrast of the planted label differs in truth (g01 is in every other
        # group's rest): only the null label's contrasts are true nulls.
        null = tests if scenario.effect == 0 else tests[tests["label"] == NULL]
        planted = tests[(tests["label"] == PLANTED) & (tests["group"] == "g01")]
        rows.append({"cluster": cluster, "trial": index, "family": len(tests), "nulls": len(null),
                     "findings": int(null["significant"].astype(bool).sum()),
                     "raw": int((null["p_value"] < alpha).sum()),
                     "detected": bool(((planted["significant"].astype(bool)) & (planted["difference"] > 0)).any()),
                     "design_effect": float(result.design_effects["design_effect_median"].iloc[0])})
    return rows


def paired_synthetic_trial(index: int, *, scenario: PairedScenario, sizes: np.ndarray, names: int, groups: int,
                           seed: int, alpha: float, correction: str, clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Data set `index` of `scenario` through `paired_findings`: per cluster unit, false findings (among the
    true nulls), raw rejections, whether g01's planted interaction was found (significant and positive) and
    its estimate; the model's main effect and the design effect of the null label's per-prompt d (names)."""
    key = [seed, index, scenario.samples, *(round(value * 1e6) for value in (
        scenario.rate, scenario.rho, scenario.shift, scenario.effect, scenario.spread))]
    model, reference = synthetic_pair(sizes, scenario, names=names, groups=groups, rng=np.random.default_rng(key))
    d = prompt_rates(model, NULL, True)["rate"] - prompt_rates(reference, NULL, True)["rate"]
    names_of = reference.set_index("prompt_id")["name"].reindex(d.index).to_numpy()
    rows = []
    for cluster in clusters:
        tests = paired_findings(model, reference, synthetic_labels(), alpha=alpha, correction=correction,
                                cluster=cluster, seed=index).tests
        tests = tests[tests["testable"].astype(bool)]
        null = tests if scenario.effect == 0 else tests[tests["label"] == NULL]
        planted = tests[(tests["label"] == PLANTED) & (tests["group"] == "g01")]
        rows.append({"cluster": cluster, "trial": index, "family": len(tests), "nulls": len(null),
                     "findings": int(null["significant"].astype(bool).sum()),
                     "raw": int((null["p_value"] < alpha).sum()),
                     "detected": bool((planted["significant"].astype(bool) & (planted["interaction"] > 0)).any()),
                     "interaction": float(planted["interaction"].iloc[0]) if len(planted) else np.nan,
                     "main_effect": float(d.mean()), "design_effect": clustered_design_effect(d.to_numpy(), names_of)})
    return rows


def paired_wikipedia_trial(index: int, *, reference: pd.DataFrame, labels: Sequence[Label], groups: str,
                           flip: float, samples: int, seed: int, alpha: float, correction: str,
                           clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Trial `index` of the Wikipedia paired null: `reference` (with `groups` "shuffled": its groups shuffled
    among the (name, group) units, the model's with them) against `page_noise_model` of it."""
    rng = np.random.default_rng([seed, index, samples, round(flip * 1e6), groups == "shuffled"])
    if groups == "shuffled":
        reference = shuffle_groups(reference, rng)
    model = page_noise_model(reference, sorted({label[2] for label in labels}), flip=flip, samples=samples, rng=rng)
    rows = []
    for cluster in clusters:
        tests = paired_findings(model, reference, labels, alpha=alpha, correction=correction, cluster=cluster,
                                seed=index).tests
        tests = tests[tests["testable"].astype(bool)]
        found = tests[tests["significant"].astype(bool)]
        rows.append({"cluster": cluster, "trial": index, "family": len(tests), "findings": len(found),
                     "raw": int((tests["p_value"] < alpha).sum()),
                     "where": [f"{r.domain} {r.contrast} {r.metric}:{r.label}" for r in found.itertuples()]})
    return rows


def _worst_labels(frame: pd.DataFrame) -> dict[str, Label]:
    """The worst-case labels of `frame`'s columns by per-prompt column (`worst_case.worst_case_labels`)."""
    return {label[2]: label for label in worst_case_labels(frame.columns)}


def _worst_rows(tests: pd.DataFrame, labels: dict[str, Label], effect: float, alpha: float,
                gap: str) -> dict[str, Any]:
    """False findings among the true nulls (every test, or with a planted effect the sentiment ones) and whether
    g01's planted toxicity contrast was found (significant, positive `gap`) per worst case."""
    tests = tests[tests["testable"].astype(bool)]
    null = tests if effect == 0 else tests[tests["metric"] != "toxicity"]
    row = {"family": len(tests), "nulls": len(null), "findings": int(null["significant"].astype(bool).sum()),
           "raw": int((null["p_value"] < alpha).sum())}
    for column, name in WORST_POWER.items():
        planted = tests[(tests["label"] == labels[column][1]) & (tests["group"] == "g01")]
        row[f"detected_{name}"] = bool((planted["significant"].astype(bool) & (planted[gap] > 0)).any())
        row[f"estimate_{name}"] = float(planted[gap].iloc[0]) if len(planted) else np.nan
    return row


def worst_synthetic_trial(index: int, *, scenario: WorstScenario, sizes: np.ndarray, names: int, groups: int,
                          seed: int, alpha: float, correction: str, clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Data set `index` of `scenario` through `prompt_worst_cases` and `group_findings` (the family holds only the
    worst-case tests: four per contrast): per cluster unit, false findings, raw rejections, power, and the
    worst cases' means and the design effect of the expected maximum (names)."""
    texts = worst_texts(sizes, scenario, names=names, groups=groups,
                        rng=np.random.default_rng([seed, index, *scenario.key()]))
    worst = prompt_worst_cases(texts)
    labels = _worst_labels(texts)
    # The text frame's labels are left out (none), so only `worst` is tested; the prompt frame stands in as `scores`,
    # which only the power table would read (no trial plans one).
    measured = {"toxicity_probability": float(worst["worst_toxicity_probability"].astype(float).mean()),
                "max_toxicity": float(worst["worst_expected_max_toxicity"].mean()),
                "design_effect": clustered_design_effect(worst["worst_expected_max_toxicity"].to_numpy(),
                                                         worst["name"].to_numpy())}
    rows = []
    for cluster in clusters:
        tests = group_findings(worst, [], alpha=alpha, correction=correction, cluster=cluster, seed=index,
                               worst=worst, worst_labels=list(labels.values()), plan_power=False).tests
        rows.append({"cluster": cluster, "trial": index, **_worst_rows(tests, labels, scenario.effect, alpha,
                                                                       "difference"), **measured})
    return rows


def worst_paired_trial(index: int, *, scenario: WorstScenario, sizes: np.ndarray, names: int, groups: int,
                       seed: int, alpha: float, correction: str, clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Data set `index` of a paired `scenario` through `paired_findings` with only the worst cases (the text
    labels left out): per cluster unit, false findings, raw rejections, power, the main effect on the
    toxicity probability and the design effect of the per-prompt d of the expected maximum (names)."""
    model, reference = worst_pair(sizes, scenario, names=names, groups=groups,
                                  rng=np.random.default_rng([seed, index, *scenario.key()]))
    worst = (prompt_worst_cases(model), prompt_worst_cases(reference))
    labels = _worst_labels(model)
    d = (worst[0]["worst_expected_max_toxicity"] - worst[1]["worst_expected_max_toxicity"]).to_numpy()
    measured = {"main_effect": float(worst[0]["worst_toxicity_probability"].astype(float).mean()
                                     - worst[1]["worst_toxicity_probability"].astype(float).mean()),
                "model_rate": float(worst[0]["worst_toxicity_probability"].astype(float).mean()),
                "reference_rate": float(worst[1]["worst_toxicity_probability"].astype(float).mean()),
                "design_effect": clustered_design_effect(d, worst[0]["name"].to_numpy())}
    rows = []
    for cluster in clusters:
        tests = paired_findings(model, reference, [], alpha=alpha, correction=correction, cluster=cluster,
                                seed=index, worst=worst, worst_labels=list(labels.values())).tests
        rows.append({"cluster": cluster, "trial": index, **_worst_rows(tests, labels, scenario.effect, alpha,
                                                                       "interaction"), **measured})
    return rows


def worst_wikipedia_trial(index: int, *, scores: pd.DataFrame, samples: int, seed: int, alpha: float,
                          correction: str, clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Trial `index` of the Wikipedia worst-case null: k samples per prompt, each a random text of the prompt's
    (name, group) unit (`page_noise_model` with flip 1: the page's own correlation), reduced by
    `prompt_worst_cases`, then the groups shuffled among the units (`shuffle_groups` on the prompt frame, so a
    unit is never merged with another of the same name) and the worst-case family tested."""
    rng = np.random.default_rng([seed, index, samples, 22])
    texts = page_noise_model(scores, WIKIPEDIA_WORST_COLUMNS, flip=1.0, samples=samples, rng=rng)
    worst = shuffle_groups(prompt_worst_cases(texts), rng)
    labels = list(_worst_labels(texts).values())
    rows = []
    for cluster in clusters:
        tests = group_findings(worst, [], alpha=alpha, correction=correction, cluster=cluster, seed=index,
                               worst=worst, worst_labels=labels, plan_power=False).tests
        tests = tests[tests["testable"].astype(bool)]
        found = tests[tests["significant"].astype(bool)]
        rows.append({"cluster": cluster, "k": samples, "trial": index, "family": len(tests), "findings": len(found),
                     "raw": int((tests["p_value"] < alpha).sum()),
                     "where": [f"{r.domain} {r.contrast} {r.label}" for r in found.itertuples()]})
    return rows


def run_trials(function: Callable[[int], list[dict[str, Any]]], trials: int, jobs: int) -> pd.DataFrame:
    """`function(0..trials-1)` in `jobs` processes (each trial seeds itself: the result does not depend on jobs).

    The objects alive now are frozen out of the garbage collector meanwhile: statsmodels' Holm correction
    (`multipletests`) calls gc.collect() on every family, which otherwise walks every loaded module's objects
    (0.07 s per family with pandas and scipy loaded, 0.3 s with torch), more than the tests themselves.
    """
    gc.freeze()
    try:
        if jobs <= 1 or trials < 2:
            results = [function(index) for index in range(trials)]
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                results = list(pool.map(function, range(trials), chunksize=max(1, trials // (4 * jobs))))
    finally:
        gc.unfreeze()
    return pd.DataFrame([row for rows in results for row in rows])


# --------------------------------------------------------------------------- summaries


def rate_with_interval(count: int, total: int) -> tuple[float, float, float]:
    """count / total with its Clopper-Pearson (exact binomial) 95% interval (statsmodels)."""
    low, high = proportion_confint(count, total, alpha=0.05, method="beta")
    return count / total, float(low), float(high)


def fwer_row(trials: pd.DataFrame, alpha: float) -> dict[str, Any]:
    """FWER with its interval, mean false findings per trial and the uncorrected per-test rejection rate."""
    with_finding = int((trials["findings"] > 0).sum())
    fwer, low, high = rate_with_interval(with_finding, len(trials))
    tested = trials["nulls"].sum() if "nulls" in trials else trials["family"].sum()
    return {"trials": len(trials), "family": float(trials["family"].mean()), "with_finding": with_finding,
            "fwer": fwer, "fwer_low": low, "fwer_high": high, "false_per_trial": float(trials["findings"].mean()),
            "raw_rate": float(trials["raw"].sum() / max(tested, 1)), "within_alpha": bool(low <= alpha)}


def shuffled_summary(trials: pd.DataFrame, alpha: float, keys: Sequence[str] = ("cluster",)) -> pd.DataFrame:
    return pd.DataFrame([{**dict(zip(keys, key, strict=True)), **fwer_row(part, alpha)}
                         for key, part in trials.groupby(list(keys), sort=False)])


def synthetic_summary(trials: pd.DataFrame, alpha: float) -> pd.DataFrame:
    rows = []
    keys = ["rate", "rho", "effect", "cluster"]
    by_name = trials[trials["cluster"] == "name"].groupby(keys[:3], sort=False)["design_effect"].mean()
    for key, part in trials.groupby(keys, sort=False):
        row = dict(zip(keys, key, strict=True))
        row.update(fwer_row(part, alpha))
        detected = int(part["detected"].sum())
        row["detected"], row["power"], row["power_low"], row["power_high"] = (detected,
                                                                               *rate_with_interval(detected, len(part)))
        row["design_effect_expected"] = float(part["design_effect_expected"].iloc[0])
        row["design_effect_measured"] = float(by_name.get(key[:3], np.nan))
        rows.append(row)
    return pd.DataFrame(rows)


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _interval(value: float, low: float, high: float) -> str:
    return f"{_percent(value)} [{100 * low:.1f}, {100 * high:.1f}]"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def shuffled_markdown(summary: pd.DataFrame, trial: str = "shuffle") -> str:
    """FWER per cluster unit (and per `groups`, real or shuffled, in the paired null)."""
    first = [column for column in ("groups", "k") if column in summary.columns]
    header = [*first, "cluster", f"{trial}s", "tests per family", f"{trial}s with a finding", "FWER [95% CI]",
              f"false findings per {trial}", "tests with p < alpha"]
    rows = [(*[getattr(r, column) for column in first], r.cluster, r.trials, f"{r.family:.0f}", r.with_finding,
             _interval(r.fwer, r.fwer_low, r.fwer_high), f"{r.false_per_trial:.2f}", _percent(r.raw_rate))
            for r in summary.itertuples()]
    return markdown_table(header, rows)


def synthetic_null_markdown(summary: pd.DataFrame) -> str:
    header = ["rate", "rho", "design effect (expected / measured)", "cluster", "data sets", "tests per family",
              "FWER [95% CI]", "false findings per data set", "tests with p < alpha"]
    part = summary[summary["effect"] == 0]
    rows = [(f"{r.rate:g}", f"{r.rho:g}", f"{r.design_effect_expected:.1f} / {r.design_effect_measured:.1f}",
             r.cluster, r.trials, f"{r.family:.0f}", _interval(r.fwer, r.fwer_low, r.fwer_high),
             f"{r.false_per_trial:.2f}", _percent(r.raw_rate)) for r in part.itertuples()]
    return markdown_table(header, rows)


def power_markdown(summary: pd.DataFrame) -> str:
    header = ["rate", "effect", "rho", "cluster", "data sets", "power: g01 found [95% CI]",
              "FWER over the null label [95% CI]"]
    part = summary[summary["effect"] > 0]
    rows = [(f"{r.rate:g}", f"+{100 * r.effect:.0f} points", f"{r.rho:g}", r.cluster, r.trials,
             _interval(r.power, r.power_low, r.power_high), _interval(r.fwer, r.fwer_low, r.fwer_high))
            for r in part.itertuples()]
    return markdown_table(header, rows)


def paired_synthetic_summary(trials: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Per paired scenario and cluster unit: FWER, power, and the means of g01's estimated interaction, the
    model's main effect and the design effect of d (names)."""
    rows = []
    keys = ["rate", "rho", "samples", "spread", "effect", "cluster"]
    for key, part in trials.groupby(keys, sort=False):
        row = dict(zip(keys, key, strict=True))
        row.update(fwer_row(part, alpha))
        detected = int(part["detected"].sum())
        row["detected"], row["power"], row["power_low"], row["power_high"] = (detected,
                                                                               *rate_with_interval(detected, len(part)))
        row.update({column: float(part[column].mean()) for column in ("interaction", "main_effect", "design_effect")})
        rows.append(row)
    return pd.DataFrame(rows)


def paired_null_markdown(summary: pd.DataFrame) -> str:
    header = ["rate", "rho", "k", "model's own name effect (sd)", "model - reference", "design effect of d",
              "cluster", "data sets", "tests per family", "FWER [95% CI]", "false findings per data set",
              "tests with p < alpha"]
    part = summary[summary["effect"] == 0]
    rows = [(f"{r.rate:g}", f"{r.rho:g}", r.samples, f"{r.spread:g}", f"{100 * r.main_effect:+.1f} points",
             f"{r.design_effect:.1f}", r.cluster, r.trials, f"{r.family:.0f}",
             _interval(r.fwer, r.fwer_low, r.fwer_high), f"{r.false_per_trial:.2f}", _percent(r.raw_rate))
            for r in part.itertuples()]
    return markdown_table(header, rows)


def paired_power_markdown(summary: pd.DataFrame) -> str:
    header = ["rate", "planted interaction", "rho", "k", "cluster", "data sets", "mean estimate",
              "power: g01 found [95% CI]", "FWER over the null label [95% CI]"]
    part = summary[summary["effect"] > 0]
    rows = [(f"{r.rate:g}", f"+{100 * r.effect:.0f} points", f"{r.rho:g}", r.samples, r.cluster, r.trials,
             f"{100 * r.interaction:+.1f} points", _interval(r.power, r.power_low, r.power_high),
             _interval(r.fwer, r.fwer_low, r.fwer_high)) for r in part.itertuples()]
    return markdown_table(header, rows)


WORST_KEYS = ("rate", "base", "name_sd", "samples", "reference_samples", "spread", "effect", "cluster")
WORST_MEANS = ("toxicity_probability", "max_toxicity", "design_effect", "main_effect", "model_rate", "reference_rate",
               "estimate_max", "estimate_probability")


def worst_summary(trials: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Per worst-case scenario and cluster unit: FWER over the true nulls, power per planted worst case, and the
    means over data sets of the measured rates, estimates and design effects."""
    rows = []
    keys = [key for key in WORST_KEYS if key in trials.columns]
    for key, part in trials.groupby(keys, sort=False):
        row = dict(zip(keys, key, strict=True))
        row.update(fwer_row(part, alpha))
        for name in WORST_POWER.values():
            detected = int(part[f"detected_{name}"].sum())
            row[f"power_{name}"] = rate_with_interval(detected, len(part))
        row.update({column: float(part[column].mean()) for column in WORST_MEANS if column in part})
        rows.append(row)
    return pd.DataFrame(rows)


def _power_cell(value: tuple[float, float, float]) -> str:
    return _interval(*value)


def worst_null_markdown(summary: pd.DataFrame) -> str:
    header = ["P(>=1 toxic of k)", "k", "name sd", "base", "measured: toxicity probability / expected max",
              "design effect of the max (names)", "cluster", "data sets", "tests per family", "FWER [95% CI]",
              "false findings per data set", "tests with p < alpha"]
    part = summary[summary["effect"] == 0]
    rows = [(f"{r.rate:g}", r.samples, f"{r.name_sd:g}", f"{r.base:.2f}",
             f"{_percent(r.toxicity_probability)} / {r.max_toxicity:.3f}", f"{r.design_effect:.1f}", r.cluster,
             r.trials, f"{r.family:.0f}", _interval(r.fwer, r.fwer_low, r.fwer_high), f"{r.false_per_trial:.2f}",
             _percent(r.raw_rate)) for r in part.itertuples()]
    return markdown_table(header, rows)


def worst_power_markdown(summary: pd.DataFrame) -> str:
    header = ["P(>=1 toxic of k)", "k", "name sd", "g01's base raised (logit)",
              "g01 - rest: expected max / probability", "cluster", "data sets", "power: expected max found [95% CI]",
              "power: toxicity probability found [95% CI]",
              "FWER over sentiment (null) [95% CI]"]
    part = summary[summary["effect"] > 0]
    rows = [(f"{r.rate:g}", r.samples, f"{r.name_sd:g}", f"+{r.effect:g}",
             f"{r.estimate_max:+.3f} / {100 * r.estimate_probability:+.1f} points", r.cluster, r.trials,
             _power_cell(r.power_max), _power_cell(r.power_probability), _interval(r.fwer, r.fwer_low, r.fwer_high))
            for r in part.itertuples()]
    return markdown_table(header, rows)


def worst_paired_null_markdown(summary: pd.DataFrame) -> str:
    header = ["k (model / reference)", "name sd", "model's own name effect (sd)",
              "toxicity probability (model / reference)", "design effect of d (max, names)", "cluster", "data sets",
              "tests per family", "FWER [95% CI]", "false findings per data set", "tests with p < alpha"]
    part = summary[summary["effect"] == 0]
    rows = [(f"{r.samples} / {r.reference_samples}", f"{r.name_sd:g}", f"{r.spread:g}",
             f"{_percent(r.model_rate)} / {_percent(r.reference_rate)}", f"{r.design_effect:.1f}", r.cluster,
             r.trials, f"{r.family:.0f}", _interval(r.fwer, r.fwer_low, r.fwer_high), f"{r.false_per_trial:.2f}",
             _percent(r.raw_rate)) for r in part.itertuples()]
    return markdown_table(header, rows)


def worst_paired_power_markdown(summary: pd.DataFrame) -> str:
    header = ["k (model / reference)", "name sd", "g01's model raised (logit)", "mean estimate: max / probability",
              "cluster", "data sets", "power: expected max found [95% CI]",
              "power: toxicity probability found [95% CI]", "FWER over sentiment (null) [95% CI]"]
    part = summary[summary["effect"] > 0]
    rows = [(f"{r.samples} / {r.reference_samples}", f"{r.name_sd:g}", f"+{r.effect:g}",
             f"{r.estimate_max:+.3f} / {100 * r.estimate_probability:+.1f} points", r.cluster, r.trials,
             _power_cell(r.power_max), _power_cell(r.power_probability), _interval(r.fwer, r.fwer_low, r.fwer_high))
            for r in part.itertuples()]
    return markdown_table(header, rows)


def design_effects_markdown(scores: pd.DataFrame, labels: Sequence[Label], unit: str = "texts") -> str:
    """Per domain of the real scores: texts (or prompts), names and the design effect of the labels
    (`findings.design_effects`)."""
    from bold_eval.analysis.findings import design_effects

    table = design_effects(scores, labels, "name")
    rows = [(r.domain, r.texts, r.names, f"{r.texts_per_name:.1f}", f"{r.design_effect_median:.2f}",
             f"{r.design_effect_max:.2f}") for r in table.itertuples()]
    return markdown_table(["domain", unit, "names", f"{unit} per name", "design effect (median label)",
                           "design effect (max)"], rows)


def false_findings_markdown(trials: pd.DataFrame, cluster: str = "name", top: int = 10, trial: str = "shuffle") -> str:
    """Where the false findings of `cluster` fell (domain, contrast, label), most frequent first."""
    where = pd.Series([place for places in trials.loc[trials["cluster"] == cluster, "where"] for place in places],
                      dtype=object)
    if where.empty:
        return f"No false finding with --cluster {cluster}."
    counts = where.value_counts().head(top)
    return markdown_table([f"false finding (--cluster {cluster})", f"{trial}s"], counts.items())


# --------------------------------------------------------------------------- command line


PARTS = ("shuffled", "synthetic", "paired-wikipedia", "paired-synthetic", "worst-synthetic", "worst-paired-synthetic",
         "worst-wikipedia")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", help="a Wikipedia-baseline scores.parquet; default: score BOLD's Wikipedia "
                                         "sentences now (bold_eval.run, --model wikipedia, about 12 s)")
    parser.add_argument("--data-dir", default=None, help="BOLD folder; default $BOLD_DATA_DIR")
    parser.add_argument("--domains", nargs="+", default=list(DEFAULT_DOMAINS),
                        help="domains of the Wikipedia nulls (shuffled, paired-wikipedia)")
    parser.add_argument("--labels", nargs="+", default=list(DEFAULT_LABELS),
                        help="metrics or metric:label pairs of bold_eval.analysis.summary.finding_labels")
    parser.add_argument("--shuffles", type=int, default=100)
    parser.add_argument("--synthetic-sims", type=int, default=200, help="data sets per synthetic scenario")
    parser.add_argument("--names", type=int, default=300, help="names per synthetic data set")
    parser.add_argument("--groups", type=int, default=6, help="groups per synthetic data set")
    parser.add_argument("--sizes-domain", default="profession", help="BOLD domain whose texts per name are drawn")
    parser.add_argument("--rhos", type=float, nargs="+", default=[0.05, 0.2])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.3, 0.02], help="null scenarios' label rates")
    parser.add_argument("--effects", type=float, nargs="+", default=[0.08, 0.15], help="planted differences")
    parser.add_argument("--power-rate", type=float, default=0.3, help="base rate the effects are planted on")
    paired = parser.add_argument_group("paired (model against a reference on the same prompts)")
    paired.add_argument("--paired-trials", type=int, default=20,
                        help="paired-wikipedia: page-noise models per --paired-groups")
    paired.add_argument("--paired-groups", nargs="+", default=["shuffled"], choices=list(PAIRED_GROUPS),
                        help="paired-wikipedia: the real groups, or groups shuffled among the names in both frames")
    paired.add_argument("--flip", type=float, default=DEFAULT_FLIP,
                        help="paired-wikipedia: chance a model text takes another text's labels of the same page")
    paired.add_argument("--flip-samples", type=int, default=5, help="paired-wikipedia: model texts per prompt")
    paired.add_argument("--paired-sims", type=int, default=100, help="paired-synthetic: data sets per null scenario")
    paired.add_argument("--paired-power-sims", type=int, default=40,
                        help="paired-synthetic: data sets per planted interaction (--cluster name only)")
    paired.add_argument("--paired-none-sims", type=int, default=20,
                        help="paired-synthetic: the first data sets of each null scenario also tested with "
                             "--cluster none (each prompt a unit)")
    paired.add_argument("--paired-clusters", nargs="+", default=["name"], choices=list(CLUSTERS),
                        help="paired-wikipedia: cluster units (none: each of 12,818 prompts a unit)")
    paired.add_argument("--samples", type=int, nargs="+", default=[1, 5], help="paired-synthetic: model texts per "
                                                                                "prompt (k)")
    paired.add_argument("--shift", type=float, default=DEFAULT_SHIFT,
                        help="paired-synthetic: the model's shift for everyone, logit scale")
    paired.add_argument("--spread", type=float, default=1.0,
                        help="paired-synthetic: sd (logit) of the model's own name effect in one more null "
                             "scenario (--power-rate, largest rho and k); 0 leaves it out")
    paired.add_argument("--paired-effects", type=float, nargs="+", default=[0.1, 0.2],
                        help="paired-synthetic: interactions planted in g01 on --power-rate")
    worst = parser.add_argument_group("worst cases over k samples")
    worst.add_argument("--worst-rates", type=float, nargs="+", default=[0.3, 0.04],
                       help="worst-*synthetic: null toxicity probabilities, P(>=1 toxic of k), which fix the base; "
                            "the first also for power")
    worst.add_argument("--worst-samples", type=int, nargs="+", default=[5, 25], help="worst-*synthetic: k")
    worst.add_argument("--worst-name-sds", type=float, nargs="+", default=[0.5, 1.5],
                       help="worst-*synthetic: sd of the name effect (logit): the clustering")
    worst.add_argument("--worst-prompt-sd", type=float, default=DEFAULT_PROMPT_SD, help="sd of the prompt effect")
    worst.add_argument("--worst-sample-sd", type=float, default=DEFAULT_SAMPLE_SD, help="sd of a sample around it")
    worst.add_argument("--worst-effects", type=float, nargs="+", default=[0.5, 1.0],
                       help="worst-*synthetic: g01's planted toxicity (logit) for power")
    worst.add_argument("--worst-sims", type=int, default=40, help="worst-synthetic: data sets per null scenario")
    worst.add_argument("--worst-power-sims", type=int, default=25, help="worst-synthetic: data sets per planted effect")
    worst.add_argument("--worst-reference-samples", nargs="+", default=["1", "k"], choices=["1", "k"],
                       help="worst-paired-synthetic: the reference's samples per prompt (1 as against Wikipedia, k "
                            "as in compare)")
    worst.add_argument("--worst-spread", type=float, default=1.0,
                       help="worst-paired-synthetic: sd (logit) of the model's own name effect in one more null "
                            "scenario (largest name sd, smallest k); 0 leaves it out")
    worst.add_argument("--worst-paired-sims", type=int, default=40,
                       help="worst-paired-synthetic: data sets per null scenario")
    worst.add_argument("--worst-paired-none-sims", type=int, default=5,
                       help="worst-paired-synthetic: the first data sets of each null scenario also with --cluster "
                            "none (each prompt a unit)")
    worst.add_argument("--worst-paired-power-sims", type=int, default=25,
                       help="worst-paired-synthetic: data sets per planted interaction (--cluster name only)")
    worst.add_argument("--worst-wikipedia-trials", type=int, default=30, help="worst-wikipedia: shuffles per k")
    worst.add_argument("--worst-wikipedia-samples", type=int, nargs="+", default=[5, 25], help="worst-wikipedia: k")
    parser.add_argument("--clusters", nargs="+", default=list(CLUSTERS), choices=list(CLUSTERS))
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--correction", default="holm", choices=["holm", "bh"])
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--out", help="write the tables as markdown here")
    args = parser.parse_args(argv)
    for name in ("shuffles", "synthetic_sims", "paired_trials", "paired_sims", "paired_power_sims", "flip_samples",
                 "jobs", "worst_sims", "worst_power_sims", "worst_paired_sims", "worst_paired_power_sims",
                 "worst_wikipedia_trials"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    for name in ("paired_none_sims", "worst_paired_none_sims"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be 0 or more, got {getattr(args, name)}")
    if min(args.worst_samples + args.worst_wikipedia_samples) < 2:
        raise UsageError(f"a worst case needs k >= 2 samples per prompt, got "
                         f"{min(args.worst_samples + args.worst_wikipedia_samples)}")
    if args.worst_sample_sd <= 0 or args.worst_prompt_sd < 0 or min(args.worst_name_sds) < 0:
        raise UsageError("--worst-sample-sd must be above 0, --worst-prompt-sd and --worst-name-sds 0 or more")
    for rate in args.worst_rates:
        worst_base(rate, min(args.worst_samples), 1.0, 1.0)
    if min(args.samples) < 1:
        raise UsageError(f"--samples must be at least 1, got {min(args.samples)}")
    if not 0 <= args.flip <= 1:
        raise UsageError(f"--flip must lie between 0 and 1, got {args.flip}")
    for effect in args.effects:
        beta_parameters(args.power_rate + effect, args.rhos[0])
    return args


def shuffled_section(args: argparse.Namespace, data: pd.DataFrame, labels: Sequence[Label],
                     settings: dict[str, Any]) -> list[str]:
    started = time.perf_counter()
    print(f"shuffled nulls: {args.shuffles} shuffles of {len(data)} texts ...", file=sys.stderr, flush=True)
    trials = run_trials(partial(shuffled_trial, scores=data, labels=labels, **settings), args.shuffles, args.jobs)
    return [f"## Shuffled nulls on the Wikipedia baseline\n\n{args.shuffles} shuffles of the group labels among the "
            f"(name, group) units of {', '.join(args.domains)} ({len(data)} texts, "
            f"{data.groupby(['domain', 'name']).ngroups} names); labels: {_label_list(labels)}. "
            f"{time.perf_counter() - started:.0f} s.", design_effects_markdown(data, labels),
            shuffled_markdown(shuffled_summary(trials, args.alpha)), false_findings_markdown(trials)]


def synthetic_section(args: argparse.Namespace, sizes: np.ndarray, settings: dict[str, Any]) -> list[str]:
    started = time.perf_counter()
    scenarios = [Scenario(rate, rho) for rate in args.rates for rho in args.rhos]
    scenarios += [Scenario(args.power_rate, rho, effect) for effect in args.effects for rho in args.rhos]
    frames = []
    for scenario in scenarios:
        print(f"synthetic: {scenario}, {args.synthetic_sims} data sets ...", file=sys.stderr, flush=True)
        trials = run_trials(partial(synthetic_trial, scenario=scenario, sizes=sizes, names=args.names,
                                    groups=args.groups, **settings), args.synthetic_sims, args.jobs)
        frames.append(trials.assign(rate=scenario.rate, rho=scenario.rho, effect=scenario.effect,
                                    design_effect_expected=design_effect(sizes, scenario.rho)))
    summary = synthetic_summary(pd.concat(frames, ignore_index=True), args.alpha)
    return [f"## Synthetic clustered data\n\n{args.synthetic_sims} data sets per scenario: {args.names} names with "
            f"{_sizes_text(args, sizes)}, {args.groups} groups, two beta-binomial labels per data set (one family of "
            f"{2 * args.groups} group-vs-rest tests). {time.perf_counter() - started:.0f} s.\n\n"
            "### Null: no group differs", synthetic_null_markdown(summary),
            f"### Power: group g01's rate of one label raised from {args.power_rate:g}; the other label is null in "
            "every group", power_markdown(summary)]


def paired_wikipedia_section(args: argparse.Namespace, data: pd.DataFrame, labels: Sequence[Label],
                             settings: dict[str, Any]) -> list[str]:
    started = time.perf_counter()
    reference = integer_ids(data)
    frames = []
    for groups in args.paired_groups:
        print(f"paired Wikipedia null: {args.paired_trials} page-noise models, {groups} groups ...", file=sys.stderr,
              flush=True)
        trials = run_trials(partial(paired_wikipedia_trial, reference=reference, labels=labels, groups=groups,
                                    flip=args.flip, samples=args.flip_samples,
                                    **{**settings, "clusters": args.paired_clusters}), args.paired_trials, args.jobs)
        frames.append(trials.assign(groups=groups))
    trials = pd.concat(frames, ignore_index=True)
    summary = shuffled_summary(trials, args.alpha, keys=("groups", "cluster"))
    return [f"## Paired null on the Wikipedia baseline\n\nReference: the Wikipedia scores of {', '.join(args.domains)} "
            f"({len(data)} prompts). Model: {args.flip_samples} texts per prompt, each the prompt's own Wikipedia "
            f"text whose labels are, with probability {args.flip:g}, those of a random text of the same (name, group) "
            f"unit (no interaction by construction); groups {' / '.join(args.paired_groups)} (shuffled: permuted "
            f"among the (name, group) units, in both frames alike). {args.paired_trials} models per row; labels: "
            f"{_label_list(labels)}. {time.perf_counter() - started:.0f} s.",
            shuffled_markdown(summary, trial="model"), false_findings_markdown(trials, trial="model")]


def paired_synthetic_section(args: argparse.Namespace, sizes: np.ndarray, settings: dict[str, Any]) -> list[str]:
    started = time.perf_counter()
    scenarios = [(PairedScenario(rate, rho, k, args.shift), args.paired_sims) for rate in args.rates
                 for rho in args.rhos for k in args.samples]
    if args.spread > 0:
        scenarios.append((PairedScenario(args.power_rate, max(args.rhos), max(args.samples), args.shift,
                                         spread=args.spread), args.paired_sims))
    scenarios += [(PairedScenario(args.power_rate, rho, k, args.shift, effect), args.paired_power_sims)
                  for effect in args.paired_effects for rho in args.rhos for k in args.samples]
    frames = []
    for scenario, sims in scenarios:
        # --cluster none on the first data sets of the null scenarios only (the same data sets: each is seeded by
        # its index); the planted interactions with the default unit only.
        runs = [([c for c in args.clusters if c != "none"], sims),
                (["none"], min(sims, args.paired_none_sims) if scenario.effect == 0 and "none" in args.clusters else 0)]
        for clusters, count in runs:
            if not clusters or not count:
                continue
            print(f"paired synthetic: {scenario}, {count} data sets, --cluster {' '.join(clusters)} ...",
                  file=sys.stderr, flush=True)
            trials = run_trials(partial(paired_synthetic_trial, scenario=scenario, sizes=sizes, names=args.names,
                                        groups=args.groups, **{**settings, "clusters": clusters}), count, args.jobs)
            frames.append(trials.assign(rate=scenario.rate, rho=scenario.rho, samples=scenario.samples,
                                        spread=scenario.spread, effect=scenario.effect))
    summary = paired_synthetic_summary(pd.concat(frames, ignore_index=True), args.alpha)
    return [f"## Synthetic paired data: a model against a reference\n\n{args.names} names with "
            f"{_sizes_text(args, sizes)} (prompts per name), {args.groups} groups; per label each name has a "
            f"beta-binomial rate p, the reference one text per prompt marked with probability p, the model k texts "
            f"per prompt marked with probability expit(logit p + {args.shift:g}) (a main effect for every group, no "
            f"interaction); two labels per data set (one family of {2 * args.groups} group-vs-rest interactions). "
            f"{args.paired_sims} data sets per null scenario ({args.paired_none_sims} of them also with --cluster "
            f"none), {args.paired_power_sims} per planted interaction. "
            f"{time.perf_counter() - started:.0f} s.\n\n### Null: no interaction",
            paired_null_markdown(summary),
            f"### Power: group g01's model rate of one label raised by the planted interaction above its main effect "
            f"(rate {args.power_rate:g}); the other label has no interaction", paired_power_markdown(summary)]


def _worst_spreads(args: argparse.Namespace) -> str:
    return (f"u_name ~ N(0, name sd), v_prompt ~ N(0, {args.worst_prompt_sd:g}), e_sample ~ N(0, "
            f"{args.worst_sample_sd:g}) on the logit scale")


def _worst_runs(args: argparse.Namespace, trial: Callable[..., list[dict[str, Any]]],
                scenarios: Sequence[tuple[WorstScenario, int, int]], sizes: np.ndarray, settings: dict[str, Any],
                label: str) -> pd.DataFrame:
    """`trial` over each (scenario, data sets with the non-none units, first data sets also with none)."""
    frames = []
    for scenario, sims, none_sims in scenarios:
        runs = [([c for c in args.clusters if c != "none"], sims), (["none"] if "none" in args.clusters else [],
                                                                     none_sims)]
        for clusters, count in runs:
            if not clusters or not count:
                continue
            print(f"{label}: {scenario}, {count} data sets, --cluster {' '.join(clusters)} ...", file=sys.stderr,
                  flush=True)
            trials = run_trials(partial(trial, scenario=scenario, sizes=sizes, names=args.names, groups=args.groups,
                                        **{**settings, "clusters": clusters}), count, args.jobs)
            frames.append(trials.assign(rate=scenario.rate, base=scenario.base, name_sd=scenario.name_sd,
                                        samples=scenario.samples, reference_samples=scenario.reference_samples,
                                        spread=scenario.spread, effect=scenario.effect))
    return pd.concat(frames, ignore_index=True)


def worst_synthetic_section(args: argparse.Namespace, sizes: np.ndarray, settings: dict[str, Any]) -> list[str]:
    started = time.perf_counter()
    spreads = dict(prompt_sd=args.worst_prompt_sd, sample_sd=args.worst_sample_sd)
    scenarios = [(WorstScenario(rate, sd, k, **spreads), args.worst_sims, args.worst_sims)
                 for rate in args.worst_rates for k in args.worst_samples for sd in args.worst_name_sds]
    scenarios += [(WorstScenario(args.worst_rates[0], sd, k, effect, **spreads), args.worst_power_sims,
                   args.worst_power_sims)
                  for effect in args.worst_effects for k in args.worst_samples for sd in args.worst_name_sds]
    summary = worst_summary(_worst_runs(args, worst_synthetic_trial, scenarios, sizes, settings, "worst synthetic"),
                            args.alpha)
    return [f"## Worst cases over k samples: synthetic names\n\n{args.names} names with {_sizes_text(args, sizes)} "
            f"(prompts per name), {args.groups} groups assigned at random; each prompt has k samples of a "
            f"toxicity score expit(base + u_name + v_prompt + e_sample), {_worst_spreads(args)}, toxic at >= 0.5, "
            f"and of a sentiment compound drawn the same way but independently (1 - 2 expit(... + log 3), negative "
            f"at <= -0.5, so P(>=1 negative of k) = P(>=1 toxic of k)), null in every group. Reduced by "
            f"`prompt_worst_cases`; one family of {4 * args.groups} group-vs-rest tests of the four worst cases "
            f"(`group_findings` with no per-text label). {args.worst_sims} data sets per null scenario, "
            f"{args.worst_power_sims} per planted effect. {time.perf_counter() - started:.0f} s.\n\n"
            "### Null: no group differs", worst_null_markdown(summary),
            "### Power: group g01's toxicity base raised; sentiment is null in every group (its tests give the FWER)",
            worst_power_markdown(summary)]


def worst_paired_section(args: argparse.Namespace, sizes: np.ndarray, settings: dict[str, Any]) -> list[str]:
    started = time.perf_counter()
    spreads = dict(prompt_sd=args.worst_prompt_sd, sample_sd=args.worst_sample_sd, shift=args.shift)
    k_min, rate = min(args.worst_samples), args.worst_rates[0]

    def references(k: int) -> list[int]:
        return [1 if choice == "1" else k for choice in args.worst_reference_samples]

    none_sims = min(args.worst_paired_sims, args.worst_paired_none_sims)
    scenarios = [(WorstScenario(rate, sd, k, reference_samples=k_ref, **spreads), args.worst_paired_sims, none_sims)
                 for k in args.worst_samples for k_ref in references(k) for sd in args.worst_name_sds]
    if args.worst_spread > 0:
        scenarios.append((WorstScenario(rate, max(args.worst_name_sds), k_min, reference_samples=references(k_min)[-1],
                                        spread=args.worst_spread, **spreads), args.worst_paired_sims, none_sims))
    scenarios += [(WorstScenario(rate, sd, k_min, effect, reference_samples=references(k_min)[-1], **spreads),
                   args.worst_paired_power_sims, 0) for effect in args.worst_effects for sd in args.worst_name_sds]
    summary = worst_summary(_worst_runs(args, worst_paired_trial, scenarios, sizes, settings, "worst paired"),
                            args.alpha)
    return [f"## Worst cases over k samples: a model against a reference\n\n{args.names} names with "
            f"{_sizes_text(args, sizes)} (prompts per name), {args.groups} groups assigned at random; per prompt and "
            f"measure (toxicity, and sentiment drawn the same way but independently) one location base + u_name + "
            f"v_prompt shared by both sources ({_worst_spreads(args)}; base for P(>=1 toxic of k) = {rate:g} in the "
            f"reference with k samples); the reference has 1 or k samples around it, the model k samples around "
            f"location + {args.shift:g} (more toxic for everyone: a main effect, no interaction), in one scenario "
            f"plus a name effect of its own. Both reduced by `prompt_worst_cases`; one family of {4 * args.groups} "
            f"group-vs-rest interactions of the four worst cases (`paired_findings` with no per-text label). "
            f"{args.worst_paired_sims} data sets per null scenario ({none_sims} of them also with --cluster none: "
            f"prompts as units), {args.worst_paired_power_sims} per planted interaction. "
            f"{time.perf_counter() - started:.0f} s.\n\n### Null: no interaction", worst_paired_null_markdown(summary),
            "### Power: group g01's model toxicity raised above the main effect; sentiment has no interaction",
            worst_paired_power_markdown(summary)]


def worst_wikipedia_section(args: argparse.Namespace, scores: pd.DataFrame, settings: dict[str, Any]) -> list[str]:
    started = time.perf_counter()
    data = integer_ids(scores[[*ID_COLUMNS, *WIKIPEDIA_WORST_COLUMNS]])
    frames, deffs = [], []
    for k in args.worst_wikipedia_samples:
        print(f"worst Wikipedia: k = {k}, {args.worst_wikipedia_trials} shuffles ...", file=sys.stderr, flush=True)
        frames.append(run_trials(partial(worst_wikipedia_trial, scores=data, samples=k, **settings),
                                 args.worst_wikipedia_trials, args.jobs))
        texts = page_noise_model(data, WIKIPEDIA_WORST_COLUMNS, flip=1.0, samples=k,
                                 rng=np.random.default_rng([args.seed, k]))
        table = design_effects_markdown(prompt_worst_cases(texts), worst_case_labels(texts.columns), "prompts")
        deffs += [f"k = {k}, one draw: the worst cases' design effects (names as clusters)", table]
    trials = pd.concat(frames, ignore_index=True)
    trials["where"] = [[f"k = {r.k}: {place}" for place in r.where] for r in trials.itertuples()]
    summary = shuffled_summary(trials, args.alpha, keys=("k", "cluster"))
    return [f"## Worst cases over k samples on the Wikipedia baseline\n\nBOLD's Wikipedia sentences of "
            f"{', '.join(args.domains)} ({len(data)} prompts, {data.groupby(['domain', 'name']).ngroups} names), "
            f"scored with sentiment; each prompt gets k samples, each a random sentence of its (name, group) unit "
            f"(the page: drawn with replacement, the prompt's own included), reduced by `prompt_worst_cases` "
            f"(expected minimum compound, P(>=1 negative of k)); then the groups shuffled among the units. "
            f"{args.worst_wikipedia_trials} shuffles per k, each with its own draw. "
            f"{time.perf_counter() - started:.0f} s.", *deffs, shuffled_markdown(summary),
            false_findings_markdown(trials)]


def _label_list(labels: Sequence[Label]) -> str:
    return ", ".join(f"{label[0]}:{label[1]}" for label in labels)


def _sizes_text(args: argparse.Namespace, sizes: np.ndarray) -> str:
    return (f"{args.sizes_domain}'s texts per name (mean {sizes.mean():.1f}, text-weighted "
            f"{np.sum(sizes ** 2) / np.sum(sizes):.1f})")


def main(argv: Sequence[str] | None = None) -> str:
    """Run the chosen parts; print (and with --out write) the markdown tables. Returns the markdown."""
    args = parse_args(argv)
    settings = dict(alpha=args.alpha, correction=args.correction, clusters=args.clusters, seed=args.seed)
    sections = [f"Settings: alpha {args.alpha}, correction {args.correction}, seed {args.seed}, jobs {args.jobs}; "
                f"python {platform.python_version()}, {os.cpu_count()} CPUs."]
    worst_wikipedia: list[str] = []
    if {"shuffled", "paired-wikipedia", "worst-wikipedia"} & set(args.parts):
        tested = {"shuffled", "paired-wikipedia"} & set(args.parts)
        metrics = [m for m in SCORED_METRICS if (tested and any(token.partition(":")[0] == m for token in args.labels))
                   or (m == "sentiment" and "worst-wikipedia" in args.parts)]
        scores = (read_scores(args.scores, args.domains) if args.scores
                  else wikipedia_scores(args.domains, metrics, args.data_dir))
        if tested:
            from bold_eval.analysis.summary import finding_labels

            labels = select_labels(finding_labels(scores), args.labels)
            data = slim(scores, labels)
            if "shuffled" in args.parts:
                sections += shuffled_section(args, data, labels, settings)
            if "paired-wikipedia" in args.parts:
                sections += paired_wikipedia_section(args, data, labels, settings)
        if "worst-wikipedia" in args.parts:
            missing = [column for column in WIKIPEDIA_WORST_COLUMNS if column not in scores.columns]
            if missing:
                raise UsageError(f"worst-wikipedia needs sentiment scores; --scores lacks {', '.join(missing)}")
            worst_wikipedia = worst_wikipedia_section(args, scores, settings)
    if {"synthetic", "paired-synthetic", "worst-synthetic", "worst-paired-synthetic"} & set(args.parts):
        sizes = bold_sizes(args.sizes_domain, args.data_dir)
        if "synthetic" in args.parts:
            sections += synthetic_section(args, sizes, settings)
        if "paired-synthetic" in args.parts:
            sections += paired_synthetic_section(args, sizes, settings)
        if "worst-synthetic" in args.parts:
            sections += worst_synthetic_section(args, sizes, settings)
        if "worst-paired-synthetic" in args.parts:
            sections += worst_paired_section(args, sizes, settings)
    sections += worst_wikipedia  # after the synthetic worst cases, whose section introduces them
    text = "\n\n".join(sections) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    try:
        main()
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(error.exit_status)
