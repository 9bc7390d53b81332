"""Publish BOLD to the Hugging Face Hub: the dataset repo, one Space per metric, run results.

`stage_*` functions build exactly the folders that would be uploaded (what `--dry-run DIR`
keeps); `upload_staged` and `publish_results` send them with `huggingface_hub.HfApi`
(`create_repo`, `upload_folder`, `upload_file`). The Hub client is made in one place,
`hub_client`, which reads the token from `HF_TOKEN` or the saved login (`hf auth login`) and hands
it to `HfApi` only: it is never printed, logged or written. Tests inject a fake client there.

The metric Spaces vendor the part of `bold_eval` their module script imports (`bold_eval/` next
to `app.py`): bold-eval is not on PyPI, and a git URL requirement would tie the Space to a
repository address that can move. `requirements.txt` then lists the third-party packages that
the script and the vendored files import, with the version bounds bold-eval declares.
Outside the Space, `evaluate.load("NS/<metric>")` downloads only the module script, which
imports `bold_eval`: users need `pip install bold-eval` (from PyPI, or from a
checkout); evaluate's own ImportError names the package when it is missing.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from huggingface_hub import (
    HfApi,
    get_token,
)

from bold_eval.core.storage import storage_guard
from bold_eval.core.version import __version__
from bold_eval.hub.dataset_repo import DATASET_REPO_NAME, stage_dataset
from bold_eval.hub.spaces import (
    stage_metric_space,
)
from bold_eval.hub.staging import PublishError, StagedRepo, fresh_folder
from bold_eval.metrics import evaluate_module_names

# ---------------------------------------------------------------- names and folders


# ---------------------------------------------------------------- dataset repo


# ---------------------------------------------------------------- metric Spaces


def stage_all(
    namespace: str,
    out: str | Path,
    *,
    data_dir: str | Path | None = None,
    metrics: Sequence[str] | None = None,
    dataset: bool = True,
) -> list[StagedRepo]:
    """Stage the dataset repo (`out/dataset/bold`) and the Spaces (`out/spaces/<name>`), and
    write `out/plan.json` naming each folder's repo, type and SDK."""
    out = fresh_folder(Path(out))
    staged: list[StagedRepo] = []
    with storage_guard(out, "staging the repos in"):
        if dataset:
            staged.append(stage_dataset(namespace, out / "dataset" / DATASET_REPO_NAME, data_dir=data_dir))
        for name in evaluate_module_names() if metrics is None else metrics:
            staged.append(stage_metric_space(name, namespace, out / "spaces" / name))
        plan = {"bold_eval_version": __version__, "repos": [repo.as_dict() for repo in staged]}
        (out / "plan.json").write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
    return staged


# ---------------------------------------------------------------- the Hub boundary


def hub_client() -> Any:
    """An authenticated `HfApi`: the one place the token is read and the one object holding it.

    The token comes from `$HF_TOKEN` or the login saved by `hf auth login` (`get_token`).
    """
    token = get_token()
    if not token:
        raise PublishError("no Hugging Face token: set HF_TOKEN or log in with `hf auth login`")
    return HfApi(token=token)


def upload_staged(
    staged: Sequence[StagedRepo],
    *,
    private: bool = False,
    client: Any | None = None,
    log: Callable[[str], None] = print,
) -> list[str]:
    """Create each repo if needed (`exist_ok`; `private` applies to repos created now) and
    upload its folder in one commit. Returns the repo URLs."""
    client = client if client is not None else hub_client()
    urls = []
    for repo in staged:
        kwargs: dict[str, Any] = {"repo_type": repo.repo_type, "private": private, "exist_ok": True}
        if repo.repo_type == "space":
            kwargs["space_sdk"] = repo.space_sdk
        url = client.create_repo(repo.repo_id, **kwargs)
        client.upload_folder(
            repo_id=repo.repo_id,
            repo_type=repo.repo_type,
            folder_path=str(repo.folder),
            commit_message=f"Publish with bold-eval {__version__}",
        )
        urls.append(str(url))
        log(f"uploaded {repo.folder} to {repo.repo_type} {repo.repo_id}")
    return urls


def publish(
    namespace: str,
    *,
    private: bool = False,
    dry_run: str | Path | None = None,
    data_dir: str | Path | None = None,
    metrics: Sequence[str] | None = None,
    client: Any | None = None,
    log: Callable[[str], None] = print,
) -> list[StagedRepo]:
    """Stage the dataset and metric Spaces for `namespace` and upload them, or with `dry_run`
    only stage them in that folder and say what would be uploaded."""
    if dry_run is not None:
        staged = stage_all(namespace, dry_run, data_dir=data_dir, metrics=metrics)
        visibility = "private" if private else "public"
        for repo in staged:
            sdk = f", sdk {repo.space_sdk}" if repo.space_sdk else ""
            log(f"would upload {repo.folder} to {visibility} {repo.repo_type} {repo.repo_id}{sdk}")
        return staged
    client = client if client is not None else hub_client()  # fail on a missing token before staging
    with tempfile.TemporaryDirectory(prefix="bold-eval-publish-") as tmp:
        staged = stage_all(namespace, Path(tmp) / "staged", data_dir=data_dir, metrics=metrics)
        upload_staged(staged, private=private, client=client, log=log)
    return staged


# ---------------------------------------------------------------- run results on a model card


