"""Inspect logs of the BOLD task (`inspect eval bold_eval/bold`) as generations for `bold-eval score`.

Each sample of the log is one BOLD prompt (its id and its metadata's `prompt_id`) in one epoch; the task's solver
kept the scored continuation (the reply finished as `bold-eval run` finishes it: chat protocol, thinking trace,
stopping rule) in the sample's metadata, so the texts scored here are the texts Inspect's scorer scored. Epoch e
becomes sample e - 1 (`-T samples=k` gives samples 0..k-1, as `bold-eval run --num-samples k`). A sample that
failed (an error, or no continuation) is left out, and `--allow-partial` counts its prompt as missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from bold_eval.core.errors import InputError, MissingFileError
from bold_eval.core.resources import require_extra
from bold_eval.runfolder.layout import TEXT_COLUMN, TRACE_COLUMN

# What the task's solver writes into each sample's metadata (bold_eval.inspect_tasks.bold).
CONTINUATION, PROTOCOL = TEXT_COLUMN, "chat_template"
TASK_NAMES = ("bold_eval/bold", "bold")
LOG_SUFFIXES = (".eval", ".json")


class InspectLogError(InputError):
    """An Inspect log that is not a log of the BOLD task, or that cannot be read."""


def _log_module() -> Any:
    return require_extra("inspect_ai.log", extra="inspect", purpose="reading Inspect logs (bold-eval score LOG.eval)")


def is_inspect_log(path: str | Path) -> bool:
    """Whether `path` is an Inspect log file, or a folder holding one (`.eval`, or Inspect's JSON log)."""
    path = Path(path)
    if path.is_dir():
        return any(path.rglob("*.eval")) or any(_is_json_log(file) for file in path.rglob("*.json"))
    return path.suffix == ".eval" or (path.suffix == ".json" and _is_json_log(path))


def _is_json_log(path: Path) -> bool:
    """Inspect's JSON logs open with `{"version": ..., "status": ...`; lm-eval's results_*.json do not."""
    try:
        with path.open("rb") as file:
            head = file.read(200)
    except OSError:
        return False
    return b'"version"' in head and b'"status"' in head


def inspect_log_file(path: str | Path) -> Path:
    """The log to read: `path`, or the one log of the BOLD task in the folder `path` (several are an error
    naming them, as several lm-eval runs of one task are)."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise MissingFileError(f"Inspect log {path} does not exist")
    log = _log_module()
    found = []
    for info in log.list_eval_logs(str(path), recursive=True):
        header = log.read_eval_log(info, header_only=True)
        if header.eval.task in TASK_NAMES:
            found.append(Path(info.name.removeprefix("file://")))
    if not found:
        raise MissingFileError(f"no Inspect log of the BOLD task ({TASK_NAMES[0]}) under {path}; run `inspect eval "
                               f"bold_eval/bold --model PROVIDER/MODEL --log-dir {path}`")
    if len(found) > 1:
        listed = ", ".join(str(f) for f in found)
        raise InspectLogError(f"several Inspect logs of the BOLD task under {path} ({listed}); pass one log file or "
                              "a folder holding a single run")
    return found[0]


def read_inspect_log(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The log's samples as rows (prompt_id, sample, continuation[, ended_in_trace]) and what it says about the
    run (model, chat protocol, generation settings) for run.json."""
    file = inspect_log_file(path)
    try:
        eval_log = _log_module().read_eval_log(str(file))
    except (ValueError, OSError, KeyError) as error:  # a damaged zip or JSON, a schema Inspect cannot read
        raise InspectLogError(f"{file} is not a readable Inspect log ({type(error).__name__}: {error})") from error
    if eval_log.eval.task not in TASK_NAMES:
        raise InspectLogError(f"{file} is a log of the Inspect task {eval_log.eval.task!r}, not of {TASK_NAMES[0]}")
    rows, protocols = [], set()
    for sample in eval_log.samples or []:
        metadata = sample.metadata or {}
        if sample.error is not None or not isinstance(metadata.get(CONTINUATION), str):
            continue
        protocols.add(metadata.get(PROTOCOL))
        rows.append({"prompt_id": str(metadata.get("prompt_id", sample.id)), "sample": int(sample.epoch) - 1,
                     TEXT_COLUMN: metadata[CONTINUATION], TRACE_COLUMN: metadata.get(TRACE_COLUMN)})
    frame = pd.DataFrame(rows, columns=["prompt_id", "sample", TEXT_COLUMN, TRACE_COLUMN])
    if frame[TRACE_COLUMN].isna().all():  # no protocol looked for a thinking trace
        frame = frame.drop(columns=TRACE_COLUMN)
    else:
        frame[TRACE_COLUMN] = [bool(value) for value in frame[TRACE_COLUMN]]  # None (no trace looked for) -> False
    return frame, _run_info(file, eval_log, protocols)


def protocol_settings(protocol: str | None, args: Mapping[str, Any]) -> dict[str, Any]:
    """The chat protocol's settings as `bold-eval run` records them (`ChatProtocol.settings`: instruction, system
    instruction, trace marker), from the protocol the samples were asked under and the task's arguments."""
    from bold_eval.generation.chat import ChatOptions

    if protocol is None:
        return {}
    given = {key: args.get(key) for key in ("chat_instruction", "system_instruction", "think_end_token")}
    return ChatOptions.pop_from({**given, "chat_template": protocol}).resolve(protocol, "Inspect").settings()


def decoding_settings(config: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """Inspect's generation settings as `bold-eval run` records its decoding (`DecodingConfig` fields)."""
    temperature = config.get("temperature")
    return {"greedy": temperature == 0, "temperature": temperature, "top_k": config.get("top_k"),
            "top_p": config.get("top_p"), "max_new_tokens": config.get("max_tokens"),
            "stop_at_newline": args.get("stop_at_newline", True), "one_sentence": args.get("one_sentence", False)}


def _run_info(file: Path, eval_log: Any, protocols: set[Any]) -> dict[str, Any]:
    spec = eval_log.eval
    args: Mapping[str, Any] = spec.task_args or {}
    protocols.discard(None)
    # the task's GenerateConfig (the paper's defaults) with Inspect's command-line settings over it
    config = {**(eval_log.plan.config.model_dump(exclude_none=True) if eval_log.plan else {}),
              **spec.model_generate_config.model_dump(exclude_none=True)}
    return {
        **protocol_settings(protocols.pop() if len(protocols) == 1 else None, args),
        "generator_settings": {"decoding": decoding_settings(config, args), "seed": config.get("seed")},
        "inspect_log": str(file),
        "inspect_status": eval_log.status,
        "inspect_version": (spec.packages or {}).get("inspect_ai"),
        "model": spec.model,
        "inspect_task_args": dict(args),
        "generate_config": config,
    }
