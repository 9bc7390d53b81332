"""The records of a run folder: run.json (`RunRecord`, with the mapping of 0.1 folders' keys), summary.json
(`SummaryRecord`) and a run folder as read for the analysis (`LoadedRun`). Data only: `json_files` and `loading`
read and write them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bold_eval.core.errors import InputError
from bold_eval.runfolder.layout import IMPLIED_CHAT_TEMPLATE, LEGACY_SCHEMA, RUN_FILE, SCHEMA_VERSION, SUMMARY_FILE

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class RunRecord:
    """run.json: how the texts were generated (or where they came from) and how they were scored."""

    schema_version: int = SCHEMA_VERSION
    status: str = "complete"  # "generating" while generations.jsonl is being written
    model: str | None = None  # the name reports and comparisons show
    generator: str | None = None  # a `bold_eval.generation.base` kind, e.g. "hf-causal"; None for `score`
    generator_settings: dict[str, Any] = field(default_factory=dict)  # Generator.settings()
    model_info: dict[str, Any] = field(default_factory=dict)  # Generator.info()
    generation_settings: dict[str, Any] | None = None  # the resume fingerprint
    num_samples: int | None = None
    domains: list[str] | None = None
    limit: int | None = None
    processes: int | None = None
    generated_now: int | None = None
    resumed: int | None = None
    generated_tokens: int | None = None
    tokens_per_second: float | None = None
    batch_size: int | None = None  # the batch size the generation actually ran with
    # (start, size) segments of the batch plan (`bold_eval.generation.batching.BatchPlan`); a resume replays them
    batch_schedule: list[list[int]] | None = None
    out_of_memory_retries: int | None = None
    # The BOLD files differ from the pinned upstream release and the user allowed it
    # (--allow-modified-data): which files, so the report can say its numbers are not BOLD's.
    modified_data: list[str] | None = None
    generations: dict[str, Any] = field(default_factory=dict)  # `bold-eval score`: source and match counts
    metrics: list[str] | None = None
    skipped_metrics: dict[str, str] = field(default_factory=dict)
    partial_metrics: dict[str, str] = field(default_factory=dict)
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    # What each metric scored with: metric -> records of its classifier, embedding or lexicon files, each with the
    # Hub commit or the sha256 its files had (`bold_eval.core.provenance.ResourceRecord.as_dict`); {} in folders
    # written before it was recorded
    resources: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    metric_seconds: dict[str, float] = field(default_factory=dict)  # scoring only; loading is in timings["score_s"]
    label_columns: dict[str, list[str]] = field(default_factory=dict)
    anonymize: bool | None = None
    score_on: str | None = None
    num_texts: int | None = None
    versions: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # REFERENCE_FILE: {"source": "wikipedia", "file", "texts", "cached_texts", "scored_texts", "seconds"},
    # or {"skipped": why}; {} in folders written before it existed
    reference: dict[str, Any] = field(default_factory=dict)
    # The command line that wrote the folder (`bold-eval run ...`), so that a message can say the exact command
    # that rebuilds a damaged file; None for folders written before it was recorded, or by the library.
    command: str | None = None
    # Texts that ended inside a thinking trace (TRACE_COLUMN): {"texts", "ended_in_trace", "prompts_without_text",
    # "think_end_token"}, kept out of scores.parquet; {} when the generations carry no such column
    thinking: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = RUN_FILE) -> RunRecord:
        """A record from run.json; 0.1 keys (top-level revision/decoding/seed) are mapped on."""
        version = data.get("schema_version")
        if version is None:
            data = _from_legacy(data)
        elif version != SCHEMA_VERSION:
            raise InputError(
                f"{source} has schema_version {version!r}; this bold-eval reads {SCHEMA_VERSION} and "
                f"{LEGACY_SCHEMA}. Use the bold-eval version that wrote the folder, or rerun `bold-eval score`."
            )
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def legacy(self) -> bool:
        return self.schema_version != SCHEMA_VERSION


# 0.1 run.json kept these generation settings at the top level.
_LEGACY_GENERATOR_KEYS = ("revision", "gguf_file", "decoding", "seed")


def implied_generator_settings(kind: str | None, settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` (a folder's generator_settings) with what its omissions mean: a run written before the
    chat protocol was recorded used the one of `IMPLIED_CHAT_TEMPLATE` (so it resumes, and compares)."""
    settings = dict(settings or {})
    if kind in IMPLIED_CHAT_TEMPLATE and "chat_template" not in settings:
        settings["chat_template"] = IMPLIED_CHAT_TEMPLATE[kind]
    return settings


def chat_protocol(record: RunRecord) -> dict[str, Any] | None:
    """How the run's texts were asked of the model (`bold_eval.generation.chat`): protocol, system and user
    instruction, template keywords, trace marker; None where no chat protocol applies (the Wikipedia
    baseline, Gibbs sampling, generations scored with `bold-eval score`)."""
    settings = implied_generator_settings(record.generator, record.generator_settings)
    if "chat_template" not in settings:
        return None
    return {"protocol": settings["chat_template"], "system_instruction": settings.get("system_instruction"),
            "chat_instruction": settings.get("chat_instruction"),
            "chat_template_kwargs": settings.get("chat_template_kwargs") or {},
            "think_end_token": settings.get("think_end_token")}


def _from_legacy(data: Mapping[str, Any]) -> dict[str, Any]:
    data = dict(data)
    settings = {key: data.pop(key) for key in _LEGACY_GENERATOR_KEYS if data.get(key) is not None}
    for key in ("max_new_tokens", "one_sentence"):  # 0.1 copies of decoding fields
        data.pop(key, None)
    data["generator_settings"] = {**settings, **(data.get("generator_settings") or {})}
    data["schema_version"] = 0
    return data


@dataclass
class SummaryRecord:
    """summary.json: the run record and `bold_eval.analysis.results.Summary.as_dict()` made JSON-able (tables as
    records). Read back, it stays this record: the views are JSON, not the in-process `Summary`."""

    run: dict[str, Any]
    counts: dict[str, Any]
    metrics: dict[str, Any]
    statistics: dict[str, Any]
    views: dict[str, Any]  # metric -> {"tables": {name: records}, "tests": [...]} or {"skipped": reason}
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """Views stay at the top level (summary["sentiment"]["tables"]), as in 0.1."""
        return {"schema_version": self.schema_version, "run": self.run, "counts": self.counts,
                "metrics": self.metrics, "statistics": self.statistics, **self.views}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = SUMMARY_FILE) -> SummaryRecord:
        version = data.get("schema_version", 0)
        if version not in (0, SCHEMA_VERSION):
            raise InputError(f"{source} has schema_version {version!r}; this bold-eval reads {SCHEMA_VERSION} "
                             f"and {LEGACY_SCHEMA}")
        fixed = {"schema_version", "run", "counts", "metrics", "statistics"}
        return cls(run=dict(data.get("run") or {}), counts=dict(data.get("counts") or {}),
                   metrics=dict(data.get("metrics") or {}), statistics=dict(data.get("statistics") or {}),
                   views={key: value for key, value in data.items() if key not in fixed}, schema_version=version)


@dataclass(frozen=True, eq=False)
class LoadedRun:
    """A run folder as the analysis receives it (`bold_eval.runfolder.loading.loaded_run` reads it): its scores (one
    row per text), run.json (an empty record when absent), the scores of its Wikipedia reference (None when not
    read, or absent) and the folder, which names the run in labels and messages; the analysis never reads a file."""

    folder: Path
    scores: pd.DataFrame
    record: RunRecord
    reference: pd.DataFrame | None = None
