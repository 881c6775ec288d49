"""Pure context building: equations and presets in, plain dicts of display strings out.

Every number a page shows is computed here, from an equation evaluated on presets, and
formatted by :mod:`book.format`; templates only place these strings.

>>> ctx = chapter_context("batching")
>>> ctx["equations"]["crossover_batch"]["latex"].startswith("B^{*} =")
True
"""

from __future__ import annotations

import posixpath

import pint

import derivations
from book.format import number, quantity, unit
from derivations.inputs import BINDINGS
from units import ChalkboardError, parse_unit
from units.presets import Presets, load


def equation_link(eq, page: str) -> str:
    """A Markdown link to ``eq`` on its chapter page, relative to ``page``."""
    target = f"chapters/{eq.chapter}.md"
    if target == page:
        return f"[`{eq.id}`](#{eq.id})"
    return f"[`{eq.id}`]({posixpath.relpath(target, posixpath.dirname(page) or '.')}#{eq.id})"


def _value_from(s, presets: Presets, page: str) -> str:
    """Where an evaluation takes this symbol's value from when the caller does not give it."""
    defined = derivations.defining(s.name)
    if isinstance(s, derivations.Constant):
        return f"constant, {quantity(s.value)}"
    if defined is not None:
        return f"equation {equation_link(defined, page)}"
    if s.name in BINDINGS:
        return BINDINGS[s.name].describe
    if not any(s in e.inputs for e in derivations.equations()):
        return "named inside derivations only"
    parameter = presets.by_kind["parameter"].get(s.name)
    if parameter is not None:
        return f"parameter, default {quantity(parameter.value)}"
    return "given"


def symbol_context(s, presets: Presets | None = None, page: str = "notation.md") -> dict:
    return {
        "name": s.name,
        "latex": s.latex,
        "unit": s.display or s.unit,
        "meaning": s.meaning,
        "from": _value_from(s, presets or load(), page),
    }


def equation_context(eq, presets: Presets | None = None) -> dict:
    page = f"chapters/{eq.chapter}.md"
    used_by = [equation_link(e, page) for e in derivations.equations() if eq in e.uses]
    steps = []
    if eq.derivation is not None:
        steps = [
            {"latex": derivations.to_latex(step.relation), "why": step.why, "kind": step.kind}
            for step in eq.derivation.steps
        ]
    return {
        "id": eq.id,
        "title": eq.title,
        "latex": eq.latex(),
        "expanded": derivations.to_latex(eq.expanded()) if eq.uses else "",
        "lhs": symbol_context(eq.lhs, presets, page),
        "summary": eq.summary,
        "source": str(eq.source),
        "source_note": eq.source.note,
        "assumptions": list(eq.assumptions),
        "inputs": [symbol_context(s, presets, page) for s in eq.inputs],
        "steps": steps,
        "uses": [equation_link(e, page) for e in eq.uses],
        "evaluable": eq.evaluable,
        "calculator": _calculator_html(eq, presets),
        "used_by": used_by,
    }


def _calculator_html(eq, presets) -> str:
    from book.calculators import calculator, calculator_html

    spec = calculator(eq.id, presets)
    return calculator_html(spec) if spec else ""


class Evaluator:
    """Evaluates equations on one choice of presets, formatting results for the page."""

    def __init__(
        self,
        presets: Presets,
        hardware=None,
        model=None,
        precision="bf16",
        *,
        weight_precision=None,
        kv_precision=None,
        compute_precision=None,
        **fixed,
    ):
        self.presets = presets
        self.choice = {"hardware": hardware, "model": model, "precision": precision}
        self.choice.update(
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            compute_precision=compute_precision,
        )
        self.fixed = fixed

    def detailed(self, eq_id: str, **overrides):
        kwargs = {**self.choice, **self.fixed, **overrides}
        return derivations.get(eq_id).evaluate_detailed(presets=self.presets, **kwargs)

    def q(self, eq_id: str, **overrides) -> pint.Quantity:
        return self.detailed(eq_id, **overrides).value

    def terms(self, eq_id: str, **overrides) -> dict:
        """Each term of a sum (or argument of a max) on ``eq_id``'s right side, evaluated alone:
        ``{term expression: Quantity}``."""
        from derivations.algebra import split_terms
        from derivations.inputs import reachable

        given = {**self.fixed, **overrides}
        out = {}
        for part in split_terms(derivations.get(eq_id)):
            reads = reachable(part)  # a term reads only some of the equation's inputs
            kwargs = {k: v for k, v in given.items() if k in reads}
            out[part.rhs] = part.evaluate(presets=self.presets, **self.choice, **kwargs)
        return out

    def text(self, eq_id: str, **overrides) -> str:
        return quantity(self.q(eq_id, **overrides))


def header(name: str, in_unit: str) -> str:
    """A table column heading with its unit: ``'HBM (GB)'``; a pure number has none."""
    shown = unit(parse_unit(in_unit))
    return f"{name} ({shown})" if shown else name


def cell_in(in_unit: str, compute) -> str:
    """A table cell: ``compute()`` as a bare number in ``in_unit``, or a dash where a preset
    lacks a figure the equation needs."""
    try:
        q = compute()
    except ChalkboardError:
        return "—"
    return "—" if q is None else number(q.to(in_unit).magnitude)


_CHAPTER_CONTEXTS: dict[tuple, dict] = {}  # by chapter and the preset files behind it


def chapter_context(chapter_id: str, presets: Presets | None = None) -> dict:
    """The equations of a chapter plus what its own context module computes (computed once per
    preset set: the chapter page and its concept flashcards share it)."""
    presets = presets or load()
    key = (chapter_id, presets.files)
    if key not in _CHAPTER_CONTEXTS:
        _CHAPTER_CONTEXTS[key] = _chapter_context(chapter_id, presets)
    return _CHAPTER_CONTEXTS[key]


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
    from book.figures import figures_for

    ctx["figures"] = figures_for(chapter_id, presets)
    return ctx


def notation_context(presets: Presets | None = None) -> dict:
    presets = presets or load()
    return {"symbols": [symbol_context(s, presets) for s in derivations.SYMBOLS.values()]}


def _figures(preset) -> list[dict]:
    """Each figure; ``source`` is set only where it differs from the preset's own source."""
    default = preset.source_of("source")
    return [
        {
            "name": name,
            "value": quantity(v),
            "source": "" if preset.source_of(name) == default else preset.source_of(name),
        }
        for name, v in preset.fields.items()
        if isinstance(v, pint.Quantity)
    ]


def presets_context(presets: Presets | None = None) -> dict:
    presets = presets or load()

    def rows(kind):
        return [
            {
                "id": p.id,
                "name": p.name,
                "note": p.get("note", ""),
                "as_of": p.get("as_of", ""),
                "source": p.source_of("source"),
                "figures": _figures(p),
                "counts": {k: number(v) for k, v in p.fields.items() if isinstance(v, int)},
                "attention": p.get("attention", ""),
                "medium": p.get("medium", ""),
            }
            for p in presets.by_kind[kind].values()
        ]

    return {
        **{kind: rows(kind) for kind in presets.by_kind},
        "hardware_summary": _hardware_summary(presets),
    }


def _hardware_summary(presets: Presets) -> dict:
    columns = (
        ("dense_flops_bf16", "BF16", "TFLOP/s"),
        ("dense_flops_fp8", "FP8", "TFLOP/s"),
        ("dense_flops_fp4", "FP4", "TFLOP/s"),
        ("dense_flops_int8", "INT8", "TFLOP/s"),
        ("hbm_capacity", "HBM", "GB"),
        ("hbm_bandwidth", "HBM bandwidth", "TB/s"),
        ("scale_up_domain", "scale-up domain", "chip"),
    )
    rows = [
        {
            "id": hw.id,
            "name": hw.name,
            "cells": [cell_in(u, lambda hw=hw, f=f: hw.get(f)) for f, _, u in columns],
        }
        for hw in presets.hardware.values()
    ]
    return {"headers": [header(name, u) for _, name, u in columns], "rows": rows}


def _claim_counts(presets) -> dict:
    from book.claims import VERDICTS, audit_claims

    verdicts = [v.verdict for v in audit_claims(presets).values()]
    return dict(zip(("holds", "caveat", "wrong"), map(verdicts.count, VERDICTS), strict=True))


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
