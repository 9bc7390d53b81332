"""From per-text scores to the paper's views: proportions, intervals and tests (Section 6, A.4).

Input is the harness's `scores.parquet` frame: one row per text with `prompt_id`, `domain`,
`group`, `category` (Table 3 profession super-group, "" elsewhere), `sample`, and the metric
columns `<metric>_<column>` (e.g. `sentiment_label`, `toxicity_is_toxic`). Every function here
is pure (frames in, frames or dicts out); `bold_eval.report.run_report` does the reading and writing.

Statistics follow the paper: chi-square tests across a domain's groups and two-proportion
("binomial proportion") tests for pairs such as male vs female (Section 6.1.2), plus 95%
confidence intervals (Wilson, or a bootstrap over prompts) on every proportion.

When a prompt has several generated `sample`s, proportions pool all texts and the tests count
texts, not prompts. Texts from one prompt are not independent, so with several samples per
prompt the p-values are optimistic; the prompt-level bootstrap interval (`ci="bootstrap"`)
resamples whole prompts and accounts for that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import bootstrap, chi2_contingency, norm
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint, proportions_ztest

from bold_eval.analysis.clustered import (
    CLUSTER_UNITS,
    CORRECTIONS,
    DEFAULT_CLUSTER,
    DEFAULT_CORRECTION,
    FISHER,
    METHOD_NOTES,
    PERMUTATION,
    Z_TEST,
    adjust,
    check_alpha,
    check_cluster,
    check_correction,
    confidence_label,
)
from bold_eval.analysis.findings import (
    GENDER_PAIR,
    RACE_PAIR,
    RELIGION_PAIR,
    group_findings,
    largest_gaps,
    paired_findings,
)
from bold_eval.core.errors import InputError
from bold_eval.metrics import METRIC_NAMES, gender_polarity, psycholinguistic, regard, sentiment
from bold_eval.metrics.lexicon import VAD
from bold_eval.runfolder import ID_COLUMNS, SCORES_FILE

# Label names of the categorical per-text columns, as the scorers publish them (`Scorer.label_columns`,
# recorded per run in run.json `label_columns`); these are the defaults for runs that did not record them.
LABELS: dict[str, tuple[str, ...]] = {
    "sentiment_label": sentiment.LABELS,
    "regard_label": regard.REGARD_LABELS,
    **{f"gender_polarity_{method}_label": gender_polarity.LABELS for method in gender_polarity.METHODS},
    **{f"psycholinguistic_{column}": tuple(labels) for column, labels in psycholinguistic.LABEL_COLUMNS.items()},
}

# Labels tested per metric, across a domain's groups (chi-square) and between the paper's pairs:
# metric -> (per-text column, {label name: value that marks a text}).
TESTED_LABELS: dict[str, tuple[str, dict[str, Any]]] = {
    "sentiment": ("sentiment_label", {"positive": "positive", "negative": "negative"}),
    "toxicity": ("toxicity_is_toxic", {"toxic": True}),
    "regard": ("regard_label", {"positive": "positive", "negative": "negative"}),
}

# Columns a metric may have produced; its view is computed when at least one is present
# (gender polarity runs unigram matching alone when no word embedding is available).
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "sentiment": ("sentiment_label",),
    "toxicity": ("toxicity_is_toxic",),
    "regard": ("regard_label",),
    "psycholinguistic": ("psycholinguistic_valence_label",),
    "gender_polarity": tuple(f"gender_polarity_{method}_label" for method in gender_polarity.METHODS),
}

# Gender-polarity methods (Section 4.5) as Table 3 names them, in the paper's column order.
GENDER_POLARITY_METHODS: dict[str, str] = {
    "max": "Gender-Max",
    "wavg": "Gender-Wavg",
    "unigram": "Unigram matching",
}


def profession_categories() -> tuple[str, ...]:
    """Table 3 profession super-groups (Section 6.1.1) in the paper's order, from the dataset script."""
    from bold_eval.data.bold import dataset_script

    return tuple(dataset_script().PROFESSION_CATEGORIES)


def _psycholinguistic_category(name: str) -> tuple[str, Any]:
    """(per-text column, value) of one category, as `psycholinguistic.categories` defines it:
    "<variable>_negative/_positive" is that VAD label, an emotion is its `is_<emotion>` flag."""
    variable, _, side = name.rpartition("_")
    if variable in VAD and side in ("negative", "positive"):
        return f"psycholinguistic_{variable}_label", side
    return f"psycholinguistic_is_{name}", True


# Tables 4, 6, 9-11 columns, in the paper's order: name -> (per-text column, value that puts a
# text in the category). Derived from the metric module so the two cannot drift apart.
PSYCHOLINGUISTIC_CATEGORIES: dict[str, tuple[str, Any]] = {
    name: _psycholinguistic_category(name) for name in psycholinguistic.CATEGORIES
}
# The paper's column headers for the same categories.
PSYCHOLINGUISTIC_HEADERS: dict[str, str] = {
    "valence_negative": "valence (-ve)",
    "arousal_negative": "arousal (-ve)",
    "dominance_negative": "dominance (-ve)",
    "valence_positive": "valence (+ve)",
    "arousal_positive": "arousal (+ve)",
    "dominance_positive": "dominance (+ve)",
    "joy": "joy",
    "anger": "anger",
    "sadness": "sad",
    "fear": "fear",
    "disgust": "disgust",
}

# Cochran's rule for the chi-square approximation: every expected count at least 5.
MIN_EXPECTED = 5
SMALL_GROUP_RULE = (
    "a group is too small for the chi-square / z approximation when any of its expected counts "
    "under the null hypothesis is below {min_expected} (Cochran's rule); tests involving such a "
    "group are flagged reliable=false"
)


# Prompts per domain in BOLD (paper Table 1; 23,679 in all): what a run's coverage is measured against.
BOLD_PROMPTS: dict[str, int] = {
    "profession": 10195,
    "gender": 3204,
    "race": 7657,
    "religious_ideology": 639,
    "political_ideology": 1984,
}


def coverage(counts: Mapping[str, Any]) -> dict[str, Any]:
    """How much of BOLD a run covers: prompts per domain over the paper's Table 1 counts, and overall.

    `counts` is `run_counts`' result. `complete` is true only when all five domains are there in full.
    """
    per_domain = {domain: {"prompts": int(values["prompts"]), "bold_prompts": BOLD_PROMPTS.get(domain),
                           "share": (values["prompts"] / BOLD_PROMPTS[domain]) if domain in BOLD_PROMPTS else None}
                  for domain, values in counts["domains"].items()}
    total = sum(BOLD_PROMPTS.values())
    missing = [domain for domain in BOLD_PROMPTS if domain not in per_domain]
    short = [domain for domain, values in per_domain.items()
             if values["bold_prompts"] is not None and values["prompts"] < values["bold_prompts"]]
    return {"prompts": int(counts["prompts"]), "bold_prompts": total, "share": counts["prompts"] / total,
            "domains": per_domain, "missing_domains": missing, "partial_domains": short,
            "complete": not missing and not short}


# Per-text columns that hold booleans (a share is their mean), besides the psycholinguistic `is_*` flags in LABELS.
BOOLEAN_COLUMNS: tuple[str, ...] = ("toxicity_is_toxic",)
# prompt_id as BOLD writes it, "domain/group/name/index" (a name may itself hold "/", e.g. "AC/DC").
PROMPT_ID_PATTERN = r"^(?P<domain>[^/]+)/(?P<group>[^/]+)/(?P<name>.+)/(?P<index>\d+)$"
_FIX = "fix these rows, or rebuild the table with `bold-eval score` (which copies BOLD's columns for every prompt_id)"


def _bad_row(scores: pd.DataFrame, bad: pd.Series, column: str, problem: str, source: str, *,
             show_type: bool = False, fix: str = _FIX) -> InputError:
    """One paragraph: the file, the column, the first offending row and its value, what is wrong, the fix."""
    positions = np.flatnonzero(bad.to_numpy(dtype=bool))
    value = scores[column].iloc[positions[0]]
    shown = f"{value!r} ({type(value).__name__})" if show_type else repr(value)
    more = f" (and {len(positions) - 1} more rows)" if len(positions) > 1 else ""
    return InputError(f"{source}, column {column!r}, row {scores.index[positions[0]]!r}{more}: {shown} {problem}; "
                      f"{fix}")


def _not_instance(values: pd.Series, kinds: type | tuple[type, ...]) -> pd.Series:
    """True where a value is not null and not of `kinds`."""
    return values.notna() & ~values.map(lambda value: isinstance(value, kinds)).astype(bool)


def page_names(scores: pd.DataFrame, *, source: str = SCORES_FILE) -> pd.Series:
    """The Wikipedia page (BOLD `name`) of every text: the unit of the page-level intervals.

    Folders written before scores.parquet carried `name` get it from prompt_id, "domain/group/name/index".
    """
    if "name" in scores.columns:
        return scores["name"]
    parts = scores["prompt_id"].astype(str).str.extract(PROMPT_ID_PATTERN)
    bad = (parts["name"].isna() | (parts["domain"] != scores["domain"].astype(str))
           | (parts["group"] != scores["group"].astype(str)))
    if bad.any():
        raise _bad_row(scores, bad, "prompt_id",
                       "is not 'domain/group/name/index' for this row's domain and group, and the table has no "
                       "`name` column (the Wikipedia page or person of each text, the unit of the intervals) to "
                       "take the name from instead", source,
                       fix="add a `name` column, or rebuild the table with `bold-eval score`")
    return parts["name"].rename("name")


def check_scores(scores: pd.DataFrame, label_columns: Mapping[str, Sequence[Any]] | None = None, *,
                    source: str = SCORES_FILE) -> pd.DataFrame:
    """Check a scores table before any view reads it; return it with `name` (derived in older folders).

    A hand-edited table, or one from another tool, fails here with an `InputError` naming the file, column
    and row, rather than deep inside a view or a plot. `label_columns` are the run's label sets (run.json
    `label_columns`); they add to or replace the defaults in LABELS.
    """
    missing = [column for column in ID_COLUMNS if column not in scores.columns]
    if missing:
        raise InputError(f"{source} lacks the column(s) {', '.join(missing)}; every scores table has "
                         f"{', '.join(ID_COLUMNS)} (one row per text, as `bold-eval run` and `bold-eval score` "
                         "write it): add them, or rebuild the table with `bold-eval score`")
    for column in (*ID_COLUMNS, "category", "name"):
        if column not in scores.columns:
            continue
        # category may be null outside the profession domain; the others are needed on every row
        bad = _not_instance(scores[column], str) | (scores[column].isna() if column != "category" else False)
        if bad.any():
            raise _bad_row(scores, bad, column, f"is not a {column} string; every text needs its BOLD {column} "
                           "as text", source, show_type=True)
    if "category" in scores.columns:
        category = scores["category"].fillna("")
        per_group = category.groupby([scores["domain"], scores["group"]], sort=False).transform("nunique")
        if (per_group > 1).any():
            domain, group = scores.loc[per_group > 1, ["domain", "group"]].iloc[0]
            rows = (scores["domain"] == domain) & (scores["group"] == group)
            first = category[rows].iloc[0]
            found = ", ".join(repr(value) for value in pd.unique(category[rows]))
            raise _bad_row(scores, rows & (category != first), "category",
                           f"is a second category of group {group!r} ({domain}): its rows say {found}, but a group "
                           f"belongs to one Table 3 super-group (its first row says {first!r})", source)
    names = page_names(scores, source=source)
    labels = {**LABELS, **{column: tuple(values) for column, values in (label_columns or {}).items()}}
    for column in [*labels, *BOOLEAN_COLUMNS]:
        if column not in scores.columns:
            continue
        values = scores[column]
        if column in BOOLEAN_COLUMNS or set(labels[column]) == {True, False}:
            if pd.api.types.is_bool_dtype(values):
                continue
            bad = _not_instance(values, (bool, np.bool_))
            if bad.any():
                raise _bad_row(scores, bad, column, "is not a boolean (True or False)", source, show_type=True)
            continue
        bad = values.notna() & ~values.isin(labels[column])
        if bad.any():
            raise _bad_row(scores, bad, column, f"is not one of the metric's labels ({', '.join(map(str, labels[column]))})",
                           source)
    return scores if "name" in scores.columns else scores.assign(name=names)


# --------------------------------------------------------------------------- intervals and tests


def wilson_interval(count: Any, total: Any, *, alpha: float = 0.05) -> tuple[Any, Any]:
    """Wilson score interval for count/total (arrays allowed); NaN where total is 0."""
    count = np.asarray(count, dtype=float)
    total = np.asarray(total, dtype=float)
    safe_total = np.where(total > 0, total, 1.0)
    low, high = proportion_confint(count, safe_total, alpha=alpha, method="wilson")
    low = np.where(total > 0, low, np.nan)
    high = np.where(total > 0, high, np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def cluster_bootstrap_interval(
    hits: pd.Series,
    clusters: pd.Series,
    *,
    alpha: float = 0.05,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a proportion, resampling whole clusters (prompts).

    Resampling prompts rather than texts keeps the several samples of one prompt together, so
    the interval is honest when a prompt was generated more than once.
    """
    per_cluster = (
        pd.DataFrame({"hit": hits.astype(float).to_numpy(), "cluster": clusters.to_numpy()})
        .groupby("cluster", sort=False)["hit"]
        .agg(["sum", "count"])
    )
    if len(per_cluster) < 2:
        return float("nan"), float("nan")

    def pooled(hit_sum: np.ndarray, count: np.ndarray, axis: int = -1) -> np.ndarray:
        return hit_sum.sum(axis=axis) / count.sum(axis=axis)

    result = bootstrap(
        (per_cluster["sum"].to_numpy(), per_cluster["count"].to_numpy()),
        pooled,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=1 - alpha,
        method="percentile",
        batch=500,
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _contingency_table(frame: pd.DataFrame, column: str, labels: Sequence[Any] | None, target: Any,
                       group_column: str) -> pd.DataFrame:
    """Groups x (target, not target), or groups x labels; null labels and empty columns left out."""
    data = frame[frame[column].notna()]
    if target is not None:
        hit = data[column].eq(target)
        observed = pd.crosstab(data[group_column], hit).reindex(columns=[True, False], fill_value=0)
        observed.columns = [str(target), f"not {target}"]
    else:
        observed = pd.crosstab(data[group_column], data[column])
        if labels is not None:
            observed = observed.reindex(columns=list(labels), fill_value=0)
    return observed.loc[:, observed.sum(axis=0) > 0]


def chi_square_across_groups(
    frame: pd.DataFrame,
    column: str,
    labels: Sequence[Any] | None = None,
    *,
    target: Any = None,
    label: str | None = None,
    group_column: str = "group",
    min_expected: int = MIN_EXPECTED,
) -> dict[str, Any]:
    """Chi-square test of independence between group and label (Sections 6.1.3, 6.2).

    With `target`, the table is group x (target, not target): "is the proportion of negative
    sentiment the same in every group". Without it, group x every label. Texts with a null
    label are left out; labels that never occur are dropped (their expected count is 0).
    No continuity correction, so with two groups the statistic equals the squared z of
    `two_proportion_test`. Groups with an expected count below `min_expected` are listed in
    `small_groups` and the result is flagged `reliable: False`. `label` names the test in the
    result (default: the target as text).
    """
    observed = _contingency_table(frame, column, labels, target, group_column)
    result: dict[str, Any] = {
        "test": "chi-square",
        "column": column,
        "label": str(target) if label is None and target is not None else label,
        "groups": [str(group) for group in observed.index],
        "n": int(observed.to_numpy().sum()),
        "statistic": None,
        "dof": None,
        "p_value": None,
        "min_expected": None,
        "small_groups": [],
        "reliable": False,
        "rule": SMALL_GROUP_RULE.format(min_expected=min_expected),
        "note": "",
    }
    if observed.shape[0] < 2:
        result["note"] = f"needs at least 2 groups with texts, found {observed.shape[0]}"
        return result
    if observed.shape[1] < 2:
        result["note"] = "every text has the same label; the test is undefined"
        return result
    test = chi2_contingency(observed.to_numpy(), correction=False)
    expected = pd.DataFrame(test.expected_freq, index=observed.index, columns=observed.columns)
    small = expected.index[(expected < min_expected).any(axis=1)]
    result.update(
        statistic=float(test.statistic),
        dof=int(test.dof),
        p_value=float(test.pvalue),
        min_expected=float(expected.to_numpy().min()),
        small_groups=[str(group) for group in small],
        reliable=len(small) == 0,
    )
    if len(small):
        result["note"] = f"expected count < {min_expected} in: {', '.join(map(str, small))}"
    return result


def two_proportion_test(
    count_a: int,
    total_a: int,
    count_b: int,
    total_b: int,
    *,
    alpha: float = 0.05,
    min_expected: int = MIN_EXPECTED,
) -> dict[str, Any]:
    """Two-sided two-proportion z test (pooled variance), the paper's "binomial proportion test".

    Returns both proportions, the difference a - b with its Newcombe (Wilson-based) interval,
    z and p. Flags the pair as unreliable when an expected count under the pooled proportion
    is below `min_expected` (same rule as the chi-square test).
    """
    for name, value in (("total_a", total_a), ("total_b", total_b)):
        if value <= 0:
            raise ValueError(f"{name} must be positive to compare proportions, got {value}")
    for name, count, total in (("count_a", count_a, total_a), ("count_b", count_b, total_b)):
        if not 0 <= count <= total:
            raise ValueError(f"{name}={count} must lie between 0 and its total {total}")
    proportion_a, proportion_b = count_a / total_a, count_b / total_b
    pooled = (count_a + count_b) / (total_a + total_b)
    result: dict[str, Any] = {
        "test": "two-proportion z",
        "count_a": int(count_a),
        "total_a": int(total_a),
        "proportion_a": proportion_a,
        "count_b": int(count_b),
        "total_b": int(total_b),
        "proportion_b": proportion_b,
        "difference": proportion_a - proportion_b,
        "ci_low": None,
        "ci_high": None,
        "statistic": None,
        "p_value": None,
        "small_groups": [],
        "reliable": False,
        "note": "",
    }
    low, high = confint_proportions_2indep(
        count_a, total_a, count_b, total_b, method="newcomb", compare="diff", alpha=alpha
    )
    result.update(ci_low=float(low), ci_high=float(high))
    if pooled in (0.0, 1.0):
        result["note"] = "no variation: every text in both groups has the same outcome; the test is undefined"
        return result
    statistic, p_value = proportions_ztest([count_a, count_b], [total_a, total_b])
    small = [
        side
        for side, total in (("a", total_a), ("b", total_b))
        if min(total * pooled, total * (1 - pooled)) < min_expected
    ]
    result.update(
        statistic=float(statistic), p_value=float(p_value), small_groups=small, reliable=not small
    )
    if small:
        result["note"] = f"expected count < {min_expected} in group(s) {', '.join(small)}"
    return result


# --------------------------------------------------------------------------- proportions


def proportion_table(
    frame: pd.DataFrame,
    column: str,
    labels: Mapping[str, Any] | Sequence[Any] | None = None,
    *,
    by: Sequence[str] = ("domain", "group"),
    ci: str = "wilson",
    alpha: float = 0.05,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (`by`..., label): count, total, proportion and its interval.

    `labels` maps a label name to the value that marks it (e.g. {"toxic": True}); a plain
    sequence uses each value as its own name; None uses `LABELS[column]`. Texts where `column`
    is null (e.g. regard outside gender and race) are not counted in `total`. `prompts` is the
    number of distinct prompts behind the texts.
    """
    if ci not in ("wilson", "bootstrap"):
        raise ValueError(f"ci must be 'wilson' or 'bootstrap', got {ci!r}")
    keys = list(by)
    if not keys:
        raise ValueError("`by` needs at least one column to group on")
    if labels is None:
        if column not in LABELS:
            raise ValueError(f"no default labels for column {column!r}; pass `labels`")
        labels = LABELS[column]
    label_values = dict(labels) if isinstance(labels, Mapping) else {str(value): value for value in labels}
    data = frame[frame[column].notna()]
    hits = pd.DataFrame({name: data[column].eq(value) for name, value in label_values.items()}, index=data.index)
    grouped = hits.groupby([data[key] for key in keys], sort=True)
    counts = grouped.sum().astype(int)
    totals = grouped.size()
    prompts = data.groupby(keys, sort=True)["prompt_id"].nunique() if "prompt_id" in data else totals
    rows = []
    for index, count_row in counts.iterrows():
        key_values = index if isinstance(index, tuple) else (index,)
        total = int(totals.loc[index])
        for name in label_values:
            rows.append((*key_values, name, int(count_row[name]), total, int(prompts.loc[index])))
    table = pd.DataFrame(rows, columns=[*keys, "label", "count", "total", "prompts"])
    table["proportion"] = table["count"] / table["total"]
    if ci == "wilson":
        low, high = wilson_interval(table["count"], table["total"], alpha=alpha)
    else:
        low, high = np.full(len(table), np.nan), np.full(len(table), np.nan)
        clusters = data["prompt_id"] if "prompt_id" in data else pd.Series(data.index, index=data.index)
        group_index = grouped.indices
        for position, row in table.iterrows():
            key = tuple(row[k] for k in keys)
            positions = group_index[key if len(keys) > 1 else key[0]]
            low[position], high[position] = cluster_bootstrap_interval(
                hits[row["label"]].iloc[positions],
                clusters.iloc[positions],
                alpha=alpha,
                n_resamples=n_resamples,
                seed=seed,
            )
    table["ci_low"], table["ci_high"] = low, high
    return table


def wide_proportions(table: pd.DataFrame, index: Sequence[str] = ("domain", "group")) -> pd.DataFrame:
    """Pivot a `proportion_table` to one row per group and one column per label (+ total)."""
    keys = list(index)
    wide = table.pivot_table(index=keys, columns="label", values="proportion", sort=False)
    wide = wide[list(dict.fromkeys(table["label"]))]
    wide.columns.name = None
    totals = table.groupby(keys, sort=False)["total"].first()
    wide.insert(0, "total", totals)
    return wide.reset_index()


# --------------------------------------------------------------------------- the paper's views


def metric_status(scores: pd.DataFrame, run_info: Mapping[str, Any] | None = None) -> dict[str, dict[str, str]]:
    """For each metric: scored / skipped (with the module's message) / not requested / missing."""
    run_info = run_info or {}
    skipped = run_info.get("skipped_metrics") or {}
    partial = run_info.get("partial_metrics") or {}
    requested = run_info.get("metrics")
    status: dict[str, dict[str, str]] = {}
    for metric in METRIC_NAMES:
        missing = [column for column in REQUIRED_COLUMNS[metric] if column not in scores.columns]
        if metric in skipped:
            status[metric] = {"status": "skipped", "reason": str(skipped[metric])}
        elif len(missing) < len(REQUIRED_COLUMNS[metric]):
            status[metric] = {"status": "scored", "reason": str(partial.get(metric, ""))}
        elif requested is not None and metric not in requested:
            status[metric] = {"status": "not requested", "reason": "not in the run's --metrics"}
        else:
            status[metric] = {
                "status": "missing",
                "reason": f"scores.parquet has no column(s) {', '.join(missing)}",
            }
    return status


def run_counts(scores: pd.DataFrame) -> dict[str, Any]:
    """Texts, prompts, groups and samples per prompt, per domain and overall."""
    samples = scores.groupby("prompt_id").size()
    per_domain = {}
    for domain, part in scores.groupby("domain", sort=True):
        part_samples = part.groupby("prompt_id").size()
        per_domain[str(domain)] = {
            "texts": len(part),
            "prompts": int(part["prompt_id"].nunique()),
            "groups": int(part["group"].nunique()),
            "samples_per_prompt_min": int(part_samples.min()),
            "samples_per_prompt_max": int(part_samples.max()),
        }
    return {
        "texts": len(scores),
        "prompts": int(scores["prompt_id"].nunique()),
        "samples_per_prompt_min": int(samples.min()) if len(samples) else 0,
        "samples_per_prompt_max": int(samples.max()) if len(samples) else 0,
        "domains": per_domain,
    }


def _pair_values(
    scores: pd.DataFrame, pair: tuple[str, str, str], column: str
) -> tuple[pd.Series, pd.Series] | None:
    """The non-null `column` values of the pair's two groups; None when either has none."""
    domain, group_a, group_b = pair
    in_domain = scores["domain"] == domain
    a = scores.loc[in_domain & (scores["group"] == group_a), column].dropna()
    b = scores.loc[in_domain & (scores["group"] == group_b), column].dropna()
    if a.empty or b.empty:
        return None
    return a, b


def pair_test(
    scores: pd.DataFrame,
    pair: tuple[str, str, str],
    column: str,
    value: Any,
    *,
    label: str | None = None,
    alpha: float = 0.05,
    min_expected: int = MIN_EXPECTED,
) -> dict[str, Any] | None:
    """Two-proportion test of `column == value` between the pair's groups (None if absent)."""
    values = _pair_values(scores, pair, column)
    if values is None:
        return None
    a, b = values
    result = two_proportion_test(
        int(a.eq(value).sum()), len(a), int(b.eq(value).sum()), len(b), alpha=alpha, min_expected=min_expected
    )
    # two_proportion_test calls the sides "a" and "b"; name the groups instead.
    result["small_groups"] = [pair[1] if side == "a" else pair[2] for side in result["small_groups"]]
    if result["small_groups"]:
        result["note"] = f"expected count < {min_expected} in: {', '.join(result['small_groups'])}"
    return {"domain": pair[0], "group_a": pair[1], "group_b": pair[2], "column": column,
            "label": label if label is not None else str(value), **result}


def domain_chi_squares(
    scores: pd.DataFrame,
    column: str,
    targets: Mapping[str, Any],
    min_expected: int = MIN_EXPECTED,
    *,
    group_column: str = "group",
) -> list[dict[str, Any]]:
    """Per domain with any `column` value, one chi-square test across `group_column` per target.

    `group_column="model"` on several runs' texts gives the cross-model tests (Section 6.2).
    """
    tests = []
    for domain, part in scores.groupby("domain", sort=True):
        if part[column].notna().sum() == 0:
            continue
        for name, value in targets.items():
            result = chi_square_across_groups(part, column, target=value, label=name, group_column=group_column,
                                              min_expected=min_expected)
            tests.append({"domain": str(domain), **result})
    return tests


def pair_tests(
    scores: pd.DataFrame,
    pairs: Sequence[tuple[str, str, str]],
    column: str,
    targets: Mapping[str, Any],
    *,
    alpha: float = 0.05,
    min_expected: int = MIN_EXPECTED,
) -> list[dict[str, Any]]:
    """`pair_test` for every pair and target label, leaving out pairs absent from the run."""
    results = (pair_test(scores, pair, column, value, label=name, alpha=alpha, min_expected=min_expected)
               for pair in pairs for name, value in targets.items())
    return [result for result in results if result is not None]


def _label_tests(scores: pd.DataFrame, metric: str, pairs: Sequence[tuple[str, str, str]], *,
                 alpha: float, min_expected: int) -> list[dict[str, Any]]:
    """A metric's tested labels: chi-square across each domain's groups, then the paper's pairs."""
    column, targets = TESTED_LABELS[metric]
    return [*domain_chi_squares(scores, column, targets, min_expected),
            *pair_tests(scores, pairs, column, targets, alpha=alpha, min_expected=min_expected)]


def sentiment_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                   min_expected: int = MIN_EXPECTED, seed: int = 0) -> dict[str, Any]:
    """Figures 3-5: positive/neutral/negative shares per domain and group (VADER, Section 4.1).

    Tests: chi-square across each domain's groups for positive and for negative (Section 6.1.3),
    and male vs female two-proportion tests (Section 6.1.2).
    """
    table = proportion_table(scores, TESTED_LABELS["sentiment"][0], ci=ci, alpha=alpha, seed=seed)
    tests = _label_tests(scores, "sentiment", [GENDER_PAIR], alpha=alpha, min_expected=min_expected)
    return {"tables": {"sentiment": table}, "tests": tests}


def toxicity_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                  min_expected: int = MIN_EXPECTED, seed: int = 0) -> dict[str, Any]:
    """Figure 3 / Section 6.1.3: toxic_ratio (share of texts with any toxic label) per group."""
    column, targets = TESTED_LABELS["toxicity"]
    table = proportion_table(scores, column, targets, ci=ci, alpha=alpha, seed=seed)
    table = table.drop(columns="label").rename(columns={"count": "toxic", "proportion": "toxic_ratio"})
    tests = _label_tests(scores, "toxicity", [GENDER_PAIR], alpha=alpha, min_expected=min_expected)
    return {"tables": {"toxic_ratio": table}, "tests": tests}


def regard_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                min_expected: int = MIN_EXPECTED, seed: int = 0) -> dict[str, Any]:
    """Table 5: regard label shares for the gender and race groups (Section 4.3 limits regard to them).

    Tests: chi-square across groups for positive and negative regard, and the Table 5 pairs
    (male vs female; African vs European Americans).
    """
    column = TESTED_LABELS["regard"][0]
    data = scores[scores["domain"].isin(["gender", "race"]) & scores[column].notna()]
    if data.empty:
        return {"skipped": "no regard labels in the gender or race domains (regard is only defined there, Section 4.3)"}
    table = proportion_table(data, column, ci=ci, alpha=alpha, seed=seed)
    tests = _label_tests(data, "regard", [GENDER_PAIR, RACE_PAIR], alpha=alpha, min_expected=min_expected)
    return {"tables": {"regard": table}, "tests": tests}


def gender_polarity_methods(scores: pd.DataFrame) -> dict[str, str]:
    """The gender-polarity methods scored in this run (paper order), e.g. only unigram offline."""
    return {method: display for method, display in GENDER_POLARITY_METHODS.items()
            if f"gender_polarity_{method}_label" in scores.columns}


def _gender_polarity_table(profession: pd.DataFrame, by: list[str], ci: str, alpha: float, seed: int) -> pd.DataFrame:
    blocks = []
    for method, display in gender_polarity_methods(profession).items():
        column = f"gender_polarity_{method}_label"
        long = proportion_table(profession, column, ("male", "female"), by=by, ci=ci, alpha=alpha, seed=seed)
        wide = long.pivot_table(index=by, columns="label", values=["count", "proportion", "ci_low", "ci_high"],
                                sort=False)
        block = pd.DataFrame(index=wide.index)
        block["method"] = method
        block["method_name"] = display
        block["total"] = long.groupby(by, sort=False)["total"].first()
        for gender in ("male", "female"):
            block[gender] = wide[("count", gender)].astype(int)
        male, female = block["male"], block["female"]
        block["male_to_female"] = male_to_female(male, female)
        for gender in ("male", "female"):
            block[f"{gender}_proportion"] = wide[("proportion", gender)]
            block[f"{gender}_ci_low"] = wide[("ci_low", gender)]
            block[f"{gender}_ci_high"] = wide[("ci_high", gender)]
        block["male_minus_female"] = block["male_proportion"] - block["female_proportion"]
        # Male and female shares come from the same texts (one multinomial), so the difference's variance
        # is (p_m + p_f - (p_m - p_f)^2) / n; a normal-approximation interval, clipped to [-1, 1].
        spread = norm.ppf(1 - alpha / 2) * np.sqrt(
            (block["male_proportion"] + block["female_proportion"] - block["male_minus_female"] ** 2) / block["total"])
        block["male_minus_female_ci_low"] = (block["male_minus_female"] - spread).clip(lower=-1.0)
        block["male_minus_female_ci_high"] = (block["male_minus_female"] + spread).clip(upper=1.0)
        blocks.append(block.reset_index())
    return pd.concat(blocks, ignore_index=True)


# Resamples of the page bootstrap behind Table 3's male : female intervals and the Section 6.2 average.
RATIO_RESAMPLES = 9999


def male_to_female(male: Any, female: Any) -> Any:
    """male # / female # (Table 3): infinite with male texts and no female one, undefined (NaN) with neither."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(np.asarray(male, dtype=float), np.asarray(female, dtype=float))


def _to_unit(ratio: Any) -> Any:
    """r / (1 + r): the ratio's order on [0, 1], with an infinite ratio at 1."""
    ratio = np.asarray(ratio, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(ratio), 1.0, ratio / (1 + ratio))


def _from_unit(unit: float) -> float:
    return float("inf") if unit >= 1 else float(unit / (1 - unit))


Strata = Sequence[tuple[np.ndarray, np.ndarray]]  # per category: male and female texts of each page


def _page_bootstrap(strata: Strata, combine: Callable[[list[tuple[Any, Any]]], Any], *, alpha: float,
                    seed: int, n_resamples: int = RATIO_RESAMPLES) -> tuple[float, float]:
    """Percentile interval of a ratio statistic, resampling Wikipedia pages within each category.

    `combine` maps the categories' (male, female) totals to the statistic. Each category's page indices are
    one sample, which scipy resamples independently of the others (paired=False: stratified); an index
    keeps its page's male and female counts together. Percentiles are taken of r / (1 + r), which keeps a
    resample without female texts (r infinite) in order, and mapped back. A category of one page has
    nothing to resample and enters fixed.
    """
    varying = [len(male) >= 2 for male, _ in strata]
    if not any(varying):
        return float("nan"), float("nan")

    def statistic(*indices: np.ndarray, axis: int = -1) -> np.ndarray:
        picks = iter(indices)
        totals = []
        for (male, female), resampled in zip(strata, varying, strict=True):
            if resampled:
                index = next(picks).astype(int)
                totals.append((male[index].sum(axis=axis), female[index].sum(axis=axis)))
            else:
                totals.append((male.sum(), female.sum()))
        with np.errstate(divide="ignore", invalid="ignore"):
            return _to_unit(combine(totals))

    samples = tuple(np.arange(len(male)) for (male, _), resampled in zip(strata, varying, strict=True) if resampled)
    result = bootstrap(samples, statistic, paired=False, vectorized=True, n_resamples=n_resamples,
                       confidence_level=1 - alpha, method="percentile", batch=1000, rng=np.random.default_rng(seed))
    return _from_unit(result.confidence_interval.low), _from_unit(result.confidence_interval.high)


def _pooled(totals: list[tuple[Any, Any]]) -> Any:
    return male_to_female(sum(male for male, _ in totals), sum(female for _, female in totals))


def _average(totals: list[tuple[Any, Any]]) -> Any:
    return sum(male_to_female(male, female) for male, female in totals) / len(totals)


def ratio_interval(strata: Strata, *, alpha: float = 0.05, seed: int = 0,
                   n_resamples: int = RATIO_RESAMPLES) -> tuple[float, float, float, str]:
    """All male texts / all female texts of the strata, with its page-bootstrap interval and a note.

    One stratum is a Table 3 cell; several give the pooled ratio. Without female texts the ratio is
    infinite and every resample too, so the lower end is the Wilson bound with the pages as the unit:
    none of k pages female bounds the female share by z^2 / (k + z^2), the ratio below by k / z^2
    (and, without male texts, the ratio 0 above by z^2 / k).
    """
    male = float(sum(m.sum() for m, _ in strata))
    female = float(sum(f.sum() for _, f in strata))
    pages = sum(len(m) for m, _ in strata)
    ratio = float(male_to_female(male, female))
    if male + female == 0:
        return ratio, float("nan"), float("nan"), "no text classified male or female: the ratio is undefined"
    if female == 0 or male == 0:
        _, share_high = wilson_interval(0, pages, alpha=alpha)
        bound = (1 - share_high) / share_high
        if female == 0:
            return ratio, bound, float("inf"), (f"no female text: the ratio is infinite; the lower end is the Wilson "
                                                f"bound over its {pages} page(s), as no resample has a female text")
        return ratio, 0.0, 1 / bound, (f"no male text: the ratio is 0; the upper end is the Wilson bound over its "
                                       f"{pages} page(s), as no resample has a male text")
    low, high = _page_bootstrap(strata, _pooled, alpha=alpha, seed=seed, n_resamples=n_resamples)
    return ratio, low, high, "" if not np.isnan(low) else "one page per category: nothing to resample, no interval"


def average_ratio(strata: Mapping[str, tuple[np.ndarray, np.ndarray]], *, alpha: float = 0.05, seed: int = 0,
                  n_resamples: int = RATIO_RESAMPLES) -> tuple[float, float, float, str]:
    """Section 6.2's summary of Table 3: the mean of the categories' male : female ratios, with an interval
    from the page bootstrap stratified by category. Undefined (NaN) when a category has no female text."""
    undefined = [category for category, (male, female) in strata.items() if female.sum() == 0]
    if undefined:
        return (float("nan"), float("nan"), float("nan"),
                f"undefined: {', '.join(undefined)} {'has' if len(undefined) == 1 else 'have'} no female text, "
                "so its ratio is infinite or undefined")
    estimate = float(_average([(male.sum(), female.sum()) for male, female in strata.values()]))
    low, high = _page_bootstrap(list(strata.values()), _average, alpha=alpha, seed=seed, n_resamples=n_resamples)
    return estimate, low, high, ""


def _page_strata(categorized: pd.DataFrame, column: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """category -> (male, female) texts per page, over the pages with a text classified male or female."""
    label = categorized[column]
    pages = pd.DataFrame({"category": categorized["category"].to_numpy(), "name": page_names(categorized).to_numpy(),
                          "male": label.eq("male").to_numpy(dtype=int), "female": label.eq("female").to_numpy(dtype=int)})
    pages = pages[pages["male"] + pages["female"] > 0].groupby(["category", "name"], sort=False)[["male", "female"]].sum()
    strata = {category: (np.zeros(0), np.zeros(0)) for category in pd.unique(categorized["category"])}
    for category, part in pages.groupby(level="category", sort=False):
        strata[category] = (part["male"].to_numpy(dtype=float), part["female"].to_numpy(dtype=float))
    return strata


def _with_ratio_intervals(table: pd.DataFrame, categorized: pd.DataFrame, alpha: float,
                          seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3 with each male : female's page-bootstrap interval, and the Section 6.2 summary per method."""
    pages = page_names(categorized).groupby(categorized["category"]).nunique()
    cells, summary = [], []
    for method, display in gender_polarity_methods(categorized).items():
        strata = _page_strata(categorized, f"gender_polarity_{method}_label")
        for category, stratum in strata.items():
            ratio, low, high, note = ratio_interval([stratum], alpha=alpha, seed=seed)
            cells.append({"method": method, "category": category, "pages": int(pages[category]),
                          "male_to_female_ci_low": low, "male_to_female_ci_high": high, "male_to_female_note": note})
        average, average_low, average_high, average_note = average_ratio(strata, alpha=alpha, seed=seed)
        pooled, pooled_low, pooled_high, pooled_note = ratio_interval(list(strata.values()), alpha=alpha, seed=seed)
        summary.append({
            "method": method, "method_name": display, "categories": len(strata),
            "male": int(sum(male.sum() for male, _ in strata.values())),
            "female": int(sum(female.sum() for _, female in strata.values())),
            "average_male_to_female": average, "average_ci_low": average_low, "average_ci_high": average_high,
            "pooled_male_to_female": pooled, "pooled_ci_low": pooled_low, "pooled_ci_high": pooled_high,
            "note": "; ".join(note for note in (average_note, pooled_note and f"pooled: {pooled_note}") if note),
        })
    return table.merge(pd.DataFrame(cells), on=["method", "category"], how="left"), pd.DataFrame(summary)


def gender_polarity_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                         min_expected: int = MIN_EXPECTED, seed: int = 0) -> dict[str, Any]:
    """Table 3 and Figure 2: texts classified male / female in the profession domain (Section 4.5).

    `gender_polarity_category`: per Table 3 super-group (`category`), male and female counts and
    male_to_female ratio for Gender-Max, Gender-Wavg and unigram matching, the ratio with a 1 - alpha
    interval from a bootstrap over Wikipedia pages (`name`; a page's sentences are not independent).
    `gender_polarity_ratio_summary`: per method, Section 6.2's average of those ratios and the pooled
    ratio (all male / all female texts), each with its interval. `gender_polarity_group`:
    the same per fine-grained profession, with `male_minus_female` (Figure 2 plots Gender-Max).
    Tests: chi-square across super-groups of the male / female / neutral distribution per metric.
    """
    profession = scores[scores["domain"] == "profession"]
    if profession.empty:
        return {"skipped": "no texts in the profession domain"}
    has_category = "category" in profession.columns
    by = ["category", "group"] if has_category else ["group"]
    if has_category:
        profession = profession.assign(category=profession["category"].fillna("").astype(str))
        # Professions outside the four Table 3 super-groups have category "".
        categorized = profession[profession["category"] != ""]
    else:
        categorized = profession.iloc[:0]  # no super-groups: no Table 3, no tests
    method_rank = {name: rank for rank, name in enumerate(GENDER_POLARITY_METHODS)}
    tables: dict[str, pd.DataFrame] = {}
    tests = []
    if not categorized.empty:
        table = _gender_polarity_table(categorized, ["category"], ci, alpha, seed)
        category_rank = {name: rank for rank, name in enumerate(profession_categories())}
        table = table.assign(
            _method=table["method"].map(method_rank),
            _category=table["category"].map(category_rank).fillna(len(category_rank)),
        ).sort_values(["_method", "_category", "category"])
        table = table.drop(columns=["_method", "_category"]).reset_index(drop=True)
        tables["gender_polarity_category"], tables["gender_polarity_ratio_summary"] = _with_ratio_intervals(
            table, categorized, alpha, seed)
        for method, display in gender_polarity_methods(categorized).items():
            column = f"gender_polarity_{method}_label"
            result = chi_square_across_groups(categorized, column, LABELS[column],
                                              label=f"{display}: male/female/neutral",
                                              group_column="category", min_expected=min_expected)
            tests.append({"domain": "profession", **result})
    group_table = _gender_polarity_table(profession, by, ci, alpha, seed)
    tables["gender_polarity_group"] = (
        group_table.assign(_method=group_table["method"].map(method_rank),
                           _uncategorized=group_table["category"].eq("") if has_category else False)
        .sort_values(["_method", "_uncategorized", *by]).drop(columns=["_method", "_uncategorized"])
        .reset_index(drop=True)
    )
    token_columns = [c for c in ("gender_polarity_male_tokens", "gender_polarity_female_tokens") if c in profession]
    if token_columns and not categorized.empty:
        tables["gender_polarity_tokens"] = (
            categorized.groupby("category", sort=True)[token_columns].sum().astype(int)
            .rename(columns=lambda c: c.removeprefix("gender_polarity_")).reset_index()
        )
    return {"tables": tables, "tests": tests}


def psycholinguistic_view(scores: pd.DataFrame, *, ci: str = "wilson", alpha: float = 0.05,
                          min_expected: int = MIN_EXPECTED, seed: int = 0) -> dict[str, Any]:
    """Tables 9-11 (category shares per group) and Tables 4, 6 (pair differences, with tests).

    A text is in "valence (-ve)" when its valence label is negative, in "joy" when `is_joy`
    (Section 4.4). The differences are male minus female (Table 4: American_actors minus
    American_actresses) and Christianity minus Islam (Table 6), each with a two-proportion test.
    """
    categories = {name: spec for name, spec in PSYCHOLINGUISTIC_CATEGORIES.items() if spec[0] in scores.columns}
    missing = sorted(set(PSYCHOLINGUISTIC_CATEGORIES) - set(categories))
    tables = []
    for name, (column, value) in categories.items():
        table = proportion_table(scores, column, {name: value}, ci=ci, alpha=alpha, seed=seed)
        tables.append(table)
    proportions = pd.concat(tables, ignore_index=True).rename(columns={"label": "category"})
    proportions = proportions.sort_values(["domain", "group"], kind="stable").reset_index(drop=True)
    view: dict[str, Any] = {"tables": {"psycholinguistic": proportions}, "tests": []}
    for table_name, pair in (("psycholinguistic_gender_difference", GENDER_PAIR),
                             ("psycholinguistic_religion_difference", RELIGION_PAIR)):
        rows = []
        for name, (column, value) in categories.items():
            result = pair_test(scores, pair, column, value, label=name, alpha=alpha, min_expected=min_expected)
            if result:
                rows.append({"category": name, "header": PSYCHOLINGUISTIC_HEADERS[name], **result})
        if rows:
            view["tables"][table_name] = pd.DataFrame(rows)
    if missing:
        view["notes"] = [f"psycholinguistic columns absent for: {', '.join(missing)}"]
    return view


VIEWS = {
    "sentiment": sentiment_view,
    "toxicity": toxicity_view,
    "regard": regard_view,
    "psycholinguistic": psycholinguistic_view,
    "gender_polarity": gender_polarity_view,
}


def summarize(
    scores: pd.DataFrame,
    run_info: Mapping[str, Any] | None = None,
    *,
    ci: str = "wilson",
    alpha: float = 0.05,
    min_expected: int = MIN_EXPECTED,
    seed: int = 0,
    correction: str = DEFAULT_CORRECTION,
    cluster: str = DEFAULT_CLUSTER,
    reference: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Every view the paper reports, for the metrics this run scored, and the findings.

    Returns {"counts", "metrics" (status per metric), "statistics" (how intervals and tests were
    computed), "findings" (`findings`: contrasts tested with `cluster` as the unit under `correction`,
    design effects, power, largest gaps), "reference_findings" (when `reference`, the Wikipedia sentences of
    the same prompts, is given: model x source interactions, `findings.paired_findings`), and one entry per
    metric: {"tables": {name: DataFrame}, "tests": [dict]} or {"skipped": reason}}.
    """
    alpha = check_alpha(alpha)
    check_correction(correction)
    check_cluster(cluster)
    scores = check_scores(scores, (run_info or {}).get("label_columns"))
    status = metric_status(scores, run_info)
    counts = run_counts(scores)
    counts["coverage"] = coverage(counts)
    summary: dict[str, Any] = {"counts": counts, "metrics": status,
                               "statistics": _statistics(counts, ci, alpha, correction, cluster, min_expected)}
    for metric, view in VIEWS.items():
        if status[metric]["status"] != "scored":
            summary[metric] = {"skipped": f"{status[metric]['status']}: {status[metric]['reason']}"}
            continue
        summary[metric] = _holm_within_tables(view(scores, ci=ci, alpha=alpha, min_expected=min_expected, seed=seed),
                                              alpha)
    summary["findings"] = run_findings(scores, alpha=alpha, correction=correction, cluster=cluster, seed=seed)
    if reference is not None and len(reference):
        reference = check_scores(reference, (run_info or {}).get("label_columns"), source="reference_scores.parquet")
        summary["reference_findings"] = paired_findings(scores, reference, finding_labels(scores), alpha=alpha,
                                                        correction=correction, cluster=cluster, seed=seed)
    return summary


def _holm_within_tables(view: dict[str, Any], alpha: float) -> dict[str, Any]:
    """Give the paper's own tests (chi-square and pair tests, Tables 4 and 6) a `p_holm`: Holm-adjusted within
    their table, so no p-value the report prints is outside a stated correction."""
    tests = view.get("tests") or []
    if tests:
        p_values = [test["p_value"] for test in tests]
        known = [i for i, p in enumerate(p_values) if p is not None and not pd.isna(p)]
        adjusted, _ = adjust([p_values[i] for i in known], alpha=alpha, correction="holm")
        for test in tests:
            test["p_holm"] = None
        for i, value in zip(known, adjusted, strict=True):
            tests[i]["p_holm"] = float(value)
    for name, table in (view.get("tables") or {}).items():
        if name.endswith("_difference") and "p_value" in table:
            p_values = pd.to_numeric(table["p_value"], errors="coerce")
            known = p_values.notna().to_numpy()
            holm = np.full(len(table), np.nan)
            holm[known] = adjust(p_values[known].to_numpy(), alpha=alpha, correction="holm")[0]
            table["p_holm"] = holm
    return view


def _statistics(counts: Mapping[str, Any], ci: str, alpha: float, correction: str, cluster: str,
                min_expected: int) -> dict[str, Any]:
    """How the summary's intervals and tests were computed, in words the report prints."""
    return {
        "alpha": alpha,
        "confidence_level": 1 - alpha,
        "confidence_label": confidence_label(alpha),
        "correction": correction,
        "correction_name": CORRECTIONS[correction][1],
        "cluster": cluster,
        "cluster_unit": CLUSTER_UNITS[cluster],
        "findings_test": METHOD_NOTES[PERMUTATION] if cluster != "none"
        else f"{METHOD_NOTES[Z_TEST]}; {METHOD_NOTES[FISHER]} when an expected count is below {min_expected}",
        "interval": "Wilson score" if ci == "wilson" else "percentile bootstrap over prompts",
        "chi_square": "scipy.stats.chi2_contingency without continuity correction, groups x (label, not label); "
                      "texts as units (the paper's test, Section 6.1.3); p-values Holm-adjusted within each table",
        "pair_test": "two-sided two-proportion z test with pooled variance (statsmodels proportions_ztest), "
                     "Newcombe interval on the difference; texts as units (the paper's binomial proportion test, "
                     "Section 6.1.2); p-values Holm-adjusted within each table",
        "small_group_rule": SMALL_GROUP_RULE.format(min_expected=min_expected),
        "unit": cluster,
        "samples_note": (
            "several samples per prompt: they nest inside their prompt and name, which the findings treat as one "
            "unit; the per-metric tables pool all texts" if counts["samples_per_prompt_max"] > 1 else ""
        ),
    }


# --------------------------------------------------------------------------- findings: who differs, how sure

def finding_labels(scores: pd.DataFrame) -> list[tuple[str, str, str, Any, tuple[str, ...] | None]]:
    """The labels whose rates are compared across groups: (metric, label name, per-text column, value
    that marks a text, domains or None for all). Sentiment, toxicity and regard use their tested
    labels (regard in gender and race only, Section 4.3), psycholinguistic norms the eleven categories of
    Tables 4, 6, 9-11, gender polarity the male and female shares of the profession domain (Table 3)
    for the first method scored in the paper's order (Gender-Max, else Gender-Wavg, else unigram)."""
    labels: list[tuple[str, str, str, Any, tuple[str, ...] | None]] = []
    for metric in ("sentiment", "toxicity", "regard"):
        column, targets = TESTED_LABELS[metric]
        if column in scores.columns:
            domains = ("gender", "race") if metric == "regard" else None
            labels += [(metric, name, column, value, domains) for name, value in targets.items()]
    methods = gender_polarity_methods(scores)
    if methods:
        method, display = next(iter(methods.items()))
        column = f"gender_polarity_{method}_label"
        labels += [("gender_polarity", f"{display} {gender}", column, gender, ("profession",))
                   for gender in ("male", "female")]
    labels += [("psycholinguistic", PSYCHOLINGUISTIC_HEADERS[name], column, value, None)
               for name, (column, value) in PSYCHOLINGUISTIC_CATEGORIES.items() if column in scores.columns]
    return labels


def run_findings(
    scores: pd.DataFrame,
    *,
    alpha: float = 0.05,
    correction: str = DEFAULT_CORRECTION,
    cluster: str = DEFAULT_CLUSTER,
    seed: int = 0,
) -> dict[str, Any]:
    """Which groups differ, how sure we are, and how much the run could see (`findings.group_findings`),
    plus the largest gap between two groups per domain and metric (`findings.largest_gaps`)."""
    labels = finding_labels(scores)
    found = group_findings(scores, labels, alpha=alpha, correction=correction, cluster=cluster, seed=seed)
    found["gaps"] = largest_gaps(scores, labels, alpha=alpha, cluster=cluster)
    return found
