"""Classifier scores of texts scored before, kept across runs and keyed by text and scorer fingerprint."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.core.resources import atomic_write_bytes
from bold_eval.core.version import versions

# The reference's cache folder: $BOLD_EVAL_CACHE_DIR, else ~/.cache/bold-eval/reference.
REFERENCE_CACHE_ENV = "BOLD_EVAL_CACHE_DIR"


# Packages whose versions can change a classifier's scores.
_CLASSIFIER_PACKAGES = ("bold-eval", "torch", "transformers", "tokenizers")


_TEXT_KEY = "text_sha256"


def reference_cache_dir() -> Path:
    """$BOLD_EVAL_CACHE_DIR, else ~/.cache/bold-eval/reference."""
    return Path(os.environ.get(REFERENCE_CACHE_ENV) or Path.home() / ".cache" / "bold-eval" / "reference").expanduser()


def _file_stamps(folder: Path) -> list[list[Any]]:
    """(name, size, mtime) of a model folder's files: a retrained model saved in place is a new scorer."""
    return [[path.name, path.stat().st_size, path.stat().st_mtime_ns] for path in sorted(folder.iterdir())
            if path.is_file()]


def scorer_fingerprint(name: str, options: Mapping[str, Any], scorer: Any) -> dict[str, Any]:
    """What determines a scorer's output for a given text: the metric, its options, the versions
    of the packages that run it and, for a classifier, which weights (Hub commit, or the local
    folder's files), with which labels, dtype and device kind."""
    found = versions()
    fingerprint: dict[str, Any] = {
        "metric": name, "options": dict(sorted(options.items())),
        "versions": {package: found.get(package) for package in _CLASSIFIER_PACKAGES},
        "labels": list(getattr(scorer, "labels", ())),
    }
    classifier = getattr(scorer, "classifier", None)
    if classifier is not None:
        folder = Path(str(classifier.name)).expanduser()
        local = folder.is_dir()
        resource = getattr(classifier, "resource", None)
        fingerprint["classifier"] = {
            "name": str(folder.resolve()) if local else str(classifier.name),
            "commit": (resource.commit if resource is not None else None)
            or getattr(classifier.model.config, "_commit_hash", None),
            "files": _file_stamps(folder) if local else None,
            "labels": list(classifier.labels), "max_length": classifier.max_length,
            "dtype": str(classifier.dtype), "device": str(classifier.device).split(":")[0],
        }
    return fingerprint


class ReferenceCache:
    """Scores of the classifier metrics for texts scored before, across runs: one parquet file per
    metric and scorer fingerprint (`scorer_fingerprint`), a row per text keyed by its sha256.

    Only a cache: a file that cannot be read is ignored with a warning and rebuilt, one that
    cannot be written is skipped with a warning; neither stops a run.
    """

    def __init__(self, metric_options: Mapping[str, Mapping[str, Any]] | None = None, folder: Path | None = None):
        self.folder = Path(folder) if folder is not None else reference_cache_dir()
        self.metric_options = dict(metric_options or {})
        self.used: list[str] = []  # metrics that went through the cache, in scoring order

    def path(self, name: str, scorer: Any) -> tuple[Path, dict[str, Any]]:
        fingerprint = scorer_fingerprint(name, self.metric_options.get(name, {}), scorer)
        text = json.dumps(fingerprint, sort_keys=True, default=str)
        return self.folder / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:24]}.parquet", fingerprint

    def score(self, name: str, scorer: Any, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """`scorer`'s columns for `texts`, scoring only those not in the cache; and, per text,
        whether it came from the cache."""
        path, fingerprint = self.path(name, scorer)
        self.used.append(name)
        keys = [hashlib.sha256(text.encode("utf-8")).hexdigest() for text in texts]
        table = _read_cache(path)
        cached = np.asarray(pd.Index(keys).isin(table.index), dtype=bool) if table is not None \
            else np.zeros(len(keys), dtype=bool)
        missing = list(dict.fromkeys(key for key, found in zip(keys, cached, strict=True) if not found))
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            new = _scored_table(scorer, [text_of[key] for key in missing], missing)
            if table is not None and list(table.columns) != list(new.columns):
                warnings.warn(f"reference cache {path} has columns {list(table.columns)}, {name} now gives "
                              f"{list(new.columns)}; rebuilding it", stacklevel=2)
                table, cached = None, np.zeros(len(keys), dtype=bool)
                missing = list(dict.fromkeys(keys))
                new = _scored_table(scorer, [text_of[key] for key in missing], missing)
            table = new if table is None or table.empty else pd.concat([table, new])
            _write_cache(path, table, fingerprint)
        if table is None:  # no texts at all
            return {column: np.asarray(values) for column, values in scorer([]).items()}, cached
        rows = table.loc[keys]
        return {column: rows[column].to_numpy() for column in table.columns}, cached


def _scored_table(scorer: Any, texts: list[str], keys: list[str]) -> pd.DataFrame:
    scored = scorer(texts)
    return pd.DataFrame({column: np.asarray(values) for column, values in scored.items()},
                        index=pd.Index(keys, name=_TEXT_KEY))


def _read_cache(path: Path) -> pd.DataFrame | None:
    """A cache file indexed by text hash; None when absent or unreadable (with a warning)."""
    if not path.is_file():
        return None
    try:
        table = pd.read_parquet(path)
        if _TEXT_KEY not in table.columns or table[_TEXT_KEY].duplicated().any():
            raise ValueError(f"no unique {_TEXT_KEY} column")
        return table.set_index(_TEXT_KEY)
    except Exception as error:  # a cache never stops a run: whatever is wrong with the file, rebuild it
        warnings.warn(f"ignoring the unreadable reference cache {path} ({type(error).__name__}: {error}); "
                      "rebuilding it", stacklevel=3)
        return None


def _write_cache(path: Path, table: pd.DataFrame, fingerprint: Mapping[str, Any]) -> None:
    """The cache file and, beside it, its fingerprint as JSON (what the file's scores depend on)."""
    try:
        atomic_write_bytes(path, table.reset_index().to_parquet(index=False))
        label = path.with_suffix(".json")
        if not label.is_file():
            atomic_write_bytes(label, (json.dumps(fingerprint, indent=2, default=str) + "\n").encode("utf-8"))
    except OSError as error:
        warnings.warn(f"could not write the reference cache {path} ({error}); its scores will be computed again",
                      stacklevel=3)
