"""The `bold-eval run` pipeline on real BOLD with a tiny random LM: selection, outputs, resume,
torn lines, refusal to mix settings, and the Wikipedia baseline against the Table 3 script."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.cli import main as cli_main
from bold_eval.core.errors import UserError
from bold_eval.data.bold import load_bold
from bold_eval.generation.decoding import make_decoding
from bold_eval.generation.hf_causal import SHARED_PREFILL
from bold_eval.run import ConfigMismatchError, RunConfig, run, select_prompts
from bold_eval.runfolder.jsonl import read_generations
from bold_eval.scoring.scorers import parse_metric_options
from bold_eval.testing.models import build_tiny_causal_lm

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bold(bold_dir) -> pd.DataFrame:
    return load_bold("all", data_dir=bold_dir).to_pandas()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, bold) -> str:
    corpus = bold["wikipedia"].iloc[::200].tolist()
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"), corpus))


def _config(out, model, **overrides) -> RunConfig:
    values = dict(out=Path(out), model=model, dtype="float32", device="cpu", batch_size=2,
                  decoding=make_decoding(max_new_tokens=6), seed=3, domains=["religious_ideology"], limit=7,
                  metrics=["sentiment"], progress=False, report=False)  # the report: test_run_writes_every_output
    values.update(overrides)
    return RunConfig(**values)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_limit_is_a_seeded_random_sample_stratified_round_robin_over_groups(bold):
    selected = select_prompts(bold, None, 20)
    counts = selected.groupby("domain").size()
    assert counts.to_dict() == {domain: 20 for domain in counts.index} and len(counts) == 5
    for domain, part in selected.groupby("domain"):
        groups = bold.loc[bold["domain"] == domain, "group"].nunique()
        assert part["group"].nunique() == min(groups, 20), domain  # every group keeps prompts
        sizes = part.groupby("group").size()
        totals = bold[bold["domain"] == domain].groupby("group").size()
        # round robin: groups differ by at most one prompt, unless a group ran out of prompts
        short = sizes[sizes < sizes.max() - 1]
        assert (short == totals[short.index]).all(), domain
    pd.testing.assert_frame_equal(select_prompts(bold, None, 20), selected)  # same seed, same sample
    assert select_prompts(bold, None, 20, seed=1)["prompt_id"].tolist() != selected["prompt_id"].tolist()
    # a domain's sample does not depend on the other domains selected
    alone = select_prompts(bold, ["religious_ideology"], 20)
    assert alone["prompt_id"].tolist() == selected.loc[selected["domain"] == "religious_ideology", "prompt_id"].tolist()
    religion = select_prompts(bold, ["religious_ideology"], 7)
    # religious_ideology has 7 groups: limit 7 takes one prompt of each, not always BOLD's first one
    assert religion["group"].nunique() == 7 and len(religion) == 7
    firsts = bold[bold["domain"] == "religious_ideology"].groupby("group", sort=False).head(1)
    assert religion["prompt_id"].tolist() != firsts["prompt_id"].tolist()
    # fewer prompts than groups: 3 different groups, one prompt each
    with pytest.warns(UserWarning, match="4 groups get no prompt"):
        three = select_prompts(bold, ["religious_ideology"], 3)
    assert three["group"].nunique() == 3
    with pytest.raises(ValueError, match="unknown domain"):
        select_prompts(bold, ["gendre"], 3)


@pytest.mark.slow
def test_limit_sample_is_representative_of_each_group(bold):
    """Over 100 seeds, the one prompt drawn per religion group sits anywhere in the group: its position
    (0 = BOLD's first prompt of the group, 1 = its last) averages 0.5 for a uniform draw, with standard
    deviation sqrt(1/12/100) = 0.029 per group (0.1 is 3.5 of them); the first rows would give 0 every time."""
    religion = bold[bold["domain"] == "religious_ideology"]
    position = religion.groupby("group").cumcount() / (religion.groupby("group")["prompt_id"].transform("size") - 1)
    position.index = religion["prompt_id"]
    drawn = pd.concat([select_prompts(bold, ["religious_ideology"], 7, seed=seed) for seed in range(100)])
    mean = position[drawn["prompt_id"]].groupby(drawn["group"].to_numpy()).mean()
    hinduism = mean.pop("hinduism")  # 12 prompts: positions are multiples of 1/11, mean still 0.5
    assert ((mean - 0.5).abs() < 0.1).all(), mean
    assert abs(hinduism - 0.5) < 0.1


def test_limit_sample_has_its_own_seed_apart_from_the_generation_seed(tmp_path, tiny_model):
    """--seed changes the texts, not the --limit sample: two seeds of one model share their prompts (so
    `compare` pairs them); --sample-seed draws another sample, and is part of the resume fingerprint."""
    def prompts(folder: Path) -> list[str]:
        return [record["prompt_id"] for record in _lines(folder / "generations.jsonl")]

    out = tmp_path / "run"
    run(_config(out, tiny_model))  # --seed 3, --sample-seed 0
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["generation_settings"]["limit_sample_seed"] == 0
    run(_config(tmp_path / "seed4", tiny_model, seed=4, reference=False))
    assert prompts(tmp_path / "seed4") == prompts(out)
    run(_config(tmp_path / "sample1", tiny_model, sample_seed=1, reference=False))
    assert set(prompts(tmp_path / "sample1")) != set(prompts(out)) and len(prompts(tmp_path / "sample1")) == 7
    with pytest.raises(ConfigMismatchError, match=r"limit_sample_seed: 0 in the folder, 1 now"):
        run(_config(out, tiny_model, sample_seed=1))


def test_run_writes_every_output(tmp_path, tiny_model):
    report = run(_config(tmp_path / "run", tiny_model, report=True))
    out = tmp_path / "run"
    assert report == out / "report.md" and report.is_file()
    records = _lines(out / "generations.jsonl")
    assert len(records) == 7 and [r["sample"] for r in records] == [0] * 7
    scores = pd.read_parquet(out / "scores.parquet")
    assert len(scores) == 7
    for column in ("prompt_id", "domain", "group", "category", "name", "sample", "prompt", "continuation", "text",
                   "sentiment_compound", "sentiment_label"):
        assert column in scores.columns
    assert scores["prompt_id"].tolist() == [r["prompt_id"] for r in records]
    # full text, anonymized (Section 3.3): religion terms become XYZ
    judaism = scores[scores["group"] == "judaism"].iloc[0]
    assert "Judaism" in judaism["prompt"] and "Judaism" not in judaism["text"] and "XYZ" in judaism["text"]
    info = json.loads((out / "run.json").read_text())
    for key in ("schema_version", "model", "generator", "generator_settings", "model_info", "versions", "timings",
                "generated_tokens", "tokens_per_second", "skipped_metrics", "metrics", "generation_settings"):
        assert key in info, key
    assert info["generator"] == "hf-causal" and info["generator_settings"]["seed"] == 3
    assert info["generator_settings"]["decoding"]["max_new_tokens"] == 6
    assert info["generation_settings"]["generator_settings"] == info["generator_settings"]
    assert info["generated_tokens"] == sum(r["num_new_tokens"] for r in records) > 0
    assert info["metrics"] == ["sentiment"] and info["skipped_metrics"] == {}
    assert (out / "summary.json").is_file()


@pytest.mark.slow
def test_interrupted_run_resumes_without_regenerating(tmp_path, tiny_model):
    reference = tmp_path / "reference"
    run(_config(reference, tiny_model))
    expected = _lines(reference / "generations.jsonl")

    out = tmp_path / "interrupted"
    first_batch = []

    def crash_after_first_batch(batch):
        first_batch.extend(item.prompt_id for item in batch)
        raise KeyboardInterrupt("simulated kill after the first batch was written")

    with pytest.raises(KeyboardInterrupt):
        run(_config(out, tiny_model, on_batch_written=crash_after_first_batch))
    written = (out / "generations.jsonl").read_bytes()
    assert len(written.splitlines()) == len(first_batch) == 2
    # a crash in the middle of the next write leaves a torn last line
    with open(out / "generations.jsonl", "ab") as handle:
        handle.write(b'{"prompt_id": "religious_ideology/sikhism/Sikh')

    regenerated = []
    run(_config(out, tiny_model, on_batch_written=lambda batch: regenerated.extend(i.prompt_id for i in batch)))
    assert not set(regenerated) & set(first_batch)
    assert len(regenerated) == 5
    assert _lines(out / "generations.jsonl") == expected
    pd.testing.assert_frame_equal(pd.read_parquet(out / "scores.parquet"),
                                  pd.read_parquet(reference / "scores.parquet"))

    # a third run has nothing to generate and loads no model
    again = []
    run(_config(out, tiny_model, on_batch_written=lambda batch: again.extend(batch)))
    assert again == [] and json.loads((out / "run.json").read_text())["generated_now"] == 0


@pytest.mark.slow
def test_changed_settings_are_refused(tmp_path, tiny_model):
    out = tmp_path / "run"
    run(_config(out, tiny_model))
    before = (out / "generations.jsonl").read_bytes()
    with pytest.raises(ConfigMismatchError, match=r"generator_settings\.seed: 3 in the folder, 4 now"):
        run(_config(out, tiny_model, seed=4))
    with pytest.raises(ConfigMismatchError, match=r"decoding\.top_p"):
        run(_config(out, tiny_model, decoding=make_decoding(max_new_tokens=6, top_p=0.5)))
    with pytest.raises(ConfigMismatchError, match=r"limit: 7 in the folder, 3 now"):
        run(_config(out, tiny_model, limit=3))
    assert (out / "generations.jsonl").read_bytes() == before
    # scoring settings are not generation settings: another metric set re-scores the same texts
    run(_config(out, tiny_model, metrics=["sentiment"], score_on="continuation"))
    assert (out / "generations.jsonl").read_bytes() == before


def test_corrupted_middle_line_is_an_error(tmp_path):
    path = tmp_path / "generations.jsonl"
    path.write_bytes(b'{"prompt_id": "a", "sample": 0}\nnot json\n{"prompt_id": "b", "sample": 0}\n')
    with pytest.raises(ValueError, match="line 2"):
        read_generations(path)
    path.write_bytes(b'{"prompt_id": "a", "sample": 0}\n{"prompt_id": "b", "sam')
    assert len(read_generations(path, repair=True)) == 1
    assert path.read_bytes() == b'{"prompt_id": "a", "sample": 0}\n'


def test_metric_options_parse():
    assert parse_metric_options(["gender_polarity.methods=unigram,max", "toxicity.batch_size=8"]) == {
        "gender_polarity": {"methods": ["unigram", "max"]}, "toxicity": {"batch_size": 8}}
    with pytest.raises(ValueError, match="METRIC.KEY=VALUE"):
        parse_metric_options(["methods=unigram"])


@pytest.mark.parametrize("command", ["run", "score"])
def test_malformed_metric_option_is_a_message_not_a_traceback(tmp_path, command, capsys):
    target = ["--model", "wikipedia"] if command == "run" else [str(tmp_path / "gens.jsonl")]
    assert cli_main([command, *target, "--out", str(tmp_path / "out"), "--metric-option", "bad"]) == 2
    err = capsys.readouterr().err
    assert "--metric-option 'bad'" in err and "Traceback" not in err


@pytest.mark.slow
def test_wikipedia_baseline_scores_the_wikipedia_sentences(tmp_path, bold_dir):
    out = tmp_path / "wiki"
    assert cli_main(["run", "--model", "wikipedia", "--domains", "profession", "--metrics", "gender_polarity",
                     "--metric-option", "gender_polarity.methods=unigram", "--no-anonymize", "--out", str(out),
                     "--no-progress", "--no-report"]) == 0
    scores = pd.read_parquet(out / "scores.parquet")
    bold = load_bold("profession", data_dir=bold_dir).to_pandas()
    assert len(scores) == len(bold) == 10195
    assert scores["text"].tolist() == bold["wikipedia"].tolist()  # the sentence is the "generation"
    # Table 3 against the paper, through reproduce/table3_unigram.py: tests/end_to_end/test_reproduce.py.
    info = json.loads((out / "run.json").read_text())
    assert info["model"] == "wikipedia" and info["generated_tokens"] == 0


def test_several_samples_per_prompt(tmp_path, tiny_model):
    out = tmp_path / "samples"
    run(_config(out, tiny_model, num_samples=2, limit=3))
    records = _lines(out / "generations.jsonl")
    assert [(r["prompt_id"], r["sample"]) for r in records][:2] == [(records[0]["prompt_id"], 0),
                                                                      (records[0]["prompt_id"], 1)]
    assert len(records) == 6 and any(a["continuation"] != b["continuation"] for a, b in zip(records[::2], records[1::2],
                                                                                            strict=True))
    scores = pd.read_parquet(out / "scores.parquet")
    assert scores["sample"].tolist() == [0, 1] * 3
    settings = json.loads((out / "run.json").read_text())["generation_settings"]["generator_settings"]
    assert settings["share_prefill"] == SHARED_PREFILL  # in the resume fingerprint
    with pytest.raises(ValueError, match="num-samples"):
        run(_config(tmp_path / "wiki", "wikipedia", num_samples=2))


@pytest.mark.slow
def test_a_prompt_with_some_of_its_k_samples_on_disk_is_completed_not_duplicated(tmp_path, tiny_model):
    """k = 3 in batches of 2: a kill after the first batch leaves prompt A with samples 0 and 1 on disk; the resume
    generates A's sample 2 and the rest, never A's first two again, and ends with the uninterrupted run's file."""
    reference = tmp_path / "reference"
    run(_config(reference, tiny_model, num_samples=3, limit=3))
    expected = _lines(reference / "generations.jsonl")
    out = tmp_path / "interrupted"
    first: list[tuple[str, int]] = []

    def crash(batch):
        first.extend((item.prompt_id, item.sample) for item in batch)
        raise KeyboardInterrupt("simulated kill after the first batch")

    with pytest.raises(KeyboardInterrupt):
        run(_config(out, tiny_model, num_samples=3, limit=3, on_batch_written=crash))
    prompt = first[0][0]
    assert first == [(prompt, 0), (prompt, 1)]
    again: list[tuple[str, int]] = []
    run(_config(out, tiny_model, num_samples=3, limit=3,
                on_batch_written=lambda batch: again.extend((i.prompt_id, i.sample) for i in batch)))
    assert (prompt, 2) in again and not set(again) & set(first) and len(again) == 9 - 2
    records = _lines(out / "generations.jsonl")
    assert records == expected and len({(r["prompt_id"], r["sample"]) for r in records}) == 9


@pytest.mark.slow
def test_a_folder_made_without_a_shared_prefill_resumes_without_it(tmp_path, tiny_model):
    """k samples made before the shared prefill existed (run.json without share_prefill): the default resumes
    the folder's way, with a warning; share_prefill=false makes the same texts from the start."""
    reference = tmp_path / "reference"
    run(_config(reference, tiny_model, num_samples=3, limit=3, generator_options={"share_prefill": "false"}))
    record = json.loads((reference / "run.json").read_text())
    assert "share_prefill" not in record["generation_settings"]["generator_settings"]
    expected = _lines(reference / "generations.jsonl")
    out = tmp_path / "old"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({**record, "status": "generating"}), encoding="utf-8")
    (out / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in expected[:4]), encoding="utf-8")
    with pytest.warns(UserWarning, match="without share_prefill.*share_prefill=false"):
        run(_config(out, tiny_model, num_samples=3, limit=3))
    assert _lines(out / "generations.jsonl") == expected
    with pytest.raises(UserError, match="share_prefill must be true or false"):
        run(_config(tmp_path / "bad", tiny_model, num_samples=3, limit=3, generator_options={"share_prefill": "maybe"}))


def test_no_report_stops_after_scoring_and_report_writes_it_later(tmp_path, capsys, bold_dir, monkeypatch):
    """`bold-eval run --no-report`: generations, scores and run.json, no report; `bold-eval report` then writes the
    same report a full run would have."""
    from bold_eval.cli import main

    monkeypatch.setenv("BOLD_DATA_DIR", str(bold_dir))
    argv = ["run", "--model", "wikipedia", "--domains", "religious_ideology", "--limit", "8", "--metrics",
            "sentiment", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "scored"), "--no-report"]) == 0
    assert f"scores: {tmp_path / 'scored' / 'scores.parquet'}" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "scored").iterdir()) == ["generations.jsonl", "run.json",
                                                                       "scores.parquet"]
    assert main(["report", str(tmp_path / "scored")]) == 0
    assert main([*argv, "--out", str(tmp_path / "full")]) == 0
    assert ((tmp_path / "scored" / "tables" / "sentiment.csv").read_bytes()
            == (tmp_path / "full" / "tables" / "sentiment.csv").read_bytes())
