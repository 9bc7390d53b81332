"""The BOLD dataset repo as staged for the Hub: parquet files and dataset card."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import (
    DatasetCard,
)

from bold_eval.hub.staging import PublishError, StagedRepo, fresh_folder, repo_id_in

DATASET_REPO_NAME = "bold"


def stage_dataset(namespace: str, folder: str | Path, data_dir: str | Path | None = None) -> StagedRepo:
    """Write the Hub-ready parquet export of BOLD (`bold-eval dataset export`) into `folder`.

    The export's card declares one config per domain, so after upload
    `load_dataset("NS/bold", "gender", split="test")` works.
    """
    from bold_eval.data.export import export_dataset

    repo_id = repo_id_in(namespace, DATASET_REPO_NAME)
    folder = fresh_folder(Path(folder))
    export_dataset(folder, data_dir=data_dir)
    card_path = folder / "README.md"
    if not card_path.is_file():
        raise PublishError(f"the dataset export wrote no card at {card_path}")
    configs = DatasetCard.load(card_path).data.to_dict().get("configs") or []
    if not configs:
        raise PublishError(f"the dataset card {card_path} declares no `configs`; load_dataset would not find the "
                           "domains")
    return StagedRepo(repo_id, "dataset", folder)
