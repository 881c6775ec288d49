"""Pure context building: equations and presets in, plain dicts of display strings out.

Every number a page shows is computed here, from an equation evaluated on presets, and
formatted by :mod:`book.format`; templates only place these strings.

>>> ctx = chapter_context("batching")
>>> ctx["examples"][0]["title"]
'DeepSeek-V3 / R1 on NVIDIA H100 SXM at fp8'
"""

from __future__ import annotations

import math

import pint

import derivations
from book.format import number, quantity
from derivations.inputs import BINDINGS
from units import ChalkboardError
from units.presets import Presets, load

# The worked examples of each chapter: (hardware, model, precision) preset ids.
WORKED_EXAMPLES = {
    "batching": (
        ("h100_sxm", "deepseek_v3", "fp8"),
        ("gb200_nvl72", "llama_3_1_405b", "fp8"),
    ),
}
# The models the chapter-A table compares on every chip: one dense, one sparse.
TABLE_MODELS = {"batching": ("llama_3_1_70b", "deepseek_v3")}


def _value_from(s, presets: Presets) -> str:
    """Where an evaluation takes this symbol's value from when the caller does not give it."""
    defined = derivations.defining(s.name)
    if isinstance(s, derivations.Constant):
        return f"constant, {quantity(s.value)}"
    if defined is not None:
        return f"equation `{defined.id}`"
    if s.name in BINDINGS:
        return BINDINGS[s.name].describe
    parameter = presets.by_kind["parameter"].get(s.name)
    if parameter is not None:
        return f"parameter, default {quantity(parameter.value)}"
    return "given"


def symbol_context(s, presets: Presets | None = None) -> dict:
    return {
        "name": s.name,
        "latex": s.latex,
        "unit": s.display or s.unit,
        "meaning": s.meaning,
        "from": _value_from(s, presets or load()),
    }


def equation_context(eq, presets: Presets | None = None) -> dict:
    used_by = [e.id for e in derivations.equations() if eq in e.uses]
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
        "lhs": symbol_context(eq.lhs, presets),
        "summary": eq.summary,
        "source": str(eq.source),
        "source_note": eq.source.note,
        "assumptions": list(eq.assumptions),
        "inputs": [symbol_context(s, presets) for s in eq.inputs],
        "steps": steps,
        "uses": [e.id for e in eq.uses],
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

    def cell(self, eq_id: str, **overrides) -> str:
        """A table cell: the value, or an em dash where a preset lacks a figure."""
        try:
            return self.text(eq_id, **overrides)
        except ChalkboardError:
            return "—"


def _example(presets: Presets, hardware: str, model: str, precision: str) -> dict:
    ev = Evaluator(presets, hardware, model, precision)
    hw, mdl = presets.get("hardware", hardware), presets.get("model", model)
    b_star = ev.q("crossover_batch")
    batch = math.ceil(b_star.to("sequence").magnitude)
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


def _hardware_rows(presets: Presets, models: tuple[str, str]) -> list[dict]:
    dense, sparse = models
    rows = []
    for hw in presets.hardware.values():
        ev = Evaluator(presets, hw.id)
        rows.append(
            {
                "id": hw.id,
                "name": hw.name,
                "flops": quantity(hw.dense_flops_bf16) if hw.get("dense_flops_bf16") else "—",
                "bandwidth": quantity(hw.hbm_bandwidth),
                "capacity": quantity(hw.hbm_capacity),
                "ridge": ev.cell("ridge_intensity"),
                "drain": ev.cell("hbm_drain_time"),
                "dense": ev.cell("crossover_batch", model=dense),
                "sparse": ev.cell("crossover_batch", model=sparse),
                "cost_floor": _cost_at_crossover(presets, hw.id, sparse),
            }
        )
    return rows


def _cost_at_crossover(presets: Presets, hardware: str, model: str) -> str:
    ev = Evaluator(presets, hardware, model)
    try:
        batch = math.ceil(ev.q("crossover_batch").to("sequence").magnitude)
        return ev.text("cost_per_token", batch_size=batch)
    except ChalkboardError:
        return "—"


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
        "hardware_rows": _hardware_rows(presets, (dense, sparse)),
        "dense_model": presets.get("model", dense).name,
        "sparse_model": presets.get("model", sparse).name,
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
    return [
        {"name": name, "value": quantity(v), "source": preset.source_of(name)}
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

    return {kind: rows(kind) for kind in presets.by_kind}


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
