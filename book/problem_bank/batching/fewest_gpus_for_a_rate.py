"""At large batches only the multiplies are left: GPUs needed for a token rate, from 2N active."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, evaluate, require
from book.problem_bank.batching._figures import chip_name, figures, tokens
from units import Q_

KIND = "estimate"
TITLE = "The fewest GPUs for a token rate"
USES = ("crossover_batch", "compute_time", "decode_rate_per_chip")
LECTURE = "0:00"

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "gpt_oss_120b")
CHIPS = {"h200": 8, "b200": 8, "gb200_nvl72": 72, "mi300x": 8}  # chip: GPUs per replica
SHARES = (0.1, 0.2, 0.5, 1.0)  # of one frontier model's traffic
CONTEXTS = (512, 1024, 2048)
FACTOR = 1.5  # narrower than the factor two of BF16 against FP8, or of one FLOP for two


def shown(q, places: int = 3):
    """``q`` rounded to ``places`` significant figures, as the statement prints it."""
    return Q_(float(f"{q.m:.{places}g}"), q.units)


def scenario(rng, presets):
    """A model, chips and context whose large batches are compute-bound (short contexts)."""
    while True:
        model, hardware = rng.choice(MODELS), rng.choice(tuple(CHIPS))
        case = dict(
            hardware=hardware,
            model=model,
            precision="fp8",
            n_chips=Q_(CHIPS[hardware], "chip"),
            context_length=Q_(rng.choice(CONTEXTS), "token/sequence"),
            presets=presets,
        )
        crossover = evaluate("crossover_batch", **case).to("sequence")
        big = dict(case, batch_size=Q_(round(8 * crossover.m), "sequence"))
        if evaluate("compute_time", **big) > 1.2 * evaluate("memory_time", **big):
            return big


def draw(rng, presets) -> Draw:
    while True:  # redraw until the quotient, shown to four places, rounds up as it does exact
        big = scenario(rng, presets)
        rate = (presets.parameter["inference_rate"].value * rng.choice(SHARES)).to("token/s")
        f = figures(**big)
        flops, active = shown(f["flops"].to("PFLOP/s")), shown(f["n_active"])
        per_token = (2 * active * Q_(1, "FLOP/parameter")).to("GFLOP")
        exact = (rate * per_token / Q_(1, "token") / flops * Q_(1, "chip")).to("chip").m
        if math.ceil(float(f"{exact:.4g}")) == math.ceil(exact):
            break
    model, hardware, case = big["model"], big["hardware"], big
    per_chip = evaluate("decode_rate_per_chip", **big).to("token/s/chip")
    chips = (rate / per_chip).to("chip")
    f = figures(**big)
    # the figures as the statement shows them (three places): the count, rounded up, is the
    # one a student gets from them
    flops, active, total = shown(f["flops"].to("PFLOP/s")), shown(f["n_active"]), f["n_total"]
    per_token = (2 * active * Q_(1, "FLOP/parameter")).to("GFLOP")
    attention = (f["attention_flops_per_token"] * case["context_length"] * Q_(1, "sequence")).to(
        "GFLOP"
    )
    exact = (rate * per_token / Q_(1, "token") / flops * Q_(1, "chip")).to("chip")
    floor_chips = Q_(math.ceil(exact.m), "chip")  # a count that must cover the rate: round up
    per_chip_floor = (flops / per_token * Q_(1, "token/chip")).to("token/s/chip")
    require(chips / floor_chips < FACTOR, "attention, ignored, stays within the factor")
    chip, name = chip_name(presets, hardware), presets.get("model", model).name
    sparsity = (total / active).to("").m

    text = (
        f"A lab must generate {quantity(rate, 2)} of {name} ({quantity(total, 3)} in all, "
        f"{quantity(active, 3)} active per token), in FP8 on {chip} GPUs that each do "
        f"{quantity(flops, 3)} of dense FP8 math. Prompts are short (about "
        f"{tokens(case['context_length'])} of context): ignore attention's own FLOPs and the "
        "KV cache's reads. The batches are so large that batching more would not make a "
        "token any cheaper. Roughly how many GPUs does the lab "
        f"need at the very least? Any answer within a factor of {FACTOR:g} is accepted."
    )
    solution = (
        "Batches that large are past the crossover, where a step is bound by its multiplies: "
        "the weight reads are shared by so many sequences that they vanish per token, so only "
        "the arithmetic is left to count.",
        f"A token costs two FLOPs (a multiply and an add) per active parameter, "
        f"{quantity(per_token, 3)}. The total parameters do not enter: the experts a token "
        "skips do no arithmetic for it.",
        f"One GPU at {quantity(flops, 3)} then makes about {quantity(per_chip_floor, 3)}.",
        f"{quantity(rate, 2)} over that is {number(exact.m, 4)}; a GPU is whole, so "
        f"**{quantity(floor_chips, 4)}** at full use of "
        "every FLOP (a floor: real serving runs well below peak). Attention, left out, would "
        f"add about {quantity(attention, 2)} per token at this context ({quantity(chips, 3)} "
        "in all): still within the estimate's factor.",
    )
    mistakes = (
        Mistake(
            floor_chips * 3,
            "Six FLOPs per parameter is training (forward and backward): "
            "generating a token is a forward pass, two.",
        ),
        Mistake(
            floor_chips * sparsity,
            "You counted every parameter: only the active ones do "
            "arithmetic for a token (total versus active parameters).",
        ),
        Mistake(floor_chips * 2, "That is the BF16 rate: FP8 math runs twice as fast."),
        Mistake(floor_chips / 2, "A multiply-add is two FLOPs per parameter, not one."),
    )
    return Draw(
        text=text,
        answer=floor_chips,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
        hint="Once batching no longer helps, what work is left for each token?",
    )
