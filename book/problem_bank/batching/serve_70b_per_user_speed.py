"""A per-user speed target caps the batch, so may the HBM; the batch sets the price."""

from __future__ import annotations

import math

from book.format import number
from book.problem_bank import Draw, Mistake, evaluate, money, require
from book.problem_bank import _rents as rents
from book.problem_bank.batching._figures import attention_cost
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "Serving a 70B model at a per-user speed"
USES = ("weight_fetch_time", "kv_fetch_time", "memory_time", "cost_per_token")

CHIPS = ("h100_sxm", "h200", "b200")
RATES = (20, 25, 30, 40)  # tokens/s each user must see
CONTEXTS = (4096, 8192, 16384)


def draw(rng, presets) -> Draw:
    hardware = rng.choice(CHIPS)
    rate = Q_(rng.choice(RATES), "token/s/sequence")
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    rent = rents.rent(hardware)
    n = Q_(8, "chip")
    case = dict(
        hardware=hardware,
        model="llama_3_1_70b",
        precision="bf16",
        n_chips=n,
        context_length=context,
        price_per_chip_hour=rent,
        presets=presets,
    )
    spec = presets.get("hardware", hardware)
    per_param = number(flops_per_param_token.value.m)  # a multiply and an add
    chip, bandwidth, flop_rate = spec.name, spec.hbm_bandwidth, spec.dense_flops_bf16
    combined = (n * bandwidth / Q_(1, "chip")).to("TB/s")
    model = presets.get("model", "llama_3_1_70b").name
    used = evaluate("weight_fetch_time", detailed=True, batch_size=1, **case).inputs
    params, per_value = used["n_total"].value, used["weight_bytes_per_value"].value
    hbm = evaluate("hbm_drain_time", detailed=True, **case).inputs["hbm_capacity"].value
    kv_used = evaluate("kv_fetch_time", detailed=True, batch_size=1, **case).inputs
    kv_token = kv_used["kv_bytes_per_token"].value

    step = (Q_(1, "token/sequence") / rate).to("ms")  # one token per sequence per step
    weights = evaluate("weight_fetch_time", batch_size=1, **case).to("ms")
    kv_one = evaluate("kv_fetch_time", batch_size=1, **case).to("µs")  # per sequence
    by_speed = math.floor(((step - weights) / kv_one).to("").magnitude)
    weight_bytes = (params * per_value * Q_(1, "value/parameter")).to("GB")
    kv_sequence = (kv_token * context).to("GB/sequence")
    free = (n * hbm).to("GB") - weight_bytes
    by_memory = math.floor((free / kv_sequence).to("sequence").magnitude)
    batch = min(by_speed, by_memory)
    batch_q = Q_(batch, "sequence")
    memory = evaluate("memory_time", batch_size=batch_q, **case).to("ms")
    compute = evaluate("compute_time", batch_size=batch_q, **case).to("ms")
    require(compute < memory, "the step must be memory-bound for this reasoning")
    # the multiplies the solution counts, two FLOPs per parameter (attention's own FLOPs, in
    # ``compute``, add to them; the assert above keeps the step memory-bound with them)
    short = dict(case, context_length=Q_(1, "token/sequence"))
    compute_shown = evaluate("compute_time", batch_size=batch_q, **short).to("ms")
    cost = evaluate("cost_per_token", batch_size=batch_q, **case).to("USD/Mtoken")
    speed_binds = by_speed <= by_memory

    text = (
        f"You serve {model} in BF16 on a server of {money(n)} ({chip}, "
        f"{money(hbm, 3)} of HBM at {money(bandwidth, 3)} and {money(flop_rate, 4)} "
        f"dense in BF16, each) rented at {money(rent)}. Its KV cache takes "
        f"{money(kv_token.to('kB/token'), 3)} at this precision, and every sequence carries a "
        f"context of {number(context.magnitude)} tokens ({attention_cost(case['model'], presets)}"
        "). Every user must see at least "
        f"{number(rate.magnitude)} tokens per second. At the largest batch you can run, what "
        "does a generated token cost, in USD per million tokens?"
    )
    binding = (
        "set by the speed target (the memory would hold more)"
        if speed_binds
        else f"set by the memory (the speed target alone would allow {number(by_speed)})"
    )
    solution = (
        "Each sequence gets one token per step, so a step may take at most "
        f"1/{number(rate.magnitude)} s = {money(step, 3)}.",
        f"Every step reads all the weights once: {money(params, 3)} at two bytes each is "
        f"{money(weight_bytes, 3)}; over the eight chips' combined bandwidth, "
        f"{money(n)} × {money(bandwidth, 3)} = {money(combined, 3)}, "
        f"that takes {money(weights, 3)}, whatever the batch.",
        f"Each sequence adds its own KV cache, read once per step: "
        f"{number(context.magnitude)} tokens × {money(kv_token.to('kB/token'), 3)} = "
        f"{money(kv_sequence.to('GB/sequence'), 3)}, which takes {money(kv_one, 3)} per "
        f"sequence. The rest of the step, {money(step - weights, 3)}, holds "
        f"{number(by_speed)} sequences (rounded down).",
        f"Memory: the eight chips hold {money((n * hbm).to('GB'), 3)}; after the weights "
        f"{money(free, 3)} is left for KV caches, room for {number(by_memory)} sequences. "
        f"So the batch is {number(batch)}, {binding}.",
        f"Check the regime: at that batch the multiplies, {per_param} FLOP per parameter per "
        "sequence, "
        f"{number(batch)} × {per_param} × {money(params, 3)} over {money(n)} × "
        f"{money(flop_rate, 4)}, take {money(compute_shown, 3)} (attention's own FLOPs add a "
        f"little), under the "
        f"{money(memory, 3)} of memory reads, so the step is memory-bound as assumed.",
        f"Cost: {money(n)} × {money(rent)} × {money(memory, 3)} per step, shared by "
        f"{number(batch)} tokens: **{money(cost, 3)}**.",
    )
    cost_by_speed = None
    if not speed_binds:
        too_many = Q_(by_speed, "sequence")
        cost_by_speed = evaluate("cost_per_token", batch_size=too_many, **case)
    mistakes = [
        Mistake(
            cost / 8,
            "That is one chip's rent per token: the replica is all the server's chips, and "
            "every one of them is paid for every step.",
        ),
    ]
    if cost_by_speed is not None and abs((cost_by_speed / cost).to("").m - 1) > 0.05:
        mistakes.append(
            Mistake(
                cost_by_speed.to("USD/Mtoken"),
                "That batch meets the speed target, but its KV caches do not fit in the "
                "servers' HBM: the memory caps the batch first.",
            )
        )
    return Draw(
        text=text,
        answer=cost,
        solution=solution,
        tolerance=0.03,
        mistakes=tuple(mistakes),
        hint="Find the largest batch the step-time limit allows, then the largest the HBM "
        "holds; the smaller one is the batch.",
    )
