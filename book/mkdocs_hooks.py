"""mkdocs hooks (mkdocs.yml ``hooks:``): typeset every page's math at build time with KaTeX.

``on_page_content`` marks each formula for the search plugin to skip (it reads a page in
``on_page_context``): the index holds words, not LaTeX or KaTeX's markup. ``on_post_page``
typesets the finished page. One node process serves the build.
"""

from __future__ import annotations

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


def on_post_build(config, **kwargs) -> None:
    _close()


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
