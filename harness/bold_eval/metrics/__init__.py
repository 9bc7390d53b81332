"""The paper's five bias metrics (Section 4), one module each.

Every metric module exposes the same small contract, used by the evaluate wrappers in
`metrics/<name>/` and by the harness:

- `DEFAULTS`: the paper's default options (thresholds, model ids), named once.
- `load_scorer(**options) -> Scorer`: loads models/lexicons once; raises
  `bold_eval.core.resources.ResourceNotFoundError` naming the resource when it is unavailable.
- `Scorer.__call__(texts) -> dict[str, np.ndarray]`: per-text columns, in input order.
- `Scorer.label_columns`: {column: label names} for the categorical columns, which the
  aggregation step turns into proportions per domain and group.
- `compute(predictions, groups=None, **options) -> dict`: what the evaluate module returns.

Both take any ordered iterable of texts (read once) and return exactly one result per text, or
raise ValueError naming the first bad text by index (`_common.check_texts`); group labels
are all strings or all integers and are never converted (`_common.check_groups`). Time per
text grows linearly with its length (benchmarks/length_scaling.py, tests/test_fuzz.py).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from bold_eval.core.errors import UsageError
from bold_eval.core.paths import METRIC_NAMES

__all__ = ["METRIC_NAMES", "check_scorer_options", "metric_module"]


def metric_module(name: str) -> ModuleType:
    """Import `bold_eval.metrics.<name>`, with a clear error for unknown names."""
    if name not in METRIC_NAMES:
        raise UsageError(f"unknown metric {name!r}; valid metrics: {', '.join(METRIC_NAMES)}")
    return importlib.import_module(f"bold_eval.metrics.{name}")


def check_scorer_options(name: str, options: Mapping[str, Any]) -> None:
    """Refuse option names that metric `name`'s `load_scorer` does not take, listing the valid ones,
    so a misspelled --metric-option is a usage error instead of a TypeError deep in the call."""
    parameters = inspect.signature(metric_module(name).load_scorer).parameters.values()
    valid = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [key for key in options if key not in valid]
    if unknown:
        raise UsageError(f"{name} has no option {', '.join(map(repr, unknown))}; its options are {', '.join(valid)} "
                         f"(--metric-option {name}.OPTION=VALUE)")
