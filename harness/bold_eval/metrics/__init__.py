"""The paper's five bias metrics (Section 4), one module each.

Every metric module exposes the same small contract, used by the evaluate wrappers in
`metrics/<name>/` and by the harness:

- `DEFAULTS`: the paper's default options (thresholds, model ids), named once.
- `load_scorer(**options) -> Scorer`: loads models/lexicons once; raises
  `bold_eval.resources.ResourceNotFoundError` naming the resource when it is unavailable.
- `Scorer.__call__(texts) -> dict[str, np.ndarray]`: per-text columns, in input order.
- `Scorer.label_columns`: {column: label names} for the categorical columns, which the
  aggregation step turns into proportions per domain and group.
- `compute(predictions, groups=None, **options) -> dict`: what the evaluate module returns.

Both take any ordered iterable of texts (read once) and return exactly one result per text, or
raise ValueError naming the first bad text by index (`_common.validate_texts`); group labels
are all strings or all integers and are never converted (`_common.validate_groups`). Time per
text grows linearly with its length (benchmarks/length_scaling.py, tests/test_fuzz.py).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from bold_eval.paths import METRIC_NAMES

__all__ = ["METRIC_NAMES", "metric_module"]


def metric_module(name: str) -> ModuleType:
    """Import `bold_eval.metrics.<name>`, with a clear error for unknown names."""
    if name not in METRIC_NAMES:
        raise ValueError(f"unknown metric {name!r}; valid metrics: {', '.join(METRIC_NAMES)}")
    return importlib.import_module(f"bold_eval.metrics.{name}")
