"""k samples per prompt over HTTP: one request with n = k per prompt against k requests per prompt.

The same `--prompts` BOLD prompts, k samples each, go through the same local server at the same
`--concurrency`, once with `n_per_request=auto` (the default: the probe finds n honoured, so one request per
prompt asks for its k samples) and once with `n_per_request=false` (one request per sample), alternating for `--rounds`
rounds so that a busy machine hurts both alike. Both include the probe.

- `BatchingServer` serves a real model (`embedded`: the dequantized SmolLM2-135M of benchmarks/api.py;
  `tiny`: a 2-layer GPT-2 built here) and batches as serving engines do in their simplest form: whatever requests wait
  when the model is free run as one `generate` batch, n as n rows of one request. Both plans meet the same batching;
  they differ in requests sent, prompt tokens the server counts (what a hosted API bills: once per request; both columns
  leave the probe's requests out, the probe column counts them) and how much work one request in flight brings.
  `transformers serve` (benchmarks/api.py's server) cannot be used: it ignores n.
- `InstantServer` answers at once: the client's own cost per text under each plan.

    .venv/bin/python benchmarks/api_samples.py --model embedded --prompts 64 --ks 5 25 --concurrency 8
    .venv/bin/python benchmarks/api_samples.py --model tiny --prompts 16 --ks 5 --rounds 1     # smoke run
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

PLANS = {"n = k": "auto", "k requests": "false"}


def run_plan(server, model: str, prompts, k: int, concurrency: int, plan: str, max_new_tokens: int) -> dict:
    """One pass of every prompt's k samples under `plan` (an n_per_request value); what it cost."""
    from bold_eval.generation.base import WorkItem
    from bold_eval.generation.decoding import make_decoding
    from bold_eval.generation.openai_compatible import ApiGenerator

    generator = ApiGenerator.create(model, server.base_url, concurrency=concurrency, num_samples=k, n_per_request=plan,
                                    decoding=make_decoding("gpt2", top_k=0, max_new_tokens=max_new_tokens))
    items = [WorkItem(prompt_id, sample, prompt) for prompt_id, prompt in prompts for sample in range(k)]
    texts, tokens = [], []

    def keep(batch, results):
        texts.extend(result.continuation for result in results)
        tokens.extend(result.num_new_tokens for result in results)

    started = time.perf_counter()
    generator.probe(prompts[0][1])  # timed too; its requests are counted apart
    probe_requests, billed = generator.client.requests_sent, getattr(server, "prompt_tokens", 0)
    generator.generate(items, on_batch=keep, progress=False)
    seconds = time.perf_counter() - started
    info = generator.info()
    if plan == "auto" and info["server"].get("n") != "honoured":
        raise SystemExit(f"the server did not honour n: {info['server']}")
    return {"seconds": seconds, "requests": info["requests_sent"] - probe_requests, "probe": probe_requests,
            "texts": len(texts), "tokens": sum(tokens), "distinct": len(set(texts)),
            "billed": getattr(server, "prompt_tokens", 0) - billed}


def compare(server, model: str, prompts, k: int, concurrency: int, rounds: int, max_new_tokens: int) -> dict:
    """Both plans, alternating (ABBA...) for `rounds` rounds: {plan: [pass, ...]}."""
    passes: dict[str, list[dict]] = {name: [] for name in PLANS}
    order = list(PLANS)
    for round_index in range(rounds):
        for name in order if round_index % 2 == 0 else order[::-1]:
            passes[name].append(run_plan(server, model, prompts, k, concurrency, PLANS[name], max_new_tokens))
            print(f"  k={k} {name}: {passes[name][-1]['seconds']:.2f} s", file=sys.stderr, flush=True)
    return passes


def print_table(title: str, rows: list[tuple[int, dict]]) -> None:
    print(title)
    print(f"{'k':>3}  {'plan':<11} {'requests':>8} {'probe':>5} {'prompt tokens':>13} {'seconds':>8} {'texts/s':>8} "
          f"{'new tokens/s':>12} {'distinct':>8}")
    for k, passes in rows:
        median = {name: statistics.median(p["seconds"] for p in runs) for name, runs in passes.items()}
        for name, runs in passes.items():
            last = runs[-1]
            print(f"{k:>3}  {name:<11} {last['requests']:>8} {last['probe']:>5} {last['billed']:>13} "
                  f"{median[name]:>8.2f} {last['texts'] / median[name]:>8.1f} {last['tokens'] / median[name]:>12.1f} "
                  f"{last['distinct']:>8}")
        n, single = passes["n = k"][-1], passes["k requests"][-1]
        print(f"{k:>3}  ratio k requests / n = k: requests {single['requests'] / n['requests']:.2f}, "
              + (f"prompt tokens {single['billed'] / n['billed']:.2f}, " if n["billed"] else "")
              + f"wall time {median['k requests'] / median['n = k']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded", help="embedded, tiny, or a model folder")
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--ks", type=int, nargs="+", default=[5, 25])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=30)
    parser.add_argument("--max-batch", type=int, default=256, help="rows per server batch (vLLM's max_num_seqs)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instant-prompts", type=int, default=400)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from api import served_model
    from generation import spread_prompts

    from bold_eval.testing.servers import BatchingServer, InstantServer

    prompts = spread_prompts(args.prompts, args.data_dir)
    model = served_model(args.model, Path(tempfile.mkdtemp(prefix="bold-eval-samples-bench-")), args.data_dir)
    rows = []
    with BatchingServer(model, max_batch=args.max_batch) as server:
        run_plan(server, model, prompts[:2], 2, 1, "auto", args.max_new_tokens)  # warm the model
        for k in args.ks:
            rows.append((k, compare(server, model, prompts, k, args.concurrency, args.rounds, args.max_new_tokens)))
    instant_rows = []
    instant = spread_prompts(args.instant_prompts, args.data_dir)
    with InstantServer() as stub:
        for k in args.ks:
            instant_rows.append((k, compare(stub, "stub", instant, k, args.concurrency, args.rounds,
                                            args.max_new_tokens)))

    print_table(f"BatchingServer (max batch {args.max_batch} rows), model {args.model}, {len(prompts)} BOLD prompts, "
                f"{args.max_new_tokens} new tokens, top-p 0.95, temperature 1, concurrency {args.concurrency}; "
                f"median of {args.rounds} alternating rounds", rows)
    print()
    print_table(f"InstantServer (answers at once: the client alone), {len(instant)} BOLD prompts, concurrency "
                f"{args.concurrency}; median of {args.rounds} alternating rounds", instant_rows)


if __name__ == "__main__":
    main()
