"""The Inspect task (`inspect eval bold_eval/bold`): prompts, protocol, scorer and grouped metrics on Inspect's mock
model, its log read back by `bold-eval score`, and `bold-eval run` and Inspect agreeing on a served model."""

from __future__ import annotations

import json
import os
import subprocess
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("inspect_ai", reason="the inspect extra (pip install -e '.[inspect]')")

from inspect_ai import eval as inspect_eval_here  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from bold_eval.data.bold import load_bold  # noqa: E402
from bold_eval.data.selection import select_prompts  # noqa: E402
from bold_eval.inspect_tasks.bold import bold  # noqa: E402

REPLIES = (" was horrible and hated her brother.\nA new line", " is a kind, wonderful man who loves his son.")


def inspect_eval(*args, **kwargs):
    """`inspect_ai.eval` on a thread of its own: Inspect starts an event loop, which fails in a thread where another
    test left one running."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(inspect_eval_here, *args, **kwargs).result()


def _mock_model():
    """Inspect's mock model with fixed replies (one of two by the prompt's length), and token usage given so that
    Inspect does not count tokens with tiktoken (which would download its encoding)."""

    def reply(messages, tools, tool_choice, config):
        output = ModelOutput.from_content(model="mockllm", content=REPLIES[len(messages[-1].text) % 2])
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    return get_model("mockllm/model", custom_outputs=reply)


def test_the_task_is_registered_through_inspects_entry_point():
    (point,) = [point for point in entry_points(group="inspect_ai") if point.name == "bold_eval"]
    registry = point.load()
    assert registry.bold is bold


@pytest.fixture(scope="module")
def mock_log(tmp_path_factory, bold_dir):
    """One Inspect run on the mock model (9 prompts of two domains, 2 samples each): about 20 s, so the tests
    that read it are slow."""
    task = bold(domains="gender,religious_ideology", limit=9, samples=2, metrics="sentiment,gender_polarity",
                data_dir=str(bold_dir))
    (log,) = inspect_eval(task, model=_mock_model(), log_dir=str(tmp_path_factory.mktemp("logs")), display="none")
    assert log.status == "success", log.error
    return log


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("inspect-mock-log")
def test_prompts_are_bold_eval_runs_stratified_sample(mock_log, bold_dir):
    expected = select_prompts(load_bold("all", data_dir=bold_dir).to_pandas(), ["gender", "religious_ideology"], 9)
    ids = sorted({sample.id for sample in mock_log.samples})
    assert ids == sorted(expected["prompt_id"])
    assert sorted({sample.epoch for sample in mock_log.samples}) == [1, 2]
    first = mock_log.samples[0]
    assert first.metadata["chat_template"] == "none"  # mockllm: a raw prompt
    # the reply finished as `bold-eval run` finishes it: cut at the line break
    assert first.metadata["continuation"] in {reply.split("\n")[0] for reply in REPLIES}
    assert mock_log.eval.config.epochs == 2


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("inspect-mock-log")
def test_grouped_rates_and_clustered_stderr(mock_log):
    (score,) = mock_log.results.scores[:1]
    frame = pd.DataFrame([{"group": sample.metadata["group"], "epoch": sample.epoch,
                           **sample.scores["bold_scorer"].value} for sample in mock_log.samples])
    keys = [key for key in frame.columns if key not in ("group", "epoch")]
    assert keys[:2] == ["sentiment_positive", "sentiment_negative"]
    assert any(key.startswith("gender_polarity_unigram") for key in keys)
    by_name = {result.name: result for result in mock_log.results.scores}
    # Inspect names a metric of an extension package `package/metric`, and a grouped value `metric_group`
    negative = {name.rpartition("/")[2]: metric.value for name, metric in by_name["sentiment_negative"].metrics.items()}
    for group, part in frame.groupby("group"):
        assert negative[f"rate_{group}"] == pytest.approx(part["sentiment_negative"].mean())
        assert f"rate_stderr_{group}" in negative
    assert negative["rate_all"] == pytest.approx(frame["sentiment_negative"].mean())
    assert np.isfinite(negative["rate_stderr_all"]) and score.scorer == "bold_scorer"


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("inspect-mock-log")
def test_bold_eval_score_reads_the_log(mock_log, tmp_path, bold_dir, bold_eval_here):
    log_file = mock_log.location
    out = tmp_path / "scored"
    result = bold_eval_here("score", log_file, "--out", out, "--allow-partial", "--metrics", "sentiment",
                            "gender_polarity", "--no-report", env={"BOLD_DATA_DIR": str(bold_dir)})
    assert result.returncode == 0, result.stderr[-3000:]
    scores = pd.read_parquet(out / "scores.parquet")
    assert len(scores) == len(mock_log.samples) and sorted(set(scores["sample"])) == [0, 1]
    by_key = scores.set_index(["prompt_id", "sample"])
    for sample in mock_log.samples:
        row = by_key.loc[(sample.id, sample.epoch - 1)]
        assert row["continuation"] == sample.metadata["continuation"]
        value = sample.scores["bold_scorer"].value
        assert value["sentiment_negative"] == float(row["sentiment_label"] == "negative")
    run = json.loads((out / "run.json").read_text())
    assert run["model"] == "mockllm/model" and run["generations"]["format"] == "inspect"
    assert run["generator_settings"]["chat_template"] == "none"
    assert run["generations"]["generate_config"]["max_tokens"] == 30
    decoding = run["generator_settings"]["decoding"]  # the paper's setting, as `bold-eval run` records it
    assert (decoding["temperature"], decoding["top_k"], decoding["top_p"], decoding["max_new_tokens"]) == \
        (1.0, 40, 0.95, 30) and run["generator_settings"]["seed"] == 0
    # the full report, and the run among others: the same folder as `bold-eval run` writes
    report = bold_eval_here("report", out)
    assert report.returncode == 0, report.stderr[-3000:]
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    site = bold_eval_here("leaderboard", out, "--out", tmp_path / "site", "--no-copy-reports")
    assert site.returncode == 0, site.stderr[-3000:]


def test_keys_and_protocols():
    from bold_eval.generation.chat import ChatOptions
    from bold_eval.inspect_tasks.bold import chat_protocol
    from bold_eval.scoring.indicators import indicator_key

    assert indicator_key("psycholinguistic", "valence (-ve)") == "psycholinguistic_valence_negative"
    assert indicator_key("gender_polarity", "Gender-Max male") == "gender_polarity_gender_max_male"
    assert chat_protocol(ChatOptions(), "openai-api-completions/local/m").protocol == "none"
    assert chat_protocol(ChatOptions(), "openai/gpt-4o").protocol == "instruct"
    assert chat_protocol(ChatOptions(chat_template="prefill"), "vllm/m").protocol == "prefill"


def test_a_log_of_another_task_is_refused(tmp_path, bold_eval_here):
    from inspect_ai import Task
    from inspect_ai.dataset import Sample

    (log,) = inspect_eval(Task(dataset=[Sample(input="hi", target="x")], name="other"), model=_mock_model(),
                          log_dir=str(tmp_path / "logs"), display="none")
    result = bold_eval_here("score", log.location, "--out", tmp_path / "out")
    assert result.returncode != 0 and "not of bold_eval/bold" in result.stderr
    folder = bold_eval_here("score", tmp_path / "logs", "--out", tmp_path / "out2", "--from", "inspect")
    assert folder.returncode != 0 and "no Inspect log of the BOLD task" in folder.stderr


@pytest.mark.slow
@pytest.mark.heavy
def test_run_and_inspect_give_the_same_texts_and_scores(tmp_path, bold_dir, bold_sentences, console_script,
                                                        bold_eval_here):
    """The same served chat model, greedy, under the prefill protocol: `bold-eval run` and `inspect eval
    bold_eval/bold` (its OpenAI-compatible provider) get the same continuations, and `bold-eval score` of the log
    gives the scores of the run, row for row."""
    pytest.importorskip("openai", reason="Inspect's OpenAI-compatible provider (lm-eval[api] in the test extras)")
    from transformers import AutoTokenizer

    from bold_eval.testing.models import build_tiny_causal_lm
    from bold_eval.testing.servers import CHAT_TEMPLATE, ChatTemplateServer

    inspect = console_script("inspect", "inspect")
    # room for the prefill conversation (instruction, prompt, prompt again) in the tiny tokenizer's tokens
    folder = build_tiny_causal_lm(tmp_path / "model", bold_sentences[:300], n_positions=512)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    common = ["--domains", "religious_ideology", "--limit", "7", "--metrics", "sentiment", "gender_polarity"]
    with ChatTemplateServer(folder) as server:
        run = bold_eval_here("run", "--model", server.model_name, "--base-url", server.base_url, "--api", "chat",
                             "--chat-template", "prefill", "--greedy", "--max-new-tokens", "12",
                             *common, "--no-reference", "--no-report", "--out", tmp_path / "run",
                             env={"BOLD_DATA_DIR": str(bold_dir)})
        assert run.returncode == 0, run.stderr[-3000:]
        env = {**os.environ, "BOLD_DATA_DIR": str(bold_dir), "LOCAL_API_KEY": "none", "LOCAL_BASE_URL": server.base_url}
        inspected = subprocess.run(
            [str(inspect), "eval", "bold_eval/bold", "--model", f"openai-api/local/{server.model_name}",
             "-T", "domains=religious_ideology", "-T", "limit=7", "-T", "metrics=sentiment,gender_polarity",
             "-T", "chat_template=prefill", "--temperature", "0", "--max-tokens", "12", "--log-dir",
             str(tmp_path / "logs"), "--display", "plain"], capture_output=True, text=True, env=env, timeout=300)
        assert inspected.returncode == 0, inspected.stdout[-6000:] + inspected.stderr[-6000:]
        assert all(request["continue_final_message"] for request in server.requests[-7:])
    scored = bold_eval_here("score", tmp_path / "logs", "--out", tmp_path / "inspect", "--allow-partial",
                            "--metrics", "sentiment", "gender_polarity", "--no-reference", "--no-report",
                            env={"BOLD_DATA_DIR": str(bold_dir)})
    assert scored.returncode == 0, scored.stderr[-3000:]
    columns = ["prompt_id", "continuation", "sentiment_label", "sentiment_compound", "gender_polarity_unigram_label"]
    from_run = pd.read_parquet(tmp_path / "run" / "scores.parquet")[columns].sort_values("prompt_id")
    from_inspect = pd.read_parquet(tmp_path / "inspect" / "scores.parquet")[columns].sort_values("prompt_id")
    assert len(from_run) == 7 and from_run["continuation"].str.len().gt(0).any()
    pd.testing.assert_frame_equal(from_run.reset_index(drop=True), from_inspect.reset_index(drop=True))
    settings = json.loads((tmp_path / "inspect" / "run.json").read_text())["generator_settings"]
    ran = json.loads((tmp_path / "run" / "run.json").read_text())["generator_settings"]
    for key in ("chat_template", "chat_instruction", "think_end_token"):  # compare sees the same protocol
        assert settings[key] == ran[key], key
    assert settings["chat_template"] == "prefill" and settings["decoding"]["greedy"]
    assert Path(tmp_path / "logs").is_dir()
