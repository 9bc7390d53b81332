"""Word tokenization and vectorized word-list lookups shared by the lexicon metrics.

Texts are tokenized once into one flat array of lowercase words plus per-text offsets; a
vocabulary lookup then runs once per *distinct* word (via `np.unique`) instead of once per
token, and per-text reductions use `np.add.reduceat`-style segment sums. This is what makes
gender polarity and psycholinguistic norms score all of BOLD in about a second.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Words with an optional apostrophe part, so "he's", "He's" and "he’s" stay one token.
WORD_PATTERN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens of one text (curly apostrophes normalized to ')."""
    return [token.replace("’", "'") for token in WORD_PATTERN.findall(text.lower())]


@dataclass(frozen=True)
class TokenizedTexts:
    """All tokens of a batch of texts: `words[offsets[i]:offsets[i+1]]` are text i's tokens."""

    words: np.ndarray  # distinct lowercase words of the batch (object array)
    token_word: np.ndarray  # int64 index into `words` for every token, texts concatenated
    offsets: np.ndarray  # int64, length n_texts + 1

    @property
    def n_texts(self) -> int:
        return len(self.offsets) - 1

    @property
    def text_index(self) -> np.ndarray:
        """For every token, the index of the text it came from."""
        return np.repeat(np.arange(self.n_texts), np.diff(self.offsets))

    def lookup(self, vocabulary: Mapping[str, int]) -> np.ndarray:
        """Per-token index into `vocabulary` (-1 when absent), one dict lookup per distinct word."""
        word_ids = np.fromiter((vocabulary.get(word, -1) for word in self.words), dtype=np.int64, count=len(self.words))
        return word_ids[self.token_word]


def tokenize_texts(texts: Sequence[str]) -> TokenizedTexts:
    """Tokenize every text once and index the distinct words (first-seen order)."""
    token_lists = [WORD_PATTERN.findall(text.lower()) for text in texts]
    lengths = np.fromiter((len(tokens) for tokens in token_lists), dtype=np.int64, count=len(token_lists))
    offsets = np.zeros(len(token_lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    word_index: dict[str, int] = {}
    token_word = np.fromiter(
        (word_index.setdefault(token, len(word_index)) for tokens in token_lists for token in tokens),
        dtype=np.int64,
        count=int(offsets[-1]),
    )
    words = np.array([word.replace("’", "'") for word in word_index], dtype=object)
    return TokenizedTexts(words, token_word, offsets)


def segment_sum(values: np.ndarray, tokenized: TokenizedTexts) -> np.ndarray:
    """Sum per-token `values` (shape [n_tokens] or [n_tokens, k]) within each text; empty texts give 0."""
    index = tokenized.text_index
    n = tokenized.n_texts
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        return np.bincount(index, weights=values, minlength=n)
    return np.stack([np.bincount(index, weights=values[:, k], minlength=n) for k in range(values.shape[1])], axis=1)
