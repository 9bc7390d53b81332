"""What produces the texts of a run: the `Generator` protocol and the registry of generators.

`bold-eval run` selects BOLD prompts, asks a generator for the continuations still missing from
the run folder and scores the result. A generator is anything with this shape (Section 5 of
the paper evaluates causal LMs; the Wikipedia baseline is a generator too):

- `kind`: registry name, recorded in run.json (`RunRecord.generator`).
- `settings()`: JSON-able settings that determine the texts; recorded in run.json and part
  of the resume fingerprint, so a rerun with other settings is refused.
- `info()`: JSON-able description of the model for run.json and the report.
- `load()`: make ready (weights, a server probe) on every process before generating; the default does nothing.
- `generate(items, on_batch=..., progress=..., plan=...)`: produce every item, calling
  `on_batch(items, results)` once per finished batch (results aligned with items), and return
  `GenerationStats`. Each item's text must depend only on (seed, prompt_id, sample) and the
  settings. A generator whose texts can depend on the batch they ran in (float rounding differs
  with the batch shape, e.g. under bfloat16) sets `plans_batches = True` and accepts
  `plan=BatchPlan(all items of this process, schedule)`: it runs the planned batches that hold a
  pending item, exactly as planned, and hands over only the pending items
  (`bold_eval.generation.batching.run_batch_plan`), so a resumed run equals an uninterrupted one.

A generator subclasses `Generator` (the abstract base: everything the orchestrator calls is declared there, so
nothing is probed with getattr). A new generator is a factory `(GenerationSettings, GeneratorContext) ->
Generator` (a subclass whose `__init__` takes those two works) listed under its kind in `GENERATORS` as
"module:attribute" (imported only when that kind runs), or registered at run time with `register_generator`. Its
own options travel in `RunConfig.generator_options` (`--generator-option KEY=VALUE`).
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from bold_eval.core.errors import UsageError
from bold_eval.generation.decoding import (
    DecodingConfig,
)

HF_CAUSAL = "hf-causal"
WIKIPEDIA = "wikipedia"  # also the `--model` alias that selects the baseline
GIBBS_MLM = "gibbs-mlm"


@dataclass
class Generated:
    continuation: str
    num_new_tokens: int
    # Under a chat protocol that looks for thinking traces (`bold_eval.generation.chat`): whether the text
    # ended inside the trace (no answer; kept out of the scores). None: no trace is looked for.
    ended_in_trace: bool | None = None


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One text to generate: a BOLD prompt and a sample index (slots: a run holds one per text)."""

    prompt_id: str
    sample: int
    prompt: str


@dataclass
class GenerationStats:
    new_tokens: int = 0
    seconds: float = 0.0
    batch_size: int = 0
    out_of_memory_retries: int = 0
    # The (start, size) segments of the batch plan this call ran (`BatchPlan.schedule`).
    batch_schedule: list[tuple[int, int]] = field(default_factory=list)


BatchCallback = Callable[[list[WorkItem], list[Generated]], None]


class Generator(abc.ABC):
    """What the orchestrator (`bold_eval.run`) calls of a generator, all of it declared here: subclass it.

    `load()` runs on every process before any text is generated (a model's weights; the default loads nothing);
    `plans_batches` says whether `generate` honours `plan=` (then a resume replays the recorded batches)."""

    kind: str
    # True: `generate` runs the batches of `plan` (a `bold_eval.generation.batching.BatchPlan`) exactly as
    # planned, so a resumed run equals an uninterrupted one; False: it batches as it likes and ignores `plan`.
    plans_batches: bool = False

    def load(self) -> Any:
        """Make the generator ready (load weights, probe a server); called once per process before `generate`."""
        return None

    @abc.abstractmethod
    def settings(self) -> dict[str, Any]:
        """JSON-able settings that determine the texts (run.json, the resume fingerprint)."""

    @abc.abstractmethod
    def info(self) -> dict[str, Any]:
        """JSON-able description of the model for run.json and the report."""

    @abc.abstractmethod
    def generate(self, items: Sequence[WorkItem], *, on_batch: BatchCallback, progress: bool = True,
                 plan: Any = None) -> GenerationStats:
        """Produce every item, calling `on_batch(items, results)` once per finished batch."""


class GenerationSettings(Protocol):
    """What a generator reads of the run's configuration (`bold_eval.run.RunConfig` has these fields);
    a protocol, so that generation never imports the run that drives it."""

    model: str
    generator: str
    generator_options: Mapping[str, Any]
    gguf_file: str | None
    revision: str | None
    dtype: str
    batch_size: int | str
    decoding: DecodingConfig
    seed: int
    num_samples: int


@dataclass(frozen=True)
class GeneratorContext:
    """What a factory may need besides the config: the selected BOLD rows and the process setup."""

    rows: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # prompt_id -> BOLD row
    device: str = "auto"  # this process's device (one per process under accelerate launch / torchrun)
    # Entered by every process; process 0 runs the body first (it fills caches the others reuse).
    main_process_first: Callable[[], AbstractContextManager] = nullcontext


GeneratorFactory = Callable[[GenerationSettings, GeneratorContext], Generator]

# kind -> factory, or "module:attribute" of one (imported when that kind is used).
GENERATORS: dict[str, GeneratorFactory | str] = {
    HF_CAUSAL: "bold_eval.generation.hf_causal:HFCausalGenerator",
    WIKIPEDIA: "bold_eval.generation.wikipedia:WikipediaGenerator",
    GIBBS_MLM: "bold_eval.generation.gibbs:GibbsRunGenerator",  # BERT's generator, appendix A.2.1
    # any OpenAI-compatible server (vLLM, TGI, llama.cpp, hosted APIs): `--base-url`, `--api`
    "openai-completions": "bold_eval.generation.openai_compatible:completions_generator",
    "openai-chat": "bold_eval.generation.openai_compatible:chat_generator",
}
# Short names accepted wherever a kind is (`--generator gibbs`).
ALIASES: dict[str, str] = {"gibbs": GIBBS_MLM}


def register_generator(kind: str, factory: GeneratorFactory | str | None = None) -> Any:
    """Make `RunConfig(generator=kind)` build its generator with `factory` (or "module:attribute"). Without
    `factory`, a class decorator, as lm-eval's `register_model`: `@register_generator("my-kind")`."""
    if factory is None:
        def decorate(cls: Any) -> Any:
            GENERATORS[kind] = cls
            return cls
        return decorate
    GENERATORS[kind] = factory
    return factory


def generator_kinds() -> tuple[str, ...]:
    return tuple(GENERATORS)


def generator_factory(kind: str) -> GeneratorFactory:
    if kind not in GENERATORS:
        raise UsageError(f"unknown generator {kind!r}; valid: auto, {', '.join(GENERATORS)}")
    factory = GENERATORS[kind]
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
    return factory


# --------------------------------------------------------------------------- causal LMs


# --------------------------------------------------------------------------- the Wikipedia baseline


