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


if __name__ == "__main__":
    main()
