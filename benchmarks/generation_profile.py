"""Where generation spends its time on a GPU: a diagnosis, not a benchmark with a target.

Two modes, same model and decoding as `full_bold.py` (GPT-2's top-k 40, top-p 0.95, 30 new tokens, stop at a
line break):
- `--prompts 0` (default): `generate_batch` (what the run calls) on one batch of `--rows`, once to warm up, once
  more, then under `torch.profiler` with CPU and CUDA activity; prints the operators that took the most time, the
  allocator's counters, and each part of a decoding step timed alone (forward, sampling, cache compaction).
- `--prompts N`: `generate_items` over N prompts spread over BOLD in batches of `--rows`, timed from a cold
  process: each batch brings new shapes, as a run does. Prints microseconds per row and step.

Switches put back the simpler alternative of each choice, one at a time, to measure each in the same run:
`--cudnn-attention` (let SDPA pick cuDNN's attention), `--dynamic-cache` (transformers' DynamicCache, grown by
concatenation), `--compact-at 0` (drop each finished row at once). `--build-model DIR` only builds the random
model there, so that several processes time the same weights.

    .venv/bin/python benchmarks/generation_profile.py --model random-gpt2-small --device cuda --rows 4096
    .venv/bin/python benchmarks/generation_profile.py --device cuda --prompts 12288 --rows 4096 --cudnn-attention
    .venv/bin/python benchmarks/generation_profile.py --rows 32 --device cpu --top 8                    # CPU check
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="random-gpt2-small", help="embedded, a local folder, or random-gpt2-small")
    parser.add_argument("--rows", type=int, default=1024, help="rows in a batch")
    parser.add_argument("--prompts", type=int, default=0, help="0: profile one batch; N: time N prompts, cold")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--top", type=int, default=25, help="operators listed per table")
    parser.add_argument("--data-dir", default=os.environ.get("BOLD_DATA_DIR"))
    parser.add_argument("--cudnn-attention", action="store_true", help="let SDPA use cuDNN's attention")
    parser.add_argument("--dynamic-cache", action="store_true", help="transformers' DynamicCache (torch.cat)")
    parser.add_argument("--compact-at", type=float, default=None, help="hf_causal.COMPACT_AT (0: at once)")
    parser.add_argument("--build-model", metavar="DIR", help="only build random-gpt2-small in DIR and exit")
    args = parser.parse_args()

    from generation import resolve_model

    if args.build_model:
        from bold_eval.testing.models import GPT2_SMALL, bold_wikipedia_sentences, build_tiny_causal_lm

        print(build_tiny_causal_lm(Path(args.build_model), bold_wikipedia_sentences(None, args.data_dir), **GPT2_SMALL))
        return
    switch(args)
    from bold_eval.generation.loading import load_causal_lm

    loaded = load_causal_lm(resolve_model(args.model, args.data_dir), dtype=args.dtype, device=args.device)
    variant = " ".join(flag for flag, on in (("--cudnn-attention", args.cudnn_attention),
                                               ("--dynamic-cache", args.dynamic_cache),
                                               (f"--compact-at {args.compact_at}", args.compact_at is not None)) if on)
    print(f"variant: {variant or 'as shipped'}", flush=True)
    if args.prompts:
        timed_run(loaded, args)
    else:
        profiled_batch(loaded, args)


def switch(args: argparse.Namespace) -> None:
    """Put back the replaced pieces the flags name."""
    from bold_eval.core import devices
    from bold_eval.generation import hf_causal

    devices.CUDNN_ATTENTION = args.cudnn_attention
    if args.dynamic_cache:
        from transformers import DynamicCache

        hf_causal.kv_cache = lambda model, capacity: DynamicCache(config=model.config)
    if args.compact_at is not None:
        hf_causal.COMPACT_AT = args.compact_at


def _decoding():
    from bold_eval.generation.decoding import make_decoding

    return make_decoding(max_new_tokens=30)  # the run's default: GPT-2's top-k 40, top-p 0.95, stop at newline


def timed_run(loaded, args: argparse.Namespace) -> None:
    """`generate_items` over `args.prompts` prompts in batches of `args.rows`: the run's own loop, cold."""
    import torch
    from generation import spread_prompts

    from bold_eval.generation.base import WorkItem
    from bold_eval.generation.hf_causal import generate_items

    items = [WorkItem(prompt_id, 0, prompt) for prompt_id, prompt in spread_prompts(args.prompts, args.data_dir)]
    steps = []
    started = time.perf_counter()
    generate_items(loaded.model, loaded.tokenizer, items, _decoding(), seed=0, batch_size=args.rows,
                   on_batch=lambda batch, results: steps.extend(result.num_new_tokens for result in results),
                   progress=False)
    if torch.cuda.is_available() and args.device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    print(f"timed: {len(items)} prompts in batches of {args.rows}: {seconds:.2f} s, {sum(steps):,} row-steps, "
          f"{seconds / max(1, sum(steps)) * 1e6:.1f} us per row-step ({loaded.model.dtype})")


def profiled_batch(loaded, args: argparse.Namespace) -> None:
    """One batch: warm-up, again, then under torch.profiler; then `breakdown`."""
    import numpy as np
    import torch
    from generation import spread_prompts
    from torch.profiler import ProfilerActivity, profile

    from bold_eval.generation.decoding import uniform_draws
    from bold_eval.generation.hf_causal import generate_batch

    decoding = _decoding()
    prompts = spread_prompts(args.rows, args.data_dir)
    texts = [prompt for _, prompt in prompts]
    draws = np.stack([uniform_draws(0, prompt_id, 0, decoding.max_new_tokens) for prompt_id, _ in prompts])
    cuda = torch.cuda.is_available() and args.device.startswith("cuda")

    def batch() -> float:
        started = time.perf_counter()
        results = generate_batch(loaded.model, loaded.tokenizer, texts, draws, decoding)
        if cuda:
            torch.cuda.synchronize()
        steps = max(result.num_new_tokens for result in results)
        return (time.perf_counter() - started) / max(1, steps)

    print(f"warm-up: {batch() * 1e3:.1f} ms per step ({len(texts)} rows, {loaded.model.dtype})", flush=True)
    print(f"again:   {batch() * 1e3:.1f} ms per step", flush=True)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as profiled:
        per_step = batch()
    print(f"profiled: {per_step * 1e3:.1f} ms per step")
    averages = profiled.key_averages()
    print(averages.table(sort_by="self_cpu_time_total", row_limit=args.top))
    if cuda:
        print(averages.table(sort_by="self_cuda_time_total", row_limit=args.top))
        stats = torch.cuda.memory_stats()
        print("allocator:", {key: stats.get(key) for key in ("num_alloc_retries", "num_device_alloc",
                                                             "num_device_free")},
              "conf:", os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
    breakdown(loaded, texts, decoding, cuda)


def breakdown(loaded, texts, decoding, cuda: bool, steps: int = 10) -> None:
    """Each part of a decoding step timed alone on the same batch: the forward pass (its cache growing by one),
    the sampling (`_next_tokens`), and a cache compaction that keeps every row (`batch_select_indices`)."""
    import torch

    from bold_eval.core.devices import attention_kernels
    from bold_eval.generation import hf_causal

    model, tokenizer = loaded.model, loaded.tokenizer
    encoded = tokenizer(texts, return_tensors="pt", padding=True)
    ids, mask = encoded["input_ids"].to(model.device), encoded["attention_mask"].to(model.device)
    position = (mask.long().cumsum(-1) - 1).clamp(min=0)
    cache = hf_causal.kv_cache(model, ids.shape[1] + steps)
    kv = {hf_causal.cache_keyword(model): cache}
    draws = torch.rand(len(texts), device=model.device)
    keep = torch.arange(len(texts), device=model.device)
    timings: dict[str, float] = {"forward": 0.0, "sample": 0.0, "compact": 0.0}

    def timed(name, call):
        if cuda:
            torch.cuda.synchronize()
        started = time.perf_counter()
        result = call()
        if cuda:
            torch.cuda.synchronize()
        timings[name] += (time.perf_counter() - started) / steps
        return result

    def forward(chosen, mask, position):
        return model(input_ids=chosen.unsqueeze(1), attention_mask=mask, position_ids=position.unsqueeze(1),
                     use_cache=True, **kv).logits[:, -1, :]

    with torch.inference_mode(), attention_kernels(model.device):
        logits = model(input_ids=ids, attention_mask=mask, position_ids=position, use_cache=True, logits_to_keep=1,
                       **kv).logits[:, -1, :]
        next_position = position[:, -1] + 1
        for _ in range(steps):
            chosen = timed("sample", lambda logits=logits: hf_causal._next_tokens(logits, draws, decoding, None))
            timed("compact", lambda: cache.batch_select_indices(keep))
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            logits = timed("forward", lambda c=chosen, m=mask, p=next_position: forward(c, m, p))
            next_position = next_position + 1
    print("breakdown, ms per step:", {name: round(value * 1e3, 2) for name, value in timings.items()},
          f"({len(texts)} rows, attention {getattr(model.config, '_attn_implementation', '?')}, logits {logits.dtype})")


if __name__ == "__main__":
    main()
