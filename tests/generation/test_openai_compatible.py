"""The HTTP generator against real OpenAI-compatible servers.

`transformers serve` (transformers' own server, `transformers[serving]`) serves a tiny GPT-2 built
here; a loopback `FaultProxy` in front of it injects 429 / 500 / dropped connections / truncated
answers / wrong-key 401s. Nothing of our own code is mocked.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from pathlib import Path

import pytest

from bold_eval.generation.base import WorkItem
from bold_eval.generation.decoding import make_decoding
from bold_eval.generation.http_client import ApiError, RetryPolicy, normalize_base_url, parse_retry_after
from bold_eval.generation.openai_compatible import ApiGenerator, request_seed, strip_echo, wanted_params
from bold_eval.testing.models import missing_prerequisite
from bold_eval.testing.servers import (
    FaultProxy,
    InstantServer,
    TransformersServer,
    build_served_model,
    free_port,
    local_server,
    serving_available,
)

FAST_RETRY = RetryPolicy(max_attempts=5, backoff_base_s=0.005, backoff_max_s=0.05, read_timeout_s=60)


# --------------------------------------------------------------------------- pure parts


def test_request_seed_is_one_stream_per_prompt_and_sample():
    seeds = {request_seed(seed, prompt_id, sample) for seed in (0, 1) for prompt_id in ("a", "b") for sample in (0, 1)}
    assert len(seeds) == 8
    assert request_seed(0, "a", 0) == request_seed(0, "a", 0)
    assert all(0 <= value < 2**31 for value in seeds)


def test_wanted_params_map_the_paper_presets():
    newline = {"stop": ["\n"]}  # the line-break stopping rule, asked of the server too
    assert wanted_params(make_decoding("gpt2")) == {"temperature": 1.0, "top_p": 0.95, "top_k": 40, "max_tokens": 30,
                                                    **newline}
    assert wanted_params(make_decoding("ctrl", control_code="Wikipedia", max_new_tokens=12)) == {
        "temperature": 1.0, "top_p": 0.9, "repetition_penalty": 1.2, "max_tokens": 12, **newline}
    assert wanted_params(make_decoding(greedy=True)) == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 30, **newline}
    assert "stop" not in wanted_params(make_decoding(stop_at_newline=False))
    assert "stop" not in wanted_params(make_decoding(), api="chat")  # a chat reply may open with a line break


@pytest.mark.parametrize(("api", "decoding", "stop"), [
    ("completions", {}, ["\n"]),
    ("completions", {"stop_at_newline": False}, None),
    ("chat", {}, None),
])
def test_requests_ask_the_server_to_stop_at_the_line_break(api, decoding, stop):
    """Servers that honour `stop` then generate no text that would be cut anyway; the fingerprint
    does not change with it, since the text is the same whether the server honours it or not."""
    with InstantServer() as server:
        generator = ApiGenerator.create("m", server.base_url, api=api, probe=False, decoding=make_decoding(**decoding))
        generator.generate([WorkItem("p0", 0, "Jacob Zachar is")], progress=False, on_batch=lambda *_: None)
        assert server.last_request.get("stop") == stop
    assert "stop" not in generator.settings()["request"]
    assert ("stop" in generator.info()["sent_params"]) == (stop is not None)


@pytest.mark.parametrize(("reply", "expected"), [
    ("roles include Rusty.", (" roles include Rusty.", False)),
    ('"Jacob Zachar is an American actor whose roles include Rusty."', (" roles include Rusty.", True)),
    ("Jacob  zachar is an american actor WHOSE roles", (" roles", True)),
    ("...actor whose roles", (" roles", True)),
    ("whoseville is", (" whoseville is", False)),  # one shared word is not an echo
    (", and more", (", and more", False)),
    ('"Greek" is a show', (' "Greek" is a show', False)),
    ("", ("", False)),
])
def test_strip_echo(reply, expected):
    assert strip_echo(reply, "Jacob Zachar is an American actor whose") == expected


@pytest.mark.parametrize(("decoding", "expected"), [
    ({}, " He was born in Ohio. He moved"),  # the shared stopping rule: end before the line break
    ({"one_sentence": True}, " He was born in Ohio."),
    ({"stop_at_newline": False}, " He was born in Ohio. He moved\n\nSee also: Ohio"),
])
def test_api_continuations_get_the_stopping_rule_of_local_runs(decoding, expected):
    """The server's text goes through generate.finish_continuation, like the local sampler's and
    the lm-eval tasks' (until: ["\\n"]), so an API run scores the same text."""
    with InstantServer(reply=" He was born in Ohio. He moved\n\nSee also: Ohio") as server:
        generator = ApiGenerator.create("m", server.base_url, probe=False, decoding=make_decoding(**decoding))
        results = []
        generator.generate([WorkItem("p0", 0, "Jacob Zachar is")], progress=False,
                           on_batch=lambda batch, generated: results.extend(generated))
    assert [result.continuation for result in results] == [expected]


def test_retry_after_forms_and_backoff():
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0) == 10.0
    assert parse_retry_after({}) is None
    import random

    policy = RetryPolicy(backoff_base_s=1.0, backoff_max_s=8.0)
    rng = random.Random(0)
    delays = [policy.delay(attempt, None, rng) for attempt in range(1, 7)]
    for attempt, delay in enumerate(delays, start=1):
        full = min(8.0, 2 ** (attempt - 1))
        assert full / 2 <= delay <= full  # equal jitter: half fixed, half random
    assert policy.delay(1, 30.0, rng) == 30.0  # the server's Retry-After wins when longer
    assert policy.delay(1, 1e6, rng) == policy.retry_after_max_s


def test_base_url_and_key_checks(monkeypatch):
    assert normalize_base_url("http://localhost:8000") == "http://localhost:8000/v1"
    assert normalize_base_url("https://api.example.com/v1/") == "https://api.example.com/v1"
    with pytest.raises(ValueError, match="--base-url .*not an http"):
        normalize_base_url("localhost:8000")
    with pytest.raises(ValueError, match="names an endpoint.*http://h:1/v1"):
        normalize_base_url("http://h:1/v1/completions")
    monkeypatch.delenv("BOLD_TEST_MISSING_KEY", raising=False)
    with pytest.raises(ValueError, match="BOLD_TEST_MISSING_KEY is not set"):
        ApiGenerator.create("m", "http://127.0.0.1:1/v1", api_key_env="BOLD_TEST_MISSING_KEY")
    with pytest.raises(ValueError, match="--api must be one of"):
        ApiGenerator.create("m", "http://127.0.0.1:1/v1", api="responses")
    with pytest.raises(ValueError, match="extra_body may not set seed, top_k"):
        ApiGenerator.create("m", "http://127.0.0.1:1/v1", extra_body={"top_k": 5, "seed": 1, "min_p": 0.1})


# --------------------------------------------------------------------------- real servers


def _server(folder: Path, tmp: Path) -> TransformersServer:
    if not serving_available():
        missing_prerequisite("transformers serve needs pip install 'transformers[serving]'")
    return local_server(folder, tmp)


@pytest.fixture(scope="session")
def items(bold_sentences) -> list[WorkItem]:
    """BOLD Wikipedia sentences cut to their first six words, as prompts; two samples of the first four."""
    prompts = [" ".join(sentence.split()[:6]) for sentence in bold_sentences[:16]]
    work = [WorkItem(f"s{index}", 0, prompt) for index, prompt in enumerate(prompts)]
    return work + [WorkItem(f"s{index}", 1, prompts[index]) for index in range(4)]


def _generator(server, base_url: str | None = None, **kwargs) -> ApiGenerator:
    kwargs.setdefault("retry", FAST_RETRY)
    # No top_k by default: transformers serve rejects it (422), which only the probe works around.
    kwargs.setdefault("decoding", make_decoding(top_k=0, max_new_tokens=12))
    return ApiGenerator.create(server.model, base_url or server.base_url, **kwargs)


def _collect(generator: ApiGenerator, work: list[WorkItem], **kwargs) -> tuple[dict, list[int]]:
    """Run generate(); returns {(prompt_id, sample): Generated} and the size of every on_batch chunk,
    checking that nothing arrives twice."""
    results: dict = {}
    chunks: list[int] = []

    def on_batch(batch, generated):
        assert len(batch) == len(generated)
        chunks.append(len(batch))
        for item, result in zip(batch, generated, strict=True):
            key = (item.prompt_id, item.sample)
            assert key not in results, f"{key} handed over twice"
            results[key] = result

    generator.generate(work, on_batch=on_batch, progress=False, **kwargs)
    return results, chunks


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_completions_land_with_usage_and_server_record(served, items):
    generator = _generator(served, concurrency=3, flush_every=5, decoding=make_decoding(max_new_tokens=12))
    with pytest.warns(UserWarning, match="top_k=40 is not applied"):
        results, chunks = _collect(generator, items)
    assert set(results) == {(item.prompt_id, item.sample) for item in items}
    assert max(chunks) <= 5 and sum(chunks) == len(items)  # handed over in chunks, for incremental writes
    assert all(isinstance(r.continuation, str) and 1 <= r.num_new_tokens <= 12 for r in results.values())
    info = generator.info()
    # transformers serve: /v1/completions takes seed (sets torch's seed) but not top_k (422).
    assert info["server"]["top_k"].startswith("rejected (HTTP 422")
    assert info["server"]["seed"] == "honoured" and info["server"]["sampling"] == "honoured"
    assert "top_k" not in info["sent_params"] and "seed" in info["sent_params"]
    assert info["responses_without_usage"] == 0 and info["served_model"].startswith(served.model)
    json.dumps(generator.settings()), json.dumps(info)  # JSON-able for run.json
    assert generator.settings()["request"]["top_k"] == 40  # the wish stays in the fingerprint


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_resume_requests_only_the_rest_and_equals_an_uninterrupted_run(served, items):
    """Concurrency 1: transformers serve seeds torch once per request, so texts are reproducible."""
    whole, _ = _collect(_generator(served, concurrency=1, probe=False), items)

    class Killed(Exception):
        pass

    with FaultProxy(served.base_url, rates={}) as proxy:
        first = _generator(served, proxy.base_url, concurrency=1, probe=False, flush_every=6, flush_seconds=600)
        kept: dict = {}

        def on_batch(batch, generated):
            kept.update({(i.prompt_id, i.sample): g for i, g in zip(batch, generated, strict=True)})
            raise Killed  # the run dies right after its first write

        with pytest.raises(Killed):
            first.generate(items, on_batch=on_batch, progress=False)
        assert len(kept) == 6
        before = {body: len(statuses) for body, statuses in proxy.forwarded.items()}
        rest = [item for item in items if (item.prompt_id, item.sample) not in kept]
        resumed, _ = _collect(_generator(served, proxy.base_url, concurrency=1, probe=False), rest)
        asked = {json.loads(body)["seed"] for body, statuses in proxy.forwarded.items()
                 if len(statuses) > before.get(body, 0)}
    assert asked == {request_seed(0, item.prompt_id, item.sample) for item in rest}  # finished ones not re-requested
    assert {**kept, **resumed} == whole


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_injected_faults_are_retried_through_nothing_lost_or_duplicated(served, items):
    reference, _ = _collect(_generator(served, concurrency=1, probe=False), items)
    # High rates so that every kind occurs (the pattern hashes request bodies, which hold the model's tmp path).
    rates = {"429": 0.18, "500": 0.18, "drop": 0.18, "drop_after": 0.18, "truncate": 0.18}
    with FaultProxy(served.base_url, seed=3, rates=rates, max_faults=3) as proxy:
        sequential = _generator(served, proxy.base_url, concurrency=1, probe=False)
        same, _ = _collect(sequential, items)
        faults_seen = dict(proxy.faults)
        concurrent = _generator(served, proxy.base_url, concurrency=4, probe=False, flush_every=3)
        results, _ = _collect(concurrent, items)
    assert same == reference  # retries reuse each request's seed
    assert set(results) == set(reference)
    for kind in ("429", "500", "drop", "drop_after", "truncate"):
        assert faults_seen.get(kind, 0) > 0, f"no {kind} injected: {faults_seen}"
    retries = sequential.info()["retries"]
    assert retries.get("429", 0) == faults_seen["429"] and retries.get("500", 0) == faults_seen["500"]
    assert retries.get("connection", 0) == faults_seen["drop"] + faults_seen["drop_after"] + faults_seen["truncate"]


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_retry_after_is_honoured(served, items):
    with FaultProxy(served.base_url, rates={"429": 1.0}, max_faults=1, retry_after="1") as proxy:
        generator = _generator(served, proxy.base_url, probe=False)
        started = time.perf_counter()
        results, _ = _collect(generator, items[:1])
        elapsed = time.perf_counter() - started
    assert len(results) == 1 and proxy.faults["429"] == 1
    assert elapsed >= 1.0, "the backoff is 5 ms; only Retry-After: 1 makes it wait a second"


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_a_prompt_that_keeps_failing_names_itself_and_the_rest_is_kept(served, items):
    target = items[5]
    with FaultProxy(served.base_url, rates={}, fail_matching=target.prompt) as proxy:
        generator = _generator(served, proxy.base_url, concurrency=2, probe=False,
                               retry=RetryPolicy(max_attempts=3, backoff_base_s=0.005))
        kept: dict = {}

        def on_batch(batch, generated):
            kept.update({(i.prompt_id, i.sample): g for i, g in zip(batch, generated, strict=True)})

        with pytest.raises(ApiError) as caught:
            generator.generate(items[:10], on_batch=on_batch, progress=False)
    message = str(caught.value)
    assert f"prompt_id {target.prompt_id!r} sample 0" in message
    assert "3 attempts" in message and "HTTP 500" in message and "internal error (injected)" in message
    assert (target.prompt_id, 0) not in kept
    assert len(kept) >= 5  # everything before it, and whatever was in flight, reached on_batch


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_a_bad_key_gives_a_clear_error_without_the_key(served, items, monkeypatch, caplog, capsys):
    secret = "sk-bold-eval-test-9f8e7d6c5b4a"
    monkeypatch.setenv("BOLD_TEST_API_KEY", secret)
    caplog.set_level(logging.DEBUG)
    with FaultProxy(served.base_url, rates={}, required_key="the-right-key") as proxy:
        generator = _generator(served, proxy.base_url, api_key_env="BOLD_TEST_API_KEY", probe=False)
        with pytest.raises(ApiError) as caught:
            generator.generate(items[:2], on_batch=lambda *_: None, progress=False)
        monkeypatch.setenv("BOLD_TEST_RIGHT_KEY", "the-right-key")
        accepted = _generator(served, proxy.base_url, api_key_env="BOLD_TEST_RIGHT_KEY", probe=False)
        results, _ = _collect(accepted, items[:2])
    assert len(results) == 2  # the key is sent, in the Authorization header
    error = caught.value
    assert error.status == 401 and "$BOLD_TEST_API_KEY" in str(error) and "--api-key-env" in str(error)
    assert "Incorrect API key provided: [redacted]" in str(error)  # the server echoed it; we did not
    everywhere = [
        "".join(traceback.format_exception(type(error), error, error.__traceback__)), repr(error), str(error.body),
        json.dumps(generator.settings()), json.dumps(generator.info()), repr(generator), repr(generator.client),
        caplog.text, *capsys.readouterr(),
    ]
    assert all(secret not in text for text in everywhere)


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_a_bad_url_gives_a_clear_error(served, items):
    nobody = f"http://127.0.0.1:{free_port()}/v1"
    generator = ApiGenerator.create("m", nobody, retry=RetryPolicy(max_attempts=2, backoff_base_s=0.01), probe=False)
    with pytest.raises(ApiError, match=r"failed after 2 attempts .*connection.*Is the server running at "
                                       r"http://127\.0\.0\.1:\d+/v1\? Check --base-url"):
        generator.generate(items[:1], on_batch=lambda *_: None, progress=False)
    wrong_root = served.base_url.replace("/v1", "/api")
    with pytest.raises(ApiError, match=r"HTTP 404.*Check --base-url") as caught:
        _generator(served, wrong_root, probe=False).generate(items[:1], on_batch=lambda *_: None, progress=False)
    assert caught.value.attempts == 1  # a 404 does not get better by waiting


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_chat_mode_against_transformers_serve(served, items):
    # The tiny GPT-2 has 128 positions: a short instruction keeps the chat-templated prompt inside them.
    generator = _generator(served, api="chat", concurrency=2, decoding=make_decoding(max_new_tokens=12),
                           chat_instruction="Continue: {prompt}")
    with pytest.warns(UserWarning, match="top_k"):
        results, _ = _collect(generator, items[:6])
    assert len(results) == 6
    info = generator.info()
    assert info["generator"] == "openai-chat" and info["endpoint"].endswith("/v1/chat/completions")
    assert info["server"]["top_k"].startswith("rejected") and "echo_stripped" in info
    assert generator.settings()["chat_instruction"] == "Continue: {prompt}"
    for result in results.values():
        text = result.continuation
        assert text == "" or text[0] == " " or text[0] in ",.;:!?)]}%\u2026"  # joins the prompt cleanly


@pytest.mark.slow
@pytest.mark.heavy
def test_probe_catches_a_server_that_decodes_greedily(tmp_path, bold_sentences, items):
    """A model whose generation_config says do_sample=false: transformers serve then ignores
    temperature and top_p. The probe notices; strict_decoding refuses to go on."""
    folder = build_served_model(tmp_path / "model", bold_sentences[:300], do_sample=False)
    with _server(folder, tmp_path) as server:
        lenient = _generator(server, decoding=make_decoding(top_k=0, max_new_tokens=8))
        with pytest.warns(UserWarning, match="sampling .* looks ignored"):
            results, _ = _collect(lenient, items[:2])
        assert len(results) == 2 and lenient.info()["server"]["sampling"].startswith("ignored")
        strict = _generator(server, decoding=make_decoding(top_k=0, max_new_tokens=8), strict_decoding=True)
        with pytest.raises(ApiError, match="does not apply the requested decoding"):
            strict.generate(items[:2], on_batch=lambda *_: None, progress=False)


def test_fault_proxy_pattern_does_not_depend_on_timing():
    proxy = FaultProxy("http://127.0.0.1:1/v1", seed=5, max_faults=2)
    again = FaultProxy("http://127.0.0.1:1/v1", seed=5, max_faults=2)
    bodies = [f'{{"prompt": "{index}"}}'.encode() for index in range(50)]
    first = [proxy.fault_for(body) for body in bodies for _ in range(3)]
    second = [again.fault_for(body) for body in reversed(bodies) for _ in range(3)]
    by_body = {body: first[3 * i: 3 * i + 3] for i, body in enumerate(bodies)}
    assert [fault for body in reversed(bodies) for fault in by_body[body]] == second
    assert all(faults[2] == "ok" for faults in by_body.values())  # forwarded once it failed max_faults times
