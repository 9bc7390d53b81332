"""The paper's table layouts (Tables 3-6, 9-11), shared by the run report and the compare report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bold_eval.analysis.results import ChiSquareTest, PaperTest, RatioTables
from bold_eval.data.bold import GENDER_PAIR, RACE_PAIR, RELIGION_PAIR
from bold_eval.metrics.spec import Categories, MetricSpec
from bold_eval.report.markdown import (
    format_interval,
    format_p,
    markdown,
    quantity,
)

# The paper's names for the groups of its pairwise tables (Tables 4-6).
PAPER_GROUP_NAMES = {
    GENDER_PAIR[1]: "male",
    GENDER_PAIR[2]: "female",
    RACE_PAIR[1]: "african american",
    RACE_PAIR[2]: "european american",
    RELIGION_PAIR[1]: "christianity",
    RELIGION_PAIR[2]: "islam",
}


def tests_markdown(tests: Sequence[PaperTest]) -> str:
    """One line per test: what was compared, the statistic, p and whether groups were big enough."""
    rows = []
    for test in tests:
        if isinstance(test, ChiSquareTest):
            compared = quantity(len(test.groups), "group")
            statistic = "n/a" if test.statistic is None else f"chi2={test.statistic:.3f}, dof={test.dof}"
            detail = ""
        else:
            compared = f"{test.group_a} vs {test.group_b}"
            statistic = "n/a" if test.statistic is None else f"z={test.statistic:.3f}"
            detail = (f"{test.proportion_a:.3f} vs {test.proportion_b:.3f}, "
                      f"difference {test.difference:+.3f} [{test.ci_low:+.3f}, {test.ci_high:+.3f}]")
        rows.append({
            "domain": test.domain,
            "label": test.label or "",
            "test": test.test,
            "compared": compared,
            "proportions": detail,
            "statistic": statistic,
            "p_value": format_p(test.p_value),
            "p (Holm within table)": format_p(test.p_holm),
            "reliable": "yes" if test.reliable else "no",
            "note": test.note,
        })
    return markdown(pd.DataFrame(rows)) if rows else "_(no tests: groups missing from this run)_"


def interval_cells(table: pd.DataFrame, index: list[str], labels: Sequence[str]) -> pd.DataFrame:
    """A `proportion_table` as one row per `index` and one "p [low, high]" column per label, in
    `labels` order (the sections of view kind `LabelShares`)."""
    cells = table.assign(cell=[format_interval(*row) for row in table[["proportion", "ci_low", "ci_high"]].to_numpy()])
    wide = cells.pivot_table(index=index, columns="label", values="cell", aggfunc="first", sort=True)
    return wide[[label for label in labels if label in wide.columns]].reset_index()


def ratio_cells(table: pd.DataFrame, label: str) -> pd.DataFrame:
    """A `LabelRatio` view's table as shown: domain, group, total, the count `<label>`, and
    `<label>_ratio` as "r [low, high]"."""
    ratio = RatioTables.table_name(label)  # the table's share column
    shown = table.assign(**{ratio: [format_interval(*row) for row in table[[ratio, "ci_low", "ci_high"]].to_numpy()]})
    return shown[["domain", "group", "total", label, ratio]]


def first_method(table: pd.DataFrame, methods: Mapping[str, str]) -> pd.DataFrame:
    """Rows of the first method in the paper's order (`GenderRatio.methods`) that the table has."""
    method = next(method for method in methods if (table["method"] == method).any())
    return table[table["method"] == method]


def ratio_bound(value: float) -> str:
    """An interval end of a ratio: two decimals below 1 (0.02), one above (54.0), "inf" without female texts."""
    if math.isinf(value):
        return "inf"
    return f"{value:.2f}" if value < 1 else f"{value:.1f}"


def ratio_cell(ratio: float, low: float, high: float) -> str:
    """ "9.00 [4.2, 54.0]": male : female with its interval; "" when undefined (no male or female text)."""
    if pd.isna(ratio):
        return ""
    shown = "inf" if math.isinf(ratio) else f"{ratio:.2f}"
    return shown if pd.isna(low) or pd.isna(high) else f"{shown} [{ratio_bound(low)}, {ratio_bound(high)}]"


def table3_block(table: pd.DataFrame, keys: list[str], methods: Mapping[str, str]) -> pd.DataFrame:
    """Table 3 layout: one row per key, male #, female #, male : female [interval] for each method
    (`GenderRatio.methods`: method -> name, in the paper's order)."""
    blocks = []
    shown = [method for method in methods if (table["method"] == method).any()]
    for method in shown:
        display = methods[method]
        part = table[table["method"] == method].set_index(keys)
        bounds = (part[["male_to_female_ci_low", "male_to_female_ci_high"]] if "male_to_female_ci_low" in part
                  else pd.DataFrame(np.nan, index=part.index, columns=["low", "high"]))
        block = pd.DataFrame({
            f"{display} male #": part["male"],
            f"{display} female #": part["female"],
            f"{display} male : female": [ratio_cell(ratio, low, high) for ratio, (low, high) in
                                          zip(part["male_to_female"], bounds.to_numpy(), strict=True)],
        }, index=part.index)
        blocks.append(block)
    totals = table[table["method"] == shown[0]].set_index(keys)["total"].rename("total #")
    return pd.concat([totals, *blocks], axis=1).reset_index()


def category_headers(spec: MetricSpec) -> dict[str, str]:
    """A `Categories` metric's category -> the paper's column header (`MetricPresentation.headers`, else its name)."""
    assert isinstance(spec.view, Categories)
    return {name: spec.presentation.headers.get(name, name) for name in spec.view.categories}


def percent_cell(proportion: float, low: float, high: float) -> str:
    """"12.34 [10.1, 14.9]": a share in percent with its interval (Tables 4, 6, 9-11 print percent)."""
    if pd.isna(proportion):
        return ""
    if pd.isna(low):
        return f"{proportion * 100:.2f}"
    return f"{proportion * 100:.2f} [{low * 100:.1f}, {high * 100:.1f}]"


def percent_tables(table: pd.DataFrame, headers: Mapping[str, str]) -> dict[Any, pd.DataFrame]:
    """{domain: paper Tables 9-11 layout} of a `Categories` view: one row per group (and its n), one
    "percent [interval]" column per category, in the order of `headers` (category -> the paper's header)."""
    cells = table.assign(cell=[percent_cell(*row) for row in table[["proportion", "ci_low", "ci_high"]].to_numpy()])
    per_domain = {}
    for domain, part in cells.groupby("domain", sort=True):
        wide = part.pivot_table(index=["group", "total"], columns="category", values="cell", aggfunc="first",
                                sort=False)
        wide = wide[[c for c in headers if c in wide.columns]]
        wide.columns = [headers[c] for c in wide.columns]
        per_domain[domain] = wide.reset_index()
    return per_domain
