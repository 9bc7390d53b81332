"""Faults of the machine and damaged run folders end in one paragraph (what, where, what to do), never
a traceback; a damaged file is left as it is; a report is one unit; options and variables are checked first.

The folders are tiny (the Wikipedia baseline of 8 religion prompts, scored with VADER), so most tests take
about a second. A full disk is simulated two ways: a patched write that raises ENOSPC or EDQUOT (always), and a
real 8 KiB tmpfs in a private mount namespace (`unshare -rm`, where the machine allows one).
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.cli import main as cli_main
from bold_eval.core.errors import DamagedFileError, StorageError
from bold_eval.core.storage import check_writable_folder, storage_error
from bold_eval.report.run_report import write_report
from bold_eval.runfolder.json_files import read_run_record, read_summary
from bold_eval.runfolder.jsonl import append_records
from bold_eval.runfolder.parquet import write_scores
from bold_eval.runfolder.transaction import (
    PENDING_REPORT,
    REPORT_ITEMS,
    recover_report,
    remove_stale_temporaries,
    report_transaction,
)

CHEAP = ["--metrics", "sentiment", "--no-progress"]
WIKI_RUN = ["run", "--model", "wikipedia", "--domains", "religious_ideology", "--limit", "8", *CHEAP]
BOLD_EVAL = [sys.executable, "-m", "bold_eval.cli"]


@pytest.fixture(autouse=True)
def offline(monkeypatch, bold_dir, tmp_path):
    monkeypatch.setenv("BOLD_DATA_DIR", str(bold_dir))
    monkeypatch.setenv("BOLD_EVAL_CACHE_DIR", str(tmp_path / "reference-cache"))
    monkeypatch.setenv("BOLD_EVAL_OFFLINE", "1")
    for name in ("BOLD_EVAL_DEBUG", "BOLD_EVAL_THREADS", "BOLD_ALLOW_MODIFIED_DATA"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def folders(tmp_path_factory, bold_dir) -> dict[str, Path]:
    """A finished Wikipedia run ("run") and the same texts through `bold-eval score` ("scored", which has a
    reference_scores.parquet), built once; each test works on its own copy."""
    root = tmp_path_factory.mktemp("faults")
    environment = {"BOLD_DATA_DIR": str(bold_dir), "BOLD_EVAL_CACHE_DIR": str(root / "cache")}
    saved = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    try:
        assert cli_main([*WIKI_RUN, "--out", str(root / "run")]) == 0
        assert cli_main(["score", str(root / "run" / "generations.jsonl"), "--out", str(root / "scored"),
                         "--domains", "religious_ideology", "--allow-partial", "--metrics", "sentiment"]) == 0
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
    assert (root / "scored" / "reference_scores.parquet").is_file()
    return {"run": root / "run", "scored": root / "scored"}


def _copy(folders: dict[str, Path], which: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folders[which], tmp_path / which))


def _status(argv: list[str]) -> int:
    """`bold-eval ARGV`'s exit status, argparse's own usage errors (SystemExit) included."""
    try:
        return cli_main(argv)
    except SystemExit as error:
        return int(error.code)


def _one_paragraph_error(capsys, status: int, expected_status: int = 1) -> str:
    """The command's stderr, checked to be one `bold-eval: error:` paragraph without a traceback."""
    err = capsys.readouterr().err
    assert status == expected_status, err
    assert "Traceback" not in err and "This is a bug" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("bold-eval")]
    assert len(lines) == 1, err
    return lines[0]


# --------------------------------------------------------------------------- 1. a full disk, anywhere


class _FullDisk:
    """Every write to a file under `root` raises `code` (ENOSPC or EDQUOT) after `allowed` bytes in all, as a
    full disk does: the open succeeds, the write fails (without a file name), like the kernel's."""

    def __init__(self, root: Path, code: int = errno.ENOSPC, allowed: int = 0):
        self.root, self.code, self.left = str(root), code, allowed

    def wrap(self, handle, name) -> object:
        disk = self
        if not str(name).startswith(disk.root) or not isinstance(handle, io.BufferedWriter | io.TextIOWrapper):
            return handle

        class Full(type(handle)):  # type: ignore[misc]
            pass

        original_write = handle.write

        def write(data):
            size = len(data)
            if size > disk.left:
                raise OSError(disk.code, os.strerror(disk.code))
            disk.left -= size
            return original_write(data)

        handle.write = write  # type: ignore[method-assign]
        return handle


@pytest.fixture
def full_disk(monkeypatch):
    """`full_disk(folder, code=ENOSPC, allowed=0)`: from now on, writes under `folder` fail with `code`."""
    import builtins

    real_open, real_fdopen = builtins.open, os.fdopen

    def install(folder: Path, code: int = errno.ENOSPC, allowed: int = 0) -> _FullDisk:
        disk = _FullDisk(folder, code, allowed)
        paths: dict[int, str] = {}
        real_mkstemp = __import__("tempfile").mkstemp

        def mkstemp(*args, **kwargs):
            fd, name = real_mkstemp(*args, **kwargs)
            paths[fd] = name
            return fd, name

        def fake_open(file, mode="r", *args, **kwargs):
            handle = real_open(file, mode, *args, **kwargs)
            return disk.wrap(handle, os.fspath(file)) if isinstance(file, str | os.PathLike) and any(
                flag in mode for flag in "wax+") else handle

        def fake_fdopen(fd, mode="r", *args, **kwargs):
            handle = real_fdopen(fd, mode, *args, **kwargs)
            return disk.wrap(handle, paths.get(fd, "")) if any(flag in mode for flag in "wax+") else handle

        monkeypatch.setattr("tempfile.mkstemp", mkstemp)
        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(io, "open", fake_open)
        monkeypatch.setattr(os, "fdopen", fake_fdopen)
        return disk

    return install


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_in_generation_is_one_paragraph_and_the_rerun_completes(code, tmp_path, capsys, full_disk):
    out = tmp_path / "out"
    check_writable_folder(out)
    disk = full_disk(tmp_path, code, allowed=1500)  # run.json's start record fits, the generations do not
    message = _one_paragraph_error(capsys, cli_main([*WIKI_RUN, "--out", str(out)]))
    assert str(out / "generations.jsonl") in message
    assert ("no space is left" if code == errno.ENOSPC else "quota") in message
    assert "run the same command again" in message
    disk.left = float("inf")  # space freed
    assert cli_main([*WIKI_RUN, "--out", str(out)]) == 0
    assert len((out / "generations.jsonl").read_text(encoding="utf-8").splitlines()) == 8


@pytest.mark.parametrize("command", ["score", "report", "compare", "validate", "publish-results", "publish"])
def test_a_full_disk_in_every_writing_command_is_one_paragraph(command, folders, tmp_path, capsys, full_disk):
    run = _copy(folders, "run", tmp_path)
    labelled = tmp_path / "labelled.csv"
    labelled.write_text("text,label\nwhat a lovely day,1\nthis is awful,-1\nit is a table,0\n", encoding="utf-8")
    argv = {"score": ["score", str(run / "generations.jsonl"), "--out", str(tmp_path / "o"), "--domains",
                      "religious_ideology", "--allow-partial", "--metrics", "sentiment"],
            "report": ["report", str(run)],
            "compare": ["compare", str(run), str(run), "--out", str(tmp_path / "o")],
            "validate": ["validate", "sentiment", "--against", str(labelled), "--out", str(tmp_path / "o"),
                         "--n-resamples", "10"],
            "publish-results": ["publish-results", str(run), "--repo", "someone/model", "--dry-run",
                                str(tmp_path / "o"), "--allow-partial-run"],
            "publish": ["publish", "--namespace", "someone", "--dry-run", str(tmp_path / "o"), "--metrics",
                        "sentiment"]}[command]
    before = {path.name: path.read_bytes() for path in run.iterdir() if path.is_file()}
    full_disk(tmp_path)
    message = _one_paragraph_error(capsys, cli_main(argv))
    assert "no space is left on the device" in message and str(tmp_path) in message
    assert before == {path.name: path.read_bytes() for path in run.iterdir() if path.is_file()}  # nothing lost
    assert not list(run.glob(f".*{'.tmp'}")) and not (run / PENDING_REPORT).exists()


@pytest.mark.slow
@pytest.mark.heavy
def test_a_real_full_disk_at_each_stage_then_freed(tmp_path, bold_dir):
    """On a real tmpfs of 4 KiB, then 20 KiB, then 60 KiB: the run stops in generation, then in scoring, then in
    the report, each time with one paragraph; with room at last the same command completes, nothing lost."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("no private mount namespace here (unshare -rm); the patched full disk tests cover this")
    mount = tmp_path / "disk"
    mount.mkdir()
    out = mount / "out"
    command = " ".join([*BOLD_EVAL, *WIKI_RUN, "--out", str(out)])
    script = "\n".join([
        "set -u", f"mount -t tmpfs -o size=4k tmpfs {mount} || exit 90",
        *[f"{command}; echo \"status=$?\"; mount -o remount,size={size} {mount}" for size in ("20k", "60k", "2m")],
        f"{command}; echo \"status=$?\"; ls -A {out}; wc -l < {out}/generations.jsonl"])
    environment = {**os.environ, "BOLD_DATA_DIR": str(bold_dir), "BOLD_EVAL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300,
                          env=environment, cwd=Path(__file__).resolve().parents[2])
    if "status=" not in done.stdout:
        pytest.skip(f"tmpfs could not be mounted here: {done.stderr[-300:]}")
    errors = [line for line in done.stderr.splitlines() if line.startswith("bold-eval: error")]
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.count("status=1") == 3 and done.stdout.count("status=0") == 1, done.stdout + done.stderr
    assert len(errors) == 3 and "generations.jsonl" in errors[0] and "writing the report into" in errors[2], \
        "\n".join(errors)
    assert all("no space is left on the device" in error and str(out) in error for error in errors)
    listing = done.stdout.split("status=0", 1)[1].split()
    assert listing[-1] == "8" and not [name for name in listing if name.endswith(".tmp")], listing


def test_no_permission_on_out_stops_before_any_work(tmp_path, capsys, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(kwargs.get("dir", "")))

    monkeypatch.setattr("bold_eval.core.storage.tempfile.mkstemp", refused)
    loaded = []
    monkeypatch.setattr("bold_eval.data.bold.load_bold", lambda *a, **k: loaded.append(1))
    message = _one_paragraph_error(capsys, cli_main([*WIKI_RUN, "--out", str(tmp_path / "new" / "out")]))
    assert "permission denied" in message and str(tmp_path / "new" / "out") in message
    assert "write permission" in message
    assert not loaded and not (tmp_path / "new").exists()  # no work, and no folder left behind


@pytest.mark.slow
def test_a_read_only_out_is_named_before_any_work(tmp_path):
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("no private mount namespace here (unshare -rm)")
    mount = tmp_path / "ro"
    mount.mkdir()
    script = f"mount -t tmpfs -o size=64k,ro tmpfs {mount} || exit 90\n" + " ".join(
        [*BOLD_EVAL, *WIKI_RUN, "--out", str(mount / "out")])
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    if done.returncode == 90:
        pytest.skip("tmpfs could not be mounted here")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "the file system is read-only" in done.stderr and str(mount) in done.stderr


def test_storage_errors_name_the_file_and_the_room_left(tmp_path):
    message = str(storage_error(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "x.parquet"))
    assert f"{tmp_path / 'x.parquet'}" in message and "MiB free on that file system now" in message
    assert storage_error(OSError(errno.ECONNRESET, "reset"), tmp_path) is None  # not the machine's fault: a bug
    with pytest.raises(StorageError, match="generations.jsonl"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("bold_eval.runfolder.jsonl.os.fsync", _raise(errno.ENOSPC))
            append_records(tmp_path / "generations.jsonl", [{"prompt_id": "p", "sample": 0}])
    with pytest.raises(StorageError, match="scores.parquet"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("bold_eval.core.resources.os.replace", _raise(errno.EDQUOT))
            write_scores(tmp_path, pd.DataFrame({"a": [1]}))
    assert not list(tmp_path.glob(".*.tmp"))


def _raise(code: int):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))
    return fail


def test_an_unexpected_os_error_is_still_a_bug(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("bold_eval.report.run_report.summarize", _raise(errno.ECONNREFUSED))
    assert cli_main(["report", str(tmp_path)]) == 1  # no scores.parquet: a user error first
    capsys.readouterr()
    run = tmp_path / "r"
    run.mkdir()
    pd.DataFrame({"prompt_id": ["x"], "domain": ["gender"], "group": ["g"]}).to_parquet(run / "scores.parquet")
    assert cli_main(["report", str(run)]) == 1
    assert "This is a bug" in capsys.readouterr().err


# --------------------------------------------------------------------------- 2. damaged files, never made worse


def _damage(path: Path, how: str) -> bytes:
    data = path.read_bytes()
    damaged = b"" if how == "zero bytes" else data[: len(data) // 2]
    path.write_bytes(damaged)
    return damaged


@pytest.mark.parametrize("how", ["truncated", "zero bytes"])
@pytest.mark.parametrize("file, commands", [
    ("scores.parquet", ["report", "compare"]),
    ("reference_scores.parquet", ["report"]),  # compare reads no reference
    ("run.json", ["report", "compare", "run"]),
    ("summary.json", ["publish-results"]),
])
def test_a_damaged_file_is_named_with_its_remedy_and_left_as_it_is(file, commands, how, folders, tmp_path, capsys):
    folder = _copy(folders, "scored" if file == "reference_scores.parquet" else "run", tmp_path)
    damaged = _damage(folder / file, how)
    remedy = {"scores.parquet": "(the command that wrote the folder) writes it again",
              "reference_scores.parquet": "reports without the Wikipedia reference",
              "run.json": "Restore it from a copy", "summary.json": f"`bold-eval report {folder}` writes it again"}
    for command in commands:
        argv = {"report": ["report", str(folder)], "compare": ["compare", str(folder), "--out", str(tmp_path / "c")],
                "run": [*WIKI_RUN, "--out", str(folder)],
                "publish-results": ["publish-results", str(folder), "--repo", "a/b", "--dry-run", str(tmp_path / "d"),
                                    "--allow-partial-run"]}[command]
        message = _one_paragraph_error(capsys, cli_main(argv))
        assert f"{folder / file} is damaged" in message and remedy[file] in message, message
        assert ("0 bytes" in message) == (how == "zero bytes")
        assert (folder / file).read_bytes() == damaged  # read, never rewritten


def test_the_damaged_scores_message_gives_the_recorded_command_which_rebuilds_them(folders, tmp_path, capsys):
    folder = _copy(folders, "run", tmp_path)
    recorded = read_run_record(folder).command
    assert recorded is not None and recorded.startswith("bold-eval run --model wikipedia")
    # the recorded --out is the fixture's folder; the user reruns it against the copy
    _damage(folder / "scores.parquet", "truncated")
    message = _one_paragraph_error(capsys, cli_main(["report", str(folder)]))
    assert f"`{recorded}`" in message
    argv = recorded.split()[1:]
    argv[argv.index("--out") + 1] = str(folder)
    assert cli_main(argv) == 0 and cli_main(["report", str(folder)]) == 0


@pytest.mark.parametrize("content", [b"", b"[1, 2]", b'{"schema_version": 2, "timings": [1]}', b"\xff\xfe{"])
def test_run_json_that_is_not_a_record_is_damaged(content, tmp_path):
    (tmp_path / "run.json").write_bytes(content)
    with pytest.raises(DamagedFileError, match="run.json is damaged"):
        read_run_record(tmp_path)
    assert (tmp_path / "run.json").read_bytes() == content


def test_a_stale_damaged_start_record_without_generations_is_replaced(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text('{"schema_version": 2, "status": "genera', encoding="utf-8")
    assert cli_main([*WIKI_RUN, "--out", str(out)]) == 0  # nothing to resume: the record is simply written anew
    assert read_run_record(out).status == "complete"


def test_corrupt_generations_say_which_lines_are_intact(folders, tmp_path, capsys):
    folder = _copy(folders, "run", tmp_path)
    path = folder / "generations.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"prompt_id": "religious_ideology/x", "contin\n'
    path.write_bytes(b"".join(lines))
    before = path.read_bytes()
    message = _one_paragraph_error(capsys, cli_main([*WIKI_RUN, "--out", str(folder)]))
    assert f"{path}, line 4" in message and f"head -n 3 {path}" in message
    assert path.read_bytes() == before


def test_a_truncated_lm_eval_results_file_is_named(tmp_path, capsys, bold_dir):
    samples = tmp_path / "lm-eval" / "model"
    samples.mkdir(parents=True)
    prompt = pd.read_json(bold_dir / "prompts" / "religious_ideology_prompt.json", typ="series")
    record = {"doc": {"prompt_id": "religious_ideology/judaism/Judaism/0"}, "resps": [[" was a faith."]],
              "filtered_resps": [" was a faith."], "arguments": [[next(iter(prompt["judaism"].values()))[0]]]}
    (samples / "samples_bold_religious_ideology_2026.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    (samples / "results_2026.json").write_text('{"model_name": "m", "config": {"mod', encoding="utf-8")
    message = _one_paragraph_error(capsys, cli_main(["score", str(tmp_path / "lm-eval"), "--out", str(tmp_path / "o"),
                                                     "--allow-partial", "--domains", "religious_ideology", *CHEAP[:2]]))
    assert f"{samples / 'results_2026.json'} is damaged" in message and "--model NAME" in message


# --------------------------------------------------------------------------- 3. a report is one unit


def _report_identity(folder: Path) -> tuple[str, float]:
    """(report.md's confidence level, summary.json's alpha): equal when both come from one report. Read as every
    bold-eval command reads a folder: a commit a kill cut short is finished first."""
    recover_report(folder)
    text = (folder / "report.md").read_text(encoding="utf-8")
    level = "90%" if "90% intervals" in text else "95%" if "95% intervals" in text else "?"
    return level, read_summary(folder).statistics["alpha"]


def test_a_kill_during_the_commit_is_finished_by_the_next_reader(folders, tmp_path, monkeypatch):
    folder = _copy(folders, "run", tmp_path)
    assert _report_identity(folder) == ("95%", 0.05)
    real_replace, moves = os.replace, []

    def killed_after_two(source, target):
        if Path(source).parent.name == PENDING_REPORT:  # a move of the commit
            if len(moves) == 1:
                raise KeyboardInterrupt  # the process dies between two moves of the commit
            moves.append(target)
        return real_replace(source, target)

    monkeypatch.setattr("bold_eval.runfolder.transaction.os.replace", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        write_report(folder, alpha=0.1)
    monkeypatch.undo()
    assert (folder / PENDING_REPORT).is_dir()  # half moved: report.md is new, summary.json still old
    assert (folder / "report.md").read_text(encoding="utf-8").count("90% intervals") >= 1
    assert json.loads((folder / "summary.json").read_text(encoding="utf-8"))["statistics"]["alpha"] == 0.05
    assert read_summary(folder).statistics["alpha"] == 0.1  # the reader finished the commit first
    assert not (folder / PENDING_REPORT).exists()
    assert {item for item in REPORT_ITEMS if (folder / item).exists()} == set(REPORT_ITEMS)


@pytest.mark.slow
def test_sigkill_at_any_moment_of_a_report_leaves_one_report(folders, tmp_path):
    """Kill `bold-eval report --alpha 0.1` at several moments: the folder then holds the old report or the new one
    (after the next reader finishes a cut commit), never report.md of one beside summary.json of the other; and
    the next report removes what the killed one left."""
    folder = _copy(folders, "run", tmp_path)
    environment = {**os.environ, "BOLD_EVAL_THREADS": "1"}
    for delay in (0.9, 1.5, 2.1, 2.7):
        shutil.rmtree(folder)
        shutil.copytree(folders["run"], folder)
        process = subprocess.Popen([*BOLD_EVAL, "report", str(folder), "--alpha", "0.1"], env=environment,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        level, alpha = _report_identity(folder)
        assert (level, alpha) in {("95%", 0.05), ("90%", 0.1)}, (delay, level, alpha)
    assert cli_main(["report", str(folder)]) == 0
    assert not list(folder.glob(".*.tmp")) and not (folder / PENDING_REPORT).exists()


def test_a_failed_report_leaves_the_old_one_whole(folders, tmp_path, monkeypatch):
    folder = _copy(folders, "run", tmp_path)
    before = {path.relative_to(folder): path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    monkeypatch.setattr("bold_eval.report.run_report.write_summary", _raise(errno.ENOSPC))
    with pytest.raises(StorageError, match=f"writing the report into {folder}"):
        write_report(folder, alpha=0.1)
    assert before == {path.relative_to(folder): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


@pytest.mark.slow
def test_a_kill_during_scoring_leaves_a_temporary_that_the_rerun_removes(tmp_path, bold_dir):
    """The process dies (SIGKILL: no cleanup runs) while scores.parquet is half written; the same command then
    completes and leaves no hidden temporary file behind."""
    out = tmp_path / "out"
    killed = ("import os, sys\n"
              "from bold_eval.runfolder.parquet import ScoresWriter\n"
              "def die(self, scores):\n"
              "    self._handle.write(b'PAR1 half a file'); self._handle.flush(); os.kill(os.getpid(), 9)\n"
              "ScoresWriter.write = die\n"
              "from bold_eval.cli import main\n"
              f"sys.exit(main({[*WIKI_RUN, '--out', str(out)]!r}))\n")
    environment = {**os.environ, "BOLD_DATA_DIR": str(bold_dir)}
    done = subprocess.run([sys.executable, "-c", killed], env=environment, capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert [path.name.startswith(".scores.parquet.") for path in out.glob(".*.tmp")] == [True]
    assert not (out / "scores.parquet").exists()
    assert cli_main([*WIKI_RUN, "--out", str(out)]) == 0
    assert not list(out.glob(".*.tmp")) and (out / "scores.parquet").is_file()


def test_temporaries_of_dead_processes_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftovers = [tmp_path / f".scores.parquet.{dead.pid}.abc123.tmp", tmp_path / ".run.json.oldname.tmp"]
    for path in leftovers:
        path.write_bytes(b"half")
    (tmp_path / f".report.{dead.pid}.xyz.tmp").mkdir()
    alive = tmp_path / f".generations.jsonl.{os.getpid()}.def456.tmp"
    alive.write_bytes(b"being written")
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(removed) == sorted([*leftovers, tmp_path / f".report.{dead.pid}.xyz.tmp"])
    assert alive.exists()
    with report_transaction(tmp_path) as staging:
        (staging / "report.md").write_text("new", encoding="utf-8")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "new"
    assert [path.name for path in tmp_path.glob(".*.tmp")] == [alive.name]


# --------------------------------------------------------------------------- 4. options checked before any work


@pytest.mark.parametrize("variable, value, expected", [
    ("BOLD_EVAL_THREADS", "abc", "$BOLD_EVAL_THREADS must be a whole number"),
    ("BOLD_EVAL_THREADS", "0", "$BOLD_EVAL_THREADS must be a whole number"),
    ("BOLD_ALLOW_MODIFIED_DATA", "maybe", "$BOLD_ALLOW_MODIFIED_DATA must be on or off"),
    ("BOLD_EVAL_OFFLINE", "2", "$BOLD_EVAL_OFFLINE must be on or off"),
    ("BOLD_LEXICON_DIR", "/no/such/folder", "$BOLD_LEXICON_DIR is '/no/such/folder', which does not exist"),
])
def test_a_bad_environment_variable_stops_the_command_before_any_work(variable, value, expected, tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setenv(variable, value)
    loaded = []
    monkeypatch.setattr("bold_eval.data.bold.load_bold", lambda *a, **k: loaded.append(1))
    message = _one_paragraph_error(capsys, cli_main([*WIKI_RUN, "--out", str(tmp_path / "out")]), 2)
    assert expected in message
    assert not loaded and not (tmp_path / "out").exists()


@pytest.mark.parametrize("flags, expected", [
    (["--seed", "-1"], "argument --seed: expected a whole number >= 0"),
    (["--sample-seed", "-1"], "argument --sample-seed: expected a whole number >= 0, got -1"),
    (["--limit", "0"], "argument --limit: expected a whole number >= 1"),
    (["--num-samples", "0"], "argument --num-samples: expected a whole number >= 1"),
    (["--device", "foo"], "--device 'foo' is not a device"),
    (["--base-url", "localhost:8000"], "is not an http(s) URL"),
    (["--metric-option", "sentiment.positive_threshold=high"], "sentiment.positive_threshold must be a number"),
    (["--metric-option", "sentiment.ignore_placeholders=1"], "must be true or false"),
])
def test_a_bad_option_stops_the_command_before_any_work(flags, expected, tmp_path, capsys, monkeypatch):
    loaded = []
    monkeypatch.setattr("bold_eval.data.bold.load_bold", lambda *a, **k: loaded.append(1))
    argv = [*WIKI_RUN[:-1], "--out", str(tmp_path / "out"), *flags]
    if flags[0] in ("--device", "--base-url"):
        argv[argv.index("wikipedia")] = "embedded"
    message = _one_paragraph_error(capsys, _status(argv), 2)
    assert expected in message and not loaded and not (tmp_path / "out").exists()


def test_report_and_validate_refuse_a_negative_seed(folders, capsys):
    assert expected_usage(capsys, _status(["report", str(folders["run"]), "--seed", "-1"]))
    assert expected_usage(capsys, _status(["validate", "sentiment", "--against", "x.csv", "--out", "o", "--seed",
                                           "-2"]))


def expected_usage(capsys, status: int) -> bool:
    err = capsys.readouterr().err
    return status == 2 and "expected a whole number >= 0" in err and "Traceback" not in err


def test_summary_json_of_the_wrong_shape_is_damaged(tmp_path):
    (tmp_path / "summary.json").write_text('{"schema_version": 2, "counts": [1, 2]}', encoding="utf-8")
    with pytest.raises(DamagedFileError, match="its 'counts' is a list, not a mapping"):
        read_summary(tmp_path)


def test_the_rebuild_command_of_a_folder_without_a_recorded_command(tmp_path):
    from bold_eval.runfolder.loading import rebuild_command
    from bold_eval.runfolder.records import RunRecord

    scored = RunRecord(generations={"source": "mine.jsonl"})
    assert rebuild_command(tmp_path, scored).startswith(f"`bold-eval score mine.jsonl --out {tmp_path}`")
    assert "generates nothing already in generations.jsonl" in rebuild_command(tmp_path, RunRecord(generator="x"))


def test_a_scores_file_the_machine_cannot_read_is_its_fault_not_damage(tmp_path, monkeypatch):
    from bold_eval.runfolder.parquet import read_scores

    (tmp_path / "scores.parquet").write_bytes(b"PAR1")
    monkeypatch.setattr("bold_eval.runfolder.parquet.pd.read_parquet", _raise(errno.EACCES))
    with pytest.raises(StorageError, match="permission denied while reading"):
        read_scores(tmp_path / "scores.parquet")


def test_a_report_without_an_item_the_old_one_had_removes_it(tmp_path):
    (tmp_path / "report.md").write_text("old", encoding="utf-8")
    (tmp_path / "summary.json").write_text("{}", encoding="utf-8")
    with report_transaction(tmp_path, ("report.md", "summary.json")) as staging:
        (staging / "report.md").write_text("new", encoding="utf-8")  # this report has no summary.json
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "new"
    assert not (tmp_path / "summary.json").exists()
