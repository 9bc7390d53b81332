"""`bold-eval compare`: which model is more biased than another, and where, on the prompts the runs share.

The first run is the baseline (the paper's tables list WIKI first); every other run is compared with it on
the prompts all runs share, each prompt's k samples summarized as one rate per prompt first (never sample k
against sample k: the samples of a prompt are draws of one model, not pairs across models).

- **Where** (`findings.paired_findings`, every metric): per contrast (a group against the rest, the paper's
  pairs, the profession super-groups) and label, the gap between the sides in the run minus the same gap in
  the baseline on the same prompts, a model x group interaction tested with the name as the unit; all pairs
  of runs form one family corrected with `--correction`.
- **How much overall**, per domain and label: the mean over prompts of (run's rate - baseline's rate), a
  paired cluster-robust test over names (`paired_difference` with the runs' rates), corrected with the interactions.
- The paper's side-by-side tables (Tables 3-6, 9-10, Figures 2-5), one row per model.

A banner comes before any number when the shared prompts are too few for a realistic interaction to be found,
judged from the runs' own design (`analysis.compare.comparability`: the variance and design effect of their
per-prompt differences and the names on each side; calibrated by benchmarks/compare_power.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from bold_eval.analysis.clustered import (
    CALIBRATION_TABLES,
    CLUSTER_UNITS,
    CORRECTIONS,
    METHOD_NOTES,
    POWER,
    POWER_AGAINST_ORACLE,
    SCORE,
    confidence_label,
)
from bold_eval.analysis.compare import (
    OBSERVED,
    OVERALL_NOTES,
    PAIRED_SCORE,
    ComparedRuns,
    comparability,
    interaction_findings,
    joint_family,
    overall_differences,
    worst_case_comparability,
)
from bold_eval.analysis.findings import TOO_SMALL_DIFFERENCE
from bold_eval.analysis.rate_test import WELCH_CAP
from bold_eval.analysis.results import (
    CategoryTables,
    CorrectedFamily,
    GenderRatioTables,
    LabelTables,
    MetricView,
    RatioTables,
)
from bold_eval.analysis.views import paper_pairs
from bold_eval.core.options import AnalysisOptions
from bold_eval.core.provenance import differences_warning, resource_differences, resource_lines
from bold_eval.metrics import metric_specs
from bold_eval.metrics.spec import Categories, GenderRatio, LabelRatio, LabelShares, MetricSpec, resolve_hook
from bold_eval.report.first_screen import (
    CORRECTION_PROMISES,
    FINDINGS_SHOWN,
    UNIT_SENTENCES,
    metric_title,
    worst_case_cells,
)
from bold_eval.report.markdown import (
    format_interval,
    format_p,
    markdown,
    quantity,
    signed_cell,
    to_jsonable,
    write_table,
    write_text,
)
from bold_eval.report.paper_tables import (
    PAPER_GROUP_NAMES,
    category_headers,
    first_method,
    interval_cells,
    percent_tables,
    ratio_cells,
    table3_block,
)
from bold_eval.report.protocol import protocol_banner, protocol_differences
from bold_eval.report.run_report import (
    caveats,
)
from bold_eval.runfolder.json_files import write_json
from bold_eval.runfolder.layout import TABLES_DIR
from bold_eval.runfolder.loading import loaded_run
from bold_eval.runfolder.records import RunRecord, chat_protocol
from bold_eval.runfolder.transaction import report_transaction

# compare's output: replaced together or not at all (`report_transaction`).
COMPARE_ITEMS = ("compare.md", "compare.json", TABLES_DIR)


def _points(value: float) -> str:
    if pd.isna(value):
        return "no testable contrast"
    return "over 100 points" if value > 1 else f"{100 * value:.0f} points"


def _design(row: Any) -> str:
    """What a domain's detectable interaction was computed from, in a few words."""
    if row.basis != OBSERVED:
        return "each name one coin flip per run: no label's difference varies"
    typical = ("" if pd.isna(row.typical_names)
               else f"; typical contrast {row.typical_names:.0f} vs {row.typical_rest_names:.0f} names")
    return f"v = {row.variance_ratio:.2f}, design effect {row.design_effect:.2f}, p = {row.base_rate:.2f}{typical}"


def _records(compared: ComparedRuns) -> dict[str, RunRecord]:
    return {label: record for label, (_, record, _) in compared.runs.items()}


def _banner_lines(compared: ComparedRuns, power: pd.DataFrame, family: int) -> list[str]:
    """Plain-words warnings that come before any other number: different prompt sets (the shared count
    first), then too few shared prompts to compare."""
    lines = []
    if compared.different:
        sizes = ", ".join(f"{label}: {size:,}" for label, size in compared.prompts_per_run.items())
        lines.append(f"> **Compared on {quantity(len(compared.shared), 'shared prompt')} only.** These runs were "
                     f"generated from different prompt sets ({sizes} prompts; `--allow-different-prompts`); every "
                     "number below comes from the prompts all runs share.")
    if len(compared.runs) > 1 and len(power) and power["too_small"].all():
        cells = ", ".join(f"{row.domain} {quantity(row.prompts, 'prompt')} / {quantity(row.names, 'name')} "
                          f"({_points(row.detectable_interaction)})" for row in power.itertuples(index=False))
        tested = (f"{POWER:.0%} power after the correction over the {quantity(family, 'test')} of this comparison, "
                  "from the runs' own differences: their variance, design effect and names on each side, and how the "
                  "prompts spread over those names; a contrast needs 2 names or more on each side, and enough of them "
                  "for the test to reach the corrected level")
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


class SideBySide(NamedTuple):
    """One of the paper's tables with a row per model, as compare.md shows it."""

    title: str
    table: pd.DataFrame
    number_format: str = ".3f"


# A view kind's side-by-side tables (`ViewHooks.paper_tables`): (spec, {model: its view}) -> {file name: table}.
PaperTables = Callable[[MetricSpec, Mapping[str, MetricView]], dict[str, SideBySide]]


def _pairs_row(table: pd.DataFrame, spec: MetricSpec, pairs: tuple[str, ...] | None) -> dict[str, Any]:
    """Table 5 cells of one run: each paper pair's groups' share of each tested label, with its interval and n."""
    row: dict[str, Any] = {}
    tested = spec.tested(tuple(spec.labels))
    for pair in paper_pairs(pairs):
        for label, (_, value) in tested.items():
            for group in pair[1:]:
                match = table[(table["group"] == group) & (table["label"] == str(value))]
                row[f"{label} {PAPER_GROUP_NAMES[group]}"] = (
                    f"{format_interval(*match[['proportion', 'ci_low', 'ci_high']].iloc[0])} "
                    f"(n={int(match['total'].iloc[0])})" if len(match) else "")
    return row


def label_tables(spec: MetricSpec, views: Mapping[str, MetricView]) -> dict[str, SideBySide]:
    """`LabelShares`: the first table's shares per domain and group ("groups") or per paper pair ("pairs")."""
    kind = spec.view
    assert isinstance(kind, LabelShares)
    paper = kind.paper_table
    if paper is None:
        return {}
    tables = {label: next(iter(view.kind_tables(LabelTables).shares.values())) for label, view in views.items()}
    if paper.layout == "pairs":
        rows = [{"model": label, **_pairs_row(table, spec, kind.pairs)} for label, table in tables.items()]
        return {paper.name: SideBySide(paper.title, pd.DataFrame(rows))}
    cells = {label: interval_cells(table, ["domain", "group", "total"], list(dict.fromkeys(table["label"])))
             for label, table in tables.items()}
    return {paper.name: SideBySide(paper.title, _stack_models(cells, ["domain", "group"]))}


def ratio_tables(spec: MetricSpec, views: Mapping[str, MetricView]) -> dict[str, SideBySide]:
    """`LabelRatio`: the ratio cells per domain, group and model."""
    assert isinstance(spec.view, LabelRatio)
    paper = spec.view.paper_table
    if paper is None:
        return {}
    cells = {label: ratio_cells(tables.ratio, tables.label)
             for label, tables in ((label, view.kind_tables(RatioTables)) for label, view in views.items())}
    return {paper.name: SideBySide(paper.title, _stack_models(cells, ["domain", "group"]))}


def category_tables(spec: MetricSpec, views: Mapping[str, MetricView]) -> dict[str, SideBySide]:
    """`Categories`: each pair difference (one row per model and a column per category: the difference in points with
    its interval; Tables 4, 6), then the percent tables per domain (a row per group and model)."""
    kind, tables = spec.view, {}
    assert isinstance(kind, Categories)
    runs = {label: view.kind_tables(CategoryTables) for label, view in views.items()}
    for difference in kind.differences:
        paper = difference.paper_table
        rows = [{"model": label, **{header: f"{diff * 100:+.2f} [{low * 100:+.2f}, {high * 100:+.2f}]"
                                    for header, diff, low, high in run.differences[difference.key][
                                        ["header", "difference", "ci_low", "ci_high"]].to_numpy()}}
                for label, run in runs.items() if difference.key in run.differences]
        if rows and paper is not None:
            tables[paper.name] = SideBySide(paper.title, pd.DataFrame(rows))
    if kind.paper_table is None:
        return tables
    per_domain: dict[str, dict[str, pd.DataFrame]] = {}
    for label, run in runs.items():
        for domain, wide in percent_tables(run.shares, category_headers(spec)).items():
            per_domain.setdefault(str(domain), {})[label] = wide
    for domain, frames in per_domain.items():
        title = kind.paper_table.title.format(domain=domain, table=kind.table_numbers.get(domain, kind.layout))
        tables[kind.paper_table.name.format(domain=domain)] = SideBySide(title, _stack_models(frames, ["group"]))
    return tables


def gender_ratio_tables(spec: MetricSpec, views: Mapping[str, MetricView]) -> dict[str, SideBySide]:
    """`GenderRatio`: Table 3 per model, and Figure 2's male minus female per group (with intervals)."""
    kind = spec.view
    assert isinstance(kind, GenderRatio)
    runs = {label: view.kind_tables(GenderRatioTables) for label, view in views.items()}
    table3 = {label: table3_block(run.category, ["category"], kind.methods)
              for label, run in runs.items() if run.category is not None}
    if not table3:
        return {}
    tables = {}
    if kind.paper_table is not None:
        tables[kind.paper_table.name] = SideBySide(kind.paper_table.title, _stack_models(table3, ["category"]), ".2f")
    # Figure 2 plots the paper's first method; a run without it contributes its first scored method instead,
    # named in the method_name column (and in the heading).
    fig2 = {}
    for label, run in runs.items():
        rows = first_method(run.group, kind.methods)
        fig2[label] = rows.assign(**{"male minus female [interval]": [
            signed_cell(*row) for row in rows[["male_minus_female", "male_minus_female_ci_low",
                                               "male_minus_female_ci_high"]].to_numpy()]})[
            ["category", "group", "method_name", "total", "male minus female [interval]"]]
    if kind.difference_table is not None:
        table = _stack_models(fig2, ["category", "group"])
        title = kind.difference_table.title.format(methods=" / ".join(dict.fromkeys(table["method_name"])))
        tables[kind.difference_table.name] = SideBySide(title, table)
    return tables


def _paper_tables(compared: ComparedRuns) -> dict[str, SideBySide]:
    """Every metric's side-by-side tables (its view kind's `ViewHooks.paper_tables`, in
    `MetricPresentation.paper_rank` order), then the worst cases over k."""
    tables: dict[str, SideBySide] = {}
    for spec in sorted(metric_specs(), key=lambda spec: spec.presentation.paper_rank):
        views = compared.views(spec.name)
        if views:
            paper_tables: PaperTables = resolve_hook(spec.view.hooks.paper_tables)
            tables.update(paper_tables(spec, views))
    worst = compared.worst_cases()
    if worst:
        tables["worst_case_per_group"] = SideBySide(
            "Worst case over k samples per group (an addition to the paper; RealToxicityPrompts)", _stack_models(
                {label: worst_case_cells(view.tables["worst_case"]) for label, view in worst.items()},
                ["domain", "group"]))
    return tables


def _interaction_rows(tests: pd.DataFrame, level: str) -> pd.DataFrame:
    return pd.DataFrame({
        "models": [f"{run} vs {baseline}" for run, baseline in tests[["run", "baseline"]].to_numpy()],
        "domain": tests["domain"],
        "metric": tests["metric"].map(lambda metric: metric_title(metric)),
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


def _interaction_section(found: CorrectedFamily, alpha: float, correction: str) -> list[str]:
    tests, family = found.tests, found.family
    level = confidence_label(alpha)
    out = ["## Which model is more biased, and where", "",
           "For each contrast (a group against the rest of its domain, the paper's pairs, the profession "
           "super-groups) and every metric's labels: the gap between the two sides in the run minus the same gap "
           "in the baseline, on the same prompts (a model x group interaction; positive: the run widens the "
           "baseline's gap). Each prompt's samples count as one rate. "
           f"One family of {quantity(family, 'test')} with the overall differences below, {CORRECTIONS[correction][1]} "
           f"(`--correction {correction}`); {level} intervals. Full table: tables/interactions.csv.", ""]
    if tests.empty or not tests["testable"].astype(bool).any():
        return [*out, "_No contrast could be tested: the runs share too few prompts._", ""]
    ranked = tests.assign(_size=tests["interaction"].abs()).sort_values("_size", ascending=False)
    significant = ranked[ranked["significant"].astype(bool)]
    if significant.empty:
        return [*out,
                f"**No interaction is significant** ({quantity(family, 'test')}, {correction} correction, alpha = "
                      f"{alpha:g}): no group's gap differs detectably between the models. The largest, for scale:",
                "", markdown(_interaction_rows(ranked[ranked["testable"].astype(bool)].head(5), level)), ""]
    out += [f"**{quantity(len(significant), 'significant interaction')}** (of {quantity(family, 'test')}), "
            "largest first:", "",
            markdown(_interaction_rows(significant.head(FINDINGS_SHOWN), level)), ""]
    if len(significant) > FINDINGS_SHOWN:
        out += [f"_{len(significant) - FINDINGS_SHOWN} more in tables/interactions.csv._", ""]
    return out


def _overall_section(found: CorrectedFamily, alpha: float, correction: str) -> list[str]:
    tests, family = found.tests, found.family
    if tests.empty:
        return []
    level = confidence_label(alpha)
    name = CORRECTIONS[correction][1].split(",")[0]
    shown = pd.DataFrame({
        "models": [f"{run} vs {baseline}" for run, baseline in tests[["run", "baseline"]].to_numpy()],
        "domain": tests["domain"],
        "metric": tests["metric"].map(lambda metric: metric_title(metric)),
        "label": tests["label"],
        "rate run / baseline": [f"{a:.3f} / {b:.3f}" for a, b in tests[["run_rate", "baseline_rate"]].to_numpy()],
        f"difference [{level}]": [signed_cell(*row) for row in tests[["difference", "ci_low", "ci_high"]].to_numpy()],
        "prompts (names, discordant)": [f"{p} ({n}, {k})" for p, n, k in
                                        tests[["prompts", "names", "discordant_names"]].to_numpy()],
        f"adjusted p ({name})": [format_p(p) for p in tests["p_adjusted"]],
        "method": tests["method"],
    })
    notes = "; ".join(f"**{method}**: {OVERALL_NOTES[method]}" for method in dict.fromkeys(tests["method"])
                      if method in OVERALL_NOTES)
    return ["## Overall difference per domain", "",
            "Per domain and label, the mean over the shared prompts of (run's rate - baseline's rate), each "
            "prompt's samples as one rate: a difference in level, not in bias between groups. p-values are "
            f"adjusted in one family with the interactions above ({quantity(family, 'test')}, "
            f"{CORRECTIONS[correction][1]}). "
            f"{notes}. Full table: tables/overall_differences.csv.", "",
            markdown(shown), ""]


def _test_notes(interactions: pd.DataFrame) -> str:
    """The interactions' tests in words: the methods they used, or the cluster-robust t of equal rates (the test an
    interaction gets) where none ran."""
    used = [m for m in dict.fromkeys(interactions.get("method", pd.Series(dtype=str))) if m in METHOD_NOTES]
    return (f"{'; '.join(METHOD_NOTES[method] for method in used or [SCORE])}; the same test also where every "
            "unit holds one prompt (an ordinary t test there is unbounded on rare labels); intervals are not "
            "corrected for the family")


def _how_to_read(compared: ComparedRuns, power: pd.DataFrame, alpha: float, correction: str, cluster: str,
                 family: int) -> list[str]:
    """## How to read this: plain sentences first, then the baseline, the pairing and the power per domain."""
    promise = CORRECTION_PROMISES.get(correction, "at level {alpha:g}").format(alpha=alpha)
    interactions, overall = POWER_AGAINST_ORACLE["compare's interactions"], POWER_AGAINST_ORACLE["overall difference"]
    sentences = [
        UNIT_SENTENCES.get(cluster, f"One unit is {CLUSTER_UNITS[cluster]}."),
        "A finding is a contrast whose gap between its two sides differs between a run and the baseline on the "
        "same prompts by more than chance would at the corrected level; no finding means none was shown, not that "
        "there is none.",
        f"An interval [low, high] is a {confidence_label(alpha)} confidence interval: the range of true values these "
        "texts are consistent with.",
        f"All {quantity(family, 'test')} of this comparison (interactions and overall differences) were corrected "
        f"together ({CORRECTIONS[correction][1].split(',')[0]}), {promise}.",
        "The smallest detectable gap difference is the interaction a typical contrast would show and be found "
        "four times in five; smaller ones may exist unseen.",
    ]
    lines = ["## How to read this", "", " ".join(sentences), "",
             f"- **Baseline: {compared.baseline}** (the first run); every other run is compared with it on the "
             f"{quantity(len(compared.shared), 'prompt')} all runs share.",
             "- **Pairing:** each prompt's k samples are summarized as one rate per prompt first, then paired "
             "across runs by prompt (never sample k with sample k); runs may differ in `--num-samples`. A prompt "
             "is the smallest unit here, since its samples are already summarized.",
             "- The paper's side-by-side tables further down are per run, text-level, with "
             f"{confidence_label(alpha)} intervals; they carry no test.",
             f"- **What the tests promise**, measured on BOLD's own designs ({CALIBRATION_TABLES}): when no run "
             f"differs from the baseline, a false finding in at most alpha = {alpha:g} of comparisons; a real "
             f"difference found {interactions:.0%} (interactions) and {overall:.0%} (overall differences) as often "
             "as by a test that knew the true variance, for sides of 10 or more names."]
    if len(power) and len(compared.runs) > 1:
        cells = "; ".join(f"{row.domain} {_points(row.detectable_interaction)} ({row.testable_contrasts} of "
                          f"{quantity(row.contrasts, 'contrast')} testable; {_design(row)})"
                          for row in power.itertuples(index=False))
        lines.append(f"- **Smallest detectable gap difference** of a typical contrast: {cells}. The typical contrast "
                     "is the median of the testable ones (two names or more a side, enough to reach the level).")
    return [*lines, ""]


def resource_versions(records: Mapping[str, RunRecord]) -> list[str]:
    """How the runs' classifiers, embeddings and lexicon files differ (`provenance.resource_differences`)."""
    return resource_differences({label: record.resources for label, record in records.items()})


def resources_banner(records: Mapping[str, RunRecord]) -> list[str]:
    """compare.md's warning, before any number, when the runs were scored by different weights or files."""
    warning = differences_warning(resource_versions(records))
    return [f"> **{warning}**", ""] if warning else []


def _scored_with(records: Mapping[str, RunRecord]) -> list[str]:
    """What scored each run: its classifiers' Hub commits, its files' checksums; runs that record none say so."""
    if not any(record.resources for record in records.values()):
        return []
    lines = ["Scored with (Hub commit or sha256):", ""]
    for label, record in records.items():
        found = resource_lines(record.resources)
        lines.append(f"- **{label}**: " + ("; ".join(f"`{line}`" for line in found) if found
                                           else "not recorded in its run.json"))
    return [*lines, ""]


def _warn_instruments(compared: ComparedRuns, log: Callable[[str], None]) -> tuple[list[str], list[str]]:
    """How the runs differ in how their texts were asked for (chat protocols) and scored (weights and files), each
    said through `log` when they do."""
    protocols = protocol_differences(_records(compared))
    if protocols:
        log("WARNING: the runs used different chat protocols or system prompts (" + "; ".join(protocols) + "); "
            "see the banner in compare.md")
    versions = resource_versions(_records(compared))
    if versions:
        log(f"WARNING: {differences_warning(versions)} See the banner in compare.md.")
    return protocols, versions


def _method_lines(alpha: float, correction: str, cluster: str, interactions: pd.DataFrame) -> list[str]:
    """## Method: the tests, the correction and the power calculation, formulas included (the end of compare.md)."""
    return ["## Method", "",
            f"- **Unit of independent information: {cluster}** ({CLUSTER_UNITS[cluster]}).",
            f"- **Interactions:** {_test_notes(interactions)}.",
            f"- **Overall differences:** {OVERALL_NOTES[PAIRED_SCORE]}.",
            f"- **Correction:** {CORRECTIONS[correction][1]} (`--correction {correction}`), alpha = {alpha:g}.",
            f"- **Smallest detectable gap difference:** the difference a typical contrast finds with {POWER:.0%} "
            "power at the interactions' corrected level (`level` in tables/comparability.csv), planned for the "
            "interaction test: its SE = sqrt(v p (1 - p) deff (1 / n_a + 1 / n_b)) for equal names, the noise of its "
            "variance and its critical value on Welch degrees of freedom over each side's effective names, at most "
            f"{WELCH_CAP:g} times the fewer side's (`df`), "
            "n the prompts on each side and, from the runs' own per-prompt "
            "differences d: v = Var(d) / p (1 - p) (`variance_ratio`, median over labels), deff the design effect "
            "of d with names as clusters (`design_effect`, median over labels), p the base rate of the label "
            "nearest 50% (`base_rate`); calibrated against the simulated power of this test in "
            "benchmarks/compare_power.py.", ""]


def _compare_markdown(compared: ComparedRuns, tables: Mapping[str, SideBySide], interactions: CorrectedFamily,
                      overall: CorrectedFamily, power: pd.DataFrame, *, alpha: float, correction: str,
                      cluster: str) -> str:
    level = confidence_label(alpha)
    lines = ["# BOLD comparison", "", *protocol_banner(protocol_differences(_records(compared))),
             *resources_banner(_records(compared)), *_banner_lines(compared, power, interactions.family)]
    if not compared.different:
        shared = len(compared.shared)
        lines += [f"The runs share all their **{shared:,}** {'prompt' if shared == 1 else 'prompts'}; every table "
                  "compares the same prompts.", ""]
    lines += ["Runs:", ""]
    for label, (scores, record, views) in compared.runs.items():
        skipped = [metric for metric, state in views.metrics.items() if state["status"] != "scored"]
        low, high = compared.samples[label]
        samples = f"{low}" if low == high else f"{low}-{high}"
        lines.append(f"- **{label}**{' (baseline)' if label == compared.baseline else ''}: "
                     f"{quantity(len(scores), 'text')} "
                     f"compared (of {compared.texts_per_run[label]:,}), {samples} per prompt, "
                     f"{record.generator or 'generator unknown'} {json.dumps(to_jsonable(record.generator_settings))}"
                     + (f"; not scored: {', '.join(skipped)}" if skipped else ""))
    lines.append("")
    lines += _scored_with(_records(compared))
    worst = worst_case_comparability(compared)
    if worst:
        lines += [f"Worst cases: {worst}.", ""]
    lines += _how_to_read(compared, power, alpha, correction, cluster, interactions.family)
    if len(compared.runs) > 1:
        lines += _interaction_section(interactions, alpha, correction)
        lines += _overall_section(overall, alpha, correction)
    lines += ["## The paper's tables, one row per model", "",
              f"Text-level proportions of each run on the shared prompts, with {level} intervals.", ""]
    for shown in tables.values():
        lines += [f"### {shown.title}", "", markdown(shown.table, shown.number_format), ""]
    lines += ["## Caveats", "", *[f"- {caveat}" for caveat in caveats()], ""]
    lines += _method_lines(alpha, correction, cluster, interactions.tests)
    return "\n".join(lines)


def compare_runs(run_dirs: Sequence[str | Path], out: str | Path, options: AnalysisOptions | None = None, *,
                 allow_different_prompts: bool = False, log: Callable[[str], None] | None = None,
                 **keywords: Any) -> Path:
    """Which run is more biased than the first, and where; and the paper's tables side by side.

    Compares like with like: the runs must share their prompts, else `PromptSetError`, unless
    `allow_different_prompts`, which restricts every run to the shared prompts and says so first (in
    compare.md and through `log`, default stderr). `options` (validated when built; without them `keywords`
    alpha, cluster, correction and seed build them) say how runs are tested. Writes compare.md, compare.json and
    tables/ into `out`; returns compare.md.
    """
    options = options if options is not None else AnalysisOptions(**keywords)
    alpha, cluster, correction, seed = options.alpha, options.cluster, options.correction, options.seed
    if len(run_dirs) < 1:
        raise ValueError("compare needs at least one run folder")
    log = log if log is not None else (lambda message: print(message, file=sys.stderr))
    compared = ComparedRuns([loaded_run(run_dir) for run_dir in run_dirs], alpha, allow_different_prompts, seed)
    if compared.different:
        sizes = ", ".join(f"{label}: {size}" for label, size in compared.prompts_per_run.items())
        log(f"WARNING: the runs have different prompt sets ({sizes} prompts); comparing them on the "
            f"{quantity(len(compared.shared), 'prompt')} they all share (--allow-different-prompts)")
    protocols, versions = _warn_instruments(compared, log)
    interactions, overall = joint_family(
        [interaction_findings(compared, alpha=alpha, correction=correction, cluster=cluster, seed=seed),
         overall_differences(compared, alpha=alpha, correction=correction, cluster=cluster)],
        alpha=alpha, correction=correction)
    power = comparability(compared, alpha=alpha, family=interactions.family, cluster=cluster)
    if len(compared.runs) > 1 and len(power) and power["too_small"].all():
        log(f"WARNING: the runs share {quantity(len(compared.shared), 'prompt')}, too few to say which model is "
            "more biased; see the banner in compare.md")
    out = Path(out)
    shown = _paper_tables(compared)
    tables = {name: table.table for name, table in shown.items()}
    with report_transaction(out, COMPARE_ITEMS) as staging:  # compare.md, compare.json and tables/ as one unit
        tables_dir = staging / TABLES_DIR
        for name, table in tables.items():
            write_table(table, tables_dir, name)
        if len(compared.runs) > 1:
            write_table(interactions.tests, tables_dir, "interactions")
            write_table(overall.tests, tables_dir, "overall_differences")
            write_table(power, tables_dir, "comparability")
        report = staging / "compare.md"
        write_text(report, _compare_markdown(compared, shown, interactions, overall, power, alpha=alpha,
                                              correction=correction, cluster=cluster))
        write_json(staging / "compare.json", {
            "runs": list(compared.runs), "baseline": compared.baseline, "shared_prompts": len(compared.shared),
            "prompts_per_run": compared.prompts_per_run,
            "samples_per_prompt": {label: list(value) for label, value in compared.samples.items()},
            "different_prompts": compared.different, "worst_case": worst_case_comparability(compared),
            "chat_protocols": {label: chat_protocol(record) for label, record in _records(compared).items()},
            "different_protocols": protocols,
            "resources": {label: record.resources for label, record in _records(compared).items()},
            "different_resources": versions,
            "too_few_prompts": bool(len(compared.runs) > 1 and len(power) and power["too_small"].all()),
            "alpha": alpha, "correction": correction, "cluster": cluster,
            "interactions": {"family": interactions.family, "tests": to_jsonable(interactions.tests)},
            "overall": {"family": overall.family, "tests": to_jsonable(overall.tests)},
            "comparability": to_jsonable(power), "tables": to_jsonable(tables)})
    return out / "compare.md"
