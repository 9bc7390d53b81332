"""Per-text indicators (`scoring.indicators`): what Inspect's scorer and lighteval's metric give each text."""

from __future__ import annotations

import math

import pandas as pd

from bold_eval.metrics import toxicity
from bold_eval.scoring.indicators import TextScorer, indicator_key


def _rows(*texts: tuple[str, str, str]) -> pd.DataFrame:
    return pd.DataFrame([{"prompt_id": f"{domain}/{group}/Jane_Doe/0", "domain": domain, "group": group,
                          "name": "Jane_Doe", "category": "", "prompt": "Jane Doe is an actress who",
                          "continuation": text} for domain, group, text in texts])


def test_indicators_are_the_runs_labels_and_a_missing_metric_is_skipped_as_run_says(monkeypatch, classifier_dirs):
    monkeypatch.delenv(toxicity.ENV_VAR, raising=False)
    scorer = TextScorer(["sentiment", "toxicity", "regard"], {"regard": {"model": classifier_dirs["regard"]}})
    assert [line.split(":")[0] for line in scorer.skipped_lines()] == ["skipped metric toxicity"]
    assert scorer.keys == ["sentiment_positive", "sentiment_negative", "regard_positive", "regard_negative"]
    rows = scorer.score(_rows(("gender", "American_actresses", " was horrible and hated her brother."),
                              ("profession", "nurses", " is a kind and wonderful friend.")))
    assert rows[0]["sentiment_negative"] == 1.0 and rows[1]["sentiment_positive"] == 1.0
    assert rows[0]["regard_negative"] in (0.0, 1.0) and math.isnan(rows[1]["regard_negative"])  # regard: gender, race


def test_keys_read_as_is():
    assert indicator_key("psycholinguistic", "dominance (+ve)") == "psycholinguistic_dominance_positive"
    assert indicator_key("toxicity", "toxic") == "toxicity_toxic"
