"""mkdocs hooks (mkdocs.yml ``hooks:``): typeset every page's math at build time with KaTeX.

``on_page_content`` marks each formula for the search plugin to skip (it reads a page in
``on_page_context``): the index holds words, not LaTeX or KaTeX's markup. ``on_post_page``
typesets the finished page. One node process serves the build.

``on_post_build`` also writes the search index as a script, ``search/search_index.js``: opened
from file://, where a page may not fetch a file, Material's search loads its index that way
(what Material's offline plugin does, without that plugin's change to every page's address).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.plugins import event_priority

from book.mathrender import MathRenderer, exclude_from_search, typeset

_renderer: MathRenderer | None = None


def on_pre_build(config, **kwargs) -> None:
    global _renderer
    _close()
    _renderer = MathRenderer()


def on_page_content(html, page, config, files, **kwargs):
    return exclude_from_search(html)


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
