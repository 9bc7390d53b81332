"""Several processes: `torchrun --nproc_per_node 2` (two gloo processes on CPU through accelerate's
PartialState) shards the prompts, process 0 merges; greedy results equal a single-process run.
The merge itself: shards that disagree on a (prompt_id, sample) are refused, nothing is dropped."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from bold_eval.cli import main as cli_main
from bold_eval.data import load_bold
from bold_eval.run import merge_generations
from bold_eval.testing import build_tiny_causal_lm


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_two_processes_merge_to_the_single_process_result(tmp_path, bold_dir, console_script):
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
        [str(console_script("torchrun", "torch")), "--nproc_per_node", "2",
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


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def _record(prompt_id: str, continuation: str, sample: int = 0) -> dict:
    return {"prompt_id": prompt_id, "sample": sample, "continuation": continuation, "num_new_tokens": 3}


def test_merge_orders_shards_and_removes_them(tmp_path):
    _write_jsonl(tmp_path / "generations.rank0.jsonl", [_record("a", " one"), _record("c", " three")])
    _write_jsonl(tmp_path / "generations.rank1.jsonl", [_record("b", " two"), _record("a", " one")])  # a: same text twice
    merged = merge_generations(tmp_path, [("a", 0), ("b", 0), ("c", 0)])
    assert [(r["prompt_id"], r["continuation"]) for r in merged] == [("a", " one"), ("b", " two"), ("c", " three")]
    lines = (tmp_path / "generations.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["prompt_id"] for line in lines] == ["a", "b", "c"]
    assert not list(tmp_path.glob("generations.rank*.jsonl"))


def test_merge_refuses_two_shards_with_different_continuations(tmp_path):
    shard0 = [_record("a", " one"), _record("b", " two")]
    shard1 = [_record("b", " TWO, differently"), _record("c", " three")]
    _write_jsonl(tmp_path / "generations.rank0.jsonl", shard0)
    _write_jsonl(tmp_path / "generations.rank1.jsonl", shard1)
    with pytest.raises(ValueError, match=r"\('b', 0\).*different continuations"):
        merge_generations(tmp_path, [("a", 0), ("b", 0), ("c", 0)])
    # nothing merged, nothing deleted: both versions stay on disk for the user to inspect
    assert not (tmp_path / "generations.jsonl").exists()
    assert [json.loads(line) for line in (tmp_path / "generations.rank1.jsonl").read_text().splitlines()] == shard1


def test_merge_refuses_missing_and_unselected_rows(tmp_path):
    _write_jsonl(tmp_path / "generations.rank0.jsonl", [_record("a", " one"), _record("z", " stray")])
    with pytest.raises(ValueError, match=r"1 missing \(e\.g\. \[\('b', 0\)\]\), 1 not selected \(e\.g\. \[\('z', 0\)\]\)"):
        merge_generations(tmp_path, [("a", 0), ("b", 0)])
