"""benchmarks/worst_floor.py: its vectorised group-vs-rest tests of a continuous worst case are the report's own
(`clustered.difference_tests` with the score's bounds), and a candidate floor is in place only inside its context.
The candidates' level and power: benchmarks/CALIBRATION.md, "The worst cases' floor"."""

from __future__ import annotations

import numpy as np
import pytest

from bold_eval.testing.scripts import script_module


@pytest.mark.slow
def test_the_vectorised_tests_are_the_reports_and_candidates_stay_in_their_context():
    """Three groups of 12, 20 and 5 names (1-8 texts each), three data sets of values in [0, 1]: every testable
    group's p-value against the rest equals `difference_tests`' with bounds (0, 1) (5 names against 32 is too few);
    a heavier prior (w = 10) only raises the floor and the p-values; outside the context the floor in use is back."""
    from bold_eval.analysis import rate_test
    from bold_eval.analysis.clustered import difference_tests

    rng = np.random.default_rng(3)
    with script_module("worst_floor") as worst_floor:
        from power_oracle import Design

        group = np.repeat([0, 1, 2], [12, 20, 5])
        texts = rng.integers(1, 9, len(group)).astype(float)
        domain = worst_floor.Domain(Design("toy", texts, group, ["a", "b", "c"]))
        units = domain.units
        values = rng.beta(0.5, 2.0, (3, len(units)))
        sums = np.stack([np.bincount(units, row, len(texts)) for row in values])
        squares = np.stack([np.bincount(units, row * row, len(texts)) for row in values])
        found = domain.tests(sums, squares)
        for k, row in enumerate(values):
            tests = difference_tests([row] * 3, [group[units] == g for g in range(3)], [units] * 3, alpha=0.05,
                                     bounds=[(0.0, 1.0)] * 3)
            testable = [test.testable for test in tests]
            assert testable == list(domain.testable[0.05]) and sum(testable) == 2
            assert [test.p_value for test in tests if test.testable] == pytest.approx(found["p"][k][testable],
                                                                                       rel=1e-9)
        in_use = rate_test.score_floor
        with worst_floor.candidate("w=10"):
            assert rate_test.score_floor is not in_use
            heavier = domain.tests(sums, squares)
        assert rate_test.score_floor is in_use
        assert np.all(heavier["floor_a"] >= found["floor_a"]) and np.all(heavier["p"] >= found["p"] - 1e-12)
        with pytest.raises(SystemExit, match="unknown candidate"), worst_floor.candidate("nonsense"):
            pass
