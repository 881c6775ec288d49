"""Chapter A's context: worked examples, the table across every chip, and cited figures.

>>> from units.presets import load
>>> ctx = context(load())
>>> ctx["examples"][0]["title"]
'DeepSeek-V3 / R1 on NVIDIA H100 SXM at fp8'
"""

import math

import pint

import derivations
from book.context import Evaluator, cell_in, header, symbol_context
from book.format import number, quantity
from units.presets import Presets

# Worked examples: (hardware, model, precision) preset ids.
WORKED_EXAMPLES = (
    ("h100_sxm", "deepseek_v3", "fp8"),
    ("gb200_nvl72", "llama_3_1_405b", "fp8"),
)
# Precision mixes for the mixed-precision example (issue 11): keywords of the evaluation. The last
# is how deployments often run: FP4 weights with FP8 math and an FP8 KV cache (W4A8).
PRECISION_MIXES = (
    dict(precision="bf16"),
    dict(precision="fp8"),
    dict(precision="fp8", weight_precision="fp4"),
)
MIXED_CASE = ("h100_sxm", "deepseek_v3")
# The models the chapter compares: one dense, one sparse (the table runs the sparse one).
TABLE_MODELS = ("llama_3_1_70b", "deepseek_v3")


def context(presets: Presets) -> dict:
    """Chapter A's worked examples, its table across every chip, and the figures its prose cites."""
    dense, sparse = TABLE_MODELS
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
        "examples": [_example(presets, *ex) for ex in WORKED_EXAMPLES],
        "mixed_precision": _mixed_precision(presets, *MIXED_CASE),
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
        **_sequence_rates(presets),
    }


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
        "weight_bytes_per_value",
        "kv_bytes_per_value",
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
        "per_weight_byte": ev.text("dense_crossover_batch"),
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


def _mixed_precision(presets: Presets, hardware: str, model: str) -> dict:
    """The crossover, replica size and cost at the crossover for each precision mix: the
    crossover moves only when the weights' bytes and the math's rate move apart."""
    from book.cases import precision_words

    rows = []
    for mix in PRECISION_MIXES:
        ev = Evaluator(presets, hardware, model, **mix)
        batch = _whole(ev.q("crossover_batch"))
        at = ev.detailed("cost_per_token", batch_size=batch)
        rows.append(
            {
                "mix": precision_words(mix),
                "crossover": ev.text("crossover_batch"),
                "chips": number(at.inputs["n_chips"].value.magnitude),
                "cost": quantity(at.value),
                "command": " ".join(f"--{k.replace('_', '-')} {v}" for k, v in mix.items()),
            }
        )
    return {
        "hardware": presets.get("hardware", hardware).name,
        "model": presets.get("model", model).name,
        "rows": rows,
    }


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
        cells = [cell_in(u, f) for (_, u), f in zip(columns, values, strict=True)]
        rows.append({"id": hw.id, "name": hw.name, "cells": cells})
    return {"headers": [header(name, u) for name, u in columns], "rows": rows}


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


RATE_CHIPS = ("rubin", "gb200_nvl72", "h100_sxm")  # the lecture's chip first


def _sequence_rates(presets: Presets) -> dict:
    """Tokens per second per sequence when a step lasts one HBM drain time (the lecture's
    '64 B tokens/s'), on the lecture's Rubin and on two chips in service."""
    rows = [
        {
            "name": presets.get("hardware", hw).name,
            "drain": Evaluator(presets, hw).text("hbm_drain_time"),
            "rate": Evaluator(presets, hw).text("throughput_per_sequence"),
        }
        for hw in RATE_CHIPS
    ]
    import tomllib

    from book.claims import CLAIMS
    from units import parse_quantity

    said = tomllib.loads(CLAIMS.read_text(encoding="utf-8"))["claim"]["throughput_64b"]
    lecture = parse_quantity(said["expected"], what="claims.toml: throughput_64b")
    return {"sequence_rates": rows, "lecture_rate": quantity(lecture)}
