"""Publishing a leaderboard folder (`bold-eval leaderboard`): its per-model results as a Hub dataset in the
leaderboard template's layout (`results/<org>/<model>/results_*.json`, what a leaderboard Space's backend reads),
and the site itself as a static Space. `--dry-run` stages both folders and uploads nothing."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bold_eval.hub.staging import PublishError, StagedRepo, fresh_folder, repo_id_in
from bold_eval.hub.upload import hub_client, upload_staged

RESULTS_DATASET = "bold-results"
LEADERBOARD_SPACE = "bold-leaderboard"

_DATASET_CARD = """---
pretty_name: BOLD leaderboard results
tags:
  - bold
  - bias
  - evaluation
  - leaderboard
configs:
  - config_name: default
    data_files: "**/results_*.json"
---

# BOLD leaderboard results

Per-model results of `bold-eval leaderboard` in the Hub leaderboard template's layout: one
`<org>/<model>/results_<time>.json` per model, `{{"config": {{"model_name", "model_sha", "model_dtype", ...}},
"results": {{"bold_<domain>_<metric>_<label>": {{...}}}}}}`. Each task holds the model's rate of the label, Wikipedia's
on the same prompts, the difference with its interval (the name as the unit), the adjusted p-value, the rank and the tie
group. The site that shows them: {space}.
"""


def _check_board(board_dir: Path) -> None:
    if not (board_dir / "index.html").is_file() or not (board_dir / "results").is_dir():
        raise PublishError(f"{board_dir} is not a leaderboard folder (index.html and results/ not found); "
                           "`bold-eval leaderboard RUN [RUN ...] --out DIR` writes one")


def stage_leaderboard(board_dir: str | Path, namespace: str, folder: str | Path, *,
                      results_name: str = RESULTS_DATASET, space_name: str = LEADERBOARD_SPACE) -> list[StagedRepo]:
    """The results dataset and the static Space of `board_dir`, staged under `folder`."""
    board_dir, folder = Path(board_dir), fresh_folder(Path(folder))
    _check_board(board_dir)
    dataset_id, space_id = repo_id_in(namespace, results_name), repo_id_in(namespace, space_name)
    dataset = folder / "dataset"
    shutil.copytree(board_dir / "results", dataset)
    (dataset / "README.md").write_text(_DATASET_CARD.format(space=f"https://huggingface.co/spaces/{space_id}"))
    space = folder / "space"
    shutil.copytree(board_dir, space, ignore=shutil.ignore_patterns("results"))
    return [StagedRepo(dataset_id, "dataset", dataset), StagedRepo(space_id, "space", space, space_sdk="static")]


def publish_leaderboard(board_dir: str | Path, namespace: str, *, private: bool = False,
                        dry_run: str | Path | None = None, client: Any | None = None,
                        log: Callable[[str], None] = print) -> list[StagedRepo]:
    """Upload the board's results dataset and Space, or with `dry_run` only stage them there and say what would
    be uploaded."""
    if dry_run is not None:
        staged = stage_leaderboard(board_dir, namespace, dry_run)
        for repo in staged:
            sdk = f", sdk {repo.space_sdk}" if repo.space_sdk else ""
            log(f"would upload {repo.folder} to {'private' if private else 'public'} {repo.repo_type} "
                f"{repo.repo_id}{sdk}")
        return staged
    _check_board(Path(board_dir))
    client = client if client is not None else hub_client()
    with tempfile.TemporaryDirectory(prefix="bold-eval-leaderboard-") as tmp:
        staged = stage_leaderboard(board_dir, namespace, Path(tmp) / "staged")
        upload_staged(staged, private=private, client=client, log=log)
    return staged
