"""The package's layout is its pipeline: every import goes to the same stage or an earlier one, and no
module reaches itself through imports, not even through an import inside a function.

The stage order is written once, here (CONTRIBUTING.md describes it). A module's stage is the first component of
its path under bold_eval/ (`generation/loading.py` -> generation); runfolder/ is the run folder's schema (file
names, columns, the run.json record) and its reads and writes, which every stage reading or writing a run folder
uses, so it ranks with core (the analysis takes only its names and records); run.py, cli.py, generator_flags.py
(the CLI's flag folding), the package root and the lm-eval tasks are the top.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import bold_eval

PACKAGE = Path(bold_eval.__file__).resolve().parent

# stage -> rank. A module may import its own stage or a stage of lower rank; stages that share a rank
# are siblings and may not import each other (validation and hub sit beside the pipeline).
RANKS = {
    "core": 0, "data": 1, "generation": 2, "metrics": 3, "scoring": 4, "analysis": 5, "report": 6,
    "validation": 7, "hub": 7, "testing": 8, "top": 9,
}
# Top-level modules whose stage is not their name.
TOP_LEVEL = {"runfolder": "core", "run": "top", "cli": "top", "generator_flags": "top", "download": "top",
             "__init__": "top", "__main__": "top", "lm_eval_tasks": "top", "inspect_tasks": "top",
             "lighteval_tasks": "top", "bundled": "top"}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def stage_of(module: str) -> str | None:
    first = module.split(".")[0]
    if first in TOP_LEVEL:
        return TOP_LEVEL[first]
    return first if first in RANKS else None


def imports(path: Path, modules: set[str], root: Path = PACKAGE) -> list[tuple[str, int, str]]:
    """(imported module of the package, line, statement) for every import in the file, at any depth
    (module level, inside functions, under TYPE_CHECKING); relative imports resolved."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    source = path.read_text()
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                absolute = ".".join(["bold_eval", *base, *([node.module] if node.module else [])])
            else:
                absolute = node.module or ""
            # `from bold_eval.x import y` imports the module bold_eval.x.y when there is one
            targets = [f"{absolute}.{alias.name}" if f"{absolute}.{alias.name}"[10:] in modules else absolute
                       for alias in node.names]
        for target in targets:
            if target == "bold_eval" or target.startswith("bold_eval."):
                name = target[len("bold_eval."):] if target != "bold_eval" else "__init__"
                while name and name not in modules and "." in name:
                    name = name.rpartition(".")[0]
                if name in modules and name != module:
                    found.append((name, node.lineno, _first_line(lines, node)))
    return found


def _first_line(lines: list[str], node: ast.stmt) -> str:
    """The first line of `node`'s source (`ast.get_source_segment`'s first line, without splitting the whole file
    again for every import): its column offsets count UTF-8 bytes."""
    line = lines[node.lineno - 1].encode()
    end = node.end_col_offset if node.end_lineno == node.lineno else None
    return line[node.col_offset:end].decode()


@functools.lru_cache(maxsize=8)
def graph(root: Path = PACKAGE) -> tuple[dict[str, list[tuple[str, int, str]]], dict[str, Path]]:
    """The package's imports per module, and its files; parsed once per root (three tests read the package's)."""
    files = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    files["__init__"] = root / "__init__.py"
    modules = set(files)
    return {module: imports(path, modules, root) for module, path in files.items()}, files


def where(module: str, files: dict[str, Path], line: int, statement: str) -> str:
    path = files[module]
    shown = path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE) else path.name
    return f"{shown}:{line}: {statement}"


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the components of more than one module (a cycle each)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return components


def cycles(root: Path = PACKAGE) -> list[str]:
    found, files = graph(root)
    components = strongly_connected({m: {target for target, _, _ in edges} for m, edges in found.items()})
    return [where(m, files, line, statement) for component in components for m in component
            for target, line, statement in found[m] if target in component]


def wrong_stage(root: Path = PACKAGE) -> list[str]:
    found, files = graph(root)
    wrong = []
    for module, edges in found.items():
        source = stage_of(module)
        for target, line, statement in edges:
            target_stage = stage_of(target)
            if source is None or target_stage is None or target_stage == source:
                continue
            if RANKS[target_stage] >= RANKS[source]:  # a later stage, or a sibling beside this one
                wrong.append(f"[{source} -> {target_stage}] " + where(module, files, line, statement))
    return wrong


def test_every_module_has_a_stage():
    found, _ = graph()
    assert [module for module in found if stage_of(module) is None] == []


def test_no_import_cycle():
    assert cycles() == [], "import cycles:\n" + "\n".join(cycles())


def test_imports_go_to_the_same_or_an_earlier_stage():
    assert wrong_stage() == [], "imports into a later or sibling stage:\n" + "\n".join(wrong_stage())


def test_the_checks_catch_a_hidden_cycle_and_an_upward_import(tmp_path):
    """A core module importing the report inside a function, the report importing it back (relative
    import), and validation importing hub: each is caught with its line."""
    for folder in ("core", "report", "validation", "hub"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text('"""stage."""\n')
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "core" / "a.py").write_text("def f():\n    from bold_eval.report.b import g\n    return g\n")
    (tmp_path / "report" / "b.py").write_text("from ..core import a\n\ng = a\n")
    (tmp_path / "validation" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                                  "    from bold_eval.hub import d\n")
    (tmp_path / "hub" / "d.py").write_text("")
    assert cycles(tmp_path) == ["a.py:2: from bold_eval.report.b import g", "b.py:1: from ..core import a"]
    assert wrong_stage(tmp_path) == ["[core -> report] a.py:2: from bold_eval.report.b import g",
                                     "[validation -> hub] c.py:3: from bold_eval.hub import d"]


MAX_FUNCTION_LINES = 60  # decorators and docstring included; a longer function hides the steps it takes


def test_no_function_is_longer_than_sixty_lines():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if node.end_lineno - start + 1 > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{start}: {node.name} "
                                f"({node.end_lineno - start + 1} lines)")
    assert long == [], "functions over 60 lines:\n" + "\n".join(long)


def private_imports(root: Path = PACKAGE) -> list[str]:
    """`from bold_eval.x import _name` in another module than x: a private name shared is a public one in
    hiding (rename it for what it does, or keep it in its module)."""
    private = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bold_eval"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append(f"{path.relative_to(root.parent)}:{node.lineno}: {alias.name} from "
                                       f"{node.module}")
    return private


def test_no_private_name_is_imported_across_modules():
    assert private_imports() == [], "private names imported from another module:\n" + "\n".join(private_imports())


def generator_probes(root: Path = PACKAGE) -> list[str]:
    """getattr / hasattr on a generator: what the orchestrator calls is declared by `generation.base.Generator`."""
    probes = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr",
                                                                                                    "hasattr")
                    and node.args and "generator" in ast.get_source_segment(source, node.args[0]).lower()):
                probes.append(f"{path.relative_to(root.parent)}:{node.lineno}: {ast.get_source_segment(source, node)}")
    return probes


def test_no_generator_is_probed_with_getattr():
    assert generator_probes() == [], "generators probed:\n" + "\n".join(generator_probes())


def test_the_structure_checks_catch_a_private_import_and_a_probe(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "core" / "__init__.py").write_text('"""stage."""\n')
    (tmp_path / "core" / "a.py").write_text("def _helper():\n    return 1\n")
    (tmp_path / "core" / "b.py").write_text("from bold_eval.core.a import _helper\n\n\ndef f(generator):\n"
                                            "    return getattr(generator, 'load', None), _helper\n")
    assert private_imports(tmp_path) == [f"{tmp_path.name}/core/b.py:1: _helper from bold_eval.core.a"]
    assert generator_probes(tmp_path) == [f"{tmp_path.name}/core/b.py:5: getattr(generator, 'load', None)"]


# What the analysis may take from the run folder's package: its names and records, which read and write nothing.
# The report (or the orchestrator) reads a run folder and hands the analysis `runfolder.records.LoadedRun`s.
ANALYSIS_RUNFOLDER = ("runfolder.layout", "runfolder.records")
# Modules whose functions read or write files, besides the rest of the runfolder package.
FILE_MODULES = ("runfolder", "core.resources", "core.storage", "shutil", "tempfile", "pickle")
# Calls that read or write a file (pandas, pyarrow, numpy, pathlib, builtins); and any `read_*` / `write_*`.
FILE_CALLS = {"open", "read_parquet", "ParquetFile", "to_parquet", "to_csv", "to_json", "to_pickle", "load", "save",
              "savez", "loadtxt", "savetxt", "mkdir", "unlink", "rmdir", "rename", "replace", "touch", "exists",
              "is_file", "is_dir", "stat", "glob", "rglob", "iterdir", "resolve", "load_run", "loaded_run"}


def file_access(root: Path = PACKAGE, stage: str = "analysis") -> list[str]:
    """Where a module of `stage` (and the runfolder modules it may import) touches a file: an import of a module
    that reads or writes files (`FILE_MODULES`, except `ANALYSIS_RUNFOLDER`), or a call of `FILE_CALLS`, `read_*`
    or `write_*` (by name or as a method). `replace` and `rename` count only with a path-like receiver
    (`str.replace`, `DataFrame.rename` and `dataclasses.replace` are not file operations)."""
    paths = sorted((root / stage).rglob("*.py")) + [root / f"{name.replace('.', '/')}.py"
                                                     for name in ANALYSIS_RUNFOLDER]
    found = []
    for path in [path for path in paths if path.is_file()]:
        source = path.read_text()
        for node in sorted(ast.walk(ast.parse(source)), key=lambda node: getattr(node, "lineno", 0)):
            modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for module in modules:
                inner = module.removeprefix("bold_eval.")
                if (any(inner == name or inner.startswith(f"{name}.") for name in FILE_MODULES)
                        and inner not in ANALYSIS_RUNFOLDER):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: imports {module}")
            if isinstance(node, ast.Call):
                name = (node.func.id if isinstance(node.func, ast.Name)
                        else node.func.attr if isinstance(node.func, ast.Attribute) else "")
                if name in ("replace", "rename") and not _path_like(node.func):
                    continue
                if name in FILE_CALLS or name.startswith(("read_", "write_")):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: calls "
                                 f"{ast.get_source_segment(source, node.func)}()")
    return found


def _path_like(func: ast.expr) -> bool:
    """`os.replace(...)`, `path.replace(...)`, `Path(...).replace(...)`: a receiver named like a file or folder."""
    if not isinstance(func, ast.Attribute):
        return True
    receiver = ast.unparse(func.value)
    return receiver == "os" or "Path(" in receiver or any(word in receiver.lower()
                                                         for word in ("path", "file", "folder", "dir"))


def test_the_analysis_reads_and_writes_no_file():
    """The analysis receives what it analyses (scores frames, `LoadedRun`s) and returns results; the report reads
    the run folders and writes the files (CONTRIBUTING.md: "What passes between the stages")."""
    assert file_access() == [], "file access in analysis/:\n" + "\n".join(file_access())


def test_the_file_check_catches_a_loader_a_read_and_a_write(tmp_path):
    (tmp_path / "analysis").mkdir()
    (tmp_path / "runfolder").mkdir()
    (tmp_path / "runfolder" / "layout.py").write_text("SCORES_FILE = 'scores.parquet'\n")
    (tmp_path / "runfolder" / "records.py").write_text("import os\n\n\ndef gone(path):\n    os.replace(path, 'x')\n")
    (tmp_path / "analysis" / "a.py").write_text(
        "import pandas as pd\nfrom bold_eval.runfolder.layout import SCORES_FILE\n"
        "from bold_eval.runfolder.loading import load_run\n\n\ndef f(folder, frame):\n"
        "    text = open(folder / SCORES_FILE).read()\n    scores = pd.read_parquet(folder)\n"
        "    (folder / 'x.md').write_text(text)\n    return frame.replace(0, 1), text.replace('a', 'b'), scores\n")
    name = tmp_path.name
    assert file_access(tmp_path) == [f"{name}/analysis/a.py:3: imports bold_eval.runfolder.loading",
                                     f"{name}/analysis/a.py:7: calls open()",
                                     f"{name}/analysis/a.py:8: calls pd.read_parquet()",
                                     f"{name}/analysis/a.py:9: calls (folder / 'x.md').write_text()",
                                     f"{name}/runfolder/records.py:5: calls os.replace()"]


def test_building_the_parser_imports_nothing_heavy():
    """`bold-eval --help` and `--version` build the parser only: its choices come from `core.options`."""
    import subprocess
    import sys

    heavy = ("numpy", "pandas", "scipy", "statsmodels", "torch", "transformers", "pyarrow", "matplotlib")
    code = ("import sys\nfrom bold_eval.cli import build_parser\nbuild_parser()\n"
            f"print(','.join(name for name in {heavy!r} if name in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
