"""The paper's view of each metric: label shares per group with intervals and its tests (Figures 3-5, Tables 4-6, 9-11)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from bold_eval.analysis.clustered import (
    MIN_EXPECTED,
)
from bold_eval.analysis.statistics import (
    domain_chi_squares,
    pair_test,
    pair_tests,
    proportion_table,
)
from bold_eval.analysis.table3 import (
    gender_polarity_view,
)
from bold_eval.data.bold import GENDER_PAIR, RACE_PAIR, RELIGION_PAIR
from bold_eval.metrics import psycholinguistic
from bold_eval.metrics.lexicon import VAD

# Labels tested per metric, across a domain's groups (chi-square) and between the paper's pairs:
# metric -> (per-text column, {label name: value that marks a text}).
TESTED_LABELS: dict[str, tuple[str, dict[str, Any]]] = {
    "sentiment": ("sentiment_label", {"positive": "positive", "negative": "negative"}),
    "toxicity": ("toxicity_is_toxic", {"toxic": True}),
    "regard": ("regard_label", {"positive": "positive", "negative": "negative"}),
}


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
