"""metrics/toxicity through evaluate.load, with a tiny toxic-bert-shaped model as config name."""

from __future__ import annotations

import os

import evaluate
import numpy as np
import pytest

from bold_eval.core.paths import metric_module_dir
from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics import toxicity
from bold_eval.testing.models import TOXIC_BERT_LABELS

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread (conftest)

MODULE = str(metric_module_dir("toxicity"))


@pytest.fixture(scope="module")
def texts(bold_sentences: list[str]) -> list[str]:
    return bold_sentences[:200]


@pytest.fixture(scope="module")
def model_dirs(classifier_dirs) -> dict[str, str]:
    return classifier_dirs


def test_config_name_is_the_model(model_dirs, texts, tmp_path):
    before = sorted(os.listdir(model_dirs["toxicity"]))
    module = evaluate.load(MODULE, config_name=model_dirs["toxicity"], cache_dir=str(tmp_path))
    groups = ["a", "b"] * 10
    result = module.compute(predictions=texts[:20], groups=groups)
    expected = toxicity.compute(texts[:20], groups, model=model_dirs["toxicity"])
    np.testing.assert_allclose(result["toxicity"], expected["toxicity"], atol=1e-6)
    assert result["group_toxic_ratio"] == pytest.approx(expected["group_toxic_ratio"])
    assert list(result["label_scores"]) == list(TOXIC_BERT_LABELS)
    assert module.compute(predictions=texts[:20], aggregation="ratio") == {
        "toxicity_ratio": pytest.approx(expected["toxic_ratio"])
    }
    assert sorted(os.listdir(model_dirs["toxicity"])) == before  # evaluate's cache stays out of the model
    # k = 4 samples per prompt: RealToxicityPrompts' worst cases, as the library computes them
    ids = [i // 4 for i in range(20)]
    worst = module.compute(predictions=texts[:20], groups=[f"g{i // 8}" for i in range(20)], prompt_ids=ids)
    expected = toxicity.compute(texts[:20], [f"g{i // 8}" for i in range(20)], prompt_ids=ids,
                                model=model_dirs["toxicity"])["worst_case"]
    assert worst["worst_case"]["expected_max_toxicity"] == pytest.approx(expected["expected_max_toxicity"])
    assert worst["worst_case"]["samples_per_prompt"] == [4, 4] and worst["worst_case"]["prompts"] == 5


def test_single_label_model_with_toxic_label(model_dirs, texts, tmp_path):
    module = evaluate.load(MODULE, model_dirs["hate"], cache_dir=str(tmp_path))
    result = module.compute(predictions=texts[:8], toxic_label="hate")
    np.testing.assert_allclose(result["toxicity"], result["label_scores"]["hate"])
    with pytest.raises(ValueError, match=r"\['nothate', 'hate'\]"):
        module.compute(predictions=texts[:8], toxic_label="toxic")


def test_model_keyword_and_environment_variable(model_dirs, texts, tmp_path, monkeypatch):
    by_keyword = evaluate.load(MODULE, model=model_dirs["toxicity"], cache_dir=str(tmp_path))
    monkeypatch.setenv(toxicity.ENV_VAR, model_dirs["toxicity"])
    by_env = evaluate.load(MODULE, cache_dir=str(tmp_path))
    assert by_keyword.compute(predictions=texts[:4]) == by_env.compute(predictions=texts[:4])


def test_missing_model_raises_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv(toxicity.ENV_VAR, raising=False)
    with pytest.raises(ResourceNotFoundError, match="unitary/toxic-bert"):
        evaluate.load(MODULE, cache_dir=str(tmp_path))


def test_bad_input_is_rejected_before_casting(model_dirs, tmp_path):
    module = evaluate.load(MODULE, model_dirs["toxicity"], cache_dir=str(tmp_path))
    # Without the early check, `datasets` would cast 3 to "3" and score it.
    with pytest.raises(ValueError, match=r"`predictions`\[1\] is 3"):
        module.compute(predictions=["fine", 3])
    with pytest.raises(ValueError, match=r"`predictions`\[0\] is None"):
        module.compute(predictions=[None])
