"""`bold-eval run` flags that choose and configure a generator: --base-url/--api/--concurrency/
--api-key-env (the OpenAI-compatible HTTP generator) and --model-args (how a causal LM loads).

The HTTP path runs against `bold_eval.testing.servers.InstantServer`, a real loopback HTTP server that
answers at once; generation against `transformers serve` is covered in tests/generation/test_openai_compatible.py.
"""

from __future__ import annotations

import json
import re

import pytest

from bold_eval.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")

RUN = ["--domains", "religious_ideology", "--limit", "7", "--metrics", "sentiment", "--no-progress"]


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("api", ["completions", "chat"])
@pytest.mark.slow
def test_base_url_runs_through_the_server_to_the_report(tmp_path, api, monkeypatch):
    from bold_eval.testing.servers import InstantServer

    monkeypatch.setenv("BOLD_TEST_KEY", "sk-secret-not-for-files")
    out = tmp_path / "run"
    with InstantServer() as server:
        argv = ["run", "--model", "served-model", "--base-url", server.base_url, "--api", api, "--concurrency", "3",
                "--api-key-env", "BOLD_TEST_KEY", "--top-k", "0", "--max-new-tokens", "6", "--out", str(out), *RUN]
        assert main(argv) == 0
        sent = server.requests
        assert main(argv) == 0  # resume: nothing left to request
        assert server.requests == sent
        base_url = server.base_url
    info = json.loads((out / "run.json").read_text())
    assert info["generator"] == f"openai-{api}"
    assert info["generator_settings"]["api"] == api and info["generator_settings"]["model"] == "served-model"
    assert info["model_info"]["concurrency"] == 3 and info["model_info"]["api_key_env"] == "BOLD_TEST_KEY"
    assert len(_lines(out / "generations.jsonl")) == 7
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"- **generator**: openai-{api}" in report and f"- **api**: {api}" in report
    endpoint = "chat/completions" if api == "chat" else "completions"
    assert f"- **model**: served-model (OpenAI-compatible server, {api} API at {base_url}/{endpoint})" in report
    for name in ("run.json", "report.md", "generations.jsonl", "summary.json"):
        assert "sk-secret" not in (out / name).read_text(encoding="utf-8")


def _refused(capsys, argv, message):
    """`bold-eval ARGV` stops with usage status 2 and `message` (a regex) on stderr, no traceback."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "Traceback" not in err, err


def test_api_flags_are_checked_against_the_generator(tmp_path, capsys):
    base = ["run", "--model", "served-model", "--out", str(tmp_path / "run")]
    url = ["--base-url", "http://127.0.0.1:9/v1"]
    _refused(capsys, [*base, "--api", "chat", "--concurrency", "4"],
             "--api, --concurrency apply to a model behind a server; give --base-url")
    _refused(capsys, [*base, *url, "--generator", "hf-causal"], "--generator hf-causal contradicts it")
    _refused(capsys, [*base, *url, "--generator", "openai-completions", "--api", "chat"],
             "--generator openai-completions contradicts it")
    _refused(capsys, [*base, *url, "--model-args", "device_map=auto"], "--model-args loads a checkpoint locally")
    _refused(capsys, [*base, *url, "--gibbs-max-iter", "5"], "--gibbs-max-iter apply to --generator gibbs-mlm")
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_model_args_reach_from_pretrained_and_the_fingerprint(tmp_path, bold_sentences, monkeypatch, capsys):
    from bold_eval.testing.models import build_tiny_causal_lm

    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    model = build_tiny_causal_lm(tmp_path / "model", bold_sentences[:200])
    out = tmp_path / "run"
    argv = ["run", "--model", str(model), "--out", str(out), "--dtype", "float32", "--device", "cpu",
            "--max-new-tokens", "4", "--model-args", "attn_implementation=eager", *RUN]
    assert main(argv) == 0
    info = json.loads((out / "run.json").read_text())
    assert info["generator"] == "hf-causal"
    assert info["generator_settings"]["model_args"] == {"attn_implementation": "eager"}
    assert info["generation_settings"]["generator_settings"]["model_args"] == {"attn_implementation": "eager"}
    assert main([*argv[:-len(RUN) - 1], "attn_implementation=sdpa", *RUN]) == 2  # another loading: refused
    _refused(capsys, [*argv[:-len(RUN) - 1], "eager", *RUN], "expected KEY=VALUE")
    monkeypatch.setenv("WORLD_SIZE", "2")  # as under accelerate launch / torchrun with two processes
    _refused(capsys, [*argv[:-len(RUN) - 1], "device_map=auto", "--out", str(tmp_path / "sharded"), *RUN],
             "device_map=auto shards one model .* 2 processes")
    _refused(capsys, ["run", "--model", "wikipedia", "--out", str(tmp_path / "wiki"), "--model-args",
                      "device_map=auto"],
             "--model-args applies to causal LMs loaded here")

