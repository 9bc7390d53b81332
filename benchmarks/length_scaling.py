"""Time per text against text length (1k to 1M characters) for every metric.

Each metric scores one text made of BOLD Wikipedia sentences joined up to each length; the table
shows the time per text, the cost per 1,000 characters, and that cost relative to the shortest
text ("growth"): about 1 (or below, as fixed costs are spread) for linear time, about 10 per 10x
length for quadratic time. vaderSentiment itself is timed as the baseline for sentiment, up to
--vader-max-chars (it is quadratic: a 1 MB text would take hours).

Resources: sentiment needs nothing; psycholinguistic reads the Warriner lexicon
($BOLD_LEXICON_DIR, default ../shared/data/lexicons); gender polarity runs unigram matching and
Gender-Max/Wavg with a random 300-d embedding of the text's words (the GoogleNews vectors cost
the same per distinct word: one memory-mapped row each); toxicity and regard run tiny random
BERTs from bold_eval.testing.models (2 layers, 32 hidden units, 512 positions). With the real
BERT-base checkpoints the model forward is far costlier (~0.1-0.5 s per 512-token text on a
CPU) but constant in the text length, since every text is truncated to 512 tokens; only the
tokenizer's pass over the whole text grows with the length, and it is the same tokenizer
code, so the growth column is what the real models show too, on top of a larger constant.

    .venv/bin/python benchmarks/length_scaling.py                          # 1k, 10k, 100k, 1M
    .venv/bin/python benchmarks/length_scaling.py --sizes 1000 10000 --repeats 1   # smoke run
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

PROJECT_ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("BOLD_DATA_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "bold"))
os.environ.setdefault("BOLD_LEXICON_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "lexicons"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_times  # noqa: E402

from bold_eval.metrics import PAPER_METRICS  # noqa: E402
from bold_eval.metrics._words import tokenize_texts  # noqa: E402
from bold_eval.testing.models import bold_wikipedia_sentences, build_metric_classifier  # noqa: E402

DEFAULT_SIZES = (1_000, 10_000, 100_000, 1_000_000)


def long_text(sentences: list[str], n_chars: int) -> str:
    """BOLD sentences joined with spaces (repeated if needed), cut to exactly `n_chars` characters."""
    parts, total = [], 0
    while total < n_chars:
        for sentence in sentences:
            parts.append(sentence)
            total += len(sentence) + 1
            if total >= n_chars:
                break
    return " ".join(parts)[:n_chars]


def random_embedding(text: str, dimensions: int = 300):
    """A KeyedVectors with a random vector for every surface word of `text` (plus he/she)."""
    from gensim.models import KeyedVectors

    words = sorted(set(tokenize_texts([text], lowercase=False).words) | {"he", "she"})
    vectors = KeyedVectors(vector_size=dimensions)
    vectors.add_vectors(words, np.random.default_rng(0).normal(size=(len(words), dimensions)).astype(np.float32))
    return vectors


def scorers(names: list[str], longest: str, model_dir: Path) -> dict[str, Callable[[list[str]], object]]:
    """One loaded scorer per metric (loading is outside the timing)."""
    loaded: dict[str, Callable[[list[str]], object]] = {}
    for name in names:
        module = importlib.import_module(f"bold_eval.metrics.{name}")
        if name in ("toxicity", "regard"):
            directory = build_metric_classifier(model_dir / name, name, corpus=bold_wikipedia_sentences(300),
                                                max_position_embeddings=512)
            scorer = module.load_scorer(model=str(directory), batch_size=16)
            loaded[name] = lambda texts, scorer=scorer: scorer(texts, progress=False)
        elif name == "gender_polarity":
            loaded[name] = module.load_scorer(embedding=random_embedding(longest))
        elif name == "sentiment":
            loaded[name] = module.load_scorer(progress=False)
        else:
            loaded[name] = module.load_scorer()
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), help="text lengths in characters")
    parser.add_argument("--metrics", nargs="+", default=list(PAPER_METRICS), choices=PAPER_METRICS)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many passes (1 pass above 100k)")
    parser.add_argument("--vader-max-chars", type=int, default=100_000,
                        help="time vaderSentiment itself up to this length (0: never)")
    parser.add_argument("--data-dir", default=None, help="BOLD folder (default $BOLD_DATA_DIR)")
    args = parser.parse_args(argv)

    sentences = bold_wikipedia_sentences(data_dir=args.data_dir)
    if not sentences:
        parser.error("no BOLD Wikipedia sentences found: pass --data-dir or set BOLD_DATA_DIR")
    sizes = sorted(args.sizes)
    texts = {size: long_text(sentences, size) for size in sizes}
    with tempfile.TemporaryDirectory() as model_dir:
        loaded = scorers(args.metrics, texts[sizes[-1]], Path(model_dir))
        rows: list[tuple[str, int, float]] = []
        if "sentiment" in args.metrics and args.vader_max_chars:
            from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

            analyzer = SentimentIntensityAnalyzer()
            loaded = {"vaderSentiment (baseline)": lambda batch: [analyzer.polarity_scores(t) for t in batch], **loaded}
        for name, score in loaded.items():
            score([texts[sizes[0]]])  # warm-up: lazy imports, lexicon caches
            for size in sizes:
                if name.startswith("vaderSentiment") and size > args.vader_max_chars:
                    continue
                repeats = args.repeats if size <= 100_000 else 1
                start = time.perf_counter()
                (seconds,) = best_times([score], [texts[size]], repeats)
                rows.append((name, size, seconds))
                print(f"  {name} {size:,} characters: {seconds:.4f} s ({time.perf_counter() - start:.2f} s with "
                      "repeats)",
                      file=sys.stderr)

    print("one text per call; seconds = best of the passes; per 1k = seconds per 1,000 characters;")
    print("growth = per-1k cost / per-1k cost of the shortest text (linear: <= ~1, quadratic: ~10 per 10x)")
    print(f"{'metric':28} {'characters':>11} {'seconds':>10} {'ms per 1k':>10} {'growth':>7}")
    shortest: dict[str, float] = {}
    for name, size, seconds in rows:
        per_1k = seconds / size * 1000
        shortest.setdefault(name, per_1k)
        print(f"{name:28} {size:>11,} {seconds:>10.4f} {1000 * per_1k:>10.3f} {per_1k / shortest[name]:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
