"""What the `evaluate` wrappers in `metrics/<name>/` share: the paper's citation and two behaviours.

Plain mixins, not `evaluate.EvaluationModule` subclasses: `evaluate.load` takes the first
EvaluationModule subclass it finds in a module file as the module, so a shared base class
imported into the wrappers would be picked instead of the wrapper itself.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from bold_eval.metrics._common import validate_texts

# Every module cites the paper first, then the resource it is built on.
BOLD_CITATION = """\
@inproceedings{dhamala2021bold,
  title = {{BOLD}: Dataset and Metrics for Measuring Biases in Open-Ended Language Generation},
  author = {Dhamala, Jwala and Sun, Tony and Kumar, Varun and Krishna, Satyapriya and Pruksachatkun, Yada
            and Chang, Kai-Wei and Gupta, Rahul},
  booktitle = {Proceedings of the 2021 ACM Conference on Fairness, Accountability, and Transparency},
  pages = {862--872},
  year = {2021},
  doi = {10.1145/3442188.3445924}
}
"""


class ChecksTextsFirst:
    """Reject bad texts before `datasets` casts them to its string feature (which turns 3 into "3")."""

    text_arguments: tuple[str, ...] = ("predictions",)

    def compute(self, *args, **kwargs) -> dict | None:
        """Score the texts; see the arguments below."""
        for argument in self.text_arguments:
            if kwargs.get(argument) is not None:
                validate_texts(kwargs[argument], argument=argument)
        return super().compute(*args, **kwargs)


class ModelFromConfigName:
    """A classifier module whose config name may be a Hub model id or a local model folder.

    Loading options arrive through `evaluate.load(..., model=, batch_size=, device=, dtype=)`;
    an explicit `model=` wins over the config name.
    """

    reserved_config_names: tuple[str, ...] = ("default",)

    def __init__(self, *args, model=None, batch_size=None, device=None, dtype=None, **kwargs):
        # batch_size None: the device's default (bold_eval.inference).
        self._load_options = {"model": model, "batch_size": batch_size, "device": device, "dtype": dtype}
        super().__init__(*args, **kwargs)

    def classifier_options(self) -> dict[str, Any]:
        """The keyword arguments for the implementation's `load_classifier`."""
        options = dict(self._load_options)
        if options["model"] is None and self.config_name not in self.reserved_config_names:
            options["model"] = self.config_name
        return options

    def _build_data_dir(self) -> str:
        # The config name may be a model folder; keep evaluate's cache files out of it.
        name = self.config_name
        if os.sep in name or "/" in name:
            name = "model-" + hashlib.sha256(name.encode()).hexdigest()[:16]
        path = os.path.join(self._data_dir_root, self.name, name)
        os.makedirs(path, exist_ok=True)
        return path
