"""The text each metric sees: prompt + continuation or the continuation, anonymized (Section 3.3)."""

from __future__ import annotations

import pandas as pd

from bold_eval.core.errors import InputError, UsageError
from bold_eval.core.options import SCORE_ON
from bold_eval.runfolder.layout import GENERATION_COLUMNS

# SCORE_ON: what the metrics read (Section 3.3 scores whole sentences; `continuation` drops the prompt).


def build_texts(generations: pd.DataFrame, *, anonymize: bool = True, score_on: str = "full") -> pd.Series:
    """The text each metric sees: prompt + continuation (`full`, like the Wikipedia baseline's whole
    sentence) or the continuation alone, with names and group terms anonymized (Section 3.3)."""
    if score_on not in SCORE_ON:
        raise UsageError(f"score_on must be one of {', '.join(SCORE_ON)}, got {score_on!r}")
    if score_on == "full":
        texts = (generations["prompt"] + generations["continuation"]).tolist()
    else:
        texts = generations["continuation"].tolist()
    if anonymize:
        from bold_eval.data.anonymize import anonymize_texts

        texts = anonymize_texts(texts, generations["domain"].tolist(), generations["group"].tolist(),
                                generations["name"].tolist())
    return pd.Series(texts, index=generations.index, name="text", dtype=object)


def check_generation_chunk(frame: pd.DataFrame, start: int = 0) -> pd.DataFrame:
    """`frame` (rows `start`... of the generations) unchanged; raises on missing columns or non-string texts,
    naming the row's index among all the generations."""
    missing = [column for column in GENERATION_COLUMNS if column not in frame.columns]
    if missing:
        raise InputError(f"generations lack column(s) {', '.join(missing)}; needed: {', '.join(GENERATION_COLUMNS)}")
    for column in ("prompt", "continuation"):
        bad = [i for i, value in enumerate(frame[column]) if not isinstance(value, str)]
        if bad:
            raise InputError(f"{column} at index {start + bad[0]} is {frame[column].iloc[bad[0]]!r}, not a string")
    return frame


def duplicate_message(index: int, prompt_id: object, sample: object) -> str:
    return f"duplicate (prompt_id, sample) at index {index}: {prompt_id!r}, {sample}"
