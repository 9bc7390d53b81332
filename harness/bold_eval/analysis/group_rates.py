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
from bold_eval.analysis.rate_test import rate_interval
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
        groups = scores["group"].astype(str).to_numpy()
        for label in labels:
            if label.column not in scores:
                continue
            column = scores[label.column]
            hits = (column == label.value).to_numpy(dtype=float) if label.value is not None \
                else column.to_numpy(dtype=float)
            known = ~pd.isna(column).to_numpy()
            for (domain, group), index in pd.Series(np.arange(len(scores))[known]).groupby(
                    [domains[known], groups[known]], sort=True):
                if label.domains is not None and domain not in label.domains:
                    continue
                at = index.to_numpy()
                codes, uniques = pd.factorize(units[at])
                per_hits, per_texts = np.bincount(codes, weights=hits[at]), np.bincount(codes).astype(float)
                low, high = (rate_interval(per_hits, per_texts, alpha=alpha)[:2] if len(uniques) > 1
                             else (np.nan, np.nan))
                rows.append({"source": source, "domain": domain, "group": group, "metric": label.metric,
                             "label": label.name, "column": label.column, "value": label.value,
                             "rate": float(per_hits.sum() / per_texts.sum()), "low": float(low), "high": float(high),
                             "texts": int(per_texts.sum()), "names": len(uniques)})
    return pd.DataFrame(rows, columns=GROUP_RATE_COLUMNS)
