"""Word embeddings for Gender-Max and Gender-Wavg (Section 4.5): loading, hard debiasing, caching.

The paper scores words in "the hard debiased Word2Vec embedding" of Bolukbasi et al. (2016),
footnote 7 (github.com/tolga-b/debiaswe). `hard_debias` implements that method for any gensim
`KeyedVectors`; `load_embedding` finds an embedding in this order:

1. the `embedding=` argument: a `KeyedVectors`, a word2vec `.bin`/`.txt` file, a cache folder, or a Hub
   repository `owner/name` holding one of those (`revision=` picks its version);
2. `$BOLD_WORD2VEC` (a file or a cache folder);
3. the debiased GoogleNews vectors under `$BOLD_EVAL_HOME/embeddings/` (`bold-eval download`), then under
   `resources.cache_dir()/embeddings/`;
4. gensim-data's `word2vec-google-news-300`, downloaded once, hard-debiased, cached as arrays.

A cache folder holds `vectors.npy` (float32, one row per word), `vocab.txt` (one word per line,
same order) and `meta.json`; it is read with `np.load(allow_pickle=False)` and memory-mapped, so
no downloaded file is ever unpickled and the 3.6 GB GoogleNews matrix is paged in lazily.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bold_eval.core.environment import home_dir
from bold_eval.core.errors import InputError, UsageError
from bold_eval.core.provenance import ResourceRecord, local_record, snapshot_commit
from bold_eval.core.resources import (
    RemoteFile,
    ResourceNotFoundError,
    cache_dir,
    hub_snapshot,
    offline,
    require_extra,
    resolve_file,
)

# gensim is the `embeddings` extra: without it, importing this module says which extra to install.
if TYPE_CHECKING:
    from gensim.models import KeyedVectors
else:
    KeyedVectors = require_extra("gensim.models", extra="embeddings",
                                 purpose="word2vec for Gender-Max and Gender-Wavg").KeyedVectors

WORD2VEC_ENV = "BOLD_WORD2VEC"
DEBIASWE_ENV = "BOLD_DEBIASWE_DIR"
DEFAULT_GENSIM_MODEL = "word2vec-google-news-300"
DEFAULT_CACHE_NAME = f"{DEFAULT_GENSIM_MODEL}-hard-debiased"
# Folders under the cache and $BOLD_EVAL_HOME: embeddings, and the debiaswe word lists.
EMBEDDING_SUBDIR = "embeddings"
DEBIASWE_SUBDIR = "debiaswe"
CACHE_VECTORS = "vectors.npy"
CACHE_VOCAB = "vocab.txt"
CACHE_META = "meta.json"

# The word lists of Bolukbasi et al. (2016), pinned to one debiaswe commit.
_DEBIASWE_COMMIT = "6bb03ee2a0d7214339e513ca71cd0a99069dc29c"
_DEBIASWE_URL = f"https://raw.githubusercontent.com/tolga-b/debiaswe/{_DEBIASWE_COMMIT}/data/"
DEBIASWE_FILES = {
    "definitional": RemoteFile(
        "debiaswe definitional pairs",
        "definitional_pairs.json",
        _DEBIASWE_URL + "definitional_pairs.json",
        "f2387fdd4ae4d956083ee7594f1401b1ba112914d40a99bb61d481de73db9614",
    ),
    "equalize": RemoteFile(
        "debiaswe equalize pairs",
        "equalize_pairs.json",
        _DEBIASWE_URL + "equalize_pairs.json",
        "b6e7dda64461e7828f8d184a51216a87aefcfc2b726d3691aa15b7acc2a1994c",
    ),
    "gender_specific": RemoteFile(
        "debiaswe gender-specific words",
        "gender_specific_full.json",
        _DEBIASWE_URL + "gender_specific_full.json",
        "300068da1885e9dc8bf2235d987fd0cf5d0b08a6877a0a639ee0060a989bac1f",
    ),
}

# Rows processed at a time when normalizing/projecting, so 3M x 300 never needs a float64 copy.
_CHUNK = 200_000


def load_debiaswe_lists(debiaswe_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """The three debiaswe word lists: `definitional` and `equalize` pairs, `gender_specific` words.

    Looked up in `debiaswe_dir`, then `$BOLD_DEBIASWE_DIR`, then the cache, then GitHub.
    """
    lists: dict[str, Any] = {}
    for key, remote in DEBIASWE_FILES.items():
        path = resolve_file(remote, local=debiaswe_dir, env_var=DEBIASWE_ENV, argument="debiaswe_dir",
                            subdir=DEBIASWE_SUBDIR)
        with open(path, encoding="utf-8") as handle:
            lists[key] = json.load(handle)
    return lists


def _normalize_rows(vectors: np.ndarray) -> None:
    """Scale every row to unit length in place (zero rows stay zero)."""
    for start in range(0, len(vectors), _CHUNK):
        block = vectors[start : start + _CHUNK]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        block /= norms


def gender_direction(keyed_vectors: KeyedVectors, definitional: Sequence[Sequence[str]]) -> np.ndarray:
    """First principal component of the centered definitional pairs (debiaswe's `doPCA`), unit length.

    Each pair (a, b) contributes a - c and b - c with c = (a + b) / 2, on unit-normalized vectors.
    Pairs with a word missing from the vocabulary are skipped; at least one pair must be present.
    """
    rows = []
    for pair in definitional:
        a, b = pair
        if a in keyed_vectors.key_to_index and b in keyed_vectors.key_to_index:
            va, vb = (_unit(keyed_vectors.vectors[keyed_vectors.key_to_index[w]]) for w in (a, b))
            center = (va + vb) / 2
            rows.extend([va - center, vb - center])
    if not rows:
        raise InputError("none of the definitional pairs is in the embedding's vocabulary; cannot find a gender "
                         "direction")
    matrix = np.asarray(rows, dtype=np.float64)
    matrix -= matrix.mean(axis=0)  # PCA centers its input (a no-op here: the rows come in +/- pairs)
    _, _, components = np.linalg.svd(matrix, full_matrices=False)
    direction = components[0]
    return direction / np.linalg.norm(direction)


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector


def hard_debias(
    keyed_vectors: KeyedVectors,
    definitional: Sequence[Sequence[str]],
    equalize: Sequence[Sequence[str]],
    gender_specific: Iterable[str],
) -> KeyedVectors:
    """Hard-debias an embedding (Bolukbasi et al. 2016, as debiaswe's `debias.py`); returns a new object.

    1. Normalize every vector; g = first PCA component of the definitional pairs.
    2. Neutralize: every word not in `gender_specific` loses its projection on g (then unit length).
    3. Equalize: each pair (a, b), in lower, Title and UPPER case when both are in the vocabulary,
       becomes y +/- z g with y their mean minus its g part and z = sqrt(1 - |y|^2), so both are
       unit vectors equally far from every neutral word; a stays on its own side of g.
    """
    vectors = np.array(keyed_vectors.vectors, dtype=np.float32, copy=True)
    _normalize_rows(vectors)
    debiased = _keyed_vectors(list(keyed_vectors.index_to_key), vectors)  # shares `vectors`, edited below
    direction = gender_direction(debiased, definitional)
    direction32 = direction.astype(np.float32)

    specific_set = set(gender_specific)
    index = debiased.key_to_index
    keep = np.zeros(len(vectors), dtype=bool)
    keep[[index[word] for word in specific_set if word in index]] = True
    for start in range(0, len(vectors), _CHUNK):
        block = vectors[start : start + _CHUNK]
        neutral = ~keep[start : start + _CHUNK]
        projection = block[neutral] @ direction32
        block[neutral] -= projection[:, None] * direction32[None, :]
    _normalize_rows(vectors)

    candidates = {
        (transform(a), transform(b))
        for a, b in equalize
        for transform in (str.lower, str.title, str.upper)
    }
    for a, b in sorted(candidates):
        if a not in index or b not in index:
            continue
        va = vectors[index[a]].astype(np.float64)
        vb = vectors[index[b]].astype(np.float64)
        mean = (va + vb) / 2
        y = mean - direction * (mean @ direction)
        z = np.sqrt(max(1.0 - float(y @ y), 0.0))
        if (va - vb) @ direction < 0:
            z = -z
        vectors[index[a]] = z * direction + y
        vectors[index[b]] = -z * direction + y
    _normalize_rows(vectors)
    return debiased


def _keyed_vectors(words: list[str], vectors: np.ndarray) -> KeyedVectors:
    """A KeyedVectors over existing arrays (no copy; `vectors` may be a read-only memory map)."""
    if len(words) != len(vectors):
        raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
    keyed_vectors = KeyedVectors(vector_size=vectors.shape[1], count=0, dtype=vectors.dtype)
    keyed_vectors.index_to_key = words
    keyed_vectors.key_to_index = {word: i for i, word in enumerate(words)}
    keyed_vectors.vectors = vectors
    return keyed_vectors


def is_cache_dir(path: str | os.PathLike) -> bool:
    path = Path(path)
    return path.is_dir() and (path / CACHE_VECTORS).is_file() and (path / CACHE_VOCAB).is_file()


def save_cache(keyed_vectors: KeyedVectors, folder: str | os.PathLike, meta: dict[str, Any] | None = None) -> Path:
    """Write `vectors.npy` + `vocab.txt` + `meta.json` atomically (a temporary folder renamed into place)."""
    folder = Path(folder)
    words = [str(word) for word in keyed_vectors.index_to_key]
    for word in words:
        if "\n" in word or "\r" in word:
            raise InputError(f"word {word!r} contains a line break; it cannot be stored in {CACHE_VOCAB}")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".tmp"))
    try:
        np.save(tmp / CACHE_VECTORS, np.asarray(keyed_vectors.vectors, dtype=np.float32), allow_pickle=False)
        (tmp / CACHE_VOCAB).write_text("\n".join(words), encoding="utf-8")
        (tmp / CACHE_META).write_text(json.dumps(meta or {}, indent=2), encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def load_cache(folder: str | os.PathLike, mmap: bool = True) -> KeyedVectors:
    """Read a cache folder written by `save_cache` (memory-mapped, never unpickled)."""
    folder = Path(folder)
    vectors = np.load(folder / CACHE_VECTORS, mmap_mode="r" if mmap else None, allow_pickle=False)
    text = (folder / CACHE_VOCAB).read_text(encoding="utf-8")
    words = text.split("\n") if text else []
    if vectors.ndim != 2 or len(words) != len(vectors):
        raise InputError(f"corrupt embedding cache {folder}: {len(words)} words for vectors of shape {vectors.shape}")
    return _keyed_vectors(words, vectors)


def load_word2vec(path: str | os.PathLike) -> KeyedVectors:
    """A word2vec file: binary when the name ends in .bin (or .bin.gz), text otherwise."""
    name = Path(path).name.lower()
    binary = name.endswith((".bin", ".bin.gz")) or (name.endswith(".gz") and ".txt" not in name)
    return KeyedVectors.load_word2vec_format(str(path), binary=binary)


def _debiased_cache_for(path: Path, lists: dict[str, Any]) -> Path:
    """Cache folder of the debiased version of a word2vec file (keyed by path, size, mtime, word lists)."""
    stat = path.stat()
    key = json.dumps([str(path.resolve()), stat.st_size, stat.st_mtime_ns, lists], sort_keys=True)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return cache_dir() / EMBEDDING_SUBDIR / f"{path.name}-hard-debiased-{digest}"


def _hard_debias_with(keyed_vectors: KeyedVectors, lists: dict[str, Any]) -> KeyedVectors:
    """`hard_debias` with the three debiaswe lists of `load_debiaswe_lists`."""
    return hard_debias(keyed_vectors, lists["definitional"], lists["equalize"], lists["gender_specific"])


def _cache_debiased(debiased: KeyedVectors, folder: Path, source: str) -> KeyedVectors:
    """Save a freshly debiased embedding; return it memory-mapped from the cache, as later loads see it."""
    save_cache(debiased, folder, {"source": source, "hard_debiased": True, "debiaswe_commit": _DEBIASWE_COMMIT})
    return load_cache(folder)


def _load_path(path: Path, debias: bool, debiaswe_dir: str | os.PathLike | None) -> KeyedVectors:
    if is_cache_dir(path):
        return load_cache(path)  # cache folders are stored as used: debiasing again would be a no-op or a mistake
    if not debias:
        return load_word2vec(path)
    lists = load_debiaswe_lists(debiaswe_dir)
    cached = _debiased_cache_for(path, lists)
    if is_cache_dir(cached):
        return load_cache(cached)
    return _cache_debiased(_hard_debias_with(load_word2vec(path), lists), cached, str(path))


def _download_default(looked_in: list[str]) -> Path:
    """Path of gensim-data's GoogleNews file (downloaded if needed; its loader code is never run)."""
    hint = (
        f"Set {WORD2VEC_ENV} (or pass embedding=) to a word2vec .bin/.txt file, a KeyedVectors "
        "object or a cached debiased embedding folder; or use methods=['unigram'], which needs no embedding."
    )
    if offline():
        looked_in.append(f"gensim-data {DEFAULT_GENSIM_MODEL} (not tried: offline mode is on)")
        raise ResourceNotFoundError("word2vec embedding", looked_in, hint)
    try:
        import gensim.downloader

        return Path(gensim.downloader.load(DEFAULT_GENSIM_MODEL, return_path=True))
    except Exception as error:  # network errors come in many types
        looked_in.append(f"gensim-data {DEFAULT_GENSIM_MODEL} (download failed: {error})")
        raise ResourceNotFoundError("word2vec embedding", looked_in, hint) from error


def load_embedding(
    embedding: KeyedVectors | str | os.PathLike | None = None,
    *,
    debias: bool | None = None,
    debiaswe_dir: str | os.PathLike | None = None,
    revision: str | None = None,
) -> KeyedVectors:
    """The embedding the embedding-based gender polarity metrics score words in (`resolve_embedding`, whose
    record of the files is dropped here)."""
    return resolve_embedding(embedding, debias=debias, debiaswe_dir=debiaswe_dir, revision=revision)[0]


def looks_like_hub_id(value: str) -> bool:
    """`owner/name`: one slash, no path-like start; tried on the Hub when no such local path exists."""
    return value.count("/") == 1 and not value.startswith((".", "~", os.sep)) and "\\" not in value \
        and all(part.strip() for part in value.split("/"))


# Files of a Hub repository holding an embedding: a cache folder's three files, or word2vec files.
HUB_PATTERNS = (CACHE_VECTORS, CACHE_VOCAB, CACHE_META, "*.bin", "*.bin.gz", "*.txt", "*.txt.gz", "*.md")


def _hub_embedding(repo_id: str, revision: str | None) -> tuple[Path, ResourceRecord]:
    """A Hub repository's embedding: its snapshot holds a cache folder (vectors.npy + vocab.txt) or one word2vec
    file; the record names the commit."""
    folder = hub_snapshot(repo_id, resource="word2vec embedding", revision=revision, allow_patterns=HUB_PATTERNS,
                          hint=f"Set {WORD2VEC_ENV} or embedding= to a local word2vec file or cache folder, or fetch "
                               "the repository beforehand (`bold-eval download`) and set BOLD_EVAL_HOME.")
    record = ResourceRecord("word2vec embedding", repo_id, revision=revision, commit=snapshot_commit(folder))
    if is_cache_dir(folder):
        return folder, record
    files = sorted(path for path in folder.iterdir() if path.name.lower().endswith((".bin", ".bin.gz", ".txt.gz"))
                   or (path.suffix == ".txt" and path.name != CACHE_VOCAB))
    if len(files) != 1:
        raise ResourceNotFoundError(
            f"word2vec embedding {repo_id!r}", [f"{folder} ({len(files)} word2vec files: "
                                                f"{[path.name for path in files]})"],
            f"The repository must hold a cache folder's {CACHE_VECTORS} + {CACHE_VOCAB}, or exactly one word2vec "
            ".bin/.txt file.")
    return files[0], record


def resolve_embedding(
    embedding: KeyedVectors | str | os.PathLike | None = None,
    *,
    debias: bool | None = None,
    debiaswe_dir: str | os.PathLike | None = None,
    revision: str | None = None,
) -> tuple[KeyedVectors, ResourceRecord | None]:
    """The embedding the embedding-based gender polarity metrics score words in, and the record of its files
    (run.json's `resources`: the checksum of a file or cache folder, the commit of a Hub repository; None for
    a `KeyedVectors` given in memory).

    `embedding`: a KeyedVectors, a word2vec `.bin`/`.txt` path, a cache folder, or the id `owner/name` of a Hub
    repository holding either (at `revision`); default `$BOLD_WORD2VEC`, then `$BOLD_EVAL_HOME` and the cache,
    then the hard-debiased GoogleNews vectors (Section 4.5, footnote 7), downloaded and debiased once.
    `debias`: hard-debias the given embedding (cached per file); None means yes for the default GoogleNews
    vectors and no for an embedding you pass, which is used as it is (e.g. debiaswe's published
    GoogleNews-vectors-negative300-hard-debiased.bin).
    """
    if isinstance(embedding, KeyedVectors):
        if revision is not None:
            raise UsageError("revision= names a version of an embedding on the Hub; the embedding was given in memory")
        if debias:
            return _hard_debias_with(embedding, load_debiaswe_lists(debiaswe_dir)), None
        return embedding, None

    looked_in: list[str] = []
    if embedding is not None:
        origin, value = "embedding=", embedding
    else:
        origin, value = f"${WORD2VEC_ENV}", os.environ.get(WORD2VEC_ENV) or None
    if value is not None:
        return _given_embedding(value, origin, debias, debiaswe_dir, revision)
    if revision is not None:
        raise UsageError(f"revision={revision!r} names a version of an embedding on the Hub; pass embedding=owner/name "
                         "(a Hub repository) with it, or leave revision out")
    looked_in.append(f"${WORD2VEC_ENV} (not set), embedding= (not given)")

    default_note = f"gensim-data {DEFAULT_GENSIM_MODEL}, hard-debiased"
    if debias is not False:
        for cached in default_embedding_places():
            if is_cache_dir(cached):
                return load_cache(cached), local_record("word2vec embedding", cached, note=default_note)
            looked_in.append(f"{cached} (missing)")
    cached = cache_dir() / EMBEDDING_SUBDIR / DEFAULT_CACHE_NAME
    source = _download_default(looked_in)
    keyed_vectors = load_word2vec(source)
    if debias is False:
        return keyed_vectors, local_record("word2vec embedding", source, note=f"gensim-data {DEFAULT_GENSIM_MODEL}")
    return prepare_default_embedding(keyed_vectors, cached, debiaswe_dir), local_record(
        "word2vec embedding", cached, note=default_note)


def _given_embedding(value: str | os.PathLike, origin: str, debias: bool | None,
                     debiaswe_dir: str | os.PathLike | None,
                     revision: str | None) -> tuple[KeyedVectors, ResourceRecord]:
    """The embedding `origin` (embedding= or $BOLD_WORD2VEC) names: a file, a cache folder or a Hub repository."""
    note = "hard-debiased here" if debias else None
    path = Path(value).expanduser()
    if path.is_file() or is_cache_dir(path):
        if revision is not None:
            raise UsageError(f"revision={revision!r} names a version of an embedding on the Hub, but {origin} "
                             f"is the local {path}; leave revision out")
        return _load_path(path, bool(debias), debiaswe_dir), local_record("word2vec embedding", path, note=note)
    if not path.exists() and looks_like_hub_id(str(value)):
        found, record = _hub_embedding(str(value), revision)
        return _load_path(found, bool(debias), debiaswe_dir), dataclasses.replace(record, note=note)
    state = f"folder without {CACHE_VECTORS} + {CACHE_VOCAB}" if path.is_dir() else "missing"
    # An explicit source that does not exist is a mistake; never fall back to a silent download.
    raise ResourceNotFoundError(
        "word2vec embedding",
        [f"{origin} -> {path} ({state})"],
        f"Point {WORD2VEC_ENV} or embedding= to a word2vec .bin/.txt file, a cache folder "
        f"({CACHE_VECTORS} + {CACHE_VOCAB}) or a Hub repository owner/name holding one.",
    )


def default_embedding_places() -> list[Path]:
    """Where the hard-debiased GoogleNews vectors are looked for: `$BOLD_EVAL_HOME`, then the cache."""
    home = home_dir()
    places = [home / EMBEDDING_SUBDIR / DEFAULT_CACHE_NAME] if home is not None else []
    return [*places, cache_dir() / EMBEDDING_SUBDIR / DEFAULT_CACHE_NAME]


def prepare_default_embedding(keyed_vectors: KeyedVectors | None, folder: Path,
                              debiaswe_dir: str | os.PathLike | None = None) -> KeyedVectors:
    """Hard-debias the GoogleNews vectors (downloaded from gensim-data when `keyed_vectors` is None) and save
    them as the cache folder `folder` (`bold-eval download` writes it into its folder)."""
    if keyed_vectors is None:
        keyed_vectors = load_word2vec(_download_default([]))
    lists = load_debiaswe_lists(debiaswe_dir)
    debiased = _hard_debias_with(keyed_vectors, lists)
    del keyed_vectors  # the raw 3.6 GB matrix is not needed while the debiased one is saved
    return _cache_debiased(debiased, folder, f"gensim-data {DEFAULT_GENSIM_MODEL}")
