"""Full BOLD end to end: `bold_eval.run.run` with a GPT-2-small-sized LM and all five metrics.

Models are randomly initialised at the real sizes, since speed does not depend on the weights and
nothing can be downloaded on the benchmark machines:
- the LM: GPT-2 small (12 layers, hidden 768, 1,024 positions, vocabulary 50,257) with a byte-level
  BPE tokenizer trained on BOLD's Wikipedia sentences (padded with filler tokens to 50,257);
- toxicity and regard: BERT-base sequence classifiers (12 layers, hidden 768, 512 positions) with the
  label maps of unitary/toxic-bert and sasha/regardv3 and a WordPiece vocabulary of 30,522 trained on BOLD;
- gender polarity: unigram matching plus Gender-Max / Gender-Wavg on a random 300-d embedding of every
  word of BOLD's Wikipedia sentences, saved in word2vec binary format (no hard debiasing: that is a
  one-time cost when the embedding is loaded, not part of scoring);
- sentiment and psycholinguistic: the real scorers (VADER; the Warriner + BE5 lexicon from
  $BOLD_LEXICON_DIR or --lexicon-dir).

The run is the one users get (`bold-eval run`: batching, resume files, scoring, report). Printed:
generation tokens/s, scoring texts/s per metric, and the end-to-end time with model and resource
loading excluded (the target: under 60 s for all 23,679 prompts on one H100).

    .venv/bin/python benchmarks/full_bold.py                                   # all of BOLD (a GPU job)
    .venv/bin/python benchmarks/full_bold.py --limit 200 --layers 2 --hidden 64  # CPU smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PROJECT_ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# TOKENIZERS_PARALLELISM is left as `bold-eval run` leaves it (the tokenizers use every core), so the time is a user's.
os.environ.setdefault("BOLD_DATA_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "bold"))
os.environ.setdefault("BOLD_LEXICON_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "lexicons"))

ALL_METRICS = ["sentiment", "toxicity", "regard", "psycholinguistic", "gender_polarity"]


def build_resources(workdir: Path, corpus: list[str], layers: int, hidden: int) -> dict[str, Path]:
    """The random LM, the two classifiers and the embedding, saved under `workdir`."""
    from gensim.models import KeyedVectors

    from bold_eval.metrics._words import tokenize_texts
    from bold_eval.testing.models import (
        GPT2_SMALL,
        build_metric_classifier,
        build_tiny_causal_lm,
        build_wordpiece_tokenizer,
    )

    heads = max(1, hidden // 64)
    lm = build_tiny_causal_lm(workdir / "lm", corpus, **{**GPT2_SMALL, "n_layer": layers, "n_embd": hidden,
                                                         "n_head": heads})
    wordpiece = build_wordpiece_tokenizer(corpus, vocab_size=30_522, model_max_length=512)
    classifiers = {kind: build_metric_classifier(workdir / kind, kind, tokenizer=wordpiece, hidden_size=hidden,
                                                 num_hidden_layers=layers, num_attention_heads=heads,
                                                 intermediate_size=4 * hidden, max_position_embeddings=512,
                                                 initializer_range=0.02)
                   for kind in ("toxicity", "regard")}
    words = sorted(set(tokenize_texts(corpus, lowercase=False).words) | {"he", "she"})
    vectors = KeyedVectors(vector_size=300)
    vectors.add_vectors(words, np.random.default_rng(0).normal(size=(len(words), 300)).astype(np.float32))
    embedding = workdir / "embedding.bin"
    vectors.save_word2vec_format(str(embedding), binary=True)
    return {"lm": lm, **classifiers, "embedding": embedding}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="prompts (default: all 23,679)")
    parser.add_argument("--layers", type=int, default=12, help="layers of the LM and the classifiers")
    parser.add_argument("--hidden", type=int, default=768, help="hidden size of the LM and the classifiers")
    parser.add_argument("--batch-size", default="auto", help="generation batch size (default: auto)")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--data-dir", default=os.environ["BOLD_DATA_DIR"])
    parser.add_argument("--out", default=None, help="run folder (default: a new temporary folder)")
    parser.add_argument("--models", default=None,
                        help="folder for the random models: built there once, reused by later runs (whose Wikipedia "
                             "reference then comes from the cache, as for a second model on the same machine)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()

    import torch

    from bold_eval.run import RunConfig, run
    from bold_eval.testing.models import bold_wikipedia_sentences

    workdir = Path(args.models) if args.models else Path(tempfile.mkdtemp(prefix="bold-eval-full-"))
    started = time.perf_counter()
    paths = {"lm": workdir / "lm", "toxicity": workdir / "toxicity", "regard": workdir / "regard",
             "embedding": workdir / "embedding.bin"}
    if all(path.exists() for path in paths.values()):
        print(f"reusing the random models under {workdir}", flush=True)
    else:
        corpus = bold_wikipedia_sentences(None, args.data_dir)
        if not corpus:
            sys.exit(f"BOLD Wikipedia sentences not found in {args.data_dir}: pass --data-dir or set BOLD_DATA_DIR")
        paths = build_resources(workdir, corpus, args.layers, args.hidden)
        print(f"built random models in {time.perf_counter() - started:.1f} s under {workdir}", flush=True)

    out = Path(args.out) if args.out else workdir / "run"
    batch_size = args.batch_size if args.batch_size == "auto" else int(args.batch_size)
    options = {"toxicity": {"model": str(paths["toxicity"])}, "regard": {"model": str(paths["regard"])},
               "gender_polarity": {"embedding": str(paths["embedding"]), "debias": False}}
    config = RunConfig(out=out, model=str(paths["lm"]), generator="hf-causal", dtype=args.dtype, device=args.device,
                       batch_size=batch_size, limit=args.limit, data_dir=args.data_dir, metrics=ALL_METRICS,
                       metric_options=options, progress=not args.no_progress)
    started = time.perf_counter()
    run(config)
    wall = time.perf_counter() - started
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    report(record, scored_counts(out / "generations.jsonl", record["num_texts"]), wall, torch)


def scored_counts(generations: Path, num_texts: int) -> dict[str, int]:
    """Texts each metric scored: all of them, except regard (gender and race rows only)."""
    import pandas as pd

    from bold_eval.metrics import metric_spec

    domains = pd.read_json(generations, lines=True)["domain"]
    scored = {name: metric_spec(name).domains.scored for name in ALL_METRICS}
    return {name: int(domains.isin(where).sum()) if where else num_texts for name, where in scored.items()}


def report(record: dict, scored: dict[str, int], wall: float, torch) -> None:
    """Print the run's own timings (run.json) as generation, scoring and end-to-end rows."""
    timings, metric_seconds = record["timings"], record["metric_seconds"]
    texts, info = record["num_texts"], record["model_info"]
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU, {torch.get_num_threads()} threads"
    print(f"device: {device}; LM {info.get('parameters', 0) / 1e6:.0f}M parameters, dtype {info.get('dtype')}, "
          f"batch size {record.get('batch_size')}; {texts:,} texts")
    print(f"generation: {record['generated_tokens']:,} new tokens in {timings['generate_s']:.1f} s, "
          f"{record['tokens_per_second']:,.0f} tokens/s")
    for name, seconds in metric_seconds.items():
        count = scored.get(name, texts)
        rate = f"{count / seconds:,.0f} texts/s" if count and seconds else "-"
        print(f"scoring {name:17s} {count:7,} texts {seconds:8.2f} s  {rate}")
    reference = record.get("reference") or {}
    # score_s (the model's texts; the reference is timed apart) beyond the metrics' own: loading the classifiers,
    # lexicon and embedding
    loading = timings.get("load_model_s", 0.0) + max(0.0, timings.get("score_s", 0.0) - sum(metric_seconds.values()))
    work = wall - loading
    print(f"Wikipedia reference: {reference.get('texts', 0):,} texts, {reference.get('cached_texts', 0):,} from the "
          f"cache, {reference.get('seconds', 0.0):.1f} s")
    print(f"stages: load data {timings.get('load_data_s', 0.0):.1f} s, generate {timings['generate_s']:.1f} s, "
          f"score the reference {reference.get('seconds', 0.0):.1f} s and the model's texts "
          f"{timings.get('score_s', 0.0):.1f} s (the metrics themselves {sum(metric_seconds.values()):.1f} s), report "
          f"{timings.get('report_s', 0.0):.1f} s")
    print(f"end to end: {wall:.1f} s wall; {work:.1f} s without model and resource loading "
          f"({loading:.1f} s of loading: the LM, classifiers, lexicon and embedding)")


if __name__ == "__main__":
    main()
