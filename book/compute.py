"""Stage one of the book's pipeline: compute each chapter's context once per preset set.

A chapter's context is its equations (display strings from :mod:`book.context`) plus what its
own module in ``book/chapters`` computes (numbers, cases, tables, figures' data). Products
(pages, cards, problems, calculators, figures: :mod:`book.chapter_pages`, :mod:`book.cards`, …)
read these contexts; the site and the exports write what the products make. Nothing here imports
a product, so the import graph of ``book/`` has no circle (tests/book/test_pipeline.py).

>>> ctx = chapter_context("batching")
>>> ctx["equations"]["crossover_batch"]["latex"].startswith("B^{*} =")
True
"""

from __future__ import annotations

import derivations
from book.context import Evaluator, equation_context
from book.format import number, quantity
from units import reads
from units.presets import Presets, load

# by chapter and the preset files behind it, each with the presets it read (units.reads)
_CHAPTER_CONTEXTS: dict[tuple, dict] = reads.ReadsDict()
_EVALUATIONS: dict[tuple, tuple] = reads.ReadsDict()  # the evaluations each context made


def chapter_context(chapter_id: str, presets: Presets | None = None) -> dict:
    """The equations of a chapter plus what its own context module computes (computed once per
    preset set: the chapter page and its concept flashcards share it)."""
    presets = presets or load()
    key = (chapter_id, presets.files)
    if key not in _CHAPTER_CONTEXTS:
        with derivations.recording() as made, reads.recording():
            _CHAPTER_CONTEXTS[key] = _chapter_context(chapter_id, presets)
            _EVALUATIONS[key] = tuple(made)
    return _CHAPTER_CONTEXTS[key]


def chapter_evaluations(
    chapter_id: str, presets: Presets | None = None
) -> tuple[derivations.Evaluation, ...]:
    """Every evaluation made while the chapter's context was computed: which equation, on which
    presets and inputs, with which value (the chapter's notebook replays those it prints).

    >>> made = chapter_evaluations("batching")
    >>> any(e.equation.id == "crossover_batch" and e.keywords.get("model") == "deepseek_v3"
    ...     for e in made)
    True
    """
    presets = presets or load()
    chapter_context(chapter_id, presets)
    return _EVALUATIONS[(chapter_id, presets.files)]


def _chapter_context(chapter_id: str, presets: Presets) -> dict:
    from book.chapters import CONTEXTS

    chapter = next(c for c in derivations.CHAPTERS if c.id == chapter_id)
    ctx = {
        "chapter": chapter,
        "equations": {
            e.id: equation_context(e, presets) for e in derivations.equations(chapter_id)
        },
    }
    if chapter_id in CONTEXTS:
        ctx.update(CONTEXTS[chapter_id](presets))
    return ctx


def _claim_counts(presets) -> dict:
    from book.claims import VERDICTS, audit_claims

    verdicts = [v.verdict for v in audit_claims(presets).values()]
    names = ("holds", "partly", "premise", "wrong")
    return dict(zip(names, map(verdicts.count, VERDICTS), strict=True))


def site_context(presets: Presets | None = None) -> dict:
    presets = presets or load()
    ev = Evaluator(presets, "h100_sxm", "deepseek_v3")
    batch = round(ev.q("crossover_batch").to("sequence").magnitude)
    return {
        "example_batch": number(batch).replace(",", ""),
        "example_bandwidth": quantity(
            derivations.get("crossover_batch")
            .solve_for("mem_bandwidth")
            .evaluate(
                model="deepseek_v3", hardware="h100_sxm", presets=presets, crossover_batch=batch
            ),
            digits=3,
        ),
        "chapters": derivations.CHAPTERS,
        "claims": _claim_counts(presets),
        "n_equations": len(derivations.CATALOGUE),
        "n_symbols": len(derivations.SYMBOLS),
        "n_presets": {kind: len(table) for kind, table in presets.by_kind.items()},
    }
