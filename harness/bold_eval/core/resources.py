"""Find a resource locally or download it once from its pinned upstream address.

Every file the metrics need (lexicons, word lists, embeddings) is resolved the same way:
an explicit path argument, then an environment variable, then the local cache, then the
upstream URL (checksummed, written atomically); `$BOLD_EVAL_HOME` (a folder `bold-eval download` filled) comes
before the cache and turns the downloads off. When all fail, `ResourceNotFoundError`
says which resource, every place that was tried, and the variable or argument to set.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import re
import tempfile
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import BinaryIO

from bold_eval.core.environment import HOME_ENV, HOME_HUB, OFFLINE_ENV, env_flag, home_dir
from bold_eval.core.errors import UserError
from bold_eval.core.storage import WRITE_FAULTS, storage_error, storage_guard


class ResourceNotFoundError(UserError, FileNotFoundError):
    """A model, lexicon, word list or data file is neither local nor downloadable."""

    def __init__(self, resource: str, looked_in: Sequence[str], hint: str):
        self.resource = resource
        self.looked_in = list(looked_in)
        self.hint = hint
        places = "\n".join(f"  - {place}" for place in self.looked_in)
        super().__init__(f"{resource} not found. Looked in:\n{places}\n{hint}")


class MissingExtraError(ResourceNotFoundError):
    """An optional Python package (one of bold-eval's extras) is not installed.

    A `ResourceNotFoundError`, so the harness treats it like a missing model or word list:
    gender polarity falls back to unigram matching, a metric is skipped with this message.
    """

    def __init__(self, module: str, extra: str, purpose: str, error: ImportError):
        self.module = module
        self.extra = extra
        super().__init__(
            f"python package {module.split('.')[0]} (bold-eval's `{extra}` extra, {purpose})",
            [f"import {module} ({error})"],
            f"Install it with `pip install 'bold-eval[{extra}]'` (or `pip install -e '.[{extra}]'` in a checkout).",
        )


def require_extra(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import `module` from an optional dependency, or raise `MissingExtraError` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(module, extra, purpose, error) from error


@dataclass(frozen=True)
class RemoteFile:
    """One upstream file pinned to a commit, with the checksum of that version."""

    resource: str
    filename: str
    url: str
    sha256: str | None = None


def cache_dir() -> Path:
    """`$BOLD_EVAL_CACHE`, else `~/.cache/bold_eval`."""
    return Path(os.environ.get("BOLD_EVAL_CACHE", Path.home() / ".cache" / "bold_eval"))


def path_stamp(path: str | os.PathLike) -> int:
    """Modification time of `path` in ns (-1 when missing), for in-memory cache keys.

    A cache keyed on it loads a file again once it is edited, replaced or created.
    """
    path = Path(path).expanduser()
    return path.stat().st_mtime_ns if path.exists() else -1


def lookup_stamp(
    remote: RemoteFile, *, local: str | os.PathLike | None = None, env_var: str, subdir: str = ""
) -> tuple[tuple[str, int], ...]:
    """(absolute path, `path_stamp`) of every place `resolve_file` would look for `remote`, in its order.

    Changes whenever `local`, `$env_var`, `cache_dir()` or a file there changes, so an in-memory
    cache keyed on it never serves a stale file; it only stats (no checksum, no download).
    """
    found = [path for _, path in _given_places(remote, local, env_var)]
    found += [path for path in (_home_place(remote, subdir),) if path is not None]
    found.append(cache_dir() / subdir / remote.filename)
    return tuple((str(path.resolve()), path_stamp(path)) for path in found)


def hub_cache_dir() -> Path:
    """The huggingface_hub cache models are looked up in, read when called (not when huggingface_hub was imported):
    `$BOLD_EVAL_HOME/hub`, else $HF_HUB_CACHE, else $HF_HOME/hub, else huggingface_hub's default."""
    home = home_dir()
    if home is not None:
        return home / HOME_HUB
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def offline() -> bool:
    """True when the user asked for no network (`BOLD_EVAL_OFFLINE`, `HF_HUB_OFFLINE`, `HF_DATASETS_OFFLINE`;
    the Hugging Face variables read as huggingface_hub reads them: other values are off), and whenever
    `$BOLD_EVAL_HOME` names a prepared folder."""
    return env_flag(OFFLINE_ENV) or home_dir() is not None or any(
        os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}
        for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    with atomic_writer(path) as handle:
        handle.write(data)


@contextlib.contextmanager
def atomic_writer(path: Path, *, sync: bool = False) -> Iterator[BinaryIO]:
    """A binary handle on a temporary file in `path`'s folder, renamed onto `path` when the block ends
    without error (removed otherwise): a file written piece by piece, never held whole in memory, that
    readers still see either old or complete. `sync` flushes it to disk before the rename (a file that
    holds the only copy of hours of generation). A full disk (or quota) while the block writes, and any
    fault of the environment in creating or renaming the file, is a `StorageError` naming `path`."""
    with storage_guard(path.parent, "creating a file in"):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temporary_prefix(path.name), suffix=TEMPORARY_SUFFIX)
    try:
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
                if sync:
                    handle.flush()
                    os.fsync(handle.fileno())
        except OSError as error:  # the block's own writes: only the faults a write raises are named here
            fault = storage_error(error, path) if error.errno in WRITE_FAULTS else None
            if fault is not None:
                raise fault from error
            raise
        with storage_guard(path):
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


TEMPORARY_SUFFIX = ".tmp"


def temporary_prefix(name: str) -> str:
    """`.<name>.<pid>.`: a hidden temporary file of this process (`temporary_owner_alive` reads the pid back, so
    that a later command removes only the leftovers of processes that are gone)."""
    return f".{name}.{os.getpid()}."


def temporary_owner_alive(path: Path) -> bool:
    """Whether the process that made temporary file `path` (`temporary_prefix`) still runs on this machine;
    False for a name without a pid (written before pids were recorded)."""
    parts = path.name.split(".")
    pid = parts[-3] if len(parts) >= 4 else ""
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, and belongs to another user
        return True
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def download(remote: RemoteFile, destination: Path, timeout: float = 60.0) -> Path:
    """Fetch `remote.url` to `destination`, checking its sha256 when one is pinned."""
    with urllib.request.urlopen(remote.url, timeout=timeout) as response:  # noqa: S310 (pinned https URL)
        data = response.read()
    if remote.sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != remote.sha256:
            raise ResourceNotFoundError(
                remote.resource,
                [f"{remote.url} (checksum {got} != pinned {remote.sha256})"],
                "The upstream file changed; point to a local copy instead.",
            )
    atomic_write_bytes(destination, data)
    return destination


def _given_places(
    remote: RemoteFile, local: str | os.PathLike | None, env_var: str
) -> list[tuple[str, Path]]:
    """("local" or "env", path of the file) for `local` and `$env_var`, each the file itself or a
    folder holding it, in lookup order; the cache comes after them."""
    places = []
    for origin, value in (("local", local), ("env", os.environ.get(env_var) or None)):
        if value is not None:
            path = Path(value).expanduser()
            places.append((origin, path / remote.filename if path.is_dir() else path))
    return places


def _home_place(remote: RemoteFile, subdir: str) -> Path | None:
    """Where `bold-eval download` put `remote` in $BOLD_EVAL_HOME (None when it is not set)."""
    home = home_dir()
    return None if home is None else home / subdir / remote.filename


def resolve_file(
    remote: RemoteFile,
    *,
    local: str | os.PathLike | None = None,
    env_var: str,
    argument: str,
    subdir: str = "",
) -> Path:
    """Return a local path to `remote.filename`.

    `local` and `$env_var` may name the file itself or a folder holding it. `argument` is the
    keyword or flag that users pass to point to a local copy; it appears in the error message.
    """
    looked_in: list[str] = []
    places = _given_places(remote, local, env_var)
    for origin, found in places:
        if found.is_file():
            return found
        looked_in.append(f"{argument + '=' if origin == 'local' else '$' + env_var} -> {found} (missing)")
        if origin == "local":  # a path the user named that does not exist is a mistake; never use another copy
            raise ResourceNotFoundError(remote.resource, looked_in,
                                        f"Pass {argument}= a folder holding {remote.filename}, or the file itself "
                                        f"(without {argument}=, ${env_var} is used).")
    if not places:
        looked_in.append(f"${env_var} (not set), {argument}= (not given)")
    prepared = _home_place(remote, subdir)
    if prepared is not None:
        if prepared.is_file() and (remote.sha256 is None or sha256_of(prepared) == remote.sha256):
            return prepared
        looked_in.append(f"${HOME_ENV} -> {prepared} (missing; `bold-eval download` fetches it)")

    cached = cache_dir() / subdir / remote.filename
    if cached.is_file() and (remote.sha256 is None or sha256_of(cached) == remote.sha256):
        return cached
    looked_in.append(f"cache {cached} (missing)")

    hint = (
        f"Set {env_var} to a local copy (a folder holding {remote.filename}, or the file itself), "
        f"or pass {argument}=PATH."
    )
    if offline():
        looked_in.append(f"{remote.url} (not tried: offline mode is on)")
        raise ResourceNotFoundError(remote.resource, looked_in, hint)
    try:
        return download(remote, cached)
    except ResourceNotFoundError:
        raise
    except Exception as error:  # network errors come in many types (URLError, timeout, HTTP 404)
        looked_in.append(f"{remote.url} (download failed: {error})")
        raise ResourceNotFoundError(remote.resource, looked_in, hint) from error


_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_commit(revision: str | None) -> bool:
    return bool(revision) and bool(_COMMIT.match(str(revision)))


def cached_commit(repo_id: str, revision: str | None, hub_cache: str | os.PathLike,
                  repo_type: str = "model") -> str | None:
    """The commit a revision of `repo_id` resolves to in a huggingface_hub cache (its `refs/<revision>` file, or
    the revision itself when it is a commit with a snapshot), else None."""
    repo = Path(hub_cache).expanduser() / f"{repo_type}s--{repo_id.replace('/', '--')}"
    if is_commit(revision):
        return revision if (repo / "snapshots" / str(revision)).is_dir() else None
    ref = repo / "refs" / (revision or "main")
    try:
        commit = ref.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return commit if is_commit(commit) else None


def cached_snapshot(repo_id: str, revision: str | None, hub_cache: str | os.PathLike,
                    repo_type: str = "model") -> Path | None:
    """The snapshot folder of a revision of `repo_id` in a huggingface_hub cache, found without the network and
    without huggingface_hub (whose offline look-ups still ask the Hub for optional files), else None."""
    commit = cached_commit(repo_id, revision, hub_cache, repo_type)
    if commit is None:
        return None
    folder = Path(hub_cache).expanduser() / f"{repo_type}s--{repo_id.replace('/', '--')}" / "snapshots" / commit
    return folder if folder.is_dir() else None


def hub_snapshot(repo_id: str, *, resource: str, revision: str | None = None, repo_type: str = "model",
                 allow_patterns: Sequence[str] | None = None, ignore_patterns: Sequence[str] | None = None,
                 hint: str = "", cache: str | os.PathLike | None = None, local_only: bool | None = None) -> Path:
    """The local folder of `repo_id` at `revision` in the huggingface_hub cache (`cache`, default
    `hub_cache_dir()`): downloaded with `snapshot_download` (files already there are not fetched again), or,
    offline (or with `local_only`), the snapshot the cache already holds. `$HF_ENDPOINT` is read when called. Raises
    `ResourceNotFoundError` naming the repository, where it was looked for and `hint`."""
    from huggingface_hub import snapshot_download

    folder = Path(cache) if cache is not None else hub_cache_dir()
    shown = repo_id if revision is None else f"{repo_id}@{revision}"
    local_only = offline() if local_only is None else local_only
    found = cached_snapshot(repo_id, revision, folder, repo_type) if local_only else None
    if found is not None:
        return found
    try:
        return Path(snapshot_download(
            repo_id, repo_type=repo_type, revision=revision, cache_dir=str(folder), local_files_only=local_only,
            allow_patterns=list(allow_patterns) if allow_patterns else None,
            ignore_patterns=list(ignore_patterns) if ignore_patterns else None,
            endpoint=os.environ.get("HF_ENDPOINT") or None))
    except OSError as error:
        fault = storage_error(error, folder)
        if fault is not None:  # a full disk names the folder, whatever huggingface_hub wrapped
            raise fault from error
        places = [f"Hugging Face cache {folder} for {shown!r}" + (" (missing)" if local_only else "")]
        places.append(f"the Hub, {repo_id}" + (" (not tried: offline mode is on)" if local_only
                                                else f" (download failed: {type(error).__name__}: {error})"))
        raise ResourceNotFoundError(f"{resource} {shown!r}", places, hint or (
            "Fetch it on a machine with network (`bold-eval download --to DIR`) and set BOLD_EVAL_HOME=DIR, "
            "or point to a local copy.")) from error
    except Exception as error:  # huggingface_hub's HTTP and validation errors are not all OSErrors
        raise ResourceNotFoundError(f"{resource} {shown!r}", [f"the Hub, {repo_id} ({type(error).__name__}: "
                                                              f"{error})"], hint or "Check the name and revision.") \
            from error
