"""Where things live: the dataset script, metric modules and lm-eval tasks (in a checkout or a
wheel). The files of a run folder are named in `bold_eval.runfolder.layout`."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
_CHECKOUT_ROOT = PACKAGE_DIR.parent.parent


def _first_existing(*candidates: Path) -> Path:
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise FileNotFoundError(
        "bold-eval's bundled files are missing; looked in: " + ", ".join(str(c) for c in candidates)
    )


def dataset_script_dir() -> Path:
    """The folder holding the BOLD loading script `bold.py` and its dataset card."""
    return _first_existing(
        _CHECKOUT_ROOT / "datasets" / "bold" / "bold.py",
        PACKAGE_DIR / "bundled" / "datasets" / "bold" / "bold.py",
    ).parent


def metric_module_dir(name: str) -> Path:
    """The evaluate module folder of one metric, usable as `evaluate.load(str(path))`."""
    if not name.isidentifier():
        raise ValueError(f"{name!r} is not a metric name")
    return _first_existing(
        _CHECKOUT_ROOT / "metrics" / name / f"{name}.py",
        PACKAGE_DIR / "bundled" / "metrics" / name / f"{name}.py",
    ).parent


def lm_eval_tasks_dir() -> Path:
    """The lm-evaluation-harness task folder, for `lm_eval --include_path`."""
    return PACKAGE_DIR / "lm_eval_tasks"
