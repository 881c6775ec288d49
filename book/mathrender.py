"""Typeset the site's math at build time with KaTeX's own renderer, run under Node.js.

pymdownx.arithmatex (generic mode) leaves each formula as
``<span class="arithmatex">\\(…\\)</span>`` (``\\[…\\]`` in a div for display math).
:func:`typeset` replaces the formula inside with KaTeX's HTML, so a page needs no script to show
its math: it reads the same from ``file://`` and in a PDF. One ``node`` process serves a whole
build (a JSON array of formulas in, a JSON array of HTML out, one line per page); formulas repeat
across pages, so each is rendered once. What a page's formulas typeset to is kept between builds
(``units.diskcache``, by the hash of the formulas and of KaTeX's script): a build whose pages'
math is unchanged starts no node at all.

>>> with MathRenderer() as katex:
...     html = typeset('<p><span class="arithmatex">\\\\(B^{*}\\\\)</span></p>', katex)
>>> 'class="katex"' in html and "B^{*}" not in html
True
"""

from __future__ import annotations

import functools
import html as html_lib
import json
import re
import shutil
import subprocess
from pathlib import Path

from units import ChalkboardError

SCRIPT = Path(__file__).resolve().parent / "render_math.js"
NO_NODE = (
    "error: node (Node.js) not found: the build typesets math with KaTeX under node; "
    "install it (e.g. apt-get install nodejs)"
)
MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex"(?: data-search-exclude)?>\s*(?P<open>\\\(|\\\[)'
    r"(?P<tex>.*?)(?:\\\)|\\\])\s*</(?P=tag)>",
    re.DOTALL,
)

OPENING = re.compile(r'<(span|div) class="arithmatex">')


def exclude_from_search(page_html: str) -> str:
    """``page_html`` with every formula marked ``data-search-exclude``, which Material's search
    plugin skips: the index holds the page's words, neither LaTeX nor KaTeX's markup, whose
    text reads as a run of letters ("tcompute=FnB(…)") and whose tags cost more to index than
    the rest of the page. :func:`typeset` drops the mark.

    >>> exclude_from_search('<p>so <span class="arithmatex">x</span></p>')
    '<p>so <span class="arithmatex" data-search-exclude>x</span></p>'
    """
    return OPENING.sub(r'<\1 class="arithmatex" data-search-exclude>', page_html)


_TYPESET: dict[tuple[str, bool], str] = {}  # KaTeX's HTML by formula, kept for the process


class MathRenderer:
    """One node process running KaTeX (started when a formula is not in the caches);
    ``render([(tex, display), ...])`` returns HTML strings. What it typeset is kept for the whole
    process, so a later build (``chalkboard serve`` rebuilding one page) sends node only the
    formulas it has not seen, and on disk for later builds."""

    def __init__(self) -> None:
        self.node = shutil.which("node")
        if self.node is None:
            raise ChalkboardError(NO_NODE.removeprefix("error: "))
        self.cache = _TYPESET
        self.proc: subprocess.Popen | None = None

    def render(self, items: list[tuple[str, bool]]) -> list[str]:
        todo = list(dict.fromkeys(i for i in items if i not in self.cache))
        if todo:
            key = json.dumps(todo)
            stored = _store().get(key)
            html = json.loads(stored) if stored is not None else None
            if not (isinstance(html, list) and len(html) == len(todo)):
                html = self._typeset(todo)
                _store().put(key, json.dumps(html).encode("utf-8"))
            self.cache.update(zip(todo, html, strict=True))
        return [self.cache[i] for i in items]

    def _typeset(self, todo: list[tuple[str, bool]]) -> list[str]:
        if self.proc is None:
            self.proc = subprocess.Popen(
                [self.node, str(SCRIPT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
        self.proc.stdin.write(json.dumps(todo) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise ChalkboardError("KaTeX (node) stopped while typesetting the math")
        reply = json.loads(line)
        if "error" in reply:
            raise ChalkboardError(f"KaTeX cannot typeset a formula: {reply['error']}")
        return reply["html"]

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)

    def __enter__(self) -> MathRenderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@functools.cache
def _store():
    """The typeset math of earlier builds; its version is KaTeX's script and ours."""
    from units import diskcache

    katex = SCRIPT.parent / "assets" / "katex" / "katex.min.js"
    return diskcache.Store("katex", diskcache.source_digest(katex, SCRIPT)[:32])


def typeset(page_html: str, renderer: MathRenderer) -> str:
    """``page_html`` with every arithmatex formula replaced by KaTeX's HTML."""
    found = list(MATH.finditer(page_html))
    if not found:
        return page_html
    items = [(html_lib.unescape(m["tex"]).strip(), m["open"] == "\\[") for m in found]
    rendered = renderer.render(items)
    out, last = [], 0
    for m, (_, display), math_html in zip(found, items, rendered, strict=True):
        tag = "div" if display else "span"
        out += [page_html[last : m.start()], f'<{tag} class="arithmatex">{math_html}</{tag}>']
        last = m.end()
    out.append(page_html[last:])
    return "".join(out)
