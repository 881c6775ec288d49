"""Chapter A's context: worked examples, the table across every chip, and cited figures.

>>> from units.presets import load
>>> ctx = context(load())
>>> ctx["examples"][0]["title"]
'DeepSeek-V3 / R1 on GB200 NVL72 at FP8'
"""

import math

import pint

import derivations
from book.context import Evaluator, header, symbol_context
from book.format import chip_name, context_tokens, number, quantity, said, said_number, sentence
from units import Q_
from units.presets import Presets

# Worked examples: (hardware, model, precision) preset ids. The first is the chapter's running
# example: the lecture's rack, where a replica sits inside one NVLink domain and the experts'
# all-to-all (which this chapter's roofline leaves out) stays small (issue 22; on H100s, eight
# to a domain, the same batch's all-to-all is most of the step).
WORKED_EXAMPLES = (
    ("gb200_nvl72", "deepseek_v3", "fp8"),
    ("h100_sxm", "llama_3_1_70b", "bf16"),
)
# Precision mixes for the mixed-precision example (issue 11): keywords of the evaluation. The last
# is how deployments often run: FP4 weights with FP8 math and an FP8 KV cache (W4A8).
PRECISION_MIXES = (
    dict(precision="bf16"),
    dict(precision="fp8"),
    dict(precision="fp8", weight_precision="fp4"),
)
MIXED_CASE = ("gb200_nvl72", "deepseek_v3")
# The models the chapter compares: one dense, one sparse (the table runs the sparse one).
TABLE_MODELS = ("llama_3_1_70b", "deepseek_v3")


def context(presets: Presets) -> dict:
    """Chapter A's worked examples, its table across every chip, and the figures its prose cites."""
    dense, sparse = TABLE_MODELS
    drain = {
        hw: {
            "name": sentence(chip_name(presets.get("hardware", hw))),
            "capacity": quantity(presets.get("hardware", hw).hbm_capacity),
            "bandwidth": quantity(presets.get("hardware", hw).hbm_bandwidth),
            "time": Evaluator(presets, hw).text("hbm_drain_time"),
        }
        for hw in ("rubin", "gb200_nvl72", "b200", "b300", "h100_sxm")
    }
    ridge = {
        chip_name(presets.get("hardware", hw)): Evaluator(presets, hw).text("ridge_intensity")
        for hw in ("a100_sxm", "h100_sxm", "b200", "gb200_nvl72")
    }
    first, last = (presets.get("hardware", hw) for hw in ("a100_sxm", "gb200_nvl72"))
    ridge_growth = {
        "flops": said_number((last.dense_flops_bf16 / first.dense_flops_bf16).to("").m, 2),
        "factor": said_number(
            (
                Evaluator(presets, last.id).q("ridge_intensity")
                / Evaluator(presets, first.id).q("ridge_intensity")
            )
            .to("")
            .m,
            2,
        ),
    }
    # every Llama 3.1 size crosses over together; the exercise's (c): the same model at FP8
    same_b = {
        m: Evaluator(presets, "h100_sxm", m).q("crossover_batch")
        for m in ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
    }
    fp8 = Evaluator(presets, "h100_sxm", dense, "fp8")
    period = Evaluator(presets).detailed("worst_case_latency")
    return {
        "examples": [_example(presets, *ex) for ex in WORKED_EXAMPLES],
        "mixed_precision": _mixed_precision(presets, *MIXED_CASE),
        "hardware_table": _hardware_table(presets, sparse),
        "dense_model": presets.get("model", dense).name,
        "sparse_model": presets.get("model", sparse).name,
        "dense_crossover": Evaluator(presets, "h100_sxm", dense).text("crossover_batch"),
        "price": quantity(presets.get("rental", "lecture_gpu").price),
        "context_length": context_tokens(presets.get("parameter", "context_length").value),
        "drain": drain,
        "ridge": ridge,
        "ridge_growth": ridge_growth,
        "same_b": {presets.get("model", m).name: said(v) for m, v in same_b.items()},
        "same_b_kv": _dense_never_turn(presets, same_b),
        "dense_fp8": {
            "ridge": fp8.text("ridge_intensity"),
            "crossover": fp8.text("crossover_batch"),
        },
        "period": quantity(period.inputs["train_period"].value),
        "worst": said(period.value),
        **_sequence_rates(presets),
        "argument": _argument(presets),
        "matmul": _matmul(presets),
        "speed": _speed(presets),
        "exercise": _exercises(presets),
        "crossover_product": crossover_product_latex(),
    }


def crossover_product_latex() -> str:
    r"""The crossover batch as the prose reads it (reader bm25, fault 4): the chip's multiplies
    per byte of weight (the dense crossover) times the model's sparsity, each factor from its
    equation's symbols; the same equation as crossover_batch, regrouped.

    >>> crossover_product_latex().count("\\frac"), "\\times" in crossover_product_latex()
    (2, True)
    """
    import sympy as sp

    from derivations.notation import n_active, n_total

    eq, dense = derivations.get("crossover_batch"), derivations.get("dense_crossover_batch")
    # the regrouping is the same equation: the crossover is the dense one times the sparsity
    assert sp.simplify(eq.rhs - dense.rhs * n_total.sym / n_active.sym) == 0
    per_byte = dense.display_latex().split(" = ", 1)[1]
    return f"{eq.lhs.latex} = {per_byte} \\times \\frac{{{n_total.latex}}}{{{n_active.latex}}}"


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
    one = ev.detailed("cost_per_token", batch_size=1)
    n_one = one.inputs["n_chips"].base
    # what batch 1 reads: the always-read weights plus k experts, against N_active
    i = {name: x.base for name, x in one.inputs.items()}
    read_1 = ev.q("weight_fetch_time", batch_size=1, n_chips=n_one) * n_one * hw.hbm_bandwidth
    # the N_active-based figure: rent for reading N_active weights and one context's KV (the
    # context of the one sequence, which gets one token)
    seconds = (
        mdl.params_active * i["weight_bytes_per_value"]
        + i["context_length"] * Q_(1, "sequence") * i["kv_bytes_per_token"]
    ) / hw.hbm_bandwidth
    active_cost = (i["price_per_chip_hour"] * Q_(1, "chip") * seconds / Q_(1, "token")).to(
        "USD/Mtoken"
    )
    moe = mdl.get("experts_routed") is not None
    return {
        "title": f"{mdl.name} on {chip_name(hw)} at {precision.upper()}",
        "hardware": hardware,
        "model": model,
        "precision": precision,
        "inputs": inputs,
        "ridge": ev.text("ridge_intensity"),
        "per_weight_byte": ev.text("dense_crossover_batch"),
        "sparsity": said_number(mdl.params_total / mdl.params_active),
        "crossover": quantity(ev.q("crossover_batch")),
        "batch": said_number(batch),
        "drain": ev.text("hbm_drain_time"),
        "at": {name: said(i.value) for name, i in at.inputs.items()},
        "cost": said(at.value),
        "throughput": ev.text("throughput", batch_size=batch),
        "latency": ev.text("worst_case_latency"),
        "cost_batch_1": said(cost_1),
        "batching_gain": said_number((cost_1 / at.value).to("").magnitude, 3),
        # issue 11: one sequence of an MoE reads only the experts it is routed to
        "moe": moe,
        "experts_batch_1": said_number(ev.q("experts_touched", batch_size=1).m) if moe else "",
        "experts_routed": said_number(mdl.experts_routed) if moe else "",
        "saturation": ev.text("expert_saturation_batch") if moe else "",
        "bytes_batch_1": said(read_1.to("GB")),
        "cost_active_1": said(active_cost),
        "attention_context": context_tokens(ev.q("decode_attention_context")),
        "attention_share": said_number(
            (at.inputs["context_length"].base / ev.q("decode_attention_context")).to("").m, 3
        ),
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
                "crossover": quantity(ev.q("crossover_batch")),
                "chips": said_number(at.inputs["n_chips"].value.magnitude),
                "cost": said(at.value),
                "command": " ".join(f"--{k.replace('_', '-')} {v}" for k, v in mix.items()),
            }
        )
    # why the cost stays (reader blo21, fault 5): at B* the step is the weight read plus the KV
    # read; the weights' share equals their compute at any precision, the KV's does not move
    ev = Evaluator(presets, hardware, model, **PRECISION_MIXES[1])
    batch = _whole(ev.q("crossover_batch"))
    n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    kw = dict(batch_size=batch, n_chips=n)
    cost, step = ev.q("cost_per_token", **kw), ev.q("step_time", **kw)
    if ev.q("compute_time", **kw) > ev.q("memory_time", **kw):
        raise ValueError("the crossover step is compute-bound here: reword the split")
    return {
        "hardware": chip_name(presets.get("hardware", hardware)),
        "model": presets.get("model", model).name,
        "rows": rows,
        "mix": precision_words(PRECISION_MIXES[1]),
        "cost": said(cost),
        "weights": said(cost * _ratio(ev.q("weight_fetch_time", **kw), step)),
        "kv": said(cost * _ratio(ev.q("kv_fetch_time", **kw), step)),
    }


def _hardware_table(presets: Presets, model: str) -> dict:
    """Chapter A's table: every chip, its figures and the chapter's results for ``model``."""
    # the chips' own figures are on the hardware presets page; this table keeps the results, so
    # it fits the page's width (editor's pass, issue 22)
    columns = (
        ("FLOP per byte", "FLOP/byte"),
        ("drain time", "ms"),
        ("crossover batch, rounded up", "sequence"),
        ("cost at that batch, BF16", "cent/Mtoken"),
    )
    rows = []
    for hw in presets.hardware.values():
        values = _chip_results(hw, Evaluator(presets, hw.id, model))
        cells = [_cell(u, f) for (_, u), f in zip(columns[:-1], values[:-1], strict=True)]
        cells.append(_cell("cent/Mtoken", values[-1]))
        rows.append({"id": hw.id, "name": sentence(chip_name(hw)), "cells": cells})
    headers = [header(name, u) for name, u in columns[:-1]]
    return {"headers": [*headers, f"{columns[-1][0]} (¢ per million tokens)"], "rows": rows}


def _cell(in_unit: str, compute) -> str:
    """A table cell as a person says it (2-3 figures, whole counts whole) in ``in_unit``, or a
    dash where a preset lacks a figure.

    >>> _cell("cent/Mtoken", lambda: Q_(0.3796, "USD/Mtoken")), _cell("ms", lambda: Q_(39.23, "ms"))
    ('38', '39')
    >>> _cell("sequence", lambda: Q_(5668, "sequence")), _cell("ms", lambda: Q_(22.5, "ms"))
    ('5,668', '22.5')
    """
    from units.display import spoken_number
    from units.errors import ChalkboardError

    try:
        q = compute()
    except ChalkboardError:
        return "—"
    if q is None:
        return "—"
    x = q.to(in_unit).m
    return said_number(x) if float(x).is_integer() else spoken_number(x, most=3)


def _chip_results(hw, ev: Evaluator) -> tuple:
    """The table's figures for one chip, as functions (a missing figure raises when called)."""
    return (
        lambda: ev.q("ridge_intensity"),
        lambda: ev.q("hbm_drain_time"),
        lambda: Q_(_whole(ev.q("crossover_batch")), "sequence"),
        lambda: ev.q("cost_per_token", batch_size=_whole(ev.q("crossover_batch"))),
    )


def _millions(rate: pint.Quantity) -> str:
    """A token rate in millions per second, as a sentence says it ("50" million tokens/s)."""
    return said_number(rate.to("Mtoken/s").m)


def _one_sequence(rate: pint.Quantity) -> pint.Quantity:
    """A rate per sequence as the tokens per second one sequence gets (a sentence says "each
    sequence gets 69 tokens/s", not "69 tokens per second per sequence")."""
    return (rate * Q_(1, "sequence")).to("token/s")


def _whole(batch: pint.Quantity) -> int:
    """A batch size rounded up to a whole sequence."""
    return math.ceil(batch.to("sequence").magnitude)


RATE_CHIPS = ("rubin", "gb200_nvl72", "h100_sxm")  # the lecture's chip first


def _sequence_rates(presets: Presets) -> dict:
    """Tokens per second per sequence when a step lasts one HBM drain time (the lecture's
    '64 B tokens/s'), on the lecture's Rubin and on two chips in service."""
    rows = [
        {
            "name": chip_name(presets.get("hardware", hw)),
            "drain": Evaluator(presets, hw).text("hbm_drain_time"),
            "rate": said(_one_sequence(Evaluator(presets, hw).q("throughput_per_sequence"))),
        }
        for hw in RATE_CHIPS
    ]
    import tomllib

    from book.claims import CLAIMS
    from units import parse_quantity

    claim = tomllib.loads(CLAIMS.read_text(encoding="utf-8"))["claim"]["throughput_64b"]
    lecture = parse_quantity(claim["expected"], what="claims.toml: throughput_64b")
    step = (Q_(1, "token/sequence") / lecture).to("ms")  # one token per step
    return {
        "sequence_rates": rows,
        "lecture_rate": said(lecture),
        "lecture_step": said(step, 3),
        "drain_gb200": Evaluator(presets, GLOBAL_CHIP).text("hbm_drain_time"),
    }


# -- the chapter's line of argument (issue 12): each number a paragraph interprets --------------
DENSE_CASE = ("h100_sxm", "llama_3_1_70b", "bf16")  # a dense GQA model: KV slope vs compute slope
GLOBAL_CHIP = "gb200_nvl72"  # the lecture's hardware for the provider's global rate


def _round(x: float) -> str:
    """``x`` to one significant figure, for a bold rule of thumb ('≈300' beside the exact 295).

    >>> _round(295.3), _round(14.4), _round(0.0667)
    ('300', '10', '0.07')
    """
    return said_number(float(f"{x:.0e}"), 1)


def _ratio(a: pint.Quantity, b: pint.Quantity) -> float:
    return (a / b).to("").magnitude


def _regime(ev: Evaluator, batch: int, n_chips) -> dict:
    """Which bound sets the step at ``batch``, and by how much."""
    kw = dict(batch_size=batch, n_chips=n_chips)
    compute, memory = ev.q("compute_time", **kw), ev.q("memory_time", **kw)
    bound = "memory" if memory >= compute else "compute"
    return {
        "bound": bound,
        "compute": said(compute),
        "memory": said(memory),
        "by": said_number(max(_ratio(memory, compute), _ratio(compute, memory)), 3),
        "mfu": said_number(100 * _ratio(compute, max(compute, memory)), 3),  # per cent
    }


def _context_balance(ev: Evaluator, batch: int, n_chips) -> float | None:
    """The context (tokens) at which the KV fetch time equals the compute time at ``batch``:
    both are straight lines in the context length, so two evaluations fix them."""
    kw = dict(batch_size=batch, n_chips=n_chips)
    lengths = (1024, 2048)
    c = [
        ev.q("compute_time", context_length=Q_(x, "token/sequence"), **kw).to("s").m
        for x in lengths
    ]
    k = [
        ev.q("kv_fetch_time", context_length=Q_(x, "token/sequence"), **kw).to("s").m
        for x in lengths
    ]
    dc, dk = (c[1] - c[0]) / 1024, (k[1] - k[0]) / 1024
    if dk <= dc:
        return None  # compute stays ahead of KV at every context
    return (c[0] - dc * 1024 - (k[0] - dk * 1024)) / (dk - dc)


def _latent_attention(ev: Evaluator, batch: int, n_chips) -> dict:
    """How far latent attention's compute keeps pace with its cache reads (reader bm25, fault
    6): both grow linearly with the context, so their slopes' ratio is attention's share of the
    pace; the weights' compute makes up the rest only up to the balance context, past which the
    step never turns compute-bound."""
    kw = dict(batch_size=batch, n_chips=n_chips)
    lengths = [Q_(x, "token/sequence") for x in (1024, 2048)]
    c = [ev.q("compute_time", context_length=x, **kw) for x in lengths]
    k = [ev.q("kv_fetch_time", context_length=x, **kw) for x in lengths]
    pace = _ratio(c[1] - c[0], k[1] - k[0])
    balance = _context_balance(ev, batch, n_chips)
    length = ev.detailed("compute_time", **kw).inputs["context_length"].value
    return {
        "pace": said_number(pace, 2),
        "balance": context_tokens(Q_(balance, "token/sequence"), 2) if balance else "",
        "default_below": bool(balance is not None and length.to("token/sequence").m < balance),
    }


def _dense_never_turn(presets: Presets, same_b: dict) -> dict:
    """The dense Llamas' crossover is the weights' alone (reader blo21, fault 2): at the default
    context their KV reads outrun compute at any batch. Each model's balance context (KV fetch
    equals compute) and how memory-bound its step is at the crossover, on the fewest chips."""
    balance, by = [], []
    for m, b in same_b.items():
        ev = Evaluator(presets, "h100_sxm", m)
        batch = _whole(b)
        n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
        balance.append(_context_balance(ev, batch, n))
        kw = dict(batch_size=batch, n_chips=n)
        by.append(_ratio(ev.q("memory_time", **kw), ev.q("compute_time", **kw)))
    length = presets.parameter["context_length"].value.to("token/sequence").m
    if any(x is None or x >= length for x in balance):
        raise ValueError("a dense Llama turns compute-bound at the default context: reword")
    return {
        "balance_low": context_tokens(Q_(min(balance), "token/sequence")),
        "balance_high": context_tokens(Q_(max(balance), "token/sequence")),
        "by_low": said_number(min(by), 2),
        "by_high": said_number(max(by), 2),
    }


def _argument(presets: Presets) -> dict:
    """The numbers the chapter's prose interprets, in the lecture's order."""
    par = {k: p.value for k, p in presets.parameter.items()}
    hw, model, precision = WORKED_EXAMPLES[0]
    ev = Evaluator(presets, hw, model, precision)
    b_star = ev.q("crossover_batch").to("sequence").m
    batch = _whole(ev.q("crossover_batch"))
    n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    low, high = (par[k].to("").m for k in ("practice_batch_low", "practice_batch_high"))
    turn = _turn(ev, batch, n)
    # the chapter's one rule: grow the batch until the step turns compute-bound (or HBM fills)
    practice = _whole(Q_(turn, "sequence")) if turn is not None else batch
    lecture_batch = _whole(ev.q("crossover_batch") * high)  # the lecture's 3 B*, for comparison
    cost = {b: ev.q("cost_per_token", batch_size=b) for b in (1, batch, practice, lecture_batch)}
    floor = ev.q("compute_cost_floor")
    # the question: fast mode's smaller batch, and what 100x the price could buy
    fast = Evaluator(presets).q("fast_mode_batch_ratio").to("").m
    # the crossover factor at BF16 and FP8, and the dense model's on the same chip
    per_byte = {
        p: Evaluator(presets, hw, model, p).q("dense_crossover_batch").to("sequence").m
        for p in ("bf16", "fp8")
    }
    # doubling the context past the balance point (a dense GQA model at triple its B*)
    dhw, dmodel, dprec = DENSE_CASE
    dev = Evaluator(presets, dhw, dmodel, dprec)
    d_batch = _whole(dev.q("crossover_batch") * high)
    d_n = dev.detailed("cost_per_token", batch_size=d_batch).inputs["n_chips"].value
    balance = _context_balance(dev, d_batch, d_n)
    # how full the chips' HBM is at the default context (the rule's other stop: HBM full)
    d_fill = _ratio(dev.q("chips_to_fit", batch_size=d_batch), d_n)
    mfu = []
    if balance is not None:
        for times in (1, 2, 4):  # whole doublings of the whole-token balance context
            length = Q_(math.ceil(balance) * times, "token/sequence")
            lev = Evaluator(presets, dhw, dmodel, dprec, context_length=length)
            r = _regime(lev, d_batch, d_n)
            kw = dict(batch_size=d_batch, n_chips=d_n)
            weights_only = (
                Q_(d_batch, "sequence")
                * dev.q("compute_cost_floor")
                / (d_n * presets.get("rental", "lecture_gpu").price)
                * Q_(1, "token/sequence")
            )  # the weights' multiplies alone: the floor's chip time for the batch's tokens
            r["mfu_weights"] = said_number(100 * _ratio(weights_only, lev.q("step_time", **kw)), 3)
            mfu.append({"times": said_number(times), "length": context_tokens(length), **r})
    # sparse attention: a KV term that grows as the square root of the context
    short, long = par["context_length"], par["price_kink_context"]
    grow = _ratio(long, short)
    # throughput per replica and the provider's global rate, from the replica's own roofline
    # step (not one drain time: the step reaches a drain time only when the batch fills HBM)
    g = Evaluator(presets, GLOBAL_CHIP, model, precision)
    g_batch = _rule_batch(g)
    g_n = g.detailed("cost_per_token", batch_size=g_batch).inputs["n_chips"].value
    per_seq = g.q("throughput_per_sequence")
    g_step = g.q("step_time", batch_size=g_batch, n_chips=g_n)
    replica = (Q_(g_batch, "sequence") * Q_(1, "token/sequence") / g_step).to("token/s")
    replicas = _ratio(par["inference_rate"], replica)
    # sparsity against quality (Clark et al. 2022)
    dense_equiv = _ratio(par["routed_quality_dense"], par["routed_quality_active"])
    period = presets.parameter["train_period"].value
    return {
        "fast": {
            "price": said_number(par["fast_price_multiplier"].to("").m),
            "speed": said_number(par["fast_speed_multiplier"].to("").m),
            "batch_ratio": said_number(fast, 3),
            "smaller": said_number(1 / fast, 3),
        },
        "regime": _regime(ev, batch, n),
        "regime_one": _regime(ev, 1, n),
        "n_chips": said(n),
        "b_star_round": said_number(b_star, 2),  # 5,668 -> "5,700"
        "turn": said_number(practice) if turn is not None else "",  # whole, as the rule runs it
        "turn_over_star": said_number(turn / b_star, 2) if turn is not None else "",
        "latent": _latent_attention(ev, batch, n),
        "pay": _pay_more(presets),
        "doubled": _doubled_bandwidth(ev, presets.get("hardware", hw).hbm_bandwidth),
        "cost_1": said(cost[1]),
        "cost_star": said(cost[batch]),
        "cost_practice": said(cost[practice]),
        "gain_star": said_number(_ratio(cost[1], cost[batch]), 3),
        "gain_floor": said_number(_ratio(cost[1], floor), 3),
        "gain_round": _round(_ratio(cost[1], floor)),
        "practice_low": said_number(low),
        "practice_high": said_number(high),
        "practice_batch": said_number(practice),
        "practice_over_star": said_number(practice / b_star, 2),
        "practice_saving": said_number(100 * (1 - _ratio(cost[practice], cost[batch])), 2),
        "lecture_batch": said_number(lecture_batch),
        "lecture_cost": said(cost[lecture_batch]),
        # each batch on the fewest chips that hold it (the turn itself does not depend on n)
        "lecture_step": said(_held_step(ev, lecture_batch)[0]),
        "lecture_chips": said(_held_step(ev, lecture_batch)[1]),
        "practice_step": said(_held_step(ev, practice)[0]),
        "practice_chips": said(_held_step(ev, practice)[1]),
        "floor": said(floor),
        "over_floor": said_number(_ratio(cost[practice], floor), 3),
        "per_byte": {p: said_number(v) for p, v in per_byte.items()},
        "per_byte_round": _round(per_byte["bf16"]),
        "h100_ridge": Evaluator(presets, "h100_sxm").text("ridge_intensity"),
        "dense": {
            "title": f"{presets.get('model', dmodel).name} on "
            f"{chip_name(presets.get('hardware', dhw))}",
            "batch": said_number(d_batch),
            "chips": said(d_n),
            "precision": dprec.upper(),
            "fill": said_number(100 * d_fill, 2),
            "balance": context_tokens(Q_(balance, "token/sequence")) if balance is not None else "",
            "mfu": mfu,
        },
        "sparse_attention": {
            "short": context_tokens(short),
            "long": context_tokens(long),
            "dense_growth": said_number(grow, 3),
            "sqrt_growth": said_number(math.sqrt(grow), 3),
        },
        "period_round": _round(period.to("ms").m),
        "expert_reads": _expert_reads(ev),
        "alltoall": _alltoall(presets, ev, batch, n),
        "rack": _rack(presets, hw, model, precision),
        "short_step": _short_step(presets, model, precision),
        "lecture_replica": _lecture_replica(presets),
        "global": {
            "hardware": chip_name(presets.get("hardware", GLOBAL_CHIP)),
            "per_sequence": said(per_seq),
            "step": said(g_step),
            "drain": g.text("hbm_drain_time"),
            "compute": said(g.q("compute_time", batch_size=g_batch, n_chips=g_n)),
            "memory": said(g.q("memory_time", batch_size=g_batch, n_chips=g_n)),
            "over_star": said_number(g_batch / g.q("crossover_batch").to("sequence").m, 2),
            "step_rate": said((Q_(1, "token") / g_step).to("token/s")),
            "batch": said_number(g_batch),
            "chips": said(g_n),
            "replica": said(replica),
            "rate_m": _millions(par["inference_rate"]),
            "replicas": said_number(replicas, 3),
            "replicas_whole": said_number(math.ceil(replicas)),  # a count: whole replicas
            "chips_total": said((g_n * math.ceil(replicas)).to("chip")),
        },
        "quality": {
            "experts": said(par["routed_quality_experts"]),
            "active": said(par["routed_quality_active"].to("Mparameter")),
            "dense": said(par["routed_quality_dense"].to("Gparameter")),
            "ratio": said_number(dense_equiv, 2),
            "ratio_round": _round(dense_equiv),
            "sparsity": said_number(par["routed_quality_experts"].to("expert").m),
        },
    }


def _turn(ev: Evaluator, batch: int, n_chips) -> float | None:
    """The batch past which the step is compute-bound (compute time reaches memory time), from
    the two straight lines past ``batch``; None when memory stays ahead at every batch."""
    b = (batch, 2 * batch)
    c = [ev.q("compute_time", batch_size=x, n_chips=n_chips).to("s").m for x in b]
    m = [ev.q("memory_time", batch_size=x, n_chips=n_chips).to("s").m for x in b]
    if c[1] >= m[1] and c[0] >= m[0]:
        return float(batch) if c[0] >= m[0] else None
    dc, dm = (c[1] - c[0]) / batch, (m[1] - m[0]) / batch
    if dc <= dm:
        return None
    return batch + (m[0] - c[0]) / (dc - dm)


def _doubled_bandwidth(ev: Evaluator, hbm_bandwidth) -> dict:
    """The running example with twice the HBM bandwidth (reader blo21, fault 10): the cost at
    B*, with the regime there on each chip (reader blo23, fault 2: the doubled bandwidth
    moves B* out of the memory-bound regime), and the turn, where compute catches the
    (halved) memory reads."""
    batch = _whole(ev.q("crossover_batch"))
    n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    fast = dict(n_chips=n, mem_bandwidth=2 * hbm_bandwidth)
    cost = [ev.q("cost_per_token", batch_size=batch, **kw) for kw in (dict(n_chips=n), fast)]
    b = (batch, 2 * batch)  # compute and memory are straight lines in the batch past B*
    c = [ev.q("compute_time", batch_size=x, n_chips=n).to("s").m for x in b]
    m = [ev.q("memory_time", batch_size=x, **fast).to("s").m for x in b]
    dc, dm = (c[1] - c[0]) / batch, (m[1] - m[0]) / batch
    turn = batch + (m[0] - c[0]) / (dc - dm)  # below B* when compute is already ahead there
    old = _turn(ev, batch, n)
    today = dict(n_chips=n)
    regime = [
        "compute-bound"
        if ev.q("compute_time", batch_size=batch, n_chips=n)
        >= ev.q("memory_time", batch_size=batch, **kw)
        else "memory-bound"
        for kw in (today, fast)
    ]
    return {
        "regime": regime[0],
        "regime_fast": regime[1],
        "cost": said(cost[0]),
        "cost_fast": said(cost[1]),
        "saving": said_number(100 * (1 - _ratio(cost[1], cost[0])), 2),
        "turn": said_number(_whole(Q_(turn, "sequence"))),
        "turn_fall": said_number(old / turn, 2),
    }


def _held_step(ev: Evaluator, batch: int) -> tuple:
    """The step at ``batch`` on the fewest whole chips that hold the weights and its caches."""
    n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    return ev.q("step_time", batch_size=batch, n_chips=n), n


def _rule_batch(ev: Evaluator) -> int:
    """The chapter's batch rule on one setup: grow the batch until the step turns compute-bound
    (the turn, where compute catches the memory reads), rounded up to a whole sequence. A setup
    whose memory stays ahead at every batch has no turn: the rule stops it where HBM fills."""
    batch = _whole(ev.q("crossover_batch"))
    n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    turn = _turn(ev, batch, n)  # the turn does not depend on the chip count: every term is 1/n
    if turn is None:
        raise ValueError(f"{ev.choice}: memory-bound at every batch; the rule stops at full HBM")
    return _whole(Q_(turn, "sequence"))


DRAFT_MODEL = "llama_3_1_8b"  # a speculative-decoding draft for the dense 70B: same family


def _pay_more(presets: Presets) -> dict:
    """What paying more buys on a dense model (on the chips that hold its crossover batch):
    one sequence's step is the weight read, the floor no price can lower."""
    hw, model, precision = DENSE_CASE
    ev = Evaluator(presets, hw, model, precision)
    batch = _whole(ev.q("crossover_batch"))
    n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    step = {b: ev.q("step_time", batch_size=b, n_chips=n) for b in (1, batch)}
    cost = {b: ev.q("cost_per_token", batch_size=b, n_chips=n) for b in (1, batch)}
    return {
        "title": f"{presets.get('model', model).name} on {said(n)} of "
        f"{chip_name(presets.get('hardware', hw))} at {precision.upper()}",
        "batch": said_number(batch),
        "step_star": said(step[batch]),
        "step_1": said(step[1]),
        "speedup": said_number(_ratio(step[batch], step[1]), 3),
        "price": said_number(_ratio(cost[1], cost[batch]), 3),
        "weight_fetch": ev.text("weight_fetch_time", batch_size=1, n_chips=n),
        # speculative decoding: a step that checks g guessed tokens of one sequence does the
        # multiplies of a batch of g, for the same weight read; free while memory stays ahead
        "compute_1": ev.text("compute_time", batch_size=1, n_chips=n),
        "kv_fetch": ev.text("kv_fetch_time", batch_size=1, n_chips=n),
        "memory_1": ev.text("memory_time", batch_size=1, n_chips=n),
        # the draft's price: each guess is one step of a small draft model on the same chips,
        # mostly its own weight read; a rejected guess buys nothing
        "draft": presets.get("model", DRAFT_MODEL).name,
        "draft_step": Evaluator(presets, hw, DRAFT_MODEL, precision).text(
            "step_time", batch_size=1, n_chips=n
        ),
        "draft_share": said_number(
            100
            * _ratio(
                Evaluator(presets, hw, DRAFT_MODEL, precision).q(
                    "step_time", batch_size=1, n_chips=n
                ),
                step[1],
            ),
            2,
        ),
        "free_guesses": said_number(
            math.floor(
                _ratio(
                    ev.q("memory_time", batch_size=1, n_chips=n),
                    ev.q("compute_time", batch_size=1, n_chips=n),
                )
            )
        ),
    }


def _expert_reads(ev: Evaluator) -> dict:
    """How much of an MoE's routed experts a batch reads near B = E_r/k, and the batch that
    reads nearly all of them: phi_B = 1 - (1 - k/E_r)^B reaches 1 only slowly."""
    saturation = ev.q("expert_saturation_batch")
    share = ev.q("expert_read_fraction", batch_size=saturation).to("").m
    target = 0.99  # "nearly all": the batch that reads 99% of the routed experts
    per_token = 1 - ev.q("expert_read_fraction", batch_size=1).to("").m  # (1 - k/E_r)
    nearly_all = math.ceil(math.log(1 - target) / math.log(per_token))
    return {
        "share": said_number(100 * share, 3),  # per cent
        "target": said_number(100 * target),  # per cent
        "batch": said(Q_(nearly_all, "sequence")),
        "times": said_number(nearly_all / saturation.to("sequence").m, 2),
    }


def _alltoall_on(presets: Presets, ev: Evaluator, batch: int, n_chips) -> dict:
    """The experts' all-to-all of one decode step, which the chapter's roofline leaves out
    (physics audit M2): one MoE layer's all-to-all (the next chapter's equation) times the MoE
    layers, for ``batch`` on ``n_chips``. Chips past one scale-up domain send most of a layer's
    traffic over the scale-out network, at the chip's own per-direction penalty."""
    hw_id, model_id = ev.choice["hardware"], ev.choice["model"]
    hw, mdl = presets.get("hardware", hw_id), presets.get("model", model_id)
    domains = max(1.0, (n_chips / hw.scale_up_domain).to("").m)  # one domain at the least
    moe_layers = Q_(mdl.layers - mdl.get("dense_layers", 0), "layer")
    one = ev.q(
        "alltoall_time",
        batch_size=batch,
        expert_parallel_chips=n_chips,
        racks_spanned=Q_(domains, "rack"),
        scale_out_penalty=ev.q("hardware_scale_out_penalty"),
    )
    per_step = (one * moe_layers.m).to("ms")
    step = ev.q("step_time", batch_size=batch, n_chips=n_chips).to("ms")
    return {
        "chips": said(n_chips),
        "domain": said(hw.scale_up_domain),
        "domains": said_number(domains, 2),
        "inside": domains == 1.0,
        "one": said(one.to("ms")),
        "moe_layers": said(moe_layers),
        "per_step": said(per_step),
        "step": said(step),
        "share": said_number(100 * _ratio(per_step, step), 2),  # per cent of the step
    }


def _alltoall(presets: Presets, ev: Evaluator, batch: int, n_chips) -> dict:
    """The check the running example passes: its all-to-all, on its own chips inside one NVLink
    domain, against its step; and the same batch on the fewest H100s that hold it, whose
    eight-chip domains send most of the traffic off-node (why the example is the rack)."""
    check = _alltoall_on(presets, ev, batch, n_chips)
    model, precision = ev.choice["model"], ev.choice.get("precision", "fp8")
    h100 = Evaluator(presets, "h100_sxm", model, precision)
    h100_n = h100.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    return {**check, "h100": _alltoall_on(presets, h100, batch, h100_n)}


def _rack(presets: Presets, hardware: str, model: str, precision: str) -> dict:
    """The running example's chip and model figures, for the crossover worked by hand; and the
    lecture's own crossover for the same model (claims.toml), which counted its experts."""
    import tomllib

    from book.claims import CLAIMS
    from units import parse_quantity

    hw, mdl = presets.get("hardware", hardware), presets.get("model", model)
    claim = tomllib.loads(CLAIMS.read_text(encoding="utf-8"))["claim"]["deepseek_crossover"]
    return {
        "name": chip_name(hw),
        "domain": said(hw.scale_up_domain),
        "flops": said(hw.get(f"dense_flops_{precision}")),
        "bandwidth": said(hw.hbm_bandwidth),
        "total": said(mdl.params_total),
        "active": said(mdl.params_active),
        "total_b": number(mdl.params_total.to("Gparameter").m),  # bare, inside a fraction
        "active_b": number(mdl.params_active.to("Gparameter").m),
        "sparsity": said_number(_ratio(mdl.params_total, mdl.params_active), 3),
        "lecture_b_star": said(parse_quantity(claim["expected"], what="claims.toml")),
    }


def _short_step(presets: Presets, model: str, precision: str) -> dict:
    """A step much shorter than a drain time is possible (physics audit L8): the crossover batch
    on a whole NVL72 rack fills only part of its HBM, and its step is a few milliseconds. The
    period reaches a drain time when the batch grows until the weights and KV fill HBM."""
    ev = Evaluator(presets, GLOBAL_CHIP, model, precision)
    hw = presets.get("hardware", GLOBAL_CHIP)
    batch = _whole(ev.q("crossover_batch"))
    n = hw.scale_up_domain
    step = ev.q("step_time", batch_size=batch, n_chips=n).to("ms")
    used = (
        (
            ev.q("weight_fetch_time", batch_size=batch, n_chips=n)
            + ev.q("kv_fetch_time", batch_size=batch, n_chips=n)
        )
        * hw.hbm_bandwidth
        * n
        / Q_(1, "chip")
    )  # the bytes one step reads: all it holds
    total = (hw.hbm_capacity * n / Q_(1, "chip")).to("TB")
    return {
        "hardware": chip_name(hw),
        "chips": said(n),
        "batch": said(Q_(batch, "sequence")),
        "step": said(step),
        "used": said(used.to("TB")),
        "total": said(total),
        "drain": ev.text("hbm_drain_time"),
    }


def _lecture_replica(presets: Presets) -> dict:
    """The lecture's replica (a batch of about two thousand at 64 tokens per second each)
    against a lab's traffic: how small a share of a big provider one replica is."""
    import tomllib

    from book.claims import CLAIMS
    from units import parse_quantity

    claims = tomllib.loads(CLAIMS.read_text(encoding="utf-8"))["claim"]
    rate = parse_quantity(claims["throughput_64b"]["expected"], what="claims.toml")
    par = {k: p.value for k, p in presets.parameter.items()}
    batch = par["lecture_replica_batch"]
    replica = (rate * batch).to("token/s")
    return {
        "batch": said(batch),
        "rate": said(_one_sequence(rate)),
        "replica": said(replica),
        "model_rate_m": _millions(par["inference_rate"]),
        "global_rate_m": _millions(par["global_inference_rate"]),
        "model_share": said_number(_ratio(par["inference_rate"], replica)),
        "global_share": said_number(_ratio(par["global_inference_rate"], replica)),
    }


# -- one matmul on the roofline (editor's pass, issue 22) -------------------------------------
MATMUL_CASE = ("h100_sxm", "llama_3_1_70b")  # a dense model's MLP up-projection on one H100
FLOP_PER_MULTIPLY_ADD = 2  # the definition of a FLOP count: a multiply-add is two operations


def matmul_intensity(tokens: float, d: float, d_ff: float, bytes_per_value: float) -> float:
    """FLOP per byte of one matmul: ``tokens`` rows of width ``d`` times a ``d`` x ``d_ff``
    weight, reading both inputs and writing the output once: 2 B d F / (b (B d + d F + B F)).
    At BF16 (two bytes) it is about B while B is much smaller than d and d_ff.

    >>> round(matmul_intensity(1, 8192, 28672, 2), 4), round(matmul_intensity(296, 8192, 28672, 2))
    (0.9998, 283)
    """
    flops = FLOP_PER_MULTIPLY_ADD * tokens * d * d_ff
    return flops / (bytes_per_value * (tokens * d + d * d_ff + tokens * d_ff))


def matmul_points(presets: Presets) -> list[dict]:
    """The matmul at one sequence, at the dense crossover batch and in a prefill pass."""
    hw, model = MATMUL_CASE
    mdl = presets.get("model", model)
    b = presets.get("precision", "bf16").bytes_per_value.to("byte/value").m
    star = _whole(Evaluator(presets, hw, model).q("crossover_batch"))
    prefill = presets.parameter["context_length"].value.to("token/sequence").m
    labels = ("decode, one sequence", "decode at B*", "prefill")
    return [
        {
            "model": mdl.name,
            "d": mdl.d_model,
            "d_ff": mdl.d_ff,
            "tokens": tokens,
            "label": label,
            "intensity": matmul_intensity(tokens, mdl.d_model, mdl.d_ff, b),
        }
        for tokens, label in zip((1, star, prefill), labels, strict=True)
    ]


def matmul_step_bound(presets: Presets) -> float:
    """How many times memory-bound the whole decode step is at the matmul's crossover batch
    (reader blo21, fault 2): the matmul sits at the ridge, the step with its KV reads does not.

    >>> from units.presets import load
    >>> matmul_step_bound(load()) > 1
    True
    """
    ev = Evaluator(presets, *MATMUL_CASE)
    batch = _whole(ev.q("crossover_batch"))
    n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    kw = dict(batch_size=batch, n_chips=n)
    return _ratio(ev.q("memory_time", **kw), ev.q("compute_time", **kw))


def _matmul(presets: Presets) -> dict:
    low, star, high = matmul_points(presets)
    return {
        "model": low["model"],
        "d": said_number(low["d"]),
        "d_ff": said_number(low["d_ff"]),
        "one": said_number(low["intensity"], 3),
        "star_tokens": said_number(star["tokens"]),
        "star": said_number(star["intensity"], 3),
        "prefill_tokens": said_number(high["tokens"]),
        "prefill": said_number(high["intensity"], 3),
        "chip": chip_name(presets.get("hardware", MATMUL_CASE[0])),
    }


# -- what speed costs: the frontier over batch and chip count (editor's pass, issue 22) -------
FRONTIER_CASE = ("gb200_nvl72", "deepseek_v3", "fp8")  # the lecture's hardware


def speed_frontier(presets: Presets) -> dict:
    """Tokens per second per user (one over the step) against cost per million tokens, over the
    batch, for chip counts from the fewest that hold the crossover batch up to one scale-up
    domain (more chips than a domain are pipeline stages, which do not shorten a token's step).
    Fast mode (its price and speed multipliers) is placed against a standard point at B*."""
    import numpy as np

    from derivations import get

    hw_id, model, precision = FRONTIER_CASE
    hw = presets.get("hardware", hw_id)
    ev = Evaluator(presets, hw_id, model, precision)
    kw = dict(hardware=hw_id, model=model, precision=precision, presets=presets)
    domain = int(hw.scale_up_domain.to("chip").m)
    b_star = _whole(ev.q("crossover_batch"))
    fewest = math.ceil(ev.q("chips_to_fit", batch_size=b_star).to("chip").m)
    counts = [c for c in sorted({fewest, 2 * fewest, 4 * fewest, domain}) if c <= domain]
    batches = np.unique(np.round(np.geomspace(1, 4 * b_star, 160)))
    curves = []
    for n in counts:
        chips = Q_(n, "chip")
        fits = get("chips_to_fit").sweep("batch_size", batches, **kw).to("chip").m <= n
        b = batches[fits]
        step = get("step_time").sweep("batch_size", b, n_chips=chips, **kw).to("s").m
        cost = get("cost_per_token").sweep("batch_size", b, n_chips=chips, **kw)
        curves.append({"chips": n, "batch": b, "speed": 1 / step, "cost": cost.to("USD/Mtoken").m})
    # the standard offer: B* on the whole domain; Fast mode: its multipliers on that point
    par = presets.parameter
    price, speed = (
        par[k].value.to("").m for k in ("fast_price_multiplier", "fast_speed_multiplier")
    )
    full = curves[-1]
    chips = Q_(domain, "chip")
    t0 = ev.q("step_time", batch_size=b_star, n_chips=chips).to("s").m
    c0 = ev.q("cost_per_token", batch_size=b_star, n_chips=chips).to("USD/Mtoken").m
    fast_speed, fast_cost = speed / t0, price * c0

    at = _fast_batch(ev, b_star, chips, t0 / speed)
    frontier_cost = ev.q("cost_per_token", batch_size=at, n_chips=chips).to("USD/Mtoken").m
    return {
        "rule": _fast_from_rule(ev, speed),
        "curves": curves,
        "hardware": chip_name(hw),
        "model": presets.get("model", model).name,
        "standard": (1 / t0, c0),
        "fast": (fast_speed, fast_cost),
        "frontier_cost": frontier_cost,
        "frontier_batch": at,
        "b_star": b_star,
        "fastest": (float(full["speed"].max()), float(full["cost"][np.argmax(full["speed"])])),
        "floors": _fast_end_floors(presets, ev, at, chips),
    }


def _fast_from_rule(ev: Evaluator, speed: float) -> dict:
    """Fast mode from the other standard (reader blo21, fault 1): the batch rule's point, the
    turn on the fewest chips that hold it. Its speed times Fast mode's multiplier, solved on the
    same chips: how many times smaller the batch, and how many times the cost."""
    batch = _rule_batch(ev)
    n = ev.detailed("cost_per_token", batch_size=batch).inputs["n_chips"].value
    t0 = ev.q("step_time", batch_size=batch, n_chips=n).to("s").m
    at = _fast_batch(ev, batch, n, t0 / speed)
    c0, c1 = (ev.q("cost_per_token", batch_size=b, n_chips=n) for b in (batch, at))
    return {
        "batch": batch,
        "chips": n,
        "speed": Q_(1 / t0, "token/s"),
        "cost": c0,
        "fast_batch": at,
        "smaller": batch / at,
        "over": _ratio(c1, c0),
    }


def _fast_batch(ev: Evaluator, b_star: int, chips, step: float) -> float:
    """The frontier at Fast mode's speed, solved rather than read off a grid: on a fixed number of
    chips the step grows with the batch, so the largest batch whose step is at most ``step``
    seconds is the cheapest point at least that fast (bisection on the continuous batch)."""
    lo, hi = 1.0, float(b_star)
    for _ in range(60):
        mid = (lo + hi) / 2
        fits = ev.q("step_time", batch_size=mid, n_chips=chips).to("s").m <= step
        lo, hi = (mid, hi) if fits else (lo, mid)
    return lo


def fast_mode_on_roofline(presets: Presets) -> dict:
    """Fast mode's speed on the running example's whole NVLink domain: how many times smaller
    than B* the batch is, and how many times the standard offer's cost (the long-context chapter
    cites it beside the price-tracks-cost reading).

    >>> from units.presets import load
    >>> r = fast_mode_on_roofline(load())
    >>> 6 < r["smaller"] < 7 and 2 < r["cost"] < 3
    True
    """
    hw_id, model, precision = FRONTIER_CASE
    ev = Evaluator(presets, hw_id, model, precision)
    chips = presets.get("hardware", hw_id).scale_up_domain
    b_star = _whole(ev.q("crossover_batch"))
    t0 = ev.q("step_time", batch_size=b_star, n_chips=chips).to("s").m
    speed = presets.parameter["fast_speed_multiplier"].value.to("").m
    at = _fast_batch(ev, b_star, chips, t0 / speed)
    cost = _ratio(
        ev.q("cost_per_token", batch_size=at, n_chips=chips),
        ev.q("cost_per_token", batch_size=b_star, n_chips=chips),
    )
    return {"batch": at, "smaller": b_star / at, "cost": cost}


def _fast_end_floors(presets: Presets, ev: Evaluator, fast_batch: float, chips) -> dict:
    """Two floors the roofline leaves out at the fast end (reader bl18, fault 2). Expert
    placement: with experts spread over the chips, one sequence's k routed experts of a layer
    sit on at most k chips, so each layer's routed read takes at least one expert's bytes over
    one chip's bandwidth, however many chips the domain has. Collective latency: each MoE layer
    sends tokens to their experts and back, two all-to-alls in series with the layer, none
    faster than the smallest collective measured over NVLink. And the all-to-all's own traffic
    at Fast mode's batch."""
    mdl = presets.get("model", ev.choice["model"])
    hw = presets.get("hardware", ev.choice["hardware"])
    moe_layers = mdl.layers - mdl.get("dense_layers", 0)
    value_bytes = ev.detailed("cost_per_token", batch_size=1).inputs["weight_bytes_per_value"]
    one_expert = ev.q("routed_expert_params") / mdl.experts_routed  # one expert, every layer
    expert = (one_expert * value_bytes.value * Q_(1, "chip") / hw.hbm_bandwidth).to(
        "ms"
    )  # one expert's bytes per MoE layer, each on its own chip
    latency = presets.parameter["collective_latency_floor"].value
    collectives = (2 * moe_layers * latency).to("ms")
    spread = ev.q("step_time", batch_size=1, n_chips=chips).to("ms")
    floor = max(spread, expert) + collectives
    fast_step = ev.q("step_time", batch_size=fast_batch, n_chips=chips).to("ms")
    alltoall = _alltoall_on(presets, ev, fast_batch, chips)
    return {
        "experts_active": said_number(mdl.experts_active),
        "spread": said(spread),
        "expert": said(expert),
        "expert_over_spread": said_number(_ratio(expert, spread), 2),
        "latency": said(latency.to("microsecond")),
        "collectives_count": said_number(2 * moe_layers),
        "moe_layers": said_number(moe_layers),
        "collectives": said(collectives),
        "floor": said(floor),
        "bound_speed": said((Q_(1, "token") / floor).to("token/s")),
        "bound_speed_m": (Q_(1, "token") / floor).to("token/s").m,  # for the figure
        "fast_step": said(fast_step),
        "collectives_share": said_number(100 * _ratio(collectives, fast_step), 2),
        "alltoall": alltoall["per_step"],
        "alltoall_share": alltoall["share"],
    }


def _speed(presets: Presets) -> dict:
    f = speed_frontier(presets)
    (s0, c0), (s1, c1) = f["standard"], f["fast"]
    fastest_speed, fastest_cost = f["fastest"]
    per_user = "token/s"
    return {
        "hardware": f["hardware"],
        "model": f["model"],
        "chips": said_number(f["curves"][-1]["chips"]),
        "fewest": said_number(f["curves"][0]["chips"]),
        "b_star": said(Q_(f["b_star"], "sequence")),
        "standard_speed": said(Q_(s0, per_user)),
        "standard_cost": said(Q_(c0, "USD/Mtoken")),
        "fast_speed": said(Q_(s1, per_user)),
        "fast_cost": said(Q_(c1, "USD/Mtoken")),
        "frontier_cost": said(Q_(f["frontier_cost"], "USD/Mtoken")),
        "frontier_batch": said_number(f["frontier_batch"], 2),  # "870", a continuous solve
        "frontier_smaller": said_number(f["b_star"] / f["frontier_batch"], 2),
        "floors": f["floors"],
        "frontier_over_standard": said_number(f["frontier_cost"] / c0, 2),
        "markup": said_number(c1 / f["frontier_cost"], 2),
        "rule": {
            "batch": said_number(f["rule"]["batch"]),
            "chips": said(f["rule"]["chips"]),
            "speed": said(f["rule"]["speed"]),
            "cost": said(f["rule"]["cost"]),
            "fast_batch": said_number(f["rule"]["fast_batch"], 2),
            "smaller": said_number(f["rule"]["smaller"], 2),
            "over": said_number(f["rule"]["over"], 2),
            "markup": said_number(c1 / c0 / f["rule"]["over"], 2),  # the list price over it
        },
        "fastest_speed": said(Q_(fastest_speed, per_user)),
        "fastest_cost": said(Q_(fastest_cost, "USD/Mtoken")),
    }


# -- exercises that carry the chapter to another chip or model (editor's pass, issue 22) -----
SLOW_CASE = ("gb200_nvl72", "kimi_k2", "fp8")
FAST_CASE = ("b200", "llama_3_1_8b", "bf16")
FLEET_CASE = ("gb300_nvl72", "deepseek_v3", "fp8")


def _exercises(presets: Presets) -> dict:
    par = {k: p.value for k, p in presets.parameter.items()}
    high = par["practice_batch_high"].to("").m

    # a Slow mode for another model on the lecture's rack: cost at B*, at 3 B*, and the floor
    ev = Evaluator(presets, *SLOW_CASE)
    star = _whole(ev.q("crossover_batch"))
    slow = _whole(ev.q("crossover_batch") * high)
    at_star, at_slow = (ev.q("cost_per_token", batch_size=b) for b in (star, slow))
    floor = ev.q("compute_cost_floor")
    slow_n = ev.detailed("cost_per_token", batch_size=slow).inputs["n_chips"].value
    slow_turns = _turn(ev, star, slow_n) is not None
    star_n = ev.detailed("cost_per_token", batch_size=star).inputs["n_chips"].value
    # the weights' share of a B* step: a batch three times larger cuts it to a third per token
    weight_share = _ratio(
        ev.q("weight_fetch_time", batch_size=star, n_chips=star_n),
        ev.q("step_time", batch_size=star, n_chips=star_n),
    )
    slow_hw, slow_model = presets.get("hardware", SLOW_CASE[0]), presets.get("model", SLOW_CASE[1])

    # Fast mode on a small dense model on one chip: how fast can one sequence go?
    fe = Evaluator(presets, *FAST_CASE)
    f_star = _whole(fe.q("crossover_batch"))
    f_n = fe.detailed("cost_per_token", batch_size=f_star).inputs["n_chips"].value
    step = {b: fe.q("step_time", batch_size=b, n_chips=f_n) for b in (1, f_star)}
    cost = {b: fe.q("cost_per_token", batch_size=b, n_chips=f_n) for b in (1, f_star)}
    speedup = _ratio(step[f_star], step[1])
    kv_share = _ratio(fe.q("kv_fetch_time", batch_size=f_star, n_chips=f_n), step[f_star])
    fast_speed = par["fast_speed_multiplier"].to("").m

    # a lab's whole traffic on a chip with more HBM
    ge = Evaluator(presets, *FLEET_CASE)
    g_batch = _rule_batch(ge)
    g_n = ge.detailed("cost_per_token", batch_size=g_batch).inputs["n_chips"].value
    g_step = ge.q("step_time", batch_size=g_batch, n_chips=g_n)
    replica = (Q_(g_batch, "token") / g_step).to("token/s")
    replicas = math.ceil(_ratio(par["global_inference_rate"], replica))
    gb200 = Evaluator(presets, GLOBAL_CHIP, *FLEET_CASE[1:])
    gb200_n = gb200.detailed("cost_per_token", batch_size=g_batch).inputs["n_chips"].value
    g_hw = presets.get("hardware", FLEET_CASE[0])
    held = (ge.q("chips_to_fit", batch_size=g_batch) * g_hw.hbm_capacity / Q_(1, "chip")).to("TB")
    weights = ge.q("weight_memory").to("GB")
    return {
        "slow": {
            "model": presets.get("model", SLOW_CASE[1]).name,
            "hardware": chip_name(presets.get("hardware", SLOW_CASE[0])),
            "star": said(Q_(star, "sequence")),
            "slow": said(Q_(slow, "sequence")),
            "cost_star": said(at_star),
            "cost_slow": said(at_slow),
            "saving": said_number(100 * (1 - _ratio(at_slow, at_star)), 2),
            "floor": said(floor),
            "over_floor": said_number(_ratio(at_slow, floor), 2),
            "total": said(slow_model.params_total.to("Tparameter")),
            "active_b": number(slow_model.params_active.to("Gparameter").m),
            "active": said(slow_model.params_active),
            "flops": said(slow_hw.dense_flops_fp8),
            "bandwidth": said(slow_hw.hbm_bandwidth),
            # exact: the answer multiplies them out (312.5 x 31.25 = 9,766)
            "sparsity": number(_ratio(slow_model.params_total, slow_model.params_active)),
            "per_byte": number(ev.q("dense_crossover_batch").to("sequence").m),
            "turns": slow_turns,
            "weight_share": said_number(100 * weight_share, 2),  # per cent of the B* step
            "weight_saving": said_number(100 * weight_share * (1 - 1 / high), 2),
        },
        "fast": {
            "model": presets.get("model", FAST_CASE[1]).name,
            "hardware": chip_name(presets.get("hardware", FAST_CASE[0])),
            "chips": said(f_n),
            "star": said(Q_(f_star, "sequence")),
            "step_star": said(step[f_star]),
            "step_1": said(step[1]),
            "speedup": said_number(speedup, 2),
            "price": said_number(_ratio(cost[1], cost[f_star]), 2),
            "kv_share": said_number(100 * kv_share, 2),  # per cent of the crossover step
            "batch_ratio": said_number(f_star),  # the batch falls from B* to one sequence
            "can": speedup >= fast_speed,
        },
        "fleet": {
            "hardware": chip_name(presets.get("hardware", FLEET_CASE[0])),
            "model": presets.get("model", FLEET_CASE[1]).name,
            "batch": said(Q_(g_batch, "sequence")),
            "chips": said(g_n),
            "gb200_chips": said(gb200_n),
            "capacity": said(g_hw.hbm_capacity),
            "held": said(held),
            "weights": said(weights),
            "kv": said((held - weights).to("TB")),
            "step": said(g_step),
            "compute": said(ge.q("compute_time", batch_size=g_batch, n_chips=g_n)),
            "memory": said(ge.q("memory_time", batch_size=g_batch, n_chips=g_n)),
            "drain": ge.text("hbm_drain_time"),
            "used": said_number(
                100 * _ratio(ge.q("chips_to_fit", batch_size=g_batch), g_n), 2
            ),  # per cent of the replica's HBM the weights and caches fill
            "replica": said(replica),
            "rate_m": _millions(par["global_inference_rate"]),
            "replicas": said_number(replicas),
            "chips_total": said((g_n * replicas).to("chip")),
        },
    }
