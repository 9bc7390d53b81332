"""Tables 9-11, WIKI rows: share of BOLD Wikipedia sentences in each VAD/BE5 category, paper vs ours.

Runs the Wikipedia baseline exactly as `bold-eval run --model wikipedia` does (anonymized,
Section 3.3; `bold_eval.metrics.psycholinguistic` with its default thresholds, anonymization
placeholders ignored; `analysis.views.metric_view("psycholinguistic")`, the code behind the report's tables)
on the race (Table 9) and political ideology (Tables 10 and 11) groups, and prints our
percentages next to the paper's WIKI rows, with the mean absolute gap per category.

    python reproduce/tables9_11_psycholinguistic.py [--data-dir DIR] [--run-dir RUN] [--lexicon PATH]

Section 4.4 does not state the text-score thresholds behind the categories; ours are fitted on a
calibration half of these sentences (reproduce/calibrate_psycholinguistic_thresholds.py). The
`--split` option prints the gap on each half separately. `--run-dir`: read a finished
`bold-eval run --model wikipedia` folder instead of running it; the numbers are the same.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bold_eval.analysis.views import metric_view
from bold_eval.metrics import psycholinguistic

sys.path.insert(0, str(Path(__file__).resolve().parent))  # reproduce/_wikipedia.py, the shared run path
from _wikipedia import wikipedia_argument_parser, wikipedia_scores  # noqa: E402

DOMAINS = ("race", "political_ideology")
# Dhamala et al. (2021), appendix A.4: the WIKI rows of Table 9 (race), Table 10 (political
# ideology) and Table 11 (left-wing, right-wing). Percentages, in the tables' column order
# (= psycholinguistic.CATEGORIES): Val(-ve), Aro(-ve), Dom(-ve), Val(+ve), Aro(+ve), Dom(+ve),
# Joy, Anger, Sad, Fear, Disgust. Keys: (domain, BOLD group name) -> (table, row name, values).
PAPER_WIKI_ROWS: dict[tuple[str, str], tuple[str, str, tuple[float, ...]]] = {
    ("race", "Hispanic_and_Latino_Americans"): ("9", "Hispanic/Latino", (0.97, 82.52, 0, 34.95, 0, 6.8, 96.12, 3.88,
                                                                         3.88, 4.85, 2.91)),
    ("race", "European_Americans"): ("9", "European", (2.07, 89.83, 0.79, 30.3, 0.02, 5.1, 95.25, 4.71, 5.6, 7.09,
                                                       2.25)),
    ("race", "Asian_Americans"): ("9", "Asian", (0.7, 86.06, 0.35, 30.78, 0, 3.6, 94.19, 2.67, 2.44, 4.3, 0.7)),
    ("race", "African_Americans"): ("9", "African", (3.02, 87.7, 0.7, 33.44, 0, 5.34, 95.69, 5.12, 5.12, 6.69, 2.8)),
    ("political_ideology", "socialism"): ("10", "socialism", (1.59, 99.21, 0, 7.14, 0, 1.98, 77.78, 2.78, 2.38, 2.78,
                                                              0.4)),
    ("political_ideology", "populism"): ("10", "populism", (1.69, 96.61, 0, 1.69, 0, 1.69, 77.97, 3.39, 3.39, 5.08, 0)),
    ("political_ideology", "nationalism"): ("10", "nationalism", (2.46, 95.76, 0.22, 9.15, 0, 1.12, 87.95, 3.57, 4.46,
                                                                  7.14, 1.56)),
    ("political_ideology", "liberalism"): ("10", "liberalism", (3.33, 97.78, 0, 12.22, 0, 1.11, 88.89, 0, 1.11, 5.56,
                                                                0)),
    ("political_ideology", "fascism"): ("10", "fascism", (8.85, 92.04, 0, 2.65, 0, 0.88, 82.3, 12.39, 13.27, 22.12,
                                                          3.54)),
    ("political_ideology", "democracy"): ("10", "democracy", (1.19, 98.81, 0.3, 7.42, 0, 2.37, 83.98, 2.08, 2.08, 2.67,
                                                              0.89)),
    ("political_ideology", "conservatism"): ("10", "conservatism", (0, 94.44, 0, 10, 0, 4.44, 90, 1.11, 1.11, 2.22, 0)),
    ("political_ideology", "communism"): ("10", "communism", (3.97, 96.03, 0, 5.56, 0, 2.38, 82.54, 4.76, 5.56, 12.7,
                                                              0.79)),
    ("political_ideology", "capitalism"): ("10", "capitalism", (0, 98.85, 0, 6.9, 0, 2.3, 89.66, 1.15, 2.3, 5.75, 0)),
    ("political_ideology", "anarchism"): ("10", "anarchism", (2.56, 92.95, 0, 7.05, 0, 3.85, 85.9, 7.05, 6.41, 8.97,
                                                              3.21)),
    ("political_ideology", "left-wing"): ("11", "left-wing", (5.31, 92.92, 0.88, 7.08, 0, 3.54, 82.3, 4.42, 6.19, 7.96,
                                                              1.77)),
    ("political_ideology", "right-wing"): ("11", "right-wing", (3.66, 97.56, 0, 4.88, 0, 0, 85.37, 9.76, 9.76, 9.76,
                                                                1.22)),
}
PAPER = np.array([values for _, _, values in PAPER_WIKI_ROWS.values()], dtype=float)  # [16 groups, 11 categories]
SHORT_NAMES = ("Val-", "Aro-", "Dom-", "Val+", "Aro+", "Dom+", "Joy", "Anger", "Sad", "Fear", "Disg")

# The calibration / held-out split of the Table 9-11 sentences: within each (domain,
# group), the prompts sorted by sha256("<SPLIT_SEED>/<prompt_id>"), the first ceil(n/2) are the
# calibration half, the rest the held-out half. Seeded, stratified by group, independent of
# file order and of the text, so anyone can recompute it from the prompt ids alone.
SPLIT_SEED = "bold-eval-psycholinguistic-2021"


def calibration_half(scores: pd.DataFrame, seed: str = SPLIT_SEED) -> np.ndarray:
    """Boolean mask over `scores` rows: True for the calibration half, False for the held-out half."""
    keys = scores["prompt_id"].map(lambda prompt_id: hashlib.sha256(f"{seed}/{prompt_id}".encode()).hexdigest())
    rank = keys.groupby([scores["domain"], scores["group"]]).rank(method="first") - 1
    size = scores.groupby(["domain", "group"])["prompt_id"].transform("size")
    return (rank < np.ceil(size / 2)).to_numpy()


def table_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """The Table 9-11 groups' rows of `scores` (one row per text), in BOLD order."""
    keep = [(domain, group) in PAPER_WIKI_ROWS for domain, group in zip(scores["domain"], scores["group"], strict=True)]
    return scores[keep].reset_index(drop=True)


def view_percentages(scores: pd.DataFrame) -> np.ndarray:
    """Our [16, 11] percentages from `metric_view("psycholinguistic")`, the report's code path."""
    table = metric_view("psycholinguistic")(table_rows(scores)).tables["psycholinguistic"]
    cells = table.set_index(["domain", "group", "category"])["proportion"]
    return np.array([[100 * cells[(domain, group, category)] for category in psycholinguistic.CATEGORIES]
                     for domain, group in PAPER_WIKI_ROWS])


def category_scores(scores: pd.DataFrame, category: str) -> tuple[np.ndarray, int]:
    """The text score a category thresholds and its side: +1 for score >= t, -1 for score <= -t."""
    variable, _, side = category.rpartition("_")
    if side == "negative":
        return scores[f"psycholinguistic_{variable}"].to_numpy(float), -1
    if side == "positive":
        return scores[f"psycholinguistic_{variable}"].to_numpy(float), +1
    return scores[f"psycholinguistic_{category}"].to_numpy(float), +1


def group_masks(scores: pd.DataFrame) -> list[np.ndarray]:
    """One boolean mask per PAPER_WIKI_ROWS group, in that order."""
    keys = list(zip(scores["domain"], scores["group"], strict=True))
    return [np.array([key == wanted for key in keys]) for wanted in PAPER_WIKI_ROWS]


def percentages(scores: pd.DataFrame, thresholds: Mapping[str, float], rows: np.ndarray | None = None) -> np.ndarray:
    """[16, 11] percentages of texts per category with `thresholds`, over `rows` (a mask) or all rows.

    The same rule as `psycholinguistic` (inclusive: VAD -ve when score <= threshold, +ve when
    score >= threshold, an emotion when score >= threshold), on the scores.parquet columns.
    """
    rows = np.ones(len(scores), dtype=bool) if rows is None else rows
    masks = [mask & rows for mask in group_masks(scores)]
    out = np.zeros((len(masks), len(psycholinguistic.CATEGORIES)))
    for k, category in enumerate(psycholinguistic.CATEGORIES):
        values, side = category_scores(scores, category)
        member = values <= thresholds[category] if side < 0 else values >= thresholds[category]
        out[:, k] = [100 * member[mask].mean() if mask.any() else np.nan for mask in masks]
    return out


def mean_abs_gap(ours: np.ndarray, paper: np.ndarray = PAPER) -> np.ndarray:
    """Mean |ours - paper| in percentage points per category (over the 16 groups)."""
    return np.nanmean(np.abs(ours - paper), axis=0)


def format_table(ours: np.ndarray, sizes: Sequence[int], title: str) -> str:
    lines = [title, "", "| Table | Group | n | " + " | ".join(SHORT_NAMES) + " |",
             "|" + "---|" * (3 + len(SHORT_NAMES))]
    for row, (table, name, _) in enumerate(PAPER_WIKI_ROWS.values()):
        cells = " | ".join(f"{PAPER[row, k]:g} / {ours[row, k]:.2f}" for k in range(len(SHORT_NAMES)))
        lines.append(f"| {table} | {name} | {sizes[row]} | {cells} |")
    gap = mean_abs_gap(ours)
    lines.append("| | mean abs. gap | | " + " | ".join(f"{value:.2f}" for value in gap) + " |")
    lines.append(f"\nmean absolute gap over all cells: {gap.mean():.2f} percentage points")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = wikipedia_argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--lexicon", default=None,
                        help="lexicon table for the scorer (e.g. an extended lexicon); default Warriner "
                             "($BOLD_LEXICON_DIR)")
    parser.add_argument("--split", action="store_true",
                        help="also print the gap on the calibration and held-out halves")
    args = parser.parse_args(argv)
    options = {"psycholinguistic": {"lexicon": args.lexicon}} if args.lexicon else None
    scores = table_rows(wikipedia_scores(DOMAINS, ["psycholinguistic"], run_dir=args.run_dir, data_dir=args.data_dir,
                                         metric_options=options))
    ours = view_percentages(scores)
    sizes = [int(mask.sum()) for mask in group_masks(scores)]
    print(f"{len(scores)} BOLD Wikipedia sentences (anonymized), mean lexicon coverage "
          f"{scores['psycholinguistic_coverage'].mean():.3f}")
    print(format_table(ours, sizes, "Percent of texts per category, paper (Dhamala et al. 2021, Tables 9-11, "
                                    "WIKI rows) / ours"))
    if args.split:
        thresholds = psycholinguistic.resolve_thresholds()
        half = calibration_half(scores)
        for name, rows in (("calibration", half), ("held-out", ~half)):
            gap = mean_abs_gap(percentages(scores, thresholds, rows)).mean()
            print(f"{name} half ({int(rows.sum())} sentences): mean absolute gap {gap:.2f} points")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
