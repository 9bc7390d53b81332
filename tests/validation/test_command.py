"""`bold-eval validate`: Section 6.3's agreement of a metric with human labels, Table 8 and Figure 6."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import bold_eval
from bold_eval import cli
from bold_eval.core.resources import ResourceNotFoundError, sha256_of
from bold_eval.validation.agreement import (
    BCA_MAX_TEXTS,
    Agreement,
    AgreementIntervals,
    ClassScores,
    ConfusionMatrix,
    ValidationRecord,
    _spearman_along,
    agreement,
    run_validation,
)
from bold_eval.validation.command import validate_against
from bold_eval.validation.labels import canonical_label, parse_label_map, parse_label_set
from bold_eval.validation.report import (
    SCORE_RHO_HEADER,
    format_percent,
    format_rho,
    summary_text,
    table8_markdown,
)
from bold_eval.validation.sheng2019 import SHENG2019_COMMIT, SHENG2019_FILES, load_sheng2019
from bold_eval.validation.sources import load_labelled_file

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FAST = {"n_resamples": 999}  # enough resamples for an interval; the default 9999 is for reports


# --------------------------------------------------------------------------- the statistics, by hand


def test_agreement_on_a_hand_made_set():
    # Eight texts, classes positive (index 0, human label 1), neutral (1, label 0), negative (2, label -1).
    #   text:        0     1     2     3     4     5     6     7
    #   human:       pos   pos   pos   neu   neu   neu   neg   neg
    #   metric:      pos   pos   neu   neu   neu   neg   neg   neu
    #   score:       0.9   0.7   0.3   0.1  -0.1  -0.6  -0.8   0.2
    human = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    predicted = np.array([0, 0, 1, 1, 1, 2, 2, 1])
    scores = np.array([0.9, 0.7, 0.3, 0.1, -0.1, -0.6, -0.8, 0.2])
    order = np.array([1, 1, 1, 0, 0, 0, -1, -1])  # the human label's place on the score axis
    predicted_order = np.array([1, 1, 0, 0, 0, -1, -1, 0])  # the metric label's place on the same axis
    classes = ["positive", "neutral", "negative"]
    result = agreement(human, predicted, scores, order, predicted_order, classes, n_resamples=999).as_dict()

    # positive: predicted for texts 0, 1, both right -> precision 2/2; 2 of 3 found -> recall 2/3;
    #   f1 = 2 * 1 * 2/3 / (1 + 2/3) = 0.8.
    # neutral: predicted for 2, 3, 4, 7, right for 3, 4 -> precision 2/4; recall 2/3; f1 = 2 * .5 * 2/3 / (7/6) = 4/7.
    # negative: predicted for 5, 6, right for 6 -> precision 1/2; recall 1/2; f1 1/2.
    per_class = result["per_class"]
    assert per_class["positive"] == pytest.approx({"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3})
    assert per_class["neutral"] == pytest.approx({"precision": 0.5, "recall": 2 / 3, "f1": 4 / 7, "support": 3})
    assert per_class["negative"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2})
    # accuracy: 5 of 8 right. Weighted by class size (3, 3, 2):
    #   precision (3 * 1 + 3 * .5 + 2 * .5) / 8 = 5.5 / 8; recall (2 + 2 + 1) / 8 = accuracy;
    #   f1 (3 * .8 + 3 * 4/7 + 2 * .5) / 8.
    assert result["accuracy"] == pytest.approx(5 / 8)
    assert result["weighted"] == pytest.approx(
        {"precision": 5.5 / 8, "recall": 5 / 8, "f1": (2.4 + 12 / 7 + 1.0) / 8}
    )
    # Table 8's ρ, labels against labels: metric label ranks 7.5 7.5 4.5 4.5 4.5 1.5 1.5 4.5 (two -1, four 0,
    # two 1, ties averaged); human ranks 7 7 7 4 4 4 1.5 1.5. Both mean 4.5; deviations 3 3 0 0 0 -3 -3 0 and
    # 2.5 2.5 2.5 -.5 -.5 -.5 -3 -3: products 7.5 + 7.5 + 1.5 + 9 = 25.5, squares 36 and 37.5
    # -> rho = 25.5 / sqrt(1350) = .6940.
    assert result["spearman_rho"] == pytest.approx(25.5 / math.sqrt(1350))
    assert result["spearman_n"] == 8 and 0 < result["spearman_p_value"] < 1
    # The vectorized ρ of the bootstrap agrees with scipy.stats.spearmanr on these ties.
    assert _spearman_along(predicted_order, order) == pytest.approx(result["spearman_rho"])
    # The continuous score's ρ: score ranks (ascending) 8 7 6 4 3 2 1 5; human ranks as above. Deviations
    # 3.5 2.5 1.5 -.5 -1.5 -2.5 -3.5 .5 and 2.5 2.5 2.5 -.5 -.5 -.5 -3 -3: sum of products 30, sums of
    # squares 42 and 37.5 -> rho = 30 / sqrt(42 * 37.5) = 30 / sqrt(1575).
    assert result["spearman_rho_score"] == pytest.approx(30 / math.sqrt(1575))
    assert result["n"] == 8
    assert result["predicted_outside"] == 0
    assert result["confusion_matrix"]["counts"] == [[2, 1, 0, 0], [0, 2, 1, 0], [0, 1, 1, 0]]
    low, high = result["intervals"]["spearman_rho_score"]
    assert -1.0 <= low < result["spearman_rho_score"] < high <= 1.0
    # With 8 texts, 5 of 999 resamples draw a single metric label (a constant column has no ρ), so the
    # label-level interval is undefined (None), not a number from the other resamples.
    assert result["intervals"]["spearman_rho"] == [None, None]
    low, high = result["intervals"]["accuracy"]
    assert 0.0 <= low < high <= 1.0
    # Seeded: the same call gives the same intervals.
    again = agreement(human, predicted, scores, order, predicted_order, classes, n_resamples=999).as_dict()
    assert again["intervals"] == result["intervals"]


def test_a_prediction_outside_the_compared_classes_is_a_miss():
    # Three texts; the metric says "other" (index 3 = no compared class) for the positive one.
    # positive: never predicted -> precision 0 (zero_division), recall 0/1; neutral and negative right.
    # "other" has no place on the label order (NaN): it is left out of the label-level ρ only.
    result = agreement(
        np.array([0, 1, 2]), np.array([3, 1, 2]), np.array([0.2, 0.0, -0.5]), np.array([1, 0, -1]),
        np.array([np.nan, 0, -1]), ["positive", "neutral", "negative"], n_resamples=99,
    ).as_dict()
    assert result["accuracy"] == pytest.approx(2 / 3)
    assert result["per_class"]["positive"] == pytest.approx({"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1})
    assert result["per_class"]["neutral"]["precision"] == 1.0
    assert result["predicted_outside"] == 1
    assert result["confusion_matrix"]["counts"][0] == [0, 0, 0, 1]
    assert result["spearman_rho_score"] == pytest.approx(1.0)  # the scores are still in the human order
    assert result["spearman_n"] == 2 and result["spearman_rho"] == pytest.approx(1.0)  # (0, -1) vs (0, -1)


def test_large_sets_use_the_percentile_interval():
    # BCa's jackknife is quadratic in the number of texts; above BCA_MAX_TEXTS the percentile interval is used.
    rng = np.random.default_rng(0)
    n = BCA_MAX_TEXTS + 1
    human = rng.integers(0, 2, n)
    result = agreement(human, human, human + rng.normal(size=n), human, human, ["a", "b"], n_resamples=99)
    assert result.intervals.method.startswith("percentile bootstrap")
    assert result.accuracy == 1.0 and result.intervals.accuracy == (None, None)  # no spread: undefined
    small = agreement(human[:50], human[:50], human[:50] + 0.5, human[:50], human[:50], ["a", "b"], n_resamples=99)
    assert small.intervals.method.startswith("BCa bootstrap")


def test_sentiment_on_hand_made_texts():
    texts = [
        "This is a wonderful, excellent and lovely day.",
        "I love this great and beautiful gift.",
        "The meeting is on Tuesday at noon.",
        "The box is on the table.",
        "This is a horrible, terrible and awful disaster.",
        "He hates the ugly, disgusting mess.",
    ]
    human = [1, 1, 0, 0, -1, 0]  # the annotators call the last text neutral
    result = run_validation("sentiment", texts, human, **FAST)
    # The premise, from VADER: two positive texts, two neutral ones at exactly 0, two negative ones
    # (the fifth more negative than the sixth).
    assert result.metric_labels.tolist() == ["positive", "positive", "neutral", "neutral", "negative", "negative"]
    assert result.scores[2] == result.scores[3] == 0.0 and result.scores[4] < result.scores[5] < 0
    record = result.record.as_dict()
    # positive: P 1, R 1; neutral: predicted for 2 texts, both right, 2 of 3 found; negative: 1 of 2 right, R 1.
    assert record["per_class"]["positive"] == pytest.approx(
        {"label": 1, "precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2})
    assert record["per_class"]["neutral"] == pytest.approx(
        {"label": 0, "precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3})
    assert record["per_class"]["negative"] == pytest.approx(
        {"label": -1, "precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1})
    assert record["accuracy"] == pytest.approx(5 / 6)
    # Table 8's ρ: metric labels 1 1 0 0 -1 -1 rank 5.5 5.5 3.5 3.5 1.5 1.5; human 1 1 0 0 -1 0 rank 5.5 5.5
    # 3 3 1 3. Deviations from 3.5: 2 2 0 0 -2 -2 and 2 2 -.5 -.5 -2.5 -.5: products 4 + 4 + 5 + 1 = 14,
    # squares 16 and 15 -> rho = 14 / sqrt(240) = .9037.
    assert record["spearman_rho"] == pytest.approx(14 / math.sqrt(240))
    # The score's ρ: score ranks {5, 6} for the positives, 3.5 3.5 (tie), 1, 2; human ranks as above.
    # Deviations from 3.5: (1.5, 2.5 in some order) 0 0 -2.5 -1.5 and 2 2 -.5 -.5 -2.5 -.5:
    # products 2 * 4 + 6.25 + .75 = 15; squares 17 and 15 -> rho = 15 / sqrt(255).
    assert record["spearman_rho_score"] == pytest.approx(15 / math.sqrt(255))
    assert record["label_mapping"] == {"negative": -1, "neutral": 0, "positive": 1}
    assert list(record["per_class"]) == ["positive", "neutral", "negative"]  # Table 8's order
    assert record["excluded"] == 0 and record["n"] == 6
    # The evaluate-style API returns the same record.
    assert bold_eval.validate("sentiment", texts, human, **FAST) == record


def test_gender_polarity_unigram_on_hand_made_texts():
    # Unnamed numeric labels take the paper's codes: male = -1, neutral = 0, female = 1 (Section 6.3).
    texts = ["He is a man and his son is a boy.", "She said her daughter is a girl.", "The table is red.",
             "He met her."]
    human = [-1, 1, 0, 1]
    record = bold_eval.validate("gender_polarity", texts, human, **FAST)
    # unigram labels: male, female, neutral, neutral (one token each) -> female recall 1/2, accuracy 3/4.
    assert record["score"] == "unigram" and record["table8_row"] == "unigram"
    assert record["label_mapping"] == {"male": -1, "neutral": 0, "female": 1}
    assert record["accuracy"] == pytest.approx(3 / 4)
    assert list(record["per_class"]) == ["female", "neutral", "male"]  # plain numbers named after the metric labels
    assert record["per_class"]["female"]["recall"] == pytest.approx(0.5)
    # Scores (female - male) / (female + male): -1, 1, 0, 0, and the labels (-1, 1, 0, 0) rank the same way;
    # human ranks 1, 3.5, 2, 3.5 -> rho = Pearson of (1, 4, 2.5, 2.5) and (1, 3.5, 2, 3.5) = 3.75 / 4.5 = 0.8333.
    assert record["spearman_rho"] == pytest.approx(3.75 / 4.5)
    assert record["spearman_rho_score"] == pytest.approx(3.75 / 4.5)


def test_a_metric_label_outside_the_human_set_keeps_its_place_on_the_label_order():
    # Human labels positive / negative only (1, -1); VADER calls the middle text neutral, which maps to the
    # paper's code 0, not a compared class: a miss for accuracy, but between the two for ρ.
    texts = ["What a wonderful, lovely day.", "The box is on the table.", "A horrible, awful disaster."]
    record = bold_eval.validate("sentiment", texts, [1, 1, -1], label_set=[1, -1], **FAST)
    assert record["accuracy"] == pytest.approx(2 / 3) and record["predicted_outside"] == 1
    # Metric labels 1, 0, -1 rank 3 2 1; human 1, 1, -1 rank 2.5 2.5 1. Deviations from 2: 1 0 -1 and
    # .5 .5 -1: products 1.5, squares 2 and 1.5 -> rho = 1.5 / sqrt(3) = .8660.
    assert record["spearman_n"] == 3 and record["spearman_rho"] == pytest.approx(1.5 / math.sqrt(3))


# --------------------------------------------------------------------------- Sheng et al. (2019), end to end


def test_sheng2019_files_match_the_pinned_checksums(shared_data):
    for relative, remote in SHENG2019_FILES.items():
        assert sha256_of(shared_data / "sheng2019" / relative) == remote.sha256, relative
        assert SHENG2019_COMMIT in remote.url and remote.url.endswith("/data/" + relative)


def test_sheng2019_sources(shared_data):
    regard = load_sheng2019("sheng2019-regard")
    # train_other (212 + 23 "other") + dev 60 + test 30.
    assert len(regard.texts) == len(regard.labels) == 325
    assert regard.labels.count(2) == 23 and regard.exclude == (2,)
    assert [entry["file"] for entry in regard.source["files"]] == [
        "regard/train_other.tsv", "regard/dev.tsv", "regard/test.tsv"]
    assert all(entry["matches_pinned_sha256"] for entry in regard.source["files"])
    sentiment = load_sheng2019("sheng2019-sentiment")
    assert len(sentiment.texts) == 217 + 62 + 30 and 2 not in sentiment.labels
    assert len(load_sheng2019("sheng2019-regard", splits=["test"]).texts) == 30
    with pytest.raises(ValueError, match="choose one of train and train_other"):
        load_sheng2019("sheng2019-regard", splits=["train", "train_other"])


def test_sentiment_against_sheng2019_regard_and_sentiment(shared_data, tmp_path):
    regard = validate_against("sentiment", "sheng2019-regard", tmp_path / "regard", **FAST).record.as_dict()
    assert regard["n"] == 302 and regard["excluded"] == 23 and regard["excluded_labels"] == {"other": 23}
    assert [entry["label"] for entry in regard["per_class"].values()] == [1, 0, -1]
    assert sum(entry["support"] for entry in regard["per_class"].values()) == 302
    assert regard["weighted"]["recall"] == pytest.approx(regard["accuracy"])
    assert sum(map(sum, regard["confusion_matrix"]["counts"])) == 302
    for key in ("spearman_rho", "spearman_rho_score"):
        assert 0.3 < regard[key] < 0.95 and regard[key.replace("rho", "p_value")] < 1e-6
        low, high = regard["intervals"][key]
        assert low < regard[key] < high
    sentiment = validate_against("sentiment", "sheng2019-sentiment", tmp_path / "sentiment",
                                 **FAST).record.as_dict()
    assert sentiment["n"] == 309 and sentiment["excluded"] == 0
    assert sentiment["source"]["commit"] == SHENG2019_COMMIT
    assert all(entry["sha256"] for entry in sentiment["source"]["files"])


def test_table8_rho_against_sheng2019_regard_is_the_label_level_rho(shared_data, tmp_path, capsys):
    # Table 8's ρ is between VADER's labels and the human labels (Section 6.3; Sheng et al.'s Table 5 also
    # compares VADER's predictions with their annotations): recompute it with scipy from the predictions.
    from scipy.stats import spearmanr

    out = tmp_path / "validation"
    assert cli.main(["validate", "sentiment", "--against", "sheng2019-regard", "--out", str(out),
                     "--n-resamples", "999"]) == 0
    printed = capsys.readouterr().out
    record = json.loads((out / "validation.json").read_text(encoding="utf-8"))
    import pandas as pd

    predictions = pd.read_csv(out / "predictions.csv")
    compared = predictions[predictions["compared"]]
    codes = {"positive": 1, "neutral": 0, "negative": -1}
    expected = spearmanr(compared["metric_label"].map(codes), compared["human_label"].astype(int))
    assert record["spearman_n"] == record["n"] == len(compared) == 302
    assert record["spearman_rho"] == pytest.approx(expected.statistic)
    assert record["spearman_p_value"] == pytest.approx(expected.pvalue)
    score = spearmanr(compared["score"], compared["human_label"].astype(int))
    assert record["spearman_rho_score"] == pytest.approx(score.statistic)
    assert record["spearman_rho"] < record["spearman_rho_score"]  # thresholds cost rank agreement here
    row = next(line for line in printed.splitlines() if line.startswith("| sentiment |"))
    rho, accuracy = format_rho(record["spearman_rho"]), format_percent(record["accuracy"])
    assert row.startswith(f"| sentiment | {rho} | {accuracy} |")
    assert row.endswith(f" | {format_rho(record['spearman_rho_score'])} |")


def test_sheng2019_offline_error_names_the_resource_and_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("BOLD_SHENG2019_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BOLD_EVAL_OFFLINE", "1")
    with pytest.raises(ResourceNotFoundError) as error:
        load_sheng2019("sheng2019-regard")
    message = str(error.value)
    assert "Sheng et al. (2019) regard annotations" in message and "BOLD_SHENG2019_DIR" in message
    assert str(tmp_path / "empty") in message and "offline" in message and SHENG2019_COMMIT in message


# --------------------------------------------------------------------------- classifiers (tiny models)


@pytest.mark.usefixtures("one_thread")
def test_toxicity_with_a_tiny_classifier_on_a_user_file(classifier_dirs, bold_sentences, tmp_path):
    from bold_eval.metrics import toxicity

    model = classifier_dirs["toxicity"]
    texts = bold_sentences[:40]
    columns = toxicity.load_scorer(model)(texts)
    # Human labels that agree with the classifier on the first 30 texts and disagree on the last 10.
    human = [int(flag) if i < 30 else 1 - int(flag) for i, flag in enumerate(columns["is_toxic"])]
    path = tmp_path / "toxic.csv"
    import pandas as pd

    pd.DataFrame({"comment": texts, "toxic": human}).to_csv(path, index=False)
    result = validate_against("toxicity", str(path), tmp_path / "out", text_column="comment", label_column="toxic",
                             model=model, **FAST)
    record = result.record.as_dict()
    # Unnamed labels 0/1 take the paper's codes: toxic = 1, non-toxic (neutral) = 0 (Section 6.3).
    assert record["label_mapping"] == {"non-toxic": 0, "toxic": 1}
    assert record["accuracy"] == pytest.approx(30 / 40)
    np.testing.assert_allclose(result.scores, columns["score"], rtol=1e-6)
    assert record["metric_options"] == {"model": model}
    assert record["thresholds"] == {"toxic": 0.5}
    assert (tmp_path / "out" / "validation.json").is_file()

    # The same labels as words map by name; a JSONL file works the same way.
    words = tmp_path / "toxic.jsonl"
    words.write_text("".join(json.dumps({"text": t, "label": "toxic" if h else "non-toxic"}) + "\n"
                             for t, h in zip(texts, human, strict=True)), encoding="utf-8")
    named = validate_against("toxicity", str(words), tmp_path / "named", model=model, **FAST).record.as_dict()
    assert named["label_mapping"] == {"non-toxic": "non-toxic", "toxic": "toxic"}
    assert named["accuracy"] == record["accuracy"] and named["spearman_rho"] == pytest.approx(record["spearman_rho"])
    assert named["spearman_rho_score"] == pytest.approx(record["spearman_rho_score"])


@pytest.mark.usefixtures("one_thread")
def test_regard_with_a_tiny_classifier_against_sheng2019_regard(classifier_dirs, shared_data, tmp_path):
    from bold_eval.metrics import regard

    model = classifier_dirs["regard"]
    result = validate_against("regard", "sheng2019-regard", tmp_path, splits=["train_other"], model=model, **FAST)
    record = result.record.as_dict()
    assert record["n"] == 212 and record["excluded"] == 23
    # Regard labels map by name; "other" goes to Sheng's 2, which is excluded, so predicting it is a miss.
    assert record["label_mapping"] == {"positive": 1, "negative": -1, "neutral": 0, "other": 2}
    labelled = load_sheng2019("sheng2019-regard", splits=["train_other"])
    columns = regard.load_scorer(model)(labelled.texts)
    compared = np.array(labelled.labels) != 2
    assert record["predicted_outside"] == int((columns["label"][compared] == "other").sum())
    np.testing.assert_allclose(result.scores, columns["positive"] - columns["negative"], rtol=1e-5, atol=1e-6)
    codes = {"positive": 1, "neutral": 0, "negative": -1}
    hits = sum(codes.get(label) == human for label, human in zip(columns["label"][compared],
                                                                  np.array(labelled.labels)[compared], strict=True))
    assert record["accuracy"] == pytest.approx(hits / 212)
    # "other" has no place on the label order: those texts are left out of the label-level ρ only.
    assert record["spearman_n"] == 212 - record["predicted_outside"]


# --------------------------------------------------------------------------- the command line


def test_cli_writes_json_table8_and_figure6(shared_data, tmp_path, capsys):
    out = tmp_path / "validation"
    assert cli.main(["validate", "sentiment", "--against", "sheng2019-regard", "--out", str(out),
                     "--n-resamples", "999", "--metric-option", "sentiment.positive_threshold=0.5"]) == 0
    printed = capsys.readouterr().out
    record = json.loads((out / "validation.json").read_text(encoding="utf-8"))
    for key in ("n", "spearman_rho", "spearman_rho_score", "accuracy", "per_class", "weighted", "excluded", "intervals",
                "label_mapping", "metric_options", "source"):
        assert key in record
    assert record["metric_options"] == {"positive_threshold": 0.5}
    assert printed.startswith(summary_text(ValidationRecord.from_dict(record)))
    assert f"| sentiment | {format_rho(record['spearman_rho'])} | {format_percent(record['accuracy'])} |" in printed
    markdown = (out / "validation.md").read_text(encoding="utf-8")
    assert "| metrics | Spearman's ρ | accuracy | precision | recall | f1 | per-class recall |" in markdown
    assert f"| per-class precision |  |  | {SCORE_RHO_HEADER} |" in markdown
    assert "| sentiment (paper, Table 8) | .5163 | 80.62 |" in markdown
    assert "| 46.36 | - |" in markdown  # the paper reports no continuous-score ρ
    assert record["source"]["files"][0]["sha256"] in markdown
    assert (out / "figures" / "score_distributions.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "predictions.csv").read_text(encoding="utf-8").startswith("text,human_label,compared,score")
    assert not list(out.rglob("*.tmp"))  # atomic writes leave no temporary files


def test_cli_on_a_user_file_with_a_declared_label_set(tmp_path, capsys):
    path = tmp_path / "labels.tsv"
    path.write_text("sentence\tpolarity\nWhat a wonderful, lovely day.\tgood\nThe box is on the table.\tmeh\n"
                    "A horrible, awful disaster.\tbad\nThe sky is blue.\tmeh\n", encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["validate", "sentiment", "--against", str(path), "--out", str(out), "--text-column", "sentence",
                     "--label-column", "polarity", "--labels", "good:positive,meh:neutral,bad:negative",
                     "--n-resamples", "99"]) == 0
    record = json.loads((out / "validation.json").read_text(encoding="utf-8"))
    assert record["label_mapping"] == {"negative": "bad", "neutral": "meh", "positive": "good"}
    assert record["accuracy"] == 1.0 and list(record["per_class"]) == ["positive", "neutral", "negative"]
    assert "| sentiment | 1.0000 | 100.00 |" in capsys.readouterr().out


# --------------------------------------------------------------------------- bad inputs


def test_bad_inputs_give_clear_errors(tmp_path, capsys):
    with pytest.raises(ValueError, match="unknown metric 'sentimental'; valid metrics: sentiment"):
        bold_eval.validate("sentimental", ["a text"], [1])
    with pytest.raises(ValueError, match="`texts` has 2 entries but `human_labels` has 1"):
        bold_eval.validate("sentiment", ["a text", "another"], [1])
    with pytest.raises(ValueError, match=r"human label 5 \(text 1\) is not in the declared label set \[1, 0, -1\]"):
        bold_eval.validate("sentiment", ["good", "bad"], [1, 5], label_set=[1, 0, -1])
    with pytest.raises(ValueError, match=r"human_labels\[1\] is missing"):
        bold_eval.validate("sentiment", ["good", "bad"], [1, None])
    with pytest.raises(ValueError,
                       match=r"gender_polarity label\(s\) male, neutral, female have no counterpart.*--label-map"):
        bold_eval.validate("gender_polarity", ["He is here."], [1], label_set={1: "positive", -1: "negative"})
    with pytest.raises(ValueError, match="human label 2 \\(2\\) has no counterpart.*--exclude-label"):
        bold_eval.validate("sentiment", ["good", "bad"], [1, 2])
    with pytest.raises(ValueError, match="label map names 'nice', which is not a sentiment label"):
        bold_eval.validate("sentiment", ["good"], [1], label_map={"nice": 1})

    csv = tmp_path / "labels.csv"
    csv.write_text("text,rating\nA nice day.,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"has no column 'label' \(its columns: text, rating\); .*--label-column"):
        load_labelled_file(csv)
    assert cli.main(["validate", "sentiment", "--against", str(csv), "--out", str(tmp_path / "o"),
                  "--text-column", "content", "--label-column", "rating"]) == 2  # a usage message, no traceback
    assert re.search("no column 'content'.*--text-column", capsys.readouterr().err)
    assert cli.main(["validate", "sentiment", "--against", str(csv), "--out", str(tmp_path / "o"),
                  "--label-column", "rating", "--labels=-1,0"]) == 2  # a usage message, no traceback
    assert re.search("not in the declared label set", capsys.readouterr().err)
    assert cli.main(["validate", "sentiment", "--against", str(csv), "--out", str(tmp_path / "o"),
                  "--metric-option", "toxicity.threshold=0.4"]) == 2  # a usage message, no traceback
    assert re.search("--metric-option for toxicity does not apply to sentiment", capsys.readouterr().err)
    assert cli.main(["validate", "sentiment", "--against", str(tmp_path / "missing.csv"), "--out",
                     str(tmp_path / "o")]) == 1  # a missing file (MissingFileError), no traceback
    assert re.search("labelled file .*missing.csv not found", capsys.readouterr().err)
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text('{"text": "fine", "label": 1}\n{"text": null, "label": 0}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: 'text' is None"):
        load_labelled_file(jsonl)


def test_label_parsing():
    assert [canonical_label(value) for value in (1, 1.0, "1", " -1 ", True, "toxic", "0.5")] == [
        1, 1, 1, -1, 1, "toxic", "0.5"]
    assert parse_label_set("1:positive, 0:neutral,-1:negative") == {1: "positive", 0: "neutral", -1: "negative"}
    assert parse_label_set("toxic,non-toxic") == {"toxic": "toxic", "non-toxic": "non-toxic"}
    assert parse_label_map(["toxic=1", "non-toxic=0"]) == {"toxic": 1, "non-toxic": 0}
    with pytest.raises(ValueError, match="expected METRIC_LABEL=HUMAN_LABEL"):
        parse_label_map(["toxic"])


def test_table8_layout_pads_two_classes_like_the_paper():
    found = Agreement(
        n=152, spearman_rho=0.5839, spearman_p_value=None, spearman_n=152, spearman_rho_score=0.61,
        spearman_p_value_score=None, accuracy=0.8, weighted={"precision": 0.8013, "recall": 0.8, "f1": 0.7963},
        per_class={"non-toxic": ClassScores(precision=0.7934, recall=0.8902, f1=0.0, support=0),
                   "toxic": ClassScores(precision=0.8125, recall=0.6724, f1=0.0, support=0)},
        intervals=AgreementIntervals((None, None), (None, None), (None, None), 0.95, "BCa", 9, 0),
        predicted_outside=0, confusion_matrix=ConfusionMatrix(columns=[], counts=[]))
    record = ValidationRecord(metric="toxicity", score="toxicity", table8_row="toxicity", score_description="",
                              metric_options={}, thresholds={}, source={}, classes=[], label_mapping={},
                              excluded_labels={}, agreement=found)
    lines = table8_markdown([record]).splitlines()
    assert lines[0].endswith("| per-class precision |  |  | Spearman's ρ (continuous score vs label) |")
    assert lines[2] == "|  |  |  |  |  |  | non-toxic | toxic | - | non-toxic | toxic | - |  |"
    assert lines[3] == ("| toxicity | .5839 | 80.00 | 80.13 | 80.00 | 79.63 | 89.02 | 67.24 | NA | 79.34 | 81.25 | NA "
                        "| .6100 |")


# --------------------------------------------------------------------------- the module cards


def _card_validation_section(metric: str) -> str:
    card = (PROJECT_ROOT / "metrics" / metric / "README.md").read_text(encoding="utf-8")
    assert "\n## Validation\n" in card, f"metrics/{metric}/README.md has no Validation section"
    section = card.split("\n## Validation\n", 1)[1]
    return re.split(r"\n## ", section, maxsplit=1)[0]


@pytest.mark.parametrize(("metric", "source"), [("sentiment", "sheng2019-regard"), ("sentiment", "sheng2019-sentiment"),
                                                ("psycholinguistic", "sheng2019-sentiment")])
@pytest.mark.slow
def test_the_cards_print_what_the_command_prints(metric, source, shared_data, tmp_path):
    # The Validation sections quote `bold-eval validate METRIC --against SOURCE` with the default
    # 9999 resamples and seed 0; the intervals need the same resamples to match digit for digit.
    record = validate_against(metric, source, tmp_path).record
    assert summary_text(record) in _card_validation_section(metric)
