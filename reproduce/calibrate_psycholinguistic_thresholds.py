"""Fit the psycholinguistic category thresholds on a calibration half of the WIKI sentences; check on the other half.

Section 4.4 gives the text-level score (a magnitude-weighted average of word norms) but no
thresholds for the categories of Tables 4, 6 and 9-11. This script fits them, per category, to
the paper's WIKI rows of Tables 9-11 and checks the fit on sentences it did not see:

1. Texts: the BOLD Wikipedia sentences of the 16 Table 9-11 groups, run through the
   `bold-eval run --model wikipedia` pipeline (anonymized, Section 3.3; the placeholders
   "Person" / "XYZ" ignored by the scorer; reproduce/_wikipedia.py).
2. Split: `tables9_11_psycholinguistic.calibration_half` - within each (domain, group), prompts
   ordered by sha256("<SPLIT_SEED>/<prompt_id>"), the first ceil(n/2) calibrate, the rest are
   held out.
3. Fit: per category, the threshold on a 0.01 grid (0.01 ... 1.00; VAD -ve uses its negative)
   minimizing the mean |ours - paper| over the 16 groups, on the calibration half only; among
   equally good values the smallest magnitude (the least extreme) wins.
4. Check: the mean absolute gap (percentage points, over the 16 x 11 cells) on the calibration
   half and on the held-out half, for the fitted and for the current DEFAULTS thresholds.

    python reproduce/calibrate_psycholinguistic_thresholds.py [--data-dir DIR] [--run-dir RUN] [--lexicon PATH]

Paste the printed thresholds into psycholinguistic.DEFAULTS["thresholds"].
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bold_eval.metrics import psycholinguistic

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling reproduce scripts
from _wikipedia import wikipedia_argument_parser, wikipedia_scores  # noqa: E402
from tables9_11_psycholinguistic import (  # noqa: E402
    DOMAINS,
    PAPER,
    SHORT_NAMES,
    calibration_half,
    category_scores,
    group_masks,
    mean_abs_gap,
    percentages,
    table_rows,
)

GRID = np.round(np.arange(0.01, 1.0001, 0.01), 2)


def fit_thresholds(scores: pd.DataFrame, rows: np.ndarray) -> dict[str, float]:
    """Per category, the grid threshold minimizing the mean |ours - paper| over the 16 groups, on `rows`."""
    masks = [mask & rows for mask in group_masks(scores)]
    fitted = {}
    for k, category in enumerate(psycholinguistic.CATEGORIES):
        values, side = category_scores(scores, category)
        members = (values[None, :] * side) >= GRID[:, None]  # [grid, texts]
        ours = np.stack([100 * members[:, mask].mean(axis=1) for mask in masks], axis=1)  # [grid, groups]
        errors = np.abs(ours - PAPER[None, :, k]).mean(axis=1)
        best = GRID[int(np.argmin(np.round(errors, 9)))]
        fitted[category] = float(-best if side < 0 else best)
    return fitted


def agreement(scores: pd.DataFrame, thresholds: dict[str, float], half: np.ndarray) -> dict[str, np.ndarray]:
    """Mean absolute gap per category (points) on the calibration and the held-out half."""
    return {"calibration": mean_abs_gap(percentages(scores, thresholds, half)),
            "held-out": mean_abs_gap(percentages(scores, thresholds, ~half))}


def main(argv: Sequence[str] | None = None) -> int:
    parser = wikipedia_argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--lexicon", default=None,
                        help="lexicon table for the scorer (e.g. an extended lexicon); default Warriner "
                             "($BOLD_LEXICON_DIR)")
    args = parser.parse_args(argv)
    options = {"psycholinguistic": {"lexicon": args.lexicon}} if args.lexicon else None
    scores = table_rows(wikipedia_scores(DOMAINS, ["psycholinguistic"], run_dir=args.run_dir, data_dir=args.data_dir,
                                         metric_options=options))
    half = calibration_half(scores)
    fitted = fit_thresholds(scores, half)
    print(f"{len(scores)} sentences: {int(half.sum())} calibration, {int((~half).sum())} held out")
    print("fitted on the calibration half (paste into psycholinguistic.DEFAULTS['thresholds']):")
    for name, value in fitted.items():
        print(f'    "{name}": {value:.2f},')
    print("\nmean absolute gap to Tables 9-11 WIKI rows, percentage points")
    print("| thresholds | half | " + " | ".join(SHORT_NAMES) + " | all |")
    print("|" + "---|" * (3 + len(SHORT_NAMES)))
    for label, thresholds in (("fitted", fitted), ("current DEFAULTS", psycholinguistic.resolve_thresholds())):
        for half_name, gap in agreement(scores, thresholds, half).items():
            print(f"| {label} | {half_name} | " + " | ".join(f"{v:.2f}" for v in gap) + f" | {gap.mean():.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
