"""The Warriner VAD + BE5 lexicon, custom lexicon tables, Section 4.4 scaling, and lexicon extension."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics import psycholinguistic
from bold_eval.metrics.lexicon import (
    VARIABLES,
    Lexicon,
    load_lexicon,
    load_warriner,
    scale_norms,
    unscale_norms,
)
from bold_eval.metrics.lexicon_extension import extend_lexicon


def test_scaling_maps_neutral_to_zero():
    # VAD: 1 -> -1, 5 -> 0, 9 -> 1; BE5: 1 -> 0, 3 -> 0.5, 5 -> 1 (Section 4.4).
    raw = np.array([[1, 5, 9, 1, 3, 5, 2, 4]], dtype=float)
    np.testing.assert_allclose(scale_norms(raw), [[-1, 0, 1, 0, 0.5, 1, 0.25, 0.75]])
    np.testing.assert_allclose(unscale_norms(scale_norms(raw)), raw)


def test_warriner_join_from_shared_copy(shared_data):
    frame = load_warriner(shared_data / "lexicons")
    assert list(frame.columns) == ["word", *VARIABLES]
    assert len(frame) == 13915
    aardvark = frame.set_index("word").loc["aardvark"]
    assert aardvark["valence"] == pytest.approx(6.26)
    assert aardvark["joy"] == pytest.approx(2.8276, abs=1e-4)
    lexicon = load_lexicon(None, shared_data / "lexicons")
    assert len(lexicon) == 13905  # 10 words differ only in case; the first row wins
    row = lexicon.values[lexicon.index["aardvark"]]
    assert row[0] == pytest.approx((6.26 - 5) / 4)
    assert row[3] == pytest.approx((2.8276 - 1) / 4, abs=1e-4)
    # EmoMap's predicted BE5 ratings dip below 1 for a few words; they are clipped to 0.
    assert lexicon.values.min(axis=0)[3:].min() == 0.0
    assert lexicon.values.min() >= -1.0 and lexicon.values.max() <= 1.0


def test_env_var_is_used(shared_data, monkeypatch):
    monkeypatch.setenv("BOLD_LEXICON_DIR", str(shared_data / "lexicons"))
    assert "good" in load_lexicon()


def test_missing_files_raise_resource_error(tmp_path, monkeypatch):
    monkeypatch.delenv("BOLD_LEXICON_DIR", raising=False)
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BOLD_EVAL_OFFLINE", "1")
    with pytest.raises(ResourceNotFoundError) as error:
        load_warriner(tmp_path)
    message = str(error.value)
    assert "Ratings_Warriner_et_al.csv" in message and "lexicon_dir" in message and "BOLD_LEXICON_DIR" in message
    with pytest.raises(ResourceNotFoundError):
        load_lexicon(tmp_path / "no_such_file.csv")


MEMOLON_STYLE = pd.DataFrame(
    {
        "word": ["Happy", "sad"],
        "valence": [8.0, 2.0],
        "arousal": [6.0, 4.0],
        "dominance": [6.0, 3.0],
        "joy": [4.5, 1.2],
        "anger": [1.1, 2.0],
        "sadness": [1.0, 4.2],
        "fear": [1.0, 2.5],
        "disgust": [1.0, 1.5],
    }
)


def test_memolon_style_table_and_file_paths(tmp_path):
    lexicon = load_lexicon(MEMOLON_STYLE)
    assert list(lexicon.words) == ["happy", "sad"]  # lowercased
    np.testing.assert_allclose(lexicon.values[0], [0.75, 0.25, 0.25, 0.875, 0.025, 0, 0, 0])
    tsv = tmp_path / "memolon.tsv"
    MEMOLON_STYLE.to_csv(tsv, sep="\t", index=False)
    np.testing.assert_allclose(load_lexicon(tsv).values, lexicon.values)
    # Warriner/EmoMap-style names are accepted too.
    renamed = MEMOLON_STYLE.rename(
        columns={"word": "Word", "valence": "V.Mean.Sum", "arousal": "A.Mean.Sum", "dominance": "D.Mean.Sum",
                 "joy": "Joy"}
    )
    csv = tmp_path / "warriner_style.csv"
    renamed.to_csv(csv, index=False)
    np.testing.assert_allclose(load_lexicon(csv).values, lexicon.values)


def test_scaled_table_round_trip():
    lexicon = load_lexicon(MEMOLON_STYLE)
    again = Lexicon.from_frame(lexicon.to_frame(scaled=True), scaled=True)
    np.testing.assert_allclose(again.values, lexicon.values)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns=["fear"]), "fear"),
        (lambda f: f.assign(valence=[8.0, None]), "no valence rating"),
        (lambda f: f.assign(valence=[8.0, "x"]), "numbers"),
        (lambda f: f.assign(joy=[4.5, 40.0]), "far outside"),
        (lambda f: f.assign(word=["happy", ""]), "no word"),
    ],
)
def test_bad_tables_raise(change, message):
    with pytest.raises(ValueError, match=message):
        load_lexicon(change(MEMOLON_STYLE.copy()))


def letters(i: int) -> str:
    """A made-up word for number i ("xaa", "xab", ...): the tokenizer keeps letters only."""
    return "x" + "".join("abcdefghijklmnopqrstuvwxyz"[(i // 26**k) % 26] for k in (2, 1, 0))


def synthetic_lexicon_and_embedding(n_known: int = 400, n_new: int = 60, dim: int = 16, seed: int = 0):
    """Vectors whose norms are a linear function of them: the network should recover it almost exactly."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n_known + n_new, dim)).astype(np.float32)
    weights = rng.normal(size=(dim, 8)) * 0.25
    linear = vectors @ weights
    raw = np.hstack([np.clip(5 + linear[:, :3], 1, 9), np.clip(3 + 0.5 * linear[:, 3:], 1, 5)])
    words = [letters(i) for i in range(n_known + n_new)]
    table = pd.DataFrame(raw[:n_known], columns=list(VARIABLES))
    table.insert(0, "word", words[:n_known])
    return table, dict(zip(words, vectors, strict=True)), raw, words


@pytest.fixture
def one_thread():
    """Tiny networks train fastest on one thread, and the CI machine is shared."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_extend_lexicon_recovers_a_linear_map(one_thread):
    table, embedding, raw, words = synthetic_lexicon_and_embedding()
    extended, report = extend_lexicon(table, embedding, epochs=20, seed=0)
    assert report.n_test == 40 and report.n_train == 360 and report.n_predicted == 60
    assert min(report.pearson_r.values()) > 0.9, report.pearson_r
    assert list(extended["source"].value_counts().sort_index()) == [400, 60]
    predicted = extended[extended["source"] == "predicted"].set_index("word")
    truth = pd.DataFrame(raw[400:], index=words[400:], columns=list(VARIABLES))
    r = np.corrcoef(predicted.loc[truth.index, "valence"], truth["valence"])[0, 1]
    assert r > 0.9
    # Rated words keep their ratings.
    np.testing.assert_allclose(extended.iloc[:400][list(VARIABLES)].to_numpy(), table[list(VARIABLES)].to_numpy())
    # The extended table is a lexicon the metric accepts.
    columns = psycholinguistic.load_scorer(lexicon=extended)([f"{letters(401)} {letters(402)} the"])
    assert columns["coverage"][0] == 1.0


def test_extend_lexicon_vocabulary_and_seed(one_thread):
    table, embedding, _, _ = synthetic_lexicon_and_embedding(n_known=200, n_new=20)
    first, report_a = extend_lexicon(table, embedding, vocabulary=[letters(200), letters(201), "unknown"], epochs=5,
                                     seed=3)
    second, report_b = extend_lexicon(table, embedding, vocabulary=[letters(200), letters(201), "unknown"], epochs=5,
                                      seed=3)
    assert report_a.n_predicted == 2
    assert report_a.pearson_r == report_b.pearson_r
    pd.testing.assert_frame_equal(first, second)


def test_extend_lexicon_accepts_keyed_vectors():
    from gensim.models import KeyedVectors

    table, embedding, _, _ = synthetic_lexicon_and_embedding(n_known=100, n_new=10)
    keyed = KeyedVectors(vector_size=16)
    keyed.add_vectors(list(embedding), np.stack(list(embedding.values())))
    extended, report = extend_lexicon(table, keyed, epochs=2)
    assert report.n_predicted == 10 and len(extended) == 110


def test_extend_lexicon_needs_overlap():
    with pytest.raises(ValueError, match="rated words have a vector"):
        extend_lexicon(MEMOLON_STYLE, {"other": np.zeros(3)})
