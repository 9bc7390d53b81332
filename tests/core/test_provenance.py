"""The exact weights and files that scored a run: recorded in run.json, shown by the reports, compared across runs.

A local classifier folder is recorded with the checksum of its files; a Hub id with the commit huggingface_hub's
cache resolves it to (a fake cache here: refs/ and snapshots/<commit>/, found through HF_HUB_CACHE or HF_HOME with
the Hub off), and `revision=` picks another commit. compare and the leaderboard warn when two runs were scored by
different weights of one classifier; run.json files without the record still load.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bold_eval.core.errors import UsageError
from bold_eval.core.provenance import (
    ResourceRecord,
    folder_sha256,
    resource_differences,
    snapshot_commit,
)
from bold_eval.core.resources import ResourceNotFoundError
from bold_eval.metrics import regard, toxicity
from bold_eval.report.compare import compare_runs
from bold_eval.runfolder.json_files import read_run_record, write_run_record
from bold_eval.runfolder.layout import RUN_FILE
from bold_eval.runfolder.records import RunRecord
from bold_eval.scoring.scorers import parse_metric_options
from bold_eval.testing.runs import planted_runs

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread (conftest)

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


def fake_hub_cache(root: Path, repo_id: str, snapshots: dict[str, Path], refs: dict[str, str]) -> Path:
    """huggingface_hub's cache layout under `root`: models--owner--name/snapshots/<commit>/ holding a copy of each
    folder, refs/<name> holding a commit."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    for commit, folder in snapshots.items():
        shutil.copytree(folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    for name, commit in refs.items():
        (repo / "refs" / name).write_text(commit)
    return root


@pytest.fixture
def hub_offline(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("BOLD_EVAL_HOME", "HF_HUB_CACHE", "HF_HOME", toxicity.ENV_VAR, regard.ENV_VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return monkeypatch


def test_a_local_folder_is_recorded_with_the_checksum_of_its_files(classifier_dirs, tmp_path: Path) -> None:
    folder = Path(classifier_dirs["toxicity"])
    record = toxicity.load_scorer(folder).resources[0]
    assert record.resource == "toxicity classifier" and record.source == str(folder.absolute())
    assert record.sha256 == folder_sha256(folder) and len(record.sha256) == 64 and record.commit is None
    copy = shutil.copytree(folder, tmp_path / "copy")
    assert folder_sha256(copy) == record.sha256  # the same files elsewhere are the same weights
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "initializer_range": 0.4}))
    assert folder_sha256(copy) != record.sha256  # one changed file is other weights
    with pytest.raises(UsageError, match="local folder"):
        toxicity.load_scorer(folder, revision="main")  # a folder has no revisions


@pytest.mark.parametrize("variable", ["HF_HUB_CACHE", "HF_HOME"])
def test_a_hub_id_resolves_to_its_commit_in_the_cache(classifier_dirs, tmp_path: Path, hub_offline,
                                                      variable: str) -> None:
    hub = tmp_path / "hub"
    fake_hub_cache(hub, "acme/regard", {COMMIT_A: Path(classifier_dirs["regard"]),
                                        COMMIT_B: Path(classifier_dirs["regard"])},
                   {"main": COMMIT_A, "v2": COMMIT_B})
    hub_offline.setenv(variable, str(hub if variable == "HF_HUB_CACHE" else tmp_path))
    record = regard.load_scorer("acme/regard").resources[0]
    assert (record.source, record.commit, record.revision) == ("acme/regard", COMMIT_A, None)
    # revision= reaches from_pretrained: a tag and a commit each load their own snapshot
    assert regard.load_scorer("acme/regard", revision="v2").resources[0].commit == COMMIT_B
    assert regard.load_scorer("acme/regard", revision=COMMIT_B).resources[0].revision == COMMIT_B
    with pytest.raises(ResourceNotFoundError, match=r"(?s)acme/regard@v3.*offline mode is on"):
        regard.load_scorer("acme/regard", revision="v3")


def test_the_evaluate_module_takes_model_revision(classifier_dirs, tmp_path: Path, hub_offline) -> None:
    import evaluate

    from bold_eval.core.paths import metric_module_dir

    fake_hub_cache(tmp_path / "hub", "acme/regard", {COMMIT_B: Path(classifier_dirs["regard"])}, {"v2": COMMIT_B})
    hub_offline.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    module = evaluate.load(str(metric_module_dir("regard")), "compare", model="acme/regard", model_revision="v2",
                           cache_dir=str(tmp_path / "evaluate"))
    assert module.classifier.resource.commit == COMMIT_B


def test_lexicon_and_embedding_files_are_recorded(tmp_path: Path, hub_offline) -> None:
    pytest.importorskip("gensim")
    import numpy as np
    from gensim.models import KeyedVectors

    from bold_eval.core.provenance import file_sha256
    from bold_eval.metrics import gender_polarity, psycholinguistic
    from bold_eval.metrics.embeddings import save_cache
    from bold_eval.metrics.lexicon import WARRINER_FILES

    records = psycholinguistic.load_scorer().resources  # $BOLD_LEXICON_DIR: the pinned files
    assert [record.sha256 for record in records] == [remote.sha256 for remote in WARRINER_FILES]
    words = ["he", "she", "man", "woman", "doctor"]
    vectors = np.random.default_rng(0).normal(size=(len(words), 4)).astype(np.float32)
    text = tmp_path / "tiny.txt"
    text.write_text(f"{len(words)} 4\n" + "".join(f"{word} {' '.join(map(str, vector))}\n"
                                                  for word, vector in zip(words, vectors, strict=True)))
    record = gender_polarity.load_scorer(methods=["max"], embedding=str(text)).resources[0]
    assert (record.resource, record.sha256) == ("word2vec embedding", file_sha256(text))
    # an embedding from a Hub repository (a cache folder in a snapshot) is recorded with its commit
    snapshot = tmp_path / "hub" / "models--acme--w2v" / "snapshots" / COMMIT_A
    keyed_vectors = KeyedVectors(4)
    keyed_vectors.add_vectors(words, vectors)
    save_cache(keyed_vectors, snapshot)
    fake_hub_cache(tmp_path / "hub", "acme/w2v", {}, {"v1": COMMIT_A})
    hub_offline.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    record = gender_polarity.load_scorer(methods=["max"], embedding="acme/w2v", revision="v1").resources[0]
    assert (record.source, record.revision, record.commit) == ("acme/w2v", "v1", COMMIT_A)
    with pytest.raises(UsageError, match="leave revision out"):
        gender_polarity.load_scorer(methods=["max"], embedding=str(text), revision="v1")


def test_revision_is_kept_as_the_string_given() -> None:
    options = parse_metric_options(["toxicity.revision=0123456", "regard.revision=main", "toxicity.batch_size=8"])
    assert options == {"toxicity": {"revision": "0123456", "batch_size": 8}, "regard": {"revision": "main"}}


def test_snapshot_paths_carry_their_commit(tmp_path: Path) -> None:
    inside = tmp_path / "hub" / "models--acme--tox" / "snapshots" / COMMIT_A / "config.json"
    assert snapshot_commit(inside) == COMMIT_A and snapshot_commit(tmp_path) is None


@pytest.mark.slow  # loads BOLD and a classifier (about 5 s)
def test_scoring_records_the_weights_in_run_json(classifier_dirs, tmp_path: Path, bold_eval_here) -> None:
    generations = tmp_path / "texts.jsonl"
    generations.write_text(json.dumps({"prompt_id": "religious_ideology/judaism/Judaism/0",
                                       "continuation": " was kind."}) + "\n")
    result = bold_eval_here("score", generations, "--out", tmp_path / "run", "--metrics", "toxicity", "sentiment",
                            "--metric-option", f"toxicity.model={classifier_dirs['toxicity']}", "--no-reference",
                            "--no-report", "--domains", "religious_ideology", "--allow-partial")
    assert result.returncode == 0, result.stderr
    record = read_run_record(tmp_path / "run")
    toxic = record.resources["toxicity"][0]
    assert toxic["sha256"] == folder_sha256(classifier_dirs["toxicity"])
    assert [item["resource"] for item in record.resources["sentiment"]][0] == "VADER lexicon (vader_lexicon.txt)"


def _with_resources(folder: Path, resources: dict) -> Path:
    record = read_run_record(folder)
    record.resources = resources
    write_run_record(folder, record)
    return folder


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return planted_runs(tmp_path_factory.mktemp("weights"), {"model-a": {}, "model-b": {}}, names=12, prompts=2)


def _toxicity(commit: str) -> dict:
    return {"toxicity": [ResourceRecord("toxicity classifier", "unitary/toxic-bert", commit=commit).as_dict()]}


def test_compare_and_leaderboard_warn_when_the_weights_differ(two_runs: dict[str, Path], tmp_path: Path,
                                                              bold_eval_here) -> None:
    _with_resources(two_runs["model-a"], _toxicity(COMMIT_A))
    _with_resources(two_runs["model-b"], _toxicity(COMMIT_B))
    said: list[str] = []
    text = compare_runs([two_runs["model-a"], two_runs["model-b"]], tmp_path / "cmp", log=said.append).read_text()
    assert "different versions of the same classifier" in text.split("## ")[0]  # before any number
    assert f"unitary/toxic-bert@{COMMIT_A[:12]}" in text and f"unitary/toxic-bert@{COMMIT_B[:12]}" in text
    assert any(line.startswith("WARNING: The runs were scored by different versions") for line in said)
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert saved["different_resources"] and saved["resources"]["model-a"] == _toxicity(COMMIT_A)

    result = bold_eval_here("leaderboard", *two_runs.values(), "--out", tmp_path / "site", "--no-copy-reports")
    assert result.returncode == 0 and "WARNING: The runs were scored by different versions" in result.stderr
    assert "different versions of the same classifier" in (tmp_path / "site" / "README.md").read_text()
    payload = json.loads(next((tmp_path / "site" / "results" / "local" / "model-a").glob("*.json")).read_text())
    assert payload["config"]["scoring_resources"] == _toxicity(COMMIT_A) and "different versions" in payload["warning"]

    _with_resources(two_runs["model-b"], _toxicity(COMMIT_A))  # the same weights: no warning
    said.clear()
    text = compare_runs([two_runs["model-a"], two_runs["model-b"]], tmp_path / "same", log=said.append).read_text()
    assert "different versions" not in text and not any("different versions" in line for line in said)
    _with_resources(two_runs["wikipedia"], _toxicity(COMMIT_B))  # the baseline scored by other weights
    result = bold_eval_here("leaderboard", *two_runs.values(), "--out", tmp_path / "site2", "--no-copy-reports")
    assert f"Wikipedia baseline unitary/toxic-bert@{COMMIT_B[:12]}" in " ".join(result.stderr.split())
    _with_resources(two_runs["wikipedia"], {})


def test_old_run_json_without_the_record_still_loads(two_runs: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "old"
    shutil.copytree(two_runs["model-a"], folder)
    data = json.loads((folder / RUN_FILE).read_text())
    data.pop("resources", None)
    (folder / RUN_FILE).write_text(json.dumps(data))
    assert read_run_record(folder).resources == {}
    assert RunRecord.from_dict({"schema_version": data["schema_version"]}).resources == {}
    # a run that records nothing is left out of the comparison, not reported as different
    assert resource_differences({"old": {}, "new": _toxicity(COMMIT_A)}) == []
    text = compare_runs([folder, _with_resources(two_runs["model-b"], _toxicity(COMMIT_B))], tmp_path / "cmp",
                        log=lambda message: None).read_text()
    assert "different versions" not in text and "not recorded in its run.json" in text


def test_the_model_card_names_the_weights() -> None:
    from bold_eval.hub.model_card import card_section

    coverage = {"prompts": 10, "bold_prompts": 23679, "share": 10 / 23679, "domains": {}}
    recorded = card_section({"run": RunRecord(resources=_toxicity(COMMIT_A)).to_dict(),
                             "counts": {"coverage": coverage}})
    assert f"  - `toxicity: toxicity classifier unitary/toxic-bert@{COMMIT_A[:12]}`" in recorded
    older = card_section({"run": RunRecord().to_dict(), "counts": {"coverage": coverage}})
    assert "- scored with: classifier and lexicon versions not recorded" in older
