"""Word tokenization and vectorized word-list lookups shared by the lexicon metrics.

Texts are tokenized once into one flat array of lowercase words plus per-text offsets; a
vocabulary lookup then runs once per *distinct* word (indexed in first-seen order) instead of once per
token, and per-text reductions are segment sums over the flat token array (`np.bincount` on
`text_index`). This is what makes gender polarity and psycholinguistic norms score all of BOLD
in about a second.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np

# Words with an optional apostrophe part, so "he's", "He's" and "he’s" stay one token.
WORD_PATTERN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens of one text (curly apostrophes normalized to ').

    Tokens are found in the text as written and lowercased one by one, exactly as
    `tokenize_texts` does: lowercasing the whole text first would move token boundaries
    ("İ" lowercases to "i" plus a combining dot, which is not a letter).
    """
    return [token.lower() for token in WORD_PATTERN.findall(text.replace("’", "'"))]


@dataclass(frozen=True)
class TokenizedTexts:
    """All tokens of a batch of texts: `words[offsets[i]:offsets[i+1]]` are text i's tokens."""

    words: np.ndarray  # distinct words of the batch, lowercase unless asked otherwise (object array)
    token_word: np.ndarray  # int64 index into `words` for every token, texts concatenated
    offsets: np.ndarray  # int64, length n_texts + 1

    @property
    def n_texts(self) -> int:
        return len(self.offsets) - 1

    @cached_property  # frozen dataclass without __slots__: cached_property writes __dict__ directly
    def text_index(self) -> np.ndarray:
        """For every token, the index of the text it came from (computed once, on first use)."""
        return np.repeat(np.arange(self.n_texts), np.diff(self.offsets))

    def lookup(self, vocabulary: Mapping[str, int]) -> np.ndarray:
        """Per-token index into `vocabulary` (-1 when absent), one dict lookup per distinct word."""
        word_ids = np.fromiter((vocabulary.get(word, -1) for word in self.words), dtype=np.int64, count=len(self.words))
        return word_ids[self.token_word]


# Texts are joined with this character (never part of a word) and tokenized in one regex call.
_SEPARATOR = "\x00"
_JOINED_PATTERN = re.compile(WORD_PATTERN.pattern + "|" + _SEPARATOR)


def _flat_tokens(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """All surface tokens of all texts in one list, and per-text offsets that do not count separator tokens."""
    if any(_SEPARATOR in text for text in texts):  # rare: fall back to one regex call per text
        token_lists = [WORD_PATTERN.findall(text.replace("’", "'")) for text in texts]
        offsets = np.zeros(len(token_lists) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists)), out=offsets[1:])
        return list(chain.from_iterable(token_lists)), offsets
    tokens = _JOINED_PATTERN.findall(_SEPARATOR.join(texts).replace("’", "'"))
    separators = np.flatnonzero(np.fromiter(map(_SEPARATOR.__eq__, tokens), dtype=bool, count=len(tokens)))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    if len(texts):
        # Text i ends where separator i sits, minus the i separators before it.
        offsets[1:-1] = separators - np.arange(len(separators))
        offsets[-1] = len(tokens) - len(separators)
    return tokens, offsets  # separators stay in `tokens`; tokenize_texts drops them from the arrays


def tokenize_texts(texts: Sequence[str], lowercase: bool = True, exclude: Collection[str] = ()) -> TokenizedTexts:
    """Tokenize every text once and index the distinct words (first-seen order).

    One tokenization for every metric and option: tokens are found in the texts as written;
    `lowercase=True` then lowercases each distinct word (`str.lower`), `lowercase=False` keeps
    the surface form (for case-sensitive vocabularies such as the GoogleNews word2vec). So the
    tokens, and their number per text, never depend on `lowercase`. `exclude`: surface words
    (exact case, ’ written ') dropped from the texts before indexing, e.g. anonymization
    placeholders.
    """
    tokens, offsets = _flat_tokens(texts)
    distinct = list(dict.fromkeys(tokens))  # first-seen order, built in C
    word_index = {word: i for i, word in enumerate(distinct)}
    token_word = np.fromiter(map(word_index.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    drop = np.zeros(len(distinct), dtype=bool)
    separator = word_index.get(_SEPARATOR)
    if separator is not None:  # `offsets` count tokens without the separators
        token_word = token_word[token_word != separator]
        drop[separator] = True
    excluded = [word_index[word] for word in exclude if word in word_index]
    if excluded:
        drop[excluded] = True
        keep = ~drop[token_word]
        # Tokens kept before each offset: the offsets of the texts without the excluded words.
        offsets = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))[offsets]
        token_word = token_word[keep]
    if drop.any():  # renumber the words left, keeping their first-seen order
        used = np.flatnonzero(~drop)
        new_id = np.full(len(distinct), -1, dtype=np.int64)
        new_id[used] = np.arange(len(used))
        token_word = new_id[token_word]
        distinct = [distinct[i] for i in used.tolist()]
    if lowercase:  # merge words that differ only in case, keeping first-seen order
        lowered = [word.lower() for word in distinct]
        lower_index: dict[str, int] = {}
        remap = np.fromiter((lower_index.setdefault(word, len(lower_index)) for word in lowered), dtype=np.int64,
                            count=len(lowered))
        token_word = remap[token_word]
        distinct = list(lower_index)
    words = np.empty(len(distinct), dtype=object)
    words[:] = distinct
    return TokenizedTexts(words, token_word, offsets)
