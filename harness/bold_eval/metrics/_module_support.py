"""What the `evaluate` wrappers in `metrics/<name>/` share: the paper's citation and two behaviours.

Plain mixins, not `evaluate.EvaluationModule` subclasses: `evaluate.load` takes the first
EvaluationModule subclass it finds in a module file as the module, so a shared base class
imported into the wrappers would be picked instead of the wrapper itself.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import os
from collections.abc import Iterable
from typing import Any

from bold_eval.core.errors import InputError
from bold_eval.metrics.common import check_texts

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


# The mixins below come before `evaluate.Metric` in a module's bases and call its methods: to the type checker they
# are that class (evaluate is not type-checked, so Any).
_MetricBase: Any = object


class ChecksTextsFirst(_MetricBase):
    """Check what `compute`, `add_batch` and `add` receive before evaluate and `datasets` do.

    evaluate's own errors are cryptic for the common mistakes ("cache file doesn't exist" for
    `predictions=None` or a misspelled `prediction=`), a generator would be consumed by a check
    and then reach evaluate empty, and `datasets` casts 3 to "3". Here every text argument is
    read once into a list and checked (`check_texts`, naming the bad index), keywords are
    checked against the module's inputs and options (naming the close match), and a call
    without texts says how to give them. Subclasses are evaluate modules whose features are all
    text columns; `keyword_hints` adds a sentence for a known wrong keyword.
    """

    keyword_hints: dict[str, str] = {}

    def _text_inputs(self) -> list[str]:
        return list(self._feature_names())

    def _option_names(self) -> list[str]:
        """`_compute`'s options: its parameters that are not inputs. evaluate passes `predictions`
        and `references` only when they are features, so those names are never options."""
        inputs = set(self._text_inputs())
        return [
            name
            for name, parameter in inspect.signature(self._compute).parameters.items()
            if name not in inputs
            and name not in ("predictions", "references")
            and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        ]

    def _reject_unknown(self, method: str, given: Iterable[str], valid: list[str]) -> None:
        unknown = [name for name in given if name not in valid]
        if not unknown:
            return
        name = unknown[0]
        close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
        hint = self.keyword_hints.get(name) or (f"did you mean `{close[0]}`?" if close else "")
        raise TypeError(
            f"{self.name}.{method}() got an unexpected keyword argument `{name}`"
            + (f"; {hint}" if hint else ".")
            + f" Valid keywords: {', '.join(valid)}."
        )

    def _texts_or_error(self, method: str, kwargs: dict[str, Any], names: list[str], pending: bool) -> None:
        """Read each given text argument once into a checked list; require all of them unless
        texts were already added with add/add_batch (`pending`)."""
        given = [name for name in names if kwargs.get(name) is not None]
        for name in given:
            kwargs[name] = check_texts(kwargs[name], argument=name)
        missing = [name for name in names if name not in given]
        if missing and (given or not pending):
            what = " and ".join(f"`{name}`" for name in missing)
            example = ", ".join(f"{name}=[...]" for name in names)
            raise InputError(
                f"{self.name}.{method}() got no {what}: pass {example} "
                + ("(a list of strings)" if len(names) == 1 else "(lists of strings)")
                + ("" if method != "compute" else ", or add them first with add_batch()")
            )

    def compute(self, *args: Any, **kwargs: Any) -> dict | None:
        """Score the texts; see the arguments below."""
        names = self._text_inputs()
        if args:
            raise TypeError(f"{self.name}.compute() takes keyword arguments only: compute({names[0]}=[...])")
        self._reject_unknown("compute", kwargs, names + self._option_names())
        self._texts_or_error("compute", kwargs, names, pending=self.writer is not None)
        return super().compute(**kwargs)

    def add_batch(self, *args: Any, **kwargs: Any) -> None:
        """Add a batch of texts to score at the next `compute()`."""
        names = self._text_inputs()
        if args:
            raise TypeError(f"{self.name}.add_batch() takes keyword arguments only: add_batch({names[0]}=[...])")
        self._reject_unknown("add_batch", kwargs, names)
        self._texts_or_error("add_batch", kwargs, names, pending=False)
        return super().add_batch(**kwargs)

    def add(self, *args: Any, **kwargs: Any) -> None:
        """Add one text to score at the next `compute()` (evaluate names it `prediction`)."""
        # evaluate's add() takes `prediction`/`reference` for the `predictions`/`references` features.
        singular = {"predictions": "prediction", "references": "reference"}
        names = [singular.get(name, name) for name in self._text_inputs()]
        if args:
            raise TypeError(f"{self.name}.add() takes keyword arguments only: add({names[0]}=\"...\")")
        self._reject_unknown("add", kwargs, names)
        for name in names:
            if kwargs.get(name) is None:
                raise InputError(f"{self.name}.add() got no `{name}`: pass {name}=\"...\" (one string)")
            check_texts([kwargs[name]], argument=name)
        return super().add(**kwargs)


class ModelFromConfigName(_MetricBase):
    """A classifier module whose config name may be a Hub model id or a local model folder.

    Loading options arrive through `evaluate.load(..., model=, batch_size=, device=, dtype=, model_revision=)`;
    an explicit `model=` wins over the config name, and `model_revision=` picks a branch, tag or commit of a Hub
    model (`evaluate.load`'s own `revision=` is the module's).
    """

    reserved_config_names: tuple[str, ...] = ("default",)

    def __init__(self, *args, model=None, batch_size=None, device=None, dtype=None, model_revision=None, **kwargs):
        # batch_size None: the device's default (bold_eval.metrics.classifier).
        self._load_options = {"model": model, "batch_size": batch_size, "device": device, "dtype": dtype,
                              "revision": model_revision}
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
