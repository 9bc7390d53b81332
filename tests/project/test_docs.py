"""The user guide stays true: every relative link in README.md and docs/ resolves (anchors included), and every
`bold-eval` subcommand and `--flag` they name exists in the CLI's parser."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from bold_eval.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_-]*)")
# Flags of other programs that the guide names in running text, outside a command line of theirs.
FOREIGN_FLAGS = {"--tensor-parallel-size", "--pipeline-parallel-size", "--num-shard", "--apply_chat_template",
                 "--include_path", "--tasks", "--num_processes", "--nproc_per_node", "--no-deps", "--durations",
                 "--run-dir", "--split",  # the reproduce/ scripts
                 "--max-tokens", "--max-samples", "--save-details", "--custom-tasks"}  # Inspect's and lighteval's
# Programs whose command lines the guide shows; their flags are theirs, not bold-eval's.
OTHER_PROGRAMS = ("lm_eval", "inspect", "lighteval", "vllm", "text-generation-launcher", "accelerate", "torchrun",
                  "pip", "python", "pytest", "ray", "make", "llama-server", "git")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command's parser by its command line: "" for `bold-eval` itself, "run", "dataset export", ..."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        found[prefix] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{prefix} {name}".strip())

    walk(build_parser(), "")
    return found


PARSERS = _parsers()


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


ALL_FLAGS = set().union(*(_flags(parser) for parser in PARSERS.values()))


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def _command_lines(text: str) -> list[str]:
    """`bold-eval ...` command lines, from code blocks (continuations joined) and inline code."""
    lines = []
    for block in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines += [line.split("#", 1)[0] for line in joined.splitlines()]
    lines += CODE_SPAN.findall(FENCE.sub("", text))
    commands = []
    for line in map(str.strip, lines):
        if line.startswith("bold-eval "):
            commands.append(line)
        elif "-m bold_eval.cli " in line:  # under accelerate launch or torchrun
            commands.append("bold-eval " + line.split("-m bold_eval.cli ", 1)[1])
    return commands


def test_the_guide_exists_in_its_shape():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(readme) <= 250
    prose = FENCE.sub("", "\n".join(readme)).splitlines()
    assert all(len(line) <= 200 for line in prose if not line.startswith("|")), "a README line over 200 characters"
    for page in PAGES[1:]:
        lines = page.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("# ") and lines[1] == "" and lines[2] and lines[3] and lines[4] == "", page.name


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute address: not checked offline
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(target)
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_named_command_and_flag_exists(page: Path):
    text = page.read_text(encoding="utf-8")
    unknown = []
    for line in _command_lines(text):
        words = line.split()[1:]
        command = ""
        while words and f"{command} {words[0]}".strip() in PARSERS:
            command = f"{command} {words.pop(0)}".strip()
        assert command, f"{page.name}: no bold-eval subcommand in {line!r}"
        known = _flags(PARSERS[command])
        unknown += [f"{command} {flag}" for flag in FLAG.findall(" ".join(words)) if flag not in known]
    prose = FENCE.sub("", text)
    for span in CODE_SPAN.findall(prose):
        if span.startswith(OTHER_PROGRAMS) or span.startswith("bold-eval "):
            continue
        unknown += [flag for flag in FLAG.findall(span) if flag not in ALL_FLAGS | FOREIGN_FLAGS]
    assert not unknown, f"{page.name}: {unknown}"
