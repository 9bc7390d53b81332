"""Do the findings' tests reject at the rate they claim? Calibration by simulation (issue 19, point 2).

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
    .venv/bin/python benchmarks/calibration.py --parts paired-wikipedia paired-synthetic --paired-groups shuffled real \\
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
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special
from statsmodels.stats.proportion import proportion_confint

from bold_eval.analysis.clustered import design_effect as clustered_design_effect
from bold_eval.analysis.findings import Label, group_findings, paired_findings, prompt_rates
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


# --------------------------------------------------------------------------- data


def wikipedia_scores(domains: Sequence[str], metrics: Sequence[str], data_dir: str | None = None) -> pd.DataFrame:
    """scores.parquet of `bold-eval run --model wikipedia` on `domains`, made in a temporary folder."""
    from bold_eval.run import RunConfig, run

    with tempfile.TemporaryDirectory(prefix="bold-calibration-") as tmp:
        options = {name: value for name, value in METRIC_OPTIONS.items() if name in metrics}
        run(RunConfig(out=Path(tmp), model="wikipedia", domains=list(domains), metrics=list(metrics),
                      metric_options=options, data_dir=data_dir, progress=False))
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


# --------------------------------------------------------------------------- one simulation


def shuffled_trial(index: int, *, scores: pd.DataFrame, labels: Sequence[Label], seed: int, alpha: float,
                   correction: str, clusters: Sequence[str]) -> list[dict[str, Any]]:
    """Shuffle `index`: per cluster unit, the family size, its significant findings and raw rejections."""
    shuffled = shuffle_groups(scores, np.random.default_rng([seed, index]))
    rows = []
    for cluster in clusters:
        tests = group_findings(shuffled, labels, alpha=alpha, correction=correction, cluster=cluster,
                               seed=index)["tests"]
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
                                seed=index)
        tests = result["tests"][result["tests"]["testable"].astype(bool)]
        # With a planted effect every contrast of the planted label differs in truth (g01 is in every other
        # group's rest): only the null label's contrasts are true nulls.
        null = tests if scenario.effect == 0 else tests[tests["label"] == NULL]
        planted = tests[(tests["label"] == PLANTED) & (tests["group"] == "g01")]
        rows.append({"cluster": cluster, "trial": index, "family": len(tests), "nulls": len(null),
                     "findings": int(null["significant"].astype(bool).sum()),
                     "raw": int((null["p_value"] < alpha).sum()),
                     "detected": bool(((planted["significant"].astype(bool)) & (planted["difference"] > 0)).any()),
                     "design_effect": float(result["design_effects"]["design_effect_median"].iloc[0])})
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
                                cluster=cluster, seed=index)["tests"]
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
                                seed=index)["tests"]
        tests = tests[tests["testable"].astype(bool)]
        found = tests[tests["significant"].astype(bool)]
        rows.append({"cluster": cluster, "trial": index, "family": len(tests), "findings": len(found),
                     "raw": int((tests["p_value"] < alpha).sum()),
                     "where": [f"{r.domain} {r.contrast} {r.metric}:{r.label}" for r in found.itertuples()]})
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
    first = ["groups"] if "groups" in summary.columns else []
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


def design_effects_markdown(scores: pd.DataFrame, labels: Sequence[Label]) -> str:
    """Per domain of the real scores: texts, names and the design effect of the labels (`findings.design_effects`)."""
    from bold_eval.analysis.findings import design_effects

    table = design_effects(scores, labels, "name")
    rows = [(r.domain, r.texts, r.names, f"{r.texts_per_name:.1f}", f"{r.design_effect_median:.2f}",
             f"{r.design_effect_max:.2f}") for r in table.itertuples()]
    return markdown_table(["domain", "texts", "names", "texts per name", "design effect (median label)",
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


PARTS = ("shuffled", "synthetic", "paired-wikipedia", "paired-synthetic")


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
                             "--cluster none (a permutation over prompts, 3,000 units: 7 times name's cost)")
    paired.add_argument("--paired-clusters", nargs="+", default=["name"], choices=list(CLUSTERS),
                        help="paired-wikipedia: cluster units (none permutes each of 12,818 prompts: 46 CPU s a "
                             "model against name's 6)")
    paired.add_argument("--samples", type=int, nargs="+", default=[1, 5], help="paired-synthetic: model texts per "
                                                                                "prompt (k)")
    paired.add_argument("--shift", type=float, default=DEFAULT_SHIFT,
                        help="paired-synthetic: the model's shift for everyone, logit scale")
    paired.add_argument("--spread", type=float, default=1.0,
                        help="paired-synthetic: sd (logit) of the model's own name effect in one more null "
                             "scenario (--power-rate, largest rho and k); 0 leaves it out")
    paired.add_argument("--paired-effects", type=float, nargs="+", default=[0.1, 0.2],
                        help="paired-synthetic: interactions planted in g01 on --power-rate")
    parser.add_argument("--clusters", nargs="+", default=list(CLUSTERS), choices=list(CLUSTERS))
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--correction", default="holm", choices=["holm", "bh"])
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--out", help="write the tables as markdown here")
    args = parser.parse_args(argv)
    for name in ("shuffles", "synthetic_sims", "paired_trials", "paired_sims", "paired_power_sims", "flip_samples",
                 "jobs"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.paired_none_sims < 0:
        raise UsageError(f"--paired-none-sims must be 0 or more, got {args.paired_none_sims}")
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
    if {"shuffled", "paired-wikipedia"} & set(args.parts):
        metrics = [m for m in SCORED_METRICS if any(token.partition(":")[0] == m for token in args.labels)]
        scores = (read_scores(args.scores, args.domains) if args.scores
                  else wikipedia_scores(args.domains, metrics, args.data_dir))
        from bold_eval.analysis.summary import finding_labels

        labels = select_labels(finding_labels(scores), args.labels)
        data = slim(scores, labels)
        if "shuffled" in args.parts:
            sections += shuffled_section(args, data, labels, settings)
        if "paired-wikipedia" in args.parts:
            sections += paired_wikipedia_section(args, data, labels, settings)
    if {"synthetic", "paired-synthetic"} & set(args.parts):
        sizes = bold_sizes(args.sizes_domain, args.data_dir)
        if "synthetic" in args.parts:
            sections += synthetic_section(args, sizes, settings)
        if "paired-synthetic" in args.parts:
            sections += paired_synthetic_section(args, sizes, settings)
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
