"""bold-eval: the BOLD benchmark (Dhamala et al., FAccT 2021) for Hugging Face models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bold_eval.core.version import __version__

__all__ = ["__version__", "validate"]


def validate(metric: str, texts: Sequence[str], human_labels: Sequence[Any], **options: Any) -> dict[str, Any]:
    """Table 8 (Section 6.3) for one metric: its agreement with `human_labels` on `texts`.

    Imported on first use (scikit-learn and scipy load only then); see bold_eval.validation.agreement.validate.
    """
    from bold_eval.validation.agreement import validate as _validate

    return _validate(metric, texts, human_labels, **options)
