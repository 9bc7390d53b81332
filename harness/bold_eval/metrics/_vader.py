"""VADER's `polarity_scores` in time linear in the text length, with vaderSentiment's exact outputs.

vaderSentiment 3.3.2 (MIT licence, C.J. Hutto) is quadratic in the number of words of a text:
`_negation_check` and `_special_idioms_check` rebuild the lowercase list of *all* words for
every lexicon word, and `_but_check` calls `list.index` plus `pop`/`insert` for every word. A
100k-character text takes seconds and a 1 MB text hours. This module ports
`SentimentIntensityAnalyzer.polarity_scores` rule for rule, with the lowercase words built once
per text and the "but" rule's first-index lookups kept in a heap per value, and reuses
vaderSentiment's lexicon, constants and its linear helpers (`allcap_differential`,
`scalar_inc_dec`, `negated`, `score_valence`). The per-word sentiments list, including the int
0 of unrated words and the quirks of `_but_check` (it scales the *first* word with an equal
value, not the current one), is the one vaderSentiment builds, so the scores are identical;
tests/metrics/test_vader_port.py checks this on every BOLD Wikipedia sentence and on long texts.
"""

from __future__ import annotations

import heapq
import re
import string
from collections.abc import Collection, Iterable
from typing import Any

from vaderSentiment.vaderSentiment import (
    BOOSTER_DICT,
    C_INCR,
    N_SCALAR,
    SPECIAL_CASES,
    SentimentIntensityAnalyzer,
    allcap_differential,
    negated,
    scalar_inc_dec,
)

_PUNCTUATION = string.punctuation


def _strip_punc_if_word(token: str) -> str:
    """SentiText._strip_punc_if_word: strip surrounding punctuation unless <= 2 characters remain."""
    stripped = token.strip(_PUNCTUATION)
    return token if len(stripped) <= 2 else stripped


def _character_class(characters: Iterable[str]) -> re.Pattern[str] | None:
    """One regex character class of `characters`, written as ranges of consecutive code points:
    a class of ~1,200 single astral-plane characters is scanned item by item, ranges are not."""
    ranges: list[list[int]] = []
    for code in sorted(set(map(ord, characters))):
        if ranges and code == ranges[-1][1] + 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    if not ranges:
        return None
    parts = (re.escape(chr(lo)) + ("" if lo == hi else "-" + re.escape(chr(hi))) for lo, hi in ranges)
    return re.compile("[" + "".join(parts) + "]")


class LinearVader:
    """`polarity_scores(text)` equal to vaderSentiment's, in O(n log n) for n words (O(n) without "but")."""

    def __init__(self, analyzer: SentimentIntensityAnalyzer | None = None):
        self.analyzer = analyzer if analyzer is not None else SentimentIntensityAnalyzer()
        self.lexicon: dict[str, float] = self.analyzer.lexicon
        self.emojis: dict[str, str] = self.analyzer.emojis
        # vaderSentiment replaces emojis character by character, so only one-character keys ever match.
        self._emoji_pattern = _character_class(key for key in self.emojis if len(key) == 1)

    def _replace_emojis(self, text: str) -> str:
        """Each emoji -> its description, preceded by a space unless at the start or after a space."""
        if text.isascii() or self._emoji_pattern is None or self._emoji_pattern.search(text) is None:
            return text.strip()
        emojis = self.emojis

        def describe(match: re.Match[str]) -> str:
            start = match.start()
            # vaderSentiment's prev_space: True at the start and after " ", False after an emoji.
            space = "" if start == 0 or text[start - 1] == " " else " "
            return space + emojis[match.group(0)]

        return self._emoji_pattern.sub(describe, text).strip()

    def words(self, text: str) -> list[str]:
        """SentiText.words_and_emoticons of the emoji-replaced text."""
        return [_strip_punc_if_word(token) for token in self._replace_emojis(text).split()]

    def polarity_scores(self, text: str, drop: Collection[str] = ()) -> dict[str, float]:
        """{"neg", "neu", "pos", "compound"} as vaderSentiment returns them.

        `drop`: words (after punctuation stripping, exact case) removed before any rule runs, as
        if the text did not contain them; the empty default leaves vaderSentiment's result as is.
        """
        text = self._replace_emojis(text)
        words = [_strip_punc_if_word(token) for token in text.split()]
        if drop:
            words = [word for word in words if word not in drop]
        lower = [word.lower() for word in words]
        is_cap_diff = allcap_differential(words)
        n = len(words)
        sentiments: list[Any] = []
        for i, item_lower in enumerate(lower):
            # vaderSentiment appends the int 0 for modifiers and unrated words; kept for identical sums.
            if item_lower in BOOSTER_DICT or (item_lower == "kind" and i < n - 1 and lower[i + 1] == "of"):
                sentiments.append(0)
                continue
            sentiments.append(self._valence(words, lower, i, is_cap_diff))
        _but_check(lower, sentiments)
        return self.analyzer.score_valence(sentiments, text)

    def _valence(self, words: list[str], lower: list[str], i: int, is_cap_diff: bool) -> Any:
        """SentimentIntensityAnalyzer.sentiment_valence for word i (0 when it is not in the lexicon)."""
        lexicon = self.lexicon
        item_lower = lower[i]
        if item_lower not in lexicon:
            return 0
        valence = lexicon[item_lower]
        if item_lower == "no" and i != len(words) - 1 and lower[i + 1] in lexicon:
            valence = 0.0
        if (
            (i > 0 and lower[i - 1] == "no")
            or (i > 1 and lower[i - 2] == "no")
            or (i > 2 and lower[i - 3] == "no" and lower[i - 1] in ("or", "nor"))
        ):
            valence = lexicon[item_lower] * N_SCALAR
        if words[i].isupper() and is_cap_diff:
            if valence > 0:
                valence += C_INCR
            else:
                valence -= C_INCR
        for start_i in range(3):
            if i > start_i and lower[i - (start_i + 1)] not in lexicon:
                s = scalar_inc_dec(words[i - (start_i + 1)], valence, is_cap_diff)
                if start_i == 1 and s != 0:
                    s = s * 0.95
                if start_i == 2 and s != 0:
                    s = s * 0.9
                valence = valence + s
                valence = _negation_check(valence, lower, start_i, i)
                if start_i == 2:
                    valence = _special_idioms_check(valence, lower, i)
        return _least_check(valence, lower, i, lexicon)


def _negation_check(valence: Any, lower: list[str], start_i: int, i: int) -> Any:
    """SentimentIntensityAnalyzer._negation_check on the precomputed lowercase words."""
    if start_i == 0:
        if negated([lower[i - 1]]):
            valence = valence * N_SCALAR
    if start_i == 1:
        if lower[i - 2] == "never" and (lower[i - 1] == "so" or lower[i - 1] == "this"):
            valence = valence * 1.25
        elif lower[i - 2] == "without" and lower[i - 1] == "doubt":
            pass
        elif negated([lower[i - 2]]):
            valence = valence * N_SCALAR
    if start_i == 2:
        if (lower[i - 3] == "never" and (lower[i - 2] == "so" or lower[i - 2] == "this")) or (
            lower[i - 1] == "so" or lower[i - 1] == "this"
        ):
            valence = valence * 1.25
        elif lower[i - 3] == "without" and (lower[i - 2] == "doubt" or lower[i - 1] == "doubt"):
            pass
        elif negated([lower[i - 3]]):
            valence = valence * N_SCALAR
    return valence


def _special_idioms_check(valence: Any, lower: list[str], i: int) -> Any:
    """SentimentIntensityAnalyzer._special_idioms_check (called with i >= 3) on the lowercase words."""
    onezero = f"{lower[i - 1]} {lower[i]}"
    twoonezero = f"{lower[i - 2]} {lower[i - 1]} {lower[i]}"
    twoone = f"{lower[i - 2]} {lower[i - 1]}"
    threetwoone = f"{lower[i - 3]} {lower[i - 2]} {lower[i - 1]}"
    threetwo = f"{lower[i - 3]} {lower[i - 2]}"
    for sequence in (onezero, twoonezero, twoone, threetwoone, threetwo):
        if sequence in SPECIAL_CASES:
            valence = SPECIAL_CASES[sequence]
            break
    if len(lower) - 1 > i:
        zeroone = f"{lower[i]} {lower[i + 1]}"
        if zeroone in SPECIAL_CASES:
            valence = SPECIAL_CASES[zeroone]
    if len(lower) - 1 > i + 1:
        zeroonetwo = f"{lower[i]} {lower[i + 1]} {lower[i + 2]}"
        if zeroonetwo in SPECIAL_CASES:
            valence = SPECIAL_CASES[zeroonetwo]
    for n_gram in (threetwoone, threetwo, twoone):
        if n_gram in BOOSTER_DICT:
            valence = valence + BOOSTER_DICT[n_gram]
    return valence


def _least_check(valence: Any, lower: list[str], i: int, lexicon: dict[str, float]) -> Any:
    """SentimentIntensityAnalyzer._least_check on the lowercase words."""
    if i > 1 and lower[i - 1] not in lexicon and lower[i - 1] == "least":
        if lower[i - 2] != "at" and lower[i - 2] != "very":
            valence = valence * N_SCALAR
    elif i > 0 and lower[i - 1] not in lexicon and lower[i - 1] == "least":
        valence = valence * N_SCALAR
    return valence


def _but_check(lower: list[str], sentiments: list[Any]) -> None:
    """SentimentIntensityAnalyzer._but_check, in place, without its quadratic list.index.

    vaderSentiment walks the list; for the k-th current value v it finds the *first* index si
    holding a value == v (often an earlier word, not k), and replaces that entry by v * 0.5
    when si is before the first "but", by v * 1.5 when after it. Here each value keeps a
    min-heap of the indices that may hold it (stale entries are skipped lazily), so the first
    index is found in O(log n) instead of O(n); dict keys compare with ==, as list.index does.
    """
    try:
        bi = lower.index("but")
    except ValueError:
        return
    heaps: dict[Any, list[int]] = {}
    for index, value in enumerate(sentiments):
        heaps.setdefault(value, []).append(index)  # ascending indices: already a valid heap
    for k in range(len(sentiments)):
        value = sentiments[k]
        heap = heaps[value]
        while sentiments[heap[0]] != value:  # an index whose value has changed since it was pushed
            heapq.heappop(heap)
        si = heap[0]
        if si < bi:
            new = value * 0.5
        elif si > bi:
            new = value * 1.5
        else:
            continue
        sentiments[si] = new
        if new != value:  # still == value (zero): si stays valid in the same heap
            heapq.heappush(heaps.setdefault(new, []), si)
