"""The lm-evaluation-harness tasks: configs, per-document metrics, and a real offline round trip."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.lm_eval_tasks import utils
from bold_eval.paths import lm_eval_tasks_dir

DOMAINS = ("gender", "race", "profession", "religious_ideology", "political_ideology")
LM_EVAL = Path(sys.executable).with_name("lm_eval")


def test_task_index_has_five_tasks_and_group():
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(lm_eval_tasks_dir()), include_defaults=False)
    names = set(manager.all_tasks)
    assert {f"bold_{domain}" for domain in DOMAINS} | {"bold"} <= names


def test_paper_decoding_defaults():
    from lm_eval.tasks._yaml_loader import load_yaml

    config = load_yaml(lm_eval_tasks_dir() / "bold_gender.yaml", resolve_func=False)
    assert config["task"] == "bold_gender" and config["dataset_kwargs"] == {"domain": "gender"}
    assert config["output_type"] == "generate_until"
    # appendix A.2.2 (GPT-2: top-k 40, top-p 0.95); 30 new tokens as `bold-eval run`
    assert config["generation_kwargs"] == {
        "do_sample": True, "temperature": 1.0, "top_k": 40, "top_p": 0.95, "max_gen_toks": 30, "until": ["\n"]
    }
    assert config["doc_to_text"] == "{{prompt}}"


def test_load_docs_from_bold_data_dir_and_from_export(tmp_path, bold_dir, monkeypatch):
    monkeypatch.delenv("BOLD_DATASET", raising=False)
    docs = utils.load_docs(domain="religious_ideology", bold_data_dir=str(bold_dir), pretrained="ignored")["test"]
    assert len(docs) == 639 and "prompt_id" in docs.column_names

    from bold_eval.data import export_dataset

    export_dataset(tmp_path / "export", data_dir=bold_dir)
    monkeypatch.setenv("BOLD_DATASET", str(tmp_path / "export"))
    exported = utils.load_docs(domain="religious_ideology")["test"]
    assert exported["prompt_id"] == docs["prompt_id"]
    with pytest.raises(ValueError, match="unknown BOLD domain 'religion'"):
        utils.load_docs(domain="religion")


def _doc(domain="gender", group="American_actresses", name="Jane_Doe", prompt="Jane Doe is an American actress who"):
    return {"prompt_id": f"{domain}/{group}/{name}/0", "domain": domain, "group": group, "name": name,
            "category": "", "prompt": prompt, "wikipedia": ""}


def test_process_results_scores_prompt_plus_continuation():
    positive_female = utils.process_results(_doc(), [" is a wonderful, kind mother of two; she loves her girls."])
    assert positive_female["positive_sentiment_ratio"] == 1.0 and positive_female["negative_sentiment_ratio"] == 0.0
    assert positive_female["gender_polarity_male_minus_female"] == -1.0
    assert positive_female["negative_sentiment_gap"] == ("American_actresses", 0.0)
    negative_male = utils.process_results(
        _doc(group="American_actors", name="John_Roe", prompt="John Roe is an American actor who"),
        [" was arrested for murder and abuse; he hated his brother."],
    )
    assert negative_male["negative_sentiment_ratio"] == 1.0
    assert negative_male["gender_polarity_male_minus_female"] == 1.0
    # the name is anonymized before scoring (Section 3.3): "Jane Doe" never reaches the metrics
    assert "Jane" not in utils.scored_text(_doc(), " and Jane Doe again")


def test_max_group_gap_by_hand():
    # group a: 1 of 4 -> 0.25; group b: 2 of 2 -> 1.0; group c: 0 of 1 -> 0.0  => gap 1.0
    items = [("a", 1.0), ("a", 0.0), ("a", 0.0), ("a", 0.0), ("b", 1.0), ("b", 1.0), ("c", 0.0)]
    assert utils.group_means(items) == {"a": 0.25, "b": 1.0, "c": 0.0}
    assert utils.max_group_gap(items) == 1.0
    assert utils.max_group_gap([("a", 1.0), ("b", -1.0), ("b", 0.0)]) == 1.5  # male-minus-female values
    assert utils.max_group_gap([("a", 1.0)]) == 0.0


def _tiny_causal_lm(directory: Path, corpus: list[str]) -> Path:
    """A 2-layer GPT-2 with a 400-token byte-level BPE trained here on BOLD text, saved like a Hub model."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus, trainer)
    special = "<|endoftext|>"
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=special, eos_token=special,
                                   unk_token=special, pad_token=special)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(fast), n_positions=128, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=fast.eos_token_id, eos_token_id=fast.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


@pytest.mark.skipif(not LM_EVAL.exists(), reason="lm-eval is not installed (dev extras)")
def test_lm_eval_round_trip_then_score(tmp_path, bold_dir):
    """lm_eval runs bold_gender offline on a tiny local LM; `bold-eval score --from lm-eval` scores
    the logged samples and agrees with the per-document metrics lm-eval computed."""
    from bold_eval.data import load_bold

    corpus = load_bold("gender", data_dir=bold_dir)["wikipedia"][:1500]
    model = _tiny_causal_lm(tmp_path / "model", corpus)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "BOLD_DATA_DIR": str(bold_dir), "HF_DATASETS_CACHE": str(tmp_path / "hf_datasets")}
    env.pop("BOLD_DATASET", None)
    tasks = subprocess.run([sys.executable, "-m", "bold_eval.cli", "lm-eval-tasks-path"], capture_output=True,
                           text=True, check=True).stdout.strip()
    assert Path(tasks) == lm_eval_tasks_dir()
    out = tmp_path / "lm_eval_out"
    result = subprocess.run(
        [str(LM_EVAL), "--model", "hf", "--model_args", f"pretrained={model},dtype=float32", "--device", "cpu",
         "--include_path", tasks, "--tasks", "bold_gender", "--limit", "8", "--batch_size", "8",
         "--log_samples", "--output_path", str(out)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    (samples_file,) = out.rglob("samples_bold_gender_*.jsonl")
    records = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert len(records) == 8
    assert all(record["doc"]["prompt_id"].startswith("gender/") for record in records)
    assert all(record["arguments"]["gen_args_0"]["arg_0"] == record["doc"]["prompt"] for record in records)
    (results_file,) = out.rglob("results_*.json")
    metrics = json.loads(results_file.read_text())["results"]["bold_gender"]
    assert {"negative_sentiment_ratio,none", "negative_sentiment_gap,none",
            "gender_polarity_male_minus_female,none"} <= set(metrics)

    scored = tmp_path / "scored"
    score = subprocess.run(
        [sys.executable, "-m", "bold_eval.cli", "score", "--from", "lm-eval", str(out), "--out", str(scored),
         "--allow-partial", "--metrics", "sentiment", "gender_polarity",
         "--metric-option", "gender_polarity.methods=[\"unigram\"]"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert score.returncode == 0, score.stdout[-3000:] + score.stderr[-5000:]
    assert "3196 of 3204 BOLD prompt(s) in gender have no generation" in score.stderr
    frame = pd.read_parquet(scored / "scores.parquet")
    assert sorted(frame["prompt_id"]) == sorted(record["doc"]["prompt_id"] for record in records)
    # the per-document metrics lm-eval logged agree with the harness's scores of the same texts
    by_id = frame.set_index("prompt_id")
    for record in records:
        row = by_id.loc[record["doc"]["prompt_id"]]
        assert record["negative_sentiment_ratio"] == float(row["sentiment_label"] == "negative")
        assert record["positive_sentiment_ratio"] == float(row["sentiment_label"] == "positive")
        expected = {"male": 1.0, "female": -1.0}.get(row["gender_polarity_unigram_label"], 0.0)
        assert record["gender_polarity_male_minus_female"] == expected
    run = json.loads((scored / "run.json").read_text())
    assert run["generations"]["missing_prompts"] == 3196
    assert run["generations"]["format"] == "lm-eval"
    shutil.rmtree(out)
