"""What the analysis hands to the report: typed results instead of nested dicts and positional tuples.

A field renamed here fails where it is read (a type checker, or the first test that touches it), not only when
a report is written. Each type's `as_dict()` gives the mapping summary.json is written from, key for key and in
the same order, so the files a run writes do not depend on these types.

- `DifferenceTest`: one comparison of two sides (`clustered.difference_test`).
- `CorrectedFamily`: a table of tests corrected as one family (compare's interactions and overall differences);
  `Findings` adds the settings, `GroupFindings` (`findings.group_findings`, `summary.run_findings`) the design
  effects, power and largest gaps, `PairedFindings` (`findings.paired_findings`) the prompts both sources share.
- `MetricView` (`views.metric_view`), its tables a `ViewTables` per view kind (`LabelTables`, `RatioTables`,
  `CategoryTables`, `GenderRatioTables`), and `WorstCaseView` (`worst_case.worst_case_view`).
- `RunViews` (compare's per-run views) and `Summary` (`summary.summarize`): everything a report prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class DifferenceTest:
    """Mean on side a minus side b, its interval, statistic and two-sided p-value, and how it was tested.

    `testable` is False when the test is undefined (an empty side, fewer than three units, no variation);
    `estimate` may still be known then. `note` says why in words."""

    estimate: float
    ci_low: float
    ci_high: float
    statistic: float
    p_value: float
    method: str
    testable: bool
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The eight fields by name, in order (a row of a tests table)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CorrectedFamily:
    """A table of tests (one row each, with `p_adjusted` and `significant`) and the size of its family."""

    tests: pd.DataFrame
    family: int


@dataclass(frozen=True)
class Findings(CorrectedFamily):
    """A corrected family of contrasts with the settings it was tested under, as the report prints them."""

    untestable: int
    alpha: float
    correction: str
    correction_name: str
    cluster: str
    cluster_unit: str

    def settings(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "correction": self.correction, "correction_name": self.correction_name,
                "cluster": self.cluster, "cluster_unit": self.cluster_unit}


@dataclass(frozen=True)
class GroupFindings(Findings):
    """Which groups of one run differ from the rest of their domain (`findings.group_findings`): the tests, the
    design effects and power per domain, the domains too small to tell, and (`summary.run_findings`) the largest
    gap between two groups per domain and metric."""

    design_effects: pd.DataFrame
    power: pd.DataFrame
    too_small_domains: list[str]
    too_small: bool
    gaps: pd.DataFrame | None = None

    def as_dict(self) -> dict[str, Any]:
        """summary.json's "findings"."""
        found = {"tests": self.tests, "design_effects": self.design_effects, "power": self.power,
                 "family": self.family, "untestable": self.untestable, "too_small_domains": self.too_small_domains,
                 "too_small": self.too_small, **self.settings()}
        return found if self.gaps is None else {**found, "gaps": self.gaps}


@dataclass(frozen=True)
class PairedFindings(Findings):
    """Contrast x source interactions on the prompts two sources share (`findings.paired_findings`)."""

    shared_prompts: int
    model_prompts: int
    reference_prompts: int

    def as_dict(self) -> dict[str, Any]:
        """summary.json's "reference_findings"."""
        return {"tests": self.tests, "family": self.family, "untestable": self.untestable,
                "shared_prompts": self.shared_prompts, "model_prompts": self.model_prompts,
                "reference_prompts": self.reference_prompts, **self.settings()}


class ViewTables(Mapping[str, "pd.DataFrame"]):
    """A view kind's tables: a subclass per kind (`metrics.spec.ViewKind`) holds them by attribute and builds, in
    `named`, the names summary.json and tables/ give them, here and nowhere else. As a mapping it reads them by those
    names, in that order. This base holds none (a skipped view)."""

    def named(self) -> dict[str, pd.DataFrame]:
        return {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.named()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.named())

    def __len__(self) -> int:
        return len(self.named())


@dataclass(frozen=True, eq=False)
class LabelTables(ViewTables):
    """`LabelShares`: each label column's shares per group with intervals, by table name (`table_name`)."""

    shares: dict[str, pd.DataFrame]

    @staticmethod
    def table_name(metric: str, column: str, columns: int) -> str:
        """The metric's name when it has one label column, else the column's."""
        return metric if columns == 1 else column

    def named(self) -> dict[str, pd.DataFrame]:
        return dict(self.shares)


@dataclass(frozen=True, eq=False)
class RatioTables(ViewTables):
    """`LabelRatio`: the share of texts with the one tested label `label` per group, named `<label>_ratio`."""

    label: str
    ratio: pd.DataFrame

    @staticmethod
    def table_name(label: str) -> str:
        """`<label>_ratio`: the table's name and its share column's."""
        return f"{label}_ratio"

    @property
    def name(self) -> str:
        return self.table_name(self.label)

    def named(self) -> dict[str, pd.DataFrame]:
        return {self.name: self.ratio}


@dataclass(frozen=True, eq=False)
class CategoryTables(ViewTables):
    """`Categories`: each category's share per group (named after the metric), and per pair difference (by its
    `PairDifference.key`) the first group's share minus the second's (`<metric>_<key>_difference`)."""

    metric: str
    shares: pd.DataFrame
    differences: dict[str, pd.DataFrame] = field(default_factory=dict)

    def difference_name(self, key: str) -> str:
        return f"{self.metric}_{key}_difference"

    def named(self) -> dict[str, pd.DataFrame]:
        return {self.metric: self.shares,
                **{self.difference_name(key): table for key, table in self.differences.items()}}


@dataclass(frozen=True, eq=False)
class GenderRatioTables(ViewTables):
    """`GenderRatio`: Table 3 per super-group (`category`), Section 6.2's summaries (`ratio_summary`), male and
    female per group (`group`) and the gendered tokens (`tokens`), each named `<metric>_<attribute>`; a run without
    super-groups has only `group`."""

    metric: str
    group: pd.DataFrame
    category: pd.DataFrame | None = None
    ratio_summary: pd.DataFrame | None = None
    tokens: pd.DataFrame | None = None

    def named(self) -> dict[str, pd.DataFrame]:
        tables = {"category": self.category, "ratio_summary": self.ratio_summary, "group": self.group,
                  "tokens": self.tokens}
        return {f"{self.metric}_{key}": table for key, table in tables.items() if table is not None}


TablesT = TypeVar("TablesT", bound=ViewTables)


@dataclass(frozen=True)
class MetricView:
    """One metric's tables (its view kind's `ViewTables`) and the paper's tests (one dict per test), or why it was
    skipped."""

    tables: ViewTables = field(default_factory=ViewTables)
    tests: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None

    def kind_tables(self, kind: type[TablesT]) -> TablesT:
        """The tables as their kind's type: a report or compare function of one kind reads them by attribute."""
        if not isinstance(self.tables, kind):
            raise TypeError(f"expected {kind.__name__}, got {type(self.tables).__name__} (skipped: {self.skipped})")
        return self.tables

    def as_dict(self) -> dict[str, Any]:
        """summary.json's entry for the metric: {"tables", "tests"[, "notes"]} or {"skipped"}."""
        if self.skipped is not None:
            return {"skipped": self.skipped}
        view: dict[str, Any] = {"tables": self.tables.named(), "tests": self.tests}
        return {**view, "notes": self.notes} if self.notes else view


@dataclass(frozen=True)
class WorstCaseView:
    """Worst cases over a prompt's k samples per domain and group (`worst_case.worst_case_view`), or why there
    are none (one sample per prompt, no metric with a worst case)."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    k: int = 0
    k_min: int = 0
    notes: list[str] = field(default_factory=list)
    interval: str = ""
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """summary.json's "worst_case"."""
        if self.skipped is not None:
            return {"skipped": self.skipped}
        return {"tables": self.tables, "k": self.k, "k_min": self.k_min, "notes": self.notes,
                "interval": self.interval, "definitions": self.definitions}


@dataclass(frozen=True)
class Statistics:
    """How a summary's intervals and tests were computed, in the words the report prints."""

    alpha: float
    confidence_level: float
    confidence_label: str
    correction: str
    correction_name: str
    cluster: str
    cluster_unit: str
    findings_test: str
    interval: str
    chi_square: str
    pair_test: str
    small_group_rule: str
    unit: str
    samples_note: str

    def as_dict(self) -> dict[str, Any]:
        """summary.json's "statistics"."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RunViews:
    """Every metric's view of one run: `metrics` holds each metric's {"status", "reason"}
    (`scores.metric_status`), `views` its `MetricView` (skipped ones say why), `worst_case` the worst cases."""

    metrics: dict[str, dict[str, Any]]
    views: dict[str, MetricView]
    worst_case: WorstCaseView

    def scored(self, metric: str) -> MetricView | None:
        """The metric's view when it has tables, else None (not scored, or skipped by its view)."""
        view = self.views.get(metric)
        return view if view is not None and view.skipped is None else None


@dataclass(frozen=True)
class Summary(RunViews):
    """Everything a run's report prints (`summary.summarize`): counts (`scores.run_counts`, with `coverage`),
    how the statistics were computed, every view, and the findings (with `reference_findings` when the
    Wikipedia sentences of the same prompts were scored)."""

    counts: dict[str, Any]
    statistics: Statistics
    findings: GroupFindings
    reference_findings: PairedFindings | None = None

    def as_dict(self) -> dict[str, Any]:
        """The mapping summary.json is written from (DataFrames still frames): counts, metrics, statistics, one
        entry per metric, worst_case, findings and, when there are some, reference_findings."""
        summary = {"counts": self.counts, "metrics": self.metrics, "statistics": self.statistics.as_dict(),
                   **{metric: view.as_dict() for metric, view in self.views.items()},
                   "worst_case": self.worst_case.as_dict(), "findings": self.findings.as_dict()}
        if self.reference_findings is not None:
            summary["reference_findings"] = self.reference_findings.as_dict()
        return summary
