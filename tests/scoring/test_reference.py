"""The Wikipedia reference beside a model run: the human-written sentences of the run's own
prompts, built as the `wikipedia` generator builds them and scored with the run's metrics, their
classifier scores cached across runs; and a --limit sample that does not move with --seed.

Real BOLD from ../shared, a tiny random GPT-2 and tiny toxic-bert- and regardv3-shaped classifiers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bold_eval.cli import main as cli_main
from bold_eval.data.bold import load_bold
from bold_eval.generation.decoding import make_decoding
from bold_eval.metrics import toxicity
from bold_eval.run import RunConfig, run
from bold_eval.runfolder.records import RunRecord
from bold_eval.scoring.cache import ReferenceCache, reference_cache_dir
from bold_eval.scoring.generations import score_generations
from bold_eval.testing.models import build_metric_classifier, build_tiny_causal_lm

DOMAINS = ["religious_ideology", "gender"]  # regard scores the gender rows only (Section 4.3)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, bold_dir) -> str:
    corpus = load_bold("all", data_dir=bold_dir).to_pandas()["wikipedia"].iloc[::200].tolist()
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"), corpus))


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory, bold_sentences) -> dict[str, str]:
    root = tmp_path_factory.mktemp("reference_classifiers")
    return {kind: str(build_metric_classifier(root / kind, kind, corpus=bold_sentences[:200]))
            for kind in ("toxicity", "regard")}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty reference cache for each test."""
    monkeypatch.setenv("BOLD_EVAL_CACHE_DIR", str(tmp_path / "reference-cache"))
    return tmp_path / "reference-cache"


def _config(out: Path, model: str, classifiers: dict[str, str], **overrides) -> RunConfig:
    values = dict(out=out, model=model, dtype="float32", device="cpu", batch_size=4,
                  decoding=make_decoding(max_new_tokens=6), seed=3, domains=DOMAINS, limit=7,
                  metrics=["sentiment", "toxicity", "regard"],
                  metric_options={"toxicity": {"model": classifiers["toxicity"]},
                                  "regard": {"model": classifiers["regard"]}}, progress=False, report=False)
    values.update(overrides)
    return RunConfig(**values)


def _record(out: Path) -> dict:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_model_run_scores_the_wikipedia_sentences_of_its_prompts(tmp_path, tiny_model, classifiers, cache):
    model_run, wiki_run = tmp_path / "model", tmp_path / "wiki"
    run(_config(model_run, tiny_model, classifiers, num_samples=2))
    scores = pd.read_parquet(model_run / "scores.parquet")
    reference = pd.read_parquet(model_run / "reference_scores.parquet")
    # one row per prompt (sample 0), in the run's order, with exactly the columns and dtypes of scores.parquet
    assert len(scores) == 28 and len(reference) == 14
    assert reference["prompt_id"].tolist() == scores["prompt_id"].drop_duplicates().tolist()
    assert (reference["sample"] == 0).all()
    assert list(reference.columns) == list(scores.columns)
    assert reference.dtypes.to_dict() == scores.dtypes.to_dict()
    assert reference["regard_label"].notna().tolist() == (reference["domain"] == "gender").tolist()

    # the same texts and scores as the Wikipedia baseline run of the same prompts
    run(_config(wiki_run, "wikipedia", classifiers))
    wiki = pd.read_parquet(wiki_run / "scores.parquet")
    assert wiki["prompt_id"].tolist() == reference["prompt_id"].tolist()
    for column in ("prompt", "continuation", "text", "sentiment_compound", "sentiment_label", "toxicity_is_toxic",
                   "regard_label"):
        assert reference[column].tolist() == wiki[column].tolist(), column
    np.testing.assert_allclose(reference["toxicity_score"], wiki["toxicity_score"], rtol=1e-5)
    judaism = reference[reference["group"] == "judaism"].iloc[0]
    assert "XYZ" in judaism["text"] and "Judaism" not in judaism["text"]  # anonymized as the run's texts

    info = _record(model_run)["reference"]
    assert info["source"] == "wikipedia" and info["file"] == "reference_scores.parquet"
    assert (info["texts"], info["cached_texts"], info["scored_texts"]) == (14, 0, 14)
    assert info["cached_metrics"] == ["toxicity", "regard"] and info["seconds"] >= 0
    # the baseline needs no reference of itself
    assert _record(wiki_run)["reference"] == {"skipped": "the run's texts are the Wikipedia baseline itself"}
    assert not (wiki_run / "reference_scores.parquet").exists()
    assert sorted(path.name.split("-")[0] for path in cache.glob("*.parquet")) == ["regard", "toxicity"]


@pytest.mark.slow
def test_a_second_run_reads_the_classifier_scores_from_the_cache(tmp_path, tiny_model, classifiers, cache):
    first, second = tmp_path / "seed3", tmp_path / "seed4"
    run(_config(first, tiny_model, classifiers))
    assert _record(first)["reference"]["cached_texts"] == 0
    run(_config(second, tiny_model, classifiers, seed=4))  # another --seed: the same --limit sample
    info = _record(second)["reference"]
    assert info["cached_texts"] == info["texts"] == 14 and info["scored_texts"] == 0
    pd.testing.assert_frame_equal(pd.read_parquet(first / "reference_scores.parquet"),
                                  pd.read_parquet(second / "reference_scores.parquet"))
    assert (pd.read_parquet(first / "scores.parquet")["prompt_id"].tolist()
            == pd.read_parquet(second / "scores.parquet")["prompt_id"].tolist())

    # a corrupt cache file is ignored with a warning and rebuilt, never a crash
    for path in cache.glob("toxicity-*.parquet"):
        path.write_bytes(b"PAR1 torn in the middle of a write")
    with pytest.warns(UserWarning, match="unreadable reference cache"):
        run(_config(tmp_path / "after-corruption", tiny_model, classifiers))
    info = _record(tmp_path / "after-corruption")["reference"]
    # every text went through the toxicity classifier again (the regard scores were still cached)
    assert info["cached_texts"] == 0 and info["scored_texts"] == 14
    assert len(pd.read_parquet(next(cache.glob("toxicity-*.parquet")))) == 14

    # --no-reference: nothing written, and a rescore of the folder removes the earlier reference
    run(_config(second, tiny_model, classifiers, seed=4, reference=False))
    assert not (second / "reference_scores.parquet").exists()
    assert _record(second)["reference"] == {"skipped": "not requested (--no-reference)"}


def test_the_cache_is_keyed_by_text_and_scorer_fingerprint(tmp_path, classifiers, bold_sentences):
    cache = ReferenceCache({"toxicity": {"model": classifiers["toxicity"]}}, folder=tmp_path)
    scorer = toxicity.load_scorer(classifiers["toxicity"])
    texts = bold_sentences[:3]
    direct = scorer(texts)
    columns, cached = cache.score("toxicity", scorer, texts)
    assert cached.tolist() == [False, False, False]
    columns, cached = cache.score("toxicity", scorer, [texts[2], "A new sentence.", texts[0], texts[0]])
    assert cached.tolist() == [True, False, True, True]
    np.testing.assert_array_equal(columns["score"][[0, 2]], direct["score"][[2, 0]])
    assert columns["score"].dtype == direct["score"].dtype and columns["is_toxic"].dtype == bool
    # another threshold is another scorer: its own file, nothing cached yet
    stricter = ReferenceCache({"toxicity": {"model": classifiers["toxicity"], "threshold": 0.9}}, folder=tmp_path)
    assert stricter.path("toxicity", toxicity.load_scorer(classifiers["toxicity"], threshold=0.9))[0] \
        != cache.path("toxicity", scorer)[0]
    _, cached = stricter.score("toxicity", toxicity.load_scorer(classifiers["toxicity"], threshold=0.9), texts)
    assert not cached.any()
    assert len(list(tmp_path.glob("toxicity-*.parquet"))) == len(list(tmp_path.glob("toxicity-*.json"))) == 2


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BOLD_EVAL_CACHE_DIR", str(tmp_path / "here"))
    assert reference_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("BOLD_EVAL_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert reference_cache_dir() == tmp_path / ".cache" / "bold-eval" / "reference"


def test_generations_that_are_not_bold_prompts_get_no_reference(tmp_path, cache):
    generations = pd.DataFrame({"prompt_id": ["gender/American_actors/Nobody_Here/0"], "domain": ["gender"],
                                "group": ["American_actors"], "category": [""], "name": ["Nobody_Here"],
                                "prompt": ["Nobody Here is"], "sample": [0], "continuation": [" kind."]})
    score_generations(generations, tmp_path, metrics=["sentiment"], record=RunRecord(model="m"))
    assert "not BOLD's" in _record(tmp_path)["reference"]["skipped"]
    assert not (tmp_path / "reference_scores.parquet").exists()


def test_score_writes_the_reference_unless_told_not_to(tmp_path, cache):
    generations = tmp_path / "generations.jsonl"
    generations.write_text(json.dumps({"prompt_id": "religious_ideology/judaism/Judaism/0",
                                       "continuation": " was kind."}) + "\n", encoding="utf-8")
    command = ["score", str(generations), "--domains", "religious_ideology", "--allow-partial", "--metrics",
               "sentiment"]
    assert cli_main([*command, "--out", str(tmp_path / "with")]) == 0
    reference = pd.read_parquet(tmp_path / "with" / "reference_scores.parquet")
    assert reference["continuation"].tolist() == [
        load_bold("religious_ideology").to_pandas().set_index("prompt_id").loc[
            "religious_ideology/judaism/Judaism/0",
            "wikipedia"].removeprefix("Judaism is an ethnic religion comprising")]
    assert cli_main([*command, "--out", str(tmp_path / "without"), "--no-reference"]) == 0
    assert not (tmp_path / "without" / "reference_scores.parquet").exists()
    assert _record(tmp_path / "without")["reference"] == {"skipped": "not requested (--no-reference)"}
