"""Chapter B's context: experts per chip, the all-to-all against the layer's compute, racks, and
what a scale-up domain can hold.

>>> from units.presets import load
>>> ctx = context(load())
>>> ctx["experts_per_chip"], ctx["slowdown"]
('4 experts per chip', '4')
"""

from book.context import Evaluator, cell_in, header
from book.format import chip_name, context_tokens, quantity, said, said_number
from units import Q_
from units.presets import Presets

MODEL = "deepseek_v3"
RACK = "gb200_nvl72"
HOPPER = "h100_sxm"
ULTRA = "gb300_nvl72"
RACK_COUNTS = (1, 2, 3, 4, 8)
FIGURE_RACKS = tuple(range(1, 9))


def _us(q) -> str:
    """A time in microseconds, as a reader says it."""
    return said(q.to("microsecond"))


def alltoall_series(presets: Presets) -> dict:
    """The figure's data: one MoE layer's all-to-all time against racks spanned, at the lecture's
    penalty and at the rack's own, beside the layer's compute time (DeepSeek-V3, GB200, B*)."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    batch = ev.q("crossover_batch")
    chips = presets.parameter["expert_parallel_chips"].value
    penalty_hw = ev.q("hardware_scale_out_penalty")
    layers = Q_(presets.get("model", MODEL).layers, "layer")
    # The layer's compute: the weights' FLOPs alone (a context of one token, the short-context
    # limit), and at the default context, where attention over the KV cache adds FLOPs.
    short = Q_(1, "token/sequence")
    layer = (
        ev.q("compute_time", batch_size=batch, n_chips=chips, context_length=short) / layers
    ).to("ms/layer")
    layer_ctx = (ev.q("compute_time", batch_size=batch, n_chips=chips) / layers).to("ms/layer")

    def times(penalty):
        return [
            ev.q(
                "alltoall_time",
                batch_size=batch,
                racks_spanned=Q_(r, "rack"),
                scale_out_penalty=penalty,
            )
            .to("ms")
            .m
            for r in FIGURE_RACKS
        ]

    return {
        "racks": list(FIGURE_RACKS),
        "lecture": times(presets.parameter["scale_out_penalty"].value),
        "hardware": times(penalty_hw),
        "penalty_hw": penalty_hw,
        "layer_compute": Q_(layer.m, "ms"),
        "layer_compute_ctx": Q_(layer_ctx.m, "ms"),
        "batch": batch,
    }


def context(presets: Presets) -> dict:
    """Chapter B's worked examples (DeepSeek-V3 on an NVL72 rack) and its tables."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    lecture = Evaluator(presets)
    model = presets.get("model", MODEL)
    rack = presets.get("hardware", RACK)
    batch = ev.q("crossover_batch")
    chips = presets.parameter["expert_parallel_chips"].value
    slowdowns = [
        {
            "racks": said(Q_(r, "rack")),
            "offrack": lecture.text("offrack_fraction", racks_spanned=r),
            "slowdown": lecture.text("multi_rack_slowdown", racks_spanned=r),
        }
        for r in RACK_COUNTS
    ]
    series = alltoall_series(presets)
    layer = series["layer_compute"]
    one = ev.q("alltoall_time", batch_size=batch, racks_spanned=Q_(1, "rack")).to("ms")
    two = ev.q("alltoall_time", batch_size=batch).to("ms")
    penalty_hw = series["penalty_hw"]
    two_hw = ev.q("alltoall_time", batch_size=batch, scale_out_penalty=penalty_hw).to("ms")
    slowdown_hw = ev.q("multi_rack_slowdown", scale_out_penalty=penalty_hw)
    ratio_one = (one / layer).to("").m
    ratio_two = (two / layer).to("").m
    ratio_two_hw = (two_hw / layer).to("").m
    layer_ctx = series["layer_compute_ctx"]
    ratio_one_ctx = (one / layer_ctx).to("").m
    ratio_two_ctx = (two / layer_ctx).to("").m
    ratio_two_hw_ctx = (two_hw / layer_ctx).to("").m

    # What a Blackwell rack holds: its HBM minus the KV cache of a batch of B* at the default
    # context, divided by the bytes per weight (the lecture's "5T model plus KV" is the BF16 case).
    holds = {}
    for precision in ("bf16", "fp8"):
        p_ev = Evaluator(presets, RACK, MODEL, precision)
        hbm = p_ev.q("scaleup_memory").to("TB")
        kv = p_ev.q("kv_cache_per_batch", batch_size=batch).to("TB")
        weights_all = p_ev.q("max_total_params")
        left = (weights_all * ((hbm - kv) / hbm).to("")).to("Tparam")
        holds[precision] = {
            "hbm": said(hbm),
            "kv": said(kv),
            "all": said(weights_all.to("Tparam")),
            "left": said(left),
            "left_round": said_number(left.m, 1),
            "kv_share": said_number((kv / hbm).to("").m, 2),
        }
    fp4 = Evaluator(presets, RACK, precision="fp8", weight_precision="fp4")
    hopper = presets.get("hardware", HOPPER)
    ultra = presets.get("hardware", ULTRA)
    rubin = presets.parameter["rubin_scale_up_domain"].value
    penalty_ultra = Evaluator(presets, ULTRA).q("hardware_scale_out_penalty")
    return {
        "model": model.name,
        "model_id": MODEL,
        "rack_id": RACK,
        "rack": chip_name(rack),
        "experts_routed": said(Q_(model.experts_routed, "expert")),
        "experts_active": said(Q_(model.experts_active, "expert")),
        "experts_shared": said(Q_(model.experts_shared, "expert")),
        "d_model": said_number(model.d_model),
        "layers": said(Q_(model.layers, "layer")),
        "experts_per_chip": ev.text("experts_per_chip"),
        "experts_per_chip_rack": said(
            ev.q("experts_per_chip", expert_parallel_chips=rack.scale_up_domain)
        ),
        "ep_chips": said(chips),
        "domain": quantity(rack.scale_up_domain),
        "alltoall_bytes": ev.text("alltoall_bytes_per_token"),
        "alltoall_bytes_bf16": Evaluator(presets, RACK, MODEL, "bf16").text(
            "alltoall_bytes_per_token"
        ),
        "batch": quantity(batch),
        "per_weight_byte": said_number(ev.q("dense_crossover_batch").to("sequence").m),
        "sparsity": said_number((model.params_total / model.params_active).to("").m),
        "layer_compute": _us(layer),
        "layer_compute_ctx": _us(layer_ctx),
        "attention_matters": bool((layer_ctx / layer).to("").m > 1.01),
        "attention_factor": said_number((layer_ctx / layer).to("").m, 3),
        "ratio_one_rack_ctx": said_number(ratio_one_ctx, 3),
        "ratio_two_racks_ctx": said_number(ratio_two_ctx, 3),
        "ratio_two_racks_hw_ctx": said_number(ratio_two_hw_ctx, 3),
        "two_racks_hide_ctx": bool(ratio_two_ctx < 1),
        "model_compute": ev.text(
            "compute_time", batch_size=batch, n_chips=chips, context_length=Q_(1, "token/sequence")
        ),
        "alltoall_one_rack": _us(one),
        "alltoall_two_racks": _us(two),
        "alltoall_two_racks_hw": _us(two_hw),
        "ratio_one_rack": said_number(ratio_one, 3),
        "ratio_one_rack_round": said_number(ratio_one, 1),
        "ratio_two_racks": said_number(ratio_two, 3),
        "ratio_two_racks_hw": said_number(ratio_two_hw, 3),
        "penalty": quantity(presets.parameter["scale_out_penalty"].value),
        "penalty_hw": said_number(penalty_hw.to("").m),
        "penalty_hopper": said_number(Evaluator(presets, HOPPER).q("hardware_scale_out_penalty").m),
        "penalty_ultra": said_number(penalty_ultra.to("").m),
        "h800": presets.get("hardware", "h800").name,
        "penalty_h800": said_number(Evaluator(presets, "h800").q("hardware_scale_out_penalty").m),
        "ultra": chip_name(ultra),
        "scale_up_bw": quantity(rack.scale_up_bandwidth_per_direction),
        "scale_out_bw": quantity(rack.scale_out_bandwidth_per_direction.to("GB/s")),
        "racks": quantity(presets.parameter["racks_spanned"].value),
        "slowdowns": slowdowns,
        "slowdown": lecture.text("multi_rack_slowdown"),
        "slowdown_hw": said_number(slowdown_hw.to("").m),
        "hardware_table": _hardware_table(presets),
        "torus_chips": [
            hw.name for hw in presets.hardware.values() if hw.get("scale_up_topology") == "torus"
        ],
        "cost_floor": ev.text("compute_cost_floor"),
        "holds": holds,
        "hopper": chip_name(hopper),
        "hopper_domain": said(hopper.scale_up_domain),
        "hopper_hbm": Evaluator(presets, HOPPER).text("scaleup_memory"),
        "hopper_params_fp8": Evaluator(presets, HOPPER, precision="fp8").text("max_total_params"),
        "rack_params_fp8": ev.text("max_total_params"),
        "rack_params_fp4": fp4.text("max_total_params"),
        "rubin_domain": said(rubin),
        "rubin_over_blackwell": said_number((rubin / rack.scale_up_domain).to("").m),
        "blackwell_over_hopper": said_number(
            (rack.scale_up_domain / hopper.scale_up_domain).to("").m
        ),
        "context": context_tokens(presets.parameter["context_length"].value),
        "exercises": _exercises(presets, series, ratio_one, ratio_one_ctx),
        "total_params": quantity(model.params_total.to("Gparam")),
        "active_params": quantity(model.params_active.to("Gparam")),
    }


def _exercises(presets: Presets, series: dict, ratio_one: float, ratio_one_ctx: float) -> dict:
    """Numbers for the end-of-chapter exercises."""
    # 1. Kimi K2 on the same rack: bytes, times and their ratio at its own crossover batch.
    kimi_id = "kimi_k2"
    kimi = presets.get("model", kimi_id)
    ev = Evaluator(presets, RACK, kimi_id, "fp8")
    chips = presets.parameter["expert_parallel_chips"].value
    batch = ev.q("crossover_batch")
    layers = Q_(kimi.layers, "layer")
    compute = ev.q(
        "compute_time", batch_size=batch, n_chips=chips, context_length=Q_(1, "token/sequence")
    ).to("ms")
    layer = (compute / layers).to("ms/layer") * Q_(1, "layer")
    one = ev.q("alltoall_time", batch_size=batch, racks_spanned=Q_(1, "rack")).to("ms")
    two = ev.q("alltoall_time", batch_size=batch).to("ms")
    # 2. A faster network port: GB300's, against GB200's.
    ultra = Evaluator(presets, ULTRA)
    penalty_ultra = ultra.q("hardware_scale_out_penalty").to("").m
    slow_ultra = ultra.q("multi_rack_slowdown", scale_out_penalty=penalty_ultra).to("").m
    offrack = Evaluator(presets).q("offrack_fraction").to("").m
    # the penalty at which two racks' all-to-all just equals the layer's compute:
    # f * pi * ratio_one = 1
    break_even = 1 / (offrack * ratio_one)
    # 3. If the on- and off-rack bytes shared one link, the times would add instead.
    lecture = Evaluator(presets)
    penalty = presets.parameter["scale_out_penalty"].value.to("").m
    serial = (1 - offrack) + offrack * penalty
    # 4. FP4 weights, FP8 KV on a GB200 rack beside the FP8 batch's KV.
    fp4 = Evaluator(presets, RACK, MODEL, "fp8", weight_precision="fp4")
    b_fp8 = Evaluator(presets, RACK, MODEL, "fp8").q("crossover_batch")
    hbm = fp4.q("scaleup_memory").to("TB")
    kv = fp4.q("kv_cache_per_batch", batch_size=b_fp8).to("TB")
    left = (fp4.q("max_total_params") * ((hbm - kv) / hbm).to("")).to("Tparam")
    tpu = presets.get("hardware", "tpu7x")
    return {
        "kimi": kimi.name,
        "kimi_routed": said_number(kimi.experts_routed),
        "kimi_active": said(Q_(kimi.experts_active, "expert")),
        "kimi_d": said_number(kimi.d_model),
        "kimi_layers": said(layers),
        "kimi_total": said(kimi.params_total.to("Tparam")),
        "kimi_active_params": said(kimi.params_active.to("Gparam")),
        "kimi_bytes": ev.text("alltoall_bytes_per_token"),
        "kimi_batch": said(batch),
        "kimi_per_chip": ev.text("experts_per_chip"),
        "kimi_compute": said(compute),
        "kimi_layer": _us(layer),
        "kimi_one": _us(one),
        "kimi_two": _us(two),
        "kimi_ratio_one": said_number((one / layer).to("").m, 3),
        "kimi_ratio_two": said_number((two / layer).to("").m, 3),
        "ultra": chip_name(presets.get("hardware", ULTRA)),
        "ultra_out": said(
            presets.get("hardware", ULTRA).scale_out_bandwidth_per_direction.to("GB/s")
        ),
        "ultra_penalty": said_number(penalty_ultra),
        "ultra_slowdown": said_number(slow_ultra),
        "ultra_ratio": said_number(slow_ultra * ratio_one, 3),
        "break_even": said_number(break_even, 3),
        "ultra_ratio_ctx": said_number(slow_ultra * ratio_one_ctx, 3),
        "ultra_hides_ctx": bool(slow_ultra * ratio_one_ctx < 1),
        "break_even_ctx": said_number(1 / (offrack * ratio_one_ctx), 3),
        "offrack": said_number(offrack),
        "serial": said_number(serial),
        "fp4_kv": said(kv),
        "fp4_left": said(left),
        "fp4_batch": said(b_fp8),
        "tpu": tpu.name,
        "tpu_domain": said(tpu.scale_up_domain),
        "lecture_slowdown": lecture.text("multi_rack_slowdown"),
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
