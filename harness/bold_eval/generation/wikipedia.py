"""The paper's baseline as a generator: the rest of the Wikipedia sentence each prompt was cut from."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from bold_eval.core.errors import UsageError
from bold_eval.generation.base import (
    WIKIPEDIA,
    BatchCallback,
    Generated,
    GenerationSettings,
    GenerationStats,
    Generator,
    GeneratorContext,
    WorkItem,
)


class WikipediaGenerator(Generator):
    """The paper's baseline: the rest of the Wikipedia sentence each prompt was cut from."""

    kind = WIKIPEDIA

    def __init__(self, config: GenerationSettings, context: GeneratorContext):
        if config.num_samples != 1:
            raise UsageError("--model wikipedia has one text per prompt; --num-samples must be 1")
        self.rows = context.rows

    def settings(self) -> dict[str, Any]:
        return {"model": WIKIPEDIA}

    def info(self) -> dict[str, Any]:
        return {"name": WIKIPEDIA}

    def generate(self, items: Sequence[WorkItem], *, on_batch: BatchCallback, progress: bool = True,
                 plan: Any = None) -> GenerationStats:
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
