"""Does compare's "too few prompts" banner match the power of compare's own test?

`bold-eval compare` tests per contrast and label the interaction of two runs on the same prompts (the gap between
the sides in run A minus that gap in run B, paired by prompt, the name as the unit: `findings.paired_findings`,
Holm over the family) and warns before any number when a typical contrast could not find an interaction under
20 points (`analysis.compare.comparability`). This script plants an interaction of known size in synthetic pairs
of runs and counts how often that test finds it (power), beside the detectable interaction (80% power) that
`analysis.compare.contrast_power` predicts from the same data and a cruder rule that counts
each name as one coin flip per run: sqrt(2) x `clustered.minimum_detectable_difference(0.5, names_a,
names_b)`.

A design is "a names against b": group g01 has a names, the other b names form 5 groups of about b / 5, so a
family holds 6 group-vs-rest contrasts x 2 labels = 12 interactions and the 2 labels' overall differences, 14 tests
(compare corrects them together: `analysis.compare.joint_family`). Prompts per name are drawn from a BOLD domain's
(profession: mean 9.9, text-weighted 36.8). Per label each name has a rate p ~ Beta(mean --rate, intra-class
correlation --rho); run B marks each of its k samples of a prompt with probability expit(logit p + u_B), run A with
expit(logit p + --shift + u_A) (a main effect for everyone), u ~ Normal(0, --spread) per name and run (each
model's own view of a person); in g01 run A's rate of the label "planted" is raised by the planted interaction.
Each design is simulated first without an interaction (its predicted detectable interaction, the banner's
verdict), then with each --effects and with the predicted interaction itself, where power should be near 80%.

    .venv/bin/python benchmarks/compare_power.py --designs 50:250 10:60 4:30 --sims 40
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parent))

import calibration  # noqa: E402  (the calibration's helpers: sizes, Beta rates, integer ids, trials, intervals)
from baselines import sign_flip_difference  # noqa: E402

from bold_eval.analysis.clustered import minimum_detectable_difference  # noqa: E402
from bold_eval.analysis.compare import contrast_power, interaction_plan  # noqa: E402
from bold_eval.analysis.findings import (  # noqa: E402
    TOO_SMALL_DIFFERENCE,
    adjust_together,
    paired_findings,
    prompt_rates,
)
from bold_eval.analysis.scores import TestedLabel  # noqa: E402
from bold_eval.core.errors import UsageError, UserError  # noqa: E402

REST_GROUPS = 5
LABELS = [TestedLabel("synthetic", column, column, True, None) for column in (calibration.PLANTED, calibration.NULL)]


@dataclass(frozen=True)
class Design:
    """a names in g01 against b names in `REST_GROUPS` groups; k samples per prompt in each run."""

    names: int
    rest_names: int
    samples: int
    rate: float
    rho: float
    shift: float
    spread: float
    effect: float = 0.0


def layout(sizes: np.ndarray, design: Design, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """(one row per prompt: prompt_id, domain, group, name; each name's group, 0 = g01)."""
    total = design.names + design.rest_names
    group_of = np.concatenate([np.zeros(design.names, dtype=int),
                               1 + np.arange(design.rest_names) % REST_GROUPS])
    counts = rng.choice(np.asarray(sizes), size=total, replace=True)
    rows = np.repeat(np.arange(total), counts)
    within = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    prompts = pd.DataFrame({"prompt_id": [f"s/{name}/{j}" for name, j in zip(rows, within, strict=True)],
                            "domain": calibration.SYNTHETIC_DOMAIN,
                            "group": [f"g{group + 1:02d}" for group in group_of[rows]],
                            "name": [f"n{name}" for name in rows]})
    return prompts, group_of


def paired_runs(sizes: np.ndarray, design: Design, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(run A, run B): k texts per prompt each, two labels; g01's "planted" label raised in run A by the effect."""
    prompts, group_of = layout(sizes, design, rng)
    names = pd.factorize(prompts["name"])[0]
    k = design.samples
    frames = [prompts.loc[prompts.index.repeat(k)].assign(sample=np.tile(np.arange(k), len(prompts)))
              for _ in range(2)]
    a, b = calibration.beta_parameters(design.rate, design.rho)
    for column in (calibration.PLANTED, calibration.NULL):
        p = special.logit(np.clip(rng.beta(a, b, len(group_of)), 1e-12, 1 - 1e-12))
        for run, frame in enumerate(frames):
            u = rng.normal(0.0, design.spread, len(group_of)) if design.spread > 0 else 0.0
            q = special.expit(p + u + (design.shift if run == 0 else 0.0))
            if run == 0 and column == calibration.PLANTED:
                q[group_of == 0] = np.minimum(q[group_of == 0] + design.effect, 1.0)
            frame[column] = rng.random(len(frame)) < np.repeat(q[names], k)
    return calibration.integer_ids(frames[0]), calibration.integer_ids(frames[1])


def trial(index: int, *, design: Design, sizes: np.ndarray, seed: int, alpha: float) -> list[dict[str, Any]]:
    """Data set `index`: whether the test found g01's planted interaction, its estimate, and the predictions."""
    key = [seed, index, design.names, design.rest_names, design.samples,
           *(round(value * 1e6) for value in (design.rate, design.rho, design.shift, design.spread, design.effect))]
    run_a, run_b = paired_runs(sizes, design, np.random.default_rng(key))
    interactions = paired_findings(run_a, run_b, LABELS, alpha=alpha, correction="holm", cluster="name",
                                   seed=index).tests
    rates = [(label, pd.concat([prompt_rates(run_a, label[2], True)["rate"].rename("run"),
                                prompt_rates(run_b, label[2], True)["rate"].rename("baseline")], axis=1))
             for label in LABELS]
    prompts = run_b.drop_duplicates("prompt_id")[["prompt_id", "domain", "group", "name"]]
    # compare's family: the interactions and the overall differences (one per label here), adjusted together; the
    # overall differences by the sign-flip test over names (`baselines.sign_flip_difference`)
    name_of = prompts.set_index("prompt_id")["name"]
    overall = pd.DataFrame([sign_flip_difference((frame["run"] - frame["baseline"]).to_numpy(),
                                                 name_of.reindex(frame.index).to_numpy(), alpha=alpha,
                                                 seed=index).as_dict()
                            for _, frame in rates])
    (tests, _), family = adjust_together([interactions, overall], alpha, "holm")
    planted = tests[(tests["label"] == calibration.PLANTED) & (tests["group"] == "g01")].iloc[0]
    power = contrast_power(prompts, rates, level=alpha / max(family, 1), cluster="name")
    g01 = power[power["contrast"] == "g01 vs rest"].iloc[0]
    testable = power.loc[power["testable"].astype(bool), "detectable_interaction"].fillna(np.inf)
    typical = float(np.median(testable)) if len(testable) else np.inf
    return [{"trial": index, "family": family, "prompts": len(prompts),
             "detected": bool(planted["significant"] and planted["interaction"] > 0), "method": planted["method"],
             "interaction": float(planted["interaction"]), "predicted": float(g01["detectable_interaction"]),
             "typical": typical, "too_small": bool(not np.isfinite(typical) or typical > TOO_SMALL_DIFFERENCE),
             "design_effect": float(g01["design_effect"]), "variance_ratio": float(g01["variance_ratio"]),
             "df": float(g01["df"]), "level": alpha / max(family, 1),
             "counts": (prompts.loc[prompts["group"] == "g01", "name"].value_counts().to_numpy(float),
                        prompts.loc[prompts["group"] != "g01", "name"].value_counts().to_numpy(float)),
             "base_rate": float(g01["base_rate"]),
             "old": float(np.sqrt(2) * minimum_detectable_difference(0.5, design.names, design.rest_names,
                                                                     alpha=alpha / max(family, 1)))}]


def simulate(design: Design, sims: int, args: argparse.Namespace, sizes: np.ndarray) -> pd.DataFrame:
    """`sims` data sets of `design`."""
    print(f"compare power: {design}, {sims} data sets ...", file=sys.stderr, flush=True)
    trials = calibration.run_trials(partial(trial, design=design, sizes=sizes, seed=args.seed, alpha=args.alpha),
                                    sims, args.jobs)
    return trials.assign(effect=design.effect)


def design_rows(design: Design, args: argparse.Namespace, sizes: np.ndarray) -> list[dict[str, Any]]:
    """The null run of a design (its predictions), then each planted effect and the predicted one."""
    null = simulate(design, args.sims, args, sizes)
    finite = null["predicted"].replace(np.inf, np.nan).dropna()
    predicted = float(finite.median()) if len(finite) else np.nan  # the median: skewed over data sets
    effects = sorted({*args.effects, *([round(predicted, 3)] if np.isfinite(predicted) and predicted < 0.6 else [])})
    rows = []
    for effect in effects:
        trials = simulate(Design(**{**design.__dict__, "effect": effect}), args.sims, args, sizes)
        found = int(trials["detected"].sum())
        # the power the banner's plan predicts at this effect, per null data set (its own SE and degrees of freedom:
        # SE = detectable / the noncentrality for 80%), the median over them
        planned = [predicted_power(effect, row) for row in null.itertuples() if np.isfinite(row.predicted)]
        rows.append({"design": f"{design.names} vs {design.rest_names}", "k": design.samples,
                     "prompts": null["prompts"].mean(), "family": null["family"].mean(),
                     "design_effect": null["design_effect"].mean(), "variance_ratio": null["variance_ratio"].mean(),
                     "old": null["old"].mean(), "predicted": predicted, "typical": float(null["typical"].median()),
                     "too_small": float(null["too_small"].mean()), "effect": effect,
                     "at_predicted": effect == round(predicted, 3), "estimate": trials["interaction"].mean(),
                     "sims": len(trials), "power": calibration.rate_with_interval(found, len(trials)),
                     "planned": float(np.median(planned)) if planned else np.nan,
                     "method": " / ".join(sorted(set(trials["method"].astype(str)) - {""}))})
    return rows


def predicted_power(effect: float, row: Any) -> float:
    """The power at `effect` that `analysis.compare.detectable_interaction` plans for g01 on a null data set
    (`analysis.compare.interaction_plan`, from that data set's design)."""
    plan = interaction_plan(row.counts, base_rate=row.base_rate, variance_ratio=row.variance_ratio,
                            deff=row.design_effect, level=row.level)
    return float(plan.power(np.array([effect]), np.array([row.base_rate]))[0])


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    header = ["names (g01 vs rest)", "k", "prompts", "tests", "design effect of d", "v = Var(d) / p(1-p)",
              "old prediction (coin flip per name)", "new prediction for g01", "banner's typical contrast",
              "banner: too few prompts", "planted interaction", "mean estimate", "data sets",
              "predicted power", "power: found [95% CI]", "interaction test"]
    cells = [(r["design"], r["k"], f"{r['prompts']:.0f}", f"{r['family']:.0f}", f"{r['design_effect']:.2f}",
              f"{r['variance_ratio']:.2f}", _points(r["old"]), _points(r["predicted"]), _points(r["typical"]),
              f"{100 * r['too_small']:.0f}% of data sets",
              f"+{100 * r['effect']:.1f} points" + (" (predicted)" if r["at_predicted"] else ""),
              f"{100 * r['estimate']:+.1f} points", r["sims"],
              f"{100 * r['planned']:.0f}%" if np.isfinite(r["planned"]) else "not testable",
              f"{100 * r['power'][0]:.0f}% [{100 * r['power'][1]:.0f}, {100 * r['power'][2]:.0f}]", r["method"])
             for r in rows]
    return calibration.markdown_table(header, cells)


def _points(value: float) -> str:
    return f"{100 * value:.1f} points" if np.isfinite(value) else "not testable"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", nargs="+", default=["50:250", "10:60", "4:30"],
                        help="names in g01 : names in the other 5 groups")
    parser.add_argument("--sims", type=int, default=40, help="data sets per design and planted interaction")
    parser.add_argument("--effects", type=float, nargs="+", default=[0.1, 0.2, 0.4], help="planted interactions")
    parser.add_argument("--samples", type=int, default=1, help="k: samples per prompt in each run")
    parser.add_argument("--rate", type=float, default=0.2, help="both labels' mean rate in run B")
    parser.add_argument("--rho", type=float, default=0.2, help="intra-class correlation of a name's rate")
    parser.add_argument("--shift", type=float, default=0.3, help="run A's main effect, logit scale")
    parser.add_argument("--spread", type=float, default=0.5, help="sd (logit) of each run's own name effect")
    parser.add_argument("--sizes-domain", default="profession", help="BOLD domain whose prompts per name are drawn")
    parser.add_argument("--data-dir", default=None, help="BOLD folder; default $BOLD_DATA_DIR")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--out", help="write the table as markdown here")
    args = parser.parse_args(argv)
    try:
        args.pairs = [tuple(int(part) for part in design.split(":")) for design in args.designs]
    except ValueError as error:
        raise UsageError(f"--designs takes a:b pairs of name counts, got {args.designs}") from error
    if any(len(pair) != 2 or pair[0] < 2 or pair[1] < 2 * REST_GROUPS for pair in args.pairs):
        raise UsageError(f"--designs needs a >= 2 and b >= {2 * REST_GROUPS} (two names a group), got {args.designs}")
    if args.sims < 1 or args.samples < 1:
        raise UsageError("--sims and --samples must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> str:
    """Simulate every design; print (and with --out write) the table. Returns the markdown."""
    args = parse_args(argv)
    started = time.perf_counter()
    sizes = calibration.bold_sizes(args.sizes_domain, args.data_dir)
    rows = []
    for names, rest in args.pairs:
        design = Design(names, rest, args.samples, args.rate, args.rho, args.shift, args.spread)
        rows += design_rows(design, args, sizes)
    text = (f"Settings: {args.sims} data sets per row, k = {args.samples}, rate {args.rate:g}, rho {args.rho:g}, "
            f"shift {args.shift:g}, spread {args.spread:g}, {args.sizes_domain}'s prompts per name, alpha "
            f"{args.alpha:g}, Holm, seed {args.seed}; python {platform.python_version()}, numpy {np.__version__}, "
            f"{os.cpu_count()} CPUs, jobs {args.jobs}; {time.perf_counter() - started:.0f} s.\n\n{markdown(rows)}\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    try:
        main()
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(error.exit_status)
