"""Table 3, WIKI rows: texts classified male and female per profession super-group, paper vs ours.

Runs the Wikipedia baseline exactly as `bold-eval run --model wikipedia` does (anonymized,
Section 3.3; the package's gender-polarity scorer, Section 4.5; `analysis.views.metric_view("gender_polarity")`,
the code behind the report's Table 3) and prints, per Table 3 super-group, our male/female counts,
proportions and male : female ratio (with its 95% interval, Wikipedia pages as units) next
to the paper's, then Section 6.2's average of the ratios and the pooled ratio. Unigram matching needs no resource;
Gender-Max and Gender-Wavg are added when the hard-debiased word2vec is available
($BOLD_WORD2VEC). Table 3's caption speaks of proportions, but its columns are counts
("male #", "female #") and their ratio, so both are shown.

    python reproduce/table3_unigram.py [--data-dir DIR] [--run-dir RUN] [--methods unigram]

`--run-dir`: read a finished `bold-eval run --model wikipedia` folder instead of running it;
the numbers printed are the same either way. BOLD is read with `bold_eval.data.bold.load_bold`:
`--data-dir`, else $BOLD_DATA_DIR, else the pinned upstream copy.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bold_eval.analysis.views import metric_view
from bold_eval.metrics import metric_spec

sys.path.insert(0, str(Path(__file__).resolve().parent))  # reproduce/_wikipedia.py, the shared run path
from _wikipedia import wikipedia_argument_parser, wikipedia_scores  # noqa: E402

# The report's Table 3 code path and the paper's method names, from the metric's spec.
gender_polarity_view = metric_view("gender_polarity")
GENDER_POLARITY_METHODS = metric_spec("gender_polarity").view.methods

# Dhamala et al. 2021, Section 6.1.1, Table 3, rows "WIKI": "total #" and, per method,
# (male #, female #, male : female) as printed.
PAPER_WIKI_TOTAL = {
    "arts_and_entertainment": 3009,
    "science_and_technology": 4153,
    "industrial_and_manufacturing": 1699,
    "healthcare_and_medicine": 1173,
}
PAPER_WIKI: dict[str, dict[str, tuple[int, int, float]]] = {
    "max": {  # Gender-Max
        "arts_and_entertainment": (145, 101, 1.43),
        "science_and_technology": (66, 10, 6.60),
        "industrial_and_manufacturing": (29, 36, 0.80),
        "healthcare_and_medicine": (11, 31, 0.35),
    },
    "wavg": {  # Gender-Wavg
        "arts_and_entertainment": (114, 77, 1.48),
        "science_and_technology": (64, 5, 12.80),
        "industrial_and_manufacturing": (25, 31, 0.80),
        "healthcare_and_medicine": (6, 28, 0.21),
    },
    "unigram": {  # Unigram matching
        "arts_and_entertainment": (102, 66, 1.54),
        "science_and_technology": (54, 6, 9.00),
        "industrial_and_manufacturing": (23, 17, 1.35),
        "healthcare_and_medicine": (3, 19, 0.15),
    },
}
# Section 6.2: "The average of male to female proportions of texts across all profession groups for WIKI ... 2.29",
# the mean of the four Gender-Max ratios above; the paper prints no average for the other two methods.
PAPER_WIKI_AVERAGE = {"max": 2.29}
# Kept for callers of the unigram-only layout: category -> {"total", "male", "female", "ratio"}.
PAPER_WIKI_UNIGRAM = {
    category: {"total": PAPER_WIKI_TOTAL[category], "male": male, "female": female, "ratio": ratio}
    for category, (male, female, ratio) in PAPER_WIKI["unigram"].items()
}


def table3(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, Table 3 super-group) scored in `scores`: ours and the paper's WIKI row."""
    view = gender_polarity_view(scores)
    ours = view.tables["gender_polarity_category"].set_index(["method", "category"])
    rows = []
    for method in GENDER_POLARITY_METHODS:
        for category, (male, female, ratio) in PAPER_WIKI[method].items():
            if (method, category) not in ours.index:
                continue
            row = ours.loc[(method, category)]
            total = PAPER_WIKI_TOTAL[category]
            rows.append({
                "method": method,
                "group": category,
                "total": int(row["total"]),
                "male": int(row["male"]),
                "female": int(row["female"]),
                "male_share": float(row["male_proportion"]),
                "female_share": float(row["female_proportion"]),
                # the view leaves male : female undefined (NaN) without female texts; print it as inf
                "ratio": float(row["male_to_female"]) if row["female"] else float("inf"),
                "ratio_ci_low": float(row["male_to_female_ci_low"]),
                "ratio_ci_high": float(row["male_to_female_ci_high"]),
                "paper_total": total,
                "paper_male": male,
                "paper_female": female,
                "paper_male_share": male / total,
                "paper_female_share": female / total,
                "paper_ratio": ratio,
            })
    return pd.DataFrame(rows)


def section_6_2(scores: pd.DataFrame) -> pd.DataFrame:
    """Per method: the average of our Table 3 ratios (Section 6.2) and the pooled ratio, with intervals,
    next to the paper's average (printed for Gender-Max; the mean of its printed ratios otherwise)."""
    summary = gender_polarity_view(scores).tables["gender_polarity_ratio_summary"]
    paper = {method: PAPER_WIKI_AVERAGE.get(method, sum(r for _, _, r in rows.values()) / len(rows))
             for method, rows in PAPER_WIKI.items()}
    return summary.assign(paper_average=summary["method"].map(paper),
                          paper_printed=summary["method"].isin(list(PAPER_WIKI_AVERAGE)))


def table3_unigram(data_dir: str | os.PathLike | None = None, *,
                   run_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """The unigram-matching rows of `table3` for the Wikipedia baseline (no embedding needed)."""
    scores = wikipedia_scores(["profession"], ["gender_polarity"], run_dir=run_dir, data_dir=data_dir,
                              metric_options={"gender_polarity": {"methods": ["unigram"]}})
    table = table3(scores)
    return table[table["method"] == "unigram"].reset_index(drop=True)


def _interval(low: float, high: float) -> str:
    return "" if pd.isna(low) else f"[{low:.2f}, {high:.2f}]"


def format_table(table: pd.DataFrame, summary: pd.DataFrame | None = None) -> str:
    """Table 3 as ours / paper; with `summary` (`section_6_2`), the Section 6.2 averages after it."""
    header = (
        f"{'group':<30} {'total #':>15} {'male #':>11} {'female #':>11} "
        f"{'male %':>13} {'female %':>13} {'male : female':>15} {'ours, 95% interval':>20}"
    )
    lines = ["Table 3 (Dhamala et al. 2021, Section 6.1.1), WIKI rows: ours / paper"]
    for method, block in table.groupby("method", sort=False):
        lines += ["", GENDER_POLARITY_METHODS[method], header, "-" * len(header)]
        for row in block.itertuples(index=False):
            lines.append(
                f"{row.group.replace('_and_', ' & ').replace('_', ' '):<30} "
                f"{f'{row.total:,} / {row.paper_total:,}':>15} "
                f"{f'{row.male} / {row.paper_male}':>11} "
                f"{f'{row.female} / {row.paper_female}':>11} "
                f"{f'{100 * row.male_share:.2f} / {100 * row.paper_male_share:.2f}':>13} "
                f"{f'{100 * row.female_share:.2f} / {100 * row.paper_female_share:.2f}':>13} "
                f"{f'{row.ratio:.2f} / {row.paper_ratio:.2f}':>15} "
                f"{_interval(row.ratio_ci_low, row.ratio_ci_high):>20}"
            )
    if summary is not None:
        lines += ["", "Section 6.2: average of the super-groups' male : female ratios (ours [95% interval for the "
                  "mean of the true ratios, pages as units] / paper), and the pooled ratio all male / all female texts"]
        for row in summary.itertuples(index=False):
            paper = f"{row.paper_average:.2f}" + ("" if row.paper_printed else " (mean of Table 3's ratios)")
            lines.append(f"{row.method_name:<18} average {row.average_male_to_female:.2f} "
                         f"{_interval(row.average_ci_low, row.average_ci_high)} / {paper}; pooled "
                         f"{row.pooled_male_to_female:.2f} {_interval(row.pooled_ci_low, row.pooled_ci_high)}"
                         + (f"  ({row.note})" if row.note else ""))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = wikipedia_argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--methods", default=None,
                        help="gender-polarity methods, comma list (default: all; without word2vec, unigram only)")
    args = parser.parse_args(argv)
    options = {"gender_polarity": {"methods": args.methods.split(",")}} if args.methods else None
    scores = wikipedia_scores(["profession"], ["gender_polarity"], run_dir=args.run_dir, data_dir=args.data_dir,
                              metric_options=options)
    print(format_table(table3(scores), section_6_2(scores)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
