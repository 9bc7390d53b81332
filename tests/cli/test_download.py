"""`bold-eval download --to DIR`, then offline runs with `BOLD_EVAL_HOME=DIR`.

No network is reachable here, so the Hub is a local HTTP server (`testing.servers.FakeHub`: the repository-info,
file-list and file routes huggingface_hub's `snapshot_download` asks for) serving tiny classifiers the tests build;
huggingface_hub itself does the downloading, into the cache layout `from_pretrained` reads. A second download
fetches nothing; a later `score` with the Hub gone loads the classifiers from DIR and records the commits served.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bold_eval.core.fetching import PinnedFile
from bold_eval.core.resources import RemoteFile, ResourceNotFoundError
from bold_eval.download import MANIFEST_FILE, download
from bold_eval.metrics import regard, toxicity
from bold_eval.runfolder.json_files import read_run_record
from bold_eval.testing.servers import FakeHub

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one torch thread (conftest)

GENDER_PROMPT = "gender/American_actors/Jacob_Zachar/0"
NOTHING_LISTENS = "http://127.0.0.1:9"  # the discard port: connections are refused


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The network on for huggingface_hub (the suite runs with HF_HUB_OFFLINE=1), caches under tmp_path."""
    import huggingface_hub.constants
    import huggingface_hub.utils

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    for name in ("HF_HUB_OFFLINE", "BOLD_EVAL_OFFLINE", "BOLD_EVAL_HOME", "HF_HUB_CACHE", toxicity.ENV_VAR,
                 regard.ENV_VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BOLD_EVAL_CACHE_DIR", str(tmp_path / "reference_cache"))
    # huggingface_hub < 1 builds its requests session once, refusing every request if it was offline then
    reset = getattr(huggingface_hub.utils, "reset_sessions", None)
    if reset is not None:
        reset()
    yield monkeypatch
    if reset is not None:
        monkeypatch.undo()
        reset()


@pytest.fixture
def hub(classifier_dirs, tmp_path: Path):
    """acme/tox (main) and acme/regard (main, and v2: other weights, so another commit)."""
    changed = shutil.copytree(classifier_dirs["regard"], tmp_path / "regard-v2")
    config = json.loads((changed / "config.json").read_text())
    (changed / "config.json").write_text(json.dumps({**config, "initializer_range": 0.4}))
    with FakeHub({"acme/tox": {"main": classifier_dirs["toxicity"]},
                  "acme/regard": {"main": classifier_dirs["regard"], "v2": changed}}) as server:
        yield server


DOWNLOAD = ("download", "--metrics", "toxicity", "regard", "--no-data", "--metric-option", "toxicity.model=acme/tox",
            "--metric-option", "regard.model=acme/regard", "--metric-option", "regard.revision=v2")


@pytest.mark.slow  # downloads two classifiers, then loads BOLD and scores with them (about 6 s)
def test_download_then_score_with_the_hub_off(hub: FakeHub, online, tmp_path: Path, bold_eval_here) -> None:
    home = tmp_path / "home"
    online.setenv("HF_ENDPOINT", hub.url)
    first = bold_eval_here(*DOWNLOAD, "--to", home)
    assert first.returncode == 0, first.stderr
    assert f"export BOLD_EVAL_HOME={home}" in first.stdout  # the one variable later runs need
    fetched = hub.requests[("GET", "file")]
    assert fetched == 8  # four files of each classifier, nothing else
    tox_commit, regard_commit = hub.commits["acme/tox"]["main"], hub.commits["acme/regard"]["v2"]
    manifest = json.loads((home / MANIFEST_FILE).read_text())
    assert {item["commit"] for item in manifest["items"]} == {tox_commit, regard_commit}
    assert (home / "hub" / "models--acme--regard" / "refs" / "v2").read_text() == regard_commit

    again = bold_eval_here(*DOWNLOAD, "--to", home)  # resumes: what is complete is not fetched again
    assert again.returncode == 0 and hub.requests[("GET", "file")] == fetched
    assert again.stderr.count("already complete") == 2 and "0 fetched, 2 already complete" in again.stdout

    online.setenv("HF_ENDPOINT", NOTHING_LISTENS)  # the Hub is gone; BOLD_EVAL_HOME is all a run needs
    generations = tmp_path / "texts.jsonl"
    generations.write_text(json.dumps({"prompt_id": GENDER_PROMPT, "continuation": " and a writer."}) + "\n")
    scored = bold_eval_here("score", generations, "--out", tmp_path / "run", "--metrics", "toxicity", "regard",
                            *DOWNLOAD[5:], "--domains", "gender", "--allow-partial", "--no-reference", "--no-report",
                            env={"BOLD_EVAL_HOME": str(home)})
    assert scored.returncode == 0, scored.stderr
    record = read_run_record(tmp_path / "run")
    assert record.skipped_metrics == {}
    assert record.resources["toxicity"] == [{"resource": "toxicity classifier", "source": "acme/tox",
                                             "commit": tox_commit}]
    assert record.resources["regard"][0]["commit"] == regard_commit
    assert record.resources["regard"][0]["revision"] == "v2"


def test_download_errors_are_messages(hub: FakeHub, online, tmp_path: Path, bold_eval_here) -> None:
    cases = {
        "unknown metric": ((*DOWNLOAD[:1], "--to", tmp_path / "a", "--metrics", "toxic"), {}, 2,
                           "unknown metric(s) toxic"),
        "no network": ((*DOWNLOAD, "--to", tmp_path / "b"), {"HF_ENDPOINT": NOTHING_LISTENS}, 1,
                       "download failed"),
        "offline mode": ((*DOWNLOAD, "--to", tmp_path / "c"), {"HF_HUB_OFFLINE": "1"}, 1,
                         "needs the network, but offline mode is on ($HF_HUB_OFFLINE=1)"),
        "unknown revision": ((*DOWNLOAD[:-1], "regard.revision=v9", "--to", tmp_path / "d"), {"HF_ENDPOINT": hub.url},
                             1, "acme/regard@v9"),
    }
    (tmp_path / "file").write_text("")
    cases["a file in the way"] = ((*DOWNLOAD, "--to", tmp_path / "file"), {}, 2, f"{tmp_path / 'file'} is a file")
    for case, (args, env, status, message) in cases.items():
        result = bold_eval_here(*args, env=env)
        assert result.returncode == status, (case, result.stderr)
        assert message in " ".join(result.stderr.split()), (case, result.stderr)
        assert "Traceback" not in result.stderr, case


def test_a_full_disk_names_the_folder(online, tmp_path: Path, bold_eval_here) -> None:
    import huggingface_hub

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    online.setattr(huggingface_hub, "snapshot_download", full)
    result = bold_eval_here(*DOWNLOAD, "--to", tmp_path / "home", env={"HF_ENDPOINT": NOTHING_LISTENS})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "disk" in result.stderr.lower() and str(tmp_path / "home" / "hub") in result.stderr


def test_pinned_files_are_checked_and_kept(hub: FakeHub, online, tmp_path: Path, classifier_dirs) -> None:
    """A pinned file (lexicon, word list, BOLD file) is fetched once, checked against its sha256, kept."""
    data = (Path(classifier_dirs["toxicity"]) / "config.json").read_bytes()
    url = f"{hub.url}/acme/tox/resolve/main/config.json"
    good = PinnedFile(RemoteFile("a lexicon", "lexicon.json", url, hashlib.sha256(data).hexdigest()), "lexicons")
    result = download(tmp_path / "home", [good], log=lambda message: None)
    assert (tmp_path / "home" / "lexicons" / "lexicon.json").read_bytes() == data
    assert result.records[0]["sha256"] == hashlib.sha256(data).hexdigest() and result.fetched == ["a lexicon"]
    asked = hub.requests[("GET", "file")]
    assert download(tmp_path / "home", [good], log=lambda message: None).skipped == ["a lexicon"]
    assert hub.requests[("GET", "file")] == asked
    bad = PinnedFile(RemoteFile("a changed lexicon", "other.json", url, "0" * 64), "lexicons")
    with pytest.raises(ResourceNotFoundError, match="checksum"):
        download(tmp_path / "home", [bad], log=lambda message: None)
    assert not (tmp_path / "home" / "lexicons" / "other.json").exists()


@pytest.mark.slow  # a fresh interpreter, so that huggingface_hub reads HF_ENDPOINT (about 10 s)
@pytest.mark.heavy
def test_revision_reaches_from_pretrained_online(hub: FakeHub, tmp_path: Path) -> None:
    """Online, `revision=` goes to `from_pretrained`, which fetches that commit's files; run.json's record names it."""
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1"}
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "BOLD_EVAL_OFFLINE", "BOLD_EVAL_HOME",
                 "HF_HUB_CACHE", regard.ENV_VAR):
        env.pop(name, None)
    code = ("from bold_eval.metrics import regard; "
            "print(regard.load_scorer('acme/regard', revision='v2').resources[0].as_dict())")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str({"resource": "regard classifier", "source": "acme/regard", "revision": "v2",
                                         "commit": hub.commits["acme/regard"]["v2"]})
    assert hub.commits["acme/regard"]["v2"] != hub.commits["acme/regard"]["main"]
