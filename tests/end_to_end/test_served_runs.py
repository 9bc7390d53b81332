"""`bold-eval run --model NAME --base-url URL` end to end, as a user runs it: the installed CLI in a
subprocess against a real `transformers serve` (a tiny GPT-2 built here), through a loopback
`FaultProxy` that counts what reaches the server: a `--limit` run completes,
a SIGKILLed run resumes without re-requesting finished prompts, injected faults are retried through
with nothing lost or duplicated, and a bad key or URL ends with a one-paragraph error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bold_eval.generation.openai_compatible import request_seed
from bold_eval.testing.servers import (
    FaultProxy,
    free_port,
)

pytestmark = [pytest.mark.slow, pytest.mark.heavy, pytest.mark.xdist_group("transformers-serve")]

BOLD_EVAL = Path(sys.executable).with_name("bold-eval")
LIMIT = 10  # prompts of one domain
RUN_TIMEOUT_S = 300
# --top-k 0: transformers serve rejects top_k (HTTP 422), which the probe records; leaving it out keeps
# the probe short. --batch-size 2: results reach generations.jsonl two at a time.
RUN_FLAGS = ["--domains", "religious_ideology", "--limit", str(LIMIT), "--metrics", "sentiment", "--top-k", "0",
             "--max-new-tokens", "12", "--batch-size", "2", "--no-progress",
             "--generator-option", "backoff_base_s=0.02"]


def _env(**extra: str) -> dict[str, str]:
    """The test process's environment (tests/conftest.py set the data folders and caches), offline,
    one thread, and no API key of the user's."""
    env = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    env.update(HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)
    return env


def _command(model: str, base_url: str, out: Path, *extra: str) -> list[str]:
    return [str(BOLD_EVAL), "run", "--model", model, "--base-url", base_url, "--out", str(out), *RUN_FLAGS, *extra]


def _run(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=env or _env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def run_here(bold_eval_here, monkeypatch):
    """`bold-eval run` in this process (the kill-and-resume test keeps a real process): `run_here(command,
    **env)` with a `_command` list, no API key of the user's."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def run(command: list[str], **env: str) -> subprocess.CompletedProcess:
        return bold_eval_here(*command[1:], env=env)

    return run


def _generations(out: Path) -> list[dict]:
    """The whole lines of generations.jsonl (a SIGKILL may tear the last one)."""
    path = out / "generations.jsonl"
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line.strip()]


def _keys(records: list[dict]) -> list[tuple[str, int]]:
    return [(record["prompt_id"], record["sample"]) for record in records]


def _work_requests(proxy: FaultProxy, seeds: dict[int, tuple[str, int]]) -> list[tuple[str, int]]:
    """The (prompt_id, sample) of every generation request the server answered (probe requests,
    whose seeds belong to no prompt, left out), once per time it was forwarded."""
    asked = []
    for body, statuses in proxy.forwarded.items():
        seed = json.loads(body).get("seed")
        if seed in seeds:
            asked += [seeds[seed]] * len(statuses)
    return asked


def _assert_complete(out: Path) -> list[tuple[str, int]]:
    keys = _keys(_generations(out))
    assert len(keys) == LIMIT and len(set(keys)) == LIMIT, keys  # every prompt exactly once
    return keys


def test_a_limit_run_completes_and_the_report_names_the_api_and_the_server(served, tmp_path, run_here):
    out = tmp_path / "run"
    with FaultProxy(served.base_url, rates={}) as proxy:
        result = run_here(_command(served.model, proxy.base_url, out, "--concurrency", "3"))
        assert result.returncode == 0, result.stderr
        keys = _assert_complete(out)
        seeds = {request_seed(0, prompt_id, sample): (prompt_id, sample) for prompt_id, sample in keys}
        assert sorted(_work_requests(proxy, seeds)) == sorted(keys)  # one request per prompt, no more
    info = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert info["generator"] == "openai-completions" and info["generator_settings"]["api"] == "completions"
    server = info["model_info"]["server"]
    assert server["seed"] == "honoured" and server["sampling"] == "honoured"
    assert all(record["num_new_tokens"] >= 1 for record in _generations(out))  # from the server's usage
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "- **generator**: openai-completions" in report and "- **api**: completions" in report
    assert "- **server's handling of the decoding**:" in report and '"seed": "honoured"' in report


def test_a_killed_run_resumes_without_re_requesting_finished_prompts(served, tmp_path):
    out = tmp_path / "run"
    # Each request is held 0.3 s, so the run is still going when its first batch is on disk.
    with FaultProxy(served.base_url, rates={}, delay_s=0.3) as proxy:
        command = _command(served.model, proxy.base_url, out, "--concurrency", "1",
                           "--generator-option", "probe=false")
        process = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while not _generations(out) and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert process.poll() is None, f"the run ended before it could be killed:\n{process.stderr.read()}"
            os.killpg(process.pid, signal.SIGKILL)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            process.stderr.close()
        assert process.returncode == -signal.SIGKILL
        finished = _keys(_generations(out))
        assert 1 <= len(finished) < LIMIT, finished
        time.sleep(1.0)  # a request the killed run had sent still reaches the proxy: let it arrive before counting
        arrived_before = dict(proxy.seen)
        proxy.delay_s = 0.0
        result = _run(command)
        assert result.returncode == 0, result.stderr
        keys = _assert_complete(out)
        assert keys[: len(finished)] == finished  # the file was appended to, not rewritten
        seeds = {request_seed(0, prompt_id, sample): (prompt_id, sample) for prompt_id, sample in keys}
        resumed = []  # requests that arrived from the second run
        for body, count in proxy.seen.items():
            if not body.strip():  # a connection the killed run opened and never wrote to (late to the proxy under load)
                continue
            resumed += [seeds[json.loads(body)["seed"]]] * (count - arrived_before.get(body, 0))
    assert sorted(resumed) == sorted(set(keys) - set(finished))  # only the missing ones, each once


def test_injected_faults_are_retried_through_nothing_lost_or_duplicated(served, tmp_path, run_here):
    out = tmp_path / "run"
    rates = {"429": 0.25, "500": 0.25, "drop": 0.25}
    with FaultProxy(served.base_url, seed=7, rates=rates, max_faults=3, retry_after="1") as proxy:
        result = run_here(_command(served.model, proxy.base_url, out, "--concurrency", "4"))
        faults = dict(proxy.faults)
        assert result.returncode == 0, result.stderr
        keys = _assert_complete(out)
        seeds = {request_seed(0, prompt_id, sample): (prompt_id, sample) for prompt_id, sample in keys}
        asked = _work_requests(proxy, seeds)
    assert sorted(asked) == sorted(keys)  # faults never reached the server: each prompt generated once
    for kind in ("429", "500", "drop"):
        assert faults.get(kind, 0) > 0, f"no {kind} injected: {faults}"
    retries = json.loads((out / "run.json").read_text(encoding="utf-8"))["model_info"]["retries"]
    assert retries.get("429") == faults["429"] and retries.get("500") == faults["500"]
    assert retries.get("connection") == faults["drop"]


def _one_paragraph_error(result: subprocess.CompletedProcess) -> str:
    """The CLI failed with status 1 and one `bold-eval: error:` line, no traceback; returns that line."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("bold-eval: error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def test_a_bad_key_gives_a_one_paragraph_error_without_the_key(served, tmp_path, run_here):
    secret = "sk-bold-eval-cli-test-5e4d3c2b1a"
    out = tmp_path / "run"
    with FaultProxy(served.base_url, rates={}, required_key="the-right-key") as proxy:
        result = run_here(_command(served.model, proxy.base_url, out, "--api-key-env", "BOLD_TEST_API_KEY"),
                          BOLD_TEST_API_KEY=secret)
        assert proxy.faults["401"] >= 1 and not proxy.forwarded  # the key was sent, and refused
    error = _one_paragraph_error(result)
    assert "HTTP 401" in error and "$BOLD_TEST_API_KEY" in error and "--api-key-env" in error, error
    written = [path.read_text(encoding="utf-8", errors="replace") for path in out.rglob("*") if path.is_file()]
    assert all(secret not in text for text in [result.stdout, result.stderr, *written])


def test_a_bad_url_gives_a_one_paragraph_error(tmp_path, run_here):
    nobody = f"http://127.0.0.1:{free_port()}/v1"
    result = run_here(_command("served-model", nobody, tmp_path / "run", "--generator-option", "max_attempts=2"))
    error = _one_paragraph_error(result)
    assert "failed after 2 attempts" in error and f"Is the server running at {nobody}? Check --base-url" in error, error
