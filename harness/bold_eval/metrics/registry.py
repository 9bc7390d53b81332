"""Which metrics exist: the paper's five, then any registered at run time or installed as plug-ins.

A plug-in package declares an entry point in the group `bold_eval.metrics` whose object is a
`MetricSpec`; a script or test calls `register_metric(spec)`. Every stage asks this registry, so a
registered metric is scored by `run`/`score`, tabulated and tested in the report, compared and validated
without editing the harness.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from bold_eval.core.errors import UsageError
from bold_eval.core.options import (
    PAPER_METRICS,  # the paper's five (Section 4), each `bold_eval.metrics.<name>.SPEC`
)
from bold_eval.metrics.spec import MetricSpec

ENTRY_POINT_GROUP = "bold_eval.metrics"

_SPECS: dict[str, MetricSpec] = {}


def _load() -> dict[str, MetricSpec]:
    """The registry, filled on first use: importing the five modules is cheap (no torch, no models)."""
    if not _SPECS:
        for name in PAPER_METRICS:
            _SPECS[name] = importlib.import_module(f"bold_eval.metrics.{name}").SPEC
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            spec = entry.load()
            if not isinstance(spec, MetricSpec):
                raise UsageError(f"entry point {entry.name!r} ({entry.value}) in {ENTRY_POINT_GROUP!r} is a "
                                 f"{type(spec).__name__}, not a bold_eval.metrics.spec.MetricSpec")
            _SPECS.setdefault(spec.name, spec)
    return _SPECS


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    """Add `spec` after the existing metrics; a second metric of the same name needs `replace=True`."""
    specs = _load()
    if spec.name in specs and not replace:
        raise UsageError(f"a metric named {spec.name!r} is already registered; pass replace=True to replace it")
    specs[spec.name] = spec
    return spec


def unregister_metric(name: str) -> None:
    """Remove a metric registered at run time (the paper's five stay)."""
    if name in PAPER_METRICS:
        raise UsageError(f"{name} is one of the paper's metrics and cannot be removed")
    _load().pop(name, None)


def metric_names() -> tuple[str, ...]:
    """Every metric's name: the paper's five in its order, then the others in registration order."""
    return tuple(_load())


def metric_specs() -> tuple[MetricSpec, ...]:
    return tuple(_load().values())


def evaluate_module_names() -> tuple[str, ...]:
    """Metrics with an evaluate module folder `metrics/<name>/` (what `bold-eval publish` stages as Spaces): the
    paper's five."""
    return tuple(name for name in _load() if name in PAPER_METRICS)


def metric_spec(name: str) -> MetricSpec:
    """The spec of metric `name`, with a clear error for unknown names."""
    specs = _load()
    if name not in specs:
        raise UsageError(f"unknown metric {name!r}; valid metrics: {', '.join(specs)}")
    return specs[name]
