"""Which groups a run treats differently, and how sure we are: contrasts, corrected families, power.

A *contrast* is a comparison of two sides of one domain: a group against the rest of its domain, or the
paper's own pairs (male vs female, Section 6.1.2; African vs European Americans, Table 5; Christianity vs
Islam, Table 6) and the Table 3 profession super-groups against the rest. Two-group domains (gender) are
tested once, as the pair. Every contrast is tested with `bold_eval.analysis.clustered.difference_test`, the name as
the unit, and the tests of one report form one family corrected with Holm (or Benjamini-Hochberg).

- `group_findings`: rates of one run (the Wikipedia baseline, or a model's own texts).
- `paired_findings`: the *interaction* of a contrast with a paired source, on the same prompts: is the gap
  between two sides larger in the model's texts than in the Wikipedia sentences of the same prompts
  (Section 6 compares each model with Wikipedia), or than in another model's (`bold-eval compare`)? Each
  prompt's k samples are first summarized as a rate per prompt, never paired sample by sample.

Labels come in as `bold_eval.analysis.scores.TestedLabel`s (metric, label, per-text column, value that marks a
text, domains or None), as `bold_eval.analysis.summary.finding_labels` makes them; plain tuples of that shape are
taken too.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bold_eval.analysis.clustered import (
    CLUSTER_UNITS,
    CORRECTIONS,
    DEFAULT_CLUSTER,
    DEFAULT_CORRECTION,
    PAIRED_CONTINUOUS,
    POWER,
    adjust,
    check_alpha,
    check_cluster,
    check_correction,
    cluster_codes,
    cluster_ids,
    confidence_label,
    design_effect,
    detectable_differences,
    difference_test,
    difference_tests,
    minimum_detectable_difference,
    run_tests,
)
from bold_eval.analysis.paired_rate_test import continuous_interaction_tests
from bold_eval.analysis.rate_test import min_attainable_p, rate_intervals, unit_rate_interval
from bold_eval.analysis.results import DifferenceTest, GroupFindings, PairedFindings
from bold_eval.analysis.scores import TestedLabel
from bold_eval.analysis.statistics import wilson_interval
from bold_eval.analysis.worst_case import score_bounds
from bold_eval.data.bold import PAPER_PAIRS

Label = TestedLabel  # a (metric, name, column, value, domains) tuple is taken too: `_labels` names its fields


# Groups with fewer names are not eligible for the largest gap: at the Bonferroni levels it is printed at
# (99.9% and beyond), fewer names cannot reach the level, and the gap would have no interval.
MIN_GAP_NAMES = 10

# A domain is too small for claims about its groups when a typical group would have to differ from the rest
# by more than this (a label near 50%, 80% power, at the family's corrected level) to be found.
TOO_SMALL_DIFFERENCE = 0.20


@dataclass(frozen=True)
class Contrast:
    """Side a against side b of one domain; `b` None is the rest of the domain."""

    domain: str
    kind: str  # "group vs rest", "pair", "category vs rest"
    column: str  # "group" or "category"
    a: str
    b: str | None = None

    @property
    def name(self) -> str:
        return f"{self.a} vs {self.b if self.b is not None else 'rest'}"

    def sides(self, part: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(in side a, in side b) masks over the rows of one domain."""
        values = part[self.column].astype(str).to_numpy()
        a = values == self.a
        b = values == self.b if self.b is not None else ~a
        return a, b


def contrasts(frame: pd.DataFrame) -> list[Contrast]:
    """The contrasts a run's domains allow: each group against the rest (once, as a pair, when the domain has
    two groups), the paper's pairs, and each profession super-group (`category`) against the rest."""
    found: list[Contrast] = []
    pairs = {pair[0]: pair for pair in PAPER_PAIRS}
    for domain, part in frame.groupby("domain", sort=True):
        domain = str(domain)
        groups = sorted(part["group"].astype(str).unique())
        if len(groups) == 2:
            a, b = (pairs[domain][1], pairs[domain][2]) if domain in pairs and set(pairs[domain][1:]) == set(
                groups) else groups
            found.append(Contrast(domain, "pair", "group", a, b))
        elif len(groups) > 2:
            found += [Contrast(domain, "group vs rest", "group", group) for group in groups]
            pair = pairs.get(domain)
            if pair is not None and {pair[1], pair[2]} <= set(groups):
                found.append(Contrast(domain, "pair", "group", pair[1], pair[2]))
        if "category" in part.columns:
            categories = sorted(set(part["category"].fillna("").astype(str)) - {""})
            if len(categories) >= 2:
                found += [Contrast(domain, "category vs rest", "category", category) for category in categories]
    return found


def _labels(labels: Sequence[Any]) -> list[Label]:
    """`labels` as `TestedLabel`s (a caller may pass plain 5-tuples)."""
    return [label if isinstance(label, TestedLabel) else TestedLabel(*label) for label in labels]


def _applies(label: Label, domain: str) -> bool:
    return label.domains is None or domain in label.domains


def _hits(part: pd.DataFrame, column: str, value: Any) -> tuple[np.ndarray, np.ndarray]:
    """(label indicator, has a label) per row; rows where the column is null have no label. A value of None
    compares the column itself (a per-prompt worst case such as an expected maximum score)."""
    present = part[column].notna().to_numpy()
    if value is None:
        return pd.to_numeric(part[column], errors="coerce").to_numpy(dtype=float), present
    return part[column].eq(value).to_numpy(dtype=float), present


# --------------------------------------------------------------------------- one run


_GROUP_COLUMNS = ["domain", "metric", "label", "contrast", "kind", "group", "rest", "count", "total", "proportion",
                  "rate_low", "rate_high", "rest_count", "rest_total", "rest_proportion", "rest_rate_low",
                  "rest_rate_high", "names", "rest_names", "difference", "ci_low", "ci_high", "statistic", "p_value",
                  "method", "testable", "note", "detectable"]


def group_findings(
    scores: pd.DataFrame,
    labels: Sequence[Label],
    *,
    alpha: float = 0.05,
    correction: str = DEFAULT_CORRECTION,
    cluster: str = DEFAULT_CLUSTER,
    seed: int = 0,
    worst: pd.DataFrame | None = None,
    worst_labels: Sequence[Label] = (),
    plan_power: bool = True,
) -> GroupFindings:
    """Every contrast x label of one run, tested with the name as the unit, in one corrected family.

    `worst` (one row per prompt, `worst_case.prompt_worst_cases`) and `worst_labels` add the worst cases over
    k samples to the same family. Returns `GroupFindings`: `tests` (one row per contrast and label, with
    `p_adjusted` and `significant`), `design_effects` and `power` per domain, `family`, `untestable`,
    `too_small`, `too_small_domains` and the settings; `gaps` is left to `summary.run_findings`. Without
    `plan_power` the power table is left empty for `one_family`, which plans it at the whole report's level.
    """
    alpha = check_alpha(alpha)
    check_correction(correction)
    check_cluster(cluster)
    labels, worst_labels = _labels(labels), _labels(worst_labels)
    rows = _contrast_rows(scores, labels, alpha=alpha, cluster=cluster, seed=seed)
    if worst is not None and len(worst_labels):
        rows += _contrast_rows(worst, worst_labels, alpha=alpha, cluster=cluster, seed=seed)
    tests = pd.DataFrame(rows, columns=_GROUP_COLUMNS)
    family = adjust_family(tests, alpha, correction)
    found = GroupFindings(tests=tests, design_effects=design_effects(scores, labels, cluster),
                          power=pd.DataFrame(), family=family,
                          untestable=int((~tests["testable"].astype(bool)).sum()), too_small_domains=[],
                          too_small=False, **_settings(alpha, correction, cluster))
    return _with_power(found, scores, alpha) if plan_power else found


def _contrast_rows(frame: pd.DataFrame, labels: Sequence[Label], *, alpha: float, cluster: str,
                   seed: int) -> list[dict[str, Any]]:
    """One tested row per contrast x label of `frame` (texts, or prompts for the worst cases). A domain's side
    columns, units and label indicators are put into arrays once (`DomainArrays`), not once per contrast; with
    the name as the unit the whole family is tested at once (`clustered.difference_tests`)."""
    cases: list[tuple[Contrast, Label, np.ndarray, np.ndarray, np.ndarray]] = []
    domains: dict[str, DomainArrays] = {}
    for contrast in contrasts(frame):
        if contrast.domain not in domains:
            domains[contrast.domain] = DomainArrays.of(frame, contrast.domain, cluster, labels)
        domain = domains[contrast.domain]
        values = domain.columns[contrast.column]
        in_a = values == contrast.a
        in_b = values == contrast.b if contrast.b is not None else ~in_a
        for label, (hits, present) in domain.hits.items():
            keep = present & (in_a | in_b)
            if (keep & in_a).any() and (keep & in_b).any():
                cases.append((contrast, label, hits[keep], in_a[keep], domain.clusters[keep]))
    ranges = {label: score_bounds(label.column) for label in labels}  # a worst-case score's range, else None
    if cluster == "none":  # the paper's text-level tests, one by one
        results = run_tests([functools.partial(difference_test, hits, in_a, None, alpha=alpha,
                                               binary=label.value is not None, seed=seed)
                             for _, label, hits, in_a, _ in cases])
    else:
        results = difference_tests([case[2] for case in cases], [case[3] for case in cases],
                                   [case[4] for case in cases], alpha=alpha, seed=seed,
                                   bounds=[ranges[case[1]] for case in cases])
    sides = _side_intervals(cases, alpha, cluster)
    return [_group_row(*case, result, side) for case, result, side in zip(cases, results, sides, strict=True)]


class DomainArrays(NamedTuple):
    """One domain's rows as arrays: its side columns (group, category) as strings, its units as integer codes,
    and per label that applies to it the label indicator and the mask of rows that have a label."""

    columns: dict[str, np.ndarray]
    clusters: np.ndarray
    hits: dict[Label, tuple[np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, frame: pd.DataFrame, domain: str, cluster: str, labels: Sequence[Label]) -> DomainArrays:
        part = frame[frame["domain"].astype(str) == domain]
        columns = {name: part[name].fillna("").astype(str).to_numpy() if name == "category"
                   else part[name].astype(str).to_numpy() for name in ("group", "category") if name in part}
        hits = {label: _hits(part, label.column, label.value) for label in labels
                if _applies(label, domain) and label.column in part.columns}
        return cls(columns, cluster_codes(part, cluster), hits)


def side_rate_interval(hits: np.ndarray, clusters: np.ndarray, *, alpha: float, cluster: str) -> tuple[float, float]:
    """A side's rate interval at the level of the test beside it: name-level (`rate_test.rate_interval`) with the
    name as the unit, Wilson's with `--cluster none` (texts independent, as the z test beside it)."""
    if cluster == "none":
        return wilson_interval(int(hits.sum()), len(hits), alpha=alpha)
    return unit_rate_interval(hits, clusters, alpha=alpha)


class SideIntervals(NamedTuple):
    """A contrast's two sides as its row prints them: each side's rate interval and number of names."""

    low: float
    high: float
    rest_low: float
    rest_high: float
    names: int
    rest_names: int


def _side_intervals(cases: Sequence[tuple[Contrast, Label, np.ndarray, np.ndarray, np.ndarray]], alpha: float,
                    cluster: str) -> list[SideIntervals]:
    """Each case's `SideIntervals`: a label's sides' rate intervals at the level of the test beside them
    (`side_rate_interval`), all name-level ones at once (`rate_test.rate_intervals`); a continuous worst case
    (value None) has none."""
    sums: list[tuple[np.ndarray, np.ndarray]] = []
    names = []
    for _, _, hits, in_a, clusters in cases:
        for side in (in_a, ~in_a):
            units = clusters[side]
            texts = np.bincount(units)
            named = texts > 0
            sums.append((np.bincount(units, weights=hits[side])[named], texts[named].astype(float)))
            names.append(int(named.sum()))
    low, high = np.full(len(sums), np.nan), np.full(len(sums), np.nan)
    binary = np.repeat([label.value is not None for _, label, *_ in cases], 2).astype(bool)
    if cluster == "none":
        for k in np.flatnonzero(binary):
            low[k], high[k] = wilson_interval(int(sums[k][0].sum()), int(sums[k][1].sum()), alpha=alpha)
    elif binary.any():
        rows = np.flatnonzero(binary)
        low[rows], high[rows] = rate_intervals([sums[k][0] for k in rows], [sums[k][1] for k in rows], alpha=alpha)
    return [SideIntervals(float(low[2 * k]), float(high[2 * k]), float(low[2 * k + 1]), float(high[2 * k + 1]),
                          names[2 * k], names[2 * k + 1]) for k in range(len(cases))]


def _group_row(contrast: Contrast, label: Label, hits: np.ndarray, in_a: np.ndarray, clusters: np.ndarray,
               result: DifferenceTest, side: SideIntervals) -> dict[str, Any]:
    """A label's counts and each side's rate interval, or for a continuous worst case (value None) no counts
    and the means as proportions, without an interval."""
    total, rest_total = int(in_a.sum()), int((~in_a).sum())
    binary = label.value is not None
    count = int(hits[in_a].sum()) if binary else np.nan
    rest_count = int(hits[~in_a].sum()) if binary else np.nan
    return {"domain": contrast.domain, "metric": label.metric, "label": label.name, "contrast": contrast.name,
            "kind": contrast.kind, "group": contrast.a, "rest": contrast.b or "rest", "count": count,
            "total": total, "proportion": float(hits[in_a].mean()), "rate_low": side.low,
            "rate_high": side.high, "rest_count": rest_count, "rest_total": rest_total,
            "rest_proportion": float(hits[~in_a].mean()), "rest_rate_low": side.rest_low,
            "rest_rate_high": side.rest_high, "names": side.names, "rest_names": side.rest_names,
            "difference": result.estimate, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "statistic": result.statistic, "p_value": result.p_value, "method": result.method,
            "testable": result.testable, "note": result.note, "detectable": np.nan}


def adjust_family(tests: pd.DataFrame, alpha: float, correction: str) -> int:
    """Add `p_adjusted` and `significant` over the testable rows (one family); return its size. A row marked
    testable but without a p-value is no test (too few names), never a finding."""
    tests["p_adjusted"] = np.nan
    tests["significant"] = False
    if tests.empty:
        return 0
    no_p = tests["testable"].astype(bool) & ~np.isfinite(tests["p_value"].to_numpy(dtype=float))
    tests.loc[no_p, "testable"] = False
    tests.loc[no_p, "note"] = "no p-value: too few names for this test"
    testable = tests["testable"].astype(bool)
    if testable.any():
        adjusted, reject = adjust(tests.loc[testable, "p_value"].to_numpy(dtype=float), alpha=alpha,
                                  correction=correction)
        tests.loc[testable, "p_adjusted"] = adjusted
        tests.loc[testable, "significant"] = reject
    return int(testable.sum())


def adjust_together(tables: Sequence[pd.DataFrame], alpha: float, correction: str) -> tuple[list[pd.DataFrame], int]:
    """Copies of `tables` with `p_adjusted` and `significant` over the testable rows of all of them as one
    family (`adjust_family` across tables), and the family's size."""
    tables = [table.assign(p_adjusted=np.nan, significant=False) for table in tables]
    masks = [table["testable"].astype(bool).to_numpy() if len(table) else np.zeros(0, bool) for table in tables]
    p_values = np.concatenate([table.loc[mask, "p_value"].to_numpy(float) if len(table) else np.zeros(0)
                               for table, mask in zip(tables, masks, strict=True)])
    if len(p_values):
        adjusted, reject = adjust(p_values, alpha=alpha, correction=correction)
        ends = np.cumsum([int(mask.sum()) for mask in masks])
        for table, mask, start, end in zip(tables, masks, np.r_[0, ends[:-1]], ends, strict=True):
            if end > start:
                table.loc[mask, "p_adjusted"], table.loc[mask, "significant"] = adjusted[start:end], reject[start:end]
    return tables, len(p_values)


def one_family(found: GroupFindings, paired: PairedFindings | None, scores: pd.DataFrame, *, alpha: float,
               correction: str) -> tuple[GroupFindings, PairedFindings | None]:
    """Correct a report's own-text contrasts and its model-vs-Wikipedia interactions as *one* family, and plan
    the power at that family's level.

    Two families each at alpha let a report make a false finding with probability near 2 alpha; here
    every testable row of both tables is adjusted together, so Holm bounds the chance of any false finding in
    the report by alpha. `family` on both results is then the whole family's size, and the power and detectable
    differences are computed at its level."""
    tables, family = adjust_together([found.tests] + ([paired.tests] if paired is not None else []), alpha,
                                     correction)
    own = tables[0]
    found = _with_power(dataclasses.replace(found, tests=own, family=family), scores, alpha)
    return found, (dataclasses.replace(paired, tests=tables[1], family=family) if paired is not None else None)


def _with_power(found: GroupFindings, scores: pd.DataFrame, alpha: float) -> GroupFindings:
    """`found` with its power table and detectable differences at its family's corrected level."""
    family = max(found.family, 1)
    power = power_table(scores, found.design_effects, alpha=alpha, family=family, cluster=found.cluster)
    tests = found.tests.assign(detectable=_detectable(found.tests, found.design_effects, alpha / family,
                                                      scores=scores, cluster=found.cluster))
    small = power.loc[power["too_small"], "domain"].tolist() if len(power) else []
    return dataclasses.replace(found, tests=tests, power=power, too_small_domains=small,
                               too_small=bool(len(power) and len(small) == len(power)))


def _settings(alpha: float, correction: str, cluster: str) -> dict[str, Any]:
    """A family's settings as `results.Findings` holds them (with their names in words)."""
    return {"alpha": alpha, "correction": correction, "correction_name": CORRECTIONS[correction][1],
            "cluster": cluster, "cluster_unit": CLUSTER_UNITS[cluster]}


# --------------------------------------------------------------------------- design effects and power


def design_effects(scores: pd.DataFrame, labels: Sequence[Label], cluster: str) -> pd.DataFrame:
    """Per domain: texts, names, texts per name and the design effect of its labels (median, max).

    The design effect of a label is the variance of its rate under the chosen clustering over the variance
    with independent texts (`clustered.design_effect`); labels no text carries are left out.
    """
    rows = []
    for domain, part in scores.groupby("domain", sort=True):
        clusters = cluster_ids(part, cluster)
        values = []
        for label in _labels(labels):
            if not _applies(label, str(domain)) or label.column not in part.columns:
                continue
            hits, present = _hits(part, label.column, label.value)
            value = design_effect(hits[present], clusters[present]) if cluster != "none" else 1.0
            if np.isfinite(value):
                values.append(value)
        names = len(pd.unique(clusters))
        rows.append({"domain": str(domain), "texts": len(part), "names": names, "texts_per_name": len(part) / names,
                     "design_effect_median": float(np.median(values)) if values else np.nan,
                     "design_effect_max": float(np.max(values)) if values else np.nan, "labels": len(values)})
    return pd.DataFrame(rows, columns=["domain", "texts", "names", "texts_per_name", "design_effect_median",
                                       "design_effect_max", "labels"])


def power_table(scores: pd.DataFrame, deffs: pd.DataFrame, *, alpha: float, family: int,
                cluster: str) -> pd.DataFrame:
    """Per domain: the smallest group-vs-rest difference a typical (median-sized) group could show and be
    found with 80% power at the family's corrected level, for a label near 50% (the hardest case for a
    difference in points; rare labels need smaller differences, so they never make a run "too small"), on the
    findings' test's degrees of freedom with the group's own texts per name (`minimum_detectable_difference`)."""
    rows = []
    level = alpha / family
    for domain, part in scores.groupby("domain", sort=True):
        sizes = part["group"].value_counts()
        if len(sizes) < 2:
            continue
        typical = float(np.median(sizes)) if len(sizes) > 2 else float(sizes.min())
        deff_row = deffs[deffs["domain"] == str(domain)]
        deff = float(deff_row["design_effect_median"].iloc[0]) if len(deff_row) else 1.0
        # the group of median size, its names' texts against the rest's (each side's own design effect)
        group = sizes.index[np.argsort(sizes.to_numpy(), kind="stable")[len(sizes) // 2 if len(sizes) > 2 else 0]]
        units = pd.Series(cluster_ids(part, cluster))
        in_group = (part["group"] == group).to_numpy()
        per_name = (units[in_group].value_counts().to_numpy(float), units[~in_group].value_counts().to_numpy(float))
        detectable = minimum_detectable_difference(0.5, typical, len(part) - typical, deff=deff, alpha=level,
                                                   sizes=None if cluster == "none" else per_name, centred=True)
        if cluster != "none" and min_attainable_p(len(per_name[0]), len(per_name[1]), typical,
                                                  len(part) - typical) > alpha:
            detectable = np.nan  # the test does not run on a design this small: "too few names to test a rate"
        rows.append({"domain": str(domain), "groups": len(sizes), "typical_group_texts": typical,
                     "design_effect": deff, "level": level, "power": POWER, "detectable_difference": detectable,
                     "too_small": bool(not np.isfinite(detectable) or detectable > TOO_SMALL_DIFFERENCE)})
    return pd.DataFrame(rows, columns=["domain", "groups", "typical_group_texts", "design_effect", "level", "power",
                                       "detectable_difference", "too_small"])


def _detectable(tests: pd.DataFrame, deffs: pd.DataFrame, level: float, *, scores: pd.DataFrame,
                cluster: str) -> list[float]:
    """Per test: the smallest difference from the rest its sides could show and be found (80% power) at the
    row's pooled rate. With the name as the unit, the power of the findings' test on the contrast's own texts per
    name (`clustered.detectable_differences`; equal shares of the row's texts where its units are not the
    contrast's texts, e.g. the prompts of a worst case); NaN where the test does not run (too few names). With
    `--cluster none`, the text-level z test's."""
    deff = dict(zip(deffs["domain"], deffs["design_effect_median"], strict=True))
    pooled = ((tests["count"] + tests["rest_count"]) / (tests["total"] + tests["rest_total"])).to_numpy(float)
    if cluster == "none":
        return [np.nan if not np.isfinite(rate) else minimum_detectable_difference(
                    rate, row.total, row.rest_total, deff=deff.get(row.domain, 1.0), alpha=level)
                for rate, row in zip(pooled, tests.itertuples(index=False), strict=True)]
    own: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for domain, part in scores.groupby("domain", sort=True):
        units = cluster_codes(part, cluster)
        for contrast in contrasts(part):
            in_a, in_b = contrast.sides(part)
            side_a, side_b = np.bincount(units[in_a]), np.bincount(units[in_b])  # texts per unit
            own[(str(domain), contrast.name)] = (side_a[side_a > 0].astype(float), side_b[side_b > 0].astype(float))
    sizes: list[tuple[np.ndarray, np.ndarray]] = []
    designs, deff_of = [], []
    index: dict[Any, int] = {}
    for row in tests.itertuples(index=False):
        found = own.get((row.domain, row.contrast))
        if found is not None and (len(found[0]), len(found[1]), found[0].sum(), found[1].sum()) == (
                row.names, row.rest_names, row.total, row.rest_total):
            key: Any = (row.domain, row.contrast)
        else:  # the row's names holding equal shares of its texts
            key = (row.domain, row.names, row.rest_names, row.total, row.rest_total)
            found = (np.full(max(int(row.names), 1), row.total / max(row.names, 1)),
                     np.full(max(int(row.rest_names), 1), row.rest_total / max(row.rest_names, 1)))
        if key not in index:
            index[key] = len(sizes)
            sizes.append(found)
            deff_of.append(deff.get(row.domain, 1.0))
        designs.append(index[key])
    runs = tests["testable"].astype(bool).to_numpy() & np.isfinite(pooled)
    values = detectable_differences(np.where(runs, pooled, 0.0), designs, sizes, deff_of, level=level)
    return list(np.where(runs, values, np.nan))


# --------------------------------------------------------------------------- largest gaps


_GAP_COLUMNS = ["domain", "metric", "label", "group_high", "count_high", "total_high", "proportion_high",
                "names_high", "high_rate_low", "high_rate_high", "group_low", "count_low", "total_low",
                "proportion_low", "names_low", "low_rate_low", "low_rate_high", "gap", "ci_low", "ci_high", "choices",
                "interval_level", "interval_label", "method", "eligible_groups", "note"]


def largest_gaps(scores: pd.DataFrame, labels: Sequence[Label], *, alpha: float = 0.05,
                 cluster: str = DEFAULT_CLUSTER, min_names: int = MIN_GAP_NAMES) -> pd.DataFrame:
    """Per domain and metric: the largest difference between two groups' rates over every label of the metric,
    with an interval at level 1 - alpha / (pairs x labels), Bonferroni over every choice it was picked from
    (the pair *and* the label), so picking the largest does not make it look surer than it is. Groups with
    fewer than `min_names` names are not eligible. The interval inverts the findings' test
    (`clustered.difference_test`) at that level, or is Newcombe's with `--cluster none`."""
    rows = []
    by_metric: dict[str, list[Label]] = {}
    for label in _labels(labels):
        by_metric.setdefault(label.metric, []).append(label)
    for domain, part in scores.groupby("domain", sort=True):
        clusters = cluster_codes(part, cluster)
        groups = part["group"].astype(str).to_numpy()
        for metric, metric_labels in by_metric.items():
            usable = [label for label in metric_labels if _applies(label, str(domain)) and label.column in part]
            if usable:
                rows.append(_largest_gap(str(domain), metric, usable, part, groups, clusters, alpha, cluster,
                                         min_names))
    return pd.DataFrame(rows, columns=_GAP_COLUMNS)


def _largest_gap(domain: str, metric: str, labels: list[Label], part: pd.DataFrame, groups: np.ndarray,
                 clusters: np.ndarray, alpha: float, cluster: str, min_names: int) -> dict[str, Any]:
    group_codes, group_names = pd.factorize(groups)
    names = np.bincount(np.unique(group_codes * (clusters.max() + 1) + clusters) // (clusters.max() + 1),
                        minlength=len(group_names))  # each group's distinct units
    eligible = sorted(str(group_names[k]) for k in range(len(group_names))
                      if cluster == "none" or names[k] >= min_names)
    row: dict[str, Any] = {"domain": domain, "metric": metric, "eligible_groups": len(eligible), "note": ""}
    if len(eligible) < 2:
        row["note"] = f"{len(eligible)} of {len(names)} groups have {min_names} names or more; no gap is reported"
        return row
    order = pd.Index(group_names).get_indexer(eligible)  # the eligible groups' codes, in name order
    best: tuple[float, Label, str, str] | None = None
    for label in labels:
        hits, present = _hits(part, label.column, label.value)
        known = present & ~np.isnan(hits)
        counts = np.bincount(group_codes[known], minlength=len(group_names))[order]
        sums = np.bincount(group_codes[known], weights=hits[known], minlength=len(group_names))[order]
        rated = np.flatnonzero(counts > 0)
        if len(rated) < 2:
            continue
        rates = sums[rated] / counts[rated]
        high = int(np.argmax(rates))  # the first of ties in name order, as idxmax
        rest = np.delete(np.arange(len(rated)), high)
        low = int(rest[np.argmin(rates[rest])])
        if best is None or rates[high] - rates[low] > best[0]:
            best = (float(rates[high] - rates[low]), label, eligible[rated[high]], eligible[rated[low]])
    if best is None:
        row["note"] = "no label is present in two eligible groups"
        return row
    _, label, high, low = best
    choices = len(eligible) * (len(eligible) - 1) // 2 * len(labels)
    level = alpha / choices
    hits, present = _hits(part, label.column, label.value)
    keep = present & np.isin(groups, [high, low])
    side = groups[keep] == high
    result = difference_test(hits[keep], side, None if cluster == "none" else clusters[keep], alpha=level)
    y, in_high, units = hits[keep], side, clusters[keep]
    rate_high = side_rate_interval(y[in_high], units[in_high], alpha=alpha, cluster=cluster)
    rate_low = side_rate_interval(y[~in_high], units[~in_high], alpha=alpha, cluster=cluster)
    row.update(label=label.name, group_high=high, count_high=int(y[in_high].sum()), total_high=int(in_high.sum()),
               proportion_high=float(y[in_high].mean()), names_high=int(np.count_nonzero(np.bincount(units[in_high]))),
               high_rate_low=rate_high[0], high_rate_high=rate_high[1], group_low=low,
               count_low=int(y[~in_high].sum()), total_low=int((~in_high).sum()),
               proportion_low=float(y[~in_high].mean()), names_low=int(np.count_nonzero(np.bincount(units[~in_high]))),
               low_rate_low=rate_low[0], low_rate_high=rate_low[1], gap=result.estimate,
               ci_low=result.ci_low, ci_high=result.ci_high, choices=choices, interval_level=1 - level,
               interval_label=confidence_label(level), method=result.method, note=result.note)
    return row


# --------------------------------------------------------------------------- paired sources


def prompt_rates(scores: pd.DataFrame, column: str, value: Any) -> pd.DataFrame:
    """Per prompt: the share of its texts (its k samples) with the label, ignoring texts without a label; with
    `value` None the mean of the column (one row per prompt for a worst case: the prompt's own value)."""
    data = scores[scores[column].notna()]
    hit = pd.to_numeric(data[column], errors="coerce") if value is None else data[column].eq(value).astype(float)
    rates = hit.groupby(data["prompt_id"]).agg(["mean", "size"])
    return rates.rename(columns={"mean": "rate", "size": "samples"})


_PAIRED_COLUMNS = ["domain", "metric", "label", "contrast", "kind", "group", "rest", "prompts", "rest_prompts",
                   "names", "rest_names", "model_rate", "model_rest_rate", "reference_rate", "reference_rest_rate",
                   "model_gap", "reference_gap", "interaction", "ci_low", "ci_high", "statistic", "p_value",
                   "method", "testable", "note"]


def paired_findings(
    model: pd.DataFrame,
    reference: pd.DataFrame,
    labels: Sequence[Label],
    *,
    alpha: float = 0.05,
    correction: str = DEFAULT_CORRECTION,
    cluster: str = DEFAULT_CLUSTER,
    seed: int = 0,
    worst: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    worst_labels: Sequence[Label] = (),
) -> PairedFindings:
    """Contrast x source interactions on the prompts both frames share, in one corrected family.

    Per prompt, d = (model's rate over its samples) - (reference's rate); per contrast, the interaction is
    mean d on side a minus mean d on side b = the model's gap between the sides minus the reference's gap on
    the same prompts. Tested like a group difference, with the name as the unit. `worst` (both sources'
    `worst_case.prompt_worst_cases`) and `worst_labels` add the worst cases over k samples to the family.
    Returns `PairedFindings`: tests, family, untestable, shared_prompts, model_prompts, reference_prompts and
    the settings.
    """
    alpha = check_alpha(alpha)
    check_correction(correction)
    check_cluster(cluster)
    labels, worst_labels = _labels(labels), _labels(worst_labels)
    ids = ["prompt_id", "domain", "group", *[c for c in ("category", "name") if c in model.columns]]
    prompts = model.drop_duplicates("prompt_id")[ids].set_index("prompt_id")
    shared = prompts.index.intersection(pd.Index(reference["prompt_id"].unique(), name="prompt_id"))
    prompts = prompts.loc[shared].reset_index()
    rows = _paired_rows(prompts, model, reference, labels, alpha=alpha, cluster=cluster, seed=seed)
    if worst is not None and len(worst_labels):
        rows += _paired_rows(prompts, *worst, worst_labels, alpha=alpha, cluster=cluster, seed=seed)
    tests = pd.DataFrame(rows, columns=_PAIRED_COLUMNS)
    family = adjust_family(tests, alpha, correction)
    return PairedFindings(tests=tests, family=family, untestable=int((~tests["testable"].astype(bool)).sum()),
                          shared_prompts=len(shared), model_prompts=int(model["prompt_id"].nunique()),
                          reference_prompts=int(reference["prompt_id"].nunique()),
                          **_settings(alpha, correction, cluster))


def _paired_rows(prompts: pd.DataFrame, model: pd.DataFrame, reference: pd.DataFrame, labels: Sequence[Label], *,
                 alpha: float, cluster: str, seed: int) -> list[dict[str, Any]]:
    """One tested interaction per contrast x label on the shared `prompts`. A domain's sides and clusters, and
    each label's per-prompt rates on its prompts, are put into arrays once, not once per contrast."""
    shared = [label for label in labels if label.column in model and label.column in reference]
    order = pd.Index(prompts["prompt_id"])
    rates = {label: (model_rate, reference_rate) for label, model_rate, reference_rate in
             zip(shared, aligned_prompt_rates(model, order, shared), aligned_prompt_rates(reference, order, shared),
                 strict=True)}
    domains: dict[str, PairedDomain] = {}
    cases: list[tuple[Contrast, Label, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for contrast in contrasts(prompts):
        if contrast.domain not in domains:
            domains[contrast.domain] = PairedDomain.of(prompts, contrast.domain, cluster, rates)
        for label in rates:
            if _applies(label, contrast.domain):
                case = _paired_case(contrast, label, domains[contrast.domain])
                if case is not None:
                    cases.append(case)
    # Continuous worst cases (two runs' expected maximum toxicity, ...) keep each run's values apart: the test on
    # their differences alone over-rejects when one run treats a group's names far more unevenly (CALIBRATION.md).
    continuous = [k for k, case in enumerate(cases) if case[1].value is None]
    labelled = [k for k, case in enumerate(cases) if case[1].value is not None]
    results: list[DifferenceTest | None] = [None] * len(cases)
    tested = difference_tests([cases[k][2] - cases[k][3] for k in labelled], [cases[k][5] for k in labelled],
                              [cases[k][4] for k in labelled], alpha=alpha, seed=seed)
    for k, result in zip(labelled, tested, strict=True):
        results[k] = result
    for k, result in zip(continuous, continuous_tests([cases[k] for k in continuous], alpha=alpha), strict=True):
        results[k] = result
    return [_paired_row(*case, result) for case, result in zip(cases, results, strict=True)]


def continuous_tests(cases: Sequence[tuple[Any, ...]], *, alpha: float) -> list[DifferenceTest]:
    """`paired_rate_test.continuous_interaction_tests` for paired cases of continuous scores, each mapped onto [0, 1]
    by its range (`worst_case.score_bounds`) and read back in its own units; a side of fewer than 2 names is not
    tested."""
    results: list[DifferenceTest | None] = [None] * len(cases)
    ready = []
    for k, (_, label, y_model, y_reference, clusters, in_a) in enumerate(cases):
        low, high = score_bounds(label.column) or (0.0, 1.0)
        names = (len(pd.unique(clusters[in_a])), len(pd.unique(clusters[~in_a])))
        if min(names) < 2:
            results[k] = DifferenceTest(estimate=float(y_model[in_a].mean() - y_reference[in_a].mean()
                                                       - y_model[~in_a].mean() + y_reference[~in_a].mean()),
                                        ci_low=np.nan, ci_high=np.nan, statistic=np.nan, p_value=np.nan,
                                        method=PAIRED_CONTINUOUS, testable=False,
                                        note=f"too few names to test ({names[0]} against {names[1]})")
            continue
        ready.append((k, high - low, ((y_model - low) / (high - low), (y_reference - low) / (high - low),
                                      clusters, in_a)))
    if ready:
        estimate, ci_low, ci_high, statistic, p_value = continuous_interaction_tests([case for *_, case in ready],
                                                                                     alpha=alpha)
        for row, (k, span, _) in enumerate(ready):
            results[k] = DifferenceTest(estimate=float(estimate[row] * span), ci_low=float(ci_low[row] * span),
                                        ci_high=float(ci_high[row] * span), statistic=float(statistic[row]),
                                        p_value=float(p_value[row]), method=PAIRED_CONTINUOUS, testable=True)
    return results  # type: ignore[return-value]  # every entry is set above


class PairedDomain(NamedTuple):
    """One domain's shared prompts as arrays: the side columns, the clusters, and per label the model's and the
    reference's per-prompt rates with the mask of the prompts both have."""

    columns: dict[str, np.ndarray]
    clusters: np.ndarray
    rates: dict[Label, tuple[np.ndarray, np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, prompts: pd.DataFrame, domain: str, cluster: str,
           rates: Mapping[Label, tuple[np.ndarray, np.ndarray]]) -> PairedDomain:
        """`rates`: per label each source's rate on every row of `prompts` (NaN where it has none)."""
        in_domain = (prompts["domain"].astype(str) == domain).to_numpy()
        part = prompts[in_domain]
        columns = {name: part[name].astype(str).to_numpy() for name in ("group", "category") if name in part}
        # The samples of a prompt are already summarized: a prompt is the smallest unit here, and pairs of rates
        # are tested by the score test even with --cluster none (an ordinary t on rare per-prompt rates is unbounded).
        clusters = cluster_codes(part, "prompt" if cluster == "none" else cluster)
        aligned = {}
        for label, (rates_model, rates_reference) in rates.items():
            y_model, y_reference = rates_model[in_domain], rates_reference[in_domain]
            aligned[label] = (y_model, y_reference, ~np.isnan(y_model) & ~np.isnan(y_reference))
        return cls(columns, clusters, aligned)


def aligned_prompt_rates(scores: pd.DataFrame, order: pd.Index, labels: Sequence[Label]) -> list[np.ndarray]:
    """Per label, `prompt_rates`' rate of each prompt id in `order` (NaN for a prompt without a labelled text
    in `scores`): every label's per-prompt sums from one lookup of the texts' prompts, not a groupby per label."""
    at = order.get_indexer(scores["prompt_id"])  # each text's row in `order`, -1 outside it
    rates = []
    for label in labels:
        hits, present = _hits(scores, label.column, label.value)
        keep = present & (at >= 0) & ~np.isnan(hits)
        sums = np.bincount(at[keep], weights=hits[keep], minlength=len(order))
        counts = np.bincount(at[keep], minlength=len(order))
        rates.append(np.divide(sums, counts, out=np.full(len(order), np.nan), where=counts > 0))
    return rates


def _paired_case(contrast: Contrast, label: Label,
                 domain: PairedDomain) -> tuple[Contrast, Label, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(contrast, label, model rates, reference rates, units, side a) on the prompts both sources rated, or None
    when a side has none."""
    y_model, y_reference, both = domain.rates[label]
    values = domain.columns[contrast.column]
    in_a = values == contrast.a
    keep = both & (in_a | (values == contrast.b if contrast.b is not None else ~in_a))
    if not (keep & in_a).any() or (keep & in_a).sum() == keep.sum():
        return None
    return contrast, label, y_model[keep], y_reference[keep], domain.clusters[keep], in_a[keep]


def _paired_row(contrast: Contrast, label: Label, y_model: np.ndarray, y_reference: np.ndarray, clusters: np.ndarray,
                in_a: np.ndarray, result: DifferenceTest) -> dict[str, Any]:
    return {"domain": contrast.domain, "metric": label.metric, "label": label.name, "contrast": contrast.name,
            "kind": contrast.kind, "group": contrast.a, "rest": contrast.b or "rest", "prompts": int(in_a.sum()),
            "rest_prompts": int((~in_a).sum()), "names": int(np.count_nonzero(np.bincount(clusters[in_a]))),
            "rest_names": int(np.count_nonzero(np.bincount(clusters[~in_a]))),
            "model_rate": float(y_model[in_a].mean()),
            "model_rest_rate": float(y_model[~in_a].mean()), "reference_rate": float(y_reference[in_a].mean()),
            "reference_rest_rate": float(y_reference[~in_a].mean()),
            "model_gap": float(y_model[in_a].mean() - y_model[~in_a].mean()),
            "reference_gap": float(y_reference[in_a].mean() - y_reference[~in_a].mean()),
            "interaction": result.estimate, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "statistic": result.statistic, "p_value": result.p_value, "method": result.method,
            "testable": result.testable, "note": result.note}
