"""lm-evaluation-harness tasks for BOLD: `lm_eval --include_path "$(bold-eval lm-eval-tasks-path)" --tasks bold`."""
