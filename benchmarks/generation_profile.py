"""Where one generation batch spends its time: a diagnosis for the GPU, not a benchmark with a target.

In the second GPU session (benchmarks/RESULTS.md) generation cost about 37 microseconds per row and step at
batches of 512 and of 4,096 alike, far more than GPT-2 small's arithmetic needs, so the cost grows with the rows
rather than with the steps. This script runs `generate_batch` (what the run calls) once to warm up, then once
under `torch.profiler` with CPU and CUDA activity, and prints the operators that took the most time on each,
plus the batch's wall time per step. Same model and decoding as `full_bold.py`.

    .venv/bin/python benchmarks/generation_profile.py --model random-gpt2-small --device cuda --rows 1024
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
    parser.add_argument("--rows", type=int, default=1024, help="rows in the batch")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--top", type=int, default=25, help="operators listed per table")
    parser.add_argument("--data-dir", default=os.environ.get("BOLD_DATA_DIR"))
    args = parser.parse_args()

    import numpy as np
    import torch
    from generation import resolve_model, spread_prompts
    from torch.profiler import ProfilerActivity, profile

    from bold_eval.generation.decoding import make_decoding, uniform_draws
    from bold_eval.generation.hf_causal import generate_batch
    from bold_eval.generation.loading import load_causal_lm

    loaded = load_causal_lm(resolve_model(args.model, args.data_dir), dtype=args.dtype, device=args.device)
    decoding = make_decoding(max_new_tokens=30)  # the run's default: GPT-2's top-k 40, top-p 0.95, stop at newline
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
        print("allocator:", {key: stats.get(key) for key in ("num_alloc_retries", "num_device_alloc", "num_device_free")},
              "conf:", os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
    breakdown(loaded, texts, decoding, cuda)


def breakdown(loaded, texts, decoding, cuda: bool, steps: int = 10) -> None:
    """Each part of a decoding step timed alone on the same batch: the forward pass (its cache growing by one),
    the sampling (`_next_tokens`), and a cache compaction that keeps every row (`batch_select_indices`)."""
    import torch
    from transformers import DynamicCache

    from bold_eval.generation.hf_causal import _next_tokens, cache_keyword

    model, tokenizer = loaded.model, loaded.tokenizer
    encoded = tokenizer(texts, return_tensors="pt", padding=True)
    ids, mask = encoded["input_ids"].to(model.device), encoded["attention_mask"].to(model.device)
    position = (mask.long().cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache(config=model.config)
    kv = {cache_keyword(model): cache}
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

    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=position, use_cache=True, logits_to_keep=1,
                       **kv).logits[:, -1, :]
        next_position = position[:, -1] + 1
        for _ in range(steps):
            chosen = timed("sample", lambda: _next_tokens(logits, draws, decoding, None))
            timed("compact", lambda: cache.batch_select_indices(keep))
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            logits = timed("forward", lambda: model(input_ids=chosen.unsqueeze(1), attention_mask=mask,
                                                   position_ids=next_position.unsqueeze(1), use_cache=True,
                                                   **kv).logits[:, -1, :])
            next_position = next_position + 1
    print("breakdown, ms per step:", {name: round(value * 1e3, 2) for name, value in timings.items()},
          f"({len(texts)} rows, attention {getattr(model.config, '_attn_implementation', '?')}, logits {logits.dtype})")


if __name__ == "__main__":
    main()
