"""The human sentiment and regard annotations of Sheng et al. (2019), as a checksummed resource.

Sheng, Chang, Natarajan and Peng, "The Woman Worked as a Babysitter: On Biases in Language
Generation" (EMNLP 2019) released GPT-2 samples about a demographic placeholder "XYZ", each
labelled by the majority of three crowd workers for sentiment and for regard: -1 negative,
0 neutral, 1 positive, 2 other (github.com/ewsheng/nlg-bias, README). `bold-eval validate`
compares a metric with these labels the way Section 6.3 of BOLD compares its metrics with its
own annotations. Files are looked up like every other resource (`bold_eval.core.resources`): the
`sheng2019_dir=` argument, then `$BOLD_SHENG2019_DIR`, then the cache, then the pinned commit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from bold_eval.core.errors import InputError, UsageError
from bold_eval.core.options import SHENG2019_SOURCES, SHENG2019_SPLITS
from bold_eval.core.resources import RemoteFile, resolve_file, sha256_of
from bold_eval.validation.labels import HumanLabelled, Label

SHENG2019_ENV = "BOLD_SHENG2019_DIR"
SHENG2019_ARGUMENT = "sheng2019_dir"
SHENG2019_CITATION = (
    "Emily Sheng, Kai-Wei Chang, Premkumar Natarajan, Nanyun Peng. The Woman Worked as a Babysitter: "
    "On Biases in Language Generation. EMNLP-IJCNLP 2019."
)

# Pinned upstream commit. Where it comes from: the stored history of ewsheng/nlg-bias (found with
# the code search's find_files/read_file) holds one version of every data/{regard,sentiment}/*.tsv
# (commit 364bd93e) except data/regard/train_other.tsv, which was fixed later in fbb770b5 (its
# first "other" samples had lost their "XYZ was well-known for" prefix). The shared copy
# (../shared/data/sheng2019) matches fbb770b5 byte for byte for all eight files, and the
# checksums below are those of that copy.
SHENG2019_COMMIT = "fbb770b557b83200712c09fdc8fd6c67d34ddd16"
_URL = f"https://raw.githubusercontent.com/ewsheng/nlg-bias/{SHENG2019_COMMIT}/data/"
_SHA256 = {
    "regard/train.tsv": "2b734fae84fa82ae969b5183607760c905cd333b90fd27e8d83ed311c6f923b0",
    "regard/train_other.tsv": "691dc49d3493ea878a77d9a6f3b77b6b01af2a5c3f3bf71d758969e8bf40aff7",
    "regard/dev.tsv": "6d1eb2e617acfb55ddfe0e77f54f836f3093a379934e7aab07b1cb3e6facb5db",
    "regard/test.tsv": "1ac5fbd901cba6f441c153234eca41cb29d8719529ca81e760213bd9c7813017",
    "sentiment/train.tsv": "93913b400cd3195b3c2459ca6156b9faa62182125bb9c4b88195617b4b4dfe81",
    "sentiment/train_other.tsv": "cd46dc4c95232f6e1b91221f40b4335582af351c56b25c9623b77808a4c2c68b",
    "sentiment/dev.tsv": "2ee7fbd3ce16156ff1ce2be423121aee4b248b6ce69736e7fed080ab3d611bfc",
    "sentiment/test.tsv": "d2eba2ea9034a10f7f6516ebafd3e61d68f2a9de8f6dc2464b45ef4df097093b",
}
SHENG2019_FILES: dict[str, RemoteFile] = {
    relative: RemoteFile(
        resource=f"Sheng et al. (2019) {relative.split('/')[0]} annotations ({relative}, ewsheng/nlg-bias)",
        filename=relative,
        url=_URL + relative,
        sha256=checksum,
    )
    for relative, checksum in _SHA256.items()
}

# The upstream README: "-1 for negative, 0 for neutral, 1 for positive, 2 for other".
LABEL_NAMES: dict[int, str] = {1: "positive", 0: "neutral", -1: "negative", 2: "other"}
OTHER_LABEL = 2
SPLITS = SHENG2019_SPLITS

# Default files per source: every annotated sample once. regard/train_other.tsv is train.tsv plus
# the 23 "other" samples. sentiment/train_other.tsv is no superset: its samples lost their
# "XYZ was known for"-style prefix upstream ("XYZ having a low self esteem.") and most repeat
# samples of train/dev/test, so sheng2019-sentiment reads train.tsv (it has no "other" label).
SOURCES: dict[str, tuple[str, tuple[str, ...]]] = dict(zip(SHENG2019_SOURCES, (
    ("sentiment", ("train", "dev", "test")),
    ("regard", ("train_other", "dev", "test")),
), strict=True))


def load_sheng2019(
    source: str, *, splits: Sequence[str] | None = None, sheng2019_dir: str | os.PathLike | None = None
) -> HumanLabelled:
    """Texts and majority labels of `sheng2019-sentiment` or `sheng2019-regard`.

    `splits`: any of train, train_other, dev, test (default `SOURCES`). Label 2 ("other") is kept
    in `labels` and listed in `exclude`, so the comparison leaves it out and counts it.
    """
    if source not in SOURCES:
        raise UsageError(f"unknown Sheng et al. 2019 source {source!r}; valid: {', '.join(SOURCES)}")
    kind, default_splits = SOURCES[source]
    chosen = tuple(dict.fromkeys(splits)) if splits else default_splits
    unknown = [split for split in chosen if split not in SPLITS]
    if unknown:
        raise UsageError(f"unknown split(s) {', '.join(unknown)} of {source}; valid: {', '.join(SPLITS)}")
    if "train" in chosen and "train_other" in chosen:
        raise UsageError(
            f"{kind}/train_other.tsv repeats the samples of {kind}/train.tsv; choose one of train and train_other"
        )

    texts: list[str] = []
    labels: list[Label] = []
    files = []
    for split in chosen:
        remote = SHENG2019_FILES[f"{kind}/{split}.tsv"]
        path = resolve_file(
            remote, local=sheng2019_dir, env_var=SHENG2019_ENV, argument=SHENG2019_ARGUMENT, subdir="sheng2019"
        )
        rows = _read_tsv(path)
        texts.extend(text for _, text in rows)
        labels.extend(label for label, _ in rows)
        checksum = sha256_of(path)
        files.append({
            "file": remote.filename,
            "path": str(path),
            "rows": len(rows),
            "sha256": checksum,
            "matches_pinned_sha256": checksum == remote.sha256,
        })
    return HumanLabelled(
        texts=texts,
        labels=labels,
        label_names={label: LABEL_NAMES[label] for label in LABEL_NAMES},
        exclude=(OTHER_LABEL,),
        source={
            "name": source,
            "description": f"Sheng et al. (2019) {kind} annotations (majority of three crowd workers)",
            "citation": SHENG2019_CITATION,
            "upstream": f"https://github.com/ewsheng/nlg-bias/tree/{SHENG2019_COMMIT}/data/{kind}",
            "commit": SHENG2019_COMMIT,
            "files": files,
        },
    )


def _read_tsv(path: Path) -> list[tuple[int, str]]:
    """(label, text) rows of one upstream file: `label<TAB>text`, no header, labels -1/0/1/2."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            label, tab, text = line.partition("\t")
            if not tab or label.strip() not in {str(value) for value in LABEL_NAMES}:
                raise InputError(
                    f"{path}:{number}: expected '<label>\\t<text>' with label in -1, 0, 1, 2, got {line[:80]!r}; "
                    f"point {SHENG2019_ENV} at a copy of ewsheng/nlg-bias/data"
                )
            rows.append((int(label), text))
    return rows
