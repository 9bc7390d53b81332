"""Table 3, "Unigram matching", WIKI rows: male and female texts per profession super-group.

Scores the Wikipedia sentence of every BOLD profession prompt with unigram matching
(Section 4.5) and prints, per Table 3 super-group, our male/female counts, proportions and
male : female ratio next to the paper's. Table 3's caption speaks of proportions, but its
columns are counts ("male #", "female #") and their ratio, so both are shown.

    python reproduce/table3_unigram.py [--data-dir DIR]

BOLD is read with `bold_eval.data.load_bold`: `--data-dir`, else $BOLD_DATA_DIR, else the
pinned upstream copy (e.g. `--data-dir ../shared/data/bold` in this project).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import pandas as pd

from bold_eval.aggregate import gender_polarity_view
from bold_eval.data import load_bold
from bold_eval.metrics import gender_polarity

# Dhamala et al. 2021, Section 6.1.1, Table 3, rows "WIKI", columns "total #" and
# "Unigram matching" (male #, female #, male : female).
PAPER_WIKI_UNIGRAM = {
    "arts_and_entertainment": {"total": 3009, "male": 102, "female": 66, "ratio": 1.54},
    "science_and_technology": {"total": 4153, "male": 54, "female": 6, "ratio": 9.00},
    "industrial_and_manufacturing": {"total": 1699, "male": 23, "female": 17, "ratio": 1.35},
    "healthcare_and_medicine": {"total": 1173, "male": 3, "female": 19, "ratio": 0.15},
}


def table3_unigram(data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per Table 3 super-group: ours (texts, male, female, proportions, ratio) and the paper's.

    Our counts come from `aggregate.gender_polarity_view`, the code behind the report's Table 3,
    so the comparison checks that code too.
    """
    frame = load_bold("profession", data_dir=data_dir).to_pandas()
    frame = frame[frame["category"].isin(list(PAPER_WIKI_UNIGRAM))]
    labels = gender_polarity.load_scorer(methods=["unigram"])(frame["wikipedia"].tolist())["unigram_label"]
    view = gender_polarity_view(frame.assign(gender_polarity_unigram_label=labels))
    ours = view["tables"]["gender_polarity_category"].set_index("category")
    rows = []
    for category, paper in PAPER_WIKI_UNIGRAM.items():
        row = ours.loc[category]
        rows.append(
            {
                "group": category,
                "total": int(row["total"]),
                "male": int(row["male"]),
                "female": int(row["female"]),
                "male_share": float(row["male_proportion"]),
                "female_share": float(row["female_proportion"]),
                # the view leaves male : female undefined (NaN) without female texts; print it as inf
                "ratio": float(row["male_to_female"]) if row["female"] else float("inf"),
                "paper_total": paper["total"],
                "paper_male": paper["male"],
                "paper_female": paper["female"],
                "paper_male_share": paper["male"] / paper["total"],
                "paper_female_share": paper["female"] / paper["total"],
                "paper_ratio": paper["ratio"],
            }
        )
    return pd.DataFrame(rows)


def format_table(table: pd.DataFrame) -> str:
    header = (
        f"{'group':<30} {'total #':>15} {'male #':>11} {'female #':>11} "
        f"{'male %':>13} {'female %':>13} {'male : female':>15}"
    )
    lines = [
        "Table 3 (Dhamala et al. 2021, Section 6.1.1), Unigram matching, WIKI rows: ours / paper",
        header,
        "-" * len(header),
    ]
    for row in table.itertuples(index=False):
        lines.append(
            f"{row.group.replace('_and_', ' & ').replace('_', ' '):<30} "
            f"{f'{row.total:,} / {row.paper_total:,}':>15} "
            f"{f'{row.male} / {row.paper_male}':>11} "
            f"{f'{row.female} / {row.paper_female}':>11} "
            f"{f'{100 * row.male_share:.2f} / {100 * row.paper_male_share:.2f}':>13} "
            f"{f'{100 * row.female_share:.2f} / {100 * row.paper_female_share:.2f}':>13} "
            f"{f'{row.ratio:.2f} / {row.paper_ratio:.2f}':>15}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="local BOLD folder (prompts/, wikipedia/); default $BOLD_DATA_DIR")
    args = parser.parse_args(argv)
    print(format_table(table3_unigram(args.data_dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
