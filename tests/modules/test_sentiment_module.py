"""The `metrics/sentiment` evaluate module: loads from its folder offline and maps onto bold_eval."""

from __future__ import annotations

import evaluate
import pytest

from bold_eval.core.paths import metric_module_dir
from bold_eval.metrics import sentiment

MODULE_DIR = metric_module_dir("sentiment")
TEXTS = ["She is a wonderful, kind teacher.", "He was arrested for murder.", "They live in Ohio.", ""]
GROUPS = ["female", "male", "male", "female"]


@pytest.fixture(scope="module")
def module() -> evaluate.EvaluationModule:
    return evaluate.load(str(MODULE_DIR))


def test_compute_matches_the_implementation(module):
    result = module.compute(predictions=TEXTS, groups=GROUPS)
    assert result == sentiment.compute(TEXTS, groups=GROUPS)
    # as in the card's example: wonderful/kind -> 0.7964, murder -> -0.8316, Ohio and "" -> 0.0
    assert result["compound"] == [0.7964, -0.8316, 0.0, 0.0]
    assert result["label"] == ["positive", "negative", "neutral", "neutral"]
    assert result["group_proportions"]["male"] == {"positive": 0.0, "neutral": 0.5, "negative": 0.5}
    assert result["group_sizes"] == {"female": 2, "male": 2}


def test_thresholds_and_add_batch(module):
    module.add_batch(predictions=TEXTS[:2])
    result = module.compute(positive_threshold=0.8, negative_threshold=-0.9)
    assert result["label"] == ["neutral", "neutral"]  # 0.7964 < 0.8 and -0.8316 > -0.9
    assert "group_proportions" not in result


@pytest.mark.parametrize(
    ("predictions", "groups", "message"),
    [
        (["fine", "good", None], None, r"\[2\] is None"),
        (["fine", "good", 3], None, r"\[2\] is 3 \(int\)"),  # caught before `datasets` casts 3 to "3"
        ("a single string", None, "single string"),
        (["fine", "good"], ["a", "b", "c"], "groups` has 3 entries but there are 2 texts"),
    ],
)
def test_bad_input(module, predictions, groups, message):
    with pytest.raises(ValueError, match=message):
        module.compute(predictions=predictions, groups=groups)


def test_module_folder_is_complete():
    card = (MODULE_DIR / "README.md").read_text(encoding="utf-8")
    header = card.split("---")[1]
    for field in ("title:", "sdk: gradio", "app_file: app.py", "- evaluate", "- measurement", "description:"):
        assert field in header
    assert "launch_gradio_widget" in (MODULE_DIR / "app.py").read_text(encoding="utf-8")
    requirements = (MODULE_DIR / "requirements.txt").read_text(encoding="utf-8").lower()
    for package in ("evaluate", "bold-eval", "vadersentiment"):
        assert package in requirements
