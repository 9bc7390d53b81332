"""BERT's generator in BOLD: Gibbs sampling from a masked LM (paper Section 5.1, appendix A.2.1).

"We use BERT text generation implementation provided by [38] (Wang & Cho 2019) ... bert-large-cased
... max sentence length to 15, temperature to 0.7, burn-in to 200 iterations, and max iteration to
500." [38]'s code (github.com/nyu-dl/bert-gen, `bert-babble.ipynb`, `generate()` with its default
"parallel-sequential" mode) does, for every sequence:

1. Start from `[CLS] prompt [MASK] x max_new_tokens [SEP]`: the prompt's WordPieces follow `[CLS]`
   directly, the generated positions start as `[MASK]`, and a final `[SEP]` closes the sequence.
2. For `max_iter` iterations, pick one generated position uniformly at random (with replacement),
   put `[MASK]` there, run the model, and replace it with a token drawn from `softmax(logits / T)`:
   from the whole vocabulary during the first `burn_in` iterations, from the `top_k` most probable
   tokens afterwards (`top_k` 100, the default of [38]'s `generate()`, which the paper does not
   override; `top_k=0` takes the argmax after burn-in, as [38]'s `parallel_sequential_generation`
   default does). Burn-in iterations count toward `max_iter`: 200 full-distribution iterations,
   then 300 top-k iterations.
3. Return the final state after `max_iter` iterations (no averaging, no selection).

The paper's other two families, GPT-2 and CTRL (A.2.2, A.2.3), are causal decoding in
`bold_eval.generation.hf_causal`; `bold-eval run` picks this sampler for a masked-LM checkpoint
(`bold_eval.generation.choice.generator_kind`) and refuses to run one as a causal decoder.

Choices the paper and [38] leave open, made here:
- Update order: [38] draws one position per iteration for a batch of copies of one seed text. Here
  each (seed, prompt_id, sample) has its own random stream (`bold_eval.generation.decoding.uniform_draws`) that
  gives both its position sequence and its token draws, so a row's position may differ from its
  batch neighbours' and a text never depends on the batch it ran in (batch size, composition,
  resumption). Tokens are drawn by inverse CDF with the stream's uniform numbers.
- The prompt stays fixed: only the generated positions are ever masked or resampled; `[CLS]`, the
  prompt, `[SEP]` and padding are never touched (rows are right-padded and attention-masked).
- No token is excluded from sampling, as in [38]: a special token drawn at a generated position
  (rare for a trained BERT, whose MLM head never had to predict one) is dropped when decoding, and
  a position that was never drawn keeps its `[MASK]` and is dropped too (with the paper's settings
  the chance that any of 15 positions is never visited in 500 draws is 15 * (14/15)^500, ~1e-14).
  `num_new_tokens` counts the positions that were visited.
- Detokenization: [38] joins WordPieces (`##`) and joins tokens with spaces. Here the tokenizer's
  own `decode` does the same joining and also attaches punctuation ("kidnapping, murder"), as in
  the paper's BERT examples (Table 7). The continuation is the decoded `prompt + generated tokens`
  minus the decoded prompt, so `prompt + continuation` is the text that metrics see, as for causal
  models; an uncased model's continuation is lowercase.

Cost is `max_iter` forward passes per batch and nothing can be cached between them (bidirectional
attention: changing one token changes every hidden state). What is saved: one forward pass updates
the chosen position of every row of a large batch; the LM head runs only on the one chosen position
per row (a hook hands the base model's hidden state at that position to the model's own head, so
any `AutoModelForMaskedLM` works; checked once against the full head, with the full head as the
fallback); prompts are sorted by length so that padding stays short; and the loop never waits for
the device (draws and positions are precomputed tensors, no `.item()` per iteration).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bold_eval.core.devices import attention_kernels
from bold_eval.core.errors import UsageError
from bold_eval.core.options import (
    GIBBS_BURN_IN,
    GIBBS_MAX_ITER,
    GIBBS_MAX_NEW_TOKENS,
    GIBBS_MODEL,
    GIBBS_TEMPERATURE,
    GIBBS_TOP_K,
)
from bold_eval.generation.base import (
    BatchCallback,
    Generated,
    GenerationStats,
    Generator,
    WorkItem,
)
from bold_eval.generation.batching import (
    BatchPlan,
    default_batch_size,
    run_batch_plan,
)
from bold_eval.generation.decoding import uniform_draws
from bold_eval.generation.loading import (
    load_masked_lm,
)

KIND = "gibbs-mlm"
MODE = "parallel-sequential"
# Appendix A.2.1; top_k from [38]'s generate() (the paper does not set it).
DEFAULT_MODEL = GIBBS_MODEL
DEFAULT_MAX_NEW_TOKENS = GIBBS_MAX_NEW_TOKENS
DEFAULT_TEMPERATURE = GIBBS_TEMPERATURE
DEFAULT_BURN_IN = GIBBS_BURN_IN
DEFAULT_MAX_ITER = GIBBS_MAX_ITER
DEFAULT_TOP_K = GIBBS_TOP_K
# The one-time check of the chosen-position LM head against the full head: a wrong head differs by
# whole logits, rounding (bf16 included) by far less.
_HEAD_CHECK_TOLERANCE = 5e-2


@dataclass(frozen=True)
class GibbsSettings:
    """The sampler's settings (appendix A.2.1 defaults); all go into run.json and the resume fingerprint."""

    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    temperature: float = DEFAULT_TEMPERATURE
    burn_in: int = DEFAULT_BURN_IN
    max_iter: int = DEFAULT_MAX_ITER
    top_k: int = DEFAULT_TOP_K

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise UsageError(f"max_new_tokens (--max-new-tokens) must be >= 1, got {self.max_new_tokens}")
        if not self.temperature > 0:
            raise UsageError(f"temperature (--gibbs-temperature) must be > 0, got {self.temperature}")
        if self.max_iter < 1:
            raise UsageError(f"max_iter (--gibbs-max-iter) must be >= 1, got {self.max_iter}")
        if not 0 <= self.burn_in <= self.max_iter:
            raise UsageError(f"burn_in (--gibbs-burn-in) must be between 0 and max_iter ({self.max_iter}), "
                             f"got {self.burn_in}")
        if self.top_k < 0:
            raise UsageError(f"top_k (--gibbs-top-k) must be >= 0 (0: argmax after burn-in), got {self.top_k}")

    def to_dict(self) -> dict[str, Any]:
        return {"mode": MODE, **asdict(self)}


# --------------------------------------------------------------------------- detection


# --------------------------------------------------------------------------- loading


# --------------------------------------------------------------------------- the sampler


def gibbs_draws(seed: int, item: WorkItem, settings: GibbsSettings) -> tuple[np.ndarray, np.ndarray]:
    """One item's stream: the generated position resampled at each iteration (0-based within the
    generated span) and the uniform number that draws its token."""
    draws = uniform_draws(seed, item.prompt_id, item.sample, 2 * settings.max_iter)
    positions = np.minimum((draws[: settings.max_iter] * settings.max_new_tokens).astype(np.int64),
                           settings.max_new_tokens - 1)
    return positions, draws[settings.max_iter:]


def initial_inputs(tokenizer: Any, prompts: Sequence[str], max_new_tokens: int) -> tuple[Any, Any, Any]:
    """Right-padded `[CLS] prompt [MASK]*n [SEP]` rows: (input_ids, attention_mask, start), where
    `start[i]` is the index of row i's first generated position."""
    import torch

    cls_id = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    sep_id = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    mask_id, pad_id = tokenizer.mask_token_id, tokenizer.pad_token_id
    if None in (cls_id, sep_id, mask_id, pad_id):
        raise UsageError("Gibbs sampling needs a tokenizer with [CLS]/<s>, [SEP]/</s>, [MASK] and [PAD] tokens; "
                         f"{type(tokenizer).__name__} lacks one")
    prompt_ids = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    rows = [[cls_id, *ids, *([mask_id] * max_new_tokens), sep_id] for ids in prompt_ids]
    width = max(len(row) for row in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
    for index, row in enumerate(rows):
        input_ids[index, : len(row)] = torch.tensor(row)
        attention_mask[index, : len(row)] = 1
    start = torch.tensor([1 + len(ids) for ids in prompt_ids], dtype=torch.long)
    return input_ids, attention_mask, start


def sample_tokens(logits: Any, uniforms: Any, *, temperature: float, top_k: int | None) -> Any:
    """One token per row from `softmax(logits / temperature)`, by inverse CDF with `uniforms`.

    `top_k=None`: the whole vocabulary (burn-in); `top_k > 0`: the k most probable tokens;
    `top_k == 0`: the argmax (as in [38] without top-k after burn-in).
    """
    import torch

    if top_k == 0:
        return logits.argmax(-1)
    if top_k is None:
        values, indices = logits, None
    else:
        values, indices = logits.topk(min(top_k, logits.shape[-1]), dim=-1)
    probs = torch.softmax(values.float() / temperature, dim=-1)
    cumulative = probs.cumsum(-1)
    threshold = uniforms.unsqueeze(1) * cumulative[:, -1:]
    choice = (cumulative <= threshold).sum(-1).clamp(max=probs.shape[-1] - 1)
    return choice if indices is None else indices.gather(1, choice.unsqueeze(1)).squeeze(1)


@contextlib.contextmanager
def _head_on_chosen_positions(model: Any, holder: dict[str, Any]) -> Iterator[None]:
    """While active, the base model's sequence output is cut to the positions in `holder["positions"]`
    (one per row), so the model's own LM head runs on [batch, 1, hidden] instead of every position."""
    import torch

    base = getattr(model, "base_model", model)

    def keep_chosen(module: Any, args: Any, output: Any) -> Any:
        hidden = output[0]
        positions = holder["positions"]
        if hidden.dim() != 3 or hidden.shape[0] != positions.shape[0]:
            return output  # an unusual layout (e.g. unpadded); the caller gathers from full logits
        chosen = hidden[torch.arange(hidden.shape[0], device=hidden.device), positions].unsqueeze(1)
        if isinstance(output, tuple):
            return (chosen, *output[1:])
        output.last_hidden_state = chosen
        return output

    handle = base.register_forward_hook(keep_chosen) if base is not model else None
    try:
        yield
    finally:
        if handle is not None:
            handle.remove()


def logits_at(model: Any, input_ids: Any, attention_mask: Any, positions: Any) -> Any:
    """[batch, vocab] logits at one position per row, with the LM head on all positions."""
    import torch

    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    return logits[torch.arange(logits.shape[0], device=logits.device), positions]


def _chosen_logits(model: Any, input_ids: Any, attention_mask: Any, positions: Any, holder: dict[str, Any]) -> Any:
    """Logits at `positions` under `_head_on_chosen_positions` (gathered here if the hook passed)."""
    import torch

    holder["positions"] = positions
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    if logits.shape[1] == 1:
        return logits[:, 0]
    return logits[torch.arange(logits.shape[0], device=logits.device), positions]


def head_on_chosen_position_matches(model: Any, input_ids: Any, attention_mask: Any, positions: Any) -> bool:
    """Whether the chosen-position LM head gives this model's full-head logits (one row, two passes)."""
    import torch

    with torch.inference_mode():
        full = logits_at(model, input_ids[:1], attention_mask[:1], positions[:1]).float()
        holder: dict[str, Any] = {}
        with _head_on_chosen_positions(model, holder):
            chosen = _chosen_logits(model, input_ids[:1], attention_mask[:1], positions[:1], holder).float()
    scale = max(1.0, float(full.abs().max()))
    return chosen.shape == full.shape and float((chosen - full).abs().max()) <= _HEAD_CHECK_TOLERANCE * scale


def gibbs_sample(model: Any, input_ids: Any, attention_mask: Any, start: Any, positions: np.ndarray,
                 uniforms: np.ndarray, settings: GibbsSettings, mask_id: int, *, head_on_chosen: bool = True,
                 progress: Any = None) -> Any:
    """Run `settings.max_iter` parallel-sequential Gibbs iterations on one batch; return the final ids.

    `positions[i, t]` (within the generated span) is row i's position at iteration t and
    `uniforms[i, t]` draws its token. Each iteration is one forward pass for the whole batch.
    `head_on_chosen=False` runs the LM head on every position (the straightforward way; benchmarks).
    """
    import torch

    device = model.device
    ids = input_ids.to(device).clone()
    mask = attention_mask.to(device)
    rows = torch.arange(ids.shape[0], device=device)
    absolute = start.to(device).unsqueeze(1) + torch.as_tensor(positions, device=device)
    draws = torch.as_tensor(uniforms, dtype=torch.float32, device=device)
    holder: dict[str, Any] = {}
    report_every = max(1, settings.max_iter // 20)
    chosen_head = _head_on_chosen_positions(model, holder) if head_on_chosen else contextlib.nullcontext()
    with torch.inference_mode(), attention_kernels(device), chosen_head:
        for step in range(settings.max_iter):
            chosen = absolute[:, step]
            ids[rows, chosen] = mask_id
            if head_on_chosen:
                logits = _chosen_logits(model, ids, mask, chosen, holder)
            else:
                logits = logits_at(model, ids, mask, chosen)
            top_k = None if step < settings.burn_in else settings.top_k
            ids[rows, chosen] = sample_tokens(logits, draws[:, step], temperature=settings.temperature, top_k=top_k)
            if progress is not None and ((step + 1) % report_every == 0 or step + 1 == settings.max_iter):
                progress.set_postfix_str(f"iteration {step + 1}/{settings.max_iter}")
    return ids


def decode_continuations(tokenizer: Any, ids: Any, start: Any, prompts: Sequence[str],
                         max_new_tokens: int) -> list[str]:
    """Continuations: the decoded prompt + generated tokens minus the decoded prompt (see module doc)."""
    ids = ids.cpu().tolist()
    starts = start.tolist()
    prompt_ids = [row[1:begin] for row, begin in zip(ids, starts, strict=True)]
    new_ids = [row[begin: begin + max_new_tokens] for row, begin in zip(ids, starts, strict=True)]
    options = {"skip_special_tokens": True, "clean_up_tokenization_spaces": True}
    prefixes = tokenizer.batch_decode(prompt_ids, **options)
    full = tokenizer.batch_decode([a + b for a, b in zip(prompt_ids, new_ids, strict=True)], **options)
    continuations = []
    for whole, prefix, new, prompt in zip(full, prefixes, new_ids, prompts, strict=True):
        if whole.startswith(prefix):
            text = whole[len(prefix):]
        else:
            text = tokenizer.decode(new, **options)
            text = f" {text}" if text else text
        continuations.append(text.lstrip() if prompt[-1:].isspace() else text)
    return continuations


def describe(settings: GibbsSettings) -> str:
    """One line for the report's model line and run.json."""
    return (f"Gibbs sampling from a masked LM (Wang & Cho 2019; BOLD appendix A.2.1): {MODE}, "
            f"{settings.max_new_tokens} new tokens, temperature {settings.temperature}, burn-in {settings.burn_in}, "
            f"max iter {settings.max_iter}, top-k {settings.top_k} after burn-in")


@dataclass
class GibbsStats(GenerationStats):
    """`GenerationStats` plus the sampler's own counts."""

    batches: int = 0
    forward_passes: int = 0


class GibbsGenerator:
    """Generates BOLD continuations from any `AutoModelForMaskedLM` by Gibbs sampling (module doc).

    `model` and `tokenizer` as returned by `load_masked_lm`; `seed` with each item's
    (prompt_id, sample) fixes its text; `batch_size` ("auto": 512 rows on accelerators, halved on
    out-of-memory, 64 on CPU) changes speed only, never the texts.
    """

    kind = KIND

    def __init__(self, model: Any, tokenizer: Any, *, seed: int = 0,
                 max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, temperature: float = DEFAULT_TEMPERATURE,
                 burn_in: int = DEFAULT_BURN_IN, max_iter: int = DEFAULT_MAX_ITER, top_k: int = DEFAULT_TOP_K,
                 batch_size: int | str = "auto", model_info: dict[str, Any] | None = None) -> None:
        if seed < 0:
            raise UsageError(f"seed (--seed) must be >= 0, got {seed}")
        if batch_size != "auto" and int(batch_size) < 1:
            raise UsageError(f"batch size (--batch-size) must be >= 1 or auto, got {batch_size}")
        if tokenizer.mask_token_id is None:
            raise UsageError(f"{type(tokenizer).__name__} has no mask token; Gibbs sampling needs a masked LM")
        self.model = model
        self.tokenizer = tokenizer
        self.seed = int(seed)
        self.sampler = GibbsSettings(max_new_tokens=int(max_new_tokens), temperature=float(temperature),
                                     burn_in=int(burn_in), max_iter=int(max_iter), top_k=int(top_k))
        self.batch_size = batch_size
        self.model_info = dict(model_info or {})
        self.head_on_chosen: bool | None = None  # decided by a one-time check on the first batch

    def settings(self) -> dict[str, Any]:
        """Everything that determines the texts (batch size does not), JSON-able."""
        return {"seed": self.seed, **self.sampler.to_dict()}

    def info(self) -> dict[str, Any]:
        """The model and how it generated, for run.json and the report's model line."""
        info = {**self.model_info, "generator": KIND, "description": describe(self.sampler),
                "architecture": type(self.model).__name__}
        if self.head_on_chosen is not None:
            info["lm_head"] = "chosen position only" if self.head_on_chosen else "all positions"
        return info

    def _max_length(self) -> int:
        """Longest input the model takes: its position embeddings (RoBERTa's start after the padding
        index, hence 514 for 512 tokens) or the tokenizer's limit, whichever is smaller."""
        limits = []
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            offset = getattr(self.model.config, "pad_token_id", 0) or 0
            roberta_like = getattr(self.model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert")
            limits.append(positions - (offset + 1 if roberta_like else 0))
        tokenizer_limit = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < 1_000_000:  # not the "no limit" sentinel
            limits.append(tokenizer_limit)
        return min(limits) if limits else 512

    def generate(self, items: Sequence[WorkItem], *, on_batch: BatchCallback, progress: bool = True,
                 plan: BatchPlan | None = None) -> GibbsStats:
        """Generate `items` in the length-sorted batches of `plan` (`bold_eval.generation.batching.BatchPlan`;
        default a plan over `items`); `on_batch(items, results)` after each batch."""
        from tqdm.auto import tqdm

        stats = GibbsStats()
        if not items:
            return stats
        n = self.sampler.max_new_tokens
        limit = self._max_length()

        def lengths(planned: list[WorkItem]) -> list[int]:
            counts = [len(ids) for ids in
                      self.tokenizer([item.prompt for item in planned], add_special_tokens=False)["input_ids"]]
            for item, length in zip(planned, counts, strict=True):
                if length + n + 2 > limit:
                    raise UsageError(f"prompt {item.prompt_id} has {length} tokens; with {n} new tokens "
                                     f"(--max-new-tokens) and [CLS]/[SEP] it exceeds the model's {limit} positions")
            return counts

        def one_batch(batch: list[WorkItem]) -> list[Generated]:
            results = self._generate_batch(batch, stats, bar)
            stats.batches += 1
            return results

        with tqdm(total=len(items), desc="gibbs sampling", unit="text", disable=not progress) as bar:
            return run_batch_plan(items, plan, lengths=lengths, batch_size=self.batch_size,
                                  default_size=default_batch_size(self.model.device), generate_batch=one_batch,
                                  on_batch=on_batch, stats=stats, bar=bar)

    def _generate_batch(self, batch: Sequence[WorkItem], stats: GibbsStats, bar: Any) -> list[Generated]:
        import torch

        s = self.sampler
        prompts = [item.prompt for item in batch]
        input_ids, attention_mask, start = initial_inputs(self.tokenizer, prompts, s.max_new_tokens)
        streams = [gibbs_draws(self.seed, item, s) for item in batch]
        positions = np.stack([stream[0] for stream in streams])
        uniforms = np.stack([stream[1] for stream in streams])
        if self.head_on_chosen is None:
            device = self.model.device
            first = start[:1].to(device) + torch.as_tensor(positions[:1, 0], device=device)
            self.head_on_chosen = head_on_chosen_position_matches(
                self.model, input_ids.to(device), attention_mask.to(device), first)
            stats.forward_passes += 2
            if not self.head_on_chosen:
                warnings.warn(f"{type(self.model).__name__}: the LM head on the chosen position differs from the "
                              "full head; using the full head (slower)", stacklevel=2)
        ids = gibbs_sample(self.model, input_ids, attention_mask, start, positions, uniforms, s,
                           self.tokenizer.mask_token_id, head_on_chosen=self.head_on_chosen, progress=bar)
        stats.forward_passes += s.max_iter
        texts = decode_continuations(self.tokenizer, ids, start, prompts, s.max_new_tokens)
        visited = [len(np.unique(row)) for row in positions]
        return [Generated(text, count) for text, count in zip(texts, visited, strict=True)]


# --------------------------------------------------------------------------- `bold-eval run`

OPTION_TYPES: dict[str, type] = {"max_new_tokens": int, "temperature": float, "burn_in": int, "max_iter": int,
                                 "top_k": int}


def settings_from_options(options: dict[str, Any]) -> GibbsSettings:
    """`GibbsSettings` from `--generator-option KEY=VALUE` pairs (names as in OPTION_TYPES)."""
    unknown = sorted(set(options) - set(OPTION_TYPES))
    if unknown:
        raise UsageError(f"unknown --generator-option for {KIND}: {', '.join(unknown)}; valid: "
                         f"{', '.join(OPTION_TYPES)}")
    values = {}
    for key, value in options.items():
        cast = OPTION_TYPES[key]
        try:
            values[key] = cast(value)
            if cast is int and values[key] != float(value):
                raise ValueError
        except (TypeError, ValueError):
            raise UsageError(f"--generator-option {key}={value!r}: expected {cast.__name__}") from None
    return GibbsSettings(**values)


class GibbsRunGenerator(Generator):
    """The `gibbs-mlm` generator of `bold-eval run`: a factory `(GenerationSettings, GeneratorContext)` as
    `bold_eval.generation.base` expects. Sampler settings come from `config.generator_options`
    (appendix A.2.1 defaults); the masked LM loads on the first `generate` call."""

    kind = KIND

    def __init__(self, config: Any, context: Any) -> None:
        if config.gguf_file:
            raise UsageError("--gguf-file is for causal LMs; the Gibbs sampler loads a masked LM with transformers")
        self.config = config
        self.context = context
        self.sampler = settings_from_options(dict(config.generator_options or {}))
        self.core: GibbsGenerator | None = None

    def settings(self) -> dict[str, Any]:
        config = self.config
        return {"model": config.model, "revision": config.revision, "dtype": config.dtype, "seed": config.seed,
                **self.sampler.to_dict()}

    def info(self) -> dict[str, Any]:
        if self.core is not None:
            return self.core.info()
        return {"name": self.config.model, "revision": self.config.revision, "generator": KIND,
                "description": describe(self.sampler)}

    def load(self) -> GibbsGenerator:
        """Load the model once; every process calls this (process 0 first, as for causal LMs)."""
        if self.core is None:
            config = self.config
            with self.context.main_process_first():
                loaded = load_masked_lm(config.model, dtype=config.dtype, device=self.context.device,
                                        revision=config.revision)
            self.core = GibbsGenerator(loaded.model, loaded.tokenizer, seed=config.seed, batch_size=config.batch_size,
                                       model_info=loaded.info, **asdict(self.sampler))
        return self.core

    plans_batches = True  # takes `plan=` (bold_eval.generation.batching.BatchPlan): resumes replay the planned batches

    def generate(self, items: Sequence[WorkItem], *, on_batch: BatchCallback, progress: bool = True,
                 plan: BatchPlan | None = None) -> GibbsStats:
        return self.load().generate(items, on_batch=on_batch, progress=progress, plan=plan)
