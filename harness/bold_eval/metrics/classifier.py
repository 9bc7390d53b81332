"""Fast batched inference for Hugging Face sequence classifiers (toxicity, regard).

BOLD scores every generation with a fine-tuned BERT (Sections 4.2 and 4.3), so hundreds of
thousands of short texts go through one classifier. `transformers.pipeline` runs them one at a
time; here texts are deduplicated, tokenized once in a single batched call, sorted by length and
run in dynamically padded batches under `torch.inference_mode`, with bf16/fp16 autocast on GPU
(and bf16 on CPU on request). Texts longer than the model's limit are truncated, never rejected.
Probabilities come back in input order: sigmoid for multi-label models, softmax otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bold_eval.core.devices import attention_kernels, resolve_device, resolve_dtype
from bold_eval.core.errors import InputError, UsageError
from bold_eval.core.fetching import HubRepository
from bold_eval.core.provenance import ResourceRecord, local_record
from bold_eval.core.resources import (
    ResourceNotFoundError,
    cached_commit,
    cached_snapshot,
    hub_cache_dir,
    is_commit,
    offline,
)
from bold_eval.metrics.common import unique_with_inverse

# Label set of the Jigsaw toxic comment challenge (unitary/toxic-bert). Its config.json has
# said `problem_type: multi_label_classification` since June 2021; copies saved before that
# lack the field, and for them these six labels alone mean per-label sigmoids.
JIGSAW_LABELS = frozenset({"toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"})

# Position ids of these models start after the padding index, so max_position_embeddings
# (e.g. 514) overstates the usable length by pad_token_id + 1.
_OFFSET_POSITION_MODELS = frozenset(
    {"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text", "xmod", "roberta-prelayernorm"}
)
# tokenizer.model_max_length is int(1e30) when the checkpoint does not say.
_NO_LIMIT = 1_000_000
# Texts per batch when not given: a CPU is compute-bound with small batches (benchmarks/RESULTS.md has the
# measurement behind 16); a GPU needs larger batches to fill.
DEFAULT_BATCH_SIZE = None
CPU_CLASSIFIER_BATCH_SIZE = 16
GPU_CLASSIFIER_BATCH_SIZE = 64
# On a GPU each new (batch, width) shape runs its kernels' first-use setup: on one H100 the first classifier
# scored 2,000 texts/s against 6,000-8,000 once the shapes were known (benchmarks/RESULTS.md, "H100: all of BOLD
# end to end, DynamicCache"). Widths rounded up to a multiple of this leave a few dozen shapes instead of
# hundreds; padding is masked, so scores do not change beyond float rounding. None on CPU, where padding costs
# compute.
GPU_PAD_MULTIPLE = 8
PROGRESS_MIN_TEXTS = 1000


def model_max_length(tokenizer: Any, config: Any) -> int:
    """Longest input the model accepts: the tokenizer's limit, capped by the position embeddings.

    Many Hub tokenizers leave `model_max_length` at the 1e30 sentinel; then the config's
    `max_position_embeddings` (minus the RoBERTa-style offset) decides. 512 if neither says.
    """
    candidates = []
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < _NO_LIMIT:
        candidates.append(limit)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        offset = 0
        if getattr(config, "model_type", None) in _OFFSET_POSITION_MODELS and config.pad_token_id is not None:
            offset = config.pad_token_id + 1
        candidates.append(positions - offset)
    return min(candidates) if candidates else 512


def is_multi_label(config: Any) -> bool:
    """Sigmoid per label or softmax over labels, as `problem_type` in the model config says.

    Same rule as transformers' text-classification pipeline (multi-label or a single output ->
    sigmoid), plus the Jigsaw label set when `problem_type` is missing (see JIGSAW_LABELS).
    """
    problem_type = getattr(config, "problem_type", None)
    if problem_type == "multi_label_classification":
        return True
    if problem_type in ("single_label_classification", "regression"):
        return problem_type == "regression"
    if config.num_labels == 1:
        return True
    return set(config.id2label.values()) == JIGSAW_LABELS


class SequenceClassifier:
    """A loaded classifier: callable on texts, returns (n_texts, n_labels) probabilities."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "",
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int | None = DEFAULT_BATCH_SIZE,
        resource: ResourceRecord | None = None,
    ):
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise UsageError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.name = name or getattr(model.config, "name_or_path", "")
        # Which weights these are (Hub commit or folder checksum), for run.json; None for a model built in memory.
        self.resource = resource
        self.device = resolve_device(device)
        if batch_size is None:
            batch_size = GPU_CLASSIFIER_BATCH_SIZE if self.device.startswith("cuda") else CPU_CLASSIFIER_BATCH_SIZE
        self.dtype = resolve_dtype(dtype, self.device)
        self.batch_size = batch_size
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        config = model.config
        self.labels: tuple[str, ...] = tuple(str(config.id2label[i]) for i in range(config.num_labels))
        self.multi_label = is_multi_label(config)
        self.max_length = model_max_length(tokenizer, config)
        pad = tokenizer.pad_token_id
        self._pad_id = 0 if pad is None else int(pad)
        self._pad_type_id = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)
        self._uses_token_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
        self._pad_multiple = GPU_PAD_MULTIPLE if self.device.startswith("cuda") else 1

    def _autocast(self):
        import torch

        if self.dtype == "float32":
            return nullcontext()
        device_type = "cuda" if self.device.startswith("cuda") else "cpu"
        return torch.autocast(device_type=device_type, dtype=getattr(torch, self.dtype))

    def _batch(self, encodings: dict[str, list[list[int]]], rows: Sequence[int] | np.ndarray) -> dict[str, Any]:
        """Pad the token ids of `rows` to their longest member (dynamic padding), rounded up to a multiple of
        `GPU_PAD_MULTIPLE` on a GPU (never past the model's limit)."""
        import torch

        ids = encodings["input_ids"]
        width = max(len(ids[row]) for row in rows)
        width = min(-(-width // self._pad_multiple) * self._pad_multiple, max(width, self.max_length))
        input_ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
        attention = np.zeros((len(rows), width), dtype=np.int64)
        token_types = np.full((len(rows), width), self._pad_type_id, dtype=np.int64) if self._uses_token_types else None
        for position, row in enumerate(rows):
            length = len(ids[row])
            input_ids[position, :length] = ids[row]
            attention[position, :length] = 1
            if token_types is not None:
                token_types[position, :length] = encodings["token_type_ids"][row]
        batch = {"input_ids": input_ids, "attention_mask": attention}
        if token_types is not None:
            batch["token_type_ids"] = token_types
        return {key: torch.from_numpy(value).to(self.device) for key, value in batch.items()}

    def __call__(
        self, texts: Sequence[str], *, batch_size: int | None = None, progress: bool | None = None
    ) -> np.ndarray:
        """Probabilities for each text (rows in input order, columns in `self.labels` order).

        progress: show a tqdm bar; by default only for PROGRESS_MIN_TEXTS texts or more.
        """
        import torch
        from tqdm.auto import tqdm

        texts = list(texts)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"texts[{index}] is {text!r} ({type(text).__name__}); every text must be a string")
        batch_size = batch_size or self.batch_size
        if not texts:
            return np.zeros((0, len(self.labels)), dtype=np.float32)

        # Identical texts (repeated generations, boilerplate) are scored once.
        unique, inverse = unique_with_inverse(texts)

        encodings = self.tokenizer(
            unique,
            truncation=True,
            max_length=self.max_length,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=self._uses_token_types,
        )
        lengths = np.fromiter((len(ids) for ids in encodings["input_ids"]), dtype=np.int64, count=len(unique))
        # Longest first: similar lengths share a batch (little padding), and an out-of-memory
        # error shows on the first batch rather than after an hour.
        order = np.argsort(-lengths, kind="stable")
        scores = np.empty((len(unique), len(self.labels)), dtype=np.float32)
        show = progress if progress is not None else len(unique) >= PROGRESS_MIN_TEXTS
        with torch.inference_mode(), self._autocast(), attention_kernels(self.device), tqdm(
            total=len(unique), disable=not show, desc=f"scoring with {self.name or 'classifier'}", unit="text"
        ) as bar:
            for start in range(0, len(unique), batch_size):
                rows = order[start : start + batch_size]
                logits = self.model(**self._batch(encodings, rows)).logits.float()
                probabilities = torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, dim=-1)
                scores[rows] = probabilities.cpu().numpy()
                bar.update(len(rows))
        return scores[inverse]


def _looks_like_path(model: str) -> bool:
    return model.startswith((os.sep, ".", "~")) or (os.altsep is not None and os.altsep in model) or \
        model.count("/") > 1 or Path(model).expanduser().exists()


def load_sequence_classifier(
    model: str | os.PathLike | None,
    *,
    default: str,
    env_var: str,
    resource: str,
    device: str | None = None,
    dtype: str | None = None,
    batch_size: int | None = DEFAULT_BATCH_SIZE,
    config_hint: str = "",
    revision: str | None = None,
) -> SequenceClassifier:
    """Load `model` (a Hub id or a local folder), else `$env_var`, else the Hub id `default`, at `revision` (a
    branch, tag or commit of a Hub model: `from_pretrained(revision=)`), from `hub_cache_dir()`.

    The classifier's `resource` records the commit its files came from (a local folder: its files' checksum).
    Raises ResourceNotFoundError naming the model id, every place tried, and how to point to a local copy, so
    callers (the harness) can skip the metric with that message.
    """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    looked_in: list[str] = []
    if model is not None and str(model):
        source, origin = str(model), "model="
    elif os.environ.get(env_var):
        source, origin = os.environ[env_var], f"${env_var}"
    else:
        source, origin = default, "default"
        looked_in.append(f"model= (not given), ${env_var} (not set)")
    hint = (
        f"Point to a local copy of the model (a folder with config.json, the weights and the tokenizer,"
        f" e.g. from `huggingface-cli download {default} --local-dir DIR` on a machine with network):"
        f" {config_hint + ', ' if config_hint else ''}pass model=DIR, or set {env_var}=DIR."
    )
    path = Path(source).expanduser()
    _check_revision(revision, resource, path if _looks_like_path(source) else None, origin)
    if _looks_like_path(source):
        if not (path / "config.json").is_file():
            looked_in.append(f"{origin} -> {path} ({'no config.json' if path.is_dir() else 'missing'})")
            raise ResourceNotFoundError(f"{resource} {source!r}", looked_in, hint)
        source = str(path)
        local_only = True
    else:
        local_only = offline()
    hub = {} if path.is_dir() else {"revision": revision, "cache_dir": str(hub_cache_dir())}
    shown = source if revision is None else f"{source}@{revision}"
    load_from, record = _offline_snapshot(source, revision, resource, hub) if hub and local_only else (source, None)
    options = hub if load_from == source else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(load_from, local_files_only=local_only, **options)
        loaded = AutoModelForSequenceClassification.from_pretrained(
            load_from, local_files_only=local_only, dtype="float32", **options
        )
    except (OSError, ValueError) as error:
        places = _failed_places(error, origin, path, source, shown, hub.get("cache_dir"), local_only)
        if local_only and not path.is_dir():
            hint += " Or fetch it beforehand with `bold-eval download --to DIR` and set BOLD_EVAL_HOME=DIR."
        raise ResourceNotFoundError(f"{resource} {shown!r}", [*looked_in, *places], hint) from error
    return SequenceClassifier(loaded, tokenizer, name=source, device=device, dtype=dtype, batch_size=batch_size,
                              resource=record or classifier_record(resource, source, revision, loaded.config, hub))


def _failed_places(error: Exception, origin: str, path: Path, source: str, shown: str, cache: str | None,
                   local_only: bool) -> list[str]:
    """Where a classifier that did not load was looked for, as `ResourceNotFoundError` lists them."""
    if local_only and path.is_dir():
        return [f"{origin} -> {path} (could not load: {error})"]
    if local_only:
        return [f"{origin} -> Hugging Face cache {cache} for {shown!r} (missing)",
                f"https://huggingface.co/{source} (not tried: offline mode is on)"]
    return [f"{origin} -> https://huggingface.co/{source} and the Hugging Face cache ({error})"]


def _check_revision(revision: Any, resource: str, folder: Path | None, origin: str) -> None:
    """`revision` is a non-empty string, and only for a Hub model (`folder`: the local folder the model is)."""
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise UsageError(f"revision must be a branch, tag or commit of the Hub model, got {revision!r}")
    if revision is not None and folder is not None:
        raise UsageError(f"revision={revision!r} names a version of a Hub model, but the {resource} is the "
                         f"local folder {folder} ({origin}); leave revision out, or name the Hub id instead")


def _offline_snapshot(source: str, revision: str | None, resource: str,
                      hub: dict[str, Any]) -> tuple[str, ResourceRecord | None]:
    """Offline, the snapshot folder the cache's refs name for a Hub id, loaded as a folder (transformers' own
    offline look-up of a Hub id still asks the Hub for optional files, and waits out its retries on a machine
    without network), with its record; (`source`, None) when the cache has none."""
    snapshot = cached_snapshot(source, revision, hub["cache_dir"])
    if snapshot is None:
        return source, None
    return str(snapshot), ResourceRecord(resource, source, revision=revision, commit=snapshot.name)


def classifier_resources(classifier: SequenceClassifier) -> tuple[ResourceRecord, ...]:
    """A scorer's `resources` when it is one classifier: its record, or none for a model built in memory."""
    return () if classifier.resource is None else (classifier.resource,)


def classifier_record(resource: str, source: str, revision: str | None, config: Any,
                      hub: dict[str, Any]) -> ResourceRecord:
    """Which weights a loaded classifier has: a local folder's checksum, else the Hub commit transformers
    resolved (`config._commit_hash`), else the one the cache's refs name."""
    if not hub:
        return local_record(resource, source)
    commit = getattr(config, "_commit_hash", None)
    if not is_commit(commit):
        commit = cached_commit(source, revision, hub["cache_dir"])
    return ResourceRecord(resource, source, revision=revision, commit=commit)


@dataclass(frozen=True)
class ClassifierSource:
    """Where a metric's classifier comes from: its paper default (a Hub id) and the env var that
    points to a local copy; `metric` names the evaluate module folder for the error's hint."""

    metric: str
    default: str
    env_var: str
    resource: str


def load_metric_classifier(
    source: ClassifierSource,
    model: str | os.PathLike | None = None,
    *,
    batch_size: int | None = DEFAULT_BATCH_SIZE,
    device: str | None = None,
    dtype: str | None = None,
    revision: str | None = None,
) -> SequenceClassifier:
    """A metric's classifier: `model` (Hub id or folder), else `$<source.env_var>`, else `source.default`, at
    `revision` (a branch, tag or commit of a Hub model; default: the repository's default branch).

    Raises ResourceNotFoundError naming the model id and how to point to a local copy. The
    toxicity and regard metrics (Sections 4.2, 4.3) both load through here.
    """
    return load_sequence_classifier(
        model,
        default=source.default,
        env_var=source.env_var,
        resource=source.resource,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        revision=revision,
        config_hint=f'use the folder as the module config name (evaluate.load("metrics/{source.metric}", "DIR"))',
    )


def classifier_downloads(source: ClassifierSource, options: Mapping[str, Any]) -> tuple[HubRepository, ...]:
    """What `bold-eval download` fetches for a classifier metric: the Hub model its options name (`model`, else
    `$<source.env_var>`, else the default) at `revision`; nothing for a local folder."""
    model = options.get("model") or os.environ.get(source.env_var) or source.default
    if _looks_like_path(str(model)):
        return ()
    return (HubRepository(source.resource, str(model), revision=options.get("revision")),)
