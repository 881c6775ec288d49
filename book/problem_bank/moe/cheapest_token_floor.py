"""At long context the HBM caps the batch: a rack's cheapest token pays for reading its cache."""

from __future__ import annotations

import math

from book.format import number
from book.problem_bank import Draw, Mistake, evaluate, money
from book.problem_bank._rents import rent
from book.problem_bank.batching._figures import chip_name, figures, size, tokens, weight_bytes
from units import Q_

KIND = "estimate"
TITLE = "The cheapest token a rack can make at long context"
USES = ("compute_cost_floor", "kv_cache_per_batch", "hbm_drain_time", "cost_per_token")

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b")
RACKS = ("gb200_nvl72", "gb300_nvl72")
CONTEXTS = (32768, 65536, 131072)
FACTOR = 1.5  # narrower than a factor of two (a KV cache in two bytes; one GPU's rent)


def scenario(rng, presets):
    """A model, rack and context whose largest batch leaves the token well above its compute
    floor (so the floor, a likely answer, falls outside the factor)."""
    while True:
        hardware = rng.choice(RACKS)
        case = dict(
            model=rng.choice(MODELS),
            hardware=hardware,
            precision="fp8",
            n_chips=presets.get("hardware", hardware).scale_up_domain,
            context_length=Q_(rng.choice(CONTEXTS), "token/sequence"),
            price_per_chip_hour=rent(hardware),
            presets=presets,
        )
        f = figures(**case)
        room = evaluate("scaleup_memory", **case).to("GB") - weight_bytes(f)
        per_sequence = (f["kv_bytes_per_token"] * case["context_length"] * Q_(1, "sequence")).to(
            "GB"
        )
        batch = Q_(math.floor((room / per_sequence).to("").m), "sequence")
        case["batch_size"] = batch
        cost = evaluate("cost_per_token", **case).to("USD/Mtoken")
        floor = evaluate("compute_cost_floor", **case).to("USD/Mtoken")
        if batch.m >= 100 and cost > 2 * FACTOR * floor:
            return case, f, room, per_sequence


def draw(rng, presets) -> Draw:
    case, f, room, per_sequence = scenario(rng, presets)
    batch, context, n, price = (
        case["batch_size"],
        case["context_length"],
        case["n_chips"],
        case["price_per_chip_hour"],
    )
    answer = evaluate("cost_per_token", **case).to("USD/Mtoken")
    floor = evaluate("compute_cost_floor", **case).to("USD/Mtoken")
    step = evaluate("step_time", **case).to("ms")
    memory = evaluate("memory_time", **case).to("ms")
    compute = evaluate("compute_time", **case).to("ms")
    drain = evaluate("hbm_drain_time", **case).to("ms")
    assert memory > compute, "a full rack at long context is bound by its reads"
    assert abs((memory / drain).to("").m - 1) < 0.01, "a full HBM reads in one drain time"
    kv, attention = f["kv_bytes_per_token"].to("kB/token"), f["attention_flops_per_token"]
    flops, bandwidth, hbm = f["flops"].to("PFLOP/s"), f["mem_bandwidth"], f["hbm_capacity"]
    per_token = (2 * f["n_active"] * Q_(1, "FLOP/parameter")).to("GFLOP")
    read_own = (per_sequence / bandwidth * price * Q_(1, "chip/token")).to(
        "USD/Mtoken"
    )  # one GPU's rent for reading one sequence's cache once
    rack, name = chip_name(presets, case["hardware"]), presets.get("model", case["model"]).name
    weights = weight_bytes(f)

    text = (
        f"You serve {name} ({money(f['n_total'], 3)} in all, {money(f['n_active'], 3)} active "
        f"per token) in FP8 on one {rack} rack of {money(n)} rented at {money(price)}; each GPU "
        f"has {money(hbm, 3)} of HBM at {money(bandwidth, 3)} and does {money(flops, 3)} of "
        f"dense FP8 math. Every conversation carries {tokens(context)} of context; the KV cache "
        f"takes {money(kv, 3)} of context in FP8, and attention costs "
        f"{money(attention.to('MFLOP/token'), 3)} of context for each new token. You may run "
        "any batch the rack's HBM holds. Roughly what is the least a generated token can cost, "
        f"in USD per million tokens? Any answer within a factor of {FACTOR:g} is accepted."
    )
    solution = (
        f"The floor first: a token's multiplies are two FLOPs per active parameter, "
        f"{money(per_token, 3)}; at {money(flops, 3)} and {money(price)} that alone costs "
        f"{money(floor, 3)}. A larger batch only reaches it if the step becomes bound by its "
        "multiplies, and the batch is capped by room.",
        f"Room: the rack holds {money(n)} × {money(hbm, 3)}; the weights take {size(weights)} at "
        f"one byte each, leaving {size(room)}. One conversation's cache is {tokens(context)} × "
        f"{money(kv, 3)} = {size(per_sequence)}, so at most {money(batch)} fit.",
        f"That batch fills the HBM, so a step reads all of it: one drain time, "
        f"{money(hbm, 3)} / {money(bandwidth, 3)} = {money(drain, 3)}. Its multiplies, "
        f"attention's included, take {money(compute, 3)}: the reads bind.",
        f"The rack's rent for {money(step, 3)}, shared by {number(batch.m)} tokens: "
        f"**{money(answer, 3)}**, {number((answer / floor).to('').m, 2)} times the compute "
        f"floor. The shortcut: each token pays one GPU's rent for reading its own cache once "
        f"({size(per_sequence)} at {money(bandwidth, 3)}, {money(read_own, 3)}); at long "
        "context the cache, not the weights or the math, prices the token.",
    )
    slipped = dict(case, kv_precision="bf16")
    slipped_room = (room / (2 * per_sequence)).to("").m
    mistakes = [
        Mistake(
            floor,
            "That is the compute floor: at this context the HBM runs out long before the "
            "batch is large enough to be bound by its multiplies.",
        ),
        Mistake(
            answer / n.m,
            "You charged one GPU's rent for a step of the whole rack: every GPU of the rack "
            "is rented for every step.",
        ),
    ]
    if slipped_room >= 1:
        slipped["batch_size"] = Q_(math.floor(slipped_room), "sequence")
        mistakes.append(
            Mistake(
                evaluate("cost_per_token", **slipped).to("USD/Mtoken"),
                "FP8 stores the KV cache in one byte per value, not two.",
            )
        )
    kept = tuple(m for m in mistakes if not 1 / FACTOR <= (m.value / answer).to("").m <= FACTOR)
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=FACTOR,
        mistakes=kept,
        hint="How many conversations' caches fit beside the weights, and how long does a step "
        "take when the HBM is full?",
    )
