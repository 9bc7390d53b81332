"""A metric of one of the paper's view kinds needs only its spec.

"politeness" is sentiment's spec under another name, with other labels, title, figures and tables: the view kind
`LabelShares` (tested on the gender pair only, a table and figure per domain). "shouting" is toxicity's kind
`LabelRatio`: the share of loud texts as `loud_ratio`. Registered with nothing else, each gets its view, report
section, caveats, compare table and model-card rows from its spec.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bold_eval.analysis.results import PairTest
from bold_eval.analysis.views import metric_view
from bold_eval.hub.model_card import summary_metrics
from bold_eval.metrics import register_metric, unregister_metric
from bold_eval.metrics.spec import (
    CardRow,
    Columns,
    LabelRatio,
    LabelShares,
    MetricPresentation,
    MetricSpec,
    PaperTable,
    ViewKind,
    resolve_hook,
)
from bold_eval.report.compare import compare_runs
from bold_eval.report.run_report import write_report
from bold_eval.runfolder.json_files import read_summary
from bold_eval.testing.runs import write_run_folder

LABELS = ("polite", "neutral", "rude")
GROUPS = {"gender": ("American_actors", "American_actresses"), "race": ("African_Americans", "European_Americans")}


def _never(**options: object) -> None:
    raise AssertionError("the report and compare never load a scorer")


POLITENESS = MetricSpec(
    name="politeness",
    load_scorer=_never,
    labels={"politeness_label": LABELS},
    tested_labels={"polite": ("politeness_label", "polite"), "rude": ("politeness_label", "rude")},
    view=LabelShares(pairs=("gender",), by_domain=True, figure_title="Politeness, {domain} domain", wide_table=True,
                     paper_table=PaperTable("politeness_per_group", "Politeness per group (a toy table)")),
    presentation=MetricPresentation(
        title="Politeness (a toy metric of sentiment's kind)",
        colors={"rude": "#d7301f", "neutral": "#bdbdbd", "polite": "#1a9850"},
        card_rows=(CardRow("rude_politeness", "Rude texts (a toy)", "politeness", value="rude", finding="rude"),),
        instrument="a toy politeness rule",
        caveats=("Politeness here is a toy.",),
    ),
)
SHOUTING = MetricSpec(
    name="shouting",
    load_scorer=_never,
    labels={},
    tested_labels={"loud": ("shouting_is_loud", True)},
    view=LabelRatio(pairs=("gender",), paper_table=PaperTable("loud_ratio_per_group", "loud_ratio per group (toy)")),
    columns=Columns(boolean=("shouting_is_loud",)),
    presentation=MetricPresentation(
        title="Shouting (a toy metric of toxicity's kind)",
        card_rows=(CardRow("loud", "Loud texts (a toy)", "loud_ratio", key=None, count="loud", finding="loud"),),
    ),
)


@pytest.fixture
def toy_metrics() -> Iterator[None]:
    register_metric(POLITENESS)
    register_metric(SHOUTING)
    yield
    unregister_metric("politeness")
    unregister_metric("shouting")


def toy_scores(seed: int, names: int = 12) -> pd.DataFrame:
    """A scores table with the two toy metrics' columns only: one text per prompt, one prompt per name."""
    rng = np.random.default_rng(seed)
    rows = [{"prompt_id": f"{domain}/{group}/name_{i}/0", "domain": domain, "group": group, "category": "",
             "name": f"{group}_{i}", "sample": 0, "prompt": "Person was", "continuation": " kind.",
             "text": "Person was kind."}
            for domain, groups in GROUPS.items() for group in groups for i in range(names)]
    scores = pd.DataFrame(rows)
    scores["politeness_label"] = rng.choice(LABELS, len(scores)).astype(object)
    scores["shouting_is_loud"] = rng.random(len(scores)) < 0.3
    return scores


def test_every_view_kind_names_functions_that_exist() -> None:
    """Each kind's `ViewHooks` resolve: its analysis, report section and compare tables, imported by path."""
    kinds = ViewKind.__subclasses__()
    assert {kind.__name__ for kind in kinds} >= {"LabelShares", "LabelRatio", "Categories", "GenderRatio"}
    for kind in kinds:
        assert set(kind.hooks.resolved()) == {"tables", "section", "paper_tables"}, kind.__name__
    with pytest.raises(ValueError, match="has no function 'no_such_view'"):
        resolve_hook("bold_eval.analysis.views:no_such_view")


def test_the_views_come_from_the_spec(toy_metrics) -> None:
    scores = toy_scores(0)
    view = metric_view("politeness")(scores)
    assert list(view.tables) == ["politeness"] and set(view.tables.shares["politeness"]["label"]) == set(LABELS)
    pairs = {(test.group_a, test.group_b) for test in view.tests if isinstance(test, PairTest)}
    assert pairs == {GROUPS["gender"]}  # pairs=("gender",): no race pair
    assert {test.label for test in view.tests} == {"polite", "rude"}
    tables = metric_view("shouting")(scores).tables
    assert tables.name == "loud_ratio" and list(tables) == ["loud_ratio"]
    ratio = tables.ratio.set_index("group")
    actors = scores[scores["group"] == "American_actors"]["shouting_is_loud"]
    assert ratio.loc["American_actors", "loud"] == actors.sum()
    assert ratio.loc["American_actors", "loud_ratio"] == pytest.approx(actors.mean())


def test_report_compare_and_card_come_from_the_spec(toy_metrics, tmp_path: Path) -> None:
    first = write_run_folder(tmp_path / "a", toy_scores(1), model="first", anonymize=True, score_on="full")
    second = write_run_folder(tmp_path / "b", toy_scores(2), model="second", anonymize=True, score_on="full")
    write_report(first)
    report = (first / "report.md").read_text()
    section = report.split("## Politeness (a toy metric of sentiment's kind)\n")[1].split("\n## ")[0]
    for line in ("### gender", "### race", "![politeness gender](figures/politeness_gender.png)"):
        assert line in section
    assert (first / "figures" / "politeness_race.png").is_file()
    assert (first / "tables" / "politeness_wide.csv").is_file()
    assert "![loud ratio](figures/loud_ratio.png)" in report.split("## Shouting (a toy metric of toxicity's kind)")[1]
    assert "a toy politeness rule" in report and "- Politeness here is a toy." in report

    compare_runs([first, second], tmp_path / "compare")
    compared = (tmp_path / "compare" / "compare.md").read_text()
    assert "### Politeness per group (a toy table)" in compared and "### loud_ratio per group (toy)" in compared
    table = pd.read_csv(tmp_path / "compare" / "tables" / "politeness_per_group.csv")
    assert list(table.columns) == ["domain", "group", "model", "total", *LABELS]
    assert list(table["model"][:2]) == ["first", "second"] and len(table) == 2 * 4

    rows = {(row["domain"], row["metric_type"]): row for row in summary_metrics(read_summary(first).to_dict())}
    scores = toy_scores(1)
    gender = scores[scores["domain"] == "gender"]
    assert rows[("gender", "rude_politeness_ratio")]["value"] == pytest.approx((gender["politeness_label"] == "rude")
                                                                              .mean())
    assert rows[("race", "loud_ratio")]["value"] == pytest.approx(scores[scores["domain"] == "race"]
                                                                  ["shouting_is_loud"].mean())
