"""The run folder's records (run.json versions, 0.1 folders), the generator seam, and what
importing the scoring side pulls in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bold_eval.generation.base import GENERATORS, Generated, Generator, GeneratorContext, WorkItem
from bold_eval.generation.choice import build_generator, generator_kind
from bold_eval.generation.hf_causal import HFCausalGenerator
from bold_eval.generation.wikipedia import WikipediaGenerator
from bold_eval.run import RunConfig
from bold_eval.runfolder.json_files import read_run_record
from bold_eval.runfolder.layout import SCHEMA_VERSION
from bold_eval.runfolder.loading import load_run, read_reference_scores
from bold_eval.runfolder.records import RunRecord, SummaryRecord


@pytest.fixture(scope="module")
def fresh_imports() -> dict:
    """What a fresh interpreter holds after importing the scoring side, then the data module, with matplotlib's
    backend set to svg first: one subprocess for the import tests below."""
    code = (
        "import json, sys, matplotlib; matplotlib.use('svg')\n"
        "import bold_eval.scoring.external, bold_eval.scoring.generations, bold_eval.report.run_report, bold_eval.cli\n"
        "loaded = sorted(m for m in ('bold_eval.generation.hf_causal', 'bold_eval.generation.loading', "
        "'bold_eval.run', 'torch', 'matplotlib.pyplot') if m in sys.modules)\n"
        "import bold_eval.data.bold\n"
        "print(json.dumps({'scoring_side': loaded, 'backend': matplotlib.get_backend(), "
        "'dataset_script_run': '_bold_eval_dataset.bold' in sys.modules}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_scoring_side_never_imports_generation(fresh_imports: dict):
    """`bold-eval score` and `report` need no LM stack: no generate, models, torch or pyplot."""
    assert fresh_imports["scoring_side"] == []


@pytest.mark.slow
def test_imports_change_no_global_state(fresh_imports: dict):
    """Importing the report keeps the matplotlib backend; importing data runs no dataset script."""
    assert fresh_imports["backend"] == "svg" and fresh_imports["dataset_script_run"] is False


def test_legacy_run_json_is_read_and_mapped(tmp_path: Path):
    """A 0.1 run.json (no schema_version, settings at the top level) still loads."""
    pd.DataFrame({"prompt_id": ["a"], "domain": ["gender"], "group": ["g"]}).to_parquet(tmp_path / "scores.parquet")
    (tmp_path / "run.json").write_text(json.dumps(
        {"model": "gpt2", "seed": 0, "revision": "abc", "max_new_tokens": 30, "decoding": {"top_k": 40},
         "metrics": ["sentiment"], "unknown_key": 1}))
    _, record = load_run(tmp_path)
    assert record.legacy and record.model == "gpt2" and record.metrics == ["sentiment"]
    assert record.generator_settings == {"revision": "abc", "decoding": {"top_k": 40}, "seed": 0}


def test_run_json_from_before_the_reference_still_loads(tmp_path: Path):
    """run.json written before the Wikipedia reference existed has no `reference`: an empty record."""
    (tmp_path / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION, "model": "gpt2"}))
    record = read_run_record(tmp_path)
    assert record is not None and record.reference == {} and record.model == "gpt2"
    assert read_reference_scores(tmp_path) is None


def test_unknown_schema_version_is_refused_with_the_version(tmp_path: Path):
    (tmp_path / "run.json").write_text(json.dumps({"schema_version": 99, "model": "x"}))
    with pytest.raises(ValueError, match="schema_version 99"):
        read_run_record(tmp_path)


def test_records_round_trip():
    record = RunRecord(model="m", generator="hf-causal", generator_settings={"seed": 1}, metrics=["toxicity"])
    assert RunRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    summary = SummaryRecord(run=record.to_dict(), counts={"texts": 1}, metrics={}, statistics={},
                            views={"sentiment": {"skipped": "x"}})
    data = summary.to_dict()
    assert data["schema_version"] == SCHEMA_VERSION and data["sentiment"] == {"skipped": "x"}
    assert SummaryRecord.from_dict(data) == summary


def test_generator_choice_and_protocol(tmp_path: Path):
    assert generator_kind(RunConfig(out=tmp_path, model="wikipedia")) == "wikipedia"
    assert generator_kind(RunConfig(out=tmp_path, model="gpt2")) == "hf-causal"
    assert {"hf-causal", "wikipedia"} <= set(GENERATORS)
    hf = build_generator(RunConfig(out=tmp_path, model="gpt2", seed=5), GeneratorContext())
    assert isinstance(hf, HFCausalGenerator) and isinstance(hf, Generator)
    assert hf.settings()["seed"] == 5 and hf.loaded is None  # building loads no model
    with pytest.raises(ValueError, match="unknown generator 'nope'"):
        build_generator(RunConfig(out=tmp_path, generator="nope"), GeneratorContext())


def test_wikipedia_generator_returns_the_rest_of_the_sentence(tmp_path: Path):
    rows = {"p/0": {"prompt": "Judaism is", "wikipedia": "Judaism is an Abrahamic religion."}}
    generator = build_generator(RunConfig(out=tmp_path, model="wikipedia"), GeneratorContext(rows=rows))
    assert isinstance(generator, WikipediaGenerator)
    batches = []
    generator.generate([WorkItem("p/0", 0, "Judaism is")], on_batch=lambda items, results: batches.append(results))
    assert batches == [[Generated(" an Abrahamic religion.", 0)]]
    with pytest.raises(ValueError, match="num-samples must be 1"):
        build_generator(RunConfig(out=tmp_path, model="wikipedia", num_samples=2), GeneratorContext(rows=rows))


def test_scores_writer_appends_chunks_with_one_schema_and_writes_nothing_on_failure(tmp_path):
    """scores.parquet is written chunk by chunk. A chunk whose column is all null (regard in a chunk
    without gender or race rows) takes the type it is given, whichever chunk comes first; an error leaves no file."""
    import pyarrow as pa

    from bold_eval.runfolder.parquet import ScoresWriter, read_scores

    first = pd.DataFrame({"prompt_id": ["a", "b"], "regard_label": pd.Series([None, None], dtype=object),
                          "regard_positive": [np.nan, np.nan]})
    second = pd.DataFrame({"prompt_id": ["c"], "regard_label": ["negative"], "regard_positive": [0.25]})
    with ScoresWriter(tmp_path, types={"regard_label": pa.string()}) as writer:
        writer.write(first)
        writer.write(second.iloc[:0])  # an empty chunk adds nothing
        writer.write(second)
    assert writer.rows == 3
    scores = read_scores(tmp_path / "scores.parquet")
    assert scores["prompt_id"].tolist() == ["a", "b", "c"]
    assert scores["regard_label"].isna().tolist() == [True, True,
                                                      False] and scores["regard_label"].iloc[2] == "negative"
    np.testing.assert_allclose(scores["regard_positive"], [np.nan, np.nan, 0.25])

    with pytest.raises(ValueError, match="columns"), ScoresWriter(tmp_path, "other.parquet") as writer:
        writer.write(second)
        writer.write(second.rename(columns={"regard_positive": "regard_neutral"}))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["scores.parquet"]  # no file, no temporary left
