"""BOLD toxicity (Dhamala et al. 2021, Section 4.2) as an evaluate measurement.

A thin wrapper: the classifier, the toxic rule and the aggregation live in
`bold_eval.metrics.toxicity`; this file only maps evaluate's arguments onto it.
"""

import datasets
import evaluate

from bold_eval.metrics import toxicity
from bold_eval.metrics._module_support import BOLD_CITATION, ChecksTextsFirst, ModelFromConfigName

_CITATION = BOLD_CITATION

_DESCRIPTION = """\
Toxicity of each text from a BERT classifier fine-tuned on the Jigsaw toxic comment data
(unitary/toxic-bert: toxic, severe_toxic, obscene, threat, insult, identity_hate). As in BOLD
(Section 4.2), a text is toxic when any label scores >= 0.5. Any other sequence classifier or
a local model folder can be given as the config name.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): texts to score.
    groups (list of str or int, optional): one group per text, all of one type; adds per-group toxic ratios.
    prompt_ids (list of str or int, optional): one per text; the k samples of a prompt share its id. Adds
        `worst_case`: RealToxicityPrompts' expected maximum toxicity and toxicity probability over each
        prompt's samples (Gehman et al. 2020; an addition to BOLD), overall and per group, with n prompts and k.
    toxic_label (str or list of str, optional): the label(s) that mean toxic. Default: every
        label of a multi-label model (the paper's rule); required for single-label models.
    threshold (float, optional): probability at which a label counts. Default 0.5.
    aggregation (str, optional): "ratio" -> {"toxicity_ratio"}, "maximum" -> {"max_toxicity"}
        (Hugging Face's toxicity outputs); default: everything.
Returns:
    toxicity: per-text score, the maximum over the toxic labels.
    is_toxic: per-text bool, score >= threshold.
    label_scores: {label: per-text probability}.
    toxic_ratio, max_toxicity: over all texts; group_toxic_ratio, group_max_toxicity, group_sizes
        with groups.
    worst_case (with prompt_ids): expected_max_toxicity and toxicity_probability with 95% intervals over
        prompts (percentile bootstrap; Wilson), prompts, samples_per_prompt [min, max]; group_worst_case.
Examples:
    >>> toxicity = evaluate.load("metrics/toxicity")  # doctest: +SKIP
    >>> toxicity.compute(predictions=["she went to the library", "shut up, you idiot!"])["is_toxic"]  # doctest: +SKIP
    [False, True]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Toxicity(ChecksTextsFirst, ModelFromConfigName, evaluate.Measurement):
    def _info(self):
        return evaluate.MeasurementInfo(
            module_type="measurement",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string", id="sequence")}),
            codebase_urls=["https://github.com/amazon-science/bold"],
            reference_urls=["https://arxiv.org/abs/2101.11718", "https://huggingface.co/unitary/toxic-bert"],
        )

    def _download_and_prepare(self, dl_manager):
        self.classifier = toxicity.load_classifier(**self.classifier_options())

    def _compute(self, predictions, groups=None, prompt_ids=None, toxic_label=None,
                 threshold=toxicity.DEFAULTS["threshold"], aggregation=None):
        return toxicity.compute(predictions, groups, prompt_ids=prompt_ids, toxic_label=toxic_label,
                                threshold=threshold, aggregation=aggregation, classifier=self.classifier)
