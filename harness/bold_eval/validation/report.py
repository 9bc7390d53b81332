"""Write a validation: validation.json, validation.md (the paper's Table 8), figures/ (Figure 6), predictions.csv.

Table 8 prints Spearman's ρ between the metric's labels and the human labels as ".5163" and the
classification scores as percentages with two decimals, then per-class recall and precision under a
row naming the classes; a last column, not in the paper, adds ρ between the metric's continuous
score and the human label. Figure 6 draws
the density of the metric's continuous score for each human label ("red: negative/male/toxic,
blue: neutral and green: positive/non-toxic/female"). Every file is written atomically.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bold_eval.core.resources import atomic_write_bytes
from bold_eval.validation.agreement import (
    Validation,
    ValidationRecord,
)

VALIDATION_FILE = "validation.json"
REPORT_FILE = "validation.md"
PREDICTIONS_FILE = "predictions.csv"
FIGURE_FILE = "figures/score_distributions.png"

# Table 8 of the paper: ρ, accuracy, weighted precision / recall / f1, then per-class recall and
# per-class precision in the paper's class order; on 1,020 (gender polarity), 1,960 (sentiment)
# and 152 (toxicity) BOLD texts labelled on Amazon Mechanical Turk (Section 6.3). The text of
# Section 6.3 swaps the two toxicity precisions ("toxic = 79.34 and non-toxic = 81.25"); this is the table.
PAPER_TABLE8: dict[tuple[str, str], dict[str, Any]] = {
    ("gender_polarity", "max"): {"n": 1020, "values": (0.9126, 91.32, 91.19, 91.32, 91.16),
                                 "classes": ("female", "neutral", "male"),
                                 "recall": (97.03, 76.63, 93.77), "precision": (92.59, 87.70, 91.81)},
    ("gender_polarity", "wavg"): {"n": 1020, "values": (0.9186, 88.95, 89.25, 88.96, 89.08),
                                  "classes": ("female", "neutral", "male"),
                                  "recall": (92.81, 78.03, 91.20), "precision": (93.93, 72.93, 93.40)},
    ("gender_polarity", "unigram"): {"n": 1020, "values": (0.8785, 84.71, 88.91, 84.71, 85.64),
                                     "classes": ("female", "neutral", "male"),
                                     "recall": (81.73, 92.52, 83.26), "precision": (97.50, 60.00, 96.04)},
    ("sentiment", "compound"): {"n": 1960, "values": (0.5163, 80.62, 80.39, 80.62, 80.44),
                                "classes": ("positive", "neutral", "negative"),
                                "recall": (56.43, 88.68, 53.12), "precision": (64.17, 86.85, 46.36)},
    ("toxicity", "toxicity"): {"n": 152, "values": (0.5839, 80.00, 80.13, 80.00, 79.63),
                               "classes": ("non-toxic", "-", "toxic"),
                               "recall": (89.02, None, 67.24), "precision": (79.34, None, 81.25)},
}


def format_rho(value: float | None) -> str:
    """Spearman's ρ as the paper prints it: ".5163" (four decimals, no leading zero)."""
    if value is None or not math.isfinite(value):
        return "NA"
    text = f"{value:.4f}"
    return text.replace("0.", ".", 1) if abs(value) < 1 else text


def format_percent(value: float | None) -> str:
    """A proportion as the paper prints it: 80.62 (percent, two decimals)."""
    if value is None or not math.isfinite(value):
        return "NA"
    return f"{100 * value:.2f}"


# The extra last column: ρ of the continuous score, which Table 8 does not report.
SCORE_RHO_HEADER = "Spearman's ρ (continuous score vs label)"


def _table_rows(name: str, values: Sequence[str], classes: Sequence[str], recall: Sequence[str],
                precision: Sequence[str], width: int, score_rho: str) -> list[str]:
    pad = width - len(classes)
    classes, recall, precision = [*classes, *["-"] * pad], [*recall, *["NA"] * pad], [*precision, *["NA"] * pad]
    blank = [""] * (1 + len(values))
    return [
        "| " + " | ".join([*blank, *classes, *classes, ""]) + " |",
        "| " + " | ".join([name, *values, *recall, *precision, score_rho]) + " |",
    ]


def table8_markdown(records: Sequence[ValidationRecord], *, paper: bool = False) -> str:
    """Table 8 for one or more validation records: a row naming the classes, then the row of numbers.

    Spearman's ρ is Table 8's, between the metric's labels and the human labels (Section 6.3); the
    last column is ρ between the continuous score and the human label ("-" in the paper's row).
    `paper=True` adds, under each record, the paper's own row for the same metric when Table 8 has one.
    """
    width = max(3, *(len(record.agreement.per_class) for record in records))
    header = ["metrics", "Spearman's ρ", "accuracy", "precision", "recall", "f1",
              "per-class recall", *[""] * (width - 1), "per-class precision", *[""] * (width - 1), SCORE_RHO_HEADER]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for record in records:
        found = record.agreement
        per_class = found.per_class
        values = [format_rho(found.spearman_rho), format_percent(found.accuracy),
                  *(format_percent(found.weighted[key]) for key in ("precision", "recall", "f1"))]
        lines += _table_rows(
            record.table8_row, values, list(per_class),
            [format_percent(scores.recall) for scores in per_class.values()],
            [format_percent(scores.precision) for scores in per_class.values()], width,
            format_rho(found.spearman_rho_score),
        )
        reference = PAPER_TABLE8.get((record.metric, record.score)) if paper else None
        if reference is not None:
            rho, *rest = reference["values"]
            lines += _table_rows(
                f"{record.table8_row} (paper, Table 8)", [format_rho(rho), *(f"{v:.2f}" for v in rest)],
                reference["classes"],
                [f"{v:.2f}" if v is not None else "NA" for v in reference["recall"]],
                [f"{v:.2f}" if v is not None else "NA" for v in reference["precision"]], width, "-",
            )
    return "\n".join(lines)


def intervals_line(record: ValidationRecord) -> str:
    intervals = record.agreement.intervals
    rho_low, rho_high = intervals.spearman_rho
    score_low, score_high = intervals.spearman_rho_score
    accuracy_low, accuracy_high = intervals.accuracy
    return (
        f"{100 * intervals.confidence_level:g}% bootstrap intervals ({intervals.method.split(' ')[0]}, "
        f"{intervals.n_resamples} paired resamples, seed {intervals.seed}): "
        f"ρ [{format_rho(rho_low)}, {format_rho(rho_high)}], "
        f"accuracy [{format_percent(accuracy_low)}, {format_percent(accuracy_high)}], "
        f"ρ (continuous score vs label) [{format_rho(score_low)}, {format_rho(score_high)}]"
    )


def counts_line(record: ValidationRecord) -> str:
    found = record.agreement
    source = record.source.get("name", "the labelled texts")
    excluded = ", ".join(f"{name}: {count}" for name, count in record.excluded_labels.items() if count)
    line = (f"{record.metric} ({record.score}) vs {source}: n = {found.n} compared, "
            f"{record.excluded} excluded" + (f" ({excluded})" if excluded else ""))
    if found.predicted_outside:
        line += (f"; {found.predicted_outside} text(s) with a metric label that maps to no compared class "
                 "(counted as misses)")
    unplaced = found.n - found.spearman_n
    if unplaced:
        line += f"; {unplaced} text(s) with a metric label off the label order left out of the label ρ"
    return line


def summary_text(record: ValidationRecord) -> str:
    """What `bold-eval validate` prints: counts, Table 8 and the intervals."""
    return "\n".join([counts_line(record), table8_markdown([record]), intervals_line(record)])


def _overview_lines(record: ValidationRecord) -> list[str]:
    """Title, what the score is, the counts, Table 8 with the paper's row, and the intervals."""
    source = record.source
    p_value, p_value_score = record.agreement.spearman_p_value, record.agreement.spearman_p_value_score
    rho_note = (
        "Spearman's ρ is Table 8's rank correlation between the metric's labels and the human labels, both "
        "placed on the label order (Section 6.3: \"between labels computed with automatic metrics and labels "
        "from human annotations\"; ties share their average rank)"
        + (f", p = {p_value:.2g}" if p_value is not None else " (undefined: a constant metric or human label)")
        + f"; the last column, {SCORE_RHO_HEADER}, ranks the continuous score instead, so the thresholds "
        "play no part in it"
        + (f" (p = {p_value_score:.2g})" if p_value_score is not None else " (undefined: a constant score or label)")
    )
    lines = [
        f"# Validation of {record.metric} ({record.score}) against {source.get('name', 'human labels')}",
        "",
        f"Score: {record.score_description}. Human labels are taken as truth; {rho_note}.",
        "",
        counts_line(record) + ".",
        "",
        "## Table 8",
        "",
        table8_markdown([record], paper=True),
        "",
        intervals_line(record) + ".",
        "Aggregate precision, recall and f1 are per-class scores averaged with weights equal to the "
        "class sizes (Section 6.3), so weighted recall equals accuracy.",
    ]
    if (record.metric, record.score) in PAPER_TABLE8:
        reference = PAPER_TABLE8[(record.metric, record.score)]
        lines.append(f"The paper's row comes from {reference['n']:,} BOLD texts labelled by crowd workers "
                     "(Section 6.3), not from these texts.")
    return lines


def _per_class_lines(record: ValidationRecord) -> list[str]:
    """The per-class scores table and the confusion matrix."""
    lines = ["", "## Per class", "", "| class | label | precision | recall | f1 | support |",
             "|---|---|---|---|---|---|"]
    for name, scores in record.agreement.per_class.items():
        lines.append(f"| {name} | {scores.label} | {format_percent(scores.precision)} | "
                     f"{format_percent(scores.recall)} | {format_percent(scores.f1)} | {scores.support} |")
    matrix = record.agreement.confusion_matrix
    lines += ["", "Confusion matrix (rows: human class, columns: the class the metric's label maps to):", "",
              "| human \\ metric | " + " | ".join(matrix.columns) + " |", "|---|" + "---|" * len(matrix.columns)]
    for name, counts in zip(record.agreement.per_class, matrix.counts, strict=True):
        lines.append(f"| {name} | " + " | ".join(str(count) for count in counts) + " |")
    return lines


def _label_mapping_lines(record: ValidationRecord) -> list[str]:
    """Which human label each metric label counts as, and the thresholds between the metric's labels."""
    lines = ["", "## Label mapping", "", "| metric label | human label |", "|---|---|"]
    compared = {entry.label for entry in record.classes}
    for metric_label, human_label in record.label_mapping.items():
        if human_label is None:
            shown = "(none: counted as a miss)"
        elif human_label not in compared:
            shown = f"{human_label} (not compared: counted as a miss)"
        else:
            shown = str(human_label)
        lines.append(f"| {metric_label} | {shown} |")
    if record.thresholds:
        lines += ["", "Thresholds between the metric's labels: "
                  + ", ".join(f"{name} {value:g}" for name, value in record.thresholds.items()) + "."]
    return lines


def _source_lines(record: ValidationRecord) -> list[str]:
    """Where the human labels come from (files and checksums) and the metric options used."""
    source = record.source
    lines = ["", "## Source", ""]
    for key in ("description", "citation", "upstream"):
        if key in source:
            lines.append(f"- {key}: {source[key]}")
    for entry in source.get("files", []):
        pinned = entry.get("matches_pinned_sha256")
        note = "" if pinned is None else (" (matches the pinned checksum)" if pinned else " (differs from the pinned "
                                                                                          "checksum)")
        rows = f"{entry['rows']} row{'' if entry['rows'] == 1 else 's'}"
        lines.append(f"- `{entry['file']}`: {rows}, sha256 `{entry['sha256']}`{note}")
    lines += ["", f"Metric options: `{json.dumps(record.metric_options, sort_keys=True)}`; "
              f"bold-eval {record.bold_eval_version}."]
    return lines


def validation_markdown(record: ValidationRecord, figure: str | None = FIGURE_FILE) -> str:
    """validation.md: Table 8 (with the paper's row for reference), intervals, per class, mapping, source."""
    lines = [*_overview_lines(record), *_per_class_lines(record),
             *_label_mapping_lines(record), *_source_lines(record)]
    if figure is not None:
        lines += ["", "## Figure 6", "", f"![score distributions per human label]({figure})"]
    return "\n".join(lines) + "\n"


def score_distribution_figure(result: Validation):
    """Figure 6: density of the metric's score for each human class, thresholds as dashed lines.

    Uses matplotlib's object-oriented API (`matplotlib.figure.Figure`), so no global backend or
    pyplot state is touched.
    """
    from matplotlib.figure import Figure
    from scipy.stats import gaussian_kde

    record = result.record
    view = result.view
    human = [label for label, keep in zip(result.human_labels, result.included, strict=True) if keep]
    scores = result.scores[result.included]
    low, high = view.score_range
    grid = np.linspace(low, high, 401)
    figure = Figure(figsize=(6.4, 3.6), layout="constrained")
    axes = figure.add_subplot()
    for entry in record.classes:
        values = scores[np.fromiter((label == entry.label for label in human), dtype=bool, count=len(human))]
        metric_labels = [m for m, h in record.label_mapping.items() if h == entry.label]
        color = next((view.colors[m] for m in metric_labels if m in view.colors), None)
        legend = f"{entry.name} (n={values.size})"
        if values.size >= 2 and np.ptp(values) > 0:
            axes.plot(grid, gaussian_kde(values)(grid), color=color, label=legend)
        elif values.size:
            axes.hist(values, bins=40, range=(low, high), density=True, histtype="step", color=color, label=legend)
    for value in record.thresholds.values():
        axes.axvline(value, color="0.4", linestyle="--", linewidth=0.8)
    axes.set_xlim(low, high)
    axes.set_xlabel(f"{record.table8_row} score ({record.score})")
    axes.set_ylabel("density")
    axes.set_title(f"{record.table8_row} vs human labels ({record.source.get('name', 'labelled texts')})")
    axes.legend(title="human label", fontsize="small")
    return figure


def predictions_csv(result: Validation) -> bytes:
    """One row per text: text, human label, whether it was compared, the metric's score and label."""
    import pandas as pd

    mapping = result.record.label_mapping
    frame = pd.DataFrame({
        "text": result.texts,
        "human_label": [str(label) for label in result.human_labels],
        "compared": result.included,
        "score": result.scores,
        "metric_label": result.metric_labels,
        "mapped_label": [str(mapping.get(str(label))) for label in result.metric_labels],
    })
    return frame.to_csv(index=False).encode("utf-8")


def write_validation(result: Validation, out: Path) -> dict[str, Path]:
    """Write validation.json, validation.md, predictions.csv and figures/score_distributions.png to `out`."""
    out = Path(out)
    paths = {name: out / name for name in (VALIDATION_FILE, REPORT_FILE, PREDICTIONS_FILE, FIGURE_FILE)}
    buffer = io.BytesIO()
    score_distribution_figure(result).savefig(buffer, format="png", dpi=150)
    atomic_write_bytes(paths[FIGURE_FILE], buffer.getvalue())
    atomic_write_bytes(paths[PREDICTIONS_FILE], predictions_csv(result))
    record_json = json.dumps(result.record.as_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    atomic_write_bytes(paths[VALIDATION_FILE], record_json.encode("utf-8"))
    atomic_write_bytes(paths[REPORT_FILE], validation_markdown(result.record).encode("utf-8"))
    return paths
