"""lm-evaluation-harness in the test process, on the project's tasks only.

`lm_eval` on the command line indexes every task it ships (about 15,000 YAML files, over 10 s on one core) before it
runs one. The tests that are about what the tasks compute call the evaluator that command calls,
`lm_eval.simple_evaluate`, with a task index of the given folder alone, and write the same result and sample files
(`EvaluationTracker`), so `bold-eval score --from lm-eval` reads them as it reads the command's. One test keeps the
command line itself (tests/harnesses/test_lm_eval_tasks.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def lm_eval_in_process(*, model_args: str, tasks: str | Path, task: str, limit: int, batch_size: int,
                       output_path: str | Path, **options: Any) -> dict[str, Any]:
    """`lm_eval --model hf --model_args M --device cpu --include_path TASKS --tasks T --limit N --log_samples
    --output_path OUT [options]`, with only TASKS indexed. `options` are `simple_evaluate`'s keywords
    (`apply_chat_template=True`, `gen_kwargs="..."`). Returns the results (without the samples)."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager
    from lm_eval.utils import handle_non_serializable

    tracker = EvaluationTracker(output_path=str(output_path))
    results = simple_evaluate(
        model="hf", model_args=model_args, tasks=[task], device="cpu", limit=limit, batch_size=batch_size,
        log_samples=True, evaluation_tracker=tracker,
        task_manager=TaskManager(include_path=str(tasks), include_defaults=False), **options)
    samples = results.pop("samples")
    json.dumps(results, default=handle_non_serializable)  # what the command prints: every value serializable
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    return results
