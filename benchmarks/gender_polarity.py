"""Throughput of the gender polarity scorer against a straightforward per-text implementation, in one run.

Target: at least 20,000 texts/s on one core on the 23,679 BOLD Wikipedia sentences.
Timed: unigram matching alone, and all three methods (unigram, Gender-Max, Gender-Wavg) in a
random 300-d embedding with a realistic vocabulary (every word form of BOLD plus 100,000 random
words, about the lookup load of the 3M-word GoogleNews vectors for this text). The baseline
tokenizes with the same regex and scores word by word in Python, text by text.

    python benchmarks/gender_polarity.py [--data-dir DIR] [--repeats 3]

BOLD is read with `bold_eval.data.bold.load_bold`: `--data-dir`, else $BOLD_DATA_DIR, else the pinned
upstream copy (e.g. `--data-dir ../shared/data/bold` in this project). Always exits 0; prints
PASS/FAIL against the target.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core, before numpy loads
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import re  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from _timing import best_times  # noqa: E402
from gensim.models import KeyedVectors  # noqa: E402

from bold_eval.data.bold import load_bold  # noqa: E402
from bold_eval.metrics import gender_polarity  # noqa: E402
from bold_eval.testing.models import gender_polarity_reference  # noqa: E402

TARGET_TEXTS_PER_SECOND = 20_000
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def random_embedding(texts: list[str], extra_words: int = 100_000, dim: int = 300, seed: int = 0) -> KeyedVectors:
    """Every surface form in `texts` plus `extra_words` random strings, with random float32 vectors."""
    rng = np.random.default_rng(seed)
    vocabulary = set()
    for text in texts:
        vocabulary.update(WORD.findall(text.replace("’", "'")))
    vocabulary.update({"he", "she"})
    target = len(vocabulary) + extra_words
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    while len(vocabulary) < target:
        vocabulary.update("".join(row) for row in rng.choice(letters, size=(target - len(vocabulary), 12)))
    words = sorted(vocabulary)
    keyed_vectors = KeyedVectors(vector_size=dim)
    keyed_vectors.add_vectors(words, rng.standard_normal((len(words), dim), dtype=np.float32))
    return keyed_vectors


def baseline_unigram(texts: list[str]) -> list[str]:
    """Per text: tokenize, count listed tokens, compare."""
    labels = []
    for text in texts:
        male = female = 0
        for token in WORD.findall(text.lower().replace("’", "'")):
            if token in gender_polarity.MALE_TOKENS:
                male += 1
            elif token in gender_polarity.FEMALE_TOKENS:
                female += 1
        labels.append("male" if male > female else "female" if female > male else "neutral")
    return labels


def baseline_all(keyed_vectors: KeyedVectors) -> Callable[[list[str]], np.ndarray]:
    """Per text and word: unigram counts, b_i = cos(w_i, she - he), then Max and Wavg (Section 4.5);
    the tests' per-text reference, bold_eval.testing.models.gender_polarity_reference."""
    skip = gender_polarity.placeholder_words()  # the metric drops the anonymization placeholders
    return lambda texts: gender_polarity_reference(texts, keyed_vectors, skip_words=skip)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="local BOLD folder; default $BOLD_DATA_DIR")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    texts = list(load_bold("all", data_dir=args.data_dir)["wikipedia"])
    keyed_vectors = random_embedding(texts)
    print(f"{len(texts):,} BOLD Wikipedia sentences; random embedding: {len(keyed_vectors):,} words x 300")

    unigram = gender_polarity.load_scorer(methods=["unigram"])
    everything = gender_polarity.load_scorer(embedding=keyed_vectors)
    # Same answers before timing anything.
    assert unigram(texts)["unigram_label"].tolist() == baseline_unigram(texts)
    reference = np.array(baseline_all(keyed_vectors)(texts))
    ours = everything(texts)
    np.testing.assert_allclose(ours["max"], reference[:, 2], atol=1e-9)
    np.testing.assert_allclose(ours["wavg"], reference[:, 3], atol=1e-9)

    passed = True
    for name, scorer, baseline, repeats in [
        ("unigram", unigram, baseline_unigram, args.repeats),
        ("unigram+max+wavg", everything, baseline_all(keyed_vectors), max(1, args.repeats - 1)),
    ]:
        ours_time, base_time = best_times([scorer, baseline], texts, repeats)
        rate = len(texts) / ours_time
        passed &= rate >= TARGET_TEXTS_PER_SECOND
        print(
            f"{name:<18} ours {rate:>9,.0f} texts/s ({ours_time:.3f} s)   per-text baseline "
            f"{len(texts) / base_time:>9,.0f} texts/s ({base_time:.3f} s)   speed-up {base_time / ours_time:.1f}x"
        )
    print(f"{'PASS' if passed else 'FAIL'}: target >= {TARGET_TEXTS_PER_SECOND:,} texts/s on one core")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
