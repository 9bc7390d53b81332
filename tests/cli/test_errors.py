"""Per subcommand: each realistic mistake ends in one paragraph naming the input,
no traceback, and a non-zero status (2 for a flag value, 1 for a file or the environment).

Inputs are tiny (one generation, three labelled texts, cheap metrics); tests/faults/test_reliability.py
covers the model, data and run-folder mistakes and the --debug traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.cli import main as cli_main

PROMPT_ID = "religious_ideology/judaism/Judaism/0"
PARTIAL = ["--domains", "religious_ideology", "--allow-partial"]
UNIGRAM = ["--metrics", "gender_polarity", "--metric-option", "gender_polarity.methods=unigram"]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch, bold_dir):
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("BOLD_EVAL_OFFLINE", "1")
    monkeypatch.setenv("BOLD_DATA_DIR", str(bold_dir))
    monkeypatch.delenv("BOLD_EVAL_DEBUG", raising=False)


def _cases(tmp: Path) -> dict[str, tuple[list[str], int, str]]:
    """case -> (argv, exit status, a piece of the message)."""
    generations = tmp / "generations.jsonl"
    generations.write_text(json.dumps({"prompt_id": PROMPT_ID, "continuation": " was kind."}) + "\n", encoding="utf-8")
    empty = tmp / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    labelled = tmp / "labelled.csv"
    labelled.write_text("text,label\nwhat a lovely day,1\nthis is awful,-1\nit is a table,0\n", encoding="utf-8")
    stray = tmp / "stray.csv"
    stray.write_text("text,label\nwhat a lovely day,1\nthis is awful,-1\nit is a table,7\n", encoding="utf-8")
    not_utf8 = tmp / "latin1.jsonl"
    not_utf8.write_bytes(b'{"text": "caf\xe9", "label": 1}\n')
    # a hand-edited scores.parquet: one dance text moved to another Table 3 super-group
    two_categories = tmp / "two-categories"
    two_categories.mkdir()
    pd.DataFrame({"prompt_id": [f"profession/dance_occupations/Ballet/{i}" for i in range(3)], "domain": "profession",
                  "group": "dance_occupations", "name": "Ballet",
                  "category": ["arts_and_entertainment", "arts_and_entertainment", "science_and_technology"],
                  "gender_polarity_unigram_label": ["male", "female", "neutral"]}).to_parquet(
        two_categories / "scores.parquet")

    def score(*options: str, metrics: str = "gender_polarity") -> list[str]:
        return ["score", str(generations), "--out", str(tmp / "scored"), *PARTIAL, "--metrics", metrics,
                *[part for option in options for part in ("--metric-option", option)]]

    def validate(metric: str, against: Path, *flags: str) -> list[str]:
        return ["validate", metric, "--against", str(against), "--out", str(tmp / "validated"),
                "--n-resamples", "10", *flags]

    def run(*flags: str) -> list[str]:
        return ["run", "--model", "wikipedia", "--domains", "religious_ideology", "--limit", "2", "--no-progress",
                "--out", str(tmp / "run"), *flags]

    return {
        # scorer options (score, run and validate share them)
        "toxicity threshold above 1": (score("toxicity.threshold=2", metrics="toxicity"), 2,
                                       "threshold must be a probability in [0, 1], got 2"),
        "unknown gender polarity method": (score("gender_polarity.methods=foo"), 2,
                                           "unknown gender polarity methods ['foo']"),
        "misspelled option name": (score("gender_polarity.method=unigram"), 2,
                                   "gender_polarity has no option 'method'; its options are methods"),
        "thresholds in the wrong order": (score("sentiment.positive_threshold=-3", metrics="sentiment"), 2,
                                          "must be below positive_threshold"),
        "threshold that is not a number": (score("sentiment.positive_threshold=high", metrics="sentiment"), 2,
                                           "positive_threshold must be a number, got 'high'"),
        "psycholinguistic thresholds not a mapping": (score("psycholinguistic.thresholds=0.5",
                                                            metrics="psycholinguistic"), 2,
                                                      "thresholds must map threshold names to numbers"),
        "unknown psycholinguistic threshold": (score('psycholinguistic.thresholds={"happiness": 0.5}',
                                                     metrics="psycholinguistic"), 2,
                                               "unknown threshold 'happiness'"),
        "run with a bad metric option": (run("--metrics", "toxicity", "--metric-option", "toxicity.threshold=2"), 2,
                                         "threshold must be a probability"),
        "run with a misspelled option name": (run("--metrics", "sentiment", "--metric-option",
                                                  "sentiment.treshold=0.4"), 2, "sentiment has no option 'treshold'"),
        "score with a toxicity model path that does not exist": (
            score(f"toxicity.model={tmp / 'no-model'}", metrics="toxicity"), 1,
            f"You chose toxicity.model={tmp / 'no-model'}"),
        # score inputs
        "score an empty file": (["score", str(empty), "--out", str(tmp / "s"), *UNIGRAM], 1, "holds no generations"),
        "score a JSONL file as parquet": (["score", str(generations), "--from", "parquet", "--out", str(tmp / "s"),
                                           *UNIGRAM], 1, "is not a readable parquet file"),
        # validate
        "validate with a missing label column": (validate("sentiment", labelled, "--label-column", "rating"), 2,
                                                 "has no column 'rating' (its columns: text, label)"),
        "validate with an undeclared label": (validate("sentiment", stray, "--labels", "1,0,-1"), 2,
                                              "human label 7 (text 2) is not in the declared label set"),
        "validate a missing file": (validate("sentiment", tmp / "missing.csv"), 1, "labelled file"),
        "validate a file that is not UTF-8": (validate("sentiment", not_utf8), 1, "line 1 is not valid UTF-8"),
        "validate an unknown score": (validate("sentiment", labelled, "--score", "valence"), 2,
                                      "sentiment has no score 'valence'"),
        "validate with a misspelled option": (validate("gender_polarity", labelled, "--metric-option",
                                                       "gender_polarity.bogus=1"), 2, "has no option 'bogus'"),
        "validate with a missing Sheng et al. folder": (["validate", "sentiment", "--against", "sheng2019-sentiment",
                                                         "--out", str(tmp / "v"), "--sheng2019-dir",
                                                         str(tmp / "no-sheng")], 1, "sheng2019_dir= ->"),
        # dataset, report, compare, publish
        "dataset summary of a missing folder": (["dataset", "summary", "--data-dir", str(tmp / "no-bold")], 1,
                                                "BOLD file prompts/gender_prompt.json not found"),
        "dataset export of a missing folder": (["dataset", "export", str(tmp / "export"), "--data-dir",
                                                str(tmp / "no-bold")], 1, "not found"),
        "report of a missing folder": (["report", str(tmp / "nothing")], 1, "scores.parquet not found"),
        "report of a group with two categories": (["report", str(two_categories)], 1,
                                                  "scores.parquet, column 'category', row 2: 'science_and_technology' "
                                                  "is a second category of group 'dance_occupations'"),
        "compare of missing folders": (["compare", str(tmp / "a"), str(tmp / "b"), "--out", str(tmp / "c")], 1,
                                       "scores.parquet not found"),
        "publish into a folder in use": (["publish", "--namespace", "someone", "--dry-run", str(tmp)], 1,
                                         "is not empty"),
        "publish-results with a bad repo": (["publish-results", str(tmp / "nothing"), "--repo", "model",
                                             "--dry-run", str(tmp / "d")], 1, "--repo must be NAMESPACE/MODEL"),
    }


# The case names, listed so that pytest can collect them without building the inputs.
CASES = [
    "toxicity threshold above 1", "unknown gender polarity method", "misspelled option name",
    "thresholds in the wrong order", "threshold that is not a number", "psycholinguistic thresholds not a mapping",
    "unknown psycholinguistic threshold",
    "run with a bad metric option", "run with a misspelled option name",
    "score with a toxicity model path that does not exist", "score an empty file",
    "score a JSONL file as parquet", "validate with a missing label column", "validate with an undeclared label",
    "validate a missing file", "validate a file that is not UTF-8", "validate an unknown score",
    "validate with a misspelled option", "validate with a missing Sheng et al. folder",
    "dataset summary of a missing folder", "dataset export of a missing folder", "report of a missing folder",
    "report of a group with two categories",
    "compare of missing folders", "publish into a folder in use", "publish-results with a bad repo",
]


@pytest.mark.parametrize("case", CASES)
def test_a_mistake_is_one_paragraph_without_traceback(case, tmp_path, capsys):
    argv, status, message = _cases(tmp_path)[case]
    assert cli_main(argv) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err and "This is a bug" not in err
    errors = [line for line in err.splitlines() if line.startswith("bold-eval")]
    assert errors == [errors[0]] and errors[0].startswith("bold-eval: error: ")  # one paragraph, one line
    assert message in errors[0]


@pytest.mark.parametrize("command", ["run", "score", "report", "compare"])
def test_an_unknown_cluster_unit_is_a_usage_error(command, tmp_path, capsys):
    """--cluster takes name, prompt or none; anything else is argparse's usage message (status 2)."""
    target = {"run": ["--model", "wikipedia", "--out", str(tmp_path / "o")],
              "score": [str(tmp_path / "g.jsonl"), "--out", str(tmp_path / "o")],
              "report": [str(tmp_path)], "compare": [str(tmp_path)]}[command]
    with pytest.raises(SystemExit) as exit_info:
        cli_main([command, *target, "--cluster", "bogus"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --cluster: invalid choice: 'bogus'" in err and "'name', 'prompt', 'none'" in err
    assert "Traceback" not in err


def test_every_case_is_tested(tmp_path):
    assert sorted(_cases(tmp_path)) == sorted(CASES)


def test_lm_eval_tasks_path_prints_a_folder(capsys):
    assert cli_main(["lm-eval-tasks-path"]) == 0
    assert Path(capsys.readouterr().out.strip()).is_dir()


def test_a_missing_lexicon_folder_is_not_replaced_by_another_copy(tmp_path, capsys):
    """psycholinguistic.lexicon_dir=/nonexistent must not quietly score with $BOLD_LEXICON_DIR's copy,
    nor be skipped: the user named it, so the command fails, naming the folder that was given."""
    argv, _, _ = _cases(tmp_path)["toxicity threshold above 1"]
    argv = [*argv[:argv.index("--metrics")], "--metrics", "psycholinguistic",
            "--metric-option", "psycholinguistic.lexicon_dir=/nonexistent"]
    assert cli_main(argv) == 1
    err = capsys.readouterr().err
    assert "lexicon_dir= -> /nonexistent (missing)" in err and "Traceback" not in err
    assert "You chose psycholinguistic.lexicon_dir=/nonexistent" in err
    assert not (tmp_path / "scored" / "scores.parquet").exists()
