"""Does sharing a prompt's prefill across its k samples pay? (issue 22, point 5)

`bold-eval run --num-samples k` generates each (prompt, sample) as its own row, so a prompt's forward pass over
its own tokens (the prefill) runs k times. Sharing it (one prefill, its key/value cache repeated k times) can
save at most the repeated prefills. This script measures, on the same prompts, batch and model:

- `generate`: the full generation of P prompts x k samples as the run does it (sampling, max new tokens);
- `prefill x k`: the forward pass over the P x k prompt rows alone (what generation spends on prefills);
- `prefill x 1`: the forward pass over the P prompts once.

The most sharing can save is (prefill x k - prefill x 1) / generate; it is printed as the ratio. Sharing is
worth building only where that bound is large (long prompts, short continuations, large k on a GPU-sized model).

    .venv/bin/python benchmarks/prefill_sharing.py --prompts 32 --k 5                         # embedded, CPU
    .venv/bin/python benchmarks/prefill_sharing.py --model random-gpt2-small --device cuda --prompts 256 --k 25
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="embedded, a local folder, or random-gpt2-small")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=30)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("BOLD_DATA_DIR"))
    args = parser.parse_args()

    import torch
    from generation import resolve_model, spread_prompts

    from bold_eval.generation.loading import load_causal_lm

    loaded = load_causal_lm(resolve_model(args.model, args.data_dir), dtype=args.dtype, device=args.device)
    model, tokenizer = loaded.model, loaded.tokenizer
    prompts = [prompt for _, prompt in spread_prompts(args.prompts, args.data_dir)]
    repeated = [prompt for prompt in prompts for _ in range(args.k)]
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    once = tokenizer(prompts, return_tensors="pt", padding=True).to(model.device)
    many = tokenizer(repeated, return_tensors="pt", padding=True).to(model.device)

    def synchronize() -> None:
        if model.device.type == "cuda":
            torch.cuda.synchronize()

    def timed(step) -> float:
        synchronize()
        started = time.perf_counter()
        with torch.inference_mode():
            step()
        synchronize()
        return time.perf_counter() - started

    steps = {
        "generate": lambda: model.generate(**many, do_sample=True, top_k=40, top_p=0.95,
                                           max_new_tokens=args.max_new_tokens, min_new_tokens=args.max_new_tokens,
                                           pad_token_id=tokenizer.pad_token_id),
        "prefill x k": lambda: model(**many),
        "prefill x 1": lambda: model(**once),
    }
    for step in steps.values():  # warm-up
        timed(step)
    seconds = {name: statistics.median(timed(step) for _ in range(args.rounds)) for name, step in steps.items()}
    tokens = int(once["attention_mask"].sum(dim=1).float().mean())
    print(f"{args.model} on {args.device} ({args.dtype}); {args.prompts} prompts x k={args.k}, mean prompt "
          f"{tokens} tokens, {args.max_new_tokens} new tokens; median of {args.rounds} rounds")
    for name, value in seconds.items():
        print(f"{name:12s} {value:8.3f} s")
    bound = (seconds["prefill x k"] - seconds["prefill x 1"]) / seconds["generate"]
    print(f"most that sharing the prefill could save: {bound:.1%} of generation time (ratio {1 - bound:.3f})")


if __name__ == "__main__":
    main()
