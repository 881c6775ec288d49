"""A small batch of an MoE reads only the experts its tokens visit, and tokens share experts."""

from __future__ import annotations

from book.format import number, quantity, superscript
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lands_clear,
    require,
)
from book.problem_bank.batching._figures import chip_name, figures, size
from units import Q_

KIND = "multi"
TITLE = "How much of an MoE does a small batch read?"
USES = ("expert_read_fraction", "experts_touched", "weight_fetch_time")
LECTURE = "15:16"

SETUPS = (  # (model, chips that hold it at FP8 in a server of eight)
    ("deepseek_v3", ("h200", "b200", "mi300x")),
    ("kimi_k2", ("h200", "b200", "mi300x")),
    ("qwen3_235b_a22b", ("h100_sxm", "h200", "b200", "mi300x")),
    ("gpt_oss_120b", ("h100_sxm", "h200", "b200", "mi300x")),
)
BATCHES = (4, 8, 12, 16, 24, 32, 48, 64, 96, 128)
TOLERANCE = 0.03
SPREAD = (0.4, 2.5)  # batch × experts per token / experts: overlap matters, not every one hit


def scenario(rng, presets):
    while True:
        model, chips = rng.choice(SETUPS)
        spec = presets.get("model", model)
        batch = rng.choice(BATCHES)
        spread = batch * spec.experts_active / spec.experts_routed
        if SPREAD[0] <= spread <= SPREAD[1]:
            return dict(
                model=model,
                hardware=rng.choice(chips),
                precision="fp8",
                n_chips=Q_(8, "chip"),
                batch_size=Q_(batch, "sequence"),
                context_length=Q_(1024, "token/sequence"),
                presets=presets,
            )


def draw(rng, presets) -> Draw:
    case = scenario(rng, presets)
    f = figures(**case)
    spec = presets.get("model", case["model"])
    k, experts, b = spec.experts_active, spec.experts_routed, case["batch_size"].m
    share = evaluate("expert_read_fraction", **case).to("").m
    touched = evaluate("experts_touched", **case).to("expert")
    answer = evaluate("weight_fetch_time", **case).to("ms")
    total = f["n_total"]
    routed = (f["routed_weight_share"] * total).to("Gparam")
    always = (total - routed).to("Gparam")
    per_value = f["weight_bytes_per_value"] * Q_(1, "value/parameter")
    read = ((always + share * routed) * per_value).to("GB")
    bandwidth, n = f["mem_bandwidth"], case["n_chips"]
    require(evaluate("compute_time", **case) < answer / 10, "a small batch is memory-bound")
    skipped = 1 - share
    chip, name = chip_name(presets, case["hardware"]), spec.name
    one = dict(case, batch_size=Q_(1, "sequence"))
    shared = "a shared expert, " if spec.fields.get("experts_shared") else ""
    outside = f"attention, {shared}embeddings, routers"
    routings = f"{number(b)} × {number(k)} = {number(b * k)}"
    overlap = (
        f"fewer than {routings}, because tokens share experts"
        if b * k < experts
        else f"not all of them, though there are {routings} routings for {number(experts)} experts"
    )
    all_time = (total * per_value / (n * bandwidth)).to("ms")

    text = (
        f"{name} has {quantity(total, 4)}: {quantity(routed, 4)} in its routed experts and "
        f"{quantity(always, 3)} outside them ({outside}). Each MoE layer has "
        f"{number(experts)} routed experts, and a token is routed to "
        f"{number(k)}. You serve it in FP8 on a server of {quantity(n)} ({chip}, "
        f"{quantity(bandwidth, 3)} of HBM bandwidth each) at a batch of only "
        f"{quantity(case['batch_size'])}, one token each per step. Assume each token picks its "
        "experts independently and uniformly. How long does one decode step spend reading "
        "weights from HBM? Answer in milliseconds."
    )
    solution = (
        f"An expert is read if any token of the batch is routed to it. One token skips a given "
        f"expert with probability {number(experts - k)}/{number(experts)}; all "
        f"{number(b)} skip it with probability ({number(experts - k)}/{number(experts)})"
        f"{superscript(b)} = {number(skipped, 3)}. So the batch touches {number(share, 3)} of the "
        f"experts (about {quantity(touched, 3)} per layer): {overlap}.",
        f"Bytes read: the {quantity(always, 3)} outside the routed experts ({outside}) are "
        f"read every step, plus {number(share, 3)} of the "
        f"{quantity(routed, 4)} in routed experts, at one byte per FP8 weight: {size(read)}.",
        f"Over {quantity(n)} × {quantity(bandwidth, 3)}: **{quantity(answer, 3)}** (a step "
        f"that reads every expert would take {quantity(all_time, 3)}).",
    )
    mistakes = [
        Mistake(
            all_time,
            "You read every expert: a small batch touches only the experts its tokens are "
            "routed to."
            if b * k < experts
            else f"You read every expert: {routings} routings for {number(experts)} experts "
            "do not reach every one, because tokens share experts and some are never picked.",
        ),
        Mistake(
            evaluate("weight_fetch_time", **one).to("ms"),
            "That is one token's read: each token of the batch may add experts no other token "
            "visits.",
        ),
        Mistake(answer * 2, "FP8 stores a weight in one byte, not two."),
        Mistake(
            answer * (share * routed / (always + share * routed)).to(""),
            f"You read only the routed experts: the weights outside them ({outside}) are read "
            "every step too.",
        ),
    ]
    if b * k < experts:  # counting no overlap reads fewer than all of them
        distinct = (always + b * k / experts * routed) * per_value / (n * bandwidth)
        mistakes.append(
            Mistake(
                distinct.to("ms"),
                "You counted every token's experts as distinct: tokens of a batch share "
                "experts, so fewer are touched than batch × experts per token.",
            )
        )
    # a slip lands inside the window or twice its width away, named: redraw the rest
    clear = all(lands_clear(m.value, answer, TOLERANCE) for m in mistakes)
    require(clear, "every slip clear or inside")
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, answer, TOLERANCE),
        hint="What is the chance that no token of the batch picks a given expert?",
    )
