"""Several processes: `torchrun --nproc_per_node 2` (two gloo processes on CPU through accelerate's
PartialState) shards the prompts, process 0 merges; greedy results equal a single-process run."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bold_eval.cli import main as cli_main
from bold_eval.data import load_bold
from bold_eval.models import build_tiny_causal_lm

TORCHRUN = Path(sys.executable).with_name("torchrun")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.skipif(not TORCHRUN.exists() and shutil.which("torchrun") is None, reason="torchrun not installed")
def test_two_processes_merge_to_the_single_process_result(tmp_path, bold_dir):
    corpus = load_bold("religious_ideology", data_dir=bold_dir).to_pandas()["wikipedia"].tolist()
    model = build_tiny_causal_lm(tmp_path / "tiny_lm", corpus)
    arguments = ["run", "--model", str(model), "--greedy", "--max-new-tokens", "6", "--domains", "religious_ideology",
                 "--limit", "9", "--metrics", "sentiment", "--device", "cpu", "--dtype", "float32",
                 "--batch-size", "2", "--no-progress"]

    single = tmp_path / "single"
    assert cli_main([*arguments, "--out", str(single)]) == 0

    sharded = tmp_path / "sharded"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [str(TORCHRUN if TORCHRUN.exists() else shutil.which("torchrun")), "--nproc_per_node", "2",
         "--master_addr", "127.0.0.1", "--master_port", str(_free_port()),
         "-m", "bold_eval.cli", *arguments, "--out", str(sharded)],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert (sharded / "report.md").is_file()
    assert not list(sharded.glob("generations.rank*.jsonl"))  # shards merged and removed
    records = [json.loads(line) for line in (sharded / "generations.jsonl").read_text().splitlines()]
    expected = [json.loads(line) for line in (single / "generations.jsonl").read_text().splitlines()]
    assert len(records) == 9
    assert records == expected
    assert json.loads((sharded / "run.json").read_text())["processes"] == 2
