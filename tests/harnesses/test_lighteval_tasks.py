"""lighteval: `bold-eval score` reads the details of the `bold_eval:<domain>` tasks, the task module's aggregation,
and (where lighteval is installed: its own environment, docs/harnesses.md) the tasks themselves.

tests/fixtures/lighteval/ holds the output of a real lighteval 0.13.0 run (`lighteval accelerate
"model_name=TINY,dtype=float32" "bold_eval|0" --custom-tasks bold_eval.lighteval_tasks --max-samples 4
--save-details`, offline, on `testing.models.build_tiny_causal_lm` over 1,500 gender sentences): details and
results as lighteval wrote them.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.scoring.lighteval_details import details_files, is_lighteval_details, read_lighteval_details

RUN = Path(__file__).parents[1] / "fixtures" / "lighteval"


@pytest.mark.slow
def test_details_are_read_back_and_agree_with_lightevals_metric(tmp_path, bold_dir, bold_eval_here):
    """`bold-eval score` keys every document's text to BOLD; the 0/1 values lighteval logged per document (the
    task's metric) are the labels `bold-eval score` gives the same texts."""
    files = details_files(RUN)
    assert len(files) == 5 and is_lighteval_details(RUN)
    frame, info = read_lighteval_details(RUN)
    assert len(frame) == 20 and set(frame["sample"]) == {0}
    assert not frame["continuation"].str.contains("\n").any()
    assert info["model"] == "tiny-gpt2" and info["chat_template"] == "none"
    out = tmp_path / "scored"
    result = bold_eval_here("score", RUN, "--out", out, "--allow-partial", "--metrics", "sentiment",
                            "gender_polarity", "--no-reference", "--no-report", env={"BOLD_DATA_DIR": str(bold_dir)})
    assert result.returncode == 0, result.stderr[-3000:]
    scores = pd.read_parquet(out / "scores.parquet").set_index("prompt_id")
    assert sorted(scores.index) == sorted(frame["prompt_id"])
    run = json.loads((out / "run.json").read_text())
    assert run["generations"]["format"] == "lighteval" and run["model"] == "tiny-gpt2"
    for file in files:
        details = pd.read_parquet(file)
        for doc, metric in zip(details["doc"], details["metric"], strict=True):
            row = scores.loc[doc["specific"]["prompt_id"]]
            assert metric["sentiment_negative"]["value"] == float(row["sentiment_label"] == "negative")
            assert metric["sentiment_positive"]["value"] == float(row["sentiment_label"] == "positive")
            male = float(row["gender_polarity_unigram_label"] == "male")
            assert metric["gender_polarity_unigram_matching_male"]["value"] == male


def test_group_rates_in_lightevals_results():
    (results_file,) = RUN.rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]
    gender = results["bold_eval:gender|0"]
    groups = [key for key in gender if key.startswith("sentiment_negative:") and not key.endswith("_stderr")]
    assert groups and all(f"{key}_stderr" in gender for key in groups)
    assert 0.0 <= gender["sentiment_negative"] <= 1.0


def test_two_runs_of_a_task_are_refused(tmp_path, bold_eval_here):
    (first,) = RUN.rglob("details_bold_eval:gender*.parquet")
    for date in ("2026-01-01T00-00-00.000000", "2026-01-02T00-00-00.000000"):
        folder = tmp_path / "details" / "m" / date
        folder.mkdir(parents=True)
        shutil.copy(first, folder / f"details_bold_eval:gender|0_{date}.parquet")
    result = bold_eval_here("score", tmp_path / "details", "--out", tmp_path / "out")
    assert result.returncode != 0 and "several lighteval runs of the same task" in result.stderr


def test_clustered_stderr_by_hand():
    lighteval_tasks = pytest.importorskip("bold_eval.lighteval_tasks", reason="lighteval's own environment")
    # two names: residuals (1 - 0.5) + (1 - 0.5) = 1 and (0 - 0.5) + (0 - 0.5) = -1; sqrt(2 / 1 * 2) / 4 = 0.5
    items = [("g", "a", 1.0), ("g", "a", 1.0), ("g", "b", 0.0), ("g", "b", 0.0)]
    assert lighteval_tasks.clustered_stderr(items) == pytest.approx(0.5)
    rates = lighteval_tasks.GroupRates("x")([{"group": "g", "name": "a", "value": 1.0},
                                             {"group": "h", "name": "b", "value": math.nan}])
    assert rates["x"] == 1.0 and "x:h" not in rates
