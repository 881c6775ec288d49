"""Helpers for the tests that drive the built site in a real headless Chromium
(tests/book/test_browser.py, test_browser_widgets.py; their fixtures are in conftest.py).

Chromium comes from the system (Debian's `chromium`; `make test` installs it when it can). When it
cannot be found a browser test fails, saying so: it never passes silently without a browser.
"""

import functools
import http.server
import json
import os
import shutil
import urllib.parse
from pathlib import Path

import pytest

from book.pdf import FLAGS as PDF_FLAGS

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
FLAGS = PDF_FLAGS  # the build prints the PDF with the same Chromium flags (book/pdf.py)


def chromium_path() -> str:
    found = os.environ.get("CHALKBOARD_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    if not found:
        pytest.fail(
            "NO BROWSER: Chromium was not found (install Debian's 'chromium', which `make test` "
            "does when it runs as root, or set CHALKBOARD_CHROMIUM); the browser tests cannot run"
        )
    return found


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


SEARCH_INDEX = "/search/search_index.json"


class EmptySearchHandler(QuietHandler):
    """Sends the site's search index with its configuration but no documents. Every page's
    search worker fetches the whole index and builds a lunr index from it (0.8 MB, about half a
    second of CPU per page load); only the search test (``QuietHandler``) needs what is in it."""

    def do_GET(self):
        if urllib.parse.urlsplit(self.path).path != SEARCH_INDEX:
            return super().do_GET()
        data = _empty_index(self.directory)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@functools.cache
def _empty_index(site: str) -> bytes:
    """The site's search index with its configuration and no documents (read once per site)."""
    index = json.loads((Path(site) / SEARCH_INDEX.lstrip("/")).read_text(encoding="utf-8"))
    return json.dumps({"config": index["config"], "docs": []}).encode()


RAW_TEX = """() => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const found = [];
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest('.katex, script, style, code, pre, svg')) continue;
    const text = node.textContent;
    if (/\\\\\\(|\\\\\\[|\\$\\$|\\\\frac|\\\\mathrm/.test(text)) found.push(text.slice(0, 80));
  }
  return found;
}"""


def all_pages(site: Path) -> list[str]:
    return sorted(
        "/" + p.relative_to(site).parent.as_posix().strip(".") + ("/" if p.parent != site else "")
        for p in site.rglob("index.html")
        if "search" not in p.parts
    )


# one look at a loaded page: its raw TeX left over, its math (typeset or not, KaTeX's errors,
# the width of its widest formula), its figures' heights and its links
LOOK = (
    "() => ({raw: (" + RAW_TEX + ")(), arithmatex: document.querySelectorAll('.arithmatex').length,"
    " katex: document.querySelectorAll('.katex').length,"
    " katexErrors: document.querySelectorAll('.katex-error').length,"
    " widest: Math.max(0, ...[...document.querySelectorAll('.katex')]"
    "   .map(e => e.getBoundingClientRect().width)),"
    " figures: Object.fromEntries([...document.querySelectorAll('figure[id^=\"figure-\"]')]"
    "   .map(f => [f.id.slice(7), f.querySelector('svg')?.getBoundingClientRect().height ?? 0])),"
    " hrefs: [...document.querySelectorAll('a[href]')].map(e => e.href)})"
)


def served(site: Path, path: str) -> bool:
    """Whether the test server answers the URL ``path`` (no query, no fragment) with a page: it
    maps paths to the site's files one to one, a folder to its index.html."""
    target = site / urllib.parse.unquote(path).lstrip("/")
    return target.is_file() or (target / "index.html").is_file()
