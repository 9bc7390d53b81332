"""The findings' tests reject at the rate they claim: benchmarks/calibration.py, small.

Under the null (groups shuffled among the names of real Wikipedia scores, or synthetic names with a known
within-name correlation) the number of simulations with any significant finding must not exceed the 99th
percentile of Binomial(n, alpha); the paper's text-level analysis (`--cluster none`) must fail that on
clustered data, and a large planted difference must be found. Every simulation is seeded: the counts below
are the same on every run, and the thresholds leave them room only for a real change of the tests.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bold_eval.analysis.summary import finding_labels
from bold_eval.core.errors import MissingFileError, UsageError
from bold_eval.testing.scripts import script_module

ALPHA = 0.05
LABELS = ["sentiment", "psycholinguistic:joy", "psycholinguistic:anger", "psycholinguistic:fear"]


@pytest.fixture(scope="module")
def calibration():
    with script_module("calibration") as module:
        yield module


def wikipedia_frame(bold_dir: Path, domains: list[str]) -> pd.DataFrame:
    """BOLD's Wikipedia sentences of `domains`, anonymized and scored with sentiment and psycholinguistic
    norms as `bold-eval run --model wikipedia` scores them (without the run's report: a few seconds)."""
    from bold_eval.data.bold import load_bold
    from bold_eval.scoring.scorers import score_texts
    from bold_eval.scoring.texts import build_texts

    bold = pd.concat([load_bold(domain, data_dir=bold_dir).to_pandas() for domain in domains], ignore_index=True)
    bold = bold.assign(sample=0, continuation=[sentence[len(prompt):] for sentence, prompt in
                                               zip(bold["wikipedia"], bold["prompt"], strict=True)])
    texts = build_texts(bold)
    scored = score_texts(texts.tolist(), bold["domain"].tolist(), ["sentiment", "psycholinguistic"])
    return pd.concat([bold.drop(columns=["wikipedia"]), scored.columns], axis=1)


@pytest.fixture(scope="module")
def religion(bold_dir) -> pd.DataFrame:
    return wikipedia_frame(bold_dir, ["religious_ideology"])


@pytest.fixture(scope="module")
def profession_sizes(calibration, bold_dir) -> np.ndarray:
    return calibration.bold_sizes("profession", str(bold_dir))


def at_most_alpha(trials: int) -> int:
    """The largest count of simulations with a false finding that a test with FWER alpha shows in 99% of runs."""
    return int(stats.binom.ppf(0.99, trials, ALPHA))


# --------------------------------------------------------------------------- formulas by hand


def test_beta_parameters_and_design_effect_by_hand(calibration) -> None:
    # rho = 0.2: a + b = 0.8 / 0.2 = 4, so Beta(1.2, 2.8) has mean 0.3 and ICC 1 / (4 + 1) = 0.2
    assert calibration.beta_parameters(0.3, 0.2) == pytest.approx((1.2, 2.8))
    # clusters of 1 and 3 texts: m = (1 + 9) / 4 = 2.5, deff = 1 + 1.5 * 0.5
    assert calibration.design_effect(np.array([1, 3]), 0.5) == pytest.approx(1.75)
    assert calibration.design_effect(np.array([1, 1, 1]), 0.9) == pytest.approx(1.0)
    with pytest.raises(UsageError, match="strictly between 0 and 1"):
        calibration.beta_parameters(1.05, 0.2)


def test_clopper_pearson_interval_by_hand(calibration) -> None:
    # 0 of 10: the upper limit solves (1 - p)^10 = 0.025, p = 1 - 0.025^(1/10) = 0.3085
    assert calibration.rate_with_interval(0, 10) == pytest.approx((0.0, 0.0, 1 - 0.025 ** 0.1))
    rate, low, high = calibration.rate_with_interval(5, 100)
    assert rate == 0.05 and low < 0.05 < high
    # the interval's lower end is the binomial probability that 5 or more of 100 succeed being 2.5%
    assert stats.binom.sf(4, 100, low) == pytest.approx(0.025)


def test_synthetic_scores_have_the_planted_rate_and_the_within_name_correlation(calibration, profession_sizes) -> None:
    scenario = calibration.Scenario(rate=0.3, rho=0.2, effect=0.15)
    frame = calibration.synthetic_scores(profession_sizes, scenario, names=3000, groups=6,
                                         rng=np.random.default_rng(1))
    assert frame.groupby("name")["group"].nunique().max() == 1  # a name is in one group
    assert sorted(frame.drop_duplicates("name")["group"].value_counts().unique()) == [500]
    rates = frame.groupby(frame["group"] == "g01")[["planted", "null"]].mean()
    assert rates.loc[True, "planted"] == pytest.approx(0.45, abs=0.03)
    assert rates.loc[False, "planted"] == pytest.approx(0.3, abs=0.03)
    assert rates["null"].to_numpy() == pytest.approx([0.3, 0.3], abs=0.03)
    # one-way ANOVA estimator of the intra-class correlation of the null label, names as clusters
    per = frame[frame["group"] != "g01"].groupby("name")["null"].agg(["sum", "size"])
    per = per[per["size"] >= 2]
    n, k = per["size"].to_numpy(float), len(per)
    mean = per["sum"].sum() / n.sum()
    within = (per["sum"] - per["sum"] ** 2 / n).sum() / (n.sum() - k)
    between = (per["sum"] ** 2 / n).sum() - n.sum() * mean ** 2
    n0 = (n.sum() - (n ** 2).sum() / n.sum()) / (k - 1)
    icc = (between / (k - 1) - within) / (between / (k - 1) + (n0 - 1) * within)
    assert icc == pytest.approx(0.2, abs=0.04)


def test_shuffle_keeps_each_names_texts_together_and_the_group_sizes(calibration) -> None:
    frame = pd.DataFrame({
        "prompt_id": [f"p{i}" for i in range(9)],
        "domain": ["profession"] * 7 + ["gender"] * 2,
        "group": ["nurse", "nurse", "nurse", "dancer", "dancer", "engineer", "engineer", "actors", "actresses"],
        "category": ["health", "health", "health", "arts", "arts", "science", "science", "", ""],
        "name": ["a", "a", "b", "a", "c", "d", "d", "x", "y"],
    })
    unit = frame["domain"] + "/" + frame["name"] + "/" + frame["group"]  # "a" is a nurse (2 texts) and a dancer
    outcomes = set()
    for seed in range(20):
        shuffled = calibration.shuffle_groups(frame, np.random.default_rng(seed))
        assert shuffled.groupby(unit)["group"].nunique().max() == 1  # a unit's texts move together
        units_per_group = shuffled.groupby(unit)[["domain", "group"]].first().value_counts().sort_index()
        assert units_per_group.equals(frame.groupby(unit)[["domain", "group"]].first().value_counts().sort_index())
        assert set(zip(shuffled["group"], shuffled["category"], strict=True)) == set(
            zip(frame["group"], frame["category"], strict=True))  # the category follows its group
        assert shuffled.drop(columns=["group", "category"]).equals(frame.drop(columns=["group", "category"]))
        outcomes.add(tuple(shuffled["group"]))
    assert len(outcomes) > 5


def test_select_labels_by_metric_or_label_and_errors(calibration, religion, tmp_path) -> None:
    labels = finding_labels(religion)
    chosen = calibration.select_labels(labels, LABELS)
    assert [label[1] for label in chosen] == ["positive", "negative", "joy", "anger", "fear"]
    with pytest.raises(UsageError, match="psycholinguistic:joy"):
        calibration.select_labels(labels, ["psycholinguistic:happiness"])
    with pytest.raises(MissingFileError, match="does not exist"):
        calibration.main(["--scores", str(tmp_path / "missing.parquet"), "--parts", "shuffled"])
    with pytest.raises(UsageError, match="--shuffles"):
        calibration.main(["--shuffles", "0"])


# --------------------------------------------------------------------------- calibration


@pytest.mark.slow
def test_shuffled_wikipedia_null_is_calibrated(calibration, religion) -> None:
    """40 shuffles of religious_ideology (80 pages, 8 texts each): 40 tests per family (7 groups vs rest and
    Christianity vs Islam, 5 labels). Measured: 1 of 40 shuffles with a finding (the text-level test, 5 of 40:
    religion's texts are only mildly clustered on these labels; the synthetic test below shows that one failing)."""
    labels = calibration.select_labels(finding_labels(religion), LABELS)
    data = calibration.slim(religion, labels)
    trials = calibration.run_trials(
        lambda index: calibration.shuffled_trial(index, scores=data, labels=labels, seed=0, alpha=ALPHA,
                                                 correction="holm", clusters=["name"]), 40, jobs=1)
    summary = calibration.shuffled_summary(trials, ALPHA).set_index("cluster")
    assert summary.loc["name", "family"] == 30  # atheism (1 page) and sikhism (4) cannot reach alpha: untested
    assert summary.loc["name", "with_finding"] <= at_most_alpha(40) == 6
    # The findings' test is conservative here (measured: 0.6% of the tests at p < alpha): validity under unlike
    # spreads costs level on exchangeable names; benchmarks/CALIBRATION.md gives its power beside the
    # permutation test's.
    assert summary.loc["name", "raw_rate"] <= ALPHA + 0.02


@pytest.mark.slow
def test_shuffled_wikipedia_null_is_calibrated_on_three_domains(calibration, bold_dir) -> None:
    """The script's own scores (bold_eval.run, --model wikipedia) of religion, politics and gender; 10 shuffles
    (CI time; benchmarks/CALIBRATION.md has 100). Measured with 40: 0 of 40 shuffles with a finding (13 of 40 with
    --cluster none), 5.2% of the tests at p < alpha. Without the correction nearly every shuffle of a 105-test
    family has a finding, so 10 catch that; text-level tests (13 of 40) would pass the 3-of-10 bound 58% of the
    time: the synthetic test below is the one that catches those."""
    scores = calibration.wikipedia_scores(["religious_ideology", "political_ideology", "gender"],
                                          ["sentiment", "psycholinguistic"], str(bold_dir))
    labels = calibration.select_labels(finding_labels(scores), LABELS)
    data = calibration.slim(scores, labels)
    trials = calibration.run_trials(
        lambda index: calibration.shuffled_trial(index, scores=data, labels=labels, seed=0, alpha=ALPHA,
                                                 correction="holm", clusters=["name"]), 10, jobs=1)
    summary = calibration.shuffled_summary(trials, ALPHA).iloc[0]
    assert summary["family"] == 95  # (8 religion + 12 politics + 1 gender contrasts) x 5 labels, less atheism and
    # sikhism (1 and 4 pages: too few names to test a rate)
    assert summary["with_finding"] <= at_most_alpha(10)


@pytest.mark.slow
def test_synthetic_null_is_calibrated_and_the_text_level_test_is_not(calibration, profession_sizes) -> None:
    """Beta-binomial labels (rate 0.3, rho 0.2: design effect 8.2 with profession's page sizes), 120 names in
    4 groups, 8 tests per family. Measured: 2 of 40 data sets with a false finding (name), 35 of 40 (none)."""
    scenario = calibration.Scenario(rate=0.3, rho=0.2)
    trials = calibration.run_trials(
        lambda index: calibration.synthetic_trial(index, scenario=scenario, sizes=profession_sizes, names=120,
                                                  groups=4, seed=0, alpha=ALPHA, correction="holm",
                                                  clusters=["name", "none"]), 40, jobs=1)
    name = calibration.fwer_row(trials[trials["cluster"] == "name"], ALPHA)
    none = calibration.fwer_row(trials[trials["cluster"] == "none"], ALPHA)
    assert name["with_finding"] <= at_most_alpha(40)
    assert none["with_finding"] > 4 * at_most_alpha(40)  # text-level tests: most data sets "find" something
    assert none["fwer_low"] > 0.5


@pytest.mark.slow
def test_a_large_planted_difference_is_found(calibration, profession_sizes) -> None:
    """+25 points on a 0.3 rate in one of 4 groups (rho 0.05), 50 names per group. Measured: found in 20 of
    20 data sets (power > 0.8); the second, null label of the same family: no false finding."""
    scenario = calibration.Scenario(rate=0.3, rho=0.05, effect=0.25)
    trials = calibration.run_trials(
        lambda index: calibration.synthetic_trial(index, scenario=scenario, sizes=profession_sizes, names=200,
                                                  groups=4, seed=0, alpha=ALPHA, correction="holm",
                                                  clusters=["name"]), 20, jobs=1)
    assert trials["detected"].mean() > 0.8
    assert (trials["findings"] > 0).sum() <= at_most_alpha(20)
    assert (trials["nulls"] == 4).all()  # only the null label's contrasts count as false findings


def test_script_writes_the_tables(calibration, religion, tmp_path) -> None:
    scores = tmp_path / "scores.parquet"
    religion.to_parquet(scores)
    out = tmp_path / "calibration.md"
    text = calibration.main(["--scores", str(scores), "--domains", "religious_ideology", "--labels", "sentiment",
                             "--parts", "shuffled", "synthetic", "--shuffles", "2", "--synthetic-sims", "2",
                             "--names", "40", "--groups", "4", "--rhos", "0.2", "--rates", "0.3", "--effects", "0.15",
                             "--jobs", "1",
                             "--out", str(out)])
    assert out.read_text() == text
    assert "## Shuffled nulls on the Wikipedia baseline" in text and "| name | 2 | 12 |" in text
    assert "| 0.3 | 0.2 | 8.2 / " in text  # the synthetic null with profession's expected design effect
    assert "| 0.3 | +15 points | 0.2 | none | 2 |" in text


# --------------------------------------------------------------------------- paired: a model against a reference


def test_synthetic_pair_has_the_main_effect_the_planted_interaction_and_k_samples(calibration,
                                                                                    profession_sizes) -> None:
    from scipy import integrate, special

    scenario = calibration.PairedScenario(rate=0.3, rho=0.2, samples=5, shift=0.5, effect=0.2)
    model, reference = calibration.synthetic_pair(profession_sizes, scenario, names=3000, groups=6,
                                                  rng=np.random.default_rng(2))
    assert len(model) == 5 * len(reference) and reference["prompt_id"].is_unique
    assert all(samples == [0, 1, 2, 3, 4] for samples in model.groupby("prompt_id")["sample"].apply(sorted))
    assert set(model["prompt_id"]) == set(reference["prompt_id"])
    assert model.groupby("name")["group"].nunique().max() == 1
    # a name's rate p ~ Beta(1.2, 2.8); the model marks a text with expit(logit p + 0.5) (0.414 at p = 0.3, 0.389
    # averaged over the names), min(that + 0.2, 1) in g01 (0.586: a name with p above 0.74 reaches 1)
    beta = stats.beta(1.2, 2.8)
    assert special.expit(special.logit(0.3) + 0.5) == pytest.approx(0.414, abs=0.001)
    shifted = integrate.quad(lambda p: special.expit(special.logit(p) + 0.5) * beta.pdf(p), 0, 1)[0]
    planted = integrate.quad(lambda p: min(special.expit(special.logit(p) + 0.5) + 0.2, 1) * beta.pdf(p), 0, 1,
                             limit=200)[0]
    assert shifted == pytest.approx(0.389, abs=0.001) and planted == pytest.approx(0.586, abs=0.001)
    in_g01 = {frame is model: frame.groupby(frame["group"] == "g01")[["planted", "null"]].mean()
              for frame in (model, reference)}
    assert in_g01[False].to_numpy() == pytest.approx(np.full((2, 2), 0.3), abs=0.03)  # the reference: no effect
    assert in_g01[True].loc[False].to_numpy() == pytest.approx([shifted, shifted], abs=0.03)
    assert in_g01[True].loc[True].to_numpy() == pytest.approx([planted, shifted], abs=0.03)


def test_page_noise_model_keeps_each_units_expected_rate(calibration) -> None:
    reference = pd.DataFrame({
        "prompt_id": [0, 1, 2, 3, 4],
        "domain": "profession",
        "group": ["nurse", "nurse", "nurse", "nurse", "dancer"],
        "name": ["a", "a", "a", "b", "a"],  # "a" is a nurse (3 texts) and a dancer (1 text): two units
        "label": ["positive", "negative", "neutral", "positive", "negative"],
        "other": [1.0, 2.0, 3.0, 4.0, 5.0],
    })
    same = calibration.page_noise_model(reference, ["label", "other"], flip=0.0, samples=2,
                                        rng=np.random.default_rng(0))
    assert same["prompt_id"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4] and same["sample"].tolist() == [0, 1] * 5
    assert same["label"].tolist() == np.repeat(reference["label"], 2).tolist()
    noisy = calibration.page_noise_model(reference, ["label", "other"], flip=1.0, samples=3000,
                                         rng=np.random.default_rng(0))
    pairs = set(zip(reference["label"], reference["other"], strict=True))
    assert set(zip(noisy["label"], noisy["other"], strict=True)) <= pairs  # a text's labels move together
    by_prompt = noisy.groupby("prompt_id")["other"]
    assert by_prompt.unique().map(sorted).tolist() == [[1, 2, 3]] * 3 + [[4], [5]]  # only its own unit's texts
    # each of a nurse's 3 texts is drawn with probability 1/3: the unit keeps its rate of "positive" (1 in 3)
    assert (noisy[noisy["prompt_id"] < 3]["label"] == "positive").mean() == pytest.approx(1 / 3, abs=0.01)
    with pytest.raises(UsageError, match="--flip"):
        calibration.page_noise_model(reference, ["label"], flip=1.5, samples=1, rng=np.random.default_rng(0))


@pytest.mark.slow
def test_paired_synthetic_null_is_calibrated_and_the_prompt_level_test_is_not(calibration, profession_sizes) -> None:
    """A model 0.5 logits above the reference for every name, with its own name effect (sd 1 logit, so the
    per-prompt d is clustered: design effect about 5), k = 5, rate 0.3, rho 0.2; 120 names in 4 groups, 8
    interactions per family. Measured: 4 of 40 data sets with a false finding (name); --cluster none (prompts
    permuted as independent units, 7 times the cost) on the first 12: 8 of 12."""
    scenario = calibration.PairedScenario(rate=0.3, rho=0.2, samples=5, spread=1.0)

    def trials(clusters: list[str], count: int) -> pd.DataFrame:
        return calibration.run_trials(
            lambda index: calibration.paired_synthetic_trial(index, scenario=scenario, sizes=profession_sizes,
                                                             names=120, groups=4, seed=0, alpha=ALPHA,
                                                             correction="holm", clusters=clusters), count, jobs=1)

    name, none = calibration.fwer_row(trials(["name"], 40), ALPHA), calibration.fwer_row(trials(["none"], 12), ALPHA)
    assert name["family"] == 8
    assert name["with_finding"] <= at_most_alpha(40)
    assert none["with_finding"] > 2 * at_most_alpha(12)


@pytest.mark.slow
def test_paired_wikipedia_null_is_calibrated(calibration, religion) -> None:
    """religious_ideology's Wikipedia scores against a page-noise model of them (5 texts per prompt, a fifth
    with the labels of another text of the page), groups shuffled in both frames; 30 models, 40 tests each.
    Measured: 2 of 30 models with a false finding, 5.3% of the tests at p < alpha."""
    labels = calibration.select_labels(finding_labels(religion), LABELS)
    reference = calibration.integer_ids(calibration.slim(religion, labels))
    trials = calibration.run_trials(
        lambda index: calibration.paired_wikipedia_trial(index, reference=reference, labels=labels,
                                                         groups="shuffled", flip=0.2, samples=5, seed=0, alpha=ALPHA,
                                                         correction="holm", clusters=["name"]), 30, jobs=1)
    summary = calibration.fwer_row(trials, ALPHA)
    # 8 contrasts x 5 labels, less atheism's and sikhism's (1 and 4 pages: too few names to test a rate)
    assert summary["family"] == pytest.approx(30, abs=0.1)
    assert summary["with_finding"] <= at_most_alpha(30)


@pytest.mark.slow
def test_a_large_planted_interaction_is_found(calibration, profession_sizes) -> None:
    """g01's model rate +30 points above its reference beyond the main effect (rate 0.3, rho 0.05, k = 5), 50
    names per group. Measured: found in 20 of 20 data sets (mean estimate +29.7 points); no false finding on
    the null label."""
    scenario = calibration.PairedScenario(rate=0.3, rho=0.05, samples=5, effect=0.3)
    trials = calibration.run_trials(
        lambda index: calibration.paired_synthetic_trial(index, scenario=scenario, sizes=profession_sizes, names=200,
                                                         groups=4, seed=0, alpha=ALPHA, correction="holm",
                                                         clusters=["name"]), 20, jobs=1)
    assert trials["interaction"].mean() == pytest.approx(0.3, abs=0.02)
    assert trials["detected"].mean() > 0.8
    assert (trials["findings"] > 0).sum() <= at_most_alpha(20)
    assert (trials["nulls"] == 4).all()


@pytest.mark.slow
def test_script_writes_the_paired_tables(calibration, religion, tmp_path) -> None:
    scores = tmp_path / "scores.parquet"
    religion.to_parquet(scores)
    text = calibration.main(["--scores", str(scores), "--domains", "religious_ideology", "--labels", "sentiment",
                             "--parts", "paired-wikipedia", "paired-synthetic", "--paired-trials", "2",
                             "--paired-groups", "real", "shuffled", "--paired-clusters", "name", "none",
                             "--paired-sims", "2", "--paired-none-sims", "1", "--paired-power-sims", "2",
                             "--names", "40", "--groups", "4", "--rhos", "0.2", "--rates", "0.3", "--samples", "2",
                             "--paired-effects", "0.2", "--jobs", "1"])
    assert "## Paired null on the Wikipedia baseline" in text and "## Shuffled nulls" not in text
    # 8 contrasts x 2 labels; by name less atheism's and sikhism's (1 and 4 pages: too few names to test a rate)
    assert "| real | name | 2 | 12 |" in text and "| shuffled | none | 2 | 16 |" in text
    assert "| 0.3 | 0.2 | 2 | 0 | +" in text and "| 0.3 | 0.2 | 2 | 1 | +" in text  # the null, then with a spread
    assert " | name | 2 | 8 | " in text and " | none | 1 | 8 | " in text  # none on the first data set only
    assert "| 0.3 | +20 points | 0.2 | 2 | name | 2 |" in text
    with pytest.raises(UsageError, match="--flip"):
        calibration.main(["--flip", "1.5"])
    with pytest.raises(UsageError, match="--samples"):
        calibration.main(["--samples", "0"])


# --------------------------------------------------------------------------- worst cases over k samples


def test_worst_base_and_the_synthetic_samples_by_hand(calibration, profession_sizes) -> None:
    from bold_eval.analysis.worst_case import prompt_worst_cases

    # no prompt spread: P(no toxic of k) = Phi(-b / sd)^k, so b = -sd * Phi^-1((1 - rate)^(1 / k))
    assert calibration.worst_base(0.3, 5, 0.0, 1.0) == pytest.approx(-stats.norm.ppf(0.7 ** 0.2), abs=1e-8)
    assert calibration.worst_base(0.3, 1, 0.0, 2.0) == pytest.approx(-2 * stats.norm.ppf(0.7), abs=1e-8)
    with pytest.raises(UsageError, match="--worst-rates"):
        calibration.worst_base(1.2, 5, 1.0, 1.0)
    scenario = calibration.WorstScenario(rate=0.3, name_sd=1.5, samples=5, effect=1.0)
    # two prompts per name: rates measured to about +-0.01, not +-0.035 as with profession's large pages
    texts = calibration.worst_texts(np.array([2]), scenario, names=8000, groups=4, rng=np.random.default_rng(3))
    assert (texts.groupby("prompt_id").size() == 5).all() and texts.groupby("name")["group"].nunique().max() == 1
    assert (texts["toxicity_is_toxic"] == (texts["toxicity_score"] >= 0.5)).all()
    assert ((texts["sentiment_label"] == "negative") == (texts["sentiment_compound"] <= -0.5)).all()
    worst = prompt_worst_cases(texts)
    rest, g01 = worst[worst["group"] != "g01"], worst[worst["group"] == "g01"]
    # the rest is null: P(>= 1 toxic of 5) is the scenario's rate, and sentiment's P(>= 1 negative) too
    assert rest["worst_toxicity_probability"].astype(float).mean() == pytest.approx(0.3, abs=0.02)
    assert worst["worst_negative_probability"].astype(float).mean() == pytest.approx(0.3, abs=0.02)
    assert (worst["worst_expected_max_toxicity"] >= 0.5).eq(worst["worst_toxicity_probability"].astype(bool)).all()
    # g01's base is 1 logit higher: its rate is the same integral at base + 1 (0.52)
    nodes, weights = np.polynomial.hermite_e.hermegauss(96)
    rate = 1 - (weights / weights.sum()) @ stats.norm.cdf(-(scenario.base + 1 + np.hypot(1.5, 0.5) * nodes)) ** 5
    assert rate == pytest.approx(0.523, abs=0.001)
    assert g01["worst_toxicity_probability"].astype(float).mean() == pytest.approx(rate, abs=0.03)
    # a model against a reference of one sample per prompt: the same prompts, k and 1 samples, the model more toxic
    paired = calibration.WorstScenario(rate=0.3, name_sd=1.5, samples=5, reference_samples=1)
    model, reference = calibration.worst_pair(profession_sizes, paired, names=300, groups=4,
                                              rng=np.random.default_rng(4))
    assert len(model) == 5 * len(reference) and set(model["prompt_id"]) == set(reference["prompt_id"])
    assert model["toxicity_is_toxic"].mean() > reference["toxicity_is_toxic"].mean()


@pytest.mark.slow
def test_worst_case_null_is_calibrated_and_the_prompt_level_test_is_not(calibration, profession_sizes) -> None:
    """k = 5 samples per prompt, name sd 1.5 (logit; design effect of the per-prompt maximum about 25 with
    profession's page sizes), P(>= 1 toxic of 5) = 0.3; 120 names in 4 groups, 16 worst-case tests per family
    (toxicity's and sentiment's two each). Measured: 2 of 40 data sets with a false finding (name), 40 of 40
    (none: the prompts as independent)."""
    scenario = calibration.WorstScenario(rate=0.3, name_sd=1.5, samples=5)
    trials = calibration.run_trials(
        lambda index: calibration.worst_synthetic_trial(index, scenario=scenario, sizes=profession_sizes, names=120,
                                                        groups=4, seed=0, alpha=ALPHA, correction="holm",
                                                        clusters=["name", "none"]), 40, jobs=1)
    name = calibration.fwer_row(trials[trials["cluster"] == "name"], ALPHA)
    none = calibration.fwer_row(trials[trials["cluster"] == "none"], ALPHA)
    assert name["family"] == 16
    assert name["with_finding"] <= at_most_alpha(40)
    assert none["with_finding"] > 4 * at_most_alpha(40)
    assert none["fwer_low"] > 0.5


@pytest.mark.slow
def test_a_planted_worst_case_is_found(calibration, profession_sizes) -> None:
    """g01's toxicity base +1 logit (name sd 0.5, k = 5), 50 names per group: found in 20 of 20 data sets on
    both the expected maximum and the toxicity probability; sentiment (null): no false finding."""
    scenario = calibration.WorstScenario(rate=0.3, name_sd=0.5, samples=5, effect=1.0)
    trials = calibration.run_trials(
        lambda index: calibration.worst_synthetic_trial(index, scenario=scenario, sizes=profession_sizes, names=200,
                                                        groups=4, seed=0, alpha=ALPHA, correction="holm",
                                                        clusters=["name"]), 20, jobs=1)
    assert trials["detected_max"].mean() > 0.8 and trials["detected_probability"].mean() > 0.8
    assert (trials["findings"] > 0).sum() <= at_most_alpha(20)
    assert (trials["nulls"] == 8).all()  # only sentiment's contrasts count as false findings


def test_script_writes_the_worst_case_tables(calibration, religion, tmp_path) -> None:
    scores = tmp_path / "scores.parquet"
    religion.to_parquet(scores)
    text = calibration.main(["--scores", str(scores), "--domains", "religious_ideology", "--parts", "worst-synthetic",
                             "worst-paired-synthetic", "worst-wikipedia", "--worst-rates", "0.3",
                             "--worst-samples", "3", "--worst-name-sds", "1.5", "--worst-effects", "1.0",
                             "--worst-sims", "1", "--worst-power-sims", "1", "--worst-paired-sims", "1",
                             "--worst-paired-none-sims", "0", "--worst-paired-power-sims", "1",
                             "--worst-reference-samples", "1", "--worst-spread", "0", "--worst-wikipedia-trials", "1",
                             "--worst-wikipedia-samples", "3", "--names", "30", "--groups", "3", "--jobs", "1"])
    assert "## Worst cases over k samples: synthetic names" in text and "## Shuffled nulls" not in text
    assert "| 0.3 | 3 | 1.5 | " in text and " | name | 1 | 12 | " in text  # 3 contrasts x 4 worst cases
    assert "| 3 / 1 | 1.5 | 0 | " in text  # the paired null against one reference sample
    assert "| 3 | none | 1 | 16 | 1 |" in text  # Wikipedia: 8 contrasts x 2 sentiment worst cases, a false finding
    with pytest.raises(UsageError, match="k >= 2"):
        calibration.main(["--parts", "worst-synthetic", "--worst-samples", "1"])
