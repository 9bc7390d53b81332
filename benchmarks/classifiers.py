"""Texts per second of the toxicity/regard classifier inference against the pipeline baseline.

Baseline: what Hugging Face's toxicity and regard measurements run,
`transformers.pipeline("text-classification", top_k=None, truncation=True)` called on the list
with its default batch size. Ours: `bold_eval.metrics.classifier.SequenceClassifier` (dedupe, one
tokenizer call, length-sorted dynamically padded batches). Same model (a random BERT-base-sized
classifier with unitary/toxic-bert's six multi-label outputs and a WordPiece vocabulary trained
on BOLD), same BOLD Wikipedia sentences, same process. Prints throughput, ratios and the largest
difference between the two outputs.

    .venv/bin/python benchmarks/classifiers.py                 # 2,000 texts, fp32 + bf16 on CPU
    .venv/bin/python benchmarks/classifiers.py --texts 200     # quick look
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

PROJECT_ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("BOLD_DATA_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "bold"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

from bold_eval.metrics.classifier import SequenceClassifier, load_sequence_classifier  # noqa: E402
from bold_eval.testing.models import (  # noqa: E402
    TOXIC_BERT_LABELS,
    bold_wikipedia_sentences,
    build_classifier,
    build_wordpiece_tokenizer,
)


def cpu_supports_bf16() -> bool:
    """avx512_bf16 or AMX: the CPU has bf16 dot products, so bf16 autocast pays off."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def build_model(directory: Path, corpus: list[str]) -> Path:
    if (directory / "config.json").is_file():
        return directory
    tokenizer = build_wordpiece_tokenizer(corpus, vocab_size=30522, model_max_length=512)
    return build_classifier(
        directory, TOXIC_BERT_LABELS, "multi_label_classification", tokenizer=tokenizer,
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
        max_position_embeddings=512, initializer_range=0.02,
    )


def run_pipeline(directory: Path, texts: list[str], device: str) -> tuple[float, np.ndarray]:
    from transformers import pipeline

    baseline = pipeline("text-classification", model=str(directory), top_k=None, truncation=True, device=device)
    baseline(texts[:4])  # warm-up outside the timing, as for ours
    start = time.perf_counter()
    outputs = baseline(texts)
    seconds = time.perf_counter() - start
    labels = [baseline.model.config.id2label[i] for i in range(baseline.model.config.num_labels)]
    scores = np.array([[{item["label"]: item["score"] for item in row}[label] for label in labels] for row in outputs])
    return seconds, scores


def run_ours(classifier: SequenceClassifier, texts: list[str]) -> tuple[float, np.ndarray]:
    classifier(texts[:4])
    start = time.perf_counter()
    scores = classifier(texts, progress=False)
    return time.perf_counter() - start, scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=2000, help="number of BOLD Wikipedia sentences")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="texts per batch (default: the library's, 16 on CPU and 64 on GPU)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--model-dir", default=None, help="reuse/keep the random BERT-base model here")
    parser.add_argument("--no-bf16", action="store_true")
    parser.add_argument("--devices", default="auto", help="comma list (cpu,cuda); auto: cpu, and cuda if present")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    corpus = bold_wikipedia_sentences()
    if not corpus:
        print("BOLD Wikipedia sentences not found: set BOLD_DATA_DIR", file=sys.stderr)
        return 1
    texts = random.Random(0).sample(corpus, min(args.texts, len(corpus)))
    with tempfile.TemporaryDirectory() as scratch:
        directory = build_model(Path(args.model_dir or Path(scratch) / "bert-base-toxic"), corpus)
        print(f"{len(texts)} BOLD Wikipedia sentences ({len(set(texts))} distinct), random BERT-base "
              f"(12 layers, hidden 768) with toxic-bert's 6 labels; torch {torch.__version__}, "
              f"{torch.get_num_threads()} threads, batch size {args.batch_size or 'default (16 CPU, 64 GPU)'}")
        rows = []
        devices = (["cpu"] + (["cuda"] if torch.cuda.is_available() else []) if args.devices == "auto"
                   else args.devices.split(","))
        for device in devices:
            base_seconds, base_scores = run_pipeline(directory, texts, device)
            rows.append((f"{device} pipeline (baseline, batch 1)", base_seconds, 0.0, 1.0))
            dtypes = ["float32"]
            if device == "cpu" and cpu_supports_bf16() and not args.no_bf16:
                dtypes.append("bfloat16")
            if device == "cuda":
                dtypes.append(None)  # default GPU autocast (bf16, or fp16 without bf16)
            for dtype in dtypes:
                classifier = load_sequence_classifier(
                    str(directory), default="", env_var="BOLD_BENCHMARK_UNUSED", resource="benchmark model",
                    device=device, dtype=dtype, batch_size=args.batch_size,
                )
                seconds, scores = run_ours(classifier, texts)
                diff = float(np.abs(scores - base_scores).max())
                rows.append((f"{device} bold_eval {classifier.dtype}", seconds, diff, base_seconds / seconds))
                del classifier
        print(f"{'run':40s} {'texts/s':>9s} {'seconds':>8s} {'speed-up':>9s} {'max |diff|':>11s}")
        for name, seconds, diff, ratio in rows:
            print(f"{name:40s} {len(texts) / seconds:9.1f} {seconds:8.2f} {ratio:8.2f}x {diff:11.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
