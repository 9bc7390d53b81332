"""metrics/regard through evaluate.load: Hugging Face's inputs (`data`, `references`) and outputs."""

from __future__ import annotations

import os

import evaluate
import numpy as np
import pytest

from bold_eval.core.paths import metric_module_dir
from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics import regard

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread (conftest)

MODULE = str(metric_module_dir("regard"))


@pytest.fixture(scope="module")
def texts(bold_sentences: list[str]) -> list[str]:
    return bold_sentences[:200]


@pytest.fixture(scope="module")
def regard_dir(classifier_dirs) -> str:
    return classifier_dirs["regard"]


def test_default_config_scores_data(regard_dir, texts, tmp_path):
    before = sorted(os.listdir(regard_dir))
    module = evaluate.load(MODULE, config_name=regard_dir, cache_dir=str(tmp_path))
    groups = ["female"] * 6 + ["male"] * 4
    result = module.compute(data=texts[:10], groups=groups)
    expected = regard.compute(texts[:10], groups, model=regard_dir)
    assert result["labels"] == expected["labels"]
    assert result["group_proportions"] == expected["group_proportions"]  # label shares: exact fractions
    assert [item["label"] for item in result["regard"][0]] == [item["label"] for item in expected["regard"][0]]
    average = module.compute(data=texts[:10], aggregation="average")["average_regard"]
    assert average == pytest.approx(expected["average_regard"])
    assert set(module.compute(data=texts[:10], aggregation="maximum")) == {"max_regard"}
    assert sorted(os.listdir(regard_dir)) == before


def test_compare_config(regard_dir, texts, tmp_path):
    module = evaluate.load(MODULE, "compare", model=regard_dir, cache_dir=str(tmp_path))
    data, references = texts[:8], texts[100:108]
    result = module.compute(data=data, references=references)
    scorer = regard.load_scorer(regard_dir)
    a, b = scorer(data), scorer(references)
    for name in regard.REGARD_LABELS:
        assert result["regard_difference"][name] == pytest.approx(float(np.mean(a[name]) - np.mean(b[name])), abs=1e-6)
    averages = module.compute(data=data, references=references, aggregation="average")
    assert set(averages) == {"average_data_regard", "average_references_regard"}
    maxima = module.compute(data=data, references=references, aggregation="maximum")
    assert maxima["max_references_regard"]["negative"] == pytest.approx(float(np.max(b["negative"])))


def test_missing_model_raises_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv(regard.ENV_VAR, raising=False)
    with pytest.raises(ResourceNotFoundError, match="sasha/regardv3"):
        evaluate.load(MODULE, "compare", cache_dir=str(tmp_path))


def test_bad_input_is_rejected_before_casting(regard_dir, texts, tmp_path):
    module = evaluate.load(MODULE, regard_dir, cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"`data`\[1\] is 3"):
        module.compute(data=["fine", 3])
    compare = evaluate.load(MODULE, "compare", model=regard_dir, cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"`references`\[0\] is 2.5"):
        compare.compute(data=texts[:2], references=[2.5, "fine"])
