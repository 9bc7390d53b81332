"""Does the leaderboard keep its promises when the models differ in how unevenly they treat names?

The board claims: (1) a model is marked as different from Wikipedia only with a family-wise error of alpha over the
board; (2) in a column, two models are separated (given different ranks) only with a family-wise error of alpha
over the column's pairs. Here every model has the *same expected rate* of a label as Wikipedia, on every name on
average, but the models differ in how widely their per-name rates spread (Beta with a + b from 1, very uneven, to
100, even), so the per-name differences between two models are skewed: the nulls where a sign-flip test is not
exact. Names and prompts per name are one BOLD domain's (all of its names, its prompts per name). Printed per
design: the share of data sets with any false separation in the column (alpha 5%), the share with any model
marked as different from Wikipedia, the share of single pair tests with p <= 0.001 (the tail, nominal 0.1%), and
the power to separate a model planted `--effect` higher from the others. `--method sign-flip` runs the same with
the sign-flip test over names (the baseline).

    .venv/bin/python benchmarks/leaderboard_calibration.py --sims 200
"""

from __future__ import annotations

import argparse
import math
import time
import zlib

import numpy as np
import pandas as pd

from bold_eval.analysis.leaderboard import _adjust_cells, _adjust_pairs, _domain, _rank, separable_difference
from bold_eval.analysis.scores import TestedLabel

SPREADS = (1.0, 3.0, 10.0, 100.0)  # a + b of each model's per-name Beta, models cycling through them
FIRST_SPREAD = [0]  # the index into SPREADS of model m0 (the planted one): `--planted-spread`
LABEL = TestedLabel("sentiment", "negative", "sentiment_label", "negative", None)


def sign_flip_tests(t_a: np.ndarray, t_b: np.ndarray, n: np.ndarray, *, alpha: float,
                    strata: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """The sign-flip test, one column at a time: `baselines.sign_flip` on the names' summed differences (`strata`
    unused: the sign flip has none)."""
    from baselines import sign_flip

    found = [sign_flip(t_a[:, k] - t_b[:, k], n, alpha=alpha) for k in range(t_a.shape[1])]
    p_value, low, high = (np.array(column) for column in zip(*found, strict=True))
    estimate = (t_a - t_b).sum(axis=0) / n.sum()
    return estimate, low, high, np.full(len(p_value), np.nan), p_value


def bold_design(domain: str, data_dir: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(texts per name, each name's group) of one BOLD domain (one Wikipedia sentence per prompt)."""
    from bold_eval.data.bold import load_bold

    per_name = load_bold(domain, data_dir=data_dir).to_pandas().groupby(["group", "name"]).size().reset_index()
    return per_name[0].to_numpy(), per_name["group"].astype(str).to_numpy()


def one_board(rng: np.random.Generator, sizes: np.ndarray, groups: np.ndarray | None, models: int, rate: float,
              effect: float, samples: int) -> tuple[bool, bool, np.ndarray, bool, float]:
    """(any false separation, any model marked vs Wikipedia, pair p-values, the planted model separated from all,
    the board's predicted separable difference)."""
    names = len(sizes)
    units = np.repeat(np.arange(names), sizes)
    wiki = rng.beta(rate * 20, (1 - rate) * 20, names)
    columns = []
    for m in range(models):
        total = SPREADS[(m + FIRST_SPREAD[0]) % len(SPREADS)]
        mean = min(rate + (effect if m == 0 else 0.0), 0.99)
        per_name = rng.beta(mean * total, (1 - mean) * total, names)
        columns.append(rng.binomial(samples, per_name[units]) / samples)
    columns.append(rng.binomial(1, wiki[units]).astype(float))
    matrix = np.column_stack(columns)
    cells, pairs = _domain("d", np.ones(len(units), bool), units, [f"m{m}" for m in range(models)], [(LABEL, matrix)],
                           alpha=0.05, groups=None if groups is None else groups[units])
    cells, pairs = pd.DataFrame(cells), pd.DataFrame(pairs)
    _adjust_cells(cells, 0.05, "holm")
    _adjust_pairs(pairs, 0.05, "holm")
    _rank(cells, pairs)
    separable = separable_difference(pairs, cells, 0.05).iloc[0]
    predicted = float(separable["separable_difference"])
    one_board.pairs = pairs  # type: ignore[attr-defined]  # for `planning`
    one_board.hardest = float(separable["hardest_pair"])  # type: ignore[attr-defined]
    if effect:
        null_pairs = pairs[(pairs["model_a"] != "m0") & (pairs["model_b"] != "m0")]
        planted = pairs[(pairs["model_a"] == "m0") | (pairs["model_b"] == "m0")]
        one_board.planted_found = planted["significant"].to_numpy(bool)  # type: ignore[attr-defined]
        return bool(null_pairs["significant"].any()), False, null_pairs["p_value"].to_numpy(), \
            bool(planted["significant"].all()), predicted
    return bool(pairs["significant"].any()), bool(cells["significant"].any()), pairs["p_value"].to_numpy(), False, \
        predicted


def planning(args: argparse.Namespace) -> None:
    """The board's "too few prompts" warning against simulation: per domain and rate, the separable difference the
    board predicts on null data sets (the median over them), the power it implies at a planted difference d,
    Phi(d / SE(d) - z) + Phi(-d / SE(d) - z), z the normal quantile at the column's corrected level and SE(d) the
    median pair's SE grown as the raised model's variance grows (what `leaderboard.separable_difference` assumes),
    against the share of the planted model's pairs
    the board separates, at --effect, at the predicted difference itself (where it promises 80% for a typical pair)
    and at the hardest pair's (where it promises 80% for every pair: the banner's second figure). Beside it the
    power the same formula gives with the planted pairs' own standard errors (from their intervals on the null data
    sets): the planted model is the one whose names are spread most unevenly, so its pairs are not the median; and
    the simulated power of the planted pair found least often."""
    from scipy import stats

    print(f"{args.sims} data sets per row, {args.models} models, k = {args.samples}, alpha 0.05, Holm over the "
          "column's pairs\n")
    print("| domain | names | rate | board's separable difference (80% power): typical pair / hardest pair | planted | "
          "predicted power (the board's median pair) | predicted power (the planted pairs' own SE) | simulated power "
          "of a planted pair | of the planted pair found least often |")
    print("|---|---|---|---|---|---|---|---|---|")
    level = 0.05 / (args.models * (args.models - 1) / 2)
    z = stats.norm.isf(level / 2)
    for domain in args.domains.split(","):
        sizes, groups = bold_design(domain, args.data_dir)
        strata = groups if args.strata == "groups" else None
        for rate in map(float, args.rates.split(",")):
            rng = np.random.default_rng(zlib.crc32(repr((domain, rate, "planning")).encode()))
            separable, own, hardest = [], [], []
            for _ in range(args.sims):
                separable.append(one_board(rng, sizes, strata, args.models, rate, 0.0, args.samples)[4])
                hardest.append(one_board.hardest)  # type: ignore[attr-defined]
                pairs = one_board.pairs  # type: ignore[attr-defined]
                mine = pairs[((pairs["model_a"] == "m0") | (pairs["model_b"] == "m0")) & pairs["p_value"].notna()]
                own.append((mine["ci_high"] - mine["ci_low"]).to_numpy() / 2 / stats.norm.isf(0.025))
            separable, hardest_pair = float(np.nanmedian(separable)), float(np.nanmedian(hardest))

            def grow(effect: float, rate: float = rate) -> float:
                """A pair's SE at a difference `effect` over its SE where the models agree."""
                moved = min(rate + effect, 0.5) if rate <= 0.5 else max(rate - effect, 0.5)
                return math.sqrt((rate * (1 - rate) + moved * (1 - moved)) / (2 * rate * (1 - rate)))

            se = separable / (z + stats.norm.ppf(0.8)) / grow(separable)
            se_own = float(np.median(np.concatenate(own)))
            for effect in sorted({args.effect, round(separable, 3), round(hardest_pair, 3)}):
                if rate + effect >= 0.99:
                    continue
                found = []
                for _ in range(args.sims):
                    one_board(rng, sizes, strata, args.models, rate, effect, args.samples)
                    found.append(one_board.planted_found)  # type: ignore[attr-defined]
                predicted, mine = (stats.norm.cdf(effect / (value * grow(effect)) - z)
                                   + stats.norm.cdf(-effect / (value * grow(effect)) - z) for value in (se, se_own))
                share = float(np.mean(np.concatenate(found)))
                least = float(np.min(np.mean(np.vstack(found), axis=0)))
                mark = (" (typical)" if effect == round(separable, 3) else
                        " (hardest)" if effect == round(hardest_pair, 3) else "")
                print(f"| {domain} | {len(sizes)} | {rate} | {separable:.3f} / {hardest_pair:.3f} | +{effect:.3f}"
                      f"{mark} | {predicted:.0%} | {mine:.0%} | {share:.0%} | {least:.0%} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--domains", default="religious_ideology,political_ideology,race")
    parser.add_argument("--rates", default="0.05,0.3")
    parser.add_argument("--effect", type=float, default=0.1)
    parser.add_argument("--samples", type=int, default=1, help="samples per prompt of each model (k)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--method", choices=("paired-score", "sign-flip"), default="paired-score")
    parser.add_argument("--strata", choices=("groups", "none"), default="groups",
                        help="the paired test's strata: the names' BOLD groups (as the board tests), or none")
    parser.add_argument("--planning", action="store_true",
                        help="check the board's separable difference instead: its predicted power against each "
                             "planted pair's simulated power, at --effect and at the predicted difference")
    parser.add_argument("--planted-spread", type=float, default=SPREADS[0], choices=SPREADS,
                        help="a + b of the planted model m0's per-name Beta (the others cycle on through SPREADS)")
    args = parser.parse_args()
    FIRST_SPREAD[0] = SPREADS.index(args.planted_spread)
    if args.method == "sign-flip":
        import bold_eval.analysis.leaderboard as board

        board.paired_rate_tests = sign_flip_tests
    started = time.perf_counter()
    if args.planning:
        planning(args)
        print(f"\n{time.perf_counter() - started:.0f} s")
        return
    print(f"{args.method} ({args.strata} as strata): {args.sims} data sets per row, {args.models} models (per-name "
          f"Beta a + b cycling through {', '.join(map(str, SPREADS))}), k = {args.samples}, alpha 0.05, Holm\n")
    print("| domain | names | rate | planted | any false separation in the column | any model marked vs Wikipedia "
          "| pair tests with p <= 0.001 | planted model separated from every other | board's separable difference "
          "(80% power) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for domain in args.domains.split(","):
        sizes, groups = bold_design(domain, args.data_dir)
        for rate in map(float, args.rates.split(",")):
            for effect in (0.0, args.effect):
                rng = np.random.default_rng(zlib.crc32(repr((domain, rate, effect)).encode()))
                false_sep = marked = planted = 0
                tail, predicted = [], []
                for _ in range(args.sims):
                    separated, against, p_values, found, guess = one_board(
                        rng, sizes, groups if args.strata == "groups" else None, args.models, rate, effect,
                        args.samples)
                    predicted.append(guess)
                    false_sep += separated
                    marked += against
                    planted += found
                    tail.append(p_values[np.isfinite(p_values)])
                tail = np.concatenate(tail)
                share = false_sep / args.sims
                se = math.sqrt(max(share, 1 / args.sims) * (1 - share) / args.sims)
                tail_share = float(np.mean(tail <= 0.001)) if len(tail) else float("nan")
                print(f"| {domain} | {len(sizes)} | {rate} | {'+' + str(effect) if effect else 'none'} | "
                      f"{share:.1%} ± {se:.1%} | {'' if effect else f'{marked / args.sims:.1%}'} | "
                      f"{tail_share:.2%} of {len(tail)} | {f'{planted / args.sims:.0%}' if effect else ''} | "
                      f"{np.nanmedian(predicted):.3f} |",
                      flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
