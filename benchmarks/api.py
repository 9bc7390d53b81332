"""Throughput of bold-eval's HTTP generator vs lm-evaluation-harness's `local-completions` model.

Both clients ask the same local `transformers serve` (with `--continuous-batching`, which batches
concurrent requests on CPU too) for the same BOLD prompts with the same settings (temperature 1,
top-p 0.95, the same max new tokens, no top-k: the server rejects it) at equal concurrency
(`num_concurrent` for lm-eval), alternating the two for `--rounds` rounds so that a busy machine
hurts both alike. New tokens are counted the same way for both: the continuation re-tokenized
without special tokens. A second table times both clients against `InstantServer`, which answers
at once, so the client's own cost per request is visible next to the server's.

    .venv/bin/python benchmarks/api.py --model embedded --prompts 256 --concurrency 1 8
    .venv/bin/python benchmarks/api.py --model tiny --prompts 16 --rounds 1      # smoke run
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


def served_model(name: str, workdir: Path, data_dir: str | None) -> str:
    """A folder `transformers serve` can load: `embedded` -> the dequantized SmolLM2 cache,
    `tiny` -> a 2-layer GPT-2 built here, anything else as given."""
    if name == "embedded":
        from bold_eval.generation.loading import load_causal_lm

        loaded = load_causal_lm("embedded", device="cpu")
        folder = loaded.info.get("loaded_from_cache") or loaded.info.get("cached_to")
        if folder is None:
            raise SystemExit("the dequantized embedded model could not be cached; set a writable $BOLD_EVAL_CACHE")
        return str(folder)
    if name == "tiny":
        from transformers import GenerationConfig

        from bold_eval.testing.models import bold_wikipedia_sentences, build_tiny_causal_lm

        corpus = bold_wikipedia_sentences(400, data_dir) or ["Jacob Zachar is an American actor."]
        folder = build_tiny_causal_lm(workdir / "tiny", corpus)
        config = GenerationConfig.from_pretrained(folder)
        config.do_sample, config.top_k = True, 0
        config.save_pretrained(folder)
        return str(folder)
    return name


def run_ours(base_url: str, model: str, prompts, concurrency: int, max_new_tokens: int) -> list[str]:
    from bold_eval.generation.base import WorkItem
    from bold_eval.generation.decoding import make_decoding
    from bold_eval.generation.openai_compatible import ApiGenerator

    generator = ApiGenerator.create(model, base_url, concurrency=concurrency, probe=False,
                                    decoding=make_decoding("gpt2", top_k=0, max_new_tokens=max_new_tokens))
    texts: dict[str, str] = {}

    def keep(batch, results):
        texts.update({item.prompt_id: result.continuation for item, result in zip(batch, results, strict=True)})

    generator.generate([WorkItem(prompt_id, 0, prompt) for prompt_id, prompt in prompts], on_batch=keep,
                       progress=False)
    return [texts[prompt_id] for prompt_id, _ in prompts]


def make_lm_eval(base_url: str, model: str, concurrency: int, max_new_tokens: int):
    """lm-eval's `local-completions` as its docs run it against a local server, with plain-text
    prompts (no tokenizer: transformers serve takes string prompts only)."""
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    return LocalCompletionsAPI(base_url=f"{base_url}/completions", model=model, tokenizer_backend=None,
                               tokenized_requests=False, num_concurrent=concurrency, batch_size=1,
                               max_gen_toks=max_new_tokens, max_retries=3)


def run_lm_eval(lm, prompts, max_new_tokens: int) -> list[str]:
    from lm_eval.api.instance import Instance

    # bold-eval stops at the first line break (STOPPING_RULE) and sends `stop: ["\n"]`; lm-eval sends its
    # `until` as `stop` too, so both ask the server for the same work.
    kwargs = {"until": ["\n"], "do_sample": True, "top_p": 0.95, "temperature": 1.0, "max_gen_toks": max_new_tokens}
    requests = [Instance(request_type="generate_until", doc={}, arguments=(prompt, dict(kwargs)), idx=index)
                for index, (_, prompt) in enumerate(prompts)]
    return lm.generate_until(requests, disable_tqdm=True)


def count_tokens(tokenizer, texts: list[str]) -> int:
    return sum(len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"])


def timed(function) -> tuple[float, list[str]]:
    started = time.perf_counter()
    texts = function()
    return time.perf_counter() - started, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded",
                        help="embedded, tiny, or a model folder transformers serve loads")
    parser.add_argument("--prompts", type=int, default=256)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--max-new-tokens", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instant-prompts", type=int, default=2000, help="requests per client against InstantServer")
    parser.add_argument("--no-continuous-batching", action="store_true")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    from generation import spread_prompts
    from transformers import AutoTokenizer

    from bold_eval.testing.servers import InstantServer, TransformersServer

    prompts = spread_prompts(args.prompts, args.data_dir)
    workdir = Path(tempfile.mkdtemp(prefix="bold-eval-api-bench-"))
    model = served_model(args.model, workdir, args.data_dir)
    tokenizer = AutoTokenizer.from_pretrained(model)
    continuous = not args.no_continuous_batching
    rows = []
    with TransformersServer(model, continuous_batching=continuous, log_path=workdir / "serve.log") as server:
        run_ours(server.base_url, model, prompts[:2], 1, args.max_new_tokens)  # load and warm the server
        for concurrency in args.concurrency:
            lm = make_lm_eval(server.base_url, model, concurrency, args.max_new_tokens)
            seconds: dict[str, list[float]] = {"lm-eval": [], "bold-eval": []}
            tokens: dict[str, int] = {}
            calls = [("lm-eval", lambda lm=lm: run_lm_eval(lm, prompts, args.max_new_tokens)),
                     ("bold-eval", lambda c=concurrency: run_ours(server.base_url, model, prompts, c,
                                                                   args.max_new_tokens))]
            for round_index in range(args.rounds):  # ABBA...: neither engine always goes first
                for engine, call in calls if round_index % 2 == 0 else calls[::-1]:
                    elapsed, texts = timed(call)
                    seconds[engine].append(elapsed)
                    tokens[engine] = count_tokens(tokenizer, texts)
            rows.append((concurrency, seconds, tokens))

    instant_rows = []
    instant = spread_prompts(args.instant_prompts, args.data_dir)
    with InstantServer() as stub:
        for concurrency in args.concurrency:
            lm = make_lm_eval(stub.base_url, "stub", concurrency, args.max_new_tokens)
            theirs = min(timed(lambda lm=lm: run_lm_eval(lm, instant, args.max_new_tokens))[0]
                         for _ in range(args.rounds))
            ours = min(timed(lambda c=concurrency: run_ours(stub.base_url, "stub", instant, c,
                                                            args.max_new_tokens))[0] for _ in range(args.rounds))
            instant_rows.append((concurrency, theirs, ours))

    print(f"transformers serve{' --continuous-batching' if continuous else ''}, model {args.model}, "
          f"{len(prompts)} BOLD prompts, {args.max_new_tokens} new tokens, top-p 0.95, temperature 1; "
          f"median of {args.rounds} alternating rounds")
    print(f"{'concurrency':>11}  {'engine':<9} {'seconds':>8} {'texts/s':>8} {'tokens/s':>9}")
    for concurrency, seconds, tokens in rows:
        for engine in ("lm-eval", "bold-eval"):
            median = statistics.median(seconds[engine])
            print(f"{concurrency:>11}  {engine:<9} {median:>8.2f} {len(prompts) / median:>8.2f} "
                  f"{tokens[engine] / median:>9.1f}")
        ours_s, theirs_s = statistics.median(seconds["bold-eval"]), statistics.median(seconds["lm-eval"])
        print(f"{concurrency:>11}  ratio bold-eval / lm-eval: tokens/s "
              f"{(tokens['bold-eval'] / ours_s) / (tokens['lm-eval'] / theirs_s):.2f}, "
              f"texts/s {theirs_s / ours_s:.2f}  (goal >= 1.5)")
    print(f"\nclient cost alone: {len(instant)} requests to a server that answers at once, best of {args.rounds}")
    print(f"{'concurrency':>11}  {'lm-eval ms/request':>19} {'bold-eval ms/request':>21}")
    for concurrency, theirs, ours in instant_rows:
        print(f"{concurrency:>11}  {1000 * theirs / len(instant):>19.3f} {1000 * ours / len(instant):>21.3f}")
    for concurrency, seconds, _ in rows:
        per_request = 1000 * statistics.median(seconds["bold-eval"]) / len(prompts)
        client = next(1000 * ours / len(instant) for c, _, ours in instant_rows if c == concurrency)
        print(f"concurrency {concurrency}: {per_request:.1f} ms per text end to end, of which the client "
              f"{client:.2f} ms ({100 * client / per_request:.1f}%); the rest is the server")


if __name__ == "__main__":
    main()
