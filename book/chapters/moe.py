"""Chapter B's context: experts per chip, the all-to-all against the layer's compute, racks, and
what a scale-up domain can hold.

>>> from units.presets import load
>>> ctx = context(load())
>>> ctx["experts_per_chip"], ctx["slowdown"]
('4 experts per chip', '4')
"""

import math

import derivations
from book.context import Evaluator, cell_in, equation_context, header
from book.format import (
    chip_name,
    context_tokens,
    number,
    quantity,
    said,
    said_number,
    spoken_number,
)
from derivations.notation import flops_per_param_token
from units import Q_
from units.presets import Presets

MODEL = "deepseek_v3"
RACK = "gb200_nvl72"
HOPPER = "h100_sxm"
ULTRA = "gb300_nvl72"
# The two-rack examples run on GB300 NVL72: the same FP8 FLOP/s (not FP4), HBM bandwidth and
# NVLink as GB200 (so every one-rack figure holds for it, checked in context()), a port twice as
# fast, so its own scale-out penalty (9) is the lecture's round 8x. GB200's 18x is the variant.
TWO_RACKS = ULTRA
RACK_COUNTS = (1, 2, 3, 4, 8)
FIGURE_RACKS = tuple(range(1, 5))


def _us(q) -> str:
    """A time in microseconds, as a reader says it."""
    return said(q.to("microsecond"))


def two_rack_penalty(presets: Presets):
    """The scale-out penalty of the two-rack examples' chip (GB300 NVL72): per chip and per
    direction, NVLink over the network port.

    >>> from units.presets import load
    >>> two_rack_penalty(load())
    <Quantity(9.0, 'dimensionless')>
    """
    return Evaluator(presets, TWO_RACKS).q("hardware_scale_out_penalty").to("")


def alltoall_series(presets: Presets) -> dict:
    """The figure's data: one MoE layer's all-to-all time against racks spanned, on GB300 NVL72
    chips at their own penalty and on GB200 NVL72 chips at theirs, beside the layer's compute
    time (DeepSeek-V3, B*; the two chips compute alike)."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    batch = ev.q("crossover_batch")
    chips = presets.parameter["expert_parallel_chips"].value
    penalty_hw = ev.q("hardware_scale_out_penalty")
    penalty_two = two_rack_penalty(presets)
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

    one_rack = ev.q("alltoall_time", batch_size=batch, racks_spanned=Q_(1, "rack")).to("ms")

    def once(penalty):
        """Sending one copy per other rack (DeepSeek-V3's dispatch): the one-rack time times
        the once-per-rack slowdown."""
        return [
            (
                one_rack
                * ev.q(
                    "once_per_rack_slowdown", racks_spanned=Q_(r, "rack"), scale_out_penalty=penalty
                )
            )
            .to("ms")
            .m
            for r in FIGURE_RACKS
        ]

    return {
        "racks": list(FIGURE_RACKS),
        "chips": chips,
        "two": times(penalty_two),
        "hardware": times(penalty_hw),
        "once_two": once(penalty_two),
        "once_hardware": once(penalty_hw),
        "penalty_hw": penalty_hw,
        "penalty_two": penalty_two,
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
    penalties = (
        two_rack_penalty(presets),
        Evaluator(presets, RACK).q("hardware_scale_out_penalty"),
    )
    slowdowns = [
        {
            "racks": said(Q_(r, "rack")),
            "offrack": lecture.text("offrack_fraction", racks_spanned=r),
            "slowdown": lecture.text(
                "multi_rack_slowdown", racks_spanned=r, scale_out_penalty=penalties[0]
            ),
            "slowdown_hw": lecture.text(
                "multi_rack_slowdown", racks_spanned=r, scale_out_penalty=penalties[1]
            ),
        }
        for r in RACK_COUNTS
    ]
    series = alltoall_series(presets)
    layer = series["layer_compute"]
    one = ev.q("alltoall_time", batch_size=batch, racks_spanned=Q_(1, "rack")).to("ms")
    penalty_two = series["penalty_two"]
    ev_two = Evaluator(presets, TWO_RACKS, MODEL, "fp8")
    # the two-rack chip computes and moves bytes inside a rack exactly as the one-rack chip
    assert ev_two.q("crossover_batch") == batch, "GB300's crossover differs from GB200's"
    one_two = ev_two.q("alltoall_time", batch_size=batch, racks_spanned=Q_(1, "rack"))
    assert abs((one_two / one).to("").m - 1) < 1e-9, "GB300's one-rack all-to-all differs"
    two = ev_two.q("alltoall_time", batch_size=batch, scale_out_penalty=penalty_two).to("ms")
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
    experts = _expert_compute(model, layer)

    # What a Blackwell rack holds: its HBM minus the KV cache of a batch of B* at the default
    # context, divided by the bytes per weight (the lecture's "5T model plus KV" is the BF16 case).
    holds = {}
    for precision in ("bf16", "fp8"):
        p_ev = Evaluator(presets, RACK, MODEL, precision)
        # at BF16 the FLOP rate halves and each weight's bytes double: the same crossover
        assert abs((p_ev.q("crossover_batch") / batch).to("").m - 1) < 1e-9, precision
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
        "experts_routed_n": said_number(model.experts_routed),
        "experts_active_n": said_number(model.experts_active),
        "experts_active": said(Q_(model.experts_active, "expert")),
        "experts_shared": said(Q_(model.experts_shared, "expert")),
        **_lecture_count(presets),
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
        "combine_bytes": quantity(presets.parameter["combine_bytes_per_value"].value),
        "alltoall_bytes_fp8_both": ev.text(
            "alltoall_bytes_per_token", combine_bytes_per_value=Q_(1, "byte/value")
        ),
        "ratio_one_rack_fp8_both": said_number(ratio_one * _fp8_both_share(ev), 2),
        "batch": said(batch),
        "per_weight_byte": said_number(ev.q("dense_crossover_batch").to("sequence").m),
        "sparsity": said_number((model.params_total / model.params_active).to("").m),
        "crossover_factors": crossover_factors(presets),
        "tex": _tex(),
        # the batching chapter's equation the worked example displays, for its "where" line
        "crossover_eq": equation_context(derivations.get("crossover_batch"), presets),
        "price": said(presets.get("rental", "lecture_gpu").price),
        "price_source": presets.get("rental", "lecture_gpu").name,
        "flops_per_param": said(flops_per_param_token.value),
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
        "ratio_one_rack": said_number(ratio_one, 2),
        "ratio_one_rack_hides": bool(ratio_one < 1),
        **_per_moe_layer(presets, model, layer, one),
        **_flops_by_precision(presets),
        "expert_share": said_number(experts["share"], 2),
        "expert_layer_compute": _us(experts["time"]),
        "ratio_experts_only": said_number((one / experts["time"]).to("").m, 2),
        "experts_only_hides": bool((one / experts["time"]).to("").m < 1),
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
        "slowdown_two": said_number(
            lecture.q("multi_rack_slowdown", scale_out_penalty=penalty_two).to("").m
        ),
        "penalty_two": said_number(penalty_two.m),
        "two_chip": chip_name(presets.get("hardware", TWO_RACKS)),
        # after their first use the chips go by their short names ("GB300", not "GB300 NVL72")
        "two_chip_short": chip_name(presets.get("hardware", TWO_RACKS)).removesuffix(" NVL72"),
        "rack_short": chip_name(rack).removesuffix(" NVL72"),
        "two_out_bw": quantity(
            presets.get("hardware", TWO_RACKS).scale_out_bandwidth_per_direction.to("GB/s")
        ),
        "slowdown_hw": said_number(slowdown_hw.to("").m),
        "hardware_table": (table := _hardware_table(presets)),
        "kv_fills_domain": _either([r["short"] for r in table["rows"] if r["cells"][3] == "none"]),
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
        **_generations(presets, rack),
        **_rack_limits(presets, rack),
        **_grain(presets, model, ratio_one),
        "blackwell_over_hopper": said_number(
            (rack.scale_up_domain / hopper.scale_up_domain).to("").m
        ),
        "blackwell_hbm_over_hopper": said_number(
            (
                Evaluator(presets, RACK).q("scaleup_memory")
                / Evaluator(presets, HOPPER).q("scaleup_memory")
            )
            .to("")
            .m,
            2,
        ),
        "context": context_tokens(presets.parameter["context_length"].value),
        "exercises": _exercises(presets, series, ratio_one, ratio_one_ctx),
        "once": _once_per_rack(presets, one, ratio_one, ratio_one_ctx, penalty_hw),
        "links": (links := _link_efficiency(presets, ratio_one, penalty_hw)),
        "edge": _edge(presets, ratio_one, links["eta"], one, layer, layer_ctx),
        "lat": _collective_latency(presets, one, layer),
        "turn": _turn_here(presets),
        "verdict": _verdict(presets, one, ratio_one, penalty_hw),
        "below": _below_crossover(presets, penalty_hw),
        "spread": _data_parallel_attention(presets),
        "total_params": quantity(model.params_total.to("Gparam")),
        "active_params": quantity(model.params_active.to("Gparam")),
    }


def crossover_factors(presets: Presets) -> str:
    """The crossover batch as two factors that multiply to it as printed: the dense crossover
    (multiplies per byte of weight) to four figures, the sparsity to three.

    >>> from units.presets import load
    >>> crossover_factors(load())
    '312.5 × 18.1'
    """
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    model = presets.get("model", MODEL)
    dense = ev.q("dense_crossover_batch").to("sequence").m
    sparsity = (model.params_total / model.params_active).to("").m
    return f"{number(dense, 4)} × {number(sparsity, 3)}"


def _lecture_count(presets: Presets) -> dict:
    """Where the lecture's expert count slips: it takes 32 of the 256 experts active, a sparsity
    of 8 and (on this chip) a crossover of about 2,500, where DeepSeek-V3 routes 8 plus a shared
    one, so total over active parameters is about 18 and the crossover about 5,700."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    model = presets.get("model", MODEL)
    k = presets.parameter["lecture_experts_active"].value.to("expert").m
    sparsity = model.experts_routed / k
    # the lecture rounds the chip's multiplies per byte of weight to one figure (312.5 -> 300)
    lecture_per_byte = float(f"{ev.q('dense_crossover_batch').to('sequence').m:.0e}")
    return {
        "lecture_active": said(Q_(k, "expert")),
        "lecture_sparsity": said_number(sparsity),
        "lecture_batch": said(ev.q("dense_crossover_batch").to("sequence") * sparsity, 2),
        # the lecture's own arithmetic: its rounded multiplies per byte times its sparsity
        "lecture_per_byte": said_number(lecture_per_byte),
        "lecture_batch_said": said_number(lecture_per_byte * sparsity),
        "sparsity_params": said_number((model.params_total / model.params_active).to("").m, 3),
    }


def _tex() -> dict:
    """Inline math the prose uses, printed by sympy: the one-rack all-to-all time (the
    alltoall_time equation before the multi-rack slowdown) and the crossover batch."""
    from book.chapters.batching import crossover_product_latex
    from derivations.core import readable, to_display_latex
    from derivations.moe import T_ONE
    from derivations.notation import alltoall_bytes as a
    from derivations.notation import experts_active, racks_spanned, scale_out_penalty
    from derivations.notation import flops as f
    from derivations.notation import flops_per_param_token as c_fwd
    from derivations.notation import multi_rack_slowdown as slow
    from derivations.notation import n_active as n_act
    from derivations.notation import n_layers as n_lay
    from derivations.notation import once_per_rack_slowdown as once
    from derivations.notation import scale_up_bandwidth as s_up

    t = derivations.get("alltoall_time")
    r, k = racks_spanned.sym, experts_active.sym
    return {
        "one_in_r": derivations.to_latex(1 / r),
        "miss": derivations.to_latex((1 - 1 / r) ** k),
        "others": derivations.to_latex(r - 1),
        # the one-rack case is t_A2A with r = 1: marked (1), so one symbol names one formula
        "one_rack_lhs": f"{t.lhs.latex}^{{(1)}}",
        "one_rack": f"{t.lhs.latex}^{{(1)}} = {to_display_latex(readable(T_ONE))}",
        "crossover": crossover_product_latex(),
        "penalty": scale_out_penalty.latex,
        # the verdict's ratio in one formula: per token and per layer, the link time of its
        # all-to-all bytes over the compute time of its share of the active weights, times the
        # slowdown over r racks (the batch and the chips cancel)
        "ratio": (
            rf"\frac{{{a.latex} / {s_up.latex}}}"
            rf"{{{c_fwd.latex} {n_act.latex} / ({n_lay.latex} {f.latex})}} \times {slow.latex}"
        ),
        "slowdown": slow.latex,
        "slowdown_once": once.latex,
    }


def _fp8_both_share(ev: Evaluator) -> float:
    """The all-to-all's bytes with an FP8 combine over its bytes at the default combine
    precision: the optimistic variant's share (2/3 when the default combine is BF16)."""
    fp8 = ev.q("alltoall_bytes_per_token", combine_bytes_per_value=Q_(1, "byte/value"))
    return (fp8 / ev.q("alltoall_bytes_per_token")).to("").m


def _layer_time(presets: Presets, ev: Evaluator, context_length=None):
    """One layer's compute at the crossover batch on the expert-parallel chips: the whole model's
    compute per step over its layers, at ``context_length`` (the default context when None;
    one token per sequence is the short-context limit, the weights' FLOPs alone)."""
    layers = Q_(presets.get("model", MODEL).layers, "layer")
    chips = presets.parameter["expert_parallel_chips"].value
    kw = {} if context_length is None else {"context_length": context_length}
    step = ev.q("compute_time", batch_size=ev.q("crossover_batch"), n_chips=chips, **kw)
    return Q_((step / layers).to("ms/layer").m, "ms")


def hiding_context(presets: Presets, alltoall):
    """The context from which attention's FLOPs make a layer's compute at least ``alltoall``
    (a time), so that it hides; None when it hides at any context. The layer's compute grows
    linearly with the context (each new token attends to its whole KV cache), so two points
    fix it; the result is checked against the equation at that context.

    >>> from units.presets import load
    >>> hiding_context(load(), Q_(1, "ns")) is None
    True
    """
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    one_token = Q_(1, "token/sequence")
    default = presets.parameter["context_length"].value
    short, at_default = _layer_time(presets, ev, one_token), _layer_time(presets, ev, default)
    if alltoall <= short:
        return None
    slope = (at_default - short) / (default - one_token)
    found = one_token + ((alltoall - short) / slope).to("token/sequence")
    check = (alltoall / _layer_time(presets, ev, found)).to("").m
    assert abs(check - 1) < 1e-6, f"the layer's compute is not linear in the context ({check})"
    return found


def _tokens(context_length) -> str:
    """A context as prose says it, at two or three figures: ``'9,400 tokens'``."""
    return f"{spoken_number(context_length.to('token/sequence').m)} tokens"


def _when(found) -> str:
    """When a layout hides, as a sentence ends: at any context, or from a context on."""
    return "at any context" if found is None else f"from a context of about {_tokens(found)}"


def _verdict(presets: Presets, one, ratio_one: float, penalty_hw) -> dict:
    """One table for "when one rack bounds an expert layer": the all-to-all over the layer's
    compute for five layouts (one rack; two racks with a copy per expert and sent once per rack,
    each on GB300 NVL72 chips at their own penalty and on GB200 NVL72 chips at theirs), at the
    short-context limit and at the default context (links at peak), and the context from which
    each layout hides; and the figures of the chapter's one verdict (two racks at short
    context, each way of sending)."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    two_penalty = two_rack_penalty(presets)
    default = presets.parameter["context_length"].value
    long = presets.parameter["long_context_length"].value
    two = Q_(2, "rack")
    short = _layer_time(presets, ev, Q_(1, "token/sequence"))
    layer_default = _layer_time(presets, ev, default)

    def per_expert(penalty):
        return ev.q("multi_rack_slowdown", racks_spanned=two, scale_out_penalty=penalty).to("").m

    def once(penalty):
        return ev.q("once_per_rack_slowdown", racks_spanned=two, scale_out_penalty=penalty).to("").m

    two_x, hw_x = said_number(two_penalty.m), said_number(penalty_hw.to("").m)
    two_chip = chip_name(presets.get("hardware", TWO_RACKS)).removesuffix(" NVL72")
    hw_chip = chip_name(presets.get("hardware", RACK)).removesuffix(" NVL72")
    layouts = [
        ("one rack", 1.0),
        (f"two racks, a copy per expert, {two_chip} ({two_x}×)", per_expert(two_penalty)),
        (f"two racks, once per rack, {two_chip} ({two_x}×)", once(two_penalty)),
        (f"two racks, a copy per expert, {hw_chip} ({hw_x}×)", per_expert(penalty_hw)),
        (f"two racks, once per rack, {hw_chip} ({hw_x}×)", once(penalty_hw)),
    ]

    rows, hides_from, at_short = [], {}, {}
    fixed = collective_latency_per_layer(presets)  # the two collectives' latency, a floor
    bytes_only = {}
    for name, slow in layouts:
        bytes_only[name] = (one * slow / short).to("").m
        t = one * slow + fixed
        at_short[name] = (t / short).to("").m
        found = hiding_context(presets, t)
        hides_from[name] = found
        rows.append(
            {
                "layout": name,
                # the verdict first (the bytes alone), then its sensitivity to the latency
                "cells": [_cell(bytes_only[name]), _cell(at_short[name])]
                + [_cell((t / layer_default).to("").m)]
                + ["any" if found is None else _tokens(found)],
            }
        )
    names = [n for n, _ in layouts]

    def ctx_bytes(name):
        return (one * dict(layouts)[name] / layer_default).to("").m

    def ctx_latency(name):
        return ((one * dict(layouts)[name] + fixed) / layer_default).to("").m

    at_ctx = context_tokens(default)
    # the headline (decoding: a copy per expert; the bytes alone; short context; GB300's port)
    # and one assumption changed a row at a time, one rack beside two
    sensitivity = [
        ("none: the verdict", bytes_only[names[0]], bytes_only[names[1]]),
        (
            f"the stand-in latency added ({said(fixed, 3).exact} a layer)",
            at_short[names[0]],
            at_short[names[1]],
        ),
        (f"a context of {at_ctx}", ctx_bytes(names[0]), ctx_bytes(names[1])),
        (
            f"a context of {at_ctx}, with the latency",
            ctx_latency(names[0]),
            ctx_latency(names[1]),
        ),
        ("sent once per rack (prefill, training)", bytes_only[names[0]], bytes_only[names[2]]),
        (f"{hw_chip} chips ({hw_x}×)", bytes_only[names[0]], bytes_only[names[3]]),
        (
            f"{hw_chip} chips ({hw_x}×), sent once per rack",
            bytes_only[names[0]],
            bytes_only[names[4]],
        ),
    ]
    per_expert_cells = [
        bytes_only[names[1]],
        at_short[names[1]],
        ctx_bytes(names[1]),
        ctx_latency(names[1]),
        bytes_only[names[3]],
    ]
    return {
        # the headline: one rack hides and two racks with a copy per expert do not
        "bounds": bool(bytes_only[names[0]] < 1 <= bytes_only[names[1]]),
        "bytes_two_short_hides": bool(bytes_only[names[1]] < 1),
        # no change of the sensitivity table makes two racks with a copy per expert hide
        "per_expert_never_hides": bool(min(per_expert_cells) >= 1),
        "sensitivity": [
            {"assumption": a, "one": _cell(x1), "two": _cell(x2)} for a, x1, x2 in sensitivity
        ],
        "rows": rows,
        "h800": _h800_rows(presets, default, long),
        "headers": [
            "short context, bytes alone (the verdict)",
            "short context, bytes + latency",
            f"{context_tokens(default)}, bytes + latency",
            "hides from a context of (bytes + latency)",
        ],
        "bytes_two_short": said_number(bytes_only[names[1]], 2),
        "bytes_once_short": said_number(bytes_only[names[2]], 2),
        "bytes_two_short_hw": said_number(bytes_only[names[3]], 2),
        "bytes_once_short_hw": said_number(bytes_only[names[4]], 2),
        "two_ctx": _cell_ratio(rows[1]),
        "bytes_once_hides": bool(bytes_only[names[2]] < 1),
        "one_short": said_number(at_short[names[0]], 2),
        "one_hides_from": _tokens(hides_from[names[0]]) if hides_from[names[0]] else "",
        "once_hides_from": _tokens(hides_from[names[2]]) if hides_from[names[2]] else "",
        "once_ctx": _cell_ratio(rows[2]),
        "once_hides_ctx": rows[2]["cells"][2].endswith(" hides"),
        "two_short": said_number(at_short[names[1]], 2),
        "once_short": said_number(at_short[names[2]], 2),
        "once_hides": bool(at_short[names[2]] < 1),
        "two_short_hw": said_number(at_short[names[3]], 2),
        "once_short_hw": said_number(at_short[names[4]], 2),
        "per_expert_hides": _tokens(hides_from[names[1]]),
        "per_expert_hides_hw": _tokens(hides_from[names[3]]),
        "once_hw_when": _when(hides_from[names[4]]),
        "two_x": two_x,
        "hw_x": hw_x,
    }


def collective_latency_per_layer(presets: Presets):
    """The fixed time an MoE layer's two all-to-alls (dispatch and combine) take whatever their
    bytes: two of the smallest all-reduce latency measured over NVLink (the batching chapter's
    floor), a stand-in, since no dispatch or combine on its own has been measured. A floor: over
    the scale-out network each one takes longer.

    >>> from units.presets import load
    >>> collective_latency_per_layer(load())
    <Quantity(11.12, 'microsecond')>
    """
    return 2 * presets.parameter["collective_latency_floor"].value.to("microsecond")


def _collective_latency(presets: Presets, one, layer) -> dict:
    """The one-rack all-to-all with each collective's fixed latency (reader bm25, fault 2): the
    bytes over the links plus two latency floors per layer, against the layer's compute at the
    crossover batch (short context), unsplit and split into two micro-batches that overlap one's
    all-to-all with the other's work; the micro-batch from which it hides at short context
    (the all-to-all and the compute both grow linearly in the batch, the latency does not); and
    the layer at the default context, where the KV read makes it longer."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    model = presets.get("model", MODEL)
    layers = Q_(model.layers, "layer")
    chips = presets.parameter["expert_parallel_chips"].value
    batch = ev.q("crossover_batch")
    fixed = collective_latency_per_layer(presets)
    short = Q_(1, "token/sequence")

    def layer_time(b, **kw):
        step = ev.q("step_time", batch_size=b, n_chips=chips, **kw)
        return Q_((step / layers).to("microsecond/layer").m, "microsecond")

    unsplit = ((one + fixed) / layer).to("").m
    # the crossover batch split in two: each half's all-to-all (half the bytes, all the latency)
    # against the other half's compute, and against its layer time, its weight read
    half = one / 2 + fixed
    half_read = layer_time(batch / 2, context_length=short)
    # each micro-batch at b hides its all-to-all when one * b/B* + fixed <= layer * b/B*
    hide = (batch * fixed / (layer - one)).to("sequence")
    at_hide = ((one * (hide / batch) + fixed) / (layer * (hide / batch))).to("").m
    assert abs(at_hide - 1) < 1e-9, at_hide
    default = presets.parameter["context_length"].value
    # the chapter's one ratio is against the layer's compute (attention's FLOPs included), as in
    # the verdict table; the layer's time with its KV read is the appendix's variant
    layer_ctx = _layer_time(presets, ev, default).to("microsecond")
    layer_ctx_kv = layer_time(batch)
    # per step: every MoE layer's all-to-all over the whole step's compute (the head included)
    moe_layers = model.layers - model.dense_layers
    step = ev.q("compute_time", batch_size=batch, n_chips=chips, context_length=short)
    per_step = (moe_layers * one / step).to("").m
    return {
        "per_step": said_number(per_step, 2),
        "moe_layers": f"{said_number(moe_layers)} MoE layers",
        "floor": said(presets.parameter["collective_latency_floor"].value.to("microsecond")),
        "fixed": said(fixed, 3),
        "with": said((one + fixed).to("microsecond"), 3),
        "ratio": said_number(unsplit, 2),
        "hides": bool(unsplit < 1),
        "half": said(half.to("microsecond"), 3),
        "half_compute": said((layer / 2).to("microsecond"), 3),
        "half_read": said(half_read, 3),
        "ratio_half": said_number((half / (layer / 2)).to("").m, 2),
        "ratio_half_read": said_number((half / half_read).to("").m, 2),
        "hide_batch": said(hide, 2),
        "hide_total": said(2 * hide, 2),
        "hide_over_star": said_number((hide / batch).to("").m, 2),
        "context": context_tokens(default),
        "layer_ctx": said(layer_ctx, 3),
        "ratio_ctx": said_number(((one + fixed) / layer_ctx).to("").m, 2),
        "ratio_half_ctx": said_number(((one / 2 + fixed) / (layer_ctx / 2)).to("").m, 2),
        "layer_ctx_kv": said(layer_ctx_kv, 3),
        "ratio_ctx_kv": said_number(((one + fixed) / layer_ctx_kv).to("").m, 2),
        "hides_ctx": bool(((one + fixed) / layer_ctx).to("").m < 1),
    }


def _turn_here(presets: Presets) -> dict:
    """By how much the running example's step is still memory-bound at B* once the KV cache is
    counted (B* leaves it out)."""
    from book.chapters.batching import _regime

    ev = Evaluator(presets, RACK, MODEL, "fp8")
    chips = presets.parameter["expert_parallel_chips"].value
    batch = math.ceil(ev.q("crossover_batch").to("sequence").m)
    regime = _regime(ev, batch, chips)
    return {
        "by": said_number(float(regime["by"].replace(",", "")), 2),
        "bound": regime["bound"],
    }


def _data_parallel_attention(presets: Presets) -> dict:
    """The chapter spreads every weight evenly over the expert-parallel chips. Served with
    data-parallel attention, as DeepSeek serves it, each chip holds its own copy of every weight
    outside the routed experts (attention, the shared experts, the dense layers, the
    embeddings): each chip's FP8 weight bytes, evenly spread and so, and their ratio, by which
    the weight read per step, and with it the crossover batch, grows (the compute per chip does
    not change, and neither does the all-to-all over the compute above the crossover)."""
    from derivations.notation import ffn_matrices

    model = presets.get("model", MODEL)
    chips = presets.parameter["expert_parallel_chips"].value.to("chip").m
    moe_layers = model.layers - model.dense_layers
    per_expert = ffn_matrices.value.m * model.d_model * model.d_ff_expert
    routed = moe_layers * model.experts_routed * per_expert
    total = model.params_total.to("parameter").m
    copied = total - routed
    fp8 = Q_(1, "byte/parameter")
    even = Q_(total / chips, "parameter") * fp8
    dp = Q_(copied + routed / chips, "parameter") * fp8
    crossover = Evaluator(presets, RACK, MODEL, "fp8").q("crossover_batch").to("sequence")
    return {
        "chip_hbm": said(presets.get("hardware", RACK).hbm_capacity.to("GB")),
        "copied": said(Q_(copied, "parameter").to("Gparam"), 2),
        "copied_gb": said((Q_(copied, "parameter") * fp8).to("GB"), 2),
        "routed_gb": said((Q_(routed / chips, "parameter") * fp8).to("GB"), 2),
        # one MoE layer's routed experts at FP8: these fit on one chip; the model's do not
        "layer_gb": said((Q_(routed / moe_layers, "parameter") * fp8).to("GB"), 2),
        "routed_all_gb": said((Q_(routed, "parameter") * fp8).to("GB"), 2),
        "copied_pct": said_number(100 * copied / total, 2),
        "even": said(even.to("GB"), 2),
        "dp": said(dp.to("GB"), 2),
        "factor": said_number((dp / even).to("").m, 2),
        "batch": said(crossover * (dp / even), 2),
    }


SMALL_BATCH = Q_(1000, "sequence")


def _below_crossover(presets: Presets, penalty_hw) -> dict:
    """Below the crossover batch a layer's time is its weight read W, which does not shrink with
    the batch, while the all-to-all's bytes A do and its two collectives' fixed latency L does
    not; but the all-to-all cannot hide for free. Dispatch, experts and combine are a chain, so
    with one micro-batch it adds to W (W + A + L), and hiding it needs two micro-batches, each
    reading the weights again and each paying the whole latency on half the bytes, one's
    all-to-all running while the other reads: 2 max(W, A/2 + L). The layer takes the lesser. At
    SMALL_BATCH (short context, the lecture's chips): A over W, one rack and two, and the
    layer's time each way, two racks over one, on GB300 NVL72 chips at their own penalty and on
    GB200 NVL72 chips at theirs."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    two_penalty = two_rack_penalty(presets)
    chips = presets.parameter["expert_parallel_chips"].value
    layers = Q_(presets.get("model", MODEL).layers, "layer")
    short = Q_(1, "token/sequence")

    def layer(batch):
        step = ev.q("step_time", batch_size=batch, n_chips=chips, context_length=short)
        return Q_((step / layers).to("ms/layer").m, "ms")

    fixed = collective_latency_per_layer(presets)

    def a2a(batch, **kw):
        """The all-to-all's bytes over the links (its fixed latency apart)."""
        kw.setdefault("scale_out_penalty", two_penalty)
        return ev.q("alltoall_time", batch_size=batch, **kw).to("ms")

    w = layer(SMALL_BATCH)
    compute = ev.q("compute_time", batch_size=SMALL_BATCH, n_chips=chips, context_length=short)
    assert (compute / layers).to("ms/layer").m < w.m, "the small batch must wait on its weights"
    one_rack = a2a(SMALL_BATCH, racks_spanned=Q_(1, "rack"))
    two, hw = a2a(SMALL_BATCH), a2a(SMALL_BATCH, scale_out_penalty=penalty_hw)

    def chained(a):
        """One micro-batch: the all-to-all (bytes and latency) after the weight read."""
        return w + a + fixed

    def split(a):
        """Two micro-batches: each reads the weights, each half's all-to-all (half the bytes,
        all the latency) runs while the other half reads; the slower of the two sets the pace."""
        return 2 * max(w, a / 2 + fixed)

    def with_links(a):
        return min(chained(a), split(a))

    t1, t2, t_hw = with_links(one_rack), with_links(two), with_links(hw)

    def us(t):
        """At three figures, so the sums the prose shows add up as printed."""
        return said(t.to("µs"), 3)

    return {
        "batch": said(SMALL_BATCH),
        "layer": us(w),
        "one": said_number(((one_rack + fixed) / w).to("").m, 2),
        "two": said_number(((two + fixed) / w).to("").m, 2),
        # the caption's derivation: the bytes and the latency, and which way each layout goes
        "bytes_one": us(one_rack),
        "fixed": us(fixed),
        "bytes_two": us(two),
        "bytes_two_hw": us(hw),
        "layer_one": us(t1),
        "one_split": bool(split(one_rack) < chained(one_rack)),
        "split_one": us(split(one_rack)),
        "layer_two": us(t2),
        "layer_two_hw": us(t_hw),
        # whether each two-rack layout's split is paced by its links (half the bytes and the
        # latency) rather than by the weight read
        "half_two_hw": us(hw / 2 + fixed),
        "two_link_paced": bool(two / 2 + fixed > w),
        "hw_link_paced": bool(hw / 2 + fixed > w),
        "two_split": bool(split(two) < chained(two)),
        "hw_split": bool(split(hw) < chained(hw)),
        "slower": said_number((t2 / t1).to("").m, 2),
        "slower_hw": said_number((t_hw / t1).to("").m, 2),
    }


def batch_series(presets: Presets, points: int = 41) -> dict:
    """The figure's data against the batch (short context, the lecture's chips): the all-to-all
    over the layer's time (its compute or, below the crossover, its weight read) in one rack and
    over two racks with a copy per expert and sent once per rack, each at GB300 NVL72's penalty
    and at GB200 NVL72's, from a 32nd of the crossover batch to 4 times it, evenly spaced on a
    log axis."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    chips = presets.parameter["expert_parallel_chips"].value
    short = Q_(1, "token/sequence")
    crossover = ev.q("crossover_batch").to("sequence")
    penalty_hw = ev.q("hardware_scale_out_penalty")
    batches = [crossover * 2 ** (-5 + 7 * i / (points - 1)) for i in range(points)]

    layers = Q_(presets.get("model", MODEL).layers, "layer")

    fixed = collective_latency_per_layer(presets)

    two = Q_(2, "rack")

    def ratios(fixed_too=False, once=None, **kw):
        """The all-to-all over the layer's time at each batch; ``once``: a penalty, sent once
        per rack over two racks (the one-rack time times the once-per-rack slowdown)."""
        out = []
        for b in batches:
            step = ev.q("step_time", batch_size=b, n_chips=chips, context_length=short)
            layer = Q_((step / layers).to("ms/layer").m, "ms")
            if once is None:
                t = ev.q("alltoall_time", batch_size=b, **kw)
            else:
                t = ev.q("alltoall_time", batch_size=b, racks_spanned=Q_(1, "rack")) * ev.q(
                    "once_per_rack_slowdown", racks_spanned=two, scale_out_penalty=once
                )
            t = t + (fixed if fixed_too else 0 * fixed)
            out.append((t / layer).to("").m)
        return out

    return {
        "batches": [b.m for b in batches],
        "crossover": crossover.m,
        "one": ratios(racks_spanned=Q_(1, "rack")),
        "one_latency": ratios(fixed_too=True, racks_spanned=Q_(1, "rack")),
        "two": ratios(scale_out_penalty=two_rack_penalty(presets)),
        "hardware": ratios(scale_out_penalty=penalty_hw),
        "once_two": ratios(once=two_rack_penalty(presets)),
        "once_hardware": ratios(once=penalty_hw),
        "penalty_hw": penalty_hw,
        "penalty_two": two_rack_penalty(presets),
        "below": _below_crossover(presets, penalty_hw),
        "latency_hides": _collective_latency(
            presets,
            ev.q("alltoall_time", batch_size=crossover, racks_spanned=Q_(1, "rack")),
            _layer_time(presets, ev, short),
        )["hide_batch"],
    }


H800 = "h800"


def _h800_rows(presets: Presets, default, long) -> dict:
    """The same test on DeepSeek's own serving chip, the H800 (NVLink cut for export): the
    all-to-all over the layer's compute inside one 8-chip node and across two nodes with a copy
    per expert, at the node's own scale-up/scale-out ratio, at short context, the default
    context and a long one."""
    ev = Evaluator(presets, H800, MODEL, "fp8")
    hw = presets.get("hardware", H800)
    batch = ev.q("crossover_batch")
    layers = Q_(presets.get("model", MODEL).layers, "layer")
    penalty = ev.q("hardware_scale_out_penalty")
    node = hw.scale_up_domain

    def layer(chips, context_length):
        step = ev.q("compute_time", batch_size=batch, n_chips=chips, context_length=context_length)
        return (step / layers).to("ms/layer").m

    def ratios(nodes):
        chips = node * nodes
        one = ev.q(
            "alltoall_time",
            batch_size=batch,
            racks_spanned=Q_(1, "rack"),
            expert_parallel_chips=chips,
        ).to("ms")
        slow = ev.q(
            "multi_rack_slowdown", racks_spanned=Q_(nodes, "rack"), scale_out_penalty=penalty
        ).to("")
        t = one.m * slow.m
        return [t / layer(chips, c) for c in (Q_(1, "token/sequence"), default, long)]

    in_node, per_expert = ratios(1), ratios(2)
    # inside one node: the home GPU's copies stay (k (1 - 1/G) leave), and a kernel that sends
    # each GPU a token once sends the distinct GPUs hit (the once-per-rack count, G for r)
    k = presets.get("model", MODEL).experts_active
    g = Q_(node.to("chip").m, "rack")
    leave = k * ev.q("offrack_fraction", racks_spanned=g).to("").m
    distinct = ev.q("offrack_copies", racks_spanned=g).to("").m
    return {
        "k": said_number(k),
        "leave": said_number(leave, 3),
        "distinct": said_number(distinct, 3),
        "one_leave": said_number(in_node[0] * leave / k, 3),
        "one_distinct": said_number(in_node[0] * distinct / k, 2),
        "one_distinct_hides": bool(in_node[0] * distinct / k < 1),
        "chip": hw.name,
        "node": quantity(node),
        "penalty": said_number(penalty.to("").m),
        "one_short": said_number(in_node[0], 2),
        # inside the node at the default context: the copies that leave, as at short context
        "one_ctx": said_number(in_node[1] * leave / k, 2),
        "two_short": said_number(per_expert[0], 2),
        "two_ctx": said_number(per_expert[1], 2),
        "two_long": said_number(per_expert[2], 2),
        "context": context_tokens(default),
        "long": context_tokens(long),
    }


def _cell_ratio(row: dict) -> str:
    """A verdict row's ratio at the default context, without its verdict word."""
    return row["cells"][2].split(",")[0]


def _cell(x: float) -> str:
    """One verdict cell: the ratio at two figures and whether the all-to-all hides."""
    verdict = "does not hide" if x >= 1 else ("barely hides" if x > 0.9 else "hides")
    return f"{said_number(x, 2)}, {verdict}"


def _either(names: list[str], word: str = "or") -> str:
    """Names as a sentence lists alternatives (or, with ``word``, all of them): ``'A, B or C'``.

    >>> _either(["H100", "H800", "B200"]), _either(["H100"])
    ('H100, H800 or B200', 'H100')
    """
    return f" {word} ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _per_moe_layer(presets: Presets, model, layer, one) -> dict:
    """Why the compute averaged over all layers stands for an MoE layer's, and the MoE layer's
    own: a dense layer's MLP is as wide as a token's active experts together (DeepSeek-V3's
    d_ff = (8 + 1) x d_ff_expert), so dense and MoE layers compute alike, and the average
    differs from an MoE layer only by the output head (d x vocab parameters) it spreads over
    the layers. Without the head, an MoE layer's compute and the one-rack ratio against it.

    >>> from units.presets import load
    >>> p = load(); m = p.get("model", MODEL)
    >>> r = _per_moe_layer(p, m, Q_(21.0, "µs"), Q_(17.0, "µs"))
    >>> r["moe_layers_n"], r["head_share"]
    ('58', '0.025')
    """
    width = (model.experts_active + model.experts_shared) * model.d_ff_expert
    assert width == model.d_ff, "a dense layer's MLP is not a token's experts' width"
    head = model.d_model * model.vocab
    share = (Q_(head, "parameter") / model.params_active).to("").m
    moe_layer = layer * (1 - share)  # the head's parameters taken out of the average
    return {
        "moe_layers_n": said_number(model.layers - model.dense_layers),
        "dense_layers_n": said_number(model.dense_layers),
        "d_ff_n": said_number(model.d_ff),
        "d_ff_expert_n": said_number(model.d_ff_expert),
        "head_share": said_number(share, 2),
        "moe_layer_compute": _us(moe_layer),
        "ratio_one_rack_moe": said_number((one / moe_layer).to("").m, 2),
    }


def _flops_by_precision(presets: Presets) -> dict:
    """The one-rack and two-rack chips' dense FLOP/s at FP8, where they are equal, and at FP4,
    where the two-rack chip (Blackwell Ultra) is faster."""
    rack, ultra = presets.get("hardware", RACK), presets.get("hardware", ULTRA)
    assert rack.dense_flops_fp8 == ultra.dense_flops_fp8, "GB300's FP8 rate differs from GB200's"
    return {
        "fp8_flops": quantity(rack.dense_flops_fp8.to("PFLOP/s")),
        "fp4_flops_rack": quantity(rack.dense_flops_fp4.to("PFLOP/s"), 3),
        "fp4_flops_two": quantity(ultra.dense_flops_fp4.to("PFLOP/s"), 3),
    }


def _expert_compute(model, layer, routed_only: bool = False) -> dict:
    """The experts' share of an average layer's compute, and that share of ``layer``: a token's
    routed and shared experts (the routed ones alone with ``routed_only``) are gated MLPs of
    three d-by-d_e matrices each, against the active parameters averaged over the layers
    (attention, dense layers and the output head included).
    """
    from derivations.notation import ffn_matrices

    experts = model.experts_active + (0 if routed_only else model.experts_shared)
    params = Q_(experts * ffn_matrices.value.m * model.d_model * model.d_ff_expert, "parameter")
    share = (params / (model.params_active / model.layers)).to("").m
    return {"share": share, "time": layer * share}


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
    # over two racks of the same GB200 chips, at their own penalty
    two = ev.q("alltoall_time", batch_size=batch, scale_out_penalty=series["penalty_hw"]).to("ms")
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
    # the off-rack share where the sum exceeds the maximum most: the two shares equal,
    # 1 - f = f * pi, so f = 1 / (1 + pi), and there the sum is twice the maximum
    equal = 1 / (1 + penalty)
    # 4. FP4 weights, FP8 KV on a GB200 rack beside the FP8 batch's KV.
    fp4 = Evaluator(presets, RACK, MODEL, "fp8", weight_precision="fp4")
    b_fp8 = Evaluator(presets, RACK, MODEL, "fp8").q("crossover_batch")
    hbm = fp4.q("scaleup_memory").to("TB")
    kv = fp4.q("kv_cache_per_batch", batch_size=b_fp8).to("TB")
    left = (fp4.q("max_total_params") * ((hbm - kv) / hbm).to("")).to("Tparam")
    tpu = presets.get("hardware", "tpu7x")
    qwen = _thin_model(presets)
    return {
        **qwen,
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
        "kimi_experts_each": said(ev.q("experts_per_chip") * Q_(1, "chip")),
        "kimi_compute": said(compute),
        "kimi_layer": _us(layer),
        "kimi_one": _us(one),
        "kimi_two": _us(two),
        "kimi_ratio_one": said_number((one / layer).to("").m, 3),
        "kimi_ratio_two": said_number((two / layer).to("").m, 3),
        "kimi_penalty": said_number(series["penalty_hw"].to("").m),
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
        "equal_share": said_number(equal, 2),
        "equal_max": said_number(1 - equal, 2),
        "equal_sum": said_number(2 * (1 - equal), 2),
        "fp4_kv": said(kv),
        "fp4_left": said(left),
        "fp4_batch": said(b_fp8),
        "tpu": tpu.name,
        "tpu_domain": said(tpu.scale_up_domain),
        "lecture_slowdown": lecture.text("multi_rack_slowdown"),
    }


THIN = "qwen3_235b_a22b"  # thin layers: d = 4,096 and 22 B active parameters over 94 layers


def _thin_model(presets: Presets) -> dict:
    """The exercise on a thinner MoE: its crossover batch on the rack, and its one-rack
    all-to-all against one layer's compute per token (batch and chips cancel): the link time of
    a token's all-to-all bytes against the compute of its share of one layer's active weights."""
    model = presets.get("model", THIN)
    ev = Evaluator(presets, RACK, THIN, "fp8")
    rack = presets.get("hardware", RACK)
    layers = Q_(model.layers, "layer")
    flops = rack.get("dense_flops_fp8")
    per_layer = (model.params_active / layers).to("Gparameter/layer") * Q_(1, "layer")
    link = ev.q("alltoall_bytes_per_token") * Q_(1, "token") / rack.scale_up_bandwidth_per_direction
    compute = flops_per_param_token.value * per_layer * Q_(1, "token") / flops
    ratio = (link / compute).to("").m
    # the same ratio from the equations, at the crossover batch on the chips (weights' FLOPs)
    batch, chips = ev.q("crossover_batch"), presets.parameter["expert_parallel_chips"].value
    short = Q_(1, "token/sequence")
    step = ev.q("compute_time", batch_size=batch, n_chips=chips, context_length=short) / layers
    one = ev.q("alltoall_time", batch_size=batch, racks_spanned=Q_(1, "rack"))
    assert abs((one / (step * Q_(1, "layer"))).to("").m / ratio - 1) < 1e-3, "ratio mismatch"
    step_ctx = ev.q("compute_time", batch_size=batch, n_chips=chips) / layers
    ratio_ctx = (one / (step_ctx * Q_(1, "layer"))).to("").m
    return {
        "qwen": model.name,
        "qwen_d": said_number(model.d_model),
        "qwen_k": said_number(model.experts_active),
        "qwen_routed": said_number(model.experts_routed),
        "qwen_active": said(model.params_active.to("Gparam")),
        "qwen_total": said(model.params_total.to("Gparam")),
        "qwen_layers": said(layers),
        "qwen_dense": said_number(ev.q("dense_crossover_batch").to("sequence").m, 4),
        "qwen_sparsity": said_number((model.params_total / model.params_active).to("").m, 3),
        "qwen_batch": said(batch),
        "qwen_bytes": ev.text("alltoall_bytes_per_token"),
        "qwen_link": _us(link) if link.to("microsecond").m >= 1 else said(link.to("ns")),
        "qwen_layer_params": said(per_layer.to("Mparameter")),
        "qwen_flops": said(flops),
        "qwen_compute": said(compute.to("ns")),
        "qwen_ratio": said_number(ratio, 2),
        "qwen_hides": bool(ratio < 1),
        "qwen_ratio_ctx": said_number(ratio_ctx, 2),
        "qwen_ctx_hides": bool(ratio >= 1 > ratio_ctx),
    }


def _hardware_table(presets: Presets) -> dict:
    """Every chip with a switched scale-up domain: its memory, the KV cache of DeepSeek-V3's
    crossover batch on that chip (FP8, the default context), the parameters that fit beside that
    KV cache at FP8, and the chip's own penalty. "none" where the KV cache alone fills the domain.

    Torus domains (TPU pods) are left out: an all-to-all over a torus crosses many hops and does
    not run at each chip's full link bandwidth, so neither the penalty nor the domain as one
    expert-parallel group compares like for like.
    """
    columns = (
        ("scale-up domain", "chip"),
        ("domain HBM", "TB"),
        ("KV cache at the crossover, FP8", "TB"),
        ("FP8 parameters beside it", "dimensionless"),
        ("scale-up / scale-out", "dimensionless"),
    )
    rows, no_fp8 = [], []
    for hw in presets.hardware.values():
        if hw.get("scale_up_domain") is None or hw.get("scale_up_topology") == "torus":
            continue
        ev = Evaluator(presets, hw.id, MODEL, "fp8")

        def kv(ev=ev):
            return ev.q("kv_cache_per_batch", batch_size=ev.q("crossover_batch"))

        def beside(ev=ev, kv=kv):
            hbm = ev.q("scaleup_memory")
            left = ev.q("max_total_params") * ((hbm - kv()) / hbm).to("")
            return left if left.m > 0 else None

        values = (
            lambda hw=hw: hw.scale_up_domain,
            lambda ev=ev: ev.q("scaleup_memory"),
            kv,
            beside,
            lambda ev=ev: ev.q("hardware_scale_out_penalty"),
        )
        # the chip count whole, the rest at two figures, as a person reads a comparison
        cells = [
            cell_in(u, f) if i == 0 else _two_figures(u, f)
            for i, ((_, u), f) in enumerate(zip(columns, values, strict=True))
        ]
        if cells[2] == "—":  # no FP8 figure, so no FP8 crossover: a row of dashes, left out
            no_fp8.append(chip_name(hw))
            continue
        if cells[3] == "—":  # the KV cache alone fills the domain
            cells[3] = "none"
        else:  # billions below a trillion, as a person says them: "52 B", not "0.052 T"
            cells[3] = _parameters(beside())
        rows.append({"name": chip_name(hw), "short": chip_name(hw), "cells": cells})
    return {
        "headers": [header(n, u) for n, u in columns],
        "rows": rows,
        "no_fp8": _either(no_fp8),
        "no_port": _either([r["short"] for r in rows if r["cells"][4] == "—"], "and"),
    }


def _parameters(count) -> str:
    """A parameter count at two figures in trillions, or in billions below one trillion.

    >>> _parameters(Q_(5.2e10, "parameter")), _parameters(Q_(1.18e13, "parameter"))
    ('52 B', '12 T')
    """
    count = count.to("parameter").m
    if count < 1e12:
        return f"{number(count / 1e9, 2)} B"
    return f"{number(count / 1e12, 2)} T"


def _two_figures(in_unit: str, compute) -> str:
    """A table cell at two significant figures (:func:`book.context.cell_in` keeps four).

    >>> _two_figures("TB", lambda: Q_(0.05194, "TB")), _two_figures("TB", lambda: None)
    ('0.052', '—')
    """
    cell = cell_in(in_unit, compute)
    return cell if cell == "—" else number(compute().to(in_unit).magnitude, 2)


def _generations(presets: Presets, rack) -> dict:
    """Scale-up domains like for like (physics audit M1): Rubin Ultra's 576 counts GPU dies,
    Blackwell's 72 counts packages of two dies. In dies it is 4x (the lecture's 'genuine 4x'),
    in packages 2x."""
    par = presets.parameter
    dies = par["rubin_scale_up_domain"].value
    ultra_per = par["rubin_ultra_dies_per_package"].value.to("").m
    blackwell_per = par["blackwell_dies_per_package"].value.to("").m
    packages = dies / ultra_per
    blackwell_dies = rack.scale_up_domain * blackwell_per
    return {
        "rubin_packages": said_number(packages.to("chip").m),
        "rubin_dies_n": said_number(dies.to("chip").m),
        "rubin_dies_per": said_number(ultra_per),
        "blackwell_dies": said_number(blackwell_dies.to("chip").m),
        "blackwell_dies_per": said_number(blackwell_per),
        "rubin_over_blackwell_dies": said_number((dies / blackwell_dies).to("").m),
        "rubin_over_blackwell_packages": said_number((packages / rack.scale_up_domain).to("").m),
    }


def _rack_limits(presets: Presets, rack) -> dict:
    """What sets a rack's size: the power, weight and heat one cabinet takes, per GPU."""
    par = {k: p.value for k, p in presets.parameter.items()}
    hopper = presets.get("hardware", HOPPER)
    per_gpu = (par["rack_power"] / rack.scale_up_domain).to("kW/chip")
    hopper_per = (par["hopper_box_power"] / hopper.scale_up_domain).to("kW/chip")
    packages = par["rubin_scale_up_domain"] / par["rubin_ultra_dies_per_package"]
    boxes = (rack.scale_up_domain / hopper.scale_up_domain).to("").m
    return {
        "rack_power": said(par["rack_power"]),
        "rack_weight": said(par["rack_weight"]),
        "rack_power_per_gpu": said(per_gpu),
        "domain_n": said_number(rack.scale_up_domain.to("chip").m),
        "hopper_n": said_number(hopper.scale_up_domain.to("chip").m),
        "ep_n": said_number(presets.parameter["expert_parallel_chips"].value.to("chip").m),
        "rack_weight_per_gpu": said((par["rack_weight"] / rack.scale_up_domain).to("kg/chip")),
        "hopper_box_power": said(par["hopper_box_power"]),
        "hopper_power_per_gpu": said(hopper_per),
        "hopper_boxes": said_number(boxes),
        "hopper_boxes_power": said(par["hopper_box_power"] * boxes),
        "kyber_power": said(par["kyber_rack_power"]),
        "kyber_per_package": said((par["kyber_rack_power"] / packages).to("kW/chip")),
        "rack_cables": said_number(par["rack_nvlink_cables"].to("").m),
        "cables_per_gpu": said_number(
            (par["rack_nvlink_cables"] / rack.scale_up_domain.m).to("").m, 2
        ),
    }


COARSE = "mixtral_8x7b"  # a coarse-grained MoE: few large experts, two per token


def _grain(presets: Presets, model, ratio_one: float) -> dict:
    """Fine-grained experts: at the same active parameters and width, routing each token to k
    small experts instead of a few large ones multiplies the all-to-all bytes (2 k d per token
    per layer) by k, while the compute stays: the all-to-all-to-compute ratio scales with k."""
    coarse = presets.get("model", COARSE)
    k, k_coarse = model.experts_active, coarse.experts_active
    return {
        "coarse": coarse.name,
        "coarse_k": said(Q_(k_coarse, "expert")),
        "coarse_routed": said_number(coarse.experts_routed),
        "grain_factor": said_number(k / k_coarse),
        "ratio_coarse": said_number(ratio_one * k_coarse / k, 2),
    }


def _once_per_rack(
    presets: Presets, one, ratio_one: float, ratio_one_ctx: float, penalty_hw
) -> dict:
    """Deduplicated dispatch (DeepSeek-V3's, technical report section 3.2.2): one copy per other
    rack its experts sit in, fanned out there over NVLink, against the lecture's one copy per
    routed expert. The same ratio of all-to-all to compute, times each count's slowdown."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    k = presets.get("model", MODEL).experts_active
    two_penalty = two_rack_penalty(presets)
    racks = presets.parameter["racks_spanned"].value
    cap = presets.parameter["max_racks_per_token"].value

    def copies(r):
        return ev.q("offrack_copies", racks_spanned=Q_(r, "rack")).to("").m

    def once(r, penalty):
        return (
            ev.q("once_per_rack_slowdown", racks_spanned=Q_(r, "rack"), scale_out_penalty=penalty)
            .to("")
            .m
        )

    def per_expert(r, penalty):
        return (
            ev.q("multi_rack_slowdown", racks_spanned=Q_(r, "rack"), scale_out_penalty=penalty)
            .to("")
            .m
        )

    def lecture_copies(r):
        return k * ev.q("offrack_fraction", racks_spanned=Q_(r, "rack")).to("").m

    r2 = racks.to("rack").m
    slow, slow_hw = once(r2, two_penalty), once(r2, penalty_hw)
    # the penalty at which two racks' all-to-all, sent once per rack, just equals the compute:
    # copies x pi / k x ratio_one = 1
    break_even = k / (copies(r2) * ratio_one)
    # the fewest racks at which uniform routing would send more copies than the router allows
    beyond_cap = next(r for r in range(2, 65) if copies(r) > cap.to("rack").m)
    ultra = Evaluator(presets, ULTRA).q("hardware_scale_out_penalty").to("").m
    return {
        "k": said_number(k),
        "lecture_copies": said_number(lecture_copies(r2)),
        "copies": said_number(copies(r2), 3),
        "miss": said_number(1 - copies(r2) / (r2 - 1), 2),
        # the same chance as "1 in N": each of k experts misses the other rack with 1 - 1/r
        "miss_one_in": said_number(1 / (1 - copies(r2) / (r2 - 1))),
        "slowdown": said_number(slow, 3),
        "slowdown_hw": said_number(slow_hw, 3),
        "onrack": said_number(once(1, two_penalty)),  # one rack: the on-rack share alone
        "alltoall": _us(one * slow),
        "alltoall_hw": _us(one * slow_hw),
        "ratio": said_number(slow * ratio_one, 3),
        "ratio_hw": said_number(slow_hw * ratio_one, 3),
        "ratio_ctx": said_number(slow * ratio_one_ctx, 3),
        "ratio_hw_ctx": said_number(slow_hw * ratio_one_ctx, 3),
        "hides_hw": bool(slow_hw * ratio_one < 1),
        # whether the off-rack share, not the on-rack one, sets the two-rack slowdown
        "offrack_sets": bool(slow > once(1, two_penalty) + 1e-9),
        "break_even": said_number(break_even, 3),
        "break_even_round": said_number(break_even, 2),
        # the two Blackwell racks' own penalties against it, as the rule of thumb lists them
        "which_pass": " ({})".format(
            "; ".join(
                f"{name}'s {said_number(x, 2)}× {'is' if x <= break_even else 'is not'}"
                for name, x in (
                    (chip_name(presets.get("hardware", ULTRA)), ultra),
                    (chip_name(presets.get("hardware", RACK)), penalty_hw.to("").m),
                )
            )
        ),
        # against a copy per expert, whose break-even is 1 / (f ratio_one): k f / c_out
        "gain": said_number(lecture_copies(r2) / copies(r2), 2),
        "cap": said_number(cap.to("rack").m),
        # the M racks may include the token's own, from which nothing leaves
        "cap_leaving": said_number(cap.to("rack").m - 1),
        "beyond_cap": said(Q_(beyond_cap, "rack")),
        "ultra_penalty": said_number(ultra),
        "ultra_slowdown": said_number(once(r2, ultra), 3),
        "ultra_ratio": said_number(once(r2, ultra) * ratio_one, 3),
        "ultra_hides": bool(once(r2, ultra) * ratio_one < 1),
        "rows": [
            {
                "racks": said(Q_(r, "rack")),
                "per_expert": said_number(lecture_copies(r), 3),
                "once": said_number(copies(r), 3),
                "slow_per_expert": said_number(per_expert(r, two_penalty), 2),
                "slow_once": said_number(once(r, two_penalty), 2),
                "slow_once_hw": said_number(once(r, penalty_hw), 2),
            }
            for r in RACK_COUNTS
        ],
    }


def busiest_chip_load(picks: float, chips: int) -> float:
    """The busiest chip's expected load over the mean when ``picks`` expert picks (a batch's
    tokens times k) each land on one of ``chips`` chips uniformly at random. Each chip's load is
    binomial(picks, 1/chips), taken as independent of the others' (the loads in fact sum to
    ``picks``; a simulation differs by about 0.1% at 64 chips, under 1% at 8), so
    E[max] = sum over m >= 1 of 1 - P(load < m)^chips.

    >>> round(busiest_chip_load(8 * 5667, 64), 3), busiest_chip_load(100, 1)
    (1.088, 1.0)
    """
    from math import exp, lgamma, log

    p = 1 / chips
    mean, total, below = picks * p, 0.0, 0.0  # below: P(load < m)
    m = 0
    while below < 1 - 1e-15 and m <= picks:
        pmf = (
            exp(
                lgamma(picks + 1)
                - lgamma(m + 1)
                - lgamma(picks - m + 1)
                + m * log(p)
                + (picks - m) * log(1 - p)
            )
            if chips > 1
            else float(m == picks)
        )
        below += pmf
        m += 1
        total += 1 - min(below, 1.0) ** chips  # P(max >= m)
    return total / mean


def _edge(presets: Presets, ratio_one: float, eta_up: float, one, layer, layer_ctx) -> dict:
    """How far the one-rack headline sits from the edge: the busiest chip's extra load under
    uniform-random routing at B* (its all-to-all grows by that factor; so do its experts' FLOPs,
    a share of the layer), alone and with DeepEP's measured NVLink efficiency; the copies that
    really leave a chip (the home chip's stay), and the distinct chips hit, the once-per-rack
    count with chips for racks; one MoE layer's compute (the output head's FLOPs left out); and
    the layer's time at the default context, set by its KV read."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    model = presets.get("model", MODEL)
    k = model.experts_active
    chips = presets.parameter["expert_parallel_chips"].value
    batch = ev.q("crossover_batch")
    g = chips.to("chip").m
    picks = batch.to("sequence").m * k  # one token per sequence per step, k picks each
    excess = busiest_chip_load(picks, round(g))
    # routing loads only the routed experts; the shared expert runs on the token's home chip
    share = _expert_compute(model, layer, routed_only=True)["share"]
    busy = ratio_one * excess / (1 + share * (excess - 1))
    leave = k * ev.q("offrack_fraction", racks_spanned=Q_(g, "rack")).to("").m
    distinct = ev.q("offrack_copies", racks_spanned=Q_(g, "rack")).to("").m
    head = Q_(model.d_model * model.vocab, "parameter")
    moe_layer = layer * (1 - (head / model.params_active).to("").m)
    default = presets.parameter["context_length"].value
    step_ctx = ev.q("step_time", batch_size=batch, n_chips=chips, context_length=default)
    layer_time_ctx = Q_((step_ctx / Q_(model.layers, "layer")).to("ms/layer").m, "ms")
    return {
        "excess": said_number(excess, 3),
        "excess_pct": said_number(100 * (excess - 1), 1),
        "routed_share": said_number(share, 2),
        # the step waits on the busiest chip for its links and its compute alike: its all-to-all
        # over its own layer time, at peak links and at DeepEP's measured NVLink
        "ratio_busy": said_number(busy, 2),
        "ratio_both": said_number(busy / eta_up, 3),
        # and with its two collectives' fixed latency on top (the stand-in floor)
        "ratio_both_latency": said_number(
            (
                (one * excess / eta_up + collective_latency_per_layer(presets))
                / (layer * (1 + share * (excess - 1)))
            )
            .to("")
            .m,
            2,
        ),
        # compute and HBM at the links' efficiency too: only the relative efficiency moves it
        "ratio_all_derated": said_number((ratio_one / eta_up) * eta_up, 2),
        "at_edge": bool(busy / eta_up > 0.95),
        "picks": said_number(picks),
        "leave": said_number(leave, 3),
        "distinct": said_number(distinct, 3),
        "ratio_leave": said_number(ratio_one * leave / k, 2),
        "ratio_distinct": said_number(ratio_one * distinct / k, 2),
        "moe_layer": _us(moe_layer),
        "ratio_moe_layer": said_number((one / moe_layer).to("").m, 2),
        "layer_time_ctx": _us(layer_time_ctx),
        "layer_compute_ctx": _us(layer_ctx),
        "ratio_time_ctx": said_number((one / layer_time_ctx).to("").m, 2),
        "kv_bound": bool(layer_time_ctx > layer_ctx * 1.01),
        "overlap_batch": said(2 * batch, 2),
        "per_chip": ev.text("experts_per_chip"),
        "spare_slots": said_number(
            (presets.get("hardware", RACK).scale_up_domain - chips).to("chip").m
            * ev.q("experts_per_chip").to("expert/chip").m
        ),
    }


def _link_efficiency(presets: Presets, ratio_one: float, penalty_hw) -> dict:
    """Links below their peak: DeepEP's measured dispatch bandwidth over NVLink (Blackwell,
    against a B200's per-direction peak) and, as a range, over InfiniBand when decoding (its
    EP 32-256 rows, against a 400 Gb/s card), and the scaling book's caution that a cross-node
    all-to-all may reach half. An efficiency divides every all-to-all time, so the ratio to
    compute grows by its inverse; the penalty moves by the ratio of the two links'
    efficiencies, a range here (the fastest network row gives the smallest penalty)."""
    par = presets.parameter
    b200 = presets.get("hardware", "b200")
    h800 = presets.get("hardware", "h800")
    port = h800.scale_out_bandwidth_per_direction
    eta_up = par["deepep_nvlink_dispatch_bandwidth"].value / b200.scale_up_bandwidth_per_direction
    eta_up = eta_up.to("").m
    low, high = (par[f"deepep_rdma_dispatch_bandwidth_{end}"].value for end in ("low", "high"))
    eta_low, eta_high = ((bw / port).to("").m for bw in (low, high))
    cautious = par["alltoall_efficiency_cautious"].value.to("").m
    hw = penalty_hw.to("").m
    return {
        "nvlink_measured": said(par["deepep_nvlink_dispatch_bandwidth"].value),
        "nvlink_peak": said(b200.scale_up_bandwidth_per_direction),
        "rdma_low": said_number(low.to("GB/s").m),
        "rdma_high": said(high.to("GB/s")),
        "rdma_peak": said(port.to("GB/s")),
        "eta_up": said_number(100 * eta_up, 2),
        "eta_out_low": said_number(100 * eta_low, 2),
        "eta_out_high": said_number(100 * eta_high, 2),
        "cautious": said_number(100 * cautious, 2),
        "eta": eta_up,
        "ratio_measured": said_number(ratio_one / eta_up, 2),
        "ratio_cautious": said_number(ratio_one / cautious, 2),
        "cautious_fails": bool(ratio_one / cautious > 1),
        "penalty_low": said_number(hw * eta_up / eta_high, 2),
        "penalty_high": said_number(hw * eta_up / eta_low, 2),
    }
