"""A staged repo: exactly the folder that would be uploaded (what --dry-run keeps)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from huggingface_hub.utils import HFValidationError, validate_repo_id

from bold_eval.core.errors import UserError


class PublishError(UserError, RuntimeError):
    """A staging or upload step cannot go on (bad namespace, missing file, no token)."""


@dataclass(frozen=True)
class StagedRepo:
    """One Hub repository and the local folder whose contents become its files."""

    repo_id: str
    repo_type: str  # "dataset" or "space"
    folder: Path
    space_sdk: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "folder": str(self.folder)}


def repo_id_in(namespace: str, name: str) -> str:
    """`namespace/name`, checked with the Hub's own rules so a typo fails before any upload."""
    if not namespace or "/" in namespace:
        raise PublishError(f"namespace must be a user or organisation name without '/', got {namespace!r}")
    repo_id = f"{namespace}/{name}"
    # The Hub allows 1 to 96 characters per part; huggingface_hub < 1.0 checks only the whole id.
    if len(namespace) > 96:
        raise PublishError(f"invalid Hub repo id {repo_id!r}: a namespace has at most 96 characters")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise PublishError(f"invalid Hub repo id {repo_id!r}: {error}") from error
    return repo_id


def fresh_folder(path: Path) -> Path:
    """Create `path`, refusing to mix staged files into a folder that already holds some."""
    if path.exists() and any(path.iterdir()):
        raise PublishError(f"staging folder {path} is not empty; choose a new or empty folder")
    path.mkdir(parents=True, exist_ok=True)
    return path
