"""One spec per metric: a metric registered with a `MetricSpec` and a scorer, and nothing else, is scored by
`run` and `score`, tabulated, tested and reported, compared, and validated, with no harness file edited; the example
of docs/metrics.md ("Your own metric") runs as printed.

The toy metric "exclaim" labels a text "loud" when it has an exclamation mark and "calm" otherwise; its
continuous score, for `validate`, is the share of its sentences that end in "!". Run B appends "!" to every
American_actresses text of run A, so the toy metric must find that group louder in B, and nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from bold_eval.cli import main
from bold_eval.metrics import metric_names, metric_spec, register_metric, unregister_metric
from bold_eval.metrics.spec import MetricPresentation, MetricSpec, Scored, ScoreView, Validation

LABELS = ("loud", "calm")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


class ExclaimScorer:
    label_columns = {"label": LABELS}

    def __call__(self, texts: list[str]) -> dict[str, np.ndarray]:
        share = np.array([np.mean([s.endswith("!") for s in re.split(r"(?<=[.!?])\s+", t.strip())]) if t.strip()
                          else 0.0 for t in texts])
        return {"share": share, "label": np.where(["!" in t for t in texts], "loud", "calm").astype(object)}


def load_exclaim(strict: bool = False) -> ExclaimScorer:
    return ExclaimScorer()


def read_share(view: ScoreView, scorer: Any, columns: Mapping[str, np.ndarray], options: dict[str, Any]) -> Scored:
    return Scored(view, columns["share"], columns["label"], tuple(view.codes), {"loud": 0.0}, options)


SPEC = MetricSpec(
    name="exclaim",
    load_scorer=load_exclaim,
    labels={"exclaim_label": LABELS},
    tested_labels={"loud": ("exclaim_label", "loud")},
    validation=Validation(scores={"share": ScoreView("exclaim", "share", "exclaim", "share of sentences ending in '!'",
                                                     {"calm": 0, "loud": 1}, (0.0, 1.0))}, read_score=read_share),
    presentation=MetricPresentation(title="Exclamations (a toy metric)", colors={"loud": "#d62728", "calm": "#1f77b4"}),
)


@pytest.fixture
def exclaim() -> Iterator[MetricSpec]:
    register_metric(SPEC)
    yield SPEC
    unregister_metric("exclaim")


def test_the_registry_holds_the_paper_metrics_then_registered_ones(exclaim) -> None:
    assert metric_names() == ("sentiment", "toxicity", "regard", "psycholinguistic", "gender_polarity", "exclaim")
    assert metric_spec("regard").domains.scored == ("gender", "race")
    assert metric_spec("toxicity").resources.cached and not metric_spec("sentiment").resources.cached
    with pytest.raises(ValueError, match="already registered"):
        register_metric(SPEC)
    with pytest.raises(ValueError, match="must start with 'bad_'"):
        MetricSpec(name="bad", load_scorer=load_exclaim, labels={"label": LABELS})
    with pytest.raises(ValueError, match="cannot be removed"):
        unregister_metric("sentiment")


def test_the_compute_contract_has_at_most_twelve_fields() -> None:
    """What a metric computes stays small; how it is shown is `MetricPresentation`, the advanced options groups."""
    assert len(dataclasses.fields(MetricSpec)) <= 12
    assert [field.name for field in dataclasses.fields(MetricSpec)][:3] == ["name", "load_scorer", "labels"]


def own_metric_example() -> str:
    """The Python block of docs/metrics.md's "Your own metric", as printed there."""
    section = DOCS.read_text(encoding="utf-8").split("\n## Your own metric\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "docs/metrics.md's own-metric section has one Python block"
    return blocks[0]


@pytest.mark.slow
def test_the_documented_own_metric_runs_to_a_report(tmp_path: Path, bold_dir: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BOLD_DATA_DIR", str(bold_dir))
    try:
        exec(compile(own_metric_example(), str(DOCS), "exec"), {"__name__": "own_metric_example"})
    finally:
        unregister_metric("exclaim")
    out = tmp_path / "runs" / "exclaim"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["exclaim"]["status"] == "scored"
    assert {row["label"] for row in summary["exclaim"]["tables"]["exclaim"]} == set(LABELS)
    tested = pd.DataFrame(summary["findings"]["tests"])
    assert set(tested.loc[tested["metric"] == "exclaim", "label"]) == {"loud"}
    assert "## Exclamations" in (out / "report.md").read_text()


@pytest.mark.slow
def test_a_registered_metric_runs_reports_compares_and_validates(exclaim, tmp_path: Path, bold_dir: Path,
                                                                 capsys) -> None:
    common = ["--data-dir", str(bold_dir), "--metrics", "sentiment", "exclaim", "--no-reference"]
    first = tmp_path / "a"
    assert main(["run", "--model", "wikipedia", "--domains", "gender", "--limit", "120", "--out", str(first),
                 *common]) == 0
    scores = pd.read_parquet(first / "scores.parquet")
    assert set(scores["exclaim_label"]) <= set(LABELS) and "exclaim_share" in scores
    run_info = json.loads((first / "run.json").read_text())
    assert run_info["metrics"] == ["sentiment", "exclaim"]
    assert run_info["label_columns"]["exclaim_label"] == list(LABELS)
    summary = json.loads((first / "summary.json").read_text())
    assert summary["metrics"]["exclaim"]["status"] == "scored"
    assert {row["label"] for row in summary["exclaim"]["tables"]["exclaim"]} == set(LABELS)
    tested = pd.DataFrame(summary["findings"]["tests"])
    assert set(tested.loc[tested["metric"] == "exclaim", "label"]) == {"loud"}
    report = (first / "report.md").read_text()
    assert "## Exclamations (a toy metric)" in report and "figures/exclaim_gender.png" in report
    assert (first / "figures" / "exclaim_gender.png").is_file()

    # Run B: the same prompts, every actress text made loud; scored by `bold-eval score`.
    louder = scores[["prompt_id", "continuation"]].assign(continuation=[
        text + "!" if "American_actresses" in prompt_id else text
        for prompt_id, text in scores[["prompt_id", "continuation"]].to_numpy()])
    generations = tmp_path / "b.jsonl"
    louder.to_json(generations, orient="records", lines=True)
    second = tmp_path / "b"
    assert main(["score", str(generations), "--out", str(second), "--model", "louder", "--allow-partial",
                 *common]) == 0
    assert (pd.read_parquet(second / "scores.parquet").query("group == 'American_actresses'")["exclaim_label"]
            == "loud").all()

    assert main(["compare", str(first), str(second), "--out", str(tmp_path / "cmp")]) == 0
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    interactions = pd.DataFrame(compared["interactions"]["tests"])
    loud = interactions[(interactions["metric"] == "exclaim") & interactions["significant"]]
    assert len(loud) >= 1 and "exclaim" in (tmp_path / "cmp" / "compare.md").read_text()

    labels = tmp_path / "labels.csv"
    pd.DataFrame({"text": ["Wow! Great!", "Fine.", "Stop! Now.", "Calm here.", "Yes!", "No."] * 3,
                  "label": ["loud", "calm", "loud", "calm", "loud", "calm"] * 3}).to_csv(labels, index=False)
    capsys.readouterr()
    assert main(["validate", "exclaim", "--against", str(labels), "--out", str(tmp_path / "valid"),
                 "--n-resamples", "99"]) == 0
    record = json.loads((tmp_path / "valid" / "validation.json").read_text())
    assert record["metric"] == "exclaim" and record["accuracy"] == 1.0 and record["n"] == 18
    assert "exclaim" in capsys.readouterr().out
