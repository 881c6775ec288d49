"""A product of the pipeline: what a chapter page (and its takeaway cards) renders from.

It reads the chapter's computed context (:func:`book.compute.chapter_context`) and adds the
chapter's other products: its figures and each equation's calculator.

>>> ctx = chapter_page_context("batching")
>>> "latency_vs_batch" in ctx["figures"] and ctx["equations"]["crossover_batch"]["calculator"] != ""
True
"""

from __future__ import annotations

from book import parallel
from book.calculators import calculator, calculator_html
from book.compute import chapter_context
from book.figures import figures_for, undrawn
from units import reads
from units.presets import Presets, load

_PAGES: dict[tuple, dict] = reads.ReadsDict()  # by chapter and preset files (units.reads)


def chapter_page_context(chapter_id: str, presets: Presets | None = None) -> dict:
    """The chapter's context plus its figures and calculators (made once per preset set)."""
    presets = presets or load()
    key = (chapter_id, presets.files)
    if key not in _PAGES:
        # where a reader waits on the page (book.parallel: chalkboard serve's rebuilds), each
        # figure not drawn yet is drawn in a copy of its own, beside the rest of the chapter's
        # context from the point it says it is ready (the validation chapter: its fits made)
        # or else beside the calculators and the other figures; they are read from the store
        with reads.recording(), parallel.beside(*undrawn(chapter_id, presets)):
            ctx = dict(chapter_context(chapter_id, presets))
            parallel.ready()
            ctx["equations"] = {
                eq_id: {**eq, "calculator": _calculator(eq_id, presets)}
                for eq_id, eq in ctx["equations"].items()
            }
            ctx["figures"] = figures_for(chapter_id, presets)
            _PAGES[key] = ctx
    return _PAGES[key]


def _calculator(eq_id: str, presets: Presets) -> str:
    spec = calculator(eq_id, presets)
    return calculator_html(spec) if spec else ""
