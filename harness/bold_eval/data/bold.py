"""Loading and exporting BOLD (anonymization is in `bold_eval.data.anonymize`).

`load_bold` runs the dataset script `datasets/bold/bold.py` (the single definition of the
rows, the Table 3 categories and the upstream files) directly through its builder class,
because `datasets` >= 4 does not run loading scripts. The script is loaded on first use,
not at import. `export_dataset` writes the same rows as a Hub-ready parquet folder.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import datasets
from datasets.exceptions import DatasetGenerationError

from bold_eval.core.environment import ALLOW_MODIFIED_ENV, HOME_BOLD, HOME_ENV, env_flag, home_dir
from bold_eval.core.errors import DataMismatchError, InputError, UsageError
from bold_eval.core.fetching import PinnedFile
from bold_eval.core.paths import dataset_script_dir
from bold_eval.core.resources import RemoteFile, ResourceNotFoundError, cache_dir, offline

_SCRIPT_MODULE = "_bold_eval_dataset.bold"

# The dataset script's public constants, served by this module's `__getattr__` on first use.
_SCRIPT_CONSTANTS = frozenset(
    {"DOMAINS", "PROFESSION_CATEGORIES", "DATA_DIR_ENV", "FEATURES", "UPSTREAM_COMMIT", "UPSTREAM_URL",
     "HOMEPAGE", "LICENSE", "DESCRIPTION", "CITATION"}
)


@functools.cache
def dataset_script() -> ModuleType:
    """The dataset script `datasets/bold/bold.py` as a module, run on first call (not at import).

    Its public constants (DOMAINS, PROFESSION_CATEGORIES, FEATURES, DATA_DIR_ENV, UPSTREAM_COMMIT,
    HOMEPAGE, ...) are the one source of truth for the data; read them as `bold_eval.data.bold.DOMAINS`.
    """
    path = dataset_script_dir() / "bold.py"
    spec = importlib.util.spec_from_file_location(_SCRIPT_MODULE, path)
    assert spec is not None and spec.loader is not None  # a .py file always has a spec and a loader
    module = importlib.util.module_from_spec(spec)
    # datasets re-imports the builder's module by name (streaming support), so register it.
    sys.modules[_SCRIPT_MODULE] = module
    spec.loader.exec_module(module)
    return module


def __getattr__(name: str) -> Any:
    """`DOMAINS`, `CONFIGS` ("all" and the domains), `FEATURES`, ...: the dataset script's constants,
    loaded lazily so that importing bold_eval.data.bold runs no script."""
    if name == "CONFIGS":
        return ("all", *dataset_script().DOMAINS)
    if name in _SCRIPT_CONSTANTS:
        return getattr(dataset_script(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- loading


def _config_domains(config: str) -> tuple[str, ...]:
    domains = dataset_script().DOMAINS
    if config != "all" and config not in domains:
        raise UsageError(f"unknown BOLD config {config!r}; valid configs: {', '.join(('all', *domains))}")
    return domains if config == "all" else (config,)


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local BOLD folder: `data_dir`, else `$BOLD_DATA_DIR`, else `$BOLD_EVAL_HOME/bold` (`bold-eval
    download`), else None (download upstream)."""
    if data_dir is not None:
        return Path(data_dir).expanduser().resolve()
    env = dataset_script().DATA_DIR_ENV
    if os.environ.get(env):
        return Path(os.environ[env]).expanduser().resolve()
    home = home_dir()
    return home / HOME_BOLD if home is not None else None


def _origin(data_dir: str | os.PathLike | None) -> str:
    """Where `resolve_data_dir` found the folder, as messages name it."""
    if data_dir is not None:
        return "data_dir="
    env = dataset_script().DATA_DIR_ENV
    return f"${env}" if os.environ.get(env) else f"${HOME_ENV} ({HOME_BOLD}/)"


def bold_downloads(domains: Sequence[str] | None = None) -> tuple[PinnedFile, ...]:
    """What `bold-eval download` fetches of BOLD: the prompts and Wikipedia files of `domains` (default all),
    pinned to the upstream commit and checksums, into `$BOLD_EVAL_HOME/bold/` in the upstream layout."""
    script = dataset_script()
    return tuple(PinnedFile(RemoteFile(f"BOLD file {relative}", relative, script.UPSTREAM_URL + relative,
                                       script.SHA256[relative]), HOME_BOLD)
                 for domain in (domains or script.DOMAINS) for relative in script.source_files(domain))


def _check_local_files(folder: Path, domains: Sequence[str], origin: str) -> list[Path]:
    script = dataset_script()
    files = [folder / relative for domain in domains for relative in script.source_files(domain)]
    for file in files:
        if not file.is_file():
            relative = file.relative_to(folder).as_posix()
            raise ResourceNotFoundError(
                f"BOLD file {relative}",
                [f"{origin} -> {folder} (no {relative} in this folder)"],
                f"Point {script.DATA_DIR_ENV} or data_dir= to a folder with the upstream layout "
                f"(prompts/<domain>_prompt.json, wikipedia/<domain>_wiki.json), e.g. a clone of "
                f"{script.HOMEPAGE}; or unset both to download commit {script.UPSTREAM_COMMIT} (`bold-eval download "
                f"--to DIR` fetches them into $BOLD_EVAL_HOME's bold/ beforehand).",
            )
    return files


def _cache_hash(files: Iterable[Path]) -> str:
    """Cache key part that changes with the script and with the local files' size and mtime,
    so an edited data folder never returns stale rows (the folder path is in the config id)."""
    digest = hashlib.sha256((dataset_script_dir() / "bold.py").read_bytes())
    for file in files:
        stat = file.stat()
        digest.update(f"{file}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _download_unavailable(tried: str) -> ResourceNotFoundError:
    """The error for "no local folder and the pinned upstream files could not be had"."""
    script = dataset_script()
    return ResourceNotFoundError(
        "BOLD prompts and Wikipedia sentences",
        [f"data_dir= (not given), ${script.DATA_DIR_ENV} (not set)", tried],
        f"Set {script.DATA_DIR_ENV} to a local copy of {script.HOMEPAGE} (prompts/ and wikipedia/), "
        "or pass data_dir=PATH.",
    )


def _prepare(builder: datasets.DatasetBuilder, local: bool) -> None:
    """Build the Arrow cache, surfacing the script's own errors (they name the file and key)."""
    upstream = dataset_script().UPSTREAM_URL
    if not local and not Path(builder.cache_dir, "dataset_info.json").is_file() and offline():
        raise _download_unavailable(f"cache {builder.cache_dir} (missing); {upstream} (not tried: offline mode is on)")
    try:
        builder.download_and_prepare()
    except DatasetGenerationError as error:
        if isinstance(error.__cause__, ValueError):  # the script's own errors name the file and key
            raise InputError(str(error.__cause__)) from None
        raise
    except Exception as error:
        # A local folder's errors already name their file; a checksum mismatch is a ValueError.
        if local or isinstance(error, ValueError):
            raise
        raise _download_unavailable(f"{upstream} (download failed: {error})") from error




def allow_modified_data(allow: bool | None = None) -> bool:
    """`allow`, else $BOLD_ALLOW_MODIFIED_DATA (1/true/yes) — whether a local BOLD folder may differ
    from the pinned upstream files."""
    if allow is not None:
        return bool(allow)
    return env_flag(ALLOW_MODIFIED_ENV)


@functools.lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a file, cached per (path, size, mtime) so repeated loads hash it once."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def allowed_modifications(data_dir: str | os.PathLike | None, allow: bool | None) -> list[str] | None:
    """The local BOLD files that differ from the pinned release, when the user allowed them (`allow`, else
    $BOLD_ALLOW_MODIFIED_DATA): what run.json's `modified_data` records; None otherwise."""
    return (modified_files(data_dir) or None) if allow_modified_data(allow) else None


def modified_files(data_dir: str | os.PathLike | None = None, domains: Sequence[str] | None = None) -> list[str]:
    """The files of a local BOLD folder (`data_dir`, else $BOLD_DATA_DIR) whose sha256 differs from
    the pinned upstream release (the dataset script's SHA256); [] for a download or a pristine copy."""
    folder = resolve_data_dir(data_dir)
    if folder is None:
        return []
    script = dataset_script()
    changed = []
    for domain in domains or script.DOMAINS:
        for relative in script.source_files(domain):
            file = folder / relative
            if file.is_file():
                stat = file.stat()
                if _file_sha256(str(file), stat.st_size, stat.st_mtime_ns) != script.SHA256[relative]:
                    changed.append(relative)
    return changed


def _check_pinned(folder: Path, domains: Sequence[str], rows: int, origin: str) -> None:
    """Refuse a local folder whose files differ from the pinned release (a dropped group, a file
    holding `{}`): a run would silently evaluate fewer prompts than BOLD's Table 1 has."""
    changed = modified_files(folder, domains)
    if changed:
        script = dataset_script()
        raise DataMismatchError(
            f"the BOLD file(s) {', '.join(str(folder / name) for name in changed)} ({origin}) differ from the "
            f"upstream release (commit {script.UPSTREAM_COMMIT}, sha256 in datasets/bold/bold.py); they give "
            f"{rows} prompts for {', '.join(domains)}. Restore the upstream files, or pass --allow-modified-data "
            f"(allow_modified=True, ${ALLOW_MODIFIED_ENV}=1) to evaluate modified data; run.json and the report "
            "then say so."
        )


def load_bold(config: str = "all", data_dir: str | os.PathLike | None = None,
              allow_modified: bool | None = None) -> datasets.Dataset:
    """BOLD's `test` split for one config (`all` or a domain) as a `datasets.Dataset`.

    Rows are in config domain order, then upstream group, name and list order. The data comes
    from `data_dir`, else `$BOLD_DATA_DIR`, else the pinned upstream commit (checksummed).
    A local folder must hold the pinned files too (sha256), unless `allow_modified`
    (default $BOLD_ALLOW_MODIFIED_DATA): then only its structure is checked, and a domain
    without prompts is still an error. The prepared Arrow table is cached under
    `bold_eval.core.resources.cache_dir()/datasets`.
    """
    domains = _config_domains(config)
    folder = resolve_data_dir(data_dir)
    files: list[Path] = []
    if folder is not None:
        origin = _origin(data_dir)
        files = _check_local_files(folder, domains, origin)
    builder = dataset_script().Bold(
        config_name=config,
        data_dir=str(folder) if folder is not None else None,
        cache_dir=str(cache_dir() / "datasets"),
        hash=_cache_hash(files),
    )
    _prepare(builder, local=folder is not None)
    dataset = builder.as_dataset(split="test")
    if folder is not None and not allow_modified_data(allow_modified):
        _check_pinned(folder, domains, len(dataset), origin)
    return dataset


# --------------------------------------------------------------------------- export


def profession_categories() -> tuple[str, ...]:
    """Table 3 profession super-groups (Section 6.1.1) in the paper's order, from the dataset script."""
    from bold_eval.data.bold import dataset_script

    return tuple(dataset_script().PROFESSION_CATEGORIES)


# Prompts per domain in BOLD (paper Table 1; 23,679 in all): what a run's coverage is measured against.
BOLD_PROMPTS: dict[str, int] = {
    "profession": 10195,
    "gender": 3204,
    "race": 7657,
    "religious_ideology": 639,
    "political_ideology": 1984,
}


# Pairs the paper compares: (domain, group a, group b); differences are a minus b.
GENDER_PAIR = ("gender", "American_actors", "American_actresses")  # male vs female, Section 6.1.2, Table 4


RACE_PAIR = ("race", "African_Americans", "European_Americans")  # Table 5 regard columns


RELIGION_PAIR = ("religious_ideology", "christianity", "islam")  # Table 6


PAPER_PAIRS = (GENDER_PAIR, RACE_PAIR, RELIGION_PAIR)
