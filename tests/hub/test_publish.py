"""Publishing: staged dataset and Space folders load, uploads go through one fake client, no token leaks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import evaluate
import pandas as pd
import pytest
from huggingface_hub import DatasetCard, ModelCard, metadata_load
from packaging.requirements import Requirement

from bold_eval import cli
from bold_eval.hub import model_card, spaces, staging, upload
from bold_eval.metrics import PAPER_METRICS

NAMESPACE = "test-org"
SECRET = "hf_TESTtokenThatMustNeverBeShown0123456789"


class FakeHub:
    """Records what would be sent to the Hub; checks each uploaded folder for the token."""

    instances: list[FakeHub] = []

    def __init__(self, token: str | None = None, card: str | None = None):
        self.token = token
        self.card = card
        self.calls: list[tuple[str, dict]] = []
        FakeHub.instances.append(self)

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
        prefix = {"dataset": "datasets/", "space": "spaces/"}.get(kwargs.get("repo_type"), "")
        return f"https://huggingface.co/{prefix}{repo_id}"

    def upload_folder(self, **kwargs):
        folder = Path(kwargs["folder_path"])
        files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        for path in folder.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), f"token written to {path}"
        self.calls.append(("upload_folder", {**kwargs, "files": files}))

    def hf_hub_download(self, repo_id, filename, **kwargs):
        from huggingface_hub.errors import EntryNotFoundError

        self.calls.append(("hf_hub_download", {"repo_id": repo_id, "filename": filename, **kwargs}))
        if self.card is None:
            raise EntryNotFoundError("no README.md")
        return self.card

    def upload_file(self, **kwargs):
        self.calls.append(("upload_file", kwargs))


@pytest.fixture(scope="module")
def staged(tmp_path_factory, bold_dir) -> dict[str, staging.StagedRepo]:
    out = tmp_path_factory.mktemp("publish") / "staged"
    repos = upload.stage_all(NAMESPACE, out, data_dir=bold_dir)
    return {repo.repo_id.split("/")[1]: repo for repo in repos}


def test_plan_names_every_repo(staged):
    assert sorted(staged) == sorted(["bold", *PAPER_METRICS])
    assert staged["bold"].repo_type == "dataset" and staged["bold"].space_sdk is None
    for name in PAPER_METRICS:
        assert staged[name].repo_id == f"{NAMESPACE}/{name}"
        assert staged[name].repo_type == "space" and staged[name].space_sdk == "gradio"
    plan = json.loads((staged["bold"].folder.parents[1] / "plan.json").read_text())
    assert [repo["repo_id"] for repo in plan["repos"]] == [f"{NAMESPACE}/bold",
                                                           *(f"{NAMESPACE}/{m}" for m in PAPER_METRICS)]


def test_staged_dataset_card_and_configs_load(staged):
    from datasets import load_dataset

    folder = staged["bold"].folder
    card = DatasetCard.load(folder / "README.md")
    configs = {config["config_name"] for config in card.data.to_dict()["configs"]}
    assert {"gender", "race", "profession", "religious_ideology", "political_ideology"} <= configs
    gender = load_dataset(str(folder), "gender", split="test")
    assert len(gender) == 3204
    assert {"prompt_id", "group", "prompt", "wikipedia"} <= set(gender.column_names)
    assert len(load_dataset(str(folder), "religious_ideology", split="test")) == 639


@pytest.mark.parametrize("name", PAPER_METRICS)
def test_staged_space_files_and_card(staged, name):
    folder = staged[name].folder
    for filename in (f"{name}.py", "README.md", "app.py", "requirements.txt", "bold_eval/__init__.py",
                     f"bold_eval/metrics/{name}.py", "bold_eval/metrics/__init__.py"):
        assert (folder / filename).is_file(), filename
    metadata = metadata_load(folder / "README.md")
    assert metadata["sdk"] == "gradio" and metadata["app_file"] == "app.py"
    assert "evaluate" in metadata["tags"]
    requirements = [
        Requirement(line) for line in (folder / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    names = {requirement.name.lower() for requirement in requirements}
    assert "bold-eval" not in names  # vendored in ./bold_eval instead
    assert {"evaluate", "numpy"} <= names


def test_vendored_requirements_cover_imports(staged):
    sentiment = (staged["sentiment"].folder / "requirements.txt").read_text().lower()
    assert "vadersentiment>=3.3.2" in sentiment
    toxicity = (staged["toxicity"].folder / "requirements.txt").read_text().lower()
    assert "torch" in toxicity and "transformers" in toxicity


@pytest.mark.parametrize("name", ["sentiment", "gender_polarity", "psycholinguistic"])
def test_vendored_bold_eval_is_self_sufficient(staged, name):
    """The Space runs app.py from its folder: `import bold_eval` must find the vendored copy."""
    folder = staged[name].folder
    options = "methods=['unigram']" if name == "gender_polarity" else ""
    code = (
        "import bold_eval; from pathlib import Path\n"
        f"assert Path(bold_eval.__file__).resolve().is_relative_to(Path({str(folder)!r}).resolve()), "
        "bold_eval.__file__\n"
        f"from bold_eval.metrics import {name}\n"
        f"print({name}.compute(['She is a wonderful, kind nurse.'], {options}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(folder)})
    assert result.returncode == 0, result.stderr[-3000:]


def test_staged_modules_load_and_compute(staged):
    sentiment = evaluate.load(str(staged["sentiment"].folder))
    result = sentiment.compute(predictions=["She is a wonderful, kind teacher.", "He was arrested for murder."])
    assert result["label"] == ["positive", "negative"]

    polarity = evaluate.load(str(staged["gender_polarity"].folder))
    result = polarity.compute(predictions=["He said his brother", "She and her sister", "The river"],
                              methods=["unigram"])
    assert result["unigram_label"] == ["male", "female", "neutral"]

    psycholinguistic = evaluate.load(str(staged["psycholinguistic"].folder))
    result = psycholinguistic.compute(predictions=["The happy children laughed and played."])
    assert len(result["valence"]) == 1 and result["valence"][0] > 0


def test_staged_app_runs_in_a_space_folder(staged, tmp_path, monkeypatch):
    """On the Hub, a Space's files sit in /home/user/app and app.py runs from there."""
    import runpy
    import shutil

    import evaluate.utils

    space = tmp_path / "app"
    shutil.copytree(staged["sentiment"].folder, space)
    launched = []
    monkeypatch.setattr(evaluate.utils, "launch_gradio_widget", launched.append)
    runpy.run_path(str(space / "app.py"))
    assert launched and launched[0].name == "sentiment"


@pytest.mark.parametrize("name", ["toxicity", "regard"])
def test_staged_classifier_modules_with_tiny_model(staged, tmp_path, name):
    from bold_eval.testing.models import build_metric_classifier

    model_dir = build_metric_classifier(tmp_path / "model", name)
    module = evaluate.load(str(staged[name].folder), str(model_dir))
    texts = ["You are a kind person.", "shut up, you idiot!"]
    result = module.compute(**({"predictions": texts} if name == "toxicity" else {"data": texts}))
    if name == "toxicity":
        assert len(result["toxicity"]) == 2 and len(result["label_scores"]) == 6
    else:
        assert len(result["labels"]) == 2 and set(result["labels"]) <= {"positive", "negative", "neutral", "other"}
    # the classifier code comes along in the vendored copy
    assert (staged[name].folder / "bold_eval" / "metrics" / "classifier.py").is_file()


def test_upload_calls_fake_client(staged):
    fake = FakeHub()
    urls = upload.upload_staged(list(staged.values()), private=True, client=fake, log=lambda line: None)
    creates = [kwargs for call, kwargs in fake.calls if call == "create_repo"]
    uploads = [kwargs for call, kwargs in fake.calls if call == "upload_folder"]
    assert [c["repo_id"] for c in creates] == [u["repo_id"] for u in uploads] == [r.repo_id for r in staged.values()]
    assert all(c["private"] is True and c["exist_ok"] is True for c in creates)
    assert {c["repo_id"]: c["repo_type"] for c in creates}[f"{NAMESPACE}/bold"] == "dataset"
    for c in creates:
        if c["repo_type"] == "space":
            assert c["space_sdk"] == "gradio"
        else:
            assert "space_sdk" not in c
    by_repo = {u["repo_id"]: u for u in uploads}
    assert Path(by_repo[f"{NAMESPACE}/bold"]["folder_path"]) == staged["bold"].folder
    assert "data/gender/test-00000-of-00001.parquet" in by_repo[f"{NAMESPACE}/bold"]["files"]
    assert "bold_eval/metrics/sentiment.py" in by_repo[f"{NAMESPACE}/sentiment"]["files"]
    assert urls[0] == f"https://huggingface.co/datasets/{NAMESPACE}/bold"


def test_cli_publish_reads_token_once_and_never_shows_it(monkeypatch, capsys, tmp_path, bold_dir):
    FakeHub.instances.clear()
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setattr(upload, "HfApi", FakeHub)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["publish", "--namespace", NAMESPACE, "--metrics", "sentiment", "--data-dir", str(bold_dir)]) == 0
    (fake,) = FakeHub.instances
    assert fake.token == SECRET  # handed to the client, nowhere else
    assert [kwargs["repo_id"] for call, kwargs in fake.calls if call == "upload_folder"] == [
        f"{NAMESPACE}/bold", f"{NAMESPACE}/sentiment"
    ]
    assert all(kwargs.get("private") is False for call, kwargs in fake.calls if call == "create_repo")
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    assert f"{NAMESPACE}/sentiment" in out.out
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes()


def test_publish_without_token_fails_clearly(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no saved login there
    monkeypatch.setattr(upload, "HfApi", FakeHub)
    with pytest.raises(staging.PublishError, match="set HF_TOKEN or log in"):
        upload.publish(NAMESPACE, metrics=["sentiment"])


def test_cli_dry_run_stages_and_uploads_nothing(monkeypatch, capsys, tmp_path, bold_dir):
    def no_client(*args, **kwargs):
        raise AssertionError("a dry run must not create a Hub client")

    monkeypatch.setattr(upload, "HfApi", no_client)
    out = tmp_path / "dry"
    assert cli.main(["publish", "--namespace", NAMESPACE, "--private", "--dry-run", str(out),
                     "--metrics", "gender_polarity", "--data-dir", str(bold_dir)]) == 0
    printed = capsys.readouterr().out
    assert f"would upload {out / 'spaces' / 'gender_polarity'} to private space {NAMESPACE}/gender_polarity" in printed
    assert (out / "dataset" / "bold" / "README.md").is_file()
    assert (out / "spaces" / "gender_polarity" / "gender_polarity.py").is_file()
    with pytest.raises(staging.PublishError, match="not empty"):
        upload.publish(NAMESPACE, dry_run=out, metrics=["sentiment"])


@pytest.mark.parametrize("namespace", ["", "a/b", "bad--name", "x" * 120])
def test_bad_namespace_rejected(tmp_path, namespace):
    with pytest.raises(staging.PublishError):
        spaces.stage_metric_space("sentiment", namespace, tmp_path / "sentiment")


# ---------------------------------------------------------------- publish-results


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A run folder whose summary.json comes from bold_eval.report.run_report on hand-made scores.

    gender: actors 10 of 40 negative and 20 positive, actresses 30 of 40 negative and 5 positive ->
    negative_sentiment_ratio 40/80. Each group has 20 names of two texts (ten or more: eligible for the largest
    gap), and sentiment's largest gap is negative's 0.75 - 0.25 = 0.5 (positive's is 0.5 - 0.125 = 0.375), so it
    is published as negative_sentiment_gap, with its interval at 1 - 0.05 / (1 pair x 2 labels).
    profession (unigram): 2 male and 1 female of 6 texts -> male share 1/3, female 1/6; its three pages per
    group are fewer than ten, so no profession gap is published.
    The run covers 80 + 6 of BOLD's 23,679 prompts: a partial run.
    """
    from bold_eval.report.run_report import write_report

    rows = []
    for group, negatives, positives in (("American_actors", 10, 20), ("American_actresses", 30, 5)):
        for i in range(40):
            label = "negative" if i < negatives else "positive" if i < negatives + positives else "neutral"
            rows.append({"prompt_id": f"gender/{group}/P{i}/0", "domain": "gender", "group": group, "category": "",
                         "name": f"{group}_{i // 2}", "sentiment_label": label})
    for i, label in enumerate(["male", "male", "female", "neutral", "neutral", "neutral"]):
        group = "nursing_specialties" if i % 2 else "film_and_television_occupations"
        category = "healthcare_and_medicine" if i % 2 else "arts_and_entertainment"
        rows.append({"prompt_id": f"profession/{group}/P{i}/0", "domain": "profession", "group": group,
                     "category": category, "name": f"page_{i}", "sentiment_label": "neutral",
                     **{f"gender_polarity_{m}_label": label for m in ("unigram", "max", "wavg")}})
    scores = pd.DataFrame(rows).assign(sample=0, text="t")
    folder = tmp_path_factory.mktemp("run")
    scores.to_parquet(folder / "scores.parquet")
    (folder / "run.json").write_text(json.dumps({
        "schema_version": 2, "model": "tiny", "generator": "hf-causal", "metrics": ["sentiment", "gender_polarity"],
        "generator_settings": {"model": "tiny", "seed": 7, "decoding": {"top_k": 40, "max_new_tokens": 30}},
        "model_info": {"revision": "abc123"}, "num_samples": 1, "versions": {"bold-eval": "9.9.9"}}))
    write_report(folder)
    return folder


def _results(card: ModelCard) -> dict[tuple[str, str], float]:
    return {(r.dataset_config, r.metric_type): r.metric_value for r in card.data.eval_results}


def test_summary_to_model_index_values(run_dir):
    summary = json.loads((run_dir / "summary.json").read_text())
    entries = model_card.results_from_summary(summary)
    results = {(r.dataset_config, r.metric_type): r.metric_value for r in entries}
    args = {(r.dataset_config, r.metric_type): r.metric_args for r in entries}
    assert results[("gender", "negative_sentiment_ratio")] == pytest.approx(0.5)
    assert args[("gender", "negative_sentiment_ratio")] == {"texts": 80, "groups": 2, "prompts": 80,
                                                            "bold_prompts": 3204, "bold_coverage": 0.025}
    assert results[("gender", "negative_sentiment_gap")] == pytest.approx(0.5)
    gap = args[("gender", "negative_sentiment_gap")]
    assert (gap["group_high"], gap["texts_high"], gap["group_low"], gap["texts_low"]) == (
        "American_actresses", 40, "American_actors", 40)
    assert gap["interval_level"] == pytest.approx(1 - 0.05 / 2) and gap["choices"] == 2  # 1 pair x 2 labels
    assert gap["eligible_groups"] == 2 and gap["ci_low"] < 0.5 < gap["ci_high"]
    assert ("gender", "positive_sentiment_gap") not in results  # not sentiment's largest gap
    assert results[("profession", "negative_sentiment_ratio")] == 0
    assert ("profession", "negative_sentiment_gap") not in results  # 3 pages per group: fewer than ten names
    assert all("n=" in r.metric_name for r in entries)
    assert results[("profession", "gender_polarity_unigram_male_ratio")] == pytest.approx(1 / 3, abs=1e-6)
    assert results[("profession", "gender_polarity_unigram_female_ratio")] == pytest.approx(1 / 6, abs=1e-6)
    assert not any(metric.startswith("toxic") for _, metric in results)  # toxicity not scored


def test_publish_results_dry_run_updates_existing_card(run_dir, tmp_path):
    existing = tmp_path / "README.md"
    existing.write_text(
        "---\nlicense: mit\nmodel-index:\n- name: my-model\n  results:\n  - task:\n      type: text-generation\n"
        "    dataset:\n      type: other/bench\n      name: Other\n    metrics:\n    - type: accuracy\n"
        "      value: 0.9\n"
        "---\n\n# My model\n\nHand-written text.\n",
        encoding="utf-8",
    )
    out = tmp_path / "dry"
    assert cli.main(["publish-results", str(run_dir), "--repo", "ns/my-model", "--dry-run", str(out),
                     "--card", str(existing), "--allow-partial-run"]) == 0
    card = ModelCard.load(out / "README.md")
    assert "Hand-written text." in card.text and card.data.license == "mit"
    results = _results(card)
    assert results[("gender", "negative_sentiment_ratio")] == pytest.approx(0.5)
    assert any(r.dataset_type == "other/bench" and r.metric_value == 0.9 for r in card.data.eval_results)
    # publishing the same run again replaces the BOLD entries instead of duplicating them
    again = tmp_path / "again"
    model_card.publish_results(run_dir, "ns/my-model", dry_run=again, card=out / "README.md", log=lambda line: None,
                            allow_partial_run=True)
    republished = ModelCard.load(again / "README.md")
    assert len(republished.data.eval_results) == len(card.data.eval_results)
    assert republished.text.count("## BOLD evaluation (bold-eval)") == 1
    # the card names model, revision, decoding, seed and version, and says the run is partial
    for fact in ("- model: tiny", "- revision: abc123", '"top_k": 40', "- seed: 7", "bold-eval version: 9.9.9",
                 "of BOLD's 23,679 prompts", "**partial run**: domains missing: race, religious_ideology"):
        assert fact in card.text, fact


def test_publish_results_uploads_card_through_client(run_dir, tmp_path, monkeypatch, capsys):
    FakeHub.instances.clear()
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setattr(upload, "HfApi", FakeHub)
    assert cli.main(["publish-results", str(run_dir), "--repo", "ns/new-model", "--dataset-id", "ns/bold",
                     "--allow-partial-run"]) == 0
    (fake,) = FakeHub.instances
    assert fake.token == SECRET
    (sent,) = [kwargs for call, kwargs in fake.calls if call == "upload_file"]
    assert sent["repo_id"] == "ns/new-model" and sent["path_in_repo"] == "README.md"
    assert sent["repo_type"] == "model"
    card = ModelCard(sent["path_or_fileobj"].decode())
    assert card.data.model_name == "new-model"
    assert {r.dataset_type for r in card.data.eval_results} == {"ns/bold"}
    assert SECRET.encode() not in sent["path_or_fileobj"]
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err


def test_publish_results_needs_summary(tmp_path):
    with pytest.raises(staging.PublishError, match="summary.json not found"):
        model_card.publish_results(tmp_path, "ns/model", dry_run=tmp_path / "out")


def test_publish_results_refuses_a_limit_run(run_dir, tmp_path, capsys):
    limited = tmp_path / "limited"
    shutil.copytree(run_dir, limited)
    summary = json.loads((limited / "summary.json").read_text())
    summary["run"]["limit"] = 20
    (limited / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(model_card.PartialRunError, match=r"--limit 20 .*--allow-partial-run"):
        model_card.publish_results(limited, "ns/model", dry_run=tmp_path / "out")
    assert cli.main(["publish-results", str(limited), "--repo", "ns/model", "--dry-run", str(tmp_path / "cli")]) == 1
    err = capsys.readouterr().err
    assert "partial run" in err and "--allow-partial-run" in err
    assert not (tmp_path / "cli" / "README.md").exists()


def test_full_coverage_is_not_partial():
    """All five domains with every prompt of paper Table 1 and no --limit: nothing to refuse."""
    from bold_eval.data.bold import BOLD_PROMPTS

    counts = {"prompts": sum(BOLD_PROMPTS.values()),
              "domains": {domain: {"prompts": n} for domain, n in BOLD_PROMPTS.items()}}
    assert model_card.partial_run_reasons({"run": {}, "counts": counts}) == []
    counts["domains"]["race"] = {"prompts": 7000}
    assert model_card.partial_run_reasons({"run": {}, "counts": counts}) == ["prompts missing in: race 7000/7657"]
