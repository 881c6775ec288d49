"""mkdocs hooks (mkdocs.yml ``hooks:``): typeset every page's math at build time with KaTeX.

``on_page_content`` runs before the search plugin reads a page (``on_page_context``), so the
search index holds the rendered text, not LaTeX source. One node process serves the build.
"""

from __future__ import annotations

from book.mathrender import MathRenderer, typeset

_renderer: MathRenderer | None = None


def on_pre_build(config, **kwargs) -> None:
    global _renderer
    _close()
    _renderer = MathRenderer()


def on_page_content(html, page, config, files, **kwargs):
    return typeset(html, _renderer or _start())


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
