"""`bold-eval leaderboard`: ranks with tie groups from paired tests on shared prompts, the Hub template's results
layout, a static site that opens offline, and, on the embedded model under three chat protocols, a planted
difference that the tie groups find."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.analysis.compare import PromptSetError
from bold_eval.analysis.leaderboard import Leaderboard, build_leaderboard
from bold_eval.core.errors import UserError
from bold_eval.report.leaderboard import load_board_runs, write_leaderboard
from bold_eval.report.run_report import write_report
from bold_eval.report.site import CSP
from bold_eval.runfolder.loading import load_run
from bold_eval.runfolder.parquet import write_scores
from bold_eval.testing.browser import Page
from bold_eval.testing.runs import HOSTILE_TEXTS, planted_runs, write_run_folder

HOSTILE = HOSTILE_TEXTS[1]


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """model-a and model-b alike, model-c 25 points more negative than Wikipedia for everyone; a fourth model with a
    hostile name, alike too."""
    return planted_runs(tmp_path_factory.mktemp("board"), {"model-a": {}, "model-b": {}, "model-c": {"shift": 0.25},
                                                           HOSTILE: {}}, names=30, prompts=3)


def board_of(run_dirs: list[Path], **keywords) -> Leaderboard:
    """The board over run folders, read as `bold-eval leaderboard` reads them."""
    return build_leaderboard(load_board_runs(run_dirs), **keywords)


def test_tie_groups_find_the_planted_model(three: dict[str, Path]) -> None:
    board = board_of(list(three.values()))
    assert board.baseline.startswith("the Wikipedia run") and board.prompts == 360 and not board.different
    negative = board.cells[board.cells["label"] == "negative"].set_index("model")
    assert negative.loc["model-c", "rank"] == 4 and negative.loc["model-c", "tie_group"] == "model-c"
    assert set(negative["rank"].drop("model-c")) == {1}
    assert negative.loc["model-a", "tie_group"] == " = ".join(sorted(["model-a", "model-b", HOSTILE]))
    assert negative.loc["model-c", "significant"] and not negative.drop("model-c")["significant"].any()
    assert negative.loc["model-c", "ci_low"] > 0.1 and negative["names"].eq(120).all()
    for side in ("model", "wikipedia"):  # every rate with its interval
        assert (negative[f"{side}_low"] <= negative[f"{side}_rate"]).all()
        assert (negative[f"{side}_rate"] <= negative[f"{side}_high"]).all()
    pairs = board.pairs[board.pairs["label"] == "negative"]
    separated = {frozenset((row.model_a, row.model_b)) for row in pairs.itertuples() if row.significant}
    assert separated == {frozenset(("model-c", other)) for other in ("model-a", "model-b", HOSTILE)}
    # every interval agrees with its test about zero
    for frame in (board.cells, board.pairs):
        tested = frame[frame["p_value"].notna()]
        assert ((tested["ci_low"] > 0) | (tested["ci_high"] < 0)).eq(tested["p_value"] <= board.alpha).all()
    assert set(board.cells.loc[board.cells["label"] == "positive", "direction"]) == {-1}
    # 120 names can separate about 11 points: no "too few prompts" warning
    assert not board.power["too_small"].any() and 0.05 < board.power["separable_difference"].iloc[0] < 0.2


def test_the_reference_serves_when_no_wikipedia_run_is_given(three: dict[str, Path]) -> None:
    board = board_of([three["model-a"], three["model-c"]])
    assert board.baseline.startswith("the Wikipedia sentences scored with")
    negative = board.cells[board.cells["label"] == "negative"].set_index("model")
    assert list(negative["rank"]) == [1, 2]


def test_bad_boards_say_what_to_do(three: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UserError, match="at least one model run"):
        board_of([three["wikipedia"]])
    scores, _ = load_run(three["model-a"])
    short = write_run_folder(tmp_path / "short", scores.iloc[:100], model="short")
    with pytest.raises(PromptSetError, match="--allow-different-prompts"):
        board_of([three["wikipedia"], three["model-a"], short])
    board = board_of([three["wikipedia"], three["model-a"], short], allow_different_prompts=True)
    assert board.different and board.prompts == 100
    alone = write_run_folder(tmp_path / "alone", scores, model="alone")
    with pytest.raises(UserError, match="no Wikipedia baseline"):
        board_of([alone])


def test_a_run_given_twice_is_refused(three: dict[str, Path]) -> None:
    again = three["model-a"].parent / "." / three["model-a"].name  # the same folder, spelled another way
    with pytest.raises(UserError, match="given twice.*pass each run folder once"):
        board_of([three["wikipedia"], three["model-a"], three["model-b"], again])


def test_the_published_page_shows_run_names_not_paths(three: dict[str, Path], tmp_path: Path) -> None:
    scores, _ = load_run(three["model-a"])
    local = write_run_folder(tmp_path / "one" / "tuned", scores, model=str(tmp_path / "models" / "tuned-7b"))
    twin = write_run_folder(tmp_path / "two" / "tuned", scores, model=str(tmp_path / "models" / "tuned-7b"))
    site = tmp_path / "site"
    write_leaderboard([three["wikipedia"], three["model-a"], local, twin], site, copy_reports=False)
    published = "".join(path.read_text() for path in (site / "index.html", site / "README.md",
                                                       site / "leaderboard_files" / "board.js"))
    assert str(tmp_path) not in published and "/tmp" not in published
    board = board_of([three["wikipedia"], three["model-a"], local, twin])
    assert [run.label for run in board.runs] == ["model-a", "tuned-7b (tuned)", "tuned-7b (tuned) 2"]
    assert board.baseline == "the Wikipedia run wikipedia"
    assert "1 model on" in build_leaderboard_card([three["model-a"]], tmp_path / "single")


def build_leaderboard_card(run_dirs: list[Path], out: Path) -> str:
    write_leaderboard(run_dirs, out, copy_reports=False)
    return (out / "README.md").read_text()


def test_site_results_and_card(three: dict[str, Path], tmp_path: Path, bold_eval_here) -> None:
    result = bold_eval_here("leaderboard", *three.values(), "--out", tmp_path / "site", "--no-copy-reports")
    assert result.returncode == 0, result.stderr
    site = tmp_path / "site"
    index = (site / "index.html").read_text()
    assert f'content="{CSP}"' in index and "<img" not in index  # its own scripts only; data never in the page
    assert "<img" not in (site / "leaderboard_files" / "board.js").read_text()  # a hostile name stays escaped
    card = (site / "README.md").read_text()
    assert card.startswith("---\n") and "sdk: static" in card and "app_file: index.html" in card
    assert "<img" not in card  # a hostile model name is not markup in the Space's card
    assert "as often as a test that knew the true variance" in card and '"Power against an oracle"' in card
    files = sorted(site.glob("results/*/*/results_*.json"))
    assert len(files) == 4
    payload = json.loads((site / "results" / "local" / "model-c").glob("results_*.json").__next__().read_text())
    assert payload["config"]["model_name"] == "local/model-c" and "model_sha" in payload["config"]
    task = payload["results"]["bold_race_sentiment_negative"]
    assert task["rank"] == 4 and task["vs_wikipedia_ci_low"] > 0.1
    table = pd.read_csv(site / "tables" / "leaderboard.csv")
    assert len(table) == 4 * 2 and {"rank", "tie_group", "ci_low"} <= set(table.columns)


@pytest.mark.slow
def test_leaderboard_in_a_browser(three: dict[str, Path], tmp_path: Path, chromium) -> None:
    for model in ("model-a", "model-c"):
        write_report(three[model])
    site = tmp_path / "site"
    write_leaderboard(list(three.values()), site)
    page = Page(chromium)
    view = page.open(site / "index.html")
    view.wait_for_selector("table")
    assert "race: 1. " in view.inner_text("ul.ties") and "| 4. model-c" in view.inner_text("ul.ties")
    assert HOSTILE in view.inner_text("main")
    view.select_option("#model-a", "model-a")
    view.select_option("#model-b", "model-c")
    verdicts = view.locator("table").nth(2).inner_text()
    assert "model-a is better" in verdicts and "cannot be told apart" in verdicts
    view.click("a:has-text('model-c')")
    view.wait_for_selector(".answer")
    assert view.url.endswith("runs/model-c/report.html")
    assert not page.errors and not page.dialogs and page.pwned() is None, (page.errors, page.dialogs)
    page.close()
    phone = Page(chromium, width=390, height=844)
    view = phone.open(site / "index.html")
    view.wait_for_selector("ul.ties")
    assert view.evaluate("document.documentElement.scrollWidth") <= 391  # tables scroll inside their box
    view.focus("#label")
    view.keyboard.press("ArrowDown")  # a native select: the board follows the keyboard
    phone.wait_until("document.querySelector('caption').textContent.startsWith('sentiment: positive')")
    assert not phone.errors
    phone.close()


@pytest.mark.slow
@pytest.mark.heavy
def test_the_embedded_model_under_three_protocols(tmp_path: Path, bold_eval_here, chromium) -> None:
    """The issue's board: the embedded chat model under --chat-template none, prefill and instruct, the Wikipedia
    baseline, and a copy of the `none` run made negative in every text (a planted difference): the copy is alone
    in the last tie group, and the site loads cleanly."""
    common = ("--domains", "race", "--limit", "12", "--max-new-tokens", "8", "--metrics", "sentiment",
              "--no-progress")
    folders = []
    for protocol in ("none", "prefill", "instruct"):
        out = tmp_path / protocol
        result = bold_eval_here("run", "--model", "embedded", "--chat-template", protocol, *common, "--out", out)
        assert result.returncode == 0, result.stderr[-2000:]
        folders.append(out)
    wiki = tmp_path / "wikipedia"
    assert bold_eval_here("run", "--model", "wikipedia", *common, "--out", wiki).returncode == 0
    scores, record = load_run(folders[0])
    planted = write_run_folder(tmp_path / "planted", scores.assign(sentiment_label="negative"), model="planted",
                               generator="hf-causal")
    write_scores(planted, pd.read_parquet(folders[0] / "reference_scores.parquet"), "reference_scores.parquet")
    site = tmp_path / "site"
    write_leaderboard([wiki, *folders, planted], site)
    cells = pd.read_csv(site / "tables" / "leaderboard.csv")
    negative = cells[cells["label"] == "negative"].set_index("model")
    assert negative.loc["planted", "rank"] == 4 and negative.loc["planted", "tie_group"] == "planted"
    assert negative.drop("planted")["rank"].max() < 4
    page = Page(chromium)
    view = page.open(site / "index.html")
    view.wait_for_selector("ul.ties")
    assert "4. planted" in view.inner_text("ul.ties")
    main = view.inner_text("main")  # 12 prompts: the warning comes before any number
    assert main.index("Too few shared prompts to rank models in every domain") < main.index("rank 1")
    assert "for the hardest pair" in main and "for the hardest pair" in (site / "README.md").read_text()
    assert "Too few shared prompts" in (site / "README.md").read_text()
    assert not page.errors and page.pwned() is None
    page.close()
    # the baseline's own report.html and a chat run's text browser
    page = Page(chromium)
    view = page.open(wiki / "report.html")
    view.wait_for_selector(".answer")
    assert "in BOLD's Wikipedia sentences" in view.inner_text(".answer")
    view = page.open(folders[2] / "report.html", "#texts")
    view.wait_for_selector("li.text .continuation")
    assert "12 of 12 texts match" in view.inner_text(".status")
    assert "Wikipedia, same prompt" in view.inner_text("li.text")
    view.click("#tab-run")
    assert "instruct" in view.inner_text("#panel-run")
    assert not page.errors
    page.close()


def test_publish_results_stages_the_leaderboard(three: dict[str, Path], tmp_path: Path, bold_eval_here) -> None:
    site = tmp_path / "site"
    write_leaderboard(list(three.values()), site, copy_reports=False)
    staged = tmp_path / "staged"
    result = bold_eval_here("publish-results", "--leaderboard", site, "--namespace", "me", "--dry-run", staged)
    assert result.returncode == 0, result.stderr
    assert "would upload" in result.stdout and "dataset me/bold-results" in result.stdout
    assert "space me/bold-leaderboard, sdk static" in result.stdout
    assert len(list((staged / "dataset").glob("*/*/results_*.json"))) == 4
    assert "configs:" in (staged / "dataset" / "README.md").read_text()
    assert (staged / "space" / "index.html").is_file() and not (staged / "space" / "results").exists()
    assert "sdk: static" in (staged / "space" / "README.md").read_text()
    wrong = bold_eval_here("publish-results", "--leaderboard", site, "--dry-run", tmp_path / "x")
    assert wrong.returncode != 0 and "--namespace" in wrong.stderr
    missing = bold_eval_here("publish-results", "--leaderboard", tmp_path, "--namespace", "me", "--dry-run",
                             tmp_path / "y")
    assert missing.returncode != 0 and "is not a leaderboard folder" in missing.stderr


def test_the_separable_difference_grows_with_the_raised_models_variance() -> None:
    """One pair at a 5% rate, its interval +-0.0196 (SE 0.01), three pairs in the column (alpha / 3): the plain
    z x SE = (z_{1 - 0.05/6} + z_0.8) x 0.01 = 3.235 points; raising one model to 5% + d moves its variance from
    0.0475 to (0.05 + d)(0.95 - d), so d solves d = 3.235 points x sqrt((0.0475 + (0.05 + d)(0.95 - d)) / 0.095):
    about 3.75 points. At 50% the variance cannot grow: the plain value."""
    import numpy as np
    from scipy import stats

    from bold_eval.analysis.leaderboard import separable_difference

    z = stats.norm.isf(0.05 / 6) + stats.norm.isf(0.2)
    half = 0.01 * stats.norm.isf(0.025)
    for rate, expected in ((0.05, None), (0.5, z * 0.01)):
        pairs = pd.DataFrame([{"domain": "d", "metric": "m", "label": "l", "model_a": a, "model_b": b,
                               "p_value": 0.5, "ci_low": -half, "ci_high": half}
                              for a, b in (("x", "y"), ("x", "w"), ("y", "w"))])
        cells = pd.DataFrame([{"domain": "d", "metric": "m", "label": "l", "model": model, "model_rate": rate}
                              for model in "xyw"])
        found = float(separable_difference(pairs, cells, 0.05)["separable_difference"].iloc[0])
        if expected is None:
            d = found
            assert d == pytest.approx(z * 0.01 * np.sqrt((0.0475 + (0.05 + d) * (0.95 - d)) / 0.095), rel=1e-6)
            assert 0.037 < d < 0.038
        else:
            assert found == pytest.approx(expected, rel=1e-9)


def test_the_hardest_pair_needs_the_largest_separable_difference() -> None:
    """Three pairs at 50% (the variance cannot grow there), two with SE 0.01 and one with SE 0.02: a typical pair
    (the median) separates z x 0.01 and the hardest pair z x 0.02, which the banner names beside it."""
    from scipy import stats

    from bold_eval.analysis.leaderboard import separable_difference
    from bold_eval.report.leaderboard import _hardest

    z = stats.norm.isf(0.05 / 6) + stats.norm.isf(0.2)
    pairs = pd.DataFrame([{"domain": "d", "metric": "m", "label": "l", "model_a": a, "model_b": b, "p_value": 0.5,
                           "ci_low": -se * stats.norm.isf(0.025), "ci_high": se * stats.norm.isf(0.025)}
                          for (a, b), se in ((("x", "y"), 0.01), (("x", "w"), 0.01), (("y", "w"), 0.02))])
    cells = pd.DataFrame([{"domain": "d", "metric": "m", "label": "l", "model": model, "model_rate": 0.5}
                          for model in "xyw"])
    row = separable_difference(pairs, cells, 0.05).iloc[0]
    assert row["separable_difference"] == pytest.approx(z * 0.01, rel=1e-9)
    assert row["hardest_pair"] == pytest.approx(z * 0.02, rel=1e-9)
    assert _hardest(row["hardest_pair"]) == f"; {100 * z * 0.02:.0f} for the hardest pair"
