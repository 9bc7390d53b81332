"""Texts/s of BERT's Gibbs sampler (appendix A.2.1) vs a straightforward loop, in the same run.

Model: a randomly initialised BERT-base-sized `BertForMaskedLM` (`BertConfig()` defaults: 12 layers,
hidden 768, vocabulary 30,522) with a WordPiece tokenizer trained on BOLD Wikipedia text; the
paper's settings (15 new tokens, temperature 0.7, burn-in 200, max iter 500, top-k 100); BOLD
prompts spread over all domains. Random weights cost the same as trained ones: the work is
`max_iter` forward passes per batch whatever the model says.

Rows, per device: the straightforward way ([38]'s loop: one prompt at a time, LM head on every
position), then batching alone, the chosen-position LM head alone, and both (what `GibbsGenerator`
does). Batched rows must give the same texts with either head (float32). `--max-iter` below 500
shortens the run (burn-in kept at 40% of it); since every iteration costs the same, texts/s at the
paper's 500 iterations is also printed, scaled by max_iter / 500.

    .venv/bin/python benchmarks/gibbs.py --prompts 64 --batch-size 64 --naive-prompts 4
    .venv/bin/python benchmarks/gibbs.py --prompts 8 --naive-prompts 2 --max-iter 10 --hidden 64 --layers 2  # smoke
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PAPER_MAX_ITER = 500


def spread_prompts(count: int, data_dir: str | None) -> list[tuple[str, str]]:
    """`count` (prompt_id, prompt) pairs spread evenly over BOLD's 23,679 prompts (all domains)."""
    from bold_eval.data.bold import load_bold

    frame = load_bold("all", data_dir=data_dir).to_pandas()
    step = max(1, len(frame) // count)
    picked = frame.iloc[::step].head(count)
    return list(zip(picked["prompt_id"], picked["prompt"], strict=True))


def build_model(hidden: int | None, layers: int | None, data_dir: str | None, seed: int):
    """BERT-base by default (BertConfig defaults); `hidden`/`layers` shrink it for smoke runs."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from bold_eval.testing.models import bold_wikipedia_sentences, build_wordpiece_tokenizer

    sentences = bold_wikipedia_sentences(20_000, data_dir)
    if not sentences:
        raise SystemExit("BOLD Wikipedia sentences not found: pass --data-dir or set BOLD_DATA_DIR")
    tokenizer = build_wordpiece_tokenizer(sentences, vocab_size=30_522)
    overrides = {}
    if hidden is not None:
        overrides.update(hidden_size=hidden, num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden)
    if layers is not None:
        overrides["num_hidden_layers"] = layers
    config = BertConfig(pad_token_id=tokenizer.pad_token_id, **overrides)
    if len(tokenizer) > config.vocab_size:
        raise SystemExit(f"tokenizer has {len(tokenizer)} tokens, more than BERT's {config.vocab_size}")
    torch.manual_seed(seed)
    return BertForMaskedLM(config).eval(), tokenizer


def timed(generator, items) -> tuple[float, list[str]]:
    import torch

    out: dict[tuple[str, int], str] = {}
    started = time.perf_counter()
    generator.generate(items, on_batch=lambda batch, results: out.update(
        {(i.prompt_id, i.sample): r.continuation for i, r in zip(batch, results, strict=True)}), progress=False)
    if generator.model.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started, [out[(item.prompt_id, item.sample)] for item in items]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=64, help="prompts for the batched rows")
    parser.add_argument("--batch-size", type=int, default=64, help="batch of the batched rows on CPU")
    parser.add_argument("--gpu-prompts", type=int, default=512)
    parser.add_argument("--gpu-batch-size", type=int, default=512)
    parser.add_argument("--naive-prompts", type=int, default=4, help="prompts for the one-at-a-time rows")
    parser.add_argument("--max-iter", type=int, default=PAPER_MAX_ITER)
    parser.add_argument("--hidden", type=int, default=None, help="smaller than BERT-base, for smoke runs")
    parser.add_argument("--layers", type=int, default=None, help="smaller than BERT-base, for smoke runs")
    parser.add_argument("--devices", default="auto", help="comma-separated (cpu,cuda); auto: cpu, and cuda if present")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=os.environ.get("BOLD_DATA_DIR"))
    args = parser.parse_args()

    import torch

    from bold_eval.generation.base import WorkItem
    from bold_eval.generation.gibbs import DEFAULT_BURN_IN, GibbsGenerator

    burn_in = round(DEFAULT_BURN_IN * args.max_iter / PAPER_MAX_ITER)
    model, tokenizer = build_model(args.hidden, args.layers, args.data_dir, args.seed)
    devices = args.devices.split(",") if args.devices != "auto" else ["cpu",
                                                                      *(["cuda"] if torch.cuda.is_available() else [])]
    size = f"{sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters"
    print(f"BertForMaskedLM {size}, vocabulary {model.config.vocab_size} ({len(tokenizer)} trained on BOLD), float32, "
          f"torch threads {torch.get_num_threads()}; 15 new tokens, T 0.7, burn-in {burn_in}, max iter "
          f"{args.max_iter}, top-k 100")
    print(f"{'device':6s} {'method':44s} {'batch':>5s} {'texts':>5s} {'seconds':>8s} {'texts/s':>9s} "
          f"{'t/s @500 it':>11s} {'vs naive':>8s}")
    for device in devices:
        model.to(device)
        gpu = device != "cpu"
        count, batch = (args.gpu_prompts, args.gpu_batch_size) if gpu else (args.prompts, args.batch_size)
        prompts = spread_prompts(max(count, args.naive_prompts), args.data_dir)
        items = [WorkItem(prompt_id, 0, prompt) for prompt_id, prompt in prompts]
        naive_items = items[: args.naive_prompts]
        items = items[:count]

        def make(batch_size: int, chosen: bool) -> GibbsGenerator:
            generator = GibbsGenerator(model, tokenizer, seed=args.seed, burn_in=burn_in, max_iter=args.max_iter,
                                       batch_size=batch_size)
            generator.head_on_chosen = chosen  # skip the one-time check: each row fixes its head
            return generator

        warm = GibbsGenerator(model, tokenizer, max_iter=3, burn_in=1, batch_size=batch)
        timed(warm, items[:batch])  # first-call allocations and kernel selection
        rows = [("one at a time, LM head on all positions", 1, False, naive_items),
                ("one at a time, LM head on chosen position", 1, True, naive_items),
                ("batched, LM head on all positions", batch, False, items),
                ("batched, LM head on chosen position (ours)", batch, True, items)]
        naive_rate = None
        texts = {}
        for name, batch_size, chosen, work in rows:
            seconds, texts[name] = timed(make(batch_size, chosen), work)
            rate = len(work) / seconds
            naive_rate = naive_rate or rate
            print(f"{device:6s} {name:44s} {batch_size:5d} {len(work):5d} {seconds:8.1f} {rate:9.3f} "
                  f"{rate * args.max_iter / PAPER_MAX_ITER:11.4f} {rate / naive_rate:7.1f}x", flush=True)
        same = texts[rows[2][0]] == texts[rows[3][0]]
        print(f"{device:6s} batched texts identical with either LM head: {same}")


if __name__ == "__main__":
    main()
