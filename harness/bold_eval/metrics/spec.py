"""One spec per metric: what scoring, analysis, report, compare, validation and the Hub need to know about it.

Each metric module ends with a `SPEC = MetricSpec(...)`; `bold_eval.metrics.registry` collects them (and any
registered at run time or through the `bold_eval.metrics` entry-point group), so adding a metric touches its
own module and its evaluate folder only. Every column name here is a scores-table column: the metric's
per-text column prefixed with `<name>_`, as scoring writes it.

`MetricSpec` is the compute contract (what the metric scores, tests and ranks, and where): its advanced options come
in small groups (`Domains`, `Columns`, `Resources`, `Validation`), and how the metric is shown (titles, colours,
headers, reading notes, model-card rows, caveats, compare order) in `MetricPresentation`. The later stages are generic
over the spec, which carries data only (a metric may not import them). Its view kind (a `ViewKind`: `LabelShares`,
`LabelRatio`, `Categories`, `GenderRatio`) says which tables and tests the analysis computes, which report section
shows them and which side-by-side tables compare builds: each kind names those functions by import path
(`ViewHooks`), imported when first used, so a new kind is one dataclass here plus its functions.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from bold_eval.core.fetching import DownloadItem


@dataclass(frozen=True)
class ScoreView:
    """What of a metric's output is compared with human labels (Section 6.3): one continuous score and its labels."""

    metric: str
    score: str
    row_name: str  # the metric's row name in Table 8 ("sentiment", "Gender-Max", ...)
    description: str
    # Metric labels along the score axis, low to high, with Section 6.3's numeric codes; labels
    # without a code (regard's "other") have no place on the axis.
    codes: Mapping[str, int]
    score_range: tuple[float, float]
    # Metric labels that may stay without a human counterpart: predicting one counts as a miss.
    optional: tuple[str, ...] = ()
    # Figure 6 colours: "red: negative/male/toxic, blue: neutral and green: positive/non-toxic/female".
    colors: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Scored:
    """A metric's continuous score and labels for each text, and the cut points between labels."""

    view: ScoreView
    scores: np.ndarray
    labels: np.ndarray
    metric_labels: tuple[str, ...]
    thresholds: dict[str, float]
    options: dict[str, Any]


@dataclass(frozen=True)
class WorstCase:
    """A worst case over a prompt's k samples (RealToxicityPrompts, Gehman et al. 2020): per prompt, the
    highest (`reduce="max"`) or lowest ("min") value of a score column, or whether any sample carries a harmful
    label ("any", `value` marks it); per group, the mean over its prompts. An addition to the paper, which
    scores one text per prompt."""

    key: str  # identifier: the per-prompt column is `worst_<key>`
    title: str  # "expected maximum toxicity"
    column: str  # scores-table column it reduces
    reduce: str  # "max", "min" or "any"
    value: Any = None  # for "any": the value of `column` that marks a harmful text
    source: str = ""
    # The range the score can take (VADER's compound: -1 to 1). A group difference in a max / min worst case is
    # tested on the score mapped onto [0, 1] by this range, where the binomial floor holds (rate_test).
    bounds: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self) -> None:
        if self.reduce not in ("max", "min", "any"):
            raise ValueError(f"worst case {self.key}: reduce must be max, min or any, got {self.reduce!r}")
        if (self.reduce == "any") != (self.value is not None):
            raise ValueError(f"worst case {self.key}: `value` marks the harmful label of reduce='any', and only it")

    @property
    def prompt_column(self) -> str:
        return f"worst_{self.key}"

    @property
    def binary(self) -> bool:
        return self.reduce == "any"


# --------------------------------------------------------------------------- view kinds: the paper's tables of a metric


@dataclass(frozen=True)
class PaperTable:
    """One of the paper's tables as `bold-eval compare` shows it side by side, one row per model: a file in
    compare's tables/ and a heading in compare.md."""

    name: str  # file name in compare's tables/ ("table5_regard")
    title: str  # heading in compare.md
    # "groups": a row per domain, group and model, a "p [low, high]" column per label (Figures 3-5);
    # "pairs": a row per model, a column per tested label and group of the view's paper pairs (Table 5).
    layout: str = "groups"


@dataclass(frozen=True)
class ViewHooks:
    """Where a view kind's code lives in the later stages, each as "module:function", imported when first used
    (`resolve_hook`): a metric may not import the analysis or the report, and they choose by the kind alone.

    - `tables`: the analysis, (spec, scores, *, ci, alpha, min_expected, seed) -> `analysis.results.MetricView`
      whose tables are the kind's `analysis.results.ViewTables` subclass;
    - `section`: the report, (spec, view, `report.sections.Folders`, lines) -> None, appending its lines;
    - `paper_tables`: compare, (spec, {model: view}) -> {file name: `report.compare.SideBySide`}."""

    tables: str
    section: str
    paper_tables: str

    def resolved(self) -> dict[str, Callable[..., Any]]:
        """The three functions by hook name (a test checks that every kind's resolve)."""
        return {"tables": resolve_hook(self.tables), "section": resolve_hook(self.section),
                "paper_tables": resolve_hook(self.paper_tables)}


def resolve_hook(path: str) -> Callable[..., Any]:
    """The function a "module:function" path names (`ViewHooks`), its module imported now."""
    module, _, attribute = path.partition(":")
    function = getattr(importlib.import_module(module), attribute, None)
    if not callable(function):
        raise ValueError(f"view hook {path!r}: {module} has no function {attribute!r}")
    return function


@dataclass(frozen=True)
class ViewKind:
    """The base of the view kinds: which tables and tests a metric gets (`hooks`). Each kind is one frozen dataclass
    of the fields its functions read; `check` says what it needs from the rest of the spec."""

    hooks: ClassVar[ViewHooks]

    def check(self, spec: MetricSpec) -> None:
        """Raise a ValueError naming the metric when `spec` lacks what this kind needs."""


@dataclass(frozen=True)
class LabelShares(ViewKind):
    """The default view kind: each label column's shares per group with intervals; for every tested label a chi-square
    across each domain's groups and a two-proportion test per paper pair in `pairs` (Figures 3-5, Table 5)."""

    hooks: ClassVar[ViewHooks] = ViewHooks("bold_eval.analysis.views:label_view",
                                           "bold_eval.report.sections:labels_section",
                                           "bold_eval.report.compare:label_tables")
    pairs: tuple[str, ...] | None = None  # domains of the paper's pairs tested (data.bold.PAPER_PAIRS); None: all
    by_domain: bool = False  # the report shows a table and a figure per domain, under "### <domain>" (Figures 3-5)
    # Report figure title: with "{domain}" a figure per domain, without one of all; "": "<title>, {domain} domain".
    figure_title: str = ""
    wide_table: bool = False  # also tables/<metric>_wide: a row per group, a column per label
    paper_table: PaperTable | None = None  # compare's side-by-side table of the view's (first) table


@dataclass(frozen=True)
class LabelRatio(ViewKind):
    """The share of texts with the metric's one tested label per group, as `<label>_ratio` with its interval and the
    count as `<label>` (toxic_ratio, Section 6.1.3); tested as `LabelShares` are."""

    hooks: ClassVar[ViewHooks] = ViewHooks("bold_eval.analysis.views:ratio_view",
                                           "bold_eval.report.sections:ratio_section",
                                           "bold_eval.report.compare:ratio_tables")
    pairs: tuple[str, ...] | None = None
    paper_table: PaperTable | None = None  # layout "groups": the ratio cells per domain, group and model

    def check(self, spec: MetricSpec) -> None:
        if not (isinstance(spec.tested_labels, Mapping) and len(spec.tested_labels) == 1):
            raise ValueError(f"metric {spec.name}: a LabelRatio view needs exactly one tested label (a mapping)")


@dataclass(frozen=True)
class PairDifference:
    """A paper pair's difference table (Tables 4, 6): per category, its share in the pair's first group minus the
    second's, with a two-proportion test (`analysis.results.CategoryTables.differences`, by `key`)."""

    key: str  # "gender"
    domain: str  # the pair's domain in data.bold.PAPER_PAIRS
    title: str  # the report's heading ("male minus female (paper Table 4)")
    paper_table: PaperTable | None = None  # compare: a row per model, a column per category (points [interval])


@dataclass(frozen=True)
class Categories(ViewKind):
    """The share of texts in each category per group with intervals, shown in percent (Tables 9-11), and the pair
    differences `differences` (Tables 4, 6). Headers: `MetricPresentation.headers`."""

    hooks: ClassVar[ViewHooks] = ViewHooks("bold_eval.analysis.views:category_view",
                                           "bold_eval.report.sections:categories_section",
                                           "bold_eval.report.compare:category_tables")
    categories: Mapping[str, tuple[str, Any]] = field(default_factory=dict)  # name -> (column, value that marks it)
    differences: tuple[PairDifference, ...] = ()
    layout: str = ""  # the percent tables' source, in their headings ("paper Tables 9-11 layout")
    table_numbers: Mapping[str, str] = field(default_factory=dict)  # domain -> its paper table ("paper Table 9")
    # compare's percent table per domain: "{domain}" in name and title, "{table}" its number (else `layout`).
    paper_table: PaperTable | None = None

    def check(self, spec: MetricSpec) -> None:
        if not self.categories:
            raise ValueError(f"metric {spec.name}: a Categories view needs its `categories`")


@dataclass(frozen=True)
class GenderRatio(ViewKind):
    """Texts classified male and female per super-group of the metric's tested domain, each male : female with its
    page-level interval (Korn-Graubard shares, MOVER ratios) and Section 6.2's summaries (Table 3), and male minus
    female per group (Figure 2), for each method scored (columns `<metric>_<method>_label`)."""

    hooks: ClassVar[ViewHooks] = ViewHooks("bold_eval.analysis.table3:gender_ratio_view",
                                           "bold_eval.report.sections:gender_ratio_section",
                                           "bold_eval.report.compare:gender_ratio_tables")
    methods: Mapping[str, str] = field(default_factory=dict)  # method -> name, paper order (the first scored leads)
    table_caption: str = ""  # before the Table 3 layout
    summary_caption: str = ""  # before the average and pooled ratios
    tokens_caption: str = ""  # before the gendered-token counts
    difference_caption: str = ""  # before male minus female per group
    difference_note: str = ""  # after its interval's name
    figure_title: str = ""
    paper_table: PaperTable | None = None  # Table 3 per model
    difference_table: PaperTable | None = None  # male minus female per model; "{methods}" in its title: those shown

    def check(self, spec: MetricSpec) -> None:
        if not (self.methods and spec.finding_domains):
            raise ValueError(f"metric {spec.name}: a GenderRatio view needs `methods` and the domain it compares "
                             "(`Domains.tested` or `Domains.scored`)")


# --------------------------------------------------------------------------- how a metric is shown


@dataclass(frozen=True)
class CardRow:
    """A model-card number per domain (`bold-eval publish-results`): the pooled share of the texts counted in the
    view table `table` (its rows whose `key` column is `value`; all rows when `key` is None), and the report's
    largest gap between two groups when it fell on the tested label `finding`."""

    metric_type: str  # published as `<metric_type>_ratio` and `<metric_type>_gap`
    name: str  # "Negative sentiment (VADER, Section 4.1)"
    table: str
    key: str | None = "label"
    value: Any = None
    count: str = "count"
    finding: str = ""


@dataclass(frozen=True)
class CardShares:
    """Model-card numbers of one domain: per value of the view table's `by` column (a method), the pooled share of
    each count column over its rows. `metric_type` and `name` are templates of {value}, {count}, {display} (the
    rows' `<by>_name`) and {total}."""

    table: str
    domain: str
    by: str
    values: tuple[str, ...]
    counts: tuple[str, ...]
    metric_type: str
    name: str


@dataclass(frozen=True)
class MetricPresentation:
    """How the report, compare, the leaderboard and the model card show a metric; nothing here changes a number."""

    title: str = ""  # section heading in the report, with the paper's section (default: the metric's name)
    short_title: str = ""  # the name in running text and findings tables (default: the name with spaces)
    colors: Mapping[str, str] = field(default_factory=dict)  # report figure colours per label
    headers: Mapping[str, str] = field(default_factory=dict)  # per tested label, where not its name (Tables 4, 6, 9-11)
    # Lines for the report's "How to read this" once the metric was scored: (its options in run.json) -> lines.
    reading_notes: Callable[[Mapping[str, Any]], list[str]] | None = None
    # Model-card numbers: pooled shares per domain (before the worst cases), then shares per method (after them).
    card_rows: tuple[CardRow, ...] = ()
    card_shares: tuple[CardShares, ...] = ()
    # The metric's instrument in the report's caveat on them ("VADER"), and caveats of its own.
    instrument: str = ""
    caveats: tuple[str, ...] = ()
    # Where its side-by-side tables stand in compare.md and its caveats in the report (ties: the registry's order).
    paper_rank: int = 100


# --------------------------------------------------------------------------- the compute contract's groups


# (view, scorer, the scorer's per-text columns, the options it was loaded with) -> Scored
ScoreReader = Callable[[ScoreView, Any, Mapping[str, np.ndarray], dict[str, Any]], Scored]
# (requested score or None, scorer options) -> (score, options): a metric that computes only what is validated
ValidationOptions = Callable[[str | None, dict[str, Any]], tuple[str | None, dict[str, Any]]]
# label name -> (scores-table column, value that marks a text)
TestedLabels = Mapping[str, tuple[str, Any]]


@dataclass(frozen=True)
class Domains:
    """Where a metric is scored and where its groups are compared."""

    scored: tuple[str, ...] | None = None  # the domains the metric is scored in; None: every domain
    tested: tuple[str, ...] | None = None  # the domains whose groups the findings compare on it (default: `scored`)
    source: str = ""  # where `scored` comes from, quoted when a run has none of them ("Section 4.3")

    @property
    def findings(self) -> tuple[str, ...] | None:
        return self.tested if self.tested is not None else self.scored


@dataclass(frozen=True)
class Columns:
    """Scores-table columns of a metric besides its label columns (`MetricSpec.labels`)."""

    boolean: tuple[str, ...] = ()  # columns holding booleans (a share is their mean)
    required: tuple[str, ...] = ()  # columns of which one marks the metric as scored (default: the label columns)


@dataclass(frozen=True)
class Fallback:
    """Options to load the scorer with when its default resource is missing and the user chose none of `guard` nor a
    resource option: the metric is then scored in part, not skipped (gender polarity keeps unigram matching without
    word2vec); `note` says so in run.json and the report."""

    options: Mapping[str, Any]
    guard: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Resources:
    """What a metric's scorer reads from outside the package, and how scoring treats it."""

    # Options that name a resource: when the user gives one, a missing resource is an error, not a skip.
    options: tuple[str, ...] = ()
    # What `bold-eval download` fetches, given the metric's options (`--metric-option`): (options) -> items
    # (`core.fetching`: Hub repositories, pinned files, prepared resources); None: nothing to fetch.
    downloads: Callable[[Mapping[str, Any]], tuple[DownloadItem, ...]] | None = None
    fallback: Fallback | None = None  # scored in part when the default resource is missing
    cached: bool = False  # a classifier whose scores of the Wikipedia sentences are cached across runs


@dataclass(frozen=True)
class Validation:
    """What `bold-eval validate` compares with human labels: continuous scores (the default first) and how to read
    one from the scorer's output; `options` for a metric that computes only what is validated."""

    scores: Mapping[str, ScoreView]
    read_score: ScoreReader
    options: ValidationOptions | None = None

    def __post_init__(self) -> None:
        if not self.scores:
            raise ValueError("Validation needs at least one score")

    @property
    def default_score(self) -> str:
        return next(iter(self.scores))


# --------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class MetricSpec:
    """A metric as the pipeline computes it. Only `name`, `load_scorer` and `labels` are required: a metric with
    just those is scored by `bold-eval run`/`score`, checked, tabulated per group with intervals, tested
    across groups (its `tested_labels`, default: every label of every label column), and compared."""

    name: str
    # load_scorer(**options) -> Scorer: a callable texts -> {column: per-text array}, with `label_columns`.
    load_scorer: Callable[..., Any]
    # Categorical scores-table columns and their labels (defaults for runs that did not record them).
    labels: Mapping[str, tuple[Any, ...]]
    # The labels whose rates the findings compare across groups: a mapping, or a function of the scores
    # table's columns that returns one (gender polarity tests the first method scored). None: every label.
    tested_labels: TestedLabels | Callable[[Collection[str]], TestedLabels] | None = None
    # The tested labels a leaderboard ranks models on, with their direction: +1 when a higher rate is worse
    # (negative sentiment, toxicity), -1 when a lower one is (positive regard). Others are shown, not ranked.
    directions: Mapping[str, int] = field(default_factory=dict)
    # Worst cases over a prompt's k samples (`--num-samples` > 1), shown per group and tested in the findings.
    worst_cases: tuple[WorstCase, ...] = ()
    # The view kind: the tables and tests of the analysis, the report section, compare's side-by-side tables.
    view: ViewKind = field(default_factory=LabelShares)
    domains: Domains = field(default_factory=Domains)
    columns: Columns = field(default_factory=Columns)
    resources: Resources = field(default_factory=Resources)
    validation: Validation | None = None  # None: `bold-eval validate` does not take the metric
    presentation: MetricPresentation = field(default_factory=MetricPresentation)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"metric name {self.name!r} must be an identifier (it prefixes its columns)")
        prefix = f"{self.name}_"
        columns = [*self.labels, *self.columns.required, *self.columns.boolean,
                   *(w.column for w in self.worst_cases)]
        wrong = [column for column in columns if not column.startswith(prefix)]
        if wrong:
            raise ValueError(f"metric {self.name}: columns {wrong} must start with {prefix!r} (scoring prefixes them)")
        self.view.check(self)

    @property
    def display_name(self) -> str:
        """The metric's name in running text: `MetricPresentation.short_title`, else the name with spaces."""
        return self.presentation.short_title or self.name.replace("_", " ")

    @property
    def scored_columns(self) -> tuple[str, ...]:
        """Columns of which at least one means the metric was scored."""
        return self.columns.required or tuple(self.labels) or self.columns.boolean

    def tested(self, columns: Collection[str]) -> dict[str, tuple[str, Any]]:
        """The tested labels whose column the scores table has: {label name: (column, value)}."""
        if callable(self.tested_labels):
            found = self.tested_labels(columns)
        elif self.tested_labels is not None:
            found = self.tested_labels
        else:
            found = {(label if len(self.labels) == 1 else f"{column.removeprefix(self.name + '_')} {label}"):
                     (column, label) for column, labels in self.labels.items()
                     for label in ((True,) if set(labels) == {True, False} else labels)}
        return {label: (column, value) for label, (column, value) in found.items() if column in columns}

    @property
    def finding_domains(self) -> tuple[str, ...] | None:
        return self.domains.findings
