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

With `--num-samples k` the k samples of a prompt are asked in one request (`n = k`, option
`n_per_request`): hosted APIs bill the prompt once per request and engines prefill it once, so a
worst-of-k run costs about one request per prompt instead of k. Its seed is that of the request's first
sample, so a server that ignores `n` answers that sample exactly as a single request would, and the rest
are asked one by one (as for a server that rejects `n`). The n texts of one request are a different (equally
valid) sampling plan from k single requests, so the plan is part of `settings()` and resume keeps to it.

Results reach `on_batch` in chunks (every `flush_every` texts or `flush_seconds`), so the run writes
them as they come; `generate()` may be called with only the items still missing.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, NamedTuple

from bold_eval.core.errors import UsageError
from bold_eval.core.options import API_MODES, DEFAULT_CONCURRENCY
from bold_eval.generation.base import (
    BatchCallback,
    Generated,
    GenerationSettings,
    GenerationStats,
    Generator,
    WorkItem,
)
from bold_eval.generation.chat import (
    CHAT_OPTIONS,
    INSTRUCT,
    INSTRUCT_INSTRUCTION,
    NONE,
    PREFILL,
    ChatOptions,
    ChatProtocol,
    Finished,
    join_reply,
)
from bold_eval.generation.decoding import DecodingConfig, finish_continuation, make_decoding
from bold_eval.generation.http_client import (
    DEFAULT_API_KEY_ENV,
    ApiClient,
    ApiError,
    ApiStopped,
    RetryPolicy,
    public_url,
    read_api_key,
)
from bold_eval.generation.server_probe import OPTIONAL_PARAMS, PROBE_TOKENS, ServerProbe, request_seed  # noqa: F401

KINDS = {"completions": "openai-completions", "chat": "openai-chat"}
ENDPOINTS = {"completions": "completions", "chat": "chat/completions"}
DEFAULT_FLUSH_EVERY = 64
DEFAULT_FLUSH_SECONDS = 2.0
# The user message of `--chat-template instruct` (`bold_eval.generation.chat`); `{prompt}` is replaced by the prompt.
CHAT_INSTRUCTION = INSTRUCT_INSTRUCTION
# OPTIONAL_PARAMS (`server_probe`): request fields outside the OpenAI schema (vLLM, llama.cpp and SGLang take them).
# A chat reply joined to its prompt: `bold_eval.generation.chat.join_reply` (kept under its first name).
strip_echo = join_reply
# `n_per_request`: auto asks for a prompt's samples in one request (`n`) unless the probe finds the server
# ignores or rejects `n`; true always does; false sends one request per sample.
N_PER_REQUEST = ("auto", "true", "false")
# At most this many samples per request (OpenAI's limit on `n`); more pending samples take several requests.
MAX_N = 128
# What settings() records of a run that asks for n (the resume fingerprint; `n_per_request=false` leaves it out).
N_PLAN = (f"one request per prompt for its pending samples (n, at most {MAX_N}); one request per sample where "
          "the server ignores or rejects n")
N_SEED = "sha256(seed, prompt_id, first sample of the request) mod 2**31, one per request"
# An error body that names the `n` field (pydantic's "n", OpenAI's 'n', "n must be ..."), not a word with an n in it.
_NAMES_N = re.compile(r"(?<![\\\w])n(?![\w])")


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


def _check_settings(model: str, api: str, seed: int, concurrency: int, flush_every: int, flush_seconds: float) -> None:
    """Refuse generator settings that cannot work, naming the CLI flag where there is one."""
    if api not in API_MODES:
        raise ValueError(f"--api must be one of {', '.join(API_MODES)}, got {api!r}")
    if not model:
        raise ValueError("--model must name the server's model (the `model` field of each request)")
    if concurrency < 1:
        raise ValueError(f"--concurrency must be >= 1, got {concurrency}")
    if flush_every < 1 or flush_seconds <= 0:
        raise ValueError("flush_every must be >= 1 and flush_seconds > 0")
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")


def n_per_request_option(value: Any) -> str:
    """`n_per_request` as one of N_PER_REQUEST (`--generator-option n_per_request=false` arrives as JSON False)."""
    text = str(value).lower() if isinstance(value, (bool, str)) else None
    if text not in N_PER_REQUEST:
        raise ValueError(f"n_per_request must be one of {', '.join(N_PER_REQUEST)}, got {value!r}")
    return text


def _chat_protocol(api: str, chat: Mapping[str, Any]) -> ChatProtocol:
    """The chat protocol (`bold_eval.generation.chat`): `none` for completions; for chat `instruct` unless
    `--chat-template prefill` (hosted chat APIs do not continue a final assistant message)."""
    protocol = ChatOptions.pop_from(dict(chat)).resolve(INSTRUCT if api == "chat" else NONE, f"auto: --api {api}")
    if api == "completions" and protocol.chat:
        raise UsageError(f"--chat-template {protocol.protocol} sends chat messages: it needs --api chat "
                         "(/v1/chat/completions); --api completions is the raw continuation (--chat-template none)")
    if api == "chat" and not protocol.chat:
        raise UsageError("--chat-template none feeds the prompt raw, which a chat endpoint cannot do: use --api "
                         "completions, or --chat-template prefill / instruct")
    return protocol


def _checked_extra_body(extra_body: Mapping[str, Any] | None, chat: ChatProtocol) -> dict[str, Any]:
    """Extra request fields as a dict; those bold-eval sets itself (model, prompt, decoding, protocol) are refused."""
    extra = dict(extra_body or {})
    mine = {"model", "prompt", "messages", "stream", "n", "temperature", "top_p", "max_tokens", "stop",
            "continue_final_message", "add_generation_prompt", *OPTIONAL_PARAMS, *chat.request_fields()}
    clash = sorted(set(extra) & mine)
    if clash:
        raise ValueError(f"extra_body may not set {', '.join(clash)}: bold-eval sets them from --model, the decoding "
                         "flags and --chat-template / --chat-template-kwargs")
    return extra


def split_tokens(total: int | None, texts: Sequence[str]) -> list[int | None]:
    """`usage.completion_tokens` of an n request (the sum over its choices; servers give no count per choice)
    shared out over its texts in proportion to their length in characters, largest remainders first, so the
    run's token total is the server's. None stays None."""
    if total is None:
        return [None] * len(texts)
    weights = [len(text) for text in texts] if any(texts) else [1] * len(texts)
    shares = [total * weight / sum(weights) for weight in weights]
    counts = [int(share) for share in shares]
    by_remainder = sorted(range(len(texts)), key=lambda index: counts[index] - shares[index])
    for index in by_remainder[: total - sum(counts)]:
        counts[index] += 1
    return counts


def _index(value: Any) -> int:
    """A choice's `index` for sorting; a missing or odd one sorts last (then by position in the answer)."""
    return value if isinstance(value, int) else 1 << 31


class _Answer(NamedTuple):
    """What one choice of a server answer holds: the text (content), token counts, a separate reasoning trace.
    `completion_tokens` is the answer's `usage.completion_tokens`: over all its choices when there are several."""

    text: str
    completion_tokens: int | None
    prompt_tokens: int | None = None
    reasoning: str | None = None
    finish_reason: str | None = None


class _PendingResults:
    """Finished results not yet handed to `on_batch`; handed over in chunks so the run writes as they come."""

    def __init__(self, on_batch: BatchCallback, stats: GenerationStats):
        self.on_batch = on_batch
        self.stats = stats
        self.items: list[WorkItem] = []
        self.results: list[Generated] = []
        self.last_flush = time.perf_counter()
        self.in_callback = False  # True while on_batch runs: what it raised on is not handed over again

    def add(self, item: WorkItem, result: Generated) -> None:
        self.items.append(item)
        self.results.append(result)

    def due(self, flush_every: int, flush_seconds: float) -> bool:
        """Whether `flush_every` texts are waiting or `flush_seconds` have passed since the last hand-over."""
        return len(self.items) >= flush_every or time.perf_counter() - self.last_flush >= flush_seconds

    def flush(self) -> None:
        """Hand what is waiting to `on_batch` and count its tokens."""
        if self.items:
            batch, results = self.items, self.results
            self.items, self.results = [], []
            self.in_callback = True
            self.on_batch(batch, results)
            self.in_callback = False
            self.stats.new_tokens += sum(result.num_new_tokens for result in results)
        self.last_flush = time.perf_counter()


class ApiGenerator(Generator):
    """A `bold_eval.generation.base.Generator` for any OpenAI-compatible server.

    model: the server's model name (the request's `model` field). base_url: the API root, e.g.
    `http://localhost:8000/v1`. api: "completions" (BOLD's plain continuation) or "chat".
    concurrency: requests in flight. api_key_env: environment variable holding the key (default
    OPENAI_API_KEY, optional for local servers; a named one must be set). probe: learn what the
    server does with top_k / seed / repetition_penalty / sampling before generating.
    strict_decoding: refuse to generate when the server drops part of the paper's decoding.
    chat_template, chat_instruction, system_instruction, chat_template_kwargs, think_end_token: the chat
    protocol of `bold_eval.generation.chat` (None: its defaults for this `api`). num_samples, n_per_request:
    the run's samples per prompt and whether a prompt's samples go in one request (`n`; N_PER_REQUEST).
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api: str = "completions",
        decoding: DecodingConfig | None = None,
        seed: int = 0,
        concurrency: int = DEFAULT_CONCURRENCY,
        api_key_env: str | None = None,
        chat_template: str | None = None,
        chat_instruction: str | None = None,
        system_instruction: str | None = None,
        chat_template_kwargs: Mapping[str, Any] | str | None = None,
        think_end_token: str | None = None,
        num_samples: int = 1,
        n_per_request: str | bool = "auto",
        extra_body: Mapping[str, Any] | None = None,
        probe: bool = True,
        strict_decoding: bool = False,
        retry: RetryPolicy | None = None,
        flush_every: int = DEFAULT_FLUSH_EVERY,
        flush_seconds: float = DEFAULT_FLUSH_SECONDS,
    ):
        _check_settings(model, api, seed, concurrency, flush_every, flush_seconds)
        self.chat = _chat_protocol(api, {"chat_template": chat_template, "chat_instruction": chat_instruction,
                                         "system_instruction": system_instruction, "think_end_token": think_end_token,
                                         "chat_template_kwargs": chat_template_kwargs})
        extra = _checked_extra_body(extra_body, self.chat)
        self.model = model
        self.api = api
        self.kind = KINDS[api]
        self.endpoint = ENDPOINTS[api]
        self.decoding = decoding or make_decoding()
        self.seed = int(seed)
        self.concurrency = int(concurrency)
        self.chat_instruction = self.chat.instruction
        self.extra_body = extra
        self.probe_enabled = probe
        self.strict_decoding = strict_decoding
        self.flush_every = int(flush_every)
        self.flush_seconds = float(flush_seconds)
        self._connect(base_url, api_key_env, retry)
        self.params = wanted_params(self.decoding, self.api)
        self.send = {name: name in self.params or name == "seed" for name in OPTIONAL_PARAMS}
        self.server: dict[str, str] = {name: "not probed" for name in OPTIONAL_PARAMS if self.send[name]}
        if self.chat.protocol == PREFILL:
            self.server["continue_final_message"] = "not probed"
        self._init_samples(num_samples, n_per_request)
        self.probed = False
        self._lock = threading.Lock()
        self._served_model: str | None = None
        self._system_fingerprints: set[str] = set()
        self._usage_missing = 0
        self._echo_stripped = 0
        self._empty = 0
        self._traces_removed = 0
        self._ended_in_trace = 0

    def _init_samples(self, num_samples: int, n_per_request: str | bool) -> None:
        """k samples per prompt in one request (`n`) or k requests: `n_plan` is what the run asks for (its
        fingerprint), `use_n` what it does now (the probe or a rejection at run time may turn it off)."""
        if int(num_samples) < 1:
            raise ValueError(f"--num-samples must be >= 1, got {num_samples}")
        self.num_samples = int(num_samples)
        self.n_per_request = n_per_request_option(n_per_request)
        self.n_plan = self.num_samples > 1 and self.n_per_request != "false"
        self.use_n = self.n_plan
        if self.n_plan:
            self.server["n"] = "not probed"
        self._n_requests = 0  # requests that asked for n > 1
        self._n_texts = 0  # texts those requests gave
        self._n_short = 0  # answers with fewer choices than asked (the rest asked one by one)

    def _connect(self, base_url: str, api_key_env: str | None, retry: RetryPolicy | None) -> None:
        """The HTTP client, with the API key from `api_key_env` and a stop event that cuts retries short."""
        self.api_key_env = api_key_env or DEFAULT_API_KEY_ENV
        # A variable the user named must be set; the default one is optional (local servers take no key).
        key = read_api_key(self.api_key_env, required=api_key_env not in (None, DEFAULT_API_KEY_ENV))
        self._stop = threading.Event()
        self.client = ApiClient(base_url, api_key=key, api_key_env=self.api_key_env, policy=retry, stop=self._stop)
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
        if self.extra_body:
            settings["extra_body"] = dict(self.extra_body)
        return settings

    def info(self) -> dict[str, Any]:
        """The server, what it did with each decoding parameter, and request statistics (no key)."""
        with self._lock:
            return {
                "name": self.model,
                "generator": self.kind,
                "api": self.api,
                "base_url": public_url(self.client.base_url),
                "endpoint": public_url(self.client.url(self.endpoint)),
                "served_model": self._served_model,
                "system_fingerprints": sorted(self._system_fingerprints),
                "concurrency": self.concurrency,
                "api_key_env": self.api_key_env,
                "api_key_set": self._key_set,
                "server": dict(self.server),
                "sent_params": sorted([*(k for k in self.params if k not in OPTIONAL_PARAMS),
                                       *(k for k in OPTIONAL_PARAMS if self.send.get(k)),
                                       *(["n"] if self._n_requests else [])]),
                "requests_sent": self.client.requests_sent,
                "retries": self.client.retry_counts(),
                "responses_without_usage": self._usage_missing,
                "empty_responses": self._empty,
                **({"echo_stripped": self._echo_stripped} if self.api == "chat" else {}),
                "chat": self.chat.info(),
                **({"traces_removed": self._traces_removed, "ended_in_trace": self._ended_in_trace}
                   if self.chat.thinking else {}),
                **({"samples_per_request": self._samples_info()} if self.num_samples > 1 else {}),
            }

    def _samples_info(self) -> dict[str, Any]:
        """How the k samples of each prompt were asked for (run.json `model_info.samples_per_request`)."""
        return {"num_samples": self.num_samples, "n_per_request": self.n_per_request,
                "mode": "n per request" if self.use_n else "one request per sample",
                "requests_with_n": self._n_requests, "texts_from_n_requests": self._n_texts,
                "answers_with_fewer_choices": self._n_short,
                "num_new_tokens": "usage.completion_tokens of an n request shared out by each choice's length "
                                  "in characters"}

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
        payload.update(self.extra_body)
        payload.update(params)
        for key, value in (overrides or {}).items():
            if value is None:
                payload.pop(key, None)
            else:
                payload[key] = value
        return payload

    def _text_of(self, answer: Mapping[str, Any], what: str) -> _Answer:
        """The generated text, token counts and any separate reasoning trace of one answer (its first choice)."""
        return self.choices_of(answer, what)[0]

    def choices_of(self, answer: Mapping[str, Any], what: str) -> list[_Answer]:
        """Every choice of an answer in `index` order: text, token counts, any separate reasoning trace."""
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices or not all(isinstance(c, Mapping) for c in choices):
            raise ApiError(f"{what}: the server's answer has no choices: {str(answer)[:300]!r}")
        usage = answer.get("usage") if isinstance(answer.get("usage"), Mapping) else {}
        tokens, prompt_tokens = usage.get("completion_tokens"), usage.get("prompt_tokens")
        with self._lock:
            if self._served_model is None and isinstance(answer.get("model"), str):
                self._served_model = answer["model"]
            if isinstance(answer.get("system_fingerprint"), str):
                self._system_fingerprints.add(answer["system_fingerprint"])
        ordered = sorted(enumerate(choices), key=lambda pair: (_index(pair[1].get("index")), pair[0]))
        return [self._choice(choice, int(tokens) if isinstance(tokens, int) else None,
                             int(prompt_tokens) if isinstance(prompt_tokens, int) else None)
                for _, choice in ordered]

    def _choice(self, choice: Mapping[str, Any], tokens: int | None, prompt_tokens: int | None) -> _Answer:
        message = choice.get("message") if isinstance(choice.get("message"), Mapping) else {}
        text = message.get("content") if self.api == "chat" else choice.get("text")
        # vLLM's and transformers serve's reasoning parsers: `reasoning_content`; newer vLLM: `reasoning`.
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        finish = choice.get("finish_reason")
        return _Answer(text if isinstance(text, str) else "", tokens, prompt_tokens,
                       reasoning if isinstance(reasoning, str) else None, finish if isinstance(finish, str) else None)

    def answer(self, prompt: str, *, seed: int | None, overrides: Mapping[str, Any] | None = None,
                what: str = "probe request") -> _Answer:
        answer = self.client.post(self.endpoint, self.payload(prompt, seed=seed, overrides=overrides), what=what)
        return self._text_of(answer, what)

    def ask(self, prompt: str, *, seed: int | None, overrides: Mapping[str, Any] | None = None,
             what: str = "probe request") -> str:
        return self.answer(prompt, seed=seed, overrides=overrides, what=what).text

    def complete(self, item: WorkItem) -> Generated:
        """One continuation (retried as needed); raises ApiError naming the prompt when it cannot be had."""
        what = f"request for prompt_id {item.prompt_id!r} sample {item.sample}"
        answer = self.answer(item.prompt, seed=request_seed(self.seed, item.prompt_id, item.sample), what=what)
        with self._lock:
            self._usage_missing += answer.completion_tokens is None
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
            if _NAMES_N.search(error.body or ""):  # not only this prompt's trouble: no n from now on
                with self._lock:
                    self.use_n = False
                    self.server["n"] = f"rejected at run time (HTTP {error.status}: {(error.body or '')[:200]})"
            return [self.complete(item) for item in items]
        choices = self.choices_of(answer, what)[: len(items)]
        tokens = split_tokens(choices[0].completion_tokens, [choice.text for choice in choices])
        with self._lock:
            self._usage_missing += choices[0].completion_tokens is None
            self._n_requests += 1
            self._n_texts += len(choices)
            self._n_short += len(choices) < len(items)
        results = [self._finish(first.prompt, choice, count) for choice, count in zip(choices, tokens, strict=True)]
        return results + [self.complete(item) for item in items[len(choices):]]

    def _finish(self, prompt: str, answer: _Answer, tokens: int | None) -> Generated:
        """One answer as a BOLD continuation (the chat protocol's joining, the stopping rule), counted."""
        text = self._prompt_text(prompt)
        if self.api == "chat":  # the trace cut off, the reply joined to the prompt (bold_eval.generation.chat)
            finished = self.chat.finish_api(answer.text, answer.reasoning, answer.finish_reason, text, self.decoding)
        else:  # the shared stopping rule (newline, then one_sentence), as local runs and the lm-eval tasks
            finished = Finished(finish_continuation(answer.text, self.decoding))
        with self._lock:
            self._echo_stripped += finished.echo_removed
            self._traces_removed += finished.trace_removed
            self._ended_in_trace += bool(finished.ended_in_trace)
            self._empty += not finished.text.strip() and not finished.ended_in_trace
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
        if self.probe_enabled and not self.probed:
            self.probe(items[0].prompt)
        started = time.perf_counter()
        pending = _PendingResults(on_batch, stats)
        bar = tqdm(total=len(items), desc=f"requesting /{self.endpoint}", unit="text", disable=not progress)
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="bold-eval-api")
        try:
            failure = self._request_all(self.requests(items), pool, pending, bar)
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
        """The items as requests: with n, each prompt's pending samples in sample order (at most MAX_N a
        request; prompts in their first item's order), else one request per item."""
        if not self.use_n:
            return [[item] for item in items]
        by_prompt: dict[str, list[WorkItem]] = {}
        for item in items:
            by_prompt.setdefault(item.prompt_id, []).append(item)
        requests = []
        for samples in by_prompt.values():
            samples.sort(key=lambda item: item.sample)
            requests.extend(samples[start:start + MAX_N] for start in range(0, len(samples), MAX_N))
        return requests

    def _request_all(
        self, requests: Sequence[list[WorkItem]], pool: ThreadPoolExecutor, pending: _PendingResults, bar: Any
    ) -> BaseException | None:
        """Keep `concurrency` requests busy until every one is done; return the first request failure.

        After a failure no new request starts and queued ones are cancelled; those in flight finish
        and are handed over with the rest.
        """
        todo = iter(requests)
        in_flight: dict[Future, list[WorkItem]] = {}
        failure: BaseException | None = None
        for _ in range(2 * self.concurrency):  # a little queue keeps every worker busy
            self._submit_next(todo, pool, in_flight)
        while in_flight:
            finished, _ = wait(list(in_flight), timeout=self.flush_seconds, return_when=FIRST_COMPLETED)
            for future in finished:
                request = in_flight.pop(future)
                try:
                    results = future.result()
                except BaseException as error:  # raised after the requests in flight finish
                    if failure is None:
                        failure = error
                        self._stop.set()
                        for other in in_flight:
                            other.cancel()
                    continue
                for item, result in zip(request, results, strict=True):
                    pending.add(item, result)
                bar.update(len(request))
                if failure is None:
                    self._submit_next(todo, pool, in_flight)
            if failure is not None:
                in_flight = {future: request for future, request in in_flight.items() if not future.cancelled()}
            if pending.due(self.flush_every, self.flush_seconds):
                pending.flush()
            bar.set_postfix(retries=self.client.retry_count(), refresh=False)
        return failure

    def _submit_next(
        self, todo: Iterator[list[WorkItem]], pool: ThreadPoolExecutor, in_flight: dict[Future, list[WorkItem]]
    ) -> None:
        """Start the next request, if any is left."""
        request = next(todo, None)
        if request is not None:
            in_flight[pool.submit(self.complete_samples, request)] = request


# --------------------------------------------------------------------------- registry factories

GENERATOR_OPTIONS = ("base_url", "concurrency", "api_key_env", "extra_body", "probe", "strict_decoding",
                     "max_attempts", "backoff_base_s", "timeout_s", "flush_seconds", "n_per_request", *CHAT_OPTIONS)


def from_config(config: GenerationSettings, api: str) -> ApiGenerator:
    """Build the generator from `bold-eval run` settings: `--model`, the decoding flags, `--seed`, and
    `generator_options` (base_url, concurrency, api_key_env, ... see GENERATOR_OPTIONS).
    An integer `--batch-size` sets how many texts are handed over (written) at a time."""
    options = dict(config.generator_options or {})
    unknown = sorted(set(options) - set(GENERATOR_OPTIONS))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for the {KINDS[api]} generator; "
                         f"valid: {', '.join(GENERATOR_OPTIONS)}")
    if not options.get("base_url"):
        raise ValueError(f"the {KINDS[api]} generator needs --base-url (the API root, e.g. http://localhost:8000/v1)")
    retry = RetryPolicy(max_attempts=int(options.get("max_attempts", RetryPolicy.max_attempts)),
                        backoff_base_s=float(options.get("backoff_base_s", RetryPolicy.backoff_base_s)),
                        read_timeout_s=float(options.get("timeout_s", RetryPolicy.read_timeout_s)))
    batch_size = config.batch_size
    return ApiGenerator(
        config.model, str(options["base_url"]), api=api, decoding=config.decoding, seed=config.seed,
        concurrency=int(options.get("concurrency", DEFAULT_CONCURRENCY)),
        api_key_env=options.get("api_key_env"),
        **{key: options.get(key) for key in CHAT_OPTIONS},
        num_samples=config.num_samples, n_per_request=options.get("n_per_request", "auto"),
        extra_body=options.get("extra_body"), probe=bool(options.get("probe", True)),
        strict_decoding=bool(options.get("strict_decoding", False)), retry=retry,
        flush_every=int(batch_size) if str(batch_size) != "auto" else DEFAULT_FLUSH_EVERY,
        flush_seconds=float(options.get("flush_seconds", DEFAULT_FLUSH_SECONDS)),
    )


def completions_generator(config: GenerationSettings, context: Any = None) -> ApiGenerator:
    """Factory for `GENERATORS["openai-completions"]`."""
    return from_config(config, "completions")


def chat_generator(config: GenerationSettings, context: Any = None) -> ApiGenerator:
    """Factory for `GENERATORS["openai-chat"]`."""
    return from_config(config, "chat")
