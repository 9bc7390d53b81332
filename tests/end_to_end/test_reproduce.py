"""The reproduce scripts against the numbers printed in the paper.

Every expected number here is typed from Dhamala et al. (2021): Table 3 (Section 6.1.1) and
Tables 9-11 (appendix A.4), WIKI rows, through the scripts' PAPER_* constants, which the first
test pins to the paper's values. The scripts run the same pipeline as
`bold-eval run --model wikipedia` (reproduce/_wikipedia.py); the tests also check that both
print the same numbers.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bold_eval.cli import main as cli_main
from bold_eval.metrics import psycholinguistic

REPRODUCE = Path(__file__).resolve().parents[2] / "reproduce"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPRODUCE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def table3():
    return _script("table3_unigram")


@pytest.fixture(scope="module")
def tables9_11():
    return _script("tables9_11_psycholinguistic")


@pytest.fixture(scope="module")
def calibrate():
    return _script("calibrate_psycholinguistic_thresholds")


def test_paper_constants_are_the_printed_tables(table3, tables9_11):
    # Table 3, WIKI rows, Unigram matching: male #, female #, male : female (as printed).
    assert table3.PAPER_WIKI["unigram"] == {
        "arts_and_entertainment": (102, 66, 1.54),
        "science_and_technology": (54, 6, 9.00),
        "industrial_and_manufacturing": (23, 17, 1.35),
        "healthcare_and_medicine": (3, 19, 0.15),
    }
    # Table 3, WIKI rows, "total #".
    assert list(table3.PAPER_WIKI_TOTAL.values()) == [3009, 4153, 1699, 1173]
    # Table 9, WIKI row "African"; Table 10, WIKI row "fascism"; Table 11, WIKI row "right-wing".
    rows = tables9_11.PAPER_WIKI_ROWS
    assert rows[("race", "African_Americans")][2] == (3.02, 87.7, 0.7, 33.44, 0, 5.34, 95.69, 5.12, 5.12, 6.69, 2.8)
    assert rows[("political_ideology", "fascism")][2] == (8.85, 92.04, 0, 2.65, 0, 0.88, 82.3, 12.39, 13.27, 22.12,
                                                          3.54)
    assert rows[("political_ideology", "right-wing")][2] == (3.66, 97.56, 0, 4.88, 0, 0, 85.37, 9.76, 9.76, 9.76, 1.22)
    assert len(rows) == 16 and tables9_11.PAPER.shape == (16, len(psycholinguistic.CATEGORIES))


@pytest.mark.slow
def test_table3_unigram_wiki_rows_match_the_paper_and_the_run(tmp_path, bold_dir, table3, capsys):
    out = tmp_path / "wiki"
    assert cli_main(["run", "--model", "wikipedia", "--domains", "profession", "--metrics", "gender_polarity",
                     "--metric-option", "gender_polarity.methods=unigram", "--out", str(out), "--no-progress",
                     "--no-report"]) == 0  # the script reads the scores
    from_run = table3.table3_unigram(run_dir=out)
    ours = table3.table3_unigram(bold_dir)  # the script's own run() in a temporary folder
    pd.testing.assert_frame_equal(ours, from_run)
    assert ours["group"].tolist() == list(table3.PAPER_WIKI_UNIGRAM)
    assert ((ours["male"] + ours["female"]) <= ours["total"]).all()
    np.testing.assert_allclose(ours["male_share"], ours["male"] / ours["total"])
    # Table 3 "total #": the super-group sizes are exact (sewing_occupations counted in
    # industrial & manufacturing, as the paper's 1,699 needs).
    assert ours["total"].tolist() == [3009, 4153, 1699, 1173]
    # Table 3 Unigram matching WIKI counts, +-1 text per cell: the paper's anonymization is
    # not published (ours is Section 3.3 re-implemented), and one name or term replaced
    # differently moves a text by one gendered word. Measured: all exact but industrial &
    # manufacturing female, 16 vs 17.
    np.testing.assert_allclose(ours["male"], [102, 54, 23, 3], atol=1)
    np.testing.assert_allclose(ours["female"], [66, 6, 17, 19], atol=1)
    assert (ours["male"] == ours["paper_male"]).all()
    # The paper prints male : female cut, not rounded, to 2 decimals (102/66 = 1.545 -> 1.54).
    same_counts = (ours["male"] == ours["paper_male"]) & (ours["female"] == ours["paper_female"])
    np.testing.assert_allclose(np.floor(100 * ours["ratio"][same_counts]) / 100, ours["paper_ratio"][same_counts])
    assert table3.main(["--run-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "arts & entertainment" in printed and "102 / 102" in printed and "66 / 66" in printed


@pytest.fixture(scope="module")
def wiki_run(tmp_path_factory) -> Path:
    """`bold-eval run --model wikipedia` on the Table 9-11 domains, psycholinguistic norms only."""
    out = tmp_path_factory.mktemp("wiki") / "run"
    assert cli_main(["run", "--model", "wikipedia", "--domains", "race", "political_ideology",
                     "--metrics", "psycholinguistic", "--out", str(out), "--no-progress", "--no-report"]) == 0
    return out


@pytest.fixture(scope="module")
def wiki_scores(wiki_run, tables9_11) -> pd.DataFrame:
    sys.path.insert(0, str(REPRODUCE))
    from _wikipedia import wikipedia_scores

    return tables9_11.table_rows(wikipedia_scores(tables9_11.DOMAINS, ["psycholinguistic"], run_dir=wiki_run))


@pytest.mark.slow
def test_tables9_11_wiki_rows_are_near_the_paper(wiki_scores, tables9_11):
    assert len(wiki_scores) == 9641
    ours = tables9_11.view_percentages(wiki_scores)  # the report's aggregation
    # the scripts' threshold arithmetic agrees with the scorer's labels
    np.testing.assert_allclose(ours, tables9_11.percentages(wiki_scores, psycholinguistic.resolve_thresholds()))
    gap = np.abs(ours - tables9_11.PAPER)
    # Tolerances: the paper gives no thresholds and scores with an extended lexicon we cannot
    # rebuild offline, so cells differ; measured mean 1.96 points, largest 9.95 (fascism, fear,
    # 115 texts). The bounds leave room for one or two texts per small group, no more.
    assert gap.mean() < 2.5
    assert gap.max() < 12.0
    # Table 9 is the large race domain (7,657 texts): its rows are closer.
    assert gap[:4].mean() < 2.5


@pytest.mark.slow
def test_thresholds_fitted_on_the_calibration_half_hold_on_the_other_half(wiki_scores, tables9_11, calibrate):
    half = tables9_11.calibration_half(wiki_scores)
    # the split: stratified by group (ceil(n/2) per group), and a function of prompt ids only
    sizes = wiki_scores.groupby(["domain", "group"]).size()
    calibration_sizes = wiki_scores[half].groupby(["domain", "group"]).size()
    assert (calibration_sizes == np.ceil(sizes / 2)).all()
    shuffled = wiki_scores.sample(frac=1.0, random_state=1)
    assert (tables9_11.calibration_half(shuffled) == half[shuffled.index.to_numpy()]).all()
    # DEFAULTS["thresholds"] are what the documented fit gives on the calibration half alone
    fitted = calibrate.fit_thresholds(wiki_scores, half)
    assert fitted == pytest.approx(psycholinguistic.resolve_thresholds())
    agreement = calibrate.agreement(wiki_scores, fitted, half)
    # measured: 2.31 points on the calibration half, 2.28 held out (module card)
    assert agreement["calibration"].mean() < 2.5
    assert agreement["held-out"].mean() < 2.5
    # held out is not much worse than in-sample: the fit did not just memorize the half
    assert agreement["held-out"].mean() - agreement["calibration"].mean() < 0.5


@pytest.mark.slow
def test_tables9_11_script_prints_what_the_run_prints(wiki_run, tables9_11, capsys):
    # the script's own run() (no --run-dir) is `_wikipedia.wikipedia_scores`, checked against a run folder
    # by the Table 3 test above; here the printing from a run folder
    assert tables9_11.main(["--run-dir", str(wiki_run)]) == 0
    from_run = capsys.readouterr().out
    assert "| 9 | African | 1854 |" in from_run
