"""Section 4.4 psycholinguistic norms: formula, scaling, lookup, closed-class words, thresholds, groups, bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics import psycholinguistic as P
from bold_eval.metrics._words import tokenize_texts
from bold_eval.metrics.lexicon import Lexicon

# Raw ratings (VAD 1-9, BE5 1-5) chosen so the scaled values are round numbers:
#           valence arousal dominance joy anger sadness fear disgust
# good   ->   1.0     0.0     0.5     1.0  0.0   0.0    0.0   0.0
# bad    ->  -1.0     0.5    -0.5     0.0  0.5   1.0    0.25  0.5
# walk   ->   0.25   -0.5     0.0     0.25 0.0   0.0    0.0   0.0
# like   ->   1.0     0.0     0.0     0.0  0.0   0.0    0.0   0.0   (a closed-class word: never used)
RAW = pd.DataFrame(
    {
        "word": ["good", "bad", "walk", "like"],
        "valence": [9, 1, 6, 9],
        "arousal": [5, 7, 3, 5],
        "dominance": [7, 3, 5, 5],
        "joy": [5, 1, 2, 1],
        "anger": [1, 3, 1, 1],
        "sadness": [1, 5, 1, 1],
        "fear": [1, 2, 1, 1],
        "disgust": [1, 3, 1, 1],
    }
)


@pytest.fixture(scope="module")
def scorer() -> P.PsycholinguisticScorer:
    return P.load_scorer(lexicon=RAW)


def test_weighted_average_by_hand(scorer):
    columns = scorer(["good bad", "good walk"])
    # good bad: valence (1*1 + -1*1) / (1 + 1) = 0; arousal (0 + 0.25) / (0 + 0.5) = 0.5;
    # dominance (0.25 - 0.25) / 1 = 0; joy 1/1 = 1; sadness 1/1; fear 0.0625/0.25 = 0.25.
    assert columns["valence"][0] == pytest.approx(0.0)
    assert columns["arousal"][0] == pytest.approx(0.5)
    assert columns["dominance"][0] == pytest.approx(0.0)
    assert columns["joy"][0] == pytest.approx(1.0)
    assert columns["sadness"][0] == pytest.approx(1.0)
    assert columns["fear"][0] == pytest.approx(0.25)
    # good walk: valence (1 + 0.0625) / 1.25 = 0.85; arousal -0.25 / 0.5 = -0.5; joy 0.85.
    assert columns["valence"][1] == pytest.approx(0.85)
    assert columns["arousal"][1] == pytest.approx(-0.5)
    assert columns["joy"][1] == pytest.approx(0.85)
    assert columns["anger"][1] == 0.0


def test_text_norms_matches_formula_on_random_values():
    rng = np.random.default_rng(1)
    values = rng.uniform(-1, 1, size=(7, 3))
    expected = (np.sign(values) * values**2).sum(axis=0) / np.abs(values).sum(axis=0)
    got = P.text_norms(values, np.zeros(7, dtype=int), 1)
    np.testing.assert_allclose(got[0], expected)


def test_closed_class_words_are_left_out_and_coverage(scorer):
    columns = scorer(["Like the walk", "the good cat", "They were there with it"])
    # "like" is in the lexicon (valence 1.0) but is a preposition here: only "walk" counts.
    assert columns["valence"][0] == pytest.approx(0.25)
    assert columns["coverage"][0] == pytest.approx(1.0)  # content words: walk
    assert columns["valence"][1] == pytest.approx(1.0)
    assert columns["coverage"][1] == pytest.approx(0.5)  # content words: good, cat
    # Only closed-class words and an unknown word ("there"): nothing found, coverage 0 of 1.
    assert columns["coverage"][2] == 0.0
    assert all(columns[v][2] == 0.0 for v in ("valence", "arousal", "joy"))


def test_closed_class_list_covers_the_papers_classes():
    for word in ("he", "she", "their", "of", "in", "and", "but", "the", "a", "is", "was", "can"):
        assert P.is_closed_class(word)
    assert P.is_closed_class("he's") and P.is_closed_class("don't")
    assert not P.is_closed_class("murder")


@pytest.mark.parametrize(
    ("word", "lemma"),
    [
        ("walks", "walk"),
        ("walked", "walk"),
        ("walking", "walk"),
        ("loved", "love"),
        ("making", "make"),
        ("stopped", "stop"),
        ("running", "run"),
        ("studies", "study"),
        ("boxes", "box"),
        ("dying", "die"),
        ("nation's", "nation"),
    ],
)
def test_lemma_fallback(word, lemma):
    lexicon = Lexicon(np.array([lemma], dtype=object), np.zeros((1, 8)))
    scorer = P.PsycholinguisticScorer(lexicon)
    assert scorer.word_row(word) == 0
    assert lemma in P.lemma_candidates(word)
    assert P.PsycholinguisticScorer(lexicon, lemma_fallback=False).word_row(word) == -1


def test_surface_form_wins_over_lemma():
    lexicon = Lexicon(np.array(["walk", "walks"], dtype=object), np.zeros((2, 8)))
    assert P.PsycholinguisticScorer(lexicon).word_row("walks") == 1


def test_empty_and_unknown_texts_are_neutral(scorer):
    columns = scorer(["", "zzz qqq", "   "])
    for name in ("valence", "arousal", "dominance", "joy", "anger", "sadness", "fear", "disgust", "coverage"):
        assert np.all(columns[name] == 0.0) and not np.isnan(columns[name]).any()
    assert list(columns["valence_label"]) == ["neutral"] * 3
    assert not columns["is_joy"].any()


def test_thresholds_are_inclusive_and_overridable(scorer):
    texts = ["good walk", "bad", "walk"]  # valence 0.85, -1.0, 0.25; joy 0.85, 0, 0.25
    columns = P.load_scorer(lexicon=RAW, thresholds={"valence_positive": 0.25, "joy": 0.85})(texts)
    assert list(columns["valence_label"]) == ["positive", "negative", "positive"]
    assert list(columns["is_joy"]) == [True, False, False]
    columns = P.load_scorer(lexicon=RAW, thresholds={"valence_positive": 0.9, "valence_negative": -0.99})(texts)
    assert list(columns["valence_label"]) == ["neutral", "negative", "neutral"]


@pytest.mark.parametrize(
    "thresholds",
    [{"valence_negative": 0.1}, {"arousal_positive": 0.0}, {"joy": 0.0}, {"happiness": 0.5}],
)
def test_bad_thresholds_raise(thresholds):
    with pytest.raises(ValueError):
        P.resolve_thresholds(thresholds)


def test_compute_proportions_and_groups():
    result = P.compute(
        ["good walk", "bad", "walk", ""],
        groups=["x", "y", "x", "y"],
        lexicon=RAW,
        thresholds={"valence_positive": 0.5, "valence_negative": -0.5, "sadness": 0.5},
    )
    assert result["valence_label"] == ["positive", "negative", "neutral", "neutral"]
    assert result["proportions"]["valence_positive"] == 0.25
    assert result["proportions"]["valence_negative"] == 0.25
    assert result["proportions"]["sadness"] == 0.25
    assert result["group_proportions"]["x"]["valence_positive"] == 0.5
    assert result["group_proportions"]["y"]["valence_negative"] == 0.5
    assert result["group_proportions"]["y"]["sadness"] == 0.5
    assert result["group_sizes"] == {"x": 2, "y": 2}
    assert result["mean_coverage"] == pytest.approx(0.75)
    assert list(result["proportions"]) == list(P.CATEGORIES)
    for name in P.LABEL_COLUMNS:
        assert len(result[name]) == 4


def test_bad_input_names_the_index():
    with pytest.raises(ValueError, match=r"\[1\]"):
        P.compute(["good", None], lexicon=RAW)
    with pytest.raises(ValueError, match=r"\[2\]"):
        P.compute(["good", "bad", 3], lexicon=RAW)
    with pytest.raises(ValueError, match="3 entries"):
        P.compute(["good", "bad"], groups=["a", "b", "c"], lexicon=RAW)


def test_missing_lexicon_raises_resource_error(tmp_path, monkeypatch):
    monkeypatch.delenv("BOLD_LEXICON_DIR", raising=False)
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BOLD_EVAL_OFFLINE", "1")
    with pytest.raises(ResourceNotFoundError, match="BOLD_LEXICON_DIR"):
        P.load_scorer(lexicon_dir=tmp_path)


def test_distinct_word_cache_gives_same_scores_across_calls(scorer):
    first = scorer(["good walks", "bad"])
    second = scorer(["bad", "good walks"])
    assert first["valence"][0] == second["valence"][1]
    assert tokenize_texts(["good walks"]).n_texts == 1


def test_bold_wikipedia_sentences_score_without_nan(shared_data):
    """Coverage and NaN-freedom on the real Wikipedia sentences. Agreement with the paper's
    Tables 9-11, with thresholds fitted on one half and checked on the other: tests/end_to_end/test_reproduce.py."""
    from bold_eval.data.bold import load_bold

    texts = load_bold("race", data_dir=shared_data / "bold")["wikipedia"]
    result = P.compute(texts)
    assert 0.5 < result["mean_coverage"] < 0.7
    assert not any(math.isnan(value) for value in result["valence"])


# ---------------------------------------------------------------- placeholders


def test_placeholders_score_as_if_absent():
    """Warriner rates "person"; the anonymization placeholder "Person" must not count, even in coverage."""
    from bold_eval.data.anonymize import PLACEHOLDERS

    lexicon = pd.concat([RAW, RAW.iloc[[0]].assign(word="person"), RAW.iloc[[1]].assign(word="xyz")])
    scorer = P.load_scorer(lexicon=lexicon)
    assert set(PLACEHOLDERS) == {"Person", "XYZ"}
    texts = ["Person", "XYZ", "Person's", "Person was a bad Person.", "was a bad", "XYZ's walk", "walk", ""]
    columns = scorer(texts)
    for name in (*P.VARIABLES, "coverage"):
        for index in range(3):  # a placeholder alone scores as the empty text
            assert columns[name][index] == columns[name][-1] == 0.0
        assert columns[name][3] == columns[name][4] and columns[name][5] == columns[name][6]
    # by hand: "bad" alone -> valence -1.0, coverage 1/1 ("was", "a" are closed-class)
    assert columns["valence"][3] == -1.0 and columns["coverage"][3] == 1.0
    # Without the option "Person" is the lexicon word "person" (rated like "good": valence 1.0).
    kept = P.load_scorer(lexicon=lexicon, ignore_placeholders=False)(["Person", "Person was a bad Person."])
    # (1 + 1 - 1) / 3 = 1/3 for "Person bad Person"; coverage 3/3
    assert kept["valence"].tolist() == pytest.approx([1.0, 1 / 3]) and kept["coverage"][0] == 1.0
    # lowercase "person" is the model's own word: scored with the option on
    assert scorer(["a person"])["valence"][0] == 1.0
    assert P.DEFAULTS["ignore_placeholders"] is True
