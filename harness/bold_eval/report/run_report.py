"""Writers for a run folder: summary.json, tables (CSV + markdown), PNG figures and report.md.

`write_report(run_dir)` reads `scores.parquet` and `run.json` (written by `bold-eval run`) and
turns `bold_eval.analysis.summary.summarize` into files a reader can use without the code.
Several runs side by side: `bold_eval.report.compare.compare_runs`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from bold_eval.analysis.clustered import DEFAULT_CLUSTER, DEFAULT_CORRECTION, check_alpha, confidence_label
from bold_eval.analysis.scores import LABELS
from bold_eval.analysis.statistics import MIN_EXPECTED, wide_proportions, wilson_interval
from bold_eval.analysis.summary import summarize
from bold_eval.analysis.table3 import GENDER_POLARITY_METHODS
from bold_eval.analysis.views import PSYCHOLINGUISTIC_HEADERS, VIEWS
from bold_eval.core.resources import atomic_write_bytes
from bold_eval.data.bold import GENDER_PAIR, RACE_PAIR, RELIGION_PAIR
from bold_eval.report.first_screen import (
    findings_section,
    how_to_read,
    reference_section,
    scope_lines,
)
from bold_eval.report.first_screen import format_p as _format_p
from bold_eval.report.first_screen import markdown as _markdown
from bold_eval.report.first_screen import signed_cell as _signed
from bold_eval.report.first_screen import write_table as _write_table
from bold_eval.runfolder import (
    FIGURES_DIR,
    REPORT_FILE,
    TABLES_DIR,
    RunRecord,
    SummaryRecord,
    load_run,
    read_reference_scores,
    write_summary,
)

SENTIMENT_COLORS = {"negative": "#d7301f", "neutral": "#bdbdbd", "positive": "#1a9850"}
REGARD_COLORS = {"negative": "#d7301f", "neutral": "#bdbdbd", "other": "#9ecae1", "positive": "#1a9850"}

# The paper's names for the groups of its pairwise tables (Tables 4-6).
PAPER_GROUP_NAMES = {
    GENDER_PAIR[1]: "male",
    GENDER_PAIR[2]: "female",
    RACE_PAIR[1]: "african american",
    RACE_PAIR[2]: "european american",
    RELIGION_PAIR[1]: "christianity",
    RELIGION_PAIR[2]: "islam",
}

CAVEATS = (
    "BOLD covers a limited set of domains and groups: binary gender, four racial groups as conceptualized in "
    "American culture, seven religious and twelve political ideologies. A model that looks unbiased here is "
    "not shown to be fair (paper Section 7).",
    "The metrics are classifiers and lexicons (VADER, a BERT toxicity classifier, the Sheng et al. regard "
    "classifier (sasha/regardv3, Sheng et al. 2020), the Warriner psycholinguistic lexicon (not extended as in the "
    "paper, Section 4.4), word-embedding gender polarity). They carry their own "
    "biases and do not measure the degree of social bias (Section 7).",
    "Wikipedia is not a fair baseline: its authors' demographics are skewed and its sentences show biases that "
    "resemble those of the LMs (Sections 6.2 and 7). Compare models with each other, not against WIKI as ground truth.",
    "Small groups: some groups have few prompts in BOLD (hinduism 12, atheism 29, populism 59; Section 6.1.4 notes "
    "Hinduism is underrepresented). Their proportions have wide intervals, and tests involving them are flagged "
    f"as unreliable when an expected count is below {MIN_EXPECTED}.",
    "Gender polarity (Table 3) is computed on the profession domain only; most texts are neutral (the paper "
    "reports 6.57% male or female), so male:female ratios rest on few texts.",
    "Regard is limited to the gender and race domains because the classifier was trained only on such groups (Section 4.3).",
)


# --------------------------------------------------------------------------- I/O helpers


def to_jsonable(value: Any) -> Any:
    """Frames become lists of records; NaN / inf become None; numpy scalars become Python ones."""
    if isinstance(value, pd.DataFrame):
        return [to_jsonable(record) for record in value.to_dict(orient="records")]
    if isinstance(value, pd.Series):
        return to_jsonable(value.tolist())
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, np.ndarray)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def small_groups(summary: Mapping[str, Any]) -> list[str]:
    """Groups named as too small by any test of the summary, in first-seen order."""
    names: dict[str, None] = {}
    for metric in VIEWS:
        for test in summary[metric].get("tests", []):
            names.update(dict.fromkeys(test.get("small_groups", [])))
        for table in summary[metric].get("tables", {}).values():
            if "small_groups" in table:
                for groups in table["small_groups"]:
                    names.update(dict.fromkeys(groups))
    return list(names)


def _write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _format_interval(proportion: float, low: float, high: float) -> str:
    if pd.isna(proportion):
        return ""
    if pd.isna(low):
        return f"{proportion:.3f}"
    return f"{proportion:.3f} [{low:.3f}, {high:.3f}]"


def _tests_markdown(tests: Sequence[Mapping[str, Any]]) -> str:
    """One line per test: what was compared, the statistic, p and whether groups were big enough."""
    rows = []
    for test in tests:
        if test["test"] == "chi-square":
            compared = f"{len(test['groups'])} groups"
            statistic = "n/a" if test["statistic"] is None else f"chi2={test['statistic']:.3f}, dof={test['dof']}"
            detail = ""
        else:
            compared = f"{test['group_a']} vs {test['group_b']}"
            statistic = "n/a" if test["statistic"] is None else f"z={test['statistic']:.3f}"
            detail = (f"{test['proportion_a']:.3f} vs {test['proportion_b']:.3f}, "
                      f"difference {test['difference']:+.3f} [{test['ci_low']:+.3f}, {test['ci_high']:+.3f}]")
        rows.append({
            "domain": test.get("domain", ""),
            "label": " ".join(filter(None, (test.get("metric"), test.get("label")))),
            "test": test["test"],
            "compared": compared,
            "proportions": detail,
            "statistic": statistic,
            "p_value": _format_p(test["p_value"]),
            "p (Holm within table)": _format_p(test.get("p_holm")),
            "reliable": "yes" if test["reliable"] else "no",
            "note": test.get("note", ""),
        })
    return _markdown(pd.DataFrame(rows)) if rows else "_(no tests: groups missing from this run)_"


# --------------------------------------------------------------------------- findings first

# --------------------------------------------------------------------------- figures


def _error_extents(value: Any, low: Any, high: Any) -> np.ndarray:
    """matplotlib's 2xN `xerr` for intervals [low, high] around `value`: a missing interval draws no
    bar, and rounding noise (an end 1e-17 past its value) is clipped, which matplotlib rejects."""
    value, low, high = (np.asarray(part, dtype=float) for part in (value, low, high))
    return np.clip(np.nan_to_num(np.vstack([value - low, high - value])), 0.0, None)


def _figure_height(n_bars: int) -> float:
    return 1.3 + 0.32 * max(n_bars, 1)


def plot_stacked_proportions(table: pd.DataFrame, colors: Mapping[str, str], title: str, path: Path, *,
                             alpha: float = 0.05) -> Path:
    """Horizontal stacked bars, one per group, of a `proportion_table` (Figures 3-5 style).

    Error bars show the intervals of the first label's share (at its right edge) and of the last
    label's share (at its left edge, which is 1 minus that share), e.g. negative and positive sentiment.
    """
    wide = table.pivot_table(index="group", columns="label", values="proportion", sort=False)  # domain order
    totals = table.groupby("group", sort=False)["total"].first()
    labels = [label for label in colors if label in wide.columns]
    fig = Figure(figsize=(8.5, _figure_height(len(wide))))
    ax = fig.subplots()
    left = np.zeros(len(wide))
    for label in labels:
        values = wide[label].fillna(0).to_numpy()
        bars = ax.barh(range(len(wide)), values, left=left, color=colors[label], label=label, edgecolor="white")
        for bar, value in zip(bars, values, strict=True):
            if value >= 0.06:
                ax.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2, f"{value:.2f}",
                        ha="center", va="center", fontsize=8)
        left += values
    for label, edge in ((labels[0], 1.0), (labels[-1], -1.0)) if len(labels) > 1 else ():
        part = table[table["label"] == label].set_index("group").reindex(wide.index)
        share = part["proportion"].to_numpy(dtype=float)
        errors = _error_extents(share, part["ci_low"], part["ci_high"])
        # At the left edge the axis runs the other way (1 - share), so the interval's sides swap.
        centre, errors = (share, errors) if edge > 0 else (1 - share, errors[::-1])
        ax.errorbar(centre, range(len(wide)), xerr=errors, fmt="none", ecolor="#222222", capsize=3, lw=1)
    ax.set_yticks(range(len(wide)), [f"{group} (n={totals[group]})" for group in wide.index], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"proportion of texts; error bars: {confidence_label(alpha)} intervals of the "
                  f"{labels[0]} and {labels[-1]} shares")
    ax.set_title(title, fontsize=11)
    ax.legend(ncol=len(labels), loc="lower center", bbox_to_anchor=(0.5, 1.0 + 0.35 / _figure_height(len(wide))),
              frameon=False, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_toxic_ratio(table: pd.DataFrame, path: Path, *, alpha: float = 0.05) -> Path:
    """toxic_ratio per group with its interval, one panel per domain (Section 6.1.3)."""
    domains = list(dict.fromkeys(table["domain"]))
    sizes = [int((table["domain"] == domain).sum()) for domain in domains]
    fig = Figure(figsize=(8.5, 0.6 * len(domains) + 0.32 * sum(sizes) + 0.6))
    axes = fig.subplots(len(domains), 1, sharex=True, gridspec_kw={"height_ratios": [size + 1 for size in sizes]}, squeeze=False)
    # Scale to the groups with at least 30 texts so one tiny group's wide interval does not flatten the rest;
    # its error bar is cut at the edge.
    sized = table[table["total"] >= 30] if (table["total"] >= 30).any() else table
    upper = max(float(np.nan_to_num(sized["ci_high"].max())), float(table["toxic_ratio"].max()), 0.01)
    for ax, domain in zip(axes[:, 0], domains, strict=True):
        part = table[table["domain"] == domain]
        ratio = part["toxic_ratio"].to_numpy()
        ax.barh(range(len(part)), ratio, xerr=_error_extents(ratio, part["ci_low"], part["ci_high"]),
                color="#b2182b", alpha=0.8,
                error_kw={"ecolor": "#333333", "capsize": 3, "lw": 1})
        ax.set_yticks(range(len(part)), [f"{g} (n={n})" for g, n in zip(part["group"], part["total"], strict=True)],
                      fontsize=9)
        ax.invert_yaxis()
        ax.set_title(domain, fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlim(0, upper * 1.05)
    axes[-1, 0].set_xlabel(f"toxic_ratio (share of texts classified toxic), {confidence_label(alpha)} interval\n"
                           "(axis fits groups with >= 30 texts; wider intervals are cut)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_gender_polarity(table: pd.DataFrame, path: Path, *, alpha: float = 0.05) -> Path:
    """Figure 2: proportion male minus proportion female per fine-grained profession, with the
    interval of the plotted method's difference and each profession's number of texts."""
    wide = table.pivot_table(index="group", columns="method", values="male_minus_female", sort=False)
    totals = table.groupby("group", sort=False)["total"].first()
    # Bars for Gender-Max as in the paper, or the first method scored when it is absent.
    bars = next(method for method in GENDER_POLARITY_METHODS if method in wide)
    wide = wide.sort_values(bars)
    fig = Figure(figsize=(8.5, _figure_height(len(wide))))
    ax = fig.subplots()
    positions = np.arange(len(wide))
    values = wide[bars].to_numpy()
    male_color, female_color = "#4575b4", "#d73027"
    errors = None
    if "male_minus_female_ci_low" in table.columns:
        bounds = table[table["method"] == bars].set_index("group").reindex(wide.index)
        errors = _error_extents(values, bounds["male_minus_female_ci_low"], bounds["male_minus_female_ci_high"])
    ax.barh(positions, values, color=np.where(values >= 0, male_color, female_color), alpha=0.85, xerr=errors,
            error_kw={"ecolor": "#333333", "capsize": 3, "lw": 1})
    handles = [Patch(color=male_color, alpha=0.85, label=f"{GENDER_POLARITY_METHODS[bars]}: more male"),
               Patch(color=female_color, alpha=0.85, label=f"{GENDER_POLARITY_METHODS[bars]}: more female")]
    for method, marker in (("wavg", "o"), ("unigram", "x")):
        if method in wide and method != bars:
            handles.append(ax.scatter(wide[method], positions, marker=marker, color="black", s=22, zorder=3,
                                      label=GENDER_POLARITY_METHODS[method]))
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(positions, [f"{group} (n={totals[group]})" for group in wide.index], fontsize=9)
    ax.set_xlabel(f"proportion male - proportion female  (> 0: more texts classified male); "
                  f"{confidence_label(alpha)} intervals")
    ax.set_title("Gender polarity per profession (paper Fig. 2)", fontsize=11)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


# --------------------------------------------------------------------------- report sections


def _interval_cells(table: pd.DataFrame, index: list[str], labels: Sequence[str]) -> pd.DataFrame:
    """A `proportion_table` as one row per `index` and one "p [low, high]" column per label, in
    `labels` order (the sentiment and regard sections)."""
    cells = table.assign(cell=[_format_interval(*row) for row in table[["proportion", "ci_low", "ci_high"]].to_numpy()])
    wide = cells.pivot_table(index=index, columns="label", values="cell", aggfunc="first", sort=True)
    return wide[[label for label in labels if label in wide.columns]].reset_index()


def _sentiment_section(view: Mapping[str, Any], figures: Path, tables: Path, out: list[str],
                       alpha: float = 0.05) -> None:
    table = view["tables"]["sentiment"]
    for domain, part in table.groupby("domain", sort=True):
        wide = _interval_cells(part, ["group", "total"], LABELS["sentiment_label"])
        figure = plot_stacked_proportions(part, SENTIMENT_COLORS, f"Sentiment, {domain} domain (VADER)",
                                          figures / f"sentiment_{domain}.png", alpha=alpha)
        out += [f"### {domain}", "", _markdown(wide), "", f"![sentiment {domain}](figures/{figure.name})", ""]
    _write_table(wide_proportions(table), tables, "sentiment_wide")


def _toxic_ratio_cells(table: pd.DataFrame) -> pd.DataFrame:
    """The toxic_ratio table as shown: domain, group, total, toxic, and toxic_ratio as "r [low, high]"."""
    shown = table.assign(toxic_ratio=[_format_interval(*row) for row in
                                      table[["toxic_ratio", "ci_low", "ci_high"]].to_numpy()])
    return shown[["domain", "group", "total", "toxic", "toxic_ratio"]]


def _toxicity_section(view: Mapping[str, Any], figures: Path, out: list[str], alpha: float = 0.05) -> None:
    table = view["tables"]["toxic_ratio"]
    figure = plot_toxic_ratio(table, figures / "toxic_ratio.png", alpha=alpha)
    out += [_markdown(_toxic_ratio_cells(table)), "",
            f"![toxic ratio](figures/{figure.name})", ""]


def _regard_section(view: Mapping[str, Any], figures: Path, out: list[str], alpha: float = 0.05) -> None:
    table = view["tables"]["regard"]
    wide = _interval_cells(table, ["domain", "group", "total"], LABELS["regard_label"])
    figure = plot_stacked_proportions(table, REGARD_COLORS, "Regard, gender and race domains",
                                      figures / "regard.png", alpha=alpha)
    out += [_markdown(wide), "", f"![regard](figures/{figure.name})", ""]


def _gender_polarity_section(view: Mapping[str, Any], figures: Path, out: list[str], alpha: float = 0.05) -> None:
    tables = view["tables"]
    if "gender_polarity_category" in tables:
        table = tables["gender_polarity_category"]
        wide = _table3_block(table, ["category"])
        level = confidence_label(alpha)
        out += ["Texts classified male and female per profession super-group (paper Table 3). male : female is "
                f"male # / female #, with its {level} interval from a percentile bootstrap over the super-group's "
                "Wikipedia pages (BOLD `name`: a page's sentences are not independent, so pages, not texts, are "
                "resampled).", "", _markdown(wide, ".2f"), ""]
        out += _ratio_summary_lines(tables.get("gender_polarity_ratio_summary"), table, level)
    if "gender_polarity_tokens" in tables:
        out += ["Gendered tokens counted by unigram matching, per super-group:", "",
                _markdown(tables["gender_polarity_tokens"]), ""]
    group = tables["gender_polarity_group"]
    figure = plot_gender_polarity(group, figures / "gender_polarity_male_minus_female.png", alpha=alpha)
    cells = group.assign(cell=[_signed(*row) if not pd.isna(row[1]) else f"{row[0]:+.3f}" for row in
                               group[["male_minus_female", "male_minus_female_ci_low",
                                      "male_minus_female_ci_high"]].to_numpy()])
    shown = cells.pivot_table(index=["category", "group", "total"], columns="method_name", values="cell",
                              aggfunc="first", sort=False).reset_index()
    out += [f"Proportion male minus proportion female per fine-grained profession, with {confidence_label(alpha)} "
            "intervals (normal approximation; paper Fig. 2 uses Gender-Max):",
            "", _markdown(shown), "", f"![gender polarity](figures/{figure.name})", ""]


def _first_method(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of the first gender-polarity method in the paper's order that the table has."""
    method = next(method for method in GENDER_POLARITY_METHODS if (table["method"] == method).any())
    return table[table["method"] == method]


def _ratio_bound(value: float) -> str:
    """An interval end of a ratio: two decimals below 1 (0.02), one above (54.0), "inf" without female texts."""
    if math.isinf(value):
        return "inf"
    return f"{value:.2f}" if value < 1 else f"{value:.1f}"


def _ratio_cell(ratio: float, low: float, high: float) -> str:
    """ "9.00 [4.2, 54.0]": male : female with its interval; "" when undefined (no male or female text)."""
    if pd.isna(ratio):
        return ""
    shown = "inf" if math.isinf(ratio) else f"{ratio:.2f}"
    return shown if pd.isna(low) or pd.isna(high) else f"{shown} [{_ratio_bound(low)}, {_ratio_bound(high)}]"


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
        average = (_ratio_cell(row.average_male_to_female, row.average_ci_low, row.average_ci_high)
                   or "undefined")
        pooled = _ratio_cell(row.pooled_male_to_female, row.pooled_ci_low, row.pooled_ci_high) or "undefined"
        note = f" ({row.note})" if row.note else ""
        out.append(f"- {row.method_name}: average of ratios {average}; pooled ratio {pooled}{note}")
    out += ["", "They differ because the average weights every super-group equally, so super-groups with few "
            "female texts, whose ratios are large and uncertain, drive it; the pooled ratio weights super-groups "
            "by their texts.", ""]
    return out


def _table3_block(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Table 3 layout: one row per key, male #, female #, male : female [interval] for each method."""
    blocks = []
    methods = [method for method in GENDER_POLARITY_METHODS if (table["method"] == method).any()]
    for method in methods:
        display = GENDER_POLARITY_METHODS[method]
        part = table[table["method"] == method].set_index(keys)
        bounds = (part[["male_to_female_ci_low", "male_to_female_ci_high"]] if "male_to_female_ci_low" in part
                  else pd.DataFrame(np.nan, index=part.index, columns=["low", "high"]))
        block = pd.DataFrame({
            f"{display} male #": part["male"],
            f"{display} female #": part["female"],
            f"{display} male : female": [_ratio_cell(ratio, low, high) for ratio, (low, high) in
                                          zip(part["male_to_female"], bounds.to_numpy(), strict=True)],
        }, index=part.index)
        blocks.append(block)
    totals = table[table["method"] == methods[0]].set_index(keys)["total"].rename("total #")
    return pd.concat([totals, *blocks], axis=1).reset_index()


def _percent_cell(proportion: float, low: float, high: float) -> str:
    """"12.34 [10.1, 14.9]": a share in percent with its interval (Tables 4, 6, 9-11 print percent)."""
    if pd.isna(proportion):
        return ""
    if pd.isna(low):
        return f"{proportion * 100:.2f}"
    return f"{proportion * 100:.2f} [{low * 100:.1f}, {high * 100:.1f}]"


def _psycholinguistic_percent_tables(table: pd.DataFrame) -> dict[Any, pd.DataFrame]:
    """{domain: paper Tables 9-11 layout}: one row per group (and its n), one "percent [interval]"
    column per psycholinguistic category, in the paper's category order."""
    cells = table.assign(cell=[_percent_cell(*row) for row in table[["proportion", "ci_low", "ci_high"]].to_numpy()])
    per_domain = {}
    for domain, part in cells.groupby("domain", sort=True):
        wide = part.pivot_table(index=["group", "total"], columns="category", values="cell", aggfunc="first",
                                sort=False)
        wide = wide[[c for c in PSYCHOLINGUISTIC_HEADERS if c in wide.columns]]
        wide.columns = [PSYCHOLINGUISTIC_HEADERS[c] for c in wide.columns]
        per_domain[domain] = wide.reset_index()
    return per_domain


def _psycholinguistic_section(view: Mapping[str, Any], out: list[str], alpha: float = 0.05) -> None:
    level = confidence_label(alpha)
    tables = view["tables"]
    for domain, wide in _psycholinguistic_percent_tables(tables["psycholinguistic"]).items():
        out += [f"### {domain} (percent of texts [{level} interval], paper Tables 9-11 layout)", "",
                _markdown(wide, ".2f"), ""]
    for name, title in (("psycholinguistic_gender_difference", "male minus female (paper Table 4)"),
                        ("psycholinguistic_religion_difference", "Christianity minus Islam (paper Table 6)")):
        if name not in tables:
            out += [f"### {title}", "", "_(the groups are not in this run)_", ""]
            continue
        diff = tables[name]
        shown = pd.DataFrame({
            "category": diff["header"],
            f"a % [{level}]": [_percent_cell(count / total, *wilson_interval(count, total, alpha=alpha))
                               for count, total in diff[["count_a", "total_a"]].to_numpy()],
            f"b % [{level}]": [_percent_cell(count / total, *wilson_interval(count, total, alpha=alpha))
                               for count, total in diff[["count_b", "total_b"]].to_numpy()],
            "difference (points)": (diff["difference"] * 100).round(2),
            f"{level} interval": [f"[{low * 100:+.2f}, {high * 100:+.2f}]"
                                  for low, high in diff[["ci_low", "ci_high"]].to_numpy()],
            "z": pd.to_numeric(diff["statistic"], errors="coerce").round(3),
            "p_value": [_format_p(p) for p in diff["p_value"]],
            "p (Holm within table)": [_format_p(p) for p in diff.get("p_holm", diff["p_value"] * np.nan)],
            "reliable": np.where(diff["reliable"], "yes", "no"),
        })
        first = diff.iloc[0]
        out += [f"### {title}", "",
                f"a = {first['group_a']} (n={first['total_a']}), b = {first['group_b']} (n={first['total_b']}); "
                "the paper's two-proportion z test per category, texts as units; p-values Holm-adjusted within "
                "this table (the name-level tests are in the findings).", "", _markdown(shown, ".2f"), ""]
    for note in view.get("notes", []):
        out += [f"_Note: {note}_", ""]


def _settings_lines(record: RunRecord) -> list[str]:
    """`- **name**: value` lines for what produced and scored the texts (empty values left out)."""
    # The generator's own one-line description (e.g. "Gibbs sampling from a masked LM ...") says how
    # the texts were made when that is not a causal LM's decoding.
    description = record.model_info.get("description")
    api = record.generator_settings.get("api")
    if not description and api:  # the openai-* generators: which endpoint wrote the texts
        endpoint = record.model_info.get("endpoint") or record.generator_settings.get("endpoint")
        description = f"OpenAI-compatible server, {api} API at {endpoint}"
    model = f"{record.model} ({description})" if description and record.model else record.model
    settings: list[tuple[str, Any]] = [("model", model), ("generator", record.generator)]
    settings += [(key, value) for key, value in record.generator_settings.items() if key != "model"]
    # An API run: what the server did with each decoding parameter (rejected / ignored / honoured).
    settings += [("server's handling of the decoding", record.model_info.get("server") or None)]
    settings += [("model revision", record.model_info.get("revision")), ("anonymize", record.anonymize),
                 ("score_on", record.score_on), ("limit", record.limit), ("metrics requested", record.metrics),
                 ("versions", record.versions or None), ("timings", record.timings or None)]
    lines = []
    for name, value in settings:
        if value is None:
            continue
        shown = json.dumps(to_jsonable(value), sort_keys=False) if isinstance(value, (Mapping, list, tuple)) else value
        lines.append(f"- **{name}**: {shown}")
    return lines


def _metric_status_lines(summary: Mapping[str, Any]) -> list[str]:
    """The per-metric status table; full multi-line reasons (places looked, variables to set)
    follow as a list, since table cells cannot hold line breaks."""
    status = pd.DataFrame([{"metric": metric, **values, "reason": values["reason"].splitlines()[0] if values["reason"] else ""}
                           for metric, values in summary["metrics"].items()])
    lines = ["### Metrics", "", _markdown(status), ""]
    for metric, values in summary["metrics"].items():
        if "\n" in values["reason"]:
            lines += [f"- **{metric}**:", "", "  ```text", *(f"  {line}" for line in values["reason"].splitlines()),
                      "  ```", ""]
    return lines


def _run_section(record: RunRecord, summary: Mapping[str, Any], out: list[str]) -> None:
    out += ["## What was run", ""]
    if record.status == "unknown":
        out += ["_run.json not found: settings unknown._", ""]
    out += _settings_lines(record)
    counts = summary["counts"]
    out += ["", f"{counts['texts']} texts from {counts['prompts']} prompts "
            f"({counts['samples_per_prompt_min']}-{counts['samples_per_prompt_max']} samples per prompt).", ""]
    per_domain = pd.DataFrame([{"domain": domain, **values} for domain, values in counts["domains"].items()])
    out += [_markdown(per_domain), ""]
    _missing_generations_section(record.generations, out)
    if summary["statistics"]["samples_note"]:
        out += [f"_{summary['statistics']['samples_note'].capitalize()}._", ""]
    out += _metric_status_lines(summary)


def _missing_generations_section(generations: Mapping[str, Any], out: list[str]) -> None:
    """For `bold-eval score --allow-partial`: how many prompts had no generation, per group."""
    if not generations:
        return
    line = (f"Generations from {generations.get('source', '?')}: {generations.get('rows', '?')} rows, "
            f"{generations.get('matched_rows', '?')} matched to BOLD prompts")
    line += (f"; {generations.get('unknown_prompt_ids', 0)} unknown prompt ids, "
             f"{generations.get('unmatched_prompts', 0)} unmatched prompt texts.")
    out += [line, ""]
    missing = generations.get("missing_per_group") or {}
    if missing:
        out += [f"**{generations.get('missing_prompts', '?')} of {generations.get('expected_prompts', '?')} "
                "selected prompts had no generation** (scored with `--allow-partial`); per group:", ""]
        table = pd.DataFrame([{"group": group, **counts} for group, counts in missing.items()])
        out += [_markdown(table), ""]


def _write_view_tables(summary: Mapping[str, Any], tables: Path) -> None:
    for metric in VIEWS:
        for name, table in summary[metric].get("tables", {}).items():
            _write_table(table, tables, name)
        if summary[metric].get("tests"):
            _write_table(pd.DataFrame(to_jsonable(summary[metric]["tests"])), tables, f"{metric}_tests")


def _metric_sections(summary: Mapping[str, Any], figures: Path, tables: Path) -> list[str]:
    """One section per metric, in the paper's order; a skipped metric says why."""
    out: list[str] = []
    alpha = summary["statistics"]["alpha"]
    renderers: list[tuple[str, str, Callable[[Mapping[str, Any]], None]]] = [
        ("sentiment", "Sentiment (Section 4.1; paper Figures 3-5)",
         lambda view: _sentiment_section(view, figures, tables, out, alpha)),
        ("toxicity", "Toxicity (Section 4.2; toxic_ratio, Section 6.1.3)",
         lambda view: _toxicity_section(view, figures, out, alpha)),
        ("regard", "Regard (Section 4.3; paper Table 5)", lambda view: _regard_section(view, figures, out, alpha)),
        ("gender_polarity", "Gender polarity (Section 4.5; paper Table 3 and Figure 2)",
         lambda view: _gender_polarity_section(view, figures, out, alpha)),
        ("psycholinguistic", "Psycholinguistic norms (Section 4.4; paper Tables 4, 6, 9-11)",
         lambda view: _psycholinguistic_section(view, out, alpha)),
    ]
    for metric, title, render in renderers:
        view = summary[metric]
        out += [f"## {title}", ""]
        if "skipped" in view:
            out += [f"**Skipped** — {view['skipped']}", ""]
            continue
        render(view)
        if view.get("tests"):
            out += ["Tests (the paper's, texts as units; p-values Holm-adjusted within this table, the name-level "
                    "tests are in the findings):", "", _tests_markdown(view["tests"]), ""]
    return out


def _statistics_and_caveats(summary: Mapping[str, Any], min_expected: int) -> list[str]:
    stats = summary["statistics"]
    out = ["## Statistics", "",
           f"- Intervals on the tables' proportions: {stats['interval']}, {stats['confidence_label']}, texts as units.",
           f"- Findings: {stats['findings_test']}; unit: {stats['cluster_unit']}; correction "
           f"{stats['correction_name']} (`--correction {stats['correction']}`) over each family of findings.",
           f"- Across a domain's groups (the paper's tables): {stats['chi_square']}.",
           f"- Pairs (the paper's binomial proportion test): {stats['pair_test']}.",
           f"- Small groups in the paper's tables: {stats['small_group_rule']}.", ""]
    out += ["## Caveats", "", *[f"- {caveat}" for caveat in CAVEATS]]
    small = small_groups(summary)
    if small:
        out.append(f"- In this run, groups too small for at least one of the paper's text-level tests (expected "
                   f"count < {min_expected}): {', '.join(small)}.")
    if stats["samples_note"]:
        out.append(f"- {stats['samples_note'].capitalize()}.")
    return [*out, ""]


def _summary_record(record: RunRecord, summary: Mapping[str, Any]) -> SummaryRecord:
    payload = to_jsonable(summary)
    fixed = ("counts", "metrics", "statistics")
    return SummaryRecord(run=to_jsonable(record.to_dict()), counts=payload["counts"], metrics=payload["metrics"],
                         statistics=payload["statistics"],
                         views={key: value for key, value in payload.items() if key not in fixed})


def write_report(
    run_dir: str | Path,
    *,
    ci: str = "wilson",
    alpha: float = 0.05,
    min_expected: int = MIN_EXPECTED,
    seed: int = 0,
    correction: str = DEFAULT_CORRECTION,
    cluster: str = DEFAULT_CLUSTER,
) -> Path:
    """Write summary.json, tables/, figures/ and report.md into `run_dir`; return report.md's path.

    report.md opens with what the run can and cannot say (scope, then findings), before the paper's views.
    """
    alpha = check_alpha(alpha)
    run_dir = Path(run_dir)
    scores, record = load_run(run_dir)
    reference = read_reference_scores(run_dir)
    summary = summarize(scores, record.to_dict(), ci=ci, alpha=alpha, min_expected=min_expected, seed=seed,
                        correction=correction, cluster=cluster, reference=reference)
    figures, tables = run_dir / FIGURES_DIR, run_dir / TABLES_DIR
    figures.mkdir(parents=True, exist_ok=True)
    _write_view_tables(summary, tables)
    modified = ([f"> **Modified BOLD data.** {', '.join(record.modified_data)} differ from the pinned upstream release "
                 "(allowed with --allow-modified-data): these numbers are not comparable with BOLD's.", ""]
                if record.modified_data else [])
    out = [f"# BOLD evaluation: {record.model or run_dir.name}", "", *modified, *scope_lines(record, summary),
           "Bias in open-ended language generation, measured as in Dhamala et al., FAccT 2021 "
           f"(BOLD). Proportions carry {confidence_label(alpha)} intervals in brackets "
           f"({summary['statistics']['interval']}) and their number of texts n.", ""]
    out += how_to_read(record, summary)
    out += reference_section(summary, tables)
    out += findings_section(summary, tables)
    _run_section(record, summary, out)
    out += _metric_sections(summary, figures, tables)
    out += _statistics_and_caveats(summary, min_expected)
    report = run_dir / REPORT_FILE
    _write_text(report, "\n".join(out))
    write_summary(run_dir, _summary_record(record, summary))
    return report
