"""benchmarks/paired_floor.py: its candidate "in use" is the report's paired test (`paired_rate_tests`), and the
candidate that applies the sources' residual correlation to the floored variances in full is the one whose variance
collapses where one name carries a rare label in both sources. The candidates' level, power and coverage:
benchmarks/CALIBRATION.md, "compare's overall differences and the leaderboard: where the floors bind"."""

from __future__ import annotations

import numpy as np

from bold_eval.testing.scripts import script_module


def test_the_candidate_in_use_is_the_reports_test_and_the_full_move_collapses_on_one_name():
    """Sixty data sets of a null at 30 names (both sources on each person's rate): "in use" gives
    `paired_rate_tests`' estimate, interval, t and p exactly; the cross-product alone and the full move differ from it
    somewhere. Then one name with every label of both sources among ten: its residual correlation is 1, the full
    move shrinks the variance below the in-use one, which keeps the cross-product there (one effective name)."""
    from bold_eval.analysis.paired_rate_test import paired_rate_tests

    with script_module("paired_floor") as paired_floor:
        rng = np.random.default_rng(4)
        strata = paired_floor.strata_of(30)
        differ = {name: False for name in ("cross-product", "correlation on the floors")}
        for null in ("shared, a + b = 1, own view",):
            t_a, t_b, n = paired_floor.null_sums(rng, null, 0.3, 30, 60)
            report = paired_rate_tests(t_a, t_b, n, alpha=0.05, strata=strata)
            for left, right in zip(paired_floor.candidate_tests(t_a, t_b, n, strata, "in use"), report, strict=True):
                np.testing.assert_allclose(left, right)
            for name in differ:
                p_value = paired_floor.candidate_tests(t_a, t_b, n, strata, name)[4]
                differ[name] |= bool(np.any(np.abs(p_value - report[4]) > 1e-6))
        assert all(differ.values())
        n = np.full(10, 6.0)
        t_a, t_b = np.zeros((10, 1)), np.zeros((10, 1))
        t_a[0], t_b[0] = 5.0, 3.0
        assert paired_floor.effective_names(t_a, t_b, n, None)[0] < 1.5
        in_use = paired_floor.candidate_tests(t_a, t_b, n, None, "in use")
        full = paired_floor.candidate_tests(t_a, t_b, n, None, "correlation on the floors")
        assert abs(full[3][0]) > 1.2 * abs(in_use[3][0])
