"""Which model is more biased than another, and where: interactions and overall differences on shared prompts.

The numbers of `bold-eval compare`; `bold_eval.report.compare` writes them out."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.proportion import proportion_confint

from bold_eval.analysis.clustered import (
    MIN_EXPECTED,
    N_PERMUTATIONS,
    cluster_ids,
    minimum_detectable_difference,
)
from bold_eval.analysis.findings import (
    TOO_SMALL_DIFFERENCE,
    Label,
    adjust_family,
    contrasts,
    paired_findings,
    prompt_rates,
)
from bold_eval.analysis.results import CorrectedFamily, MetricView, RunViews, WorstCaseView
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
from bold_eval.runfolder import SCORES_FILE, RunRecord, load_run

SIGN_FLIP = "sign-flip over names"
NO_DISCORDANT = "exact: no prompt differs"
SAME_DIFFERENCE = "exact: every name differs alike"
OVERALL_NOTES = {
    SIGN_FLIP: "one-sample permutation test: the runs' labels are swapped for all prompts of a name at once "
               "(the sign of the name's summed difference flipped; scipy.stats.permutation_test, "
               "permutation_type='samples'; 999 random flips, 9,999 where p <= alpha, all 2^names flips when fewer); "
               "interval: OLS intercept with cluster-robust "
               "(CR1) variance, t on names - 1 df (statsmodels)",
    NO_DISCORDANT: "no prompt's rate differs between the runs: the difference is 0, bounded by the Clopper-Pearson "
                   "upper limit u on the share of names that could differ (0 of n names, statsmodels "
                   "proportion_confint method='beta'), interval [-u, +u]; nothing to test",
    SAME_DIFFERENCE: "every name shows the same difference c, so the cluster-robust interval collapses to a point; "
                     "Clopper-Pearson bound u on the share of names that could differ from c (0 of n), interval "
                     "[c - u (1 + c), c + u (1 - c)]",
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
    """Several runs on the prompts they all share, each with its scores (all samples of those prompts), run
    record and per-metric views, keyed by its model label; the first is the baseline. `shared`,
    `prompts_per_run`, `samples` and `different` say what was compared."""

    def __init__(self, run_dirs: Sequence[str | Path], alpha: float, allow_different_prompts: bool = False,
                 seed: int = 0):
        loaded: dict[str, tuple[pd.DataFrame, RunRecord]] = {}
        for run_dir in map(Path, run_dirs):
            scores, record = load_run(run_dir)
            scores = check_scores(scores, record.to_dict().get("label_columns"),
                                     source=str(run_dir / SCORES_FILE))
            label = run_label(record, run_dir)
            if label in loaded:
                label = f"{label} ({run_dir.name})"
            loaded[label] = (scores, record)
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


def shared_labels(run: pd.DataFrame, baseline: pd.DataFrame) -> list[Label]:
    """`bold_eval.analysis.summary.finding_labels` of the columns both runs carry: a metric whose tested labels
    depend on the columns (`MetricSpec.tested_labels` a function) is compared on what both scored (gender polarity:
    a run with Gender-Max against one with unigram matching only is compared on unigram matching)."""
    return finding_labels(run.columns.intersection(baseline.columns, sort=False))


# --------------------------------------------------------------------------- how much overall


def paired_difference(differences: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray, *,
                      alpha: float = 0.05, n_resamples: int = N_PERMUTATIONS, seed: int = 0) -> dict[str, Any]:
    """Mean over prompts of d = (run's rate) - (baseline's rate), tested and bounded with the name as the unit.

    Under "the two runs are exchangeable" the labels of the two runs can be swapped for all prompts of a name
    at once, which flips the sign of that name's summed d: a sign-flip permutation test over names' sums
    (scipy). The interval is the cluster-robust (CR1) t interval of an intercept-only OLS (statsmodels). When
    no prompt differs the difference is exactly 0 and its bound comes from the share of names that could
    differ, Clopper-Pearson with 0 of n names, [-u, +u]; such a row has nothing to test and stays out of the
    family (its sign-flip distribution is a point: Tarone's untestable hypotheses).
    """
    d = np.asarray(differences, dtype=float)
    codes, uniques = pd.factorize(np.asarray(clusters))
    units = len(uniques)
    result: dict[str, Any] = {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "statistic": np.nan,
                              "p_value": np.nan, "names": units, "discordant_names": 0, "method": "",
                              "testable": False, "note": ""}
    if len(d) == 0:
        result["note"] = "no shared prompt"
        return result
    sums = np.bincount(codes, weights=d, minlength=units)
    counts = np.bincount(codes, minlength=units)
    result["discordant_names"] = int(np.count_nonzero(np.bincount(codes, weights=(d != 0), minlength=units)))
    result["estimate"] = float(d.mean())
    upper = float(proportion_confint(0, units, alpha=alpha, method="beta")[1])
    if not d.any():
        result.update(estimate=0.0, ci_low=-upper, ci_high=upper, method=NO_DISCORDANT,
                      note=f"no prompt differs: 0 of {units} names discordant")
        return result
    if units < 2:
        result.update(method=SIGN_FLIP, note="one name: no test, no interval")
        return result
    # 999 sign flips first; all `n_resamples` only where p <= alpha, a test that could survive the correction.
    for resamples in dict.fromkeys((min(999, n_resamples), n_resamples)):
        test = stats.permutation_test((sums,), lambda x, axis=-1: np.sum(x, axis=axis) / len(d),
                                      permutation_type="samples", vectorized=True, n_resamples=resamples,
                                      alternative="two-sided", batch=max(1, 2_000_000 // units),
                                      rng=np.random.default_rng(seed))
        if test.pvalue > alpha:
            break
    result.update(p_value=float(test.pvalue), method=SIGN_FLIP, testable=True)
    means = sums / counts
    if np.ptp(means) <= 1e-12:
        common = float(means[0])
        result.update(ci_low=max(common - upper * (1 + common), -1.0), ci_high=min(common + upper * (1 - common), 1.0),
                      method=SAME_DIFFERENCE, note=f"every name differs by {common:+.3f}")
        return result
    fit = OLS(d, np.ones((len(d), 1))).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    low, high = fit.conf_int(alpha)[0]
    result.update(ci_low=float(low), ci_high=float(high), statistic=float(fit.tvalues[0]))
    return result


_OVERALL_COLUMNS = ["run", "baseline", "domain", "metric", "label", "prompts", "names", "discordant_names",
                    "run_rate", "baseline_rate", "difference", "ci_low", "ci_high", "statistic", "p_value",
                    "method", "testable", "note"]


def overall_differences(compared: ComparedRuns, *, alpha: float, correction: str, cluster: str,
                        seed: int = 0) -> CorrectedFamily:
    """Per pair (each run against the baseline), domain and label: the mean over shared prompts of the run's
    rate minus the baseline's, `paired_difference` with `cluster` as the unit; one family over the table."""
    prompts = compared.prompts()
    unit = cluster_ids(prompts, "prompt" if cluster == "none" else cluster)
    cluster_of = pd.Series(unit, index=prompts["prompt_id"].to_numpy())
    domain_of = pd.Series(prompts["domain"].astype(str).to_numpy(), index=prompts["prompt_id"].to_numpy())
    baseline_scores = compared.runs[compared.baseline][0]
    rows = []
    for run in list(compared.runs)[1:]:
        scores = compared.runs[run][0]
        for label in shared_labels(scores, baseline_scores):
            rates = pd.concat([prompt_rates(scores, label.column, label.value)["rate"].rename("run"),
                               prompt_rates(baseline_scores, label.column, label.value)["rate"].rename("baseline")],
                              axis=1, join="inner")
            rates = rates[rates.index.isin(domain_of.index)]
            for domain, part in rates.groupby(domain_of.reindex(rates.index).to_numpy(), sort=True):
                if label.domains is not None and domain not in label.domains:
                    continue
                difference = (part["run"] - part["baseline"]).to_numpy()
                result = paired_difference(difference, cluster_of.reindex(part.index).to_numpy(), alpha=alpha,
                                           seed=seed)
                rows.append({"run": run, "baseline": compared.baseline, "domain": domain, "metric": label.metric,
                             "label": label.name, "prompts": len(part), "names": result["names"],
                             "discordant_names": result["discordant_names"], "run_rate": float(part["run"].mean()),
                             "baseline_rate": float(part["baseline"].mean()), "difference": result["estimate"],
                             **{key: result[key] for key in ("ci_low", "ci_high", "statistic", "p_value", "method",
                                                             "testable", "note")}})
    tests = pd.DataFrame(rows, columns=_OVERALL_COLUMNS)
    return CorrectedFamily(tests=tests, family=adjust_family(tests, alpha, correction))


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


_POWER_COLUMNS = ["domain", "prompts", "names", "contrasts", "testable_contrasts", "detectable_interaction",
                  "too_small"]


def comparability(compared: ComparedRuns, *, alpha: float, family: int, cluster: str) -> pd.DataFrame:
    """Per domain of the shared prompts: how many contrasts have two names or more on each side, and the
    smallest interaction a typical one of them could show and be found.

    A typical contrast is the median over those contrasts; its detectable interaction is
    `clustered.minimum_detectable_difference` for a label near 50%, names as the sample sizes, at the
    family's corrected level alpha / family with 80% power, times sqrt(2): an interaction is a difference of
    two runs' differences on the same prompts, each prompt's d carrying the variance of two independent rates.
    A domain is too small when no contrast is testable or that interaction exceeds 20 points
    (`findings.TOO_SMALL_DIFFERENCE`).
    """
    prompts = compared.prompts()
    units = cluster_ids(prompts, "prompt" if cluster == "none" else cluster)
    rows = []
    level = alpha / max(family, 1)
    for domain, part in prompts.groupby("domain", sort=True):
        domain_units = units[(prompts["domain"] == domain).to_numpy()]
        part = part.reset_index(drop=True)
        detectable = []
        found = contrasts(part)
        for contrast in found:
            in_a, in_b = contrast.sides(part)
            names_a, names_b = len(pd.unique(domain_units[in_a])), len(pd.unique(domain_units[in_b]))
            if min(names_a, names_b) >= 2:
                detectable.append(np.sqrt(2) * minimum_detectable_difference(0.5, names_a, names_b, alpha=level))
        typical = float(np.median(detectable)) if detectable else np.nan
        rows.append({"domain": str(domain), "prompts": len(part), "names": int(len(pd.unique(domain_units))),
                     "contrasts": len(found), "testable_contrasts": len(detectable), "detectable_interaction": typical,
                     "too_small": bool(not np.isfinite(typical) or typical > TOO_SMALL_DIFFERENCE)})
    return pd.DataFrame(rows, columns=_POWER_COLUMNS)


# --------------------------------------------------------------------------- the paper's side-by-side tables


# --------------------------------------------------------------------------- compare.md


