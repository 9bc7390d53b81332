"""Decoding as the paper sets it (appendix A.2): presets, per-item random streams, the one-sentence stopping rule."""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bold_eval.core.errors import UsageError
from bold_eval.core.options import DECODING_PRESETS, DEFAULT_MAX_NEW_TOKENS, DEFAULT_PRESET  # noqa: F401

# Appendix A.2.2: "GPT-2 text generation with hyperparameters of top-k of 40 and top-p of 0.95".
# Appendix A.2.3: CTRL with "the default params provided by Huggingface's transformers package ...
# repetition penalty to 1.2, top-p to 0.9"; transformers' run_generation.py example of that time
# (which the authors' wording follows) defaulted to k=0, i.e. no top-k filter, temperature 1.0.
PRESETS: dict[str, dict[str, Any]] = {
    "gpt2": {"top_k": 40, "top_p": 0.95, "temperature": 1.0, "repetition_penalty": 1.0},
    "ctrl": {"top_k": None, "top_p": 0.9, "temperature": 1.0, "repetition_penalty": 1.2},
}
assert tuple(PRESETS) == DECODING_PRESETS  # the CLI shows DECODING_PRESETS






# A sentence ends at . ! or ? (possibly followed by closing quotes or brackets) before whitespace
# or the end of the text.
_SENTENCE_END_BODY = r"[.!?]+[\"'\u201d\u2019)\]]*"


_SENTENCE_END = re.compile(_SENTENCE_END_BODY + r"(?=\s|$)")


SENTENCE_END_FOLLOWED = re.compile(_SENTENCE_END_BODY + r"\s")


@dataclass(frozen=True)
class DecodingConfig:
    """How continuations are drawn; every field goes into the run's config fingerprint."""

    preset: str = DEFAULT_PRESET
    greedy: bool = False
    top_k: int | None = 40
    top_p: float | None = 0.95
    temperature: float = 1.0
    repetition_penalty: float = 1.0
    control_code: str | None = None
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    one_sentence: bool = False
    # The shared stopping rule (STOPPING_RULE): also the lm-eval tasks' `until: ["\n"]`.
    stop_at_newline: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def make_decoding(
    preset: str = DEFAULT_PRESET,
    *,
    greedy: bool = False,
    top_k: int | None = None,
    top_p: float | None = None,
    temperature: float | None = None,
    repetition_penalty: float | None = None,
    control_code: str | None = None,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    one_sentence: bool = False,
    stop_at_newline: bool = True,
) -> DecodingConfig:
    """A preset from appendix A.2 with explicit overrides; validates every value."""
    if preset not in PRESETS:
        raise UsageError(f"unknown decoding preset {preset!r}; valid: {', '.join(PRESETS)}")
    values = dict(PRESETS[preset])
    for key, value in (("top_k", top_k), ("top_p", top_p), ("temperature", temperature),
                       ("repetition_penalty", repetition_penalty)):
        if value is not None:
            values[key] = value
    if values["top_k"] is not None and values["top_k"] <= 0:
        values["top_k"] = None  # top-k 0 means "no top-k filter", as in transformers
    if values["top_p"] is not None and not 0.0 < values["top_p"] <= 1.0:
        raise UsageError(f"top_p must be in (0, 1], got {values['top_p']}")
    if values["top_p"] == 1.0:
        values["top_p"] = None
    if values["temperature"] <= 0:
        raise UsageError(f"temperature must be > 0 (use --greedy for argmax decoding), got {values['temperature']}")
    if values["repetition_penalty"] <= 0:
        raise UsageError(f"repetition_penalty must be > 0, got {values['repetition_penalty']}")
    if max_new_tokens < 1:
        raise UsageError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if preset == "ctrl" and not control_code:
        raise UsageError("the ctrl preset needs --control-code (the paper uses Wikipedia, Thoughts, Opinion)")
    if greedy:  # sampling filters do not matter under argmax; keep the record unambiguous
        values.update(top_k=None, top_p=None, temperature=1.0)
    return DecodingConfig(preset=preset, greedy=greedy, control_code=control_code or None,
                          max_new_tokens=max_new_tokens, one_sentence=one_sentence,
                          stop_at_newline=stop_at_newline, **values)


def uniform_draws(seed: int, prompt_id: str, sample: int, steps: int) -> np.ndarray:
    """The uniform numbers that pick each token of one (prompt, sample): a stream of its own."""
    key = int.from_bytes(hashlib.sha256(prompt_id.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng([seed, key, sample]).random(steps)


def cut_one_sentence(text: str) -> str:
    """Cut a continuation after the end of the first sentence (the prompt's own sentence)."""
    match = _SENTENCE_END.search(text)
    return text[: match.end()] if match else text


STOPPING_RULE = (
    "a continuation ends before its first line break (a BOLD prompt starts one Wikipedia sentence; what a "
    "base model writes after a line break is new, unrelated text); the lm-eval tasks stop at the same place "
    "with `until: [\"\\n\"]`, and `bold-eval run --no-stop-at-newline` turns it off"
)


def finish_continuation(text: str, decoding: DecodingConfig) -> str:
    """Apply the stopping rules to a generated continuation: `STOPPING_RULE`, then `one_sentence`.

    Every generator calls this, so a run and the lm-eval tasks score the same text."""
    if decoding.stop_at_newline:
        text = text.split("\n", 1)[0]
    return cut_one_sentence(text) if decoding.one_sentence else text
