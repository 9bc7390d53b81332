"""Which generator a run uses (the Wikipedia baseline, Gibbs sampling for a masked LM (auto-detected), a causal
LM, or a server), and building it. The `run` flags are folded into a generator's options by the CLI
(`bold_eval.generator_flags`)."""

from __future__ import annotations

from bold_eval.core.errors import UsageError
from bold_eval.generation.base import (
    ALIASES,
    GIBBS_MLM,
    HF_CAUSAL,
    WIKIPEDIA,
    GenerationSettings,
    Generator,
    GeneratorContext,
    generator_factory,
)


def generator_kind(config: GenerationSettings) -> str:
    """The config's generator. "auto": the Wikipedia baseline for `--model wikipedia`, Gibbs sampling
    for a masked-LM checkpoint (detected from its config; the paper's BERT, appendix A.2.1), else a
    causal LM."""
    if config.generator != "auto":
        return ALIASES.get(config.generator, config.generator)
    if config.model == WIKIPEDIA:
        return WIKIPEDIA
    if config.model != "embedded" and not config.gguf_file:
        from bold_eval.generation.loading import is_masked_lm_checkpoint

        if is_masked_lm_checkpoint(config.model, revision=config.revision):
            return GIBBS_MLM
    return HF_CAUSAL


def build_generator(config: GenerationSettings, context: GeneratorContext) -> Generator:
    """The generator for `config` (cheap: models load in `Generator.load`)."""
    kind = generator_kind(config)
    generator = generator_factory(kind)(config, context)
    if not isinstance(generator, Generator):
        raise UsageError(f"generator {kind!r} made a {type(generator).__name__}, which does not subclass "
                         "bold_eval.generation.base.Generator (the methods bold-eval run calls are declared there)")
    return generator
