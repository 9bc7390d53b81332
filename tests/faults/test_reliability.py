"""The harness side of reliability: every user mistake a message, never fewer rows than asked, every bad
input line named, a failed start leaves the folder reusable, and a resumed run equals an
uninterrupted one under every dtype.

The JSONL properties run hypothesis with the `BOLD_FUZZ_PROFILE` of tests/metrics/test_fuzz.py ("ci" by
default, "thorough" for 1,000 examples each).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bold_eval.cli import main as cli_main
from bold_eval.core.errors import DataMismatchError, InputError, MissingFileError
from bold_eval.data import bold as data
from bold_eval.generation.base import GENERATORS, Generated, GenerationStats, Generator, register_generator
from bold_eval.generation.decoding import make_decoding
from bold_eval.run import RunConfig, run
from bold_eval.runfolder.jsonl import append_records, read_generations
from bold_eval.scoring.external import GenerationsError, load_generations
from bold_eval.testing.models import build_tiny_causal_lm

_PROFILES = {"ci": 50, "thorough": 1000}
PROFILE = os.environ.get("BOLD_FUZZ_PROFILE", "ci")
if PROFILE not in _PROFILES:
    raise ValueError(f"BOLD_FUZZ_PROFILE={PROFILE!r}; valid profiles: {', '.join(_PROFILES)}")
FUZZ = settings(max_examples=_PROFILES[PROFILE], deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

CHEAP_SCORING = ["--metrics", "gender_polarity", "--metric-option", "gender_polarity.methods=unigram"]


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BOLD_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("BOLD_ALLOW_MODIFIED_DATA", raising=False)
    monkeypatch.delenv("BOLD_EVAL_DEBUG", raising=False)


# --------------------------------------------------------------------------- 1. CLI errors


class ScriptedGenerator(Generator):
    """A generator of this test (not a stand-in for ours): fixed texts in batches of two, and a
    scripted failure after `fail_after` batches, to exercise the CLI's handling of Ctrl-C and bugs."""

    kind = "test-scripted"
    fail_after: int | None = None
    failure: type[BaseException] = KeyboardInterrupt

    def __init__(self, config, context):
        self.rows = context.rows

    def settings(self):
        return {"model": "scripted"}

    def info(self):
        return {"name": "scripted"}

    def generate(self, items, *, on_batch, progress=True, plan=None):
        for number, start in enumerate(range(0, len(items), 2), start=1):
            batch = list(items[start:start + 2])
            on_batch(batch, [Generated(" was a person.", 3) for _ in batch])
            if ScriptedGenerator.fail_after == number:
                raise ScriptedGenerator.failure("scripted failure")
        return GenerationStats()


@pytest.fixture
def scripted():
    register_generator(ScriptedGenerator.kind, ScriptedGenerator)
    yield ScriptedGenerator
    GENERATORS.pop(ScriptedGenerator.kind, None)
    ScriptedGenerator.fail_after, ScriptedGenerator.failure = None, KeyboardInterrupt


def _scripted_run(out: Path) -> list[str]:
    return ["run", "--generator", ScriptedGenerator.kind, "--model", "scripted", "--domains", "religious_ideology",
            "--limit", "6", "--out", str(out), "--no-progress", *CHEAP_SCORING]


def _user_error_cases(tmp_path: Path) -> dict[str, tuple[list[str], int, str]]:
    empty = tmp_path / "empty"
    empty.mkdir()
    partial = tmp_path / "partial.jsonl"
    partial.write_text(json.dumps({"prompt_id": "religious_ideology/judaism/Judaism/0", "continuation": "x"}) + "\n",
                       encoding="utf-8")
    return {
        "offline model": (["run", "--model", "gpt2", "--domains", "religious_ideology", "--limit", "2",
                           "--out", str(tmp_path / "o"), "--no-progress", *CHEAP_SCORING], 1,
                           "causal LM 'gpt2' not found"),
        "unknown domain": (["run", "--model", "wikipedia", "--domains", "races", "--out", str(tmp_path / "o")], 2,
                           "unknown domain(s) races"),
        "score input not covering BOLD": (["score", str(partial), "--domains", "religious_ideology",
                                           "--out", str(tmp_path / "s"), *CHEAP_SCORING], 1, "no generation"),
        "report without scores": (["report", str(empty)], 1, "scores.parquet not found"),
        "compare without scores": (["compare", str(empty), "--out", str(tmp_path / "c")], 1,
                                   "scores.parquet not found"),
        "publish-results without summary": (["publish-results", str(empty), "--repo", "someone/model", "--dry-run",
                                             str(tmp_path / "d")], 1, "summary.json not found"),
        "bad metric option": (["score", str(partial), "--out", str(tmp_path / "s"), "--metric-option", "bad"], 2,
                              "--metric-option 'bad'"),
    }


@pytest.mark.parametrize("case", ["offline model", "unknown domain", "score input not covering BOLD",
                                  "report without scores", "compare without scores",
                                  "publish-results without summary", "bad metric option"])
def test_user_mistakes_end_in_one_paragraph_without_traceback(case, tmp_path, capsys, monkeypatch, bold_dir):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv, status, message = _user_error_cases(tmp_path)[case]
    assert cli_main(argv) == status
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("bold-eval")]) == 1
    # --debug (anywhere on the line) and $BOLD_EVAL_DEBUG show the traceback of the same error
    assert cli_main([*argv, "--debug"]) == status
    assert "Traceback" in capsys.readouterr().err
    monkeypatch.setenv("BOLD_EVAL_DEBUG", "1")
    assert cli_main(argv) == status
    assert "Traceback" in capsys.readouterr().err


def test_a_failed_start_leaves_the_folder_reusable(tmp_path, capsys, monkeypatch):
    """Point 6: a model that cannot be loaded writes no run.json; the corrected command then runs."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "out"
    common = ["--domains", "religious_ideology", "--limit", "4", "--out", str(out), "--no-progress", *CHEAP_SCORING]
    assert cli_main(["run", "--model", str(tmp_path / "no-such-model"), *common]) == 1
    assert "not found" in capsys.readouterr().err
    assert not (out / "run.json").exists() and not (out / "generations.jsonl").exists()
    assert cli_main(["run", "--model", "wikipedia", *common]) == 0
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["model"] == "wikipedia"


def test_a_stale_start_record_without_generations_does_not_block(tmp_path, tiny_lm_dir):
    """A run.json left by an interrupted start (no generation written) is not 'other settings'."""
    out = tmp_path / "out"
    first = _tiny_config(out, tiny_lm_dir, seed=1)
    first.on_batch_written = lambda batch: (_ for _ in ()).throw(RuntimeError("crash"))
    with pytest.raises(RuntimeError):
        run(first)
    (out / "generations.jsonl").write_bytes(b"")  # the crash happened before the first line landed
    assert run(_tiny_config(out, tiny_lm_dir, seed=2)) is not None


def test_ctrl_c_says_what_was_saved_and_how_to_resume(tmp_path, capsys, scripted):
    out = tmp_path / "out"
    scripted.fail_after = 2
    argv = _scripted_run(out)
    assert cli_main(argv) == 130
    err = capsys.readouterr().err
    assert f"4 of 6 generations are in {out / 'generations.jsonl'}" in err
    assert "bold-eval " + " ".join(argv) in err
    assert "Traceback" not in err
    scripted.fail_after = None
    assert cli_main(argv) == 0  # the printed command resumes
    assert len(read_generations(out / "generations.jsonl")) == 6


def test_an_internal_error_shows_its_traceback_and_asks_for_a_report(tmp_path, capsys, scripted):
    scripted.fail_after, scripted.failure = 1, ZeroDivisionError
    assert cli_main(_scripted_run(tmp_path / "out")) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err
    assert "This is a bug in bold-eval" in err and "report it" in err


# --------------------------------------------------------------------------- 3. never fewer rows


def _copy_bold(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("LICENSE*"))
    return target


def test_an_emptied_domain_file_is_an_error_naming_it(bold_dir, tmp_path):
    folder = _copy_bold(bold_dir, tmp_path / "bold")
    for relative in ("prompts/gender_prompt.json", "wikipedia/gender_wiki.json"):
        (folder / relative).write_text("{}", encoding="utf-8")
    # before: load_bold("all") gave 20,475 rows without a word, load_bold("gender") failed inside datasets
    for config in ("all", "gender"):
        with pytest.raises(InputError, match="gender_prompt.json holds no prompts for domain 'gender'"):
            data.load_bold(config, data_dir=folder)
    # opting into modified data does not make an empty domain acceptable
    with pytest.raises(InputError, match="holds no prompts for domain 'gender'"):
        data.load_bold("all", data_dir=folder, allow_modified=True)


def test_modified_data_is_refused_unless_allowed_and_then_recorded(bold_dir, tmp_path, monkeypatch, capsys):
    folder = _copy_bold(bold_dir, tmp_path / "bold")
    for relative in ("prompts/religious_ideology_prompt.json", "wikipedia/religious_ideology_wiki.json"):
        content = json.loads((folder / relative).read_text(encoding="utf-8"))
        content["sikhism"].pop("Sikhism")
        (folder / relative).write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(DataMismatchError, match="religious_ideology_prompt.json") as error:
        data.load_bold("religious_ideology", data_dir=folder)
    assert "--allow-modified-data" in str(error.value) and "BOLD_ALLOW_MODIFIED_DATA" in str(error.value)
    assert len(data.load_bold("gender", data_dir=folder)) == 3204  # untouched domains still load
    modified = data.load_bold("religious_ideology", data_dir=folder, allow_modified=True)
    assert 0 < len(modified) < 639
    monkeypatch.setenv("BOLD_ALLOW_MODIFIED_DATA", "1")
    assert len(data.load_bold("religious_ideology", data_dir=folder)) == len(modified)
    monkeypatch.delenv("BOLD_ALLOW_MODIFIED_DATA")

    out = tmp_path / "run"
    argv = ["run", "--model", "wikipedia", "--domains", "religious_ideology", "--data-dir", str(folder),
            "--out", str(out), "--no-progress", *CHEAP_SCORING]
    assert cli_main(argv) == 1
    assert "differ from the upstream release" in capsys.readouterr().err
    assert cli_main([*argv, "--allow-modified-data"]) == 0
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["modified_data"] == ["prompts/religious_ideology_prompt.json",
                                       "wikipedia/religious_ideology_wiki.json"]
    assert record["num_texts"] == len(modified)
    assert "Modified BOLD data" in (out / "report.md").read_text(encoding="utf-8")


def test_the_pinned_data_gives_table_1_counts_and_no_modification(bold_dir):
    assert data.modified_files(bold_dir) == []
    counts = data.load_bold("all", data_dir=bold_dir).to_pandas()["domain"].value_counts().to_dict()
    assert counts == {"gender": 3204, "race": 7657, "profession": 10195, "religious_ideology": 639,
                      "political_ideology": 1984}


@pytest.mark.parametrize("count", [0, 1, 3, 7])
@pytest.mark.slow
def test_readers_return_one_result_per_input_row(count, tmp_path, bold_dir):
    bold = data.load_bold("religious_ideology", data_dir=bold_dir).to_pandas().head(count)
    rows = [{"prompt_id": pid, "sample": 0, "continuation": f" text {i}"} for i, pid in enumerate(bold["prompt_id"])]
    path = tmp_path / "generations.jsonl"
    append_records(path, rows)
    assert read_generations(path) == rows
    if count:
        generations, report, _ = load_generations(path, data_dir=bold_dir, allow_partial=True)
        assert len(generations) == report.matched_rows == count
        assert generations["prompt_id"].tolist() == bold["prompt_id"].tolist()


# --------------------------------------------------------------------------- 4. named inputs


BAD_LINES = {
    "non-UTF-8": (b'{"prompt_id": "a", "sample": 0, "continuation": "caf\xe9"}', "not valid UTF-8"),
    "lone surrogate": (b'{"prompt_id": "a", "sample": 0, "continuation": "\\ud800 x"}',
                       "a string holds the lone surrogate U+D800"),
    "not an object": (b"[1, 2]", "expected a JSON object"),
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_a_bad_jsonl_line_is_named_by_file_and_line(case, tmp_path):
    line, message = BAD_LINES[case]
    path = tmp_path / "generations.jsonl"
    path.write_bytes(b'{"prompt_id": "b", "sample": 0, "continuation": "ok"}\n' + line + b"\n"
                     + b'{"prompt_id": "c", "sample": 0, "continuation": "ok"}\n')
    with pytest.raises(InputError, match=re.escape(f"generations.jsonl, line 2: {message}")):
        read_generations(path)


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_score_names_the_bad_line(case, tmp_path, capsys, bold_dir):
    line, message = BAD_LINES[case]
    path = tmp_path / "mine.jsonl"
    path.write_bytes(b'{"prompt_id": "religious_ideology/judaism/Judaism/0", "continuation": "ok"}\n' + line + b"\n")
    with pytest.raises(GenerationsError, match=re.escape(f"mine.jsonl, line 2: {message}")):
        load_generations(path, data_dir=bold_dir)
    assert cli_main(["score", str(path), "--out", str(tmp_path / "out"), *CHEAP_SCORING]) == 1
    err = capsys.readouterr().err
    assert f"mine.jsonl, line 2: {message}" in err and "Traceback" not in err


def test_missing_generations_file_is_a_user_error(tmp_path):
    with pytest.raises(MissingFileError, match="does not exist"):
        load_generations(tmp_path / "nope.jsonl")


records = st.lists(st.fixed_dictionaries({"prompt_id": st.text(), "sample": st.integers(0, 10**6),
                                          "continuation": st.text(), "num_new_tokens": st.integers(0, 100)}),
                   max_size=20)


@FUZZ
@given(records)
def test_jsonl_round_trips_arbitrary_unicode(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("jsonl") / "generations.jsonl"
    append_records(path, rows[: len(rows) // 2])
    append_records(path, rows[len(rows) // 2:])
    assert read_generations(path) == rows


@FUZZ
@given(records.filter(bool), st.data())
def test_jsonl_corruption_gives_records_or_a_named_line(tmp_path_factory, rows, draw):
    path = tmp_path_factory.mktemp("jsonl") / "generations.jsonl"
    append_records(path, rows)
    content = bytearray(path.read_bytes())
    for _ in range(draw.draw(st.integers(1, 3))):
        content[draw.draw(st.integers(0, len(content) - 1))] = draw.draw(st.integers(0, 255))
    path.write_bytes(bytes(content))
    try:
        got = read_generations(path)
    except InputError as error:
        assert str(path) in str(error) and ", line " in str(error)
    else:
        assert all(isinstance(record, dict) for record in got)
        assert len(got) <= len(rows) + content.count(b"\n")


@FUZZ
@given(records.filter(bool), st.data())
def test_a_torn_last_line_is_dropped_and_repaired(tmp_path_factory, rows, draw):
    path = tmp_path_factory.mktemp("jsonl") / "generations.jsonl"
    append_records(path, rows[:-1])
    intact = path.read_bytes()
    last = json.dumps(rows[-1], ensure_ascii=False).encode("utf-8")
    path.write_bytes(intact + last[: draw.draw(st.integers(1, len(last)))])  # a write cut anywhere
    assert read_generations(path, repair=True) == rows[:-1]
    assert path.read_bytes() == intact


# --------------------------------------------------------------------------- 7. reproducible resume


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory, bold_dir) -> str:
    corpus = data.load_bold("all", data_dir=bold_dir).to_pandas()["wikipedia"].iloc[::300].tolist()
    return str(build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"), corpus))


def _tiny_config(out: Path, model: str, **overrides) -> RunConfig:
    values = dict(out=Path(out), model=model, dtype="bfloat16", device="cpu", batch_size=4,
                  decoding=make_decoding(max_new_tokens=8), seed=5, domains=["religious_ideology"], limit=14,
                  metrics=["gender_polarity"], metric_options={"gender_polarity": {"methods": "unigram"}},
                  progress=False, report=False)  # these tests read generations and scores
    values.update(overrides)
    return RunConfig(**values)


class Kill(Exception):
    """A simulated kill -9 after a batch reached the disk."""


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.slow
def test_resume_after_kills_at_several_batches_is_byte_identical(dtype, tmp_path, tiny_lm_dir):
    reference = tmp_path / "reference"
    run(_tiny_config(reference, tiny_lm_dir, dtype=dtype))
    expected = (reference / "generations.jsonl").read_bytes()
    assert json.loads((reference / "run.json").read_text())["batch_schedule"] == [[0, 4]]

    for kill_at in ([1], [2], [3], [1, 1]):  # kill after batch k of each attempt; [1, 1]: killed twice
        out = tmp_path / f"killed_{'_'.join(map(str, kill_at))}"
        for batches in kill_at:
            written = []

            def kill(batch, written=written, batches=batches):
                written.append(batch)
                if len(written) == batches:
                    raise Kill

            with pytest.raises(Kill):
                run(_tiny_config(out, tiny_lm_dir, dtype=dtype, on_batch_written=kill))
            record = json.loads((out / "run.json").read_text())
            assert record["status"] == "generating" and record["batch_schedule"] == [[0, 4]]
        # the resume replays the recorded plan even when asked for `auto`
        run(_tiny_config(out, tiny_lm_dir, dtype=dtype, batch_size="auto"))
        assert (out / "generations.jsonl").read_bytes() == expected, (dtype, kill_at)
        assert json.loads((out / "run.json").read_text())["batch_size"] == 4
        pd.testing.assert_frame_equal(pd.read_parquet(out / "scores.parquet"),
                                      pd.read_parquet(reference / "scores.parquet"))


@pytest.mark.parametrize("edit", ["drop prompt_id", "sample as text", "negative sample"])
def test_a_generations_record_without_its_key_is_named_on_resume(edit, tmp_path, tiny_lm_dir):
    # resume and the merge match records on (prompt_id, sample): an edited record is named by file and line,
    # never a KeyError, and the file is left as it was
    out = tmp_path / "out"
    with pytest.raises(Kill):
        run(_tiny_config(out, tiny_lm_dir, on_batch_written=lambda batch: (_ for _ in ()).throw(Kill())))
    path = out / "generations.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[1])
    if edit == "drop prompt_id":
        del record["prompt_id"]
    else:
        record["sample"] = "0" if edit == "sample as text" else -1
    lines[1] = json.dumps(record) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(InputError, match=r"generations\.jsonl, line 2: a generations record needs a prompt_id"):
        run(_tiny_config(out, tiny_lm_dir))
    assert path.read_bytes() == before


def test_resume_with_another_batch_size_is_refused(tmp_path, tiny_lm_dir):
    out = tmp_path / "out"
    with pytest.raises(Kill):
        run(_tiny_config(out, tiny_lm_dir, on_batch_written=lambda batch: (_ for _ in ()).throw(Kill())))
    with pytest.raises(ValueError, match="batches of 4") as error:
        run(_tiny_config(out, tiny_lm_dir, batch_size=2))
    assert "--batch-size auto" in str(error.value)
