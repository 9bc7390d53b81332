"""One Space per metric: the evaluate module folder with the part of bold_eval its script imports."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from huggingface_hub import (
    metadata_load,
)
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bold_eval.core.paths import PACKAGE_DIR, metric_module_dir
from bold_eval.core.version import __version__
from bold_eval.hub.staging import PublishError, StagedRepo, fresh_folder, repo_id_in
from bold_eval.metrics import evaluate_module_names

# The files of an evaluate module folder (metrics/<name>/), all uploaded to its Space.
MODULE_FILES = ("{name}.py", "README.md", "app.py", "requirements.txt")


# What `evaluate` and the Hub need in a module card's YAML header (like HF's own measurements).
SPACE_CARD_KEYS = ("title", "sdk", "app_file", "tags")


def _imported_modules(path: Path) -> set[str]:
    """Every absolute module name imported anywhere in a Python file (also inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # `from bold_eval.metrics import <metric>` imports a submodule, not only a name.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _package_file(module: str) -> Path | None:
    """The file of a `bold_eval` module inside the installed package, or None if not one."""
    parts = module.split(".")
    if parts[0] != "bold_eval":
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def vendored_files(script: Path) -> tuple[list[Path], set[str]]:
    """The `bold_eval` files a module script needs (transitively, with their packages'
    `__init__.py`), and the top-level third-party modules that all of them import."""
    needed: set[Path] = {PACKAGE_DIR / "__init__.py"}
    third_party: set[str] = set()
    pending = [script]
    seen: set[Path] = set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imported_modules(path):
            top = module.split(".")[0]
            if top == "bold_eval":
                found = _package_file(module)
                if found is None:
                    continue  # a name imported from a module, not a module itself
                needed.add(found)
                pending.append(found)
                # importing a.b.c runs a/__init__.py and a/b/__init__.py too.
                for parent in found.relative_to(PACKAGE_DIR).parents:
                    init = PACKAGE_DIR / parent / "__init__.py"
                    if init.is_file() and init not in seen:
                        needed.add(init)
                        pending.append(init)
            elif top not in sys.stdlib_module_names and top != "__future__":
                third_party.add(top)
    return sorted(needed), third_party


@functools.cache
def _declared_requirements() -> dict[str, str]:
    """bold-eval's own install requirements, {canonical distribution name: requirement line}.

    Cached: the installed metadata does not change while staging several Spaces.
    """
    try:
        requires = importlib.metadata.requires("bold-eval") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    declared = {}
    for line in requires:
        requirement = Requirement(line)
        if requirement.marker is not None:  # extras such as `; extra == "dev"` are not runtime needs
            continue
        declared[canonicalize_name(requirement.name)] = line.strip()
    return declared


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    """{import name: distributions}; cached because scanning every installed package takes ~0.2 s."""
    return importlib.metadata.packages_distributions()


def _requirement_name(line: str) -> str:
    """The canonical distribution name of a requirements.txt line (the line itself if it is no
    plain requirement, e.g. a pip option, so that it is still kept once)."""
    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return line


def space_requirements(module_requirements: Sequence[str], third_party: Iterable[str]) -> list[str]:
    """Requirement lines for a Space with a vendored `bold_eval`.

    The module folder's own lines come first, minus `bold-eval` (vendored), then one line per
    imported package that is not listed yet, bounded as in bold-eval's install requirements.
    """
    declared = _declared_requirements()
    distributions = _packages_distributions()
    lines: list[str] = []
    names: set[str] = set()
    for raw in module_requirements:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name = _requirement_name(line)
        if name == "bold-eval" or name in names:
            continue
        names.add(name)
        lines.append(line)
    for module in sorted(third_party):
        for distribution in distributions.get(module, [module]):
            name = canonicalize_name(distribution)
            if name in names or name == "bold-eval":
                continue
            names.add(name)
            lines.append(declared.get(name, distribution))
    return lines


def _check_space_card(card_path: Path) -> dict[str, Any]:
    metadata = metadata_load(card_path) or {}
    missing = [key for key in SPACE_CARD_KEYS if key not in metadata]
    if missing:
        raise PublishError(f"module card {card_path} lacks the YAML keys {missing} that the Hub and evaluate need")
    if "evaluate" not in (metadata.get("tags") or []):
        raise PublishError(f"module card {card_path} lacks the `evaluate` tag")
    return metadata


def stage_metric_space(name: str, namespace: str, folder: str | Path) -> StagedRepo:
    """Copy `metrics/<name>/` into `folder` with the `bold_eval` files its script imports.

    `folder` is named after the module (evaluate loads a local folder `X` through `X/X.py`), so
    `evaluate.load(str(folder))` works on the staged copy as it will on `NS/<name>`.
    """
    if name not in evaluate_module_names():
        raise PublishError(f"unknown metric module {name!r}; valid: {', '.join(evaluate_module_names())}")
    repo_id = repo_id_in(namespace, name)
    folder = Path(folder)
    if folder.name != name:
        raise PublishError(f"a module folder must be named after its script: {folder} should end in /{name}")
    source = metric_module_dir(name)
    folder = fresh_folder(folder)
    for pattern in MODULE_FILES:
        filename = pattern.format(name=name)
        if not (source / filename).is_file():
            raise PublishError(f"module folder {source} lacks {filename}")
        shutil.copy2(source / filename, folder / filename)
    metadata = _check_space_card(folder / "README.md")

    needed, third_party = vendored_files(source / f"{name}.py")
    for path in needed:
        target = folder / "bold_eval" / path.relative_to(PACKAGE_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    # app.py imports gradio through evaluate.utils; the Space image provides gradio (sdk: gradio).
    requirements = space_requirements(
        (source / "requirements.txt").read_text(encoding="utf-8").splitlines(), third_party
    )
    header = (
        f"# Staged by bold-eval {__version__}: bold_eval itself is vendored in ./bold_eval\n"
        "# (only the files this module imports), so it is not listed here.\n"
    )
    (folder / "requirements.txt").write_text(header + "\n".join(requirements) + "\n", encoding="utf-8")
    return StagedRepo(repo_id, "space", folder, space_sdk=str(metadata["sdk"]))
