"""The contract every metric keeps: N texts in, N per-text results out, or a clear error.

Checked for each public entry point of the five metrics: `compute` and the loaded scorer. Bad
input is named by its index (None, non-strings, lone surrogates), unordered or single-object
inputs are refused, iterators are read once, and group labels keep their identity.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from gensim.models import KeyedVectors

from bold_eval.metrics import PAPER_METRICS
from bold_eval.metrics._words import tokenize_texts

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny classifiers: one torch thread (conftest)

TEXTS = ["She is a wonderful, kind nurse.", "", "He was arrested.", "She is a wonderful, kind nurse.", "   ",
         "Person XYZ"]


@pytest.fixture(scope="module")
def keyed_vectors() -> KeyedVectors:
    words = sorted(set(tokenize_texts(TEXTS, lowercase=False).words) | {"he", "she"})
    vectors = KeyedVectors(vector_size=4)
    vectors.add_vectors(words, np.random.default_rng(0).normal(size=(len(words), 4)).astype(np.float32))
    return vectors


@pytest.fixture(scope="module")
def options(classifier_dirs, keyed_vectors) -> dict[str, dict[str, Any]]:
    """Options that make every metric run offline on tiny real resources."""
    return {
        "sentiment": {},
        "toxicity": {"model": classifier_dirs["toxicity"]},
        "regard": {"model": classifier_dirs["regard"]},
        "psycholinguistic": {},
        "gender_polarity": {"embedding": keyed_vectors},
    }


def per_text_lists(name: str, result: dict[str, Any]) -> dict[str, list]:
    """The per-text outputs of `compute` (everything else is a summary)."""
    if name == "toxicity":
        lists = {"toxicity": result["toxicity"], "is_toxic": result["is_toxic"]}
        lists.update({f"label_scores.{label}": scores for label, scores in result["label_scores"].items()})
        return lists
    if name == "regard":
        return {"regard": result["regard"], "labels": result["labels"]}
    return {key: value for key, value in result.items() if isinstance(value, list)}


def as_list(values):
    return list(values)


def as_generator(values):
    return (value for value in values)


def as_array(values):
    return np.array(values, dtype=object)


@pytest.mark.parametrize("name", PAPER_METRICS)
@pytest.mark.parametrize("container", [as_list, tuple, as_generator, as_array])
@pytest.mark.parametrize("n", [0, 1, 6])
def test_n_texts_give_n_results(name, container, n, options):
    module = importlib.import_module(f"bold_eval.metrics.{name}")
    texts = (TEXTS * 2)[:n]
    groups = container((["a", "b"] * 3)[:n])
    result = module.compute(container(texts), groups=groups, **options[name])
    lists = per_text_lists(name, result)
    assert lists and all(len(values) == n for values in lists.values()), {k: len(v) for k, v in lists.items()}
    columns = module.load_scorer(**options[name])(container(texts))
    assert columns and all(len(values) == n for values in columns.values())
    if n > 3:  # results align with the inputs: duplicates of a text get its result
        first, again = (columns[key][0] for key in columns), (columns[key][3] for key in columns)
        assert [repr(value) for value in first] == [repr(value) for value in again]


BAD_TEXTS: list[tuple[Any, str]] = [
    (None, r"`predictions` is None"),
    ("one text", "single string"),
    (b"bytes", "got bytes"),
    ({"a", "b"}, "ordered list .* set"),
    ({"a": 1}, "ordered list .* dict"),
    (3, "got int"),
    (["fine", None], r"`predictions`\[1\] is None"),
    (["fine", "ok", 3.5], r"`predictions`\[2\] is 3.5 \(float\)"),
    (["fine", b"bytes"], r"`predictions`\[1\] is b'bytes' \(bytes\)"),
    (["fine", "a\ud800b"], r"`predictions`\[1\] has a lone surrogate '\\ud800' at character 1"),
]


@pytest.mark.parametrize("name", PAPER_METRICS)
@pytest.mark.parametrize(("texts", "message"), BAD_TEXTS)
def test_bad_texts_are_named(name, texts, message, options):
    module = importlib.import_module(f"bold_eval.metrics.{name}")
    with pytest.raises(ValueError, match=message):
        module.compute(texts, **options[name])
    scorer = module.load_scorer(**options[name])
    with pytest.raises(ValueError, match=message):
        scorer(texts)


@pytest.mark.parametrize("name", PAPER_METRICS)
def test_group_labels_keep_their_identity(name, options):
    module = importlib.import_module(f"bold_eval.metrics.{name}")
    texts = TEXTS[:4]
    # 1 and "1" would become one group "1": a mix of types is refused, naming the first odd label.
    with pytest.raises(ValueError, match=r"`groups`\[1\] is '1' \(str\) but `groups`\[0\] is 1 \(int\)"):
        module.compute(texts, groups=[1, "1", 1, "1"], **options[name])
    for groups, bad in (([True, False, True, False], "True"), ([1.0, 2.0, 1.0, 2.0], "1.0")):
        with pytest.raises(ValueError, match=rf"`groups`\[0\] is {bad} .*strings or integers"):
            module.compute(texts, groups=groups, **options[name])
    # Integers stay integers (numpy integers become int); strings stay strings.
    by_int = module.compute(texts, groups=np.array([1, 2, 1, 2]), **options[name])
    by_str = module.compute(texts, groups=["1", "2", "1", "2"], **options[name])
    assert list(by_int["group_sizes"]) == [1, 2] and all(type(key) is int for key in by_int["group_sizes"])
    assert list(by_str["group_sizes"]) == ["1", "2"]


def test_every_metric_is_covered():
    assert set(PAPER_METRICS) == {"sentiment", "toxicity", "regard", "psycholinguistic", "gender_polarity"}
