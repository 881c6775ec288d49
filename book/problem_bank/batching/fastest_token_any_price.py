"""A small batch of an MoE: each user's speed falls fast, for every user adds experts to read."""

from __future__ import annotations

import math

from book.format import number, quantity, superscript
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require
from book.problem_bank.batching._figures import (
    figures,
    flop_rate,
    kv_shape,
    kv_values,
    size,
    tokens,
)
from units import Q_

# the chip is one the chapter teaches (the student brings its HBM bandwidth and FP8 rate), and
# the even spread is the best case: a rough figure, graded within a factor narrow enough that
# the lesson's slip (every token's experts distinct) lands twice the window away (reader 15)
KIND = "estimate"
TITLE = "How fast can a few users talk to an MoE?"
USES = ("expert_read_fraction", "weight_fetch_time", "kv_fetch_time", "step_time")
LECTURE = "15:16"

SETUPS = (  # (model, chip, chips): the chapter's chips (H100, B200), holding the model at FP8
    ("deepseek_v3", "b200", 8),
    ("kimi_k2", "b200", 8),
    ("qwen3_235b_a22b", "h100_sxm", 4),
    ("qwen3_235b_a22b", "b200", 2),
)
MLA = ("deepseek_v3", "kimi_k2")  # a latent cache: its bytes per token are given, not derived
BATCHES = (8, 12, 16, 24, 32, 48)
FACTOR = 1.1  # the slips below sit outside FACTOR² (×1.21) either way; givens print to 3 figures
SPREAD = (0.4, 1.5)  # batch × experts per token / experts: tokens overlap, not every expert hit


def scenario(rng, presets):
    while True:
        model, hardware, chips = rng.choice(SETUPS)
        spec = presets.get("model", model)
        batch = rng.choice(BATCHES)
        if SPREAD[0] <= batch * spec.experts_active / spec.experts_routed <= SPREAD[1]:
            return dict(
                hardware=hardware,
                model=model,
                precision="fp8",
                n_chips=Q_(chips, "chip"),
                context_length=Q_(rng.choice((1024, 2048, 4096)), "token/sequence"),
                batch_size=Q_(batch, "sequence"),
                presets=presets,
            )


def draw(rng, presets) -> Draw:
    case = scenario(rng, presets)
    model, n, context = case["model"], case["n_chips"], case["context_length"]
    spec = presets.get("model", model)
    k, experts, b = spec.experts_active, spec.experts_routed, case["batch_size"].m
    f = figures(**case)
    total, active = f["n_total"].to("Gparam"), f["n_active"].to("Gparam")
    bandwidth, kv = f["mem_bandwidth"], f["kv_bytes_per_token"].to("kB/token")
    per_value = f["weight_bytes_per_value"] * Q_(1, "value/parameter")
    step = evaluate("step_time", **case).to("ms")
    weights = evaluate("weight_fetch_time", **case).to("ms")
    kv_time = evaluate("kv_fetch_time", **case).to("ms")
    compute = evaluate("compute_time", **case).to("ms")
    require(compute < step / 3, "a small batch is memory-bound")
    speed = (Q_(1, "token/sequence") / step).to("token/s/sequence")
    # the student's way: the split from total and active, the experts the batch touches
    routed = ((total - active) / (1 - k / experts)).to("Gparam")
    always = (total - routed).to("Gparam")
    share = evaluate("expert_read_fraction", **case).to("").m
    require(abs(share - (1 - (1 - k / experts) ** b)) < 1e-9, "the chance every token skips")
    read = ((always + share * routed) * per_value).to("GB")
    mine = read / (n * bandwidth) + kv_time
    require(abs((mine / step).to("").m - 1) < 0.01, "the split from total and active agrees")
    caches = (b * Q_(1, "sequence") * context * kv).to("GB")
    one = dict(case, batch_size=Q_(1, "sequence"))
    alone = (Q_(1, "token/sequence") / evaluate("step_time", **one)).to("token/s/sequence")
    chip, name = presets.get("hardware", case["hardware"]).name, spec.name
    shared = (
        ", beside a shared expert that runs for every token"
        if spec.fields.get("experts_shared")
        else ""
    )
    per = Q_(1, "token")
    if model in MLA:
        cache = f"its latent KV cache takes {quantity(kv * per, 4)} per token of context"
        cache_step = f"{tokens(context)} × {quantity(kv, 4)}"
    else:
        cache = f"its attention has {kv_shape(model, presets)}"
        cache_step = f"{tokens(context)} × {kv_values(model, presets)} at one byte"
    naive = b * k / experts
    overlap = (
        f"not {number(b)} × {number(k)}/{number(experts)} = {number(naive, 3)}: tokens share "
        "experts"
        if naive < 1
        else f"not all, though {number(b)} × {number(k)} routings outnumber the experts"
    )
    attention = (f["attention_flops_per_token"] * per).to("MFLOP")

    text = (
        f"{name} has {quantity(total, 3)}, of which {quantity(active, 3)} are active per token; "
        f"each MoE layer has {number(experts)} routed experts, and a token is routed to "
        f"{number(k)} of them{shared}. You serve it in FP8 (weights and KV cache) on {number(n.m)} "
        f"{chip} chips (the chapter's chip: bring its HBM bandwidth and dense FP8 rate), every "
        "layer's experts spread evenly "
        "over the chips so that each chip reads an equal share of what a step reads (the best "
        f"case). {number(b)} users talk to it at once, each with {tokens(context)} of context; "
        f"{cache}, and attention costs {quantity(attention, 3)} per token of context for each "
        "new token. Each token picks its experts independently and uniformly. Roughly how many "
        f"tokens per second does each user get? Any answer within a factor of {FACTOR:g} is "
        "accepted."
    )
    solution = (
        f"The weights split into those every token reads (A) and the routed experts (R): "
        f"A + R = {quantity(total, 3)} and A + R × {number(k)}/{number(experts)} = "
        f"{quantity(active, 3)}, so R = ({quantity(total, 3)} − {quantity(active, 3)}) / "
        f"(1 − {number(k)}/{number(experts)}) = {quantity(routed, 4)} and A = "
        f"{quantity(always, 3)}.",
        f"An expert is read if any of the {number(b)} tokens picks it: all skip it with "
        f"probability ({number(experts - k)}/{number(experts)}){superscript(b)}, so the step "
        f"reads {number(share, 3)} of the routed experts ({overlap}).",
        f"Weights read: {quantity(always, 3)} + {number(share, 3)} × {quantity(routed, 4)} at "
        f"one byte each, {size(read)}, over {quantity(n)} × {quantity(bandwidth.to('TB/s'), 3)} "
        "(each chip's HBM bandwidth): "
        f"{quantity(weights, 3)}. Caches: {number(b)} × {cache_step} = {size(caches)}, "
        f"{quantity(kv_time.to('µs'), 3)}. The multiplies, attention's included, take "
        f"{quantity(compute.to('µs'), 2)} at {flop_rate(f['flops'])} of dense FP8 math per "
        f"chip: the step is memory-bound, {quantity(step, 3)}.",
        f"One token per user per step: **{quantity(speed, 3)}**, against "
        f"{quantity(alone, 3)} for a user alone (who reads only the active weights): "
        f"{number(b)} users cost each of them a factor of {number((alone / speed).to('').m, 2)}.",
    )

    def at(seconds):
        return (Q_(1, "token/sequence") / seconds).to("token/s/sequence")

    all_weights = (total * per_value / (n * bandwidth)).to("ms")
    mistakes = [
        Mistake(alone, "That is one user's speed alone: each token of the batch adds experts."),
        Mistake(at(all_weights + kv_time), "You read every expert: a small batch touches few."),
        Mistake(speed / 2, "FP8 stores one byte per value, not two."),
        Mistake(at(weights), "The step also reads every user's KV cache."),
    ]
    if b * k < experts:
        distinct = (always + b * k / experts * routed) * per_value / (n * bandwidth)
        mistakes.append(
            Mistake(
                at(distinct + kv_time),
                "You counted every token's experts as distinct: tokens share experts.",
            )
        )

    def clear(value) -> bool:  # outside FACTOR² either way: twice the window, in log space
        return abs(math.log((value / speed).to("").m)) >= 2 * math.log(FACTOR)

    # the lesson is that tokens share experts: keep only scenarios where that shows clearly
    if b * k < experts:
        require(clear(mistakes[-1].value), "sharing experts changes the answer clearly")
    # a slip within twice the window cannot be told from a rounded answer: graded wrong, unnamed
    mistakes = [m for m in mistakes if clear(m.value)]
    return Draw(
        text=text,
        answer=speed,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(mistakes, speed, FACTOR, factor=True),
        hint="Split the weights into those every token reads and the routed experts, using "
        "the total and the active counts.",
    )
