"""The server probe of the OpenAI-compatible generator: what a server does with the decoding a run asks for.

A few 8-token requests before the run (`ApiGenerator.probe`) find out which optional fields the server rejects,
whether it samples at all, whether a seed is reproducible, whether top_k and n are applied and, for
`--chat-template prefill`, whether it continues a prefilled assistant reply. Each answer is recorded in run.json
(`model_info.server`), so a report says what the server did; `strict_decoding` makes a difference an error.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping
from typing import Any, Protocol

from bold_eval.core.options import PREFILL
from bold_eval.generation.decoding import DecodingConfig
from bold_eval.generation.http_client import ApiError, public_url

# Tokens per probe request.
PROBE_TOKENS = 8
# Optional request fields outside the OpenAI schema (vLLM, llama.cpp and SGLang take them); a server may reject
# them by name, and the probe then drops them and records it.
OPTIONAL_PARAMS = ("top_k", "repetition_penalty", "seed")


def request_seed(seed: int, prompt_id: str, sample: int) -> int:
    """The per-request `seed` of one (prompt, sample): 31 bits of sha256, which every server's int accepts."""
    digest = hashlib.sha256(f"{seed}\x00{prompt_id}\x00{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


class ProbedGenerator(Protocol):
    """What the probe reads and sets of the generator (`bold_eval.generation.openai_compatible.ApiGenerator`)."""

    chat: Any
    client: Any
    decoding: DecodingConfig
    endpoint: str
    n_per_request: str
    n_plan: bool
    params: dict[str, Any]
    seed: int
    send: dict[str, bool]
    server: dict[str, str]
    strict_decoding: bool
    use_n: bool

    def answer(self, prompt: str, *, seed: int | None, overrides: Mapping[str, Any] | None = None) -> Any: ...

    def ask(self, prompt: str, *, seed: int | None, overrides: Mapping[str, Any] | None = None) -> str: ...

    def payload(self, prompt: str, *, seed: int | None, overrides: Mapping[str, Any] | None = None
                ) -> dict[str, Any]: ...

    def choices_of(self, answer: Mapping[str, Any], what: str) -> list[Any]: ...


class ServerProbe:
    """The probe of one generator: its answers go to `api.server`, and what to send to `api.send` / `api.use_n`."""

    def __init__(self, api: ProbedGenerator):
        self.api = api

    def run(self, prompt: str) -> dict[str, str]:
        """Find out what the server does with the decoding parameters (a few 8-token requests).

        1. Optional fields it rejects (HTTP 400/422 naming them) are dropped and recorded.
        2. Sampling: three seeds at temperature 1 must not all give the greedy text, else the server
           decodes greedily whatever the request says (e.g. `transformers serve` with a model whose
           generation_config has do_sample=false). Greedy runs check that temperature 0 is stable.
        3. seed: the same seed twice must give the same text (and other seeds another one).
        4. top_k: top_k=1 at temperature 1 must give the greedy text, else top_k is ignored.
        5. n (only when the run asks for several samples per prompt): n=2 must give two choices.
        """
        # No `stop` in probe requests: an answer cut at a line break could hide the difference a probe looks for.
        overrides: dict[str, Any] = {"max_tokens": min(PROBE_TOKENS, self.api.decoding.max_new_tokens), "stop": None}
        # The optional fields first, on a plain chat turn; then whether the server continues a prefilled reply.
        self._accept(prompt, {**overrides, "continue_final_message": None, "add_generation_prompt": None})
        if self.api.chat.protocol == PREFILL:
            self._probe_prefill(prompt, overrides)
        seeds = [request_seed(self.api.seed, "__probe__", index) for index in range(3)]
        greedy = {**overrides, "temperature": 0.0, "top_p": 1.0, "top_k": None, "repetition_penalty": None}
        if self.api.decoding.greedy:
            problems = self._probe_greedy(prompt, seeds, greedy)
        else:
            problems = self._probe_sampling(prompt, seeds, greedy, overrides)
        if self.api.send["repetition_penalty"] and self.api.server.get("repetition_penalty") == "not probed":
            self.api.server["repetition_penalty"] = "accepted (effect not checked)"
        if self.api.send["seed"] and self.api.server.get("seed") == "not probed":
            self.api.server["seed"] = "accepted"
        if self.api.n_plan:
            self._probe_n(prompt, overrides)
        for name in ("top_k", "repetition_penalty"):
            if name in self.api.params and not self.api.send[name]:
                problems.append(f"{name}={self.api.params[name]} is not applied ({self.api.server[name]})")
        if problems:
            message = (f"server at {public_url(self.api.client.base_url)} does not apply the requested decoding: "
                       + "; ".join(problems))
            if self.api.strict_decoding:
                raise ApiError(message + ". Serve the model with an engine that takes these parameters "
                               "(vLLM does), or drop strict_decoding to record the difference and go on.")
            warnings.warn(message + " (recorded in run.json model_info.server)", stacklevel=2)
        return dict(self.api.server)

    def _probe_prefill(self, prompt: str, overrides: Mapping[str, Any]) -> None:
        """`--chat-template prefill` needs a server that continues the final assistant message (vLLM, SGLang).
        Asked once with `continue_final_message` and once with a new assistant turn instead: the prefill
        must reach the model as fewer prompt tokens (no end-of-turn, no new header), else it was ignored."""
        greedy = {**overrides, "temperature": 0.0, "top_p": 1.0, "top_k": None, "repetition_penalty": None}
        fix = ("Serve the model with an engine that takes continue_final_message (vLLM, SGLang), or use "
               "--chat-template instruct.")
        try:
            prefilled = self.api.answer(prompt, seed=self.api.seed, overrides=greedy)
        except ApiError as error:
            if error.status not in (400, 422):
                raise
            self.api.server["continue_final_message"] = f"rejected (HTTP {error.status}: {(error.body or '')[:200]})"
            raise ApiError(f"server at {public_url(self.api.client.base_url)} refused a prefilled assistant reply "
                           f"(continue_final_message; HTTP {error.status}: {(error.body or '')[:200]}). {fix}",
                           status=error.status, body=error.body) from None
        new_turn = self.api.answer(prompt, seed=self.api.seed, overrides={**greedy, "continue_final_message": False,
                                                                    "add_generation_prompt": True})
        if prefilled.prompt_tokens is None or new_turn.prompt_tokens is None:
            self.api.server["continue_final_message"] = ("accepted (not checked: the server reports no "
                                                         "usage.prompt_tokens)")
            warnings.warn(f"server at {public_url(self.api.client.base_url)} accepted continue_final_message but "
                          "reports no prompt tokens, so whether it continued the prefilled reply is unknown",
                          stacklevel=3)
        elif prefilled.prompt_tokens < new_turn.prompt_tokens:
            self.api.server["continue_final_message"] = (f"honoured ({prefilled.prompt_tokens} prompt tokens, "
                                                     f"{new_turn.prompt_tokens} with a new assistant turn)")
        else:
            self.api.server["continue_final_message"] = (f"ignored: {prefilled.prompt_tokens} prompt tokens, as "
                                                         "many as with a new assistant turn")
            raise ApiError(f"server at {public_url(self.api.client.base_url)} ignores continue_final_message: it opens "
                           f"a new assistant turn after the prefilled reply, so the texts would not continue the "
                           f"prompts. {fix}")

    def _probe_greedy(self, prompt: str, seeds: list[int], greedy: Mapping[str, Any]) -> list[str]:
        """Greedy runs: temperature 0 must give the same text under two seeds. Returns the problems found."""
        first, second = (self.api.ask(prompt, seed=s, overrides=greedy) for s in seeds[:2])
        self.api.server["temperature_0"] = "honoured" if first == second else "ignored: two seeds gave different texts"
        return ["temperature 0 (greedy decoding) is not honoured"] if first != second else []

    def _probe_sampling(
        self, prompt: str, seeds: list[int], greedy: Mapping[str, Any], overrides: Mapping[str, Any]
    ) -> list[str]:
        """Sampled runs: is sampling applied, is a seed reproducible, is top_k applied. Returns the problems found."""
        problems: list[str] = []
        free = {**overrides, "temperature": 1.0, "top_p": 1.0, "top_k": None, "repetition_penalty": None}
        reference = self.api.ask(prompt, seed=None, overrides=greedy)
        samples = [self.api.ask(prompt, seed=s, overrides=free) for s in seeds]
        again = self.api.ask(prompt, seed=seeds[0], overrides=free)
        if all(sample == reference for sample in samples):
            self.api.server["sampling"] = "ignored: three seeds at temperature 1 all gave the greedy text"
            problems.append("sampling (temperature / top_p) looks ignored: the server decodes greedily")
        else:
            self.api.server["sampling"] = "honoured"
        if self.api.send["seed"]:
            if again != samples[0]:
                self.api.server["seed"] = "accepted but not reproducible: the same seed gave different texts"
            elif len(set(samples)) == 1:
                self.api.server["seed"] = "accepted; effect not observable (every seed gave the same text)"
            else:
                self.api.server["seed"] = "honoured"
        if self.api.send["top_k"]:
            top1 = {**free, "top_k": 1}
            if all(self.api.ask(prompt, seed=s, overrides=top1) == reference for s in seeds[:2]):
                self.api.server["top_k"] = "honoured"
            else:
                self.api.server["top_k"] = "accepted but ignored: top_k=1 did not give the greedy text"
                self.api.send["top_k"] = False
        return problems

    def _probe_n(self, prompt: str, overrides: Mapping[str, Any]) -> None:
        """Does the server answer n=2 (at the run's decoding) with two choices? Honoured: two (under sampling,
        two different texts, asked twice before calling them copies); ignored: one; rejected: HTTP 400/422.
        Under `n_per_request=auto` n is used only when honoured; `true` uses it anyway unless rejected."""
        where = f"server at {public_url(self.api.client.base_url)}"
        texts: list[str] = []
        for index in (3, 4):  # a second try only when two samples came out the same
            try:
                answer = self.api.client.post(self.api.endpoint, self.api.payload(
                    prompt, seed=request_seed(self.api.seed, "__probe__", index), overrides={**overrides, "n": 2}),
                    what="probe request (n=2)")
            except ApiError as error:
                if error.status not in (400, 422):
                    raise
                self.api.server["n"] = f"rejected (HTTP {error.status}: {(error.body or '')[:200]})"
                self.api.use_n = False
                if self.api.n_per_request == "true":
                    raise ApiError(f"{where} rejects n (HTTP {error.status}: {(error.body or '')[:200]}), which "
                                   "n_per_request=true asks for: use n_per_request=auto or false",
                                   status=error.status, body=error.body) from None
                return
            texts = [choice.text for choice in self.api.choices_of(answer, "probe request (n=2)")]
            if len(texts) < 2 or self.api.decoding.greedy or texts[0] != texts[1]:
                break
        if len(texts) < 2:
            self.api.server["n"] = f"ignored: n=2 gave {len(texts)} choice"
        elif self.api.decoding.greedy or texts[0] != texts[1]:
            self.api.server["n"] = "honoured"
            return
        else:
            self.api.server["n"] = "accepted but the choices look like copies: n=2 gave one text twice, twice"
        self.api.use_n = self.api.n_per_request == "true"
        if self.api.use_n or len(texts) >= 2:  # an ignored n under auto is the plain fallback; these are worth a word
            warnings.warn(f"{where}: {self.api.server['n']}; " + (
                "n_per_request=true sends n anyway (samples an answer lacks are asked one by one)" if self.api.use_n
                else "asking for each sample in its own request"), stacklevel=3)

    def _accept(self, prompt: str, overrides: Mapping[str, Any]) -> None:
        """Send everything once; drop the optional fields the server rejects by name (HTTP 400/422)."""
        while True:
            try:
                self.api.ask(prompt, seed=self.api.seed, overrides=overrides)
                return
            except ApiError as error:
                sent = [name for name in OPTIONAL_PARAMS if self.api.send[name]]
                named = [name for name in sent if error.status in (400, 422) and name in (error.body or "")]
                if not named:
                    raise
                for name in named:
                    self.api.send[name] = False
                    self.api.server[name] = f"rejected (HTTP {error.status}: {(error.body or '')[:200]})"
