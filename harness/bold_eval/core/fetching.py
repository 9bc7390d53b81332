"""What `bold-eval download` fetches, one item at a time, into the folder that `$BOLD_EVAL_HOME` later names.

Three kinds of item: a Hub repository (`HubRepository`: a classifier, a model, an embedding; fetched with
huggingface_hub's `snapshot_download` into `DIR/hub`, the cache layout `from_pretrained` reads), a file pinned to
an upstream commit and checksum (`PinnedFile`: lexicons, word lists, BOLD's files; `core.resources.download`), and
a resource made by code of its own (`PreparedResource`: the hard-debiased word2vec embedding). Each says whether
it is already complete in the folder, so that a second `download` skips it, and what it fetched
(`provenance.ResourceRecord`). Metrics name theirs in `Resources.downloads`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bold_eval.core.environment import HOME_HUB
from bold_eval.core.provenance import ResourceRecord, local_record, snapshot_commit
from bold_eval.core.resources import (
    RemoteFile,
    ResourceNotFoundError,
    cached_snapshot,
    download,
    hub_snapshot,
    sha256_of,
)

# What `bold-eval download` fetched into its folder, each item with its commit or sha256.
MANIFEST_FILE = "manifest.json"


def manifest_records(home: Path) -> list[dict[str, str]]:
    """The records of `home/manifest.json` ([] when there is none, or it cannot be read: then everything is checked
    or fetched again)."""
    try:
        items = json.loads((home / MANIFEST_FILE).read_text(encoding="utf-8")).get("items")
    except (OSError, ValueError, AttributeError):
        return []
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

# Files of other frameworks and formats that `from_pretrained` does not read for a PyTorch model.
OTHER_FORMATS = ("*.h5", "*.msgpack", "*.onnx", "*.onnx_data", "*.ot", "*.tflite", "*.mlmodel", "*.gguf",
                 "tf_model*", "flax_model*", "rust_model*", "onnx/*", "openvino/*", "coreml/*")


@dataclass(frozen=True)
class HubRepository:
    """A repository on the Hub, at a revision (None: its default branch), fetched into `DIR/hub`."""

    resource: str
    repo_id: str
    revision: str | None = None
    repo_type: str = "model"
    allow_patterns: tuple[str, ...] | None = None
    # None: the files of other frameworks (`OTHER_FORMATS`), and PyTorch .bin weights when safetensors exist
    ignore_patterns: tuple[str, ...] | None = None

    @property
    def label(self) -> str:
        return f"{self.resource} {self.repo_id}" + (f"@{self.revision}" if self.revision else "")

    def complete(self, home: Path) -> bool:
        """Whether an earlier `download` fetched this repository at this revision whole (its manifest says so, and
        the snapshot is still there); huggingface_hub writes the manifest's commit only after every file."""
        return self.recorded(home) is not None

    def recorded(self, home: Path) -> ResourceRecord | None:
        for item in manifest_records(home):
            if (item.get("resource"), item.get("source"), item.get("revision")) == (
                    self.resource, self.repo_id, self.revision) and item.get("commit") \
                    and cached_snapshot(self.repo_id, item["commit"], home / HOME_HUB, self.repo_type) is not None:
                return ResourceRecord.from_dict(item)
        return None

    def fetch(self, home: Path) -> ResourceRecord:
        folder = hub_snapshot(self.repo_id, resource=self.resource, revision=self.revision,
                              repo_type=self.repo_type, cache=home / HOME_HUB, allow_patterns=self.allow_patterns,
                              ignore_patterns=self.ignore_patterns or self._ignored(), local_only=False,
                              hint="Check the repository id and revision, and the network connection (or $HF_ENDPOINT "
                                   "and a proxy), then run the same command again: what is complete is kept.")
        return self.record(folder)

    def record(self, folder: Path) -> ResourceRecord:
        return ResourceRecord(self.resource, self.repo_id, revision=self.revision, commit=snapshot_commit(folder))

    def _ignored(self) -> tuple[str, ...]:
        """`OTHER_FORMATS`, and the PyTorch .bin weights when the revision has safetensors (which
        `from_pretrained` prefers), so that the weights are fetched once."""
        if self.allow_patterns is not None:
            return OTHER_FORMATS
        from huggingface_hub import HfApi

        try:  # one request, without huggingface_hub's retries on a refused connection
            info = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None).repo_info(
                self.repo_id, revision=self.revision, repo_type=self.repo_type)
            files = [sibling.rfilename for sibling in info.siblings or []]
        except Exception:  # the download that follows reports what is wrong with the repository or network
            return OTHER_FORMATS
        if any(name.endswith(".safetensors") for name in files):
            return (*OTHER_FORMATS, "pytorch_model*.bin", "*.pt")
        return OTHER_FORMATS


@dataclass(frozen=True)
class PinnedFile:
    """An upstream file pinned to a commit and sha256, fetched into `DIR/<subdir>/<filename>`."""

    remote: RemoteFile
    subdir: str

    @property
    def label(self) -> str:
        return self.remote.resource

    def path(self, home: Path) -> Path:
        return home / self.subdir / self.remote.filename

    def complete(self, home: Path) -> bool:
        path = self.path(home)
        return path.is_file() and (self.remote.sha256 is None or sha256_of(path) == self.remote.sha256)

    def fetch(self, home: Path) -> ResourceRecord:
        try:
            download(self.remote, self.path(home))
        except ResourceNotFoundError:
            raise
        except OSError as error:
            from bold_eval.core.storage import storage_error

            fault = storage_error(error, self.path(home))
            if fault is not None:
                raise fault from error
            raise ResourceNotFoundError(self.remote.resource, [f"{self.remote.url} (download failed: {error})"],
                                        "Check the network connection (and a proxy, if one is needed), then run "
                                        "the same command again: what is complete is kept.") from error
        return self.recorded(home)

    def recorded(self, home: Path) -> ResourceRecord:
        return local_record(self.remote.resource, self.path(home))


@dataclass(frozen=True)
class PreparedResource:
    """A resource that code of its own builds in `DIR/<subdir>` (the hard-debiased embedding): `build(folder)`
    writes it, `ready(folder)` says whether it is there."""

    label: str
    subdir: str
    build: Callable[[Path, Path], None]  # (its folder, the home folder) -> None
    ready: Callable[[Path], bool]

    def complete(self, home: Path) -> bool:
        return self.ready(home / self.subdir)

    def fetch(self, home: Path) -> ResourceRecord:
        self.build(home / self.subdir, home)
        return self.recorded(home)

    def recorded(self, home: Path) -> ResourceRecord:
        return local_record(self.label, home / self.subdir)


DownloadItem = HubRepository | PinnedFile | PreparedResource
