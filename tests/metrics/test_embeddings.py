"""Hard debiasing (Bolukbasi et al. 2016) and embedding loading/caching for Gender-Max/Wavg."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gensim.models import KeyedVectors

from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics import embeddings

DIM = 12
DEFINITIONAL = [["woman", "man"], ["girl", "boy"], ["she", "he"], ["mother", "father"], ["Mary", "John"]]
EQUALIZE = [["Dad", "Mom"], ["boy", "girl"], ["he", "she"]]
GENDER_SPECIFIC = ["woman", "man", "girl", "boy", "she", "he", "mother", "father", "king", "dad", "mom", "DAD", "Mom"]
NEUTRAL = ["nurse", "engineer", "doctor", "table", "Mary", "John", "MOM"]


@pytest.fixture(scope="module")
def toy_vectors() -> KeyedVectors:
    """Random vectors with a planted gender axis e0: female words +, male words -."""
    rng = np.random.default_rng(1)
    words = sorted({w for pair in DEFINITIONAL + EQUALIZE for w in pair} | set(GENDER_SPECIFIC) | set(NEUTRAL) | {"dad",
                                                                                                                  "DAD",
                                                                                                                  "MOM"})
    female = {"woman", "girl", "she", "mother", "Mary", "mom", "Mom", "MOM"}
    male = {"man", "boy", "he", "father", "John", "dad", "Dad", "DAD", "king"}
    vectors = rng.normal(scale=0.3, size=(len(words), DIM))
    for i, word in enumerate(words):
        vectors[i, 0] += 2.0 if word in female else -2.0 if word in male else 0.5  # neutral words lean "female"
    keyed_vectors = KeyedVectors(vector_size=DIM)
    keyed_vectors.add_vectors(words, (vectors * 3).astype(np.float32))  # not unit length on purpose
    return keyed_vectors


@pytest.fixture(scope="module")
def debiased(toy_vectors: KeyedVectors) -> KeyedVectors:
    return embeddings.hard_debias(toy_vectors, DEFINITIONAL, EQUALIZE, GENDER_SPECIFIC)


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_gender_direction_is_the_first_principal_component(toy_vectors):
    direction = embeddings.gender_direction(toy_vectors, DEFINITIONAL)
    rows = []
    for a, b in DEFINITIONAL:
        va, vb = _unit(toy_vectors[a]), _unit(toy_vectors[b])
        rows += [va - (va + vb) / 2, vb - (va + vb) / 2]
    matrix = np.array(rows)
    eigenvalues, eigenvectors = np.linalg.eigh(matrix.T @ matrix)
    top = eigenvectors[:, np.argmax(eigenvalues)]
    assert abs(direction @ top) == pytest.approx(1.0, abs=1e-9)
    assert abs(direction[0]) > 0.9  # the planted axis
    assert np.linalg.norm(direction) == pytest.approx(1.0)


def test_hard_debias_neutralizes_all_but_gender_specific_words(toy_vectors, debiased):
    direction = embeddings.gender_direction(toy_vectors, DEFINITIONAL)
    equalized = {w for pair in EQUALIZE for a, b in [pair] for f in (str.lower, str.title, str.upper) for w in (f(a),
                                                                                                                f(b))}
    for word in toy_vectors.index_to_key:
        after = debiased[word].astype(np.float64)
        assert np.linalg.norm(after) == pytest.approx(1.0, abs=1e-6)
        if word in equalized:
            continue  # moved by equalization, checked below
        if word not in GENDER_SPECIFIC:
            assert after @ direction == pytest.approx(0.0, abs=1e-6), word  # neutralized ("Mary", "MOM" included)
        elif word not in equalized:
            np.testing.assert_allclose(after, _unit(toy_vectors[word]), atol=1e-6)  # left alone


def test_hard_debias_equalizes_pairs_in_every_case_variant(toy_vectors, debiased):
    direction = embeddings.gender_direction(toy_vectors, DEFINITIONAL)
    # ("Dad", "Mom") also covers dad/mom and DAD/MOM when both are present; boy/girl and he/she too.
    for a, b in [("Dad", "Mom"), ("dad", "mom"), ("DAD", "MOM"), ("boy", "girl"), ("he", "she")]:
        va, vb = debiased[a].astype(np.float64), debiased[b].astype(np.float64)
        assert va @ direction == pytest.approx(-(vb @ direction), abs=1e-6)
        np.testing.assert_allclose(va - (va @ direction) * direction, vb - (vb @ direction) * direction, atol=1e-6)
        # Each word stays on its own side of the gender direction.
        before = (_unit(toy_vectors[a]) - _unit(toy_vectors[b])) @ direction
        assert np.sign(va @ direction - vb @ direction) == np.sign(before)
    # Equalized pairs are equally far from every neutral word.
    for word in ("nurse", "engineer"):
        assert debiased[word] @ debiased["he"] == pytest.approx(debiased[word] @ debiased["she"], abs=1e-6)


def test_hard_debias_returns_a_new_object(toy_vectors, debiased):
    assert debiased is not toy_vectors
    assert not np.shares_memory(debiased.vectors, toy_vectors.vectors)
    assert np.linalg.norm(toy_vectors["nurse"]) > 1.5  # the input is untouched
    assert debiased.index_to_key == toy_vectors.index_to_key


def test_gender_direction_needs_a_definitional_pair(toy_vectors):
    with pytest.raises(ValueError, match="definitional pairs"):
        embeddings.gender_direction(toy_vectors, [["xx", "yy"]])


def test_debiaswe_lists_from_the_shared_copy(shared_data):
    lists = embeddings.load_debiaswe_lists(shared_data / "debiaswe")
    assert len(lists["definitional"]) == 10 and ["she", "he"] in lists["definitional"]
    assert ["he", "she"] in lists["equalize"] and "himself" in lists["gender_specific"]
    for remote in embeddings.DEBIASWE_FILES.values():
        assert remote.url.startswith("https://raw.githubusercontent.com/tolga-b/debiaswe/6bb03ee")


def test_cache_round_trip_is_memory_mapped_and_pickle_free(tmp_path, debiased):
    folder = embeddings.save_cache(debiased, tmp_path / "cache", {"hard_debiased": True})
    assert sorted(p.name for p in folder.iterdir()) == ["meta.json", "vectors.npy", "vocab.txt"]
    loaded = embeddings.load_cache(folder)
    assert isinstance(loaded.vectors, np.memmap)
    assert loaded.index_to_key == debiased.index_to_key
    np.testing.assert_array_equal(loaded["nurse"], debiased["nurse"])
    assert json.loads((folder / "meta.json").read_text()) == {"hard_debiased": True}
    with pytest.raises(ValueError, match="line break"):
        bad = KeyedVectors(2)
        bad.add_vectors(["a\nb"], np.ones((1, 2), dtype=np.float32))
        embeddings.save_cache(bad, tmp_path / "bad")


@pytest.mark.parametrize("binary", [False, True])
def test_load_embedding_from_word2vec_files_and_env(tmp_path, monkeypatch, toy_vectors, binary):
    path = tmp_path / ("toy.bin" if binary else "toy.txt")
    toy_vectors.save_word2vec_format(str(path), binary=binary)
    loaded = embeddings.load_embedding(path)
    np.testing.assert_allclose(loaded["nurse"], toy_vectors["nurse"], rtol=1e-5)
    monkeypatch.setenv("BOLD_WORD2VEC", str(path))
    assert embeddings.load_embedding().index_to_key == toy_vectors.index_to_key


def test_debiasing_a_file_is_cached(tmp_path, monkeypatch, toy_vectors, debiased, shared_data):
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "toy.txt"
    toy_vectors.save_word2vec_format(str(path), binary=False)
    lists_dir = tmp_path / "lists"
    lists_dir.mkdir()
    for name, value in [("definitional_pairs.json", DEFINITIONAL), ("equalize_pairs.json", EQUALIZE),
                        ("gender_specific_full.json", GENDER_SPECIFIC)]:
        (lists_dir / name).write_text(json.dumps(value))
    first = embeddings.load_embedding(path, debias=True, debiaswe_dir=lists_dir)
    cached = list((tmp_path / "cache" / "embeddings").iterdir())
    assert len(cached) == 1 and embeddings.is_cache_dir(cached[0])
    np.testing.assert_allclose(first["nurse"], debiased["nurse"], atol=1e-5)
    again = embeddings.load_embedding(path, debias=True, debiaswe_dir=lists_dir)
    assert isinstance(again.vectors, np.memmap)
    # A cache folder passed directly is used as stored.
    assert embeddings.load_embedding(cached[0]).index_to_key == toy_vectors.index_to_key


def test_default_embedding_comes_from_the_cache(tmp_path, monkeypatch, debiased):
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path))
    monkeypatch.setenv("BOLD_EVAL_OFFLINE", "1")
    monkeypatch.delenv("BOLD_WORD2VEC", raising=False)
    with pytest.raises(ResourceNotFoundError) as error:
        embeddings.load_embedding()
    assert "word2vec-google-news-300" in str(error.value) and "BOLD_WORD2VEC" in str(error.value)
    embeddings.save_cache(debiased, tmp_path / "embeddings" / embeddings.DEFAULT_CACHE_NAME)
    assert embeddings.load_embedding().index_to_key == debiased.index_to_key


def test_explicit_missing_embedding_never_falls_back(tmp_path, monkeypatch):
    monkeypatch.setenv("BOLD_WORD2VEC", str(tmp_path / "missing.bin"))
    with pytest.raises(ResourceNotFoundError, match="missing.bin"):
        embeddings.load_embedding()
    (tmp_path / "folder").mkdir()
    with pytest.raises(ResourceNotFoundError, match="without vectors.npy"):
        embeddings.load_embedding(tmp_path / "folder")
