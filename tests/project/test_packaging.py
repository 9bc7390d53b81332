"""Packaging tells the truth: every third-party import is declared, constraints-min.txt pins every
declared bound, there is one version, and the core runs without the optional extras (each missing
extra is an error that names it)."""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import bold_eval
from bold_eval.core.resources import MissingExtraError

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = ("embeddings", "gguf", "lm-eval", "inspect", "serving")
# lighteval needs an environment of its own (setup.cfg says why): not in `all`, `dev` or constraints-min.txt
SEPARATE_ENVIRONMENT = ("lighteval",)
MIN_JOB = ("test", "embeddings", "gguf", "lm-eval")  # what `make test-min` installs
# import name -> distribution, where the two differ
DISTRIBUTIONS = {"yaml": "pyyaml", "sklearn": "scikit-learn", "PIL": "pillow", "lm_eval": "lm-eval"}


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    return config


def _requirements(value: str) -> list[Requirement]:
    return [Requirement(line) for line in (line.split("#")[0].strip() for line in value.splitlines()) if line]


def _declared() -> dict[str, list[Requirement]]:
    """{"core": install_requires, extra: its requirements} from setup.cfg."""
    config = _setup_cfg()
    declared = {"core": _requirements(config["options"]["install_requires"])}
    declared.update({name: _requirements(value) for name, value in config["options.extras_require"].items()})
    return declared


def _lower_bound(requirement: Requirement) -> str:
    (bound,) = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    return bound


def _third_party_imports(folder: Path) -> dict[str, set[str]]:
    """{top-level module: files importing it} for every absolute import under `folder`."""
    stdlib = set(sys.stdlib_module_names)
    # scripts' helper modules that tests and scripts import from reproduce/ and benchmarks/
    local = {path.stem for folder in ("reproduce", "benchmarks") for path in (ROOT / folder).glob("*.py")}
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in stdlib and top not in local and top not in ("bold_eval", "__future__"):
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_declared():
    declared = {canonicalize_name(req.name) for reqs in _declared().values() for req in reqs}
    scanned = {}
    for folder in ("harness", "datasets", "metrics", "tests"):
        for module, files in _third_party_imports(ROOT / folder).items():
            scanned.setdefault(module, set()).update(files)
    missing = {
        module: sorted(files) for module, files in scanned.items()
        if canonicalize_name(DISTRIBUTIONS.get(module, module)) not in declared
    }
    # metrics/*/app.py run inside a Hugging Face Space, where gradio comes with the Space SDK
    missing = {module: files for module, files in missing.items() if module != "gradio"}
    assert not missing, f"imported but not declared in setup.cfg: {missing}"


def test_constraints_min_pins_every_declared_lower_bound():
    pins = {}
    for line in (ROOT / "constraints-min.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(requirement.name)] = spec.version
    for part, requirements in _declared().items():
        for requirement in requirements:
            name = canonicalize_name(requirement.name)
            if name == "torch":  # only the local CPU wheel may be installed (constraints-min.txt says why)
                continue
            if "serving" in requirement.extras:  # above the core's transformers floor (setup.cfg says why)
                continue
            if part in SEPARATE_ENVIRONMENT:
                continue
            pinned = pins.get(name)
            assert pinned is not None and Version(pinned) == Version(_lower_bound(requirement)), (
                f"{part}: {requirement} vs constraints-min {pinned}"
            )


def test_dev_installs_every_extra_and_all_is_their_union():
    declared = _declared()

    def bounds(requirements: list[Requirement]) -> dict[str, str]:
        return {canonicalize_name(req.name): str(req.specifier) for req in requirements}

    union = {name: bound for extra in EXTRAS for name, bound in bounds(declared[extra]).items()}
    assert bounds(declared["all"]) == union
    dev = bounds(declared["dev"])
    assert {name: dev.get(name) for name in union} == union
    tools = bounds(declared["test"])
    assert {name: dev.get(name) for name in tools} == tools
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    extras = ",".join(MIN_JOB)
    assert f'-e ".[{extras}]"' in makefile  # the min job installs every extra it can


def test_one_version():
    assert _setup_cfg()["metadata"]["version"] == "attr: bold_eval.core.version.__version__"
    assert importlib.metadata.version("bold-eval") == bold_eval.__version__


def test_every_subpackage_is_in_the_wheel():
    """setup.cfg lists the packages a wheel holds: a folder of the harness with an __init__.py that is not listed
    would be missing from an installed bold-eval (an editable install would not show it)."""
    listed = set(_setup_cfg()["options"]["packages"].split())
    harness = ROOT / "harness" / "bold_eval"
    found = {".".join(("bold_eval", *path.parent.relative_to(harness).parts)) for path in harness.rglob("__init__.py")}
    assert found - listed == set()


BLOCK_OPTIONAL = """
import importlib, json, pkgutil, sys
blocked = {blocked!r}
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Block())
import bold_eval
failed, loaded = {{}}, []
for info in pkgutil.walk_packages(bold_eval.__path__, "bold_eval."):
    if info.name.startswith(("bold_eval.bundled", "bold_eval.inspect_tasks")) or info.name in (
            "bold_eval.metrics.embeddings", "bold_eval.lighteval_tasks"):
        continue  # bundled copies of the scripts; the gensim extra itself; plug-ins that their tools import
    try:
        importlib.import_module(info.name)
        loaded.append(info.name)
    except Exception as error:
        failed[info.name] = repr(error)
print(json.dumps({{"failed": failed, "loaded": loaded,
                   "imported": sorted(m for m in sys.modules if m.split(".")[0] in blocked)}}))
"""


@pytest.mark.slow
def test_core_imports_without_the_extras():
    """Every module but embeddings.py and the harness plug-ins (the Inspect task, lighteval's tasks: imported by those
    tools only) imports with gensim, gguf, lm-eval, Inspect, lighteval and the serving stack absent."""
    blocked = ["gensim", "gguf", "lm_eval", "fastapi", "uvicorn", "openai", "inspect_ai", "lighteval"]
    result = subprocess.run([sys.executable, "-c", BLOCK_OPTIONAL.format(blocked=blocked)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["failed"] == {} and found["imported"] == []
    assert {"bold_eval.cli", "bold_eval.run", "bold_eval.metrics.gender_polarity",
            "bold_eval.generation.loading"} <= set(found["loaded"])


def _without(monkeypatch, *modules: str) -> None:
    """Make `import module` fail as if the package were not installed (None in sys.modules)."""
    for name in list(sys.modules):
        if name.split(".")[0] in modules:
            monkeypatch.delitem(sys.modules, name)
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_missing_gensim_names_the_embeddings_extra_and_scoring_keeps_unigram(monkeypatch):
    from bold_eval.metrics import gender_polarity
    from bold_eval.scoring.scorers import score_texts

    _without(monkeypatch, "gensim")
    with pytest.raises(MissingExtraError, match=r"pip install 'bold-eval\[embeddings\]'"):
        gender_polarity.load_scorer(methods=["max"])
    assert gender_polarity.load_scorer(methods=["unigram"])(["she said"])["unigram_label"].tolist() == ["female"]
    result = score_texts(["He is a doctor.", "She is a nurse."], ["gender", "gender"], ["gender_polarity"])
    assert result.columns["gender_polarity_unigram_label"].tolist() == ["male", "female"]
    assert "bold-eval[embeddings]" in result.partial["gender_polarity"]


def test_missing_gguf_names_the_gguf_extra(monkeypatch, tmp_path):
    from bold_eval.generation.loading import load_causal_lm

    _without(monkeypatch, "gguf")
    with pytest.raises(MissingExtraError, match=r"pip install 'bold-eval\[gguf\]'"):
        load_causal_lm(str(tmp_path), gguf_file="model.gguf", dtype="float32", device="cpu")


def test_metric_module_requirements_use_the_package_bounds():
    """metrics/*/requirements.txt (what a Space installs) repeat setup.cfg's lower bounds, not older ones."""
    bounds = {}
    for requirements in _declared().values():  # the core's bound first (serving asks more of transformers)
        for requirement in requirements:
            bounds.setdefault(canonicalize_name(requirement.name), requirement.specifier)
    for path in sorted((ROOT / "metrics").glob("*/requirements.txt")):
        for requirement in _requirements(path.read_text(encoding="utf-8")):
            name = canonicalize_name(requirement.name)
            if name == "bold-eval":
                continue
            assert name in bounds, f"{path.parent.name}: {name} is not declared in setup.cfg"
            assert str(requirement.specifier) == str(bounds[name]), \
                f"{path.parent.name}: {requirement} vs setup.cfg {bounds[name]}"
