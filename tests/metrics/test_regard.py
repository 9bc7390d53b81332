"""Regard (Section 4.3): per-text class probabilities, labels, proportions, compare mode."""

from __future__ import annotations

import numpy as np
import pytest

from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics import regard

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread (conftest)


@pytest.fixture(scope="module")
def texts(bold_sentences: list[str]) -> list[str]:
    return bold_sentences[:300]


@pytest.fixture(scope="module")
def regard_dir(classifier_dirs) -> str:
    return classifier_dirs["regard"]


@pytest.fixture(scope="module")
def scorer(regard_dir):
    return regard.load_scorer(regard_dir)


def test_columns_follow_the_team_contract(scorer, texts):
    columns = scorer(texts[:60])
    assert list(columns) == ["positive", "negative", "neutral", "other", "label"]
    assert scorer.label_columns == {"label": ("positive", "negative", "neutral", "other")}
    matrix = np.stack([columns[name] for name in regard.REGARD_LABELS], axis=1)
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-5)
    expected = np.array(regard.REGARD_LABELS)[matrix.argmax(axis=1)]
    np.testing.assert_array_equal(columns["label"], expected)
    assert len(set(columns["label"])) >= 2  # the tiny model gives varied labels


def test_proportions_per_group(scorer, texts):
    sample = texts[:40]
    groups = ["female"] * 25 + ["male"] * 15
    result = regard.compute(sample, groups, classifier=scorer.classifier)
    labels = scorer(sample)["label"]
    assert result["labels"] == labels.tolist()
    for name in regard.REGARD_LABELS:
        assert result["proportions"][name] == pytest.approx(np.mean(labels == name))
        assert result["group_proportions"]["female"][name] == pytest.approx(np.mean(labels[:25] == name))
        assert result["group_proportions"]["male"][name] == pytest.approx(np.mean(labels[25:] == name))
    assert result["group_sizes"] == {"female": 25, "male": 15}
    assert sum(result["proportions"].values()) == pytest.approx(1.0)
    assert result["group_average_regard"]["male"]["negative"] == pytest.approx(
        float(np.mean(scorer(sample[25:])["negative"]))
    )


def test_per_text_output_matches_hugging_face_format(scorer, texts):
    result = regard.compute(texts[:5], classifier=scorer.classifier)
    columns = scorer(texts[:5])
    for index, ranking in enumerate(result["regard"]):
        assert {item["label"] for item in ranking} == set(regard.REGARD_LABELS)
        scores = [item["score"] for item in ranking]
        assert scores == sorted(scores, reverse=True)
        for item in ranking:
            assert item["score"] == pytest.approx(float(columns[item["label"]][index]))


def test_compare_mode_is_the_difference_of_means(scorer, texts):
    data, references = texts[:12], texts[50:70]
    result = regard.compute(data, references=references, classifier=scorer.classifier)
    data_cols, ref_cols = scorer(data), scorer(references)
    for name in regard.REGARD_LABELS:
        expected = float(np.mean(data_cols[name]) - np.mean(ref_cols[name]))
        assert result["regard_difference"][name] == pytest.approx(expected, abs=1e-5)
    average = regard.compute(data, references=references, aggregation="average", classifier=scorer.classifier)
    assert average["average_data_regard"]["other"] == pytest.approx(float(np.mean(data_cols["other"])), abs=1e-5)
    assert average["average_references_regard"]["other"] == pytest.approx(float(np.mean(ref_cols["other"])), abs=1e-5)
    maximum = regard.compute(data, references=references, aggregation="maximum", classifier=scorer.classifier)
    assert maximum["max_data_regard"]["positive"] == pytest.approx(float(np.max(data_cols["positive"])), abs=1e-5)
    assert maximum["max_references_regard"]["neutral"] == pytest.approx(float(np.max(ref_cols["neutral"])), abs=1e-5)


def test_single_list_aggregations_by_hand():
    columns = {"positive": np.array([0.1, 0.5]), "negative": np.array([0.7, 0.3])}
    assert regard.average_regard(columns, ["positive", "negative"]) == pytest.approx({"positive": 0.3, "negative": 0.5})
    assert regard.max_regard(columns, ["positive", "negative"]) == pytest.approx({"positive": 0.5, "negative": 0.7})


def test_empty_long_and_bad_inputs(scorer, texts):
    columns = scorer(["", " ".join(texts[:60])])
    assert columns["label"].shape == (2,)
    with pytest.raises(ValueError, match=r"predictions`\[0\] is 3"):
        regard.compute([3], classifier=scorer.classifier)
    with pytest.raises(ValueError, match=r"references`\[1\] is None"):
        regard.compute(["a"], references=["b", None], classifier=scorer.classifier)
    with pytest.raises(ValueError, match="1 entries but there are 2 texts"):
        regard.compute(["a", "b"], ["female"], classifier=scorer.classifier)
    with pytest.raises(ValueError, match="aggregation"):
        regard.compute(["a"], classifier=scorer.classifier, aggregation="median")
    with pytest.raises(ValueError, match="at least one text"):
        regard.compute([], references=["b"], classifier=scorer.classifier)


def test_missing_model_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv(regard.ENV_VAR, raising=False)
    with pytest.raises(ResourceNotFoundError) as caught:
        regard.load_scorer()
    message = str(caught.value)
    assert "sasha/regardv3" in message and "BOLD_REGARD_MODEL" in message and "metrics/regard" in message
