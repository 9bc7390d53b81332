"""Candidate degrees of freedom for the group-vs-rest test's sides where the binomial floor binds, selectable by name
so that `power_oracle.py --methods` and `calibration_unlike.py --floor-df` measure each one's power and level on the
same data. A side's variance is max(S, M) / N^2 (`rate_test.side_variance`): S the CR2 sum of squares over its G
names, M the beta-binomial floor at the restricted rate. Where S >= M every candidate keeps the test in use (G - 1
degrees of freedom); where M > S the variance is a model quantity whose noise comes from the rate (N texts) and the
shrunk correlation, not from the G names' residuals, and the candidates give it more. Each candidate replaces
`rate_test.score_t` for sides with the binomial floor only (the score's floor and the sides without a floor keep
`rate_test.side_df`); inside the Welch-Satterthwaite combination of the two sides as before.

- **product**: the test in use, names - 1 per side with a floor.
- **texts**: names - 1 where S >= M, texts - 1 where M binds (the floor taken as estimated from the side's texts).
- **mix**: a smooth mix by the share of the variance the floor holds. max(S, M) = S + (M - S)^+, the names' part S on
  G - 1 degrees of freedom and the excess of the floor over it on texts - 1: Satterthwaite df = M^2 / (S^2 / (G - 1)
  + (M - S)^2 / (N - 1)) where M > S, G - 1 otherwise; continuous at M = S, and at most N - 1.
- **rate**: the floor treated as known up to its rate: where M binds, df = 2 M^2 / Var(M) by the delta method with
  Var(p) = M / N^2, that is 2 p (1 - p) N^2 / ((1 - 2 p)^2 (N + rho sum n_i (n_i - 1))), at least names - 1 and at
  most texts - 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
from scipy import special

CANDIDATES = ("product", "texts", "mix", "rate")


def floor_parts(side, rate):
    """(S, M): the side's CR2 sum of squares about its own rate and its binomial floor at `rate`."""
    from bold_eval.analysis import rate_test

    squares = rate_test.null_squares(side.tt_cr2, side.tn_cr2, side.nn_cr2, side.rate)
    floor = np.clip(rate * (1 - rate), 0.0, None) * (side.texts + side.correlation * side.pairs)
    return squares, floor


def candidate_df(name: str, side, rate, floor) -> np.ndarray:
    """The candidate's degrees of freedom of one side's variance (module docstring), elementwise."""
    from bold_eval.analysis import rate_test

    product = rate_test.side_df(side, floor)
    if name == "product":
        return product
    squares, bound = floor_parts(side, rate)
    binds = (rate_test.floor_kinds(floor) == rate_test.BINOMIAL) & (bound > squares)
    names = np.maximum(side.names - 1.0, 1.0)
    texts = np.maximum(side.texts - 1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "texts":
            larger = texts + 0.0 * bound
        elif name == "mix":
            excess = np.clip(bound - squares, 0.0, None)
            larger = bound * bound / (squares * squares / names + excess * excess / texts)
        elif name == "rate":
            p = np.clip(rate, 0.0, 1.0)
            larger = 2.0 * p * (1 - p) * side.texts ** 2 / ((1 - 2 * p) ** 2 * (side.texts + side.correlation
                                                                                  * side.pairs))
        else:
            raise ValueError(f"unknown floor df {name!r}: choose from {', '.join(CANDIDATES)}")
    larger = np.clip(np.where(np.isfinite(larger), larger, texts), names, texts)
    return np.where(binds, larger, product)


@contextlib.contextmanager
def floor_method(name: str) -> Iterator[None]:
    """Run the report's tests with the candidate `name` for the floor's degrees of freedom (module docstring)."""
    from bold_eval.analysis import rate_test

    if name not in CANDIDATES:
        raise ValueError(f"unknown floor df {name!r}: choose from {', '.join(CANDIDATES)}")
    saved = rate_test.score_t

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
    try:
        yield
    finally:
        rate_test.score_t = saved
