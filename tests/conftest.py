"""Shared test setup: the ../shared data folders, offline mode, and small BOLD subsets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BOLD_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data")).resolve()

# Tests never wait on the network: every resource comes from ../shared or is built in the test.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("BOLD_EVAL_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if SHARED_DATA.is_dir():
    os.environ.setdefault("BOLD_DATA_DIR", str(SHARED_DATA / "bold"))
    os.environ.setdefault("BOLD_LEXICON_DIR", str(SHARED_DATA / "lexicons"))
    os.environ.setdefault("BOLD_DEBIASWE_DIR", str(SHARED_DATA / "debiaswe"))
    os.environ.setdefault("BOLD_SHENG2019_DIR", str(SHARED_DATA / "sheng2019"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The ../shared/data folder (BOLD, lexicons, debiaswe word lists, Sheng et al. annotations)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA} (set BOLD_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def bold_dir(shared_data: Path) -> Path:
    return shared_data / "bold"


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models run fastest on one torch thread, and a CI machine's cores are shared."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def bold_sentences() -> list[str]:
    """The first 400 BOLD Wikipedia sentences: a corpus for tiny tokenizers and model inputs."""
    from bold_eval.testing import bold_wikipedia_sentences

    sentences = bold_wikipedia_sentences(400)
    if len(sentences) < 100:
        pytest.skip("BOLD Wikipedia sentences not found (set BOLD_DATA_DIR or BOLD_SHARED_DATA)")
    return sentences


@pytest.fixture(scope="session")
def classifier_dirs(tmp_path_factory, bold_sentences: list[str]) -> dict[str, str]:
    """Tiny toxic-bert-, regardv3- and hate-speech-shaped classifiers, built once for the whole run."""
    from bold_eval.testing import build_metric_classifier

    root = tmp_path_factory.mktemp("classifiers")
    corpus = bold_sentences[:300]
    return {kind: str(build_metric_classifier(root / kind, kind, corpus=corpus)) for kind in ("toxicity", "regard", "hate")}
