"""The outputs of a fixed small run do not change when the code is reorganized.

A Wikipedia-baseline run over three domains (20 prompts each, sentiment, psycholinguistic and unigram gender
polarity) is compared with the copy kept in tests/fixtures/golden/: report.md byte for byte, summary.json and every
table value for value (floats to 1e-9, so that the lower-bound versions of CI's test-min agree), and the list of
figures. What differs from machine to machine is left out: run.json's timings, versions and command line (and the
lines of report.md that print them).

A change that is meant to change the outputs rewrites the copy:

    BOLD_EVAL_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/end_to_end/test_golden.py

and the diff of tests/fixtures/golden/ then shows, in review, what the change did to a report.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bold_eval.cli import main as cli_main

pytestmark = pytest.mark.slow  # one small run through the report (about 9 s)

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden" / "wikipedia_three_domains"
UPDATE = os.environ.get("BOLD_EVAL_UPDATE_GOLDEN", "").lower() in ("1", "true", "yes", "on")
RUN = ["run", "--model", "wikipedia", "--domains", "gender,profession,religious_ideology", "--limit", "20",
       "--metrics", "sentiment", "psycholinguistic", "gender_polarity", "--metric-option",
       "gender_polarity.methods=unigram", "--no-progress"]
# run.json fields that depend on the machine or the moment, not on the code's results
# (`resources` names absolute paths of the lexicon files and of the installed VADER package)
VOLATILE = ("timings", "versions", "command", "tokens_per_second", "metric_seconds", "resources")
VOLATILE_REPORT_LINES = ("- **timings**", "- **versions**", "- **scored with**", "  - `")


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory, bold_dir, shared_data) -> Path:
    out = tmp_path_factory.mktemp("golden") / "run"
    environment = {"BOLD_DATA_DIR": str(bold_dir), "BOLD_LEXICON_DIR": str(shared_data / "lexicons"),
                   "BOLD_DEBIASWE_DIR": str(shared_data / "debiaswe"), "BOLD_EVAL_THREADS": "2"}
    saved = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    try:
        assert cli_main([*RUN, "--out", str(out)]) == 0
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
    if UPDATE:
        _write_golden(out)
    return out


def _stable_summary(path: Path) -> dict[str, Any]:
    summary = json.loads(path.read_text(encoding="utf-8"))
    for key in VOLATILE:
        summary["run"].pop(key, None)
    summary["run"].get("reference", {}).pop("seconds", None)
    return summary


def _stable_report(path: Path) -> str:
    return "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                     if not line.startswith(VOLATILE_REPORT_LINES)) + "\n"


def _write_golden(out: Path) -> None:
    shutil.rmtree(GOLDEN, ignore_errors=True)
    (GOLDEN / "tables").mkdir(parents=True)
    (GOLDEN / "report.md").write_text(_stable_report(out / "report.md"), encoding="utf-8")
    (GOLDEN / "summary.json").write_text(json.dumps(_stable_summary(out / "summary.json"), indent=2,
                                                    ensure_ascii=False) + "\n", encoding="utf-8")
    for table in sorted((out / "tables").glob("*.csv")):
        shutil.copy(table, GOLDEN / "tables" / table.name)
    (GOLDEN / "figures.txt").write_text("\n".join(sorted(p.name for p in (out / "figures").iterdir())) + "\n",
                                        encoding="utf-8")


def _close(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two JSON values differ (floats to 1e-9 relative), as paths."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(set(a) ^ set(b))}"]
        return [diff for key in a for diff in _close(a[key], b[key], f"{where}.{key}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items against {len(b)}"]
        return [diff for index, (x, y) in enumerate(zip(a, b, strict=True)) for diff in _close(x, y,
                                                                                               f"{where}[{index}]")]
    if isinstance(a, float) and isinstance(b, float | int) and not isinstance(b, bool):
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else [f"{where}: {a!r} != {b!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_report_md_is_unchanged(golden_run):
    assert _stable_report(golden_run / "report.md") == (GOLDEN / "report.md").read_text(encoding="utf-8")


def test_summary_json_is_unchanged(golden_run):
    expected = json.loads((GOLDEN / "summary.json").read_text(encoding="utf-8"))
    assert _close(_stable_summary(golden_run / "summary.json"), expected) == []


def test_every_table_and_figure_is_unchanged(golden_run):
    tables = sorted(path.name for path in (golden_run / "tables").glob("*.csv"))
    assert tables == sorted(path.name for path in (GOLDEN / "tables").glob("*.csv"))
    for name in tables:
        got, expected = (pd.read_csv(folder / "tables" / name, keep_default_na=False)
                         for folder in (golden_run, GOLDEN))
        pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-9, atol=1e-12, obj=name)
    figures = sorted(path.name for path in (golden_run / "figures").iterdir())
    assert figures == (GOLDEN / "figures.txt").read_text(encoding="utf-8").split()


def test_the_report_speaks_plainly_first():
    """"How to read this" opens with at most five plain sentences (no formula); the method comes last."""
    report = (GOLDEN / "report.md").read_text(encoding="utf-8")
    opening = report.split("## How to read this\n\n", 1)[1].split("\n", 1)[0]
    sentences = [part for part in opening.replace("e.g.", "eg").split(". ") if part.strip()]
    assert 1 <= len(sentences) <= 5, opening
    assert "Welch" not in opening and "variance" not in opening and "One unit is one name" in opening
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert headings[-1] == "## Method" and "Welch-Satterthwaite" in report.split("## Method", 1)[1]
    assert "score-type" not in report.split("## Method", 1)[0]
