"""What every page bold-eval writes for a browser shares: the HTML shell, its Content-Security-Policy, the shipped
scripts and style sheet, and data written as scripts that can never become markup.

Why data goes into `.js` files (`BOLD.put(key, {...})`) and not into inline JSON or `fetch`: pages must open from
`file://`, where Chromium refuses `fetch` of a sibling file, and a policy without `'unsafe-inline'` forbids
inline scripts. A data file is plain JavaScript on the page's own origin (`script-src 'self'`), loaded when it is
needed (a chunk of texts when its page is shown). Every string in it is JSON with `<`, `>`, `&` and the two line
separators escaped, so a continuation holding `</script>` or `<img onerror=...>` stays a string; the scripts only
ever put data into the page through `textContent` and attributes, never `innerHTML`.

Charts are plain SVG drawn by the shipped script: no charting library to vendor (Vega-Lite and Plotly's bundles
weigh 0.8-3.5 MB, more than a whole report's data), nothing to load before the first paint, and each chart's
numbers are also a table for screen readers.
"""

from __future__ import annotations

import html
import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bold_eval.core.resources import atomic_writer

ASSETS = Path(__file__).parent / "assets"
# No inline script or style, no inline event handler, no remote script, style, image or connection.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "base-uri 'none'; form-action 'none'")
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def clean(value: Any) -> Any:
    """`value` with NaN and infinities as None, numpy scalars as Python ones and tuples as lists (JSON-able)."""
    if isinstance(value, dict):
        return {str(key): clean(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(item) for item in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class RawJSON(str):
    """JSON text already encoded (e.g. by pandas' `to_json`, which is C-fast for a table), placed as it is."""


def _holds_raw(value: Any) -> bool:
    """Whether a dict holds `RawJSON` at any depth of dicts (only then is it encoded key by key)."""
    return any(isinstance(item, RawJSON) or (isinstance(item, dict) and _holds_raw(item)) for item in value.values())


def _encode(value: Any) -> str:
    if isinstance(value, RawJSON):
        return str(value)
    if isinstance(value, dict) and _holds_raw(value):
        return "{" + ",".join(json.dumps(str(key), ensure_ascii=False) + ":" + _encode(item)
                              for key, item in value.items()) + "}"
    return json.dumps(clean(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def script_json(value: Any) -> str:
    """`value` as a JavaScript literal that no HTML parser can end early (see the module docstring). In JSON
    `<`, `>` and `&` occur only inside strings, so escaping them everywhere changes no value."""
    text = _encode(value)
    for raw, escaped in _ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def write_data(path: Path, key: str, value: Any) -> int:
    """`path`: the script `BOLD.put(key, value);`, written atomically; returns its size in bytes."""
    body = f"BOLD.put({script_json(key)},{script_json(value)});\n".encode()
    with atomic_writer(path) as handle:
        handle.write(body)
    return len(body)


def copy_assets(folder: Path, names: Sequence[str]) -> None:
    """The shipped scripts and style sheet `names` into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(ASSETS / name, folder / name)


def page(title: str, files: str, scripts: Sequence[str], *, body: str = "") -> str:
    """A page shell: the policy, the style sheet and `scripts` from `files/`, and a static `body` (already
    escaped) shown until the script takes over; a <noscript> note says the page needs JavaScript."""
    tags = "\n".join(f'<script src="{html.escape(files)}/{html.escape(name)}"></script>' for name in scripts)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="referrer" content="no-referrer">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="{html.escape(files)}/style.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<main id="main" tabindex="-1">{body}<noscript><p>This page draws its tables and charts with JavaScript from the
folder beside it ({html.escape(files)}/); nothing is loaded from the network.</p></noscript></main>
{tags}
</body>
</html>
"""


def write_page(path: Path, text: str) -> int:
    with atomic_writer(path) as handle:
        handle.write(text.encode())
    return len(text.encode())
