"""The linear-time VADER port (`bold_eval.metrics._vader`) against vaderSentiment itself.

Identity is checked on the repr of every float (so -0.0, rounding and types all count) on every
BOLD Wikipedia sentence, on long texts, and on texts dense in VADER's rule words ("but", "no",
"least", "kind of", boosters, ALL CAPS, idioms, emojis). The scaling test fails for
vaderSentiment, whose time per character grows with the text.
"""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from vaderSentiment.vaderSentiment import BOOSTER_DICT, NEGATE, SPECIAL_CASES, SentimentIntensityAnalyzer

from bold_eval.metrics import sentiment
from bold_eval.metrics._vader import LinearVader
from bold_eval.testing.models import bold_wikipedia_sentences

VADER = SentimentIntensityAnalyzer()
PORT = LinearVader(VADER)

# Words that trigger VADER's rules, plus rated words with repeated valences ("but" rule quirks).
RULE_WORDS = sorted(
    {"but", "BUT", "no", "No", "not", "never", "so", "this", "without", "doubt", "least", "at", "very", "kind",
     "of", "sort", "or", "nor", "isn't", "the", "shit", "bomb", "bad", "ass", "kiss", "death", "to", "die", "for",
     "beating", "heart", "yeah", "right", "bus", "stop", "good", "GOOD", "Good", "great", "love", "hate", "okay",
     ":)", ":(", ":D", "!", "?", "!!!", "??", "word", "plain", "Person", "XYZ", "Person's", "💘", "😁", "☺"}
    | set(list(BOOSTER_DICT)[:25])
    | set(NEGATE[:15])
    | {word for case in SPECIAL_CASES for word in case.split()}
)


def same(expected: dict, actual: dict) -> bool:
    """Equal keys in the same order and bit-identical values (repr tells -0.0 from 0.0)."""
    return list(expected) == list(actual) and all(repr(expected[key]) == repr(actual[key]) for key in expected)


def rule_dense_text(rng: random.Random, n_words: int) -> str:
    words = []
    for _ in range(n_words):
        word = rng.choice(RULE_WORDS)
        draw = rng.random()
        if draw < 0.1:
            word = word.upper()
        elif draw < 0.15:
            word += rng.choice([",", ".", "!", "?", "...", ":"])
        words.append(word)
    return "".join(word + rng.choice([" ", "  ", "\n", " "]) for word in words)


@pytest.mark.slow
def test_identical_to_vader_on_every_bold_wikipedia_sentence(bold_dir):
    texts = bold_wikipedia_sentences(data_dir=bold_dir)
    assert len(texts) == 23_679
    mismatches = [text for text in texts if not same(VADER.polarity_scores(text), PORT.polarity_scores(text))]
    assert mismatches == []


@pytest.mark.slow
def test_identical_to_vader_on_long_texts(bold_dir):
    rng = random.Random(0)
    sentences = bold_wikipedia_sentences(5000, data_dir=bold_dir)
    bold_40k = " ".join(sentences)[:40_000]  # about 300 sentences in one text
    for text in [bold_40k, rule_dense_text(rng, 3_000)]:  # rule-dense: ~20k characters
        assert same(VADER.polarity_scores(text), PORT.polarity_scores(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(RULE_WORDS), max_size=40), st.lists(st.sampled_from([" ", "  ", "\n", "\t", ""]),
                                                                    min_size=40, max_size=40))
def test_identical_to_vader_on_rule_dense_texts(words, separators):
    text = "".join(word + separator for word, separator in zip(words, separators, strict=False))
    assert same(VADER.polarity_scores(text), PORT.polarity_scores(text))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_identical_to_vader_on_arbitrary_unicode(text):
    assert same(VADER.polarity_scores(text), PORT.polarity_scores(text))


def _seconds(score, text: str, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        score(text)
        best = min(best, time.perf_counter() - start)
    return best


def test_time_per_character_does_not_grow_with_length(bold_dir):
    """10x the text costs at most ~10x the time (quadratic vaderSentiment: ~8x per character here)."""
    base = " ".join(bold_wikipedia_sentences(500, data_dir=bold_dir))[:10_000]
    scorer = sentiment.load_scorer()
    short = _seconds(lambda text: scorer([text]), base)
    long = _seconds(lambda text: scorer([text]), " ".join([base] * 10))
    assert long / 10 < 3 * short, f"per character: {long / 10:.2e} s for 10x vs {short:.2e} s"


def test_scorer_uses_the_port_and_keeps_vader_scores_without_placeholders():
    texts = ["VADER is VERY SMART, uber handsome, and FRIGGIN FUNNY!!!", "Not bad at all", "good but bad 😁", ""]
    columns = sentiment.load_scorer(ignore_placeholders=False)(texts)
    assert columns["compound"].tolist() == [VADER.polarity_scores(text)["compound"] for text in texts]
    # With placeholders ignored (the default), texts without them score exactly as VADER scores them.
    assert sentiment.load_scorer()(texts)["neu"].tolist() == columns["neu"].tolist()


@pytest.mark.parametrize("drop", [(), ("Person",)])
def test_drop_removes_words_before_every_rule(drop):
    # "Person" is not all caps, so with it "VERY GOOD" is an all-caps emphasis; without it, not.
    with_placeholder = PORT.polarity_scores("Person VERY GOOD", drop=drop)
    without = VADER.polarity_scores("VERY GOOD")
    assert same(with_placeholder, without) == bool(drop)
