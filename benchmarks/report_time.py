"""Time of `bold-eval report` on a run folder, and of its permutation draws against the previous ones.

The report's cost on all of BOLD is mostly its clustered difference tests, and their cost is mostly drawing
permutations (`analysis.clustered._null_distributions`). The script writes the report once, recording every
draw request (the units' moments, the side's size, the number of draws), then replays exactly those requests
with our draw and with the previous one, alternating, so both do the same work: how many tests go on to
9,999 and 99,999 draws depends on Monte Carlo noise, which an end-to-end A/B would mix in. The baseline is the
draw of commit a6517ce and before: shuffle unit indices and scatter the first `size_a` of each row into a
0/1 membership matrix. Ours shuffles the side labels themselves. Both are uniform draws of the same subsets.

It then writes the report again on the default number of threads (`BOLD_EVAL_THREADS`, else the cores, at most
8; the first report ran on one) and prints both times and whether the two summaries are identical, as they
must be: each test draws from its own seeded generator.

Make a full-BOLD folder first (random small models; the report's work does not depend on the weights):

    .venv/bin/python benchmarks/full_bold.py --layers 2 --hidden 64 --out /tmp/bold-full
    .venv/bin/python benchmarks/report_time.py /tmp/bold-full --rounds 3   # --rounds 0: threads only
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def previous_null_distributions(moments: np.ndarray, size_a: int, resamples: int,
                                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The draw before the change: shuffle unit indices, scatter the first `size_a` into a membership matrix."""
    from bold_eval.analysis import clustered

    units = moments.shape[1]
    total = moments.sum(axis=1, keepdims=True)
    plain, studentized = [], []
    batch = max(1, clustered.PERMUTATION_BLOCK // units)
    for start in range(0, resamples, batch):
        rows = min(batch, resamples - start)
        order = rng.permuted(np.broadcast_to(np.arange(units), (rows, units)), axis=1)[:, :size_a]
        members = np.zeros((rows, units))
        np.put_along_axis(members, order, 1.0, axis=1)
        del order
        sums_a = moments @ members.T
        difference, statistic = clustered._statistics(sums_a, total - sums_a)
        plain.append(difference)
        studentized.append(statistic)
    return np.concatenate(plain), np.concatenate(studentized)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a run folder with scores.parquet (e.g. from full_bold.py --out)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating replay rounds of the draws (median reported; 0: none)")
    args = parser.parse_args()

    from bold_eval.analysis import clustered
    from bold_eval.report.run_report import write_report

    ours = clustered._null_distributions
    requests: list[tuple[np.ndarray, int, int]] = []
    spent = [0.0]

    def recording(moments, size_a, resamples, rng):
        requests.append((moments.copy(), size_a, resamples))
        started = time.perf_counter()
        try:
            return ours(moments, size_a, resamples, rng)
        finally:
            spent[0] += time.perf_counter() - started

    threads = clustered.family_threads()
    summaries = []
    with tempfile.TemporaryDirectory() as scratch:
        for arm in ("one thread", "threads"):
            folder = Path(scratch) / arm.replace(" ", "-")
            shutil.copytree(args.run_dir, folder, ignore=shutil.ignore_patterns("figures", "tables", "report.md",
                                                                                 "summary.json"))
            if arm == "one thread":
                os.environ[clustered.THREADS_ENV] = "1"
                clustered._null_distributions = recording
            try:
                started = time.perf_counter()
                write_report(folder)
                seconds = time.perf_counter() - started
            finally:
                clustered._null_distributions = ours
                os.environ[clustered.THREADS_ENV] = str(threads)
            summaries.append((folder / "summary.json").read_text(encoding="utf-8"))
            if arm == "one thread":
                report_s = seconds
                draws = sum(resamples for _, _, resamples in requests)
                print(f"report of {args.run_dir} on one thread: {report_s:.1f} s, of which {spent[0]:.1f} s drawing "
                      f"permutations ({len(requests):,} requests, {draws:,} draws)")
            else:
                print(f"the same report on {threads} threads: {seconds:.1f} s, {report_s / seconds:.2f}x; "
                      f"summary.json identical: {summaries[0] == summaries[1]}")
    if args.rounds < 1:
        return

    arms = {"previous draws (baseline)": previous_null_distributions, "label shuffles (ours)": ours}
    times: dict[str, list[float]] = {name: [] for name in arms}
    for round_ in range(args.rounds):
        for name in (list(arms) if round_ % 2 == 0 else list(reversed(arms))):
            started = time.perf_counter()
            for index, (moments, size_a, resamples) in enumerate(requests):
                arms[name](moments, size_a, resamples, np.random.default_rng(index))
            times[name].append(time.perf_counter() - started)
    print(f"replaying those requests; median of {args.rounds} alternating round(s)")
    for name in arms:
        print(f"{name:28s} {statistics.median(times[name]):8.1f} s")
    base, new = (statistics.median(times[name]) for name in arms)
    print(f"speed-up of the draws: {base / new:.2f}x; the report at that rate: "
          f"{report_s - spent[0] + spent[0] * base / new:.1f} s -> {report_s:.1f} s")


if __name__ == "__main__":
    main()
