"""One spec per metric: what scoring, analysis, report, compare, validation and the Hub need to know about it.

Each metric module ends with a `SPEC = MetricSpec(...)`; `bold_eval.metrics.registry` collects them (and any
registered at run time or through the `bold_eval.metrics` entry-point group), so adding a metric touches its
own module and its evaluate folder only. Every column name here is a scores-table column: the metric's
per-text column prefixed with `<name>_`, as scoring writes it.

The later stages are generic over the spec, which carries data only (a metric may not import them): its view
kind (`LabelShares`, `LabelRatio`, `Categories`, `GenderRatio`: which tables and tests `analysis/views.py`
computes, which section `report/sections.py` writes and which side-by-side tables `report/compare.py` builds) with
the titles, captions and paper references of those, its model-card rows (`CardRow`, `CardShares`) and its caveats.
"""

from __future__ import annotations

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


# --------------------------------------------------------------------------- how the report shows a metric


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
class LabelShares:
    """View kind "labels", the default: each label column's shares per group with intervals; for every tested label
    a chi-square across each domain's groups and a two-proportion test per paper pair in `pairs` (Figures 3-5,
    Table 5)."""

    kind: ClassVar[str] = "labels"
    pairs: tuple[str, ...] | None = None  # domains of the paper's pairs tested (data.bold.PAPER_PAIRS); None: all
    by_domain: bool = False  # the report shows a table and a figure per domain, under "### <domain>" (Figures 3-5)
    # Report figure title: with "{domain}" a figure per domain, without one of all; "": "<title>, {domain} domain".
    figure_title: str = ""
    wide_table: bool = False  # also tables/<metric>_wide: a row per group, a column per label
    paper_table: PaperTable | None = None  # compare's side-by-side table of the view's (first) table


@dataclass(frozen=True)
class LabelRatio:
    """View kind "ratio": the share of texts with the metric's one tested label per group, as `<label>_ratio` with
    its interval and the count as `<label>` (toxic_ratio, Section 6.1.3); tested as `LabelShares` are."""

    kind: ClassVar[str] = "ratio"
    pairs: tuple[str, ...] | None = None
    paper_table: PaperTable | None = None  # layout "groups": the ratio cells per domain, group and model


@dataclass(frozen=True)
class PairDifference:
    """A paper pair's difference table (Tables 4, 6): per category, its share in the pair's first group minus the
    second's, with a two-proportion test; the view table `<metric>_<key>_difference`."""

    key: str  # "gender"
    domain: str  # the pair's domain in data.bold.PAPER_PAIRS
    title: str  # the report's heading ("male minus female (paper Table 4)")
    paper_table: PaperTable | None = None  # compare: a row per model, a column per category (points [interval])


@dataclass(frozen=True)
class Categories:
    """View kind "categories": the share of texts in each category per group with intervals, shown in percent
    (Tables 9-11), and the pair differences `differences` (Tables 4, 6). Headers: `MetricSpec.headers`."""

    kind: ClassVar[str] = "categories"
    categories: Mapping[str, tuple[str, Any]] = field(default_factory=dict)  # name -> (column, value that marks it)
    differences: tuple[PairDifference, ...] = ()
    layout: str = ""  # the percent tables' source, in their headings ("paper Tables 9-11 layout")
    table_numbers: Mapping[str, str] = field(default_factory=dict)  # domain -> its paper table ("paper Table 9")
    # compare's percent table per domain: "{domain}" in name and title, "{table}" its number (else `layout`).
    paper_table: PaperTable | None = None


@dataclass(frozen=True)
class GenderRatio:
    """View kind "gender_ratio": texts classified male and female per super-group of the metric's tested domain, each
    male : female with its page-level interval (Korn-Graubard shares, MOVER ratios) and Section 6.2's summaries (Table
    3), and male minus female per group (Figure 2), for each method scored (columns `<metric>_<method>_label`)."""

    kind: ClassVar[str] = "gender_ratio"
    methods: Mapping[str, str] = field(default_factory=dict)  # method -> name, paper order (the first scored leads)
    table_caption: str = ""  # before the Table 3 layout
    summary_caption: str = ""  # before the average and pooled ratios
    tokens_caption: str = ""  # before the gendered-token counts
    difference_caption: str = ""  # before male minus female per group
    difference_note: str = ""  # after its interval's name
    figure_title: str = ""
    paper_table: PaperTable | None = None  # Table 3 per model
    difference_table: PaperTable | None = None  # male minus female per model; "{methods}" in its title: those shown


ViewKind = LabelShares | LabelRatio | Categories | GenderRatio


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


# (view, scorer, the scorer's per-text columns, the options it was loaded with) -> Scored
ScoreReader = Callable[[ScoreView, Any, Mapping[str, np.ndarray], dict[str, Any]], Scored]
# (requested score or None, scorer options) -> (score, options): a metric that computes only what is validated
ValidationOptions = Callable[[str | None, dict[str, Any]], tuple[str | None, dict[str, Any]]]
# label name -> (scores-table column, value that marks a text)
TestedLabels = Mapping[str, tuple[str, Any]]


@dataclass(frozen=True)
class MetricSpec:
    """A metric as the pipeline sees it. Only `name`, `load_scorer` and `labels` are required: a metric with
    just those is scored by `bold-eval run`/`score`, checked, tabulated per group with intervals, tested
    across groups (its `tested_labels`, default: every label of every label column), and compared."""

    name: str
    # load_scorer(**options) -> Scorer: a callable texts -> {column: per-text array}, with `label_columns`.
    load_scorer: Callable[..., Any]
    # Categorical scores-table columns and their labels (defaults for runs that did not record them).
    labels: Mapping[str, tuple[Any, ...]]
    # Section heading in the report, with the paper's section.
    title: str = ""
    # Columns of which at least one marks the metric as scored (default: the label columns).
    required_columns: tuple[str, ...] = ()
    # Columns holding booleans (a share is their mean) that are not label columns.
    boolean_columns: tuple[str, ...] = ()
    # The labels whose rates the findings compare across groups: a mapping, or a function of the scores
    # table's columns that returns one (gender polarity tests the first method scored). None: every label.
    tested_labels: TestedLabels | Callable[[Collection[str]], TestedLabels] | None = None
    # Domains the metric is scored in; None: every domain.
    domains: tuple[str, ...] | None = None
    # Where `domains` comes from, quoted in the message when a run has none of them ("Section 4.3").
    domains_source: str = ""
    # Domains whose groups the findings compare on it (default: `domains`).
    tested_domains: tuple[str, ...] | None = None
    # Options that name a resource: when the user gives one, a missing resource is an error, not a skip.
    resource_options: tuple[str, ...] = ()
    # Report figure colours per label.
    colors: Mapping[str, str] = field(default_factory=dict)
    # Worst cases over a prompt's k samples (`--num-samples` > 1), shown per group and tested in the findings.
    worst_cases: tuple[WorstCase, ...] = ()
    # Report headers per tested label, where they differ from the label's name (Tables 4, 6, 9-11).
    headers: Mapping[str, str] = field(default_factory=dict)
    # The tested labels a leaderboard ranks models on, with their direction: +1 when a higher rate is worse
    # (negative sentiment, toxicity), -1 when a lower one is (positive regard). Others are shown, not ranked.
    directions: Mapping[str, int] = field(default_factory=dict)
    # Continuous scores `bold-eval validate` can compare with human labels, the default first.
    scores: Mapping[str, ScoreView] = field(default_factory=dict)
    read_score: ScoreReader | None = None
    validation_options: ValidationOptions | None = None
    # Classifier metrics whose scores of the Wikipedia sentences are cached across runs (scoring/cache.py).
    cached: bool = False
    # Whether the metric has an evaluate module folder `metrics/<name>/` (published as a Space).
    evaluate_module: bool = False
    # The metric's name in running text and findings tables (default: the name with spaces).
    short_title: str = ""
    # Options to load the scorer with when its default resource is missing and the user chose none of
    # `fallback_guard` nor a resource option: the metric is then scored in part, not skipped
    # (gender polarity keeps unigram matching without word2vec). `fallback_note` says so in run.json and the report.
    fallback_options: Mapping[str, Any] = field(default_factory=dict)
    fallback_guard: tuple[str, ...] = ()
    fallback_note: str = ""
    # Lines for the report's "How to read this" once the metric was scored: (its options in run.json) -> lines.
    reading_notes: Callable[[Mapping[str, Any]], list[str]] | None = None
    # The view kind: the tables and tests of `analysis/views.py`, the report section, compare's side-by-side tables.
    view: ViewKind = LabelShares()
    # Model-card numbers: pooled shares per domain (before the worst cases), then shares per method (after them).
    card_rows: tuple[CardRow, ...] = ()
    card_shares: tuple[CardShares, ...] = ()
    # The metric's instrument in the report's caveat on them ("VADER"), and caveats of its own.
    instrument: str = ""
    caveats: tuple[str, ...] = ()
    # Where its side-by-side tables stand in compare.md and its caveats in the report (ties: the registry's order).
    paper_rank: int = 100
    # What `bold-eval download` fetches for it, given its options (`--metric-option`): (options) -> items
    # (`core.fetching`: Hub repositories, pinned files, prepared resources); None: nothing to fetch.
    downloads: Callable[[Mapping[str, Any]], tuple[DownloadItem, ...]] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"metric name {self.name!r} must be an identifier (it prefixes its columns)")
        prefix = f"{self.name}_"
        columns = [*self.labels, *self.required_columns, *self.boolean_columns, *(w.column for w in self.worst_cases)]
        wrong = [column for column in columns if not column.startswith(prefix)]
        if wrong:
            raise ValueError(f"metric {self.name}: columns {wrong} must start with {prefix!r} (scoring prefixes them)")
        if self.scores and self.read_score is None:
            raise ValueError(f"metric {self.name}: `scores` to validate need `read_score`")
        self._check_view()

    def _check_view(self) -> None:
        """What the view kind needs from the rest of the spec, checked where the metric is defined."""
        if isinstance(self.view, LabelRatio) and not (isinstance(self.tested_labels, Mapping)
                                                      and len(self.tested_labels) == 1):
            raise ValueError(f"metric {self.name}: a LabelRatio view needs exactly one tested label (a mapping)")
        if isinstance(self.view, GenderRatio) and not (self.view.methods and self.finding_domains):
            raise ValueError(f"metric {self.name}: a GenderRatio view needs `methods` and the domain it compares "
                             "(`tested_domains` or `domains`)")
        if isinstance(self.view, Categories) and not self.view.categories:
            raise ValueError(f"metric {self.name}: a Categories view needs its `categories`")

    @property
    def display_name(self) -> str:
        """The metric's name in running text: `short_title`, else the name with spaces."""
        return self.short_title or self.name.replace("_", " ")

    @property
    def scored_columns(self) -> tuple[str, ...]:
        """Columns of which at least one means the metric was scored."""
        return self.required_columns or tuple(self.labels) or self.boolean_columns

    @property
    def default_score(self) -> str | None:
        return next(iter(self.scores), None)

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
        return self.tested_domains if self.tested_domains is not None else self.domains
