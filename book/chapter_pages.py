"""A product of the pipeline: what a chapter page (and its takeaway cards) renders from.

It reads the chapter's computed context (:func:`book.compute.chapter_context`) and adds the
chapter's other products: its figures and each equation's calculator.

>>> ctx = chapter_page_context("batching")
>>> "latency_vs_batch" in ctx["figures"] and ctx["equations"]["crossover_batch"]["calculator"] != ""
True
"""

from __future__ import annotations

from book.calculators import calculator, calculator_html
from book.compute import chapter_context
from book.figures import figures_for
from units import reads
from units.presets import Presets, load

_PAGES: dict[tuple, dict] = reads.ReadsDict()  # by chapter and preset files (units.reads)


def chapter_page_context(chapter_id: str, presets: Presets | None = None) -> dict:
    """The chapter's context plus its figures and calculators (made once per preset set)."""
    presets = presets or load()
    key = (chapter_id, presets.files)
    if key not in _PAGES:
        with reads.recording():
            ctx = dict(chapter_context(chapter_id, presets))
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
