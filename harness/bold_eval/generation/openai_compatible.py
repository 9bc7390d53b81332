"""BOLD continuations from a model behind an OpenAI-compatible HTTP API.

vLLM, TGI, SGLang, llama.cpp, Ollama, `transformers serve` and hosted APIs all speak this API, so one
generator reaches models of any size. BOLD measures what a model writes after a prompt (Section 3.3
and 5 of the paper), which is the plain-continuation `/v1/completions` endpoint (`api="completions"`,
the default). `api="chat"` is for chat-only endpoints, under a chat protocol of
`bold_eval.generation.chat` (`--chat-template`): `instruct` (the default: the prompt in a user message with
`CHAT_INSTRUCTION`, an echo of the prompt at the start of the reply stripped) or `prefill` (the prompt
begins the assistant's reply, sent as vLLM and SGLang take it: `continue_final_message: true,
add_generation_prompt: false`; the probe checks the server honours it). A thinking trace, in the reply or
in its `reasoning_content` / `reasoning` field, is never scored.

Decoding (appendix A.2: top-k 40, top-p 0.95 for GPT-2) is mapped onto the request: `temperature`,
`top_p` (always sent; 1.0 means no filter) and `max_tokens`; `top_k` and `repetition_penalty` are not
in the OpenAI schema, so they are sent only where the server takes them; greedy decoding is
`temperature 0`; completions requests carry `stop: ["\\n"]` under the line-break stopping rule
(`wanted_params`). Each request carries its own `seed`, derived from (seed, prompt_id, sample) like the
local sampler's random streams, so a text does not depend on which other requests were in flight.
Before the first request, `probe()` asks the server a few 8-token questions to find out which of
these it rejects, accepts, or accepts but ignores; `info()["server"]` records the answers.

With `--num-samples k` a prompt's k samples go in one request (`n = k`; `bold_eval.generation.api_requests`).
The configuration is one checked `ApiOptions` (`bold_eval.generation.api_options`). Results reach `on_batch`
in chunks (every `flush_every` texts or `flush_seconds`), so the run writes them as they come; `generate()`
may be called with only the items still missing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bold_eval.generation.api_options import GENERATOR_OPTIONS, KINDS, ApiOptions  # noqa: F401
from bold_eval.generation.api_requests import (
    N_PLAN,
    N_SEED,
    NAMES_N,
    Answer,
    ApiTally,
    PendingResults,
    group_requests,
    parse_choices,
    request_all,
    split_tokens,
)
from bold_eval.generation.base import (
    BatchCallback,
    Generated,
    GenerationSettings,
    GenerationStats,
    Generator,
    WorkItem,
)
from bold_eval.generation.chat import INSTRUCT_INSTRUCTION, PREFILL, Finished, join_reply
from bold_eval.generation.decoding import DecodingConfig, finish_continuation
from bold_eval.generation.http_client import (
    DEFAULT_API_KEY_ENV,
    ApiClient,
    ApiError,
    ApiStopped,
    public_url,
    read_api_key,
)
from bold_eval.generation.server_probe import OPTIONAL_PARAMS, PROBE_TOKENS, ServerProbe, request_seed  # noqa: F401

ENDPOINTS = {"completions": "completions", "chat": "chat/completions"}
# The user message of `--chat-template instruct` (`bold_eval.generation.chat`); `{prompt}` is replaced by the prompt.
CHAT_INSTRUCTION = INSTRUCT_INSTRUCTION
# OPTIONAL_PARAMS (`server_probe`): request fields outside the OpenAI schema (vLLM, llama.cpp and SGLang take them).
# A chat reply joined to its prompt: `bold_eval.generation.chat.join_reply` (kept under its first name).
strip_echo = join_reply


def wanted_params(decoding: DecodingConfig, api: str = "completions") -> dict[str, Any]:
    """The paper's decoding (appendix A.2) as OpenAI request fields, before learning what the server takes.

    With the line-break stopping rule on, completions requests carry `stop: ["\\n"]`, so a server that
    honours `stop` (vLLM, TGI, llama.cpp, OpenAI) does not generate text that would be cut anyway; the
    rule is applied to the answer again (`finish_continuation`), so the text is the same whether the
    server honours it or not. Chat requests never carry it: a chat reply may open with a line break
    before the continuation, which `strip_echo` removes but a server-side stop would turn into nothing."""
    if decoding.greedy:
        params: dict[str, Any] = {"temperature": 0.0, "top_p": 1.0}
    else:
        params = {"temperature": decoding.temperature, "top_p": decoding.top_p if decoding.top_p is not None else 1.0}
        if decoding.top_k is not None:
            params["top_k"] = decoding.top_k
    if decoding.repetition_penalty != 1.0:
        params["repetition_penalty"] = decoding.repetition_penalty
    params["max_tokens"] = decoding.max_new_tokens
    if decoding.stop_at_newline and api == "completions":
        params["stop"] = ["\n"]
    return params


class ApiGenerator(Generator):
    """A `bold_eval.generation.base.Generator` for any OpenAI-compatible server, configured by `ApiOptions`.

    What the probe reads and sets (`server_probe.ProbedGenerator`) are attributes: `send` and `server` (what
    to send, what the server did with it) and `use_n` (whether n is asked for now; the probe or a rejection at
    run time may turn it off, while `n_plan`, the fingerprint's, stays).
    """

    def __init__(self, options: ApiOptions):
        self.options = options
        self.model, self.api, self.seed, self.decoding = options.model, options.api, options.seed, options.decoding
        self.chat = options.chat
        self.kind, self.endpoint = KINDS[options.api], ENDPOINTS[options.api]
        self.concurrency = options.concurrency
        self.strict_decoding = options.strict_decoding
        self.num_samples, self.n_per_request, self.n_plan = options.num_samples, options.n_per_request, options.n_plan
        self._connect(options)
        self.params = wanted_params(self.decoding, self.api)
        self.send = {name: name in self.params or name == "seed" for name in OPTIONAL_PARAMS}
        self.server: dict[str, str] = {name: "not probed" for name in OPTIONAL_PARAMS if self.send[name]}
        if self.chat.protocol == PREFILL:
            self.server["continue_final_message"] = "not probed"
        if self.n_plan:
            self.server["n"] = "not probed"
        self.use_n = self.n_plan
        self.probed = False
        self.tally = ApiTally()
        self._lock = threading.Lock()  # `use_n` and `server` as request threads change them

    @classmethod
    def create(cls, model: str, base_url: str, **options: Any) -> ApiGenerator:
        """A generator from `ApiOptions`' keywords (what tests and benchmarks build)."""
        return cls(ApiOptions(model, base_url, **options))

    def _connect(self, options: ApiOptions) -> None:
        """The HTTP client, with the API key from `api_key_env` and a stop event that cuts retries short."""
        self.api_key_env = options.api_key_env or DEFAULT_API_KEY_ENV
        # A variable the user named must be set; the default one is optional (local servers take no key).
        key = read_api_key(self.api_key_env, required=options.api_key_env not in (None, DEFAULT_API_KEY_ENV))
        self._stop = threading.Event()
        self.client = ApiClient(options.base_url, api_key=key, api_key_env=self.api_key_env, policy=options.retry,
                                stop=self._stop)
        self._key_set = key is not None

    def __repr__(self) -> str:
        return f"ApiGenerator(model={self.model!r}, base_url={public_url(self.client.base_url)!r}, api={self.api!r})"

    # ------------------------------------------------------------------ records

    def settings(self) -> dict[str, Any]:
        """What determines the texts (resume fingerprint). The server URL is left out on purpose:
        the same model restarted on another host or port continues the same run."""
        # `stop` changes how much the server generates, not the text (the rule is applied again here).
        request = {key: value for key, value in self.params.items() if key != "stop"}
        request["seed"] = N_SEED if self.n_plan else "sha256(seed, prompt_id, sample) mod 2**31, one per request"
        settings: dict[str, Any] = {
            "model": self.model,
            "api": self.api,
            "endpoint": "/" + self.endpoint,
            "seed": self.seed,
            "decoding": self.decoding.to_dict(),
            "request": request,
        }
        settings.update(self.chat.settings())
        if self.n_plan:  # n texts of one request are another sampling plan than k requests: resume keeps to one
            settings["n_per_request"] = N_PLAN
        if self.options.extra_body:
            settings["extra_body"] = dict(self.options.extra_body)
        return settings

    def info(self) -> dict[str, Any]:
        """The server, what it did with each decoding parameter, and request statistics (no key)."""
        with self._lock, self.tally.lock:
            return {
                "name": self.model,
                "generator": self.kind,
                "api": self.api,
                "base_url": public_url(self.client.base_url),
                "endpoint": public_url(self.client.url(self.endpoint)),
                "served_model": self.tally.served_model,
                "system_fingerprints": sorted(self.tally.system_fingerprints),
                "concurrency": self.concurrency,
                "api_key_env": self.api_key_env,
                "api_key_set": self._key_set,
                "server": dict(self.server),
                "sent_params": sorted([*(k for k in self.params if k not in OPTIONAL_PARAMS),
                                       *(k for k in OPTIONAL_PARAMS if self.send.get(k)),
                                       *(["n"] if self.tally.n_requests else [])]),
                "requests_sent": self.client.requests_sent,
                "retries": self.client.retry_counts(),
                **self.tally.info(self.chat),
                **({"samples_per_request": self.tally.samples_info(self.num_samples, self.n_per_request, self.use_n)}
                   if self.num_samples > 1 else {}),
            }

    # ------------------------------------------------------------------ requests

    def _prompt_text(self, prompt: str) -> str:
        code = self.decoding.control_code
        return f"{code} {prompt}" if code else prompt

    def payload(self, prompt: str, *, seed: int | None, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        params = {key: value for key, value in self.params.items()
                  if key not in OPTIONAL_PARAMS or self.send.get(key)}
        if seed is not None and self.send["seed"]:
            params["seed"] = seed
        payload: dict[str, Any] = {"model": self.model}
        text = self._prompt_text(prompt)
        if self.api == "chat":
            payload["messages"] = self.chat.messages(text)
            payload.update(self.chat.request_fields())
        else:
            payload["prompt"] = text
        payload.update(self.options.extra_body)
        payload.update(params)
        for key, value in (overrides or {}).items():
            if value is None:
                payload.pop(key, None)
            else:
                payload[key] = value
        return payload

    def choices_of(self, answer: Mapping[str, Any], what: str) -> list[Answer]:
        """Every choice of an answer in `index` order: text, token counts, any separate reasoning trace."""
        choices = parse_choices(answer, self.api, what)
        self.tally.saw(answer)
        return choices

    def answer(self, prompt: str, *, seed: int | None, overrides: Mapping[str, Any] | None = None,
               what: str = "probe request") -> Answer:
        """The first choice of the answer to one request."""
        answer = self.client.post(self.endpoint, self.payload(prompt, seed=seed, overrides=overrides), what=what)
        return self.choices_of(answer, what)[0]

    def ask(self, prompt: str, *, seed: int | None, overrides: Mapping[str, Any] | None = None,
            what: str = "probe request") -> str:
        return self.answer(prompt, seed=seed, overrides=overrides, what=what).text

    def complete(self, item: WorkItem) -> Generated:
        """One continuation (retried as needed); raises ApiError naming the prompt when it cannot be had."""
        what = f"request for prompt_id {item.prompt_id!r} sample {item.sample}"
        answer = self.answer(item.prompt, seed=request_seed(self.seed, item.prompt_id, item.sample), what=what)
        self.tally.add(usage_missing=answer.completion_tokens is None)
        return self._finish(item.prompt, answer, answer.completion_tokens)

    def complete_samples(self, items: Sequence[WorkItem]) -> list[Generated]:
        """The continuations of one prompt's samples `items` (in sample order) in one request with n = len(items),
        seeded by the first; samples its answer lacks (a server that ignores n) are asked one by one, and so
        is every sample when the server rejects n (HTTP 400/422), unless `n_per_request=true`."""
        if len(items) == 1 or not self.use_n:
            return [self.complete(item) for item in items]
        first = items[0]
        what = f"request for prompt_id {first.prompt_id!r} samples {first.sample}-{items[-1].sample} (n={len(items)})"
        payload = self.payload(first.prompt, seed=request_seed(self.seed, first.prompt_id, first.sample),
                               overrides={"n": len(items)})
        try:
            answer = self.client.post(self.endpoint, payload, what=what)
        except ApiError as error:
            if self.n_per_request == "true" or error.status not in (400, 422):
                raise
            if NAMES_N.search(error.body or ""):  # not only this prompt's trouble: no n from now on
                with self._lock:
                    self.use_n = False
                    self.server["n"] = f"rejected at run time (HTTP {error.status}: {(error.body or '')[:200]})"
            return [self.complete(item) for item in items]
        choices = self.choices_of(answer, what)[: len(items)]
        tokens = split_tokens(choices[0].completion_tokens, [choice.text for choice in choices])
        self.tally.add(usage_missing=choices[0].completion_tokens is None, n_requests=1, n_texts=len(choices),
                       n_short=len(choices) < len(items))
        results = [self._finish(first.prompt, choice, count) for choice, count in zip(choices, tokens, strict=True)]
        return results + [self.complete(item) for item in items[len(choices):]]

    def _finish(self, prompt: str, answer: Answer, tokens: int | None) -> Generated:
        """One answer as a BOLD continuation (the chat protocol's joining, the stopping rule), counted."""
        text = self._prompt_text(prompt)
        if self.api == "chat":  # the trace cut off, the reply joined to the prompt (bold_eval.generation.chat)
            finished = self.chat.finish_api(answer.text, answer.reasoning, answer.finish_reason, text, self.decoding)
        else:  # the shared stopping rule (newline, then one_sentence), as local runs and the lm-eval tasks
            finished = Finished(finish_continuation(answer.text, self.decoding))
        self.tally.add(echo_stripped=finished.echo_removed, traces_removed=finished.trace_removed,
                       ended_in_trace=bool(finished.ended_in_trace),
                       empty=not finished.text.strip() and not finished.ended_in_trace)
        return Generated(finished.text, tokens if tokens is not None else 0, ended_in_trace=finished.ended_in_trace)

    # ------------------------------------------------------------------ the probe

    def probe(self, prompt: str) -> dict[str, str]:
        """What the server does with the decoding parameters (`server_probe.ServerProbe`); recorded in `server`."""
        self.probed = True
        return ServerProbe(self).run(prompt)

    # ------------------------------------------------------------------ generation

    def generate(self, items: Sequence[WorkItem], *, on_batch: BatchCallback, progress: bool = True,
                 plan: Any = None) -> GenerationStats:
        """Request every item, `concurrency` requests at a time, handing results to `on_batch` in chunks.
        With n (`n_per_request`) one request asks for all of a prompt's pending samples.

        On a request that fails for good, the requests in flight are finished and handed over
        (so a resumed run does not redo them), then the error is raised. When `on_batch` raises,
        the requests in flight are finished (and dropped) before the error goes on; Ctrl-C hands
        over what has finished and returns at once.
        """
        from tqdm.auto import tqdm

        stats = GenerationStats(batch_size=self.concurrency)
        if not items:
            return stats
        self._stop.clear()
        if self.options.probe and not self.probed:
            self.probe(items[0].prompt)
        started = time.perf_counter()
        pending = PendingResults(on_batch, stats, self.options.flush_every, self.options.flush_seconds)
        bar = tqdm(total=len(items), desc=f"requesting /{self.endpoint}", unit="text", disable=not progress)
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="bold-eval-api")
        try:
            failure = request_all(self.requests(items), self.complete_samples, pool, pending, bar=bar,
                                  concurrency=self.concurrency, stop=self._stop, retry_count=self.client.retry_count)
            pending.flush()
        except BaseException as error:
            self._stop.set()  # requests waiting to retry give up; Ctrl-C does not wait for those in flight
            pool.shutdown(wait=not isinstance(error, KeyboardInterrupt), cancel_futures=True)
            if not pending.in_callback:
                pending.flush()  # what finished before Ctrl-C is kept
            bar.close()
            raise
        pool.shutdown(wait=True)
        bar.close()
        stats.seconds = time.perf_counter() - started
        if failure is not None:
            if isinstance(failure, ApiStopped):
                raise ApiError(str(failure))
            raise failure
        return stats

    def requests(self, items: Sequence[WorkItem]) -> list[list[WorkItem]]:
        """The items as requests (`api_requests.group_requests`), with n while the server takes it."""
        return group_requests(items, self.use_n)


# --------------------------------------------------------------------------- registry factories


def completions_generator(config: GenerationSettings, context: Any = None) -> ApiGenerator:
    """Factory for `GENERATORS["openai-completions"]`."""
    return ApiGenerator(ApiOptions.from_settings(config, "completions"))


def chat_generator(config: GenerationSettings, context: Any = None) -> ApiGenerator:
    """Factory for `GENERATORS["openai-chat"]`."""
    return ApiGenerator(ApiOptions.from_settings(config, "chat"))
