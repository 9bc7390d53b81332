"""What the analysis hands to the report: typed results instead of nested dicts and positional tuples.

A field renamed here fails where it is read (a type checker, or the first test that touches it), not only when
a report is written. Each type's `as_dict()` gives the mapping summary.json is written from, key for key and in
the same order, so the files a run writes do not depend on these types.

- `Method`: how a difference was tested (the value tables and JSON carry; the words a report prints for each are
  kept apart, in `clustered.METHOD_NOTES` and `compare.OVERALL_NOTES`).
- `DifferenceTest`: one comparison of two sides (`clustered.difference_test`); `PairedDifference` one overall
  difference of two runs on shared prompts (`compare.paired_difference`).
- `ChiSquareTest` and `PairTest` (`TwoProportionTest` with its pair): the paper's own tests of a metric's view
  (`statistics.chi_square_across_groups`, `statistics.pair_test`); `PaperTest` is either.
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
from enum import Enum
from typing import TYPE_CHECKING, ClassVar, TypedDict, TypeVar

if TYPE_CHECKING:
    import pandas as pd


# --------------------------------------------------------------------------- the records summary.json is written from


class MetricStatus(TypedDict):
    """Whether a metric was scored (`scores.metric_status`): scored / skipped / not requested / missing, and why."""

    status: str
    reason: str


class DomainCounts(TypedDict):
    texts: int
    prompts: int
    groups: int
    samples_per_prompt_min: int
    samples_per_prompt_max: int


class DomainCoverage(TypedDict):
    prompts: int
    bold_prompts: int | None
    share: float | None


class Coverage(TypedDict):
    """How much of BOLD a run covers (`scores.coverage`)."""

    prompts: int
    bold_prompts: int
    share: float
    domains: dict[str, DomainCoverage]
    missing_domains: list[str]
    partial_domains: list[str]
    complete: bool


class _RunCounts(TypedDict):
    texts: int
    prompts: int
    samples_per_prompt_min: int
    samples_per_prompt_max: int
    domains: dict[str, DomainCounts]


class RunCounts(_RunCounts, total=False):
    """Texts, prompts, groups and samples per prompt, per domain and overall (`scores.run_counts`), with the
    coverage once `summary.summarize` adds it."""

    coverage: Coverage


class ChiSquareRecord(TypedDict):
    domain: str
    test: str
    column: str
    label: str | None
    groups: list[str]
    n: int
    statistic: float | None
    dof: int | None
    p_value: float | None
    min_expected: float | None
    small_groups: list[str]
    reliable: bool
    rule: str
    note: str
    p_holm: float | None


class TwoProportionRecord(TypedDict):
    test: str
    count_a: int
    total_a: int
    proportion_a: float
    count_b: int
    total_b: int
    proportion_b: float
    difference: float
    ci_low: float | None
    ci_high: float | None
    statistic: float | None
    p_value: float | None
    small_groups: list[str]
    reliable: bool
    note: str


class PairRowRecord(TwoProportionRecord):
    domain: str
    group_a: str
    group_b: str
    column: str
    label: str


class PairTestRecord(PairRowRecord):
    p_holm: float | None


class FindingsSettings(TypedDict):
    alpha: float
    correction: str
    correction_name: str
    cluster: str
    cluster_unit: str


class _GroupFindingsRecord(FindingsSettings):
    tests: pd.DataFrame
    design_effects: pd.DataFrame
    power: pd.DataFrame
    family: int
    untestable: int
    too_small_domains: list[str]
    too_small: bool


class GroupFindingsRecord(_GroupFindingsRecord, total=False):
    gaps: pd.DataFrame


class PairedFindingsRecord(FindingsSettings):
    tests: pd.DataFrame
    family: int
    untestable: int
    shared_prompts: int
    model_prompts: int
    reference_prompts: int


class Skipped(TypedDict):
    """A view that has no tables, and why."""

    skipped: str


class _MetricViewRecord(TypedDict):
    tables: dict[str, pd.DataFrame]
    tests: list[ChiSquareRecord | PairTestRecord]


class MetricViewRecord(_MetricViewRecord, total=False):
    notes: list[str]


class WorstCaseDefinition(TypedDict):
    """What one worst case is (`worst_case.WorstCase`): its title, metric, per-text column, reduction and source."""

    title: str
    metric: str
    column: str
    reduce: str
    source: str


class WorstCaseRecord(TypedDict):
    tables: dict[str, pd.DataFrame]
    k: int
    k_min: int
    notes: list[str]
    interval: str
    definitions: dict[str, WorstCaseDefinition]


# --------------------------------------------------------------------------- the results


class Method(str, Enum):
    """How a difference was tested. The value is the identifier tables and JSON carry (a `method` column); what a
    report prints about a method is kept apart from it (`clustered.METHOD_NOTES`, `compare.OVERALL_NOTES`). A member
    is a `str` equal to its value and prints as its value, so tables and files hold the identifier itself."""

    UNTESTED = ""
    SCORE = "cluster score t"
    Z_TEST = "two-proportion z"
    FISHER = "Fisher exact"
    T_TEST = "t test"
    PAIRED_CONTINUOUS = "paired score t, continuous"
    PAIRED_SCORE = "paired score t over names"
    NO_DISCORDANT = "exact: no prompt differs"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


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
    method: Method
    testable: bool
    note: str = ""

    def as_dict(self) -> dict[str, float | str | bool]:
        """The eight fields by name, in order (a row of a tests table), the method as its identifier."""
        return {"estimate": self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "statistic": self.statistic, "p_value": self.p_value, "method": str(self.method),
                "testable": self.testable, "note": self.note}


@dataclass(frozen=True)
class PairedDifference(DifferenceTest):
    """An overall difference of two runs on their shared prompts (`compare.paired_difference`): a `DifferenceTest`
    with the number of names (the units) and of names on which the runs differ on some prompt."""

    names: int = 0
    discordant_names: int = 0

    def as_dict(self) -> dict[str, float | str | bool]:
        """The fields in compare's order: the estimate and its interval and test, the names, how it was tested."""
        return {"estimate": self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "statistic": self.statistic, "p_value": self.p_value, "names": self.names,
                "discordant_names": self.discordant_names, "method": str(self.method), "testable": self.testable,
                "note": self.note}


@dataclass(frozen=True, kw_only=True)
class ChiSquareTest:
    """The paper's chi-square test of independence between group and label across a domain's groups (Sections
    6.1.3, 6.2; `statistics.chi_square_across_groups`). The statistic, dof, p-value and smallest expected count are
    None when the test is undefined (`note` says why); `reliable` is False when a group's expected count is below
    the rule's minimum (`small_groups`). `p_holm`: Holm-adjusted within its metric's table (`summary.summarize`);
    None when untestable or not adjusted."""

    test: ClassVar[str] = "chi-square"

    domain: str = ""
    column: str
    label: str | None
    groups: list[str]
    n: int
    statistic: float | None = None
    dof: int | None = None
    p_value: float | None = None
    min_expected: float | None = None
    small_groups: list[str] = field(default_factory=list)
    reliable: bool = False
    rule: str
    note: str = ""
    p_holm: float | None = None

    def as_dict(self) -> ChiSquareRecord:
        """A row of `<metric>_tests` and an entry of summary.json's "tests"."""
        return {"domain": self.domain, "test": self.test, "column": self.column, "label": self.label,
                "groups": list(self.groups), "n": self.n, "statistic": self.statistic, "dof": self.dof,
                "p_value": self.p_value, "min_expected": self.min_expected, "small_groups": list(self.small_groups),
                "reliable": self.reliable, "rule": self.rule, "note": self.note, "p_holm": self.p_holm}


@dataclass(frozen=True, kw_only=True)
class TwoProportionTest:
    """The paper's "binomial proportion test" of two sides a and b (`statistics.two_proportion_test`): counts,
    totals and proportions, the difference a - b with its Newcombe interval, z and p (None when undefined), and the
    sides whose expected count is below the rule's minimum (`small_groups`, then `reliable` is False)."""

    test: ClassVar[str] = "two-proportion z"

    count_a: int
    total_a: int
    proportion_a: float
    count_b: int
    total_b: int
    proportion_b: float
    difference: float
    ci_low: float | None = None
    ci_high: float | None = None
    statistic: float | None = None
    p_value: float | None = None
    small_groups: list[str] = field(default_factory=list)
    reliable: bool = False
    note: str = ""

    def as_dict(self) -> TwoProportionRecord:
        return {"test": self.test, "count_a": self.count_a, "total_a": self.total_a,
                "proportion_a": self.proportion_a, "count_b": self.count_b, "total_b": self.total_b,
                "proportion_b": self.proportion_b, "difference": self.difference, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "statistic": self.statistic, "p_value": self.p_value,
                "small_groups": list(self.small_groups), "reliable": self.reliable, "note": self.note}


@dataclass(frozen=True, kw_only=True)
class PairTest(TwoProportionTest):
    """A `TwoProportionTest` of one of the paper's pairs (`statistics.pair_test`: group_a against group_b in
    `domain`) on `column` == the value named `label`, the sides named by their groups. `p_holm` as in
    `ChiSquareTest`."""

    domain: str
    group_a: str
    group_b: str
    column: str
    label: str
    p_holm: float | None = None

    def as_dict(self) -> PairTestRecord:
        """A row of `<metric>_tests` and an entry of summary.json's "tests"."""
        return {**self.row(), "p_holm": self.p_holm}

    def row(self) -> PairRowRecord:
        """The test without `p_holm`: a row of a "categories" view's difference table, which gets its own."""
        return {"domain": self.domain, "group_a": self.group_a, "group_b": self.group_b, "column": self.column,
                "label": self.label, **super().as_dict()}


# The paper's own tests of a metric's view (`MetricView.tests`).
PaperTest = ChiSquareTest | PairTest


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

    def settings(self) -> FindingsSettings:
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

    def as_dict(self) -> GroupFindingsRecord:
        """summary.json's "findings"."""
        found: GroupFindingsRecord = {"tests": self.tests, "design_effects": self.design_effects, "power": self.power,
                 "family": self.family, "untestable": self.untestable, "too_small_domains": self.too_small_domains,
                 "too_small": self.too_small, **self.settings()}
        return found if self.gaps is None else {**found, "gaps": self.gaps}


@dataclass(frozen=True)
class PairedFindings(Findings):
    """Contrast x source interactions on the prompts two sources share (`findings.paired_findings`)."""

    shared_prompts: int
    model_prompts: int
    reference_prompts: int

    def as_dict(self) -> PairedFindingsRecord:
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
    """One metric's tables (its view kind's `ViewTables`) and the paper's tests, or why it was
    skipped."""

    tables: ViewTables = field(default_factory=ViewTables)
    tests: list[PaperTest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None

    def kind_tables(self, kind: type[TablesT]) -> TablesT:
        """The tables as their kind's type: a report or compare function of one kind reads them by attribute."""
        if not isinstance(self.tables, kind):
            raise TypeError(f"expected {kind.__name__}, got {type(self.tables).__name__} (skipped: {self.skipped})")
        return self.tables

    def as_dict(self) -> MetricViewRecord | Skipped:
        """summary.json's entry for the metric: {"tables", "tests"[, "notes"]} or {"skipped"}."""
        if self.skipped is not None:
            return {"skipped": self.skipped}
        view: MetricViewRecord = {"tables": self.tables.named(), "tests": [test.as_dict() for test in self.tests]}
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
    definitions: dict[str, WorstCaseDefinition] = field(default_factory=dict)
    skipped: str | None = None

    def as_dict(self) -> WorstCaseRecord | Skipped:
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

    def as_dict(self) -> dict[str, float | str]:
        """summary.json's "statistics"."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RunViews:
    """Every metric's view of one run: `metrics` holds each metric's {"status", "reason"}
    (`scores.metric_status`), `views` its `MetricView` (skipped ones say why), `worst_case` the worst cases."""

    metrics: dict[str, MetricStatus]
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

    counts: RunCounts
    statistics: Statistics
    findings: GroupFindings
    reference_findings: PairedFindings | None = None

    def as_dict(self) -> dict[str, object]:
        """The mapping summary.json is written from (DataFrames still frames): counts, metrics, statistics, one
        entry per metric (named by the metric), worst_case, findings and, when there are some, reference_findings."""
        summary: dict[str, object] = {
            "counts": self.counts, "metrics": self.metrics, "statistics": self.statistics.as_dict(),
            **{metric: view.as_dict() for metric, view in self.views.items()},
            "worst_case": self.worst_case.as_dict(), "findings": self.findings.as_dict()}
        if self.reference_findings is not None:
            summary["reference_findings"] = self.reference_findings.as_dict()
        return summary
