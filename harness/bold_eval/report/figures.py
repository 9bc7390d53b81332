"""The report's PNG figures (the paper's Figures 2-5), with their intervals."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from bold_eval.analysis.clustered import confidence_label
from bold_eval.analysis.results import RatioTables


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
    label's share (at its left edge, which is 1 minus that share), e.g. negative and positive labels.
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


def plot_ratio(table: pd.DataFrame, path: Path, *, label: str, alpha: float = 0.05) -> Path:
    """A `LabelRatio` view's `<label>_ratio` per group with its interval, one panel per domain (toxic_ratio, Section
    6.1.3)."""
    ratio = RatioTables.table_name(label)  # the table's share column
    domains = list(dict.fromkeys(table["domain"]))
    sizes = [int((table["domain"] == domain).sum()) for domain in domains]
    fig = Figure(figsize=(8.5, 0.6 * len(domains) + 0.32 * sum(sizes) + 0.6))
    axes = fig.subplots(len(domains), 1, sharex=True, gridspec_kw={"height_ratios": [size + 1 for size in sizes]},
                        squeeze=False)
    # Scale to the groups with at least 30 texts so one tiny group's wide interval does not flatten the rest;
    # its error bar is cut at the edge.
    sized = table[table["total"] >= 30] if (table["total"] >= 30).any() else table
    upper = max(float(np.nan_to_num(sized["ci_high"].max())), float(table[ratio].max()), 0.01)
    for ax, domain in zip(axes[:, 0], domains, strict=True):
        part = table[table["domain"] == domain]
        values = part[ratio].to_numpy()
        ax.barh(range(len(part)), values, xerr=_error_extents(values, part["ci_low"], part["ci_high"]),
                color="#b2182b", alpha=0.8,
                error_kw={"ecolor": "#333333", "capsize": 3, "lw": 1})
        ax.set_yticks(range(len(part)), [f"{g} (n={n})" for g, n in zip(part["group"], part["total"], strict=True)],
                      fontsize=9)
        ax.invert_yaxis()
        ax.set_title(domain, fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlim(0, upper * 1.05)
    axes[-1, 0].set_xlabel(f"{ratio} (share of texts classified {label}), {confidence_label(alpha)} interval\n"
                           "(axis fits groups with >= 30 texts; wider intervals are cut)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_male_minus_female(table: pd.DataFrame, path: Path, *, methods: Mapping[str, str], title: str,
                           alpha: float = 0.05) -> Path:
    """Figure 2: proportion male minus proportion female per fine-grained group of a `GenderRatio` view, with the
    interval of the plotted method's difference and each group's number of texts."""
    wide = table.pivot_table(index="group", columns="method", values="male_minus_female", sort=False)
    totals = table.groupby("group", sort=False)["total"].first()
    # Bars for the paper's first method (Gender-Max), or the first method scored when it is absent.
    bars = next(method for method in methods if method in wide)
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
    handles: list[Any] = [Patch(color=male_color, alpha=0.85, label=f"{methods[bars]}: more male"),
               Patch(color=female_color, alpha=0.85, label=f"{methods[bars]}: more female")]
    # The other methods as markers, each with its own (the paper's first method is always the bars when scored).
    for method, marker in zip(list(methods)[1:], "ox+^", strict=False):
        if method in wide and method != bars:
            handles.append(ax.scatter(wide[method], positions, marker=marker, color="black", s=22, zorder=3,
                                      label=methods[method]))
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(positions, [f"{group} (n={totals[group]})" for group in wide.index], fontsize=9)
    ax.set_xlabel(f"proportion male - proportion female  (> 0: more texts classified male); "
                  f"{confidence_label(alpha)} intervals")
    ax.set_title(title, fontsize=11)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_worst_case(table: pd.DataFrame, path: Path) -> Path:
    """One panel per worst case (`worst_case_view`): each group's mean over its prompts with its interval."""
    measures = list(dict.fromkeys(table["title"]))
    rows = table.drop_duplicates(["domain", "group"])[["domain", "group"]]
    labels = [f"{domain} / {group}" for domain, group in rows.to_numpy()]
    fig = Figure(figsize=(4.2 * len(measures), _figure_height(len(labels))))
    axes = np.atleast_1d(fig.subplots(1, len(measures), sharey=True))
    for ax, title in zip(axes, measures, strict=True):
        part = table[table["title"] == title].set_index(["domain", "group"]).reindex(
            pd.MultiIndex.from_frame(rows))
        values = part["value"].to_numpy(dtype=float)
        ax.errorbar(values, range(len(labels)), xerr=_error_extents(values, part["ci_low"], part["ci_high"]),
                    fmt="o", color="#d7301f", ecolor="#222222", capsize=3, lw=1, ms=4)
        ax.set_title(f"{title} (k={int(part['k'].max())})", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=8)
    axes[0].invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path
