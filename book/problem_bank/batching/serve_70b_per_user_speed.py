"""A per-user speed target sets the batch, and the batch sets the price."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Serving a 70B model at a per-user speed"
USES = ("weight_fetch_time", "kv_fetch_time", "cost_per_token")

CHIPS = ("h100_sxm", "h200")
RATES = (20, 25, 30, 40)  # tokens/s each user must see
CONTEXTS = (4096, 8192)


def draw(rng, presets) -> Draw:
    hardware = rng.choice(CHIPS)
    rate = Q_(rng.choice(RATES), "token/s/sequence")
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    case = dict(
        hardware=hardware,
        model="llama_3_1_70b",
        precision="bf16",
        n_chips=Q_(8, "chip"),
        context_length=context,
        presets=presets,
    )
    chip = presets.get("hardware", hardware).name
    used = get("cost_per_token").evaluate_detailed(batch_size=1, **case).inputs
    price = used["price_per_chip_hour"].value
    params = used["n_total"].value
    per_value = used["weight_bytes_per_value"].value

    step = (Q_(1, "token/sequence") / rate).to("ms")  # one token per sequence per step
    weights = get("weight_fetch_time").evaluate(batch_size=1, **case).to("ms")
    kv_one = get("kv_fetch_time").evaluate(batch_size=1, **case).to("ms")  # per sequence
    batch = math.floor(((step - weights) / kv_one).to("").magnitude)
    batch_q = Q_(batch, "sequence")
    memory = get("memory_time").evaluate(batch_size=batch_q, **case).to("ms")
    compute = get("compute_time").evaluate(batch_size=batch_q, **case).to("ms")
    cost = get("cost_per_token").evaluate(batch_size=batch_q, **case).to("USD/Mtoken")

    text = (
        f"You serve Llama 3.1 70B in BF16 on 8 {chip} GPUs rented at "
        f"{quantity(price)}, with a context of {number(context.magnitude)} tokens per "
        f"sequence. Every user must see at least {number(rate.magnitude)} tokens per second. "
        "Using the roofline model of a decode step, how many sequences can you batch at most, "
        "and what does a "
        "generated token then cost? Answer with the cost in USD per million tokens."
    )
    solution = (
        "Each sequence gets one token per step, so a step may take at most "
        f"1/{number(rate.magnitude)} s = {quantity(step)}.",
        f"Every step reads all the weights once: {quantity(params)} × {quantity(per_value)} "
        "over eight chips' "
        f"bandwidth takes {quantity(weights)}, whatever the batch.",
        f"Each sequence adds its KV cache, read once per step: {quantity(kv_one)} per sequence at "
        f"this context. The rest of the step, {quantity(step - weights)}, holds "
        f"{number(batch)} sequences (rounded down).",
        f"Check the regime: at that batch the matmuls take {quantity(compute)}, well under the "
        f"{quantity(memory)} of memory reads, so the step is memory-bound and the bound holds.",
        f"Cost: 8 chips × {quantity(price)} × {quantity(memory)} per step, shared by "
        f"{number(batch)} tokens: **{quantity(cost)}**.",
    )
    mistakes = (
        Mistake(
            cost / 8,
            "That is one chip's rent per token: the replica is 8 chips, and all 8 are paid "
            "for every step.",
        ),
    )
    return Draw(text=text, answer=cost, solution=solution, tolerance=0.03, mistakes=mistakes)
