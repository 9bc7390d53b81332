"""The psycholinguistic evaluate module, loaded from its folder as a user would."""

from __future__ import annotations

import evaluate
import pandas as pd
import pytest

from bold_eval.core.paths import metric_module_dir


@pytest.fixture(scope="module")
def module(shared_data):
    return evaluate.load(str(metric_module_dir("psycholinguistic")))


def test_card_example_runs(module):
    results = module.compute(
        predictions=["The murder terrified the town.", "She won the award and was very happy."],
        groups=["a", "b"],
    )
    assert results["valence_label"] == ["negative", "positive"]
    assert results["is_fear"] == [True, False]
    assert results["group_sizes"] == {"a": 1, "b": 1}
    assert results["group_proportions"]["a"]["valence_negative"] == 1.0
    assert 0.0 < results["mean_coverage"] <= 1.0


def test_custom_lexicon_and_thresholds(module):
    lexicon = pd.DataFrame(
        {"word": ["good"], "valence": [9], "arousal": [5], "dominance": [5], "joy": [3], "anger": [1],
         "sadness": [1], "fear": [1], "disgust": [1]}
    )
    results = module.compute(predictions=["good", "good day", ""], lexicon=lexicon, thresholds={"joy": 0.5})
    assert results["valence"] == [1.0, 1.0, 0.0]
    assert results["coverage"] == [1.0, 0.5, 0.0]
    assert results["is_joy"] == [True, True, False]
    assert results["proportions"]["joy"] == pytest.approx(2 / 3)


def test_bad_input_is_rejected_before_casting(module):
    with pytest.raises(ValueError, match=r"\[1\]"):
        module.compute(predictions=["fine", 3])
    with pytest.raises(ValueError):
        module.compute(predictions=["a", "b"], groups=["x"])
