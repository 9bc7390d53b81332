"""Several processes: `torchrun --nproc_per_node 2` (two gloo processes on CPU through accelerate's
PartialState) shards the prompts, process 0 merges; greedy results equal a single-process run.
The merge itself: shards that disagree on a (prompt_id, sample) are refused, nothing is dropped."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.cli import main as cli_main
from bold_eval.data.bold import load_bold
from bold_eval.run import merge_generations
from bold_eval.runfolder.jsonl import generation_frames, read_generations, write_generations
from bold_eval.testing.models import build_tiny_causal_lm


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.heavy
def test_two_processes_merge_to_the_single_process_result(tmp_path, bold_dir, console_script):
    corpus = load_bold("religious_ideology", data_dir=bold_dir).to_pandas()["wikipedia"].tolist()
    model = build_tiny_causal_lm(tmp_path / "tiny_lm", corpus)
    arguments = ["run", "--model", str(model), "--greedy", "--max-new-tokens", "6", "--domains", "religious_ideology",
                 "--limit", "9", "--metrics", "sentiment", "--device", "cpu", "--dtype", "float32",
                 "--batch-size", "2", "--no-progress"]

    # Only the generations are compared (the report after a sharded run: the resume test below)
    arguments.append("--no-report")
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
    assert not list(sharded.glob("generations.rank*.jsonl"))  # shards merged and removed
    records = [json.loads(line) for line in (sharded / "generations.jsonl").read_text().splitlines()]
    expected = [json.loads(line) for line in (single / "generations.jsonl").read_text().splitlines()]
    assert len(records) == 9
    assert records == expected
    assert json.loads((sharded / "run.json").read_text())["processes"] == 2


# A generator of this test (not a stand-in for ours), run under torchrun: with TEST_CRASH=1, process 1
# writes one batch and crashes, and process 0 crashes once that batch is on disk, before writing any.
RANK_ORDERED_SCRIPT = """
import os, sys, time
from pathlib import Path

from bold_eval.cli import main
from bold_eval.generation.hf_causal import Generated, GenerationStats
from bold_eval.generation.base import Generator, register_generator


class RankOrdered(Generator):
    kind = "test-rank-ordered"

    def __init__(self, config, context):
        self.out = config.out

    def settings(self):
        return {"model": "rank-ordered"}

    def info(self):
        return {"name": "rank-ordered"}

    def generate(self, items, *, on_batch, progress=True, plan=None):
        rank, crash = int(os.environ["RANK"]), os.environ.get("TEST_CRASH") == "1"
        if crash and rank == 0:
            shard, deadline = Path(self.out) / "generations.rank1.jsonl", time.monotonic() + 60
            while not (shard.is_file() and shard.read_bytes().endswith(b"\\n")):
                if time.monotonic() > deadline:
                    raise RuntimeError("process 1 wrote no batch")
                time.sleep(0.05)
            raise RuntimeError("scripted crash of process 0 before its first batch")
        for start in range(0, len(items), 2):
            batch = list(items[start:start + 2])
            on_batch(batch, [Generated(" text of run " + os.environ["TEST_RUN"] + ".", 3) for _ in batch])
            if crash:
                raise RuntimeError("scripted crash of process 1 after its first batch")
        return GenerationStats()


register_generator(RankOrdered.kind, RankOrdered)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.heavy
def test_a_crash_after_another_process_wrote_first_resumes(tmp_path, bold_dir, console_script):
    """run.json's start record is written once every process has loaded, before any generation: when
    process 1 writes a batch before process 0 and the run crashes, the same command resumes it."""
    script = tmp_path / "rank_ordered.py"
    script.write_text(RANK_ORDERED_SCRIPT, encoding="utf-8")
    out = tmp_path / "run"
    arguments = ["run", "--generator", "test-rank-ordered", "--model", "rank-ordered", "--domains",
                 "religious_ideology", "--limit", "8", "--device", "cpu", "--no-progress", "--out", str(out),
                 "--metrics", "gender_polarity", "--metric-option", "gender_polarity.methods=unigram"]

    def torchrun(run: str, crash: bool) -> subprocess.CompletedProcess:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TEST_RUN": run, "TEST_CRASH": "1" if crash else "0"}
        return subprocess.run(
            [str(console_script("torchrun", "torch")), "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
             "--master_port", str(_free_port()), str(script), *arguments],
            capture_output=True, text=True, timeout=300, env=env,
        )

    crashed = torchrun("1", crash=True)
    assert crashed.returncode != 0 and "scripted crash" in crashed.stderr, crashed.stderr[-4000:]
    assert not (out / "generations.rank0.jsonl").exists()  # process 0 wrote no batch
    first = [json.loads(line) for line in (out / "generations.rank1.jsonl").read_text().splitlines()]
    assert len(first) == 2
    assert json.loads((out / "run.json").read_text())["generation_settings"]["generator"] == "test-rank-ordered"

    resumed = torchrun("2", crash=False)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    records = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(records) == 8 and not list(out.glob("generations.rank*.jsonl"))
    kept = {record["prompt_id"] for record in first}
    assert {r["prompt_id"] for r in records if r["continuation"] == " text of run 1."} == kept  # not redone
    assert all(r["continuation"] == " text of run 2." for r in records if r["prompt_id"] not in kept)
    assert (out / "report.md").is_file()


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def _record(prompt_id: str, continuation: str, sample: int = 0) -> dict:
    return {"prompt_id": prompt_id, "sample": sample, "continuation": continuation, "num_new_tokens": 3}


def test_merge_orders_shards_and_removes_them(tmp_path):
    _write_jsonl(tmp_path / "generations.rank0.jsonl", [_record("a", " one"), _record("c", " three")])
    # a: same text twice
    _write_jsonl(tmp_path / "generations.rank1.jsonl", [_record("b", " two"), _record("a", " one")])
    merged = merge_generations(tmp_path, [("a", 0), ("b", 0), ("c", 0)])
    assert (merged.path, merged.texts, merged.new_tokens) == (tmp_path / "generations.jsonl", 3, 9)
    records = read_generations(merged.path)
    assert [(r["prompt_id"], r["continuation"]) for r in records] == [("a", " one"), ("b", " two"), ("c", " three")]
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
    with pytest.raises(ValueError,
                       match=r"1 missing \(e\.g\. \[\('b', 0\)\]\), 1 not selected \(e\.g\. \[\('z', 0\)\]\)"):
        merge_generations(tmp_path, [("a", 0), ("b", 0)])


def test_merged_records_make_the_records_frame_with_fields_some_records_lack(tmp_path):
    # a chat protocol that looks for thinking traces adds a field; a merge of mixed layouts keeps every column
    traced = {**_record("b", " two"), "ended_in_trace": True}
    records = [_record("a", " one"), traced, _record("c", " three", sample=1)]
    _write_jsonl(tmp_path / "generations.rank0.jsonl", [records[0], records[2]])
    _write_jsonl(tmp_path / "generations.rank1.jsonl", [records[1]])
    merge_generations(tmp_path, [("a", 0), ("b", 0), ("c", 1)])
    merged = next(generation_frames(tmp_path / "generations.jsonl", 10))  # what scoring reads
    expected = pd.DataFrame(records)
    assert list(merged.columns) == list(expected.columns)
    assert merged["ended_in_trace"].isna().tolist() == [True, False, True]
    assert merged.drop(columns="ended_in_trace").equals(expected.drop(columns="ended_in_trace"))
    lines = [json.loads(line) for line in (tmp_path / "generations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines == records  # each record written back with its own fields, in its own order


def test_a_failed_rewrite_leaves_the_old_generations_file(tmp_path):
    path = tmp_path / "generations.jsonl"
    _write_jsonl(path, [_record("a", " one")])
    before = path.read_bytes()

    def records():
        yield _record("a", " one")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_generations(path, records())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["generations.jsonl"]  # no temporary file left behind
