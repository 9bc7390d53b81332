"""Resuming a run folder: the settings that made its generations (the resume fingerprint), and the refusal to mix
generations made with other settings (or in other batches) into it.

`bold-eval run` into a folder that already holds generations compares these settings with the folder's run.json
and either resumes (the same settings: only the missing texts are generated, in the recorded batches) or stops
with the list of differences (`ConfigMismatchError`, exit status 2).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from bold_eval.core.errors import UsageError
from bold_eval.generation.base import Generator
from bold_eval.runfolder.json_files import read_run_record
from bold_eval.runfolder.layout import RUN_FILE
from bold_eval.runfolder.merge import has_generations
from bold_eval.runfolder.records import implied_generator_settings


class ConfigMismatchError(UsageError):
    """The output folder holds generations made with other settings: a usage error (exit status 2), as a flag
    that does not fit is."""


def generation_settings(generator: Generator, selected: pd.DataFrame, *, limit: int | None, sample_seed: int,
                        num_samples: int) -> dict[str, Any]:
    """The settings that determine generations.jsonl (the resume fingerprint): the generator's
    kind and settings, and which prompts (`selected`, drawn with `limit` and `sample_seed`) and samples."""
    digest = hashlib.sha256()
    for prompt_id, prompt in zip(selected["prompt_id"], selected["prompt"], strict=True):
        digest.update(f"{prompt_id}\t{prompt}\n".encode())
    return {
        "generator": generator.kind,
        "generator_settings": generator.settings(),
        "domains": sorted(set(selected["domain"])),
        "limit": limit,
        # --limit draws a seeded random sample per group (`select_prompts`); its seed is --sample-seed,
        # independent of the generation --seed.
        "limit_sample_seed": sample_seed if limit is not None else None,
        "prompts": len(selected),
        "prompts_sha256": digest.hexdigest(),
        "num_samples": num_samples,
    }


def differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    diffs = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            diffs.extend(differences(a, b, f"{prefix}{key}."))
        elif a != b:
            diffs.append(f"{prefix}{key}: {a!r} in the folder, {b!r} now")
    return diffs


def resume_schedule(out: Path, batch_size: int | str) -> list[tuple[int, int]]:
    """The batch plan schedule to replay (`BatchPlan.schedule`): the folder's recorded one when it
    holds generations, else [] (a new plan). An explicit --batch-size other than the recorded one
    is refused: under bfloat16 the batch a prompt runs in can change its text."""
    record = read_run_record(out) if has_generations(out) else None
    schedule = [(int(start), int(size)) for start, size in (record.batch_schedule or [])] if record else []
    if schedule and batch_size != "auto" and schedule != [(0, int(batch_size))]:
        recorded = ", ".join(f"{size} from text {start}" for start, size in schedule)
        raise ConfigMismatchError(
            f"{out} holds generations made in batches of {recorded} (its {RUN_FILE} batch_schedule); a resume "
            f"must replay the same batches to give the same texts. Rerun with --batch-size auto (replays them) "
            f"or --batch-size {schedule[0][1]}, or use a new --out folder."
        )
    return schedule


def check_resumable(out: Path, settings: Mapping[str, Any]) -> None:
    """Refuse to add generations made with other settings to a folder (names the differences)."""
    if not has_generations(out):
        return  # nothing to mix with: a failed or interrupted start leaves the folder reusable
    record = read_run_record(out)
    if record is None or record.generation_settings is None:
        raise ConfigMismatchError(
            f"{out} holds generations but its {RUN_FILE} records no generation settings, so they are "
            "unknown; use a new --out folder (or delete the generations to start over)"
        )
    if record.legacy:
        raise ConfigMismatchError(
            f"{out / RUN_FILE} was written by bold-eval 0.1 (no schema_version); its generations cannot be "
            "resumed by this version. Use a new --out folder; `bold-eval report` still reads the old folder."
        )
    recorded = dict(record.generation_settings)  # settings it leaves out mean what they meant when it was written
    recorded["generator_settings"] = implied_generator_settings(recorded.get("generator"),
                                                                recorded.get("generator_settings") or {})
    diffs = differences(recorded, settings)
    if diffs:
        raise ConfigMismatchError(
            f"{out} holds generations made with other settings; refusing to mix them:\n  "
            + "\n  ".join(diffs) + "\nRerun with the folder's settings to resume, or use a new --out folder."
        )


# Plans a folder's generator settings lack when its k samples were made before the plan existed (or with it
# turned off): (settings key, generator option, value that keeps the folder's plan).
FOLDER_PLANS = (("n_per_request", "n_per_request", "false"), ("share_prefill", "share_prefill", False))


def folder_plans(out: Path, settings: Mapping[str, Any], generator_options: Mapping[str, Any]) -> dict[str, Any]:
    """Generator options that resume `out` the way its generations were made: a plan (n = k requests, a shared
    prefill) the folder's settings lack, which the user left at its default. Without them the defaults would
    refuse a folder made before the plan existed."""
    planned = settings.get("generator_settings") or {}
    wanted = [(key, option, value) for key, option, value in FOLDER_PLANS
              if key in planned and option not in generator_options]
    if not wanted or not has_generations(out):
        return {}
    record = read_run_record(out)
    recorded = (record.generation_settings or {}) if record is not None else {}
    if not recorded:
        return {}
    had = recorded.get("generator_settings") or {}
    options = {option: value for key, option, value in wanted if key not in had}
    for option, value in options.items():
        warnings.warn(f"{out} holds generations made without {option} (its {RUN_FILE} does not record it); "
                      f"resuming the same way (--generator-option {option}={str(value).lower()})", stacklevel=2)
    return options
