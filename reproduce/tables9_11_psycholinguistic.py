"""Tables 9-11, WIKI rows: share of BOLD Wikipedia sentences in each VAD/BE5 category, paper vs ours.

Section 4.4 does not state the text-score thresholds behind Tables 4, 6 and 9-11. This script
scores the BOLD Wikipedia sentences of the race (Table 9) and political ideology (Tables 10
and 11) groups with `bold_eval.metrics.psycholinguistic`, prints our proportions next to the
paper's WIKI rows, and with `--fit` searches, per category, the threshold (grid step 0.01)
that minimizes the mean absolute difference over the 16 groups; those fitted values are
psycholinguistic.DEFAULTS["thresholds"].

    python reproduce/tables9_11_psycholinguistic.py [--fit] [--data-dir DIR] [--lexicon-dir DIR]

Texts are BOLD's Wikipedia sentences as `bold_eval.data.load_bold` reads them from
wikipedia/*.json, one per prompt, in file order (not anonymized: names and ideology terms are
kept; the paper anonymizes prompts, Section 3.3).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from bold_eval.data import load_bold
from bold_eval.metrics import psycholinguistic

# Dhamala et al. (2021), appendix A.4: the WIKI rows of Table 9 (race), Table 10 (political
# ideology) and Table 11 (left-wing, right-wing). Percentages, in the tables' column order
# (= psycholinguistic.CATEGORIES): Val(-ve), Aro(-ve), Dom(-ve), Val(+ve), Aro(+ve), Dom(+ve),
# Joy, Anger, Sad, Fear, Disgust. Keys: (domain file, BOLD group name) -> (table, row name, values).
PAPER_WIKI_ROWS: dict[tuple[str, str], tuple[str, str, tuple[float, ...]]] = {
    ("race", "Hispanic_and_Latino_Americans"): ("9", "Hispanic/Latino", (0.97, 82.52, 0, 34.95, 0, 6.8, 96.12, 3.88, 3.88, 4.85, 2.91)),
    ("race", "European_Americans"): ("9", "European", (2.07, 89.83, 0.79, 30.3, 0.02, 5.1, 95.25, 4.71, 5.6, 7.09, 2.25)),
    ("race", "Asian_Americans"): ("9", "Asian", (0.7, 86.06, 0.35, 30.78, 0, 3.6, 94.19, 2.67, 2.44, 4.3, 0.7)),
    ("race", "African_Americans"): ("9", "African", (3.02, 87.7, 0.7, 33.44, 0, 5.34, 95.69, 5.12, 5.12, 6.69, 2.8)),
    ("political_ideology", "socialism"): ("10", "socialism", (1.59, 99.21, 0, 7.14, 0, 1.98, 77.78, 2.78, 2.38, 2.78, 0.4)),
    ("political_ideology", "populism"): ("10", "populism", (1.69, 96.61, 0, 1.69, 0, 1.69, 77.97, 3.39, 3.39, 5.08, 0)),
    ("political_ideology", "nationalism"): ("10", "nationalism", (2.46, 95.76, 0.22, 9.15, 0, 1.12, 87.95, 3.57, 4.46, 7.14, 1.56)),
    ("political_ideology", "liberalism"): ("10", "liberalism", (3.33, 97.78, 0, 12.22, 0, 1.11, 88.89, 0, 1.11, 5.56, 0)),
    ("political_ideology", "fascism"): ("10", "fascism", (8.85, 92.04, 0, 2.65, 0, 0.88, 82.3, 12.39, 13.27, 22.12, 3.54)),
    ("political_ideology", "democracy"): ("10", "democracy", (1.19, 98.81, 0.3, 7.42, 0, 2.37, 83.98, 2.08, 2.08, 2.67, 0.89)),
    ("political_ideology", "conservatism"): ("10", "conservatism", (0, 94.44, 0, 10, 0, 4.44, 90, 1.11, 1.11, 2.22, 0)),
    ("political_ideology", "communism"): ("10", "communism", (3.97, 96.03, 0, 5.56, 0, 2.38, 82.54, 4.76, 5.56, 12.7, 0.79)),
    ("political_ideology", "capitalism"): ("10", "capitalism", (0, 98.85, 0, 6.9, 0, 2.3, 89.66, 1.15, 2.3, 5.75, 0)),
    ("political_ideology", "anarchism"): ("10", "anarchism", (2.56, 92.95, 0, 7.05, 0, 3.85, 85.9, 7.05, 6.41, 8.97, 3.21)),
    ("political_ideology", "left-wing"): ("11", "left-wing", (5.31, 92.92, 0.88, 7.08, 0, 3.54, 82.3, 4.42, 6.19, 7.96, 1.77)),
    ("political_ideology", "right-wing"): ("11", "right-wing", (3.66, 97.56, 0, 4.88, 0, 0, 85.37, 9.76, 9.76, 9.76, 1.22)),
}
SHORT_NAMES = ("Val-", "Aro-", "Dom-", "Val+", "Aro+", "Dom+", "Joy", "Anger", "Sad", "Fear", "Disg")
GRID = np.round(np.arange(0.01, 1.0001, 0.01), 2)


def wikipedia_sentences(data_dir: str | os.PathLike | None) -> tuple[list[str], list[str]]:
    """Sentences and group labels ("<domain>/<group>") of the Table 9-11 groups, in BOLD's order."""
    texts: list[str] = []
    groups: list[str] = []
    for domain in ("race", "political_ideology"):
        frame = load_bold(domain, data_dir=data_dir).select_columns(["group", "wikipedia"]).to_pandas()
        frame = frame[[(domain, group) in PAPER_WIKI_ROWS for group in frame["group"]]]
        texts.extend(frame["wikipedia"])
        groups.extend(f"{domain}/{group}" for group in frame["group"])
    return texts, groups


def category_scores(columns: dict[str, np.ndarray], category: str) -> tuple[np.ndarray, int]:
    """The text score a category thresholds, and the side: +1 for score >= t, -1 for score <= -t."""
    if category.endswith("_negative"):
        return columns[category.removesuffix("_negative")], -1
    if category.endswith("_positive"):
        return columns[category.removesuffix("_positive")], +1
    return columns[category], +1


def fit_thresholds(columns: dict[str, np.ndarray], group_masks: list[np.ndarray], paper: np.ndarray) -> dict[str, float]:
    """Per category, the grid threshold minimizing the mean |ours - paper| (percent) over the groups.

    Among equally good thresholds the smallest magnitude wins (the least extreme choice).
    """
    fitted = {}
    for k, category in enumerate(psycholinguistic.CATEGORIES):
        scores, side = category_scores(columns, category)
        errors = []
        for t in GRID:
            member = scores <= -t if side < 0 else scores >= t
            ours = np.array([100 * member[mask].mean() for mask in group_masks])
            errors.append(np.abs(ours - paper[:, k]).mean())
        best = GRID[int(np.argmin(np.round(errors, 9)))]
        fitted[category] = float(-best if side < 0 else best)
    return fitted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = os.environ.get("BOLD_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data" / "bold"))
    parser.add_argument("--data-dir", default=default_data, help="BOLD folder (prompts/, wikipedia/); default $BOLD_DATA_DIR")
    parser.add_argument("--lexicon-dir", default=None, help="folder with the Warriner files ($BOLD_LEXICON_DIR)")
    parser.add_argument("--fit", action="store_true", help="grid-search the thresholds and use them")
    args = parser.parse_args(argv)

    texts, groups = wikipedia_sentences(args.data_dir)
    keys = list(PAPER_WIKI_ROWS)
    group_array = np.asarray(groups, dtype=object)
    group_masks = [group_array == f"{domain}/{group}" for domain, group in keys]
    paper = np.array([PAPER_WIKI_ROWS[key][2] for key in keys], dtype=float)

    scorer = psycholinguistic.load_scorer(lexicon_dir=args.lexicon_dir)
    columns = scorer(texts)
    thresholds = fit_thresholds(columns, group_masks, paper) if args.fit else scorer.thresholds
    if args.fit:
        print("fitted thresholds (paste into DEFAULTS['thresholds']):")
        for name, value in thresholds.items():
            print(f'    "{name}": {value:.2f},')
        columns = psycholinguistic.load_scorer(lexicon=scorer.lexicon, thresholds=thresholds)(texts)
    member = psycholinguistic.categories(columns)
    ours = np.array([[100 * member[c][mask].mean() for c in psycholinguistic.CATEGORIES] for mask in group_masks])

    print(f"\n{len(texts)} BOLD Wikipedia sentences, mean lexicon coverage {columns['coverage'].mean():.3f}")
    print("Percent of texts per category, paper (Dhamala et al. 2021, Tables 9-11, WIKI rows) / ours\n")
    header = "| Table | Group | n | " + " | ".join(SHORT_NAMES) + " |"
    print(header)
    print("|" + "---|" * (3 + len(SHORT_NAMES)))
    for row, key in enumerate(keys):
        table, name, _ = PAPER_WIKI_ROWS[key]
        cells = " | ".join(f"{paper[row, k]:g} / {ours[row, k]:.2f}" for k in range(len(SHORT_NAMES)))
        print(f"| {table} | {name} | {int(group_masks[row].sum())} | {cells} |")
    mad = np.abs(ours - paper).mean(axis=0)
    print("| | mean abs. diff. | | " + " | ".join(f"{value:.2f}" for value in mad) + " |")
    print(f"\noverall mean absolute difference: {mad.mean():.2f} percentage points")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
