"""Shared test setup: isolated caches, offline mode, the ../shared data folders, small BOLD subsets.

Every cache a library could write (bold_eval's, the Hugging Face hub, datasets and evaluate caches,
matplotlib's font cache, gensim-data, XDG) points into one temporary folder made for this run and
removed at its end, so no test reads or writes the user's ~/.cache. The variables are set here, at
import, before any test module imports transformers or datasets (they read them at import time);
subprocesses started by tests inherit them.

With `CI` set (as .ci/run is), a missing prerequisite (the shared data, an installed extra) fails
the test instead of skipping it, so a CI run cannot go green without the tests that need them.

The suite writes bytecode even where PYTHONDONTWRITEBYTECODE is set, in its own processes and the subprocesses
they start: pytest's rewritten test modules, the harness's modules (their __pycache__ folders, which git ignores)
and any installed module that `make install` left uncompiled. Without it every test process rewrites and compiles
the whole suite again as it collects (about 10 s of each process's time on 2 cores), and every subprocess
compiles what it imports.
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bold_eval.testing.models import missing_prerequisite

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BOLD_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data")).resolve()

CACHE_ROOT = Path(tempfile.mkdtemp(prefix="bold-eval-tests-"))
CACHE_VARIABLES = {
    "BOLD_EVAL_CACHE": "bold_eval",
    "BOLD_EVAL_CACHE_DIR": "bold_eval_reference",  # the Wikipedia reference's classifier scores
    "HF_HOME": "huggingface",
    "HF_HUB_CACHE": "huggingface/hub",
    "HF_DATASETS_CACHE": "huggingface/datasets",
    "HF_EVALUATE_CACHE": "huggingface/evaluate",
    "HF_MODULES_CACHE": "huggingface/modules",
    "XDG_CACHE_HOME": "xdg",
    "MPLCONFIGDIR": "matplotlib",
    "GENSIM_DATA_DIR": "gensim-data",
    "TORCH_HOME": "torch",
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "PIP_CACHE_DIR": "pip",  # test_install builds and installs a wheel
}
for variable, folder in CACHE_VARIABLES.items():
    os.environ[variable] = str(CACHE_ROOT / folder)
# The dequantized embedded model (about 20 s to make) is shared by the test processes of this run and the runs
# after it on this machine: it is keyed by the GGUF file's sha256 and the transformers version, and written whole
# or not at all (`bold_eval.generation.loading`). tests/generation/test_loading.py checks the dequantization
# itself with a cache of its own.
os.environ["BOLD_EVAL_MODEL_CACHE"] = os.environ.get("BOLD_EVAL_TEST_MODEL_CACHE") or str(
    Path(tempfile.gettempdir()) / f"bold-eval-test-models-{os.getuid()}")
# Older cache variables win over HF_HOME when set; the user's must not leak into the tests
# (TRANSFORMERS_CACHE is also deprecated: setting it here would warn at every import).
for variable in ("TRANSFORMERS_CACHE", "HUGGINGFACE_HUB_CACHE", "PYTORCH_TRANSFORMERS_CACHE",
                 "PYTORCH_PRETRAINED_BERT_CACHE"):
    os.environ.pop(variable, None)

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A heavy test is a slow one too, so `-m "not slow"` (make test-fast, make test-min) leaves it out."""
    for item in items:
        if item.get_closest_marker("heavy"):
            item.add_marker(pytest.mark.slow)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(CACHE_ROOT, ignore_errors=True)


@pytest.fixture(scope="session")
def isolated_cache() -> Path:
    """The run's temporary cache root (every cache variable points below it)."""
    return CACHE_ROOT


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The ../shared/data folder (BOLD, lexicons, debiaswe word lists, Sheng et al. annotations)."""
    if not (SHARED_DATA / "bold").is_dir():
        missing_prerequisite(f"shared data folder not found at {SHARED_DATA} (set BOLD_SHARED_DATA)")
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
def multipletests() -> Callable[..., Any]:
    """statsmodels' `multipletests`, the reference the corrections are checked against, run with the process's
    objects frozen (as `clustered.adjust` runs it): its Holm ends with gc.collect(), which would otherwise walk every
    object the test process has loaded."""
    from statsmodels.stats.multitest import multipletests as reference

    def frozen(*args: Any, **keywords: Any) -> Any:
        gc.freeze()
        try:
            return reference(*args, **keywords)
        finally:
            gc.unfreeze()

    return frozen


@pytest.fixture(scope="session")
def bold_sentences() -> list[str]:
    """The first 400 BOLD Wikipedia sentences: a corpus for tiny tokenizers and model inputs."""
    from bold_eval.testing.models import bold_wikipedia_sentences

    sentences = bold_wikipedia_sentences(400)
    if len(sentences) < 100:
        missing_prerequisite("BOLD Wikipedia sentences not found (set BOLD_DATA_DIR or BOLD_SHARED_DATA)")
    return sentences


@pytest.fixture(scope="session")
def served(tmp_path_factory, bold_sentences: list[str]):
    """`transformers serve` with a tiny sampling GPT-2 (a chat template too), for every test of this process that
    needs a real OpenAI-compatible server; stopped at the end. `make test-heavy` puts those tests in one process
    (xdist group "transformers-serve"), so the server starts once."""
    from bold_eval.testing.servers import build_served_model, local_server, serving_available

    if not serving_available():
        missing_prerequisite("transformers serve needs pip install 'transformers[serving]'")
    tmp = tmp_path_factory.mktemp("served")
    folder = build_served_model(tmp / "model", bold_sentences[:300], do_sample=True)
    with local_server(folder, tmp) as server:
        yield server


@pytest.fixture(scope="session")
def classifier_dirs(tmp_path_factory, bold_sentences: list[str]) -> dict[str, str]:
    """Tiny toxic-bert-, regardv3- and hate-speech-shaped classifiers, built once for the whole run."""
    from bold_eval.testing.models import build_metric_classifier

    root = tmp_path_factory.mktemp("classifiers")
    corpus = bold_sentences[:300]
    return {kind: str(build_metric_classifier(root / kind, kind, corpus=corpus)) for kind in ("toxicity", "regard",
                                                                                              "hate")}


@pytest.fixture(scope="session")
def console_script():
    """`console_script("lm_eval", "lm-eval")`: a command installed beside this Python (an extra's CLI)."""

    def find(name: str, extra: str) -> Path:
        path = Path(sys.executable).with_name(name)
        found = path if path.exists() else (Path(which) if (which := shutil.which(name)) else None)
        if found is None:
            missing_prerequisite(f"{name} is not installed (pip install -e '.[{extra}]'; `make test` installs every "
                                 "extra)")
        return found

    return find


@pytest.fixture
def bold_eval_here(monkeypatch, capsys):
    """`bold_eval_here("score", ..., env={...})`: `bold-eval ARGS` run in this process (`cli.main`: the same
    parser, checks, messages and exit statuses as the console script) without a new interpreter's seconds of
    imports. Returns a `subprocess.CompletedProcess`, as `subprocess.run(..., capture_output=True, text=True)`
    does. Tests of signals, crashes and several processes keep real subprocesses."""
    import subprocess

    from bold_eval.cli import main

    def run(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        for key, value in (env or {}).items():
            if os.environ.get(key) != value:
                monkeypatch.setenv(key, value)
        capsys.readouterr()
        code = main([str(arg) for arg in args])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["bold-eval", *map(str, args)], code, out, err)

    return run


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium through Playwright (`bold_eval.testing.browser`), one per test process."""
    from bold_eval.testing import browser

    reason = browser.missing()
    if reason:
        missing_prerequisite(reason)
    with browser.browser() as launched:
        yield launched
