"""Pure context building: equations and presets in, plain dicts of display strings out.

Every number a page shows is computed here, from an equation evaluated on presets, and
formatted by :mod:`book.format`; templates only place these strings.

>>> import derivations
>>> equation_context(derivations.get("crossover_batch"))["latex"].startswith("B^{*} =")
True
"""

from __future__ import annotations

import posixpath

import pint

import derivations
from book.format import Said, number, prose, quantity, said, unit
from derivations import stored
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
        "unit": unit(s.display_unit),
        "meaning": s.meaning,
        "from": _value_from(s, presets or load(), page),
    }


def _written_inputs(eq, presets: Presets | None, page: str) -> list[dict]:
    if not eq.uses:
        return []
    names = set(stored.expanded_names(eq)) - {s.name for s in eq.inputs} - {eq.lhs.name}
    return [
        symbol_context(s, presets, page) for s in derivations.SYMBOLS.values() if s.name in names
    ]


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
        "display": eq.display_latex(),
        "expanded": stored.expanded_latex(eq) if eq.uses else "",
        "lhs": symbol_context(eq.lhs, presets, page),
        "summary": prose(eq.summary),
        "source": str(eq.source),
        "source_note": eq.source.note,
        "assumptions": list(eq.assumptions),
        "inputs": [symbol_context(s, presets, page) for s in eq.inputs],
        # the symbols only the written-out line shows, reached through the intermediates
        "written_inputs": _written_inputs(eq, presets, page),
        # the inputs the displayed form shows (not its unit constants): a "where" line's symbols
        "shown": [
            symbol_context(s, presets, page)
            for s in eq.inputs
            if s.sym in eq.display_expr.free_symbols
        ],
        "steps": steps,
        "uses": [equation_link(e, page) for e in eq.uses],
        "evaluable": eq.evaluable,
        "used_by": used_by,
    }


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

    def text(self, eq_id: str, **overrides) -> Said:
        """The result exact, and as prose says it (``.said``)."""
        return said(self.q(eq_id, **overrides))


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
