"""k samples per prompt over HTTP: one request with n = k where the server honours `n`, k requests where it
ignores or rejects it, and resume completing a prompt whose samples are partly on disk.

Servers: `InstantServer` (answers at once; `n_mode` honour / ignore / reject), `ChatTemplateServer` and
`BatchingServer` (real tiny models answering `n` with n rows), and `transformers serve` (ignores `n`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bold_eval.core.errors import UserError
from bold_eval.generation.api_options import n_per_request_option
from bold_eval.generation.api_requests import MAX_N, split_tokens
from bold_eval.generation.base import WorkItem
from bold_eval.generation.decoding import make_decoding
from bold_eval.generation.http_client import ApiError
from bold_eval.generation.openai_compatible import ApiGenerator, request_seed
from bold_eval.testing.servers import BatchingServer, ChatTemplateServer, InstantServer

# top_k 0: InstantServer ignores top_k, which the probe would warn about.
DECODING = make_decoding(top_k=0, max_new_tokens=10)  # probe requests ask for 8 tokens
K = 3


def _items(prompts: int = 4, k: int = K) -> list[WorkItem]:
    return [WorkItem(f"p{index}", sample,
                     f"Prompt {index} is about") for index in range(prompts) for sample in range(k)]


def _generate(base_url: str, items: list[WorkItem], **kwargs) -> tuple[ApiGenerator, dict]:
    """Run an ApiGenerator; returns it and {(prompt_id, sample): Generated}, checking nothing arrives twice."""
    kwargs.setdefault("decoding", DECODING)
    kwargs.setdefault("num_samples", K)
    generator = ApiGenerator.create(kwargs.pop("model", "m"), base_url, **kwargs)
    results: dict = {}

    def on_batch(batch, generated):
        for item, result in zip(batch, generated, strict=True):
            assert (item.prompt_id, item.sample) not in results
            results[(item.prompt_id, item.sample)] = result

    generator.generate(items, on_batch=on_batch, progress=False)
    assert set(results) == {(item.prompt_id, item.sample) for item in items}
    return generator, results


def _texts(results: dict) -> dict:
    return {key: result.continuation for key, result in results.items()}


def _one_per_sample(items: list[WorkItem], **kwargs) -> dict:
    """The texts of today's plan, one request per sample, against an InstantServer."""
    with InstantServer() as server:
        return _texts(_generate(server.base_url, items, n_per_request=False, **kwargs)[1])


# --------------------------------------------------------------------------- pure parts


def test_completion_tokens_of_an_n_request_are_shared_out_by_length():
    assert split_tokens(10, ["aaa", "a", ""]) == [8, 2, 0]  # 7.5 + 2.5 + 0: the larger remainder rounds up first
    assert split_tokens(7, ["ab", "ab", "ab"]) == [3, 2, 2]
    assert split_tokens(5, ["", ""]) == [3, 2]  # nothing to weigh by: equal shares
    assert split_tokens(None, ["a", "b"]) == [None, None]
    assert sum(split_tokens(97, ["x" * n for n in (3, 11, 5, 40)])) == 97


def test_n_per_request_option_reads_json_and_strings():
    assert [n_per_request_option(v) for v in ("auto", True, False, "TRUE", "false")] == \
        ["auto", "true", "false", "true", "false"]
    with pytest.raises(ValueError, match="n_per_request must be one of auto, true, false"):
        n_per_request_option("sometimes")
    with pytest.raises(ValueError, match="n_per_request"):
        n_per_request_option(2)


def test_a_prompts_pending_samples_make_one_request_of_at_most_max_n():
    generator = ApiGenerator.create("m", "http://127.0.0.1:9/v1", num_samples=MAX_N + 2, probe=False)
    items = [WorkItem("b", 1, "B"), *(WorkItem("a", s, "A") for s in range(MAX_N + 2)), WorkItem("b", 0, "B")]
    requests = generator.requests(items[::-1])  # any order in, sample order out, prompts by first appearance
    assert [(r[0].prompt_id, [i.sample for i in r]) for r in requests] == [
        ("b", [0, 1]), ("a", list(range(MAX_N))), ("a", [MAX_N, MAX_N + 1])]
    alone = ApiGenerator.create("m", "http://127.0.0.1:9/v1", num_samples=3, n_per_request=False)
    assert alone.requests(items[:3]) == [[item] for item in items[:3]]


def test_the_plan_is_in_the_fingerprint_and_one_sample_runs_are_unchanged():
    url = "http://127.0.0.1:9/v1"
    single = ApiGenerator.create("m", url).settings()
    assert "n_per_request" not in single
    assert single["request"]["seed"] == "sha256(seed, prompt_id, sample) mod 2**31, one per request"
    assert ApiGenerator.create("m", url, num_samples=1, n_per_request=True).settings() == single
    assert ApiGenerator.create("m", url, num_samples=5, n_per_request=False).settings() == single
    with_n = ApiGenerator.create("m", url, num_samples=5).settings()
    assert with_n == ApiGenerator.create("m", url, num_samples=5, n_per_request="true").settings()
    assert with_n["n_per_request"].startswith("one request per prompt") and "first sample" in with_n["request"]["seed"]
    assert "samples_per_request" not in ApiGenerator.create("m", url).info()
    assert "n" not in ApiGenerator.create("m", url).server
    assert ApiGenerator.create("m", url, num_samples=2).server["n"] == "not probed"


# --------------------------------------------------------------------------- honoured, ignored, rejected


def test_an_honouring_server_gets_one_request_per_prompt():
    """n = k, seeded by sample 0; choices mapped by their `index` (the server lists them backwards), choice 0
    being what the single request of sample 0 gives; tokens add up to the server's counts."""
    items = _items()
    with InstantServer(reversed_choices=True) as server:
        generator, results = _generate(server.base_url, items)
        work = [body for body in server.bodies if body.get("max_tokens") == DECODING.max_new_tokens]
    assert sorted((body["n"], body["seed"]) for body in work) == sorted((K, request_seed(0, f"p{i}",
                                                                                         0)) for i in range(4))
    info = generator.info()
    assert info["server"]["n"] == "honoured" and info["samples_per_request"]["mode"] == "n per request"
    plan = info["samples_per_request"]
    assert plan["requests_with_n"] == 4 and plan["texts_from_n_requests"] == 12
    assert info["requests_sent"] == 4 + 7 and "n" in info["sent_params"]  # 7 probe requests
    single = _one_per_sample(items)
    for index in range(4):
        texts = [results[(f"p{index}", s)].continuation for s in range(K)]
        assert texts[0] == single[(f"p{index}", 0)] and len(set(texts)) == K
        assert "\n" not in "".join(texts)
    assert sum(result.num_new_tokens for result in results.values()) == 12 * DECODING.max_new_tokens


@pytest.mark.parametrize("probe", [True, False])
@pytest.mark.parametrize("n_mode", ["ignore", "reject"])
def test_a_server_that_ignores_or_rejects_n_gets_one_request_per_sample_with_the_same_texts(n_mode, probe):
    """The fallback is today's plan exactly: with the probe it is chosen up front; without it the first answers
    teach it (an ignored n still gives its first sample, whose seed is that sample's own)."""
    items = _items()
    with InstantServer(n_mode=n_mode) as server:
        generator, results = _generate(server.base_url, items, probe=probe)
        work = [body for body in server.bodies if body.get("max_tokens") == DECODING.max_new_tokens]
    assert _texts(results) == _one_per_sample(items, probe=probe)
    info = generator.info()
    if probe:
        assert info["server"]["n"].startswith("ignored" if n_mode == "ignore" else "rejected (HTTP 400")
        assert len(work) == 12 and not any("n" in body for body in work)
    elif n_mode == "ignore":  # each prompt: one n request (its first sample), the other two alone
        assert info["samples_per_request"]["answers_with_fewer_choices"] == 4 and len(work) == 12
    else:  # the first rejection names n: no n after that (requests already in flight may still carry it)
        assert info["server"]["n"].startswith("rejected at run time") and not generator.use_n
        assert 12 < len(work) <= 12 + 4 and not any("n" in body for body in work[-4:])


def test_forcing_n_on_a_server_that_rejects_it_is_an_error():
    with InstantServer(n_mode="reject") as server, pytest.raises(ApiError, match="n_per_request=true"):
        _generate(server.base_url, _items(), n_per_request=True)
    with InstantServer(n_mode="reject") as server:  # forced off: n never sent
        _generate(server.base_url, _items(), n_per_request=False)
        assert not any("n" in body for body in server.bodies)


def test_forcing_n_on_a_server_that_ignores_it_fills_the_rest_one_by_one():
    items = _items()
    with InstantServer(n_mode="ignore") as server, pytest.warns(UserWarning, match="n_per_request=true sends n"):
        generator, results = _generate(server.base_url, items, n_per_request=True)
    assert _texts(results) == _one_per_sample(items)
    assert generator.info()["samples_per_request"]["answers_with_fewer_choices"] == 4


def test_chat_choices_each_get_the_protocol():
    """Every choice of a chat n answer is joined to its prompt like a single reply (the echo stripped)."""
    prompt = "Jacob Zachar is an American actor whose"
    items = [WorkItem(f"p{i}", s, prompt) for i in range(2) for s in range(K)]
    with InstantServer(reply=f'"{prompt} roles include Rusty."') as server:
        generator, results = _generate(server.base_url, items, api="chat", probe=False)
        assert [body.get("n") for body in server.bodies] == [K, K]
    assert {result.continuation for result in results.values()} == {" roles include Rusty."}
    assert generator.info()["echo_stripped"] == 6


# --------------------------------------------------------------------------- real models answering n


@pytest.fixture(scope="module")
def thinking_folder(tmp_path_factory, bold_sentences) -> Path:
    from bold_eval.testing.models import build_thinking_lm

    return build_thinking_lm(tmp_path_factory.mktemp("thinking") / "lm", bold_sentences[:300])


def test_reasoning_traces_are_cut_from_every_choice(thinking_folder):
    """A vLLM-like chat server answering n with n sampled rows, the trace in `reasoning_content`: each choice is
    post-processed alone (flagged when it ended inside the trace, else only its answer)."""
    items = [WorkItem(f"p{i}", s, "Jacob Zachar is an American actor whose") for i in range(3) for s in range(4)]
    with ChatTemplateServer(thinking_folder, reasoning=("<think>", "</think>")) as server:
        generator, results = _generate(server.base_url, items, model=server.model_name, api="chat", num_samples=4,
                                       probe=False, decoding=make_decoding(top_k=0, top_p=1.0, max_new_tokens=10),
                                       concurrency=2)
        assert [request.get("n") for request in server.requests] == [4, 4, 4]
    info = generator.info()
    flagged = [r for r in results.values() if r.ended_in_trace]
    assert flagged and all(r.continuation == "" for r in flagged) and info["ended_in_trace"] == len(flagged)
    assert len({r.continuation for r in results.values()}) > 3
    assert not any(marker in r.continuation for r in results.values() for marker in ("<think>", "</think>", "\n"))
    assert sum(r.num_new_tokens for r in results.values()) <= 12 * 10


def test_a_batching_server_answers_n_from_a_real_model(tmp_path, bold_sentences):
    from bold_eval.testing.models import build_tiny_causal_lm

    folder = build_tiny_causal_lm(tmp_path / "lm", bold_sentences[:300])
    items = [WorkItem(f"p{i}", s, " ".join(bold_sentences[i].split()[:5])) for i in range(4) for s in range(K)]
    with BatchingServer(folder) as server:
        generator, results = _generate(server.base_url, items, concurrency=2)
        assert server.requests == 4 + 7
    assert generator.info()["server"]["n"] == "honoured"
    assert len({(key[0], r.continuation) for key, r in results.items()}) > 4
    assert all(r.num_new_tokens <= DECODING.max_new_tokens * K for r in results.values())


# --------------------------------------------------------------------------- bold-eval run and resume


PROMPTS = 7  # one per group of religious_ideology


def _run_config(out: Path, base_url: str, k: int = K, **options):
    from bold_eval.run import RunConfig

    return RunConfig(out=out, model="m", generator="openai-completions", num_samples=k, decoding=DECODING,
                     generator_options={"base_url": base_url, **options}, domains=["religious_ideology"], limit=PROMPTS,
                     metrics=["sentiment"], reference=False, progress=False, batch_size=2, report=False)


def _lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "generations.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_resume_completes_a_prompt_whose_samples_are_partly_on_disk(tmp_path):
    """Samples lost from disk (a torn write) are asked again with n = the missing count, seeded by the first
    missing sample; finished ones are never asked again."""
    from bold_eval.run import run

    out = tmp_path / "run"
    with InstantServer() as server:
        run(_run_config(out, server.base_url))
        complete = _lines(out)
        assert len(complete) == PROMPTS * K and len(server.bodies) == PROMPTS + 7
        prompts = list(dict.fromkeys(record["prompt_id"] for record in complete))
        lost = {(prompts[0], 1), (prompts[0], 2), (prompts[2], 2)}
        kept = [record for record in complete if (record["prompt_id"], record["sample"]) not in lost]
        (out / "generations.jsonl").write_text("".join(json.dumps(record) + "\n" for record in kept), encoding="utf-8")
        server.bodies.clear()
        run(_run_config(out, server.base_url))
        work = [body for body in server.bodies if body.get("max_tokens") == DECODING.max_new_tokens]
    assert sorted((body.get("n", 1), body["seed"]) for body in work) == sorted(
        [(2, request_seed(0, prompts[0], 1)), (1, request_seed(0, prompts[2], 2))])
    records = _lines(out)
    assert sorted((r["prompt_id"], r["sample"]) for r in records) == sorted((r["prompt_id"],
                                                                             r["sample"]) for r in complete)
    assert [r for r in records if (r["prompt_id"], r["sample"]) not in lost] == kept
    info = json.loads((out / "run.json").read_text())["model_info"]
    assert info["samples_per_request"]["requests_with_n"] == 1 and info["server"]["n"] == "honoured"


@pytest.mark.slow
def test_resume_keeps_a_folder_asked_one_request_per_sample(tmp_path):
    """A folder whose k samples were asked one request each (made with n_per_request=false, or before n = k
    existed) resumes under the default the same way, with a warning, instead of refusing."""
    from bold_eval.run import run

    out = tmp_path / "run"
    with InstantServer() as server:
        run(_run_config(out, server.base_url, n_per_request=False))
        (out / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _lines(out)[:5]), encoding="utf-8")
        server.bodies.clear()
        with pytest.warns(UserWarning, match="without n_per_request.*n_per_request=false"):
            run(_run_config(out, server.base_url))
        work = [body for body in server.bodies if body.get("max_tokens") == DECODING.max_new_tokens]
    assert len(work) == PROMPTS * K - 5 and all(body.get("n", 1) == 1 for body in work)
    assert len(_lines(out)) == PROMPTS * K


def test_resume_refuses_to_mix_n_with_one_request_per_sample(tmp_path):
    from bold_eval.run import run

    out = tmp_path / "run"
    with InstantServer() as server:
        run(_run_config(out, server.base_url))
        (out / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _lines(out)[:5]), encoding="utf-8")
        with pytest.raises(UserError, match="n_per_request"):
            run(_run_config(out, server.base_url, n_per_request="false"))
        run(_run_config(out, server.base_url))  # the folder's plan resumes
    assert len(_lines(out)) == PROMPTS * K


def test_a_bad_n_per_request_is_a_clear_error(tmp_path):
    from bold_eval.run import run

    with InstantServer() as server, pytest.raises(ValueError, match="n_per_request must be one of"):
        run(_run_config(tmp_path / "run", server.base_url, n_per_request="maybe"))


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xdist_group("transformers-serve")
def test_transformers_serve_ignores_n_and_gets_one_request_per_sample(served, bold_sentences):
    """A real server that ignores `n` (transformers serve 5.x): the probe finds it, and at concurrency 1 (torch
    seeded once per request) the texts are those of `n_per_request=false`."""
    items = [WorkItem(f"p{i}", s, " ".join(bold_sentences[i].split()[:5])) for i in range(3) for s in range(2)]
    generator, auto = _generate(served.base_url, items, model=served.model, num_samples=2, concurrency=1)
    _, single = _generate(served.base_url, items, model=served.model, num_samples=2, concurrency=1, probe=False,
                          n_per_request=False)
    assert generator.info()["server"]["n"] == "ignored: n=2 gave 1 choice"
    assert generator.info()["requests_sent"] == 7 + len(items)
    assert _texts(auto) == _texts(single)
