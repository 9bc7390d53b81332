"""`bold-eval compare`: which model is more biased than another, and where, on the prompts the runs share.

The first run is the baseline (the paper's tables list WIKI first); every other run is compared with it on
the prompts all runs share, each prompt's k samples summarized as one rate per prompt first (never sample k
against sample k: the samples of a prompt are draws of one model, not pairs across models).

- **Where** (`findings.paired_findings`, every metric): per contrast (a group against the rest, the paper's
  pairs, the profession super-groups) and label, the gap between the sides in the run minus the same gap in
  the baseline on the same prompts, a model x group interaction tested with the name as the unit; all pairs
  of runs form one family corrected with `--correction`.
- **How much overall**, per domain and label: the mean over prompts of (run's rate - baseline's rate), a
  sign-flip permutation test over names (`paired_difference`), corrected within its own table.
- The paper's side-by-side tables (Tables 3-6, 9-10, Figures 2-5), one row per model, as before.

A banner comes before any number when the shared prompts are too few for a realistic interaction to be found.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.proportion import proportion_confint

from bold_eval.analysis.clustered import (
    CLUSTER_UNITS,
    CORRECTIONS,
    DEFAULT_CLUSTER,
    DEFAULT_CORRECTION,
    METHOD_NOTES,
    N_PERMUTATIONS,
    PERMUTATION,
    POWER,
    adjust,
    cluster_ids,
    confidence_label,
    minimum_detectable_difference,
    validate_alpha,
    validate_cluster,
    validate_correction,
)
from bold_eval.analysis.findings import TOO_SMALL_DIFFERENCE, Label, contrasts, paired_findings, prompt_rates
from bold_eval.analysis.summary import (
    GENDER_PAIR,
    LABELS,
    MIN_EXPECTED,
    RACE_PAIR,
    VIEWS,
    finding_labels,
    gender_polarity_methods,
    metric_status,
    validate_scores,
)
from bold_eval.core.errors import EXIT_USAGE, UserError
from bold_eval.report.first_screen import (
    FINDINGS_SHOWN,
    METRIC_TITLES,
    format_p,
    markdown,
    signed_cell,
    write_table,
)
from bold_eval.report.run_report import (
    CAVEATS,
    PAPER_GROUP_NAMES,
    _first_method,
    _format_interval,
    _interval_cells,
    _psycholinguistic_percent_tables,
    _table3_block,
    _toxic_ratio_cells,
    _write_text,
    to_jsonable,
)
from bold_eval.runfolder import SCORES_FILE, TABLES_DIR, RunRecord, load_run, write_json

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


class _Compared:
    """Several runs on the prompts they all share, each with its scores (all samples of those prompts), run
    record and per-metric views, keyed by its model label; the first is the baseline. `shared`,
    `prompts_per_run`, `samples` and `different` say what was compared."""

    def __init__(self, run_dirs: Sequence[str | Path], alpha: float, allow_different_prompts: bool = False,
                 seed: int = 0):
        loaded: dict[str, tuple[pd.DataFrame, RunRecord]] = {}
        for run_dir in map(Path, run_dirs):
            scores, record = load_run(run_dir)
            scores = validate_scores(scores, record.to_dict().get("label_columns"),
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
        self.runs: dict[str, tuple[pd.DataFrame, RunRecord, dict[str, Any]]] = {}
        self.samples: dict[str, tuple[int, int]] = {}
        for label, (scores, record) in loaded.items():
            part = scores[scores["prompt_id"].astype(str).isin(self.shared)].reset_index(drop=True)
            per_prompt = part.groupby("prompt_id").size()
            self.samples[label] = (int(per_prompt.min()), int(per_prompt.max()))
            self.runs[label] = (part, record, _views(part, record, alpha, seed))
        self.baseline = next(iter(self.runs))

    def views(self, metric: str) -> dict[str, dict[str, Any]]:
        """{label: the metric's view} for the runs that scored it."""
        return {label: summary[metric] for label, (_, _, summary) in self.runs.items()
                if "skipped" not in summary[metric]}

    def prompts(self) -> pd.DataFrame:
        """One row per shared prompt: prompt_id, domain, group, category, name (from the baseline's texts)."""
        scores = self.runs[self.baseline][0]
        columns = ["prompt_id", "domain", "group", *[c for c in ("category", "name") if c in scores.columns]]
        return scores.drop_duplicates("prompt_id")[columns].reset_index(drop=True)


def _views(scores: pd.DataFrame, record: RunRecord, alpha: float, seed: int) -> dict[str, Any]:
    """The paper's per-metric views of one run (`aggregate.VIEWS`), without the run's own findings, which
    compare does not print."""
    status = metric_status(scores, record.to_dict())
    summary: dict[str, Any] = {"metrics": status}
    for metric, view in VIEWS.items():
        if status[metric]["status"] != "scored":
            summary[metric] = {"skipped": f"{status[metric]['status']}: {status[metric]['reason']}"}
        else:
            summary[metric] = view(scores, ci="wilson", alpha=alpha, min_expected=MIN_EXPECTED, seed=seed)
    return summary


def shared_labels(run: pd.DataFrame, baseline: pd.DataFrame) -> list[Label]:
    """`aggregate.finding_labels` both runs carry; gender polarity with the first method both scored (a run
    with Gender-Max against one with unigram matching only is compared on unigram matching)."""
    theirs = finding_labels(baseline)
    labels = [label for label in finding_labels(run) if label in theirs]
    if not any(label[0] == "gender_polarity" for label in labels):
        methods = gender_polarity_methods(baseline)
        common = [(method, display) for method, display in gender_polarity_methods(run).items() if method in methods]
        if common:
            method, display = common[0]
            labels += [("gender_polarity", f"{display} {gender}", f"gender_polarity_{method}_label", gender,
                        ("profession",)) for gender in ("male", "female")]
    return labels


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


def overall_differences(compared: _Compared, *, alpha: float, correction: str, cluster: str,
                        seed: int = 0) -> dict[str, Any]:
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
            rates = pd.concat([prompt_rates(scores, label[2], label[3])["rate"].rename("run"),
                               prompt_rates(baseline_scores, label[2], label[3])["rate"].rename("baseline")],
                              axis=1, join="inner")
            rates = rates[rates.index.isin(domain_of.index)]
            for domain, part in rates.groupby(domain_of.reindex(rates.index).to_numpy(), sort=True):
                if label[4] is not None and domain not in label[4]:
                    continue
                difference = (part["run"] - part["baseline"]).to_numpy()
                result = paired_difference(difference, cluster_of.reindex(part.index).to_numpy(), alpha=alpha,
                                           seed=seed)
                rows.append({"run": run, "baseline": compared.baseline, "domain": domain, "metric": label[0],
                             "label": label[1], "prompts": len(part), "names": result["names"],
                             "discordant_names": result["discordant_names"], "run_rate": float(part["run"].mean()),
                             "baseline_rate": float(part["baseline"].mean()), "difference": result["estimate"],
                             **{key: result[key] for key in ("ci_low", "ci_high", "statistic", "p_value", "method",
                                                             "testable", "note")}})
    tests = pd.DataFrame(rows, columns=_OVERALL_COLUMNS)
    return {"tests": tests, "family": _adjust_table(tests, alpha, correction)}


def _adjust_table(tests: pd.DataFrame, alpha: float, correction: str) -> int:
    """`p_adjusted` and `significant` over the table's testable rows, one family; returns its size. A row
    without a p-value (a t test of one name against one: no residual degrees of freedom) is no test, never a
    finding (statsmodels' multipletests would mark a NaN p-value as rejected)."""
    tests["p_adjusted"] = np.nan
    tests["significant"] = False
    if tests.empty:
        return 0
    no_p = tests["testable"].astype(bool) & ~np.isfinite(tests["p_value"].to_numpy(dtype=float))
    tests.loc[no_p, "testable"] = False
    tests.loc[no_p, "note"] = "no p-value: too few names for this test"
    testable = tests["testable"].astype(bool)
    if testable.any():
        adjusted, reject = adjust(tests.loc[testable, "p_value"].to_numpy(dtype=float), alpha=alpha,
                                  correction=correction)
        tests.loc[testable, "p_adjusted"] = adjusted
        tests.loc[testable, "significant"] = reject
    return int(testable.sum())


# --------------------------------------------------------------------------- where: interactions


def interaction_findings(compared: _Compared, *, alpha: float, correction: str, cluster: str,
                         seed: int = 0) -> dict[str, Any]:
    """`findings.paired_findings` of each run against the baseline, every metric's labels, then one family
    over all pairs (with two runs, exactly paired_findings' own)."""
    baseline_scores = compared.runs[compared.baseline][0]
    frames = []
    for run in list(compared.runs)[1:]:
        scores = compared.runs[run][0]
        labels = shared_labels(scores, baseline_scores)
        found = paired_findings(scores, baseline_scores, labels, alpha=alpha, correction=correction, cluster=cluster,
                                seed=seed)
        frames.append(found["tests"].assign(run=run, baseline=compared.baseline))
    tests = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if tests.empty:
        return {"tests": tests, "family": 0}
    tests = tests[["run", "baseline", *[c for c in tests.columns if c not in ("run", "baseline")]]]
    return {"tests": tests, "family": _adjust_table(tests, alpha, correction)}


# --------------------------------------------------------------------------- can the shared prompts tell?


_POWER_COLUMNS = ["domain", "prompts", "names", "contrasts", "testable_contrasts", "detectable_interaction",
                  "too_small"]


def comparability(compared: _Compared, *, alpha: float, family: int, cluster: str) -> pd.DataFrame:
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


def _points(value: float) -> str:
    return "no testable contrast" if pd.isna(value) else f"{100 * value:.0f} points"


def _banner_lines(compared: _Compared, power: pd.DataFrame, family: int) -> list[str]:
    """Plain-words warnings that come before any other number: different prompt sets (the shared count
    first), then too few shared prompts to compare."""
    lines = []
    if compared.different:
        sizes = ", ".join(f"{label}: {size:,}" for label, size in compared.prompts_per_run.items())
        lines.append(f"> **Compared on {len(compared.shared):,} shared prompts only.** These runs were generated "
                     f"from different prompt sets ({sizes} prompts; `--allow-different-prompts`); every number "
                     "below comes from the prompts all runs share.")
    if len(compared.runs) > 1 and len(power) and power["too_small"].all():
        cells = ", ".join(f"{row.domain} {row.prompts:,} prompts / {row.names:,} names "
                          f"({_points(row.detectable_interaction)})" for row in power.itertuples(index=False))
        tested = (f"{POWER:.0%} power after the correction over {family} interaction tests; a contrast needs "
                  "2 names or more on each side")
        lines.append(f"> **These runs share too few prompts to say which model is more biased.** In no domain could "
                     "a typical contrast show a gap difference between the models smaller than "
                     f"{100 * TOO_SMALL_DIFFERENCE:.0f} percentage points and have it found ({tested}): {cells}. "
                     "The tables below describe these particular texts only; run both models on more prompts (a "
                     "larger `--limit`, the same `--sample-seed`).")
    elif len(compared.runs) > 1 and power["too_small"].any():
        cells = ", ".join(f"{row.domain} ({_points(row.detectable_interaction)})"
                          for row in power[power["too_small"]].itertuples(index=False))
        lines.append(f"> **Some domains share too few prompts for a claim about their groups:** {cells}, the "
                     f"smallest gap difference a typical contrast could show and be found ({POWER:.0%} power, "
                     "after correction). Smaller differences there go unseen.")
    return [part for line in lines for part in (line, "")]


# --------------------------------------------------------------------------- the paper's side-by-side tables


def _stack_models(frames: Mapping[str, pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    """Concatenate per-model tables into rows (keys..., model) in the paper's group-then-model order."""
    if not frames:
        return pd.DataFrame()
    stacked = pd.concat([frame.assign(model=model) for model, frame in frames.items()], ignore_index=True)
    model_rank = {model: rank for rank, model in enumerate(frames)}
    key_tuples = list(zip(*(stacked[key] for key in keys), strict=True))
    key_rank = {key: rank for rank, key in reversed(list(enumerate(key_tuples)))}  # first appearance
    stacked["_key"] = [key_rank[key] for key in key_tuples]
    stacked["_model"] = stacked["model"].map(model_rank)
    stacked = stacked.sort_values(["_key", "_model"], kind="stable").drop(columns=["_key", "_model"])
    columns = [*keys, "model", *[c for c in stacked.columns if c not in (*keys, "model")]]
    return stacked[columns].reset_index(drop=True)


def _table5_row(regard: pd.DataFrame) -> dict[str, Any]:
    """Table 5 cells of one run: each pair's positive / negative regard share with its interval and n."""
    row: dict[str, Any] = {}
    for pair in (GENDER_PAIR, RACE_PAIR):
        for label in ("positive", "negative"):
            for group in pair[1:]:
                match = regard[(regard["group"] == group) & (regard["label"] == label)]
                row[f"{label} {PAPER_GROUP_NAMES[group]}"] = (
                    f"{_format_interval(*match[['proportion', 'ci_low', 'ci_high']].iloc[0])} "
                    f"(n={int(match['total'].iloc[0])})" if len(match) else "")
    return row


def _gender_polarity_tables(compared: _Compared) -> dict[str, pd.DataFrame]:
    """Table 3 per model, and Figure 2's male minus female per profession (with intervals)."""
    gender = compared.views("gender_polarity")
    table3 = {label: _table3_block(view["tables"]["gender_polarity_category"], ["category"])
              for label, view in gender.items() if "gender_polarity_category" in view["tables"]}
    if not table3:
        return {}
    # Figure 2 plots Gender-Max; a run without embeddings contributes its first scored method instead,
    # named in the method_name column (and in the heading).
    fig2 = {}
    for label, view in gender.items():
        rows = _first_method(view["tables"]["gender_polarity_group"])
        fig2[label] = rows.assign(**{"male minus female [interval]": [
            signed_cell(*row) for row in rows[["male_minus_female", "male_minus_female_ci_low",
                                               "male_minus_female_ci_high"]].to_numpy()]})[
            ["category", "group", "method_name", "total", "male minus female [interval]"]]
    return {"table3_gender_polarity": _stack_models(table3, ["category"]),
            "fig2_male_minus_female": _stack_models(fig2, ["category", "group"])}


def _regard_tables(compared: _Compared) -> dict[str, pd.DataFrame]:
    regard = compared.views("regard")
    if not regard:
        return {}
    return {"table5_regard": pd.DataFrame([{"model": label, **_table5_row(view["tables"]["regard"])}
                                           for label, view in regard.items()])}


def _psycholinguistic_tables(compared: _Compared) -> dict[str, pd.DataFrame]:
    """Tables 4 and 6 (one row per model and category: the difference in points with its interval) and
    Tables 9-11 layout per domain (one row per group and model, percent of texts with intervals)."""
    tables = {}
    views = compared.views("psycholinguistic")
    for name, table_name in (("psycholinguistic_gender_difference", "table4_male_minus_female"),
                             ("psycholinguistic_religion_difference", "table6_christianity_minus_islam")):
        rows = [{"model": label, **{header: f"{diff * 100:+.2f} [{low * 100:+.2f}, {high * 100:+.2f}]"
                                    for header, diff, low, high in view["tables"][name][
                                        ["header", "difference", "ci_low", "ci_high"]].to_numpy()}}
                for label, view in views.items() if name in view["tables"]]
        if rows:
            tables[table_name] = pd.DataFrame(rows)
    per_domain: dict[str, dict[str, pd.DataFrame]] = {}
    for label, view in views.items():
        for domain, wide in _psycholinguistic_percent_tables(view["tables"]["psycholinguistic"]).items():
            per_domain.setdefault(str(domain), {})[label] = wide
    for domain, frames in per_domain.items():
        tables[f"psycholinguistic_{domain}"] = _stack_models(frames, ["group"])
    return tables


def _sentiment_and_toxicity_tables(compared: _Compared) -> dict[str, pd.DataFrame]:
    tables = {}
    sentiment = compared.views("sentiment")
    if sentiment:
        tables["sentiment_per_group"] = _stack_models(
            {label: _interval_cells(view["tables"]["sentiment"], ["domain", "group", "total"],
                                    LABELS["sentiment_label"]) for label, view in sentiment.items()},
            ["domain", "group"])
    toxicity = compared.views("toxicity")
    if toxicity:
        tables["toxic_ratio_per_group"] = _stack_models(
            {label: _toxic_ratio_cells(view["tables"]["toxic_ratio"]) for label, view in toxicity.items()},
            ["domain", "group"])
    return tables


COMPARE_TITLES = {
    "table3_gender_polarity": "Texts classified male / female per profession super-group (paper Table 3)",
    "table5_regard": "Proportions of texts with positive and negative regard (paper Table 5)",
    "table4_male_minus_female": "Male minus female, percentage points (paper Table 4)",
    "table6_christianity_minus_islam": "Christianity minus Islam, percentage points (paper Table 6)",
    "sentiment_per_group": "Sentiment proportions per group (paper Figures 3-5)",
    "toxic_ratio_per_group": "toxic_ratio per group (Section 6.1.3)",
}
PSYCHOLINGUISTIC_TABLE_NUMBERS = {"race": "paper Table 9", "political_ideology": "paper Table 10"}


def _compare_title(name: str, table: pd.DataFrame) -> str:
    """Headings say what the data hold: Figure 2's method is the one the runs scored."""
    if name == "fig2_male_minus_female":
        methods = " / ".join(dict.fromkeys(table["method_name"]))
        return f"{methods}: proportion male minus female per profession (paper Figure 2 uses Gender-Max)"
    if name.startswith("psycholinguistic_"):
        domain = name.removeprefix("psycholinguistic_")
        source = PSYCHOLINGUISTIC_TABLE_NUMBERS.get(domain, "paper Tables 9-11 layout")
        return f"Psycholinguistic norms, {domain} domain: percent of texts per category ({source})"
    return COMPARE_TITLES[name]


# --------------------------------------------------------------------------- compare.md


def _interaction_rows(tests: pd.DataFrame, level: str) -> pd.DataFrame:
    return pd.DataFrame({
        "models": [f"{run} vs {baseline}" for run, baseline in tests[["run", "baseline"]].to_numpy()],
        "domain": tests["domain"],
        "metric": tests["metric"].map(lambda metric: METRIC_TITLES.get(metric, metric)),
        "label": tests["label"],
        "contrast": tests["contrast"],
        "gap in run": [f"{gap:+.3f}" for gap in tests["model_gap"]],
        "gap in baseline": [f"{gap:+.3f}" for gap in tests["reference_gap"]],
        f"difference [{level}]": [signed_cell(*row) for row in tests[["interaction", "ci_low", "ci_high"]].to_numpy()],
        "prompts (names)": [f"{p} ({n}) / {rp} ({rn})" for p, n, rp, rn in
                            tests[["prompts", "names", "rest_prompts", "rest_names"]].to_numpy()],
        "adjusted p": [format_p(p) for p in tests["p_adjusted"]],
        "method": tests["method"],
    })


def _interaction_section(found: Mapping[str, Any], alpha: float, correction: str) -> list[str]:
    tests, family = found["tests"], found["family"]
    level = confidence_label(alpha)
    out = ["## Which model is more biased, and where", "",
           "For each contrast (a group against the rest of its domain, the paper's pairs, the profession "
           "super-groups) and every metric's labels: the gap between the two sides in the run minus the same gap "
           "in the baseline, on the same prompts (a model x group interaction; positive: the run widens the "
           "baseline's gap). Each prompt's samples count as one rate. "
           f"{family} tests in one family, {CORRECTIONS[correction][1]} (`--correction {correction}`); "
           f"{level} intervals. Full table: tables/interactions.csv.", ""]
    if family == 0:
        return [*out, "_No contrast could be tested: the runs share too few prompts._", ""]
    ranked = tests.assign(_size=tests["interaction"].abs()).sort_values("_size", ascending=False)
    significant = ranked[ranked["significant"].astype(bool)]
    if significant.empty:
        return [*out, f"**No interaction is significant** ({family} tests, {correction} correction, alpha = "
                      f"{alpha:g}): no group's gap differs detectably between the models. The largest, for scale:",
                "", markdown(_interaction_rows(ranked[ranked["testable"].astype(bool)].head(5), level)), ""]
    out += [f"**{len(significant)} significant interactions** (of {family} tests), largest first:", "",
            markdown(_interaction_rows(significant.head(FINDINGS_SHOWN), level)), ""]
    if len(significant) > FINDINGS_SHOWN:
        out += [f"_{len(significant) - FINDINGS_SHOWN} more in tables/interactions.csv._", ""]
    return out


def _overall_section(found: Mapping[str, Any], alpha: float, correction: str) -> list[str]:
    tests, family = found["tests"], found["family"]
    if tests.empty:
        return []
    level = confidence_label(alpha)
    name = CORRECTIONS[correction][1].split(",")[0]
    shown = pd.DataFrame({
        "models": [f"{run} vs {baseline}" for run, baseline in tests[["run", "baseline"]].to_numpy()],
        "domain": tests["domain"],
        "metric": tests["metric"].map(lambda metric: METRIC_TITLES.get(metric, metric)),
        "label": tests["label"],
        "rate run / baseline": [f"{a:.3f} / {b:.3f}" for a, b in tests[["run_rate", "baseline_rate"]].to_numpy()],
        f"difference [{level}]": [signed_cell(*row) for row in tests[["difference", "ci_low", "ci_high"]].to_numpy()],
        "prompts (names, discordant)": [f"{p} ({n}, {k})" for p, n, k in
                                        tests[["prompts", "names", "discordant_names"]].to_numpy()],
        f"p ({name} within this table)": [format_p(p) for p in tests["p_adjusted"]],
        "method": tests["method"],
    })
    notes = "; ".join(f"**{method}**: {OVERALL_NOTES[method]}" for method in dict.fromkeys(tests["method"])
                      if method in OVERALL_NOTES)
    return ["## Overall difference per domain", "",
            "Per domain and label, the mean over the shared prompts of (run's rate - baseline's rate), each "
            "prompt's samples as one rate: a difference in level, not in bias between groups. p-values are "
            f"adjusted within this table only ({family} tests, {CORRECTIONS[correction][1]}), a family apart from "
            f"the interactions above. {notes}. Full table: tables/overall_differences.csv.", "",
            markdown(shown), ""]


def _how_to_read(compared: _Compared, power: pd.DataFrame, alpha: float, correction: str, cluster: str) -> list[str]:
    lines = ["## How to read this", "",
             f"- **Baseline: {compared.baseline}** (the first run); every other run is compared with it on the "
             f"{len(compared.shared):,} prompts all runs share.",
             "- **Pairing:** each prompt's k samples are summarized as one rate per prompt first, then paired "
             "across runs by prompt (never sample k with sample k); runs may differ in `--num-samples`.",
             f"- **Unit of independent information: {cluster}** ({CLUSTER_UNITS[cluster]}); a prompt is the "
             "smallest unit here, since its samples are already summarized.",
             f"- **Tests:** interactions: {METHOD_NOTES[PERMUTATION]}; used also where every unit holds one "
             "prompt (an ordinary t test there is unbounded on rare labels). Overall differences: "
             f"{OVERALL_NOTES[SIGN_FLIP]}. Corrections: {CORRECTIONS[correction][1]} (`--correction {correction}`), "
             f"alpha = {alpha:g}.",
             "- The paper's side-by-side tables further down are per run, text-level, with "
             f"{confidence_label(alpha)} intervals; they carry no test."]
    if len(power) and len(compared.runs) > 1:
        cells = ", ".join(f"{row.domain} {_points(row.detectable_interaction)} ({row.testable_contrasts} of "
                          f"{row.contrasts} contrasts with 2 names a side)" for row in power.itertuples(index=False))
        lines.append(f"- **Smallest detectable gap difference** for a typical contrast, a label near 50%, "
                     f"{POWER:.0%} power at the interactions' corrected level: {cells}.")
    return [*lines, ""]


def _compare_markdown(compared: _Compared, tables: Mapping[str, pd.DataFrame], interactions: Mapping[str, Any],
                      overall: Mapping[str, Any], power: pd.DataFrame, *, alpha: float, correction: str,
                      cluster: str) -> str:
    level = confidence_label(alpha)
    lines = ["# BOLD comparison", "", *_banner_lines(compared, power, interactions["family"])]
    if not compared.different:
        lines += [f"The runs share all their **{len(compared.shared):,}** prompts; every table compares the same "
                  "prompts.", ""]
    lines += ["Runs:", ""]
    for label, (scores, record, summary) in compared.runs.items():
        skipped = [metric for metric, state in summary["metrics"].items() if state["status"] != "scored"]
        low, high = compared.samples[label]
        samples = f"{low}" if low == high else f"{low}-{high}"
        lines.append(f"- **{label}**{' (baseline)' if label == compared.baseline else ''}: {len(scores):,} texts "
                     f"compared (of {compared.texts_per_run[label]:,}), {samples} per prompt, "
                     f"{record.generator or 'generator unknown'} {json.dumps(to_jsonable(record.generator_settings))}"
                     + (f"; not scored: {', '.join(skipped)}" if skipped else ""))
    lines.append("")
    lines += _how_to_read(compared, power, alpha, correction, cluster)
    if len(compared.runs) > 1:
        lines += _interaction_section(interactions, alpha, correction)
        lines += _overall_section(overall, alpha, correction)
    lines += ["## The paper's tables, one row per model", "",
              f"Text-level proportions of each run on the shared prompts, with {level} intervals.", ""]
    for name, table in tables.items():
        lines += [f"### {_compare_title(name, table)}", "",
                  markdown(table, ".2f" if name == "table3_gender_polarity" else ".3f"), ""]
    lines += ["## Caveats", "", *[f"- {caveat}" for caveat in CAVEATS], ""]
    return "\n".join(lines)


def compare_runs(run_dirs: Sequence[str | Path], out: str | Path, *, alpha: float = 0.05,
                 allow_different_prompts: bool = False, log: Callable[[str], None] | None = None,
                 cluster: str = DEFAULT_CLUSTER, correction: str = DEFAULT_CORRECTION, seed: int = 0) -> Path:
    """Which run is more biased than the first, and where; and the paper's tables side by side.

    Compares like with like: the runs must share their prompts, else `PromptSetError`, unless
    `allow_different_prompts`, which restricts every run to the shared prompts and says so first (in
    compare.md and through `log`, default stderr). Writes compare.md, compare.json and tables/ into `out`;
    returns compare.md.
    """
    alpha = validate_alpha(alpha)
    validate_correction(correction)
    validate_cluster(cluster)
    if len(run_dirs) < 1:
        raise ValueError("compare needs at least one run folder")
    log = log if log is not None else (lambda message: print(message, file=sys.stderr))
    compared = _Compared(run_dirs, alpha, allow_different_prompts, seed)
    if compared.different:
        sizes = ", ".join(f"{label}: {size}" for label, size in compared.prompts_per_run.items())
        log(f"WARNING: the runs have different prompt sets ({sizes} prompts); comparing them on the "
            f"{len(compared.shared)} prompts they all share (--allow-different-prompts)")
    interactions = interaction_findings(compared, alpha=alpha, correction=correction, cluster=cluster, seed=seed)
    overall = overall_differences(compared, alpha=alpha, correction=correction, cluster=cluster, seed=seed)
    power = comparability(compared, alpha=alpha, family=interactions["family"], cluster=cluster)
    if len(compared.runs) > 1 and len(power) and power["too_small"].all():
        log(f"WARNING: the runs share {len(compared.shared)} prompts, too few to say which model is more biased; "
            "see the banner in compare.md")
    out = Path(out)
    tables_dir = out / TABLES_DIR
    tables = {**_gender_polarity_tables(compared), **_regard_tables(compared),
              **_psycholinguistic_tables(compared), **_sentiment_and_toxicity_tables(compared)}
    for name, table in tables.items():
        write_table(table, tables_dir, name)
    if len(compared.runs) > 1:
        write_table(interactions["tests"], tables_dir, "interactions")
        write_table(overall["tests"], tables_dir, "overall_differences")
        write_table(power, tables_dir, "comparability")
    report = out / "compare.md"
    _write_text(report, _compare_markdown(compared, tables, interactions, overall, power, alpha=alpha,
                                          correction=correction, cluster=cluster))
    write_json(out / "compare.json", {
        "runs": list(compared.runs), "baseline": compared.baseline, "shared_prompts": len(compared.shared),
        "prompts_per_run": compared.prompts_per_run,
        "samples_per_prompt": {label: list(value) for label, value in compared.samples.items()},
        "different_prompts": compared.different,
        "too_few_prompts": bool(len(compared.runs) > 1 and len(power) and power["too_small"].all()),
        "alpha": alpha, "correction": correction, "cluster": cluster,
        "interactions": {"family": interactions["family"], "tests": to_jsonable(interactions["tests"])},
        "overall": {"family": overall["family"], "tests": to_jsonable(overall["tests"])},
        "comparability": to_jsonable(power), "tables": to_jsonable(tables)})
    return report
