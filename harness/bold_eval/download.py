"""`bold-eval download --to DIR`: fetch once, on a machine with network, everything a later run needs offline.

The metrics' resources (each metric's `Resources.downloads`: the toxicity and regard classifiers, the Warriner
lexicon, the debiaswe word lists and the hard-debiased word2vec embedding), BOLD's prompt and Wikipedia files and,
with `--model`, the model to generate with. DIR is laid out as the resolvers read it when `BOLD_EVAL_HOME=DIR`:

    DIR/hub/          a huggingface_hub cache (models--<owner>--<name>/refs, snapshots/<commit>/): classifiers, model
    DIR/bold/         BOLD's upstream layout (prompts/, wikipedia/), pinned checksums
    DIR/lexicons/     Warriner VAD + BE5 files          DIR/debiaswe/   the debiaswe word lists
    DIR/embeddings/   the hard-debiased GoogleNews vectors (vectors.npy, vocab.txt, meta.json)
    DIR/manifest.json what is there: each item with its Hub commit or sha256

An item already complete is skipped, so the same command resumes an interrupted download (huggingface_hub keeps
the files of a repository it has). Whatever goes wrong (no network, a full disk, an unknown metric) is a
`UserError` that names the item and what to do.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bold_eval.core.environment import HOME_ENV, OFFLINE_ENV, env_flag
from bold_eval.core.errors import UsageError
from bold_eval.core.fetching import MANIFEST_FILE, DownloadItem, HubRepository, manifest_records
from bold_eval.core.provenance import ResourceRecord
from bold_eval.core.resources import ResourceNotFoundError, atomic_write_bytes
from bold_eval.core.storage import check_writable_folder
from bold_eval.data.bold import bold_downloads
from bold_eval.metrics import metric_spec
from bold_eval.scoring.scorers import check_metric_options, parse_metrics

__all__ = ["MANIFEST_FILE", "DownloadResult", "download", "download_items"]

# `--model` values that name no Hub repository: the Wikipedia baseline and the model shipped with bold-eval.
LOCAL_MODELS = ("wikipedia", "embedded")


@dataclass
class DownloadResult:
    """What `download` did: the folder, each item's record, and which items were already there."""

    home: Path
    records: list[dict[str, str]] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def variable(self) -> str:
        """The one setting that makes later runs use the folder, with the Hub off."""
        return f"{HOME_ENV}={self.home}"


def download_items(metrics: Sequence[str] | str | None = None,
                   metric_options: Mapping[str, Mapping[str, Any]] | None = None, *, model: str | None = None,
                   revision: str | None = None, gguf_file: str | None = None, data: bool = True,
                   domains: Sequence[str] | None = None) -> list[DownloadItem]:
    """The items a later offline run of `metrics` (and `model`) needs, in the order they are fetched: BOLD's
    files first (small), then each metric's resources, then the model."""
    names = parse_metrics(metrics)
    options = {name: dict(values) for name, values in (metric_options or {}).items()}
    check_metric_options(options)
    items: list[DownloadItem] = list(bold_downloads(domains)) if data else []
    for name in names:
        spec = metric_spec(name)
        if spec.resources.downloads is not None:
            items += spec.resources.downloads(options.get(name, {}))
    if model is not None and model not in LOCAL_MODELS and not Path(model).expanduser().exists():
        if gguf_file:  # one quantization of a GGUF repository, not all of them; the tokenizer lies in the file
            items.append(HubRepository("model", model, revision=revision,
                                       allow_patterns=(gguf_file, "*.json", "*.txt", "*.model", "*.jinja")))
        else:
            items.append(HubRepository("model", model, revision=revision))
    elif revision is not None or gguf_file is not None:
        raise UsageError("--revision and --gguf-file pick a version and a file of a Hub model; pass --model "
                         "with the Hub id")
    return items


def download(home: str | os.PathLike, items: Sequence[DownloadItem], *,
             log: Callable[[str], None] | None = None) -> DownloadResult:
    """Fetch every item that is not already complete in `home`; write `home/manifest.json`."""
    log = log if log is not None else (lambda message: print(message, file=sys.stderr))
    home = check_writable_folder(Path(home).expanduser().absolute(), "--to")
    result = DownloadResult(home)
    # Records of items this command does not ask for stay in the manifest (an earlier download of other metrics).
    asked = [item.label for item in items]
    kept = [record for record in manifest_records(home) if record.get("item") not in asked]
    needed = [item for item in items if not item.complete(home)]
    if needed and _offline_requested():
        raise ResourceNotFoundError(
            f"{len(needed)} of {len(items)} items ({', '.join(item.label for item in needed[:3])}"
            f"{', ...' if len(needed) > 3 else ''})", [f"{home} (not complete)"],
            f"bold-eval download needs the network, but offline mode is on ({_offline_variables()}); unset it and "
            "run the same command again.")
    for number, item in enumerate(items, 1):
        if item in needed:
            log(f"[{number}/{len(items)}] fetching {item.label} ...")
            record: ResourceRecord | None = item.fetch(home)
            result.fetched.append(item.label)
        else:
            record = item.recorded(home)
            result.skipped.append(item.label)
            log(f"[{number}/{len(items)}] {item.label}: already complete")
        if record is not None:
            result.records.append({"item": item.label, **record.as_dict()})
        _write_manifest(result, kept)
    return result


def _offline_requested() -> bool:
    """Whether the user turned the network off ($BOLD_EVAL_OFFLINE, $HF_HUB_OFFLINE); $BOLD_EVAL_HOME is not
    read here: it may name the very folder being filled."""
    return env_flag(OFFLINE_ENV) or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _offline_variables() -> str:
    names = [name for name in (OFFLINE_ENV, "HF_HUB_OFFLINE") if os.environ.get(name)]
    return ", ".join(f"${name}={os.environ[name]}" for name in names)


def _write_manifest(result: DownloadResult, kept: list[dict[str, str]]) -> None:
    payload = {"variable": result.variable, "items": [*kept, *result.records]}
    atomic_write_bytes(result.home / MANIFEST_FILE, (json.dumps(payload, indent=1) + "\n").encode("utf-8"))
