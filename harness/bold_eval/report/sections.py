"""One report section per metric, in the paper's order, by its view kind (`MetricSpec.view`, whose
`ViewHooks.section` names its function here): a metric of an existing kind gets its section, with the titles and
captions of its spec, without a line here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bold_eval.analysis.clustered import confidence_label
from bold_eval.analysis.results import (
    CategoryTables,
    GenderRatioTables,
    LabelTables,
    MetricView,
    RatioTables,
    Summary,
)
from bold_eval.analysis.statistics import wide_proportions, wilson_interval
from bold_eval.metrics import metric_spec
from bold_eval.metrics.spec import Categories, GenderRatio, LabelShares, MetricSpec, resolve_hook
from bold_eval.report.figures import (
    plot_male_minus_female,
    plot_ratio,
    plot_stacked_proportions,
)
from bold_eval.report.markdown import (
    format_p,
    markdown,
    signed_cell,
    to_jsonable,
    write_table,
)
from bold_eval.report.painter import Painter
from bold_eval.report.paper_tables import (
    category_headers,
    interval_cells,
    percent_cell,
    percent_tables,
    ratio_cell,
    ratio_cells,
    table3_block,
    tests_markdown,
)


class Folders(NamedTuple):
    """Where a section writes its figures and tables, and the level of its intervals."""

    figures: Path
    tables: Path
    alpha: float
    painter: Painter


# A view kind's report section (`ViewHooks.section`): (spec, its view, where to write, the report's lines to extend).
Section = Callable[[MetricSpec, MetricView, Folders, list[str]], None]


# Figure colours for a metric whose spec names none, in label order.
DEFAULT_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def label_colors(spec: MetricSpec, labels: list[Any]) -> dict[Any, str]:
    """Figure colours: the spec's (`MetricPresentation.colors`, in its order) for the labels it names, then a default
    per remaining label."""
    colors = {label: color for label, color in spec.presentation.colors.items() if label in labels}
    colors.update((label, DEFAULT_COLORS[i % len(DEFAULT_COLORS)]) for i, label in enumerate(labels)
                  if label not in colors)
    return colors


def labels_section(spec: MetricSpec, view: MetricView, where: Folders, out: list[str]) -> None:
    """`LabelShares`: each table's "p [interval]" cells per group and its stacked figures, one per domain when the
    figure title names "{domain}"; with `by_domain`, a table and figure per domain."""
    kind, shares = spec.view, view.kind_tables(LabelTables).shares
    assert isinstance(kind, LabelShares)
    title = kind.figure_title or f"{spec.presentation.title or spec.name}, {{domain}} domain"
    for name, table in shares.items():
        labels = list(dict.fromkeys(table["label"]))
        colors = label_colors(spec, labels)
        if len(shares) > 1:
            out += [f"### {name}", ""]
        if kind.by_domain:
            for domain, part in table.groupby("domain", sort=True):
                figure = where.painter.draw(plot_stacked_proportions, part, colors, title.format(domain=domain),
                                            path=where.figures / f"{name}_{domain}.png", alpha=where.alpha)
                out += [f"### {domain}", "", markdown(interval_cells(part, ["group", "total"], labels)), "",
                        f"![{name} {domain}](figures/{figure.name})", ""]
        else:
            out += [markdown(interval_cells(table, ["domain", "group", "total"], labels)), ""]
            if len(labels) > 1 and "{domain}" in title:
                for domain, part in table.groupby("domain", sort=True):
                    figure = where.painter.draw(plot_stacked_proportions, part, colors,
                                                title.format(domain=domain),
                                                path=where.figures / f"{name}_{domain}.png", alpha=where.alpha)
                    out += [f"![{name} {domain}](figures/{figure.name})", ""]
            elif len(labels) > 1:
                figure = where.painter.draw(plot_stacked_proportions, table, colors, title,
                                            path=where.figures / f"{name}.png", alpha=where.alpha)
                out += [f"![{name}](figures/{figure.name})", ""]
        if kind.wide_table:
            write_table(wide_proportions(table), where.tables, f"{name}_wide")


def ratio_section(spec: MetricSpec, view: MetricView, where: Folders, out: list[str]) -> None:
    """`LabelRatio`: `<label>_ratio` per group with its interval, and its figure."""
    tables = view.kind_tables(RatioTables)
    label, name = tables.label, tables.name
    figure = where.painter.draw(plot_ratio, tables.ratio, path=where.figures / f"{name}.png", label=label,
                                alpha=where.alpha)
    out += [markdown(ratio_cells(tables.ratio, label)), "", f"![{name.replace('_', ' ')}](figures/{figure.name})", ""]


def gender_ratio_section(spec: MetricSpec, view: MetricView, where: Folders, out: list[str]) -> None:
    """`GenderRatio`: Table 3 with its page-level intervals and Section 6.2's summaries, the gendered tokens, and
    male minus female per group (Figure 2)."""
    kind, tables, level = spec.view, view.kind_tables(GenderRatioTables), confidence_label(where.alpha)
    assert isinstance(kind, GenderRatio)
    if tables.category is not None:
        table = tables.category
        out += [f"{kind.table_caption}. male : female is male # / female #, with its {level} interval with the "
                "super-group's Wikipedia pages as units (BOLD `name`: a page's sentences are not independent): the "
                "ratio is s / (1 - s) for s the male share of the texts classified male or female, and s gets Korn "
                "and Graubard's interval (Clopper-Pearson at the effective number of texts that the pages' variance "
                "allows). Without female texts the ratio is infinite and its lower end comes from the upper bound "
                "on the female share of those texts, at the effective number of pages.", "",
                markdown(table3_block(table, ["category"], kind.methods), ".2f"), ""]
        out += _ratio_summary_lines(kind, tables.ratio_summary, table, level)
    if tables.tokens is not None:
        out += [kind.tokens_caption, "", markdown(tables.tokens), ""]
    group = tables.group
    figure = where.painter.draw(plot_male_minus_female, group,
                                path=where.figures / f"{spec.name}_male_minus_female.png", methods=kind.methods,
                                title=kind.figure_title, alpha=where.alpha)
    cells = group.assign(cell=[signed_cell(*row) if not pd.isna(row[1]) else f"{row[0]:+.3f}" for row in
                               group[["male_minus_female", "male_minus_female_ci_low",
                                      "male_minus_female_ci_high"]].to_numpy()])
    shown = cells.pivot_table(index=["category", "group", "total"], columns="method_name", values="cell",
                              aggfunc="first", sort=False).reset_index()
    note = f"; {kind.difference_note}" if kind.difference_note else ""
    out += [f"{kind.difference_caption}, with {level} intervals with the Wikipedia pages as units (the male and "
            f"female shares' Korn-Graubard intervals combined by MOVER, each share's design effect at least the "
            f"groups' median{note}):", "", markdown(shown), ""]
    out += _missing_interval_lines(group, kind.methods)
    out += [f"![{spec.display_name}](figures/{figure.name})", ""]


def _missing_interval_lines(group: pd.DataFrame, methods: Mapping[str, str]) -> list[str]:
    """Which groups' differences have no interval, and why (one page: nothing to measure its variation by)."""
    if "male_minus_female_note" not in group:
        return []
    missing = group[group["male_minus_female_note"].fillna("").astype(bool)]
    lines = []
    for (method, note), rows in missing.groupby(["method", "male_minus_female_note"], sort=False):
        reason = note.removeprefix("no interval: ")
        lines += [f"No interval for {', '.join(rows['group'])} ({methods.get(method, method)}): {reason}.", ""]
    return lines


def _ratio_summary_lines(kind: GenderRatio, summary: pd.DataFrame | None, table: pd.DataFrame,
                         level: str) -> list[str]:
    """Section 6.2's average of Table 3's ratios and the pooled ratio, per method, and why they differ."""
    notes = [f"{row.category} ({kind.methods[row.method]}): {row.male_to_female_note}"
             for row in table.itertuples() if getattr(row, "male_to_female_note", "")]
    out = [f"Note: {'; '.join(notes)}.", ""] if notes else []
    if summary is None or summary.empty:
        return out
    lead = f"{kind.summary_caption}. " if kind.summary_caption else ""
    out += [f"{lead}Here with {level} intervals, next to the pooled ratio, all male texts / all female texts. The "
            "average is the paper's number, biased upward when a super-group has few female texts (a ratio's "
            "denominator); its interval is for the mean of the super-groups' true ratios, the super-groups' "
            "intervals added by MOVER. The pooled ratio's interval adds the super-groups' male-share intervals, "
            "weighted by their gendered texts, by MOVER as well:", ""]
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


def _difference_rows(diff: pd.DataFrame, level: str, alpha: float) -> pd.DataFrame:
    """A pair difference table as shown: both shares in percent, the difference in points and its test."""
    return pd.DataFrame({
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


def categories_section(spec: MetricSpec, view: MetricView, where: Folders, out: list[str]) -> None:
    """`Categories`: percent of texts per category and group (Tables 9-11 layout), then each pair difference with
    its test (Tables 4, 6)."""
    kind, tables, level = spec.view, view.kind_tables(CategoryTables), confidence_label(where.alpha)
    assert isinstance(kind, Categories)
    layout = f", {kind.layout}" if kind.layout else ""
    for domain, wide in percent_tables(tables.shares, category_headers(spec)).items():
        out += [f"### {domain} (percent of texts [{level} interval]{layout})", "", markdown(wide, ".2f"), ""]
    for difference in kind.differences:
        diff = tables.differences.get(difference.key)
        if diff is None:
            out += [f"### {difference.title}", "", "_(the groups are not in this run)_", ""]
            continue
        first = diff.iloc[0]
        out += [f"### {difference.title}", "",
                f"a = {first['group_a']} (n={first['total_a']}), b = {first['group_b']} (n={first['total_b']}); "
                "the paper's two-proportion z test per category, texts as units; p-values Holm-adjusted within "
                "this table (the name-level tests are in the findings).", "",
                markdown(_difference_rows(diff, level, where.alpha), ".2f"), ""]
    for note in view.notes:
        out += [f"_Note: {note}_", ""]


def write_view_tables(summary: Summary, tables: Path) -> None:
    """Every metric's tables, and its tests as `<metric>_tests`, into tables/."""
    for metric, view in summary.views.items():
        for name, table in view.tables.named().items():
            write_table(table, tables, name)
        if view.tests:
            write_table(pd.DataFrame(to_jsonable([test.as_dict() for test in view.tests])), tables, f"{metric}_tests")


def metric_sections(views: Mapping[str, MetricView], alpha: float, figures: Path, tables: Path,
                    painter: Painter) -> list[str]:
    """One section per metric of a summary's `views`, in the registry's (the paper's) order, by its view kind; a
    skipped metric says why. The figures are drawn by `painter` (here or in its worker)."""
    out: list[str] = []
    where = Folders(figures, tables, alpha, painter)
    for metric, view in views.items():
        spec = metric_spec(metric)
        out += [f"## {spec.presentation.title or metric}", ""]
        if view.skipped is not None:
            out += [f"**Skipped** — {view.skipped}", ""]
            continue
        section: Section = resolve_hook(spec.view.hooks.section)
        section(spec, view, where, out)
        if view.tests:
            out += ["Tests (the paper's, texts as units; p-values Holm-adjusted within this table, the name-level "
                    "tests are in the findings):", "", tests_markdown(view.tests), ""]
    return out
