"""Requests and answers of the OpenAI-compatible generator (`bold_eval.generation.openai_compatible`).

Which work items go in one request, what a server's answer holds, what the answers were like (the tally
run.json reports), and keeping `concurrency` requests in flight while finished texts go to the run in chunks.

With `--num-samples k` the k samples of a prompt are asked in one request (`n = k`, option
`n_per_request`): hosted APIs bill the prompt once per request and engines prefill it once, so a
worst-of-k run costs about one request per prompt instead of k. Its seed is that of the request's first
sample, so a server that ignores `n` answers that sample exactly as a single request would, and the rest
are asked one by one (as for a server that rejects `n`). The n texts of one request are a different (equally
valid) sampling plan from k single requests, so the plan is part of `settings()` and resume keeps to it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from bold_eval.generation.base import BatchCallback, Generated, GenerationStats, WorkItem
from bold_eval.generation.chat import ChatProtocol
from bold_eval.generation.http_client import ApiError

# At most this many samples per request (OpenAI's limit on `n`); more pending samples take several requests.
MAX_N = 128
# What settings() records of a run that asks for n (the resume fingerprint; `n_per_request=false` leaves it out).
N_PLAN = (f"one request per prompt for its pending samples (n, at most {MAX_N}); one request per sample where "
          "the server ignores or rejects n")
N_SEED = "sha256(seed, prompt_id, first sample of the request) mod 2**31, one per request"
# An error body that names the `n` field (pydantic's "n", OpenAI's 'n', "n must be ..."), not a word with an n in it.
NAMES_N = re.compile(r"(?<![\\\w])n(?![\w])")


def group_requests(items: Sequence[WorkItem], use_n: bool) -> list[list[WorkItem]]:
    """The items as requests: with n, each prompt's pending samples in sample order (at most MAX_N a
    request; prompts in their first item's order), else one request per item."""
    if not use_n:
        return [[item] for item in items]
    by_prompt: dict[str, list[WorkItem]] = {}
    for item in items:
        by_prompt.setdefault(item.prompt_id, []).append(item)
    requests: list[list[WorkItem]] = []
    for samples in by_prompt.values():
        samples.sort(key=lambda item: item.sample)
        requests.extend(samples[start:start + MAX_N] for start in range(0, len(samples), MAX_N))
    return requests


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
    return list[int | None](counts)


class Answer(NamedTuple):
    """What one choice of a server answer holds: the text (content), token counts, a separate reasoning trace.
    `completion_tokens` is the answer's `usage.completion_tokens`: over all its choices when there are several."""

    text: str
    completion_tokens: int | None
    prompt_tokens: int | None = None
    reasoning: str | None = None
    finish_reason: str | None = None


def parse_choices(answer: Mapping[str, Any], api: str, what: str) -> list[Answer]:
    """Every choice of a server answer in `index` order; ApiError (naming `what`) when it has none."""
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not all(isinstance(c, Mapping) for c in choices):
        raise ApiError(f"{what}: the server's answer has no choices: {str(answer)[:300]!r}")
    found = answer.get("usage")
    usage: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    tokens, prompt_tokens = usage.get("completion_tokens"), usage.get("prompt_tokens")
    ordered = sorted(enumerate(choices), key=lambda pair: (_index(pair[1].get("index")), pair[0]))
    return [_choice(choice, api, int(tokens) if isinstance(tokens, int) else None,
                    int(prompt_tokens) if isinstance(prompt_tokens, int) else None)
            for _, choice in ordered]


def _index(value: Any) -> int:
    """A choice's `index` for sorting; a missing or odd one sorts last (then by position in the answer)."""
    return value if isinstance(value, int) else 1 << 31


def _choice(choice: Mapping[str, Any], api: str, tokens: int | None, prompt_tokens: int | None) -> Answer:
    found = choice.get("message")
    message: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    text = message.get("content") if api == "chat" else choice.get("text")
    # vLLM's and transformers serve's reasoning parsers: `reasoning_content`; newer vLLM: `reasoning`.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    finish = choice.get("finish_reason")
    return Answer(text if isinstance(text, str) else "", tokens, prompt_tokens,
                  reasoning if isinstance(reasoning, str) else None, finish if isinstance(finish, str) else None)


@dataclass
class ApiTally:
    """What the server's answers were like, counted across the request threads (run.json `model_info`)."""

    served_model: str | None = None  # the `model` of the first answer that names one
    system_fingerprints: set[str] = field(default_factory=set)
    usage_missing: int = 0  # answers without usage.completion_tokens
    empty: int = 0  # empty continuations (not those cut off inside a thinking trace)
    echo_stripped: int = 0  # chat replies that repeated the prompt
    traces_removed: int = 0
    ended_in_trace: int = 0
    n_requests: int = 0  # requests that asked for n > 1
    n_texts: int = 0  # texts those requests gave
    n_short: int = 0  # answers with fewer choices than asked (the rest asked one by one)
    # Re-entrant: the generator's info() holds it across its own reads and these methods.
    lock: Any = field(default_factory=threading.RLock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        """Add to the named counters (a bool counts 1 or 0)."""
        with self.lock:
            for name, count in counts.items():
                setattr(self, name, getattr(self, name) + count)

    def saw(self, answer: Mapping[str, Any]) -> None:
        """Note the served model and system fingerprint an answer names."""
        with self.lock:
            if self.served_model is None and isinstance(answer.get("model"), str):
                self.served_model = answer["model"]
            if isinstance(answer.get("system_fingerprint"), str):
                self.system_fingerprints.add(answer["system_fingerprint"])

    def info(self, chat: ChatProtocol) -> dict[str, Any]:
        """The counts run.json records, around the chat protocol's description (`model_info.chat`) as it orders
        them: echoes only for a chat protocol, traces only for a thinking one."""
        with self.lock:
            return {
                "responses_without_usage": self.usage_missing,
                "empty_responses": self.empty,
                **({"echo_stripped": self.echo_stripped} if chat.chat else {}),
                "chat": chat.info(),
                **({"traces_removed": self.traces_removed, "ended_in_trace": self.ended_in_trace}
                   if chat.thinking else {}),
            }

    def samples_info(self, num_samples: int, n_per_request: str, use_n: bool) -> dict[str, Any]:
        """How the k samples of each prompt were asked for (run.json `model_info.samples_per_request`)."""
        with self.lock:
            return {"num_samples": num_samples, "n_per_request": n_per_request,
                    "mode": "n per request" if use_n else "one request per sample",
                    "requests_with_n": self.n_requests, "texts_from_n_requests": self.n_texts,
                    "answers_with_fewer_choices": self.n_short,
                    "num_new_tokens": "usage.completion_tokens of an n request shared out by each choice's length "
                                      "in characters"}


class PendingResults:
    """Finished results not yet handed to `on_batch`; handed over in chunks so the run writes as they come."""

    def __init__(self, on_batch: BatchCallback, stats: GenerationStats, flush_every: int, flush_seconds: float):
        self.on_batch = on_batch
        self.stats = stats
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self.items: list[WorkItem] = []
        self.results: list[Generated] = []
        self.last_flush = time.perf_counter()
        self.in_callback = False  # True while on_batch runs: what it raised on is not handed over again

    def add(self, item: WorkItem, result: Generated) -> None:
        self.items.append(item)
        self.results.append(result)

    def due(self) -> bool:
        """Whether `flush_every` texts are waiting or `flush_seconds` have passed since the last hand-over."""
        return len(self.items) >= self.flush_every or time.perf_counter() - self.last_flush >= self.flush_seconds

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


def request_all(
    requests: Sequence[list[WorkItem]], complete: Callable[[list[WorkItem]], list[Generated]],
    pool: ThreadPoolExecutor, pending: PendingResults, *, bar: Any, concurrency: int, stop: threading.Event,
    retry_count: Callable[[], int],
) -> BaseException | None:
    """Keep `concurrency` requests (`complete(request)` in `pool`) busy until every one is done, their results
    going to `pending`; return the first request failure.

    After a failure `stop` is set, no new request starts and queued ones are cancelled; those in flight
    finish and are handed over with the rest.
    """
    todo = iter(requests)
    in_flight: dict[Future, list[WorkItem]] = {}
    failure: BaseException | None = None
    for _ in range(2 * concurrency):  # a little queue keeps every worker busy
        _submit_next(todo, complete, pool, in_flight)
    while in_flight:
        finished, _ = wait(list(in_flight), timeout=pending.flush_seconds, return_when=FIRST_COMPLETED)
        for future in finished:
            request = in_flight.pop(future)
            try:
                results = future.result()
            except BaseException as error:  # raised after the requests in flight finish
                if failure is None:
                    failure = error
                    stop.set()
                    for other in in_flight:
                        other.cancel()
                continue
            for item, result in zip(request, results, strict=True):
                pending.add(item, result)
            bar.update(len(request))
            if failure is None:
                _submit_next(todo, complete, pool, in_flight)
        if failure is not None:
            in_flight = {future: request for future, request in in_flight.items() if not future.cancelled()}
        if pending.due():
            pending.flush()
        bar.set_postfix(retries=retry_count(), refresh=False)
    return failure


def _submit_next(todo: Iterator[list[WorkItem]], complete: Callable[[list[WorkItem]], list[Generated]],
                 pool: ThreadPoolExecutor, in_flight: dict[Future, list[WorkItem]]) -> None:
    """Start the next request, if any is left."""
    request = next(todo, None)
    if request is not None:
        in_flight[pool.submit(complete, request)] = request
