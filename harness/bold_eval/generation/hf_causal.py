"""Batched generation of BOLD continuations with any causal LM (paper Section 5, appendix A.2).

This is the GPT-2 and CTRL family of the paper (appendix A.2.2, A.2.3: `PRESETS`); its BERT family,
Gibbs sampling from a masked LM (A.2.1), is `bold_eval.generation.gibbs`. Both share `WorkItem`, `Generated`
and the per-prompt random streams of `uniform_draws`.

One decoding loop for every model: prompts are sorted by token length and left-padded, the
prefill keeps only the last position's logits, and each step feeds one token per row through the
KV cache (`kv_cache`: written in place, not copied each step). Rows that emit an end-of-sequence token (or reach
a stopping rule) stop drawing at once and leave the batch and the cache (`COMPACT_AT`), so late steps run on fewer
rows. On CUDA, attention runs without cuDNN's kernels (`bold_eval.core.devices.attention_kernels`).
With k samples per prompt (`--num-samples`), a batch's rows of one prompt share one prefill: the distinct
inputs are prefilled once and their cache and logits repeated to the rows (`share_prefill`, on by default;
the time it saves is in benchmarks/RESULTS.md).

Reproducibility: every (seed, prompt_id, sample) has its own random stream (`uniform_draws`), and a
token is drawn by inverse-CDF sampling with that stream's next uniform number, so the draws do not
depend on batching, process count or resumption. The logits do: padding and batch shape change the
kernels' summation order, so a token whose probability sits on a sampling boundary (or an argmax
near-tie) can flip with the batch a prompt runs in, another dtype or another device; under bfloat16
this is common, under float32 rare (the tests check batch sizes 1, 4 and 6 agree in float32). So the
batches are planned once from the full item list (`BatchPlan`), and a resume replays the planned
batches that still hold a pending item, exactly: a resumed run writes the same texts as an
uninterrupted one under every dtype.

Chat models: under a chat protocol (`bold_eval.generation.chat`, `--chat-template prefill|instruct`) each
prompt is rendered with the tokenizer's chat template and tokenized without adding special tokens again
(the template holds them); the stopping rules look at the answer after any thinking trace, and the reply
becomes the scored continuation through `ChatProtocol.finish`.

torch.compile is left out: on a CPU its compilation outlasts a small run's generation (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from bold_eval.core.devices import attention_kernels
from bold_eval.core.errors import UsageError
from bold_eval.generation.base import (
    HF_CAUSAL,
    WIKIPEDIA,
    BatchCallback,
    Generated,
    GenerationSettings,
    GenerationStats,
    Generator,
    GeneratorContext,
    WorkItem,
)
from bold_eval.generation.batching import (
    BatchPlan,
    default_batch_size,
    memory_batch_size,
    run_batch_plan,
)
from bold_eval.generation.chat import NONE, ChatOptions, ChatProtocol, Finished, has_chat_template
from bold_eval.generation.decoding import (
    SENTENCE_END_FOLLOWED,
    DecodingConfig,
    finish_continuation,
    uniform_draws,
)
from bold_eval.generation.kv_cache import kv_cache


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


def _stopped(tokenizer: Any, rows: list[list[int]], decoding: DecodingConfig, device: Any,
             chat: ChatProtocol | None = None, opened: Sequence[bool] = ()) -> Any:
    """Rows whose text so far has reached a stopping rule (a line break, or a sentence end); under a chat
    protocol the rules look at the answer only (`ChatProtocol.answer_so_far`: not inside a thinking trace)."""
    import torch

    texts = _decode(tokenizer, rows, chat)
    if chat is not None:
        texts = [chat.answer_so_far(text, open_) or "" for text, open_ in zip(texts, opened, strict=True)]
    ended = [(decoding.stop_at_newline and "\n" in text)
             or (decoding.one_sentence and bool(SENTENCE_END_FOLLOWED.search(text))) for text in texts]
    return torch.tensor(ended, device=device)


# The token ids whose own text holds a line break, for the last few tokenizers (each kept with its entry, so an id()
# is never reused while it is here).
_NEWLINE_IDS: dict[int, tuple[Any, list[int]]] = {}
_NEWLINE_CACHE_SIZE = 4


def newline_token_ids(tokenizer: Any) -> list[int]:
    """Every token whose decoded text contains a line break (byte-level BPE's `Ċ`, SentencePiece's `<0x0A>`,
    `\n\n`, ...). A line break is one byte, so it lies inside one token: a row has reached one exactly when it
    drew one of these. Decoding each row after every step found the same rows at a cost that grows with the rows
    (about 26 ms a step for 512 rows on 2 CPU cores; on one H100, 3 s of BOLD's 46 s of generation: RESULTS.md,
    "H100: all of BOLD end to end, DynamicCache")."""
    known = _NEWLINE_IDS.get(id(tokenizer))
    if known is not None and known[0] is tokenizer:
        return known[1]
    rows = [[token] for token in range(len(tokenizer))]
    backend = getattr(tokenizer, "backend_tokenizer", None)  # a fast tokenizer's Rust decoder: 10x faster here
    texts = backend.decode_batch(rows, skip_special_tokens=True) if backend is not None else \
        tokenizer.batch_decode(rows, skip_special_tokens=True)
    ids = [token for token, text in enumerate(texts) if "\n" in text]
    while len(_NEWLINE_IDS) >= _NEWLINE_CACHE_SIZE:
        _NEWLINE_IDS.pop(next(iter(_NEWLINE_IDS)))
    _NEWLINE_IDS[id(tokenizer)] = (tokenizer, ids)
    return ids


def _line_break_tokens(tokenizer: Any, decoding: DecodingConfig, chat: ChatProtocol | None, device: Any) -> Any:
    """`newline_token_ids` on the device when a token test decides when rows stop (raw prompts, the line-break
    rule alone); None where the text must be decoded (a sentence end, a chat answer outside its trace)."""
    import torch

    if chat is not None or not decoding.stop_at_newline or decoding.one_sentence:
        return None
    return torch.tensor(newline_token_ids(tokenizer), device=device, dtype=torch.long)


def _decode(tokenizer: Any, rows: Sequence[Sequence[int]], chat: ChatProtocol | None) -> list[str]:
    """batch_decode without special tokens, but keeping the trace markers when the tokenizer counts them as
    special (they must be found to cut the trace)."""
    thinking = chat.thinking if chat is not None else None
    special = set(getattr(tokenizer, "all_special_tokens", ()))
    keep = {thinking.end, thinking.start} & special if thinking is not None else set()
    if not keep:
        return tokenizer.batch_decode(rows, skip_special_tokens=True)
    texts = tokenizer.batch_decode(rows, skip_special_tokens=False)
    for token in sorted(special - keep, key=len, reverse=True):
        texts = [text.replace(token, "") for text in texts]
    return texts


# What settings() records of a run whose prompts' samples share their prefill (the resume fingerprint).
SHARED_PREFILL = "a prompt's samples in one batch share its prefill (one forward pass, its cache repeated)"


def _flag(name: str, value: Any) -> bool:
    """A boolean generator option (`--generator-option share_prefill=false` arrives as JSON false or a string)."""
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise UsageError(f"--generator-option {name} must be true or false, got {value!r}")


def model_inputs(tokenizer: Any, prompts: Sequence[str], decoding: DecodingConfig,
                 chat: ChatProtocol | None = None) -> tuple[list[str], dict[str, Any]]:
    """The texts the model reads for `prompts` (the control code prepended; the chat template applied under
    a chat protocol) and the tokenizer keywords for them (a rendered template already holds its special
    tokens, so none are added again, as vLLM and transformers' own chat pipeline do)."""
    texts = [f"{decoding.control_code} {prompt}" if decoding.control_code else prompt for prompt in prompts]
    if chat is None or not chat.chat:
        return texts, {}
    return [chat.render(tokenizer, text) for text in texts], {"add_special_tokens": False}


# Distinct prompts tokenized at a time to measure their lengths for the batch plan: bounds the tokenizer's
# per-text objects whatever the number of prompts.
LENGTH_CHUNK = 4_096


def prompt_lengths(tokenizer: Any, prompts: Sequence[str], decoding: DecodingConfig,
                   chat: ChatProtocol | None) -> list[int]:
    """Each prompt's length in model-input tokens (chat template applied), for the batch plan. The k samples of
    a prompt share it, so each distinct prompt is tokenized once, `LENGTH_CHUNK` at a time."""
    position: dict[str, int] = {}
    for prompt in prompts:
        position.setdefault(prompt, len(position))
    distinct, found = list(position), list[int]()
    for start in range(0, len(distinct), LENGTH_CHUNK):
        part = distinct[start:start + LENGTH_CHUNK]
        if chat is None or not chat.chat:
            ids = tokenizer(part, add_special_tokens=True)["input_ids"]
        else:
            texts, keywords = model_inputs(tokenizer, part, decoding, chat)
            ids = tokenizer(texts, **keywords)["input_ids"]
        found.extend(len(row) for row in ids)
    return [found[position[prompt]] for prompt in prompts]


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


# Tokens one row may hold in the KV cache, for sizing `auto` batches: a BOLD prompt under a chat template plus
# its new tokens, with room to spare (raw prompts with 30 new tokens hold about 40).
ROW_TOKENS = 256


def row_bytes(model: Any) -> int | None:
    """What one row of a batch needs, from the model's config: its KV cache for ROW_TOKENS tokens in the model's
    dtype, plus a row of float32 logits twice over (the last position's, and top-k's working copy). None when the
    config does not say (a remote-code model with its own names for these)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    layers, heads, hidden, vocab = (getattr(config, name, None) for name in
                                    ("num_hidden_layers", "num_attention_heads", "hidden_size", "vocab_size"))
    if not (isinstance(layers, int) and isinstance(heads, int) and isinstance(hidden, int) and isinstance(vocab, int)
            and min(layers, heads, hidden, vocab) > 0):
        return None
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    return 2 * layers * kv_heads * head_dim * model.dtype.itemsize * ROW_TOKENS + 2 * vocab * 4


def auto_batch_size(model: Any) -> int:
    """`--batch-size auto`: on a GPU, as many rows (`row_bytes`) as half the memory beyond the weights holds
    (`memory_batch_size`); `default_batch_size` elsewhere, or when the config does not give the sizes. From the
    device's total memory, not what is free now, so every process of a run, and its resume, plan the same batches."""
    import torch

    device = model.device
    row = row_bytes(model)
    if device.type != "cuda" or row is None:
        return default_batch_size(device)
    weights = model.get_memory_footprint() if hasattr(model, "get_memory_footprint") else \
        sum(parameter.numel() * parameter.element_size() for parameter in model.parameters())
    return memory_batch_size(torch.cuda.get_device_properties(device).total_memory - weights, row)


def shared_rows(texts: Sequence[str]) -> tuple[list[int], list[int]] | None:
    """(the first row of each distinct text, each row's index among them), or None when every text differs."""
    first: dict[str, int] = {}
    inverse = [first.setdefault(text, len(first)) for text in texts]
    if len(first) == len(texts):
        return None
    rows = {index: row for row, index in reversed(list(enumerate(inverse)))}
    return [rows[index] for index in range(len(first))], inverse


# Finished rows stay in the batch (their draws ignored) until this share of it has finished; then one copy of the
# cache drops them all. 0 (the default) drops them at the step they finish: on an H100 that was no slower than
# waiting for an eighth of the batch (14-15 against 18 microseconds per row and step; benchmarks/RESULTS.md,
# "H100: all of BOLD end to end, in-place KV cache"), so the knob stays for models whose rows finish more
# unevenly than that benchmark's.
COMPACT_AT = 0.0


def generate_batch(model: Any, tokenizer: Any, prompts: Sequence[str], draws: np.ndarray,
                   decoding: DecodingConfig, chat: ChatProtocol | None = None,
                   share_prefill: bool = False) -> list[Generated]:
    """Generate continuations for one left-padded batch. `draws[i, t]` picks row i's t-th token; `chat`
    is the chat protocol (None or `none`: the prompt fed raw). With `share_prefill`, rows with the same input
    (a prompt's k samples) share one prefill (`_prefill`)."""
    import torch

    device = model.device
    chat = chat if chat is not None and chat.chat else None
    texts, keywords = model_inputs(tokenizer, prompts, decoding, chat)
    opened = [chat is not None and chat.opened(text) for text in texts]
    encoded = tokenizer(texts, return_tensors="pt", padding=True, **keywords)
    input_ids = encoded["input_ids"].to(device)
    mask = encoded["attention_mask"].to(device)
    steps = decoding.max_new_tokens
    eos = torch.tensor(_eos_ids(model, tokenizer), device=device, dtype=torch.long)
    draws_t = torch.as_tensor(draws, dtype=torch.float32, device=device)
    position_ids = (mask.long().cumsum(-1) - 1).clamp(min=0)
    # Repetition penalty looks at prompt and generated tokens; pads become the last prompt token.
    seen = torch.where(mask.bool(), input_ids, input_ids[:, -1:]) if decoding.repetition_penalty != 1.0 else None
    cache = kv_cache(model, input_ids.shape[1] + steps)
    kv = {cache_keyword(model): cache}
    newline = _line_break_tokens(tokenizer, decoding, chat, device)
    rows = _Rows(len(texts), steps, device)
    with torch.inference_mode(), attention_kernels(device):
        logits = _prefill(model, cache, input_ids, mask, position_ids, shared_rows(texts) if share_prefill else None)
        next_position = position_ids[:, -1] + 1
        for step in range(steps):
            chosen = _next_tokens(logits, draws_t[rows.present, step], decoding, seen)
            ended = torch.isin(chosen, eos)
            rows.record(step, chosen, ended)
            rows.finish(ended | _stop_rule(chosen, newline, tokenizer, rows, step, decoding, chat, opened))
            if step == steps - 1:
                break
            keep = rows.compact()
            if keep is not None:
                if keep.numel() == 0:
                    break
                cache.batch_select_indices(keep)
                mask, chosen, next_position = mask[keep], chosen[keep], next_position[keep]
                seen = seen[keep] if seen is not None else None
            if seen is not None:
                seen = torch.cat([seen, chosen.unsqueeze(1)], dim=1)
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            out = model(input_ids=chosen.unsqueeze(1), attention_mask=mask, position_ids=next_position.unsqueeze(1),
                        use_cache=True, **kv)
            logits = out.logits[:, -1, :]
            next_position = next_position + 1
    tokens, counts = rows.results()
    replies = _continuations(tokenizer, input_ids, encoded["attention_mask"], tokens, chat)
    return _generated(tokenizer, prompts, replies, counts, decoding, chat, opened)


class _Rows:
    """The decoding loop's book of rows, kept on the device so a step needs one synchronisation (two when rows
    leave): which batch row each cache row holds (`present`), which are still generating (`live`), each row's
    tokens so far and its count of steps (an end-of-sequence token counts as a step but is not kept)."""

    def __init__(self, rows: int, steps: int, device: Any):
        import torch

        self.present = torch.arange(rows, device=device)
        self.live = torch.ones(rows, dtype=torch.bool, device=device)
        self.tokens = torch.full((rows, steps), -1, dtype=torch.long, device=device)
        self.counts = torch.zeros(rows, dtype=torch.long, device=device)

    def record(self, step: int, chosen: Any, ended: Any) -> None:
        import torch

        self.counts[self.present] += self.live.long()
        self.tokens[self.present, step] = torch.where(self.live & ~ended, chosen, -1)

    def finish(self, stopped: Any) -> None:
        self.live = self.live & ~stopped

    def so_far(self, step: int) -> list[list[int]]:
        """The tokens of every cache row up to `step` (for the stopping rules that read the text)."""
        return _drawn(self.tokens[self.present, : step + 1])

    def compact(self) -> Any:
        """None to keep the cache as it is, else the cache rows to keep (empty: every row has finished)."""
        alive = int(self.live.sum())
        finished = len(self.live) - alive
        if alive and (finished == 0 or finished < COMPACT_AT * len(self.live)):
            return None
        keep = self.live.nonzero().squeeze(1)
        self.present, self.live = self.present[keep], self.live[keep]
        return keep

    def results(self) -> tuple[list[list[int]], list[int]]:
        return _drawn(self.tokens), self.counts.tolist()


def _drawn(tokens: Any) -> list[list[int]]:
    """Each row's kept tokens from a (rows, steps) tensor whose unused places hold -1."""
    return [[token for token in row if token >= 0] for row in tokens.tolist()]


def _stop_rule(chosen: Any, newline: Any, tokenizer: Any, rows: _Rows, step: int,
               decoding: DecodingConfig, chat: ChatProtocol | None, opened: Sequence[bool]) -> Any:
    """Cache rows that reached a stopping rule with this step's token: by the token itself where `newline` is
    given (`_line_break_tokens`), else by their decoded text (`_stopped`); none without a rule."""
    import torch

    if newline is not None:
        return torch.isin(chosen, newline)
    if not (decoding.one_sentence or decoding.stop_at_newline):
        return torch.zeros_like(chosen, dtype=torch.bool)
    return _stopped(tokenizer, rows.so_far(step), decoding, chosen.device, chat,
                    [opened[row] for row in rows.present.tolist()])


def _prefill(model: Any, cache: Any, input_ids: Any, mask: Any, position_ids: Any,
             shared: tuple[list[int], list[int]] | None) -> Any:
    """The batch's first forward pass into `cache`; its last position's logits per row. With `shared`
    (`shared_rows`), only the distinct inputs are run, and their cache and logits are repeated to every row."""
    import torch

    kv = {cache_keyword(model): cache}
    if shared is None:
        out = model(input_ids=input_ids, attention_mask=mask, position_ids=position_ids, use_cache=True,
                    logits_to_keep=1, **kv)
        return out.logits[:, -1, :]
    distinct = torch.as_tensor(shared[0], device=input_ids.device)
    out = model(input_ids=input_ids[distinct], attention_mask=mask[distinct], position_ids=position_ids[distinct],
                use_cache=True, logits_to_keep=1, **kv)
    repeat = torch.as_tensor(shared[1], device=input_ids.device)
    cache.batch_select_indices(repeat)  # each distinct input's cache, once per row of it
    return out.logits[:, -1, :][repeat]


def _generated(tokenizer: Any, prompts: Sequence[str], replies: list[str], counts: list[int],
               decoding: DecodingConfig, chat: ChatProtocol | None, opened: list[bool]) -> list[Generated]:
    """The batch's results: the stopping rules on each reply, or under a chat protocol `ChatProtocol.finish`
    (trace cut off, reply joined to the prompt as the model read it)."""
    if chat is None:
        finished = [Finished(finish_continuation(text, decoding)) for text in replies]
    else:
        shown = model_inputs(tokenizer, prompts, decoding)[0]  # with the control code, before the template
        finished = [chat.finish(reply, prompt, decoding, opened=open_)
                    for reply, prompt, open_ in zip(replies, shown, opened, strict=True)]
    return [Generated(done.text, count, done.ended_in_trace) for done, count in zip(finished, counts, strict=True)]


def _continuations(tokenizer: Any, input_ids: Any, attention_mask: Any, tokens: list[list[int]],
                   chat: ChatProtocol | None = None) -> list[str]:
    """Decode prompt + new tokens together and strip the decoded prompt, so that the continuation
    keeps its leading space even with tokenizers that drop it when decoding a fragment."""
    prompt_ids = [[token for token, kept in zip(ids, row_mask, strict=True) if kept]
                  for ids, row_mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True)]
    prefixes = _decode(tokenizer, prompt_ids, chat)
    full = _decode(tokenizer, [ids + new for ids, new in zip(prompt_ids, tokens, strict=True)], chat)
    return [whole[len(prefix):] if whole.startswith(prefix) else _decode(tokenizer, [new], chat)[0]
            for whole, prefix, new in zip(full, prefixes, tokens, strict=True)]


def generate_items(model: Any, tokenizer: Any, items: Sequence[WorkItem], decoding: DecodingConfig, *,
                   seed: int, batch_size: int | str = "auto", on_batch: BatchCallback,
                   progress: bool = True, plan: BatchPlan | None = None,
                   chat: ChatProtocol | None = None, share_prefill: bool = False) -> GenerationStats:
    """Generate `items` in the length-sorted batches of `plan` (default: a plan over `items`);
    `on_batch` receives each finished batch's items of `items`. `chat`: the chat protocol (None: raw).
    `share_prefill`: a prompt's samples in one batch share its prefill (`generate_batch`).

    Longest prompts go first, so `auto` meets out-of-memory on the first batch: the batch size is
    halved and the same batch retried; finished batches were already handed to `on_batch`.
    """
    from tqdm.auto import tqdm

    stats = GenerationStats()
    if not items:
        return stats

    def lengths(planned: list[WorkItem]) -> list[int]:
        return prompt_lengths(tokenizer, [item.prompt for item in planned], decoding, chat)

    def one_batch(batch: list[WorkItem]) -> list[Generated]:
        draws = np.stack([uniform_draws(seed, item.prompt_id, item.sample, decoding.max_new_tokens) for item in batch])
        return generate_batch(model, tokenizer, [item.prompt for item in batch], draws, decoding, chat, share_prefill)

    with tqdm(total=len(items), desc="generating", unit="text", disable=not progress) as bar:
        return run_batch_plan(items, plan, lengths=lengths, batch_size=batch_size,
                              default_size=auto_batch_size(model), generate_batch=one_batch,
                              on_batch=on_batch, stats=stats, bar=bar)


class HFCausalGenerator(Generator):
    """Any transformers causal LM (Hub id, folder, GGUF, `embedded`), sampled as in appendix A.2."""

    kind = HF_CAUSAL

    def __init__(self, config: GenerationSettings, context: GeneratorContext):
        from bold_eval.generation.model_args import check_data_parallel, parse_model_args

        options = dict(config.generator_options or {})
        # `--model-args` (how from_pretrained loads the checkpoint: device_map, quantization, PEFT, ...)
        try:
            self.model_args = parse_model_args(options.pop("model_args", None))
            check_data_parallel(self.model_args)  # device_map under accelerate launch / torchrun
        except ValueError as error:
            raise UsageError(str(error)) from error
        self.chat_options = ChatOptions.pop_from(options)  # --chat-template and friends
        # A prompt's k samples share one prefill (`generate_batch`), unless `share_prefill=false`.
        self.share_prefill = config.num_samples > 1 and _flag("share_prefill", options.pop("share_prefill", True))
        if options:
            raise UsageError(f"--generator-option {', '.join(options)}: the {HF_CAUSAL} generator takes only "
                             "model_args (--model-args), share_prefill and the chat options (--chat-template, ...); "
                             "its settings are the decoding flags (--decoding, --top-k, ...)")
        if config.model not in ("embedded", WIKIPEDIA) and not config.gguf_file:
            # transformers would load e.g. BertForMaskedLM weights into BertLMHeadModel, a decoder
            # they were never trained as, and generate without a word: refuse before anything runs.
            from bold_eval.generation.loading import is_masked_lm_checkpoint, masked_lm_as_causal_message

            if is_masked_lm_checkpoint(config.model, revision=config.revision):
                raise UsageError(masked_lm_as_causal_message(config.model))
        self.config = config
        self.context = context
        self.loaded: Any = None
        self._chat: ChatProtocol | None = None

    def settings(self) -> dict[str, Any]:
        config = self.config
        settings = {"model": config.model, "gguf_file": config.gguf_file, "revision": config.revision,
                    "dtype": config.dtype, "seed": config.seed, "decoding": config.decoding.to_dict()}
        if self.model_args:  # only when given, so that folders from before --model-args still resume
            settings["model_args"] = dict(self.model_args)
        if self.share_prefill:  # a prefill run once for k rows may round differently: resume keeps to one plan
            settings["share_prefill"] = SHARED_PREFILL
        settings.update(self._unresolved_or(lambda chat: chat.settings()))
        return settings

    def info(self) -> dict[str, Any]:
        if self.loaded is None:
            return {"name": self.config.model, "revision": self.config.revision, "gguf_file": self.config.gguf_file,
                    "chat": self._unresolved_or(lambda chat: chat.info())}
        return {**self.loaded.info, "chat": self.chat_info()}

    def _unresolved_or(self, describe: Any) -> dict[str, Any]:
        """`describe(self.chat())`, or {"chat_template": "auto"} when auto cannot read the tokenizer (a model
        that is not there: `load` then says so, before anything is written)."""
        from bold_eval.core.resources import ResourceNotFoundError

        try:
            return describe(self.chat())
        except ResourceNotFoundError:
            return {"chat_template": self.chat_options.chat_template}

    def chat(self) -> ChatProtocol:
        """The chat protocol: the one given, else (auto) `prefill` for a tokenizer with a chat template and
        `none` without (`bold_eval.generation.chat.DEFAULT_FOR_CHAT_MODELS`); auto loads the tokenizer only."""
        if self._chat is None:
            options = self.chat_options
            if options.chat_template != "auto":
                self._chat = options.resolve(options.chat_template, "")
            else:
                from bold_eval.generation.chat import DEFAULT_FOR_CHAT_MODELS
                from bold_eval.generation.loading import load_tokenizer

                config = self.config
                tokenizer = (self.loaded.tokenizer if self.loaded is not None else
                             load_tokenizer(config.model, gguf_file=config.gguf_file, revision=config.revision,
                                            model_args=self.model_args or None))
                templated = has_chat_template(tokenizer)
                self._chat = options.resolve(DEFAULT_FOR_CHAT_MODELS if templated else NONE,
                                             "auto: the tokenizer " + ("has a" if templated else "has no")
                                             + " chat template")
        return self._chat

    def chat_info(self) -> dict[str, Any]:
        """The protocol for run.json, with the model's input for an example prompt (the system prompt it got)."""
        info = self.chat().info()
        if self.loaded is not None and self.chat().chat:
            info["example_input"] = self.chat().render(self.loaded.tokenizer, "{BOLD prompt}")
        return info

    def load(self) -> Any:
        """Load the model once; every process calls this (process 0 first: it fills the GGUF cache)."""
        if self.loaded is None:
            from bold_eval.generation.loading import load_causal_lm

            config = self.config
            with self.context.main_process_first():
                loaded = load_causal_lm(config.model, gguf_file=config.gguf_file, dtype=config.dtype,
                                        device=self.context.device, revision=config.revision,
                                        model_args=self.model_args or None)
            chat = self.chat()
            if chat.chat and not has_chat_template(loaded.tokenizer):
                raise UsageError(f"--chat-template {chat.protocol}: the tokenizer of {config.model} has no chat "
                                 "template (a base model); use --chat-template none, the raw continuation")
            chat.render(loaded.tokenizer, "A prompt")  # a template that refuses the conversation stops here
            self.loaded = loaded
        return self.loaded

    plans_batches = True  # takes `plan=` (BatchPlan): a resume replays the planned batches

    def generate(self, items: Sequence[WorkItem], *, on_batch: BatchCallback,
                 progress: bool = True, plan: BatchPlan | None = None) -> GenerationStats:
        import torch

        from bold_eval.generation.hf_causal import generate_items

        loaded = self.load()
        torch.manual_seed(self.config.seed)
        return generate_items(loaded.model, loaded.tokenizer, items, self.config.decoding, seed=self.config.seed,
                              batch_size=self.config.batch_size, on_batch=on_batch, progress=progress,
                              plan=plan, chat=self.chat(), share_prefill=self.share_prefill)
