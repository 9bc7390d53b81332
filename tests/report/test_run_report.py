"""A full report and a comparison written from synthetic run folders (scores.parquet + run.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from bold_eval.cli import main
from bold_eval.core.environment import FIGURE_WORKER_ENV
from bold_eval.report.compare import compare_runs
from bold_eval.report.run_report import write_report
from bold_eval.testing.runs import write_run_folder

# Real BOLD group keys and Table 3 super-groups, a few per domain; hinduism is kept small on purpose.
GROUPS = {
    "gender": [("American_actors", ""), ("American_actresses", "")],
    "race": [("African_Americans", ""), ("European_Americans", ""), ("Asian_Americans", ""),
             ("Hispanic_and_Latino_Americans", "")],
    "religious_ideology": [("christianity", ""), ("islam", ""), ("hinduism", "")],
    "profession": [("dance_occupations", "arts_and_entertainment"),
                   ("engineering_branches", "science_and_technology"),
                   ("nursing_specialties", "healthcare_and_medicine"),
                   ("railway_industry_occupations", "industrial_and_manufacturing"),
                   ("sewing_occupations", "")],
    "political_ideology": [("left-wing", ""), ("right-wing", ""), ("fascism", "")],
}
ALL_METRICS = ["sentiment", "toxicity", "regard", "psycholinguistic", "gender_polarity"]


def synthetic_scores(prompts_per_group: int = 12, samples: int = 2, seed: int = 0) -> pd.DataFrame:
    """scores.parquet as the harness writes it: ids, texts and every metric's per-text columns."""
    rng = np.random.default_rng(seed)
    rows = []
    for domain, groups in GROUPS.items():
        for group, category in groups:
            for p in range(3 if group == "hinduism" else prompts_per_group):
                for sample in range(samples):
                    rows.append({"prompt_id": f"{domain}/{group}/name_{p}/0", "domain": domain, "group": group,
                                 "category": category, "name": f"name_{p}", "sample": sample,
                                 "prompt": f"Person {p} was", "continuation": " a singer.",
                                 "text": f"Person {p} was a singer."})
    scores = pd.DataFrame(rows)
    n = len(scores)
    compound = rng.uniform(-1, 1, n)
    scores["sentiment_compound"] = compound
    scores["sentiment_label"] = np.where(compound >= 0.5, "positive", np.where(compound <= -0.5, "negative", "neutral"))
    toxic = rng.beta(0.5, 5, n)
    scores["toxicity_score"] = toxic
    scores["toxicity_toxic"] = toxic
    scores["toxicity_is_toxic"] = toxic >= 0.5
    regard = pd.Series(rng.choice(["positive", "negative", "neutral", "other"], n, p=[0.3, 0.2, 0.4, 0.1]),
                       dtype=object)
    scores["regard_label"] = regard.where(scores["domain"].isin(["gender", "race"]), None)
    for dimension in ("valence", "arousal", "dominance"):
        value = rng.uniform(-1, 1, n)
        scores[f"psycholinguistic_{dimension}"] = value
        scores[f"psycholinguistic_{dimension}_label"] = np.where(value > 0.4, "positive",
                                                                 np.where(value < -0.4, "negative", "neutral"))
    for emotion in ("joy", "anger", "sadness", "fear", "disgust"):
        value = rng.uniform(0, 1, n)
        scores[f"psycholinguistic_{emotion}"] = value
        scores[f"psycholinguistic_is_{emotion}"] = value > 0.7
    male, female = rng.poisson(0.4, n), rng.poisson(0.3, n)
    scores["gender_polarity_male_tokens"] = male
    scores["gender_polarity_female_tokens"] = female
    scores["gender_polarity_unigram_label"] = np.where(male > female, "male", np.where(female > male, "female",
                                                                                       "neutral"))
    for aggregation in ("max", "wavg"):
        value = rng.uniform(-0.6, 0.6, n)
        scores[f"gender_polarity_{aggregation}"] = value
        scores[f"gender_polarity_{aggregation}_label"] = np.where(value <= -0.25, "male",
                                                                  np.where(value >= 0.25, "female", "neutral"))
    return scores


def write_run(folder: Path, scores: pd.DataFrame, **run_info) -> Path:
    """A GPT-2 run folder in the current schema (`bold_eval.testing.runs`), scored on every metric."""
    record = {"anonymize": True, "score_on": "full", "metrics": ALL_METRICS, "versions": {"bold_eval": "0.1.0"},
              "timings": {"generate_s": 1.5}, **run_info}
    return write_run_folder(folder, scores, **record)


def reject_nan(value: str) -> None:
    raise AssertionError(f"summary.json contains {value}")


def assert_no_nan(value) -> None:
    if isinstance(value, dict):
        for item in value.values():
            assert_no_nan(item)
    elif isinstance(value, list):
        for item in value:
            assert_no_nan(item)
    elif isinstance(value, float):
        assert math.isfinite(value)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report whose figures are drawn in the figure worker a full-BOLD report uses (`report.painter`)."""
    run_dir = write_run(tmp_path_factory.mktemp("run") / "gpt2", synthetic_scores())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(FIGURE_WORKER_ENV, "1")
        write_report(run_dir)
    return run_dir


@pytest.mark.slow
def test_report_has_every_section_and_the_run_settings(full_run: Path) -> None:
    report = (full_run / "report.md").read_text()
    for heading in ("# BOLD evaluation: gpt2", "## What was run", "### Metrics", "## Sentiment", "## Toxicity",
                    "## Regard", "## Gender polarity", "## Psycholinguistic norms", "### male minus female",
                    "### Christianity minus Islam", "## Caveats", "## Method"):
        assert heading in report, heading
    assert "**anonymize**: True" in report and "**score_on**: full" in report and "**seed**: 0" in report
    assert "2-2 samples per prompt" in report and "several samples per prompt" in report.lower()
    assert "Wikipedia is not a fair baseline" in report
    assert "hinduism" in report.split("## Caveats")[1]  # flagged as too small in this run
    assert "Skipped" not in report
    for figure in ("sentiment_gender.png", "toxic_ratio.png", "gender_polarity_male_minus_female.png", "regard.png"):
        assert f"figures/{figure}" in report


@pytest.mark.slow
def test_report_figures_are_valid_pngs(full_run: Path) -> None:
    figures = sorted((full_run / "figures").glob("*.png"))
    names = {figure.name for figure in figures}
    expected = {f"sentiment_{domain}.png" for domain in GROUPS} | {
        "toxic_ratio.png", "gender_polarity_male_minus_female.png", "regard.png"}
    assert expected <= names
    for figure in figures:
        assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(figure) as image:
            image.verify()
        with Image.open(figure) as image:
            assert image.size[0] > 400 and image.size[1] > 150


@pytest.mark.slow
def test_summary_json_parses_without_nan_and_matches_the_scores(full_run: Path) -> None:
    summary = json.loads((full_run / "summary.json").read_text(), parse_constant=reject_nan)
    assert_no_nan(summary)
    assert summary["counts"]["texts"] == len(pd.read_parquet(full_run / "scores.parquet"))
    assert summary["counts"]["domains"]["religious_ideology"]["prompts"] == 12 + 12 + 3
    assert summary["run"]["model"] == "gpt2"
    sentiment = pd.DataFrame(summary["sentiment"]["tables"]["sentiment"])
    scores = pd.read_parquet(full_run / "scores.parquet")
    actors = scores[scores["group"] == "American_actors"]
    row = sentiment[(sentiment["group"] == "American_actors") & (sentiment["label"] == "negative")].iloc[0]
    assert row["proportion"] == pytest.approx((actors["sentiment_label"] == "negative").mean())
    toxic = pd.DataFrame(summary["toxicity"]["tables"]["toxic_ratio"])
    assert set(toxic["domain"]) == set(GROUPS)
    regard = pd.DataFrame(summary["regard"]["tables"]["regard"])
    assert set(regard["domain"]) == {"gender", "race"}
    assert {"gender_polarity_category", "gender_polarity_group"} <= set(summary["gender_polarity"]["tables"])
    assert len(summary["psycholinguistic"]["tables"]["psycholinguistic_gender_difference"]) == 11
    tests = summary["sentiment"]["tests"]
    religion = next(t for t in tests if t["domain"] == "religious_ideology" and t["test"] == "chi-square")
    assert "hinduism" in religion["small_groups"] and religion["reliable"] is False
    for name in ("sentiment", "toxic_ratio", "regard", "gender_polarity_category", "psycholinguistic"):
        assert (full_run / "tables" / f"{name}.csv").is_file() and (full_run / "tables" / f"{name}.md").is_file()


@pytest.mark.slow
def test_table3_ratios_carry_page_intervals_and_section_6_2_follows(full_run: Path) -> None:
    """Table 3 cells are "ratio [low, high]"; after the table, Section 6.2's average and the pooled ratio."""
    section = (full_run / "report.md").read_text().split("## Gender polarity")[1].split("## Psycholinguistic")[0]
    table = pd.read_csv(full_run / "tables" / "gender_polarity_category.csv")
    arts = table[(table["method"] == "max") & (table["category"] == "arts_and_entertainment")].iloc[0]
    low, high = (f"{bound:.2f}" if bound < 1 else f"{bound:.1f}" for bound in
                 (arts["male_to_female_ci_low"], arts["male_to_female_ci_high"]))  # two decimals below 1
    assert f"| {arts['male_to_female']:.2f} [{low}, {high}] " in section
    assert "interval with the super-group's Wikipedia pages as units" in section
    summary = pd.read_csv(full_run / "tables" / "gender_polarity_ratio_summary.csv").set_index("method")
    assert list(summary.index) == ["max", "wavg", "unigram"]
    unigram = summary.loc["unigram"]
    means = table[table["method"] == "unigram"]
    assert unigram["average_male_to_female"] == pytest.approx((means["male"] / means["female"]).mean())
    assert f"- Unigram matching: average of ratios {unigram['average_male_to_female']:.2f} [" in section
    assert f"pooled ratio {unigram['pooled_male_to_female']:.2f} [" in section
    assert "the paper's WIKI 2.29 is the mean of its four Gender-Max ratios" in section
    assert "the average weights every super-group equally" in section


def test_ratio_cells_show_infinite_and_undefined_ratios() -> None:
    from bold_eval.report.paper_tables import ratio_cell

    assert ratio_cell(9.0, 4.2, 54.0) == "9.00 [4.2, 54.0]"
    assert ratio_cell(0.157895, 0.02, 1.0) == "0.16 [0.02, 1.0]"
    assert ratio_cell(math.inf, 1.0413, math.inf) == "inf [1.0, inf]"
    assert ratio_cell(math.nan, math.nan, math.nan) == ""
    assert ratio_cell(2.0, math.nan, math.nan) == "2.00"


@pytest.mark.slow
def test_skipped_and_missing_metrics_are_named_in_the_report(tmp_path: Path) -> None:
    scores = synthetic_scores(prompts_per_group=6, samples=1)
    scores = scores.drop(columns=[c for c in scores if c.startswith(("toxicity_", "regard_"))])
    run_dir = write_run(tmp_path / "run", scores,
                        skipped_metrics={"toxicity": "toxicity model not found; set BOLD_TOXICITY_MODEL"})
    write_report(run_dir)
    report = (run_dir / "report.md").read_text()
    toxicity_section = report.split("## Toxicity")[1].split("## Regard")[0]
    assert "**Skipped**" in toxicity_section and "BOLD_TOXICITY_MODEL" in toxicity_section
    regard_section = report.split("## Regard")[1].split("## Gender polarity")[0]
    assert "**Skipped**" in regard_section and "regard_label" in regard_section
    assert not (run_dir / "figures" / "toxic_ratio.png").exists()
    summary = json.loads((run_dir / "summary.json").read_text(), parse_constant=reject_nan)
    assert summary["metrics"]["toxicity"]["status"] == "skipped"
    assert summary["metrics"]["regard"]["status"] == "missing"
    assert "skipped" in summary["toxicity"]


@pytest.mark.slow
def test_unigram_only_gender_polarity_is_reported_as_partial(tmp_path: Path) -> None:
    """Offline (no word2vec) the harness scores unigram matching alone; Table 3 and Fig. 2 show it."""
    scores = synthetic_scores(prompts_per_group=6, samples=1)
    scores = scores.drop(columns=[c for c in scores if c.startswith(("gender_polarity_max", "gender_polarity_wavg"))])
    note = "Gender-Max and Gender-Wavg skipped: word2vec embedding not found; set BOLD_WORD2VEC"
    run_dir = write_run(tmp_path / "run", scores, partial_metrics={"gender_polarity": note})
    write_report(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text(), parse_constant=reject_nan)
    assert summary["metrics"]["gender_polarity"] == {"status": "scored", "reason": note}
    categories = pd.read_csv(run_dir / "tables" / "gender_polarity_category.csv")
    assert set(categories["method"]) == {"unigram"}
    nurses = scores[scores["category"] == "healthcare_and_medicine"]
    row = categories[categories["category"] == "healthcare_and_medicine"].iloc[0]
    assert row["female"] == (nurses["gender_polarity_unigram_label"] == "female").sum()
    report = (run_dir / "report.md").read_text()
    section = report.split("## Gender polarity")[1]
    assert "Unigram matching male #" in section and "Gender-Max male #" not in section
    assert "BOLD_WORD2VEC" in report
    assert (run_dir / "figures" / "gender_polarity_male_minus_female.png").is_file()
    out = compare_runs([run_dir, write_run(tmp_path / "full", synthetic_scores(prompts_per_group=6, samples=1))],
                       tmp_path / "compare")
    fig2 = pd.read_csv(tmp_path / "compare" / "tables" / "fig2_male_minus_female.csv")
    assert set(fig2["method_name"]) == {"Unigram matching", "Gender-Max"}
    assert "paper Table 3" in out.read_text()


@pytest.mark.slow
def test_compare_puts_one_row_per_model(tmp_path: Path) -> None:
    wiki = write_run(tmp_path / "wiki", synthetic_scores(prompts_per_group=8, samples=1, seed=1),
                     model="wikipedia", generator="wikipedia", generator_settings={})
    gpt2 = write_run(tmp_path / "gpt2", synthetic_scores(prompts_per_group=8, samples=1, seed=2))
    out = compare_runs([wiki, gpt2], tmp_path / "compare")
    text = out.read_text()
    assert "share all their **131** prompts" in text
    opening = text.split("## How to read this\n\n", 1)[1].split("\n", 1)[0]  # plain sentences; formulas at the end
    assert opening.startswith("One unit is one name") and opening.count(". ") <= 4 and "sqrt" not in opening
    assert text.split("\n## ")[-1].startswith("Method") and "sqrt(v p (1 - p)" in text.split("\n## Method")[1]
    for heading in ("paper Table 3", "paper Table 5", "paper Table 4", "paper Table 6", "Sentiment proportions",
                    "toxic_ratio per group", "paper Table 9", "paper Table 10", "Which model is more biased",
                    "Overall difference per domain", "Gender-Max: proportion male minus female"):
        assert heading in text, heading
    tables = tmp_path / "compare" / "tables"
    table5 = pd.read_csv(tables / "table5_regard.csv")
    assert list(table5["model"]) == ["WIKI", "gpt2"]
    assert {"positive male", "negative female", "positive african american",
            "negative european american"} <= set(table5)
    table3 = pd.read_csv(tables / "table3_gender_polarity.csv")
    assert len(table3) == 4 * 2 and list(table3["model"][:2]) == ["WIKI", "gpt2"]
    assert table3["category"].iloc[0] == "arts_and_entertainment"  # the paper's row order
    scores = pd.read_parquet(gpt2 / "scores.parquet")
    nurses = scores[scores["group"] == "nursing_specialties"]
    expected = (nurses["gender_polarity_max_label"] == "male").sum()
    row = table3[(table3["model"] == "gpt2") & (table3["category"] == "healthcare_and_medicine")].iloc[0]
    assert row["Gender-Max male #"] == expected
    sentiment = pd.read_csv(tables / "sentiment_per_group.csv")
    assert len(sentiment) == 2 * sum(len(groups) for groups in GROUPS.values())
    payload = json.loads((tmp_path / "compare" / "compare.json").read_text(), parse_constant=reject_nan)
    assert payload["runs"] == ["WIKI", "gpt2"] and payload["baseline"] == "WIKI"
    interactions = pd.read_csv(tables / "interactions.csv")
    assert set(interactions["metric"]) == {"sentiment", "toxicity", "regard", "psycholinguistic", "gender_polarity"}
    overall = pd.read_csv(tables / "overall_differences.csv")
    assert payload["interactions"]["family"] == payload["overall"]["family"] == (
        interactions["testable"].sum() + overall["testable"].sum()) > 0  # one family over both tables


@pytest.mark.slow
def test_cli_report_and_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def sentiment_only(seed: int) -> pd.DataFrame:  # one figure per domain only, to keep the test fast
        scores = synthetic_scores(prompts_per_group=5, samples=1, seed=seed)
        return scores.drop(columns=[c for c in scores if c.startswith(("toxicity_", "regard_", "psycho", "gender_"))])

    first = write_run(tmp_path / "a", sentiment_only(3), metrics=["sentiment"])
    second = write_run(tmp_path / "b", sentiment_only(4), metrics=["sentiment"])
    assert main(["report", str(first)]) == 0
    assert (first / "report.md").is_file() and (first / "summary.json").is_file()
    assert main(["compare", str(first), str(second), "--out", str(tmp_path / "cmp")]) == 0
    assert "compare.md" in capsys.readouterr().out
    text = (tmp_path / "cmp" / "compare.md").read_text()
    assert "gpt2 (b)" in text  # two runs of the same model get told apart by folder
    assert main(["report", str(tmp_path / "missing")]) == 1
    assert "scores.parquet not found" in capsys.readouterr().err


@pytest.mark.slow
def test_compare_refuses_different_prompt_sets_unless_allowed(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Runs pair by prompt, each prompt's samples summarized first: one sample per prompt against two is the
    same prompt set (131 prompts) and compares; dropping the hinduism prompts (3) from one run does not."""
    scores = synthetic_scores(prompts_per_group=8, samples=2, seed=2)
    one = write_run(tmp_path / "one", scores[scores["sample"] == 0], model="wikipedia")
    two = write_run(tmp_path / "two", scores)
    text = compare_runs([one, two], tmp_path / "samples").read_text()
    assert "share all their **131** prompts" in text and "**gpt2**: 262 texts compared (of 262), 2 per prompt" in text
    three = write_run(tmp_path / "three", scores[(scores["sample"] == 0) & (scores["group"] != "hinduism")])
    with pytest.raises(ValueError, match=r"different prompt sets \(WIKI: 131, gpt2: 128 prompts; 128 shared"):
        compare_runs([one, three], tmp_path / "refused")
    assert main(["compare", str(one), str(three), "--out", str(tmp_path / "cli")]) == 2
    assert "--allow-different-prompts" in capsys.readouterr().err
    out = compare_runs([one, three], tmp_path / "allowed", allow_different_prompts=True)
    assert "WARNING: the runs have different prompt sets" in capsys.readouterr().err
    text = out.read_text()
    assert "**Compared on 128 shared prompts only.**" in text.split("Runs:")[0]
    payload = json.loads((tmp_path / "allowed" / "compare.json").read_text())
    assert payload["shared_prompts"] == 128 and payload["prompts_per_run"] == {"WIKI": 131, "gpt2": 128}
    # restricted to the shared prompts, sample 0 of the same texts: no prompt differs on any label
    overall = pd.DataFrame(payload["overall"]["tests"])
    assert (overall["discordant_names"] == 0).all() and payload["overall"]["family"] == 0
    assert "**WIKI** (baseline): 128 texts compared (of 131)" in text


@pytest.mark.slow
def test_report_labels_follow_alpha_and_bad_alpha_is_a_usage_error(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = write_run(tmp_path / "run", synthetic_scores(prompts_per_group=30, samples=1))
    text = write_report(run_dir, alpha=0.1).read_text()
    assert "90% intervals" in text and "An interval [low, high] is a 90% confidence interval" in text
    # the only 95% are largest gaps picked among 1 pair x 2 labels: Bonferroni level 1 - 0.1 / 2; psycholinguistic
    # (11 labels) in gender is at 1 - 0.1 / 11
    assert text.count("95%") == text.count("(95%, 2 choices)") > 0 and "(99.09%, 11 choices)" in text
    assert "a % [90%]" in text and "90% interval" in text  # Tables 4 and 6 columns
    assert "Holm step-down" in text and "`--correction holm`" in text
    for bad in ("1.5", "0", "1", "-0.2"):
        with pytest.raises(SystemExit) as exit_info:
            main(["report", str(run_dir), "--alpha", bad])
        assert exit_info.value.code == 2
        assert "--alpha must lie strictly between 0 and 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", str(run_dir), "--alpha", "1.5"])


@pytest.mark.slow
def test_small_run_says_so_before_any_number(tmp_path: Path) -> None:
    """Two texts per group: no comparison has the names to test a rate, no domain could find a realistic
    difference, and the report says so before any number; no group has the ten names a largest gap needs."""
    run_dir = write_run(tmp_path / "tiny", synthetic_scores(prompts_per_group=2, samples=1), limit=20,
                        schema_version=2, generation_settings={"limit_sample_seed": 0})
    text = write_report(run_dir).read_text()
    top = text.split("## Group differences in this run's texts")[0].split("\n", 1)[1]  # after the title
    first_number = min(top.find(digit) for digit in "0123456789" if digit in top)
    assert top.index("This run is too small to say whether the model treats groups differently") < first_number
    assert top.index("**Partial run:**") < top.index("## How to read this")
    assert "`--limit 20`" in top and "(`--sample-seed 0`)" in top
    summary = json.loads((run_dir / "summary.json").read_text())
    family = summary["findings"]["family"]
    untested = summary["findings"]["untestable"]
    assert family == 0 and f"_No comparison could be tested: {untested} had too few names to test a rate" in text
    assert "0 of 2 groups have 10 names or more; no gap is reported" in text


def test_figures_take_intervals_that_end_a_rounding_error_past_their_value(tmp_path):
    """A share of 0 whose interval starts at 1e-17 (rounding in the interval formula) must not
    make matplotlib refuse the error bars ("'xerr' must not contain negative values")."""
    from bold_eval.report.figures import plot_ratio, plot_stacked_proportions

    rows = []
    for group, counts in (("a", (0, 3, 7)), ("b", (5, 5, 0))):
        for label, count in zip(("negative", "neutral", "positive"), counts, strict=True):
            share = count / 10
            rows.append({"group": group, "label": label, "count": count, "total": 10, "proportion": share,
                         "ci_low": share + 1e-17 if count == 0 else share - 0.1, "ci_high": min(1.0, share + 0.2)})
    colors = {"negative": "#d62728", "neutral": "#cccccc", "positive": "#2ca02c"}
    path = plot_stacked_proportions(pd.DataFrame(rows), colors, "rounding", tmp_path / "bars.png")
    assert Image.open(path).size[0] > 0
    toxic = pd.DataFrame({"domain": ["race", "race"], "group": ["a", "b"], "total": [40, 40],
                          "toxic_ratio": [0.0, 0.1], "ci_low": [1e-17, 0.05], "ci_high": [0.08, 0.2]})
    assert Image.open(plot_ratio(toxic, tmp_path / "toxic.png", label="toxic")).size[0] > 0


def test_counted_nouns_agree_with_their_number() -> None:
    from bold_eval.report.markdown import quantity
    from bold_eval.report.protocol import trace_lines
    from bold_eval.runfolder.records import RunRecord

    assert quantity(1, "model") == "1 model" and quantity(24, "shared prompt") == "24 shared prompts"
    assert quantity(2000, "text") == "2,000 texts" and quantity(0, "test") == "0 tests"
    assert quantity(3, "model-vs-Wikipedia interaction") == "3 model-vs-Wikipedia interactions"
    record = RunRecord.from_dict({"thinking": {"texts": 1, "ended_in_trace": 1, "prompts_without_text": 1}})
    first = trace_lines(record)[0]
    assert "1 of 1 text ended" in first and "1 prompt has no scored text" in first
