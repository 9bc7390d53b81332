"""A metric's continuous score and labels for each labelled text, as the metric's view says to read them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bold_eval.core.errors import InputError, UsageError
from bold_eval.metrics import check_scorer_options, metric_module


@dataclass(frozen=True)
class ScoreView:
    """What of a metric's output is compared with human labels: one continuous score and its labels."""

    metric: str
    score: str
    row_name: str  # the metric's row name in Table 8 ("sentiment", "Gender-Max", ...)
    description: str
    # Metric labels along the score axis, low to high, with Section 6.3's numeric codes; labels
    # without a code (regard's "other") have no place on the axis.
    codes: Mapping[str, int]
    score_range: tuple[float, float]
    # Metric labels that may stay without a human counterpart: predicting one counts as a miss.
    optional: tuple[str, ...] = ()
    # Figure 6 colours: "red: negative/male/toxic, blue: neutral and green: positive/non-toxic/female".
    colors: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Scored:
    """A metric's continuous score and labels for each text, and the cut points between labels."""

    view: ScoreView
    scores: np.ndarray
    labels: np.ndarray
    metric_labels: tuple[str, ...]
    thresholds: dict[str, float]
    options: dict[str, Any]


_POLARITY_COLORS = {"negative": "tab:red", "neutral": "tab:blue", "positive": "tab:green", "other": "tab:gray"}


VIEWS: dict[str, dict[str, ScoreView]] = {
    "sentiment": {
        "compound": ScoreView(
            "sentiment", "compound", "sentiment", "VADER compound score in [-1, 1] (Section 4.1)",
            {"negative": -1, "neutral": 0, "positive": 1}, (-1.0, 1.0), colors=_POLARITY_COLORS,
        ),
    },
    "toxicity": {
        "toxicity": ScoreView(
            "toxicity", "toxicity", "toxicity",
            "highest probability over the classifier's toxic labels, in [0, 1] (Section 4.2)",
            {"non-toxic": 0, "toxic": 1}, (0.0, 1.0), colors={"toxic": "tab:red", "non-toxic": "tab:green"},
        ),
    },
    "regard": {
        "regard": ScoreView(
            "regard", "regard", "regard",
            "P(positive) - P(negative) from the regard classifier, in [-1, 1] (Section 4.3)",
            {"negative": -1, "neutral": 0, "positive": 1}, (-1.0, 1.0), optional=("other",), colors=_POLARITY_COLORS,
        ),
    },
    "psycholinguistic": {
        variable: ScoreView(
            "psycholinguistic", variable, variable,
            f"text {variable}: mean scaled {variable} norm of its rated words, in [-1, 1] (Section 4.4)",
            {"negative": -1, "neutral": 0, "positive": 1}, (-1.0, 1.0), colors=_POLARITY_COLORS,
        )
        for variable in ("valence", "arousal", "dominance")
    },
    "gender_polarity": {
        method: ScoreView(
            "gender_polarity", method, row_name, description,
            {"male": -1, "neutral": 0, "female": 1}, (-1.0, 1.0),
            colors={"male": "tab:red", "neutral": "tab:blue", "female": "tab:green"},
        )
        for method, row_name, description in (
            ("unigram", "unigram",
             "(female - male tokens) / (female + male tokens), 0 without gendered tokens (Section 4.5)"),
            ("max", "Gender-Max", "Gender-Max: the word polarity of largest magnitude, in [-1, 1] (Section 4.5)"),
            ("wavg", "Gender-Wavg", "Gender-Wavg: sum sgn(b) b^2 / sum |b| over the words, in [-1, 1] (Section 4.5)"),
        )
    },
}


DEFAULT_SCORES = {"sentiment": "compound", "toxicity": "toxicity", "regard": "regard",
                  "psycholinguistic": "valence", "gender_polarity": "unigram"}


def score_view(metric: str, texts: Sequence[str], score: str | None = None, **options: Any) -> Scored:
    """Run `metric` on `texts` through its scorer and return the `score` view of its output.

    `options` go to `bold_eval.metrics.<metric>.load_scorer`. For gender polarity `score` is the
    method (unigram, max, wavg; default: the one in `methods`, else unigram) and only it is computed.
    """
    module = metric_module(metric)
    options = dict(options)
    check_scorer_options(metric, options)
    if metric == "gender_polarity":
        methods = options.get("methods")
        methods = [methods] if isinstance(methods, str) else methods
        if score is None:
            if methods is not None and len(methods) != 1:
                raise UsageError(
                    f"gender_polarity methods {list(methods)}: validate compares one score at a time; "
                    "pass score= (--score) with one of unigram, max, wavg"
                )
            score = methods[0] if methods else DEFAULT_SCORES[metric]
        elif methods is not None and score not in methods:
            raise UsageError(f"score {score!r} is not among the gender_polarity methods {list(methods)}")
        options["methods"] = [score]
    score = DEFAULT_SCORES[metric] if score is None else score
    views = VIEWS[metric]
    if score not in views:
        raise UsageError(f"{metric} has no score {score!r} to validate; valid: {', '.join(views)}")
    view = views[score]
    scorer = module.load_scorer(**options)
    columns = scorer(texts)
    return _VIEW_COLUMNS[metric](view, scorer, columns, options)


def _sentiment_view(view: ScoreView, scorer: Any, columns: dict, options: dict) -> Scored:
    thresholds = {"negative": scorer.negative_threshold, "positive": scorer.positive_threshold}
    return Scored(view, columns["compound"], columns["label"], tuple(view.codes), thresholds, options)


def _toxicity_view(view: ScoreView, scorer: Any, columns: dict, options: dict) -> Scored:
    labels = np.where(columns["is_toxic"], "toxic", "non-toxic").astype(object)
    return Scored(view, columns["score"], labels, tuple(view.codes), {"toxic": scorer.threshold}, options)


def _regard_view(view: ScoreView, scorer: Any, columns: dict, options: dict) -> Scored:
    missing = [label for label in ("positive", "negative") if label not in scorer.labels]
    if missing:
        raise InputError(
            f"the regard classifier has no {' or '.join(missing)} class (its labels: {list(scorer.labels)}); "
            "the regard score is P(positive) - P(negative)"
        )
    scores = np.asarray(columns["positive"], dtype=np.float64) - np.asarray(columns["negative"], dtype=np.float64)
    return Scored(view, scores, columns["label"], tuple(scorer.labels), {}, options)


def _psycholinguistic_view(view: ScoreView, scorer: Any, columns: dict, options: dict) -> Scored:
    variable = view.score
    thresholds = {"negative": scorer.thresholds[f"{variable}_negative"],
                  "positive": scorer.thresholds[f"{variable}_positive"]}
    return Scored(view, columns[variable], columns[f"{variable}_label"], tuple(view.codes), thresholds, options)


def _gender_polarity_view(view: ScoreView, scorer: Any, columns: dict, options: dict) -> Scored:
    method = view.score
    if method == "unigram":
        male = np.asarray(columns["male_tokens"], dtype=np.float64)
        female = np.asarray(columns["female_tokens"], dtype=np.float64)
        total = male + female
        scores = np.divide(female - male, total, out=np.zeros_like(total), where=total > 0)
        # Unigram matching labels by the sign of female - male (Section 4.5), i.e. of this score.
        return Scored(view, scores, columns["unigram_label"], tuple(view.codes), {}, options)
    thresholds = {"male": scorer.male_threshold, "female": scorer.female_threshold}
    return Scored(view, columns[method], columns[f"{method}_label"], tuple(view.codes), thresholds, options)


_VIEW_COLUMNS: dict[str, Callable[..., Scored]] = {
    "sentiment": _sentiment_view,
    "toxicity": _toxicity_view,
    "regard": _regard_view,
    "psycholinguistic": _psycholinguistic_view,
    "gender_polarity": _gender_polarity_view,
}
