"""Aggregation and statistics against values computed by hand from the formulas."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from bold_eval.analysis.results import ChiSquareTest, PairTest
from bold_eval.analysis.scores import check_scores, metric_status, run_counts
from bold_eval.analysis.statistics import (
    chi_square_across_groups,
    cluster_bootstrap_interval,
    proportion_table,
    two_proportion_test,
    wilson_interval,
)
from bold_eval.analysis.summary import summarize
from bold_eval.analysis.views import metric_view
from bold_eval.core.errors import InputError

# Each paper metric's view, computed by its spec's view kind (`MetricSpec.view`).
sentiment_view, toxicity_view, regard_view, psycholinguistic_view, gender_polarity_view = (
    metric_view(name) for name in ("sentiment", "toxicity", "regard", "psycholinguistic", "gender_polarity"))

Z95 = 1.959963984540054  # standard normal 97.5% quantile


def wilson_by_hand(count: int, total: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval, written out: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = count / total
    denominator = 1 + z * z / total
    center = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return center - half, center + half


def chi2_sf_dof1(statistic: float) -> float:
    """Survival function of chi-square with 1 degree of freedom: erfc(sqrt(x / 2))."""
    return math.erfc(math.sqrt(statistic / 2))


def frame(rows: list[tuple]) -> pd.DataFrame:
    """Rows of (prompt_id, domain, group, sentiment_label); each text its own page (`name`)."""
    table = pd.DataFrame(rows, columns=["prompt_id", "domain", "group", "sentiment_label"])
    return table.assign(name=table["prompt_id"])


# 10 texts, 2 groups: A = pos, pos, neg, neu, neu, neu; B = neg, neg, neu, pos.
TEN_TEXTS = frame(
    [(f"a{i}", "gender", "A", label) for i, label in enumerate(["positive", "positive", "negative", "neutral",
                                                                  "neutral", "neutral"])]
    + [(f"b{i}", "gender", "B", label) for i, label in enumerate(["negative", "negative", "neutral", "positive"])]
)


def test_wilson_interval_matches_formula() -> None:
    for count, total in [(3, 10), (0, 12), (12, 12), (17, 250)]:
        low, high = wilson_interval(count, total)
        expected_low, expected_high = wilson_by_hand(count, total)
        assert low == pytest.approx(expected_low, abs=1e-12)
        assert high == pytest.approx(expected_high, abs=1e-12)


def test_wilson_interval_of_empty_group_is_nan() -> None:
    low, high = wilson_interval(0, 0)
    assert math.isnan(low) and math.isnan(high)


def test_proportion_table_counts_proportions_and_intervals() -> None:
    table = proportion_table(TEN_TEXTS, "sentiment_label").set_index(["group", "label"])
    assert table.loc[("A", "positive"), "count"] == 2
    assert table.loc[("A", "neutral"), "count"] == 3
    assert table.loc[("A", "negative"), "total"] == 6
    assert table.loc[("B", "negative"), "proportion"] == pytest.approx(0.5)
    assert table.loc[("B", "positive"), "proportion"] == pytest.approx(0.25)
    assert table.loc[("A", "positive"), "proportion"] == pytest.approx(2 / 6)
    low, high = wilson_by_hand(2, 6)
    assert table.loc[("A", "positive"), "ci_low"] == pytest.approx(low)
    assert table.loc[("A", "positive"), "ci_high"] == pytest.approx(high)
    # proportions of one group add up to one
    assert table.xs("B", level="group")["proportion"].sum() == pytest.approx(1.0)


def test_proportion_table_leaves_null_labels_out_of_the_total() -> None:
    data = TEN_TEXTS.copy()
    data.loc[data.index[:2], "sentiment_label"] = None  # two of A's positives unscored
    table = proportion_table(data, "sentiment_label").set_index(["group", "label"])
    assert table.loc[("A", "positive"), "count"] == 0
    assert table.loc[("A", "neutral"), "total"] == 4
    assert table.loc[("A", "neutral"), "proportion"] == pytest.approx(3 / 4)


def test_proportion_table_with_several_samples_counts_texts_and_prompts() -> None:
    data = pd.concat([TEN_TEXTS.assign(sample=0), TEN_TEXTS.assign(sample=1)], ignore_index=True)
    table = proportion_table(data, "sentiment_label").set_index(["group", "label"])
    assert table.loc[("A", "positive"), "total"] == 12
    assert table.loc[("A", "positive"), "prompts"] == 6
    assert table.loc[("A", "positive"), "proportion"] == pytest.approx(2 / 6)
    counts = run_counts(data)
    assert counts["samples_per_prompt_max"] == 2 and counts["texts"] == 20 and counts["prompts"] == 10


def test_bootstrap_interval_over_prompts_is_reproducible_and_contains_the_proportion() -> None:
    data = pd.concat([TEN_TEXTS.assign(sample=s) for s in range(3)], ignore_index=True)
    first = proportion_table(data, "sentiment_label", ci="bootstrap", seed=3, n_resamples=500)
    again = proportion_table(data, "sentiment_label", ci="bootstrap", seed=3, n_resamples=500)
    pd.testing.assert_frame_equal(first, again)
    assert (first["ci_low"] <= first["proportion"] + 1e-12).all()
    assert (first["ci_high"] >= first["proportion"] - 1e-12).all()
    assert first["ci_low"].between(0, 1).all() and first["ci_high"].between(0, 1).all()
    with pytest.raises(ValueError, match="ci must be"):
        proportion_table(data, "sentiment_label", ci="jackknife")


def test_bootstrap_interval_resamples_prompts_and_matches_the_exact_bootstrap() -> None:
    """Five prompts with (hits, texts) = (2,2), (2,2), (2,4), (0,1), (0,1): proportion 6/10. All 5^5
    equally likely resamples of prompts, enumerated, give the exact bootstrap distribution of the
    pooled proportion: its 2.5% quantile is 1/4 and its 97.5% quantile 8/9, each more than 1% of
    mass away from the next value, so 20,000 random resamples land on them whatever the seed.
    (Resampling texts instead, or averaging per-prompt proportions, gives other values.)"""
    hits, sizes = np.array([2, 2, 2, 0, 0]), np.array([2, 2, 4, 1, 1])
    prompt = pd.Series(np.repeat([f"p{i}" for i in range(5)], sizes))
    hit = pd.Series(np.concatenate([[1.0] * h + [0.0] * (n - h) for h, n in zip(hits, sizes, strict=True)]))
    draws = np.array(np.meshgrid(*[range(5)] * 5)).reshape(5, -1).T  # every resample of 5 prompts
    pooled = np.sort(hits[draws].sum(1) / sizes[draws].sum(1))
    values, counts = np.unique(np.round(pooled, 12), return_counts=True)
    cdf = np.cumsum(counts) / len(pooled)
    exact = [values[np.searchsorted(cdf, q)] for q in (0.025, 0.975)]
    assert exact == pytest.approx([1 / 4, 8 / 9])
    for seed in (0, 1, 2):
        low, high = cluster_bootstrap_interval(hit, prompt, alpha=0.05, n_resamples=20_000, seed=seed)
        assert (low, high) == pytest.approx((1 / 4, 8 / 9), abs=1e-12)
    # all hits: every resample is 1; one prompt: no interval
    assert cluster_bootstrap_interval(pd.Series([1.0] * 4), pd.Series(["a", "a", "b", "c"]), n_resamples=200) == (1.0,
                                                                                                                  1.0)
    low, high = cluster_bootstrap_interval(pd.Series([1.0, 0.0]), pd.Series(["a", "a"]))
    assert math.isnan(low) and math.isnan(high)


def two_group_frame(negative_a: int, total_a: int, negative_b: int, total_b: int) -> pd.DataFrame:
    rows = [(f"a{i}", "gender", "A", "negative" if i < negative_a else "neutral") for i in range(total_a)]
    rows += [(f"b{i}", "gender", "B", "negative" if i < negative_b else "neutral") for i in range(total_b)]
    return frame(rows)


def test_chi_square_two_groups_by_hand() -> None:
    # observed [[30, 20], [10, 40]]; expected [[20, 30], [20, 30]]
    # chi2 = 2 * (10²/20 + 10²/30) = 16.666...
    result = chi_square_across_groups(two_group_frame(30, 50, 10, 50), "sentiment_label", target="negative")
    assert result.statistic == pytest.approx(2 * (100 / 20 + 100 / 30))
    assert result.dof == 1
    assert result.p_value == pytest.approx(chi2_sf_dof1(50 / 3))
    assert result.min_expected == pytest.approx(20)
    assert result.reliable is True and result.small_groups == []


def test_two_proportion_z_by_hand_and_equal_to_chi_square() -> None:
    result = two_proportion_test(30, 50, 10, 50)
    pooled = 40 / 100
    z = (0.6 - 0.2) / math.sqrt(pooled * (1 - pooled) * (1 / 50 + 1 / 50))
    assert result.statistic == pytest.approx(z)
    assert result.p_value == pytest.approx(math.erfc(abs(z) / math.sqrt(2)))
    assert result.statistic ** 2 == pytest.approx(2 * (100 / 20 + 100 / 30))
    assert result.difference == pytest.approx(0.4)
    # Newcombe's hybrid score interval from the two Wilson intervals
    low_a, high_a = wilson_by_hand(30, 50)
    low_b, high_b = wilson_by_hand(10, 50)
    assert result.ci_low == pytest.approx(0.4 - math.sqrt((0.6 - low_a) ** 2 + (high_b - 0.2) ** 2))
    assert result.ci_high == pytest.approx(0.4 + math.sqrt((high_a - 0.6) ** 2 + (0.2 - low_b) ** 2))


def test_two_proportion_test_edge_cases() -> None:
    no_variation = two_proportion_test(0, 20, 0, 30)
    assert no_variation.statistic is None and no_variation.p_value is None
    assert "no variation" in no_variation.note
    small = two_proportion_test(1, 8, 3, 9)  # pooled 4/17: 8 * 4/17 < 5
    assert small.reliable is False and small.small_groups == ["a", "b"]
    with pytest.raises(ValueError, match="total_b"):
        two_proportion_test(1, 5, 0, 0)
    with pytest.raises(ValueError, match="count_a"):
        two_proportion_test(6, 5, 0, 3)


def test_chi_square_flags_too_small_group_and_matches_formula() -> None:
    rows = [(f"c{i}", "religious_ideology", "christianity", "negative" if i < 12 else "neutral") for i in range(40)]
    rows += [(f"i{i}", "religious_ideology", "islam", "negative" if i < 6 else "neutral") for i in range(40)]
    rows += [(f"h{i}", "religious_ideology", "hinduism", "neutral") for i in range(4)]
    data = frame(rows)
    result = chi_square_across_groups(data, "sentiment_label", target="negative")
    observed = np.array([[12, 28], [0, 4], [6, 34]], dtype=float)  # groups sorted: christianity, hinduism, islam
    expected = observed.sum(axis=1, keepdims=True) * observed.sum(axis=0, keepdims=True) / observed.sum()
    assert result.statistic == pytest.approx(((observed - expected) ** 2 / expected).sum())
    assert result.dof == 2
    assert result.p_value == pytest.approx(math.exp(-result.statistic / 2))  # chi2(2) survival
    assert result.small_groups == ["hinduism"]  # expected negatives 4 * 18 / 84 < 5
    assert result.reliable is False
    assert "expected count < 5" in result.note and "below 5" in result.rule


def test_chi_square_undefined_cases_say_why() -> None:
    one_group = chi_square_across_groups(TEN_TEXTS[TEN_TEXTS["group"] == "A"], "sentiment_label", target="negative")
    assert one_group.statistic is None and "at least 2 groups" in one_group.note
    constant = chi_square_across_groups(two_group_frame(0, 5, 0, 5), "sentiment_label", target="negative")
    assert constant.statistic is None and "same label" in constant.note


def test_sentiment_view_male_vs_female_pair_test() -> None:
    data = two_group_frame(30, 50, 10, 50).replace({"A": "American_actors", "B": "American_actresses"})
    view = sentiment_view(data)
    pair = next(t for t in view.tests if isinstance(t, PairTest) and t.label == "negative")
    assert (pair.group_a, pair.group_b) == ("American_actors", "American_actresses")
    assert pair.difference == pytest.approx(0.4)
    chi = next(t for t in view.tests if isinstance(t, ChiSquareTest) and t.label == "negative")
    assert chi.p_value == pytest.approx(pair.p_value)


def test_toxicity_view_toxic_ratio() -> None:
    data = TEN_TEXTS.assign(toxicity_is_toxic=[True, False, False, False, False, False, True, True, False, False])
    table = toxicity_view(data).tables["toxic_ratio"].set_index("group")
    assert table.loc["A", "toxic_ratio"] == pytest.approx(1 / 6)
    assert table.loc["B", "toxic_ratio"] == pytest.approx(2 / 4)
    assert table.loc["B", "toxic"] == 2


def test_psycholinguistic_male_minus_female_and_christianity_minus_islam() -> None:
    rows = []
    for group, domain, joys, valences in [
        ("American_actors", "gender", [True, False, False, False], ["negative", "negative", "neutral", "positive"]),
        ("American_actresses", "gender", [True, True, False, False], ["negative", "neutral", "neutral", "neutral"]),
        ("christianity", "religious_ideology", [True, True, True, False], ["positive"] * 4),
        ("islam", "religious_ideology", [False, False, True, False], ["negative", "positive", "neutral", "neutral"]),
    ]:
        for i, (joy, valence) in enumerate(zip(joys, valences, strict=True)):
            rows.append({"prompt_id": f"{group}{i}", "domain": domain, "group": group,
                         "psycholinguistic_is_joy": joy, "psycholinguistic_valence_label": valence})
    view = psycholinguistic_view(pd.DataFrame(rows))
    table4 = view.tables["psycholinguistic_gender_difference"].set_index("category")
    assert table4.loc["joy", "difference"] == pytest.approx(0.25 - 0.5)
    assert table4.loc["valence_negative", "difference"] == pytest.approx(0.5 - 0.25)
    assert table4.loc["valence_positive", "difference"] == pytest.approx(0.25 - 0.0)
    table6 = view.tables["psycholinguistic_religion_difference"].set_index("category")
    assert table6.loc["joy", "difference"] == pytest.approx(0.75 - 0.25)
    assert table6.loc["valence_negative", "difference"] == pytest.approx(0.0 - 0.25)
    assert table6.loc["joy", "header"] == "joy" and table6.loc["valence_negative", "header"] == "valence (-ve)"
    proportions = view.tables["psycholinguistic"].set_index(["group", "category"])
    assert proportions.loc[("islam", "joy"), "proportion"] == pytest.approx(0.25)
    assert any("anger" in note for note in view.notes)  # BE5 columns absent from this frame


def test_gender_polarity_counts_ratio_and_male_minus_female() -> None:
    labels = {
        # group: (category, unigram/max/wavg labels)
        "dance_occupations": ("arts_and_entertainment", ["male", "male", "male", "female", "neutral", "neutral"]),
        "nursing_specialties": ("healthcare_and_medicine", ["female", "female", "male", "neutral"]),
        "sewing_occupations": ("", ["male", "neutral"]),
    }
    rows = []
    for group, (category, group_labels) in labels.items():
        for i, label in enumerate(group_labels):
            rows.append({"prompt_id": f"{group}{i}", "domain": "profession", "group": group, "category": category,
                         "name": f"{group}{i}",
                         "gender_polarity_unigram_label": label, "gender_polarity_max_label": label,
                         "gender_polarity_wavg_label": "neutral" if group == "nursing_specialties" else label})
    view = gender_polarity_view(pd.DataFrame(rows))
    category = view.tables["gender_polarity_category"].set_index(["method", "category"])
    arts = category.loc[("max", "arts_and_entertainment")]
    assert (arts["total"], arts["male"], arts["female"]) == (6, 3, 1)
    assert arts["male_to_female"] == pytest.approx(3.0)
    health = category.loc[("unigram", "healthcare_and_medicine")]
    assert health["male_to_female"] == pytest.approx(0.5)
    assert math.isnan(category.loc[("wavg", "healthcare_and_medicine"), "male_to_female"])  # neither male nor female
    assert "" not in category.index.get_level_values("category")  # Table 3 has only the four super-groups
    group = view.tables["gender_polarity_group"].set_index(["method", "group"])
    assert group.loc[("max", "dance_occupations"), "male_minus_female"] == pytest.approx(3 / 6 - 1 / 6)
    assert group.loc[("max", "nursing_specialties"), "male_minus_female"] == pytest.approx(1 / 4 - 2 / 4)
    assert group.loc[("max", "sewing_occupations"), "male_minus_female"] == pytest.approx(0.5)


def test_missing_metric_columns_are_reported_as_skipped() -> None:
    run_info = {"metrics": ["sentiment", "toxicity", "regard"],
                "skipped_metrics": {"toxicity": "no classifier offline"}}
    status = metric_status(TEN_TEXTS, run_info)
    assert status["sentiment"]["status"] == "scored"
    assert status["toxicity"] == {"status": "skipped", "reason": "no classifier offline"}
    assert status["regard"]["status"] == "missing" and "regard_label" in status["regard"]["reason"]
    assert status["psycholinguistic"]["status"] == "not requested"
    summary = summarize(TEN_TEXTS, run_info)
    assert "no classifier offline" in summary.views["toxicity"].skipped
    assert summary.views["gender_polarity"].skipped is not None and summary.scored("gender_polarity") is None
    assert summary.scored("sentiment") is not None and "sentiment" in summary.views["sentiment"].tables


def test_validate_scores_names_missing_columns_and_rows() -> None:
    with pytest.raises(InputError, match=r"scores.parquet lacks the column\(s\) prompt_id; .* rebuild the table"):
        check_scores(TEN_TEXTS.drop(columns="prompt_id"))
    broken = TEN_TEXTS.copy()
    broken.loc[3, "group"] = None
    with pytest.raises(InputError, match=r"scores.parquet, column 'group', row 3: .* is not a group string"):
        check_scores(broken)
    numeric = TEN_TEXTS.astype({"domain": object})
    numeric.loc[[5, 7], "domain"] = 5
    with pytest.raises(InputError, match=r"column 'domain', row 5 \(and 1 more rows\): 5 \(int\) is not a domain"):
        check_scores(numeric)


def test_validate_scores_rejects_a_group_with_two_categories() -> None:
    """A hand-edited category (one group in two categories) is named as such, not a plotting traceback."""
    scores = _polarity_frame(TABLE3_PAGES)
    scores.loc[scores.index[-1], "category"] = "arts_and_entertainment"  # one nursing text moved to arts
    last = scores.index[-1]
    message = (rf"scores.parquet, column 'category', row {last}: 'arts_and_entertainment' is a second category of "
               r"group 'nursing_specialties' \(profession\): its rows say 'healthcare_and_medicine', "
               r"'arts_and_entertainment', but a group belongs to one Table 3 super-group")
    with pytest.raises(InputError, match=message):
        check_scores(scores)
    with pytest.raises(InputError, match="second category"):
        summarize(scores)  # validated before any view runs
    assert check_scores(scores.assign(category=None).astype({"category": object})) is not None  # null: no group


def test_validate_scores_derives_the_page_from_prompt_id_or_says_how_to_add_it() -> None:
    ids = ["profession/dance_occupations/Ballet/0", "profession/dance_occupations/AC/DC/3"]
    old = pd.DataFrame({"prompt_id": ids, "domain": "profession", "group": "dance_occupations"})
    assert check_scores(old)["name"].tolist() == ["Ballet", "AC/DC"]
    with pytest.raises(InputError, match=r"column 'prompt_id', row 0 \(and 9 more rows\): 'a0' is not "
                                         r"'domain/group/name/index'.*; add a `name` column, or rebuild"):
        check_scores(TEN_TEXTS.drop(columns="name"))
    wrong_group = old.assign(group="ballet_dancers")  # the id's group must be the row's
    with pytest.raises(InputError, match="row 0 \\(and 1 more rows\\)"):
        check_scores(wrong_group)
    unnamed = TEN_TEXTS.astype({"name": object})
    unnamed.loc[2, "name"] = None
    with pytest.raises(InputError, match="column 'name', row 2: None \\(NoneType\\) is not a name string"):
        check_scores(unnamed)


def test_validate_scores_checks_labels_against_the_metric_and_the_run() -> None:
    happy = TEN_TEXTS.copy()
    happy.loc[4, "sentiment_label"] = "happy"
    with pytest.raises(InputError, match=r"column 'sentiment_label', row 4: 'happy' is not one of the metric's labels "
                                         r"\(positive, neutral, negative\)"):
        check_scores(happy)
    regard = TEN_TEXTS.assign(regard_label=["positive", "mixed", *[None] * 8])
    with pytest.raises(InputError, match="'mixed' is not one of the metric's labels"):
        check_scores(regard)
    # a regard model with its own classes records them in run.json `label_columns`
    run_labels = {"regard_label": ["positive", "negative", "neutral", "other", "mixed"]}
    assert check_scores(regard, run_labels) is not None
    flags = TEN_TEXTS.assign(toxicity_is_toxic=[True, False, None, *[False] * 7])  # null: not scored, allowed
    assert check_scores(flags) is not None
    with pytest.raises(InputError, match=r"column 'toxicity_is_toxic', row 1: 'no' \(str\) is not a boolean"):
        check_scores(TEN_TEXTS.assign(toxicity_is_toxic=[True, "no", *[False] * 8]))
    with pytest.raises(InputError, match=r"column 'psycholinguistic_is_joy', row 0: 1 \(int\) is not a boolean"):
        check_scores(TEN_TEXTS.assign(psycholinguistic_is_joy=[1, *[False] * 9]))


def test_regard_view_without_gender_or_race_texts_says_why() -> None:
    data = TEN_TEXTS.assign(domain="profession", regard_label=None)
    assert "gender or race" in regard_view(data).skipped


def _race_scores(extra: list[tuple[str, str, int, int]] = ()) -> pd.DataFrame:
    """Race: A 40 of 100 negative, B and C 10 of 100 each; `extra` adds (domain, group, n, negatives)."""
    rows = []
    for domain, group, n, negatives in [("race", "A", 100, 40), ("race", "B", 100, 10), ("race", "C", 100, 10),
                                        *extra]:
        rows += [{"prompt_id": f"{group}/{i}", "domain": domain, "group": group, "sample": 0, "category": "",
                  "name": f"{group}_{i}",
                  "sentiment_label": "negative" if i < negatives else "neutral"} for i in range(n)]
    return pd.DataFrame(rows)


def exact_binary_p(hits: int, units: int, rest_hits: int, rest_units: int) -> float:
    """Exact p-value of the permutation test over one-text units: a split of the units is fixed by the number x
    of labelled texts on side a (hypergeometric), and the studentized statistic is Welch's t of the 0-1 values,
    (x / n_a - y / n_b) / sqrt(p_a (1 - p_a) / (n_a - 1) + p_b (1 - p_b) / (n_b - 1)), floored like the module's
    at 1e-12 in the variance: sum the probabilities of the x with |t| at least the observed."""
    all_hits = hits + rest_hits

    def welch(x: int) -> float:
        p_a, p_b = x / units, (all_hits - x) / rest_units
        variance = p_a * (1 - p_a) / (units - 1) + p_b * (1 - p_b) / (rest_units - 1)
        return (p_a - p_b) / math.sqrt(max(variance, 1e-12))

    support = range(max(0, all_hits - rest_units), min(units, all_hits) + 1)
    pmf = stats.hypergeom(units + rest_units, all_hits, units).pmf
    return float(sum(pmf(x) for x in support if abs(welch(x)) >= abs(welch(hits)) * (1 - 1e-9)))


def test_findings_group_vs_rest_with_holm_and_bh_by_hand() -> None:
    """--cluster none, the paper's text-level tests. A vs rest: 40/100 vs 20/200, pooled 0.2, SE
    sqrt(0.2 * 0.8 * (1/100 + 1/200)) = 0.048990, z = 0.3 / 0.048990 = 6.1237, p = 9.1413e-10.
    B (and C) vs rest: 10/100 vs 50/200, z = -0.15 / 0.048990 = -3.0619, p = 0.0021996. "positive" never occurs:
    no variation, untestable, not in the family. Holm over the 3 tests (sorted p1 <= p2 <= p3): 3 * p1 =
    2.7424e-09, 2 * p2 = 0.0043993, max(0.0043993, 1 * p3) = 0.0043993. Benjamini-Hochberg: 3/1 * p1 = 2.7424e-09,
    then min(3/2 * p2, 3/3 * p3) = 0.0021996 for both. Largest gap: A 0.4 minus B 0.1 (the first of the two
    lowest), chosen among 3 pairs x 2 labels (negative, positive), Newcombe's interval at 1 - 0.05 / 6."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    from bold_eval.analysis.summary import run_findings

    result = run_findings(_race_scores(), correction="holm", cluster="none")
    tests = result.tests.set_index(["label", "group"])
    assert result.family == 3 and result.untestable == 3 and result.cluster == "none"
    assert not tests.loc[("positive", "A"), "testable"]
    a, b, c = (tests.loc[("negative", group)] for group in "ABC")
    assert (a["contrast"], a["kind"], a["method"]) == ("A vs rest", "group vs rest", "two-proportion z")
    assert a["statistic"] == pytest.approx(6.123724, abs=1e-6) and a["p_value"] == pytest.approx(9.1413e-10, rel=1e-4)
    assert b["statistic"] == pytest.approx(-3.061862, abs=1e-6) and b["p_value"] == pytest.approx(0.0021996, rel=1e-4)
    assert (a["difference"], b["difference"]) == pytest.approx((0.3, -0.15))
    assert a["p_adjusted"] == pytest.approx(2.7424e-9, rel=1e-4)
    assert b["p_adjusted"] == pytest.approx(0.0043993, rel=1e-4) and c["p_adjusted"] == pytest.approx(0.0043993,
                                                                                                      rel=1e-4)
    assert a["significant"] and b["significant"] and c["significant"]
    bh = run_findings(_race_scores(), correction="bh", cluster="none").tests.set_index(["label", "group"])
    assert bh.loc[("negative", "A"), "p_adjusted"] == pytest.approx(2.7424e-9, rel=1e-4)
    assert bh.loc[("negative", "B"), "p_adjusted"] == pytest.approx(0.0021996, rel=1e-4)
    assert bh.loc[("negative", "C"), "p_adjusted"] == pytest.approx(0.0021996, rel=1e-4)
    gap = result.gaps.set_index("metric").loc["sentiment"]
    assert (gap["label"], gap["group_high"], gap["group_low"], gap["choices"]) == ("negative", "A", "B", 6)
    assert gap["gap"] == pytest.approx(0.3) and gap["interval_level"] == pytest.approx(1 - 0.05 / 6)
    assert (gap["ci_low"], gap["ci_high"]) == pytest.approx(confint_proportions_2indep(
        40, 100, 10, 100, method="newcomb", compare="diff", alpha=0.05 / 6))
    with pytest.raises(ValueError, match="--correction must be one of holm, bh, by"):
        run_findings(_race_scores(), correction="bonferroni")


def test_findings_by_name_with_single_text_names_use_the_score_test_and_so_does_the_gap() -> None:
    """The default --cluster name with every text its own name: the tests are still the names-as-units score
    test (never the z test), 100 names against 200: B vs rest, under the hypothesis both rates are the pooled
    0.2, so t is about -0.15 / sqrt(0.2 * 0.8 (1/100 + 1/200)) = -3.06 (the shrunk correlation changes nothing
    with one text per name), equal to `rate_test` on the per-name sums; C as B, A beyond 1e-5; all three
    significant in a family of 3. Largest gap: A (0.4) minus B (0.1), its interval the findings' test inverted at
    1 - 0.05 / 6 (printed as 99.17%), which contains the gap 0.3."""
    from bold_eval.analysis.clustered import SCORE
    from bold_eval.analysis.rate_test import rate_test
    from bold_eval.analysis.summary import run_findings

    result = run_findings(_race_scores())
    assert result.cluster == "name" and result.family == 3 and result.untestable == 3
    tests = result.tests.set_index(["label", "group"])
    a, b, c = (tests.loc[("negative", group)] for group in "ABC")
    assert {a["method"], b["method"], c["method"]} == {SCORE}
    assert (a["names"], a["rest_names"]) == (100, 200) and (a["difference"], b["difference"]) == pytest.approx((0.3,
                                                                                                                -0.15))
    ones = np.ones(300)
    # B against the rest, one text per name: under the hypothesis both rates are the pooled 60/300 = 0.2, so the
    # variance is 0.2 * 0.8 (1/100 + 1/200) and t = -0.15 / 0.048990 = -3.0619 ... on Welch-Satterthwaite df
    expected_b = rate_test(np.r_[np.ones(10), np.zeros(90), np.ones(50), np.zeros(150)], ones, np.arange(300) < 100,
                           alpha=0.05)
    assert b["statistic"] == pytest.approx(expected_b.statistic) and b["p_value"] == pytest.approx(expected_b.p_value)
    assert b["statistic"] == pytest.approx(-0.15 / math.sqrt(0.2 * 0.8 * (1 / 100 + 1 / 200)), rel=0.05)
    assert c["p_value"] == pytest.approx(b["p_value"]) and a["p_value"] < 1e-5
    assert a["significant"] and b["significant"] and c["significant"]
    gap = result.gaps.set_index("metric").loc["sentiment"]
    assert (gap["group_high"], gap["group_low"], gap["interval_label"], gap["method"]) == ("A", "B", "99.17%", SCORE)
    expected_gap = rate_test(np.r_[np.ones(40), np.zeros(60), np.ones(10), np.zeros(90)], np.ones(200),
                             np.arange(200) < 100, alpha=0.05 / 6)
    assert (gap["ci_low"], gap["ci_high"]) == pytest.approx((expected_gap.ci_low, expected_gap.ci_high))
    assert gap["ci_low"] < 0.3 < gap["ci_high"]


@pytest.mark.slow
def test_findings_test_small_groups_and_rare_labels_instead_of_dropping_them() -> None:
    """Religion with 2 texts per group (x 1 of 2 negative, y 0 of 2): two names a side, whose design cannot give
    a p-value below alpha whatever they say, so the pair is stated with the reason and left out of the family
    (Tarone 1990: a test that cannot reject cannot make a false finding). With --cluster none, expected counts below
    5 give Fisher's exact test (p = 1: every table with one negative is as likely). "positive" never occurs
    there either. Family 3 (race), untestable 3 + 2 = 5. A typical race group (100 one-text names against 200)
    could show about SE x the noncentrality a t test on Welch's degrees of freedom (names - 1 a side) needs for 80%
    power at 0.05 / 3, SE = 0.5 sqrt(1/100 + 1/200): about 0.199 (with this many names the test's floor and the
    noise of its variance move the plan by under 1%), race can find a realistic difference; religion could not."""
    from bold_eval.analysis.clustered import SCORE
    from bold_eval.analysis.summary import run_findings

    scores = _race_scores([("religious_ideology", "x", 2, 1), ("religious_ideology", "y", 2, 0)])
    result = run_findings(scores)
    assert result.family == 3 and result.untestable == 5
    religion = result.tests[result.tests["domain"] == "religious_ideology"].set_index("label")
    assert religion.loc["negative", "contrast"] == "x vs y" and religion.loc["negative", "kind"] == "pair"
    assert religion.loc["negative", "method"] == SCORE and not religion.loc["negative", "testable"]
    assert religion.loc["negative", "note"].startswith("too few names to test a rate (2 against 2)")
    text_level = run_findings(scores, cluster="none").tests
    text_level = text_level[text_level["domain"] == "religious_ideology"].set_index("label")
    assert text_level.loc["negative", "method"] == "Fisher exact"
    assert text_level.loc["negative", "p_value"] == 1.0
    power = result.power.set_index("domain")["detectable_difference"]
    var_a, var_b = 0.25 / 100, 0.25 / 200
    df = (var_a + var_b) ** 2 / (var_a ** 2 / 99 + var_b ** 2 / 199)
    critical = stats.t.isf(0.05 / 3 / 2, df)
    expected = optimize.brentq(lambda nc: stats.nct.sf(critical, df, nc) - 0.8, 0.1, 50) * math.sqrt(var_a + var_b)
    assert power["race"] == pytest.approx(expected, rel=1e-2) and not power["religious_ideology"] < 1
    assert result.too_small_domains == ["religious_ideology"]
    alone = run_findings(_race_scores())
    assert alone.power["detectable_difference"].iloc[0] == pytest.approx(expected, rel=1e-2)
    assert alone.too_small_domains == [] and not alone.too_small
    gap = result.gaps.set_index("domain").loc["religious_ideology"]
    assert pd.isna(gap["gap"]) and gap["note"] == "0 of 2 groups have 10 names or more; no gap is reported"
    # 1 of 2 negative in every race group: two names against four cannot reach alpha, so nothing is tested
    tiny = _race_scores()[lambda frame: frame["prompt_id"].str.endswith(("/0", "/50"))]
    small = run_findings(tiny)
    negative = small.tests[small.tests["label"] == "negative"]
    assert small.family == 0 and (negative["method"] == SCORE).all() and not negative["testable"].any()
    assert negative["note"].str.startswith("too few names to test a rate (2 against 4)").all()
    assert exact_binary_p(1, 2, 2, 4) == pytest.approx(1.0)
    assert small.too_small and not small.tests["significant"].any()
    # two names in all: the difference is stated but not tested
    two = run_findings(tiny[tiny["group"].isin(["A", "B"])].assign(name=lambda frame: frame["group"]))
    pair = two.tests.set_index("label").loc["negative"]
    assert not pair["testable"] and pair["note"].startswith("too few names to test a rate (1 against 1)")
    assert pair["difference"] == 0.0 and pd.isna(pair["p_value"]) and two.family == 0


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, "x"])
def test_alpha_outside_zero_one_is_a_usage_error(alpha) -> None:
    from bold_eval.analysis.clustered import check_alpha
    from bold_eval.analysis.summary import summarize
    from bold_eval.core.errors import UsageError

    with pytest.raises(UsageError, match="--alpha must"):
        check_alpha(alpha)
    if not isinstance(alpha, str):
        with pytest.raises(UsageError, match="--alpha must"):
            summarize(_race_scores(), alpha=alpha)


def test_confidence_label_follows_alpha() -> None:
    from bold_eval.analysis.clustered import confidence_label

    assert [confidence_label(a) for a in (0.05, 0.1, 0.01, 0.005)] == ["95%", "90%", "99%", "99.5%"]


# --------------------------------------------------------------------------- Table 3 ratios and Section 6.2

# category -> (group, {page: (male, female, neutral) texts}): Table 3 by hand.
# arts 3 / 2 = 1.5, science 6 / 1 = 6, healthcare 1 / 3; average (1.5 + 6 + 1/3) / 3 = 47/18; pooled 10 / 6.
TABLE3_PAGES = {
    "arts_and_entertainment": ("dance_occupations", {"p1": (2, 1, 0), "p2": (1, 0, 0), "p3": (0, 1, 0),
                                                     "p4": (0, 0, 3)}),
    "science_and_technology": ("engineering_branches", {"s1": (3, 0, 1), "s2": (1, 1, 0), "s3": (2, 0, 0)}),
    "healthcare_and_medicine": ("nursing_specialties", {"h1": (0, 1, 0), "h2": (1, 2, 2)}),
}


def _polarity_frame(pages: dict) -> pd.DataFrame:
    """A profession scores table with unigram labels from `category -> (group, {page: (male, female, neutral)})`."""
    rows = []
    for category, (group, per_page) in pages.items():
        for page, counts in per_page.items():
            labels = [label for label, count in zip(("male", "female", "neutral"), counts, strict=True)
                      for _ in range(count)]
            rows += [{"prompt_id": f"profession/{group}/{page}/{i}", "domain": "profession", "group": group,
                      "category": category, "name": page, "gender_polarity_unigram_label": label}
                     for i, label in enumerate(labels)]
    return pd.DataFrame(rows)


def test_table3_ratios_average_and_pooled_ratio_by_hand() -> None:
    view = gender_polarity_view(_polarity_frame(TABLE3_PAGES), seed=3)
    table = view.tables["gender_polarity_category"].set_index("category")
    assert table["male"].tolist() == [3, 6, 1] and table["female"].tolist() == [2, 1, 3]
    assert table["pages"].tolist() == [4, 3, 2]
    np.testing.assert_allclose(table["male_to_female"], [1.5, 6.0, 1 / 3])
    assert (table["male_to_female_ci_low"] <= table["male_to_female"]).all()
    assert (table["male_to_female"] <= table["male_to_female_ci_high"]).all()
    summary = view.tables["gender_polarity_ratio_summary"].iloc[0]
    assert (summary["method"], summary["categories"], summary["male"], summary["female"]) == ("unigram", 3, 10, 6)
    assert summary["average_male_to_female"] == pytest.approx(47 / 18)
    assert summary["pooled_male_to_female"] == pytest.approx(10 / 6)
    assert summary["average_ci_low"] <= 47 / 18 <= summary["average_ci_high"]
    assert summary["pooled_ci_low"] <= 10 / 6 <= summary["pooled_ci_high"]
    # seeded: the same seed gives the same intervals
    again = gender_polarity_view(_polarity_frame(TABLE3_PAGES), seed=3).tables
    pd.testing.assert_frame_equal(again["gender_polarity_category"], view.tables["gender_polarity_category"])
    pd.testing.assert_frame_equal(again["gender_polarity_ratio_summary"], view.tables["gender_polarity_ratio_summary"])


def test_table3_with_a_category_without_female_texts_is_infinite_with_a_note() -> None:
    pages = {**TABLE3_PAGES, "science_and_technology": ("engineering_branches", {"s1": (3, 0, 1), "s3": (2, 0, 0)})}
    view = gender_polarity_view(_polarity_frame(pages))
    science = view.tables["gender_polarity_category"].set_index("category").loc["science_and_technology"]
    assert science["male_to_female"] == math.inf and science["male_to_female_ci_high"] == math.inf
    # 5 male texts on pages of 3 and 2: Kish's 25 / 13 effective pages bound the female share by 1 - 0.025^(13/25)
    share = 0.025 ** (13 / 25)
    assert science["male_to_female_ci_low"] == pytest.approx(share / (1 - share))
    assert "no female text" in science["male_to_female_note"]
    summary = view.tables["gender_polarity_ratio_summary"].iloc[0]
    assert summary["average_male_to_female"] == math.inf and summary["average_ci_high"] == math.inf
    assert 0 < summary["average_ci_low"] < science["male_to_female_ci_low"] and "Bonferroni" in summary["note"]
    assert summary["pooled_male_to_female"] == pytest.approx(9 / 5)


def test_table3_interval_counts_pages_not_texts() -> None:
    """The same 40 male and 20 female texts: spread one per page, or piled on 6 pages of 10 texts. Texts of
    one page move together in the bootstrap, so the piled-up table's interval is much wider."""
    spread = {"arts_and_entertainment": ("dance_occupations",
                                         {f"p{i}": (1, 0, 0) if i < 40 else (0, 1, 0) for i in range(60)})}
    piled = {"arts_and_entertainment": ("dance_occupations", {f"p{i}": (10, 0, 0) if i < 4 else (0, 10, 0)
                                                              for i in range(6)})}
    widths = []
    for pages in (spread, piled):
        row = gender_polarity_view(_polarity_frame(pages)).tables["gender_polarity_category"].iloc[0]
        assert row["male_to_female"] == pytest.approx(2.0)
        widths.append(row["male_to_female_ci_high"] - row["male_to_female_ci_low"])
    assert widths[1] > 2 * widths[0]


@pytest.fixture(scope="module")
def wikipedia_profession(bold_dir) -> pd.DataFrame:
    """The Wikipedia baseline's profession texts scored by unigram matching, as `bold-eval run --model wikipedia`
    scores them (anonymized, Section 3.3), built in about a second from ../shared BOLD."""
    from bold_eval.data.bold import load_bold
    from bold_eval.metrics.gender_polarity import GenderPolarityScorer
    from bold_eval.scoring.texts import build_texts

    bold = load_bold("profession", data_dir=bold_dir).to_pandas()
    bold = bold.assign(continuation=[sentence[len(prompt):] for sentence, prompt in zip(bold["wikipedia"],
                                                                                        bold["prompt"], strict=True)])
    labels = GenderPolarityScorer(methods=["unigram"])(build_texts(bold).tolist())["unigram_label"]
    return bold.assign(sample=0, gender_polarity_unigram_label=labels)


def test_table3_intervals_and_section_6_2_on_the_wikipedia_baseline(wikipedia_profession) -> None:
    """Measured: science & technology 54 / 6 = 9.00 [3.1, 36.6] (6 female texts on 5 of 344 pages), average of
    the four ratios 3.04 [1.5, 10.1], pooled 182 / 107 = 1.70 [0.94, 3.2]; pages as units (the page bootstrap
    gave [4.2, 54.0], [1.8, 14.3] and [1.1, 2.7], benchmarks/table3_coverage.py for which covers)."""
    view = gender_polarity_view(wikipedia_profession, seed=0)
    table = view.tables["gender_polarity_category"].set_index("category")
    assert (table["male_to_female_ci_low"] < table["male_to_female"]).all()
    assert (table["male_to_female"] < table["male_to_female_ci_high"]).all()
    science = table.loc["science_and_technology"]
    assert science["pages"] == 344 and science["male_to_female_ci_low"] > 3  # clearly more male texts
    assert table.loc["arts_and_entertainment", "male_to_female_ci_low"] < 1  # 102 / 66 is not distinguishable
    summary = view.tables["gender_polarity_ratio_summary"].iloc[0]
    assert summary["average_male_to_female"] == pytest.approx((table["male"] / table["female"]).mean())
    assert summary["pooled_male_to_female"] == pytest.approx(table["male"].sum() / table["female"].sum())
    # the average is pulled up by science's 6 female texts, above the pooled ratio
    assert summary["pooled_male_to_female"] < summary["average_male_to_female"]
    assert summary["pooled_ci_low"] < 1 < summary["pooled_ci_high"] < summary["average_ci_high"]
    group = view.tables["gender_polarity_group"].set_index("group")
    assert (group["male_minus_female_ci_low"] <= group["male_minus_female"]).all()
    assert (group["male_minus_female"] <= group["male_minus_female_ci_high"]).all()
    assert group.loc["engineering_branches", "male_minus_female_ci_low"] > 0  # 35 male, 1 female texts
    # the paper's WIKI unigram ratios average (1.54 + 9.00 + 1.35 + 0.15) / 4 = 3.01, inside our interval
    assert summary["average_ci_low"] < 3.01 < summary["average_ci_high"]


def test_the_contingency_counts_are_pandas_crosstab() -> None:
    """The chi-square tests' table (`statistics._crosstab`, by factorize and bincount) is `pd.crosstab`'s, with
    null labels and groups, a group and a label that only nulls fill, labels as text and as booleans."""
    from bold_eval.analysis.statistics import _crosstab

    rng = np.random.default_rng(0)
    groups = pd.Series(rng.choice(["b", "a", "c", None], 500), name="group")
    labels = pd.Series(rng.choice(["neutral", "positive", "negative", None], 500), name="label")
    labels[groups == "c"] = None  # group c: no label; label "only": no group
    labels[groups.isna()] = labels[groups.isna()].where(lambda part: part.isna(), "only")
    for values in (labels, labels.eq("positive"), labels.dropna()):
        pd.testing.assert_frame_equal(_crosstab(groups.loc[values.index], values),
                                      pd.crosstab(groups.loc[values.index], values))
