"""Property-based fuzzing (hypothesis) of the five metrics' `compute` and their evaluate modules.

Properties, for arbitrary Unicode texts from empty to large and for inputs of mixed types:

- every per-text output has the input's length, or a ValueError/TypeError names the bad input
  (for a bad item, its index);
- a text scores the same alone as inside any batch (within 1e-4 for the classifiers, whose
  dynamically padded batches change the float rounding; exactly for the lexicon metrics);
- time per character does not grow with the length: 10 copies of a text take at most about 10
  times as long as one (a generous factor; superlinear code such as vaderSentiment's own
  scoring takes ~100 times here).

Toxicity and regard run the tiny random classifiers of conftest's `classifier_dirs`.

Profiles: the default `ci` profile is fast (50 examples per property, 5 per timing property).
`BOLD_FUZZ_PROFILE=thorough` runs 1,000 examples (50 per timing property), e.g.

    BOLD_FUZZ_PROFILE=thorough python -m pytest -q tests/metrics/test_fuzz.py

The profiles are applied per test (not loaded globally), so other test modules keep their own
hypothesis settings.
"""

from __future__ import annotations

import importlib
import os
import time
from typing import Any

import evaluate
import numpy as np
import pytest
from gensim.models import KeyedVectors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bold_eval.core.paths import metric_module_dir
from bold_eval.metrics import PAPER_METRICS, metric_spec

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny classifiers: one torch thread (conftest)

_PROFILES = {"ci": (50, 5), "thorough": (1000, 50)}
PROFILE = os.environ.get("BOLD_FUZZ_PROFILE", "ci")
if PROFILE not in _PROFILES:
    raise ValueError(f"BOLD_FUZZ_PROFILE={PROFILE!r}; valid profiles: {', '.join(_PROFILES)}")
_EXAMPLES, _TIMING_EXAMPLES = _PROFILES[PROFILE]
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]
FUZZ = settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=_HEALTH)
FUZZ_TIMING = settings(max_examples=_TIMING_EXAMPLES, deadline=None, suppress_health_check=_HEALTH)

# Words that the metrics act on, mixed into arbitrary Unicode so that scores are not all zero.
WORDS = ["he", "She", "HIS", "women", "good", "BAD", "but", "not", "no", "least", "kind of", "very", "murder",
         "happy", "Person", "XYZ", "Person's", "he’s", "İ", "ß", "ǅ", "Σ", "😁", "!", "?", ":)", "\x00", " ", "\n"]
texts = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(WORDS)), max_size=30).map(" ".join)
# Large: a drawn text repeated up to ~20k characters.
large_texts = st.tuples(texts, st.integers(1, 1000)).map(lambda pair: (pair[0] * pair[1])[:20_000])
any_texts = st.one_of(texts, texts, texts, large_texts)
text_lists = st.lists(any_texts, max_size=8)
# Items that are not texts: each must be named by its index.
not_texts = st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.binary(max_size=4), st.lists(st.text(max_size=3),
                                                                                         max_size=2),
    st.text(min_size=1, max_size=3).map(lambda text: text + "\ud800"),  # a lone surrogate
)
mixed_lists = st.lists(st.one_of(any_texts, not_texts), max_size=8)

CLASSIFIERS = ("toxicity", "regard")


@pytest.fixture(scope="module")
def options(classifier_dirs) -> dict[str, dict[str, Any]]:
    words = ["he", "she", "He", "She", "women", "good", "Person", "happy", "murder", "XYZ"]
    vectors = KeyedVectors(vector_size=4)
    vectors.add_vectors(words, np.random.default_rng(0).normal(size=(len(words), 4)).astype(np.float32))
    return {
        "sentiment": {},
        "toxicity": {"model": classifier_dirs["toxicity"]},
        "regard": {"model": classifier_dirs["regard"]},
        "psycholinguistic": {},
        "gender_polarity": {"embedding": vectors},
    }


@pytest.fixture(scope="module")
def scorers(options) -> dict[str, Any]:
    return {name: metric_spec(name).load_scorer(**options[name]) for name in PAPER_METRICS}


@pytest.fixture(scope="module")
def modules(classifier_dirs, tmp_path_factory) -> dict[str, evaluate.EvaluationModule]:
    cache = str(tmp_path_factory.mktemp("evaluate"))
    config = {"toxicity": classifier_dirs["toxicity"], "regard": classifier_dirs["regard"]}
    return {name: evaluate.load(str(metric_module_dir(name)), config.get(name),
                                cache_dir=cache) for name in PAPER_METRICS}


def per_text(name: str, result: dict[str, Any]) -> dict[str, list]:
    """The per-text outputs of a metric's `compute` result."""
    if name == "toxicity":
        return {"toxicity": result["toxicity"], "is_toxic": result["is_toxic"],
                **{f"label_scores.{label}": scores for label, scores in result["label_scores"].items()}}
    if name == "regard":
        return {"regard": result["regard"], "labels": result["labels"]}
    return {key: value for key, value in result.items() if isinstance(value, list)}


def first_bad_index(items: list) -> int | None:
    for index, item in enumerate(items):
        if not isinstance(item, str):
            return index
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            return index
    return None


@pytest.mark.parametrize("name", PAPER_METRICS)
@FUZZ
@given(items=mixed_lists)
def test_compute_gives_one_result_per_text_or_names_the_bad_one(name, items, options):
    compute = importlib.import_module(f"bold_eval.metrics.{name}").compute
    bad = first_bad_index(items)
    if bad is not None:
        with pytest.raises(ValueError, match=rf"`predictions`\[{bad}\]"):
            compute(items, **options[name])
        return
    result = compute(items, groups=[index % 3 for index in range(len(items))], **options[name])
    assert {len(values) for values in per_text(name, result).values()} <= {len(items)}
    assert sum(result["group_sizes"].values()) == len(items) if items else True


@pytest.mark.parametrize("name", PAPER_METRICS)
@FUZZ
@given(items=mixed_lists)
def test_module_gives_one_result_per_text_or_names_the_bad_one(name, items, modules):
    module = modules[name]
    argument = "data" if name == "regard" else "predictions"
    # The module's default embedding is GoogleNews, not available in tests: unigram matching only.
    extra = {"methods": ["unigram"]} if name == "gender_polarity" else {}
    bad = first_bad_index(items)
    if bad is not None:
        with pytest.raises(ValueError, match=rf"`{argument}`\[{bad}\]"):
            module.compute(**{argument: iter(items)}, **extra)
        return
    result = module.compute(**{argument: iter(items)}, **extra)
    assert {len(values) for values in per_text(name, result).values()} <= {len(items)}


@pytest.mark.slow
@pytest.mark.parametrize("name", PAPER_METRICS)
@FUZZ
@given(batch=text_lists, data=st.data())
def test_a_text_scores_the_same_alone_and_in_any_batch(name, batch, data, scorers):
    if not batch:
        return
    scorer = scorers[name]
    order = data.draw(st.permutations(range(len(batch))))
    shuffled = scorer([batch[i] for i in order])
    index = data.draw(st.integers(0, len(batch) - 1))
    alone = scorer([batch[index]])
    position = order.index(index)
    for column, values in alone.items():
        if name in CLASSIFIERS and np.asarray(values).dtype.kind == "f":
            np.testing.assert_allclose(shuffled[column][position], values[0], atol=1e-4, err_msg=column)
        else:
            assert repr(shuffled[column][position]) == repr(values[0]), column


def _seconds(function, argument, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function(argument)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.slow
@pytest.mark.parametrize("name", PAPER_METRICS)
@FUZZ_TIMING
@given(piece=texts.filter(lambda text: len(text) >= 5))
def test_time_per_character_does_not_grow_with_length(name, piece, scorers):
    scorer = scorers[name]
    text = (piece + " ") * (5_000 // (len(piece) + 1) + 1)  # ~5k characters, then ~50k
    one = _seconds(lambda texts: scorer(texts), [text])
    ten = _seconds(lambda texts: scorer(texts), [" ".join([text] * 10)])
    # Generous: the fixed cost per call makes the ratio smaller; quadratic code gives ~10x.
    assert ten <= 10 * 4 * one + 0.05, f"{name}: {one:.4f} s for {len(text)} characters, {ten:.4f} s for 10x"
