"""Throughput of the psycholinguistic scorer against a straightforward per-text implementation, in one run.

Target: at least 20,000 texts/s on one core on the 23,679 BOLD Wikipedia sentences.
The baseline is what one would write first: for every text, tokenize, and for every token a
dict lookup (surface form, then the same lemma fallback), then the Section 4.4 weighted
average in Python. Both give the same scores (checked here); both reuse one loaded lexicon.

    python benchmarks/psycholinguistic.py [--data-dir DIR] [--lexicon-dir DIR] [--repeats 3]

Always exits 0; prints PASS/FAIL against the target.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import numpy as np
from _timing import best_times

from bold_eval.metrics import psycholinguistic
from bold_eval.metrics._words import tokenize
from bold_eval.metrics.lexicon import VARIABLES
from bold_eval.testing.models import bold_wikipedia_sentences

TARGET_TEXTS_PER_SECOND = 20_000
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bold"


def wikipedia_sentences(data_dir: Path) -> list[str]:
    """Every Wikipedia sentence of BOLD, in file order; exits when the folder has none."""
    texts = bold_wikipedia_sentences(data_dir=data_dir)
    if not texts:
        raise SystemExit(f"no BOLD Wikipedia files in {data_dir / 'wikipedia'}; pass --data-dir or set $BOLD_DATA_DIR")
    return texts


def make_baseline(scorer: psycholinguistic.PsycholinguisticScorer):
    """Per text, per token: dict lookups and a Python weighted average (no caching, no numpy)."""
    index = scorer.lexicon.index
    rows = scorer.lexicon.values.tolist()
    closed = scorer.closed_class_words

    def score(texts: list[str]) -> list[list[float]]:
        results = []
        for text in texts:
            numerator = [0.0] * 8
            denominator = [0.0] * 8
            content = found = 0
            for token in tokenize(text):
                if psycholinguistic.is_closed_class(token, closed):
                    continue
                content += 1
                row = index.get(token)
                if row is None:
                    for candidate in psycholinguistic.lemma_candidates(token):
                        row = index.get(candidate)
                        if row is not None:
                            break
                if row is None:
                    continue
                found += 1
                for k, value in enumerate(rows[row]):
                    numerator[k] += value * abs(value)
                    denominator[k] += abs(value)
            scores = [n / d if d > 0 else 0.0 for n, d in zip(numerator, denominator, strict=True)]
            results.append(scores + [found / content if content else 0.0])
        return results

    return score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("BOLD_DATA_DIR", DEFAULT_DATA_DIR)))
    parser.add_argument("--lexicon-dir", default=None, help="folder with the Warriner files ($BOLD_LEXICON_DIR)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per method; the best is kept")
    args = parser.parse_args(argv)

    texts = wikipedia_sentences(args.data_dir)
    lexicon = psycholinguistic.load_scorer(lexicon_dir=args.lexicon_dir).lexicon  # loading is not timed

    def ours_cold(batch: list[str]) -> dict[str, np.ndarray]:
        # A fresh scorer per pass, so the per-distinct-word cache starts empty: the honest number.
        return psycholinguistic.PsycholinguisticScorer(lexicon)(batch)

    baseline = make_baseline(psycholinguistic.PsycholinguisticScorer(lexicon))
    columns = ours_cold(texts)
    reference = np.array(baseline(texts))
    ours_matrix = np.column_stack([columns[v] for v in VARIABLES] + [columns["coverage"]])
    max_diff = float(np.abs(ours_matrix - reference).max())

    base_time, ours_time = best_times([baseline, ours_cold], texts, args.repeats)
    ours_rate = len(texts) / ours_time
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, Python "
          f"{platform.python_version()}")
    print(f"{len(texts)} BOLD Wikipedia sentences, best of {args.repeats} passes, one process")
    print(f"max |ours - baseline| over the 8 scores and coverage: {max_diff:.2e}")
    print(f"{'method':<34} {'seconds':>8} {'texts/s':>10}")
    print(f"{'baseline (per-text dict lookups)':<34} {base_time:>8.3f} {len(texts) / base_time:>10,.0f}")
    print(f"{'ours (vectorized, cold cache)':<34} {ours_time:>8.3f} {ours_rate:>10,.0f}")
    print(f"speed-up: {base_time / ours_time:.1f}x")
    verdict = "PASS" if ours_rate >= TARGET_TEXTS_PER_SECOND else "FAIL"
    print(f"{verdict}: {ours_rate:,.0f} texts/s (target >= {TARGET_TEXTS_PER_SECOND:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
