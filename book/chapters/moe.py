"""Chapter B's context: experts per chip, the all-to-all, racks, and what a domain can hold.

>>> from units.presets import load
>>> context(load())["experts_per_chip"]
'4 experts per chip'
"""

from book.context import Evaluator, cell_in, header
from book.format import number, quantity
from units import Q_
from units.presets import Presets

MODEL = "deepseek_v3"
RACK = "gb200_nvl72"
RACK_COUNTS = (1, 2, 3, 4, 8)


def context(presets: Presets) -> dict:
    """Chapter B's worked example (DeepSeek-V3 on an NVL72 rack) and its tables."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    lecture = Evaluator(presets)
    batch = ev.q("crossover_batch")
    slowdowns = [
        {
            "racks": quantity(Q_(r, "rack")),
            "offrack": lecture.text("offrack_fraction", racks_spanned=r),
            "slowdown": lecture.text("multi_rack_slowdown", racks_spanned=r),
        }
        for r in RACK_COUNTS
    ]
    return {
        "model": presets.get("model", MODEL).name,
        "model_id": MODEL,
        "rack_id": RACK,
        "rack": presets.get("hardware", RACK).name,
        "experts_per_chip": ev.text("experts_per_chip"),
        "ep_chips": quantity(presets.parameter["expert_parallel_chips"].value),
        "alltoall_bytes": ev.text("alltoall_bytes_per_token"),
        "batch": quantity(batch),
        "per_weight_byte": ev.text("dense_crossover_batch"),
        "sparsity": number(
            (presets.get("model", MODEL).params_total / presets.get("model", MODEL).params_active)
            .to("")
            .magnitude
        ),
        "alltoall_one_rack": ev.text("alltoall_time", batch_size=batch, racks_spanned=1),
        "alltoall_two_racks": ev.text("alltoall_time", batch_size=batch),
        "penalty": quantity(presets.parameter["scale_out_penalty"].value),
        "racks": quantity(presets.parameter["racks_spanned"].value),
        "slowdowns": slowdowns,
        "slowdown": lecture.text("multi_rack_slowdown"),
        "hardware_table": _hardware_table(presets),
        "torus_chips": [
            hw.name for hw in presets.hardware.values() if hw.get("scale_up_topology") == "torus"
        ],
        "cost_floor": ev.text("compute_cost_floor"),
    }


def _hardware_table(presets: Presets) -> dict:
    """Every chip with a switched scale-up domain: its memory, what it holds, its own penalty.

    Torus domains (TPU pods) are left out: an all-to-all over a torus crosses many hops and does
    not run at each chip's full link bandwidth, so neither the penalty nor the domain as one
    expert-parallel group compares like for like.
    """
    columns = (
        ("scale-up domain", "chip"),
        ("domain HBM", "TB"),
        ("parameters it holds at FP8", "Tparameter"),
        ("scale-up / scale-out", "dimensionless"),
    )
    rows = []
    for hw in presets.hardware.values():
        if hw.get("scale_up_domain") is None or hw.get("scale_up_topology") == "torus":
            continue
        ev = Evaluator(presets, hw.id, precision="fp8")
        values = (
            lambda hw=hw: hw.scale_up_domain,
            lambda ev=ev: ev.q("scaleup_memory"),
            lambda ev=ev: ev.q("max_total_params"),
            lambda ev=ev: ev.q("hardware_scale_out_penalty"),
        )
        cells = [cell_in(u, f) for (_, u), f in zip(columns, values, strict=True)]
        rows.append({"name": hw.name, "cells": cells})
    return {"headers": [header(n, u) for n, u in columns], "rows": rows}
