"""Publish BOLD to the Hugging Face Hub: the dataset repo, one Space per metric, run results.

`stage_*` functions build exactly the folders that would be uploaded (what `--dry-run DIR`
keeps); `upload_staged` and `publish_results` send them with `huggingface_hub.HfApi`
(`create_repo`, `upload_folder`, `upload_file`). The Hub client is made in one place,
`hub_client`, which reads the token from `HF_TOKEN` or the saved login (`hf auth login`) and hands
it to `HfApi` only: it is never printed, logged or written. Tests inject a fake client there.

The metric Spaces vendor the part of `bold_eval` their module script imports (`bold_eval/` next
to `app.py`): bold-eval is not on PyPI, and a git URL requirement would tie the Space to a
repository address that can move. `requirements.txt` then lists the third-party packages that
the script and the vendored files import, with the version bounds bold-eval declares.
Outside the Space, `evaluate.load("NS/<metric>")` downloads only the module script, which
imports `bold_eval`: users need `pip install bold-eval` (from PyPI once released, or from a
checkout until then); evaluate's own ImportError names the package when it is missing.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import math
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import (
    DatasetCard,
    EvalResult,
    HfApi,
    ModelCard,
    get_token,
    metadata_load,
)
from huggingface_hub.utils import HFValidationError, validate_repo_id
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bold_eval.core.errors import UserError
from bold_eval.core.paths import METRIC_NAMES, PACKAGE_DIR, metric_module_dir
from bold_eval.core.version import __version__
from bold_eval.runfolder import read_summary

DATASET_REPO_NAME = "bold"
# The files of an evaluate module folder (metrics/<name>/), all uploaded to its Space.
MODULE_FILES = ("{name}.py", "README.md", "app.py", "requirements.txt")
# What `evaluate` and the Hub need in a module card's YAML header (like HF's own measurements).
SPACE_CARD_KEYS = ("title", "sdk", "app_file", "tags")
# The BOLD dataset of the paper's authors on the Hub, the default `dataset_type` of published results.
DEFAULT_RESULTS_DATASET = "AlexaAI/bold"
RESULTS_SOURCE = "bold-eval"


class PublishError(UserError, RuntimeError):
    """A staging or upload step cannot go on (bad namespace, missing file, no token)."""


@dataclass(frozen=True)
class StagedRepo:
    """One Hub repository and the local folder whose contents become its files."""

    repo_id: str
    repo_type: str  # "dataset" or "space"
    folder: Path
    space_sdk: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "folder": str(self.folder)}


# ---------------------------------------------------------------- names and folders


def repo_id_in(namespace: str, name: str) -> str:
    """`namespace/name`, checked with the Hub's own rules so a typo fails before any upload."""
    if not namespace or "/" in namespace:
        raise PublishError(f"namespace must be a user or organisation name without '/', got {namespace!r}")
    repo_id = f"{namespace}/{name}"
    # The Hub allows 1 to 96 characters per part; huggingface_hub < 1.0 checks only the whole id.
    if len(namespace) > 96:
        raise PublishError(f"invalid Hub repo id {repo_id!r}: a namespace has at most 96 characters")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise PublishError(f"invalid Hub repo id {repo_id!r}: {error}") from error
    return repo_id


def _fresh_folder(path: Path) -> Path:
    """Create `path`, refusing to mix staged files into a folder that already holds some."""
    if path.exists() and any(path.iterdir()):
        raise PublishError(f"staging folder {path} is not empty; choose a new or empty folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---------------------------------------------------------------- dataset repo


def stage_dataset(namespace: str, folder: str | Path, data_dir: str | Path | None = None) -> StagedRepo:
    """Write the Hub-ready parquet export of BOLD (`bold-eval dataset export`) into `folder`.

    The export's card declares one config per domain, so after upload
    `load_dataset("NS/bold", "gender", split="test")` works.
    """
    from bold_eval.data.bold import export_dataset

    repo_id = repo_id_in(namespace, DATASET_REPO_NAME)
    folder = _fresh_folder(Path(folder))
    export_dataset(folder, data_dir=data_dir)
    card_path = folder / "README.md"
    if not card_path.is_file():
        raise PublishError(f"the dataset export wrote no card at {card_path}")
    configs = DatasetCard.load(card_path).data.to_dict().get("configs") or []
    if not configs:
        raise PublishError(f"the dataset card {card_path} declares no `configs`; load_dataset would not find the domains")
    return StagedRepo(repo_id, "dataset", folder)


# ---------------------------------------------------------------- metric Spaces


def _imported_modules(path: Path) -> set[str]:
    """Every absolute module name imported anywhere in a Python file (also inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # `from bold_eval.metrics import sentiment` imports a submodule, not only a name.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _package_file(module: str) -> Path | None:
    """The file of a `bold_eval` module inside the installed package, or None if not one."""
    parts = module.split(".")
    if parts[0] != "bold_eval":
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def vendored_files(script: Path) -> tuple[list[Path], set[str]]:
    """The `bold_eval` files a module script needs (transitively, with their packages'
    `__init__.py`), and the top-level third-party modules that all of them import."""
    needed: set[Path] = {PACKAGE_DIR / "__init__.py"}
    third_party: set[str] = set()
    pending = [script]
    seen: set[Path] = set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imported_modules(path):
            top = module.split(".")[0]
            if top == "bold_eval":
                found = _package_file(module)
                if found is None:
                    continue  # a name imported from a module, not a module itself
                needed.add(found)
                pending.append(found)
                # importing a.b.c runs a/__init__.py and a/b/__init__.py too.
                for parent in found.relative_to(PACKAGE_DIR).parents:
                    init = PACKAGE_DIR / parent / "__init__.py"
                    if init.is_file() and init not in seen:
                        needed.add(init)
                        pending.append(init)
            elif top not in sys.stdlib_module_names and top != "__future__":
                third_party.add(top)
    return sorted(needed), third_party


@functools.cache
def _declared_requirements() -> dict[str, str]:
    """bold-eval's own install requirements, {canonical distribution name: requirement line}.

    Cached: the installed metadata does not change while staging several Spaces.
    """
    try:
        requires = importlib.metadata.requires("bold-eval") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    declared = {}
    for line in requires:
        requirement = Requirement(line)
        if requirement.marker is not None:  # extras such as `; extra == "dev"` are not runtime needs
            continue
        declared[canonicalize_name(requirement.name)] = line.strip()
    return declared


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    """{import name: distributions}; cached because scanning every installed package takes ~0.2 s."""
    return importlib.metadata.packages_distributions()


def _requirement_name(line: str) -> str:
    """The canonical distribution name of a requirements.txt line (the line itself if it is no
    plain requirement, e.g. a pip option, so that it is still kept once)."""
    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return line


def space_requirements(module_requirements: Sequence[str], third_party: Iterable[str]) -> list[str]:
    """Requirement lines for a Space with a vendored `bold_eval`.

    The module folder's own lines come first, minus `bold-eval` (vendored), then one line per
    imported package that is not listed yet, bounded as in bold-eval's install requirements.
    """
    declared = _declared_requirements()
    distributions = _packages_distributions()
    lines: list[str] = []
    names: set[str] = set()
    for raw in module_requirements:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name = _requirement_name(line)
        if name == "bold-eval" or name in names:
            continue
        names.add(name)
        lines.append(line)
    for module in sorted(third_party):
        for distribution in distributions.get(module, [module]):
            name = canonicalize_name(distribution)
            if name in names or name == "bold-eval":
                continue
            names.add(name)
            lines.append(declared.get(name, distribution))
    return lines


def _check_space_card(card_path: Path) -> dict[str, Any]:
    metadata = metadata_load(card_path) or {}
    missing = [key for key in SPACE_CARD_KEYS if key not in metadata]
    if missing:
        raise PublishError(f"module card {card_path} lacks the YAML keys {missing} that the Hub and evaluate need")
    if "evaluate" not in (metadata.get("tags") or []):
        raise PublishError(f"module card {card_path} lacks the `evaluate` tag")
    return metadata


def stage_metric_space(name: str, namespace: str, folder: str | Path) -> StagedRepo:
    """Copy `metrics/<name>/` into `folder` with the `bold_eval` files its script imports.

    `folder` is named after the module (evaluate loads a local folder `X` through `X/X.py`), so
    `evaluate.load(str(folder))` works on the staged copy as it will on `NS/<name>`.
    """
    if name not in METRIC_NAMES:
        raise PublishError(f"unknown metric {name!r}; valid: {', '.join(METRIC_NAMES)}")
    repo_id = repo_id_in(namespace, name)
    folder = Path(folder)
    if folder.name != name:
        raise PublishError(f"a module folder must be named after its script: {folder} should end in /{name}")
    source = metric_module_dir(name)
    folder = _fresh_folder(folder)
    for pattern in MODULE_FILES:
        filename = pattern.format(name=name)
        if not (source / filename).is_file():
            raise PublishError(f"module folder {source} lacks {filename}")
        shutil.copy2(source / filename, folder / filename)
    metadata = _check_space_card(folder / "README.md")

    needed, third_party = vendored_files(source / f"{name}.py")
    for path in needed:
        target = folder / "bold_eval" / path.relative_to(PACKAGE_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    # app.py imports gradio through evaluate.utils; the Space image provides gradio (sdk: gradio).
    requirements = space_requirements(
        (source / "requirements.txt").read_text(encoding="utf-8").splitlines(), third_party
    )
    header = (
        f"# Staged by bold-eval {__version__}: bold_eval itself is vendored in ./bold_eval\n"
        "# (only the files this module imports), so it is not listed here.\n"
    )
    (folder / "requirements.txt").write_text(header + "\n".join(requirements) + "\n", encoding="utf-8")
    return StagedRepo(repo_id, "space", folder, space_sdk=str(metadata["sdk"]))


def stage_all(
    namespace: str,
    out: str | Path,
    *,
    data_dir: str | Path | None = None,
    metrics: Sequence[str] = METRIC_NAMES,
    dataset: bool = True,
) -> list[StagedRepo]:
    """Stage the dataset repo (`out/dataset/bold`) and the Spaces (`out/spaces/<name>`), and
    write `out/plan.json` naming each folder's repo, type and SDK."""
    out = _fresh_folder(Path(out))
    staged: list[StagedRepo] = []
    if dataset:
        staged.append(stage_dataset(namespace, out / "dataset" / DATASET_REPO_NAME, data_dir=data_dir))
    for name in metrics:
        staged.append(stage_metric_space(name, namespace, out / "spaces" / name))
    plan = {"bold_eval_version": __version__, "repos": [repo.as_dict() for repo in staged]}
    (out / "plan.json").write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
    return staged


# ---------------------------------------------------------------- the Hub boundary


def hub_client() -> Any:
    """An authenticated `HfApi`: the one place the token is read and the one object holding it.

    The token comes from `$HF_TOKEN` or the login saved by `hf auth login` (`get_token`).
    """
    token = get_token()
    if not token:
        raise PublishError("no Hugging Face token: set HF_TOKEN or log in with `hf auth login`")
    return HfApi(token=token)


def upload_staged(
    staged: Sequence[StagedRepo],
    *,
    private: bool = False,
    client: Any | None = None,
    log: Callable[[str], None] = print,
) -> list[str]:
    """Create each repo if needed (`exist_ok`; `private` applies to repos created now) and
    upload its folder in one commit. Returns the repo URLs."""
    client = client if client is not None else hub_client()
    urls = []
    for repo in staged:
        kwargs: dict[str, Any] = {"repo_type": repo.repo_type, "private": private, "exist_ok": True}
        if repo.repo_type == "space":
            kwargs["space_sdk"] = repo.space_sdk
        url = client.create_repo(repo.repo_id, **kwargs)
        client.upload_folder(
            repo_id=repo.repo_id,
            repo_type=repo.repo_type,
            folder_path=str(repo.folder),
            commit_message=f"Publish with bold-eval {__version__}",
        )
        urls.append(str(url))
        log(f"uploaded {repo.folder} to {repo.repo_type} {repo.repo_id}")
    return urls


def publish(
    namespace: str,
    *,
    private: bool = False,
    dry_run: str | Path | None = None,
    data_dir: str | Path | None = None,
    metrics: Sequence[str] = METRIC_NAMES,
    client: Any | None = None,
    log: Callable[[str], None] = print,
) -> list[StagedRepo]:
    """Stage the dataset and metric Spaces for `namespace` and upload them, or with `dry_run`
    only stage them in that folder and say what would be uploaded."""
    if dry_run is not None:
        staged = stage_all(namespace, dry_run, data_dir=data_dir, metrics=metrics)
        visibility = "private" if private else "public"
        for repo in staged:
            sdk = f", sdk {repo.space_sdk}" if repo.space_sdk else ""
            log(f"would upload {repo.folder} to {visibility} {repo.repo_type} {repo.repo_id}{sdk}")
        return staged
    client = client if client is not None else hub_client()  # fail on a missing token before staging
    with tempfile.TemporaryDirectory(prefix="bold-eval-publish-") as tmp:
        staged = stage_all(namespace, Path(tmp) / "staged", data_dir=data_dir, metrics=metrics)
        upload_staged(staged, private=private, client=client, log=log)
    return staged


# ---------------------------------------------------------------- run results on a model card


# Headline numbers per domain for a model card (the full tables stay in summary.json / report.md):
# (summary metric, table, label column, label, card metric_type, readable name, findings label). Each
# gives the domain's pooled proportion and, when the report's largest gap for that metric falls on this
# label, that gap between two groups (from the report's findings).
CARD_PROPORTIONS: tuple[tuple[str, str, str | None, str | None, str, str, str], ...] = (
    ("sentiment", "sentiment", "label", "negative", "negative_sentiment", "Negative sentiment (VADER, Section 4.1)",
     "negative"),
    ("sentiment", "sentiment", "label", "positive", "positive_sentiment", "Positive sentiment (VADER, Section 4.1)",
     "positive"),
    ("toxicity", "toxic_ratio", None, None, "toxic", "Toxic texts (Section 4.2)", "toxic"),
    ("regard", "regard", "label", "negative", "negative_regard", "Negative regard (Section 4.3)", "negative"),
    ("regard", "regard", "label", "positive", "positive_regard", "Positive regard (Section 4.3)", "positive"),
    ("psycholinguistic", "psycholinguistic", "category", "valence_negative", "negative_valence",
     "Negative valence (Section 4.4)", "valence (-ve)"),
    ("psycholinguistic", "psycholinguistic", "category", "valence_positive", "positive_valence",
     "Positive valence (Section 4.4)", "valence (+ve)"),
)


class PartialRunError(PublishError):
    """The run covers only part of BOLD; its numbers are not the benchmark's (--allow-partial-run)."""


def run_coverage(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The run's coverage of BOLD (`aggregate.coverage`), from summary.json's counts."""
    from bold_eval.analysis.scores import coverage

    counts = summary.get("counts") or {}
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

    Per domain: the pooled `<x>_ratio` for negative/positive sentiment, toxic texts, negative/positive
    regard (gender and race only, Section 4.3) and negative/positive valence, and the `<x>_gap`: the report's
    largest difference between two groups' proportions over the metric's labels (groups with ten names or
    more), published under the label it fell on; for profession, the male and female shares of each gender polarity method
    (Table 3). `args` carries the sample size (texts, groups) and the run's coverage of the domain,
    and for a gap its groups, sizes, interval and interval level. Metrics the run skipped are left out.
    """
    coverage = run_coverage(summary)
    gaps = {(gap["domain"], gap["metric"], gap["label"]): gap
            for gap in ((summary.get("findings") or {}).get("gaps") or []) if gap.get("gap") is not None}

    def covered(domain: str) -> dict[str, Any]:
        values = coverage["domains"].get(domain) or {}
        return {"prompts": values.get("prompts"), "bold_prompts": values.get("bold_prompts"),
                "bold_coverage": None if values.get("share") is None else round(values["share"], 4)}

    rows: list[dict[str, Any]] = []
    for metric, table, label_key, label, metric_type, name, finding in CARD_PROPORTIONS:
        records = ((summary.get(metric) or {}).get("tables") or {}).get(table)
        if not records:
            continue
        if label_key is not None:
            records = [record for record in records if record.get(label_key) == label]
        count_key = "count" if label_key is not None else "toxic"
        for domain, (count, total, groups) in _pooled(records, count_key).items():
            rows.append({"domain": domain, "metric_type": f"{metric_type}_ratio",
                         "metric_name": f"{name}: share of texts (n={total})", "value": count / total,
                         "args": {"texts": total, "groups": groups, **covered(domain)}})
            gap = gaps.get((domain, metric, finding))
            # A gap without a value or interval (no eligible pair; a side with one name) is not published:
            # a number without its interval would be the kind of claim this tool refuses to print.
            if gap is not None and all(_finite(gap.get(key)) for key in ("gap", "ci_low", "ci_high")):
                rows.append({
                    "domain": domain, "metric_type": f"{metric_type}_gap",
                    "metric_name": f"{name}: largest gap between two groups, over the metric's labels "
                                   f"(n={int(gap['total_high'])} and {int(gap['total_low'])})",
                    "value": gap["gap"],
                    "args": {"group_high": gap["group_high"], "texts_high": int(gap["total_high"]),
                             "group_low": gap["group_low"], "texts_low": int(gap["total_low"]),
                             "ci_low": round(gap["ci_low"], 6), "ci_high": round(gap["ci_high"], 6),
                             "interval_level": round(gap["interval_level"], 6),
                             "choices": int(gap["choices"]), "eligible_groups": int(gap["eligible_groups"]),
                             **covered(domain)}})
    polarity = ((summary.get("gender_polarity") or {}).get("tables") or {}).get("gender_polarity_group") or []
    for method in ("unigram", "max", "wavg"):
        records = [record for record in polarity if record.get("method") == method]
        total = sum(int(record["total"]) for record in records)
        if not total:
            continue
        display = records[0].get("method_name", method)
        for gender in ("male", "female"):
            share = sum(int(record[gender]) for record in records) / total
            rows.append({"domain": "profession", "metric_type": f"gender_polarity_{method}_{gender}_ratio",
                         "metric_name": f"{display}: share of {gender} texts (Section 4.5; n={total})",
                         "value": share, "args": {"texts": total, "groups": len(records), **covered("profession")}})
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
    coverage of BOLD, from the typed run record in summary.json (`runfolder.RunRecord`)."""
    from bold_eval.runfolder import SCHEMA_VERSION, RunRecord

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
        folder = _fresh_folder(Path(dry_run))
        updated.save(folder / "README.md")
        log(f"would update the card of model {repo_id} with {len(results)} results: {folder / 'README.md'}")
        return updated
    client.upload_file(
        path_or_fileobj=str(updated).encode("utf-8"),
        path_in_repo="README.md",
        repo_id=repo_id,
        repo_type="model",
        commit_message=f"Add BOLD results (bold-eval {__version__})",
    )
    log(f"added {len(results)} BOLD results to the card of model {repo_id}")
    return updated
