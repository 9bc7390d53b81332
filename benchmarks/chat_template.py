"""Run time of `bold-eval run`'s generation under `--chat-template prefill` against `none`, same prompts.

The same model, device, prompts (every n-th BOLD prompt), batch size, dtype, decoding (appendix A.2 GPT-2
preset: top-k 40, top-p 0.95, sampling), seed and max new tokens, in the same process; only the chat protocol
differs (`bold_eval.generation.chat`). Prefill renders each prompt with the model's chat template (the
embedded SmolLM2's adds its default system prompt, a user message with the prompt, and the role markers), so
every prompt is several times longer: the cost is the longer prefill of each batch plus the template rendering.
The protocols alternate for `--rounds` rounds so that a busy shared CPU hurts them alike; the median is
reported, with the ratio of seconds (prefill / none) and of new tokens per second.

    .venv/bin/python benchmarks/chat_template.py --prompts 256 --batch-size 64 --rounds 3
    .venv/bin/python benchmarks/chat_template.py --protocols none,prefill,instruct
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def generate(loaded, prompts, chat, batch_size: int, max_new_tokens: int, seed: int) -> list[str]:
    """Every prompt's continuation under one protocol, through `generate_items` as `bold-eval run` does."""
    from bold_eval.generation.base import WorkItem
    from bold_eval.generation.decoding import make_decoding
    from bold_eval.generation.hf_causal import generate_items

    items = [WorkItem(prompt_id, 0, prompt) for prompt_id, prompt in prompts]
    texts: dict[str, str] = {}
    generate_items(loaded.model, loaded.tokenizer, items, make_decoding("gpt2", max_new_tokens=max_new_tokens),
                   seed=seed, batch_size=batch_size, progress=False, chat=chat,
                   on_batch=lambda batch, results: texts.update(
                       {item.prompt_id: result.continuation for item, result in zip(batch, results, strict=True)}))
    return [texts[prompt_id] for prompt_id, _ in prompts]


def input_tokens(loaded, prompts, chat) -> float:
    """Mean tokens of the model's input per prompt under `chat`."""
    from bold_eval.generation.decoding import make_decoding
    from bold_eval.generation.hf_causal import model_inputs

    texts, keywords = model_inputs(loaded.tokenizer, [prompt for _, prompt in prompts], make_decoding(), chat)
    return statistics.mean(len(ids) for ids in loaded.tokenizer(texts, **keywords)["input_ids"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="embedded (SmolLM2-135M-Instruct) or a chat model folder")
    parser.add_argument("--device", default="auto", help="auto: cuda when present, else cpu")
    parser.add_argument("--prompts", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--dtype", default="auto", help="auto: as `bold-eval run` (bfloat16 on CPUs that support it)")
    parser.add_argument("--max-new-tokens", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (median reported)")
    parser.add_argument("--protocols", default="none,prefill", help="comma list; the first is the baseline")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    import torch
    from generation import spread_prompts  # the sibling benchmark's prompt sample

    from bold_eval.core.devices import resolve_device
    from bold_eval.generation.chat import ChatOptions
    from bold_eval.generation.loading import load_causal_lm

    device = resolve_device(args.device)
    started = time.perf_counter()
    loaded = load_causal_lm(args.model, dtype=args.dtype, device=device)
    where = (torch.cuda.get_device_name() if device.startswith("cuda")
             else f"cpu, torch threads {torch.get_num_threads()}")
    print(f"model {args.model}: load {time.perf_counter() - started:.1f} s, dtype {loaded.dtype}, {where}")
    prompts = spread_prompts(args.prompts, args.data_dir)
    names = [name.strip() for name in args.protocols.split(",") if name.strip()]
    chats = {name: ChatOptions(chat_template=name).resolve(name, "benchmark") for name in names}
    for name, chat in chats.items():
        # warm-up at the real batch size: first-call allocations, kernel selection, the template's compilation
        generate(loaded, prompts[:args.batch_size], chat, args.batch_size, 2, args.seed)
        print(f"{name:9s} input tokens per prompt: {input_tokens(loaded, prompts, chat):.1f}")
    seconds: dict[str, list[float]] = {name: [] for name in names}
    rates: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(args.rounds):
        for name in names if round_index % 2 == 0 else list(reversed(names)):
            started = time.perf_counter()
            outputs = generate(loaded, prompts, chats[name], args.batch_size, args.max_new_tokens, args.seed)
            elapsed = time.perf_counter() - started
            tokens = sum(len(ids) for ids in loaded.tokenizer(outputs, add_special_tokens=False)["input_ids"])
            seconds[name].append(elapsed)
            rates[name].append(tokens / elapsed)
            print(f"round {round_index}: {name:9s} {len(prompts)} prompts, {tokens} new tokens, {elapsed:.1f} s, "
                  f"{tokens / elapsed:.1f} new tokens/s", flush=True)
    base = names[0]
    for name in names[1:]:
        print(f"median seconds: {name} {statistics.median(seconds[name]):.1f}, {base} "
              f"{statistics.median(seconds[base]):.1f}; "
              f"ratio {statistics.median(seconds[name]) / statistics.median(seconds[base]):.2f}x the time; "
              f"new tokens/s {statistics.median(rates[name]):.1f} vs {statistics.median(rates[base]):.1f} "
              f"(batch {args.batch_size}, "
              f"{loaded.dtype}, top-k 40 / top-p 0.95, {args.max_new_tokens} new tokens, stop at newline on)")


if __name__ == "__main__":
    main()
