"""A provider's token rate grows by replicas: each rack's rate is its batch over its step."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    clear_of_rounding,
    distinct_mistakes,
    evaluate,
    lands_clear,
    require,
    shown,
    whole_count_tolerance,
)
from book.problem_bank.batching._figures import (
    cache_derived,
    cache_given,
    chip_name,
    figures,
    size,
    tokens,
    usable_share,
    weight_bytes,
)
from units import Q_

KIND = "multi"
TITLE = "How many racks for a frontier model's traffic?"
USES = ("weight_fetch_time", "kv_fetch_time", "compute_time", "step_time", "throughput")

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "llama_3_1_405b")
RACKS = ("gb200_nvl72", "gb300_nvl72")
BATCHES = (1024, 2048, 4096)
CONTEXTS = (4096, 8192, 16384)
SHARES = (0.02, 0.03, 0.05, 0.08, 0.1, 0.15, 0.2)  # of the lecture's rate for one model
# the racks, unrounded, keep the bank's design margin (5%) from a whole number, so a student
# who rounds a step differently lands on the same count (reader 14: 8.19 racks was 2.3% above
# 8); above ten racks no ratio keeps 5% from both neighbours
FEWEST, MOST = 3, 10
EDGE = 0.05


def rack_rate(case):
    """Tokens per second of one rack, and its step time."""
    return evaluate("throughput", **case).to("token/s"), evaluate("step_time", **case).to("ms")


def draw(rng, presets) -> Draw:
    one_model = presets.parameter["inference_rate"].value.to("token/s")
    while True:  # redraw until the racks, unrounded, are clear of a whole number
        model, hardware = rng.choice(MODELS), rng.choice(RACKS)
        chips = presets.get("hardware", hardware).scale_up_domain
        case = dict(
            hardware=hardware,
            model=model,
            precision="fp8",
            n_chips=chips,
            batch_size=Q_(rng.choice(BATCHES), "sequence"),
            context_length=Q_(rng.choice(CONTEXTS), "token/sequence"),
            presets=presets,
        )
        share = rng.choice(SHARES)
        target = shown(one_model * share, 2)  # as the statement prints it
        raw = (target / rack_rate(case)[0]).to("").m
        if FEWEST <= raw <= MOST and clear_of_rounding(raw, EDGE):
            break
    f = figures(**case)
    batch, context = case["batch_size"], case["context_length"]
    weights = evaluate("weight_fetch_time", detailed=True, **case)
    dense = weights.inputs["routed_weight_share"].value.m == 0
    require(
        dense or weights.inputs["expert_read_fraction"].value.m > 0.99,
        "a batch this large reads every expert",
    )
    weights = weights.value.to("ms")
    kv = evaluate("kv_fetch_time", **case).to("ms")
    compute = evaluate("compute_time", **case).to("ms")
    held = weight_bytes(f) + evaluate("kv_cache_per_batch", **case).to("GB")
    hbm = evaluate("scaleup_memory", **case).to("TB")
    share = usable_share(presets)[0]
    require(held < share * hbm, "the HBM an engine fills holds the weights and the caches")
    rate, step = rack_rate(case)
    racks = Q_(math.ceil(raw), "rack")
    binds = "memory" if kv + weights >= compute else "compute"
    rack = chip_name(presets, hardware)
    name = presets.get("model", model).name

    if dense:
        params = f"{quantity(f['n_total'], 4)}, dense"
        reads = "the model is dense, so every step reads every weight once, all"
    else:
        params = (
            f"{quantity(f['n_total'], 4)} in all, {quantity(f['n_active'], 3)} active per token"
        )
        reads = "at this batch every expert is hit, so a step reads all"
    text = (
        f"A lab must serve {quantity(target, 2)} of {name} ({params}). Each replica is one "
        f"{rack} rack of "
        f"{quantity(chips)}, each GPU with {quantity(f['hbm_capacity'], 3)} of HBM at "
        f"{quantity(f['mem_bandwidth'], 3)} and {quantity(f['flops'].to('PFLOP/s'), 3)} of dense "
        f"FP8 math. Weights, KV cache and math are in FP8. A replica runs a batch of "
        f"{quantity(batch)}, each with {tokens(context)} of context; "
        f"{cache_given(model, presets, f['kv_bytes_per_token'])}, and attention "
        f"costs {quantity(f['attention_flops_per_token'].to('MFLOP/token'), 4)} of context for "
        "each new token. How many racks does the lab need?"
    )
    per_token = (
        2 * f["n_active"] * Q_(1, "FLOP/parameter")
        + f["attention_flops_per_token"] * context * Q_(1, "sequence")
    ).to("GFLOP")
    solution = (
        f"Weight reads: {reads} {size(weight_bytes(f))} (one byte per weight) over "
        f"{quantity(chips)} × "
        f"{quantity(f['mem_bandwidth'], 3)}: {quantity(weights, 3)}.",
        f"KV reads: a token of context caches "
        f"{cache_derived(model, presets, f['kv_bytes_per_token'], f['kv_bytes_per_value'])}"
        f"; {number(batch.m)} caches of {tokens(context)} take {quantity(kv, 3)}.",
        f"Multiplies: each token costs two FLOPs per {'' if dense else 'active '}parameter "
        "plus its attention, "
        f"{quantity(per_token, 3)}; for the batch on the rack's FP8 rate that is "
        f"{quantity(compute, 3)}. The reads take {quantity(weights + kv, 3)}, so the step is "
        f"{binds}-bound: {quantity(step, 3)}.",
        f"A rack makes {number(batch.m)} tokens per step: {quantity(rate, 3)}. For "
        f"{quantity(target, 2)} that is {number(raw, 4)} racks; rounded up, "
        f"**{quantity(racks)}** ({quantity((racks * chips / Q_(1, 'rack')).to('chip'))}).",
    )
    mistakes = []
    no_kv = (Q_(1, "token/sequence") * batch / max(weights, compute)).to("token/s")
    mistakes.append(
        Mistake(
            Q_(math.ceil((target / no_kv).to("").m), "rack"),
            "You left out the KV reads: every conversation's cache is read every step "
            f"({quantity(kv, 3)} here).",
        )
    )
    drain = evaluate("hbm_drain_time", **case).to("ms")
    by_drain = (Q_(1, "token/sequence") * batch / drain).to("token/s")
    mistakes.append(
        Mistake(
            Q_(math.ceil((target / by_drain).to("").m), "rack"),
            "You took the step to be one HBM drain time: that holds only when the batch fills "
            "the HBM, and this one leaves most of the rack's memory empty.",
        )
    )
    slip = dict(case, weight_precision="bf16", kv_precision="bf16")
    slipped, _ = rack_rate(slip)
    mistakes.append(
        Mistake(
            Q_(math.ceil((target / slipped).to("").m), "rack"),
            "FP8 stores one byte per value, not two (weights and KV cache alike).",
        )
    )
    short = dict(case, context_length=Q_(1, "token/sequence"))  # attention's FLOPs vanish
    weights_only = evaluate("compute_time", **short).to("ms")
    no_attention = (Q_(1, "token/sequence") * batch / max(weights + kv, weights_only)).to("token/s")
    mistakes.append(
        Mistake(
            Q_(math.ceil((target / no_attention).to("").m), "rack"),
            "You left out attention's FLOPs: at this context they are a large part of each "
            "token's multiplies.",
        )
    )
    tolerance = whole_count_tolerance(racks.m, 0.03)
    require(lands_clear(Q_(raw, "rack"), racks, tolerance), "the quotient lands clear")
    mistakes.append(  # reader 22: the quotient itself got "check your working"
        Mistake(
            Q_(raw, "rack"),
            f"That is the quotient, {number(raw, 3)} racks: a rack is whole, so round it up.",
        )
    )
    if racks.m > 1:  # reader 26: the racks rounded down, short of the target
        down = Q_(racks.m - 1, "rack")
        require(all(m.value != down for m in mistakes), "rounding down gives a count of its own")
        mistakes.append(
            Mistake(
                down,
                f"You rounded {number(raw, 3)} racks down: {quantity(down)} make less than the "
                f"target, so round up to {quantity(racks)}.",
            )
        )
    every_weight = dict(case, n_active=f["n_total"])
    mistakes.append(
        Mistake(
            Q_(math.ceil((target / rack_rate(every_weight)[0]).to("").m), "rack"),
            "You multiplied by every parameter: a token's multiplies use only the active ones.",
        )
    )
    # the hint's judgment, the caches' reads in the step, must change the count: redraw where
    # leaving them out still gives the answer (reader 20), never drop the slip
    require(mistakes[0].value != racks, "leaving out the KV reads changes the count")
    return Draw(
        text=text,
        answer=racks,
        solution=solution,
        tolerance=tolerance,
        mistakes=distinct_mistakes(mistakes, racks, tolerance),
        hint="Find one rack's step time (the larger of its reads and its multiplies); its rate "
        "is the batch over that step.",
    )
