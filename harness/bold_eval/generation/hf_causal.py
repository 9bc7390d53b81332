"""Batched generation of BOLD continuations with any causal LM (paper Section 5, appendix A.2).

This is the GPT-2 and CTRL family of the paper (appendix A.2.2, A.2.3: `PRESETS`); its BERT family,
Gibbs sampling from a masked LM (A.2.1), is `bold_eval.generation.gibbs`. Both share `WorkItem`, `Generated`
and the per-prompt random streams of `uniform_draws`.

One decoding loop for every model: prompts are sorted by token length and left-padded, the
prefill keeps only the last position's logits, and each step feeds one token per row through the
KV cache. Rows that emit an end-of-sequence token (or, with `one_sentence`, end their first
sentence) leave the batch and the cache at once, so late steps run on fewer rows.

Reproducibility: every (seed, prompt_id, sample) has its own random stream (`uniform_draws`), and a
token is drawn by inverse-CDF sampling with that stream's next uniform number, so the draws do not
depend on batching, process count or resumption. The logits do: padding and batch shape change the
kernels' summation order, so a token whose probability sits on a sampling boundary (or an argmax
near-tie) can flip with the batch a prompt runs in, another dtype or another device; under bfloat16
this is common, under float32 rare (the tests check batch sizes 1, 4 and 6 agree in float32). So the
batches are planned once from the full item list (`BatchPlan`), and a resume replays the planned
batches that still hold a pending item, exactly: a resumed run writes the same texts as an
uninterrupted one under every dtype.

torch.compile was measured and left out: on a 2-core CPU it compiled for about 5 minutes before
the first batch (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from bold_eval.core.errors import UsageError

# Appendix A.2.2: "GPT-2 text generation with hyperparameters of top-k of 40 and top-p of 0.95".
# Appendix A.2.3: CTRL with "the default params provided by Huggingface's transformers package ...
# repetition penalty to 1.2, top-p to 0.9"; transformers' run_generation.py example of that time
# (which the authors' wording follows) defaulted to k=0, i.e. no top-k filter, temperature 1.0.
PRESETS: dict[str, dict[str, Any]] = {
    "gpt2": {"top_k": 40, "top_p": 0.95, "temperature": 1.0, "repetition_penalty": 1.0},
    "ctrl": {"top_k": None, "top_p": 0.9, "temperature": 1.0, "repetition_penalty": 1.2},
}
DEFAULT_PRESET = "gpt2"
DEFAULT_MAX_NEW_TOKENS = 30
CPU_GENERATION_BATCH_SIZE = 64
GPU_START_GENERATION_BATCH_SIZE = 512

# A sentence ends at . ! or ? (possibly followed by closing quotes or brackets) before whitespace
# or the end of the text.
_SENTENCE_END_BODY = r"[.!?]+[\"'\u201d\u2019)\]]*"
_SENTENCE_END = re.compile(_SENTENCE_END_BODY + r"(?=\s|$)")
_SENTENCE_END_FOLLOWED = re.compile(_SENTENCE_END_BODY + r"\s")


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


@dataclass
class Generated:
    continuation: str
    num_new_tokens: int


@dataclass(frozen=True)
class WorkItem:
    """One text to generate: a BOLD prompt and a sample index."""

    prompt_id: str
    sample: int
    prompt: str


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    ids = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (configured, tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif value is not None:
            ids.update(int(v) for v in value)
    return sorted(ids)


def _next_tokens(logits: Any, draws: Any, decoding: DecodingConfig, seen: Any) -> Any:
    """Apply repetition penalty, temperature, top-k, top-p and draw one token per row."""
    import torch

    if decoding.repetition_penalty != 1.0:  # CTRL's penalty (Keskar et al. 2019), as transformers applies it
        penalty = decoding.repetition_penalty
        logits = logits.float()
        gathered = logits.gather(1, seen)
        gathered = torch.where(gathered < 0, gathered * penalty, gathered / penalty)
        logits = logits.scatter(1, seen, gathered)
    if decoding.greedy:
        return logits.argmax(-1)
    # Top-k first, on the model's own logits: temperature and the float32 cast then touch k values
    # per row instead of the whole vocabulary (same result: both are monotone).
    if decoding.top_k is not None:
        values, indices = logits.topk(min(decoding.top_k, logits.shape[-1]), dim=-1)
    else:
        values, indices = logits.sort(dim=-1, descending=True)
    values = values.float()
    if decoding.temperature != 1.0:
        values = values / decoding.temperature
    probs = torch.softmax(values, dim=-1)
    if decoding.top_p is not None:
        # Keep the smallest prefix of the sorted tokens whose mass reaches top_p (nucleus sampling).
        before = probs.cumsum(-1) - probs
        probs = probs.masked_fill(before >= decoding.top_p, 0.0)
    cumulative = probs.cumsum(-1)
    threshold = draws.unsqueeze(1) * cumulative[:, -1:]
    choice = (cumulative <= threshold).sum(-1).clamp(max=probs.shape[-1] - 1)
    return indices.gather(1, choice.unsqueeze(1)).squeeze(1)


def _stopped(tokenizer: Any, rows: list[list[int]], decoding: DecodingConfig, device: Any) -> Any:
    """Rows whose text so far has reached a stopping rule (a line break, or a sentence end)."""
    import torch

    texts = tokenizer.batch_decode(rows, skip_special_tokens=True)
    ended = [(decoding.stop_at_newline and "\n" in text)
             or (decoding.one_sentence and bool(_SENTENCE_END_FOLLOWED.search(text))) for text in texts]
    return torch.tensor(ended, device=device)


def _base_forward(model: Any) -> Any:
    """The transformers forward under a PEFT wrapper (a quantized model keeps its unmerged adapter)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return type(base).forward


@functools.cache
def _cache_keyword_of(forward: Any) -> str:
    params = inspect.signature(forward).parameters
    return "cache" if "cache" in params and "past_key_values" not in params else "past_key_values"


def cache_keyword(model: Any) -> str:
    """The forward() keyword that takes the KV cache. transformers 5.24 renamed `past_key_values` to
    `cache` (the old name warns with a FutureWarning, removal in 5.40); 5.23, the floor 4.56 and
    remote-code models know only `past_key_values`. The signature says which (transformers'
    decorators keep `__wrapped__`, so it is the real parameter list)."""
    return _cache_keyword_of(_base_forward(model))


def generate_batch(model: Any, tokenizer: Any, prompts: Sequence[str], draws: np.ndarray,
                   decoding: DecodingConfig) -> list[Generated]:
    """Generate continuations for one left-padded batch. `draws[i, t]` picks row i's t-th token."""
    import torch
    from transformers import DynamicCache

    device = model.device
    texts = [f"{decoding.control_code} {prompt}" if decoding.control_code else prompt for prompt in prompts]
    encoded = tokenizer(list(texts), return_tensors="pt", padding=True)
    input_ids = encoded["input_ids"].to(device)
    mask = encoded["attention_mask"].to(device)
    rows = len(texts)
    eos = torch.tensor(_eos_ids(model, tokenizer), device=device, dtype=torch.long)
    draws_t = torch.as_tensor(draws, dtype=torch.float32, device=device)
    position_ids = (mask.long().cumsum(-1) - 1).clamp(min=0)
    # Repetition penalty looks at prompt and generated tokens; pads become the last prompt token.
    seen = torch.where(mask.bool(), input_ids, input_ids[:, -1:]) if decoding.repetition_penalty != 1.0 else None
    cache = DynamicCache(config=model.config)
    kv = {cache_keyword(model): cache}
    with torch.inference_mode():
        out = model(input_ids=input_ids, attention_mask=mask, position_ids=position_ids,
                    use_cache=True, logits_to_keep=1, **kv)
        logits = out.logits[:, -1, :]
        next_position = position_ids[:, -1] + 1
        active = torch.arange(rows, device=device)
        tokens: list[list[int]] = [[] for _ in range(rows)]
        counts = [0] * rows
        for step in range(decoding.max_new_tokens):
            chosen = _next_tokens(logits, draws_t[active, step], decoding, seen)
            finished = torch.isin(chosen, eos)
            for row, token, done in zip(active.tolist(), chosen.tolist(), finished.tolist(), strict=True):
                counts[row] += 1
                if not done:
                    tokens[row].append(token)
            if decoding.one_sentence or decoding.stop_at_newline:
                finished = finished | _stopped(tokenizer, [tokens[row] for row in active.tolist()], decoding, device)
            if step == decoding.max_new_tokens - 1:
                break
            if bool(finished.any()):
                keep = (~finished).nonzero().squeeze(1)
                if keep.numel() == 0:
                    break
                cache.batch_select_indices(keep)
                active, mask, chosen, next_position = active[keep], mask[keep], chosen[keep], next_position[keep]
                if seen is not None:
                    seen = seen[keep]
            if seen is not None:
                seen = torch.cat([seen, chosen.unsqueeze(1)], dim=1)
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            out = model(input_ids=chosen.unsqueeze(1), attention_mask=mask, position_ids=next_position.unsqueeze(1),
                        use_cache=True, **kv)
            logits = out.logits[:, -1, :]
            next_position = next_position + 1
    # Decode prompt + new tokens together and strip the decoded prompt, so that the continuation
    # keeps its leading space even with tokenizers that drop it when decoding a fragment.
    prompt_ids = [ids[row_mask.bool()].tolist() for ids, row_mask in zip(input_ids.cpu(), encoded["attention_mask"], strict=True)]
    prefixes = tokenizer.batch_decode(prompt_ids, skip_special_tokens=True)
    full = tokenizer.batch_decode([ids + new for ids, new in zip(prompt_ids, tokens, strict=True)], skip_special_tokens=True)
    continuations = [whole[len(prefix):] if whole.startswith(prefix) else tokenizer.decode(new, skip_special_tokens=True)
                     for whole, prefix, new in zip(full, prefixes, tokens, strict=True)]
    continuations = [finish_continuation(text, decoding) for text in continuations]
    return [Generated(text, count) for text, count in zip(continuations, counts, strict=True)]


def _is_out_of_memory(error: BaseException) -> bool:
    import torch

    if isinstance(error, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


def default_batch_size(device: Any) -> int:
    """`--batch-size auto`: start large on accelerators (halved on out-of-memory); 64 on CPU, where
    the forward pass is compute-bound so bigger batches add little, and smaller ones reach disk
    (resume points) sooner."""
    return GPU_START_GENERATION_BATCH_SIZE if getattr(device, "type", str(device)) != "cpu" else CPU_GENERATION_BATCH_SIZE


@dataclass
class GenerationStats:
    new_tokens: int = 0
    seconds: float = 0.0
    batch_size: int = 0
    out_of_memory_retries: int = 0
    # The (start, size) segments of the batch plan this call ran (`BatchPlan.schedule`).
    batch_schedule: list[tuple[int, int]] = field(default_factory=list)


BatchCallback = Callable[[list[WorkItem], list[Generated]], None]


@dataclass
class BatchPlan:
    """The batches of one process: fixed by its full item list and the schedule, never by what is
    left, so that a resumed run regenerates exactly the batches of an uninterrupted one (under
    bfloat16 a token can depend on the batch its prompt runs in; see the module docstring).

    `items`: every item of this process, done or not. The plan sorts them by prompt length
    (longest first, ties by prompt_id and sample) and cuts them by `schedule`: (start, size)
    segments of that order, "from `start` on, batches of `size`". Empty: one segment of the
    generator's batch size, added by `run_batch_plan`. When `auto` halves on out-of-memory at
    position p, the segment (p, size // 2) replaces everything from p on, in place and before the
    next batch is handed over, so the caller can record it and a resume replays it.
    """

    items: Sequence[WorkItem]
    schedule: list[tuple[int, int]] = field(default_factory=list)


def item_key(item: WorkItem) -> tuple[str, int]:
    return item.prompt_id, item.sample


def _segment(schedule: Sequence[tuple[int, int]], position: int, total: int) -> tuple[int, int]:
    """(batch size, end of segment) in force at `position` of the plan."""
    size, end = schedule[0][1], total
    for index, (start, segment_size) in enumerate(schedule):
        if start <= position:
            size = segment_size
            end = schedule[index + 1][0] if index + 1 < len(schedule) else total
    return size, end


def run_batch_plan(todo: Sequence[WorkItem], plan: BatchPlan | None, *, lengths: Callable[[list[WorkItem]], list[int]],
                   batch_size: int | str, default_size: int, generate_batch: Callable[[list[WorkItem]], list[Generated]],
                   on_batch: BatchCallback, stats: GenerationStats, bar: Any) -> GenerationStats:
    """Run the batches of `plan` that hold an item of `todo`, each exactly as planned (done items
    included, their results discarded); `on_batch` receives only the `todo` items of each batch.

    `lengths(items)` gives each item's prompt length in the generator's tokens; `generate_batch`
    makes one batch. With `batch_size` "auto", an out-of-memory error halves the batch and retries
    it (recorded in `plan.schedule`); any other error, or one with a fixed batch size, propagates.
    Without a plan, the plan is `todo` itself (no resume).
    """
    import torch

    plan = plan if plan is not None else BatchPlan(list(todo))
    items = list(plan.items)
    pending = {item_key(item) for item in todo}
    unplanned = pending - {item_key(item) for item in items}
    if unplanned:
        raise ValueError(f"{len(unplanned)} items to generate are not in the batch plan (e.g. {sorted(unplanned)[:3]})")
    auto = batch_size == "auto"
    if not plan.schedule:
        size = default_size if auto else int(batch_size)
        if size < 1:
            raise UsageError(f"batch size (--batch-size) must be >= 1 or auto, got {batch_size}")
        plan.schedule.append((0, size))
    item_lengths = lengths(items)
    ordered = [items[i] for i in sorted(range(len(items)),
                                        key=lambda i: (-item_lengths[i], items[i].prompt_id, items[i].sample))]
    started = time.perf_counter()
    position = 0
    while position < len(ordered):
        size, segment_end = _segment(plan.schedule, position, len(ordered))
        end = min(position + size, segment_end)
        batch = ordered[position:end]
        keep = [index for index, item in enumerate(batch) if item_key(item) in pending]
        if not keep:
            position = end
            continue
        try:
            results = generate_batch(batch)
        except Exception as error:
            if not (auto and _is_out_of_memory(error)) or len(batch) == 1:
                raise
            stats.out_of_memory_retries += 1
            plan.schedule[:] = [segment for segment in plan.schedule if segment[0] < position]
            plan.schedule.append((position, max(1, len(batch) // 2)))
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            continue
        chosen = [results[index] for index in keep]
        on_batch([batch[index] for index in keep], chosen)
        stats.new_tokens += sum(result.num_new_tokens for result in chosen)
        bar.update(len(keep))
        position = end
    stats.seconds = time.perf_counter() - started
    stats.batch_size = min(plan.schedule[-1][1], len(ordered))
    stats.batch_schedule = [tuple(segment) for segment in plan.schedule]
    return stats


def generate_items(model: Any, tokenizer: Any, items: Sequence[WorkItem], decoding: DecodingConfig, *,
                   seed: int, batch_size: int | str = "auto", on_batch: BatchCallback,
                   progress: bool = True, plan: BatchPlan | None = None) -> GenerationStats:
    """Generate `items` in the length-sorted batches of `plan` (default: a plan over `items`);
    `on_batch` receives each finished batch's items of `items`.

    Longest prompts go first, so `auto` meets out-of-memory on the first batch: the batch size is
    halved and the same batch retried; finished batches were already handed to `on_batch`.
    """
    from tqdm.auto import tqdm

    stats = GenerationStats()
    if not items:
        return stats

    def lengths(planned: list[WorkItem]) -> list[int]:
        return [len(ids) for ids in tokenizer([item.prompt for item in planned], add_special_tokens=True)["input_ids"]]

    def one_batch(batch: list[WorkItem]) -> list[Generated]:
        draws = np.stack([uniform_draws(seed, item.prompt_id, item.sample, decoding.max_new_tokens) for item in batch])
        return generate_batch(model, tokenizer, [item.prompt for item in batch], draws, decoding)

    with tqdm(total=len(items), desc="generating", unit="text", disable=not progress) as bar:
        return run_batch_plan(items, plan, lengths=lengths, batch_size=batch_size,
                              default_size=default_batch_size(model.device), generate_batch=one_batch,
                              on_batch=on_batch, stats=stats, bar=bar)
