"""The run folder: its file names, column schema, typed run.json / summary.json records, and every read and write.

`bold-eval run` and `score` write a folder; `report`, `compare` and `publish-results` read it.
Every writer and reader goes through this package, so the layout is defined once (`layout.py`):

    generations.jsonl        one record per (prompt_id, sample), appended batch by batch (`jsonl.py`)
    generations.rank<r>.jsonl  per-process shards under several processes, merged by process 0 (`merge.py`)
    scores.parquet           one row per text: GENERATION_COLUMNS, `text`, `<metric>_<column>` (`parquet.py`)
    reference_scores.parquet the Wikipedia sentences of the same prompts (sample 0), same columns and metrics
    run.json                 a `RunRecord` (`records.py`): what was generated and scored, and how (`json_files.py`)
    summary.json             a `SummaryRecord`: every view of `bold_eval.analysis.summary.summarize`
    report.md, figures/, tables/   written by `bold_eval.report.run_report`

A report (report.md, summary.json, tables/, figures/) is one unit: `transaction.report_transaction` writes it into a
staging folder and moves it in whole (a kill leaves the old report or the new one, never a mix). A file that
cannot be read back is a `DamagedFileError` naming it and the command that rebuilds it; it is never rewritten
by reading it. Temporary files of a killed command are removed by the next report that completes
(`transaction.remove_stale_temporaries`). `loading.py` reads a run folder whole for the analysis (`LoadedRun`).

run.json and summary.json carry `schema_version`. Folders written by bold-eval 0.1 have none;
their run.json is read by mapping the 0.1 keys onto the record (see `records.RunRecord.from_dict`).
"""
