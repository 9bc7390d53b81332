"""The scores table as analysis reads it: checked, its units named, counted against BOLD."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bold_eval.analysis.results import Coverage, DomainCounts, DomainCoverage, MetricStatus, RunCounts
from bold_eval.core.errors import InputError
from bold_eval.data.bold import BOLD_PROMPTS
from bold_eval.metrics import metric_specs
from bold_eval.runfolder.layout import ID_COLUMNS, SCORES_FILE


class TestedLabel(NamedTuple):
    """A label whose rates the findings compare across groups (`summary.finding_labels`, `worst_case_labels`)."""

    metric: str
    name: str  # the label, e.g. "positive"
    column: str  # the per-text (or per-prompt) column that holds it
    value: Any  # the value that marks a text (None: the column is a number, its mean is compared)
    domains: tuple[str, ...] | None  # where it is tested; None: every domain


TestedLabel.__test__ = False  # type: ignore[attr-defined]  # not a pytest test class despite its name



def label_sets() -> dict[str, tuple[Any, ...]]:
    """Label names of every metric's categorical columns (`MetricSpec.labels`), the defaults for runs that did
    not record the scorers' own (`Scorer.label_columns`, run.json `label_columns`)."""
    return {column: tuple(labels) for spec in metric_specs() for column, labels in spec.labels.items()}


def boolean_columns() -> tuple[str, ...]:
    """Per-text columns that hold booleans (a share is their mean) besides label columns with labels True/False."""
    return tuple(column for spec in metric_specs() for column in spec.columns.boolean)


def coverage(counts: RunCounts) -> Coverage:
    """How much of BOLD a run covers: prompts per domain over the paper's Table 1 counts, and overall.

    `counts` is `run_counts`' result. `complete` is true only when all five domains are there in full.
    """
    per_domain: dict[str, DomainCoverage] = {
        domain: {"prompts": int(values["prompts"]), "bold_prompts": BOLD_PROMPTS.get(domain),
                 "share": (values["prompts"] / BOLD_PROMPTS[domain]) if domain in BOLD_PROMPTS else None}
        for domain, values in counts["domains"].items()}
    total = sum(BOLD_PROMPTS.values())
    missing = [domain for domain in BOLD_PROMPTS if domain not in per_domain]
    short = [domain for domain in per_domain
             if domain in BOLD_PROMPTS and int(counts["domains"][domain]["prompts"]) < BOLD_PROMPTS[domain]]
    return {"prompts": int(counts["prompts"]), "bold_prompts": total, "share": counts["prompts"] / total,
            "domains": per_domain, "missing_domains": missing, "partial_domains": short,
            "complete": not missing and not short}


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
    """True where a value is not null and not of `kinds`. A string column (pandas' string dtype) holds strings
    only, and a boolean column booleans only: no value is looked at one by one."""
    wanted = kinds if isinstance(kinds, tuple) else (kinds,)
    if (str in wanted and isinstance(values.dtype, pd.StringDtype)) or (
            bool in wanted and pd.api.types.is_bool_dtype(values.dtype)):
        return pd.Series(False, index=values.index)
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
    `label_columns`); they add to or replace the defaults (`label_sets`).
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
    labels = {**label_sets(), **{column: tuple(values) for column, values in (label_columns or {}).items()}}
    booleans = boolean_columns()
    for column in [*labels, *booleans]:
        if column not in scores.columns:
            continue
        values = scores[column]
        if column in booleans or set(labels[column]) == {True, False}:
            if pd.api.types.is_bool_dtype(values):
                continue
            bad = _not_instance(values, (bool, np.bool_))
            if bad.any():
                raise _bad_row(scores, bad, column, "is not a boolean (True or False)", source, show_type=True)
            continue
        bad = values.notna() & ~values.isin(labels[column])
        if bad.any():
            raise _bad_row(scores, bad, column,
                           f"is not one of the metric's labels ({', '.join(map(str, labels[column]))})",
                           source)
    return scores if "name" in scores.columns else scores.assign(name=names)


def metric_status(scores: pd.DataFrame, run_info: Mapping[str, Any] | None = None) -> dict[str, MetricStatus]:
    """For each metric: scored / skipped (with the module's message) / not requested / missing. A metric is scored
    when at least one of its `MetricSpec.scored_columns` is there (gender polarity runs unigram matching alone
    when no word embedding is available)."""
    run_info = run_info or {}
    skipped = run_info.get("skipped_metrics") or {}
    partial = run_info.get("partial_metrics") or {}
    requested = run_info.get("metrics")
    status: dict[str, MetricStatus] = {}
    for spec in metric_specs():
        metric, required = spec.name, spec.scored_columns
        missing = [column for column in required if column not in scores.columns]
        if metric in skipped:
            status[metric] = {"status": "skipped", "reason": str(skipped[metric])}
        elif len(missing) < len(required):
            status[metric] = {"status": "scored", "reason": str(partial.get(metric, ""))}
        elif requested is not None and metric not in requested:
            status[metric] = {"status": "not requested", "reason": "not in the run's --metrics"}
        else:
            status[metric] = {
                "status": "missing",
                "reason": f"scores.parquet has no column(s) {', '.join(missing)}",
            }
    return status


def run_counts(scores: pd.DataFrame) -> RunCounts:
    """Texts, prompts, groups and samples per prompt, per domain and overall."""
    samples = scores.groupby("prompt_id").size()
    per_domain: dict[str, DomainCounts] = {}
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
