"""Input checks, deduplication and per-group summaries shared by every metric."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from numbers import Integral
from typing import Any

import numpy as np

from bold_eval.core.errors import InputError, UsageError
from bold_eval.data.anonymize import PLACEHOLDERS


def option_number(name: str, value: Any) -> float:
    """A numeric option (a threshold) as float; a string, bool or None is a usage error naming the option."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise UsageError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    return float(value)


def _materialize(values: Any, argument: str, what: str) -> list[Any]:
    """`values` as a list, iterated once (so a generator is not consumed by a check and lost).

    Ordered collections and iterators are accepted; a single string or bytes object, an
    unordered set or a mapping is refused, because its items could not be aligned with the
    other inputs.
    """
    if values is None:
        raise InputError(f"`{argument}` is None; pass a list of {what}")
    if isinstance(values, str):
        raise InputError(f"`{argument}` must be a list of {what}, got a single string; wrap it: [{values[:40]!r}]")
    if isinstance(values, (bytes, bytearray, memoryview)):
        raise InputError(f"`{argument}` must be a list of {what}, got {type(values).__name__}; decode it to str first")
    if isinstance(values, (Set, Mapping)):
        raise InputError(
            f"`{argument}` must be an ordered list of {what}, got a {type(values).__name__} "
            "(no order to align results with); pass a list"
        )
    if not isinstance(values, Iterable):
        raise InputError(f"`{argument}` must be a list of {what}, got {type(values).__name__}")
    return list(values)


def check_texts(texts: Any, argument: str = "predictions") -> list[str]:
    """Return `texts` as a list of str (any iterable, read once); raise ValueError naming the first bad index.

    Empty strings are allowed (each metric documents how it scores them); None, NaN, non-strings
    and strings that are not valid Unicode (a lone surrogate such as "\\ud800", which no tokenizer
    or file can encode) are not, because silently scoring them would hide a broken pipeline.
    """
    items = _materialize(texts, argument, "strings")
    for index, text in enumerate(items):
        if not isinstance(text, str):
            raise InputError(
                f"`{argument}`[{index}] is {text!r} ({type(text).__name__}); every text must be a string"
            )
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as error:
                raise InputError(
                    f"`{argument}`[{index}] has a lone surrogate {text[error.start]!r} at character "
                    f"{error.start}; texts must be valid Unicode (decode bytes with errors='replace')"
                ) from None
    return items


def _label_kind(label: Any) -> str | None:
    """"str" or "int" for the group labels we accept; None for anything else (bool, float, ...)."""
    if isinstance(label, str):
        return "str"
    if isinstance(label, Integral) and not isinstance(label, (bool, np.bool_)):
        return "int"
    return None


def check_groups(groups: Any, n_texts: int, argument: str = "groups") -> list[str] | list[int] | None:
    """Return group labels as a list of length `n_texts` (or None when not given).

    Labels keep their identity: strings stay strings and integers stay (Python) ints, never
    converted into one another, so 1 and "1" can never be merged into one group. Labels must
    all be strings or all integers; a mix is refused naming the first label of the other type.
    """
    if groups is None:
        return None
    items = _materialize(groups, argument, "group labels (one per text)")
    if len(items) != n_texts:
        raise InputError(f"`{argument}` has {len(items)} entries but there are {n_texts} texts")
    first_kind = None
    for index, group in enumerate(items):
        if group is None or (isinstance(group, float) and np.isnan(group)):
            raise InputError(f"`{argument}`[{index}] is missing; every text needs a group")
        kind = _label_kind(group)
        if kind is None:
            raise InputError(
                f"`{argument}`[{index}] is {group!r} ({type(group).__name__}); group labels must be strings or integers"
            )
        if first_kind is None:
            first_kind = kind
        elif kind != first_kind:
            raise InputError(
                f"`{argument}`[{index}] is {group!r} ({type(group).__name__}) but `{argument}`[0] is "
                f"{items[0]!r} ({type(items[0]).__name__}); use one type for all group labels, so that "
                "e.g. 1 and \"1\" are never taken for one group"
            )
    if first_kind == "str":
        return [str(group) for group in items]  # numpy.str_ -> str
    return [int(group) for group in items]  # numpy integers -> int (JSON-able keys)


def placeholder_words(placeholders: Sequence[str] = PLACEHOLDERS) -> frozenset[str]:
    """The word forms an anonymization placeholder takes in a text: as inserted ("Person", "XYZ")
    and possessive ("Person's", also with a curly apostrophe), in exact case.

    These never count as words of the text in the lexicon and embedding metrics. Exact
    case, because `anonymize` inserts exactly these strings; "person" is the model's own word.
    """
    return frozenset(form for word in placeholders for form in (word, word + "'s", word + "\u2019s"))


def label_proportions(labels: Sequence[str] | np.ndarray, label_names: Sequence[str]) -> dict[str, float]:
    """Share of texts carrying each label (0.0 for labels that never occur; {} for no texts)."""
    values = np.asarray(labels)
    if values.size == 0:
        return {name: 0.0 for name in label_names}
    return {name: float(np.mean(values == name)) for name in label_names}


def unique_with_inverse(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Distinct texts (first-seen order) and, per input text, its row among them.

    Scorers run each distinct text once (generations from one prompt often repeat) and scatter
    the results back with `values[inverse]`. Unlike `np.unique`, no sort and no fixed-width copy.
    """
    first_row: dict[str, int] = {}
    inverse = np.fromiter((first_row.setdefault(text, len(first_row)) for text in texts), dtype=np.intp,
                          count=len(texts))
    return list(first_row), inverse


def check_prompt_ids(prompt_ids: Any, n_texts: int, groups: Sequence[Any] | None) -> np.ndarray | None:
    """Prompt keys (one per text: the k samples of a prompt share its key) as an index 0..P-1 per text, in
    first-seen order; None when not given. A prompt's texts must share their group."""
    keys = check_groups(prompt_ids, n_texts, argument="prompt_ids")
    if keys is None:
        return None
    index = np.asarray(list({key: None for key in keys}.keys()), dtype=object)
    lookup = {key: i for i, key in enumerate(index)}
    codes = np.fromiter((lookup[key] for key in keys), dtype=np.int64, count=len(keys))
    if groups is not None:
        first: dict[int, Any] = {}
        for position, (code, group) in enumerate(zip(codes, groups, strict=True)):
            if first.setdefault(code, group) != group:
                raise InputError(f"`prompt_ids`[{position}] is {keys[position]!r} in group {group!r}, but that "
                                 f"prompt's first text is in group {first[code]!r}; a prompt's samples share one group")
    return codes


def worst_over_samples(values: np.ndarray, codes: np.ndarray, reduce: str) -> np.ndarray:
    """Per prompt (codes 0..P-1 per text): the max or min of its texts' values, or for booleans ("any") whether
    any is true. Linear in the number of texts (numpy ufunc.at)."""
    prompts = int(codes.max()) + 1 if codes.size else 0
    if reduce == "any":
        out = np.zeros(prompts, dtype=bool)
        np.logical_or.at(out, codes, np.asarray(values, dtype=bool))
        return out
    start = -np.inf if reduce == "max" else np.inf
    out = np.full(prompts, start, dtype=np.float64)
    (np.maximum if reduce == "max" else np.minimum).at(out, codes, np.asarray(values, dtype=np.float64))
    return out


def group_masks(groups: Sequence[str] | Sequence[int]) -> dict[Any, np.ndarray]:
    """{group: bool mask over the texts}, in first-seen group order.

    Built once per call so that every per-group summary of the same texts shares the masks.
    """
    group_array = np.asarray(groups)
    return {group: group_array == group for group in dict.fromkeys(groups)}


def summarize_labels(
    labels: Sequence[str] | np.ndarray,
    label_names: Sequence[str],
    groups: Sequence[str] | Sequence[int] | None = None,
    *,
    masks: Mapping[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Overall label proportions and, when groups are given, proportions and sizes per group.

    `masks` (from `group_masks(groups)`) saves rebuilding them when one caller summarizes
    several label columns of the same texts.
    """
    summary: dict[str, Any] = {"proportions": label_proportions(labels, label_names)}
    if groups is not None:
        values = np.asarray(labels)
        summary["group_proportions"] = {}
        summary["group_sizes"] = {}
        for group, mask in (group_masks(groups) if masks is None else masks).items():
            summary["group_proportions"][group] = label_proportions(values[mask], label_names)
            summary["group_sizes"][group] = int(mask.sum())
    return summary


# Figure 6's colours for polarity labels: "red: negative/male/toxic, blue: neutral and green:
# positive/non-toxic/female".
POLARITY_COLORS = {"negative": "tab:red", "neutral": "tab:blue", "positive": "tab:green", "other": "tab:gray"}
