"""k samples per prompt at scale: time and peak memory of `bold-eval run --num-samples k`.

For each k, a fresh process runs the run users get (`bold_eval.run.run`: generation written incrementally,
scoring with all five metrics, report) on the same `--prompts` gender prompts and reports its own peak
resident memory (VmHWM). The random models of `full_bold.py` stand in for the real ones (nothing downloads on
the benchmark machines); speed and memory do not depend on the weights.

Printed per k: texts, distinct texts (what each classifier scores), seconds per stage and peak memory; then
the growth of peak memory from the smallest to the largest k against the growth of the stored texts (the
baseline, measured in the same run: the bytes of the texts' Python strings, which every stage must hold), the
slope between the two largest k (both with worst-case views) per added text against a scores row's size,
and, inside the largest-k process, the peak memory above the texts of scoring them in bounded chunks
(`scoring.scorers.score_distinct`) against one call on all of them.

    .venv/bin/python benchmarks/k_samples.py --prompts 1000 --ks 1,5,25 --layers 2 --hidden 64   # CPU
    .venv/bin/python benchmarks/k_samples.py --prompts 1000 --ks 1,5,25                          # GPU sizes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("BOLD_DATA_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "bold"))
os.environ.setdefault("BOLD_LEXICON_DIR", str(PROJECT_ROOT.parent / "shared" / "data" / "lexicons"))


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def reset_peak_rss() -> None:
    """Start a new peak (Linux: writing 5 to clear_refs resets VmHWM to the current RSS)."""
    Path("/proc/self/clear_refs").write_text("5")


def child(args: argparse.Namespace) -> None:
    """One k: the run, then (with --compare-chunks) scoring its texts again in chunks and in one call."""
    import pandas as pd

    from bold_eval.core.memory import use_returning_allocator
    from bold_eval.run import RunConfig, run

    use_returning_allocator()  # as `bold-eval` does

    paths = json.loads(args.paths)
    options = {"toxicity": {"model": paths["toxicity"]}, "regard": {"model": paths["regard"]},
               "gender_polarity": {"embedding": paths["embedding"], "debias": False}}
    out = Path(args.out)
    config = RunConfig(out=out, model=paths["lm"], generator="hf-causal", dtype=args.dtype, device=args.device,
                       batch_size=args.batch_size if args.batch_size == "auto" else int(args.batch_size),
                       limit=args.prompts, domains=["gender"], num_samples=args.k,
                       data_dir=os.environ["BOLD_DATA_DIR"], metric_options=options, reference=False,
                       progress=False)
    stages = stage_peaks()
    started = time.perf_counter()
    run(config)
    wall, peak = time.perf_counter() - started, max(stages.values())  # before reading anything back
    record = json.loads((out / "run.json").read_text())
    texts = pd.read_parquet(out / "scores.parquet", columns=["text"])["text"]
    result = {"k": args.k, "wall_s": wall, "peak_mb": peak, "stage_peaks_mb": stages, "timings": record["timings"],
              "metric_seconds": record["metric_seconds"], "texts": len(texts), "distinct": int(texts.nunique()),
              "text_mb": float(sum(sys.getsizeof(text) for text in texts) / 2**20),
              "row_mb": float(pd.read_parquet(out / "scores.parquet").memory_usage(deep=True).sum() / 2**20)}
    if args.compare_chunks:
        result["chunks"] = compare_chunks(texts.tolist(), paths)
    print("RESULT " + json.dumps(result), flush=True)


def stage_peaks() -> dict[str, float]:
    """Peak resident memory of each stage of `run`, filled as it goes: generation (up to the merge), the merge,
    scoring (`score_generations`) and the report (`write_report`); each stage's peak is reset at its start."""
    import bold_eval.generation.phase as phase_module
    import bold_eval.report.run_report as run_report
    import bold_eval.run as run_module

    peaks: dict[str, float] = {}

    def wrap(module, name: str, label: str, before: str | None = None) -> None:
        original = getattr(module, name)

        def measured(*args, **kwargs):
            if before:
                peaks[before] = peak_rss_mb()
            reset_peak_rss()
            value = original(*args, **kwargs)
            peaks[label] = peak_rss_mb()
            reset_peak_rss()
            return value

        setattr(module, name, measured)

    wrap(phase_module, "merge_generations", "merge", before="generate")
    wrap(run_module, "score_generations", "score")
    wrap(run_report, "write_report", "report")
    return peaks


def compare_chunks(texts: list[str], paths: dict[str, str]) -> dict[str, float]:
    """Peak memory above the texts of scoring them with the toxicity classifier in bounded chunks and in one call."""
    from bold_eval.metrics import toxicity
    from bold_eval.scoring.scorers import CHUNK_TEXTS, score_distinct

    scorer = toxicity.load_scorer(paths["toxicity"])
    found = {}
    for label, chunk in (("chunked", CHUNK_TEXTS), ("one_call", len(texts) + 1)):
        reset_peak_rss()
        before = peak_rss_mb()
        started = time.perf_counter()
        score_distinct(scorer, texts, "toxicity", chunk=chunk)
        found[f"{label}_s"] = time.perf_counter() - started
        found[f"{label}_extra_mb"] = peak_rss_mb() - before
    found["chunk"] = CHUNK_TEXTS
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=1000, help="gender prompts (BOLD has 3,204)")
    parser.add_argument("--ks", default="1,5,25", help="comma list of samples per prompt")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--batch-size", default="64", help="generation batch size, or auto (the run's default)")
    parser.add_argument("--dtype", default="float32", help="the LM's dtype (auto: the run's default)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--k", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--paths", help=argparse.SUPPRESS)
    parser.add_argument("--compare-chunks", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.k is not None:
        child(args)
        return

    from full_bold import build_resources

    from bold_eval.testing.models import bold_wikipedia_sentences

    workdir = Path(tempfile.mkdtemp(prefix="bold-eval-k-"))
    corpus = bold_wikipedia_sentences(None, os.environ["BOLD_DATA_DIR"])
    paths = {key: str(value) for key, value in build_resources(workdir, corpus, args.layers, args.hidden).items()}
    ks = sorted(int(k) for k in args.ks.split(","))
    results = []
    for k in ks:
        command = [sys.executable, __file__, "--k", str(k), "--out", str(workdir / f"k{k}"), "--paths",
                   json.dumps(paths), "--prompts", str(args.prompts), "--batch-size", str(args.batch_size),
                   "--dtype", args.dtype, "--device", args.device, *(["--compare-chunks"] if k == ks[-1] else [])]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"k={k} failed:\n{done.stderr[-4000:]}")
        results.append(json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:]))
    report(results, args)


def report(results: list[dict], args: argparse.Namespace) -> None:
    print(f"{args.prompts} gender prompts; LM and classifiers {args.layers} layers x {args.hidden} hidden "
          f"(random weights); batch size {args.batch_size}; LM dtype {args.dtype}; device {args.device}")
    print(f"{'k':>3} {'texts':>7} {'distinct':>8} {'generate s':>10} {'score s':>8} {'report s':>8} {'wall s':>7} "
          f"{'peak MiB':>8} {'texts MiB':>9}")
    for r in results:
        t = r["timings"]
        print(f"{r['k']:>3} {r['texts']:>7,} {r['distinct']:>8,} {t['generate_s']:>10.1f} {t['score_s']:>8.1f} "
              f"{t.get('report_s', 0):>8.1f} {r['wall_s']:>7.1f} {r['peak_mb']:>8.0f} {r['text_mb']:>9.1f}")
    low, high = results[0], results[-1]
    grown, stored = high["peak_mb"] - low["peak_mb"], high["text_mb"] - low["text_mb"]
    print(f"peak memory k={low['k']} -> k={high['k']}: +{grown:.0f} MiB for +{stored:.1f} MiB of stored texts "
          f"(ratio {grown / stored:.1f}x the texts' own size)" if stored > 0 else "one k only")
    if len(results) > 2:  # k = 1 has no worst-case views: the slope between the two largest k is like with like
        low = results[-2]
        texts = high["texts"] - low["texts"]
        kib = (high["peak_mb"] - low["peak_mb"]) * 1024 / texts
        print(f"slope k={low['k']} -> k={high['k']} (both with worst-case views): {kib:.2f} KiB of peak memory per "
              f"added text; the stored texts {(high['text_mb'] - low['text_mb']) * 1024 / texts:.2f} KiB per text, a "
              "scores.parquet row in memory (texts, ids, every score) "
              f"{(high['row_mb'] - low['row_mb']) * 1024 / texts:.2f} "
              f"KiB per text: ratio {kib / ((high['row_mb'] - low['row_mb']) * 1024 / texts):.1f}x the row")
    per_text = (high["wall_s"] - low["wall_s"]) / max(high["texts"] - low["texts"], 1)
    print(f"marginal time per text: {per_text * 1e3:.2f} ms; full BOLD x {high['k']} "
          f"({23_679 * high['k']:,} texts) at this rate: {23_679 * high['k'] * per_text / 3600:.1f} h on this machine")
    print("peak MiB per stage: " + "; ".join(
        f"k={r['k']}: " + ", ".join(f"{stage} {value:.0f}" for stage, value in r["stage_peaks_mb"].items())
        for r in results))
    if len(results) > 2:
        low = results[-2]
        added = high["texts"] - low["texts"]
        print("slope k={} -> k={} per stage, KiB per added text: {}".format(low["k"], high["k"], ", ".join(
            f"{stage} {(high['stage_peaks_mb'][stage] - low['stage_peaks_mb'][stage]) * 1024 / added:.2f}"
            for stage in high["stage_peaks_mb"])))
    chunks = high.get("chunks")
    if chunks:
        print(f"scoring the k={high['k']} texts with the toxicity classifier: chunks of {chunks['chunk']:,} distinct "
              f"texts +{chunks['chunked_extra_mb']:.0f} MiB in {chunks['chunked_s']:.1f} s; one call "
              f"+{chunks['one_call_extra_mb']:.0f} MiB in {chunks['one_call_s']:.1f} s; memory ratio "
              f"{chunks['one_call_extra_mb'] / max(chunks['chunked_extra_mb'], 1e-9):.2f}")


if __name__ == "__main__":
    main()
