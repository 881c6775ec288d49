"""Chapters C and D's context: memory per chip against stages, traffic, hops and the bubble.

>>> from units.presets import load
>>> ctx = context(load())
>>> len(ctx["stages"]["rows"]) == len(STAGES)
True
"""

import math
from dataclasses import dataclass

import sympy as sp

import derivations
from book.chapters.moe import crossover_factors
from book.context import Evaluator, header
from book.format import chip_name, context_tokens, number, quantity, said, said_number
from units import Q_
from units.presets import Presets

MODEL = "deepseek_v3"
RACK = "gb200_nvl72"
STAGES = (1, 2, 4, 8, 16)
MICROBATCHES = (4, 16, 64)


def context(presets: Presets) -> dict:
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    memory = _stages_table(ev)
    first, _ = memory_split(ev, pipeline_stages=Q_(STAGES[0], "stage"))
    last, kv = memory_split(ev, pipeline_stages=Q_(STAGES[-1], "stage"))
    lecture = Evaluator(presets)
    return {
        "model": presets.get("model", MODEL).name,
        "rack": chip_name(presets.get("hardware", RACK)),
        "stages": memory,
        "weights_first": said(tenths(first)),
        "weights_last": said(last.to("GB"), 3),
        "kv_per_chip": said(tenths(kv)),
        "stage_range": f"{STAGES[0]} to {STAGES[-1]}",
        "last_stages": said(Q_(STAGES[-1], "stage")),
        "micro_batch": ev.text("micro_batch_size"),
        "total_batch": said(
            ev.q("micro_batch_size") * presets.parameter["pipeline_stages"].value.m
        ),
        # a pure number here: "312 multiplies per byte of weight", not "312 sequences ..."
        "per_weight_byte": said_number(ev.q("dense_crossover_batch").to("sequence").m),
        "context_length": context_tokens(presets.parameter["context_length"].value),
        "ep_chips": quantity(presets.parameter["expert_parallel_chips"].value),
        "hbm": quantity(presets.get("hardware", RACK).hbm_capacity),
        "ratio_one_layer": ev.text("scaleup_scaleout_ratio", moe_layers_per_stage=Q_(1, "layer")),
        "ratio_default": ev.text("scaleup_scaleout_ratio"),
        "ratio_default_mixed": _mixed_bytes_ratio(presets, ev),
        # fractional on average (61 layers over 4 stages): shown as a plain number, not a count
        "layers_per_stage": said_number(ev.q("layers_per_stage").m),
        "moe_layers_per_stage": said_number(ev.q("moe_layers_per_stage").m),
        "latency": lecture.text("pipelined_decode_latency"),
        "hop_network": quantity(presets.parameter["hop_latency_network"].value),
        "latency_network": lecture.text(
            "pipelined_decode_latency", hop_latency=presets.parameter["hop_latency_network"].value
        ),
        "period": quantity(presets.parameter["train_period"].value),
        "latency_network_rough": rough(
            lecture.q(
                "pipelined_decode_latency",
                hop_latency=presets.parameter["hop_latency_network"].value,
            ),
            2,
        ),
        "hop": quantity(presets.parameter["hop_latency"].value),
        "stages_default": quantity(presets.parameter["pipeline_stages"].value),
        "domain_fetch": [_domain_fetch(presets, hw) for hw in ("h100_sxm", "b200", "gb200_nvl72")],
        "crossover_factors": crossover_factors(presets),
        "fetch_ratio": said(
            (
                Evaluator(presets, "h100_sxm", MODEL, "fp8").q("domain_weight_fetch_time")
                / ev.q("domain_weight_fetch_time")
            ).to(""),
            2,
        ),
        "one_tb": Evaluator(presets, precision="fp8").text(
            "weight_memory", n_total=Q_(1, "Tparameter")
        ),
        "one_tb_params": said(Q_(1, "Tparameter")),
        "fp8_bytes": quantity(presets.get("precision", "fp8").bytes_per_value),
        "bubble": _bubble_table(lecture),
        **_traffic(presets, ev),
        **_capacity(presets, ev, first, last, kv),
        **_hops(presets, lecture, setup_step(presets)),
        **_bubble_examples(presets, lecture),
        **_too_big(presets),
        **_exercises(presets, ev, kv, setup_step(presets)),
        **_training_memory(presets),
        **_schedule_memory(presets),
        **_hop_transfer(presets, ev),
        **_memory_wall(presets),
        **_training_batch(presets),
        **_tensor_parallel(presets),
        **_deepseek_layout(presets),
        **_symbols(presets),
        **_dp_reduce(presets),
        **_inference_idle(presets, setup_step(presets)),
        **setup_split(presets),
        **_assumptions(presets, ev),
        "moe_ratio": _moe_ratio(presets),
        # the schedules' papers, as prose cites them
        "cite": {
            "pipedream": "Narayanan et al. 2019, 'PipeDream: Generalized Pipeline Parallelism "
            "for DNN Training'",
            "pipedream_flush": "PipeDream-Flush, Narayanan et al. 2021, 'Memory-Efficient "
            "Pipeline-Parallel DNN Training'",
        },
        "tex": _tex(),
    }


def _domain_fetch(presets: Presets, hw_id: str) -> dict:
    """The time to read the model's FP8 weights over one scale-up domain of ``hw_id``, and
    whether the domain's HBM holds them at all."""
    hw = presets.get("hardware", hw_id)
    ev = Evaluator(presets, hw_id, MODEL, "fp8")
    hbm = (hw.hbm_capacity * hw.scale_up_domain.m).to("GB")
    return {
        "name": chip_name(hw),
        "time": ev.text("domain_weight_fetch_time"),
        "fits": bool(ev.q("weight_memory") <= hbm),
        "hbm": said(hbm),
    }


def _traffic_times() -> dict:
    """The two times per token the traffic ratio divides, as the ratio's derivation writes them
    (scale-up: the stage's MoE layers' all-to-alls; scale-out: one activation), and the
    substitution that makes the bandwidths cancel."""
    from derivations.core import readable, to_display_latex
    from derivations.pipeline import S_out, S_up, b_act, d, ell, kk, nu, pi, t_out, t_up

    def shown(lhs, rhs):
        return f"{derivations.to_latex(lhs)} = {to_display_latex(readable(rhs))}"

    return {
        "t_up": shown(t_up, ell * 2 * kk * nu * d * b_act / S_up),
        "t_out": shown(t_out, nu * d * b_act / S_out),
        "s_out": shown(S_out, S_up / pi),
    }


def _tex() -> dict:
    """Inline math the prose uses, printed by sympy from the chapter's own symbols."""
    from derivations.notation import (
        experts_active,
        hop_latency,
        microbatches,
        pipeline_stages,
        train_period,
    )

    p, m, k = pipeline_stages.sym, microbatches.sym, experts_active.sym
    e = derivations.lookup_symbol("expert_parallel_chips").sym
    solved = derivations.get("pipeline_bubble_fraction").solve_for("microbatches")
    return {
        "inv_p": derivations.to_latex(1 / p),
        "inv_ep": derivations.to_latex(1 / (e * p)),
        "two_k": derivations.to_latex(2 * k),
        "p_minus_one": derivations.to_latex(p - 1),
        "bubble_approx": derivations.to_latex((p - 1) / m),
        "m_solved": solved.display_latex(),
        "hops_equal": derivations.to_latex(sp.Eq(p * hop_latency.sym, train_period.sym)),
        **_traffic_times(),
    }


def rough(q, digits: int = 1) -> str:
    """A rule of thumb's round figure: ``rough(Q_(29, "")) == '30'``; the exact one goes beside it.

    >>> rough(Q_(29.0, "")), rough(Q_(20.4, "ms"), 2)
    ('30', '20 ms')
    """
    return said(q, digits)


def percent(fraction, digits: int = 3) -> str:
    """A dimensionless fraction as a percentage: ``percent(Q_(0.1579, "")) == '15.8%'``.

    >>> percent(Q_(0.157894, "")), percent(0.5)
    ('15.8%', '50%')
    """
    value = fraction.to("").m if hasattr(fraction, "to") else fraction
    return f"{said_number(value * 100, digits)}%"


def _traffic(presets: Presets, ev: Evaluator) -> dict:
    """The traffic ratio with the lecture's 8x penalty and with the rack's own (per direction)."""
    model = presets.get("model", MODEL)
    penalty = ev.q("hardware_scale_out_penalty")
    k = model.get("experts_active")
    one = Q_(1, "layer")
    real_one = ev.q("scaleup_scaleout_ratio", scale_out_penalty=penalty, moe_layers_per_stage=one)
    return {
        "experts_active": said(Q_(k, "expert")),
        "lecture_penalty": quantity(presets.parameter["scale_out_penalty"].value),
        "rack_penalty": said(penalty),
        "ratio_default_rough": rough(ev.q("scaleup_scaleout_ratio")),
        "ratio_rack_one_layer": said(real_one),
        "ratio_rack_default": ev.text("scaleup_scaleout_ratio", scale_out_penalty=penalty),
        # the fewest MoE layers per stage at which the rack's own penalty still gives ratio >= 1
        "rack_min_layers": said(Q_(math.ceil(1 / real_one.to("").m), "layer")),
        "layers_total": said(Q_(model.get("layers"), "layer")),
        "dense_layers": said(Q_(model.get("dense_layers"), "layer")),
        "d_model": said_number(model.get("d_model")),
        "d_ff_expert": said_number(model.get("d_ff_expert")),
        "scaleup_domain": quantity(presets.get("hardware", RACK).scale_up_domain),
        "tp_chips": quantity(presets.get("hardware", "h100_sxm").scale_up_domain),
        # one expert's hidden width cut over an 8-GPU node's chips (tensor parallelism)
        "tp_slice": said_number(
            model.get("d_ff_expert") / presets.get("hardware", "h100_sxm").scale_up_domain.m
        ),
        "vocab": f"{model.get('vocab'):,}",  # an exact count, shown whole
    }


def _mixed_bytes_ratio(presets: Presets, ev: Evaluator):
    """The traffic ratio at the MoE chapter's default precisions: FP8 dispatch and BF16 combine
    inside the stage (b_act + b_comb bytes per expert round trip, not 2 b_act) against an FP8
    hop (b_act bytes)."""
    act = presets.get("precision", "fp8").bytes_per_value
    comb = presets.parameter["combine_bytes_per_value"].value
    return said((ev.q("scaleup_scaleout_ratio") * ((act + comb) / (2 * act))).to(""))


def _capacity(presets: Presets, ev: Evaluator, first, last, kv) -> dict:
    """How much of pipelining's possible saving two stages already give, and the KV share.
    Weights, KV and totals are printed to a tenth of a GB and each total is the sum of its
    printed parts, so that a reader adding them gets the printed total (fault 3 of the
    pr25 reader: "10 GB + 25 GB = 36 GB")."""
    two, _ = memory_split(ev, pipeline_stages=Q_(2, "stage"))
    hbm = presets.get("hardware", RACK).hbm_capacity
    first_, two_, kv_ = tenths(first), tenths(two), tenths(kv)
    last_ = Q_(float(number(last.to("GB").m, 3)), "GB")  # as printed, three figures
    return {
        "weights_two": said(two_),
        "total_first": said(tenths(first_ + kv_)),
        "total_two": said(tenths(two_ + kv_)),
        "total_last": said(tenths(last_ + kv_)),
        "two_share": percent((first - two) / first, 3),
        # what two stages save of each chip's whole memory, and what any number could save,
        # from the printed figures
        "two_total_share": percent((first_ - two_) / (first_ + kv_), 2),
        "max_total_share": percent(first_ / (first_ + kv_), 2),
        "kv_share_last": percent(kv_ / tenths(last_ + kv_), 2),
        # the KV cache alone at the long context, which no stage count lowers
        "long_context": context_tokens(presets.parameter["long_context_length"].value),
        "kv_long": said(
            memory_split(ev, context_length=presets.parameter["long_context_length"].value)[1].to(
                "GB"
            ),
            3,
        ),
        "total_last_rough": said((last + kv).to("GB"), 2),
        "kv_long_fits": bool(
            memory_split(ev, context_length=presets.parameter["long_context_length"].value)[1] < hbm
        ),
        "kv_per_chip_rough": rough(kv.to("GB"), 2),
        "hbm_free_first": said((hbm - first - kv).to("GB")),
        "weights_total": ev.text("weight_memory"),
        "fetch_per_chip": said((first / presets.get("hardware", RACK).hbm_bandwidth).to("ms")),
        "rack_hbm": said((hbm * presets.get("hardware", RACK).scale_up_domain.m).to("TB")),
        "node_hbm": said(
            (
                presets.get("hardware", "h100_sxm").hbm_capacity
                * presets.get("hardware", "h100_sxm").scale_up_domain.m
            ).to("GB")
        ),
    }


def setup_step(presets: Presets):
    """The unpipelined decode step of the chapter's own setup: the crossover micro-batch of
    DeepSeek-V3 on n_EP GB200 chips at the default context (weights and KV read, or compute,
    whichever is slower). Not the lecture's 20 ms, which is the drain time of a full HBM."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    return ev.q(
        "step_time",
        batch_size=ev.q("micro_batch_size"),
        n_chips=presets.parameter["expert_parallel_chips"].value,
    ).to("ms")


def setup_split(presets: Presets) -> dict:
    """What the setup step's time is made of: the weights-only crossover sets the matrix
    multiplies' time equal to the weight read, but at the default context the step also reads
    the KV cache and computes attention, so it is memory-bound beyond the crossover's count."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    kw = {
        "batch_size": ev.q("micro_batch_size"),
        "n_chips": presets.parameter["expert_parallel_chips"].value,
    }
    compute = ev.q("compute_time", **kw).to("ms")
    matmuls = ev.q("compute_time", attention_flops_per_token=Q_(0, "FLOP/token"), **kw).to("ms")
    weights = ev.q("weight_fetch_time", **kw).to("ms")
    kv = ev.q("kv_fetch_time", **kw).to("ms")
    return {
        "split": {
            "weights": said(weights, 2),
            "kv": said(kv, 2),
            "matmuls": said(matmuls, 2),
            "attention": said(compute - matmuls, 2),
            "compute": said(compute, 2),
            "memory_bound": bool(weights + kv > compute),
            "over_compute": said_number(((weights + kv) / compute).to("").m, 2),
        }
    }


def _hops(presets: Presets, lecture: Evaluator, step) -> dict:
    hop = presets.parameter["hop_latency"].value
    real = presets.parameter["hop_latency_network"].value
    stages = presets.parameter["pipeline_stages"].value
    period = presets.parameter["train_period"].value
    added_real = lecture.q("pipelined_decode_latency", hop_latency=real) - period
    fast = presets.parameter["hop_latency_measured_fast"].value
    slow = presets.parameter["hop_latency_measured_slow"].value
    return {
        "hop_fast": said(fast),
        "hop_slow": said(slow),
        # "deepseek-ai/DeepEP, docs/legacy.md": the repository and file, without commit and quote
        "hop_source": ", ".join(
            part.split(" at ")[0]
            for part in presets.parameter["hop_latency_measured_fast"]
            .source_of("source")
            .split(": ", 1)[-1]
            .split(", ")[:2]
        ),
        "hops_added_fast": said((stages.m * fast).to("ms"), 2),
        "hops_added_slow": said((stages.m * slow).to("ms"), 2),
        "hop_share_fast": percent(stages.m * fast / period, 2),
        "hop_share_slow": percent(stages.m * slow / period, 2),
        "setup_step": said(step, 2),
        "setup_share_fast": percent(stages.m * fast / step, 2),
        "setup_share_slow": percent(stages.m * slow / step, 2),
        "setup_share_network": percent(stages.m * real / step, 2),
        "hop_ratio_fast": said((hop / fast).to(""), 2),
        "hop_ratio_slow": said((hop / slow).to(""), 2),
        "hops_added": said((stages.m * hop).to("ms")),
        "hops_added_network": said((stages.m * real).to("ms")),
        "hop_share_network": percent(added_real / period, 2),
        "hop_ratio": said((hop / real).to("")),
        "latency_rough": rough(lecture.q("pipelined_decode_latency"), 1),
    }


def _bubble_examples(presets: Presets, lecture: Evaluator) -> dict:
    """The bubble at the defaults, at as many micro-batches as stages, and the (P - 1)/m rule."""
    p = presets.parameter["pipeline_stages"].value
    m = presets.parameter["microbatches"].value.to("").m
    fraction = lecture.q("pipeline_bubble_fraction")
    at_p = lecture.q("pipeline_bubble_fraction", microbatches=p.m)
    return {
        "bubble_default": percent(fraction),
        "bubble_rule": percent((p.m - 1) / m),
        "bubble_rule_high": percent((p.m - 1) / m / fraction.to("").m - 1, 2),
        # the same overstatement in percentage points, and as a share of the exact bubble in words
        "bubble_rule_points": said_number(100 * ((p.m - 1) / m - fraction.to("").m), 1),
        "bubble_rule_high_share": _fraction_word((p.m - 1) / m / fraction.to("").m - 1),
        "bubble_rule_many_m": said_number(MICROBATCHES[-1]),
        "bubble_rule_many": percent((p.m - 1) / MICROBATCHES[-1]),
        "bubble_many_exact": percent(
            lecture.q("pipeline_bubble_fraction", microbatches=MICROBATCHES[-1])
        ),
        "bubble_m_equal_p": percent(at_p),
        "bubble_stages": said(p),
        "bubble_microbatches": said_number(m),
        "bubble_p_minus_one": said_number(p.m - 1),
    }


def _fraction_word(x: float) -> str:
    """The nearest simple fraction 1/n (n from 2 to 10) as a word, for a share said roughly.

    >>> _fraction_word(0.1875), _fraction_word(0.26), _fraction_word(0.5)
    ('fifth', 'quarter', 'half')
    """
    words = {2: "half", 3: "third", 4: "quarter", 5: "fifth", 6: "sixth"}
    words |= {7: "seventh", 8: "eighth", 9: "ninth", 10: "tenth"}
    return words[min(words, key=lambda n: abs(1 / n - x))]


def _exercises(presets: Presets, ev: Evaluator, kv, step) -> dict:
    """Numbers for the end-of-chapter exercises."""
    bw = presets.get("hardware", RACK).hbm_bandwidth
    kv_fast = memory_split(ev, mem_bandwidth=2 * bw)[1]
    lecture = Evaluator(presets)
    solve_m = derivations.get("pipeline_bubble_fraction").solve_for("microbatches")
    target = Q_(0.1, "")
    stages = Q_(8, "stage")
    needed = solve_m.evaluate(presets=presets, bubble_fraction=target, pipeline_stages=stages)
    hop = presets.parameter["hop_latency"].value
    real = presets.parameter["hop_latency_network"].value
    period = presets.parameter["train_period"].value
    big = _too_big(presets, "b200")["big"]
    return {
        "ex": {
            "kv_fast": said(tenths(kv_fast)),
            "micro_fast": ev.text("micro_batch_size", mem_bandwidth=2 * bw),
            "fetch_fast": said(ev.q("domain_weight_fetch_time", mem_bandwidth=2 * bw).to("ms")),
            "fetch": ev.text("domain_weight_fetch_time"),
            "bubble_target": percent(target, 2),
            "bubble_stages": said(stages),
            "bubble_needed": said_number(needed.to("").m),
            "bubble_needed_whole": said_number(math.ceil(needed.to("").m)),
            "bubble_check": percent(
                lecture.q(
                    "pipeline_bubble_fraction",
                    pipeline_stages=stages,
                    microbatches=math.ceil(needed.to("").m),
                )
            ),
            "double_lecture": said((period / hop).to("") * Q_(1, "stage")),
            "double_network": said((period / real).to("") * Q_(1, "stage")),
            "double_slow": said(
                (period / presets.parameter["hop_latency_measured_slow"].value).to("")
                * Q_(1, "stage")
            ),
            "double_network_setup": said_number(round((step / real).to("").m)),
            "double_slow_setup": said_number(
                round((step / presets.parameter["hop_latency_measured_slow"].value).to("").m)
            ),
            "double_fast_setup": said_number(
                round((step / presets.parameter["hop_latency_measured_fast"].value).to("").m)
            ),
            "b200": big,
            "double_table": _doubling_table(presets, period, step),
        }
    }


def _doubling_table(presets: Presets, period, step) -> dict:
    """Exercise 4's table: the stages whose hops alone add one more step (P = tau / t_hop), for
    each hop figure (the lecture's guess, DeepEP's slowest and fastest all-to-all exchanges, which
    bound a hop from above, and the chapter's allowance) at the lecture's step and at the hop
    example's own shorter one."""
    hops = (
        ("lecture", "hop_latency"),
        ("slowest", "hop_latency_measured_slow"),
        ("allowance", "hop_latency_network"),
        ("fastest", "hop_latency_measured_fast"),
    )
    steps = (("lecture", period), ("setup", step))
    values = [presets.parameter[name].value for _, name in hops]
    return {
        "headers": [f"{label} {said(v).said}" for (label, _), v in zip(hops, values, strict=True)],
        "rows": [
            {
                "step": f"{label} {said(tau, 2).said}",
                "cells": [said_number((tau / v).to("").m, 2) for v in values],
            }
            for label, tau in steps
        ],
    }


TOO_BIG_MODEL = "kimi_k2"
TOO_BIG_CHIP = "h100_sxm"


def _too_big(presets: Presets, chip: str = TOO_BIG_CHIP) -> dict:
    """A model too big for its scale-up domain: Kimi K2 at FP8 on one 8-GPU node (H100 by
    default). The weights need two stages; the KV cache of a crossover micro-batch needs far more
    HBM than the chip has, whatever the stage count."""
    hw = presets.get("hardware", chip)
    domain = hw.scale_up_domain
    ev = Evaluator(presets, chip, TOO_BIG_MODEL, "fp8")
    fits = derivations.get("memory_per_gpu").solve_for("micro_batch")

    def split(p):
        return memory_split(ev, pipeline_stages=Q_(p, "stage"), expert_parallel_chips=domain)

    def fitting(p):
        """The largest micro-batch whose KV fits beside the weights; '' if the weights alone
        overflow the chip."""
        if split(p)[0] >= hw.hbm_capacity:
            return ""
        return said(
            fits.evaluate(
                presets=presets,
                hardware=chip,
                model=TOO_BIG_MODEL,
                precision="fp8",
                expert_parallel_chips=domain,
                pipeline_stages=Q_(p, "stage"),
                memory_per_chip=hw.hbm_capacity,
            )
        )

    (one, kv), (two, _) = split(1), split(2)
    crossover = ev.q("micro_batch_size")
    fits_two = fits.evaluate(
        presets=presets,
        hardware=chip,
        model=TOO_BIG_MODEL,
        precision="fp8",
        expert_parallel_chips=domain,
        pipeline_stages=Q_(2, "stage"),
        memory_per_chip=hw.hbm_capacity,
    )
    return {
        "big": {
            "model": presets.get("model", TOO_BIG_MODEL).name,
            "chip": chip_name(hw),
            "domain": said(domain),
            "hbm": quantity(hw.hbm_capacity),
            "weights": ev.text("weight_memory"),
            "weights_one": said(one.to("GB")),
            "weights_two": said(two.to("GB")),
            "left_one": said((hw.hbm_capacity - one).to("GB")),
            "left_two": said((hw.hbm_capacity - two).to("GB")),
            "crossover": said(crossover),
            "kv": said(kv.to("GB")),
            "kv_over_hbm": said((kv / hw.hbm_capacity).to("")),
            "fits_one": fitting(1),
            "fits": said(fits_two),
            "below": said((crossover / fits_two).to("")),
        }
    }


def memory_split(ev: Evaluator, **overrides) -> tuple:
    """Memory per chip split into (weights, KV cache) on one evaluator."""
    kv_symbol = derivations.lookup_symbol("kv_bytes_per_token").sym
    weights = kv = None
    for term, value in ev.terms("memory_per_gpu", **overrides).items():
        if kv_symbol in term.free_symbols:
            kv = value
        else:
            weights = value
    return weights, kv


def tenths(q, unit: str = "GB"):
    """``q`` in ``unit`` rounded to a tenth, as the page prints it: a printed sum is then the
    sum of its printed parts.

    >>> tenths(Q_(10.48, "GB")), tenths(Q_(25_490, "MB"))
    (<Quantity(10.5, 'gigabyte')>, <Quantity(25.5, 'gigabyte')>)
    """
    return Q_(round(q.to(unit).m, 1), unit)


def _stages_table(ev: Evaluator) -> dict:
    rows = []
    for p in STAGES:
        weights, kv = memory_split(ev, pipeline_stages=Q_(p, "stage"))
        # weights to three figures (0.655 GB at 16 stages), the KV cache to a tenth of a GB as
        # the prose says it, and the total the sum of the two as printed, so each row adds up
        w = float(number(weights.to("GB").m, 3))
        k = tenths(kv).m
        rows.append({"stages": str(p), "cells": [number(w, 3), number(k), number(w + k, 3)]})
    return {"headers": [header(n, "GB") for n in ("weights", "KV cache", "total")], "rows": rows}


def _bubble_table(ev: Evaluator) -> dict:
    rows = [
        {
            "stages": str(p),
            "cells": [
                percent(
                    ev.q(
                        "pipeline_bubble_fraction", pipeline_stages=Q_(p, "stage"), microbatches=m
                    ),
                    2,
                )
                for m in MICROBATCHES
            ],
        }
        for p in STAGES
    ]
    return {"headers": [f"m = {m}" for m in MICROBATCHES], "rows": rows}


TRAIN_MODEL = "llama_3_1_70b"
TRAIN_CHIP = "h100_sxm"


def _training_memory(presets: Presets) -> dict:
    """Training memory of one replica of a dense model, one sequence at the default context:
    state (16 bytes per parameter), activations with and without recompute. The stored
    activations are counted for the model's own layer (gated MLP, grouped-query attention, no
    dropout), as the reversible-networks chapter counts them, not at the GPT layer's factor."""
    from book.chapters.reversible import memory_cases

    ev = Evaluator(presets, TRAIN_CHIP, TRAIN_MODEL)
    factor = ev.q("gated_activation_bytes_factor").to("byte/value")
    one = {"batch_size": Q_(1, "sequence")}
    stored = {**one, "activation_bytes_factor": factor}  # what is kept without recompute
    # re-running each layer holds every layer's input and, while a layer runs backwards, its
    # internals: the reversible chapter's count, from the same function
    cases = memory_cases(presets, Q_(1, "sequence"))
    rerun = cases["rerun"]
    per_param = sum(
        presets.parameter[p].value
        for p in ("train_weight_bytes", "train_grad_bytes", "optimizer_bytes")
    )
    state = ev.q("training_state_memory")
    hbm = presets.get("hardware", TRAIN_CHIP).hbm_capacity
    node_chips = presets.get("hardware", TRAIN_CHIP).scale_up_domain
    return {
        "training": {
            "model": presets.get("model", TRAIN_MODEL).name,
            "chip": chip_name(presets.get("hardware", TRAIN_CHIP)),
            "bytes_per_param": said(per_param),
            "state": said(state.to("GB")),
            "state_chips": said((state / hbm).to("") * Q_(1, "chip")),
            "node": said(node_chips),
            "state_nodes": said_number((state / (hbm * node_chips.m)).to("").m, 2),
            "state_nodes_whole": said_number(math.ceil((state / (hbm * node_chips.m)).to("").m)),
            "activations": ev.text("full_activation_memory", **stored),
            "act_factor": said(factor),
            "activations_recompute": ev.text("activation_memory", **one),
            "rerun_internals": said((cases["buffer"] - cases["rev"]).to("GB")),
            "rerun": said(rerun.to("GB")),
            "total": ev.text("training_memory", **stored),
            "total_recompute": said((state + rerun).to("TB"), 3),
            "recompute_saving": said_number(
                (ev.q("full_activation_memory", **stored) / ev.q("activation_memory", **one))
                .to("")
                .m,
                2,
            ),
            "weights_bf16": said((ev.q("weight_memory")).to("GB")),
            "state_over_weights": said((state / ev.q("weight_memory")).to("")),
        }
    }


def _schedule_memory(presets: Presets) -> dict:
    """The schedule exercise: the training-memory example's model as a pipeline of the default
    stages and micro-batches, one sequence per micro-batch. Each stage holds its 1/P of the
    layers, so one micro-batch's activations on a stage are 1/P of one sequence's; the first stage
    holds m of them at its peak under GPipe and P under 1F1B (the schedule, placed pass by pass),
    stored in full or with each layer re-run."""
    p = round(presets.parameter["pipeline_stages"].value.m)
    m = round(presets.parameter["microbatches"].value.to("").m)
    ev = Evaluator(presets, TRAIN_CHIP, TRAIN_MODEL)
    one = {"batch_size": Q_(1, "sequence")}
    factor = ev.q("gated_activation_bytes_factor").to("byte/value")
    from book.chapters.reversible import held_rerunning, memory_cases

    cases = memory_cases(presets, Q_(1, "sequence"))
    per_sequence = {
        "stored": ev.q("full_activation_memory", **one, activation_bytes_factor=factor),
        "recompute": ev.q("activation_memory", **one),
    }
    back = backward_cost()
    held = {kind: peak_in_flight(schedule(kind, p, m, back)) for kind in SCHEDULES}

    def holds(n: int, how: str):
        """n micro-batches' share of the stage's activations; re-running, the layer being
        differentiated's internals come once on top (its input is among those kept)."""
        kept = n * per_sequence[how] / p
        if how == "recompute":
            return held_rerunning(kept, cases["buffer"], cases["rev"])
        return kept

    return {
        "sched": {
            "stages": said_number(p),
            "microbatches": said_number(m),
            "held": {kind: said_number(n) for kind, n in held.items()},
            "memory": {
                f"{kind}_{how}": said(holds(n, how).to("GB"))
                for kind, n in held.items()
                for how in per_sequence
            },
            "gpipe_over_1f1b": said_number(held["gpipe"] / held["1f1b"]),
        }
    }


def _hop_transfer(presets: Presets, ev: Evaluator) -> dict:
    """What a real hop moves and how long that takes (physics audit L16): one micro-batch's
    residual-stream activations, d values per sequence at the compute precision, sent by the
    stage's E chips over their own network ports at once."""
    mdl = presets.get("model", MODEL)
    hw = presets.get("hardware", RACK)
    chips = presets.parameter["expert_parallel_chips"].value
    b = ev.q("micro_batch_size").to("sequence").m
    act = presets.get("precision", "fp8").bytes_per_value
    size = (Q_(b * mdl.d_model, "value") * act).to("MB")
    per_chip = hw.scale_out_bandwidth_per_direction.to("GB/s")
    transfer = (size / (chips.to("chip").m * per_chip)).to("microsecond")
    return {
        "hop_bytes": said(size),
        "hop_per_chip": said((size / chips.to("chip").m).to("MB")),
        "hop_port": said(per_chip),
        "hop_transfer": said(transfer),
        "hop_transfer_rough": said(transfer, 2),  # the flashcard's "about 13 µs"
        "hop_allowance": said(presets.parameter["hop_latency_network"].value),
    }


WALL_CHIPS = ("a100_sxm", "gb200_nvl72")  # the memory wall: two generations apart


def _memory_wall(presets: Presets) -> dict:
    """The memory wall from the presets: FLOP/s grew far faster than HBM bandwidth and capacity."""
    old, new = (presets.get("hardware", h) for h in WALL_CHIPS)

    def grew(field):
        return said_number((new.get(field) / old.get(field)).to("").m, 2)

    return {
        "wall_old": chip_name(old),
        "wall_new": chip_name(new),
        "wall_flops": grew("dense_flops_bf16"),
        "wall_bandwidth": grew("hbm_bandwidth"),
        "wall_capacity": grew("hbm_capacity"),
        "capex_share": said_number(100 * presets.parameter["memory_capex_share"].value.to("").m),
    }


def _training_batch(presets: Presets) -> dict:
    """Training micro-batches are sequences of thousands of tokens (physics audit L11): even one
    sequence is far past the crossover, which counts one token per sequence. What bounds the
    micro-batches is the global batch the optimiser wants."""
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    mdl = presets.get("model", MODEL)
    length = presets.parameter["context_length"].value
    one = (Q_(1, "sequence") * length).to("token")
    b_star = ev.q("micro_batch_size").to("sequence").m  # decode: one token per sequence
    return {
        "train_tokens_one": said(one),
        "train_over_star": said_number(one.m / b_star, 2),
        "train_over_dense": said_number(one.m / ev.q("dense_crossover_batch").to("sequence").m, 2),
        # in aggregate only: each routed expert sees k / E_routed of the sequence's tokens
        "train_per_expert": said(one * mdl.get("experts_active") / mdl.get("experts_routed")),
        "train_expert_over_dense": said_number(
            one.m
            * mdl.get("experts_active")
            / mdl.get("experts_routed")
            / ev.q("dense_crossover_batch").to("sequence").m,
            2,
        ),
        "decode_star": ev.text("micro_batch_size"),
        "decode_star_tokens": said(Q_(b_star, "token")),
    }


DP_CHIP = "h100_sxm"
DP_STAGES = 8  # the scaling book's example: an 8-way pipeline across H100 nodes


def _dp_reduce(presets: Presets) -> dict:
    """What pipelining buys data parallelism in training: the per-GPU batch at which one step's
    compute hides the gradient all-reduce between replicas, with each replica one node and with
    it spread over P nodes as a pipeline.

    Each GPU holds 1/(P D) of the replica's N parameters and reduces their BF16 gradients over its
    own network port: a ring all-reduce sends about twice the gradient's b_g N / (P D) bytes, at
    W. Gradients exist only once the backward pass makes them, so the compute a reduce can hide
    behind is the backward pass, 4 N t for t tokens per GPU (twice the forward), at C, not the
    step's 6 N t. Compute hides the reduce at best when t >= 2 b_g C / (4 W P D): P stages
    divide it by P. What is fixed is the replica's tokens per step, P D t = 2 b_g C / (4 W),
    whatever P. A floor: in a pipeline a stage's reduce can start only after the last
    micro-batch's backward pass, and overlaps only what is left of the step (the drain).
    """
    from derivations.notation import flops_per_param_token

    hw = presets.get("hardware", DP_CHIP)
    grad = presets.parameter["train_grad_bytes"].value
    train = 2 * flops_per_param_token.value  # the backward pass: 4 FLOP per parameter-token
    domain = hw.scale_up_domain.to("chip").m
    per_replica = (
        2 * grad * hw.dense_flops_bf16 / (train * hw.scale_out_bandwidth_per_direction)
    ).to("token")
    per_gpu = per_replica / domain

    def tokens(stages: int) -> str:
        return said_number(float(f"{(per_gpu / stages).m:.3g}"))

    return {
        "dp": {
            "chip": chip_name(hw),
            "node": said(hw.scale_up_domain),
            "port": said(hw.scale_out_bandwidth_per_direction.to("GB/s")),
            "stages": said(Q_(DP_STAGES, "stage")),
            "tokens_replica": said_number(float(f"{per_replica.m:.3g}")),
            "gpus_one": said_number(domain),
            "gpus_pp": said_number(domain * DP_STAGES),
            "tokens_one": tokens(1),
            "tokens_pp": tokens(DP_STAGES),
        }
    }


def _inference_idle(presets: Presets, step) -> dict:
    """The idle time hops leave in pipelined decoding: with exactly P micro-batches in flight a
    micro-batch's round trip is its P slots (tau in all) plus P hops, while each stage works only
    tau of it. A slot lasts tau / P, so ceil(P + P^2 t_hop / tau) micro-batches keep every stage
    busy."""
    p = presets.parameter["pipeline_stages"].value.m
    hops = {
        "allowance": presets.parameter["hop_latency_network"].value,
        "slow": presets.parameter["hop_latency_measured_slow"].value,
    }

    def idle(hop):
        return percent((p * hop / (step + p * hop)).to(""), 2)

    def needed(hop):
        return said_number(math.ceil((p + p * p * hop / step).to("").m))

    return {
        "idle": {
            "share": idle(hops["allowance"]),
            "share_slow": idle(hops["slow"]),
            "stages": said_number(p),
            "needed": needed(hops["allowance"]),
            "needed_slow": needed(hops["slow"]),
            "round": said((p * hops["allowance"]).to("ms"), 2),
        }
    }


def _assumptions(presets: Presets, ev: Evaluator) -> dict:
    """The figures the memory results rest on, said where they are used: the KV cache's bytes
    per token (FP8 latents), the trillion-parameter model's stated and counted size, and the
    rack's chips against the lecture's 64."""
    from derivations import get

    kv = ev.detailed("kv_bytes_per_token").inputs
    model = presets.get("model", TOO_BIG_MODEL)
    counted = get("params_total").evaluate(model=TOO_BIG_MODEL, presets=presets)
    return {
        "kv_token": said(ev.q("kv_bytes_per_token").to("kB/token")),
        "kv_values": said_number(kv["kv_values_per_token"].base.m / kv["n_layers"].base.m),
        "kv_layers": said_number(kv["n_layers"].base.m),
        "kv_value_bytes": said(kv["kv_bytes_per_value"].base),
        "experts_routed": said_number(presets.get("model", MODEL).get("experts_routed")),
        "big_stated": said(model.params_total.to("Tparameter")),
        "big_counted_more": percent((counted / model.params_total).to("") - 1, 2),
    }


def _moe_ratio(presets: Presets) -> str:
    """The MoE chapter's one-rack all-to-all against the layer's compute (weights' FLOPs), to
    tie the hop's comparison with the all-to-all back to compute."""
    from book.chapters import moe

    series = moe.alltoall_series(presets)
    ev = Evaluator(presets, moe.RACK, moe.MODEL, "fp8")
    one = ev.q("alltoall_time", batch_size=series["batch"], racks_spanned=Q_(1, "rack"))
    return said_number((one / series["layer_compute"]).to("").m, 1)


TP_CHIP = "h100_sxm"
TP_PRECISION = "bf16"
SCALING_BOOK_MATRICES = 2  # the scaling book's MLP: W_in and W_out, no gate


def _tensor_parallel(presets: Presets) -> dict:
    """The scaling book's test for tensor parallelism, on one DeepSeek-V3 expert over an H100
    node's NVLink: per-chip compute against the all-reduce's bytes over the link.

    Cut Y ways, a gated expert's three d-by-d_e matrices cost c_fwd m_ff d d_e / Y FLOP per token
    on each chip, at C FLOP/s. Each chip ends with a partial sum of the d outputs, and a ring
    all-reduce sends 2 (Y - 1) / Y of d values per token from every chip at the link's
    per-direction bandwidth. So compute / all-reduce = K / (Y - 1), K = c_fwd m_ff d_e W / (2 b C):
    the split pays (compute at least the all-reduce) only while Y <= 1 + K.
    """
    from derivations.notation import ffn_matrices, flops_per_param_token

    model = presets.get("model", MODEL)
    hw = presets.get("hardware", TP_CHIP)
    ways = hw.scale_up_domain.to("chip").m
    flops = hw.get(f"dense_flops_{TP_PRECISION}")
    act = presets.get("precision", TP_PRECISION).bytes_per_value
    width = Q_(model.d_model, "value/token")
    params = Q_(ffn_matrices.value.m * model.d_model * model.d_ff_expert, "parameter")

    def times(y, flops=flops, act=act):
        compute = (flops_per_param_token.value * params / y / flops).to("ns/token")
        allreduce = (2 * (y - 1) / y * width * act / hw.scale_up_bandwidth_per_direction).to(
            "ns/token"
        )
        return compute, allreduce

    compute, allreduce = times(ways)
    per_token = (flops_per_param_token.value * params).to("MFLOP/token")
    k = ((ways - 1) * compute / allreduce).to("").m
    fp8 = times(ways, hw.get("dense_flops_fp8"), presets.get("precision", "fp8").bytes_per_value)
    fp8_same = abs((fp8[1] / fp8[0] / (allreduce / compute)).to("").m - 1) < 0.01
    # the scaling book's rule ("Rooflines for LLM Scaling on GPUs", tensor parallelism): an
    # ungated MLP's in and out matrices against an all-gather plus a reduce-scatter of the d
    # activations, each charged in full whatever the chips: split fewer than F W / C ways
    book_params = params * SCALING_BOOK_MATRICES / ffn_matrices.value.m
    book_compute = flops_per_param_token.value * book_params / flops
    book_comms = 2 * width * act / hw.scale_up_bandwidth_per_direction
    book_ways = (book_compute / book_comms).to("").m
    return {
        "tp": {
            "chip": chip_name(hw),
            "ways": said_number(ways),
            "flops": said(flops),
            "precision": TP_PRECISION.upper(),
            "link": said(hw.scale_up_bandwidth_per_direction),
            "expert_flops": said(per_token, 3),
            "compute": said(compute, 2),
            "allreduce": said(allreduce, 2),
            "ratio": said_number((allreduce / compute).to("").m, 2),
            "max_ways": said_number(1 + k, 2),
            "book_ways": said_number(book_ways, 2),
            "matrices_ratio": said_number(ffn_matrices.value.m / SCALING_BOOK_MATRICES, 2),
            "pays_at_two": bool(k >= 1),
            "fp8_same": bool(fp8_same),
        }
    }


def _deepseek_layout(presets: Presets) -> dict:
    """DeepSeek-V3's training layout (its report, section 3.2): pipeline stages, expert
    parallelism and the data parallelism left over on its cluster; and the training state that
    makes it divide the model every way it can."""
    par = presets.parameter
    chips = par["deepseek_v3_training_chips"].value
    stages = par["deepseek_v3_training_stages"].value
    experts = par["deepseek_v3_training_expert_parallel"].value
    hw = presets.get("hardware", "h800")
    replicas = (chips / (stages.m * experts)).to("").m
    state = Evaluator(presets, "h800", MODEL).q("training_state_memory").to("TB")
    node = hw.hbm_capacity * hw.scale_up_domain.m
    return {
        "ds": {
            "chips": said_number(chips.to("chip").m),
            "chip": chip_name(hw),
            "stages": said_number(stages.m),
            "experts": said_number(experts.to("chip").m),
            "nodes": said_number((experts / hw.scale_up_domain).to("").m),
            "node": said(hw.scale_up_domain),
            "replicas": said_number(replicas),
            # attention and dense weights are replicated on every expert-parallel rank of a
            # stage, so their data parallelism is the chips over the stages
            "dense_dp": said_number((chips / stages.m).to("chip").m),
            "state": said(state, 3),
            "state_nodes": said_number((state / node).to("").m, 2),
            # ZeRO-3 over the whole cluster: the state divided over every GPU
            "state_sharded": said((state / chips.to("chip").m).to("GB"), 2),
            "nvlink": said(hw.scale_up_bandwidth_per_direction),
            "nvlink_h100": said(
                presets.get("hardware", "h100_sxm").scale_up_bandwidth_per_direction
            ),
            "network": said(hw.scale_out_bandwidth_per_direction.to("GB/s")),
            "source": _citation(par["deepseek_v3_training_stages"]),
        }
    }


def _citation(parameter) -> dict:
    """A parameter's source as prose cites it: ``who`` (authors and year) and ``what`` (title
    and arXiv number), without the source key and the section and quotation that follow.

    >>> from units.presets import load
    >>> _citation(load().parameter["activation_bytes_factor"])["who"]
    'Korthikanti et al. 2022'
    """
    text = parameter.source_of("source").split(": ", 1)[-1].split(", section")[0]
    who, what = text.split(", ", 1)
    return {"who": who, "what": what.replace(" (arXiv ", ", arXiv ").rstrip(")")}


def _symbols(presets: Presets) -> dict:
    """Figures the prose gives where it names a symbol: the training state's bytes per
    parameter, the stored activation bytes per value, and the source of the latter."""
    par = presets.parameter
    act = presets.get("precision", "bf16").bytes_per_value
    c_act = par["activation_bytes_factor"].value
    return {
        "b_train_w": said(par["train_weight_bytes"].value),
        "b_train_g": said(par["train_grad_bytes"].value),
        "b_opt": said(par["optimizer_bytes"].value),
        "c_act": said(c_act),
        "c_act_source": _citation(par["activation_bytes_factor"]),
        "act_bytes": said(act),
        "act_saving": said_number((c_act / act).to("").m),
    }


# -- the schedule figure: one training step, slot by slot --------------------------------------


@dataclass(frozen=True)
class Pass:
    """One micro-batch's forward or backward pass through one stage, placed in time."""

    stage: int
    microbatch: int
    backward: bool
    start: float
    end: float


SCHEDULES = ("gpipe", "1f1b")


def _stage_order(kind: str, stage: int, stages: int, microbatches: int) -> list:
    """The order a stage runs its passes in: (micro-batch, backward?) pairs.

    GPipe runs every forward, then every backward. 1F1B (one forward, one backward) runs as many
    forwards as stages still ahead of it, then alternates, then drains its backwards.
    """
    forwards = [(i, False) for i in range(microbatches)]
    backwards = [(i, True) for i in range(microbatches)]
    if kind == "gpipe":
        return forwards + backwards
    if kind != "1f1b":
        raise ValueError(f"unknown schedule {kind!r}; known: {', '.join(SCHEDULES)}")
    warmup = min(stages - 1 - stage, microbatches)
    order = forwards[:warmup]
    for i in range(microbatches - warmup):
        order += [forwards[warmup + i], backwards[i]]
    return order + backwards[microbatches - warmup :]


def schedule(kind: str, stages: int, microbatches: int, backward_cost: float) -> list[Pass]:
    """Every pass of one training step, each started as soon as the stage is free and its input
    is ready: a forward after the previous stage's forward of the same micro-batch, a backward
    after the next stage's backward (the last stage's after its own forward). Time is counted
    in forward passes of one micro-batch through one stage; a backward takes ``backward_cost``.

    >>> step = schedule("gpipe", 4, 16, 2.0)
    >>> max(p.end for p in step)  # (m + P - 1)(1 + 2) slots
    57.0
    >>> round(idle_share(step), 12) == round(3 / 19, 12)  # (P - 1) / (m + P - 1)
    True
    """
    orders = [_stage_order(kind, s, stages, microbatches) for s in range(stages)]
    done: dict[tuple, float] = {}  # (stage, micro-batch, backward) -> end time
    free = [0.0] * stages
    placed: list[Pass] = []
    while len(placed) < 2 * stages * microbatches:
        progressed = False
        for s, order in enumerate(orders):
            while order:
                i, back = order[0]
                if back:
                    ready = done.get((s + 1, i, True) if s < stages - 1 else (s, i, False))
                else:
                    ready = done.get((s - 1, i, False)) if s > 0 else 0.0
                if ready is None:
                    break
                start = max(free[s], ready)
                end = start + (backward_cost if back else 1.0)
                placed.append(Pass(s, i, back, start, end))
                done[(s, i, back)] = free[s] = end
                order.pop(0)
                progressed = True
        if not progressed:  # pragma: no cover - the two schedules above never deadlock
            raise RuntimeError(f"schedule {kind!r} deadlocked")
    return placed


def inference_schedule(stages: int, tokens: int) -> list[Pass]:
    """Pipelined decoding, slot by slot: ``stages`` micro-batches in flight, one per stage, each
    generating ``tokens`` tokens. A slot is one stage's share of a step; token t + 1 of a
    micro-batch enters stage 1 in the slot after token t leaves the last stage, and the
    ``microbatch`` field of each pass counts (micro-batch, token) as micro-batch + stages x
    token. Nothing waits for a weight update, so after the first fill no stage is idle.

    >>> step = inference_schedule(4, 3)
    >>> max(p.end for p in step), len(step)  # (3 tokens x 4 micro-batches) + 3 fill slots
    (15.0, 48)
    >>> sorted(p.start for p in step if p.stage == 3)[:4]  # the last stage, busy from slot 3
    [3.0, 4.0, 5.0, 6.0]
    """
    return [
        Pass(s, i + stages * t, False, float(t * stages + i + s), float(t * stages + i + s + 1))
        for t in range(tokens)
        for i in range(stages)
        for s in range(stages)
    ]


def idle_share(passes: list[Pass]) -> float:
    """The share of the step each stage stands idle (the same for every stage)."""
    span = max(p.end for p in passes) - min(p.start for p in passes)
    stages = {p.stage for p in passes}
    busy = sum(p.end - p.start for p in passes) / len(stages)
    return 1 - busy / span


def peak_in_flight(passes: list[Pass], stage: int = 0) -> int:
    """The most micro-batches whose activations ``stage`` holds at once (forward done, backward
    not yet): m for GPipe, P for 1F1B at the first stage.

    >>> peak_in_flight(schedule("gpipe", 4, 16, 2.0)), peak_in_flight(schedule("1f1b", 4, 16, 2.0))
    (16, 4)
    """
    held = peak = 0
    for p in sorted((p for p in passes if p.stage == stage), key=lambda p: p.start):
        held += -1 if p.backward else 1
        peak = max(peak, held)
    return peak


def backward_cost() -> float:
    """A backward pass in forward passes, from the training-compute equation (C = C_fwd +
    C_bwd = 3 c_fwd N D, so C_bwd = 2 C_fwd).

    >>> backward_cost()
    2.0
    """
    from derivations.notation import flops_per_param_token

    one = {"n_active": Q_(1, "parameter"), "training_tokens": Q_(1, "token")}
    total = derivations.get("training_flops").evaluate(**one)
    forward = flops_per_param_token.value * one["n_active"] * one["training_tokens"]
    return round((total / forward).to("").m - 1, 9)
