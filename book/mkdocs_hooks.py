"""mkdocs hooks (mkdocs.yml ``hooks:``): typeset every page's math at build time with KaTeX.

``on_page_content`` marks each formula for the search plugin to skip (it reads a page in
``on_page_context``): the index holds words, not LaTeX or KaTeX's markup. ``on_post_page``
typesets the finished page. One node process serves the build. The search plugin reads pages
with book/search_parser.py's parser: Material's, with its bookkeeping made cheap.

``on_post_build`` also writes the search index as a script, ``search/search_index.js``: opened
from file://, where a page may not fetch a file, Material's search loads its index that way
(what Material's offline plugin does, without that plugin's change to every page's address).

What a build repeats unchanged is kept between builds (book/buildcache.py): a page's HTML from
the same Markdown, its search entries from the same HTML, the theme's compiled templates. A
figure's SVG is raw HTML that Markdown passes through untouched, yet parsing it costs a third of
a page's conversion: ``on_page_markdown`` holds it back and ``on_page_content`` puts it back,
before the search plugin reads the page. So with a calculator's form, which book/calculators.py
writes as Markdown writes it back (tests/book/test_calculators.py): parsing it again cost a
quarter of a chapter's conversion.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.plugins import event_priority

from book import buildcache, search_parser
from book.mathrender import MathRenderer, exclude_from_search, typeset

_renderer: MathRenderer | None = None
_markdown: buildcache.MarkdownCache | None = None
_held: dict[str, list[str]] = {}  # a page's figures and calculators while it is converted

SVG = re.compile(r"^<svg\b.*?^</svg>$", re.DOTALL | re.MULTILINE)  # a figure, as figures.py writes
# a calculator's form, as book/calculators.py writes it (already in the form Markdown writes)
CALCULATOR = re.compile(
    r'^<details class="chalkboard-calc" .*?^</details>$', re.DOTALL | re.MULTILINE
)
HELD = re.compile(r'<(svg|details) data-chalkboard-held="(\d+)"></\1>')


@event_priority(-100)  # after the search plugin made its index
def on_config(config, **kwargs):
    search = config.plugins.get("material/search") or config.plugins.get("search")
    index = getattr(search, "search_index", None)
    if index is not None:
        search_parser.install(index)  # the same entries, read at half the cost
        if buildcache.diskcache.enabled():
            buildcache.cache_search_entries(index)
    return config


def on_pre_build(config, **kwargs) -> None:
    global _renderer, _markdown
    _close()
    _renderer = MathRenderer()
    _markdown = None
    _held.clear()


def on_env(env, config, files, **kwargs):
    env.bytecode_cache = buildcache.template_cache()  # the theme's templates, compiled once
    return env


def on_pre_page(page, config, files, **kwargs):
    global _markdown
    if _markdown is None or _markdown.files is not files:
        _markdown = buildcache.MarkdownCache(config, files)
    cache, render = _markdown, page.render
    page.render = lambda config, files: cache.render(page, config, files, render)
    return page


@event_priority(100)  # before the other plugins read the Markdown
def on_page_markdown(markdown, page, config, files, **kwargs):
    held = _held[page.file.src_uri] = []
    markdown = SVG.sub(lambda m: _hold(held, m[0], "svg"), markdown)
    return CALCULATOR.sub(lambda m: _hold(held, m[0], "details"), markdown)


@event_priority(100)  # before the other plugins (and the search plugin) read the HTML
def on_page_content(html, page, config, files, **kwargs):
    held = _held.pop(page.file.src_uri, [])
    if held:
        html = HELD.sub(lambda m: held[int(m[2])], html)
    return exclude_from_search(html)


def _hold(held: list[str], html: str, tag: str) -> str:
    held.append(html)
    return f'<{tag} data-chalkboard-held="{len(held) - 1}"></{tag}>'


def on_post_page(output, page, config, **kwargs):
    return typeset(output, _renderer or _start())


@event_priority(-100)  # after the search plugin has written search_index.json
def on_post_build(config, **kwargs) -> None:
    _close()
    write_search_script(Path(config["site_dir"]) / "search")


def write_search_script(folder: Path) -> Path | None:
    """``search_index.js`` beside ``search_index.json``: the same index, as Material reads it
    from file:// (``var __index = ...``); ``None`` when the build wrote no index."""
    index = folder / "search_index.json"
    if not index.is_file():
        return None
    script = folder / "search_index.js"
    script.write_text("var __index = " + index.read_text(encoding="utf-8"), encoding="utf-8")
    return script


def on_build_error(error, **kwargs) -> None:
    _close()


def _start() -> MathRenderer:
    global _renderer
    _renderer = MathRenderer()
    return _renderer


def _close() -> None:
    global _renderer
    if _renderer is not None:
        _renderer.close()
        _renderer = None
