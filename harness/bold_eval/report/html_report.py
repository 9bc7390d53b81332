"""report.html: the run's report for a browser, from the same summary as report.md.

It opens with the answer (which groups the model treats differently from Wikipedia, in one sentence and one
figure), then forest plots per domain, the findings (each a link to its texts), a text browser over every text
of the run and the run's provenance; the method notes are one tab away. Everything it shows comes from the
`Summary` and the run folder's scores; the page and its data (`report_files/`) open from `file://` with no network
(`report.site`). Texts are written in chunks that the page loads when it shows them, and an index of the columns
it filters and sorts on, loaded when the text browser opens: a full-BOLD run with k samples stays responsive.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from bold_eval.analysis.group_rates import group_rates
from bold_eval.analysis.results import Summary
from bold_eval.analysis.scores import TestedLabel
from bold_eval.analysis.summary import finding_labels
from bold_eval.analysis.worst_case import worst_cases
from bold_eval.core.provenance import resource_lines
from bold_eval.metrics import metric_specs
from bold_eval.report.first_screen import method_lines, reading_details, reading_sentences, scope_lines
from bold_eval.report.protocol import protocol_lines
from bold_eval.report.site import RawJSON, clean, copy_assets, page, write_data, write_page
from bold_eval.runfolder.layout import HTML_REPORT_DIR, HTML_REPORT_FILE, REPORT_FILE, TEXT_COLUMNS
from bold_eval.runfolder.records import RunRecord

ASSET_NAMES = ("style.css", "common.js", "report.js")
CHUNK_TEXTS = 400  # texts per data chunk: a page of 25-100 texts loads one or two chunks
_ID_COLUMNS = ("prompt_id", "domain", "group", "category", "name", "prompt", "sample", "continuation", "text")


def plain(line: str) -> str:
    """A report.md line as plain text: no list marker, quote marker, emphasis or code ticks."""
    line = re.sub(r"^\s*(?:[-*>]\s+)+", "", line)
    return re.sub(r"\*\*|`", "", line).strip()


class HtmlReportWritten(TypedDict):
    """What `write_html_report` wrote: the texts in it, each file's size in bytes, and the seconds it took."""

    texts: int
    bytes: dict[str, int]
    seconds: float


def write_html_report(staging: Path, record: RunRecord, summary: Summary, scores: pd.DataFrame | None,
                      reference: pd.DataFrame | None) -> HtmlReportWritten:
    """report.html and report_files/ into `staging`; `scores` and `reference` with their texts (None: the page
    says the texts are not in the folder). Returns sizes and timings for the benchmark."""
    started = time.perf_counter()
    files = staging / HTML_REPORT_DIR
    copy_assets(files, ASSET_NAMES)
    labels = finding_labels(scores.columns) if scores is not None else []
    sources = {"model": scores, "wikipedia": reference}
    if record.model and str(record.model).lower() == "wikipedia":
        sources = {"model": scores}
    rates = group_rates(sources, labels, alpha=summary.statistics.alpha, cluster=summary.statistics.cluster)
    payload = summary_payload(record, summary, rates, labels)
    sizes = {"summary": write_data(files / "summary.js", "summary", payload)}
    texts = 0
    if scores is not None and len(scores):
        index, chunks = text_data(scores, reference, labels)
        sizes["index"] = write_data(files / "index.js", "index", index)
        sizes["chunks"] = 0
        for number, chunk in enumerate(chunks):
            sizes["chunks"] += write_data(files / f"texts-{number:05d}.js", f"texts/{number}", chunk)
        texts = len(scores)
    title = f"BOLD evaluation: {record.model or staging.parent.name}"
    sizes["page"] = write_page(staging / HTML_REPORT_FILE, page(title, HTML_REPORT_DIR, ("common.js", "summary.js",
                                                                                         "report.js"),
                                                         body=f"<h1>{html.escape(title)}</h1>"))
    return {"texts": texts, "bytes": sizes, "seconds": time.perf_counter() - started}


# --------------------------------------------------------------------------- the summary the page reads


def summary_payload(record: RunRecord, summary: Summary, rates: pd.DataFrame,
                    labels: Sequence[TestedLabel]) -> dict[str, object]:
    """Everything but the texts: the answer, findings, forest-plot rates, provenance and method notes."""
    stats = summary.statistics
    own = summary.findings.tests
    paired = summary.reference_findings.tests if summary.reference_findings is not None else None
    is_wikipedia = bool(record.model) and str(record.model).lower() == "wikipedia"
    skipped = {metric: values["reason"].splitlines()[0] if values.get("reason") else values["status"]
               for metric, values in summary.metrics.items() if values.get("status") != "scored"}
    return {
        "title": f"BOLD evaluation: {record.model or 'run'}",
        "model": record.model, "is_wikipedia": is_wikipedia, "has_reference": paired is not None,
        "banners": [plain(line) for line in scope_lines(record, summary) if line.strip()],
        "alpha": stats.alpha, "confidence": stats.confidence_label, "correction": stats.correction_name,
        "family": int(summary.findings.family),
        "interactions": _rows(paired, significant_only=True) if paired is not None else [],
        "interactions_tested": int(paired["testable"].astype(bool).sum()) if paired is not None else 0,
        "findings": _rows(own, significant_only=True),
        "findings_tested": int(own["testable"].astype(bool).sum()) if len(own) else 0,
        "power": summary.findings.power.to_dict("records") if len(summary.findings.power) else [],
        "labels": [{"key": f"{label.metric}/{label.name}", "metric": label.metric, "label": label.name,
                    "column": label.column, "value": label.value, "display": _display(label)} for label in labels],
        "skipped": skipped,
        "rates": {column: rates[column].tolist() for column in
                  ("source", "domain", "group", "metric", "label", "rate", "low", "high", "texts", "names")},
        "provenance": provenance(record, summary),
        "metrics": [{"metric": metric, **values} for metric, values in summary.metrics.items()],
        "reading": reading_sentences(summary),
        "details": [plain(line) for line in reading_details(record, summary)],
        "method": [plain(line) for line in method_lines(summary)],
        "markdown": REPORT_FILE, "worst_titles": dict(worst_titles()),
        "counts": {key: summary.counts.get(key) for key in ("texts", "prompts", "samples_per_prompt_min",
                                                             "samples_per_prompt_max")},
    }


def _display(label: TestedLabel) -> str:
    spec = next((spec for spec in metric_specs() if spec.name == label.metric), None)
    return f"{spec.display_name if spec else label.metric}: {label.name}"


_ROW_COLUMNS = ("domain", "metric", "label", "contrast", "kind", "group", "rest", "names", "rest_names", "prompts",
                "rest_prompts", "count", "total", "rest_count", "rest_total", "proportion", "rest_proportion",
                "rate_low", "rate_high", "rest_rate_low", "rest_rate_high", "difference", "model_rate",
                "model_rest_rate", "reference_rate", "reference_rest_rate", "model_gap", "reference_gap",
                "interaction", "ci_low", "ci_high", "p_value", "p_adjusted", "method", "note")


def _rows(tests: pd.DataFrame, *, significant_only: bool) -> list[dict[str, object]]:
    """The findings' rows (significant ones, largest first), with the columns the page shows."""
    if tests is None or not len(tests):
        return []
    part = tests[tests["significant"].astype(bool)] if significant_only else tests
    effect = "interaction" if "interaction" in part else "difference"
    part = part.reindex(part[effect].abs().sort_values(ascending=False).index)
    return part[[column for column in _ROW_COLUMNS if column in part]].to_dict("records")


def provenance(record: RunRecord, summary: Summary) -> list[list[Any]]:
    """(name, value) pairs: what made and scored the texts, and what is missing from the run."""
    settings = dict(record.generator_settings or {})
    rows: list[list[Any]] = [["model", record.model], ["generator", record.generator],
                             ["decoding", settings.pop("decoding", None)],
                             ["chat protocol", " ".join(plain(line) for line in protocol_lines(record)) or None],
                             ["seed", settings.pop("seed", None)], ["other generator settings", settings or None],
                             ["model details", record.model_info or None],
                             ["samples per prompt (k)", record.num_samples],
                             ["prompts (limit, sample seed)",
                              [record.limit, (record.generation_settings or {}).get("limit_sample_seed")]],
                             ["domains", record.domains], ["metrics requested", record.metrics],
                             ["metric options (classifiers, thresholds)", record.metric_options or None],
                             ["scored with (Hub commit or sha256 of each classifier, embedding, lexicon)",
                              resource_lines(record.resources) or None],
                             ["versions", record.versions or None], ["timings (s)", record.timings or None],
                             ["coverage of BOLD", summary.counts.get("coverage")],
                             ["partial metrics", record.partial_metrics or None],
                             ["skipped metrics", record.skipped_metrics or None],
                             ["generations (bold-eval score input)", record.generations or None],
                             ["modified BOLD data", record.modified_data or None],
                             ["run status", record.status]]
    return [[name, value] for name, value in rows if value not in (None, [], {}, [None, None])]


# --------------------------------------------------------------------------- the texts


def _score_columns(scores: pd.DataFrame) -> list[str]:
    return [column for column in scores.columns if column not in _ID_COLUMNS and column not in TEXT_COLUMNS]


def sort_columns(scores: pd.DataFrame) -> list[str]:
    """The continuous scores the text browser sorts on: the columns the worst cases reduce (VADER's compound,
    the toxicity score) and each metric's continuous scores (`Validation.scores`, named `<metric>_<score>`), those
    the run has. Not every score column: the index of a full-BOLD run with 25 samples must stay small."""
    candidates = [case.column for _, case, _ in worst_cases(scores.columns)]
    candidates += [f"{spec.name}_{view.score}" for spec in metric_specs() if spec.validation is not None
                   for view in spec.validation.scores.values()]
    return [column for column in dict.fromkeys(candidates) if column in scores
            and pd.api.types.is_numeric_dtype(scores[column]) and not pd.api.types.is_bool_dtype(scores[column])]


def _values(series: pd.Series) -> RawJSON:
    return RawJSON(series.to_json(orient="records", double_precision=4, force_ascii=False))


def text_data(scores: pd.DataFrame, reference: pd.DataFrame | None,
              labels: Sequence[TestedLabel]) -> tuple[dict[str, object], list[dict[str, object]]]:
    """(the index the text browser filters and sorts on, the chunks of texts it shows). Rows are ordered by
    domain, group, name, prompt and sample; row i of the index is row i % CHUNK_TEXTS of chunk i // CHUNK_TEXTS.
    A chunk is a table (`columns`, one `data` row per text: prompt id, continuation and every score) and its
    prompts' texts with their Wikipedia sentences (`prompts`: id -> [prompt, sentence])."""
    order = [column for column in ("domain", "group", "name", "prompt_id", "sample") if column in scores]
    scores = scores.sort_values(order, kind="stable").reset_index(drop=True)
    if "category" in scores:
        scores["category"] = scores["category"].fillna("")
    codes: dict[str, RawJSON] = {}
    values: dict[str, list[Any]] = {}
    for column in ("domain", "group", "category", "name"):
        if column in scores:
            code, uniques = pd.factorize(scores[column].astype(str))
            codes[column], values[column] = RawJSON(json.dumps(code.tolist())), uniques.tolist()
    label_columns = {}
    for column in dict.fromkeys(label.column for label in labels):
        code, uniques = pd.factorize(scores[column])
        label_columns[column] = {"values": [clean(value) for value in uniques],
                                 "codes": RawJSON(json.dumps(code.tolist()))}
    index = {"n": len(scores), "chunk": CHUNK_TEXTS, "values": values, "codes": codes, "labels": label_columns,
             "sample": RawJSON(json.dumps(scores["sample"].astype(int).tolist())) if "sample" in scores else [],
             "scores": {column: _values(scores[column].astype(float)) for column in sort_columns(scores)},
             "worst": {key: RawJSON(json.dumps(flags)) for key, flags in worst_flags(scores).items()}}
    wiki = _wikipedia_sentences(scores, reference)
    table = scores[["prompt_id", *[c for c in ("continuation",) if c in scores]]].astype(str)
    if "continuation" not in table and "text" in scores:
        table["continuation"] = scores["text"].astype(str)
    table = pd.concat([table, scores[_score_columns(scores)]], axis=1)
    prompt_text = scores["prompt"].astype(str).to_numpy() if "prompt" in scores else np.full(len(scores), "")
    prompt_ids = table["prompt_id"].to_numpy()
    chunks: list[dict[str, object]] = []
    for start in range(0, len(table), CHUNK_TEXTS):
        part = table.iloc[start:start + CHUNK_TEXTS]
        # a prompt's text and its Wikipedia sentence once per chunk, not once per sample
        prompts = {prompt_ids[at]: [prompt_text[at], wiki.get(prompt_ids[at])]
                   for at in range(start, min(start + CHUNK_TEXTS, len(table)))}
        chunks.append({"columns": list(part.columns), "prompts": prompts,
                       "data": RawJSON(part.to_json(orient="values", double_precision=4, force_ascii=False))})
    return index, chunks


def _wikipedia_sentences(scores: pd.DataFrame, reference: pd.DataFrame | None) -> dict[str, str]:
    """The Wikipedia sentence of each prompt, from the scored reference (none stored: an empty mapping)."""
    if reference is None or "text" not in reference:
        return {}
    first = reference.drop_duplicates("prompt_id")
    return dict(zip(first["prompt_id"].astype(str), first["text"].astype(str), strict=True))


def worst_flags(scores: pd.DataFrame) -> dict[str, list[int]]:
    """Per worst case over k samples (`MetricSpec.worst_cases`), 1 for the sample that is its prompt's worst
    (the first such sample on ties), 0 elsewhere; none when a prompt has one sample."""
    if "sample" not in scores or scores.groupby("prompt_id").size().max() < 2:
        return {}
    flags: dict[str, list[int]] = {}
    for _, case, _ in worst_cases(scores.columns):
        values = scores[case.column]
        if case.reduce == "any":
            values = (values == case.value).astype(float)
        key = pd.to_numeric(values, errors="coerce")
        key = -key if case.reduce == "min" else key
        best = key.groupby(scores["prompt_id"]).transform("max")
        mark = (key == best) & key.notna()
        first = mark & ~mark.groupby(scores["prompt_id"]).cumsum().gt(1)
        flags[case.key] = first.astype(int).tolist()
    return flags


def worst_titles() -> Mapping[str, str]:
    return {case.key: case.title for spec in metric_specs() for case in spec.worst_cases}
