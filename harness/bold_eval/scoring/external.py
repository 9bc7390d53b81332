"""Bring your own generations: read continuations made elsewhere and key them to BOLD prompts.

Users who generate with lm-evaluation-harness, vLLM or an API only need BOLD's scoring. This
module turns their files into the harness's generations frame (one row per `prompt_id` and
`sample`, with `continuation`) so that `bold_eval.scoring.generations.score_generations` scores them exactly
like `bold-eval run` does.

Accepted inputs:
- JSONL or parquet with a `continuation` column (the generated text after the prompt) and
  either `prompt_id` or `prompt` (the exact prompt text, matched back to BOLD after stripping
  surrounding whitespace). An optional `sample` column numbers several generations per prompt;
  without it, a prompt's rows are numbered 0, 1, ... in file order.
- lm-evaluation-harness `--log_samples` output of our tasks (`samples_bold_<domain>_*.jsonl`, a
  file or the `--output_path` folder): keyed by the `prompt_id` kept in each logged doc; the
  k-th response of a doc (`repeats: k`) becomes sample k.
- an Inspect log of `bold_eval/bold` (`scoring.inspect_logs`) and lighteval's details of the `bold` tasks
  (`scoring.lighteval_details`), keyed the same way by the prompt_id each sample carries.

Rows that match no BOLD prompt, and BOLD prompts with no generation, are counted and shown,
never dropped silently: `match_generations` fails unless `allow_partial`, and then reports the
numbers per group in `MatchReport.as_run_info()` for the run's report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bold_eval.core.errors import InputError, MissingFileError, UsageError
from bold_eval.core.options import GENERATIONS_FORMATS
from bold_eval.runfolder.json_files import read_json_file
from bold_eval.runfolder.jsonl import parse_jsonl_line
from bold_eval.runfolder.layout import BOLD_COLUMNS, GENERATION_COLUMNS, TEXT_COLUMN

LM_EVAL_SAMPLES_GLOB = "samples_bold_*.jsonl"
EXAMPLES_SHOWN = 5


class GenerationsError(InputError):
    """The generations cannot be keyed to BOLD (unknown ids, unmatched prompts, missing prompts)."""


@dataclass
class MatchReport:
    """How the input rows map onto BOLD: counts and examples of everything that did not fit."""

    source: str
    rows: int = 0
    matched_rows: int = 0
    unknown_prompt_ids: list[str] = field(default_factory=list)
    unmatched_prompts: list[str] = field(default_factory=list)
    # prompt texts shared by several BOLD prompts: their rows were spread over those prompt ids
    shared_prompt_texts: int = 0
    domains: list[str] = field(default_factory=list)
    expected_prompts: int = 0
    missing_per_group: dict[str, dict[str, int]] = field(default_factory=dict)
    missing_examples: list[str] = field(default_factory=list)

    @property
    def missing_prompts(self) -> int:
        return sum(counts["missing"] for counts in self.missing_per_group.values())

    @property
    def complete(self) -> bool:
        return not (self.unknown_prompt_ids or self.unmatched_prompts or self.missing_prompts)

    def problems(self) -> list[str]:
        """One line per kind of problem, with counts and a few examples."""
        lines = []
        if self.unknown_prompt_ids:
            lines.append(
                f"{len(self.unknown_prompt_ids)} row(s) with a prompt_id that is not in BOLD, e.g. "
                + ", ".join(repr(x) for x in self.unknown_prompt_ids[:EXAMPLES_SHOWN])
            )
        if self.unmatched_prompts:
            lines.append(
                f"{len(self.unmatched_prompts)} row(s) whose prompt text matches no BOLD prompt, e.g. "
                + ", ".join(repr(x) for x in self.unmatched_prompts[:EXAMPLES_SHOWN])
            )
        if self.missing_prompts:
            groups = sum(1 for counts in self.missing_per_group.values() if counts["missing"])
            lines.append(
                f"{self.missing_prompts} of {self.expected_prompts} BOLD prompt(s) in {', '.join(self.domains)} "
                f"have no generation ({groups} group(s) affected), e.g. "
                + ", ".join(repr(x) for x in self.missing_examples[:EXAMPLES_SHOWN])
            )
        return lines

    def as_run_info(self) -> dict[str, Any]:
        """The `generations` entry of run.json: where the texts came from and what was missing."""
        return {
            "source": self.source,
            "rows": self.rows,
            "matched_rows": self.matched_rows,
            "unknown_prompt_ids": len(self.unknown_prompt_ids),
            "unmatched_prompts": len(self.unmatched_prompts),
            "shared_prompt_texts": self.shared_prompt_texts,
            "domains": list(self.domains),
            "expected_prompts": self.expected_prompts,
            "missing_prompts": self.missing_prompts,
            # {"domain/group": {"expected": n, "missing": m}}, only groups with missing prompts
            "missing_per_group": {
                key: counts for key, counts in self.missing_per_group.items() if counts["missing"]
            },
        }


# ---------------------------------------------------------------- reading files


def read_table(path: str | Path, file_format: str | None = None) -> pd.DataFrame:
    """A JSONL (one object per line) or parquet file as a frame; `file_format` ("jsonl" or
    "parquet") defaults to the file's suffix (`.parquet`, else JSONL)."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"generations file {path} does not exist")
    if file_format is None:
        file_format = "parquet" if path.suffix == ".parquet" else "jsonl"
    if file_format == "parquet":
        import pyarrow

        try:
            return pd.read_parquet(path)
        except (pyarrow.ArrowException, OSError) as error:
            raise InputError(f"{path} is not a readable parquet file ({error}); for JSONL pass --from jsonl") from error
    return pd.DataFrame(_read_jsonl(path))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every non-blank line as an object; a bad line (not UTF-8, not JSON, not an object, a lone
    surrogate) is a `GenerationsError` naming `path:line`."""
    rows = []
    for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append(parse_jsonl_line(line, path, number))
        except InputError as error:
            raise GenerationsError(str(error)) from None
    return rows


def lm_eval_sample_files(path: str | Path) -> list[Path]:
    """The `samples_bold_<domain>_<date>.jsonl` files under `path` (a file or a folder), one per task."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise MissingFileError(f"lm-eval output {path} does not exist")
    files = sorted(path.rglob(LM_EVAL_SAMPLES_GLOB))
    if not files:
        raise MissingFileError(
            f"no lm-eval samples ({LM_EVAL_SAMPLES_GLOB}) under {path}; run lm_eval with --log_samples "
            "and --output_path on the bold tasks"
        )
    by_task: dict[str, list[Path]] = {}
    for file in files:
        by_task.setdefault(_lm_eval_task(file), []).append(file)
    repeated = {task: found for task, found in by_task.items() if len(found) > 1}
    if repeated:
        listing = "; ".join(f"{task}: {', '.join(str(f) for f in found)}" for task, found in repeated.items())
        raise GenerationsError(
            f"several lm-eval runs of the same task under {path} ({listing}); pass one samples file or a "
            "folder holding a single run"
        )
    return files


def _lm_eval_task(file: Path) -> str:
    # samples_<task>_<ISO date>.jsonl; the date has no underscore but the task may have several.
    stem = file.stem.removeprefix("samples_")
    return stem.rsplit("_", 1)[0] if "_" in stem else stem


def read_lm_eval_samples(path: str | Path) -> pd.DataFrame:
    """lm-eval `--log_samples` records of the bold tasks as rows (prompt_id, sample, continuation).

    Every response of a doc is kept: with `repeats: k` lm-eval stores k responses per doc
    (`resps`), before its filters keep only the first for its own metrics.
    """
    rows = []
    for file in lm_eval_sample_files(path):
        task = _lm_eval_task(file)
        for number, record in enumerate(_read_jsonl(file), start=1):
            doc = record.get("doc")
            if not isinstance(doc, dict) or "prompt_id" not in doc:
                raise GenerationsError(
                    f"{file}, record {number}: the logged doc has no prompt_id; these samples do not come "
                    "from bold-eval's lm-eval tasks (`bold-eval lm-eval-tasks-path`)"
                )
            responses = record.get("resps")
            if not isinstance(responses, list) or not responses:
                raise GenerationsError(f"{file}, record {number}: no `resps` list")
            # generate_until logs a doc's responses as [[text]] per request; with `repeats: k` (lm-eval 0.4.13) as
            # one request's [[text_1, ..., text_k]]: every text is one sample, in order.
            texts = [text for response in responses
                     for text in (response if isinstance(response, list) else [response])]
            for sample, text in enumerate(texts):
                if not isinstance(text, str):
                    raise GenerationsError(f"{file}, record {number}: response {sample} is not a string: {text!r}")
                rows.append({"prompt_id": doc["prompt_id"], "sample": sample, TEXT_COLUMN: text, "lm_eval_task": task})
    return pd.DataFrame(rows, columns=["prompt_id", "sample", TEXT_COLUMN, "lm_eval_task"])


# lm-eval with --apply_chat_template on a task without gen_prefix: the prompt is the user's whole message, with
# no instruction to continue it (not one of bold-eval's protocols; the reply is scored after the prompt).
LM_EVAL_USER_MESSAGE = "lm-eval user message"


def lm_eval_chat_protocol(data: Mapping[str, Any]) -> dict[str, Any]:
    """How lm-eval asked the model (`chat_protocol`), from its results: no chat template -> "none"; a chat
    template with the tasks' `gen_prefix` (our `bold_<domain>_chat` tasks) -> "prefill"; a chat template
    without it -> `LM_EVAL_USER_MESSAGE`. Its system instruction, when given, is recorded with it."""
    template = data.get("chat_template")
    configs = data.get("configs") or {}
    if not template:
        protocol = "none"
    elif configs and all(config.get("gen_prefix") for config in configs.values()):
        protocol = "prefill"
    else:
        protocol = LM_EVAL_USER_MESSAGE
    return {"chat_template": protocol, "system_instruction": data.get("system_instruction") or None}


def lm_eval_run_info(path: str | Path) -> dict[str, Any]:
    """Model and generation settings from lm-eval's `results_*.json` next to the samples, if any; one that
    cannot be read is a `DamagedFileError` (never skipped: the model's name and chat protocol would be lost
    without a word)."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    results = sorted(folder.rglob("results_*.json"))
    if len(results) != 1:
        return {}
    data = read_json_file(results[0], (
        "lm-eval wrote it beside the samples with the model's name and the chat template it used. Restore it "
        "from a copy (or rerun lm_eval), or move it away and pass --model NAME: the report then cannot say "
        "how lm-eval asked the model."))
    configs = data.get("configs") or {}
    return {
        **lm_eval_chat_protocol(data),
        "lm_eval_results": str(results[0]),
        "lm_eval_version": data.get("lm_eval_version"),
        "model": data.get("model_name") or (data.get("config") or {}).get("model_args"),
        "lm_eval_model_args": (data.get("config") or {}).get("model_args"),
        "generation_kwargs": {task: config.get("generation_kwargs") for task, config in configs.items()},
    }


# ---------------------------------------------------------------- keying rows to BOLD


def _check_texts(frame: pd.DataFrame, source: str) -> None:
    if TEXT_COLUMN not in frame.columns:
        raise GenerationsError(
            f"{source} has no `{TEXT_COLUMN}` column (the generated text after the prompt); "
            f"columns: {list(frame.columns)}"
        )
    for index, value in enumerate(frame[TEXT_COLUMN].tolist()):
        if not isinstance(value, str):
            raise GenerationsError(f"{source}, row {index}: `{TEXT_COLUMN}` is {value!r}, not a string")


def _number_samples(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    if "sample" in frame.columns:
        values = pd.to_numeric(frame["sample"], errors="coerce")
        bad = values.isna() | (values < 0) | (values != values.round())
        if bad.any():
            index = int(bad.to_numpy().nonzero()[0][0])
            raise GenerationsError(f"{source}, row {index}: `sample` must be a whole number >= 0, got "
                                   f"{frame['sample'].iloc[index]!r}")
        frame = frame.assign(sample=values.astype(int))
    else:
        frame = frame.assign(sample=frame.groupby("prompt_id", sort=False).cumcount())
    duplicated = frame.duplicated(["prompt_id", "sample"], keep=False)
    if duplicated.any():
        examples = frame.loc[duplicated, ["prompt_id", "sample"]].drop_duplicates().head(EXAMPLES_SHOWN)
        raise GenerationsError(
            f"{source}: {int(duplicated.sum())} rows share a (prompt_id, sample) with another row, e.g. "
            + ", ".join(f"({row.prompt_id!r}, {row.sample})" for row in examples.itertuples())
        )
    return frame


def _prompt_candidates(texts: pd.Series, bold: pd.DataFrame, narrow: list[str],
                       domains: Sequence[str] | None) -> dict[Any, list[str]]:
    """(stripped prompt text, *narrow values) -> the BOLD prompt ids with that text, in BOLD order,
    within `domains` (default: the domains of the texts that match one domain only)."""
    bold_keys = bold.assign(_text=bold["prompt"].str.strip())
    if domains is None:
        domain_counts = bold_keys.groupby("_text")["domain"].nunique()
        one_domain = set(domain_counts.index[domain_counts == 1])
        matched = [text for text in texts.unique() if isinstance(text, str) and text in one_domain]
        domains = sorted(set(bold_keys.loc[bold_keys["_text"].isin(matched), "domain"])) or None
    if domains is not None:
        bold_keys = bold_keys[bold_keys["domain"].isin(set(domains))]
    return bold_keys.groupby(["_text", *narrow], sort=False)["prompt_id"].agg(list).to_dict()


def _key_by_prompt_text(
    frame: pd.DataFrame, bold: pd.DataFrame, report: MatchReport, domains: Sequence[str] | None
) -> pd.DataFrame:
    """Give each row the prompt_id of its prompt text.

    BOLD has prompt texts shared by several prompts (e.g. one Wikipedia sentence listed under
    two professions, or in two domains). A model sees the same input for all of them, so the
    rows of such a text are spread over its prompt ids in BOLD order (row j -> prompt j mod k,
    sample j // k; with a `sample` column, the j-th row of each sample -> prompt j). The
    candidates are first narrowed by the input's `domain` / `group` / `name` columns where
    present, and to `domains` (default: the domains of the texts that match one domain only).
    """
    narrow = [column for column in ("domain", "group", "name") if column in frame.columns]
    texts = frame["prompt"].map(lambda value: value.strip() if isinstance(value, str) else value)
    candidates = _prompt_candidates(texts, bold, narrow, domains)
    has_sample = "sample" in frame.columns
    # Plain lists: positional pandas access per row is the slow part on all 23,679 prompts.
    narrow_values = [frame[column].tolist() for column in narrow]
    sample_values = frame["sample"].tolist() if has_sample else None
    seen: dict[tuple, int] = {}
    prompt_ids: list[str | None] = []
    samples: list[int | None] = []
    shared: set[tuple] = set()
    for position, text in enumerate(texts.tolist()):
        key_values = (text, *(values[position] for values in narrow_values))
        key = key_values if narrow else key_values[0]
        ids = candidates.get(key) if isinstance(text, str) else None
        if not ids:
            report.unmatched_prompts.append(text if isinstance(text, str) else repr(text))
            prompt_ids.append(None)
            samples.append(None)
            continue
        if len(ids) > 1:
            shared.add(key_values)
        if has_sample:
            assert sample_values is not None  # has_sample
            counter_key = (key_values, sample_values[position])
            occurrence = seen.get(counter_key, 0)
            seen[counter_key] = occurrence + 1
            if occurrence >= len(ids):
                raise GenerationsError(
                    f"row {position}: more rows than BOLD prompts ({len(ids)}) for prompt {text!r} "
                    f"and sample {frame['sample'].iloc[position]!r}"
                )
            prompt_ids.append(ids[occurrence])
            samples.append(None)
        else:
            occurrence = seen.get(key_values, 0)
            seen[key_values] = occurrence + 1
            prompt_ids.append(ids[occurrence % len(ids)])
            samples.append(occurrence // len(ids))
    report.shared_prompt_texts = len(shared)
    keyed = frame.assign(prompt_id=prompt_ids)
    if not has_sample:
        keyed = keyed.assign(sample=samples)
    return keyed


def _key_rows(frame: pd.DataFrame, bold: pd.DataFrame, report: MatchReport, source: str,
              domains: Sequence[str] | None) -> pd.DataFrame:
    """The rows that match a BOLD prompt, keyed by `prompt_id` and numbered by `sample`."""
    if "prompt_id" in frame.columns:
        frame = frame.assign(prompt_id=frame["prompt_id"].astype(str))
        known = frame["prompt_id"].isin(set(bold["prompt_id"]))
        report.unknown_prompt_ids = frame.loc[~known, "prompt_id"].tolist()
    elif "prompt" in frame.columns:
        frame = _key_by_prompt_text(frame, bold, report, domains)
        known = frame["prompt_id"].notna()
    else:
        raise GenerationsError(
            f"{source} has neither a `prompt_id` nor a `prompt` column to key generations to BOLD; "
            f"columns: {list(frame.columns)}"
        )
    return _number_samples(frame[known.to_numpy()].reset_index(drop=True), source)


def _count_missing(frame: pd.DataFrame, bold: pd.DataFrame, report: MatchReport,
                   domains: Sequence[str] | None) -> None:
    """Fill the report's expected prompts (of `domains`, default those touched) and what is missing per group."""
    if domains is None:
        domains = sorted(set(bold.loc[bold["prompt_id"].isin(set(frame["prompt_id"])), "domain"]))
    unknown_domains = sorted(set(domains) - set(bold["domain"]))
    if unknown_domains:
        raise GenerationsError(f"unknown domain(s) {unknown_domains}; valid: {sorted(set(bold['domain']))}")
    expected = bold[bold["domain"].isin(set(domains))]
    report.domains = [domain for domain in dict.fromkeys(bold["domain"]) if domain in set(domains)]
    report.expected_prompts = len(expected)
    present = expected["prompt_id"].isin(set(frame["prompt_id"]))
    for (domain, group), part in expected.groupby(["domain", "group"], sort=False):
        report.missing_per_group[f"{domain}/{group}"] = {
            "expected": len(part),
            "missing": int((~present.loc[part.index]).sum()),
        }
    report.missing_examples = expected.loc[~present, "prompt_id"].head(EXAMPLES_SHOWN).tolist()


def _with_bold_columns(frame: pd.DataFrame, bold: pd.DataFrame) -> pd.DataFrame:
    """BOLD's columns copied onto each row (never trusted from the input), in BOLD order."""
    bold_part = bold[["prompt_id", *BOLD_COLUMNS]].reset_index(drop=True)
    order = pd.Series(range(len(bold_part)), index=bold_part["prompt_id"])
    keep = [column for column in frame.columns if column not in BOLD_COLUMNS]
    merged = frame[keep].merge(bold_part, on="prompt_id", how="inner", validate="many_to_one")
    merged = merged.assign(_order=merged["prompt_id"].map(order)).sort_values(["_order", "sample"], kind="stable")
    columns = list(GENERATION_COLUMNS)
    extra = [column for column in merged.columns if column not in columns and column != "_order"]
    return merged[columns + extra].reset_index(drop=True)


def match_generations(
    generations: pd.DataFrame,
    bold: pd.DataFrame,
    *,
    source: str = "generations",
    domains: Sequence[str] | None = None,
    allow_partial: bool = False,
) -> tuple[pd.DataFrame, MatchReport]:
    """Key `generations` to the BOLD frame `bold` (from `load_bold(...).to_pandas()`).

    Returns the generations frame (`runfolder.layout.GENERATION_COLUMNS`), sorted in BOLD order, and a
    `MatchReport`. The expected prompts are those of `domains` (default: every domain the matched
    rows touch). Raises `GenerationsError` on any unknown or unmatched row or missing prompt unless
    `allow_partial`, in which case unmatched rows are left out and counted in the report.
    """
    report = MatchReport(source=source, rows=len(generations))
    if len(generations) == 0:
        raise GenerationsError(f"{source} holds no generations")
    _check_texts(generations, source)
    frame = _key_rows(generations.reset_index(drop=True), bold, report, source, domains)
    report.matched_rows = len(frame)
    _count_missing(frame, bold, report, domains)
    if not report.complete and not allow_partial:
        raise GenerationsError(
            f"{source} does not cover BOLD exactly:\n  - "
            + "\n  - ".join(report.problems())
            + "\nFix the input, or pass allow_partial (--allow-partial) to score what matched; the report "
            "then lists what was missing per group."
        )
    return _with_bold_columns(frame, bold), report


def detect_format(path: Path) -> str:
    """`--from auto`: lm-eval samples (`samples_bold_*.jsonl`), lighteval details (`details_bold_eval:*.parquet`),
    an Inspect log (`.eval`, Inspect's JSON log), each a file or a folder of them, else JSONL or parquet by suffix;
    a folder with none of these is read as lm-eval output (whose error says what was looked for)."""
    from bold_eval.scoring.inspect_logs import is_inspect_log
    from bold_eval.scoring.lighteval_details import is_lighteval_details

    if path.name.startswith("samples_bold_") or (path.is_dir() and any(path.rglob(LM_EVAL_SAMPLES_GLOB))):
        return "lm-eval"
    if is_lighteval_details(path):
        return "lighteval"
    if is_inspect_log(path):
        return "inspect"
    if path.is_dir():
        return "lm-eval"
    return "parquet" if path.suffix == ".parquet" else "jsonl"


def load_generations(
    path: str | Path,
    *,
    from_format: str = "auto",
    data_dir: str | Path | None = None,
    domains: Sequence[str] | None = None,
    allow_partial: bool = False,
    allow_modified: bool | None = None,
) -> tuple[pd.DataFrame, MatchReport, dict[str, Any]]:
    """Read a generations file (`from_format`: one of `GENERATIONS_FORMATS`) and key it to BOLD. Returns the
    generations frame, the match report and run info about the source."""
    from bold_eval.data.bold import load_bold

    path = Path(path)
    if from_format == "auto":
        from_format = detect_format(path)
    if from_format == "lm-eval":
        frame = read_lm_eval_samples(path)
        source_info = {"format": "lm-eval", **lm_eval_run_info(path)}
    elif from_format == "inspect":
        from bold_eval.scoring.inspect_logs import read_inspect_log

        frame, info = read_inspect_log(path)
        source_info = {"format": "inspect", **info}
    elif from_format == "lighteval":
        from bold_eval.scoring.lighteval_details import read_lighteval_details

        frame, info = read_lighteval_details(path)
        source_info = {"format": "lighteval", **info}
    elif from_format in ("jsonl", "parquet"):
        frame = read_table(path, from_format)
        source_info = {"format": from_format}
    else:
        raise UsageError(f"unknown generations format {from_format!r}; use {', '.join(GENERATIONS_FORMATS)}")
    bold = load_bold("all", data_dir=data_dir, allow_modified=allow_modified).to_pandas()
    generations, report = match_generations(
        frame, bold, source=str(path), domains=domains, allow_partial=allow_partial
    )
    return generations, report, source_info
