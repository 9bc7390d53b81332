"""bold_eval.analysis.findings: contrasts, corrected families, design effects, power, largest gaps and the model x
Wikipedia interaction, against numbers worked out by hand and statsmodels / scipy on the same data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from bold_eval.analysis.clustered import (
    FISHER,
    SCORE,
    Z_TEST,
    difference_test,
    minimum_detectable_difference,
)
from bold_eval.analysis.findings import (
    Contrast,
    contrasts,
    design_effects,
    group_findings,
    largest_gaps,
    paired_findings,
    power_table,
    prompt_rates,
)
from bold_eval.analysis.rate_test import rate_test, rate_tests

NEGATIVE = ("sentiment", "negative", "sentiment_label", "negative", None)
POSITIVE = ("sentiment", "positive", "sentiment_label", "positive", None)
TOXIC = ("toxicity", "toxic", "toxicity_is_toxic", True, None)


def texts(domain: str, group: str, labels: list[str], *, per_name: int = 1, category: str = "") -> list[dict]:
    """One row per label; names hold `per_name` consecutive texts (`<group>_<k>`)."""
    return [{"prompt_id": f"{domain}/{group}/{i}", "domain": domain, "group": group, "category": category,
             "name": f"{group}_{i // per_name}", "sample": 0, "sentiment_label": label}
            for i, label in enumerate(labels)]


def labelled(negative: int, positive: int, total: int) -> list[str]:
    return ["negative"] * negative + ["positive"] * positive + ["neutral"] * (total - negative - positive)


def paper_run(per_name: int = 1) -> pd.DataFrame:
    """gender: actors 30 of 50 negative and 1 positive, actresses 20 of 50 and 1; race: 12, 4, 8 and 8 of 40
    negative, none positive."""
    rows = texts("gender", "American_actors", labelled(30, 1, 50), per_name=per_name)
    rows += texts("gender", "American_actresses", labelled(20, 1, 50), per_name=per_name)
    for group, negative in (("African_Americans", 12), ("European_Americans", 4), ("Asian_Americans", 8),
                            ("Hispanic_and_Latino_Americans", 8)):
        rows += texts("race", group, labelled(negative, 0, 40), per_name=per_name)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- contrasts


def test_two_group_domains_are_tested_once_as_the_papers_pair() -> None:
    frame = paper_run()
    found = [c for c in contrasts(frame) if c.domain == "gender"]
    assert found == [Contrast("gender", "pair", "group", "American_actors", "American_actresses")]
    assert found[0].name == "American_actors vs American_actresses"
    part = frame[frame["domain"] == "gender"]
    a, b = found[0].sides(part)
    assert a.sum() == b.sum() == 50 and not (a & b).any()
    # a two-group domain without a paper pair: sorted order; a race run with only the paper's two groups: its pair
    other = pd.DataFrame(texts("political_ideology", "right-wing", ["neutral"]) + texts("political_ideology",
                                                                                       "left-wing", ["neutral"]))
    assert contrasts(other) == [Contrast("political_ideology", "pair", "group", "left-wing", "right-wing")]
    race = paper_run()[lambda f: f["group"].isin(["European_Americans", "African_Americans"])]
    assert contrasts(race) == [Contrast("race", "pair", "group", "African_Americans", "European_Americans")]
    assert contrasts(paper_run()[lambda f: f["group"] == "Asian_Americans"]) == []  # one group: nothing


def test_race_has_four_group_vs_rest_contrasts_and_the_african_european_pair() -> None:
    race = [c for c in contrasts(paper_run()) if c.domain == "race"]
    assert [(c.kind, c.name) for c in race] == [
        ("group vs rest", "African_Americans vs rest"), ("group vs rest", "Asian_Americans vs rest"),
        ("group vs rest", "European_Americans vs rest"), ("group vs rest", "Hispanic_and_Latino_Americans vs rest"),
        ("pair", "African_Americans vs European_Americans")]
    part = paper_run()[lambda f: f["domain"] == "race"]
    a, b = race[0].sides(part)
    assert (a.sum(), b.sum()) == (40, 120)  # the rest is the other three groups
    a, b = race[-1].sides(part)
    assert (a.sum(), b.sum()) == (40, 40)  # the pair leaves Asian and Hispanic Americans out


def test_religion_pair_and_profession_categories_against_the_rest() -> None:
    rows = [row for group in ("christianity", "hinduism", "islam") for row in texts("religious_ideology", group, ["x"])]
    for group, category in (("dance_occupations", "arts_and_entertainment"), ("film_and_television_occupations",
                            "arts_and_entertainment"), ("nursing_specialties", "healthcare_and_medicine"),
                            ("sewing_occupations", "")):
        rows += texts("profession", group, ["x", "x"], category=category)
    found = contrasts(pd.DataFrame(rows))
    religion = [c.name for c in found if c.domain == "religious_ideology"]
    assert religion == ["christianity vs rest", "hinduism vs rest", "islam vs rest", "christianity vs islam"]
    profession = [(c.kind, c.column, c.name) for c in found if c.domain == "profession"]
    assert profession[:4] == [("group vs rest", "group", f"{g} vs rest") for g in (
        "dance_occupations", "film_and_television_occupations", "nursing_specialties", "sewing_occupations")]
    # super-groups other than "" (groups outside Table 3's four) against every other profession text
    assert profession[4:] == [("category vs rest", "category", "arts_and_entertainment vs rest"),
                              ("category vs rest", "category", "healthcare_and_medicine vs rest")]
    arts = next(c for c in found if c.a == "arts_and_entertainment")
    a, b = arts.sides(pd.DataFrame(rows)[lambda f: f["domain"] == "profession"])
    assert (a.sum(), b.sum()) == (4, 4)
    # a single super-group has no rest to compare with
    one = pd.DataFrame(texts("profession", "dance_occupations", ["x"], category="arts_and_entertainment")
                       + texts("profession", "sewing_occupations", ["x"]))
    assert [c.kind for c in contrasts(one)] == ["pair"]


# --------------------------------------------------------------------------- one run's family


def test_text_level_findings_reproduce_the_papers_z_test_and_holm(multipletests) -> None:
    """--cluster none: every contrast's p-value is the two-proportion z test on its counts (Fisher's exact when
    an expected count is below 5). gender negative: 30/50 vs 20/50, z = 2, p = 0.0455003. The positive label
    (1 of 50 on each side, expected 1) is rare: Fisher, p = 1. race never has "positive": no variation, not
    in the family. Family: 2 gender + 5 race tests = 7, Holm over exactly those (statsmodels multipletests)."""
    found = group_findings(paper_run(), [NEGATIVE, POSITIVE], cluster="none")
    tests = found.tests
    assert found.family == 7 and found.untestable == 5 and len(tests) == 12
    gender = tests[tests["domain"] == "gender"].set_index("label")
    assert gender.loc["negative", "method"] == Z_TEST and gender.loc["negative", "statistic"] == pytest.approx(2.0)
    assert gender.loc["negative", "p_value"] == pytest.approx(0.0455003, rel=1e-5)
    assert gender.loc["positive", "method"] == FISHER and gender.loc["positive", "p_value"] == pytest.approx(1.0)
    for row in tests[tests["testable"]].itertuples():
        if row.method == Z_TEST:
            z, p = proportions_ztest([row.count, row.rest_count], [row.total, row.rest_total])
            assert (row.statistic, row.p_value) == pytest.approx((z, p))
        else:
            table = [[row.count, row.total - row.count], [row.rest_count, row.rest_total - row.rest_count]]
            assert row.p_value == pytest.approx(stats.fisher_exact(table)[1])
        assert (row.ci_low, row.ci_high) == pytest.approx(confint_proportions_2indep(
            row.count, row.total, row.rest_count, row.rest_total, method="newcomb", compare="diff"))
        assert row.difference == pytest.approx(row.proportion - row.rest_proportion)
    african = tests[(tests["contrast"] == "African_Americans vs rest") & (tests["label"] == "negative")].iloc[0]
    assert (african["count"], african["total"], african["rest_count"], african["rest_total"]) == (12, 40, 20, 120)
    pair = tests[(tests["contrast"] == "African_Americans vs European_Americans") & (tests["label"] == "negative")]
    assert (pair["count"].iloc[0], pair["rest_count"].iloc[0], pair["rest_total"].iloc[0]) == (12, 4, 40)
    untested = tests[~tests["testable"]]
    assert set(untested["domain"]) == {"race"} and set(untested["label"]) == {"positive"}
    assert untested["p_adjusted"].isna().all() and not untested["significant"].any()
    testable = tests[tests["testable"]]
    reject, adjusted, _, _ = multipletests(testable["p_value"], alpha=0.05, method="holm")
    assert testable["p_adjusted"].to_numpy() == pytest.approx(adjusted)
    assert (testable["significant"].to_numpy() == reject).all()
    bh = group_findings(paper_run(), [NEGATIVE, POSITIVE], cluster="none", correction="bh").tests
    reject, adjusted, _, _ = multipletests(testable["p_value"], alpha=0.05, method="fdr_bh")
    assert bh[bh["testable"]]["p_adjusted"].to_numpy() == pytest.approx(adjusted)
    assert found.correction == "holm" and "Holm" in found.correction_name and found.cluster == "none"


@pytest.mark.slow
def test_names_as_units_test_every_row_and_rare_labels_too(multipletests) -> None:
    """Two texts per name: every contrast is tested with the name as the unit (the cluster-robust t of equal rates),
    with half as many names as texts. Each name's texts share the negative label here, so each p-value is the test on
    the per-name sums (`_per_name_test`). The rare positive label (one text a side) is tested, not dropped: the rates
    are equal (1 name of 25 on each side), so p = 1. With every name a single text the name level is still that test
    (never the text-level z test that --cluster none gives): the units are texts. gender negative 30/50 vs 20/50:
    the z test says 0.0455, the name level's statistic is the rate test's on the same 100 texts, and the seed
    changes nothing."""
    found = group_findings(paper_run(per_name=2), [NEGATIVE, POSITIVE])
    tests = found.tests
    assert found.family == 7 and found.cluster == "name" and found.untestable == 5
    testable = tests[tests["testable"]]
    assert (testable["method"] == SCORE).all()
    assert ((testable["names"] * 2 == testable["total"]) & (testable["rest_names"] * 2 == testable["rest_total"])).all()
    rare = testable[(testable["domain"] == "gender") & (testable["label"] == "positive")].iloc[0]
    assert (rare["count"], rare["rest_count"]) == (1, 1) and rare["p_value"] == 1.0
    for row in testable[testable["label"] == "negative"].itertuples():
        assert row.count % 2 == 0 and row.rest_count % 2 == 0  # whole names negative
        assert row.p_value == pytest.approx(_per_name_test(row, per_name=2).p_value), row.contrast
    reject, adjusted, _, _ = multipletests(testable["p_value"], alpha=0.05, method="holm")
    assert testable["p_adjusted"].to_numpy() == pytest.approx(adjusted)
    assert (testable["significant"].to_numpy() == reject).all()

    single = group_findings(paper_run(per_name=1), [NEGATIVE, POSITIVE]).tests
    text_level = group_findings(paper_run(per_name=1), [NEGATIVE, POSITIVE], cluster="none").tests
    assert (single["testable"] == text_level["testable"]).all() and (single["names"] == single["total"]).all()
    testable = single[single["testable"]]
    assert (testable["method"] == SCORE).all() and set(text_level["method"]) >= {Z_TEST, FISHER}
    assert testable["difference"].to_numpy() == pytest.approx(text_level.loc[single["testable"], "difference"])
    gender = testable[testable["domain"] == "gender"].set_index("label")
    assert gender.loc["negative", "statistic"] == pytest.approx(rate_test(
        np.r_[np.ones(30), np.zeros(20), np.ones(20), np.zeros(30)], np.ones(100), np.arange(100) < 50,
        alpha=0.05).statistic)
    assert gender.loc["positive", "p_value"] == 1.0
    z_p = text_level[text_level["domain"] == "gender"].set_index("label").loc["negative", "p_value"]
    assert z_p == pytest.approx(0.0455003, rel=1e-5)  # the paper's z test, which the name level does not give
    for row in testable.itertuples():  # the findings' test on the per-name sums, whatever the seed
        assert row.p_value == pytest.approx(_per_name_test(row, per_name=1).p_value), (row.contrast, row.label)
    assert group_findings(paper_run(per_name=1), [NEGATIVE, POSITIVE],
                          seed=5).tests["p_value"].equals(single["p_value"])


def _per_name_test(row, *, per_name: int):
    """The findings' test of a findings row whose names hold `per_name` texts each, all with the same label."""
    hits_a, hits_b = row.count // per_name, row.rest_count // per_name
    t = np.r_[np.full(hits_a, per_name), np.zeros(row.names - hits_a), np.full(hits_b, per_name),
              np.zeros(row.rest_names - hits_b)]
    return rate_test(t, np.full(len(t), per_name), np.arange(len(t)) < row.names, alpha=0.05)


def test_a_label_limited_to_some_domains_and_texts_without_a_label() -> None:
    """Regard-like labels apply to gender and race only; texts whose column is null have no label and are
    left out of both sides."""
    frame = paper_run()
    frame["regard_label"] = np.where(frame.index % 5 == 0, None, np.where(frame.index % 3 == 0, "negative", "other"))
    frame = pd.concat([frame, pd.DataFrame(texts("religious_ideology", "islam", ["negative"] * 3)
                                           + texts("religious_ideology", "judaism", ["neutral"] * 3))])
    regard = ("regard", "negative", "regard_label", "negative", ("gender", "race"))
    tests = group_findings(frame, [regard], cluster="none").tests
    assert set(tests["domain"]) == {"gender", "race"}
    gender = tests[tests["domain"] == "gender"].iloc[0]
    actors = frame[(frame["group"] == "American_actors") & frame["regard_label"].notna()]
    assert gender["total"] == len(actors) == 40
    assert gender["count"] == (actors["regard_label"] == "negative").sum()


def test_design_effects_power_and_detectable_differences_by_hand() -> None:
    """political_ideology, 10 names of 4 texts: "negative" is constant within a name (design effect
    4 * 10/9 * 39/40 = 4.3333), "toxic" is 2 of 4 in every name (design effect 0): median 2.1667, max 4.3333.
    Power: two groups of 20 texts (5 names each), typical group 20 against 20, names spread as the median design
    effect says (rho = 1.1667 / 3), a label near 50%: the difference the findings' test finds with 80% power at
    alpha / family, which the test itself finds 80% of the time (400 seeded data sets, 10 points allowed); more than
    20 points, so the domain is too small. The row's own `detectable` is planned at its rate (0.5 of both sides)."""
    rows = []
    for group, names in (("left-wing", range(5)), ("right-wing", range(5, 10))):
        for k in names:
            for i in range(4):
                rows.append({"prompt_id": f"p/{group}/{k}/{i}", "domain": "political_ideology", "group": group,
                             "category": "", "name": f"n{k}", "sample": 0,
                             "sentiment_label": "negative" if k % 2 else "neutral", "toxicity_is_toxic": i < 2})
    frame = pd.DataFrame(rows)
    deffs = design_effects(frame, [NEGATIVE, TOXIC], "name").iloc[0]
    assert (deffs["texts"], deffs["names"], deffs["texts_per_name"], deffs["labels"]) == (40, 10, 4.0, 2)
    assert deffs["design_effect_max"] == pytest.approx(4 * 10 / 9 * 39 / 40)
    assert deffs["design_effect_median"] == pytest.approx(4 * 10 / 9 * 39 / 40 / 2)
    assert design_effects(frame, [NEGATIVE, TOXIC], "none").iloc[0]["design_effect_median"] == 1.0
    found = group_findings(frame, [NEGATIVE, TOXIC])
    power = found.power.iloc[0]
    level = 0.05 / found.family
    assert found.family == 2  # toxic: 10 of 20 on both sides, every name alike (no variance): still tested
    assert power["typical_group_texts"] == 20 and power["level"] == pytest.approx(level)
    deff = 4 * 10 / 9 * 39 / 40 / 2
    sizes = (np.full(5, 4.0), np.full(5, 4.0))
    expected = minimum_detectable_difference(0.5, 20, 20, deff=deff, alpha=level, sizes=sizes, centred=True)
    assert power["detectable_difference"] == pytest.approx(expected, rel=1e-9)
    rng = np.random.default_rng(7)
    rho = (deff - 1) / 3
    mean = np.r_[np.full(5, 0.5 + expected / 2), np.full(5, 0.5 - expected / 2)]
    draws = [rng.binomial(4, rng.beta(mean * (1 - rho) / rho, (1 - mean) * (1 - rho) / rho)).astype(float)
             for _ in range(400)]
    in_a = np.arange(10) < 5
    tests = rate_tests(draws, [np.full(10, 4.0)] * 400, [in_a] * 400, alpha=0.05, floor=[True] * 400)
    assert np.mean([t.testable and t.p_value <= level for t in tests]) == pytest.approx(0.8, abs=0.1)
    assert expected > 0.2
    assert power["too_small"] and found.too_small_domains == ["political_ideology"] and found.too_small
    row = found.tests.set_index("label").loc["negative"]
    assert row["detectable"] == pytest.approx(minimum_detectable_difference(0.5, 20, 20, deff=deff, alpha=level,
                                                                            sizes=sizes), rel=1e-9)


def test_power_table_uses_the_median_group_and_the_family_level() -> None:
    """race with four groups of 40: typical 40 against 120. 0.05 / 3 tests: (2.39398 + 0.84162) *
    sqrt(1/40 + 1/120) * 0.5 = 0.295369 > 0.20, too small; 4,000 texts a group: 0.0295369, not."""
    frame = paper_run()[lambda f: f["domain"] == "race"]
    deffs = design_effects(frame, [NEGATIVE], "none")
    power = power_table(frame, deffs, alpha=0.05, family=3, cluster="none").iloc[0]
    assert (power["groups"], power["typical_group_texts"], power["design_effect"]) == (4, 40, 1.0)
    assert power["detectable_difference"] == pytest.approx(0.295369, abs=1e-6) and power["too_small"]
    big = pd.concat([frame] * 100, ignore_index=True)
    power = power_table(big, deffs, alpha=0.05, family=3, cluster="none").iloc[0]
    assert power["detectable_difference"] == pytest.approx(0.0295369, abs=1e-6) and not power["too_small"]


def test_bad_settings_are_usage_errors() -> None:
    from bold_eval.core.errors import UsageError

    with pytest.raises(UsageError, match="--alpha"):
        group_findings(paper_run(), [NEGATIVE], alpha=1.5)
    with pytest.raises(UsageError, match="--correction"):
        group_findings(paper_run(), [NEGATIVE], correction="bonferroni")
    with pytest.raises(UsageError, match="--cluster"):
        paired_findings(paper_run(), paper_run(), [NEGATIVE], cluster="page")


# --------------------------------------------------------------------------- largest gaps


def gap_run() -> pd.DataFrame:
    """race, 12 names of 2 texts in A, B and C: negative 10, 4, 6 of 24; positive 2, 12, 4 of 24. D has 9
    names (18 texts, all positive): too few names to be eligible."""
    rows = []
    for group, negative, positive, total in (("A", 10, 2, 24), ("B", 4, 12, 24), ("C", 6, 4, 24), ("D", 0, 18, 18)):
        rows += texts("race", group, labelled(negative, positive, total), per_name=2)
    return pd.DataFrame(rows)


def test_largest_gap_over_labels_with_a_bonferroni_interval() -> None:
    """Among A, B, C: negative's largest gap is A - B = 6/24 = 0.25, positive's B - A = 10/24 = 0.41667, the
    largest. Chosen among 3 pairs x 2 labels = 6: the interval is at 1 - 0.05/6 = 99.17%, the cluster-robust
    t of statsmodels on B's and A's texts at that level."""
    frame = gap_run()
    gap = largest_gaps(frame, [NEGATIVE, POSITIVE]).iloc[0]
    assert (gap["domain"], gap["metric"], gap["label"]) == ("race", "sentiment", "positive")
    assert (gap["group_high"], gap["count_high"], gap["total_high"]) == ("B", 12, 24)
    assert (gap["group_low"], gap["count_low"], gap["total_low"]) == ("A", 2, 24)
    assert gap["gap"] == pytest.approx(10 / 24) and gap["eligible_groups"] == 3
    assert gap["choices"] == 6 and gap["interval_level"] == pytest.approx(1 - 0.05 / 6)
    assert gap["interval_label"] == "99.17%" and gap["method"] == SCORE
    rows = frame[frame["group"].isin(["A", "B"])].assign(hit=lambda f: f["sentiment_label"].eq("positive"))
    per = rows.groupby("name").agg(t=("hit", "sum"), n=("hit", "size"), high=("group", lambda g: g.iloc[0] == "B"))
    expected = rate_test(per["t"].to_numpy(), per["n"].to_numpy(), per["high"].to_numpy(), alpha=0.05 / 6)
    assert (gap["ci_low"], gap["ci_high"]) == pytest.approx((expected.ci_low, expected.ci_high))
    # one label: 3 choices, 1 - 0.05/3
    only_negative = largest_gaps(frame, [NEGATIVE]).iloc[0]
    assert (only_negative["group_high"], only_negative["group_low"], only_negative["choices"]) == ("A", "B", 3)
    assert only_negative["interval_label"] == "98.33%"


def test_largest_gap_needs_two_groups_with_enough_names() -> None:
    frame = gap_run()
    gap = largest_gaps(frame, [NEGATIVE], min_names=13).iloc[0]
    assert math.isnan(gap["gap"]) and gap["eligible_groups"] == 0
    assert gap["note"] == "0 of 4 groups have 13 names or more; no gap is reported"
    # with texts as units every group is eligible: D (18 of 18 positive) against A (2 of 24), 6 pairs x 1 label
    text_level = largest_gaps(frame, [POSITIVE], cluster="none").iloc[0]
    assert (text_level["group_high"], text_level["group_low"], text_level["choices"]) == ("D", "A", 6)
    assert text_level["method"] == Z_TEST and text_level["gap"] == pytest.approx(1 - 2 / 24)
    assert (text_level["ci_low"], text_level["ci_high"]) == pytest.approx(confint_proportions_2indep(
        18, 18, 2, 24, method="newcomb", compare="diff", alpha=0.05 / 6))


# --------------------------------------------------------------------------- model against a paired source


def paired_runs() -> tuple[pd.DataFrame, pd.DataFrame]:
    """gender, prompts p1, p2 (actors) and p3, p4 (actresses), one name each; the model has k = 2 samples per
    prompt (p4 a third, unlabelled one), the reference one sentence per prompt. p5 is the model's only.
    model negative: p1 2/2, p2 2/2, p3 0/2, p4 1/2; reference: p1 0, p2 1, p3 0, p4 0."""
    def row(prompt: str, group: str, sample: int, label: str | None) -> dict:
        return {"prompt_id": prompt, "domain": "gender", "group": group, "category": "", "name": f"name_{prompt}",
                "sample": sample, "sentiment_label": label}

    actors, actresses = "American_actors", "American_actresses"
    model = pd.DataFrame([row("p1", actors, 0, "negative"), row("p1", actors, 1, "negative"),
                          row("p2", actors, 0, "negative"), row("p2", actors, 1, "negative"),
                          row("p3", actresses, 0, "neutral"), row("p3", actresses, 1, "positive"),
                          row("p4", actresses, 0, "negative"), row("p4", actresses, 1, "neutral"),
                          row("p4", actresses, 2, None), row("p5", actresses, 0, "negative")])
    reference = pd.DataFrame([row("p1", actors, 0, "neutral"), row("p2", actors, 0, "negative"),
                              row("p3", actresses, 0, "neutral"), row("p4", actresses, 0, "neutral")])
    return model, reference


def test_prompt_rates_summarize_the_samples_of_each_prompt() -> None:
    model, _ = paired_runs()
    rates = prompt_rates(model, "sentiment_label", "negative")
    assert rates["rate"].to_dict() == {"p1": 1.0, "p2": 1.0, "p3": 0.0, "p4": 0.5, "p5": 1.0}
    assert rates["samples"].to_dict() == {"p1": 2, "p2": 2, "p3": 2, "p4": 2, "p5": 1}  # p4's None left out


def test_paired_findings_interaction_by_hand() -> None:
    """Shared prompts p1-p4. Model: actors (1 + 1) / 2 = 1, actresses (0 + 0.5) / 2 = 0.25, gap 0.75.
    Reference: actors (0 + 1) / 2 = 0.5, actresses 0, gap 0.5. Interaction 0.75 - 0.5 = 0.25 = the mean per-prompt
    difference d = (1, 0) on side a minus d = (0, 0.5) on side b. One name per prompt: two names a side, whose
    design cannot give a p-value below alpha, so the interaction is stated and not tested."""
    model, reference = paired_runs()
    found = paired_findings(model, reference, [NEGATIVE])
    assert (found.shared_prompts, found.model_prompts, found.reference_prompts) == (4, 5, 4)
    assert found.family == 0 and found.untestable == 1  # two names against two cannot reach alpha
    row = found.tests.iloc[0]
    assert (row["contrast"], row["kind"], row["prompts"], row["rest_prompts"]) == (
        "American_actors vs American_actresses", "pair", 2, 2)
    assert (row["model_rate"], row["model_rest_rate"]) == pytest.approx((1.0, 0.25))
    assert (row["reference_rate"], row["reference_rest_rate"]) == pytest.approx((0.5, 0.0))
    assert (row["model_gap"], row["reference_gap"]) == pytest.approx((0.75, 0.5))
    assert row["interaction"] == pytest.approx(0.25)
    assert row["method"] == SCORE and not row["testable"] and math.isnan(row["p_value"])
    assert row["note"].startswith("too few names to test a rate (2 against 2)")
    # positive: model p3 1/2, everything else 0: interaction -0.25, untested as well
    both = paired_findings(model, reference, [NEGATIVE, POSITIVE]).tests.set_index("label")
    assert both.loc["positive", "interaction"] == pytest.approx(-0.25)
    assert not both["testable"].any()
    # --cluster none: prompts are the units all the same (a prompt's samples are already one rate)
    none = paired_findings(model, reference, [NEGATIVE, POSITIVE], cluster="none").tests.set_index("label")
    assert (none["method"] == SCORE).all() and not none["testable"].any()
    assert none["interaction"].to_numpy() == pytest.approx(both["interaction"].to_numpy())


def test_paired_findings_over_eight_prompts_test_the_per_prompt_differences() -> None:
    """Each of p1-p4 twice (new prompt ids and names): d = (1, 0, 1, 0) on side a against (0, 0.5, 0, 0.5), one
    prompt a name. The interaction 0.25 is tested with the cluster-robust test on the same d, four names a side."""
    model, reference = paired_runs()
    extra_model = model.assign(prompt_id=model["prompt_id"] + "b", name=model["name"] + "b")
    extra_reference = reference.assign(prompt_id=reference["prompt_id"] + "b", name=reference["name"] + "b")
    model, reference = pd.concat([model, extra_model]), pd.concat([reference, extra_reference])
    d = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 0.5, 0.0, 0.5])
    side = np.arange(8) < 4
    row = paired_findings(model, reference, [NEGATIVE]).tests.iloc[0]
    assert row["method"] == SCORE and (row["prompts"], row["names"], row["rest_names"]) == (4, 4, 4)
    assert row["interaction"] == pytest.approx(0.25) and row["testable"]
    assert row["p_value"] == pytest.approx(difference_test(d, side, np.arange(8), binary=False).p_value)


def test_paired_findings_keep_a_names_prompts_together() -> None:
    """Two prompts per name: the interaction is tested with the name as the unit, on the same per-prompt
    differences."""
    model, reference = paired_runs()
    for frame in (model, reference):
        frame["name"] = frame["prompt_id"].map({"p1": "ann", "p2": "ann", "p3": "bea", "p4": "cat", "p5": "cat"})
    extra_model = model.assign(prompt_id=model["prompt_id"] + "b", name=model["name"] + "2")
    extra_reference = reference.assign(prompt_id=reference["prompt_id"] + "b", name=reference["name"] + "2")
    model, reference = pd.concat([model, extra_model]), pd.concat([reference, extra_reference])
    row = paired_findings(model, reference, [NEGATIVE]).tests.iloc[0]
    assert row["method"] == SCORE and (row["prompts"], row["names"]) == (4, 2)
    assert (row["rest_prompts"], row["rest_names"]) == (4, 4)
    d = np.array([0.0, 1.0, 0.0, 0.5] * 2)
    side = np.array([True, True, False, False] * 2)
    names = np.array(["gender/ann", "gender/ann", "gender/bea", "gender/cat",
                      "gender/ann2", "gender/ann2", "gender/bea2", "gender/cat2"])
    expected = difference_test(d, side, names, binary=False)
    assert row["interaction"] == pytest.approx(0.25) and row["testable"] == expected.testable
    assert row["p_value"] == pytest.approx(expected.p_value, nan_ok=True)


# --------------------------------------------------------------------------- real BOLD: the paper's analysis


@pytest.fixture(scope="module")
def wikipedia_religion(bold_dir) -> pd.DataFrame:
    """BOLD's religious_ideology Wikipedia sentences from ../shared, labelled by unigram gender matching."""
    from bold_eval.data.bold import load_bold
    from bold_eval.metrics.gender_polarity import GenderPolarityScorer
    from bold_eval.scoring.texts import build_texts

    bold = load_bold("religious_ideology", data_dir=bold_dir).to_pandas()
    bold = bold.assign(continuation=[sentence[len(prompt):] for sentence, prompt in zip(bold["wikipedia"],
                                                                                        bold["prompt"], strict=True)])
    labels = GenderPolarityScorer(methods=["unigram"])(build_texts(bold).tolist())["unigram_label"]
    return bold.assign(sample=0, gender_polarity_unigram_label=labels)


def test_wikipedia_religion_text_level_and_by_page(wikipedia_religion) -> None:
    """639 sentences from 80 pages (atheism: 29 sentences from a single page). Texts as units: every p-value is
    the z test (or Fisher's) on the row's counts. Pages as units: names per side are pages, atheism vs rest has
    one page on its side, so it is not tested (too few names to test a rate, and the row says so), and the
    design effect of the male label is above 1."""
    labels = [("gender_polarity", gender, "gender_polarity_unigram_label", gender, None) for gender in ("male",
                                                                                                        "female")]
    text_level = group_findings(wikipedia_religion, labels, cluster="none")
    tests = text_level.tests
    assert len(tests) == 2 * (7 + 1) and text_level.family == 16  # 7 groups vs rest + christianity vs islam
    for row in tests.itertuples():
        if row.method == Z_TEST:
            assert row.p_value == pytest.approx(proportions_ztest([row.count, row.rest_count],
                                                                  [row.total, row.rest_total])[1])
        else:
            assert row.method == FISHER
            table = [[row.count, row.total - row.count], [row.rest_count, row.rest_total - row.rest_count]]
            assert row.p_value == pytest.approx(stats.fisher_exact(table)[1])
    by_page = group_findings(wikipedia_religion, labels)
    pages = wikipedia_religion.groupby("group")["name"].nunique()
    rows = by_page.tests.set_index(["contrast", "label"])
    assert rows.loc[("atheism vs rest", "male"), "names"] == pages["atheism"] == 1
    assert rows.loc[("christianity vs islam", "male"), ["names", "rest_names"]].tolist() == [
        pages["christianity"], pages["islam"]]
    atheism = rows.loc[("atheism vs rest", "male")]  # one page: no test of a rate, and the report says why
    assert not atheism["testable"] and atheism["note"].startswith("too few names to test a rate (1 against 79)")
    deff = by_page.design_effects.iloc[0]
    assert deff["names"] == 80 and deff["design_effect_max"] > 1


def test_findings_do_not_depend_on_the_number_of_threads(monkeypatch) -> None:
    """The text-level tests of a family (`--cluster none`) run on threads (`clustered.run_tests`); one thread and
    four give the same rows in the same order. (With the name as the unit the family is one batched
    computation, `clustered.difference_tests`, and uses no pool.)"""
    from bold_eval.analysis import clustered

    calls: list[int] = []
    real = clustered.run_tests

    def counted(jobs, threads=None):
        calls.append(len(jobs))
        return real(jobs, threads)

    monkeypatch.setattr("bold_eval.analysis.findings.run_tests", counted)
    run = paper_run(per_name=2)
    results = {}
    for threads in ("1", "4"):
        monkeypatch.setenv(clustered.THREADS_ENV, threads)
        results[threads] = group_findings(run, [NEGATIVE, POSITIVE], cluster="none").tests
    assert calls and min(calls) > 1  # several tests per family went through the pool
    assert len(results["1"]) > 1
    pd.testing.assert_frame_equal(results["1"], results["4"])
    monkeypatch.setattr("bold_eval.analysis.findings.run_tests", None)  # the default needs no pool
    assert len(group_findings(run, [NEGATIVE, POSITIVE]).tests) == len(results["1"])


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_thread_count_is_a_usage_error(monkeypatch, value) -> None:
    from bold_eval.analysis import clustered
    from bold_eval.core.errors import UsageError

    monkeypatch.setenv(clustered.THREADS_ENV, value)
    with pytest.raises(UsageError, match="BOLD_EVAL_THREADS must be a whole number"):
        group_findings(paper_run(), [NEGATIVE], cluster="none")


def test_own_texts_and_interactions_are_one_holm_family(multipletests) -> None:
    """A report's own-text contrasts and its model-vs-Wikipedia interactions are adjusted together: the
    adjusted p-values are Holm's over the union of both tables' testable rows, and both report its size."""
    from bold_eval.analysis.findings import one_family

    rng = np.random.default_rng(0)
    rows = []
    for group, rate in (("a", 0.2), ("b", 0.5), ("c", 0.3)):
        for name in range(40):
            for prompt in range(3):
                rows.append({"prompt_id": f"{group}{name}-{prompt}", "domain": "d", "group": group, "category": "",
                             "name": f"{group}{name}", "sample": 0,
                             "sentiment_label": "negative" if rng.random() < rate else "neutral"})
    model = pd.DataFrame(rows)
    reference = model.assign(sentiment_label=np.where(rng.random(len(model)) < 0.3, "negative", "neutral"))
    own = group_findings(model, [NEGATIVE])
    paired = paired_findings(model, reference, [NEGATIVE])
    joint_own, joint_paired = one_family(own, paired, model, alpha=0.05, correction="holm")
    p = np.r_[own.tests.loc[own.tests["testable"], "p_value"], paired.tests.loc[paired.tests["testable"], "p_value"]]
    expected = multipletests(p, alpha=0.05, method="holm")[1]
    got = np.r_[joint_own.tests.loc[joint_own.tests["testable"], "p_adjusted"],
                joint_paired.tests.loc[joint_paired.tests["testable"], "p_adjusted"]]
    assert joint_own.family == joint_paired.family == len(p) == own.family + paired.family > own.family
    np.testing.assert_allclose(got, expected)
    assert joint_own.power["level"].iloc[0] == pytest.approx(0.05 / len(p))
    alone, none = one_family(own, None, model, alpha=0.05, correction="holm")
    assert none is None and alone.family == own.family
    np.testing.assert_allclose(alone.tests["p_adjusted"], own.tests["p_adjusted"])
