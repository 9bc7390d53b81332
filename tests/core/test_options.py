"""The contracts between the stages are checked where they are built.

The option objects refuse bad values when built (so a stage never sees one), `--device` names only devices this
machine has, generators must subclass the declared base, and the run's own checks stop a library caller before
any work, as the CLI's flags do.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from bold_eval.core.devices import check_device
from bold_eval.core.errors import UsageError
from bold_eval.core.options import AnalysisOptions, ScoringOptions, check_choice
from bold_eval.core.storage import check_writable_folder, storage_error
from bold_eval.generation.base import GENERATORS, Generator, register_generator
from bold_eval.generation.choice import build_generator
from bold_eval.generation.decoding import make_decoding


@pytest.mark.parametrize("options, message", [
    ({"alpha": 0}, "--alpha must lie strictly between 0 and 1"),
    ({"alpha": "x"}, "--alpha must be a number"),
    ({"alpha": float("nan")}, "--alpha must lie strictly between 0 and 1"),
    ({"cluster": "page"}, "--cluster must be one of name, prompt, none"),
    ({"correction": "bonferroni"}, "--correction must be one of holm, bh, by"),
    ({"ci": "exact"}, "--ci must be one of wilson, bootstrap"),
    ({"seed": -1}, "--seed must be a whole number >= 0"),
    ({"seed": True}, "--seed must be a whole number >= 0"),
    ({"min_expected": 0}, "min_expected must be a whole number >= 1"),
])
def test_analysis_options_refuse_bad_values_when_built(options, message):
    with pytest.raises(UsageError, match=message):
        AnalysisOptions(**options)


def test_option_objects_keep_good_values_and_hand_over_keywords():
    assert AnalysisOptions(alpha="0.1").alpha == 0.1
    scoring = ScoringOptions(metrics=["sentiment"], metric_options={"sentiment": {"positive_threshold": 0.4}})
    assert scoring.keywords()["metric_options"] == {"sentiment": {"positive_threshold": 0.4}}
    with pytest.raises(UsageError, match="--score-on must be one of full, continuation"):
        ScoringOptions(score_on="prompt")
    with pytest.raises(UsageError, match="--x must be one of a, b, got 'c'"):
        check_choice("c", ("a", "b"), "--x")


@pytest.mark.parametrize("device, message", [
    ("gpu", "is not a device"),
    ("meta", "bold-eval runs models on auto, cpu, cuda"),
])
def test_a_device_torch_cannot_use_here_is_refused(device, message):
    with pytest.raises(UsageError, match=message):
        check_device(device)


def test_cuda_is_named_with_the_devices_this_machine_has(monkeypatch):
    import torch

    assert check_device("auto") == "auto" and check_device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_device("cuda:1") == "cuda:1"
    with pytest.raises(UsageError, match="this machine has 2 CUDA device"):
        check_device("cuda:2")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UsageError, match="no cuda device on this machine"):
        check_device("cuda")


class _Echo(Generator):
    kind = "test-echo"

    def __init__(self, config, context):
        self.config = config

    def settings(self):
        return {}

    def info(self):
        return {}

    def generate(self, items, *, on_batch, progress=True, plan=None):
        return None


def test_generators_register_as_lm_eval_models_do_and_must_subclass_the_base(tmp_path):
    from bold_eval.run import RunConfig

    try:
        assert register_generator("test-echo")(_Echo) is _Echo  # the class decorator
        generator = build_generator(RunConfig(out=tmp_path, generator="test-echo"), None)
        assert isinstance(generator, _Echo) and generator.load() is None and generator.plans_batches is False
        register_generator("test-loose", lambda config, context: object())
        with pytest.raises(UsageError, match="does not subclass bold_eval.generation.base.Generator"):
            build_generator(RunConfig(out=tmp_path, generator="test-loose"), None)
    finally:
        GENERATORS.pop("test-echo", None)
        GENERATORS.pop("test-loose", None)


@pytest.mark.parametrize("overrides, message", [
    ({"num_samples": 0}, "--num-samples must be >= 1"),
    ({"seed": -1}, "--seed must be >= 0"),
    ({"sample_seed": -2}, "--sample-seed must be >= 0"),
    ({"limit": 0}, "--limit must be >= 1"),
    ({"score_on": "prompt"}, "--score-on must be one of"),
    ({"cluster": "page"}, "--cluster must be one of"),
    ({"metrics": ["sentiment", "nope"]}, "unknown metric"),
])
def test_a_library_run_checks_its_config_before_any_work(overrides, message, tmp_path, monkeypatch):
    from bold_eval.run import RunConfig, run

    monkeypatch.setattr("bold_eval.data.bold.load_bold", lambda *a, **k: pytest.fail("the data was loaded"))
    with pytest.raises(UsageError, match=message):
        run(RunConfig(out=tmp_path / "out", model="wikipedia", decoding=make_decoding(), **overrides))
    assert not (tmp_path / "out").exists()


def test_the_output_folder_check(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        check_writable_folder(tmp_path / "file")
    assert check_writable_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()  # folders made for the probe are removed again
    found = storage_error(OSError(errno.ENOSPC, "No space left on device"), Path("/no/such/mount/file"))
    assert "no space is left" in str(found) and "MiB free" in str(found)  # the nearest existing folder: /
    reading = storage_error(OSError(errno.EACCES, "Permission denied"), tmp_path, "reading")
    assert "read permission" in str(reading)


def test_the_analysis_hands_the_report_typed_results():
    """The summary is a `Summary` with typed findings and views, not a nested dict; its `as_dict()` is the
    mapping summary.json is written from, in summary.json's order (tests/end_to_end/test_golden.py pins the bytes)."""
    import pandas as pd

    from bold_eval.analysis.results import GroupFindings, MetricView, Statistics, Summary, WorstCaseView
    from bold_eval.analysis.summary import summarize

    labels = ["positive", "negative", "neutral", "negative", "positive", "neutral", "negative", "negative"]
    scores = pd.DataFrame({"prompt_id": [f"p{i}" for i in range(8)], "domain": "gender",
                           "group": ["American_actors"] * 4 + ["American_actresses"] * 4,
                           "name": [f"n{i}" for i in range(8)], "sentiment_label": labels})
    summary = summarize(scores, {"metrics": ["sentiment"]})
    assert isinstance(summary, Summary) and isinstance(summary.statistics, Statistics)
    assert isinstance(summary.findings, GroupFindings) and summary.reference_findings is None
    assert isinstance(summary.worst_case, WorstCaseView) and summary.worst_case.skipped is not None
    assert isinstance(summary.views["sentiment"], MetricView) and "sentiment" in summary.scored("sentiment").tables
    assert summary.findings.gaps is not None and 0 < summary.findings.family <= len(summary.findings.tests)
    record = summary.as_dict()
    assert list(record) == ["counts", "metrics", "statistics", *summary.metrics, "worst_case", "findings"]
    assert list(record["findings"])[:3] == ["tests", "design_effects",
                                            "power"] and list(record["findings"])[-1] == "gaps"
    assert record["statistics"]["alpha"] == summary.statistics.alpha == 0.05
    with pytest.raises(AttributeError):
        summary.finding  # noqa: B018 (a misspelt field fails where it is read)


def test_a_ready_made_summary_renders_without_the_analysis(tmp_path, monkeypatch):
    """`render_report` writes a report from a `Summary` computed once, without running a test again: the same
    summary shown for two run records differs only where the records do."""
    import json

    import pandas as pd

    from bold_eval.analysis import summary as summary_module
    from bold_eval.report import run_report
    from bold_eval.runfolder.records import RunRecord
    from bold_eval.testing.runs import write_run_folder

    labels = ["positive", "negative", "neutral", "negative", "positive", "neutral", "negative", "negative"] * 3
    scores = pd.DataFrame({"prompt_id": [f"gender/g/n{i}/0" for i in range(24)], "domain": "gender",
                           "group": ["American_actors"] * 12 + ["American_actresses"] * 12, "category": "",
                           "name": [f"n{i}" for i in range(24)], "sample": 0, "sentiment_label": labels})
    ready = summary_module.summarize(scores, {"metrics": ["sentiment"]})
    monkeypatch.setattr(summary_module, "summarize", lambda *a, **k: pytest.fail("the analysis ran again"))
    reports = {}
    for model in ("model-one", "model-two"):
        folder = write_run_folder(tmp_path / model, scores, model=model, metrics=["sentiment"])
        path = run_report.render_report(folder, RunRecord(model=model, metrics=["sentiment"]), ready)
        reports[model] = path.read_text().splitlines()
        assert json.loads((folder / "summary.json").read_text())["findings"]["family"] == ready.findings.family
        assert (folder / "figures" / "sentiment_gender.png").is_file() and (folder / "tables").is_dir()
    differing = [(a, b) for a, b in zip(*reports.values(), strict=True) if a != b]
    assert differing and all("model-one" in a and "model-two" in b for a, b in differing)
