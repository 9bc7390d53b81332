"""compare's test of continuous worst cases: the side variance `continuous_variance` by hand."""

from __future__ import annotations

import numpy as np
import pytest

from bold_eval.analysis.paired_rate_test import continuous_variance, score_sums


def test_continuous_variance_by_hand() -> None:
    """One side, names with values (0.1, 0.3), (0.0,), (0.6, 0.2, 0.4): 6 values summing to 1.6, at rate 0.25.
    Null-imposed sum of squares: (0.4 - 0.5)^2 + (0 - 0.25)^2 + (1.2 - 0.75)^2 = 0.275. Within-name variance
    sigma_w^2 = (0.66 - 0.56) / (6 - 3); between-name tau_hat^2 = (sum n_i (mean_i - p)^2 - 2 sigma_w^2) / (6 - 14/6)
    with p = 1.6 / 6; its ceiling tau_max^2 = 0.25 * 0.75 - sigma_w^2; shrunk by the rarer mass min(1.6, 4.4) = 1.6
    over the values: tau_s^2 = (1.6 tau_hat^2 + tau_max^2) / 2.6. Floor sigma_w^2 * 6 + tau_s^2 * (4 + 1 + 9) beats
    0.275, and the variance of the side's mean is floor / 36."""
    values = np.array([0.1, 0.3, 0.0, 0.6, 0.2, 0.4])
    side = score_sums(values, np.array([0, 0, 1, 2, 2, 2]), np.array([0]))
    sigma_w = (0.66 - 0.56) / 3
    p = 1.6 / 6
    tau_hat = (2 * (0.2 - p) ** 2 + (0.0 - p) ** 2 + 3 * (0.4 - p) ** 2 - 2 * sigma_w) / (6 - 14 / 6)
    tau_max = 0.25 * 0.75 - sigma_w
    tau_s = (1.6 * tau_hat + tau_max) / 2.6
    floor = sigma_w * 6 + tau_s * 14
    assert floor > 0.275
    assert continuous_variance(side, np.array(0.25))[0] == pytest.approx(floor / 36)
    # far from the values' own mean the null-imposed sum of squares is the larger
    squares = (0.4 - 2 * 0.9) ** 2 + (0.0 - 0.9) ** 2 + (1.2 - 3 * 0.9) ** 2
    tau_max = 0.9 * 0.1 - sigma_w
    floor = sigma_w * 6 + (1.6 * tau_hat + tau_max) / 2.6 * 14
    assert squares > floor
    assert continuous_variance(side, np.array(0.9))[0] == pytest.approx(squares / 36)
