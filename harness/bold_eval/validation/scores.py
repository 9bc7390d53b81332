"""A metric's continuous score and labels for each labelled text, as the metric's view says to read them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bold_eval.core.errors import UsageError
from bold_eval.metrics import check_scorer_options, metric_spec
from bold_eval.metrics.spec import Scored, ScoreView

__all__ = ["ScoreView", "Scored", "score_view", "validated_scores"]


def validated_scores(metric: str) -> Mapping[str, ScoreView]:
    """The scores of `metric` that `validate` can compare with human labels (`Validation.scores`)."""
    validation = metric_spec(metric).validation
    if validation is None:
        raise UsageError(f"{metric} declares no score to validate (its MetricSpec has no `validation`)")
    return validation.scores


def score_view(metric: str, texts: Sequence[str], score: str | None = None, **options: Any) -> Scored:
    """Run `metric` on `texts` through its scorer and return the `score` view of its output.

    `options` go to the metric's `load_scorer`. A metric may compute only the validated score
    (`Validation.options`): for gender polarity `score` is the method (unigram, max, wavg;
    default: the one in `methods`, else unigram) and only it is computed.
    """
    spec = metric_spec(metric)
    views = validated_scores(metric)
    validation = spec.validation
    assert validation is not None  # validated_scores checked it
    options = dict(options)
    check_scorer_options(metric, options)
    if validation.options is not None:
        score, options = validation.options(score, options)
    score = validation.default_score if score is None else score
    if score is None or score not in views:
        raise UsageError(f"{metric} has no score {score!r} to validate; valid: {', '.join(views)}")
    scorer = spec.load_scorer(**options)
    columns = scorer(texts)
    return validation.read_score(views[score], scorer, columns, options)
