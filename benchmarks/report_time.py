"""Time of `bold-eval report` on a run folder: the report against one whose findings use the
permutation test, in the same process.

The baseline tests every contrast with the studentized cluster permutation test (999 draws, up to 99,999 near the
corrected level) and a cluster bootstrap interval; its cost on all of BOLD is mostly drawing permutations. The
default is the score-type cluster-robust t (`bold_eval.analysis.rate_test`), which needs no resampling. Both reports
are written here from copies of the same folder, on the same threads (`BOLD_EVAL_THREADS`, else the cores, at most
8): the baseline with `clustered.difference_tests` (the findings' families, and through `difference_test` the largest
gaps) replaced by `baselines.cluster_difference_tests`. Printed: both times, their ratio, and where the report's time
goes (the analysis, then the files: tables, figures, report.md).

Make a full-BOLD folder first (random small models; the report's work does not depend on the weights):

    .venv/bin/python benchmarks/full_bold.py --layers 2 --hidden 64 --out /tmp/bold-full
    .venv/bin/python benchmarks/report_time.py /tmp/bold-full            # --skip-baseline: the report only

`--figures-here` adds the report with its figures drawn in the report's own process, against the default: a run
this large draws them in a worker process beside the rest (`bold_eval.report.painter`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

REPORT_FILES = ("figures", "tables", "report.md", "summary.json", "report.html", "report_files")


def timed_report(run_dir: Path, scratch: Path, name: str) -> tuple[float, float]:
    """(seconds of the whole report, seconds of its analysis) on a copy of `run_dir` without its old report."""
    from bold_eval.analysis import summary
    from bold_eval.report import run_report

    folder = scratch / name
    shutil.copytree(run_dir, folder, ignore=shutil.ignore_patterns(*REPORT_FILES))
    spent = [0.0]
    summarize = summary.summarize

    def timed_summarize(*args, **kwargs):
        started = time.perf_counter()
        try:
            return summarize(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    run_report.summarize = timed_summarize
    try:
        started = time.perf_counter()
        run_report.write_report(folder)
        return time.perf_counter() - started, spent[0]
    finally:
        run_report.summarize = summarize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run folder with scores.parquet (e.g. from full_bold.py --out)")
    parser.add_argument("--skip-baseline", action="store_true", help="time the report only")
    parser.add_argument("--figures-here", action="store_true",
                        help="also time the report with its figures drawn in its own process (BOLD_EVAL_FIGURE_WORKER"
                             "=0), against the default (a worker process for a run this large), and print the ratio")
    args = parser.parse_args()

    from baselines import cluster_difference_tests

    from bold_eval.analysis import clustered, findings
    from bold_eval.core.environment import FIGURE_WORKER_ENV

    threads = clustered.family_threads()
    with tempfile.TemporaryDirectory() as scratch:
        today, analysis = timed_report(args.run_dir, Path(scratch), "today")
        print(f"report of {args.run_dir} on {threads} thread(s): {today:.1f} s ({analysis:.1f} s analysis, "
              f"{today - analysis:.1f} s tables, figures and report.md)")
        if args.figures_here:
            os.environ[FIGURE_WORKER_ENV] = "0"
            try:
                here, _ = timed_report(args.run_dir, Path(scratch), "figures-here")
            finally:
                os.environ.pop(FIGURE_WORKER_ENV)
            print(f"the report with its figures drawn in its own process: {here:.1f} s; the figure worker's "
                  f"speed-up: {here / today:.2f}x")
        if args.skip_baseline:
            return
        product = clustered.difference_tests
        findings.difference_tests = clustered.difference_tests = cluster_difference_tests
        try:
            before, before_analysis = timed_report(args.run_dir, Path(scratch), "before")
        finally:
            findings.difference_tests = clustered.difference_tests = product
        print(f"the report with permutation tests: {before:.1f} s ({before_analysis:.1f} s analysis)")
        print(f"speed-up: {before / today:.1f}x")


if __name__ == "__main__":
    main()
