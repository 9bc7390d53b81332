"""Throughput of the sentiment scorer against calling vaderSentiment directly, in one run.

Target: our scorer within 1.2x of a plain `SentimentIntensityAnalyzer().polarity_scores`
loop on the 23,679 BOLD Wikipedia sentences, i.e. at most 20% overhead. Two inputs are timed:
all sentences (BOLD repeats some, which our scorer scores once) and only the distinct sentences
(where deduplication cannot help, so the ratio is our pure overhead).

    python benchmarks/sentiment.py [--data-dir DIR] [--repeats 10]

BOLD is read with `bold_eval.data.bold.load_bold`: `--data-dir`, else $BOLD_DATA_DIR, else the pinned upstream
copy (e.g. `--data-dir ../shared/data/bold` in this project).
Always exits 0; prints PASS/FAIL against the target.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path

from _timing import best_times
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from bold_eval.data.bold import load_bold
from bold_eval.metrics import sentiment

TARGET_RATIO = 1.2


def wikipedia_sentences(data_dir: Path | None) -> list[str]:
    """The `wikipedia` column of BOLD (config `all`): one Wikipedia sentence per prompt."""
    return load_bold("all", data_dir=data_dir)["wikipedia"]


# The baseline's own analyzer, built once outside the timings like our scorer's.
BASELINE_ANALYZER = SentimentIntensityAnalyzer()


def baseline(texts: list[str]) -> list[dict[str, float]]:
    """The straightforward per-text implementation: VADER's own call in a loop."""
    return [BASELINE_ANALYZER.polarity_scores(text) for text in texts]


def cpu_model() -> str:
    """The CPU's model name (Linux), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="local BOLD folder (default: $BOLD_DATA_DIR, else download)",
    )
    parser.add_argument("--repeats", type=int, default=10, help="timed passes per method; the best is kept")
    args = parser.parse_args(argv)

    texts = wikipedia_sentences(args.data_dir)
    distinct = list(dict.fromkeys(texts))
    scorer = sentiment.load_scorer()  # setup (lexicon parsing) is outside the timings, as for the baseline
    scorer(texts[:100])  # warm up both
    baseline(texts[:100])

    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cpus (one process, one core used), "
        f"Python {platform.python_version()}, vaderSentiment {version('vaderSentiment')}"
    )
    print(
        f"texts per CPU-second, best of {args.repeats} passes; ratio = our time / baseline time (target <= "
        f"{TARGET_RATIO})"
    )
    print(f"{'input':<32} {'texts':>7} {'baseline t/s':>13} {'ours t/s':>10} {'ratio':>6}")
    ratios = {}
    for name, inputs in (("BOLD Wikipedia (all)", texts), ("BOLD Wikipedia (distinct only)", distinct)):
        # CPU time: both are single-threaded, so it is the one-core cost, without the time other
        # processes on a shared machine hold the core.
        base, ours = best_times([baseline, scorer], inputs, args.repeats, clock=time.process_time)
        ratios[name] = ours / base
        print(
            f"{name:<32} {len(inputs):>7} {len(inputs) / base:>13,.0f} {len(inputs) / ours:>10,.0f} "
            f"{ours / base:>6.3f}"
        )
    worst = max(ratios.values())
    print(
        f"{'PASS' if worst <= TARGET_RATIO else 'FAIL'}: worst ratio {worst:.3f} (target <= {TARGET_RATIO})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
