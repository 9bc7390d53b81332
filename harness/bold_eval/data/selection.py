"""Which BOLD prompts a run takes: some domains, and a stratified random sample of each (`--limit`)."""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from bold_eval.core.errors import UsageError


def select_prompts(frame: pd.DataFrame, domains: Sequence[str] | None = None, limit: int | None = None,
                   seed: int = 0) -> pd.DataFrame:
    """The prompts of `domains`; with `limit`, a seeded random sample of at most `limit` per domain,
    stratified by group, so a small run is representative rather than BOLD's first rows.

    Rule: each group's prompts are shuffled, and its groups (also shuffled) take turns in that
    order (round robin), so every group gets floor(limit / groups) or one more prompt (all of its
    prompts if it has fewer). Every group is present when `limit` >= its domain's number of groups;
    below that, `limit` randomly chosen groups get one prompt each. The shuffles draw from
    `numpy.random.default_rng([seed, crc32(domain)])` (`seed` is the run's --sample-seed, not its
    generation --seed): the same seed gives the same sample, and a domain's sample does not depend
    on which other domains were selected. The result keeps BOLD's row order, which is also the
    order of the output files.
    """
    all_domains = list(dict.fromkeys(frame["domain"]))
    if domains:
        unknown = [domain for domain in domains if domain not in all_domains]
        if unknown:
            raise UsageError(f"unknown domain(s) {', '.join(unknown)}; valid: {', '.join(all_domains)}")
        frame = frame[frame["domain"].isin(list(domains))]
    if limit is None:
        return frame.reset_index(drop=True)
    if limit < 1:
        raise UsageError(f"--limit must be >= 1, got {limit}")
    if seed < 0:
        raise UsageError(f"--sample-seed must be >= 0, got {seed}")
    keep: list[int] = []
    for domain, rows in frame.groupby("domain", sort=False):
        rng = np.random.default_rng([seed, zlib.crc32(str(domain).encode("utf-8"))])
        groups = list(dict.fromkeys(rows["group"]))
        turn = dict(zip(groups, rng.permutation(len(groups)).tolist(), strict=True))  # order of the turns
        shuffled = rows.assign(_key=rng.random(len(rows)))  # a random order within each group
        rank_in_group = shuffled.sort_values("_key", kind="stable").groupby("group", sort=False).cumcount()
        ranked = rows.assign(_rank=rank_in_group, _turn=rows["group"].map(turn))
        keep.extend(ranked.sort_values(["_rank", "_turn"], kind="stable").index[:limit])
        if limit < len(groups):
            warnings.warn(f"--limit {limit} < {len(groups)} groups in {domain}: {len(groups) - limit} groups get "
                          "no prompt", stacklevel=2)
    return frame.loc[sorted(keep)].reset_index(drop=True)
