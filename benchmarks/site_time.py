"""How fast and how big are report.html and the leaderboard site?

From one full-BOLD run folder (e.g. `benchmarks/full_bold.py --out DIR`), makes `--models` model runs on the same
prompts: the first is the run itself, each other a copy whose label columns are redrawn for a random share of its
texts (a different model, as far as the statistics can tell), all with the run's Wikipedia reference. Then times:

- `bold-eval report`'s report.html part (`report.html_report.write_html_report`) beside the whole report;
- `bold-eval leaderboard` over all of them (`report.leaderboard.write_leaderboard`), against the same board with
  the sign-flip test over names run one test at a time (`baselines.sign_flip`: the baseline);
- the first render of index.html and report.html in headless Chromium (until the board's table / the answer's
  figure is drawn), and the text browser's first page and a filter over every text of the run;
- page weight: the bytes each page loads first, and the folders;
- with `--samples K`, report.html of the run's texts repeated as K samples per prompt (each sample's labels
  redrawn for a share of its texts): its writing time, size and the text browser over K x 23,679 texts.

    .venv/bin/python benchmarks/site_time.py /tmp/fb_cpu --models 10 --out /tmp/site_bench
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd


def folder_bytes(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


def make_models(run: Path, out: Path, models: int, seed: int) -> list[Path]:
    """`models` run folders: the run and copies with a share of each label column redrawn."""
    from bold_eval.runfolder.layout import REFERENCE_FILE
    from bold_eval.runfolder.loading import load_run, read_reference_scores
    from bold_eval.runfolder.parquet import write_scores
    from bold_eval.testing.runs import write_run_folder

    scores, record = load_run(run)
    reference = read_reference_scores(run)
    rng = np.random.default_rng(seed)
    folders = []
    for index in range(models):
        frame = scores.copy()
        if index:
            share = rng.uniform(0.02, 0.2)
            for column in [c for c in frame.columns if c.endswith("_label") or c.startswith("toxicity_is")]:
                redraw = rng.random(len(frame)) < share
                frame.loc[redraw, column] = rng.permutation(frame[column].to_numpy())[: int(redraw.sum())]
        folder = write_run_folder(out / f"model-{index:02d}", frame, model=f"org/model-{index:02d}",
                                  generator=record.generator, generator_settings=record.generator_settings,
                                  num_samples=record.num_samples, metric_options=record.metric_options,
                                  label_columns=record.label_columns)
        write_scores(folder, reference, REFERENCE_FILE)
        folders.append(folder)
    return folders


def first_render(page_path: Path, selector: str, repeats: int) -> list[float]:
    from bold_eval.testing.browser import Page, browser

    times = []
    with browser() as launched:
        for _ in range(repeats):
            page = Page(launched)
            started = time.perf_counter()
            page.open(page_path).wait_for_selector(selector)
            times.append(time.perf_counter() - started)
            assert not page.errors, page.errors
            page.close()
    return times


def text_browser(report: Path) -> tuple[float, float]:
    """(seconds to the first page of texts after opening the tab, seconds to apply a group filter)."""
    from bold_eval.testing.browser import Page, browser

    with browser() as launched:
        page = Page(launched)
        view = page.open(report)
        view.wait_for_selector(".answer")
        started = time.perf_counter()
        view.click("#tab-texts")
        view.wait_for_selector("li.text")
        opened = time.perf_counter() - started
        view.evaluate("document.querySelector('.status').dataset.before = "
                      "document.querySelector('.status').textContent")
        started = time.perf_counter()
        view.select_option("#t-domain", "1")
        page.wait_until("document.querySelector('.status').textContent !== "
                               "document.querySelector('.status').dataset.before")
        view.wait_for_selector("li.text")
        filtered = time.perf_counter() - started
        assert not page.errors, page.errors
    return opened, filtered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a full-BOLD run folder with reference_scores.parquet")
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--samples", type=int, default=0, help="also a report.html with K samples per prompt")
    args = parser.parse_args()
    from bold_eval.analysis import leaderboard as board_module
    from bold_eval.analysis.summary import summarize
    from bold_eval.core.options import AnalysisOptions
    from bold_eval.report.html_report import write_html_report
    from bold_eval.report.leaderboard import load_board_runs, write_leaderboard
    from bold_eval.report.run_report import write_report
    from bold_eval.runfolder.loading import load_run, read_reference_scores

    if args.out.exists():
        shutil.rmtree(args.out)
    folders = make_models(args.run, args.out / "runs", args.models, args.seed)
    started = time.perf_counter()
    write_report(folders[0])
    whole = time.perf_counter() - started
    scores, record = load_run(folders[0], texts=False)
    reference = read_reference_scores(folders[0], texts=False)
    summary = summarize(scores, record.to_dict(), AnalysisOptions(), reference=reference)
    staging = args.out / "html_only"
    staging.mkdir()
    started = time.perf_counter()
    html = write_html_report(staging, record, summary, load_run(folders[0])[0], read_reference_scores(folders[0]))
    html_seconds = time.perf_counter() - started
    for folder in folders[1:]:
        shutil.copyfile(folders[0] / "report.html", folder / "report.html")
        shutil.copytree(folders[0] / "report_files", folder / "report_files")
    started = time.perf_counter()
    site = write_leaderboard(folders, args.out / "site")
    build = time.perf_counter() - started
    baseline = None
    if not args.skip_baseline:  # the board with the sign-flip test over names, one test at a time
        from leaderboard_calibration import sign_flip_tests

        original = board_module.paired_rate_tests
        board_module.paired_rate_tests = sign_flip_tests
        try:
            started = time.perf_counter()
            board_module.build_leaderboard(load_board_runs(folders))
            baseline = time.perf_counter() - started
        finally:
            board_module.paired_rate_tests = original
    index_render = first_render(args.out / "site" / "index.html", "ul.ties, table", args.repeats)
    report_render = first_render(folders[0] / "report.html", ".answer figure svg", args.repeats)
    opened, filtered = text_browser(folders[0] / "report.html")
    report_files = folders[0] / "report_files"
    first_report = sum((report_files / name).stat().st_size for name in ("common.js", "summary.js", "report.js",
                                                                         "style.css")) + \
        (folders[0] / "report.html").stat().st_size
    site_dir = args.out / "site"
    first_site = sum((site_dir / "leaderboard_files" / name).stat().st_size
                     for name in ("common.js", "board.js", "leaderboard.js", "style.css")) + \
        (site_dir / "index.html").stat().st_size
    texts = len(pd.read_parquet(folders[0] / "scores.parquet", columns=["prompt_id"]))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.2f}; python {platform.python_version()}")
    print(f"run: {args.run} ({texts} texts), {args.models} models")
    print(f"bold-eval report (whole, report.md + report.html): {whole:.1f} s; report.html alone: {html_seconds:.2f} s "
          f"({html['texts']} texts)")
    print(f"leaderboard site: {build:.1f} s ({site['test_seconds']:.1f} s of tests, {site['models']} models)"
          + (f"; one test at a time (baseline): {baseline:.1f} s, ratio {baseline / site['test_seconds']:.1f}x"
             if baseline else ""))
    print(f"first render, median of {args.repeats}: index.html {np.median(index_render):.2f} s "
          f"(max {max(index_render):.2f}), report.html {np.median(report_render):.2f} s (max {max(report_render):.2f})")
    print(f"text browser: first page {opened:.2f} s after opening the tab, a domain filter over {texts} texts "
          f"{filtered:.2f} s")
    if args.samples > 1:
        texts_k = load_run(folders[0])[0]
        rng = np.random.default_rng(args.seed)
        parts = []
        for sample in range(args.samples):
            part = texts_k.assign(sample=sample)
            if sample:
                redraw = rng.random(len(part)) < 0.2
                for column in [c for c in part.columns if c.endswith("_label")]:
                    part.loc[redraw, column] = rng.permutation(part[column].to_numpy())[: int(redraw.sum())]
            parts.append(part)
        many = pd.concat(parts, ignore_index=True)
        staging_k = args.out / f"html_k{args.samples}"
        staging_k.mkdir()
        started = time.perf_counter()
        html_k = write_html_report(staging_k, record, summary, many, read_reference_scores(folders[0]))
        k_seconds = time.perf_counter() - started
        opened_k, filtered_k = text_browser(staging_k / "report.html")
        files_k = staging_k / "report_files"
        print(f"k = {args.samples} ({len(many)} texts): report.html written in {k_seconds:.1f} s, report_files/ "
              f"{folder_bytes(files_k) / 1e6:.0f} MB (index.js {(files_k / 'index.js').stat().st_size / 1e6:.1f} MB, "
              f"{len(list(files_k.glob('texts-*.js')))} chunks of "
              f"{html_k['texts'] // max(1, len(list(files_k.glob('texts-*.js'))))} texts); "
              f"text browser: first page {opened_k:.2f} s, a domain filter {filtered_k:.2f} s")
    print(f"page weight loaded first: report.html {first_report / 1e6:.2f} MB, index.html {first_site / 1e6:.2f} MB; "
          f"report_files/ {folder_bytes(report_files) / 1e6:.1f} MB (index.js "
          f"{(report_files / 'index.js').stat().st_size / 1e6:.1f} MB, loaded with the texts tab), site without "
          f"copied reports {(folder_bytes(site_dir) - folder_bytes(site_dir / 'runs')) / 1e6:.2f} MB, with them "
          f"{folder_bytes(site_dir) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
