"""Does sharing a prompt's prefill across its k samples pay?

`bold-eval run --num-samples k` generates each (prompt, sample) as its own row, so without sharing a prompt's
forward pass over its own tokens (the prefill) runs k times. `generate_batch(share_prefill=True)` (the default
for k > 1) runs each distinct prompt of a batch once and repeats its key/value cache to its k rows. On the same
prompts, batches, model and chat protocol this script times, alternating which goes first:

- `unshared` / `shared`: `generate_items` (what the run calls) on P prompts x k samples without and with sharing,
  and how many of the texts differ (a prefill over fewer rows may round differently; float32 should agree);
- `prefill x k` / `prefill x 1`: the forward pass over the P x k rows' inputs alone, and over the P prompts once;
  (prefill x k - prefill x 1) / unshared is the most sharing could save.

    .venv/bin/python benchmarks/prefill_sharing.py --prompts 32 --k 5                         # embedded, CPU
    .venv/bin/python benchmarks/prefill_sharing.py --prompts 32 --k 5 --chat-template prefill # its chat input
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
    parser.add_argument("--chat-template", default="none", choices=["none", "prefill", "instruct"],
                        help="the chat protocol the inputs are rendered with (bold_eval.generation.chat)")
    parser.add_argument("--batch-size", type=int, default=64, help="rows per batch, as --batch-size of the run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("BOLD_DATA_DIR"))
    args = parser.parse_args()

    import torch
    from generation import resolve_model, spread_prompts

    from bold_eval.generation.base import WorkItem
    from bold_eval.generation.chat import ChatOptions
    from bold_eval.generation.decoding import make_decoding
    from bold_eval.generation.hf_causal import generate_items, model_inputs
    from bold_eval.generation.loading import load_causal_lm

    loaded = load_causal_lm(resolve_model(args.model, args.data_dir), dtype=args.dtype, device=args.device)
    model, tokenizer = loaded.model, loaded.tokenizer
    chat = ChatOptions(chat_template=args.chat_template).resolve(args.chat_template, "benchmark")
    decoding = make_decoding(max_new_tokens=args.max_new_tokens)  # the run's default decoding
    prompts = [prompt for _, prompt in spread_prompts(args.prompts, args.data_dir)]
    items = [WorkItem(f"p{index}", sample, prompt) for index, prompt in enumerate(prompts) for sample in range(args.k)]
    texts, keywords = model_inputs(tokenizer, prompts, decoding, chat)
    once = tokenizer(texts, return_tensors="pt", padding=True, **keywords).to(model.device)
    many = tokenizer([text for text in texts for _ in range(args.k)], return_tensors="pt", padding=True,
                     **keywords).to(model.device)

    def synchronize() -> None:
        if model.device.type == "cuda":
            torch.cuda.synchronize()

    outputs: dict[str, dict] = {}

    def generation(share: bool):
        def step() -> None:
            found: dict = {}
            generate_items(model, tokenizer, items, decoding, seed=0, batch_size=args.batch_size, progress=False,
                           chat=chat, share_prefill=share,
                           on_batch=lambda batch, results: found.update(
                               {(i.prompt_id, i.sample): r.continuation for i, r in zip(batch, results, strict=True)}))
            outputs["shared" if share else "unshared"] = found
        return step

    def timed(step) -> float:
        synchronize()
        started = time.perf_counter()
        with torch.inference_mode():
            step()
        synchronize()
        return time.perf_counter() - started

    steps = {"unshared": generation(False), "shared": generation(True), "prefill x k": lambda: model(**many),
             "prefill x 1": lambda: model(**once)}
    for step in steps.values():  # warm-up
        timed(step)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(args.rounds):  # alternate which arm goes first
        order = ["unshared", "shared"] if round_ % 2 == 0 else ["shared", "unshared"]
        for name in [*order, "prefill x k", "prefill x 1"]:
            times[name].append(timed(steps[name]))
    seconds = {name: statistics.median(values) for name, values in times.items()}
    tokens = int(once["attention_mask"].sum(dim=1).float().mean())
    differ = sum(outputs["shared"][key] != outputs["unshared"][key] for key in outputs["unshared"])
    print(f"{args.model} on {args.device} ({args.dtype}), --chat-template {args.chat_template}; {args.prompts} prompts "
          f"x k={args.k}, mean input {tokens} tokens, {args.max_new_tokens} new tokens, batches of {args.batch_size}; "
          f"median of {args.rounds} alternating rounds")
    for name, value in seconds.items():
        print(f"{name:12s} {value:8.3f} s")
    bound = (seconds["prefill x k"] - seconds["prefill x 1"]) / seconds["unshared"]
    print(f"most that sharing the prefill could save: {bound:.1%} of generation time")
    print(f"shared / unshared: {seconds['shared'] / seconds['unshared']:.3f} (saves "
          f"{1 - seconds['shared'] / seconds['unshared']:.1%}); texts that differ: {differ} of {len(items)}")


if __name__ == "__main__":
    main()
