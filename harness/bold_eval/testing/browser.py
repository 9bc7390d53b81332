"""A real browser for tests and benchmarks: headless Chromium (Debian's `chromium`) driven by Playwright.

Playwright downloads no browser here: it is pointed at the system's executable ($BOLD_EVAL_CHROMIUM, else
`chromium` or `chromium-browser` on the PATH). `Page` collects console errors, page errors and dialogs, so a test
can say that a page loaded cleanly and that no hostile text ran (an `alert` or a script setting a global).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    """The Chromium executable: $BOLD_EVAL_CHROMIUM, else the first of `CHROMIUM_NAMES` on the PATH."""
    chosen = os.environ.get("BOLD_EVAL_CHROMIUM")
    if chosen:
        return chosen if Path(chosen).is_file() else None
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def missing() -> str | None:
    """Why no browser test can run here (None when one can): the reason names what to install."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright; no browser download is needed)"
    if chromium_path() is None:
        return ("no Chromium executable: `make browser` (apt-get install chromium), or set BOLD_EVAL_CHROMIUM to one "
                f"(looked for $BOLD_EVAL_CHROMIUM and {', '.join(CHROMIUM_NAMES)} on the PATH)")
    return None


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium (Playwright `Browser`), closed at the end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


class Page:
    """A new page of `browser` at `width` x `height` that records console errors, page errors and dialogs."""

    def __init__(self, browser: Any, *, width: int = 1280, height: int = 900):
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda message: self.errors.append(message.text) if message.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path: Path, fragment: str = "") -> Any:
        self.page.goto(path.resolve().as_uri() + fragment)
        return self.page

    def wait_until(self, expression: str, timeout: float = 10.0) -> Any:
        """Poll the JavaScript `expression` until it is truthy (its value), else fail after `timeout` seconds.
        Playwright's `wait_for_function` compiles its predicate inside the page, which the pages' policy (no
        'unsafe-eval') rightly refuses; `evaluate` goes through the debugger protocol, which it does not."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            value = self.page.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"still false after {timeout:g} s: {expression}")
            self.page.wait_for_timeout(50)

    def pwned(self) -> Any:
        """What a hostile text would have set if it had run (None: nothing ran)."""
        return self.page.evaluate("() => window.__pwned === undefined ? null : window.__pwned")

    def close(self) -> None:
        self.page.close()
