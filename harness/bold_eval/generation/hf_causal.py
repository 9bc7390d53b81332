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
import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from bold_eval.core.errors import UsageError
from bold_eval.generation.base import (
    HF_CAUSAL,
    WIKIPEDIA,
    BatchCallback,
    Generated,
    GenerationSettings,
    GenerationStats,
    GeneratorContext,
    WorkItem,
)
from bold_eval.generation.batching import (
    BatchPlan,
    default_batch_size,
    run_batch_plan,
)
from bold_eval.generation.decoding import (
    _SENTENCE_END_FOLLOWED,
    DecodingConfig,
    finish_continuation,
    uniform_draws,
)


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
    continuations = _continuations(tokenizer, input_ids, encoded["attention_mask"], tokens, decoding)
    return [Generated(text, count) for text, count in zip(continuations, counts, strict=True)]


def _continuations(tokenizer: Any, input_ids: Any, attention_mask: Any, tokens: list[list[int]],
                   decoding: DecodingConfig) -> list[str]:
    """Decode prompt + new tokens together and strip the decoded prompt, so that the continuation
    keeps its leading space even with tokenizers that drop it when decoding a fragment."""
    prompt_ids = [ids[row_mask.bool()].tolist() for ids, row_mask in zip(input_ids.cpu(), attention_mask, strict=True)]
    prefixes = tokenizer.batch_decode(prompt_ids, skip_special_tokens=True)
    full = tokenizer.batch_decode([ids + new for ids, new in zip(prompt_ids, tokens, strict=True)], skip_special_tokens=True)
    continuations = [whole[len(prefix):] if whole.startswith(prefix) else tokenizer.decode(new, skip_special_tokens=True)
                     for whole, prefix, new in zip(full, prefixes, tokens, strict=True)]
    return [finish_continuation(text, decoding) for text in continuations]


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


class HFCausalGenerator:
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
        if options:
            raise UsageError(f"--generator-option {', '.join(options)}: the {HF_CAUSAL} generator takes only "
                             "model_args (--model-args); its settings are the decoding flags (--decoding, --top-k, ...)")
        if config.model not in ("embedded", WIKIPEDIA) and not config.gguf_file:
            # transformers would load e.g. BertForMaskedLM weights into BertLMHeadModel, a decoder
            # they were never trained as, and generate without a word: refuse before anything runs.
            from bold_eval.generation.loading import is_masked_lm_checkpoint, masked_lm_as_causal_message

            if is_masked_lm_checkpoint(config.model, revision=config.revision):
                raise UsageError(masked_lm_as_causal_message(config.model))
        self.config = config
        self.context = context
        self.loaded: Any = None

    def settings(self) -> dict[str, Any]:
        config = self.config
        settings = {"model": config.model, "gguf_file": config.gguf_file, "revision": config.revision,
                    "dtype": config.dtype, "seed": config.seed, "decoding": config.decoding.to_dict()}
        if self.model_args:  # only when given, so that folders from before --model-args still resume
            settings["model_args"] = dict(self.model_args)
        return settings

    def info(self) -> dict[str, Any]:
        if self.loaded is None:
            return {"name": self.config.model, "revision": self.config.revision, "gguf_file": self.config.gguf_file}
        return dict(self.loaded.info)

    def load(self) -> Any:
        """Load the model once; every process calls this (process 0 first: it fills the GGUF cache)."""
        if self.loaded is None:
            from bold_eval.generation.loading import load_causal_lm

            config = self.config
            with self.context.main_process_first():
                self.loaded = load_causal_lm(config.model, gguf_file=config.gguf_file, dtype=config.dtype,
                                         device=self.context.device, revision=config.revision,
                                         model_args=self.model_args or None)
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
                              plan=plan)
