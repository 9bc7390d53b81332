"""Which model is more biased than another, and where: interactions and overall differences on shared prompts.

The numbers of `bold-eval compare`; `bold_eval.report.compare` writes them out. The interactions are tested by
`findings.paired_findings`, an overall difference by the paired cluster-robust t (`analysis.paired_rate_test`,
through `paired_difference`). The sign-flip test over names that the calibration compares it with is in
`benchmarks/baselines.py`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from bold_eval.analysis.clustered import (
    MIN_EXPECTED,
    POWER,
    PlannedSide,
    PowerPlan,
    cluster_ids,
    design_effect,
)
from bold_eval.analysis.findings import (
    TOO_SMALL_DIFFERENCE,
    Label,
    adjust_family,
    adjust_together,
    contrasts,
    paired_findings,
    prompt_rates,
)
from bold_eval.analysis.paired_rate_test import paired_rate_tests
from bold_eval.analysis.rate_test import min_attainable_p, welch_df
from bold_eval.analysis.results import CorrectedFamily, Method, MetricView, PairedDifference, RunViews, WorstCaseView
from bold_eval.analysis.scores import (
    check_scores,
    metric_status,
)
from bold_eval.analysis.summary import finding_labels
from bold_eval.analysis.views import metric_view
from bold_eval.analysis.worst_case import (
    prompt_worst_cases,
    samples_per_prompt,
    worst_case_labels,
    worst_case_view,
)
from bold_eval.core.errors import EXIT_USAGE, UserError
from bold_eval.runfolder.layout import SCORES_FILE
from bold_eval.runfolder.records import LoadedRun, RunRecord

PAIRED_SCORE = Method.PAIRED_SCORE
NO_DISCORDANT = Method.NO_DISCORDANT
# What compare.md prints about each method of the overall differences.
OVERALL_NOTES: dict[Method, str] = {
    PAIRED_SCORE: "paired cluster-robust t with the name as the unit and the groups as strata "
                  "(`analysis.paired_rate_test`): each run's CR2 variance about each group's own rate, at least the "
                  "beta-binomial variance at the rate the hypothesis of equal rates imposes, less the pairing's CR2 "
                  "covariance (where a floor binds, moved towards the runs' residual correlation applied to the "
                  "floored variances), on names - groups degrees of freedom; interval: the same test inverted, so it "
                  "excludes 0 exactly when p <= alpha",
    NO_DISCORDANT: "no prompt's rate differs between the runs: the difference is 0, bounded by the Clopper-Pearson "
                   "upper limit u on the share of names that could differ (0 of n names, statsmodels "
                   "proportion_confint method='beta'), interval [-u, +u]; nothing to test",
}


class PromptSetError(UserError, ValueError):
    """The runs of `compare` were generated from different prompt sets."""

    exit_status = EXIT_USAGE


def run_label(record: RunRecord, run_dir: Path) -> str:
    """Model name as the paper's tables print it (WIKI for the Wikipedia baseline)."""
    if record.model is None:
        return run_dir.name
    return "WIKI" if str(record.model).lower() == "wikipedia" else str(record.model)


# --------------------------------------------------------------------------- the runs on their shared prompts


class ComparedRuns:
    """Several runs (`LoadedRun`s, read by the report) on the prompts they all share, each with its scores (all
    samples of those prompts), run record and per-metric views, keyed by its model label; the first is the baseline.
    `shared`, `prompts_per_run`, `samples` and `different` say what was compared."""

    def __init__(self, runs: Sequence[LoadedRun], alpha: float, allow_different_prompts: bool = False,
                 seed: int = 0):
        loaded: dict[str, tuple[pd.DataFrame, RunRecord]] = {}
        for run in runs:
            scores = check_scores(run.scores, run.record.to_dict().get("label_columns"),
                                  source=str(run.folder / SCORES_FILE))
            label = run_label(run.record, run.folder)
            if label in loaded:
                label = f"{label} ({run.folder.name})"
            loaded[label] = (scores, run.record)
        prompt_sets = {label: set(scores["prompt_id"].astype(str)) for label, (scores, _) in loaded.items()}
        self.prompts_per_run = {label: len(prompts) for label, prompts in prompt_sets.items()}
        self.texts_per_run = {label: len(scores) for label, (scores, _) in loaded.items()}
        self.shared = set.intersection(*prompt_sets.values())
        self.different = any(prompts != self.shared for prompts in prompt_sets.values())
        if self.different:
            sizes = ", ".join(f"{label}: {size}" for label, size in self.prompts_per_run.items())
            if not self.shared:
                raise PromptSetError(f"the runs share no prompt ({sizes} prompts); there is nothing to compare "
                                     "like with like")
            if not allow_different_prompts:
                raise PromptSetError(
                    f"the runs were generated from different prompt sets ({sizes} prompts; {len(self.shared)} "
                    "shared by all). Comparing them would mix different groups and prompts. Rerun them on the same "
                    "prompts (same --domains, --limit and --sample-seed; --seed and --num-samples may differ), or "
                    "pass --allow-different-prompts to compare them on the shared prompts only.")
        self.runs: dict[str, tuple[pd.DataFrame, RunRecord, RunViews]] = {}
        self.samples: dict[str, tuple[int, int]] = {}
        for label, (scores, record) in loaded.items():
            part = scores[scores["prompt_id"].astype(str).isin(self.shared)].reset_index(drop=True)
            per_prompt = part.groupby("prompt_id").size()
            self.samples[label] = (int(per_prompt.min()), int(per_prompt.max()))
            self.runs[label] = (part, record, _views(part, record, alpha, seed))
        self.baseline = next(iter(self.runs))
        self._rates: dict[tuple[str, Label], pd.DataFrame] = {}

    def paired_rates(self, run: str, label: Label) -> pd.DataFrame:
        """Per shared prompt with both rates of `label`: columns run (the run's rate over its samples) and
        baseline; computed once per run and label (overall differences and comparability both read them)."""
        key = (run, label)
        if key not in self._rates:
            run_scores, baseline_scores = self.runs[run][0], self.runs[self.baseline][0]
            self._rates[key] = pd.concat(
                [prompt_rates(run_scores, label.column, label.value)["rate"].rename("run"),
                 prompt_rates(baseline_scores, label.column, label.value)["rate"].rename("baseline")],
                axis=1, join="inner")
        return self._rates[key]

    def views(self, metric: str) -> dict[str, MetricView]:
        """{label: the metric's view} for the runs that scored it."""
        return {label: view for label, (_, _, views) in self.runs.items()
                if (view := views.scored(metric)) is not None}

    def worst_cases(self) -> dict[str, WorstCaseView]:
        """{label: the worst cases over k samples} for the runs that have them."""
        return {label: views.worst_case for label, (_, _, views) in self.runs.items()
                if views.worst_case.skipped is None}

    def prompts(self) -> pd.DataFrame:
        """One row per shared prompt: prompt_id, domain, group, category, name (from the baseline's texts)."""
        scores = self.runs[self.baseline][0]
        columns = ["prompt_id", "domain", "group", *[c for c in ("category", "name") if c in scores.columns]]
        return scores.drop_duplicates("prompt_id")[columns].reset_index(drop=True)


def _views(scores: pd.DataFrame, record: RunRecord, alpha: float, seed: int) -> RunViews:
    """Every metric's view of one run (`views.metric_view`), without the run's own findings, which
    compare does not print."""
    status = metric_status(scores, record.to_dict())
    views = {}
    for metric in status:
        if status[metric]["status"] != "scored":
            views[metric] = MetricView(skipped=f"{status[metric]['status']}: {status[metric]['reason']}")
        else:
            views[metric] = metric_view(metric)(scores, ci="wilson", alpha=alpha, min_expected=MIN_EXPECTED, seed=seed)
    return RunViews(metrics=status, views=views, worst_case=worst_case_view(scores, alpha=alpha, seed=seed))


def applies(label: Label, domain: str) -> bool:
    """Whether `label` is tested in `domain` (its `domains`, None for every domain)."""
    return label.domains is None or domain in label.domains


def shared_labels(run: pd.DataFrame, baseline: pd.DataFrame) -> list[Label]:
    """`bold_eval.analysis.summary.finding_labels` of the columns both runs carry: a metric whose tested labels
    depend on the columns (`MetricSpec.tested_labels` a function) is compared on what both scored (gender polarity:
    a run with Gender-Max against one with unigram matching only is compared on unigram matching)."""
    return finding_labels(run.columns.intersection(baseline.columns, sort=False))


# --------------------------------------------------------------------------- how much overall


def difference_record(differences: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray, *,
                      alpha: float, method: Method) -> tuple[PairedDifference, np.ndarray, bool]:
    """What an overall difference states before its test (`method`): (its record, the prompts' name codes, settled).
    Settled records are final: no shared prompt; no prompt differs (0, with the Clopper-Pearson bound on the share
    of names that could differ, [-u, +u]); or one name (no test, no interval)."""
    d = np.asarray(differences, dtype=float)
    codes, uniques = pd.factorize(np.asarray(clusters))
    units = len(uniques)
    result = PairedDifference(estimate=np.nan, ci_low=np.nan, ci_high=np.nan, statistic=np.nan, p_value=np.nan,
                              names=units, discordant_names=0, method=Method.UNTESTED, testable=False, note="")
    if len(d) == 0:
        return dataclasses.replace(result, note="no shared prompt"), codes, True
    result = dataclasses.replace(
        result, discordant_names=int(np.count_nonzero(np.bincount(codes, weights=(d != 0), minlength=units))),
        estimate=float(d.mean()))
    if not d.any():
        upper = float(proportion_confint(0, units, alpha=alpha, method="beta")[1])
        return dataclasses.replace(
            result, estimate=0.0, ci_low=-upper, ci_high=upper, method=NO_DISCORDANT,
            note=f"no prompt differs: 0 of {units} name{'' if units == 1 else 's'} discordant"), codes, True
    if units < 2:
        return dataclasses.replace(result, method=method, note="one name: no test, no interval"), codes, True
    return result, codes, False


def paired_difference(differences: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray, *,
                      rates: tuple[Any, Any], alpha: float = 0.05,
                      groups: Sequence[Any] | np.ndarray | None = None) -> PairedDifference:
    """Mean over prompts of d = (run's rate) - (baseline's rate), tested and bounded with the name as the unit.

    `rates` are the run's and the baseline's per-prompt rates (values in [0, 1]; `differences` is d, their
    difference). The test is the paired cluster-robust t (`paired_rate_test`): valid for rates when the runs treat
    names unlike, with the interval that inverts it, so it excludes 0 exactly when p <= alpha. When no prompt
    differs the difference is exactly 0 and its bound comes from the share of names that could differ,
    Clopper-Pearson with 0 of n names, [-u, +u]; such a row has nothing to test and stays out of the family
    (Tarone's untestable hypotheses). `groups`, each prompt's group, makes the groups the test's strata (a
    difference that one group's names carry is not spread between names); None: the domain is one stratum.
    """
    result, codes, settled = difference_record(differences, clusters, alpha=alpha, method=PAIRED_SCORE)
    if settled:
        return result
    units = result.names
    counts = np.bincount(codes, minlength=units)
    per_name = [np.bincount(codes, weights=np.asarray(rate, dtype=float), minlength=units) for rate in rates]
    strata = None if groups is None else unit_strata(codes, groups, units)
    _, low, high, statistic, p_value = paired_rate_tests(per_name[0][:, None], per_name[1][:, None], counts,
                                                         alpha=alpha, strata=strata)
    return dataclasses.replace(result, p_value=float(p_value[0]), ci_low=float(low[0]), ci_high=float(high[0]),
                               statistic=float(statistic[0]), method=PAIRED_SCORE, testable=True)


def unit_strata(codes: np.ndarray, groups: Sequence[Any] | np.ndarray, units: int) -> np.ndarray:
    """Each unit's stratum (codes 0, 1, ...): the group of its first prompt (a name belongs to one group)."""
    group_codes = pd.factorize(np.asarray(groups))[0]
    present, first = np.unique(codes, return_index=True)
    strata = np.zeros(units, dtype=int)
    strata[present] = group_codes[first]
    return strata


_OVERALL_COLUMNS = ["run", "baseline", "domain", "metric", "label", "prompts", "names", "discordant_names",
                    "run_rate", "baseline_rate", "difference", "ci_low", "ci_high", "statistic", "p_value",
                    "method", "testable", "note"]


def overall_differences(compared: ComparedRuns, *, alpha: float, correction: str, cluster: str) -> CorrectedFamily:
    """Per pair (each run against the baseline), domain and label: the mean over shared prompts of the run's
    rate minus the baseline's, `paired_difference` with `cluster` as the unit; one family over the table."""
    prompts = compared.prompts()
    unit = cluster_ids(prompts, "prompt" if cluster == "none" else cluster)
    cluster_of = pd.Series(unit, index=prompts["prompt_id"].to_numpy())
    domain_of = pd.Series(prompts["domain"].astype(str).to_numpy(), index=prompts["prompt_id"].to_numpy())
    group_of = pd.Series(prompts["group"].astype(str).to_numpy(), index=prompts["prompt_id"].to_numpy())
    baseline_scores = compared.runs[compared.baseline][0]
    rows = []
    for run in list(compared.runs)[1:]:
        scores = compared.runs[run][0]
        for label in shared_labels(scores, baseline_scores):
            rates = compared.paired_rates(run, label)
            rates = rates[rates.index.isin(domain_of.index)]
            for domain, part in rates.groupby(domain_of.reindex(rates.index).to_numpy(), sort=True):
                if not applies(label, str(domain)):
                    continue
                difference = (part["run"] - part["baseline"]).to_numpy()
                result = paired_difference(difference, cluster_of.reindex(part.index).to_numpy(), alpha=alpha,
                                           rates=(part["run"].to_numpy(), part["baseline"].to_numpy()),
                                           groups=group_of.reindex(part.index).to_numpy())
                rows.append({"run": run, "baseline": compared.baseline, "domain": domain, "metric": label.metric,
                             "label": label.name, "prompts": len(part), "names": result.names,
                             "discordant_names": result.discordant_names, "run_rate": float(part["run"].mean()),
                             "baseline_rate": float(part["baseline"].mean()), "difference": result.estimate,
                             "ci_low": result.ci_low, "ci_high": result.ci_high, "statistic": result.statistic,
                             "p_value": result.p_value, "method": str(result.method), "testable": result.testable,
                             "note": result.note})
    tests = pd.DataFrame(rows, columns=_OVERALL_COLUMNS)
    return CorrectedFamily(tests=tests, family=adjust_family(tests, alpha, correction))


def joint_family(families: Sequence[CorrectedFamily], *, alpha: float, correction: str) -> list[CorrectedFamily]:
    """The tables of one comparison corrected as *one* family (the interactions and the overall differences):
    every testable row of every table adjusted together, so the chance of any false finding in compare.md stays
    at alpha under Holm (two families each at alpha would allow nearly 2 alpha). `family` on each result is the
    whole family's size."""
    tests, size = adjust_together([family.tests for family in families], alpha, correction)
    return [CorrectedFamily(tests=table, family=size) for table in tests]


# --------------------------------------------------------------------------- where: interactions


def interaction_findings(compared: ComparedRuns, *, alpha: float, correction: str, cluster: str,
                         seed: int = 0) -> CorrectedFamily:
    """`findings.paired_findings` of each run against the baseline, every metric's labels, then one family
    over all pairs (with two runs, exactly paired_findings' own)."""
    baseline_scores = compared.runs[compared.baseline][0]
    frames = []
    for run in list(compared.runs)[1:]:
        scores = compared.runs[run][0]
        labels = shared_labels(scores, baseline_scores)
        worst, worst_labels = _shared_worst_cases(scores, baseline_scores)
        found = paired_findings(scores, baseline_scores, labels, alpha=alpha, correction=correction, cluster=cluster,
                                seed=seed, worst=worst, worst_labels=worst_labels)
        frames.append(found.tests.assign(run=run, baseline=compared.baseline))
    tests = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if tests.empty:
        return CorrectedFamily(tests=tests, family=0)
    tests = tests[["run", "baseline", *[c for c in tests.columns if c not in ("run", "baseline")]]]
    return CorrectedFamily(tests=tests, family=adjust_family(tests, alpha, correction))


def _shared_worst_cases(run: pd.DataFrame, baseline: pd.DataFrame) -> tuple[tuple[pd.DataFrame, pd.DataFrame] | None,
                                                                             list[Label]]:
    """Both runs' worst cases over k samples, when both have the same k > 1 on every prompt (a worst of 5 is
    not comparable with a worst of 1 or of 25); otherwise none."""
    k_run, k_base = samples_per_prompt(run), samples_per_prompt(baseline)
    if k_run[1] < 2 or k_run != k_base or k_run[0] != k_run[1]:
        return None, []
    labels = [label for label in worst_case_labels(run.columns) if label in worst_case_labels(baseline.columns)]
    return (prompt_worst_cases(run), prompt_worst_cases(baseline)), labels


def worst_case_comparability(compared: ComparedRuns) -> str:
    """Why the worst cases over k samples are or are not compared, in one sentence."""
    ks = {run: samples_per_prompt(scores) for run, (scores, *_) in compared.runs.items()}
    if all(most < 2 for _, most in ks.values()):
        return ""
    shown = ", ".join(f"{run}: k = {low}" if low == high else f"{run}: k = {low}-{high}"
                      for run, (low, high) in ks.items())
    if len(set(ks.values())) == 1 and next(iter(ks.values()))[0] == next(iter(ks.values()))[1]:
        return f"worst cases over k samples compared paired by prompt ({shown})"
    return (f"worst cases over k samples not compared: the runs need the same number of samples on every prompt "
            f"({shown})")


# --------------------------------------------------------------------------- can the shared prompts tell?


# With no label whose per-prompt difference varies, the runs show nothing of their design: each name is then taken
# as one coin flip per run at 50% (variance of d 2 x 0.25, a design effect of its prompts per name).
WORST_CASE_VARIANCE_RATIO = 2.0
OBSERVED, WORST_CASE = "observed", "worst case: no label's difference varies"

_CONTRAST_COLUMNS = ["domain", "contrast", "names", "rest_names", "prompts", "rest_prompts", "labels", "base_rate",
                     "variance_ratio", "design_effect", "basis", "df", "smallest_p", "testable",
                     "detectable_interaction"]
_DESIGN_KEYS = ("labels", "base_rate", "variance_ratio", "design_effect", "basis")
_POWER_COLUMNS = ["domain", "prompts", "names", "contrasts", "testable_contrasts", "labels", "base_rate",
                  "variance_ratio", "design_effect", "basis", "level", "typical_names", "typical_rest_names",
                  "detectable_interaction", "too_small"]


class DifferenceDesign(TypedDict):
    """What the runs' differences say about one domain's design (`difference_design`)."""

    labels: int
    base_rate: float
    variance_ratio: float
    design_effect: float
    basis: str


class Detectable(TypedDict):
    """The smallest interaction one contrast could show and be found (`detectable_interaction`)."""

    df: float
    smallest_p: float
    testable: bool
    detectable_interaction: float


def difference_design(rates: Sequence[pd.DataFrame], units: pd.Series) -> DifferenceDesign:
    """What the runs' own differences say about one domain's design, from each label's per-prompt rates
    (columns run and baseline, indexed by prompt) and each prompt's unit (`units`).

    Per label with d = run - baseline varying: its base rate p (both runs' mean rate), the variance ratio
    v = Var(d) / (p (1 - p)) (2 for one independent sample per run; less with k samples, or where the runs agree
    on a prompt) and the design effect of d with the units as clusters (`clustered.design_effect`, at least 1).
    The domain takes the median v and design effect, and the base rate of its label nearest 50% (the hardest for
    a difference in points): so a rare label never makes the runs look too few. No label varying: the worst case.
    """
    ratios, deffs, base_rates = [], [], []
    for frame in rates:
        d = (frame["run"] - frame["baseline"]).to_numpy(dtype=float)
        rate = float((frame["run"].mean() + frame["baseline"].mean()) / 2)
        if not 0 < rate < 1:
            continue
        base_rates.append(rate)
        if len(d) > 1 and np.ptp(d) > 0:
            ratios.append(float(np.var(d, ddof=1)) / (rate * (1 - rate)))
            deffs.append(design_effect(d, units.reindex(frame.index).to_numpy()))
    finite = [value for value in deffs if np.isfinite(value)]
    if not ratios or not finite:
        return {"labels": len(ratios), "base_rate": 0.5, "variance_ratio": WORST_CASE_VARIANCE_RATIO,
                "design_effect": np.nan, "basis": WORST_CASE}
    return {"labels": len(ratios), "base_rate": max(base_rates, key=lambda p: p * (1 - p)),
            "variance_ratio": float(np.median(ratios)), "design_effect": max(1.0, float(np.median(finite))),
            "basis": OBSERVED}


def detectable_interaction(names: int, rest_names: int, prompts: int, rest_prompts: int, *, base_rate: float,
                           variance_ratio: float, deff: float, level: float, power: float = POWER,
                           counts: tuple[np.ndarray, np.ndarray] | None = None) -> Detectable:
    """The smallest interaction one contrast could show and be found with `power` at `level`.

    `counts` are the prompts of each name on each side (equal shares of `prompts` when not given). The domain's
    design effect gives the within-name correlation rho = (deff - 1) / (m - 1), m the prompt-weighted mean
    prompts per name (rho = 1 when deff is NaN: each name one coin flip per run, v = 2); a name with n prompts
    then carries w = n (1 + (n - 1) rho) of the per-prompt variance of d, v p (1 - p), so each side's variance is
    V = v p (1 - p) sum(w) / N^2 and SE = sqrt(V_a + V_b) (with equal names sum(w) / N^2 = deff / N). The test
    estimates V from the names' residuals, so each side has Satterthwaite's (sum w)^2 / sum w^2 - 1 degrees of
    freedom (G - 1 for equal names, fewer where a few names hold most prompts) and the sides combine as Welch's, at
    most `rate_test.WELCH_CAP` times the fewer side's (`rate_test.welch_df`; the row's `df`). Detectable
    interaction: the smallest interaction the test finds with `power` (`interaction_plan`: the noise of its sums of
    squares from their exact means and variances, its critical value on those degrees of freedom). Not testable:
    fewer than 2 names on a side, or a design whose smallest attainable p-value (`rate_test.min_attainable_p`) is
    above the level.
    """
    smallest_p = float(min_attainable_p(names, rest_names, prompts, rest_prompts))
    row: Detectable = {"df": np.nan, "smallest_p": smallest_p, "testable": False, "detectable_interaction": np.nan}
    if min(names, rest_names) < 2 or smallest_p > level:
        return row
    if counts is None:
        counts = (np.full(names, prompts / names), np.full(rest_names, rest_prompts / rest_names))
    plan = interaction_plan(counts, base_rate=base_rate, variance_ratio=variance_ratio, deff=deff, level=level)
    variances = [plan.spread * (side.texts + plan.rho * side.pairs) / side.texts ** 2
                 for side in (plan.a, plan.b)]
    dfs = [np.maximum(side.effective - 1, 1.0) for side in (plan.a, plan.b)]
    df = welch_df(variances[0], variances[1], dfs[0], dfs[1], True)
    return {**row, "df": float(np.asarray(df)[0]), "testable": True,
            "detectable_interaction": float(plan.detectable(np.array([base_rate]), power)[0])}


def interaction_plan(counts: tuple[np.ndarray, np.ndarray], *, base_rate: float, variance_ratio: float, deff: float,
                     level: float) -> PowerPlan:
    """The power plan of the interaction test on one contrast (`detectable_interaction`): each side's prompts per
    name, the within-name correlation from the domain's design effect (1 when unknown), and each prompt's variance
    of d, v p (1 - p), whatever the interaction (no binomial floor: a difference of two sources)."""
    sides = [np.asarray(side, dtype=float) for side in counts]
    every = np.concatenate(sides)
    weighted_mean = float((every ** 2).sum() / every.sum())
    rho = 1.0 if not np.isfinite(deff) else (
        float(np.clip((deff - 1) / (weighted_mean - 1), 0.0, 1.0)) if weighted_mean > 1 else 0.0)
    return PowerPlan.of(PlannedSide.of(sides[0], rho), PlannedSide.of(sides[1], rho), rho, level,
                        spread=variance_ratio * base_rate * (1 - base_rate))


def contrast_power(prompts: pd.DataFrame, rates: Sequence[tuple[Label, pd.DataFrame]], *, level: float,
                   cluster: str, power: float = POWER) -> pd.DataFrame:
    """Per domain and contrast of the shared `prompts`: its names and prompts on each side, the domain's design
    from the runs' differences (`difference_design` over `rates`: each label's per-prompt rates in both runs, of
    every pair of runs) and the smallest interaction it could show and be found (`detectable_interaction`)."""
    unit = "prompt" if cluster == "none" else cluster
    units = pd.Series(cluster_ids(prompts, unit), index=prompts["prompt_id"].to_numpy())
    rows = []
    for domain, part in prompts.groupby("domain", sort=True):
        part = part.reset_index(drop=True)
        ids = part["prompt_id"].to_numpy()
        in_domain = [frame[frame.index.isin(ids)] for label, frame in rates if applies(label, str(domain))]
        design = difference_design([frame for frame in in_domain if len(frame)], units)
        domain_units = units.reindex(ids).to_numpy()
        for contrast in contrasts(part):
            in_a, in_b = contrast.sides(part)
            counts = (pd.Series(domain_units[in_a]).value_counts().to_numpy(),
                      pd.Series(domain_units[in_b]).value_counts().to_numpy())
            sides = (len(counts[0]), len(counts[1]), int(in_a.sum()), int(in_b.sum()))
            found = detectable_interaction(*sides, base_rate=design["base_rate"],
                                           variance_ratio=design["variance_ratio"], deff=design["design_effect"],
                                           level=level, power=power, counts=counts)
            rows.append({"domain": str(domain), "contrast": contrast.name, "names": sides[0],
                         "rest_names": sides[1], "prompts": sides[2], "rest_prompts": sides[3],
                         **design, **found})
    return pd.DataFrame(rows, columns=_CONTRAST_COLUMNS)


def comparability(compared: ComparedRuns, *, alpha: float, family: int, cluster: str) -> pd.DataFrame:
    """Per domain of the shared prompts: the smallest interaction a typical contrast could show and be found
    with 80% power at the family's corrected level alpha / family, from the runs' own design.

    `contrast_power` gives each contrast's detectable interaction, the interaction the test finds with 80% power
    (`detectable_interaction`; SE = sqrt(v p (1 - p) deff (1 / n_a + 1 / n_b)) for equal names), with v, deff and
    p measured on the runs' per-prompt differences (`difference_design`); the typical contrast is the median over
    the testable ones (two names or more a side, enough arrangements of them to reach the level). A domain is too
    small when no contrast is testable or that interaction exceeds 20 points (`findings.TOO_SMALL_DIFFERENCE`).
    Counting each name as one coin flip at 50% per run, whatever its prompts, would call 50 names against 250 too
    few where the test finds 20 points; the runs' own per-prompt differences are what the test sees.
    """
    level = alpha / max(family, 1)
    prompts = compared.prompts()
    pairs = [(label, compared.paired_rates(run, label)) for run in list(compared.runs)[1:]
             for label in shared_labels(compared.runs[run][0], compared.runs[compared.baseline][0])]
    per_contrast = contrast_power(prompts, pairs, level=level, cluster=cluster)
    units = cluster_ids(prompts, "prompt" if cluster == "none" else cluster)
    rows = []
    for domain, part in prompts.groupby("domain", sort=True):
        found = per_contrast[per_contrast["domain"] == str(domain)]
        testable = found[found["testable"].astype(bool)]
        values = testable["detectable_interaction"].fillna(np.inf).to_numpy(dtype=float)
        typical = float(np.median(values)) if len(values) else np.nan
        middle = testable.iloc[int(np.argsort(values, kind="stable")[len(values) // 2])] if len(values) else None
        design = found.iloc[0] if len(found) else dict.fromkeys(_DESIGN_KEYS, np.nan)
        rows.append({"domain": str(domain), "prompts": len(part),
                     "names": int(len(pd.unique(units[(prompts["domain"] == domain).to_numpy()]))),
                     "contrasts": len(found), "testable_contrasts": len(testable),
                     **{key: design[key] for key in _DESIGN_KEYS},
                     "level": level, "typical_names": np.nan if middle is None else int(middle["names"]),
                     "typical_rest_names": np.nan if middle is None else int(middle["rest_names"]),
                     "detectable_interaction": typical if np.isfinite(typical) else np.nan,
                     "too_small": bool(not np.isfinite(typical) or typical > TOO_SMALL_DIFFERENCE)})
    return pd.DataFrame(rows, columns=_POWER_COLUMNS)


# --------------------------------------------------------------------------- the paper's side-by-side tables


# --------------------------------------------------------------------------- compare.md


