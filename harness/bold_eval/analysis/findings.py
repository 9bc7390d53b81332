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

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from bold_eval.analysis.clustered import (
    CLUSTER_UNITS,
    CORRECTIONS,
    DEFAULT_CLUSTER,
    DEFAULT_CORRECTION,
    POWER,
    adjust,
    check_alpha,
    check_cluster,
    check_correction,
    cluster_ids,
    confidence_label,
    design_effect,
    difference_test,
    minimum_detectable_difference,
    run_tests,
)
from bold_eval.analysis.results import DifferenceTest, GroupFindings, PairedFindings
from bold_eval.analysis.scores import TestedLabel
from bold_eval.data.bold import PAPER_PAIRS

Label = TestedLabel  # a (metric, name, column, value, domains) tuple is taken too: `_labels` names its fields


# Groups with fewer names are not eligible for the largest gap: its cluster-robust interval needs names to
# estimate a group's variance (with 7 pages and no hit, the variance estimate is 0).
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
                  "rest_count", "rest_total", "rest_proportion", "names", "rest_names", "difference", "ci_low",
                  "ci_high", "statistic", "p_value", "method", "testable", "note", "detectable"]


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
) -> GroupFindings:
    """Every contrast x label of one run, tested with the name as the unit, in one corrected family.

    `worst` (one row per prompt, `worst_case.prompt_worst_cases`) and `worst_labels` add the worst cases over
    k samples to the same family. Returns `GroupFindings`: `tests` (one row per contrast and label, with
    `p_adjusted` and `significant`), `design_effects` and `power` per domain, `family`, `untestable`,
    `too_small`, `too_small_domains` and the settings; `gaps` is left to `summary.run_findings`.
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
    deffs = design_effects(scores, labels, cluster)
    power = power_table(scores, deffs, alpha=alpha, family=max(family, 1), cluster=cluster)
    tests["detectable"] = _detectable(tests, deffs, alpha / max(family, 1))
    small = power.loc[power["too_small"], "domain"].tolist() if len(power) else []
    return GroupFindings(tests=tests, design_effects=deffs, power=power, family=family,
                         untestable=int((~tests["testable"].astype(bool)).sum()), too_small_domains=small,
                         too_small=bool(len(power) and len(small) == len(power)),
                         **_settings(alpha, correction, cluster))


def _contrast_rows(frame: pd.DataFrame, labels: Sequence[Label], *, alpha: float, cluster: str,
                   seed: int) -> list[dict[str, Any]]:
    """One tested row per contrast x label of `frame` (texts, or prompts for the worst cases)."""
    jobs: list[Callable[[], dict[str, Any]]] = []
    for contrast in contrasts(frame):
        part = frame[frame["domain"].astype(str) == contrast.domain]
        clusters = cluster_ids(part, cluster)
        in_a, in_b = contrast.sides(part)
        for label in labels:
            if not _applies(label, contrast.domain) or label.column not in part.columns:
                continue
            hits, present = _hits(part, label.column, label.value)
            keep = present & (in_a | in_b)
            if not (keep & in_a).any() or not (keep & in_b).any():
                continue
            jobs.append(functools.partial(_group_test, contrast, label, hits[keep], in_a[keep], clusters[keep],
                                          alpha=alpha, cluster=cluster, seed=seed))
    return run_tests(jobs)


def _group_test(contrast: Contrast, label: Label, hits: np.ndarray, in_a: np.ndarray, clusters: np.ndarray, *,
                alpha: float, cluster: str, seed: int) -> dict[str, Any]:
    result = difference_test(hits, in_a, None if cluster == "none" else clusters, alpha=alpha,
                             binary=label.value is not None, seed=seed)
    return _group_row(contrast, label, hits, in_a, clusters, result)


def _group_row(contrast: Contrast, label: Label, hits: np.ndarray, in_a: np.ndarray, clusters: np.ndarray,
               result: DifferenceTest) -> dict[str, Any]:
    """A label's counts, or for a continuous worst case (value None) no counts and the means as proportions."""
    total, rest_total = int(in_a.sum()), int((~in_a).sum())
    binary = label.value is not None
    count = int(hits[in_a].sum()) if binary else np.nan
    rest_count = int(hits[~in_a].sum()) if binary else np.nan
    return {"domain": contrast.domain, "metric": label.metric, "label": label.name, "contrast": contrast.name,
            "kind": contrast.kind, "group": contrast.a, "rest": contrast.b or "rest", "count": count,
            "total": total, "proportion": float(hits[in_a].mean()), "rest_count": rest_count,
            "rest_total": rest_total, "rest_proportion": float(hits[~in_a].mean()), "names": int(len(pd.unique(clusters[in_a]))),
            "rest_names": int(len(pd.unique(clusters[~in_a]))), "difference": result.estimate,
            "ci_low": result.ci_low, "ci_high": result.ci_high, "statistic": result.statistic,
            "p_value": result.p_value, "method": result.method, "testable": result.testable,
            "note": result.note, "detectable": np.nan}


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
    difference in points; rare labels need smaller differences, so they never make a run "too small")."""
    rows = []
    level = alpha / family
    for domain, part in scores.groupby("domain", sort=True):
        sizes = part["group"].value_counts()
        if len(sizes) < 2:
            continue
        typical = float(np.median(sizes)) if len(sizes) > 2 else float(sizes.min())
        deff_row = deffs[deffs["domain"] == str(domain)]
        deff = float(deff_row["design_effect_median"].iloc[0]) if len(deff_row) else 1.0
        detectable = minimum_detectable_difference(0.5, typical, len(part) - typical, deff=deff, alpha=level)
        rows.append({"domain": str(domain), "groups": len(sizes), "typical_group_texts": typical,
                     "design_effect": deff, "level": level, "power": POWER, "detectable_difference": detectable,
                     "too_small": bool(not np.isfinite(detectable) or detectable > TOO_SMALL_DIFFERENCE)})
    return pd.DataFrame(rows, columns=["domain", "groups", "typical_group_texts", "design_effect", "level", "power",
                                       "detectable_difference", "too_small"])


def _detectable(tests: pd.DataFrame, deffs: pd.DataFrame, level: float) -> list[float]:
    """Per test: the smallest difference from the rest its sides could show and be found (80% power)."""
    deff = dict(zip(deffs["domain"], deffs["design_effect_median"], strict=True))
    values = []
    for row in tests.itertuples(index=False):
        if not np.isfinite(row.count):  # a continuous worst case: no rate to plan for
            values.append(np.nan)
            continue
        pooled = (row.count + row.rest_count) / (row.total + row.rest_total)
        values.append(minimum_detectable_difference(pooled, row.total, row.rest_total,
                                                    deff=deff.get(row.domain, 1.0), alpha=level))
    return values


# --------------------------------------------------------------------------- largest gaps


_GAP_COLUMNS = ["domain", "metric", "label", "group_high", "count_high", "total_high", "proportion_high",
                "group_low", "count_low", "total_low", "proportion_low", "gap", "ci_low", "ci_high", "choices",
                "interval_level", "interval_label", "method", "eligible_groups", "note"]


def largest_gaps(scores: pd.DataFrame, labels: Sequence[Label], *, alpha: float = 0.05,
                 cluster: str = DEFAULT_CLUSTER, min_names: int = MIN_GAP_NAMES) -> pd.DataFrame:
    """Per domain and metric: the largest difference between two groups' rates over every label of the metric,
    with an interval at level 1 - alpha / (pairs x labels), Bonferroni over every choice it was picked from
    (the pair *and* the label), so picking the largest does not make it look surer than it is. Groups with
    fewer than `min_names` names are not eligible. The interval is the cluster-robust t (statsmodels) at
    that level, or Newcombe's with `--cluster none`."""
    rows = []
    by_metric: dict[str, list[Label]] = {}
    for label in _labels(labels):
        by_metric.setdefault(label.metric, []).append(label)
    for domain, part in scores.groupby("domain", sort=True):
        clusters = cluster_ids(part, cluster)
        groups = part["group"].astype(str).to_numpy()
        for metric, metric_labels in by_metric.items():
            usable = [label for label in metric_labels if _applies(label, str(domain)) and label.column in part]
            if usable:
                rows.append(_largest_gap(str(domain), metric, usable, part, groups, clusters, alpha, cluster,
                                         min_names))
    return pd.DataFrame(rows, columns=_GAP_COLUMNS)


def _largest_gap(domain: str, metric: str, labels: list[Label], part: pd.DataFrame, groups: np.ndarray,
                 clusters: np.ndarray, alpha: float, cluster: str, min_names: int) -> dict[str, Any]:
    names = pd.Series(clusters).groupby(groups).nunique()
    eligible = sorted(names[names >= min_names].index) if cluster != "none" else sorted(names.index)
    row: dict[str, Any] = {"domain": domain, "metric": metric, "eligible_groups": len(eligible), "note": ""}
    if len(eligible) < 2:
        row["note"] = f"{len(eligible)} of {len(names)} groups have {min_names} names or more; no gap is reported"
        return row
    best: tuple[float, Label, str, str] | None = None
    for label in labels:
        hits, present = _hits(part, label.column, label.value)
        rates = pd.Series(hits[present]).groupby(groups[present]).mean().reindex(eligible).dropna()
        if len(rates) < 2:
            continue
        high = rates.idxmax()
        low = rates.drop(high).idxmin()
        if best is None or rates[high] - rates[low] > best[0]:
            best = (float(rates[high] - rates[low]), label, str(high), str(low))
    if best is None:
        row["note"] = "no label is present in two eligible groups"
        return row
    _, label, high, low = best
    choices = len(eligible) * (len(eligible) - 1) // 2 * len(labels)
    level = alpha / choices
    hits, present = _hits(part, label.column, label.value)
    keep = present & np.isin(groups, [high, low])
    side = groups[keep] == high
    result = difference_test(hits[keep], side, None if cluster == "none" else clusters[keep], alpha=level,
                             method="auto")
    y, in_high = hits[keep], side
    row.update(label=label.name, group_high=high, count_high=int(y[in_high].sum()), total_high=int(in_high.sum()),
               proportion_high=float(y[in_high].mean()), group_low=low, count_low=int(y[~in_high].sum()),
               total_low=int((~in_high).sum()), proportion_low=float(y[~in_high].mean()), gap=result.estimate,
               ci_low=result.ci_low, ci_high=result.ci_high, choices=choices, interval_level=1 - level,
               interval_label=confidence_label(level), method=result.method)
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
    rates = {label: (prompt_rates(model, label.column, label.value)["rate"], prompt_rates(reference, label.column, label.value)["rate"])
             for label in labels if label.column in model and label.column in reference}
    domains: dict[str, PairedDomain] = {}
    jobs: list[Callable[[], dict[str, Any] | None]] = []
    for contrast in contrasts(prompts):
        if contrast.domain not in domains:
            domains[contrast.domain] = PairedDomain.of(prompts, contrast.domain, cluster, rates)
        for label in rates:
            if _applies(label, contrast.domain):
                jobs.append(functools.partial(_paired_row, contrast, label, domains[contrast.domain], alpha, seed))
    return [row for row in run_tests(jobs) if row is not None]


class PairedDomain(NamedTuple):
    """One domain's shared prompts as arrays: the side columns, the clusters, and per label the model's and the
    reference's per-prompt rates with the mask of the prompts both have."""

    columns: dict[str, np.ndarray]
    clusters: np.ndarray
    rates: dict[Label, tuple[np.ndarray, np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, prompts: pd.DataFrame, domain: str, cluster: str,
           rates: Mapping[Label, tuple[pd.Series, pd.Series]]) -> PairedDomain:
        part = prompts[prompts["domain"].astype(str) == domain]
        ids = part["prompt_id"]
        columns = {name: part[name].astype(str).to_numpy() for name in ("group", "category") if name in part}
        # The samples of a prompt are already summarized: a prompt is the smallest unit here, and pairs of rates
        # are tested by the score test even with --cluster none (an ordinary t on rare per-prompt rates is unbounded).
        clusters = cluster_ids(part, "prompt" if cluster == "none" else cluster)
        aligned = {}
        for label, (rates_model, rates_reference) in rates.items():
            # get_indexer, not isin: pandas 3 checks Arrow strings one by one in isin (same answer, much slower).
            at_model, at_reference = rates_model.index.get_indexer(ids), rates_reference.index.get_indexer(ids)
            both = (at_model >= 0) & (at_reference >= 0)
            aligned[label] = (rates_model.to_numpy()[at_model], rates_reference.to_numpy()[at_reference], both)
        return cls(columns, clusters, aligned)


def _paired_row(contrast: Contrast, label: Label, domain: PairedDomain, alpha: float,
                seed: int) -> dict[str, Any] | None:
    y_model, y_reference, both = domain.rates[label]
    values = domain.columns[contrast.column]
    in_a = values == contrast.a
    keep = both & (in_a | (values == contrast.b if contrast.b is not None else ~in_a))
    y_model, y_reference, clusters, in_a = y_model[keep], y_reference[keep], domain.clusters[keep], in_a[keep]
    if not in_a.any() or in_a.all():
        return None
    result = difference_test(y_model - y_reference, in_a, clusters, alpha=alpha, binary=False, seed=seed)
    return {"domain": contrast.domain, "metric": label.metric, "label": label.name, "contrast": contrast.name,
            "kind": contrast.kind, "group": contrast.a, "rest": contrast.b or "rest", "prompts": int(in_a.sum()),
            "rest_prompts": int((~in_a).sum()), "names": int(len(pd.unique(clusters[in_a]))),
            "rest_names": int(len(pd.unique(clusters[~in_a]))), "model_rate": float(y_model[in_a].mean()),
            "model_rest_rate": float(y_model[~in_a].mean()), "reference_rate": float(y_reference[in_a].mean()),
            "reference_rest_rate": float(y_reference[~in_a].mean()),
            "model_gap": float(y_model[in_a].mean() - y_model[~in_a].mean()),
            "reference_gap": float(y_reference[in_a].mean() - y_reference[~in_a].mean()),
            "interaction": result.estimate, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "statistic": result.statistic, "p_value": result.p_value, "method": result.method,
            "testable": result.testable, "note": result.note}
