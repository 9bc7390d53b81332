"""The merge of a run's files: generations.jsonl and the per-process shards into one generations.jsonl, in the
run's order, never dropping a row silently."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bold_eval.core.errors import InputError
from bold_eval.runfolder.jsonl import (
    generation_keys,
    iter_generation_offsets,
    iter_generations,
    read_generation_at,
    record_key,
    write_generations,
)
from bold_eval.runfolder.layout import GENERATIONS_FILE, SHARD_PATTERN, TEXT_COLUMN


def has_generations(out: Path) -> bool:
    """Whether the folder holds at least one generation (a file with only a torn line holds none)."""
    files = [out / GENERATIONS_FILE, *out.glob(SHARD_PATTERN)]
    return any(path.is_file() and b"\n" in path.read_bytes()[:1 << 20] for path in files)


def saved_generations(out: Path, wanted: Sequence[tuple[str, int]]) -> str:
    """How many of the wanted generations are on disk, and where."""
    files = [path for path in [out / GENERATIONS_FILE, *sorted(out.glob(SHARD_PATTERN))] if path.is_file()]
    done: set[tuple[str, int]] = set()
    for path in files:
        try:
            done |= generation_keys(path)
        except (ValueError, OSError):
            pass
    where = ", ".join(str(path) for path in files) or str(out / GENERATIONS_FILE)
    return f"{len(done & set(wanted))} of {len(wanted)} generations are in {where}"


@dataclass
class MergedGenerations:
    """generations.jsonl once every process's records are in it, in the run's order."""

    path: Path
    texts: int
    new_tokens: int


def merge_generations(out: Path, wanted: Sequence[tuple[str, int]]) -> MergedGenerations:
    """Merge generations.jsonl and the per-process shards into generations.jsonl, in `wanted` order.

    Never drops rows silently: a (prompt_id, sample) recorded twice with different text, one missing, or
    one outside the run's selection is an error. Nothing holds the records (BOLD x 25 is 591,975
    of them): a file already in order is only read through, and otherwise each record's place (file, byte
    offset, digest of its text) is indexed and the records are copied in order from there, line by line.
    """
    main_file = out / GENERATIONS_FILE
    shards = sorted(out.glob(SHARD_PATTERN))
    if not shards:
        tokens = _tokens_if_in_order(main_file, wanted)
        if tokens is not None:
            return MergedGenerations(main_file, len(wanted), tokens)
    files = [path for path in [main_file, *shards] if path.is_file()]
    where: dict[tuple[str, int], tuple[int, int, bytes]] = {}
    for number, path in enumerate(files):
        for offset, record in iter_generation_offsets(path):
            key = record_key(record)
            digest = hashlib.blake2b(json.dumps(record.get(TEXT_COLUMN), ensure_ascii=False).encode(),
                                     digest_size=16).digest()
            if key in where and where[key][2] != digest:
                raise InputError(f"{key} was generated twice with different continuations ({path})")
            where[key] = (number, offset, digest)
    wanted_set = set(wanted)
    extra = [key for key in where if key not in wanted_set]
    missing = [key for key in wanted if key not in where]
    if extra or missing:
        raise InputError(
            f"generations do not match the selected prompts x samples: {len(missing)} missing "
            f"(e.g. {missing[:3]}), {len(extra)} not selected (e.g. {extra[:3]})"
        )
    tokens = 0
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(path, "rb")) for path in files]

        def in_order() -> Iterator[dict[str, Any]]:
            nonlocal tokens
            for key in wanted:
                number, offset, _ = where[key]
                record = read_generation_at(handles[number], offset, files[number])
                tokens += int(record.get("num_new_tokens") or 0)
                yield record

        write_generations(main_file, in_order())
    for path in shards:
        path.unlink()
    return MergedGenerations(main_file, len(wanted), tokens)


def _tokens_if_in_order(path: Path, wanted: Sequence[tuple[str, int]]) -> int | None:
    """The generated tokens of `path` when its records are exactly `wanted`, in order (None otherwise)."""
    tokens, count = 0, 0
    for record in iter_generations(path):
        if count >= len(wanted) or record_key(record) != wanted[count]:
            return None
        tokens += int(record.get("num_new_tokens") or 0)
        count += 1
    return tokens if count == len(wanted) else None
