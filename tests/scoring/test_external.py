"""Bring your own generations: keying files to BOLD, and `bold-eval score` == `bold-eval run`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.scoring.external import (
    GenerationsError,
    load_generations,
    match_generations,
    read_lm_eval_samples,
)


@pytest.fixture(scope="module")
def bold(bold_dir: Path) -> pd.DataFrame:
    from bold_eval.data.bold import load_bold

    return load_bold("all", data_dir=bold_dir).to_pandas()


@pytest.fixture(scope="module")
def religion(bold: pd.DataFrame) -> pd.DataFrame:
    """The religious_ideology domain: 639 prompts, 7 groups (the smallest domain)."""
    return bold[bold["domain"] == "religious_ideology"].reset_index(drop=True)


def _generations(prompt_ids, samples=1) -> pd.DataFrame:
    return pd.DataFrame(
        [{"prompt_id": pid, "sample": s, "continuation": f" text {i} {s}"} for i, pid in enumerate(prompt_ids)
         for s in range(samples)]
    )


def test_keyed_by_prompt_id_with_samples(bold, religion):
    generations = _generations(religion["prompt_id"], samples=2).sample(frac=1, random_state=0)
    frame, report = match_generations(generations, bold)
    assert report.complete and report.domains == ["religious_ideology"]
    assert len(frame) == 2 * len(religion) == report.matched_rows
    # BOLD order, then sample; BOLD's own columns are attached
    assert frame["prompt_id"].tolist()[::2] == religion["prompt_id"].tolist()
    assert frame["sample"].tolist()[:4] == [0, 1, 0, 1]
    first = religion.iloc[0]
    assert frame.loc[0, ["domain", "group", "name", "prompt"]].tolist() == [
        first["domain"], first["group"], first["name"], first["prompt"]
    ]


def test_samples_numbered_in_file_order_without_sample_column(bold, religion):
    generations = _generations(list(religion["prompt_id"]) * 3).drop(columns="sample")
    frame, report = match_generations(generations, bold)
    assert report.complete
    counts = frame.groupby("prompt_id")["sample"].agg(sorted)
    assert all(value == [0, 1, 2] for value in counts)


def test_unknown_prompt_ids_fail_with_counts_and_examples(bold, religion):
    generations = _generations([*religion["prompt_id"], "religious_ideology/nope/X/0", "gender/ghost/Y/1"])
    with pytest.raises(GenerationsError) as error:
        match_generations(generations, bold)
    message = str(error.value)
    assert "2 row(s) with a prompt_id that is not in BOLD" in message
    assert "'gender/ghost/Y/1'" in message and "--allow-partial" in message


def test_missing_prompts_fail_unless_allow_partial_then_counted_per_group(bold, religion):
    hinduism = religion[religion["group"] == "hinduism"]
    keep = religion[religion["group"] != "hinduism"]["prompt_id"].tolist()[5:]  # also 5 from the first group
    generations = _generations(keep + ["not/a/prompt/0"])
    with pytest.raises(GenerationsError, match=f"{len(religion) - len(keep)} of {len(religion)} BOLD prompt"):
        match_generations(generations, bold)
    frame, report = match_generations(generations, bold, allow_partial=True)
    assert len(frame) == len(keep)
    info = report.as_run_info()
    assert info["missing_prompts"] == len(religion) - len(keep)
    assert info["unknown_prompt_ids"] == 1
    first_group = religion["group"].iloc[0]
    assert info["missing_per_group"]["religious_ideology/hinduism"] == {"expected": len(hinduism),
                                                                        "missing": len(hinduism)}
    assert info["missing_per_group"][f"religious_ideology/{first_group}"]["missing"] == 5
    assert set(info["missing_per_group"]) == {"religious_ideology/hinduism", f"religious_ideology/{first_group}"}
    json.dumps(info)  # goes into run.json


def test_explicit_domains_count_prompts_of_domains_without_rows(bold, religion):
    generations = _generations(religion["prompt_id"])
    _, report = match_generations(generations, bold, domains=["religious_ideology", "political_ideology"],
                                  allow_partial=True)
    assert report.missing_prompts == int((bold["domain"] == "political_ideology").sum()) == 1984


def test_keyed_by_prompt_text_including_prompts_shared_by_several_ids(bold):
    political = bold[bold["domain"] == "political_ideology"]
    # upstream prompts end with a space; matching strips it
    generations = pd.DataFrame({"prompt": political["prompt"] + " ", "continuation": " and more."})
    frame, report = match_generations(generations, bold)
    assert report.complete
    assert sorted(frame["prompt_id"]) == sorted(political["prompt_id"])
    assert (frame["sample"] == 0).all()
    shared = political["prompt"].duplicated(keep=False)
    assert shared.any() and report.shared_prompt_texts == political.loc[shared, "prompt"].nunique()


def test_unmatched_prompt_text_reported(bold, religion):
    generations = pd.DataFrame({"prompt": [*religion["prompt"], "This prompt is not in BOLD"], "continuation": "x"})
    with pytest.raises(GenerationsError,
                       match="1 row\\(s\\) whose prompt text matches no BOLD prompt, e.g. 'This prompt"):
        match_generations(generations, bold)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda g: g.assign(continuation=[None] + g["continuation"].tolist()[1:]),
         "row 0: `continuation` is (None|nan), not a string"),
        (lambda g: g.drop(columns="continuation"), "no `continuation` column"),
        (lambda g: g.drop(columns="prompt_id"), "neither a `prompt_id` nor a `prompt` column"),
        (lambda g: pd.concat([g, g.head(1)]), "share a \\(prompt_id, sample\\)"),
        (lambda g: g.assign(sample=-1), "`sample` must be a whole number"),
    ],
)
def test_bad_input_names_the_problem(bold, religion, change, message):
    with pytest.raises(GenerationsError, match=message):
        match_generations(change(_generations(religion["prompt_id"])), bold)


def test_bad_jsonl_line_named(tmp_path, bold_dir):
    path = tmp_path / "gen.jsonl"
    path.write_text('{"prompt_id": "a", "continuation": "b"}\nnot json\n', encoding="utf-8")
    with pytest.raises(GenerationsError, match="gen.jsonl, line 2: not valid JSON"):
        load_generations(path, data_dir=bold_dir)


def test_lm_eval_samples_with_repeats(tmp_path, religion):
    folder = tmp_path / "lm" / "model"
    folder.mkdir(parents=True)
    with open(folder / "samples_bold_religious_ideology_2025-01-01T00-00-00.000.jsonl", "w", encoding="utf-8") as out:
        for doc_id, row in enumerate(religion.head(3).to_dict("records")):
            record = {"doc_id": doc_id, "doc": row, "resps": [[" one"], [" two"]], "filtered_resps": [" one"]}
            out.write(json.dumps(record) + "\n")
    frame = read_lm_eval_samples(tmp_path / "lm")
    assert frame["sample"].tolist() == [0, 1] * 3
    assert frame["continuation"].tolist() == [" one", " two"] * 3
    assert set(frame["lm_eval_task"]) == {"bold_religious_ideology"}
    # a second run of the same task in the folder is ambiguous
    (folder / "samples_bold_religious_ideology_2025-02-01T00-00-00.000.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(GenerationsError, match="several lm-eval runs of the same task"):
        read_lm_eval_samples(tmp_path / "lm")


def test_lm_eval_samples_of_other_tasks_rejected(tmp_path):
    path = tmp_path / "samples_bold_x_2025-01-01T00-00-00.jsonl"
    path.write_text(json.dumps({"doc": {"question": "q"}, "resps": [["a"]]}) + "\n", encoding="utf-8")
    with pytest.raises(GenerationsError, match="no prompt_id"):
        read_lm_eval_samples(path)


@pytest.mark.slow
def test_score_reproduces_run(tmp_path, bold_dir, bold_eval_here, monkeypatch):
    """`bold-eval score` on a run's generations.jsonl gives the run's scores.parquet and summary."""
    monkeypatch.chdir(tmp_path)

    def _bold_eval(*args: str, cwd: Path) -> None:
        result = bold_eval_here(*args)
        assert result.returncode == 0, result.stdout + result.stderr

    run_dir, score_dir = tmp_path / "run", tmp_path / "score"
    # gender_polarity and toxicity are skipped offline in both
    metrics = ["sentiment", "gender_polarity", "toxicity", "psycholinguistic"]
    _bold_eval("run", "--model", "wikipedia", "--limit", "3", "--metrics", *metrics, "--out", str(run_dir),
               cwd=tmp_path)
    generations = run_dir / "generations.jsonl"
    assert generations.is_file()
    # shuffle and drop everything but the keys and texts: order and extra columns must not matter
    frame = pd.read_json(generations, lines=True).sample(frac=1, random_state=1)
    mine = tmp_path / "mine.parquet"
    frame[["prompt_id", "sample", "continuation"]].to_parquet(mine)
    _bold_eval("score", str(mine), "--out", str(score_dir), "--metrics", *metrics, "--allow-partial", cwd=tmp_path)

    ran, scored = pd.read_parquet(run_dir / "scores.parquet"), pd.read_parquet(score_dir / "scores.parquet")
    shared = [column for column in ran.columns if column in scored.columns]
    assert set(ran.columns) == set(scored.columns)
    assert {"text", "continuation", "sentiment_label", "sentiment_compound"} <= set(shared)
    assert len(ran) == len(scored)
    key = ["prompt_id", "sample"]
    pd.testing.assert_frame_equal(
        ran[shared].sort_values(key).reset_index(drop=True), scored[shared].sort_values(key).reset_index(drop=True)
    )
    run_summary = json.loads((run_dir / "summary.json").read_text())
    score_summary = json.loads((score_dir / "summary.json").read_text())
    for section in ("counts", *metrics):
        assert run_summary[section] == score_summary[section], section
    report = (score_dir / "report.md").read_text()
    assert "Sentiment" in report
    # --limit 3 keeps 3 prompts per domain, so most of BOLD is reported missing, per group
    assert "selected prompts had no generation" in report
    assert "religious_ideology/" in report


@pytest.mark.parametrize("name", ["gens.pq", "gens.jsonl"])
def test_explicit_format_wins_over_the_suffix(tmp_path, bold_dir, religion, name):
    path = tmp_path / name
    _generations(religion["prompt_id"]).to_parquet(path)
    generations, report, source = load_generations(path, from_format="parquet", data_dir=bold_dir)
    assert len(generations) == len(religion) and source == {"format": "parquet"}
    jsonl = tmp_path / "gens.txt"
    _generations(religion["prompt_id"]).to_json(jsonl, orient="records", lines=True)
    assert len(load_generations(jsonl, from_format="jsonl", data_dir=bold_dir)[0]) == len(religion)


def test_lm_eval_results_give_the_chat_protocol():
    """`bold-eval score --from lm-eval` records how lm-eval asked the model, so compare can warn."""
    from bold_eval.scoring.external import LM_EVAL_USER_MESSAGE, lm_eval_chat_protocol

    plain = {"configs": {"bold_gender": {"doc_to_text": "{{prompt}}"}}, "chat_template": None}
    assert lm_eval_chat_protocol(plain) == {"chat_template": "none", "system_instruction": None}
    prefill = {"configs": {"bold_gender_chat": {"gen_prefix": "{{prompt}}"}}, "chat_template": "{% for m %}",
               "system_instruction": "Be brief."}
    assert lm_eval_chat_protocol(prefill) == {"chat_template": "prefill", "system_instruction": "Be brief."}
    user = {"configs": {"bold_gender": {}}, "chat_template": "{% for m %}"}
    assert lm_eval_chat_protocol(user)["chat_template"] == LM_EVAL_USER_MESSAGE
