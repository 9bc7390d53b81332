# Copyright 2025 The bold-eval Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""BOLD psycholinguistic norms: text-level VAD and BE5 scores and categories (Dhamala et al. 2021, Section 4.4).

A thin `evaluate` wrapper: the scoring lives in `bold_eval.metrics.psycholinguistic`.
"""

import datasets
import evaluate

from bold_eval.metrics import psycholinguistic as bold_psycholinguistic
from bold_eval.metrics._module_support import BOLD_CITATION, ChecksTextsFirst

_CITATION = BOLD_CITATION + """\
@article{warriner2013norms,
  title = {Norms of valence, arousal, and dominance for 13,915 {E}nglish lemmas},
  author = {Warriner, Amy Beth and Kuperman, Victor and Brysbaert, Marc},
  journal = {Behavior Research Methods},
  volume = {45},
  number = {4},
  pages = {1191--1207},
  year = {2013}
}
@inproceedings{buechel2018emotion,
  title = {Emotion Representation Mapping for Automatic Lexicon Construction (Mostly) Performs on Human Level},
  author = {Buechel, Sven and Hahn, Udo},
  booktitle = {Proceedings of the 27th International Conference on Computational Linguistics (COLING)},
  pages = {2892--2904},
  year = {2018}
}
"""

_DESCRIPTION = """\
Psycholinguistic norms as used by BOLD (Dhamala et al., 2021, Section 4.4). Every content word found in a
word-level lexicon contributes its valence, arousal and dominance (VAD, scaled from 1-9 to [-1, 1]) and
joy, anger, sadness, fear and disgust (BE5, scaled from 1-5 to [0, 1]); the text score per variable is
sum sgn(w) w^2 / sum |w| over the words found. Texts are then sorted into the categories of the paper's
Tables 4, 6 and 9-11 (valence/arousal/dominance negative and positive, joy, anger, sadness, fear, disgust)
by thresholds fitted to the paper's Wikipedia rows. The default lexicon is Warriner et al. (2013) VAD
joined with the BE5 ratings of the same words from EmoMap (Buechel and Hahn, 2018).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): texts to score, e.g. language model continuations of BOLD prompts.
        An empty string (or one without any lexicon word) scores 0 on every variable with coverage 0:
        neutral, in no category. None or a non-string raises a ValueError naming its index.
    groups (list of str or int, optional): one group label per text, all of one type; adds per-group
        proportions and sizes.
    lexicon (pandas.DataFrame or str, optional): a table (or csv/tsv path) with a word column and the
        8 variables on raw scales (VAD 1-9, BE5 1-5), e.g. MEmoLon's English file or the output of
        `bold_eval.metrics.lexicon_extension.extend_lexicon`. Default: Warriner VAD + EmoMap BE5.
    lexicon_dir (str, optional): folder holding Ratings_Warriner_et_al.csv and Warriner_BE.tsv
        (default $BOLD_LEXICON_DIR, then the cache, then download from the pinned GitHub commits).
    thresholds (dict, optional): any of valence_negative, valence_positive, arousal_negative,
        arousal_positive, dominance_negative, dominance_positive (VAD, inclusive <= / >=) and joy,
        anger, sadness, fear, disgust (BE5, score >= threshold) to override the defaults.
    lemma_fallback (bool, optional): look up a simple lemma when the surface form is missing. Default True.
    ignore_placeholders (bool, optional): drop the anonymization placeholders "Person" and "XYZ" (exact
        case, also with 's) before scoring and from coverage. Default True.

Returns:
    valence, arousal, dominance, joy, anger, sadness, fear, disgust (list of float): text scores.
    coverage (list of float): share of the text's content words found in the lexicon.
    valence_label, arousal_label, dominance_label (list of str): "negative", "neutral" or "positive".
    is_joy, is_anger, is_sadness, is_fear, is_disgust (list of bool): BE5 categories.
    proportions (dict): share of texts in each category (valence_negative, ..., disgust).
    mean_coverage (float): average coverage over the texts.
    group_proportions (dict, with `groups`): {group: {category: share}}, groups in first-seen order.
    group_sizes (dict, with `groups`): {group: number of texts}.

Examples:
    >>> psycholinguistic = evaluate.load("metrics/psycholinguistic")
    >>> results = psycholinguistic.compute(
    ...     predictions=["The murder terrified the town.", "She won the award and was very happy."],
    ...     groups=["a", "b"],
    ... )
    >>> results["valence_label"]
    ['negative', 'positive']
    >>> results["is_fear"]
    [True, False]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Psycholinguistic(ChecksTextsFirst, evaluate.Measurement):
    """Text-level VAD and BE5 norms with BOLD's categories, overall and per group."""

    def _info(self) -> evaluate.MeasurementInfo:
        return evaluate.MeasurementInfo(
            module_type="measurement",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string", id="sequence")}),
            codebase_urls=[
                "https://github.com/JULIELab/XANEW",
                "https://github.com/JULIELab/EmoMap",
                "https://github.com/amazon-science/bold",
            ],
            reference_urls=[
                "https://doi.org/10.1145/3442188.3445924",
                "https://doi.org/10.3758/s13428-012-0314-x",
            ],
        )

    def _compute(
        self,
        predictions,
        groups=None,
        lexicon=bold_psycholinguistic.DEFAULTS["lexicon"],
        lexicon_dir=bold_psycholinguistic.DEFAULTS["lexicon_dir"],
        thresholds=None,
        lemma_fallback: bool = bold_psycholinguistic.DEFAULTS["lemma_fallback"],
        ignore_placeholders: bool = bold_psycholinguistic.DEFAULTS["ignore_placeholders"],
    ) -> dict:
        return bold_psycholinguistic.compute(
            predictions,
            groups=groups,
            lexicon=lexicon,
            lexicon_dir=lexicon_dir,
            thresholds=thresholds,
            lemma_fallback=lemma_fallback,
            ignore_placeholders=ignore_placeholders,
        )
