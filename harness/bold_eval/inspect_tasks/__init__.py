"""BOLD inside Inspect (inspect_ai): the task `bold_eval/bold` (`bold.py`), registered through the `inspect_ai`
entry point (`_registry.py`); needs the `inspect` extra."""
