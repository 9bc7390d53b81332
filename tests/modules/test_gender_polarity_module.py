"""The evaluate module `metrics/gender_polarity`, loaded offline from its folder."""

from __future__ import annotations

import math

import evaluate
import numpy as np
import pytest
from gensim.models import KeyedVectors

from bold_eval.core.paths import metric_module_dir


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(metric_module_dir("gender_polarity")))


@pytest.fixture(scope="module")
def embedding_file(tmp_path_factory):
    """A tiny word2vec text file: g = she - he = (2, 0); b(queen) = 0.6, b(king) = -0.8, b(table) = 0."""
    keyed_vectors = KeyedVectors(vector_size=2)
    words = ["he", "she", "queen", "king", "table"]
    keyed_vectors.add_vectors(words, np.array([[-1, 1], [1, 1], [3, 4], [-4, 3], [0, 1]], dtype=np.float32))
    path = tmp_path_factory.mktemp("w2v") / "tiny.txt"
    keyed_vectors.save_word2vec_format(str(path), binary=False)
    return path


def test_unigram_offline_without_embedding(module, monkeypatch, tmp_path):
    monkeypatch.delenv("BOLD_WORD2VEC", raising=False)
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path))
    result = module.compute(
        predictions=["He is a nurse.", "She studied engineering and her thesis won a prize.", "The lab opened."],
        groups=["nursing", "engineering", "engineering"],
        methods=["unigram"],
    )
    assert result["unigram_label"] == ["male", "female", "neutral"]
    assert result["female_tokens"] == [0, 2, 0]
    assert result["group_proportions"]["unigram"]["engineering"] == {"male": 0.0, "female": 0.5, "neutral": 0.5}
    assert set(result["proportions"]) == {"unigram"}


def test_embedding_methods_with_a_word2vec_file(module, embedding_file):
    result = module.compute(predictions=["the queen and the king", "queen table", "", "he"],
                            embedding=str(embedding_file))
    # Max: -0.8 (king); Wavg: (0.36 - 0.64) / 1.4 = -0.2.
    assert result["max"] == pytest.approx([-0.8, 0.6, 0.0, -1 / math.sqrt(2)])
    assert result["wavg"] == pytest.approx([-0.2, 0.6, 0.0, -1 / math.sqrt(2)])
    assert result["max_label"] == ["male", "female", "neutral", "male"]
    assert result["wavg_label"] == ["neutral", "female", "neutral", "male"]
    assert result["proportions"]["max"] == pytest.approx({"male": 0.5, "female": 0.25, "neutral": 0.25})


def test_embedding_from_env_and_thresholds(module, embedding_file, monkeypatch):
    monkeypatch.setenv("BOLD_WORD2VEC", str(embedding_file))
    result = module.compute(predictions=["queen"], methods=["wavg"], female_threshold=0.7)
    assert result["wavg_label"] == ["neutral"]
    assert "max" not in result and "unigram_label" not in result


def test_missing_embedding_is_a_clear_error(module, monkeypatch, tmp_path):
    from bold_eval.core.resources import ResourceNotFoundError

    monkeypatch.delenv("BOLD_WORD2VEC", raising=False)
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path))
    with pytest.raises(ResourceNotFoundError, match="BOLD_WORD2VEC"):
        module.compute(predictions=["she"], methods=["max"])


def test_bad_input(module):
    with pytest.raises(ValueError, match=r"\[1\]"):
        module.compute(predictions=["he", None], methods=["unigram"])
    with pytest.raises(ValueError, match=r"\[0\]"):
        module.compute(predictions=[3, "he"], methods=["unigram"])
    with pytest.raises(ValueError, match="1 entries but there are 2 texts"):
        module.compute(predictions=["he", "she"], groups=["a"], methods=["unigram"])
