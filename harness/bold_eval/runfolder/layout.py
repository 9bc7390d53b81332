"""The run folder's file names and column schema: what every stage that reads or writes a run folder names."""

from __future__ import annotations

from pathlib import Path

# Version of the run.json / summary.json layout. 0.1 folders have no version field.
SCHEMA_VERSION = 2
LEGACY_SCHEMA = "0.1 (no schema_version)"

GENERATIONS_FILE = "generations.jsonl"
SHARD_PATTERN = "generations.rank*.jsonl"
SCORES_FILE = "scores.parquet"
# The human-written reference of a model run: the Wikipedia sentences of its prompts, scored alike.
REFERENCE_FILE = "reference_scores.parquet"
RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
HTML_REPORT_FILE = "report.html"  # and its scripts and data in HTML_REPORT_DIR (report/html_report.py)
HTML_REPORT_DIR = "report_files"
FIGURES_DIR = "figures"
TABLES_DIR = "tables"

# BOLD's columns copied onto every generation (never trusted from a user's input).
BOLD_COLUMNS = ("domain", "group", "category", "name", "prompt")
# The key of a generation: a BOLD prompt and the sample index of its continuation.
KEY_COLUMNS = ("prompt_id", "sample")
TEXT_COLUMN = "continuation"
# Rows per row group of scores.parquet (`write_scores`).
SCORES_ROW_GROUP = 10_000
# The free-text columns of a scores table: the prompt, the continuation and the scored text.
TEXT_COLUMNS = ("prompt", TEXT_COLUMN, "text")
# A generations frame and scores.parquet's leading columns, in this order.
GENERATION_COLUMNS = ("prompt_id", *BOLD_COLUMNS, "sample", TEXT_COLUMN)
# generations.jsonl also records how many tokens each continuation took.
RECORD_COLUMNS = (*GENERATION_COLUMNS, "num_new_tokens")
# The columns every aggregation groups by.
ID_COLUMNS = ("prompt_id", "domain", "group")
# generations.jsonl under a chat protocol that looks for thinking traces: true where the text ended inside
# the trace (no answer). Such rows stay in generations.jsonl and are kept out of scores.parquet.
TRACE_COLUMN = "ended_in_trace"

# The chat protocol (`bold_eval.generation.chat`, run.json generator_settings["chat_template"]) of runs
# written before it was recorded, per generator kind: they fed the prompt raw, or (openai-chat) as an instruction.
IMPLIED_CHAT_TEMPLATE = {"hf-causal": "none", "openai-completions": "none", "openai-chat": "instruct"}


def shard_file(out: Path, rank: int) -> Path:
    """The generations file of process `rank` under several processes."""
    return out / f"generations.rank{rank}.jsonl"
