"""What produces the texts of a run: the `Generator` protocol and the registry of generators.

`bold-eval run` selects BOLD prompts, asks a generator for the continuations still missing from
the run folder and scores the result. A generator is anything with this shape (Section 5 of
the paper evaluates causal LMs; the Wikipedia baseline is a generator too):

- `kind`: registry name, recorded in run.json (`RunRecord.generator`).
- `settings()`: JSON-able settings that determine the texts; recorded in run.json and part
  of the resume fingerprint, so a rerun with other settings is refused.
- `info()`: JSON-able description of the model for run.json and the report.
- `generate(items, on_batch=..., progress=...)`: produce every item, calling
  `on_batch(items, results)` once per finished batch (results aligned with items), and return
  `GenerationStats`. Each item's text must depend only on (seed, prompt_id, sample) and the
  settings. A generator whose texts can depend on the batch they ran in (float rounding differs
  with the batch shape, e.g. under bfloat16) sets `plans_batches = True` and accepts
  `plan=BatchPlan(all items of this process, schedule)`: it runs the planned batches that hold a
  pending item, exactly as planned, and hands over only the pending items
  (`bold_eval.generation.hf_causal.run_batch_plan`), so a resumed run equals an uninterrupted one.

A new generator is a factory `(RunConfig, GeneratorContext) -> Generator` (a class whose
`__init__` takes those two works) listed under its kind in `GENERATORS` as "module:attribute"
(imported only when that kind runs), or registered at run time with `register_generator`. Its
own options travel in `RunConfig.generator_options` (`--generator-option KEY=VALUE`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bold_eval.core.errors import UsageError
from bold_eval.generation.hf_causal import BatchCallback, BatchPlan, Generated, GenerationStats, WorkItem

if TYPE_CHECKING:
    from bold_eval.run import RunConfig

HF_CAUSAL = "hf-causal"
WIKIPEDIA = "wikipedia"  # also the `--model` alias that selects the baseline
GIBBS_MLM = "gibbs-mlm"


@runtime_checkable
class Generator(Protocol):
    kind: str

    def settings(self) -> dict[str, Any]: ...

    def info(self) -> dict[str, Any]: ...

    def generate(self, items: Sequence[WorkItem], *, on_batch: BatchCallback,
                 progress: bool = True) -> GenerationStats: ...


@dataclass(frozen=True)
class GeneratorContext:
    """What a factory may need besides the config: the selected BOLD rows and the process setup."""

    rows: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # prompt_id -> BOLD row
    device: str = "auto"  # this process's device (one per process under accelerate launch / torchrun)
    # Entered by every process; process 0 runs the body first (it fills caches the others reuse).
    main_process_first: Callable[[], AbstractContextManager] = nullcontext


GeneratorFactory = Callable[["RunConfig", GeneratorContext], Generator]

# kind -> factory, or "module:attribute" of one (imported when that kind is used).
GENERATORS: dict[str, GeneratorFactory | str] = {
    HF_CAUSAL: "bold_eval.generation.base:HFCausalGenerator",
    WIKIPEDIA: "bold_eval.generation.base:WikipediaGenerator",
    GIBBS_MLM: "bold_eval.generation.gibbs:GibbsRunGenerator",  # BERT's generator, appendix A.2.1
    # any OpenAI-compatible server (vLLM, TGI, llama.cpp, hosted APIs): `--base-url`, `--api`
    "openai-completions": "bold_eval.generation.openai_compatible:completions_generator",
    "openai-chat": "bold_eval.generation.openai_compatible:chat_generator",
}
# Short names accepted wherever a kind is (`--generator gibbs`).
ALIASES: dict[str, str] = {"gibbs": GIBBS_MLM}


def register_generator(kind: str, factory: GeneratorFactory | str) -> None:
    """Make `RunConfig(generator=kind)` build its generator with `factory` (or "module:attribute")."""
    GENERATORS[kind] = factory


def generator_kinds() -> tuple[str, ...]:
    return tuple(GENERATORS)


def _factory(kind: str) -> GeneratorFactory:
    if kind not in GENERATORS:
        raise UsageError(f"unknown generator {kind!r}; valid: auto, {', '.join(GENERATORS)}")
    factory = GENERATORS[kind]
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
    return factory


def generator_kind(config: RunConfig) -> str:
    """The config's generator. "auto": the Wikipedia baseline for `--model wikipedia`, Gibbs sampling
    for a masked-LM checkpoint (detected from its config; the paper's BERT, appendix A.2.1), else a
    causal LM."""
    if config.generator != "auto":
        return ALIASES.get(config.generator, config.generator)
    if config.model == WIKIPEDIA:
        return WIKIPEDIA
    if config.model != "embedded" and not config.gguf_file:
        from bold_eval.generation.gibbs import is_masked_lm_checkpoint

        if is_masked_lm_checkpoint(config.model, revision=config.revision):
            return GIBBS_MLM
    return HF_CAUSAL


def build_generator(config: RunConfig, context: GeneratorContext) -> Generator:
    """The generator for `config` (cheap: models load on the first `generate` call)."""
    return _factory(generator_kind(config))(config, context)


# --------------------------------------------------------------------------- causal LMs


class HFCausalGenerator:
    """Any transformers causal LM (Hub id, folder, GGUF, `embedded`), sampled as in appendix A.2."""

    kind = HF_CAUSAL

    def __init__(self, config: RunConfig, context: GeneratorContext):
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
            from bold_eval.generation.gibbs import is_masked_lm_checkpoint, masked_lm_as_causal_message

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
            from bold_eval.generation.loading import load_model

            config = self.config
            with self.context.main_process_first():
                self.loaded = load_model(config.model, gguf_file=config.gguf_file, dtype=config.dtype,
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


# --------------------------------------------------------------------------- the Wikipedia baseline


class WikipediaGenerator:
    """The paper's baseline: the rest of the Wikipedia sentence each prompt was cut from."""

    kind = WIKIPEDIA

    def __init__(self, config: RunConfig, context: GeneratorContext):
        if config.num_samples != 1:
            raise UsageError("--model wikipedia has one text per prompt; --num-samples must be 1")
        self.rows = context.rows

    def settings(self) -> dict[str, Any]:
        return {"model": WIKIPEDIA}

    def info(self) -> dict[str, Any]:
        return {"name": WIKIPEDIA}

    def generate(self, items: Sequence[WorkItem], *, on_batch: BatchCallback,
                 progress: bool = True) -> GenerationStats:
        started = time.perf_counter()
        results = []
        for item in items:
            row = self.rows[item.prompt_id]
            sentence = str(row["wikipedia"])
            if not sentence.startswith(row["prompt"]):
                raise ValueError(f"Wikipedia sentence of {item.prompt_id} does not start with its prompt")
            results.append(Generated(sentence[len(row["prompt"]):], 0))
        if items:
            on_batch(list(items), results)
        return GenerationStats(seconds=time.perf_counter() - started, batch_size=len(items))
