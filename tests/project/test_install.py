"""A non-editable install (wheel) finds the dataset script, the metric modules and runs the CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bold_eval.metrics import PAPER_METRICS
from bold_eval.testing.models import missing_prerequisite

ROOT = Path(__file__).resolve().parents[2]
BUILD_INPUTS = ("setup.cfg", "pyproject.toml", "README.md", "harness", "datasets", "metrics")

PROBE = """
import json, sys
import bold_eval
from bold_eval.core import paths
names = json.loads(sys.argv[1])
print(json.dumps({
    "package": bold_eval.__file__,
    "dataset": str(paths.dataset_script_dir()),
    "metrics": {name: str(paths.metric_module_dir(name)) for name in names},
    "lm_eval_tasks": str(paths.lm_eval_tasks_dir()),
}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """Build a wheel from a copy of the sources (so the checkout gets no build/ folder) and
    install it into a plain folder, without dependencies (they are in the venv already)."""
    if importlib.util.find_spec("setuptools") is None:
        missing_prerequisite("setuptools is needed to build the wheel (pip install setuptools)")
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif path.is_file():
            shutil.copy(path, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"), str(source)],
        check=True,
        cwd=work,
        timeout=120,
    )
    (wheel,) = (work / "dist").glob("bold_eval-*.whl")
    target = work / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True, timeout=120)
    return target


def run_installed(target: Path, args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(target), **(env or {})}
    # cwd outside the checkout, so nothing is imported from the source tree
    return subprocess.run(
        [sys.executable, *args], cwd=target.parent, env=environment, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_wheel_finds_bundled_files(installed: Path):
    # only the metric modules that exist in this checkout; the dataset script always
    names = [name for name in PAPER_METRICS if (ROOT / "metrics" / name / f"{name}.py").is_file()]
    result = run_installed(installed, ["-c", PROBE, json.dumps(names)])
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(found["package"]).is_relative_to(installed)
    dataset = Path(found["dataset"])
    assert dataset.is_relative_to(installed)
    assert (dataset / "bold.py").is_file() and (dataset / "README.md").is_file()
    for name, folder in found["metrics"].items():
        assert Path(folder).is_relative_to(installed), name
        assert (Path(folder) / f"{name}.py").is_file()
    assert Path(found["lm_eval_tasks"]).is_relative_to(installed)


@pytest.mark.slow
def test_installed_cli_summarizes_the_dataset(installed: Path, bold_dir: Path, tmp_path: Path):
    env = {"BOLD_DATA_DIR": str(bold_dir), "BOLD_EVAL_CACHE": str(tmp_path / "cache")}
    result = run_installed(installed, ["-m", "bold_eval.cli", "dataset", "summary"], env)
    assert result.returncode == 0, result.stderr
    assert "total: 23679 prompts in 43 groups" in result.stdout
    assert "American_actresses" in result.stdout
