"""benchmarks/wild_bootstrap.py, the wild cluster bootstrap measured as a candidate test: its array form against
the bootstrap done text by text, and a tiny run of its level table. The measurements are in
benchmarks/CALIBRATION.md, "The wild cluster bootstrap, measured"."""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pytest
from statsmodels.regression.linear_model import OLS

from bold_eval.testing.scripts import script_module


@pytest.fixture(scope="module")
def wild():
    with script_module("calibration_unlike"), script_module("wild_bootstrap") as module:
        yield module


def _texts(t: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-text 0/1 labels and each text's name."""
    labels = np.concatenate([np.r_[np.ones(int(h)), np.zeros(int(m - h))] for h, m in zip(t, n, strict=True)])
    return labels, np.repeat(np.arange(len(t)), n.astype(int))


def test_the_array_bootstrap_is_the_per_text_regression_refitted_on_every_draw(wild):
    """12 names (4 against 8), a planted difference: the CR1 t of the slope is statsmodels' cluster t, and every
    draw's bootstrap t, for all 4,096 Rademacher sign patterns and for 50 Webb draws, is the one the per-text
    OLS refit gives; the enumerated p-value is the share of patterns at least as extreme."""
    rng = np.random.default_rng(5)
    n = rng.integers(1, 8, 12).astype(float)
    side = np.arange(12) < 4
    t = rng.binomial(n.astype(int), np.clip(rng.beta(2, 4, 12) + 0.35 * side, 0, 1)).astype(float)
    y, name = _texts(t, n)
    fit = OLS(y, np.c_[np.ones(len(y)), side[name]]).fit(cov_type="cluster", cov_kwds={"groups": name})
    patterns = np.array(list(itertools.product([-1.0, 1.0], repeat=12)))
    for weights, rademacher in ((patterns, True), (wild.webb(rng, 50, 12), False)):
        estimate, statistic, star = wild.bootstrap_t(t, n, side[:, None], weights, rademacher=rademacher)
        direct, direct_star = wild.direct_bootstrap_t(y, name, side[name], weights)
        assert statistic[0] == pytest.approx(direct) == pytest.approx(fit.tvalues[1])
        assert estimate[0] == pytest.approx(fit.params[1])
        np.testing.assert_allclose(star[:, 0], direct_star, rtol=1e-9, atol=1e-12)
    _, statistic, star = wild.bootstrap_t(t, n, side[:, None], patterns, rademacher=True)
    share = float(np.mean(np.abs(star[:, 0]) >= abs(statistic[0]) * (1 - 1e-9)))
    assert 0.001 < share < 0.02  # 24 of the 4,096 patterns: a clear difference, well short of the smallest p


def test_a_family_sharing_its_names_is_tested_at_once(wild):
    """Three contrasts of one domain in one call give the p-values each gets alone, on the same weights."""
    rng = np.random.default_rng(2)
    n = rng.integers(1, 6, 90).astype(float)
    group = np.repeat([0, 1, 2], 30)
    t = rng.binomial(n.astype(int), np.where(group == 0, 0.6, 0.3)).astype(float)
    sides = group[:, None] == np.arange(3)[None, :]
    weights = wild.draw_weights(np.random.default_rng(9), 399, 90)
    together = wild.wild_cluster_tests(t, n, sides, draws=399, weights=weights)[399]
    for k in range(3):
        alone = wild.wild_cluster_tests(t, n, sides[:, k], draws=399, weights=weights)[399]
        assert together.p_value[k] == alone.p_value[0]
    assert together.p_value[0] == pytest.approx(1 / 400)  # 0.6 against 0.3 on 30 names: no draw as extreme


def test_the_level_table_runs_small_and_the_test_tells_a_plant_from_a_null(wild, capsys):
    """The fast path of the level table on one design size (10 names against 60, 20 data sets): a header and six
    rows of ten cells. On one seed-fixed data set, 40 names raised by 0.4 against 60 (mean 0.3) are rejected at the Holm
    tail, and the same names with no difference are not rejected at 5%."""
    args = argparse.Namespace(alpha=0.05, family=36, draws=199, tail_draws=719, names=(10,), replicates=20,
                              product_replicates=3)
    wild.level_rows(args)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 0.")]
    assert len(rows) == 6 and all(line.count("|") == 11 for line in rows)
    rng = np.random.default_rng(4)
    n = 1 + np.minimum(rng.geometric(0.3, 100) - 1, 59).astype(float)
    side = np.arange(100) < 40
    rates = rng.beta(3.0, 7.0, 100)
    planted = rng.binomial(n.astype(int), np.clip(rates + 0.4 * side, 0, 1)).astype(float)
    null = rng.binomial(n.astype(int), rates).astype(float)
    draws = np.random.default_rng(1)
    found = wild.wild_cluster_tests(planted, n, side, draws=399, rng=draws)[399]
    tail = wild.tail_p_values(planted, n, side, found, draws=719, level=0.05 / 36, rng=draws)
    assert abs(found.statistic[0]) > 6 and tail[0] == pytest.approx(1 / 720)  # no draw as extreme
    assert wild.wild_cluster_tests(null, n, side, draws=399, rng=draws)[399].p_value[0] > 0.2


@pytest.mark.slow
def test_the_enumerated_p_value_is_the_wildboottest_packages(wild):
    """Against the `wildboottest` package (not a dependency: runs where it is installed, with numba): the same
    restricted bootstrap (impose_null, CR1 '11'), which enumerates all 2^12 Rademacher patterns on 12 names, gives
    the same t and the same share of patterns more extreme, up to the two patterns that tie with the data."""
    import pandas as pd

    package = pytest.importorskip("wildboottest.wildboottest")
    for seed, names_a, shift in ((5, 4, 0.35), (6, 6, 0.25)):
        rng = np.random.default_rng(seed)
        names = 12
        n = rng.integers(1, 8, names).astype(float)
        side = np.arange(names) < names_a
        t = rng.binomial(n.astype(int), np.clip(rng.beta(2, 4, names) + shift * side, 0, 1)).astype(float)
        y, name = _texts(t, n)
        _, statistic, star = wild.bootstrap_t(t, n, side[:, None],
                                              np.array(list(itertools.product([-1.0, 1.0], repeat=names))),
                                              rademacher=True)
        model = OLS(y, pd.DataFrame({"const": np.ones(len(y)), "x": side[name].astype(float)}))
        with pytest.warns(UserWarning, match="full_enumeration"):
            reference = package.wildboottest(model, param="x", cluster=name, B=9999, weights_type="rademacher",
                                             impose_null=True, bootstrap_type="11", seed=1, show=False)
        assert reference.iloc[0, 0] == pytest.approx(statistic[0])
        # the package counts |t*| > |t| strictly: the patterns that tie (the data's own, +-1 everywhere) fall on
        # either side by rounding
        strict = np.mean(np.abs(star[:, 0]) > abs(statistic[0]) * (1 + 1e-9))
        weak = np.mean(np.abs(star[:, 0]) >= abs(statistic[0]) * (1 - 1e-9))
        assert strict - 1e-12 <= reference.iloc[0, 1] <= weak + 1e-12 and weak - strict <= 2 / 4096
