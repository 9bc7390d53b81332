"""The type checker `make lint` runs (pyproject.toml's [tool.mypy]) is strict enough to catch a misspelt or renamed
field of a result, also inside a function without annotations (check_untyped_defs)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bold_eval.testing.models import missing_prerequisite

ROOT = Path(__file__).resolve().parents[2]

READS = """
from bold_eval.analysis.compare import paired_difference
from bold_eval.analysis.results import ChiSquareTest, Method, MetricView


def first_p(view: MetricView) -> float | None:
    return view.tests[0].{chi_field}


def untyped(differences, clusters, rates):  # no annotations: checked only with check_untyped_defs
    result = paired_difference(differences, clusters, rates=rates)
    return result.{paired_field}, Method.{method}


def chi(test: ChiSquareTest) -> int | None:
    return test.{dof_field}
"""


def _mypy(snippet: str, tmp_path: Path) -> tuple[str, int]:
    try:
        from mypy import api
    except ImportError:
        missing_prerequisite("mypy is not installed (pip install -e '.[dev]'; `make test` installs it)")
    source = tmp_path / "reads_results.py"
    source.write_text(textwrap.dedent(snippet))
    # the cache `make lint` fills (the package's modules unchanged since: seconds instead of a cold run)
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                                      str(ROOT / ".mypy_cache"), str(source)])
    return stdout + stderr, status


@pytest.mark.slow
def test_mypy_fails_on_a_misspelt_field_of_a_result(tmp_path: Path) -> None:
    good = READS.format(chi_field="p_value", paired_field="discordant_names", method="PAIRED_SCORE",
                        dof_field="dof")
    output, status = _mypy(good, tmp_path)
    assert status == 0, output
    bad = READS.format(chi_field="p_valeu", paired_field="discordant", method="CLUSTER_SCORE", dof_field="degrees")
    output, status = _mypy(bad, tmp_path)
    assert status == 1
    for missing in ('"p_valeu"', '"discordant"', '"CLUSTER_SCORE"', '"degrees"'):
        assert missing in output, output
    errors = [line for line in output.splitlines() if ": error:" in line]
    assert errors and all(any(name in line for name in ("p_valeu", "discordant", "CLUSTER_SCORE", "degrees"))
                          for line in errors), output
