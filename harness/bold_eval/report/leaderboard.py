"""`bold-eval leaderboard`: one static site over many runs (`analysis.leaderboard`), openable from `file://` and
uploadable as a Hub static Space as it stands.

DIR/index.html (the board: models x domains for a chosen label, each model's difference from Wikipedia with its
interval, ranks with tie groups, two models side by side), DIR/leaderboard_files/ (the shipped scripts and the
board's data, `report.site`), DIR/runs/<model>/ (each run's own report.html, copied so that the folder works
alone), DIR/tables/ (CSV), DIR/results/<org>/<model>/results_<time>.json (the Hub leaderboard template's
per-model layout: {"config": {...}, "results": {task: {metric: value}}}) and DIR/README.md (the Space's card).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TypedDict

from bold_eval.analysis.clustered import CALIBRATION_TABLES, POWER_AGAINST_ORACLE
from bold_eval.analysis.leaderboard import Leaderboard, build_leaderboard, is_wikipedia
from bold_eval.core.errors import UserError
from bold_eval.core.provenance import differences_warning, resource_differences, resource_lines
from bold_eval.core.resources import atomic_writer
from bold_eval.core.storage import storage_guard
from bold_eval.core.version import __version__
from bold_eval.metrics import metric_specs
from bold_eval.report.markdown import quantity
from bold_eval.report.site import clean, copy_assets, page, write_data, write_page
from bold_eval.runfolder.layout import HTML_REPORT_DIR, HTML_REPORT_FILE
from bold_eval.runfolder.loading import loaded_run, read_reference_scores
from bold_eval.runfolder.records import LoadedRun

SITE_DIR = "leaderboard_files"
ASSET_NAMES = ("style.css", "common.js", "leaderboard.js")
RESULTS_DIR = "results"


def slug(text: str) -> str:
    """A file name for a model label: letters, digits, dot, dash and underscore only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:80] or "model"


class LeaderboardWritten(TypedDict):
    """What `write_leaderboard` wrote: the page, the results files, each file's size in bytes, the number of models,
    the warning when the runs were scored with different resources ("" when not), and the seconds it took."""

    index: Path
    results: list[Path]
    bytes: dict[str, int]
    models: int
    warning: str
    test_seconds: float
    seconds: float


def write_leaderboard(run_dirs: list[str | Path], out: str | Path, *, alpha: float = 0.05, correction: str = "holm",
                      cluster: str = "name", allow_different_prompts: bool = False,
                      copy_reports: bool = True) -> LeaderboardWritten:
    """Build the board over `run_dirs` and write the site into `out`; returns paths, sizes and timings."""
    started = time.perf_counter()
    board = build_leaderboard(load_board_runs(run_dirs), alpha=alpha, correction=correction, cluster=cluster,
                              allow_different_prompts=allow_different_prompts)
    tested = time.perf_counter()
    out = Path(out)
    with storage_guard(out, "creating the leaderboard folder"):
        out.mkdir(parents=True, exist_ok=True)
    copy_assets(out / SITE_DIR, ASSET_NAMES)
    reports = _copy_reports(board, out) if copy_reports else {}
    sizes = {"board": write_data(out / SITE_DIR / "board.js", "board", board_payload(board, reports))}
    sizes["page"] = write_page(out / "index.html", page(f"BOLD leaderboard: {quantity(len(board.runs), 'model')}",
                                                        SITE_DIR,
                                                        ("common.js", "board.js", "leaderboard.js"),
                                                        body="<h1>BOLD leaderboard</h1>"))
    tables = out / "tables"
    tables.mkdir(exist_ok=True)
    for name, frame in (("leaderboard", board.cells), ("pairs", board.pairs), ("power", board.power)):
        with atomic_writer(tables / f"{name}.csv") as handle:
            handle.write(frame.to_csv(index=False).encode())
    results = write_results(board, out / RESULTS_DIR)
    with atomic_writer(out / "README.md") as handle:
        handle.write(space_card(board).encode())
    return {"index": out / "index.html", "results": results, "bytes": sizes, "models": len(board.runs),
            "warning": differences_warning(resource_versions(board)),
            "test_seconds": tested - started, "seconds": time.perf_counter() - started}


def load_board_runs(run_dirs: Sequence[str | Path]) -> list[LoadedRun]:
    """The board's runs as the analysis receives them, without their texts: each folder once (`check_distinct`),
    and when no Wikipedia run is among them, the Wikipedia reference of the first model run that has one."""
    check_distinct(run_dirs)
    runs = [loaded_run(folder, texts=False) for folder in run_dirs]
    if any(is_wikipedia(run) for run in runs):
        return runs
    for at, run in enumerate(runs):
        reference = read_reference_scores(run.folder, texts=False)
        if reference is not None:
            runs[at] = dataclasses.replace(run, reference=reference)
            break
    return runs


def check_distinct(run_dirs: Sequence[str | Path]) -> None:
    """Refuse a run folder given twice: it would stand beside itself as two models that cannot differ."""
    seen: dict[Path, str] = {}
    for given in run_dirs:
        folder = Path(given).expanduser().resolve()
        if folder in seen:
            raise UserError(f"the run folder {given} was given twice (also as {seen[folder]}): a leaderboard ranks "
                            "different runs; pass each run folder once")
        seen[folder] = str(given)


def resource_versions(board: Leaderboard) -> list[str]:
    """How the models' runs (and a Wikipedia run given as the baseline) differ in the classifiers, embeddings and
    lexicon files that scored them."""
    baseline = {"Wikipedia baseline": board.baseline_resources} if board.baseline_resources else {}
    return resource_differences({**baseline, **{run.label: run.record.resources for run in board.runs}})


def _copy_reports(board: Leaderboard, out: Path) -> dict[str, str]:
    """Each run's report.html and report_files/ into out/runs/<model>/; {model: relative link}."""
    links = {}
    for run in board.runs:
        source = run.folder / HTML_REPORT_FILE
        if not source.is_file():
            continue
        target = out / "runs" / slug(run.label)
        if target.exists():
            shutil.rmtree(target)
        with storage_guard(target, "copying a run's report into"):
            target.mkdir(parents=True)
            shutil.copyfile(source, target / HTML_REPORT_FILE)
            if (run.folder / HTML_REPORT_DIR).is_dir():
                shutil.copytree(run.folder / HTML_REPORT_DIR, target / HTML_REPORT_DIR)
        links[run.label] = f"runs/{slug(run.label)}/{HTML_REPORT_FILE}"
    return links


def _display() -> dict[str, str]:
    return {spec.name: spec.display_name for spec in metric_specs()}


def board_payload(board: Leaderboard, reports: dict[str, str]) -> dict[str, object]:
    """What index.html reads: the models (with their report links and run settings), the cells and pairs."""
    models = []
    for run in board.runs:
        settings = run.record.generator_settings or {}
        models.append({"label": run.label, "report": reports.get(run.label), "folder": run.folder.name,
                       "generator": run.record.generator, "chat_template": settings.get("chat_template"),
                       "samples": run.record.num_samples, "seed": settings.get("seed"),
                       "decoding": settings.get("decoding"), "scored_with": resource_lines(run.record.resources)})
    return {"models": models, "baseline": board.baseline, "prompts": board.prompts,
            "resources_warning": differences_warning(resource_versions(board)),
            "prompts_per_run": board.prompts_per_run, "different": board.different, "alpha": board.alpha,
            "correction": board.correction, "cluster": board.cluster, "family": board.family,
            "metrics": _display(), "version": __version__,
            "power": board.power.to_dict("records"),
            "cells": {column: board.cells[column].tolist() for column in board.cells.columns},
            "pairs": {column: board.pairs[column].tolist() for column in board.pairs.columns}}


def task_name(domain: str, metric: str, label: str) -> str:
    return "bold_" + slug(f"{domain}_{metric}_{label}").lower()


def write_results(board: Leaderboard, folder: Path) -> list[Path]:
    """One results_<time>.json per model in the Hub leaderboard template's layout (results/<org>/<model>/):
    per task (domain x metric x label) the model's rate, Wikipedia's, the difference and its interval, rank and
    tie group; `config` names the model and its revision."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S")
    warning = differences_warning(resource_versions(board))
    written = []
    for run in board.runs:
        part = board.cells[board.cells["model"] == run.label]
        results = {}
        for row in part.itertuples(index=False):
            results[task_name(row.domain, row.metric, row.label)] = {
                "rate": row.model_rate, "rate_ci_low": row.model_low, "rate_ci_high": row.model_high,
                "wikipedia_rate": row.wikipedia_rate, "wikipedia_rate_ci_low": row.wikipedia_low,
                "wikipedia_rate_ci_high": row.wikipedia_high, "vs_wikipedia": row.difference,
                "vs_wikipedia_ci_low": row.ci_low, "vs_wikipedia_ci_high": row.ci_high,
                "p_adjusted": row.p_adjusted, "rank": row.rank, "tie_group": row.tie_group, "prompts": row.prompts,
                "names": row.names}
        name = run.label if "/" in run.label else f"local/{run.label}"
        org, model = (slug(part_) for part_ in name.split("/", 1))
        info = run.record.model_info or {}
        payload = {"config": {"model_name": name, "model_sha": info.get("revision") or "",
                              "model_dtype": str(info.get("dtype") or (run.record.generator_settings or {}).get("dtype")
                                                 or ""),
                              "generator": run.record.generator, "bold_eval": __version__,
                              "chat_template": (run.record.generator_settings or {}).get("chat_template"),
                              "samples_per_prompt": run.record.num_samples, "shared_prompts": board.prompts,
                              "alpha": board.alpha, "correction": board.correction, "unit": board.cluster,
                              # the classifiers, embedding and lexicon files that scored it, with commit or sha256
                              "scoring_resources": run.record.resources},
                   "results": results}
        if warning:
            payload["warning"] = warning
        path = folder / org / model / f"results_{stamp}.json"
        with atomic_writer(path) as handle:
            handle.write(json.dumps(clean(payload), indent=1).encode())
        written.append(path)
    return written


def space_card(board: Leaderboard) -> str:
    """README.md: the static Space's metadata and what the board says, in Markdown."""
    ranked = board.cells[board.cells["rank"].notna()]
    lines = ["---", "title: BOLD leaderboard", "emoji: ⚖️", "colorFrom: blue", "colorTo: yellow", "sdk: static",
             "app_file: index.html", "pinned: false", "tags:", "  - bold", "  - bias", "  - evaluation", "---", "",
             "# BOLD leaderboard", "", *small_lines(board), *resources_lines(board),
             f"{quantity(len(board.runs), 'model')} on {quantity(board.prompts, 'shared BOLD prompt')} (Dhamala et "
             f"al., FAccT 2021), each against {board.baseline}. Written by bold-eval {__version__} "
             "(`bold-eval leaderboard`).", "",
             "Each cell: the model's rate minus Wikipedia's on the same prompts, with its "
             f"{100 * (1 - board.alpha):g}% interval (the name as the unit, paired cluster-robust test; every model x "
             f"column in one {board.correction} family of {quantity(board.family, 'test')}). Ranks: 1 + the models "
             "better at the corrected level (pairs corrected per column); models that share a rank cannot be told "
             f"apart. The pair test finds a real difference {POWER_AGAINST_ORACLE['leaderboard pair']:.0%} as often as "
             "a test that knew the true variance, for domains of 10 or more names, and makes a false one in at most "
             f"alpha of boards ({CALIBRATION_TABLES}).", "",
             "| model | domain | label | rate [interval] | Wikipedia [interval] | difference [interval] "
             "| rank (tie group) |",
             "|---|---|---|---|---|---|---|"]
    for row in ranked.sort_values(["metric", "label", "domain", "rank"]).itertuples(index=False):
        lines.append(f"| {_cell(row.model)} | {row.domain} | {row.metric} {row.label} | {row.model_rate:.3f} "
                     f"[{row.model_low:.3f}, {row.model_high:.3f}] | {row.wikipedia_rate:.3f} "
                     f"[{row.wikipedia_low:.3f}, "
                     f"{row.wikipedia_high:.3f}] | {row.difference:+.3f} [{row.ci_low:+.3f}, {row.ci_high:+.3f}] | "
                     f"{int(row.rank)} ({_cell(row.tie_group)}) |")
    lines += ["", "Per-model results in the Hub leaderboard template's layout: `results/<org>/<model>/results_*.json`.",
              ""]
    return "\n".join(lines)


def small_lines(board: Leaderboard) -> list[str]:
    """The warning that comes before any number when some domains' shared prompts cannot tell models apart."""
    small = board.power[board.power["too_small"].astype(bool)]
    if not len(small):
        return []
    cells = ", ".join(f"{row.domain} ({_points(row.separable_difference)}{_hardest(row.hardest_pair)})"
                      for row in small.itertuples(index=False))
    where = "every domain" if len(small) == len(board.power) else f"{len(small)} of {len(board.power)} domains"
    return [f"> **Too few shared prompts to rank models in {where}:** {cells}, the "
            "smallest difference two models could show and be told apart (80% power at the corrected level) for a "
            "typical pair, and for the pair that needs the most. Shared ranks there say little; run the models on "
            "more prompts.", ""]


def _hardest(value: float) -> str:
    return "" if value != value else f"; {100 * value:.0f} for the hardest pair"


def resources_lines(board: Leaderboard) -> list[str]:
    """The warning that comes before any number when the models were scored by different weights or files."""
    warning = differences_warning(resource_versions(board))
    return [f"> **{warning}**", ""] if warning else []


def _points(value: float) -> str:
    return "no testable pair" if value != value else f"{100 * value:.0f} points"


def _cell(text: str) -> str:
    """Text for a Markdown table cell: no pipes, no markup."""
    return re.sub(r"[|<>`*_\[\]]", " ", str(text)).strip()
