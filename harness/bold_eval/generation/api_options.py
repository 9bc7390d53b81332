"""What the OpenAI-compatible generator (`bold_eval.generation.openai_compatible`) is configured with.

One frozen record, checked once when it is built, so a generator never holds settings that cannot work.
`ApiOptions.from_settings` reads `bold-eval run`'s settings and `--generator-option`s; tests and benchmarks
build one from keywords. A refusal names the CLI flag where there is one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bold_eval.core.errors import UsageError
from bold_eval.core.options import API_MODES, DEFAULT_CONCURRENCY
from bold_eval.generation.base import GenerationSettings
from bold_eval.generation.chat import CHAT_OPTIONS, INSTRUCT, NONE, ChatOptions, ChatProtocol
from bold_eval.generation.decoding import DecodingConfig, make_decoding
from bold_eval.generation.http_client import RetryPolicy
from bold_eval.generation.server_probe import OPTIONAL_PARAMS

KINDS = {"completions": "openai-completions", "chat": "openai-chat"}
DEFAULT_FLUSH_EVERY = 64
DEFAULT_FLUSH_SECONDS = 2.0
# `n_per_request`: auto asks for a prompt's samples in one request (`n`) unless the probe finds the server
# ignores or rejects `n`; true always does; false sends one request per sample.
N_PER_REQUEST = ("auto", "true", "false")
# The `--generator-option` keys of the openai-* generators.
GENERATOR_OPTIONS = ("base_url", "concurrency", "api_key_env", "extra_body", "probe", "strict_decoding",
                     "max_attempts", "backoff_base_s", "timeout_s", "flush_seconds", "n_per_request", *CHAT_OPTIONS)
# Request fields bold-eval sets itself (from --model, the decoding flags and the chat protocol): not extra_body's.
OWN_FIELDS = ("model", "prompt", "messages", "stream", "n", "temperature", "top_p", "max_tokens", "stop",
              "continue_final_message", "add_generation_prompt", *OPTIONAL_PARAMS)


def n_per_request_option(value: Any) -> str:
    """`n_per_request` as one of N_PER_REQUEST (`--generator-option n_per_request=false` arrives as JSON False)."""
    text = str(value).lower() if isinstance(value, (bool, str)) else None
    if text not in N_PER_REQUEST:
        raise ValueError(f"n_per_request must be one of {', '.join(N_PER_REQUEST)}, got {value!r}")
    return text


@dataclass(frozen=True)
class ApiOptions:
    """Everything an `ApiGenerator` is configured with.

    model: the server's model name (the request's `model` field). base_url: the API root, e.g.
    `http://localhost:8000/v1`. api: "completions" (BOLD's plain continuation) or "chat".
    concurrency: requests in flight. api_key_env: environment variable holding the key (None: OPENAI_API_KEY,
    optional for local servers; a named one must be set). probe: learn what the server does with
    top_k / seed / repetition_penalty / sampling before generating. strict_decoding: refuse to generate
    when the server drops part of the paper's decoding. chat_template ... think_end_token: the chat protocol
    of `bold_eval.generation.chat` (None: its defaults for this `api`), resolved into `chat`.
    num_samples, n_per_request: the run's samples per prompt and whether a prompt's samples go in one
    request (`n`; N_PER_REQUEST, a bool is read as its name). extra_body: request fields of the user's own.
    flush_every, flush_seconds: results reach `on_batch` every so many texts or seconds.
    """

    model: str
    base_url: str
    api: str = "completions"
    decoding: DecodingConfig = field(default_factory=make_decoding)
    seed: int = 0
    concurrency: int = DEFAULT_CONCURRENCY
    api_key_env: str | None = None
    chat_template: str | None = None
    chat_instruction: str | None = None
    system_instruction: str | None = None
    chat_template_kwargs: Mapping[str, Any] | str | None = None
    think_end_token: str | None = None
    num_samples: int = 1
    n_per_request: str = "auto"
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    probe: bool = True
    strict_decoding: bool = False
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    flush_every: int = DEFAULT_FLUSH_EVERY
    flush_seconds: float = DEFAULT_FLUSH_SECONDS
    chat: ChatProtocol = field(init=False, repr=False)  # the resolved chat protocol

    def __post_init__(self) -> None:
        self._check()
        chat = self._chat_protocol()
        resolved = {"chat": chat, "extra_body": self._checked_extra_body(chat), "seed": int(self.seed),
                    "concurrency": int(self.concurrency), "flush_every": int(self.flush_every),
                    "flush_seconds": float(self.flush_seconds)}
        if int(self.num_samples) < 1:
            raise ValueError(f"--num-samples must be >= 1, got {self.num_samples}")
        resolved.update(num_samples=int(self.num_samples), n_per_request=n_per_request_option(self.n_per_request))
        for name, value in resolved.items():  # a frozen record: its fields are set once, here
            object.__setattr__(self, name, value)

    @property
    def n_plan(self) -> bool:
        """Whether the run asks for a prompt's samples in one request (`n`): part of its resume fingerprint."""
        return self.num_samples > 1 and self.n_per_request != "false"

    def _check(self) -> None:
        """Refuse settings that cannot work, naming the CLI flag where there is one."""
        if self.api not in API_MODES:
            raise ValueError(f"--api must be one of {', '.join(API_MODES)}, got {self.api!r}")
        if not self.model:
            raise ValueError("--model must name the server's model (the `model` field of each request)")
        if self.concurrency < 1:
            raise ValueError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.flush_every < 1 or self.flush_seconds <= 0:
            raise ValueError("flush_every must be >= 1 and flush_seconds > 0")
        if self.seed < 0:
            raise ValueError(f"--seed must be >= 0, got {self.seed}")

    def _chat_protocol(self) -> ChatProtocol:
        """The chat protocol (`bold_eval.generation.chat`): `none` for completions; for chat `instruct` unless
        `--chat-template prefill` (hosted chat APIs do not continue a final assistant message)."""
        given = {key: getattr(self, key) for key in CHAT_OPTIONS}
        api = self.api
        protocol = ChatOptions.pop_from(given).resolve(INSTRUCT if api == "chat" else NONE, f"auto: --api {api}")
        if api == "completions" and protocol.chat:
            raise UsageError(f"--chat-template {protocol.protocol} sends chat messages: it needs --api chat "
                             "(/v1/chat/completions); --api completions is the raw continuation (--chat-template none)")
        if api == "chat" and not protocol.chat:
            raise UsageError("--chat-template none feeds the prompt raw, which a chat endpoint cannot do: use --api "
                             "completions, or --chat-template prefill / instruct")
        return protocol

    def _checked_extra_body(self, chat: ChatProtocol) -> dict[str, Any]:
        """Extra request fields as a dict; those bold-eval sets itself (OWN_FIELDS, the protocol's) are refused."""
        extra = dict(self.extra_body or {})
        clash = sorted(set(extra) & {*OWN_FIELDS, *chat.request_fields()})
        if clash:
            raise ValueError(f"extra_body may not set {', '.join(clash)}: bold-eval sets them from --model, the "
                             "decoding flags and --chat-template / --chat-template-kwargs")
        return extra

    @classmethod
    def from_settings(cls, config: GenerationSettings, api: str) -> ApiOptions:
        """The options of a `bold-eval run`: `--model`, the decoding flags, `--seed`, `--num-samples` and
        `generator_options` (GENERATOR_OPTIONS). An integer `--batch-size` sets how many texts are handed
        over (written) at a time."""
        options = dict(config.generator_options or {})
        unknown = sorted(set(options) - set(GENERATOR_OPTIONS))
        if unknown:
            raise ValueError(f"unknown option(s) {', '.join(unknown)} for the {KINDS[api]} generator; "
                             f"valid: {', '.join(GENERATOR_OPTIONS)}")
        if not options.get("base_url"):
            raise ValueError(f"the {KINDS[api]} generator needs --base-url (the API root, e.g. "
                             "http://localhost:8000/v1)")
        retry = RetryPolicy(max_attempts=int(options.get("max_attempts", RetryPolicy.max_attempts)),
                            backoff_base_s=float(options.get("backoff_base_s", RetryPolicy.backoff_base_s)),
                            read_timeout_s=float(options.get("timeout_s", RetryPolicy.read_timeout_s)))
        batch_size = config.batch_size
        return cls(
            config.model, str(options["base_url"]), api=api, decoding=config.decoding, seed=config.seed,
            concurrency=int(options.get("concurrency", DEFAULT_CONCURRENCY)),
            api_key_env=options.get("api_key_env"),
            **{key: options.get(key) for key in CHAT_OPTIONS},
            num_samples=config.num_samples, n_per_request=options.get("n_per_request", "auto"),
            extra_body=options.get("extra_body") or {}, probe=bool(options.get("probe", True)),
            strict_decoding=bool(options.get("strict_decoding", False)), retry=retry,
            flush_every=int(batch_size) if str(batch_size) != "auto" else DEFAULT_FLUSH_EVERY,
            flush_seconds=float(options.get("flush_seconds", DEFAULT_FLUSH_SECONDS)),
        )
