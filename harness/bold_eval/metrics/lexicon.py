"""Word-level psycholinguistic norms (Section 4.4): the Warriner VAD + BE5 lexicon, or any table like it.

The paper's eight variables are valence, arousal and dominance (VAD, rated 1-9 with 5 neutral)
and joy, anger, sadness, fear and disgust (BE5, rated 1-5 with 1 neutral). The default lexicon
joins Warriner et al. (2013)'s VAD ratings of 13,915 English lemmas with the BE5 ratings that
Buechel and Hahn (2018, EmoMap) derived for the same words. Any table with a word column and
the eight variables can be used instead (e.g. MEmoLon's English file, or the output of
`bold_eval.metrics.lexicon_extension.extend_lexicon`); `COLUMN_ALIASES` lists the accepted names.

Section 4.4 scales VAD to [-1, 1] and BE5 to [0, 1] so that 0 is neutral for every variable;
`Lexicon.values` holds the scaled norms, one row per word.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np
import pandas as pd

from bold_eval.core.errors import InputError, UsageError
from bold_eval.core.provenance import ResourceRecord, local_record
from bold_eval.core.resources import RemoteFile, ResourceNotFoundError, resolve_file

VAD = ("valence", "arousal", "dominance")
BE5 = ("joy", "anger", "sadness", "fear", "disgust")
VARIABLES = VAD + BE5

# Rating scales of the source norms (Section 4.4): VAD 1..9 (5 neutral), BE5 1..5 (1 neutral).
RAW_SCALES: dict[str, tuple[float, float]] = {**{v: (1.0, 9.0) for v in VAD}, **{v: (1.0, 5.0) for v in BE5}}

# Section 4.4 puts 0 at neutral, per variable in VARIABLES order: VAD is bipolar, (x - 5) / 4 in
# [-1, 1]; BE5 unipolar, (x - 1) / 4 in [0, 1].
_RAW_NEUTRAL = np.array([5.0] * len(VAD) + [1.0] * len(BE5))
_RAW_UNIT = 4.0
SCALED_LOW = np.array([-1.0] * len(VAD) + [0.0] * len(BE5))
SCALED_HIGH = 1.0

LEXICON_ENV = "BOLD_LEXICON_DIR"
LEXICON_ARGUMENT = "lexicon_dir"

WARRINER_VAD = RemoteFile(
    resource="Warriner et al. (2013) VAD norms (Ratings_Warriner_et_al.csv, JULIELab/XANEW)",
    filename="Ratings_Warriner_et_al.csv",
    url="https://raw.githubusercontent.com/JULIELab/XANEW/87a6d970161accd70f8856ae3d8795d54c89938e/Ratings_Warriner_et_al.csv",
    sha256="78ac8107c78e116bb96538fae4faa47281a155f5f8fe39f30bbc6ea3db05b446",
)
WARRINER_BE5 = RemoteFile(
    resource="BE5 ratings of the Warriner words (Warriner_BE.tsv, JULIELab/EmoMap)",
    filename="Warriner_BE.tsv",
    url=(
        "https://raw.githubusercontent.com/JULIELab/EmoMap/4855654c5dfa60c3b595943d34ea03ddd03a53f1/"
        "coling18/main/lexicon_creation/lexicons/Warriner_BE.tsv"
    ),
    sha256="fe7d2d99755fb8e8bdc6426ca6f1e0f570eca3a4bf43afc8f0eb94d594d4ed26",
)

WARRINER_FILES = (WARRINER_VAD, WARRINER_BE5)
# Their folder under the cache and $BOLD_EVAL_HOME.
LEXICON_SUBDIR = "lexicons"

# Accepted column names (matched case-insensitively) for each canonical column. The first
# names are ours; then Warriner's (V.Mean.Sum, ...), EmoMap's (Joy, ...), MEmoLon's
# (word, valence, ..., disgust) and the short forms used in NRC-VAD-style files.
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "word": ("word", "words", "term", "lemma", "token", "english"),
    "valence": ("valence", "v.mean.sum", "v", "val", "pleasure"),
    "arousal": ("arousal", "a.mean.sum", "a", "aro"),
    "dominance": ("dominance", "d.mean.sum", "d", "dom"),
    "joy": ("joy", "happiness"),
    "anger": ("anger",),
    "sadness": ("sadness", "sad"),
    "fear": ("fear",),
    "disgust": ("disgust",),
}

LexiconSource = Union["Lexicon", pd.DataFrame, str, os.PathLike, None]


def scale_norms(raw: np.ndarray) -> np.ndarray:
    """Map raw ratings [n, 8] (VAD 1-9, BE5 1-5) to Section 4.4's scales: VAD (x-5)/4 in [-1, 1],
    BE5 (x-1)/4 in [0, 1]."""
    return (np.asarray(raw, dtype=np.float64) - _RAW_NEUTRAL) / _RAW_UNIT


def unscale_norms(scaled: np.ndarray) -> np.ndarray:
    """Inverse of `scale_norms`: back to VAD 1-9 and BE5 1-5."""
    return np.asarray(scaled, dtype=np.float64) * _RAW_UNIT + _RAW_NEUTRAL


def clip_scaled(values: np.ndarray) -> np.ndarray:
    """Clip scaled norms [n, 8] to Section 4.4's ranges (VAD [-1, 1], BE5 [0, 1])."""
    return np.clip(values, SCALED_LOW, SCALED_HIGH)


def canonical_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Return `frame` reduced to the columns `word` + VARIABLES, renamed from any name in COLUMN_ALIASES.

    Raises ValueError listing the missing variables and the names accepted for them.
    """
    by_lower: dict[str, str] = {}
    for column in frame.columns:
        by_lower.setdefault(str(column).strip().lower(), column)
    chosen: dict[str, str] = {}
    missing: list[str] = []
    for canonical, aliases in COLUMN_ALIASES.items():
        match = next((by_lower[alias] for alias in aliases if alias in by_lower), None)
        if match is None:
            missing.append(f"{canonical} (any of: {', '.join(aliases)})")
        else:
            chosen[canonical] = match
    if missing:
        raise InputError(
            "lexicon table lacks column(s): " + "; ".join(missing) + f". Its columns are: {list(frame.columns)}"
        )
    return frame[[chosen[c] for c in COLUMN_ALIASES]].set_axis(list(COLUMN_ALIASES), axis=1)


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a csv/tsv lexicon file (separator guessed from the header line)."""
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        header = handle.readline()
    sep = "\t" if "\t" in header else ","
    return pd.read_csv(path, sep=sep, keep_default_na=False, na_values=[""])


def warriner_files(lexicon_dir: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """The local paths of the Warriner VAD and BE5 files: from `lexicon_dir`, else `$BOLD_LEXICON_DIR`, else
    `$BOLD_EVAL_HOME`, else the cache, else downloaded from the pinned upstream commits."""
    return tuple(resolve_file(remote, local=lexicon_dir, env_var=LEXICON_ENV, argument=LEXICON_ARGUMENT,
                              subdir=LEXICON_SUBDIR) for remote in WARRINER_FILES)  # type: ignore[return-value]


def load_warriner(lexicon_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Warriner et al. (2013) VAD joined with EmoMap's BE5 ratings of the same words, on raw scales.

    Files come from `warriner_files(lexicon_dir)`. Only words rated in both files are kept (an inner join on the
    word).
    """
    return _join_warriner(*warriner_files(lexicon_dir))


def _join_warriner(vad_path: Path, be5_path: Path) -> pd.DataFrame:
    # keep_default_na=False: "null", "nan" and "na" are rated words, not missing values.
    vad = pd.read_csv(vad_path, usecols=["Word", "V.Mean.Sum", "A.Mean.Sum", "D.Mean.Sum"], keep_default_na=False)
    be5 = pd.read_csv(be5_path, sep="\t", keep_default_na=False)
    joined = vad.merge(be5, on="Word", how="inner", validate="one_to_one")
    return canonical_columns(joined)


@dataclass(frozen=True)
class Lexicon:
    """Scaled norms: `values[index[word]]` is the word's 8 variables (VAD in [-1, 1], BE5 in [0, 1])."""

    words: np.ndarray  # object array of lowercase words
    values: np.ndarray  # float64 [n_words, 8], columns in VARIABLES order, Section 4.4 scales
    source: str = "custom"
    index: dict[str, int] = field(default=None, repr=False)  # type: ignore[arg-type]
    # The files it was read from, with their checksums (run.json's `resources`); () for a table given in memory.
    resources: tuple[ResourceRecord, ...] = ()

    def __post_init__(self) -> None:
        if self.index is None:
            object.__setattr__(self, "index", {word: i for i, word in enumerate(self.words)})

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def to_frame(self, scaled: bool = False) -> pd.DataFrame:
        """The lexicon as a table `word` + VARIABLES, on raw scales unless `scaled`."""
        values = self.values if scaled else unscale_norms(self.values)
        frame = pd.DataFrame(values, columns=list(VARIABLES))
        frame.insert(0, "word", self.words)
        return frame

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, scaled: bool = False, source: str = "custom") -> Lexicon:
        """Build from a table with a word column and the 8 variables (names: COLUMN_ALIASES).

        `scaled=False` (default) means raw ratings (VAD 1-9, BE5 1-5, as in Warriner, EmoMap and
        MEmoLon); `scaled=True` means already on Section 4.4's scales. Values slightly off the scale
        are clipped to it (see below). Words are lowercased; when
        two rows give the same lowercase word, the first row wins. Raises ValueError for missing
        columns, empty/missing words, non-numeric or missing ratings, or ratings far off the scale.
        """
        table = canonical_columns(frame)
        words = table["word"]
        bad_word = words.isna() | (words.astype(str).str.strip() == "")
        if bad_word.any():
            row = int(np.flatnonzero(bad_word.to_numpy())[0])
            raise InputError(f"lexicon row {row} has no word")
        try:
            values = table[list(VARIABLES)].apply(pd.to_numeric, errors="raise").to_numpy(dtype=np.float64)
        except (ValueError, TypeError) as error:
            raise InputError(f"lexicon ratings must be numbers: {error}") from error
        if np.isnan(values).any():
            row, col = (int(x[0]) for x in np.nonzero(np.isnan(values)))
            raise InputError(f"lexicon row {row} ({table['word'].iloc[row]!r}) has no {VARIABLES[col]} rating")
        values = scale_norms(values) if not scaled else values
        # Section 4.4's scales: VAD in [-1, 1], BE5 in [0, 1]. EmoMap's BE5 ratings are model
        # predictions, and 79 of them fall slightly below 1 (e.g. sadness 0.58): such values are
        # clipped to the scale. Values far outside it (more than 0.5 beyond the scaled range,
        # i.e. 2 rating points) mean the table is on another scale, which is an error.
        off = (values < SCALED_LOW - 0.5) | (values > SCALED_HIGH + 0.5)
        if off.any():
            row, col = (int(x[0]) for x in np.nonzero(off))
            variable = VARIABLES[col]
            scale = "[-1, 1]/[0, 1] (scaled=True)" if scaled else f"{RAW_SCALES[variable]} (raw)"
            raise InputError(
                f"lexicon row {row} ({table['word'].iloc[row]!r}) has {variable} far outside the expected scale "
                f"{scale}; pass scaled={not scaled} if the table is on the other scale"
            )
        values = clip_scaled(values)
        lowered = words.astype(str).str.strip().str.lower().to_numpy(dtype=object)
        _, first = np.unique(lowered, return_index=True)
        keep = np.sort(first)
        return cls(lowered[keep], np.ascontiguousarray(values[keep]), source=source)


def load_lexicon(lexicon: LexiconSource = None, lexicon_dir: str | os.PathLike | None = None) -> Lexicon:
    """Resolve the `lexicon` option of the psycholinguistic metric into a `Lexicon`.

    - None: the default Warriner VAD + BE5 join (`load_warriner(lexicon_dir)`).
    - a `Lexicon`: returned as is.
    - a pandas DataFrame, or a path to a csv/tsv file: a table with raw-scale ratings
      and the columns named in COLUMN_ALIASES (e.g. MEmoLon's English file).
    """
    if lexicon is None:
        paths = warriner_files(lexicon_dir)
        loaded = Lexicon.from_frame(_join_warriner(*paths), source="warriner2013+emomap")
        return dataclasses.replace(loaded, resources=tuple(
            local_record(remote.resource, path) for remote, path in zip(WARRINER_FILES, paths, strict=True)))
    if isinstance(lexicon, Lexicon):
        return lexicon
    if isinstance(lexicon, pd.DataFrame):
        return Lexicon.from_frame(lexicon)
    if isinstance(lexicon, (str, os.PathLike)):
        path = Path(lexicon).expanduser()
        if not path.is_file():
            raise ResourceNotFoundError(
                "psycholinguistic lexicon table", [f"lexicon= -> {path} (missing)"], "Pass an existing csv/tsv file."
            )
        loaded = Lexicon.from_frame(read_table(path), source=str(path))
        return dataclasses.replace(loaded, resources=(local_record("psycholinguistic lexicon table", path),))
    if isinstance(lexicon, Mapping):
        raise UsageError("pass the lexicon as a pandas DataFrame or a csv/tsv path, not a dict")
    raise UsageError(f"unsupported lexicon type {type(lexicon).__name__}; pass a DataFrame, a csv/tsv path or None")
