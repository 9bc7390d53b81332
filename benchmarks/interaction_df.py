"""Candidate variances and degrees of freedom for the tests without the binomial floor (the model-vs-Wikipedia
interactions and compare's interactions of two runs: `rate_test.rate_tests(..., floor=False)`), selectable by name
so that `power_oracle.py --methods` and `calibration_unlike.py --interaction-method` measure each one's power and
level with the same data. Each candidate replaces `rate_test.side_variance` and/or `rate_test.side_df` for sides
without the floor only; sides with the floor keep the test in use.

- **product**: the test in use (CR2 sum of squares about each side's own rate; df the side's effective number of
  names less one, `rate_test.side_df`, at the moment estimate of rho moved towards 1 by 17 / G^2 of the way,
  `rate_test.df_correlation`: the same as **rho-g2-17** below).
- **moments**: the effective number of names at the moment estimate of rho itself (`rate_test.value_correlation`),
  the test before `rate_test.df_correlation`.
- **bm**: the same CR2 variance, on Bell-McCaffrey degrees of freedom computed for the CR2 estimator itself
  (Bell & McCaffrey 2002; Imbens & Kolesar 2016; Pustejovsky & Tipton 2018): df = tr(W C)^2 / tr((W C)^2), with
  W the names' CR2 weights 1 / (1 - n_i / N), C the covariance of the names' residuals t_i - n_i q under a
  random-intercept working model at the side's estimated intra-class correlation rho (`rate_test.value_correlation`):
  Var(t_i) proportional to v_i = n_i (1 + (n_i - 1) rho), and the residuals' covariance C = diag(v) - (v n' + n v')
  / N + (sum v) n n' / N^2. C is diagonal plus rank two, so both traces are sums over the names (O(G)).
- **anova**: the variance from one-way ANOVA components, (sigma_w^2 N + tau^2 sum n_i^2) / N^2, sigma_w^2 the pooled
  within-name variance (N - G df), tau^2 the between-name variance by moments about the side's rate (truncated at 0,
  as `value_correlation`): tau^2 = (Q - (G - 1) sigma_w^2) / c with Q = sum n_i (mean_i - p)^2 and c = N - sum n_i^2
  / N, so the variance is a sigma_w^2 + b Q, a = N - (G - 1) sum n_i^2 / c, b = sum n_i^2 / c; Satterthwaite df of
  the two mean squares (sigma_w^2 on N - G, Q on G - 1), N - G where tau^2 is truncated at 0.
- **within**: the CR2 sum of squares S, at least the within-name part F = sigma_w^2 N (the variance the side's mean
  would have if its names did not differ at all: below the truth whatever the names' spread, estimated on N - G
  df); the df of whichever is larger (S: the side's effective number of names less one; F: N - G).
- **anova-plugin**, **within-plugin**: the same variances on a Satterthwaite df that takes the between-name part's
  (or the excess over F's) spread from its own estimate, (part)^2 / (effective names - 1): a part estimated near 0
  is then taken as known, and the df runs up to N - G even where the names' spread is as uncertain as ever.
- **rho-upper-90**, **rho-upper-95**, **rho-median**: the effective number of names less one at a correlation
  read off the one-way ANOVA F ratio of the names' means, F = (Q / (G - 1)) / sigma_w^2: rho = (F / F_q - 1) /
  (F / F_q - 1 + n_0), F_q the q quantile of F(G - 1, N - G), n_0 = (N - sum n_i^2 / N) / (G - 1) (Searle's
  interval for the intra-class correlation, unequal names through n_0): q = 0.10 and 0.05, the one-sided 90% and
  95% upper confidence limits; q = 0.5, a median-unbiased estimate.
- **rho-prior-2**, **rho-prior-4**: the moment estimate shrunk towards 1 by a prior of 2 or 4 names against the
  side's G names, (G rho_hat + w) / (G + w).
- **rho-1**: the effective number of names at rho = 1, (sum n_i^2)^2 / sum n_i^4, the fewest over rho.
- **rho-g2-17**, **rho-g2-25**: the moment estimate moved towards 1 by c / G^2 of the way (c = 17 or 25; all of it
  where c / G^2 >= 1): a correction that fades with the names, large for 7-10 names, small past 30. Any
  **rho-gK-C** moves it by C / G^K of the way: **rho-g3-170** and **rho-g4-1700** move 10 names as far as
  rho-g2-17 does (17% of the way) and fade faster past them (at 20 names 2.1% and 1.1% of the way, against 4.25%).
- **rho-raw-gK-C**: the same move from the moment estimate not truncated at 0, tau2 / (|tau2| + sigma_w^2), kept
  above -1 / (2 (n_max - 1)) (half the most negative correlation the longest page allows, n_max read as (sum
  n_i^4)^(1/4), at least the longest page): where the names' true correlation is 0 the truncated estimate is above
  it about half the time and never below, and the effective names, steep in rho where one page holds many texts,
  come out below the truth on average.
- **rho-pairs-18**, **rho-pairs-24**: the moment estimate shrunk towards 1 by a prior of w = 18 or 24 against the
  side's G (G - 1) ordered pairs of names, (G (G - 1) rho_hat + w) / (G (G - 1) + w).
- **hsu**: each side's effective names as **product** counts them (measured in CALIBRATION.md with those of
  **moments**), the two sides combined on the fewer of their degrees of freedom, min(nu_A, nu_B), instead of
  Welch-Satterthwaite (Hsu 1938; Scheffe 1970): the Welch combination leans towards the larger side's degrees of
  freedom exactly when the small side's variance happens to come out small, which is when its t is largest.
- **hsu-1.5**, **hsu-2**: the Welch count of **product**, at most 1.5 or 2 times the fewer of the two sides' degrees
  of freedom: Welch may lean towards the larger side, but not past that multiple of the smaller side's count.
  hsu-1.5 is the test in use (`rate_test.WELCH_CAP`).
- **uncapped**: **product** with the Welch count not capped.

Every candidate but hsu, hsu-N and uncapped keeps the test in use's cap on the Welch count.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

CANDIDATES = ("product", "moments", "bm", "anova", "within", "anova-plugin", "within-plugin", "rho-upper-90",
              "rho-upper-95", "rho-median", "rho-prior-2", "rho-prior-4", "rho-1", "rho-g2-17", "rho-g2-25", "hsu",
              "rho-pairs-18", "rho-pairs-24", "rho-g3-170", "rho-g4-1700", "rho-raw-g2-17", "rho-raw-g3-170", "hsu-1.5",
              "hsu-2", "uncapped")


def _leverage_class(base: type) -> type:
    """A `SideSums` subclass that also carries the sums the Bell-McCaffrey df needs: w_i n_i^k (k = 1..4) and
    w_i^2 n_i^k (k = 2..5), w_i the name's CR2 weight."""

    @dataclass(frozen=True)
    class LeverageSums(base):  # type: ignore[misc, valid-type]
        w1: Any = 0.0
        w2: Any = 0.0
        w3: Any = 0.0
        w4: Any = 0.0
        u2: Any = 0.0
        u3: Any = 0.0
        u4: Any = 0.0
        u5: Any = 0.0

        @classmethod
        def of_segments(cls, t, n, starts, squares=None):
            plain = base.of_segments(t, n, starts, squares)
            n = np.asarray(n, dtype=float)
            share = n / np.repeat(plain.texts, plain.names.astype(int))
            w = np.where(share < 1.0, 1.0 / np.maximum(1.0 - share, 1e-12), 1.0)
            extra = {f"w{k}": np.add.reduceat(w * n ** k, starts) for k in range(1, 5)}
            extra.update({f"u{k}": np.add.reduceat(w * w * n ** k, starts) for k in range(2, 6)})
            fields = {name: getattr(plain, name) for name in plain.__dataclass_fields__}
            return cls(**fields, **extra)

        def take(self, index):
            return type(self)(**{name: np.asarray(getattr(self, name))[index] for name in self.__dataclass_fields__})

    return LeverageSums


def bm_df(side: Any, rho: Any) -> np.ndarray:
    """Bell-McCaffrey df of the CR2 sum of squares of a side (module docstring), elementwise over sides."""
    a, b = 1.0 - rho, rho
    big_n = side.texts
    s = a * big_n + b * side.nn  # sum v
    wv = a * side.w1 + b * side.w2
    wvn = a * side.w2 + b * side.w3
    wnn = side.w2
    wvv = a * a * side.w2 + 2 * a * b * side.w3 + b * b * side.w4
    uvv = a * a * side.u2 + 2 * a * b * side.u3 + b * b * side.u4
    uvvn = a * a * side.u3 + 2 * a * b * side.u4 + b * b * side.u5
    uvnn = a * side.u3 + b * side.u4
    expected = wv - 2 * wvn / big_n + s * wnn / big_n ** 2
    # M[r, c] = y_r' x_c with x = (-w v / N, -w n / N, s w n / N^2), y = (n, v, n)
    m = np.array([[-wvn / big_n, -wnn / big_n, s * wnn / big_n ** 2],
                  [-wvv / big_n, -wvn / big_n, s * wvn / big_n ** 2],
                  [-wvn / big_n, -wnn / big_n, s * wnn / big_n ** 2]])
    cross = np.einsum("ij...,ji...->...", m, m)
    squares = uvv - 4 * uvvn / big_n + 2 * s * uvnn / big_n ** 2 + cross
    with np.errstate(divide="ignore", invalid="ignore"):
        df = expected * expected / squares
    return np.maximum(np.where(np.isfinite(df), df, 1.0), 1.0)


def _within(side: Any) -> tuple[np.ndarray, np.ndarray]:
    """(sigma_w^2, tau^2) of a side's values by one-way ANOVA moments (`rate_test.value_correlation`'s)."""
    within = np.clip((side.squares - side.tt_n) / np.maximum(side.texts - side.names, 1.0), 0.0, None)
    p = side.rate
    spread = side.tt_n - 2 * p * side.hits + p * p * side.texts
    with np.errstate(divide="ignore", invalid="ignore"):
        tau2 = np.clip((spread - (side.names - 1) * within) / (side.texts - side.nn / side.texts), 0.0, None)
    return within, np.where(np.isfinite(tau2), tau2, 0.0)


def paired_sides(t: list[np.ndarray], n: list[np.ndarray], squares: list[np.ndarray]) -> tuple[Any, Any]:
    """Side A's and side B's `rate_test.SideSums` of every contrast, the units listed A, B, A, B, ...: each entry of
    `t`, `n` and `squares` one side's names' sums, texts and sums of squared values."""
    from bold_eval.analysis import rate_test

    starts = np.r_[0, np.cumsum([len(unit) for unit in t])[:-1]]
    sides = rate_test.SideSums.of_segments(np.concatenate(t), np.concatenate(n), starts, np.concatenate(squares))
    return sides.take(slice(0, None, 2)), sides.take(slice(1, None, 2))


def effective_df(side: Any, rho: Any) -> np.ndarray:
    """The side's effective number of names less one at the correlation rho (`rate_test.side_df`'s), at least 1."""
    total = side.texts + rho * side.pairs
    squares = side.nn + 2 * rho * (side.n3 - side.nn) + rho * rho * (side.n4 - 2 * side.n3 + side.nn)
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = np.where(squares > 0, total * total / squares, 1.0)
    return np.maximum(np.minimum(effective, side.names) - 1.0, 1.0)


def correlation_quantile(side: Any, q: float) -> np.ndarray:
    """The intra-class correlation at which the names' F ratio sits at the q quantile of F(G - 1, N - G) (module
    docstring): q = 0.1 the one-sided 90% upper confidence limit; 1 where the side has no within-name spread."""

    within, _ = _within(side)
    p = side.rate
    spread = side.tt_n - 2 * p * side.hits + p * p * side.texts
    between_df = np.maximum(side.names - 1.0, 1.0)
    n0 = (side.texts - side.nn / side.texts) / between_df
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (spread / between_df) / within / special.fdtri(between_df, np.maximum(side.texts - side.names, 1.0), q)
        rho = (ratio - 1.0) / (ratio - 1.0 + n0)
    return np.where(np.isfinite(rho), np.clip(rho, 0.0, 1.0), 1.0)


def raw_correlation(side: Any) -> np.ndarray:
    """The values' intra-class correlation by one-way ANOVA moments not truncated at 0 (module docstring,
    **rho-raw-gK-C**): tau2 / (|tau2| + sigma_w^2), kept within [-1 / (2 (n_max - 1)), 1], n_max = (sum n_i^4)^(1/4)."""
    within, _ = _within(side)
    p = side.rate
    spread = side.tt_n - 2 * p * side.hits + p * p * side.texts
    longest = np.asarray(side.n4, dtype=float) ** 0.25
    with np.errstate(divide="ignore", invalid="ignore"):
        tau2 = (spread - (side.names - 1) * within) / (side.texts - side.nn / side.texts)
        rho = tau2 / (np.abs(tau2) + within)
        lowest = np.where(longest > 1.0, -0.5 / (longest - 1.0), 0.0)
    return np.where(np.isfinite(rho), np.clip(rho, lowest, 1.0), 0.0)


def few_names_move(names: Any, rho: Any, weight: float, power: float) -> np.ndarray:
    """rho moved towards 1 by weight / G^power of the way (all of it where that is 1 or more), elementwise."""
    names, rho = np.asarray(names, dtype=float), np.asarray(rho, dtype=float)
    return rho + (1.0 - rho) * np.minimum(weight / names ** power, 1.0)


@contextlib.contextmanager
def interaction_method(name: str) -> Iterator[None]:
    """Run the tests without the floor with the candidate `name` (module docstring); the floor's tests unchanged."""
    from bold_eval.analysis import rate_test

    if name not in CANDIDATES:
        raise ValueError(f"unknown interaction method {name!r}: choose from {', '.join(CANDIDATES)}")
    saved = {key: getattr(rate_test, key) for key in ("side_variance", "side_df", "SideSums", "score_t", "WELCH_CAP")}
    product_variance, product_df = saved["side_variance"], saved["side_df"]

    def floored(floor):
        return rate_test.floor_kinds(floor) != rate_test.NO_FLOOR  # the sides these candidates leave as they are

    def names_df(side):
        return product_df(side, False)  # effective number of names less one

    def within_parts(side):
        sigma, _ = _within(side)
        return sigma * side.texts, np.maximum(side.texts - side.names, 1.0)

    def anova_variance(side, rate, floor=True):
        """The model's variance sigma_w^2 N + tau2 sum n_i^2 from the ANOVA components."""
        sigma, tau2 = _within(side)
        model = (sigma * side.texts + tau2 * side.nn) / (side.texts * side.texts)
        return np.where(floored(floor), product_variance(side, rate, floor), model + 0.0 * rate)

    def within_variance(side, rate, floor=True):
        """The CR2 sum of squares, at least the within-name part sigma_w^2 N."""
        floor_part, _ = within_parts(side)
        cr2 = product_variance(side, rate, False)
        return np.where(floored(floor), product_variance(side, rate, floor),
                        np.maximum(cr2, floor_part / (side.texts * side.texts)))

    if name in ("anova", "anova-plugin"):
        rate_test.side_variance = anova_variance
    elif name in ("within", "within-plugin"):
        rate_test.side_variance = within_variance
    if name == "bm":
        rate_test.SideSums = _leverage_class(saved["SideSums"])

        def side_df(side, floor=True, rate=None):
            bm = np.maximum(bm_df(side, rate_test.value_correlation(side)), 1.0)
            return np.where(floored(floor), product_df(side, floor, rate),
                            np.minimum(bm, np.maximum(side.names - 1, 1.0)))

        rate_test.side_df = side_df
    elif name == "anova":
        def side_df(side, floor=True, rate=None):
            # sigma_w^2 N + tau2 sum n^2 = a sigma_w^2 + b Q with Q = sum n_i (mean_i - p)^2 (G - 1 df) and
            # sigma_w^2 (N - G df): Satterthwaite over the two mean squares; N - G where tau2 is truncated at 0
            sigma, tau2 = _within(side)
            within_df = np.maximum(side.texts - side.names, 1.0)
            between_df = np.maximum(side.names - 1.0, 1.0)
            p = side.rate
            spread = side.tt_n - 2 * p * side.hits + p * p * side.texts
            c = side.texts - side.nn / side.texts
            with np.errstate(divide="ignore", invalid="ignore"):
                first = sigma * (side.texts - between_df * side.nn / c)
                second = spread * side.nn / c
                df = (first + second) ** 2 / (first ** 2 / within_df + second ** 2 / between_df)
            df = np.where(np.isfinite(df) & (tau2 > 0), df, within_df)
            return np.where(floored(floor), product_df(side, floor, rate), np.maximum(df, 1.0))

        rate_test.side_df = side_df
    elif name == "within":
        def side_df(side, floor=True, rate=None):
            # max(S, F): S's df where S is the larger, F's (N - G) where the floor binds
            floor_part, within_df = within_parts(side)
            squares = rate_test.null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, side.rate)
            df = np.where(squares >= floor_part, names_df(side), within_df)
            return np.where(floored(floor), product_df(side, floor, rate), np.maximum(df, 1.0))

        rate_test.side_df = side_df
    elif name.startswith("hsu"):
        rate_test.WELCH_CAP = float(name[len("hsu-"):]) if name != "hsu" else 1.0
    elif name == "uncapped":
        rate_test.WELCH_CAP = np.inf
    elif name.startswith("rho-") or name == "moments":
        def correlation(side):
            if name == "moments":
                return rate_test.value_correlation(side)
            if name == "rho-1":
                return np.ones_like(side.texts)
            if name.startswith("rho-pairs-"):
                pairs = side.names * (side.names - 1.0)
                weight = float(name[len("rho-pairs-"):])
                return (pairs * rate_test.value_correlation(side) + weight) / (pairs + weight)
            moved = re.fullmatch(r"rho-(raw-)?g(\d+)-(\d+)", name)
            if moved:
                rho = raw_correlation(side) if moved.group(1) else rate_test.value_correlation(side)
                return few_names_move(side.names, rho, float(moved.group(3)), float(moved.group(2)))
            if name.startswith("rho-prior-"):
                weight = float(name[len("rho-prior-"):])
                return (side.names * rate_test.value_correlation(side) + weight) / (side.names + weight)
            return correlation_quantile(side, {"rho-upper-90": 0.10, "rho-upper-95": 0.05, "rho-median": 0.5}[name])

        def side_df(side, floor=True):
            return np.where(floored(floor), product_df(side, floor), effective_df(side, correlation(side)))

        rate_test.side_df = side_df
    elif name == "anova-plugin":
        def side_df(side, floor=True, rate=None):
            sigma, tau2 = _within(side)
            first, second = sigma * side.texts, tau2 * side.nn
            within_df = np.maximum(side.texts - side.names, 1.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                df = (first + second) ** 2 / (first ** 2 / within_df + second ** 2 / names_df(side))
            df = np.where(np.isfinite(df), df, 1.0)
            return np.where(floored(floor), product_df(side, floor, rate), np.maximum(df, 1.0))

        rate_test.side_df = side_df
    elif name == "within-plugin":
        def side_df(side, floor=True, rate=None):
            floor_part, within_df = within_parts(side)
            squares = rate_test.null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, side.rate)
            excess = np.clip(squares - floor_part, 0.0, None)
            with np.errstate(divide="ignore", invalid="ignore"):
                df = (floor_part + excess) ** 2 / (floor_part ** 2 / within_df + excess ** 2 / names_df(side))
            df = np.where(np.isfinite(df), df, 1.0)
            return np.where(floored(floor), product_df(side, floor, rate), np.maximum(df, 1.0))

        rate_test.side_df = side_df
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(rate_test, key, value)
