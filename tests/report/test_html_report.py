"""report.html in a real browser: it loads from file:// without errors, answers first, its findings lead to
their texts, the text browser filters and pages, and hostile texts show as text and never run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bold_eval.report.html_report import plain, worst_flags
from bold_eval.report.run_report import write_report
from bold_eval.report.site import CSP, script_json
from bold_eval.runfolder.layout import HTML_REPORT_DIR, HTML_REPORT_FILE
from bold_eval.testing.browser import Page
from bold_eval.testing.runs import HOSTILE_TEXTS, planted_runs

HOSTILE_MODEL = '<img src=x onerror="window.__pwned=\'model\'">'


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model that is more negative than Wikipedia about African Americans (+45 points) and Asian Americans (+20;
    the two form the super-group "first_two"), with hostile texts in its continuations, a prompt, a name and its
    own name; its report written once."""
    runs = planted_runs(tmp_path_factory.mktemp("html"),
                        {HOSTILE_MODEL: {"African_Americans": 0.45, "Asian_Americans": 0.2}},
                        names=50, prompts=3, hostile=True, categories=True)
    folder = runs[HOSTILE_MODEL]
    write_report(folder)
    return folder


def test_worst_flags_mark_each_prompts_worst_sample() -> None:
    scores = pd.DataFrame({"prompt_id": ["a"] * 3 + ["b"] * 3, "sample": [0, 1, 2] * 2,
                           "toxicity_score": [0.1, 0.9, 0.9, 0.2, 0.1, 0.3],
                           "toxicity_is_toxic": [False, True, True, False, False, False]})
    flags = worst_flags(scores)
    assert flags["expected_max_toxicity"] == [0, 1, 0, 0, 0, 1]  # the first of tied maxima
    assert flags["toxicity_probability"] == [0, 1, 0, 1, 0, 0]  # no toxic sample: the first sample stands for it
    assert worst_flags(scores[scores["sample"] == 0]) == {}


def test_script_json_never_ends_a_script() -> None:
    text = script_json({"a": "</script><script>x()</script>", "b": "\u2028", "c": float("nan"), "d": "&amp;"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><script>x()</script>", "b": "\u2028", "c": None, "d": "&amp;"}
    assert plain("- **Tests:** `--cluster name` it") == "Tests: --cluster name it"


def test_the_report_writes_html_beside_markdown(planted: Path) -> None:
    page = (planted / HTML_REPORT_FILE).read_text()
    assert f'content="{CSP}"' in page and "'unsafe-inline'" not in CSP and "http" not in page.split("<body>")[1]
    assert "<img" not in page and "&lt;img" in page  # the model's name is escaped in the static title
    files = sorted(path.name for path in (planted / HTML_REPORT_DIR).iterdir())
    assert {"common.js", "report.js", "style.css", "summary.js", "index.js", "texts-00000.js"} <= set(files)
    for path in (planted / HTML_REPORT_DIR).glob("texts-*.js"):
        assert "</script" not in path.read_text().lower()


@pytest.mark.slow
def test_report_html_in_a_browser(planted: Path, chromium) -> None:
    page = Page(chromium)
    view = page.open(planted / HTML_REPORT_FILE)
    view.wait_for_selector(".answer figure svg")
    answer = view.inner_text(".answer")
    assert "differently" in answer and "African_Americans vs rest" in answer
    assert view.locator("svg.forest text.finding").first.text_content().endswith("African_Americans")
    assert view.locator("svg.forest[role=img] title").count() >= 1  # a text alternative for the chart
    # the finding's link leads to its texts: the right group, the planted label
    view.click("#tab-findings")
    view.locator("#panel-findings a", has_text="African_Americans").first.click()
    view.wait_for_selector("li.text")
    assert view.input_value("#t-group") != "" and "African_Americans" in view.inner_text("#t-group option:checked")
    assert view.input_value("#t-label") == "sentiment/negative"
    shown = view.locator("li.text .meta").all_inner_texts()
    assert shown and all("African_Americans" in meta for meta in shown)
    assert "texts match" in view.inner_text(".status")
    # a super-group's finding leads to the texts of its super-group
    view.click("#tab-findings")
    view.locator("#panel-findings a", has_text="first_two").first.click()
    page.wait_until("document.querySelector('#t-category option:checked').textContent === 'first_two'")
    assert view.input_value("#t-group") == ""
    view.wait_for_selector("li.text")
    metas = view.locator("li.text .meta").all_inner_texts()
    assert metas and all("African_Americans" in meta or "Asian_Americans" in meta for meta in metas)
    view.select_option("#t-category", "")
    # filters and paging: all texts, then the next page
    view.select_option("#t-label", "")
    view.select_option("#t-group", "")
    page.wait_until("document.querySelector('.status').textContent.startsWith('600 of 600')")
    first = view.locator("li.text .continuation").first.inner_text()
    view.click(".pager button:has-text('Next')")
    page.wait_until(f"document.querySelector('li.text .continuation').textContent !== {json.dumps(first)}")
    # hostile texts are shown as text, and nothing ran
    view.select_option("#t-sort", "")
    view.fill("#t-name", "onerror")
    view.wait_for_selector("li.text")
    assert HOSTILE_TEXTS[1] in view.inner_text("li.text .meta")
    view.fill("#t-name", "")
    view.click(".pager button:has-text('Previous')") if view.is_enabled(".pager button:has-text('Previous')") else None
    view.wait_for_selector("li.text")
    shown_text = view.inner_text("#panel-texts")
    assert HOSTILE_TEXTS[0] in shown_text and HOSTILE_TEXTS[2] in shown_text
    for tab in ("forest", "run", "method"):
        view.click(f"#tab-{tab}")
    reading = view.inner_text("#panel-method")  # plain sentences first, the method's formulas last
    assert reading.index("One unit is one name") < reading.index("Method") < reading.index("Welch-Satterthwaite")
    assert HOSTILE_MODEL in view.inner_text("h1")
    assert page.pwned() is None and not page.dialogs and not page.errors, (page.pwned(), page.dialogs, page.errors)
    page.close()


@pytest.mark.slow
def test_report_html_keyboard_and_phone(planted: Path, chromium) -> None:
    page = Page(chromium, width=390, height=844)
    view = page.open(planted / HTML_REPORT_FILE)
    view.wait_for_selector(".answer figure svg")
    assert view.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # no sideways scrolling on a phone
    view.focus("#tab-findings")
    view.keyboard.press("ArrowRight")
    assert view.evaluate("document.activeElement.id") == "tab-forest"
    assert view.is_visible("#panel-forest") and not view.is_visible("#panel-findings")
    view.keyboard.press("ArrowRight")
    view.wait_for_selector("li.text")
    assert view.evaluate("document.activeElement.id") == "tab-texts"
    assert not page.errors and page.pwned() is None
    page.close()


@pytest.mark.slow
def test_worst_of_k_and_sorting_in_a_browser(tmp_path: Path, chromium) -> None:
    """Three samples per prompt: the text browser keeps each prompt's worst sample on request and sorts by score."""
    import numpy as np

    from bold_eval.runfolder.loading import load_run, read_reference_scores
    from bold_eval.runfolder.parquet import write_scores
    from bold_eval.testing.runs import write_run_folder

    runs = planted_runs(tmp_path / "one", {"m": {}}, names=20, prompts=2)
    scores, _ = load_run(runs["m"])
    rng = np.random.default_rng(0)
    parts = []
    for sample in range(3):
        compound = np.clip(scores["sentiment_compound"] + rng.normal(0, 0.3, len(scores)), -1, 1)
        parts.append(scores.assign(sample=sample, sentiment_compound=compound, sentiment_label=np.where(
            compound <= -0.5, "negative", np.where(compound >= 0.5, "positive", "neutral"))))
    folder = write_run_folder(tmp_path / "k3", pd.concat(parts, ignore_index=True), model="m3", num_samples=3)
    write_scores(folder, read_reference_scores(runs["m"]), "reference_scores.parquet")
    write_report(folder)
    page = Page(chromium)
    view = page.open(folder / HTML_REPORT_FILE, "#texts")
    view.wait_for_selector("li.text")
    assert view.inner_text(".status").startswith("480 of 480")
    view.select_option("#t-worst", "expected_min_compound")
    page.wait_until("document.querySelector('.status').textContent.startsWith('160 of 480')")
    view.select_option("#t-sort", "sentiment_compound:asc")
    first = ("(() => { const rows = [...document.querySelectorAll('li.text tr')]; "
             "const row = rows.find(r => r.cells[0].textContent === 'sentiment_compound'); "
             "return row && row.cells[1].textContent; })()")
    expected = float(pd.concat(parts)["sentiment_compound"].min())
    # the page was already showing 25 texts before the sort: wait for the sorted first one, not for a count
    page.wait_until(f"Math.abs(parseFloat({first}) - ({expected})) < 1e-4")
    lowest = float(page.wait_until(first))
    assert lowest == pytest.approx(expected, abs=1e-4)
    assert not page.errors
    page.close()
