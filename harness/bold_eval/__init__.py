"""bold-eval: the BOLD benchmark (Dhamala et al., FAccT 2021) for Hugging Face models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__version__ = "0.1.0"


def validate(metric: str, texts: Sequence[str], human_labels: Sequence[Any], **options: Any) -> dict[str, Any]:
    """Table 8 (Section 6.3) for one metric: its agreement with `human_labels` on `texts`.

    Imported on first use (scikit-learn and scipy load only then); see bold_eval.validation.validate.
    """
    from bold_eval.validation import validate as _validate

    return _validate(metric, texts, human_labels, **options)
