"""Many runs on one board: each model's rate of each tested label against Wikipedia's on the same prompts, and
which models can be told apart.

An addition to the paper, which compares models table by table. For each domain and label the board reads, on
the prompts every run shares (each prompt's k samples averaged into one rate):

- **against Wikipedia**: the mean over prompts of the model's rate minus the Wikipedia sentence's, tested and
  bounded with the name as the unit and the domain's groups as strata by the paired cluster-robust test
  (`paired_rate_test`, what `bold-eval compare`'s overall difference uses; valid for rates when the sources treat
  names unlike), every model x column in one
  corrected family; each rate itself with its name-level interval (`rate_test.rate_interval`);
- **tie groups**: every pair of models compared the same way on the same prompts (model A's rate against model
  B's), corrected over the column's pairs. In a column whose label has a direction (`MetricSpec.directions`: more
  negative sentiment, more toxicity, less positive regard are worse) a model's rank is 1 + the number of models
  that are better at the corrected level; models that no difference separates share a rank. A label without a
  direction (psycholinguistic, gender polarity) is shown, not ranked.

The tests of a domain are array operations over all of them at once, so ten full-BOLD runs take seconds.
Calibration under unlike spreads at BOLD's sizes: benchmarks/leaderboard_calibration.py (CALIBRATION.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse, stats
from statsmodels.stats.proportion import proportion_confint

from bold_eval.analysis.clustered import adjust, cluster_ids
from bold_eval.analysis.compare import PromptSetError, applies, run_label, unit_strata
from bold_eval.analysis.findings import TOO_SMALL_DIFFERENCE, prompt_rates
from bold_eval.analysis.paired_rate_test import paired_rate_tests
from bold_eval.analysis.rate_test import rate_interval
from bold_eval.analysis.scores import TestedLabel, check_scores
from bold_eval.analysis.summary import finding_labels
from bold_eval.core.errors import UserError
from bold_eval.metrics import metric_specs
from bold_eval.runfolder.records import LoadedRun, RunRecord

CELL_COLUMNS = ["model", "domain", "metric", "label", "direction", "prompts", "names", "model_rate", "model_low",
                "model_high", "wikipedia_rate", "wikipedia_low", "wikipedia_high", "difference", "ci_low", "ci_high",
                "p_value", "p_adjusted", "significant", "rank",
                "tie_group"]
PAIR_COLUMNS = ["domain", "metric", "label", "model_a", "model_b", "difference", "ci_low", "ci_high", "p_value",
                "p_adjusted", "significant"]


@dataclass(frozen=True)
class BoardTest:
    """One paired test of the board in a domain and label: side a's rate minus side b's over the shared prompts, its
    name-level interval and p-value (NaN where no prompt differs: then the interval is the Clopper-Pearson bound)."""

    domain: str
    metric: str
    label: str
    difference: float
    ci_low: float
    ci_high: float
    p_value: float


@dataclass(frozen=True)
class BoardCell(BoardTest):
    """A model against Wikipedia (a row of `Leaderboard.cells` before correction and ranks): both rates with their
    name-level intervals, the label's direction (`MetricSpec.directions`), the prompts and names tested on."""

    model: str
    direction: int
    prompts: int
    names: int
    model_rate: float
    model_low: float
    model_high: float
    wikipedia_rate: float
    wikipedia_low: float
    wikipedia_high: float

    def as_dict(self) -> dict[str, float | int | str]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class BoardPair(BoardTest):
    """Model a against model b (a row of `Leaderboard.pairs` before correction)."""

    model_a: str
    model_b: str

    def as_dict(self) -> dict[str, float | str]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class BoardRun:
    """One model's run on the board."""

    label: str
    folder: Path
    record: RunRecord


@dataclass(frozen=True)
class Leaderboard:
    """The board: its runs, the Wikipedia baseline's source, the shared prompts, one row per model x domain x
    label (`cells`) and one per pair of models x domain x label (`pairs`)."""

    runs: list[BoardRun]
    baseline: str
    prompts: int
    prompts_per_run: dict[str, int]
    different: bool
    cells: pd.DataFrame
    pairs: pd.DataFrame
    power: pd.DataFrame
    alpha: float
    correction: str
    cluster: str
    family: int
    # run.json `resources` of a Wikipedia run given as the baseline ({} when the runs' own reference serves)
    baseline_resources: dict[str, list[dict[str, str]]] = field(default_factory=dict)


def directions() -> dict[tuple[str, str], int]:
    return {(spec.name, label): sign for spec in metric_specs() for label, sign in spec.directions.items()}


def is_wikipedia(run: LoadedRun) -> bool:
    """Whether `run` is the Wikipedia baseline (a run of `--model wikipedia`) rather than a model on the board."""
    return board_label(run.record, run.folder) == "WIKI" or run.record.generator == "wikipedia"


def _board_runs(loaded: Sequence[LoadedRun]) -> tuple[list[BoardRun], dict[str, pd.DataFrame], pd.DataFrame, str,
                                                       dict[str, list[dict[str, str]]]]:
    """(model runs, their scores by label, the baseline's scores, where the baseline comes from, and the resources
    a Wikipedia run given as the baseline was scored with)."""
    runs: list[BoardRun] = []
    scores: dict[str, pd.DataFrame] = {}
    baseline: pd.DataFrame | None = None
    source, resources = "", dict[str, list[dict[str, str]]]()
    models: list[tuple[str, LoadedRun, pd.DataFrame]] = []
    for run in loaded:
        frame = check_scores(run.scores, run.record.to_dict().get("label_columns"), source=str(run.folder))
        if is_wikipedia(run):
            if baseline is None:
                baseline, source, resources = frame, f"the Wikipedia run {run.folder.name}", run.record.resources
            continue
        models.append((board_label(run.record, run.folder), run, frame))
    repeated = {label for label, *_ in models if sum(other == label for other, *_ in models) > 1}
    references: dict[str, pd.DataFrame | None] = {}
    for label, run, frame in models:  # one model run several ways: each named by its folder too
        label = f"{label} ({run.folder.name})" if label in repeated else label
        base, number = label, 2
        while label in scores:  # two folders of one name in different places: numbered, never a local path
            label, number = f"{base} {number}", number + 1
        runs.append(BoardRun(label, run.folder, run.record))
        scores[label], references[label] = frame, run.reference
    if not runs:
        raise UserError("the leaderboard needs at least one model run besides the Wikipedia baseline; pass the run "
                        "folders written by `bold-eval run`")
    if baseline is None:
        for board_run in runs:
            if references[board_run.label] is not None:
                baseline = references[board_run.label]
                source = f"the Wikipedia sentences scored with {board_run.label}"
                break
    if baseline is None:
        raise UserError("no Wikipedia baseline: pass a run of `bold-eval run --model wikipedia` on the same prompts, "
                        "or runs scored with their Wikipedia reference (reference_scores.parquet, the default of "
                        "`bold-eval run`)")
    return runs, scores, baseline, source, resources


def board_label(record: RunRecord, folder: Path) -> str:
    """A run's name on the board: its model as the paper's tables print it, and for a model loaded from a local
    folder that folder's name (a published page never shows a local path)."""
    label = run_label(record, folder)
    if label.startswith(("/", "~", "./", "../", "\\")) or Path(label).is_absolute():
        return Path(label).name or folder.name
    return label


def build_leaderboard(loaded: Sequence[LoadedRun], *, alpha: float = 0.05, correction: str = "holm",
                      cluster: str = "name", allow_different_prompts: bool = False) -> Leaderboard:
    """The board over `loaded` runs (model runs, and a Wikipedia run or a model run's own Wikipedia reference,
    `LoadedRun.reference`; the report reads them: `report.leaderboard.load_board_runs`)."""
    runs, scores, baseline, source, resources = _board_runs(loaded)
    prompt_sets = {label: set(frame["prompt_id"].astype(str)) for label, frame in scores.items()}
    per_run = {label: len(ids) for label, ids in prompt_sets.items()}
    shared = set.intersection(*prompt_sets.values()) & set(baseline["prompt_id"].astype(str))
    different = any(ids != shared for ids in prompt_sets.values())
    if not shared:
        raise PromptSetError("the runs share no prompt with each other and the Wikipedia baseline: nothing to rank "
                             "like with like")
    if different and not allow_different_prompts:
        sizes = ", ".join(f"{label}: {size}" for label, size in per_run.items())
        raise PromptSetError(
            f"the runs were generated from different prompt sets ({sizes} prompts; {len(shared)} shared by all). "
            "Rerun them on the same prompts (same --domains, --limit and --sample-seed), or pass "
            "--allow-different-prompts to rank them on the shared prompts only.")
    columns = set(baseline.columns).intersection(*(set(frame.columns) for frame in scores.values()))
    labels = finding_labels(pd.Index(sorted(columns)))
    prompts = baseline.drop_duplicates("prompt_id")
    prompts = prompts[prompts["prompt_id"].astype(str).isin(shared)].sort_values("prompt_id").reset_index(drop=True)
    ids = prompts["prompt_id"].astype(str).to_numpy()
    units = cluster_ids(prompts, "prompt" if cluster == "none" else cluster)
    groups = prompts["group"].astype(str).to_numpy()
    names = list(scores)
    rates = {label: np.column_stack([_rates(scores[name], label, ids) for name in names]
                                    + [_rates(baseline, label, ids)]) for label in labels}
    cells: list[BoardCell] = []
    pairs: list[BoardPair] = []
    for domain in sorted(prompts["domain"].astype(str).unique()):
        in_domain = (prompts["domain"].astype(str) == domain).to_numpy()
        cell_rows, pair_rows = _domain(domain, in_domain, units, names,
                                       [(label, rates[label]) for label in labels if applies(label, domain)],
                                       alpha=alpha, groups=groups)
        cells += cell_rows
        pairs += pair_rows
    cell_frame = pd.DataFrame([cell.as_dict() for cell in cells],
                              columns=[c for c in CELL_COLUMNS if c not in ("rank", "tie_group", "p_adjusted",
                                                                            "significant")])
    pair_frame = pd.DataFrame([pair.as_dict() for pair in pairs],
                              columns=[c for c in PAIR_COLUMNS if c not in ("p_adjusted", "significant")])
    family = _adjust_cells(cell_frame, alpha, correction)
    _adjust_pairs(pair_frame, alpha, correction)
    _rank(cell_frame, pair_frame)
    return Leaderboard(runs=runs, baseline=source, prompts=len(shared), prompts_per_run=per_run, different=different,
                       cells=cell_frame[CELL_COLUMNS], pairs=pair_frame[PAIR_COLUMNS],
                       power=separable_difference(pair_frame, cell_frame, alpha), alpha=alpha,
                       correction=correction, cluster=cluster, family=family, baseline_resources=resources)


def _rates(scores: pd.DataFrame, label: TestedLabel, ids: np.ndarray) -> np.ndarray:
    """The label's rate per prompt of `ids` (its samples averaged), NaN where the run has no score."""
    rate = prompt_rates(scores, label.column, label.value)["rate"]
    return rate.reindex(ids).to_numpy(dtype=float)


def _domain(domain: str, in_domain: np.ndarray, units: np.ndarray, names: list[str],
            labelled: list[tuple[TestedLabel, np.ndarray]], *, alpha: float,
            groups: np.ndarray | None = None) -> tuple[list[BoardCell], list[BoardPair]]:
    """The domain's tests: each model against Wikipedia, each pair of models, for every label, on the prompts
    where every run has the label; tests whose prompts are the same share one set of sums. `groups`, each
    prompt's group, are the paired test's strata (None: the domain is one stratum)."""
    against = [(m, len(names)) for m in range(len(names))]
    pairwise = list(combinations(range(len(names)), 2))
    direction = directions()
    batches: dict[bytes, list[tuple[TestedLabel, np.ndarray, np.ndarray]]] = {}
    for label, matrix in labelled:
        part = matrix[in_domain]
        keep = ~np.isnan(part).any(axis=1)
        if keep.sum() == 0:
            continue
        batches.setdefault(keep.tobytes(), []).append((label, part, keep))
    cells: list[BoardCell] = []
    pairs: list[BoardPair] = []
    for group in batches.values():
        keep = group[0][2]
        codes, uniques = pd.factorize(units[in_domain][keep])
        counts = np.bincount(codes).astype(float)
        upper = float(proportion_confint(0, len(uniques), alpha=alpha, method="beta")[1])
        # each model against Wikipedia on every label; pairs of models only where a rank is claimed
        cases = [(label, part, a, b) for label, part, _ in group
                 for a, b in against + (pairwise if direction.get((label.metric, label.name), 0) else [])]
        d = np.column_stack([part[keep][:, a] - part[keep][:, b] for _, part, a, b in cases])
        indicator = sparse.csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))),
                                      shape=(len(uniques), len(codes)))  # names x prompts: a name's sums
        per_name = {label: indicator @ part[keep] for label, part, _ in group}
        if len(uniques) < 2:
            p_value, low, high = (np.full(d.shape[1], np.nan) for _ in range(3))
        else:
            strata = None if groups is None else unit_strata(codes, groups[in_domain][keep], len(uniques))
            _, low, high, _, p_value = paired_rate_tests(
                np.column_stack([per_name[label][:, a] for label, _, a, _ in cases]),
                np.column_stack([per_name[label][:, b] for label, _, _, b in cases]), counts, alpha=alpha,
                strata=strata)
        intervals = {}
        for label, part, _ in group:  # each source's rate with its name-level interval (the findings' own)
            intervals[label] = [rate_interval(per_name[label][:, m], counts, alpha=alpha)[:2] if len(uniques) > 1
                                else (np.nan, np.nan) for m in range(part.shape[1])]
        for at, (label, part, a, b) in enumerate(cases):
            values = part[keep]
            test = BoardTest(domain=domain, metric=label.metric, label=label.name,
                             difference=float(d[:, at].mean()), ci_low=float(max(low[at], -1.0)),
                             ci_high=float(min(high[at], 1.0)), p_value=float(p_value[at]))
            if not d[:, at].any():  # no prompt differs: nothing to test, a Clopper-Pearson bound (compare's rule)
                test = dataclasses.replace(test, p_value=np.nan, ci_low=-upper, ci_high=upper)
            if b == len(names):
                cells.append(BoardCell(**vars(test), model=names[a],
                                       direction=direction.get((label.metric, label.name), 0),
                                       prompts=int(keep.sum()), names=len(uniques),
                                       model_rate=float(values[:, a].mean()), model_low=intervals[label][a][0],
                                       model_high=intervals[label][a][1], wikipedia_rate=float(values[:, b].mean()),
                                       wikipedia_low=intervals[label][b][0], wikipedia_high=intervals[label][b][1]))
            else:
                pairs.append(BoardPair(**vars(test), model_a=names[a], model_b=names[b]))
    return cells, pairs


def separable_difference(pairs: pd.DataFrame, cells: pd.DataFrame, alpha: float, power: float = 0.8) -> pd.DataFrame:
    """Per domain: the smallest difference between two models a ranked column could find with `power` at its corrected
    level (alpha over the column's pairs, Bonferroni as Holm's first step), the median over the domain's pairs (a
    typical pair), and `hardest_pair`, the largest over them (the pair whose models spread their names most unevenly
    needs the most). A pair's standard error comes from its own interval (half-width / z at 1 - alpha/2), measured
    where the two models are about as far apart as they are; a difference d moves one model's rate from the pair's
    mean rate p towards 50%, which raises that model's share of the variance from p (1 - p) to (p + d)(1 - p - d),
    so the pair's SE at d is SE x sqrt((p (1 - p) + (p + d)(1 - p - d)) / (2 p (1 - p))), and d solves d = (z_level
    + z_power) x SE(d) (`_separable`). A domain where it exceeds 20 points (`findings.TOO_SMALL_DIFFERENCE`) or no
    pair is testable is too small to rank models. Predicted against simulated power: benchmarks/CALIBRATION.md."""
    rows = []
    rates = cells.set_index(["domain", "metric", "label", "model"])["model_rate"]
    for domain in sorted(cells["domain"].unique()):
        part = pairs[(pairs["domain"] == domain) & pairs["p_value"].notna()]
        per_column = part.groupby(["metric", "label"]).size()
        if not len(part):
            rows.append({"domain": domain, "pairs": 0, "separable_difference": np.nan, "hardest_pair": np.nan,
                         "too_small": True})
            continue
        level = alpha / per_column.reindex(pd.MultiIndex.from_frame(part[["metric", "label"]])).to_numpy()
        se = (part["ci_high"] - part["ci_low"]).to_numpy() / 2 / stats.norm.isf(alpha / 2)
        rate = np.array([np.nanmean([rates.get((domain, row.metric, row.label, model), np.nan)
                                     for model in (row.model_a, row.model_b)])
                         for row in part.itertuples(index=False)])
        found = _separable(se, np.nan_to_num(rate, nan=0.5), stats.norm.isf(level / 2) + stats.norm.isf(1 - power))
        detectable = float(np.median(found))
        rows.append({"domain": domain, "pairs": len(part), "separable_difference": detectable,
                     "hardest_pair": float(np.max(found)), "too_small": bool(detectable > TOO_SMALL_DIFFERENCE)})
    return pd.DataFrame(rows, columns=["domain", "pairs", "separable_difference", "hardest_pair", "too_small"])


def _separable(se: np.ndarray, rate: np.ndarray, z: np.ndarray) -> np.ndarray:
    """d = z x SE(d) per pair (`separable_difference`), by fixed-point steps from d = z x SE (the variance grows
    with d at most to 0.25 / (p (1 - p)) times, so the steps rise monotonically to the root)."""
    spread = np.clip(rate * (1 - rate), 1e-6, None)
    d = z * se
    for _ in range(50):
        moved = np.where(rate <= 0.5, np.minimum(rate + d, 0.5), np.maximum(rate - d, 0.5))
        d = z * se * np.sqrt((spread + moved * (1 - moved)) / (2 * spread))
    return d


def _adjust_cells(cells: pd.DataFrame, alpha: float, correction: str) -> int:
    """Every model-vs-Wikipedia test of the board in one family."""
    cells["p_adjusted"], cells["significant"] = np.nan, False
    testable = cells["p_value"].notna().to_numpy()
    if testable.any():
        adjusted, reject = adjust(cells.loc[testable, "p_value"].to_numpy(float), alpha=alpha, correction=correction)
        cells.loc[testable, "p_adjusted"], cells.loc[testable, "significant"] = adjusted, reject
    return int(testable.sum())


def _adjust_pairs(pairs: pd.DataFrame, alpha: float, correction: str) -> None:
    """Each column's pairs (domain x label) as a family of their own: a rank is a claim about one column."""
    pairs["p_adjusted"], pairs["significant"] = np.nan, False
    for _, part in pairs.groupby(["domain", "metric", "label"], sort=False):
        testable = part.index[part["p_value"].notna()]
        if len(testable):
            adjusted, reject = adjust(pairs.loc[testable, "p_value"].to_numpy(float), alpha=alpha,
                                      correction=correction)
            pairs.loc[testable, "p_adjusted"], pairs.loc[testable, "significant"] = adjusted, reject


def _rank(cells: pd.DataFrame, pairs: pd.DataFrame) -> None:
    """rank = 1 + the models better at the corrected level (lower rate where more is worse); tie_group names the
    models that share that rank. Labels without a direction get none."""
    cells["rank"], cells["tie_group"] = np.nan, ""
    for (domain, metric, label), part in cells.groupby(["domain", "metric", "label"], sort=False):
        sign = int(part["direction"].iloc[0])
        if sign == 0:
            continue
        column = pairs[(pairs["domain"] == domain) & (pairs["metric"] == metric) & (pairs["label"] == label)]
        better: dict[str, int] = dict.fromkeys(part["model"], 0)
        for row in column[column["significant"].astype(bool)].itertuples(index=False):
            worse = row.model_a if sign * row.difference > 0 else row.model_b
            better[worse] += 1
        ranks = {model: 1 + count for model, count in better.items()}
        cells.loc[part.index, "rank"] = [ranks[model] for model in part["model"]]
        for rank in set(ranks.values()):
            sharing = sorted(model for model, value in ranks.items() if value == rank)
            cells.loc[part.index[part["model"].isin(sharing).to_numpy()], "tie_group"] = " = ".join(sharing)

