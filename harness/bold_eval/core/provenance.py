"""Which exact files scored a run: the Hub commit of a model from the Hub, the sha256 of a local folder or file.

A toxicity or regard number can be reproduced only with the weights that produced it, and a Hub id alone does not
name them (a repository's `main` moves). Every scorer lists what it loaded as `ResourceRecord`s (its `resources`
attribute); run.json keeps them per metric (`RunRecord.resources`), the report shows them, and compare, the
leaderboard and the model card warn when two runs were scored by different versions of the same resource
(`resource_differences`).

Checksums of large files (a 3.6 GB embedding, a classifier's weights) are kept per (path, size, mtime) in
`checksums.json` under the cache folder, so a file is read whole once, not on every run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from bold_eval.core.resources import atomic_write_bytes, cache_dir, sha256_of

# huggingface_hub's cache: <cache>/models--owner--name/snapshots/<commit>/<file>
_SNAPSHOT = re.compile(r"/(models|datasets|spaces)--[^/]+/snapshots/([0-9a-f]{40})(/|$)")
CHECKSUMS_FILE = "checksums.json"


@dataclass(frozen=True)
class ResourceRecord:
    """One resource a metric scored with, as run.json records it (fields that do not apply are left out).

    A model from the Hub has `commit` (and the `revision` asked for, when one was); a local folder or file has
    `sha256` (of the file, or `folder_sha256` of a folder), and `commit` too when it lies in a Hub cache snapshot.
    """

    resource: str  # what it is, as the metric names it: "toxicity classifier", "Warriner et al. (2013) VAD norms"
    source: str  # the Hub id, or the absolute path
    revision: str | None = None  # the Hub revision asked for (branch, tag or commit); None: the default branch
    commit: str | None = None  # the Hub commit the files came from
    sha256: str | None = None  # of the file, or of the folder's files
    note: str | None = None  # how it was used, where that matters ("hard-debiased", "vaderSentiment 3.3.2")

    def as_dict(self) -> dict[str, str]:
        return {key: value for key, value in asdict(self).items() if value is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResourceRecord:
        names = {f.name for f in fields(cls)}
        return cls(**{key: str(value) for key, value in data.items() if key in names and value is not None})

    @property
    def identity(self) -> str | None:
        """What says two records are the same files: the Hub commit, else the checksum."""
        if self.commit:
            return f"commit {self.commit}"
        if self.sha256:
            return f"sha256 {self.sha256}"
        return None

    def short(self) -> str:
        """`unitary/toxic-bert@0123abcd`, `/models/tox (sha256 0123abcd4567)`: the record in a few words."""
        if self.commit and not self.sha256:
            return f"{self.source}@{self.commit[:12]}"
        parts = [f"commit {self.commit[:12]}"] if self.commit else []
        parts += [f"sha256 {self.sha256[:12]}"] if self.sha256 else []
        return f"{self.source} ({', '.join(parts) or 'no checksum'})"


# --------------------------------------------------------------------------- checksums


def _checksums_path() -> Path:
    return cache_dir() / CHECKSUMS_FILE


@functools.lru_cache(maxsize=256)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    key = f"{path}\t{size}\t{mtime_ns}"
    store = _checksums_path()
    try:
        known = json.loads(store.read_text(encoding="utf-8")) if store.is_file() else {}
    except (OSError, ValueError):  # a damaged memo is only a memo: hash again and write it anew
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), str):
        return known[key]
    digest = sha256_of(Path(path))
    if size >= 1 << 20:  # worth remembering across processes
        known = known if isinstance(known, dict) else {}
        known[key] = digest
        try:
            atomic_write_bytes(store, json.dumps(known, indent=0, sort_keys=True).encode("utf-8"))
        except OSError:
            pass  # a cache that cannot be written costs a second read next time, nothing else
    return digest


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file (symbolic links followed), remembered per (path, size, mtime)."""
    resolved = Path(path).expanduser().resolve()
    stat = resolved.stat()
    return _file_sha256(str(resolved), stat.st_size, stat.st_mtime_ns)


def folder_files(folder: str | os.PathLike) -> list[Path]:
    """The files of a folder that make it what it is, sorted: every file below it (links followed) except hidden
    ones and those in hidden folders (`.git`, huggingface_hub's `.cache` of a `--local-dir` download)."""
    folder = Path(folder)
    found = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        found += [Path(root) / name for name in files if not name.startswith(".")]
    return sorted(found, key=lambda path: path.relative_to(folder).as_posix())


def folder_sha256(folder: str | os.PathLike) -> str:
    """One checksum of a folder's files (`folder_files`): sha256 over `<relative path>\\t<file sha256>` lines, so
    that a renamed, added, removed or changed file changes it, and a copy of the folder elsewhere keeps it."""
    folder = Path(folder).expanduser()
    digest = hashlib.sha256()
    for path in folder_files(folder):
        digest.update(f"{path.relative_to(folder).as_posix()}\t{file_sha256(path)}\n".encode())
    return digest.hexdigest()


def snapshot_commit(path: str | os.PathLike) -> str | None:
    """The Hub commit of a path inside a huggingface_hub cache snapshot (`.../snapshots/<commit>/...`), else None."""
    match = _SNAPSHOT.search(Path(path).expanduser().absolute().as_posix())
    return match.group(2) if match else None


def local_record(resource: str, path: str | os.PathLike, *, note: str | None = None) -> ResourceRecord:
    """The record of a local file or folder: its absolute path, sha256, and commit when it is a Hub snapshot."""
    path = Path(path).expanduser().absolute()
    digest = folder_sha256(path) if path.is_dir() else file_sha256(path)
    return ResourceRecord(resource, str(path), commit=snapshot_commit(path), sha256=digest, note=note)


# --------------------------------------------------------------------------- comparing runs


def run_resources(resources: Mapping[str, Iterable[Mapping[str, Any]]] | None) -> dict[str, list[ResourceRecord]]:
    """run.json's `resources` (metric -> list of records) as `ResourceRecord`s; {} for a run that records none."""
    return {metric: [ResourceRecord.from_dict(item) for item in items or []]
            for metric, items in (resources or {}).items()}


def resource_differences(runs: Mapping[str, Mapping[str, Iterable[Mapping[str, Any]]] | None]) -> list[str]:
    """How the runs' scoring resources differ (run label -> run.json `resources`): one phrase per metric and
    resource that two runs recorded with different commits or checksums, naming each run's version. Runs that
    recorded nothing (a run.json without `resources`, or a metric they did not score) are left
    out of that resource's comparison."""
    seen: dict[tuple[str, str], dict[str, ResourceRecord]] = {}
    for label, resources in runs.items():
        for metric, records in run_resources(resources).items():
            for record in records:
                seen.setdefault((metric, record.resource), {})[label] = record
    differences = []
    for (metric, resource), by_run in seen.items():
        identities = {record.identity for record in by_run.values()}
        if len(by_run) > 1 and len(identities) > 1:
            differences.append(f"{metric} {resource}: " + ", ".join(f"{label} {record.short()}"
                                                                       for label, record in by_run.items()))
    return differences


def differences_warning(differences: list[str]) -> str:
    """The plain-words warning compare and the leaderboard give when resources differ ("" when none do)."""
    if not differences:
        return ""
    return ("The runs were scored by different versions of the same classifier, embedding or lexicon: "
            + "; ".join(differences) + ". Their scores differ partly because of the instrument, not the models: "
            "score every run with the same weights (--metric-option METRIC.revision=COMMIT, or the same local "
            "folder).")


def resource_lines(resources: Mapping[str, Iterable[Mapping[str, Any]]] | None) -> list[str]:
    """`metric: resource source@commit` lines, one per recorded resource (the report's Run tab, report.md)."""
    return [f"{metric}: {record.resource} {record.short()}" + (f" ({record.note})" if record.note else "")
            for metric, records in run_resources(resources).items() for record in records]
