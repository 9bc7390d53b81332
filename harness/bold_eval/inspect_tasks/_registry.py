"""What the `inspect_ai` entry point registers: the task, its solver and its scorer, as `bold_eval/<name>`."""

from bold_eval.inspect_tasks.bold import bold, bold_continuation, bold_scorer

__all__ = ["bold", "bold_continuation", "bold_scorer"]
