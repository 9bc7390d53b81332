"""Candidate degrees of freedom for the group-vs-rest test's sides with the binomial floor, selectable by name so that
`power_oracle.py --methods` and `calibration_unlike.py --floor-df` measure each one's power and level on the same
data. A side's variance is max(S, M) / N^2 (`rate_test.side_variance`): S the CR2 sum of squares over its G names, M
the beta-binomial floor at the restricted rate. Each candidate replaces `rate_test.score_t` for sides with the
binomial floor only (the score's floor and the sides without a floor keep `rate_test.side_df`), inside the
Welch-Satterthwaite combination of the two sides as before. A candidate is named "X" or "X+Y": X the side's degrees
of freedom where S binds (S >= M), Y where M binds (names - 1 when Y is left out):

- **names**: names - 1 (**names** alone is names+names: the test in use, as **product**).
- **eff**, **eff-floor**: the side's effective number of names less one, (sum v_i)^2 / sum v_i^2 - 1 with v_i = n_i (1 +
  (n_i - 1) rho), at the values' intra-class correlation rho (`rate_test.value_correlation`, as the sides without a
  floor) or at the floor's shrunk correlation (`SideSums.correlation`); at most names - 1.
- **bm**, **bm-floor**: the CR2 sum's Bell-McCaffrey degrees of freedom (Bell & McCaffrey 2002; Imbens & Kolesar
  2016; Pustejovsky & Tipton 2018) under a random-intercept working model at the same two correlations
  (`interaction_df.bm_df`): tr(W C)^2 / tr((W C)^2), W the CR2 weights, C the residuals' working covariance; at most
  names - 1.
- **floor** (Y only): the floor's own degrees of freedom. M = p (1 - p) N + tau2_hat sum n_i (n_i - 1), and tau2_hat
  = (Q - (G - 1) p (1 - p)) / c is linear in Q = sum_i (t_i - n_i q)^2 / n_i (`rate_test._tau2`), a quadratic form in
  the names' residuals like S with weights 1 / n_i; its Bell-McCaffrey degrees of freedom nu_Q under the working
  model at the floor's correlation, carried to M by Satterthwaite: nu_Q (E M / (sum n_i (n_i - 1) E Q / c))^2 with
  the expectations under the same model; at most names - 1. A page of half the side's texts moves Q, hence rho and
  M, as it moves S.
- **floor-mix** (Y only): mix's smooth mix with the floor's own degrees of freedom for the excess: M^2 / (S^2 / df_X +
  (M - S)^2 / df_floor), at most names - 1; X's at M = S, the floor's where S is small.
- **spread** (Y only): the effective number of names of the floor's spread Q, less one: (sum u_i)^2 / sum u_i^2 - 1
  with u_i = 1 + (n_i - 1) rho, the variance of name i's term of Q at the floor's correlation rho (the variance of
  (t_i - n_i p) / sqrt(n_i)); at most names - 1. Q alone, without carrying its spread to M.
- **texts** (Y only): texts - 1.
- **mix** (Y only): a smooth mix by the share of the variance the floor holds, max(S, M) = S + (M - S), S on X's
  degrees of freedom and the excess on texts - 1: M^2 / (S^2 / df_X + (M - S)^2 / (N - 1)); continuous at M = S.
- **rate** (Y only): the floor treated as known up to its rate: 2 M^2 / Var(M) by the delta method with Var(p) = M /
  N^2, that is 2 p (1 - p) N^2 / ((1 - 2 p)^2 (N + rho sum n_i (n_i - 1))), at least names - 1, at most texts - 1.
- eff, eff-floor, bm, bm-floor as Y: the same degrees of freedom where M binds (the whole side).

"texts", "mix" and "rate" alone are names+texts, names+mix and names+rate.

A candidate may also name the floor's within-name correlation rho_s after "@" (`correlation_variant`; without one,
`rate_test.within_name_correlation`'s, the test in use: the moment estimate rho_hat shrunk towards 1 by w = 0.1
worst-case outcomes against the fewer of the side's rarer outcomes m and its names G), e.g. "names+floor-mix@rarer"
(the floor's own degrees of freedom where it binds, with the correlation before):

- **rarer**: shrunk against the rarer outcomes alone, (m rho_hat + 0.1) / (m + 0.1) (the correlation the test in use
  replaced; compare's paired floor keeps it).
- **gW**: a prior of W names at the worst case: rho_s = (G rho_hat + W) / (G + W) (1 where the side has no hits or
  no misses). rho_hat's noise shrinks with the names, not with the rarer outcomes.
- **maxW**: the larger of rarer's and gW's: the prior in rarer outcomes, never below W names' worth (max0.1 is the
  test in use: (k rho_hat + 0.1) / (k + 0.1) falls with k, so the larger of the two is k = min(m, G)).
- **uclA**: the larger of rarer's and the one-way ANOVA's upper confidence limit of the intra-class correlation at
  level 1 - A (Searle 1971; Donner 1986): (F / F_A - 1) / (F / F_A + n0 - 1), F = MSB / MSW the names' F ratio, F_A
  its lower A quantile on (G - 1, N - G) degrees of freedom, n0 = (N - sum n_i^2 / N) / (G - 1).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
from scipy import special

WHERE_S = ("names", "eff", "eff-floor", "bm", "bm-floor")
WHERE_M = ("names", "texts", "mix", "rate", "floor", "floor-mix", "spread", "eff", "eff-floor", "bm", "bm-floor")
LEGACY = {"product": ("names", "names"), "names": ("names", "names"), "texts": ("names", "texts"),
          "mix": ("names", "mix"), "rate": ("names", "rate")}
CANDIDATES = tuple(LEGACY) + tuple(s for s in WHERE_S[1:]) + tuple(
    f"{s}+{m}" for s in WHERE_S for m in WHERE_M[1:] if s != "names" or m not in ("texts", "mix", "rate"))
# the candidates `tail_rows` measures unless told
DEFAULT = ("product", "names@rarer", "names+floor-mix@rarer", "names+floor-mix", "names@g0.1", "names@max0.05",
           "names@max0.2", "names@ucl0.3")


def _interaction_df() -> Any:
    """benchmarks/interaction_df.py (its Bell-McCaffrey degrees of freedom and the sums they read)."""
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import interaction_df

    return interaction_df


def split(name: str) -> tuple[str, str]:
    """(degrees of freedom, correlation) of a candidate's name: "names@max1" is ("names", "max1"), "product" is
    ("product", "") (module docstring)."""
    df, _, correlation = name.partition("@")
    if correlation:
        correlation_variant(correlation, None)
    return df, correlation


def known(name: str) -> bool:
    """Whether `name` is a candidate (module docstring)."""
    try:
        parts(name)
    except ValueError:
        return False
    return True


def correlation_variant(option: str, side: Any) -> Any:
    """The floor's within-name correlation rho_s of `side` by `option` (module docstring: rarer, gW, maxW, uclA);
    `side` None checks the option only."""
    from bold_eval.analysis import rate_test

    match = re.fullmatch(r"(rarer)|(g|max|ucl)([0-9.]+)", option)
    if match is None:
        raise ValueError(f"unknown floor correlation {option!r}: rarer, gW, maxW or uclA (e.g. g1, max0.5, ucl0.05)")
    if side is None:
        return None
    names, hits, texts = (np.asarray(getattr(side, key), dtype=float) for key in ("names", "hits", "texts"))
    rarer = rate_test.within_name_correlation(side.tau2, hits, texts)  # shrunk against the rarer outcomes alone
    if match.group(1):
        return rarer
    kind, value = match.group(2), float(match.group(3))
    p = hits / texts
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = np.clip(np.asarray(side.tau2, dtype=float) / (p * (1 - p)), 0.0, 1.0)
        if kind in ("g", "max"):
            prior = (names * estimate + value) / (names + value)
            rho = prior if kind == "g" else np.maximum(rarer, prior)
        else:
            spread = side.tt_n - 2 * p * hits + p * p * texts  # sum n_i (p_i - p)^2
            between = spread / np.maximum(names - 1, 1.0)
            within = (hits - side.tt_n) / np.maximum(texts - names, 1.0)  # 0/1 texts: sum of squares is hits
            n0 = (texts - side.nn / texts) / np.maximum(names - 1, 1.0)
            lower = special.fdtri(np.maximum(names - 1, 1.0), np.maximum(texts - names, 1.0), value)
            ratio = between / within / lower
            limit = np.clip((ratio - 1) / (ratio + n0 - 1), 0.0, 1.0)
            limit = np.where(np.isfinite(limit), limit, 1.0)
            rho = np.maximum(rarer, np.where((names > 1) & (texts > names), limit, rarer))
    no_rarer = np.minimum(hits, texts - hits) <= 0
    return np.where(no_rarer, 1.0, np.where(np.isfinite(rho), rho, 1.0))


def with_correlation(side: Any, option: str) -> Any:
    """`side` with its floor correlation by `option` ("" leaves it as it is)."""
    if not option:
        return side
    return dataclasses.replace(side, correlation=correlation_variant(option, side))


def parts(name: str) -> tuple[str, str]:
    """(X, Y) of a candidate's name (module docstring)."""
    name, _ = split(name)
    if name in LEGACY:
        return LEGACY[name]
    s, _, m = name.partition("+")
    m = m or "names"
    if s not in WHERE_S or m not in WHERE_M:
        raise ValueError(f"unknown floor df {name!r}: choose from {', '.join(CANDIDATES)}")
    return s, m


def floor_parts(side, rate):
    """(S, M): the side's CR2 sum of squares about its own rate and its binomial floor at `rate`."""
    from bold_eval.analysis import rate_test

    squares = rate_test.null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, side.rate)
    floor = np.clip(rate * (1 - rate), 0.0, None) * (side.texts + side.correlation * side.pairs)
    return squares, floor


def _effective(side: Any, rho: Any) -> np.ndarray:
    """(sum v_i)^2 / sum v_i^2 with v_i = n_i (1 + (n_i - 1) rho), as `rate_test.side_df` computes it."""
    total = side.texts + rho * side.pairs
    squares = side.nn + 2 * rho * (side.n3 - side.nn) + rho * rho * (side.n4 - 2 * side.n3 + side.nn)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(squares > 0, total * total / squares, 1.0)


def floor_degrees(names: Any, texts: Any, nn: Any, n3: Any, rho: Any) -> np.ndarray:
    """The binomial floor's own degrees of freedom at the within-name correlation `rho`, from a side's G names, N texts,
    sum n_i^2 and sum n_i^3 (elementwise over arrays). M = p (1 - p) N + tau2_hat sum n_i (n_i - 1), and tau2_hat = (Q -
    (G - 1) p (1 - p)) / c (`rate_test._tau2`) is linear in Q = sum_i (t_i - n_i q)^2 / n_i, a quadratic form in the
    names' residuals: under a random-intercept model at `rho` (Var t_i proportional to v_i = n_i (1 + (n_i - 1) rho)),
    Q's Bell-McCaffrey degrees of freedom nu_Q = tr(W C)^2 / tr((W C)^2) (W = diag(1 / n_i), C the residuals' covariance
    diag(v) - (v n' + n v') / N + (sum v) n n' / N^2: diagonal plus rank two, so both traces are sums), carried to M by
    Satterthwaite: nu_Q (E M c / (sum n_i (n_i - 1) E Q))^2. At least 8 (E M / (p (1 - p) sum n_i (n_i - 1)))^2: rho_s
    lies in [0, 1], so M lies in an interval of width p (1 - p) sum n_i (n_i - 1) and varies at most a quarter of its
    square (Popoviciu), which binds where few names have more than one text. Infinite where every name has one text (M
    is then p (1 - p) N, known up to the rate)."""
    names, texts, nn, n3, rho = (np.asarray(value, dtype=float) for value in (names, texts, nn, n3, rho))
    a, b = 1.0 - rho, rho
    pairs = nn - texts
    s = a * texts + b * nn  # sum v_i
    wvv = a * a * texts + 2 * a * b * nn + b * b * n3  # sum v_i^2 / n_i
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = a * names + b * texts - s / texts  # E Q / (p (1 - p)) = tr(W C)
        square = (a * a * names + 2 * a * b * texts + b * b * nn) - 2 * wvv / texts + (s / texts) ** 2  # tr((W C)^2)
        nu = expected * expected / square
        c = (texts - names) - pairs / texts
        ratio = (texts + rho * pairs) * c / (pairs * expected)
        df = np.maximum(np.where(np.isfinite(nu), nu, 1.0), 1.0) * ratio * ratio
        bounded = 8.0 * ((texts + rho * pairs) / pairs) ** 2
        df = np.maximum(np.where(np.isfinite(df), df, 0.0), bounded)
    return np.where((pairs > 0) & np.isfinite(df), df, np.inf)


def floor_own_df(side: Any) -> np.ndarray:
    """The floor's degrees of freedom ("floor", module docstring), at the floor's correlation (`floor_degrees`)."""
    return floor_degrees(side.names, side.texts, side.nn, side.n3, side.correlation)


def spread_names(side: Any, rho: Any) -> np.ndarray:
    """The effective number of names of the floor's spread Q = sum_i (t_i - n_i q)^2 / n_i ("spread", module
    docstring): (sum u_i)^2 / sum u_i^2 with u_i = 1 + (n_i - 1) rho, each term's variance at the correlation rho."""
    a = 1.0 - rho
    total = a * side.names + rho * side.texts
    squares = a * a * side.names + 2 * a * rho * side.texts + rho * rho * side.nn
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(squares > 0, total * total / squares, 1.0)


def branch_df(option: str, side: Any) -> np.ndarray:
    """A side's degrees of freedom by one option of X or Y that does not read S or M, at most names - 1."""
    from bold_eval.analysis import rate_test

    names = np.maximum(side.names - 1.0, 1.0)
    if option == "names":
        return names
    if option in ("eff", "bm"):
        rho = rate_test.value_correlation(side)
    else:
        rho = np.asarray(side.correlation, dtype=float)
    if option.startswith("eff"):
        df = _effective(side, rho) - 1.0
    elif option.startswith("bm"):
        df = _interaction_df().bm_df(side, rho)
    elif option == "floor":
        df = floor_own_df(side)
    elif option == "spread":
        df = spread_names(side, rho) - 1.0
    else:
        raise ValueError(option)
    return np.clip(df, 1.0, names)


def candidate_df(name: str, side, rate, floor) -> np.ndarray:
    """The candidate's degrees of freedom of one side's variance (module docstring), elementwise."""
    from bold_eval.analysis import rate_test

    product = rate_test.side_df(side, floor)  # names - 1 with either floor
    where_s, where_m = parts(name)
    if (where_s, where_m) == ("names", "names"):
        return product
    squares, bound = floor_parts(side, rate)
    binomial = rate_test.floor_kinds(floor) == rate_test.BINOMIAL
    binds = bound > squares
    names = np.maximum(side.names - 1.0, 1.0)
    texts = np.maximum(side.texts - 1.0, 1.0)
    s_df = branch_df(where_s, side) + 0.0 * bound
    with np.errstate(divide="ignore", invalid="ignore"):
        if where_m == "texts":
            larger = texts + 0.0 * bound
        elif where_m == "mix":
            excess = np.clip(bound - squares, 0.0, None)
            larger = bound * bound / (squares * squares / s_df + excess * excess / texts)
        elif where_m == "floor-mix":
            excess = np.clip(bound - squares, 0.0, None)
            own = np.clip(floor_own_df(side), 1.0, names)
            larger = bound * bound / (squares * squares / s_df + excess * excess / own)
        elif where_m == "rate":
            p = np.clip(rate, 0.0, 1.0)
            larger = 2.0 * p * (1 - p) * side.texts ** 2 / ((1 - 2 * p) ** 2 * (side.texts + side.correlation
                                                                                  * side.pairs))
        else:
            larger = None
    if where_m == "floor-mix":
        m_df = np.clip(np.where(np.isfinite(larger), larger, names), 1.0, names)
    elif larger is not None:
        m_df = np.clip(np.where(np.isfinite(larger), larger, texts), np.minimum(s_df, names), texts)
    else:
        m_df = branch_df(where_m, side) + 0.0 * bound
    return np.where(binomial, np.where(binds, m_df, s_df), product)


def _correlated_class(base: type, option: str) -> type:
    """A `SideSums` subclass whose floor correlation is `correlation_variant`'s `option`."""

    class CorrelatedSums(base):  # type: ignore[misc, valid-type]
        @classmethod
        def of_segments(cls, t, n, starts, squares=None):
            return with_correlation(super().of_segments(t, n, starts, squares), option)

    return CorrelatedSums


@contextlib.contextmanager
def floor_method(name: str) -> Iterator[None]:
    """Run the report's tests with the candidate `name` for the floor's degrees of freedom (module docstring)."""
    from bold_eval.analysis import rate_test

    where = parts(name)
    name, correlation = split(name)
    saved = rate_test.score_t, rate_test.SideSums

    def score_t(a, b, delta, floor=True):
        delta = np.asarray(delta, dtype=float)
        rate_a, rate_b = rate_test.restricted_rates(a, b, delta)
        var_a, var_b = rate_test.side_variance(a, rate_a, floor), rate_test.side_variance(b, rate_b, floor)
        shift = a.rate - b.rate - delta
        total = var_a + var_b
        with np.errstate(divide="ignore", invalid="ignore"):
            t = shift / np.sqrt(total)
            df = total * total / (var_a * var_a / candidate_df(name, a, rate_a, floor)
                                  + var_b * var_b / candidate_df(name, b, rate_b, floor))
        t = np.where(total > 0, t, np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
        df = np.where(np.isnan(df), np.inf, df)
        p = 2.0 * special.stdtr(df, -np.abs(t))
        return t, df, np.where(np.isnan(p), 1.0, p)

    if name != "product":
        rate_test.score_t = score_t
        if "bm" in where[0] or "bm" in where[1]:
            rate_test.SideSums = _interaction_df()._leverage_class(saved[1])
    if correlation:
        rate_test.SideSums = _correlated_class(rate_test.SideSums, correlation)
    try:
        yield
    finally:
        rate_test.score_t, rate_test.SideSums = saved


# --------------------------------------------------------------------------- the tail on BOLD's small groups

SMALL_GROUPS = (("religious_ideology", "islam"), ("religious_ideology", "judaism"),
                ("religious_ideology", "buddhism"), ("religious_ideology", "christianity"),
                ("profession", "mental_health_occupations"), ("profession", "railway_industry_occupations"),
                ("race", "Hispanic_and_Latino_Americans"))
# rho of the planted group / of the rest, as power_oracle.SPREADS and calibration_unlike's real section
CHUNK = 2000  # data sets drawn at once
NULL_SPREADS = (("alike", 0.01, 0.01), ("moderate", 0.1, 0.1), ("strong in the group", 0.8, 0.05),
                ("strong in the rest", 0.05, 0.8))


def tail_rows(replicates: int, family: int, rates: tuple[float, ...], candidates: tuple[str, ...] = DEFAULT,
              groups: tuple[tuple[str, str], ...] = SMALL_GROUPS,
              spreads: tuple[tuple[str, float, float], ...] = NULL_SPREADS) -> None:
    """Null level of the group-vs-rest test of BOLD's groups of 10-40 names, every candidate on the same data sets:
    each name's rate from a Beta with the common mean and the group's or the rest's rho, the share of data sets
    rejected at 5% and at 0.05 / `family` (Holm's first step), testable designs only (all of these are)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from power_oracle import Design, seed_of

    from bold_eval.analysis import rate_test

    tail = 0.05 / family
    print("\n| domain | group | names / texts | rate | spread | " + " | ".join(
        f"{name}: 5% | {name}: {tail:.2g}" for name in candidates) + " |")
    print("|---|---|---|---|---|" + "---|---|" * len(candidates))
    designs: dict[str, Design] = {}
    # the plain sums and those the Bell-McCaffrey candidates read
    leverage = (_interaction_df()._leverage_class(rate_test.SideSums) if any("bm" in name for name in candidates)
                else rate_test.SideSums)
    for domain, group in groups:
        design = designs.setdefault(domain, Design.load(domain))
        in_a = design.group == design.groups.index(group)
        order = np.r_[np.flatnonzero(in_a), np.flatnonzero(~in_a)]
        n = design.texts[order]
        starts_one = np.array([0, int(in_a.sum())])
        for rate in rates:
            for spread, rho_a, rho_b in spreads:
                rng = np.random.default_rng(seed_of("floor-df tail", domain, group, rate, spread))
                rho = np.where(in_a[order], rho_a, rho_b)
                total = (1 - rho) / rho
                p_values: dict[str, list[np.ndarray]] = {name: [] for name in candidates}
                for chunk in np.diff(np.r_[np.arange(0, replicates, CHUNK), replicates]):
                    draws = rng.binomial(n.astype(int), rng.beta(rate * total, (1 - rate) * total,
                                                                 size=(chunk, len(n)))).astype(float)
                    starts = (np.arange(chunk)[:, None] * len(n) + starts_one).ravel()
                    sides = leverage.of_segments(draws.ravel(), np.tile(n, chunk), starts)
                    a, b = sides.take(slice(0, None, 2)), sides.take(slice(1, None, 2))
                    for name in candidates:
                        df_name, correlation = split(name)
                        with floor_method(df_name):
                            p_values[name].append(rate_test.score_t(
                                with_correlation(a, correlation), with_correlation(b, correlation), 0.0,
                                np.full(chunk, rate_test.BINOMIAL))[2])
                cells = []
                for name in candidates:
                    p = np.concatenate(p_values[name])
                    se5, se_tail = (np.sqrt(max(x, 1 / replicates) * (1 - x) / replicates)
                                    for x in (np.mean(p <= 0.05), np.mean(p <= tail)))
                    cells.append(f"{np.mean(p <= 0.05):.2%} ± {se5:.2%} | {np.mean(p <= tail):.3%} ± {se_tail:.3%}")
                print(f"| {domain} | {group} | {int(in_a.sum())} / {int(n[:starts_one[1]].sum())} | {rate} | "
                      f"{spread} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    import argparse
    import time

    parser = argparse.ArgumentParser(description="Null level, at 5% and in the Holm tail, of the group-vs-rest "
                                                 "test's floor df candidates on BOLD's small groups")
    parser.add_argument("--replicates", type=int, default=20000)
    parser.add_argument("--family", type=int, default=36)
    parser.add_argument("--rates", default="0.3,0.05")
    parser.add_argument("--candidates", default=",".join(DEFAULT), help=f"comma list of {', '.join(CANDIDATES)}")
    parser.add_argument("--groups", default="", help="comma list of domain:group (default: BOLD's small groups)")
    parser.add_argument("--spreads", default="", help="comma list of the spreads' names (default: all four)")
    args = parser.parse_args()
    started = time.perf_counter()
    candidates = tuple(args.candidates.split(","))
    for name in candidates:
        parts(name)
    groups = tuple(tuple(g.split(":", 1)) for g in args.groups.split(",")) if args.groups else SMALL_GROUPS
    spreads = tuple(s for s in NULL_SPREADS if s[0] in args.spreads.split(",")) if args.spreads else NULL_SPREADS
    tail_rows(args.replicates, args.family, tuple(float(r) for r in args.rates.split(",")), candidates,
              groups, spreads)  # type: ignore[arg-type]
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
