"""One report section per metric, in the paper's order."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from bold_eval.analysis.clustered import confidence_label
from bold_eval.analysis.results import MetricView, Summary
from bold_eval.analysis.statistics import wide_proportions, wilson_interval
from bold_eval.analysis.table3 import GENDER_POLARITY_METHODS
from bold_eval.metrics import metric_spec
from bold_eval.metrics.spec import MetricSpec
from bold_eval.report.figures import (
    plot_gender_polarity,
    plot_stacked_proportions,
    plot_toxic_ratio,
)
from bold_eval.report.markdown import (
    format_p,
    markdown,
    signed_cell,
    to_jsonable,
    write_table,
)
from bold_eval.report.paper_tables import (
    interval_cells,
    percent_cell,
    psycholinguistic_percent_tables,
    ratio_cell,
    table3_block,
    tests_markdown,
    toxic_ratio_cells,
)

# Figure colours for a metric whose spec names none, in label order.
DEFAULT_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _sentiment_section(view: MetricView, figures: Path, tables: Path, out: list[str],
                       alpha: float = 0.05) -> None:
    table = view.tables["sentiment"]
    spec = metric_spec("sentiment")
    for domain, part in table.groupby("domain", sort=True):
        wide = interval_cells(part, ["group", "total"], spec.labels["sentiment_label"])
        figure = plot_stacked_proportions(part, spec.colors, f"Sentiment, {domain} domain (VADER)",
                                          figures / f"sentiment_{domain}.png", alpha=alpha)
        out += [f"### {domain}", "", markdown(wide), "", f"![sentiment {domain}](figures/{figure.name})", ""]
    write_table(wide_proportions(table), tables, "sentiment_wide")


def _toxicity_section(view: MetricView, figures: Path, out: list[str], alpha: float = 0.05) -> None:
    table = view.tables["toxic_ratio"]
    figure = plot_toxic_ratio(table, figures / "toxic_ratio.png", alpha=alpha)
    out += [markdown(toxic_ratio_cells(table)), "",
            f"![toxic ratio](figures/{figure.name})", ""]


def _regard_section(view: MetricView, figures: Path, out: list[str], alpha: float = 0.05) -> None:
    table = view.tables["regard"]
    spec = metric_spec("regard")
    wide = interval_cells(table, ["domain", "group", "total"], spec.labels["regard_label"])
    figure = plot_stacked_proportions(table, spec.colors, "Regard, gender and race domains",
                                      figures / "regard.png", alpha=alpha)
    out += [markdown(wide), "", f"![regard](figures/{figure.name})", ""]


def _gender_polarity_section(view: MetricView, figures: Path, out: list[str], alpha: float = 0.05) -> None:
    tables = view.tables
    if "gender_polarity_category" in tables:
        table = tables["gender_polarity_category"]
        wide = table3_block(table, ["category"])
        level = confidence_label(alpha)
        out += ["Texts classified male and female per profession super-group (paper Table 3). male : female is "
                f"male # / female #, with its {level} interval from a percentile bootstrap over the super-group's "
                "Wikipedia pages (BOLD `name`: a page's sentences are not independent, so pages, not texts, are "
                "resampled).", "", markdown(wide, ".2f"), ""]
        out += _ratio_summary_lines(tables.get("gender_polarity_ratio_summary"), table, level)
    if "gender_polarity_tokens" in tables:
        out += ["Gendered tokens counted by unigram matching, per super-group:", "",
                markdown(tables["gender_polarity_tokens"]), ""]
    group = tables["gender_polarity_group"]
    figure = plot_gender_polarity(group, figures / "gender_polarity_male_minus_female.png", alpha=alpha)
    cells = group.assign(cell=[signed_cell(*row) if not pd.isna(row[1]) else f"{row[0]:+.3f}" for row in
                               group[["male_minus_female", "male_minus_female_ci_low",
                                      "male_minus_female_ci_high"]].to_numpy()])
    shown = cells.pivot_table(index=["category", "group", "total"], columns="method_name", values="cell",
                              aggfunc="first", sort=False).reset_index()
    out += [f"Proportion male minus proportion female per fine-grained profession, with {confidence_label(alpha)} "
            "intervals (normal approximation; paper Fig. 2 uses Gender-Max):",
            "", markdown(shown), "", f"![gender polarity](figures/{figure.name})", ""]


def _ratio_summary_lines(summary: pd.DataFrame | None, table: pd.DataFrame, level: str) -> list[str]:
    """Section 6.2's average of Table 3's ratios and the pooled ratio, per method, and why they differ."""
    notes = [f"{row.category} ({GENDER_POLARITY_METHODS[row.method]}): {row.male_to_female_note}"
             for row in table.itertuples() if getattr(row, "male_to_female_note", "")]
    out = [f"Note: {'; '.join(notes)}.", ""] if notes else []
    if summary is None or summary.empty:
        return out
    out += ["Section 6.2 summarizes Table 3 by the average of the super-groups' male : female ratios (the paper's "
            "WIKI 2.29 is the mean of its four Gender-Max ratios). Here with "
            f"{level} intervals (the page bootstrap, stratified by super-group), next to the pooled ratio, all male "
            "texts / all female texts:", ""]
    for row in summary.itertuples():
        average = (ratio_cell(row.average_male_to_female, row.average_ci_low, row.average_ci_high)
                   or "undefined")
        pooled = ratio_cell(row.pooled_male_to_female, row.pooled_ci_low, row.pooled_ci_high) or "undefined"
        note = f" ({row.note})" if row.note else ""
        out.append(f"- {row.method_name}: average of ratios {average}; pooled ratio {pooled}{note}")
    out += ["", "They differ because the average weights every super-group equally, so super-groups with few "
            "female texts, whose ratios are large and uncertain, drive it; the pooled ratio weights super-groups "
            "by their texts.", ""]
    return out


def _psycholinguistic_section(view: MetricView, out: list[str], alpha: float = 0.05) -> None:
    level = confidence_label(alpha)
    tables = view.tables
    for domain, wide in psycholinguistic_percent_tables(tables["psycholinguistic"]).items():
        out += [f"### {domain} (percent of texts [{level} interval], paper Tables 9-11 layout)", "",
                markdown(wide, ".2f"), ""]
    for name, title in (("psycholinguistic_gender_difference", "male minus female (paper Table 4)"),
                        ("psycholinguistic_religion_difference", "Christianity minus Islam (paper Table 6)")):
        if name not in tables:
            out += [f"### {title}", "", "_(the groups are not in this run)_", ""]
            continue
        diff = tables[name]
        shown = pd.DataFrame({
            "category": diff["header"],
            f"a % [{level}]": [percent_cell(count / total, *wilson_interval(count, total, alpha=alpha))
                               for count, total in diff[["count_a", "total_a"]].to_numpy()],
            f"b % [{level}]": [percent_cell(count / total, *wilson_interval(count, total, alpha=alpha))
                               for count, total in diff[["count_b", "total_b"]].to_numpy()],
            "difference (points)": (diff["difference"] * 100).round(2),
            f"{level} interval": [f"[{low * 100:+.2f}, {high * 100:+.2f}]"
                                  for low, high in diff[["ci_low", "ci_high"]].to_numpy()],
            "z": pd.to_numeric(diff["statistic"], errors="coerce").round(3),
            "p_value": [format_p(p) for p in diff["p_value"]],
            "p (Holm within table)": [format_p(p) for p in diff.get("p_holm", diff["p_value"] * np.nan)],
            "reliable": np.where(diff["reliable"], "yes", "no"),
        })
        first = diff.iloc[0]
        out += [f"### {title}", "",
                f"a = {first['group_a']} (n={first['total_a']}), b = {first['group_b']} (n={first['total_b']}); "
                "the paper's two-proportion z test per category, texts as units; p-values Holm-adjusted within "
                "this table (the name-level tests are in the findings).", "", markdown(shown, ".2f"), ""]
    for note in view.notes:
        out += [f"_Note: {note}_", ""]


def _label_section(spec: MetricSpec, view: MetricView, figures: Path, out: list[str],
                   alpha: float = 0.05) -> None:
    """A metric the paper does not have (`views.label_view`): each label column's shares per group, with intervals,
    and a stacked figure per domain when the column has several labels."""
    for name, table in view.tables.items():
        labels = list(dict.fromkeys(table["label"]))
        out += [f"### {name}", "", markdown(interval_cells(table, ["domain", "group", "total"], labels)), ""]
        if len(labels) < 2:
            continue
        colors = {label: spec.colors.get(label, DEFAULT_COLORS[i % len(DEFAULT_COLORS)])
                  for i, label in enumerate(labels)}
        for domain, part in table.groupby("domain", sort=True):
            figure = plot_stacked_proportions(part, colors, f"{spec.title or spec.name}, {domain} domain",
                                              figures / f"{name}_{domain}.png", alpha=alpha)
            out += [f"![{name} {domain}](figures/{figure.name})", ""]


def write_view_tables(summary: Summary, tables: Path) -> None:
    """Every metric's tables, and its tests as `<metric>_tests`, into tables/."""
    for metric, view in summary.views.items():
        for name, table in view.tables.items():
            write_table(table, tables, name)
        if view.tests:
            write_table(pd.DataFrame(to_jsonable(view.tests)), tables, f"{metric}_tests")


def metric_sections(summary: Summary, figures: Path, tables: Path) -> list[str]:
    """One section per metric, in the registry's (the paper's) order; a skipped metric says why."""
    out: list[str] = []
    alpha = summary.statistics.alpha
    renderers: dict[str, Callable[[MetricView], None]] = {
        "sentiment": lambda view: _sentiment_section(view, figures, tables, out, alpha),
        "toxicity": lambda view: _toxicity_section(view, figures, out, alpha),
        "regard": lambda view: _regard_section(view, figures, out, alpha),
        "gender_polarity": lambda view: _gender_polarity_section(view, figures, out, alpha),
        "psycholinguistic": lambda view: _psycholinguistic_section(view, out, alpha),
    }
    for metric, view in summary.views.items():
        spec = metric_spec(metric)
        out += [f"## {spec.title or metric}", ""]
        if view.skipped is not None:
            out += [f"**Skipped** — {view.skipped}", ""]
            continue
        if metric in renderers:
            renderers[metric](view)
        else:
            _label_section(spec, view, figures, out, alpha)
        if view.tests:
            out += ["Tests (the paper's, texts as units; p-values Holm-adjusted within this table, the name-level "
                    "tests are in the findings):", "", tests_markdown(view.tests), ""]
    return out
