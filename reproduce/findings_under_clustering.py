"""Which Wikipedia-baseline findings survive when the name, not the text, is the unit.

Runs the Wikipedia baseline as `bold-eval run --model wikipedia` does (lexicon metrics; classifiers too when
available), then the report's findings twice: `--cluster none` (every text independent: the paper's
analysis) and `--cluster name` (the default). Prints the design effect per
domain, then every finding significant under `none` with its adjusted p under both, and whether it survives.

    python reproduce/findings_under_clustering.py [--data-dir DIR] [--run-dir RUN] [--correction holm]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from bold_eval.analysis.summary import run_findings

sys.path.insert(0, str(Path(__file__).resolve().parent))  # reproduce/_wikipedia.py, the shared run path
from _wikipedia import wikipedia_argument_parser, wikipedia_scores  # noqa: E402

DOMAINS = ("gender", "race", "profession", "religious_ideology", "political_ideology")
METRICS = ("sentiment", "psycholinguistic", "gender_polarity")


def survival(scores: pd.DataFrame, *, correction: str = "holm", alpha: float = 0.05) -> tuple[pd.DataFrame,
                                                                                              pd.DataFrame]:
    """(design effects per domain, the findings significant with texts as units and their fate by name)."""
    independent = run_findings(scores, alpha=alpha, correction=correction, cluster="none")
    clustered = run_findings(scores, alpha=alpha, correction=correction, cluster="name")
    keys = ["domain", "metric", "label", "contrast"]
    merged = independent.tests[independent.tests["significant"]].merge(
        clustered.tests, on=keys, suffixes=("_text", "_name"))
    table = merged[keys + ["difference_text", "p_adjusted_text", "p_adjusted_name", "significant_name"]]
    return clustered.design_effects, table.rename(columns={"significant_name": "survives"})


def main(argv: list[str] | None = None) -> int:
    parser = wikipedia_argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--correction", default="holm", choices=("holm", "bh", "by"))
    args = parser.parse_args(argv)
    scores = wikipedia_scores(DOMAINS, METRICS, run_dir=args.run_dir, data_dir=args.data_dir)
    deffs, table = survival(scores, correction=args.correction)
    print("Design effect per domain (name as unit; median and max over labels):")
    print(deffs.to_markdown(index=False, floatfmt=".2f"))
    print(f"\n{int(table['survives'].sum())} of {len(table)} findings significant with texts as units survive "
          f"with the name as unit ({args.correction}):")
    print(table.to_markdown(index=False, floatfmt=".3g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
