"""`bold-eval compare`: interactions and overall differences paired by prompt, by hand, under the null, and
with two real runs of one tiny model that differ only in --seed (an A/A test)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bold_eval.analysis.compare import NO_DISCORDANT, SIGN_FLIP, PromptSetError, paired_difference
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
    Per prompt d = A - B = 1, -0.5, -1, -0.5 (actors' mean +0.25, actresses' -0.75). The permutation test
    moves names between the sides: of the 6 ways to put 2 of the 4 names on the actors' side, 4 give
    |difference| = 1 (the two -0.5 names are interchangeable), so p = 2/3 (here from 999 random draws).
    Negative sentiment mirrors it (-1.0); Holm over the two gives 1 each.
    Overall difference (positive): mean d = -0.25; sign flips of the name sums (1, -0.5, -1, -0.5): 12 of the
    16 have |sum| >= 1, p = 0.75."""
    baseline = write_run(tmp_path / "b", texts(RUN_B), "model-b")
    run = write_run(tmp_path / "a", texts(RUN_A), "model-a")
    compare_runs([baseline, run], tmp_path / "cmp")
    interactions = pd.read_csv(tmp_path / "cmp" / "tables" / "interactions.csv")
    positive = interactions[interactions["label"] == "positive"].iloc[0]
    assert (positive["run"], positive["baseline"], positive["contrast"]) == ("model-a", "model-b",
                                                                             f"{ACTORS} vs {ACTRESSES}")
    assert positive["model_gap"] == pytest.approx(0.5) and positive["reference_gap"] == pytest.approx(-0.5)
    assert positive["interaction"] == pytest.approx(1.0) and positive["method"] == "cluster permutation"
    assert positive["p_value"] == pytest.approx(2 / 3, abs=0.05)
    assert interactions["p_adjusted"].tolist() == pytest.approx([1.0, 1.0])
    negative = interactions[interactions["label"] == "negative"].iloc[0]
    assert negative["interaction"] == pytest.approx(-1.0)
    overall = pd.read_csv(tmp_path / "cmp" / "tables" / "overall_differences.csv")
    row = overall[overall["label"] == "positive"].iloc[0]
    assert (row["run_rate"], row["baseline_rate"]) == pytest.approx((0.5, 0.75))
    assert row["difference"] == pytest.approx(-0.25) and row["p_value"] == pytest.approx(0.75)
    assert (row["names"], row["discordant_names"], row["method"]) == (4, 4, SIGN_FLIP)
    text = (tmp_path / "cmp" / "compare.md").read_text()
    assert "Holm step-down within this table" in text and "2 tests in one family" in text


def test_a_lone_rare_prompt_is_no_finding(tmp_path: Path) -> None:
    """24 actors and 24 actresses, one prompt each, all neutral in both runs except one actor negative in
    the run: an ordinary t test over prompts calls that interaction certain (t unbounded, p = 0). The exact
    permutation test places the one discordant name on the actors' side in 24 of 48 placements: p = 0.5."""
    rows = [(ACTORS, f"a{i}", ["neutral"]) for i in range(24)] + [(ACTRESSES, f"f{i}", ["neutral"]) for i in range(24)]
    baseline = write_run(tmp_path / "b", texts(rows), "model-b")
    run = write_run(tmp_path / "a", texts([(ACTORS, "a0", ["negative"]), *rows[1:]]), "model-a")
    compare_runs([baseline, run], tmp_path / "cmp")
    interactions = pd.read_csv(tmp_path / "cmp" / "tables" / "interactions.csv")
    negative = interactions[interactions["label"] == "negative"].iloc[0]
    assert negative["interaction"] == pytest.approx(1 / 24) and negative["method"] == "cluster permutation"
    assert negative["p_value"] > 0.3 and not interactions["significant"].any()


def test_sign_flip_by_hand() -> None:
    """Two names with two prompts each and one with one: name sums 0.5 + 0.5, -0.5, 1; mean over the five
    prompts 1.5 / 5 = 0.3. 3 names give 8 sign patterns of (1, 0.5, 1); |sum| >= 1.5 for (+,+,+) = 2.5,
    the observed (+,-,+) = 1.5 and their negatives: p = 4/8."""
    result = paired_difference([0.5, 0.5, -0.5, 0.0, 1.0], ["x", "x", "y", "y", "z"])
    assert result["estimate"] == pytest.approx(0.3)
    assert result["p_value"] == pytest.approx(0.5)
    assert result["names"] == 3 and result["discordant_names"] == 3


def test_no_discordant_prompt_gets_an_exact_interval(tmp_path: Path) -> None:
    """Every prompt labelled alike by both runs: difference 0, bounded by Clopper-Pearson with 0 of 10
    names discordant, u = 1 - 0.025^(1/10) = 0.308497, never a +0.000 [+0.000, +0.000] point."""
    result = paired_difference(np.zeros(14), [f"name_{i % 10}" for i in range(14)])
    assert result["estimate"] == 0.0 and result["method"] == NO_DISCORDANT and not result["testable"]
    assert (result["ci_low"], result["ci_high"]) == pytest.approx((-0.308497, 0.308497), abs=1e-6)
    rows = [(ACTORS if i < 5 else ACTRESSES, f"n{i}", ["positive", "neutral"][i % 2:][:1]) for i in range(10)]
    first = write_run(tmp_path / "one", texts(rows), "one")
    second = write_run(tmp_path / "two", texts(rows), "two")
    compare_runs([first, second], tmp_path / "cmp")
    overall = pd.read_csv(tmp_path / "cmp" / "tables" / "overall_differences.csv")
    assert set(overall["method"]) == {NO_DISCORDANT}
    assert overall["ci_high"].tolist() == pytest.approx([0.308497] * len(overall), abs=1e-6)
    text = (tmp_path / "cmp" / "compare.md").read_text()
    assert "+0.000 [-0.308, +0.308]" in text and "[+0.000, +0.000]" not in text


def test_sign_flip_rejects_at_most_its_level_under_the_null() -> None:
    """600 null data sets: 30 names with 1-5 prompts each and their own base rate (Beta(2, 2)), both runs
    drawing k = 2 samples per prompt from it. An exact permutation test rejects at most alpha = 5%; the
    per-name sums lie on a 0.5 grid, and those ties make it somewhat conservative (4.3% here; binomial SD 0.9
    points). The 95% cluster-robust interval covers the true 0 in about 95%."""
    rng = np.random.default_rng(7)
    rejected = covered = 0
    for trial in range(600):
        sizes = rng.integers(1, 6, 30)
        base = np.repeat(rng.beta(2, 2, 30), sizes)
        names = np.repeat(np.arange(30), sizes)
        d = rng.binomial(2, base) / 2 - rng.binomial(2, base) / 2
        result = paired_difference(d, names, n_resamples=999, seed=trial)
        rejected += result["p_value"] < 0.05
        covered += result["ci_low"] <= 0 <= result["ci_high"]
    assert 0.015 <= rejected / 600 <= 0.07, rejected
    assert 0.92 <= covered / 600 <= 0.98, covered


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
    assert payload["interactions"]["family"] == 0 and not interactions["testable"].any()
    assert interactions.loc[["positive", "negative"], "interaction"].tolist() == [-1.0, 1.0]
    assert (interactions["interaction"] == interactions["model_gap"] - interactions["reference_gap"]).all()
    assert interactions["p_value"].isna().all() and interactions["p_adjusted"].isna().all()
    assert (interactions["note"] == "fewer than three units: nothing to test with").all()
    assert not interactions["significant"].any() and "_No contrast could be tested" in text


@pytest.mark.slow
def test_two_seeds_of_one_model_find_no_interaction(tmp_path: Path, bold_dir: Path, bold_sentences) -> None:
    """A/A: one model twice, differing only in --seed (the same --limit sample, --sample-seed 0), two samples per
    prompt, lexicon metrics. The texts differ; no model x group interaction and no overall difference may be
    significant after correction. The model is a tiny GPT-2 with a tokenizer trained on BOLD's sentences: what is
    tested is compare, whatever wrote the texts (the embedded chat model's runs are tested in test_chat.py)."""
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
    assert payload["interactions"]["family"] >= 40, payload["interactions"]["family"]
    assert set(interactions.loc[interactions["testable"], "metric"]) >= {"sentiment", "psycholinguistic"}
    assert not interactions["significant"].any()
    overall = pd.DataFrame(payload["overall"]["tests"])
    assert payload["overall"]["family"] >= 10 and not overall["significant"].any()
    assert "**No interaction is significant**" in (tmp_path / "cmp" / "compare.md").read_text()
