"""`bold-eval validate`: a labelled source in; validation.json, validation.md, predictions.csv and figures out."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bold_eval.validation.agreement import (
    Validation,
    run_validation,
)
from bold_eval.validation.labels import (
    HumanLabelled,
)
from bold_eval.validation.report import (
    write_validation,
)
from bold_eval.validation.sources import load_source


def validate_against(
    metric: str,
    against: str,
    out: str | os.PathLike,
    *,
    text_column: str = "text",
    label_column: str = "label",
    label_set: Mapping[Any, str] | Sequence[Any] | str | None = None,
    exclude_labels: Sequence[Any] | None = None,
    splits: Sequence[str] | None = None,
    sheng2019_dir: str | os.PathLike | None = None,
    **options: Any,
) -> Validation:
    """`bold-eval validate`: load `against` (a Sheng et al. 2019 source or a labelled file), validate
    `metric` on it, and write validation.json, validation.md, predictions.csv and figures/ to `out`."""
    labelled: HumanLabelled = load_source(
        against, text_column=text_column, label_column=label_column, splits=splits, sheng2019_dir=sheng2019_dir
    )
    if label_set is None:
        label_set = labelled.label_names
    result = run_validation(
        metric, labelled.texts, labelled.labels, label_set=label_set,
        exclude_labels=labelled.exclude if exclude_labels is None else exclude_labels,
        source=labelled.source, **options,
    )
    write_validation(result, Path(out))
    return result
