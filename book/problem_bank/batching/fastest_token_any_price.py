"""A small batch of an MoE: each user's speed falls fast, for every user adds experts to read."""

from __future__ import annotations

from book.format import number, quantity, superscript
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lands_clear,
    require,
    shown,
    slips_apart,
)
from book.problem_bank.batching._figures import (
    figures,
    flop_rate,
    kv_shape,
    kv_values,
    size,
    tokens,
    usable_share,
)
from units import Q_

# every figure is given and the even spread is the best case: an exact chain from the printed
# figures, graded within 3% (reader 17: a "factor of 1.1" was an exact calculation in disguise)
KIND = "multi"
TITLE = "How fast can a few users talk to an MoE?"
USES = ("expert_read_fraction", "weight_fetch_time", "kv_fetch_time", "step_time")
LECTURE = "15:16"

SETUPS = (  # (model, chip, chips): the chapter's chips (H100, B200), holding the model at FP8
    ("deepseek_v3", "b200", 8),
    ("kimi_k2", "b200", 8),
    ("qwen3_235b_a22b", "h100_sxm", 4),
    ("qwen3_235b_a22b", "b200", 4),  # not 2: one chip's bandwidth would halve it, as two bytes do
)
MLA = ("deepseek_v3", "kimi_k2")  # a latent cache: its bytes per token are given, not derived
BATCHES = (8, 12, 16, 24, 32, 48)
TOLERANCE = 0.03  # the slips below sit at least twice this from the answer; givens print to 3
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
    # the figures as the statement prints them: the student's answer follows from them
    total, active = shown(f["n_total"].to("Gparam")), shown(f["n_active"].to("Gparam"))
    bandwidth = shown(f["mem_bandwidth"].to("TB/s"))
    kv = shown(f["kv_bytes_per_token"].to("kB/token"), 4)
    per_value = f["weight_bytes_per_value"] * Q_(1, "value/parameter")
    step = evaluate("step_time", **case).to("ms")
    compute = evaluate("compute_time", **case).to("ms")
    # the student's way: the split from total and active, the experts the batch touches
    routed = ((total - active) / (1 - k / experts)).to("Gparam")
    always = (total - routed).to("Gparam")
    share = evaluate("expert_read_fraction", **case).to("").m
    require(abs(share - (1 - (1 - k / experts) ** b)) < 1e-9, "the chance every token skips")
    caches = (b * Q_(1, "sequence") * context * kv).to("GB")
    kv_time = (caches / (n * bandwidth)).to("ms")

    def at(seconds):
        return (Q_(1, "token/sequence") / seconds).to("token/s/sequence")

    def reading(fraction, shared=always, experts=routed):
        """The step's reads, in time, when ``fraction`` of the ``experts`` params are read."""
        return ((shared + fraction * experts) * per_value / (n * bandwidth)).to("ms")

    weights = reading(share)
    read = (weights * n * bandwidth).to("GB")
    mine = weights + kv_time
    require(abs((mine / step).to("").m - 1) < 0.01, "the split from total and active agrees")
    require(compute < mine / 3, "a small batch is memory-bound")
    speed = at(mine)  # from the figures as printed, as the student works it
    alone = at(reading(k / experts) + kv_time / b)
    chip, name = presets.get("hardware", case["hardware"]).name, spec.name
    held = (total * per_value + caches).to("GB")  # the model and the caches, at FP8
    room = (usable_share(presets)[0] * n * f["hbm_capacity"]).to("GB")
    require(held <= room, "the model and caches fit in the HBM an engine fills")
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
        f"{number(k)} of them{shared}. You serve it in FP8 (weights and KV cache) on "
        f"{number(n.m)} {chip} chips ({quantity(bandwidth, 3)} of HBM bandwidth and "
        f"{flop_rate(f['flops'])} of dense FP8 math each), every layer's experts spread evenly "
        "over the chips so that each chip reads an equal share of what a step reads (the best "
        f"case). {number(b)} users talk to it at once, each with {tokens(context)} of context; "
        f"{cache}, and attention costs {quantity(attention, 3)} per token of context for each "
        "new token. Each token picks its experts independently and uniformly. How many tokens per "
        "second does each user get?"
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
        f"one byte each, {size(read)}, over {quantity(n)} × {quantity(bandwidth, 3)} "
        "(each chip's HBM bandwidth): "
        f"{quantity(weights, 3)}. Caches: {number(b)} × {cache_step} = {size(caches)}, "
        f"{quantity(kv_time.to('µs'), 3)}. The multiplies, attention's included, take "
        f"{quantity(compute.to('µs'), 2)} at {flop_rate(f['flops'])} of dense FP8 math per "
        f"chip: the step is memory-bound, {quantity(mine, 3)}.",
        f"One token per user per step: **{quantity(speed, 3)}**, against "
        f"{quantity(alone, 3)} for a user alone (who reads only the active weights and one "
        "cache): "
        f"{number(b)} users cost each of them a factor of {number((alone / speed).to('').m, 2)}.",
    )

    all_weights = reading(1, Q_(0, "Gparam"), total)
    mistakes = [
        Mistake(alone, "That is one user's speed alone: each token of the batch adds experts."),
        Mistake(at(all_weights + kv_time), "You read every expert: a small batch touches few."),
        Mistake(speed / 2, "FP8 stores one byte per value, not two."),
        Mistake(at(weights), "The step also reads every user's KV cache."),
    ]
    # one chip's bandwidth: every read takes n times as long (problems-reader22); never two
    # chips (SETUPS), where it would land on the two-byte slip's value
    if n.m > 2:
        mistakes.append(
            Mistake(
                speed / n.m,
                f"You read at one chip's bandwidth: the weights and caches are spread over all "
                f"{number(n.m)} chips, which read their shares at the same time.",
            )
        )
    if b * k < experts:
        mistakes.insert(
            0,
            Mistake(
                at(reading(b * k / experts) + kv_time),
                "You counted every token's experts as distinct: tokens share experts.",
            ),
        )
    every = 1 - (1 - (active / total).to("").m) ** b  # every parameter routed, active/total each
    all_routed = at(reading(every, Q_(0, "Gparam"), total) + kv_time)
    mistakes.append(
        Mistake(
            all_routed,
            "You took each parameter as read with the active share as its chance: a routed "
            "expert is read if any token picks it (k of E each), and the shared weights by "
            "every token; split them off first.",
        )
    )
    # the slip reader 22 made: the experts' read share applied to every weight, the shared
    # ones too. They are a few percent of the total here, so it lands inside the window on
    # every draw: accepted knowingly (it is the answer less a small correction), never listed
    unsplit = at(reading(share, Q_(0, "Gparam"), total) + kv_time)
    require(abs((unsplit / speed).to("").m - 1) <= TOLERANCE, "the unsplit read lands inside")

    def clear(value) -> bool:  # twice the window from the answer
        return abs((value / speed).to("").m - 1) >= 2 * TOLERANCE

    # the active share as every parameter's chance must land clear, named (reader 22)
    require(clear(all_routed), "the active share as each parameter's chance lands clear")

    # the lesson is that tokens share experts: keep only scenarios where that shows clearly
    if b * k < experts:
        require(clear(mistakes[0].value), "sharing experts changes the answer clearly")
    # a slip lands inside the window (accepted) or twice its width away (named), never between:
    # a student's rounding would carry it either way (reader 20)
    for m in mistakes:
        require(lands_clear(m.value, speed, TOLERANCE), "each slip lands clear")
    mistakes = [m for m in mistakes if clear(m.value)]
    # the two ways to miscount the experts read must land apart, each told its own slip (reader
    # 17: "every parameter routed" fell within ×1.05 of "distinct experts")
    if b * k < experts:
        pair = (Mistake(all_routed, ""), mistakes[0])  # both clear of the answer (above)
        require(slips_apart(pair, speed, TOLERANCE), "the two expert slips land apart")
    return Draw(
        text=text,
        answer=speed,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, speed, TOLERANCE),
        hint="Split the weights into those every token reads and the routed experts, using "
        "the total and the active counts; then ask what share of the experts at least one of "
        "the users' tokens picks.",
    )
