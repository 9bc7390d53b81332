"""`bold-eval compare`: interactions and overall differences paired by prompt, by hand, under the null, and
with two real runs of one tiny model that differ only in --seed (an A/A test)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bold_eval.analysis.clustered import POWER_AGAINST_ORACLE, minimum_detectable_difference
from bold_eval.analysis.compare import (
    NO_DISCORDANT,
    OBSERVED,
    PAIRED_SCORE,
    WORST_CASE,
    PromptSetError,
    detectable_interaction,
    difference_design,
    paired_difference,
    unit_strata,
)
from bold_eval.cli import main
from bold_eval.report.compare import compare_runs
from bold_eval.testing.runs import write_run_folder

ACTORS, ACTRESSES = "American_actors", "American_actresses"


def texts(rows: list[tuple[str, str, list[str]]]) -> pd.DataFrame:
    """scores.parquet of the gender domain: (group, name, sentiment label of each sample) per prompt."""
    records = []
    for group, name, labels in rows:
        for sample, label in enumerate(labels):
            records.append({"prompt_id": f"gender/{group}/{name}/0", "domain": "gender", "group": group,
                            "category": "", "name": name, "sample": sample, "text": f"{name} was",
                            "sentiment_label": label})
    return pd.DataFrame(records)


def write_run(folder: Path, scores: pd.DataFrame, model: str) -> Path:
    return write_run_folder(folder, scores, model=model, metrics=["sentiment"])


# Run A: two samples per prompt; run B (the baseline): one. Positive rates per prompt, A / B:
# a1 1.0 / 0, a2 0.5 / 1, f1 0 / 1, f2 0.5 / 1.
RUN_A = [(ACTORS, "a1", ["positive", "positive"]), (ACTORS, "a2", ["positive", "negative"]),
         (ACTRESSES, "f1", ["negative", "negative"]), (ACTRESSES, "f2", ["negative", "positive"])]
RUN_B = [(ACTORS, "a1", ["negative"]), (ACTORS, "a2", ["positive"]),
         (ACTRESSES, "f1", ["positive"]), (ACTRESSES, "f2", ["positive"])]


def test_interaction_and_overall_difference_by_hand(tmp_path: Path) -> None:
    """Positive sentiment. Gap actors - actresses: A (1 + 0.5)/2 - (0 + 0.5)/2 = +0.5; B (0 + 1)/2 - (1 + 1)/2
    = -0.5; interaction +1.0. Pairing sample 0 with sample 0 instead would give A's gap (1 + 1)/2 - 0 = 1.0.
    Per prompt d = A - B = 1, -0.5, -1, -0.5 (actors' mean +0.25, actresses' -0.75); two names a side cannot
    reach alpha, so the interaction is stated and not tested. Negative sentiment mirrors it (-1.0).
    Overall difference (positive): mean d = -0.25 from the paired test over the 4 names (the runs' rates 0.5 and
    0.75; one prompt a name, so each CR2 weight is 4/3): run A about its own rate, 4/3 (0.25 + 0.25) = 2/3, below
    its floor at the restricted rate 0.625, 0.625 * 0.375 * 4 = 0.9375; run B 4/3 * 0.75 = 1 above the same floor;
    the pairing's covariance 4/3 (0.5 * -0.75 - 0.5 * 0.25) = -2/3. V = (0.9375 + 1 + 4/3) / 16, t = -0.25 / sqrt(V)
    on 3 degrees of freedom: p = 0.619, its interval around -0.25 containing 0."""
    baseline = write_run(tmp_path / "b", texts(RUN_B), "model-b")
    run = write_run(tmp_path / "a", texts(RUN_A), "model-a")
    compare_runs([baseline, run], tmp_path / "cmp")
    interactions = pd.read_csv(tmp_path / "cmp" / "tables" / "interactions.csv")
    positive = interactions[interactions["label"] == "positive"].iloc[0]
    assert (positive["run"], positive["baseline"], positive["contrast"]) == ("model-a", "model-b",
                                                                             f"{ACTORS} vs {ACTRESSES}")
    assert positive["model_gap"] == pytest.approx(0.5) and positive["reference_gap"] == pytest.approx(-0.5)
    assert positive["interaction"] == pytest.approx(1.0) and positive["method"] == "cluster score t"
    # two names a side: no p-value below alpha is possible, so the interaction is stated, untested, with why
    assert not interactions["testable"].any() and interactions["p_adjusted"].isna().all()
    assert positive["note"].startswith("too few names to test a rate (2 against 2)")
    negative = interactions[interactions["label"] == "negative"].iloc[0]
    assert negative["interaction"] == pytest.approx(-1.0)
    overall = pd.read_csv(tmp_path / "cmp" / "tables" / "overall_differences.csv")
    row = overall[overall["label"] == "positive"].iloc[0]
    assert (row["run_rate"], row["baseline_rate"]) == pytest.approx((0.5, 0.75))
    assert row["difference"] == pytest.approx(-0.25) and row["p_value"] == pytest.approx(0.619, abs=1e-3)
    assert row["ci_low"] < -0.25 < 0 < row["ci_high"]
    assert (row["names"], row["discordant_names"], row["method"]) == (4, 4, PAIRED_SCORE)
    text = (tmp_path / "cmp" / "compare.md").read_text()
    # one family over both tables: no interaction is testable here, so the family is the overall rows
    payload = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    testable_overall = sum(bool(test["testable"]) for test in payload["overall"]["tests"])
    assert payload["interactions"]["family"] == payload["overall"]["family"] == testable_overall
    assert f"One family of {testable_overall} tests with the overall differences below" in text
    assert "adjusted in one family with the interactions above" in text and "adjusted p (Holm step-down)" in text
    promise = text.split("**What the tests promise**", 1)[1].split("\n", 1)[0]  # both promises, with their table
    assert "a false finding in at most alpha = 0.05" in promise and '"Power against an oracle"' in promise
    interactions = POWER_AGAINST_ORACLE["compare's interactions"]
    assert f"found {interactions:.0%} (interactions)" in promise


def test_a_lone_rare_prompt_is_no_finding(tmp_path: Path) -> None:
    """24 actors and 24 actresses, one prompt each, all neutral in both runs except one actor negative in
    the run: an ordinary t test over prompts calls that interaction certain (t unbounded, p = 0). With the name as
    the unit, the one discordant name is the whole of its side's variance: t is about 1, no finding."""
    rows = [(ACTORS, f"a{i}", ["neutral"]) for i in range(24)] + [(ACTRESSES, f"f{i}", ["neutral"]) for i in range(24)]
    baseline = write_run(tmp_path / "b", texts(rows), "model-b")
    run = write_run(tmp_path / "a", texts([(ACTORS, "a0", ["negative"]), *rows[1:]]), "model-a")
    compare_runs([baseline, run], tmp_path / "cmp")
    interactions = pd.read_csv(tmp_path / "cmp" / "tables" / "interactions.csv")
    negative = interactions[interactions["label"] == "negative"].iloc[0]
    assert negative["interaction"] == pytest.approx(1 / 24) and negative["method"] == "cluster score t"
    assert negative["p_value"] > 0.3 and not interactions["significant"].any()


def test_no_discordant_prompt_gets_an_exact_interval(tmp_path: Path) -> None:
    """Every prompt labelled alike by both runs: difference 0, bounded by Clopper-Pearson with 0 of 10
    names discordant, u = 1 - 0.025^(1/10) = 0.308497, never a +0.000 [+0.000, +0.000] point."""
    rates = np.tile([0.0, 1.0], 7)  # both runs alike on every prompt
    result = paired_difference(np.zeros(14), [f"name_{i % 10}" for i in range(14)], rates=(rates, rates))
    assert result.estimate == 0.0 and result.method == NO_DISCORDANT and not result.testable
    assert (result.ci_low, result.ci_high) == pytest.approx((-0.308497, 0.308497), abs=1e-6)
    rows = [(ACTORS if i < 5 else ACTRESSES, f"n{i}", ["positive", "neutral"][i % 2:][:1]) for i in range(10)]
    first = write_run(tmp_path / "one", texts(rows), "one")
    second = write_run(tmp_path / "two", texts(rows), "two")
    compare_runs([first, second], tmp_path / "cmp")
    overall = pd.read_csv(tmp_path / "cmp" / "tables" / "overall_differences.csv")
    assert set(overall["method"]) == {NO_DISCORDANT}
    assert overall["ci_high"].tolist() == pytest.approx([0.308497] * len(overall), abs=1e-6)
    text = (tmp_path / "cmp" / "compare.md").read_text()
    assert "+0.000 [-0.308, +0.308]" in text and "[+0.000, +0.000]" not in text


def test_detectable_interaction_by_hand() -> None:
    """50 names against 250, 10 prompts each, 12 tests (level 0.05 / 12): v = 1.6, design effect 2, base rate
    0.3 give SE = sqrt(1.6 x 0.21 x 2 x (1/500 + 1/2500)) = 0.04016; Welch's df over the names, (1/50 + 1/250)^2
    / (1/50^2/49 + 1/250^2/249) = 70.0, needs a noncentrality of 3.819 for 80% power: 15.3 points. The worst
    case (each name one coin flip per run at 50%, v = 2) gives 41.8 points, near the 40.6 of a z test in
    place of t. 4 names against 30 and 2 against 2 cannot reach the level at all: the design rule's smallest
    attainable p-value on those designs (`rate_test.min_attainable_p`) is above 0.05 / 12. A side whose prompts
    sit with a few names has fewer degrees of freedom and needs a larger interaction than equal names."""
    level = 0.05 / 12
    found = detectable_interaction(50, 250, 500, 2500, base_rate=0.3, variance_ratio=1.6, deff=2.0, level=level)
    assert found["testable"] and found["df"] == pytest.approx(70.0, abs=0.05)
    assert found["detectable_interaction"] == pytest.approx(3.819 * 0.04016, rel=2e-3)
    worst = detectable_interaction(50, 250, 500, 2500, base_rate=0.5, variance_ratio=2.0, deff=np.nan, level=level)
    assert worst["detectable_interaction"] == pytest.approx(0.418, abs=1e-3)
    assert np.sqrt(2) * minimum_detectable_difference(0.5, 50, 250, alpha=level) == pytest.approx(0.406, abs=1e-3)
    small = detectable_interaction(4, 30, 40, 300, base_rate=0.3, variance_ratio=1.6, deff=2.0, level=level)
    assert not small["testable"] and small["smallest_p"] > level
    tiny = detectable_interaction(2, 2, 4, 4, base_rate=0.3, variance_ratio=1.6, deff=2.0, level=level)
    assert not tiny["testable"] and tiny["smallest_p"] > 0.1
    uneven = (np.r_[455.0, np.full(9, 5.0)], np.full(250, 10.0))  # one name holds most of g01's prompts
    skewed = detectable_interaction(10, 250, 500, 2500, base_rate=0.3, variance_ratio=1.6, deff=2.0, level=level,
                                    counts=uneven)
    even = detectable_interaction(10, 250, 500, 2500, base_rate=0.3, variance_ratio=1.6, deff=2.0, level=level)
    assert skewed["df"] < 3 < 8 < even["df"]
    assert skewed["detectable_interaction"] > 2 * even["detectable_interaction"]


def test_difference_design_from_the_runs_own_differences() -> None:
    """Two labels on 6 prompts of 3 names: the positive rates differ (v = Var(d) / p (1 - p) and the design
    effect of d over the names), the negative ones are the same in both runs (no information, left out); the
    base rate is that of the label nearest 50%. Runs that agree on every prompt give the worst case."""
    index = pd.Index([f"p{i}" for i in range(6)], name="prompt_id")
    units = pd.Series(["a", "a", "b", "b", "c", "c"], index=index)
    positive = pd.DataFrame({"run": [1, 1, 0, 0, 1, 0.5], "baseline": [0, 0.5, 0, 0, 1, 1]}, index=index)
    negative = pd.DataFrame({"run": [0, 0, 1, 0, 0, 0.0], "baseline": [0, 0, 1, 0, 0, 0.0]}, index=index)
    design = difference_design([positive, negative], units)
    d = positive["run"] - positive["baseline"]
    rate = (positive["run"].mean() + positive["baseline"].mean()) / 2
    assert design["basis"] == OBSERVED and design["labels"] == 1 and design["base_rate"] == pytest.approx(rate)
    assert design["variance_ratio"] == pytest.approx(d.var() / (rate * (1 - rate)))
    assert design["design_effect"] >= 1.0
    same = difference_design([negative], units)
    assert same["basis"] == WORST_CASE and same["variance_ratio"] == 2.0 and np.isnan(same["design_effect"])


RACE = ("African_Americans", "Asian_Americans", "European_Americans", "Hispanic_and_Latino_Americans")


def race_runs(folder: Path, names: tuple[int, ...], prompts: int, seed: int = 0) -> tuple[Path, Path]:
    """Two runs of one sample per prompt in race, `names` names per group with `prompts` prompts each. Each name
    has its own rates of positive and negative sentiment (Beta, intra-class correlation 0.2, means 0.3 and 0.2);
    each run sees the name through its own effect (sd 0.5 logit): the per-prompt differences are clustered by
    name, a realistic design effect, and no group differs."""
    from scipy import special

    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(names)), names)
    rates = special.logit(np.stack([rng.beta(1.2, 2.8, len(groups)), rng.beta(0.8, 3.2, len(groups))]))
    rows = np.repeat(np.arange(len(groups)), prompts)
    runs = []
    for run in ("b", "a"):
        q = special.expit(rates + rng.normal(0, 0.5, rates.shape))[:, rows]
        draw = rng.random(len(rows))
        labels = np.where(draw < q[0], "positive", np.where(draw > 1 - q[1], "negative", "neutral"))
        scores = pd.DataFrame({"prompt_id": [f"race/{name}/{j}" for name in np.arange(len(groups))
                                             for j in range(prompts)],
                               "domain": "race", "group": [RACE[g] for g in groups[rows]], "category": "",
                               "name": [f"n{name}" for name in rows], "sample": 0, "text": "x was",
                               "sentiment_label": labels})
        runs.append(write_run(folder / run, scores, f"model-{run}"))
    return runs[0], runs[1]


def test_the_banner_reads_the_runs_own_design(tmp_path: Path) -> None:
    """50 African American names against 250 (the rest in three groups of 83-84), 10 prompts a name, 10 tests
    (5 contrasts x 2 labels): from the runs' own differences (v 1.7, design effect 1.4) a typical contrast (83
    names against 217) finds 10 points, so no banner; treating each name as one coin flip per run would call
    50 against 250 too few, 40 points. 3 names a group with 2 prompts each: a contrast of 3 names against 9 has
    too few names for the test to reach the corrected level at all (`rate_test.min_attainable_p`), so no
    contrast is testable, and the banner fires."""
    big = compare_runs(race_runs(tmp_path / "big", (50, 84, 83, 83), 10), tmp_path / "big_cmp").read_text()
    power = pd.read_csv(tmp_path / "big_cmp" / "tables" / "comparability.csv").iloc[0]
    assert (power["names"], power["testable_contrasts"], power["basis"]) == (300, 5, OBSERVED)
    assert 1.1 < power["design_effect"] < 2 and 0.05 < power["detectable_interaction"] < 0.15
    assert not power["too_small"] and (power["typical_names"], power["typical_rest_names"]) == (83, 217)
    assert np.sqrt(2) * minimum_detectable_difference(0.5, 50, 250, alpha=power["level"]) > 0.2
    assert "share too few prompts" not in big and "Smallest detectable gap difference" in big
    tiny = compare_runs(race_runs(tmp_path / "tiny", (3, 3, 3, 3), 2), tmp_path / "tiny_cmp").read_text()
    power = pd.read_csv(tmp_path / "tiny_cmp" / "tables" / "comparability.csv").iloc[0]
    assert power["too_small"] and power["testable_contrasts"] == 0 and pd.isna(power["detectable_interaction"])
    assert tiny.index("**These runs share too few prompts to say which model is more biased.**") < tiny.index("Runs:")


def test_two_shared_prompts_state_the_count_and_the_banner_before_any_number(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(ACTORS, f"a{i}", ["positive"]) for i in range(4)] + [(ACTRESSES, f"f{i}", ["negative"]) for i in range(4)]
    first = write_run(tmp_path / "one", texts(rows), "one")
    # the shared actor is positive in one and negative in two: an interaction of -1 over one name a side
    second = write_run(tmp_path / "two", texts([(ACTORS, "a0", ["negative"]), rows[4], (ACTORS, "other", ["neutral"])]),
                       "two")
    with pytest.raises(PromptSetError, match=r"different prompt sets \(one: 8, two: 3 prompts; 2 shared"):
        compare_runs([first, second], tmp_path / "refused")
    assert main(["compare", str(first), str(second), "--out", str(tmp_path / "cli")]) == 2
    assert "--allow-different-prompts" in capsys.readouterr().err
    assert main(["compare", str(first), str(second), "--out", str(tmp_path / "cmp"), "--allow-different-prompts",
                 "--correction", "bh"]) == 0
    err = capsys.readouterr().err
    assert "comparing them on the 2 prompts they all share" in err and "too few to say" in err
    text = (tmp_path / "cmp" / "compare.md").read_text()
    shared = text.index("**Compared on 2 shared prompts only.**")
    banner = text.index("**These runs share too few prompts to say which model is more biased.**")
    assert shared < banner < text.index("Runs:") < text.index("### Sentiment proportions")
    assert re.search(r"\d", text).start() == shared + len("**Compared on ")  # the first number printed
    assert "gender 2 prompts / 2 names (no testable contrast)" in text
    payload = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert payload["shared_prompts"] == 2 and payload["too_few_prompts"] and payload["correction"] == "bh"
    assert payload["prompts_per_run"] == {"one": 8, "two": 3}
    # one name a side, two units in all: the interaction is stated (model gap minus baseline gap: 0 - 1 and
    # 0 - (-1)) but not tested, no p-value, outside the family, never a finding
    interactions = pd.DataFrame(payload["interactions"]["tests"]).set_index("label")
    assert not interactions["testable"].any()  # the family holds only the testable overall differences
    assert payload["interactions"]["family"] == sum(bool(test["testable"]) for test in payload["overall"]["tests"])
    assert interactions.loc[["positive", "negative"], "interaction"].tolist() == [-1.0, 1.0]
    assert (interactions["interaction"] == interactions["model_gap"] - interactions["reference_gap"]).all()
    assert interactions["p_value"].isna().all() and interactions["p_adjusted"].isna().all()
    assert interactions["note"].str.startswith("too few names to test a rate").all()
    assert not interactions["significant"].any() and "_No contrast could be tested" in text


def test_the_power_script_prints_prediction_and_power(bold_dir: Path) -> None:
    """benchmarks/compare_power.py, two data sets a row: the design, both predictions and the measured power."""
    from bold_eval.testing.scripts import script_module

    with script_module("compare_power") as module:
        text = module.main(["--designs", "4:30", "--sims", "2", "--effects", "0.3", "--data-dir", str(bold_dir)])
    assert "| 4 vs 30 | 1 | " in text and "+30.0 points" in text and "power: found [95% CI]" in text


@pytest.mark.slow
def test_two_seeds_of_one_model_find_no_interaction(tmp_path: Path, bold_dir: Path, bold_sentences) -> None:
    """A/A: one model twice, differing only in --seed (the same --limit sample, --sample-seed 0), two samples per
    prompt, lexicon metrics. The texts differ; no model x group interaction and no overall difference may be
    significant after correction. The model is a tiny GPT-2 with a tokenizer trained on BOLD's sentences: what is
    tested is compare, whatever wrote the texts (the embedded chat model's runs are tested in
    tests/generation/test_chat.py)."""
    from bold_eval.generation.decoding import make_decoding
    from bold_eval.run import RunConfig, run
    from bold_eval.testing.models import build_tiny_causal_lm

    model = str(build_tiny_causal_lm(tmp_path / "tiny", bold_sentences))
    folders = []
    for seed in (1, 2):
        folder = tmp_path / f"seed{seed}"
        run(RunConfig(out=folder, model=model, dtype="float32", device="cpu", batch_size=16,
                      decoding=make_decoding(max_new_tokens=12), seed=seed, num_samples=2, data_dir=str(bold_dir),
                      domains=["gender", "religious_ideology", "profession"], limit=24,
                      metrics=["sentiment", "psycholinguistic", "gender_polarity"], reference=False, progress=False,
                      report=False))  # compare reads the scores
        folders.append(folder)
    first, second = (pd.read_parquet(folder / "scores.parquet") for folder in folders)
    assert set(first["prompt_id"]) == set(second["prompt_id"])
    assert (first["continuation"].to_numpy() != second["continuation"].to_numpy()).mean() > 0.9
    compare_runs(folders, tmp_path / "cmp")
    payload = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    interactions = pd.DataFrame(payload["interactions"]["tests"])
    # 24 prompts a domain: most contrasts have too few names to test a rate and leave the family
    assert payload["interactions"]["family"] >= 12, payload["interactions"]["family"]
    assert set(interactions["metric"]) >= {"sentiment", "psycholinguistic"}
    assert "psycholinguistic" in set(interactions.loc[interactions["testable"], "metric"])
    assert not interactions["significant"].any()
    overall = pd.DataFrame(payload["overall"]["tests"])
    assert payload["overall"]["family"] >= 10 and not overall["significant"].any()
    assert "**No interaction is significant**" in (tmp_path / "cmp" / "compare.md").read_text()


def test_the_interactions_and_the_overall_differences_are_one_holm_family(multipletests) -> None:
    """`joint_family`: Holm over the testable rows of both tables together (statsmodels), rows without a test
    left out, and both tables report the whole family's size."""
    from bold_eval.analysis.compare import joint_family
    from bold_eval.analysis.results import CorrectedFamily

    first = pd.DataFrame({"p_value": [0.001, 0.04, np.nan], "testable": [True, True, False]})
    second = pd.DataFrame({"p_value": [0.01, 0.5], "testable": [True, True]})
    joint = joint_family([CorrectedFamily(first, 2), CorrectedFamily(second, 2)], alpha=0.05, correction="holm")
    expected = multipletests([0.001, 0.04, 0.01, 0.5], method="holm")[1]
    assert [family.family for family in joint] == [4, 4]
    np.testing.assert_allclose(np.r_[joint[0].tests["p_adjusted"][:2], joint[1].tests["p_adjusted"]], expected)
    assert np.isnan(joint[0].tests["p_adjusted"].iloc[2]) and not joint[0].tests["significant"].iloc[2]
    assert list(joint[0].tests["significant"][:2]) == [True, False] and list(joint[1].tests["significant"]) == [
        True, False]


def test_paired_difference_takes_the_groups_as_strata() -> None:
    """A run that differs from the baseline only on group g0's names: with each prompt's group passed, the
    overall difference is tested with the groups as strata (the planted group's difference is not spread between
    names), so its interval is narrower than with the domain as one stratum; each unit's group is its prompts'."""
    rng = np.random.default_rng(7)
    names = np.repeat(np.arange(60), 8)
    groups = np.where(names < 15, "g0", np.where(names < 40, "g1", "g2"))
    base = rng.beta(6, 14, 60)[names]
    baseline = (rng.random(len(names)) < base).astype(float)
    run = (rng.random(len(names)) < np.where(groups == "g0", base + 0.4, base)).astype(float)
    strata = paired_difference(run - baseline, names, rates=(run, baseline), groups=groups)
    one = paired_difference(run - baseline, names, rates=(run, baseline))
    assert strata.estimate == one.estimate
    assert strata.p_value < one.p_value
    assert strata.ci_high - strata.ci_low < one.ci_high - one.ci_low
    assert unit_strata(np.array([0, 1, 1, 2, 0]), np.array(["a", "b", "b", "a", "a"]), 3).tolist() == [0, 1, 0]
