"""`bold-eval publish-results`: a run's summary as model-index results in a model repo's card."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from huggingface_hub import (
    EvalResult,
    ModelCard,
)
from huggingface_hub.utils import HFValidationError, validate_repo_id

from bold_eval.analysis.results import Coverage
from bold_eval.core.options import DEFAULT_RESULTS_DATASET
from bold_eval.core.provenance import resource_lines
from bold_eval.core.storage import storage_guard
from bold_eval.core.version import __version__
from bold_eval.hub.staging import PublishError, fresh_folder
from bold_eval.hub.upload import hub_client
from bold_eval.metrics import metric_specs
from bold_eval.metrics.spec import CardRow, CardShares
from bold_eval.runfolder.json_files import read_summary

RESULTS_SOURCE = "bold-eval"


# Headline numbers per domain for a model card (the full tables stay in summary.json / report.md) come from each
# metric's spec: `MetricPresentation.card_rows` (a pooled share and, when the report's largest gap for the metric
# falls on its label, that gap between two groups) and `MetricPresentation.card_shares` (shares per method of one
# domain).


class PartialRunError(PublishError):
    """The run covers only part of BOLD; its numbers are not the benchmark's (--allow-partial-run)."""


def run_coverage(summary: Mapping[str, Any]) -> Coverage:
    """The run's coverage of BOLD (`bold_eval.analysis.scores.coverage`), from summary.json's counts."""
    from bold_eval.analysis.scores import coverage

    counts: Any = summary.get("counts") or {}
    return counts.get("coverage") or coverage(counts)


def partial_run_reasons(summary: Mapping[str, Any]) -> list[str]:
    """Why a run is not a full BOLD run (empty when it is): --limit, prompts without a generation
    (`score --allow-partial`), domains missing or not complete."""
    run = summary.get("run") or {}
    reasons = []
    if run.get("limit") is not None:
        reasons.append(f"it was run with --limit {run['limit']} (a sample of each domain)")
    generations = run.get("generations") or {}
    if generations.get("missing_prompts"):
        reasons.append(f"{generations['missing_prompts']} selected prompts had no generation (scored with "
                       "--allow-partial)")
    coverage = run_coverage(summary)
    if coverage.get("missing_domains"):
        reasons.append(f"domains missing: {', '.join(coverage['missing_domains'])}")
    short = [f"{domain} {values['prompts']}/{values['bold_prompts']}" for domain, values in coverage["domains"].items()
             if domain in coverage.get("partial_domains", [])]
    if short:
        reasons.append(f"prompts missing in: {', '.join(short)}")
    return reasons


def _pooled(records: Sequence[Mapping[str, Any]], count_key: str) -> dict[str, tuple[int, int, int]]:
    """{domain: (count, texts, groups)} summed over a domain's per-group count/total rows."""
    by_domain: dict[str, list[int]] = {}
    for record in records:
        if float(record["total"]) > 0:
            sums = by_domain.setdefault(str(record["domain"]), [0, 0, 0])
            sums[0] += int(record[count_key])
            sums[1] += int(record["total"])
            sums[2] += 1
    return {domain: (count, total, groups) for domain, (count, total, groups) in by_domain.items()}


def summary_metrics(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Model-card rows from summary.json: {domain, metric_type, metric_name, value, args}.

    Per domain and card row of each metric (`MetricPresentation.card_rows`): the pooled `<x>_ratio` (a label's share,
    in the domains the metric scores), and the `<x>_gap`: the report's largest difference between two
    groups' proportions over the metric's labels (groups with ten names or more), published under the label it fell
    on; then the worst cases; then the shares per method of one domain (`MetricPresentation.card_shares`: gender
    polarity's male and female shares, Table 3). `args` carries the sample size (texts, groups) and the run's coverage
    of the domain, and for a gap its groups, sizes, interval and interval level. Metrics the run skipped are left out.
    """
    coverage = run_coverage(summary)
    gaps = {(gap["domain"], gap["metric"], gap["label"]): gap
            for gap in ((summary.get("findings") or {}).get("gaps") or []) if gap.get("gap") is not None}

    def covered(domain: str) -> dict[str, Any]:
        values = coverage["domains"].get(domain)
        share = values.get("share") if values else None
        return {"prompts": values.get("prompts") if values else None,
                "bold_prompts": values.get("bold_prompts") if values else None,
                "bold_coverage": None if share is None else round(share, 4)}

    rows: list[dict[str, Any]] = []
    for spec in metric_specs():
        for card in spec.presentation.card_rows:
            rows += _proportion_rows(summary, spec.name, card, gaps, covered)
    rows += _worst_case_rows(summary, covered)
    for spec in metric_specs():
        for shares in spec.presentation.card_shares:
            rows += _share_rows(summary, spec.name, shares, covered)
    return rows


def _view_table(summary: Mapping[str, Any], metric: str, table: str) -> list[dict[str, Any]]:
    """The records of one of a metric's view tables in summary.json (none when the metric was skipped)."""
    return ((summary.get(metric) or {}).get("tables") or {}).get(table) or []


def _proportion_rows(summary: Mapping[str, Any], metric: str, card: CardRow, gaps: Mapping[tuple, Any],
                     covered: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Per domain, a card row's pooled share and, when the report's largest gap fell on its label, that gap."""
    records = _view_table(summary, metric, card.table)
    if card.key is not None:
        records = [record for record in records if record.get(card.key) == card.value]
    rows = []
    for domain, (count, total, groups) in _pooled(records, card.count).items():
        rows.append({"domain": domain, "metric_type": f"{card.metric_type}_ratio",
                     "metric_name": f"{card.name}: share of texts (n={total})", "value": count / total,
                     "args": {"texts": total, "groups": groups, **covered(domain)}})
        gap = gaps.get((domain, metric, card.finding))
        # A gap without a value or interval (no eligible pair; a side with one name) is not published:
        # a number without its interval would be the kind of claim this tool refuses to print.
        if gap is not None and all(_finite(gap.get(key)) for key in ("gap", "ci_low", "ci_high")):
            rows.append({
                "domain": domain, "metric_type": f"{card.metric_type}_gap",
                "metric_name": f"{card.name}: largest gap between two groups, over the metric's labels "
                               f"(n={int(gap['total_high'])} and {int(gap['total_low'])})",
                "value": gap["gap"],
                "args": {"group_high": gap["group_high"], "texts_high": int(gap["total_high"]),
                         "group_low": gap["group_low"], "texts_low": int(gap["total_low"]),
                         "ci_low": round(gap["ci_low"], 6), "ci_high": round(gap["ci_high"], 6),
                         "interval_level": round(gap["interval_level"], 6),
                         "choices": int(gap["choices"]), "eligible_groups": int(gap["eligible_groups"]),
                         **covered(domain)}})
    return rows


def _share_rows(summary: Mapping[str, Any], metric: str, shares: CardShares,
                covered: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Per value of the table's `by` column (a method), the pooled share of each count column over its rows."""
    table = _view_table(summary, metric, shares.table)
    rows = []
    for value in shares.values:
        records = [record for record in table if record.get(shares.by) == value]
        total = sum(int(record["total"]) for record in records)
        if not total:
            continue
        display = records[0].get(f"{shares.by}_name", value)
        for count in shares.counts:
            fill = {"value": value, "count": count, "display": display, "total": total}
            rows.append({"domain": shares.domain, "metric_type": shares.metric_type.format(**fill),
                         "metric_name": shares.name.format(**fill),
                         "value": sum(int(record[count]) for record in records) / total,
                         "args": {"texts": total, "groups": len(records), **covered(shares.domain)}})
    return rows


def _worst_case_rows(summary: Mapping[str, Any], covered: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Per domain, each worst case over k samples (an addition to the paper; RealToxicityPrompts) with k, its
    prompts and names, and its interval over names. Depends on k: the metric type names it."""
    records = (((summary.get("worst_case") or {}).get("tables") or {}).get("worst_case_domain")) or []
    rows = []
    for record in records:
        if not all(_finite(record.get(key)) for key in ("value", "ci_low", "ci_high")):
            continue
        k = int(record["k"])
        rows.append({"domain": record["domain"], "metric_type": f"{record['measure']}_k{k}",
                     "metric_name": f"{record['title']}, worst of k={k} samples per prompt "
                                    f"(n={int(record['prompts'])} prompt{'' if int(record['prompts']) == 1 else 's'})",
                     "value": record["value"],
                     "args": {"k": k, "k_min": int(record["k_min"]), "prompts_scored": int(record["prompts"]),
                              "names": int(record["names"]), "groups": int(record["groups"]),
                              "ci_low": round(record["ci_low"], 6), "ci_high": round(record["ci_high"], 6),
                              "interval": (summary.get("worst_case") or {}).get("interval"),
                              **covered(record["domain"])}})
    return rows


def _finite(value: Any) -> bool:
    """A real number (not None, NaN or infinite), as JSON summaries carry them."""
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def results_from_summary(
    summary: Mapping[str, Any], *, dataset_id: str = DEFAULT_RESULTS_DATASET
) -> list[EvalResult]:
    """The model-index entries of one run: one `EvalResult` per row of `summary_metrics`, its sample
    size and coverage of BOLD in `metric_args` (the model-index allows free-form args per metric)."""
    return [
        EvalResult(
            task_type="text-generation",
            task_name="Bias in open-ended generation (BOLD)",
            dataset_type=dataset_id,
            dataset_name=f"BOLD ({row['domain']})",
            dataset_config=row["domain"],
            dataset_split="test",
            metric_type=row["metric_type"],
            metric_name=row["metric_name"],
            metric_value=round(float(row["value"]), 6),
            metric_args=row["args"],
            source_name=RESULTS_SOURCE,
            source_url="https://doi.org/10.1145/3442188.3445924",
        )
        for row in summary_metrics(summary)
    ]


CARD_SECTION_START = "<!-- bold-eval results: start -->"


CARD_SECTION_END = "<!-- bold-eval results: end -->"


def card_section(summary: Mapping[str, Any]) -> str:
    """The card's text about the published run: model, revision, decoding, seed, bold-eval version and
    coverage of BOLD, from the typed run record in summary.json (`runfolder.records.RunRecord`)."""
    from bold_eval.runfolder.layout import SCHEMA_VERSION
    from bold_eval.runfolder.records import RunRecord

    run = dict(summary.get("run") or {})
    if run.get("schema_version") is not None:  # a 0.1 run.json was already mapped onto the record
        run["schema_version"] = SCHEMA_VERSION
    record = RunRecord.from_dict(run)
    settings = record.generator_settings
    revision = record.model_info.get("revision") or settings.get("revision")
    decoding = settings.get("decoding")
    coverage = run_coverage(summary)
    version = (record.versions or {}).get("bold_eval") or (record.versions or {}).get("bold-eval")
    lines = [CARD_SECTION_START, "## BOLD evaluation (bold-eval)", "",
             "Bias in open-ended generation measured as in Dhamala et al., FAccT 2021; the model-index holds the "
             "pooled shares per domain, each with its number of texts and the run's coverage of BOLD.", "",
             f"- model: {record.model or 'unknown'}",
             f"- revision: {revision or 'not recorded'}",
             f"- generator: {record.generator or 'not recorded'}",
             f"- decoding: {json.dumps(decoding, sort_keys=True) if decoding else 'not recorded'}",
             f"- seed: {settings.get('seed', 'not recorded')}",
             f"- samples per prompt: {record.num_samples or 1}",
             f"- anonymize: {record.anonymize}, score_on: {record.score_on}",
             f"- coverage: {coverage['prompts']:,} of BOLD's {coverage['bold_prompts']:,} prompts "
             f"({coverage['share']:.1%})",
             f"- bold-eval version: {version or 'not recorded'} (published with bold-eval {__version__})"]
    scored_with = resource_lines(record.resources)
    lines += (["- scored with (Hub commit or sha256):", *(f"  - `{line}`" for line in scored_with)] if scored_with
              else ["- scored with: classifier and lexicon versions not recorded"])
    reasons = partial_run_reasons(summary)
    if reasons:
        lines.append(f"- **partial run**: {'; '.join(reasons)}. These numbers describe a sample, not BOLD.")
    return "\n".join([*lines, CARD_SECTION_END])


def _with_section(text: str, section: str) -> str:
    """Card text with the bold-eval section replaced, or appended when absent."""
    if CARD_SECTION_START in text and CARD_SECTION_END in text:
        before, _, rest = text.partition(CARD_SECTION_START)
        _, _, after = rest.partition(CARD_SECTION_END)
        return before + section + after
    return text.rstrip("\n") + "\n\n" + section + "\n"


def update_card(
    card_text: str | None, results: Sequence[EvalResult], *, model_name: str, section: str | None = None
) -> ModelCard:
    """Add `results` to a model card's model-index, replacing earlier results for the same
    task, dataset, config, split and metric and keeping everything else (other evaluations, text).
    `section` (`card_section`) replaces the card's earlier bold-eval section, or is appended."""
    card = ModelCard(card_text) if card_text else ModelCard(_NEW_CARD.format(model_name=model_name))
    if section is not None:
        card.text = _with_section(card.text, section)
    data = card.data
    new_keys = {_result_key(result) for result in results}
    kept = [result for result in (data.eval_results or []) if _result_key(result) not in new_keys]
    data.eval_results = kept + list(results)
    if not data.model_name:
        data.model_name = model_name
    return card


_NEW_CARD = """---
{{}}
---

# {model_name}

BOLD results (Dhamala et al., FAccT 2021) added by bold-eval; see the model-index above.
"""


def _result_key(result: EvalResult) -> tuple:
    return (result.task_type, result.dataset_type, result.dataset_config, result.dataset_split, result.metric_type)


def _read_summary(run_dir: Path) -> dict[str, Any]:
    try:
        return read_summary(run_dir).to_dict()
    except FileNotFoundError as error:
        raise PublishError(str(error)) from None


def _current_card(client: Any, repo_id: str) -> str | None:
    """The model repo's README.md, or None when the repo has none yet."""
    from huggingface_hub.errors import EntryNotFoundError

    try:
        path = client.hf_hub_download(repo_id, "README.md", repo_type="model")
    except EntryNotFoundError:
        return None
    return Path(path).read_text(encoding="utf-8")


def _check_model_repo_id(repo_id: str) -> None:
    """A model repo id the Hub accepts, with a namespace (NAMESPACE/MODEL)."""
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise PublishError(f"invalid model repo id {repo_id!r}: {error}") from error
    if "/" not in repo_id:
        raise PublishError(f"--repo must be NAMESPACE/MODEL, got {repo_id!r}")


def _publishable_summary(run_dir: Path, allow_partial_run: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """The run's summary.json; a partial run is refused unless `allow_partial_run` (then it is logged)."""
    summary = _read_summary(run_dir)
    reasons = partial_run_reasons(summary)
    if reasons and not allow_partial_run:
        raise PartialRunError(
            f"{run_dir} is a partial run: {'; '.join(reasons)}. Its numbers describe a sample, not BOLD, and "
            "a model card reader could not tell. Publish a full run, or pass --allow-partial-run to publish "
            "it anyway with these reasons stated on the card.")
    if reasons:
        log(f"WARNING: publishing a partial run ({'; '.join(reasons)}); the card says so")
    return summary


def _starting_card(card: str | Path | None, dry_run: str | Path | None, client: Any, repo_id: str,
                   log: Callable[[str], None]) -> str | None:
    """The card text to update: `card` if given, else the repo's current card (a dry run: a new card)."""
    if card is not None:
        return Path(card).read_text(encoding="utf-8")
    if dry_run is None:
        return _current_card(client, repo_id)
    log("dry run without --card: starting from a new model card")
    return None


def publish_results(
    run_dir: str | Path,
    repo_id: str,
    *,
    dry_run: str | Path | None = None,
    card: str | Path | None = None,
    dataset_id: str = DEFAULT_RESULTS_DATASET,
    allow_partial_run: bool = False,
    client: Any | None = None,
    log: Callable[[str], None] = print,
) -> ModelCard:
    """Add a run's summary to the model-index of `repo_id`'s card and upload the card.

    Refuses a partial run (`partial_run_reasons`: --limit, missing prompts, not all five domains in
    full) unless `allow_partial_run`, which publishes it with the reasons in the card. The card updated
    is `card` (a local README.md) if given, else the repo's current one (none: a new card). With
    `dry_run`, the updated card is written to `dry_run/README.md` instead.
    """
    _check_model_repo_id(repo_id)
    run_dir = Path(run_dir)
    summary = _publishable_summary(run_dir, allow_partial_run, log)
    results = results_from_summary(summary, dataset_id=dataset_id)
    if not results:
        raise PublishError(f"{run_dir / 'summary.json'} holds no scored metric to publish")
    if dry_run is None:
        client = client if client is not None else hub_client()
    card_text = _starting_card(card, dry_run, client, repo_id, log)
    updated = update_card(card_text, results, model_name=repo_id.split("/", 1)[1], section=card_section(summary))
    if dry_run is not None:
        folder = fresh_folder(Path(dry_run))
        with storage_guard(folder / "README.md"):
            updated.save(folder / "README.md")
        log(f"would update the card of model {repo_id} with {len(results)} results: {folder / 'README.md'}")
        return updated
    assert client is not None  # made above unless dry_run
    client.upload_file(
        path_or_fileobj=str(updated).encode("utf-8"),
        path_in_repo="README.md",
        repo_id=repo_id,
        repo_type="model",
        commit_message=f"Add BOLD results (bold-eval {__version__})",
    )
    log(f"added {len(results)} BOLD results to the card of model {repo_id}")
    return updated
