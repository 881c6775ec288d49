"""Pure context building: equations and presets in, plain dicts of display strings out.

Every number a page shows is computed here, from an equation evaluated on presets, and
formatted by :mod:`book.format`; templates only place these strings.

>>> ctx = chapter_context("batching")
>>> ctx["examples"][0]["title"]
'DeepSeek-V3 / R1 on NVIDIA H100 SXM at fp8'
"""

from __future__ import annotations

import math
import posixpath

import pint

import derivations
from book.format import number, quantity, unit
from derivations.inputs import BINDINGS
from units import ChalkboardError, parse_unit
from units.presets import Presets, load

# The worked examples of each chapter: (hardware, model, precision) preset ids.
WORKED_EXAMPLES = {
    "batching": (
        ("h100_sxm", "deepseek_v3", "fp8"),
        ("gb200_nvl72", "llama_3_1_405b", "fp8"),
    ),
}
# The models chapter A compares: one dense, one sparse (the table runs the sparse one).
TABLE_MODELS = {"batching": ("llama_3_1_70b", "deepseek_v3")}


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
        "used_by": used_by,
    }


class Evaluator:
    """Evaluates equations on one choice of presets, formatting results for the page."""

    def __init__(self, presets: Presets, hardware=None, model=None, precision="bf16", **fixed):
        self.presets = presets
        self.choice = {"hardware": hardware, "model": model, "precision": precision}
        self.fixed = fixed

    def detailed(self, eq_id: str, **overrides):
        kwargs = {**self.choice, **self.fixed, **overrides}
        return derivations.get(eq_id).evaluate_detailed(presets=self.presets, **kwargs)

    def q(self, eq_id: str, **overrides) -> pint.Quantity:
        return self.detailed(eq_id, **overrides).value

    def text(self, eq_id: str, **overrides) -> str:
        return quantity(self.q(eq_id, **overrides))


def _example(presets: Presets, hardware: str, model: str, precision: str) -> dict:
    ev = Evaluator(presets, hardware, model, precision)
    hw, mdl = presets.get("hardware", hardware), presets.get("model", model)
    batch = _whole(ev.q("crossover_batch"))
    at = ev.detailed("cost_per_token", batch_size=batch)
    shown = (
        "flops",
        "mem_bandwidth",
        "hbm_capacity",
        "n_total",
        "n_active",
        "bytes_per_value",
        "kv_bytes_per_token",
        "context_length",
        "n_chips",
        "price_per_chip_hour",
    )
    inputs = [
        {
            **symbol_context(derivations.lookup_symbol(name), presets),
            "value": quantity(i.value),
            "origin": i.origin,
        }
        for name, i in at.inputs.items()
        if name in shown
    ]
    cost_1 = ev.q("cost_per_token", batch_size=1)
    return {
        "title": f"{mdl.name} on {hw.name} at {precision}",
        "hardware": hardware,
        "model": model,
        "precision": precision,
        "inputs": inputs,
        "ridge": ev.text("ridge_intensity"),
        "sparsity": number(mdl.params_total / mdl.params_active),
        "crossover": ev.text("crossover_batch"),
        "batch": number(batch),
        "drain": ev.text("hbm_drain_time"),
        "at": {name: quantity(i.value) for name, i in at.inputs.items()},
        "cost": quantity(at.value),
        "throughput": ev.text("throughput", batch_size=batch),
        "latency": ev.text("worst_case_latency"),
        "cost_batch_1": quantity(cost_1),
        "batching_gain": number((cost_1 / at.value).to("").magnitude, 3),
    }


def _in(unit: str, compute) -> str:
    """A table cell: ``compute()`` as a bare number in ``unit``, or a dash where a preset
    lacks a figure the equation needs."""
    try:
        q = compute()
    except ChalkboardError:
        return "—"
    return "—" if q is None else number(q.to(unit).magnitude)


def _hardware_table(presets: Presets, model: str) -> dict:
    """Chapter A's table: every chip, its figures and the chapter's results for ``model``."""
    columns = (
        ("BF16 FLOP/s", "TFLOP/s"),
        ("HBM bandwidth", "TB/s"),
        ("HBM", "GB"),
        ("FLOP per byte", "FLOP/byte"),
        ("drain time", "ms"),
        ("crossover batch", "sequence"),
        ("cost at that batch", "USD/Mtoken"),
    )
    rows = []
    for hw in presets.hardware.values():
        values = _chip_results(hw, Evaluator(presets, hw.id, model))
        cells = [_in(unit, f) for (_, unit), f in zip(columns, values, strict=True)]
        rows.append({"id": hw.id, "name": hw.name, "cells": cells})
    headers = [f"{name} ({unit(parse_unit(u))})" for name, u in columns]
    return {"headers": headers, "rows": rows}


def _chip_results(hw, ev: Evaluator) -> tuple:
    """The table's figures for one chip, as functions (a missing figure raises when called)."""
    return (
        lambda: hw.get("dense_flops_bf16"),
        lambda: hw.hbm_bandwidth,
        lambda: hw.hbm_capacity,
        lambda: ev.q("ridge_intensity"),
        lambda: ev.q("hbm_drain_time"),
        lambda: ev.q("crossover_batch"),
        lambda: ev.q("cost_per_token", batch_size=_whole(ev.q("crossover_batch"))),
    )


def _whole(batch: pint.Quantity) -> int:
    """A batch size rounded up to a whole sequence."""
    return math.ceil(batch.to("sequence").magnitude)


def chapter_context(chapter_id: str, presets: Presets | None = None) -> dict:
    presets = presets or load()
    chapter = next(c for c in derivations.CHAPTERS if c.id == chapter_id)
    ctx = {
        "chapter": chapter,
        "equations": {
            e.id: equation_context(e, presets) for e in derivations.equations(chapter_id)
        },
        "examples": [_example(presets, *ex) for ex in WORKED_EXAMPLES.get(chapter_id, ())],
    }
    if chapter_id == "batching":
        ctx.update(_batching_extras(presets))
    return ctx


def _batching_extras(presets: Presets) -> dict:
    dense, sparse = TABLE_MODELS["batching"]
    drain = {
        hw: {
            "name": presets.get("hardware", hw).name,
            "capacity": quantity(presets.get("hardware", hw).hbm_capacity),
            "bandwidth": quantity(presets.get("hardware", hw).hbm_bandwidth),
            "time": Evaluator(presets, hw).text("hbm_drain_time"),
        }
        for hw in ("rubin", "b200", "b300", "h100_sxm")
    }
    ridge = {
        presets.get("hardware", hw).name: Evaluator(presets, hw).text("ridge_intensity")
        for hw in ("a100_sxm", "h100_sxm", "b200", "gb200_nvl72")
    }
    same_b = {
        m: Evaluator(presets, "h100_sxm", m).text("crossover_batch")
        for m in ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
    }
    period = Evaluator(presets).detailed("worst_case_latency")
    return {
        "hardware_table": _hardware_table(presets, sparse),
        "dense_model": presets.get("model", dense).name,
        "sparse_model": presets.get("model", sparse).name,
        "dense_crossover": Evaluator(presets, "h100_sxm", dense).text("crossover_batch"),
        "price": quantity(presets.get("rental", "lecture_gpu").price),
        "context_length": quantity(presets.get("parameter", "context_length").value),
        "drain": drain,
        "ridge": ridge,
        "same_b": {presets.get("model", m).name: v for m, v in same_b.items()},
        "period": quantity(period.inputs["train_period"].value),
        "worst": quantity(period.value),
    }


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
        ("hbm_capacity", "HBM", "GB"),
        ("hbm_bandwidth", "HBM bandwidth", "TB/s"),
        ("scale_up_domain", "scale-up domain", "chip"),
    )
    rows = [
        {
            "id": hw.id,
            "name": hw.name,
            "cells": [_in(u, lambda hw=hw, f=f: hw.get(f)) for f, _, u in columns],
        }
        for hw in presets.hardware.values()
    ]
    return {"headers": [f"{name} ({unit(parse_unit(u))})" for _, name, u in columns], "rows": rows}


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
        "n_equations": len(derivations.CATALOGUE),
        "n_symbols": len(derivations.SYMBOLS),
        "n_presets": {kind: len(table) for kind, table in presets.by_kind.items()},
    }
