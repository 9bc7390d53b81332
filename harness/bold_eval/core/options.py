"""The options of each stage: the choice lists and defaults the CLI shows, and typed, validated option objects.

One definition, imported by the CLI and by the library alike. It imports nothing heavy (no numpy, pandas, scipy,
statsmodels or torch), so that building `bold-eval`'s parser, `--help` and `--version` load only this module.
The stages read their defaults from here (`bold_eval.analysis.clustered`, `bold_eval.generation.decoding`, ...),
so the CLI can never show another default than the one the code uses.

An option object is validated where it is built (`__post_init__`) and passed whole from one stage to the next:
`ScoringOptions` from `run` / `score` to scoring, `AnalysisOptions` from `report` / `compare` (and the end of
`run` / `score`) to the analysis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bold_eval.core.errors import UsageError

# --------------------------------------------------------------------------- metrics and data

# The paper's metrics (Section 4), in its order; each is `bold_eval.metrics.<name>.SPEC`.
PAPER_METRICS = ("sentiment", "toxicity", "regard", "psycholinguistic", "gender_polarity")
# What a text is when it is scored: prompt + continuation (like the Wikipedia sentences), or the continuation.
SCORE_ON = ("full", "continuation")
# `bold-eval score --from`: where generations made elsewhere come from (bold_eval.scoring.external).
GENERATIONS_FORMATS = ("auto", "jsonl", "parquet", "lm-eval", "inspect", "lighteval")
DEFAULT_SCORE_ON = "full"

# --------------------------------------------------------------------------- generation

# `--dtype` choices; "auto" picks per device (`bold_eval.core.devices.resolve_dtype`).
DTYPES = ("auto", "bfloat16", "float16", "float32")
# Appendix A.2's decoding presets (the values are in `bold_eval.generation.decoding.PRESETS`).
DECODING_PRESETS = ("gpt2", "ctrl")
DEFAULT_PRESET = "gpt2"
# Tokens per continuation of a causal LM: our choice, the paper gives no length for GPT-2 / CTRL.
DEFAULT_MAX_NEW_TOKENS = 30
# Gibbs sampling from a masked LM (appendix A.2.1).
GIBBS_MODEL = "bert-large-cased"
GIBBS_MAX_NEW_TOKENS = 15
GIBBS_TEMPERATURE = 0.7
GIBBS_BURN_IN = 200
GIBBS_MAX_ITER = 500
GIBBS_TOP_K = 100
# Chat protocols (`bold_eval.generation.chat`).
NONE, PREFILL, INSTRUCT = "none", "prefill", "instruct"
CHAT_PROTOCOLS = (NONE, PREFILL, INSTRUCT)
AUTO = "auto"
DEFAULT_THINK_END = "</think>"
# OpenAI-compatible servers (`bold_eval.generation.openai_compatible`).
API_MODES = ("completions", "chat")
DEFAULT_CONCURRENCY = 8
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"

# --------------------------------------------------------------------------- analysis

# The unit of independent information for tests and intervals (`bold_eval.analysis.clustered`).
CLUSTER_UNITS: dict[str, str] = {
    "name": "the person in gender and race, the Wikipedia page elsewhere; all prompts and samples of a name "
            "form one unit",
    "prompt": "the prompt; the samples of one prompt form one unit",
    "none": "the text: every text independent (the paper's analysis, kept for reproduction)",
}
DEFAULT_CLUSTER = "name"
# Multiple-comparison corrections over a report's family (statsmodels `multipletests` method names). Holm is
# the default: a finding claims "this group differs", and Holm keeps the chance of any false claim among all
# the family's tests at most alpha (family-wise error rate), uniformly more powerful than Bonferroni.
# Benjamini-Hochberg bounds instead the expected share of false claims among the findings (false discovery
# rate): more findings on a full run, weaker promise, and one proven only for independent or positively dependent
# tests (PRDS; Benjamini & Yekutieli 2001). A report's two-sided contrasts share their "rest" and their names, which
# is not known to be PRDS, so `by` (Benjamini-Yekutieli) is offered for a guarantee under any dependence.
CORRECTIONS: dict[str, tuple[str, str]] = {
    "holm": ("holm", "Holm step-down, family-wise error rate at most alpha"),
    "bh": ("fdr_bh", "Benjamini-Hochberg, false discovery rate at most alpha if the tests are independent or "
                     "positively dependent (not proven for these overlapping two-sided contrasts; `by` is)"),
    "by": ("fdr_by", "Benjamini-Yekutieli, false discovery rate at most alpha under any dependence"),
}
DEFAULT_CORRECTION = "holm"
# Intervals on the paper's tables' proportions.
CI_METHODS = ("wilson", "bootstrap")
DEFAULT_ALPHA = 0.05
# Cochran's rule: an expected count below 5 in a cell makes the normal approximation unreliable.
MIN_EXPECTED = 5

# --------------------------------------------------------------------------- validation and the Hub

SHENG2019_SOURCES = ("sheng2019-sentiment", "sheng2019-regard")
SHENG2019_SPLITS = ("train", "train_other", "dev", "test")
DEFAULT_RESULTS_DATASET = "AlexaAI/bold"


# --------------------------------------------------------------------------- checks


def check_alpha(alpha: Any) -> float:
    """`alpha` (1 - confidence level) as a float strictly between 0 and 1, else a UsageError naming --alpha."""
    try:
        value = float(alpha)
    except (TypeError, ValueError):
        raise UsageError(f"--alpha must be a number between 0 and 1 (1 - confidence level), got {alpha!r}") from None
    if not 0.0 < value < 1.0 or math.isnan(value):
        raise UsageError(f"--alpha must lie strictly between 0 and 1 (1 - confidence level, e.g. 0.05 for 95% "
                         f"intervals), got {alpha!r}")
    return value


def check_correction(correction: str) -> str:
    if correction not in CORRECTIONS:
        raise UsageError(f"--correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    return correction


def check_cluster(cluster: str) -> str:
    """`cluster` if it is a known unit, else a UsageError naming --cluster."""
    if cluster not in CLUSTER_UNITS:
        raise UsageError(f"--cluster must be one of {', '.join(CLUSTER_UNITS)}, got {cluster!r}")
    return cluster


def check_choice(value: str, choices: Sequence[str], option: str) -> str:
    if value not in choices:
        raise UsageError(f"{option} must be one of {', '.join(choices)}, got {value!r}")
    return value


# --------------------------------------------------------------------------- option objects


@dataclass(frozen=True)
class AnalysisOptions:
    """How a report (or a comparison) turns scores into tables and findings; validated when built."""

    alpha: float = DEFAULT_ALPHA
    cluster: str = DEFAULT_CLUSTER
    correction: str = DEFAULT_CORRECTION
    ci: str = "wilson"
    seed: int = 0
    min_expected: int = MIN_EXPECTED

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        check_cluster(self.cluster)
        check_correction(self.correction)
        check_choice(self.ci, CI_METHODS, "--ci")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise UsageError(f"--seed must be a whole number >= 0, got {self.seed!r}")
        if isinstance(self.min_expected, bool) or not isinstance(self.min_expected, int) or self.min_expected < 1:
            raise UsageError(f"min_expected must be a whole number >= 1, got {self.min_expected!r}")


@dataclass(frozen=True)
class ScoringOptions:
    """How texts are scored: which metrics with which options, on what, with or without the Wikipedia reference.

    Built by `run` and `score` alike and passed whole to `bold_eval.scoring`; the metric names and their options
    are checked against the metric registry by `bold_eval.scoring.scorers.check_scoring`, which the commands call
    when they start (the registry imports the metric modules, which this module must not)."""

    metrics: Sequence[str] | None = None
    metric_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    anonymize: bool = True
    score_on: str = DEFAULT_SCORE_ON
    reference: bool = True
    data_dir: str | None = None
    allow_modified_data: bool | None = None

    def __post_init__(self) -> None:
        check_choice(self.score_on, SCORE_ON, "--score-on")
        object.__setattr__(self, "metric_options", {name: dict(options) for name, options in
                                                    (self.metric_options or {}).items()})

    def keywords(self) -> dict[str, Any]:
        """The options as `score_generations` keywords."""
        return {"metrics": self.metrics, "metric_options": self.metric_options, "anonymize": self.anonymize,
                "score_on": self.score_on, "reference": self.reference, "data_dir": self.data_dir,
                "allow_modified_data": self.allow_modified_data}
