"""Loading a run folder for the analysis: its scores, run.json and reference scores, with the command that
rebuilds a damaged file in the message."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bold_eval.core.errors import InputError, MissingFileError
from bold_eval.runfolder.json_files import read_run_record
from bold_eval.runfolder.layout import REFERENCE_FILE, SCORES_FILE
from bold_eval.runfolder.parquet import read_scores
from bold_eval.runfolder.records import LoadedRun, RunRecord
from bold_eval.runfolder.transaction import recover_report


def rebuild_command(run_dir: Path, record: RunRecord | None) -> str:
    """The command that writes a folder's scores again from what is in it, in words."""
    what = ("it generates nothing already in generations.jsonl and scores those texts anew"
            if record is None or record.generator is not None else "it reads the same generations and scores them anew")
    if record is not None and record.command:
        return f"`{record.command}` (the command that wrote the folder) writes it again: {what}"
    source = (record.generations or {}).get("source") if record is not None else None
    if record is not None and record.generator is None and source:
        return f"`bold-eval score {source} --out {run_dir}` (with the options that scored it) writes it again"
    return f"the `bold-eval run ... --out {run_dir}` command that made the folder writes it again: {what}"


def read_reference_scores(run_dir: str | Path, *, texts: bool = True) -> pd.DataFrame | None:
    """reference_scores.parquet of a run folder (the Wikipedia sentences of its prompts), None when absent."""
    run_dir = Path(run_dir)
    path = run_dir / REFERENCE_FILE
    remedy = (f"Move it away: `bold-eval report {run_dir}` then reports without the Wikipedia reference; or "
              f"{rebuild_command(run_dir, _record_if_readable(run_dir))}, the reference included.")
    return read_scores(path, texts=texts, remedy=remedy) if path.is_file() else None


def _record_if_readable(run_dir: Path) -> RunRecord | None:
    """run.json for a message's sake: None when absent or damaged (the message is about another file)."""
    try:
        return read_run_record(run_dir)
    except InputError:
        return None


def load_run(run_dir: str | Path, *, texts: bool = True) -> tuple[pd.DataFrame, RunRecord]:
    """scores.parquet (without `TEXT_COLUMNS` unless `texts`) and run.json of a run folder (run.json may be
    absent: an empty record)."""
    run_dir = Path(run_dir)
    recover_report(run_dir)
    scores_path = run_dir / SCORES_FILE
    if not scores_path.is_file():
        raise MissingFileError(f"{scores_path} not found: {run_dir} is not a scored run folder; `bold-eval run --out "
                               f"{run_dir}` (or `bold-eval score ... --out {run_dir}`) writes it")
    record = read_run_record(run_dir)
    remedy = f"{rebuild_command(run_dir, record)[0].upper()}{rebuild_command(run_dir, record)[1:]}."
    scores = read_scores(scores_path, texts=texts, remedy=remedy)
    return scores, record if record is not None else RunRecord(status="unknown")


def loaded_run(run_dir: str | Path, *, texts: bool = True, reference: bool = False) -> LoadedRun:
    """`load_run` as the `LoadedRun` the analysis receives, with the reference scores when `reference` (without
    their `TEXT_COLUMNS` unless `texts`)."""
    run_dir = Path(run_dir)
    scores, record = load_run(run_dir, texts=texts)
    return LoadedRun(folder=run_dir, scores=scores, record=record,
                     reference=read_reference_scores(run_dir, texts=texts) if reference else None)
