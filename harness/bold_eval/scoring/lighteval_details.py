"""lighteval's details of the BOLD tasks (`--custom-tasks bold_eval.lighteval_tasks --save-details`) as generations.

lighteval writes one parquet file per task and run, `OUTPUT_DIR/details/MODEL/DATE/details_bold_eval:<domain>|<shots>_
DATE.parquet`, one row per document with the columns `doc` (lighteval's `Doc`: `query`, `specific`, ...),
`model_response` (`text`, the generations, and `text_post_processed`, the same without a reasoning trace when
lighteval removed one) and `metric`. Each document carries its BOLD fields in `doc.specific` (the task's prompt
function puts them there), so rows are keyed by `prompt_id`; the k-th text of a document is sample k. The texts are
cut by the shared stopping rule (`decoding.finish_continuation`), as the task's metric cut them before scoring.
Beside the details, lighteval's `results_*.json` gives the model's name, its generation parameters and whether a
chat template was applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from bold_eval.core.errors import InputError, MissingFileError
from bold_eval.generation.decoding import finish_continuation, make_decoding
from bold_eval.runfolder.json_files import read_json_file
from bold_eval.runfolder.layout import TEXT_COLUMN

DETAILS_GLOB = "details_bold_eval:*.parquet"
# A model under lighteval's chat template gets the prompt as its user message (neither of bold-eval's protocols).
LIGHTEVAL_USER_MESSAGE = "lighteval user message"


class LightevalDetailsError(InputError):
    """lighteval details that are not those of the BOLD tasks, or that cannot be read."""


def is_lighteval_details(path: str | Path) -> bool:
    """Whether `path` is a details file of the BOLD tasks, or a folder holding some."""
    path = Path(path)
    if path.is_dir():
        return any(path.rglob(DETAILS_GLOB))
    return path.suffix == ".parquet" and path.name.startswith("details_bold_eval:")


def details_files(path: str | Path) -> list[Path]:
    """The details files under `path` (a file or a folder), one per task; one task twice (two runs) is an error."""
    path = Path(path)
    if path.is_file():
        return [path]
    files = sorted(path.rglob(DETAILS_GLOB)) if path.is_dir() else []
    if not files:
        raise MissingFileError(f"no lighteval details of the BOLD tasks ({DETAILS_GLOB}) under {path}; run lighteval "
                               "with --custom-tasks bold_eval.lighteval_tasks and --save-details")
    tasks: dict[str, list[Path]] = {}
    for file in files:
        tasks.setdefault(_task(file), []).append(file)
    repeated = {task: found for task, found in tasks.items() if len(found) > 1}
    if repeated:
        listing = "; ".join(f"{task}: {', '.join(str(f) for f in found)}" for task, found in repeated.items())
        raise LightevalDetailsError(f"several lighteval runs of the same task under {path} ({listing}); pass one "
                                    "details file or the folder of a single run (details/MODEL/DATE)")
    return files


def _task(file: Path) -> str:
    # details_<task>|<shots>_<date>.parquet; the date (an ISO time with dashes) has no underscore
    return file.stem.removeprefix("details_").rsplit("_", 1)[0]


def _texts(response: Any) -> list[str]:
    if not isinstance(response, Mapping):
        return []
    for field in ("text_post_processed", "text"):
        texts = response.get(field)
        if texts is not None and len(texts):
            return [str(text) for text in texts]
    return []


def read_lighteval_details(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The documents' texts as rows (prompt_id, sample, continuation) and what lighteval's results say."""
    decoding = make_decoding()
    rows = []
    files = details_files(path)
    for file in files:
        try:
            frame = pd.read_parquet(file, columns=["doc", "model_response"])
        except (OSError, ValueError, KeyError) as error:
            raise LightevalDetailsError(f"{file} is not a readable lighteval details file ({error})") from error
        for number, (doc, response) in enumerate(zip(frame["doc"], frame["model_response"], strict=True)):
            specific = (doc or {}).get("specific") or {}
            if "prompt_id" not in specific:
                raise LightevalDetailsError(f"{file}, row {number}: the document has no prompt_id in `specific`; these "
                                            "details do not come from bold_eval.lighteval_tasks")
            for sample, text in enumerate(_texts(response)):
                rows.append({"prompt_id": str(specific["prompt_id"]), "sample": sample,
                             TEXT_COLUMN: finish_continuation(text, decoding), "lighteval_task": _task(file)})
    return pd.DataFrame(rows, columns=["prompt_id", "sample", TEXT_COLUMN, "lighteval_task"]), _run_info(files)


def _run_info(files: list[Path]) -> dict[str, Any]:
    """Model, generation parameters and chat template from the `results_*.json` of the run, when it is found
    (OUTPUT_DIR/results/MODEL/results_DATE.json beside OUTPUT_DIR/details/MODEL/DATE/)."""
    info: dict[str, Any] = {"lighteval_details": [str(file) for file in files]}
    date = files[0].stem.rsplit("_", 1)[-1]
    for parent in files[0].parents:
        if parent.name == "details":
            found = sorted(parent.parent.glob(f"results/**/results_{date}.json"))
            if len(found) == 1:
                data = read_json_file(found[0], "lighteval wrote it beside the details with the model's name; restore "
                                      "it from a copy, or move it away and pass --model NAME")
                general = data.get("config_general") or {}
                model_config = general.get("model_config") or {}
                chat = bool(model_config.get("use_chat_template") or model_config.get("override_chat_template")
                            or general.get("use_chat_template"))
                info.update(model=general.get("model_name"), lighteval_results=str(found[0]),
                            lighteval_version=general.get("lighteval_sha") or (data.get("versions") or {}),
                            chat_template=LIGHTEVAL_USER_MESSAGE if chat else "none",
                            generation_parameters=model_config.get("generation_parameters"))
            break
    return info
