"""BOLD regard (Dhamala et al. 2021, Section 4.3) as an evaluate measurement.

A drop-in replacement for Hugging Face's `regard` measurement (same inputs `data` and, in the
`compare` config, `references`; same outputs), plus label proportions per group. The classifier
and the aggregation live in `bold_eval.metrics.regard`; this file only maps arguments.
"""

import datasets
import evaluate

from bold_eval.metrics import regard
from bold_eval.metrics._module_support import BOLD_CITATION, ChecksTextsFirst, ModelFromConfigName

_CITATION = BOLD_CITATION + """\
@inproceedings{sheng2019woman,
  title = {The Woman Worked as a Babysitter: On Biases in Language Generation},
  author = {Sheng, Emily and Chang, Kai-Wei and Natarajan, Premkumar and Peng, Nanyun},
  booktitle = {Proceedings of EMNLP-IJCNLP 2019},
  pages = {3407--3412},
  year = {2019}
}
"""

_DESCRIPTION = """\
Regard: the language polarity towards, and social perception of, a demographic (Sheng et al.
2019), scored by their BERT classifier (sasha/regardv3; classes positive, negative, neutral,
other). BOLD (Section 4.3) compares the proportions of each class across gender and race groups.
Config names: "default", "compare" (data vs references), or a Hub id / local model folder.
"""

_KWARGS_DESCRIPTION = """
Args:
    data (list of str): texts to score.
    references (list of str, "compare" config only): texts to compare against.
    groups (list of str or int, optional, not in "compare"): one group per text, all of one type; adds
        per-group proportions.
    aggregation (str, optional): "average" or "maximum", as in Hugging Face's regard measurement.
Returns:
    default config: regard (per text, [{label, score}] by decreasing score), labels (argmax per
        text), proportions, average_regard and, with groups, group_proportions, group_sizes,
        group_average_regard; aggregation="average" -> average_regard, "maximum" -> max_regard.
    "compare" config: regard_difference (mean regard of data minus references, per class);
        aggregation="average" -> average_data_regard, average_references_regard;
        "maximum" -> max_data_regard, max_references_regard.
Examples:
    >>> regard = evaluate.load("metrics/regard", "compare")  # doctest: +SKIP
    >>> regard.compute(data=["xyz are described as mean"], references=["xyz are known as kind"])  # doctest: +SKIP
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Regard(ChecksTextsFirst, ModelFromConfigName, evaluate.Measurement):
    reserved_config_names = ("default", "compare")
    keyword_hints = {
        "predictions": "regard's texts argument is `data`, as in Hugging Face's regard measurement.",
        "references": 'texts to compare against need the "compare" config: evaluate.load("metrics/regard", "compare").',
    }

    def _info(self):
        features = {"data": datasets.Value("string", id="sequence")}
        if self.config_name == "compare":
            features["references"] = datasets.Value("string", id="sequence")
        return evaluate.MeasurementInfo(
            module_type="measurement",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(features),
            codebase_urls=["https://github.com/amazon-science/bold", "https://github.com/ewsheng/nlg-bias"],
            reference_urls=["https://arxiv.org/abs/2101.11718", "https://arxiv.org/abs/1909.01326"],
        )

    def _download_and_prepare(self, dl_manager):
        self.classifier = regard.load_classifier(**self.classifier_options())

    def _compute(self, data, references=None, groups=None, aggregation=None):
        return regard.compute(data, groups, references=references, aggregation=aggregation,
                              classifier=self.classifier)
