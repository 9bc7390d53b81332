"""Every evaluate module names what is wrong with its input, where evaluate alone would be cryptic.

Left to evaluate, `compute(predictions=None)` and a misspelled `prediction=` fail with "cache file doesn't
exist", and a generator consumed by a check fails inside evaluate. Checked for all five modules, through
`evaluate.load` of the module folders.
"""

from __future__ import annotations

import evaluate
import pytest

from bold_eval.core.paths import metric_module_dir
from bold_eval.metrics import PAPER_METRICS

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny classifiers: one torch thread (conftest)

TEXTS = ["She is a wonderful, kind nurse.", "", "He was arrested.", "She is a wonderful, kind nurse."]


@pytest.fixture(scope="module")
def modules(classifier_dirs, tmp_path_factory) -> dict[str, evaluate.EvaluationModule]:
    cache = str(tmp_path_factory.mktemp("evaluate"))
    config = {"toxicity": classifier_dirs["toxicity"], "regard": classifier_dirs["regard"]}
    return {
        name: evaluate.load(str(metric_module_dir(name)), config.get(name), cache_dir=cache) for name in PAPER_METRICS
    }


def texts_argument(name: str) -> str:
    return "data" if name == "regard" else "predictions"


def options(name: str) -> dict:
    return {"methods": ["unigram"]} if name == "gender_polarity" else {}


def per_text_lengths(name: str, result: dict) -> list[int]:
    if name == "toxicity":
        return [len(result["toxicity"]), len(result["is_toxic"])] + [len(v) for v in result["label_scores"].values()]
    if name == "regard":
        return [len(result["regard"]), len(result["labels"])]
    return [len(value) for value in result.values() if isinstance(value, list)]


@pytest.mark.parametrize("name", PAPER_METRICS)
def test_missing_texts_say_how_to_give_them(modules, name):
    module, argument = modules[name], texts_argument(name)
    for call in ({argument: None}, {}):
        with pytest.raises(ValueError, match=rf"{name}.compute\(\) got no `{argument}`: pass {argument}=\[\.\.\.\]"):
            module.compute(**call, **options(name))


@pytest.mark.parametrize("name", PAPER_METRICS)
def test_misspelled_keyword_names_the_close_match(modules, name):
    module, argument = modules[name], texts_argument(name)
    with pytest.raises(TypeError, match=rf"unexpected keyword argument `{argument[:-1]}`; did you mean `{argument}`\?"):
        module.compute(**{argument[:-1]: TEXTS})
    with pytest.raises(TypeError, match=r"unexpected keyword argument `group`; did you mean `groups`\?"):
        module.compute(**{argument: TEXTS, "group": ["a"] * 4})
    with pytest.raises(TypeError, match=r"keyword arguments only"):
        module.compute(TEXTS)


@pytest.mark.parametrize("name", PAPER_METRICS)
def test_iterators_are_read_once_and_give_one_result_per_text(modules, name):
    module, argument = modules[name], texts_argument(name)
    from_list = module.compute(**{argument: TEXTS, "groups": ["a", "b", "a", "b"]}, **options(name))
    from_generator = module.compute(
        **{argument: (text for text in TEXTS), "groups": iter(["a", "b", "a", "b"])}, **options(name)
    )
    assert per_text_lengths(name, from_generator) == [len(TEXTS)] * len(per_text_lengths(name, from_list))
    assert from_generator.keys() == from_list.keys()
    assert from_generator["group_sizes"] == from_list["group_sizes"] == {"a": 2, "b": 2}
    # add_batch reads its iterator once too, and compute() then scores what was added
    module.add_batch(**{argument: iter(TEXTS[:3])})
    assert per_text_lengths(name, module.compute(**options(name)))[0] == 3
    empty = module.compute(**{argument: []}, **options(name))
    assert set(per_text_lengths(name, empty)) == {0}


@pytest.mark.parametrize("name", PAPER_METRICS)
def test_bad_texts_are_named_before_evaluate_sees_them(modules, name):
    module, argument = modules[name], texts_argument(name)
    with pytest.raises(ValueError, match=rf"`{argument}`\[1\] has a lone surrogate"):
        module.compute(**{argument: ["fine", "\udc80"]})  # pyarrow would fail with a bare codec error
    with pytest.raises(ValueError, match=rf"`{argument}` must be an ordered list of strings, got a set"):
        module.compute(**{argument: {"a", "b"}})
    with pytest.raises(ValueError, match=rf"{name}.add_batch\(\) got no `{argument}`"):
        module.add_batch(**{argument: None})
    singular = "prediction" if argument == "predictions" else argument
    with pytest.raises(ValueError, match=rf"`{singular}`\[0\] is 3 \(int\)"):
        module.add(**{singular: 3})
    with pytest.raises(ValueError, match=r"`groups`\[1\] is '1' \(str\) but `groups`\[0\] is 1 \(int\)"):
        module.compute(**{argument: TEXTS[:2], "groups": [1, "1"]}, **options(name))


def test_regard_explains_its_keywords(modules, classifier_dirs, tmp_path):
    with pytest.raises(TypeError, match=r"`predictions`; regard's texts argument is `data`"):
        modules["regard"].compute(predictions=TEXTS)
    # evaluate silently drops `references` outside the "compare" config
    with pytest.raises(TypeError, match=r"`references`; texts to compare against need the \"compare\" config"):
        modules["regard"].compute(data=TEXTS, references=TEXTS)
    compare = evaluate.load(str(metric_module_dir("regard")), "compare", model=classifier_dirs["regard"],
                            cache_dir=str(tmp_path))
    with pytest.raises(ValueError,
                       match=r"regard.compute\(\) got no `references`: pass data=\[\.\.\.\], references=\[\.\.\.\]"):
        compare.compute(data=TEXTS)
    assert set(compare.compute(data=iter(TEXTS), references=iter(TEXTS))["regard_difference"].values()) == {0.0}


def test_sentiment_takes_no_references(modules):
    with pytest.raises(TypeError,
                       match=r"unexpected keyword argument `references`\. Valid keywords: predictions, groups"):
        modules["sentiment"].compute(predictions=TEXTS, references=TEXTS)
