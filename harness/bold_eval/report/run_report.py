"""Writers for a run folder: summary.json, tables (CSV + markdown), PNG figures, report.md and report.html.

`write_report(run_dir)` reads `scores.parquet` and `run.json` (written by `bold-eval run`) and
turns `bold_eval.analysis.summary.summarize` into files a reader can use without the code.
Several runs side by side: `bold_eval.report.compare.compare_runs`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from bold_eval.analysis.clustered import confidence_label
from bold_eval.analysis.results import MetricView, Summary
from bold_eval.analysis.statistics import MIN_EXPECTED
from bold_eval.analysis.summary import summarize
from bold_eval.core.options import AnalysisOptions
from bold_eval.core.provenance import resource_lines
from bold_eval.metrics import metric_specs
from bold_eval.report.first_screen import (
    findings_section,
    how_to_read,
    method_lines,
    reference_section,
    scope_lines,
    worst_case_section,
)
from bold_eval.report.html_report import write_html_report
from bold_eval.report.markdown import (
    markdown,
    quantity,
    to_jsonable,
    write_text,
)
from bold_eval.report.painter import Painter
from bold_eval.report.sections import (
    metric_sections,
    write_view_tables,
)
from bold_eval.runfolder.json_files import write_summary
from bold_eval.runfolder.layout import FIGURES_DIR, REPORT_FILE, SCORES_FILE, TABLES_DIR
from bold_eval.runfolder.loading import load_run, read_reference_scores
from bold_eval.runfolder.records import RunRecord, SummaryRecord
from bold_eval.runfolder.transaction import report_transaction

# What every report and comparison says about BOLD and its baseline; the metrics' own caveats come from their specs.
BOLD_CAVEAT = (
    "BOLD covers a limited set of domains and groups: binary gender, four racial groups as conceptualized in "
    "American culture, seven religious and twelve political ideologies. A model that looks unbiased here is "
    "not shown to be fair (paper Section 7).")
BASELINE_CAVEATS = (
    "Wikipedia is not a fair baseline: its authors' demographics are skewed and its sentences show biases that "
    "resemble those of the LMs (Sections 6.2 and 7). Compare models with each other, not against WIKI as ground truth.",
    "Small groups: some groups have few prompts in BOLD (hinduism 12, atheism 29, populism 59; Section 6.1.4 notes "
    "Hinduism is underrepresented). Their proportions have wide intervals, and tests involving them are flagged "
    f"as unreliable when an expected count is below {MIN_EXPECTED}.",
)


def caveats() -> tuple[str, ...]:
    """The report's and compare's caveats: BOLD's scope, the metrics' instruments (`MetricPresentation.instrument`, in
    the registry's order), the baseline and small groups, then each metric's own (`MetricPresentation.caveats`, by
    `paper_rank`)."""
    instruments = [spec.presentation.instrument for spec in metric_specs() if spec.presentation.instrument]
    measured = ([f"The metrics are classifiers and lexicons ({', '.join(instruments)}). They carry their own biases "
                 "and do not measure the degree of social bias (Section 7)."] if instruments else [])
    own = [caveat for spec in sorted(metric_specs(), key=lambda spec: spec.presentation.paper_rank)
           for caveat in spec.presentation.caveats]
    return (BOLD_CAVEAT, *measured, *BASELINE_CAVEATS, *own)


# --------------------------------------------------------------------------- I/O helpers


def small_groups(summary: Summary) -> list[str]:
    """Groups named as too small by any test of the summary, in first-seen order."""
    names: dict[str, None] = {}
    for view in summary.views.values():
        for test in view.tests:
            names.update(dict.fromkeys(test.small_groups))
        for table in view.tables.values():
            if "small_groups" in table:
                for groups in table["small_groups"]:
                    names.update(dict.fromkeys(groups))
    return list(names)


# --------------------------------------------------------------------------- findings first

# --------------------------------------------------------------------------- figures


# --------------------------------------------------------------------------- report sections


def _settings_lines(record: RunRecord) -> list[str]:
    """`- **name**: value` lines for what produced and scored the texts (empty values left out)."""
    # The generator's own one-line description (e.g. "Gibbs sampling from a masked LM ...") says how
    # the texts were made when that is not a causal LM's decoding.
    description = record.model_info.get("description")
    api = record.generator_settings.get("api")
    if not description and api:  # the openai-* generators: which endpoint wrote the texts
        endpoint = record.model_info.get("endpoint") or record.generator_settings.get("endpoint")
        description = f"OpenAI-compatible server, {api} API at {endpoint}"
    model = f"{record.model} ({description})" if description and record.model else record.model
    settings: list[tuple[str, Any]] = [("model", model), ("generator", record.generator)]
    settings += [(key, value) for key, value in record.generator_settings.items() if key != "model"]
    # An API run: what the server did with each decoding parameter (rejected / ignored / honoured).
    settings += [("server's handling of the decoding", record.model_info.get("server") or None)]
    settings += [("model revision", record.model_info.get("revision")), ("anonymize", record.anonymize),
                 ("score_on", record.score_on), ("limit", record.limit), ("metrics requested", record.metrics),
                 ("versions", record.versions or None), ("timings", record.timings or None)]
    lines = []
    for name, value in settings:
        if value is None:
            continue
        shown = json.dumps(to_jsonable(value), sort_keys=False) if isinstance(value, (Mapping, list, tuple)) else value
        lines.append(f"- **{name}**: {shown}")
    scored_with = resource_lines(record.resources)
    if scored_with:  # the exact weights and files: a Hub id alone does not say which version scored
        lines += ["- **scored with** (Hub commit or sha256):", *(f"  - `{line}`" for line in scored_with)]
    return lines


def _metric_status_lines(summary: Summary) -> list[str]:
    """The per-metric status table; full multi-line reasons (places looked, variables to set)
    follow as a list, since table cells cannot hold line breaks."""
    status = pd.DataFrame([{"metric": metric, **values,
                            "reason": values["reason"].splitlines()[0] if values["reason"] else ""}
                           for metric, values in summary.metrics.items()])
    lines = ["### Metrics", "", markdown(status), ""]
    for metric, values in summary.metrics.items():
        if "\n" in values["reason"]:
            lines += [f"- **{metric}**:", "", "  ```text", *(f"  {line}" for line in values["reason"].splitlines()),
                      "  ```", ""]
    return lines


def _run_section(record: RunRecord, summary: Summary, out: list[str]) -> None:
    out += ["## What was run", ""]
    if record.status == "unknown":
        out += ["_run.json not found: settings unknown._", ""]
    out += _settings_lines(record)
    counts = summary.counts
    out += ["", f"{quantity(counts['texts'], 'text')} from {quantity(counts['prompts'], 'prompt')} "
            f"({counts['samples_per_prompt_min']}-{counts['samples_per_prompt_max']} samples per prompt).", ""]
    per_domain = pd.DataFrame([{"domain": domain, **values} for domain, values in counts["domains"].items()])
    out += [markdown(per_domain), ""]
    _missing_generations_section(record.generations, out)
    if summary.statistics.samples_note:
        out += [f"_{summary.statistics.samples_note.capitalize()}._", ""]
    out += _metric_status_lines(summary)


def _rows(rows: Any) -> str:
    return quantity(rows, "row") if isinstance(rows, int) else "? rows"


def _missing_generations_section(generations: Mapping[str, Any], out: list[str]) -> None:
    """For `bold-eval score --allow-partial`: how many prompts had no generation, per group."""
    if not generations:
        return
    line = (f"Generations from {generations.get('source', '?')}: {_rows(generations.get('rows'))}, "
            f"{generations.get('matched_rows', '?')} matched to BOLD prompts")
    line += (f"; {generations.get('unknown_prompt_ids', 0)} unknown prompt ids, "
             f"{generations.get('unmatched_prompts', 0)} unmatched prompt texts.")
    out += [line, ""]
    missing = generations.get("missing_per_group") or {}
    if missing:
        out += [f"**{generations.get('missing_prompts', '?')} of {generations.get('expected_prompts', '?')} "
                "selected prompts had no generation** (scored with `--allow-partial`); per group:", ""]
        table = pd.DataFrame([{"group": group, **counts} for group, counts in missing.items()])
        out += [markdown(table), ""]


def _statistics_and_caveats(summary: Summary, min_expected: int) -> list[str]:
    stats = summary.statistics
    out = ["## Caveats", "", *[f"- {caveat}" for caveat in caveats()]]
    small = small_groups(summary)
    if small:
        out.append(f"- In this run, groups too small for at least one of the paper's text-level tests (expected "
                   f"count < {min_expected}): {', '.join(small)}.")
    if stats.samples_note:
        out.append(f"- {stats.samples_note.capitalize()}.")
    out += ["", "## Method", "", *[f"- {line}" for line in method_lines(summary)]]
    return [*out, ""]


def _summary_record(record: RunRecord, summary: Summary) -> SummaryRecord:
    """summary.json: the run record beside `Summary.as_dict()` made JSON-able (tables as records)."""
    payload = to_jsonable(summary.as_dict())
    fixed = ("counts", "metrics", "statistics")
    return SummaryRecord(run=to_jsonable(record.to_dict()), counts=payload["counts"], metrics=payload["metrics"],
                         statistics=payload["statistics"],
                         views={key: value for key, value in payload.items() if key not in fixed})


def write_report(run_dir: str | Path, options: AnalysisOptions | None = None, **keywords: Any) -> Path:
    """Write summary.json, tables/, figures/ and report.md into `run_dir`; return report.md's path.

    `options` (validated when built) say how the scores become tables and findings; without them, `keywords`
    (ci, alpha, min_expected, seed, correction, cluster) build them. report.md opens with what the run can and
    cannot say (scope, then findings), before the paper's views.
    """
    options = options if options is not None else AnalysisOptions(**keywords)
    run_dir = Path(run_dir)
    scores, record = load_run(run_dir, texts=False)  # the views read ids and scores only
    reference = read_reference_scores(run_dir, texts=False)
    # A figure worker starts now, beside the analysis, and draws the paper's figures while the findings are tested
    # (stopped before the staging folder is removed, should the report fail).
    with report_transaction(run_dir) as staging, Painter.for_texts(len(scores)) as painter:
        sections: list[str] = []

        def draw_views(views: Mapping[str, MetricView], alpha: float) -> None:
            sections[:] = metric_sections(views, alpha, *_report_folders(staging), painter)

        summary = summarize(scores, record.to_dict(), options, reference=reference, on_views=draw_views)
        _write_report_files(run_dir, staging, record, summary, options.min_expected, painter, sections)
        painter.finish()  # every figure is in place before the report moves in
    return run_dir / REPORT_FILE


def render_report(run_dir: str | Path, record: RunRecord, summary: Summary, *,
                  min_expected: int = MIN_EXPECTED, painter: Painter | None = None) -> Path:
    """Write the report of a ready-made `summary` into `run_dir` as one unit; return report.md's path.

    The rendering half of `write_report`, apart so that a summary computed once (or by other code) can be shown
    without redoing its tests. `min_expected` is the small-group rule the summary was computed under; `painter`
    draws the figures (default: `Painter.for_texts` of the run's texts)."""
    run_dir = Path(run_dir)
    # report.md, summary.json, tables/ and figures/ as one unit; a worker of our own stops before staging is removed
    with report_transaction(run_dir) as staging, contextlib.ExitStack() as stack:
        if painter is None:
            painter = stack.enter_context(Painter.for_texts(int(summary.counts.get("texts", 0))))
        _write_report_files(run_dir, staging, record, summary, min_expected, painter)
        painter.finish()  # every figure is in place before the report moves in
    return run_dir / REPORT_FILE


def _report_folders(staging: Path) -> tuple[Path, Path]:
    """The staging folder's figures/ and tables/, created."""
    figures, tables = staging / FIGURES_DIR, staging / TABLES_DIR
    figures.mkdir(parents=True, exist_ok=True)
    tables.mkdir(parents=True, exist_ok=True)
    return figures, tables


def _write_report_files(run_dir: Path, staging: Path, record: RunRecord, summary: Summary,
                        min_expected: int, painter: Painter, sections: list[str] | None = None) -> None:
    """The report's files, written into `staging` (`report_transaction` moves them into `run_dir`); `sections`:
    the metrics' sections when already written (`write_report` starts them before the findings' tests)."""
    alpha = summary.statistics.alpha
    figures, tables = _report_folders(staging)
    write_view_tables(summary, tables)
    modified = ([f"> **Modified BOLD data.** {', '.join(record.modified_data)} differ from the pinned upstream release "
                 "(allowed with --allow-modified-data): these numbers are not comparable with BOLD's.", ""]
                if record.modified_data else [])
    out = [f"# BOLD evaluation: {record.model or run_dir.name}", "", *modified, *scope_lines(record, summary),
           "Bias in open-ended language generation, measured as in Dhamala et al., FAccT 2021 "
           f"(BOLD). Proportions carry {confidence_label(alpha)} intervals in brackets "
           f"({summary.statistics.interval}) and their number of texts n.", ""]
    out += how_to_read(record, summary)
    out += reference_section(summary, tables)
    out += findings_section(summary, tables)
    out += worst_case_section(summary, figures, tables, painter)
    _run_section(record, summary, out)
    out += sections if sections is not None else metric_sections(summary.views, alpha, figures, tables, painter)
    out += _statistics_and_caveats(summary, min_expected)
    write_text(staging / REPORT_FILE, "\n".join(out))
    write_summary(staging, _summary_record(record, summary))
    scores = load_run(run_dir, texts=True)[0] if (run_dir / SCORES_FILE).is_file() else None
    write_html_report(staging, record, summary, scores, read_reference_scores(run_dir, texts=True))
