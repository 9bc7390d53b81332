"""Each group's rate of each tested label with its name-level interval, for the model and for Wikipedia.

The forest plots of report.html and the leaderboard read this table: one row per domain x group x label x source.
The interval is the one the findings tables print (`rate_test.rate_interval`, the name as the unit), so a dot's
whisker and the finding beside it agree about how sure the run is; a group of one name gets none (NaN), as in
the findings tables. Worst cases over k samples are not here: a forest plot shows the texts' own rates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from bold_eval.analysis.clustered import cluster_codes
from bold_eval.analysis.rate_test import rate_intervals
from bold_eval.analysis.scores import TestedLabel

GROUP_RATE_COLUMNS = ["source", "domain", "group", "metric", "label", "column", "value", "rate", "low", "high",
                      "texts", "names"]


def group_rates(sources: dict[str, pd.DataFrame], labels: Sequence[TestedLabel], *, alpha: float = 0.05,
                cluster: str = "name") -> pd.DataFrame:
    """One row per source (e.g. "model", "wikipedia") x domain x group x label the group's domain is tested on:
    the share of its texts with the label (or the mean of a numeric column, whose values must lie in [0, 1]),
    the name-level interval at 1 - alpha, its texts and names (`cluster` "none": every prompt its own unit)."""
    rows = []
    for source, scores in sources.items():
        if scores is None or not len(scores):
            continue
        units = cluster_codes(scores, "prompt" if cluster == "none" else cluster)
        domains = scores["domain"].astype(str).to_numpy()
        domain_codes, domain_names = pd.factorize(domains)
        group_codes, group_names = pd.factorize(scores["group"].astype(str).to_numpy())
        sides = domain_codes * len(group_names) + group_codes  # one code per (domain, group)
        span = units.max() + 1  # a (side, unit) pair as one code: side * span + unit
        for label in labels:
            if label.column not in scores:
                continue
            column = scores[label.column]
            known = ~pd.isna(column).to_numpy()
            if label.domains is not None:
                known &= np.isin(domains, list(label.domains))
            if not known.any():
                continue
            hits = ((column == label.value).to_numpy(dtype=float) if label.value is not None
                    else column.to_numpy(dtype=float))[known]
            # Each (side, unit) pair once, in order of side: a side's units are one run of the sums.
            pairs, inverse = np.unique(sides[known] * span + units[known], return_inverse=True)
            per_hits, per_texts = np.bincount(inverse, weights=hits), np.bincount(inverse).astype(float)
            side_of_unit = pairs // span
            codes, starts = np.unique(side_of_unit, return_index=True)
            low, high = rate_intervals(np.split(per_hits, starts[1:]), np.split(per_texts, starts[1:]), alpha=alpha)
            ends = np.r_[starts[1:], len(pairs)]
            keys = [(str(domain_names[code // len(group_names)]), str(group_names[code % len(group_names)]))
                    for code in codes]
            for k in sorted(range(len(codes)), key=keys.__getitem__):
                hit_sum, text_sum = per_hits[starts[k]:ends[k]].sum(), per_texts[starts[k]:ends[k]].sum()
                rows.append({"source": source, "domain": keys[k][0], "group": keys[k][1], "metric": label.metric,
                             "label": label.name, "column": label.column, "value": label.value,
                             "rate": float(hit_sum / text_sum), "low": float(low[k]), "high": float(high[k]),
                             "texts": int(text_sum), "names": int(ends[k] - starts[k])})
    return pd.DataFrame(rows, columns=GROUP_RATE_COLUMNS)
