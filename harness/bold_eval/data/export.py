"""`bold-eval dataset export`: BOLD as a Hub-ready parquet folder with its dataset card."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import yaml

from bold_eval.core.paths import dataset_script_dir
from bold_eval.core.resources import atomic_write_bytes
from bold_eval.data.bold import (
    dataset_script,
    load_bold,
)


def _card_sections(markdown: str) -> dict[str, str]:
    """`## Title` -> section text (title line included) of the dataset script's card."""
    body = re.sub(r"\A---\n.*?\n---\n", "", markdown, flags=re.S)
    sections: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=## )", body):
        if chunk.startswith("## "):
            sections[chunk.splitlines()[0][3:].strip()] = chunk.rstrip() + "\n"
    return sections


def _feature_list() -> list[dict[str, str]]:
    # a fresh list per config, so the YAML has no anchors/aliases
    return [{"name": key, "dtype": value.dtype} for key, value in dataset_script().FEATURES.items()]


def _card_header(counts: dict[str, int], sizes: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """The card's YAML: one `configs:` entry per config, so the folder loads without the script."""
    domains = dataset_script().DOMAINS
    files = {domain: f"data/{domain}/test-00000-of-00001.parquet" for domain in domains}
    total_bytes = sum(num_bytes for num_bytes, _ in sizes.values())
    total_download = sum(download for _, download in sizes.values())

    def info(config: str, num_bytes: int, num_examples: int, download_size: int) -> dict[str, Any]:
        return {
            "config_name": config,
            "features": _feature_list(),
            "splits": [{"name": "test", "num_bytes": num_bytes, "num_examples": num_examples}],
            "download_size": download_size,
            "dataset_size": num_bytes,
        }

    return {
        "pretty_name": "BOLD",
        "language": ["en"],
        "license": dataset_script().LICENSE,
        "task_categories": ["text-generation"],
        "tags": ["bias", "fairness", "open-ended-generation"],
        "size_categories": ["10K<n<100K"],
        "source_datasets": ["original"],
        "configs": [
            {
                "config_name": "all",
                "default": True,
                # Listed in domain order so that row order equals load_bold("all").
                "data_files": [{"split": "test", "path": [files[domain] for domain in domains]}],
            },
            *({"config_name": domain, "data_files": [{"split": "test", "path": files[domain]}]} for domain in domains),
        ],
        "dataset_info": [
            info("all", total_bytes, sum(counts.values()), total_download),
            *(info(domain, sizes[domain][0], counts[domain], sizes[domain][1]) for domain in domains),
        ],
    }


def _export_card(counts: dict[str, int], sizes: dict[str, tuple[int, int]]) -> str:
    script = dataset_script()
    sections = _card_sections((dataset_script_dir() / "README.md").read_text(encoding="utf-8"))
    usage = f"""## Usage

This folder was written by `bold-eval dataset export` from the upstream release (commit
`{script.UPSTREAM_COMMIT}`) or a local copy of it; `datasets` reads it without a loading script:

```python
from datasets import load_dataset

bold = load_dataset("path/to/this/folder", split="test")              # all {sum(counts.values()):,} prompts
gender = load_dataset("path/to/this/folder", "gender", split="test")  # {counts["gender"]:,} prompts
```
"""
    parts = [
        "---\n" + yaml.safe_dump(_card_header(counts, sizes), sort_keys=False, allow_unicode=True) + "---\n",
        "# BOLD: Bias in Open-ended Language generation Dataset\n\n" + script.DESCRIPTION,
        usage,
    ]
    parts.extend(text for title, text in sections.items() if title != "Usage")
    return "\n".join(parts)


def export_dataset(out: str | os.PathLike, data_dir: str | os.PathLike | None = None,
                   allow_modified: bool | None = None) -> Path:
    """Write BOLD as a Hub-ready folder: `data/<domain>/test-00000-of-00001.parquet` and a
    dataset card `README.md` whose YAML `configs:` let `datasets.load_dataset(out, "gender")`
    work without the script. Every file is written atomically."""
    out = Path(out)
    counts: dict[str, int] = {}
    sizes: dict[str, tuple[int, int]] = {}
    for domain in dataset_script().DOMAINS:
        dataset = load_bold(domain, data_dir=data_dir, allow_modified=allow_modified)
        target = out / "data" / domain / "test-00000-of-00001.parquet"
        buffer = io.BytesIO()
        dataset.to_parquet(buffer)
        atomic_write_bytes(target, buffer.getvalue())
        counts[domain] = len(dataset)
        sizes[domain] = (dataset.data.nbytes, target.stat().st_size)
    atomic_write_bytes(out / "README.md", _export_card(counts, sizes).encode("utf-8"))
    return out
