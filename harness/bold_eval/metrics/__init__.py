"""The paper's five bias metrics (Section 4), one module each, and the registry of every metric.

Every metric module exposes the same small contract, used by the evaluate wrappers in
`metrics/<name>/` and by the harness:

- `DEFAULTS`: the paper's default options (thresholds, model ids), named once.
- `load_scorer(**options) -> Scorer`: loads models/lexicons once; raises
  `bold_eval.core.resources.ResourceNotFoundError` naming the resource when it is unavailable.
- `Scorer.__call__(texts) -> dict[str, np.ndarray]`: per-text columns, in input order.
- `Scorer.label_columns`: {column: label names} for the categorical columns, which the
  aggregation step turns into proportions per domain and group.
- `compute(predictions, groups=None, **options) -> dict`: what the evaluate module returns.
- `SPEC`: its `bold_eval.metrics.spec.MetricSpec`, what the pipeline's stages read about it
  (`bold_eval.metrics.registry` collects them; a new metric registers its own).

Both take any ordered iterable of texts (read once) and return exactly one result per text, or
raise ValueError naming the first bad text by index (`common.check_texts`); group labels
are all strings or all integers and are never converted (`common.check_groups`). Time per
text grows linearly with its length (benchmarks/length_scaling.py, tests/metrics/test_fuzz.py).
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Mapping
from typing import Any

from bold_eval.core.errors import MissingFileError, UsageError
from bold_eval.metrics.registry import (
    PAPER_METRICS,
    evaluate_module_names,
    metric_names,
    metric_spec,
    metric_specs,
    register_metric,
    unregister_metric,
)

__all__ = ["PAPER_METRICS", "check_scorer_options", "evaluate_module_names", "metric_names", "metric_spec",
           "metric_specs",
           "register_metric", "unregister_metric"]


def check_scorer_options(name: str, options: Mapping[str, Any]) -> None:
    """Refuse option names that metric `name`'s `load_scorer` does not take, listing the valid ones,
    so a misspelled --metric-option is a usage error instead of a TypeError deep in the call."""
    parameters = inspect.signature(metric_spec(name).load_scorer).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return
    valid = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [key for key in options if key not in valid]
    if unknown:
        raise UsageError(f"{name} has no option {', '.join(map(repr, unknown))}; its options are {', '.join(valid)} "
                         f"(--metric-option {name}.OPTION=VALUE)")
    annotations = {p.name: p.annotation for p in parameters}
    for key, value in options.items():
        _check_option_value(name, key, value, annotations.get(key))


# Annotations of load_scorer options whose values can be checked before anything loads: (accepted types, words).
_SIMPLE_TYPES = {"float": ((numbers.Real,), "a number"), "int": ((numbers.Integral,), "a whole number"),
                 "bool": ((bool,), "true or false")}


def _check_option_value(metric: str, key: str, value: Any, annotation: Any) -> None:
    """A number, whole number or flag option given a value of another type is a usage error, and a `*_dir` option
    naming nothing a missing file, when the command starts, not when the metric loads after the generation."""
    from pathlib import Path

    words = str(annotation).replace("'", "").split(" | ") if annotation is not inspect.Parameter.empty else []
    optional = "None" in words
    simple = [word for word in words if word != "None"]
    if len(simple) == 1 and simple[0] in _SIMPLE_TYPES and not (optional and value is None):
        types, what = _SIMPLE_TYPES[simple[0]]
        if isinstance(value, bool) != (simple[0] == "bool") or not isinstance(value, types):
            raise UsageError(f"--metric-option {metric}.{key} must be {what}, got {value!r}")
    if key.endswith("_dir") and value is not None and not Path(str(value)).expanduser().exists():
        raise MissingFileError(f"{key}= -> {value} (missing)\nYou chose {metric}.{key}={value}, which does not "
                               "exist; fix that value, or leave it out to use the default (a missing default is "
                               "skipped and reported).")
