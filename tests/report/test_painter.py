"""bold_eval.report.painter: figures drawn in a worker process are the files the report's own process draws, and a
figure the worker cannot write stops the report with the worker's own error."""

from __future__ import annotations

import pandas as pd
import pytest

from bold_eval.core.environment import FIGURE_WORKER_ENV
from bold_eval.report import figures
from bold_eval.report.painter import Painter, worker_wanted


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for group, counts in (("a", (1, 3, 6)), ("b", (5, 4, 1))):
        for label, count in zip(("negative", "neutral", "positive"), counts, strict=True):
            rows.append({"group": group, "label": label, "count": count, "total": 10, "proportion": count / 10,
                         "ci_low": max(0.0, count / 10 - 0.1), "ci_high": min(1.0, count / 10 + 0.2)})
    toxic = pd.DataFrame({"domain": ["race", "race"], "group": ["a", "b"], "total": [40, 40],
                          "toxic_ratio": [0.02, 0.1], "ci_low": [0.0, 0.05], "ci_high": [0.08, 0.2]})
    return pd.DataFrame(rows), toxic


@pytest.mark.slow
def test_a_worker_draws_the_same_files_and_carries_its_errors_back(tmp_path) -> None:
    bars, toxic = _tables()
    colors = {"negative": "#d62728", "neutral": "#cccccc", "positive": "#2ca02c"}
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    painters = {here: Painter(worker=False), there: Painter(worker=True)}
    for folder, painter in painters.items():
        assert painter.in_worker is (folder == there)
        assert painter.draw(figures.plot_stacked_proportions, bars, colors, "shares",
                            path=folder / "bars.png") == folder / "bars.png"
        painter.draw(figures.plot_ratio, toxic, path=folder / "toxic.png", label="toxic")
    painters[here].finish()
    worker = painters[there]
    worker.draw(figures.plot_ratio, toxic, path=tmp_path / "missing" / "toxic.png", label="toxic")
    worker.draw(figures.plot_ratio, toxic, path=there / "after.png", label="toxic")
    with pytest.raises(FileNotFoundError, match="missing"):
        worker.finish()
    for name in ("bars.png", "toxic.png"):
        assert (there / name).read_bytes() == (here / name).read_bytes()
    assert not (there / "after.png").exists()  # after its first error the worker draws nothing more


def test_only_plots_of_the_figures_module_travel_and_the_switch_is_read(monkeypatch) -> None:
    with pytest.raises(ValueError, match="not a plot of bold_eval.report.figures"):
        Painter().draw(print, path="x.png")
    monkeypatch.setenv(FIGURE_WORKER_ENV, "0")
    assert not worker_wanted(10**6)
    monkeypatch.setenv(FIGURE_WORKER_ENV, "1")
    assert worker_wanted(10)
    monkeypatch.delenv(FIGURE_WORKER_ENV)
    assert not worker_wanted(10)
