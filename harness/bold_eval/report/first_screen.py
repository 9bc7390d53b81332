"""The report's first screen: what the run can say, how to read it, then the findings.

Order, as a reader needs it: plain-words warnings before any number (partial run, domains too small to find a realistic
difference), a short "How to read this" (plain sentences first, then the protocol, design effects, the smallest
detectable difference per domain and thresholds), then the model against the Wikipedia sentences of the same prompts
(Section 6's question: does the model treat groups differently *beyond* the human-written text?), then the group
differences in the run's own texts and the largest gaps. It formats `bold_eval.analysis.summary.summarize`'s views as
markdown and writes the findings' and worst cases' tables and figures into the report's folders.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bold_eval.analysis.clustered import (
    CALIBRATION_TABLES,
    METHOD_NOTES,
    POWER_AGAINST_ORACLE,
    SCORE,
    confidence_label,
)
from bold_eval.analysis.results import Coverage, Summary
from bold_eval.core.errors import UsageError
from bold_eval.metrics import metric_spec, metric_specs
from bold_eval.report.figures import plot_worst_case
from bold_eval.report.markdown import (
    format_interval,
    format_p,
    markdown,
    quantity,
    signed_cell,
    write_table,
)
from bold_eval.report.painter import Painter
from bold_eval.report.protocol import protocol_lines, trace_lines
from bold_eval.runfolder.records import RunRecord

# Rows of a findings table shown in report.md; all of them are in tables/.
FINDINGS_SHOWN = 15


def metric_title(metric: str) -> str:
    """A metric's name in running text and the findings tables (`MetricSpec.display_name`)."""
    try:
        return metric_spec(metric).display_name
    except UsageError:  # a metric not registered here (a folder written with another): its name as it is
        return metric


# --------------------------------------------------------------------------- before any number


def scope_lines(record: RunRecord, summary: Summary) -> list[str]:
    """What this run can and cannot say, in plain words and before any number."""
    found = summary.findings
    coverage = summary.counts.get("coverage")
    lines: list[str] = []
    power = found.power
    if found.too_small:
        lines.append("> **This run is too small to say whether the model treats groups differently.** In every "
                     "domain a typical group would have to differ from the rest by more than "
                     f"{_points(power['detectable_difference'].min())} to be found (80% power after the "
                     "correction for many tests). The tables below describe these particular texts only. Run on "
                     "more prompts (a larger `--limit`, or none).")
    elif found.too_small_domains:
        parts = [f"{row.domain} ({_points(row.detectable_difference)})"
                 for row in power[power["too_small"]].itertuples(index=False)]
        lines.append("> **Some domains are too small for claims about their groups:** " + ", ".join(parts) +
                     " is the smallest group-versus-rest difference a typical group could show and be found "
                     "(80% power, after correction). Smaller differences there go unseen.")
    if coverage is not None and not coverage["complete"]:
        lines.append(_partial_line(record, coverage))
    lines += trace_lines(record)[:1]  # texts that ended inside a thinking trace are in no number below
    reference = summary.reference_findings
    if reference is not None and reference.shared_prompts < reference.model_prompts:
        lines.append(f"> **Reference incomplete:** the Wikipedia sentences of {reference.shared_prompts:,} of the "
                     f"run's {quantity(reference.model_prompts, 'prompt')} were scored; the comparison covers those "
                     "only.")
    return [part for line in lines for part in (line, "")]


def _points(value: float) -> str:
    if pd.isna(value) or value >= 1:
        return "more than any rate can differ (100 percentage points)"
    return f"{100 * value:.0f} percentage points"


def _partial_line(record: RunRecord, coverage: Coverage) -> str:
    parts = []
    if record.limit is not None:
        seed = (record.generation_settings or {}).get("limit_sample_seed")
        parts.append(f"`--limit {record.limit}`: a random sample of at most {quantity(record.limit, 'prompt')} per "
                     "domain, stratified by group" + (f" (`--sample-seed {seed}`)" if seed is not None else ""))
    if coverage["missing_domains"]:
        parts.append(f"domains not in this run: {', '.join(coverage['missing_domains'])}")
    if (record.generations or {}).get("missing_prompts"):
        parts.append(f"{record.generations['missing_prompts']} selected prompts had no generation")
    detail = "; ".join(parts)
    return (f"> **Partial run:** {coverage['prompts']:,} of BOLD's {coverage['bold_prompts']:,} prompts "
            f"({coverage['share']:.1%})" + (f"; {detail}." if detail else ".")
            + " Results describe this sample, not the whole benchmark.")


# What one unit is, in the opening sentence of "How to read this", per `--cluster`.
UNIT_SENTENCES = {
    "name": "One unit is one name (a person, or a Wikipedia page): all texts about it count together as one piece "
            "of evidence, because they share their subject and wording.",
    "prompt": "One unit is one prompt: its samples count together as one piece of evidence.",
    "none": "One unit is one text: every text counts as independent evidence, as in the paper.",
}
# What the correction promises, in words, per `--correction`.
CORRECTION_PROMISES = {
    "holm": "so the chance of even one false finding among them is at most {alpha:g}",
    "bh": "so the expected share of false findings among those listed is at most {alpha:g}",
    "by": "so the expected share of false findings among those listed is at most {alpha:g}, whatever their "
          "dependence",
}


def reading_sentences(summary: Summary) -> list[str]:
    """The plain sentences "How to read this" opens with: what one unit is, what a finding means, what an
    interval means, how many tests were corrected together, and what the smallest detectable difference means."""
    stats = summary.statistics
    found = summary.findings
    promise = CORRECTION_PROMISES.get(stats.correction, "at level {alpha:g}").format(alpha=stats.alpha)
    return [
        UNIT_SENTENCES.get(stats.cluster, f"One unit is {stats.cluster_unit}."),
        "A finding is a difference between groups, or between the model and Wikipedia, too large to be chance at "
        "the corrected level; no finding means none was shown, not that there is none.",
        f"An interval [low, high] is a {stats.confidence_label} confidence interval: the range of true values these "
        "texts are consistent with.",
        f"All {quantity(found.family, 'test')} in this report were corrected together "
        f"({stats.correction_name.split(',')[0]}), {promise}.",
        "The smallest detectable difference is the gap between a typical group and the rest of its domain that "
        "this run would find four times in five; smaller gaps may exist unseen.",
    ]


def promise_line(summary: Summary) -> str:
    """Both promises of the tests, with their measured numbers (benchmarks/CALIBRATION.md)."""
    own, paired = POWER_AGAINST_ORACLE["group vs rest"], POWER_AGAINST_ORACLE["model vs Wikipedia"]
    versus = (f" ({paired:.0%} for the model-vs-Wikipedia interactions)" if summary.reference_findings is not None
              else "")
    return (f"- **What the tests promise**, measured on BOLD's own designs ({CALIBRATION_TABLES}): when no group "
            f"differs, a false finding in at most alpha = {summary.statistics.alpha:g} of "
            f"reports; a real difference found {own:.0%} as often as by a test that knew the true variance, for groups "
            f"of 10 or more names{versus}.")


def reading_details(record: RunRecord, summary: Summary) -> list[str]:
    """The settings a reader needs to judge the numbers, after the plain sentences: the chat protocol, design
    effects, the smallest detectable difference per domain and each metric's own notes (markdown bullets)."""
    found = summary.findings
    out = [*protocol_lines(record), promise_line(summary)]
    deffs = found.design_effects
    if len(deffs):
        cells = ", ".join(f"{row.domain} {row.design_effect_median:.2f} (max {row.design_effect_max:.2f}; "
                          f"{row.texts_per_name:.1f} texts per unit)"
                          for row in deffs.itertuples(index=False) if pd.notna(row.design_effect_median))
        out.append(f"- **Design effect** (variance of a rate under this clustering over the variance with "
                   f"independent texts; median over the labels): {cells}. A design effect of 2 means the texts "
                   "hold half the information their count suggests.")
    power = found.power
    if len(power):
        cells = ", ".join(f"{row.domain} {_points(row.detectable_difference)}"
                          for row in power.itertuples(index=False))
        out.append("- **Smallest detectable difference** between a typical group and the rest of its domain, for "
                   f"a label near 50%, with 80% power at the corrected level alpha / {found.family}: {cells}. "
                   "Smaller differences may exist and go unseen; rare labels need smaller differences.")
    for spec in metric_specs():
        view = summary.scored(spec.name)
        notes = spec.presentation.reading_notes
        if notes is not None and view is not None and view.tables:
            out += notes((record.metric_options or {}).get(spec.name) or {})
    return out


def how_to_read(record: RunRecord, summary: Summary) -> list[str]:
    """## How to read this: the plain sentences, then the settings behind every number below."""
    return ["## How to read this", "", " ".join(reading_sentences(summary)), "",
            *reading_details(record, summary), ""]


def method_lines(summary: Summary) -> list[str]:
    """How the report's intervals and tests were computed, formulas included (the end of the report)."""
    stats = summary.statistics
    lines = [f"Unit of independent information: {stats.cluster} ({stats.cluster_unit}); `--cluster none` treats "
             "texts as independent, as the paper does, and `--cluster prompt` keeps only the samples of a prompt "
             "together.",
             f"Findings: {stats.findings_test}."]
    if summary.reference_findings is not None:
        lines.append(f"Model against Wikipedia (interactions): each prompt's samples count as one rate; "
                     f"{METHOD_NOTES[SCORE]}.")
    lines += [f"Correction: {stats.correction_name} (`--correction {stats.correction}`) over the report's one "
              f"family: {family_words(summary)}; a finding is listed when its adjusted p is below alpha = "
              f"{stats.alpha:g}.",
              f"Intervals on the paper's tables' proportions: {stats.interval}, {stats.confidence_label}, texts as "
              "units; the paper's own tables use its text-level tests, Holm-adjusted within each table.",
              f"Across a domain's groups (the paper's tables): {stats.chi_square}.",
              f"Pairs (the paper's binomial proportion test): {stats.pair_test}.",
              f"Small groups in the paper's tables: {stats.small_group_rule}."]
    return lines


def family_words(summary: Summary) -> str:
    """What the report's one corrected family holds, in words: its size and where its tests are listed."""
    found, paired = summary.findings, summary.reference_findings
    own = int(found.tests["testable"].astype(bool).sum()) if len(found.tests) else 0
    if paired is None:
        return f"every finding is in one family of {quantity(found.family, 'test')} (the contrasts of this run's texts)"
    return (f"every finding is in one family of {quantity(found.family, 'test')}: {quantity(own, 'contrast')} of the "
            f"model's own texts and {quantity(found.family - own, 'model-vs-Wikipedia interaction')}")


# --------------------------------------------------------------------------- model against Wikipedia


def reference_section(summary: Summary, tables: Path) -> list[str]:
    """## The model against Wikipedia: contrast x source interactions on the same prompts."""
    found = summary.reference_findings
    if found is None:
        return []
    tests = found.tests
    write_table(tests, tables, "model_vs_wikipedia")
    alpha = found.alpha
    level = confidence_label(alpha)
    out = ["## The model against Wikipedia on the same prompts", "",
           f"For each contrast (a group against the rest of its domain, and the paper's pairs: male vs female, "
           "African vs European Americans, Christianity vs Islam, the profession super-groups), the gap between "
           "the two sides' rates in the model's texts minus the same gap in the Wikipedia sentences of the same "
           f"{quantity(found.shared_prompts, 'prompt')} (a group x source interaction). A positive value means the "
           "model widens the gap the human-written text already has. Each prompt's samples count as one rate; the test "
           "is described under Method at the end. "
           f"p-values are adjusted with {found.correction_name} over the report's {family_words(summary)}.", ""]
    significant = tests[tests["significant"].astype(bool)]
    if found.family == 0:
        out += [f"_No contrast could be tested: of {quantity(found.untestable, 'contrast')}, each had too few names to "
                "test a rate or no variation (the reason is in tables/model_vs_wikipedia.csv)._" if found.untestable
                else "_No contrast could be tested: the reference and the run share too few prompts._", ""]
    elif significant.empty:
        out += [f"**No group's gap differs between the model and Wikipedia** ({quantity(found.family, 'test')}, "
                f"{found.correction} correction, alpha = {alpha:g}). The largest interactions, for scale:", ""]
        out += [markdown(_interaction_rows(_ranked(tests).head(5), level)), ""]
    else:
        ranked = _ranked(significant)
        differ = "contrast differs" if len(ranked) == 1 else "contrasts differ"
        out += [f"**{len(ranked)} {differ} between the model and Wikipedia** (of {quantity(found.family, 'test')}), "
                "largest first:", "", markdown(_interaction_rows(ranked.head(FINDINGS_SHOWN), level)), ""]
        if len(ranked) > FINDINGS_SHOWN:
            out += [f"_{len(ranked) - FINDINGS_SHOWN} more in tables/model_vs_wikipedia.csv._", ""]
    return out


def _ranked(tests: pd.DataFrame) -> pd.DataFrame:
    value = "interaction" if "interaction" in tests else "difference"
    return tests.assign(_size=tests[value].abs()).sort_values("_size", ascending=False)


def _interaction_rows(tests: pd.DataFrame, level: str) -> pd.DataFrame:
    return pd.DataFrame({
        "domain": tests["domain"],
        "metric": [metric_title(metric) for metric in tests["metric"]],
        "label": tests["label"],
        "contrast": tests["contrast"],
        "model: side / other": [f"{a:.3f} / {b:.3f}" for a, b in tests[["model_rate", "model_rest_rate"]].to_numpy()],
        "Wikipedia: side / other": [f"{a:.3f} / {b:.3f}" for a, b in
                                    tests[["reference_rate", "reference_rest_rate"]].to_numpy()],
        f"gap difference [{level}]": [signed_cell(*row) for row in
                                      tests[["interaction", "ci_low", "ci_high"]].to_numpy()],
        "prompts (names)": [f"{p} ({n}) / {rp} ({rn})" for p, n, rp, rn in
                            tests[["prompts", "names", "rest_prompts", "rest_names"]].to_numpy()],
        "adjusted p": [format_p(p) for p in tests["p_adjusted"]],
    })


# --------------------------------------------------------------------------- group differences


def findings_section(summary: Summary, tables: Path) -> list[str]:
    """## Group differences in this run's texts, and the largest gap per domain and metric."""
    found = summary.findings
    alpha = found.alpha
    level = confidence_label(alpha)
    tests, gaps = found.tests, found.gaps if found.gaps is not None else pd.DataFrame()
    write_table(tests, tables, "findings")
    write_table(gaps, tables, "largest_gaps")
    write_table(found.design_effects, tables, "design_effects")
    write_table(found.power, tables, "power")
    out = ["## Group differences in this run's texts", "",
           "Each contrast compares two sides of a domain: a group against the rest, or the paper's pairs "
           f"(two-group domains once). p-values are adjusted with {found.correction_name}: {family_words(summary)}; "
           f"the unit is the {found.cluster}. Rates carry {level} intervals "
           + ("with the name as the unit (the one-sample form of the test: cluster-robust spread, at least the "
              "beta-binomial one; none for a side of one name)" if found.cluster != "none" else "(Wilson's)")
           + f" and n; differences are side minus other side, with {level} intervals "
           + ("from inverting the same test, so an interval and its p-value agree about zero; a contrast whose "
              "names are too few for any p-value below alpha is listed as too few names to test a rate, outside "
              "the family." if found.cluster != "none" else "(Newcombe's, texts independent)."), ""]
    significant = tests[tests["significant"].astype(bool)]
    if found.family == 0:
        out += [f"_No comparison could be tested: {found.untestable} had too few names to test a rate, no texts on "
                "a side or no variation (each with its reason in tables/findings.csv)._" if found.untestable
                else "_No comparison had texts on both sides._", ""]
    elif significant.empty:
        out += [f"**No group differs significantly from the rest of its domain** ({quantity(found.family, 'test')}, "
                f"{found.correction} correction, alpha = {alpha:g}).", ""]
    else:
        ranked = _ranked(significant)
        shown = pd.DataFrame({
            "domain": ranked["domain"],
            "metric": [metric_title(metric) for metric in ranked["metric"]],
            "label": ranked["label"],
            "contrast": ranked["contrast"],
            f"side rate [{level}]": [_side_cell(*row) for row in
                                     ranked[["count", "total", "proportion", "rate_low", "rate_high", "names"]]
                                     .to_numpy()],
            f"other side [{level}]": [_side_cell(*row) for row in
                                      ranked[["rest_count", "rest_total", "rest_proportion", "rest_rate_low",
                                              "rest_rate_high", "rest_names"]].to_numpy()],
            f"difference [{level}]": [signed_cell(*row) for row in ranked[["difference", "ci_low", "ci_high"]]
                                      .to_numpy()],
            "names": [f"{a} / {b}" for a, b in ranked[["names", "rest_names"]].to_numpy()],
            "adjusted p": [format_p(p) for p in ranked["p_adjusted"]],
        })
        are = "difference is" if len(shown) == 1 else "differences are"
        out += [f"**{len(shown)} {are} significant** (of {quantity(found.family, 'test')}), largest first:", "",
                markdown(shown.head(FINDINGS_SHOWN)), ""]
        if len(shown) > FINDINGS_SHOWN:
            out += [f"_{len(shown) - FINDINGS_SHOWN} more in tables/findings.csv._", ""]
    out += ["### Largest gap between two groups", "",
            "Per domain and metric, the largest difference between two groups' rates over all the metric's labels, "
            "among groups with at least ten units (names). Its interval is Bonferroni-adjusted over every choice it "
            "was picked from (pairs of groups x labels; level shown), so picking the largest does not make it look "
            "surer than it is. The interval inverts the same test as the findings at that level, so it "
            "holds for groups that differ in names and spread; where the two groups' names are too few to reach "
            "that level no interval is printed, and the note says so.", ""]
    out += [markdown(largest_gap_rows(gaps, alpha)), ""]
    return out


def _side_cell(count: float, total: int, proportion: float, low: float, high: float, names: int) -> str:
    """A side's rate with its interval (at the level of the test beside it: names, or texts with `--cluster
    none`) and n; a continuous worst case (no count) as the mean over its prompts."""
    if pd.isna(count):
        return f"{proportion:.3f} (mean, n={quantity(int(total), 'prompt')})"
    interval = "[no interval: one name]" if pd.isna(low) else f"[{low:.3f}, {high:.3f}]"
    return f"{proportion:.3f} {interval} (n={int(total)}, {quantity(int(names), 'name')})"


# --------------------------------------------------------------------------- worst cases over k samples


def worst_case_cells(table: pd.DataFrame) -> pd.DataFrame:
    """A `worst_case_view` table as shown: one row per domain and group, one "value [low, high]" column per
    worst case (with k), and the prompts and names behind it."""
    cells = table.assign(cell=[format_interval(*row) for row in table[["value", "ci_low", "ci_high"]].to_numpy()],
                         measure=[f"{title} (k={k})" for title, k in table[["title", "k"]].to_numpy()])
    wide = cells.pivot_table(index=["domain", "group", "prompts", "names"], columns="measure", values="cell",
                             aggfunc="first", sort=False)
    return wide.reset_index()


def worst_case_section(summary: Summary, figures: Path, tables: Path, painter: Painter) -> list[str]:
    """## Worst case over k samples: per group, the RealToxicityPrompts measures and their analogues, marked as an
    addition to the paper; with one sample per prompt, why there are none. `painter` draws its figure."""
    view = summary.worst_case
    out = ["## Worst case over k samples (an addition to the paper)", ""]
    if view.skipped is not None:
        return out + [f"_Not shown: {view.skipped}._", ""]
    table = view.tables["worst_case"]
    write_table(table, tables, "worst_case")
    figure = painter.draw(plot_worst_case, table, path=figures / "worst_case.png")
    definitions = "; ".join(f"**{item['title']}**: {item['source']}" for item in view.definitions.values())
    out += [f"How a group fares in the worst of a prompt's k = {view.k} samples, not in a typical one. "
            f"{definitions}. Each value is a mean over the group's prompts (n), with a {view.interval} interval. "
            "Group differences in these measures are tested with the others above, in the same corrected family "
            "(labels ending in \"(worst of k)\"). The Wikipedia baseline has one sentence per prompt, so worst cases "
            "are not compared with it; compare two models at equal k with `bold-eval compare`.", ""]
    out += [f"_Note: {note}._" for note in view.notes]
    out += [markdown(worst_case_cells(table)), "", f"![worst case](figures/{figure.name})", ""]
    return out


def largest_gap_rows(gaps: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """One row per (domain, metric): its largest gap, or why there is none."""
    rows = []
    for row in gaps.to_dict(orient="records"):
        base = {"domain": row["domain"], "metric": metric_title(row["metric"])}
        if pd.isna(row.get("gap")):
            rows.append({**base, "label": "", "highest": "", "lowest": "", "gap [interval]": "",
                         "note": row.get("note") or "no gap"})
            continue
        rows.append({
            **base, "label": row["label"],
            "highest": f"{row['group_high']} " + _side_cell(row["count_high"], row["total_high"],
                                                             row["proportion_high"], row["high_rate_low"],
                                                             row["high_rate_high"], row["names_high"]),
            "lowest": f"{row['group_low']} " + _side_cell(row["count_low"], row["total_low"], row["proportion_low"],
                                                           row["low_rate_low"], row["low_rate_high"], row["names_low"]),
            "gap [interval]": f"{signed_cell(row['gap'], row['ci_low'], row['ci_high'])} ({row['interval_label']}, "
                              f"{int(row['choices'])} choice{'s' if int(row['choices']) > 1 else ''})",
            "note": row.get("note") or f"{quantity(int(row['eligible_groups']), 'group')} eligible",
        })
    return pd.DataFrame(rows)
