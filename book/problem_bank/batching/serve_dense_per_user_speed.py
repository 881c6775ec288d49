"""A long context: the HBM caps the batch before a per-user speed target does; the batch sets the
price, and every user gets more than the promise."""

from __future__ import annotations

import math
from functools import partial

from book.format import number
from book.problem_bank import (
    Draw,
    Mistake,
    PresetsMemo,
    distinct_mistakes,
    evaluate,
    lands_clear,
    money,
    require,
)
from book.problem_bank import _rents as rents
from book.problem_bank.batching._figures import (
    attention_cost,
    kv_shape,
    kv_values,
    tokens,
    usable_share,
)
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "Serving a dense model at a per-user speed, long context"
USES = ("kv_cache_per_sequence", "weight_fetch_time", "kv_fetch_time", "memory_time")
USES += ("cost_per_token",)

# dense models (every weight read every step), drawn first so that neither fills the draws, and
# the servers (chip, chips) whose HBM the weights fill enough that the engine's 90% moves the
# batch, and the cost, by twice the tolerance (reader 26: on eight H200s or B200s a 70B's cost
# moved under 2%, and ignoring it was accepted; an 8B's weights never fill enough); two chips
# or more, a server
SERVERS = {
    "llama_3_1_70b": (
        ("h100_sxm", 2),
        ("h100_sxm", 4),
        ("h100_sxm", 8),
        ("h200", 2),
        ("h200", 4),
        ("b200", 2),
        ("b200", 4),
        ("b300", 2),
        ("mi300x", 2),
        ("mi355x", 2),
    ),
    "llama_3_1_405b": (
        ("h200", 8),
        ("b200", 8),
        ("b300", 4),
        ("b300", 8),
        ("mi300x", 8),
        ("mi355x", 4),
        ("mi355x", 8),
    ),
}
RATES = tuple(range(10, 121))  # tokens/s each user must see: a fine grid, as CONTEXTS
TOLERANCE = 0.03
# the HBM's cap is the lesson: the speed target's batch (the cap missed) must cost at least twice
# the tolerance away from the answer (reader 19: 3.7% off at 3% was neither right nor named)
# long, so the HBM caps; every 4,096 tokens to Llama's 128k: the speed target nearly binding
# (APART, CLOSE) and the slips apart hold for one scenario in a couple of hundred, so the grids
# are fine
CONTEXTS = tuple(range(16_384, 131_072 + 1, 4096))
FEWEST = 8  # sequences the HBM must hold: rounding the batch down moves the cost under 3%
APART = 1.1  # the speed target's batch at least this much larger than the HBM's
CLOSE = 1.6  # and at most this much: the speed target nearly binds (reader 26)


def scenario(rng, presets):
    """A chip, a speed target and a long context at which the memory binds, clearly."""
    model = rng.choice(tuple(SERVERS))
    while True:
        hardware, chips = rng.choice(SERVERS[model])
        rate = Q_(rng.choice(RATES), "token/s/sequence")
        case, weights, kv_one, by_memory, by_whole = _server(
            presets, model, hardware, chips, rng.choice(CONTEXTS)
        )
        step = (Q_(1, "token/sequence") / rate).to("ms")
        by_speed = math.floor(((step - weights) / kv_one).to("").magnitude)
        if by_memory < FEWEST or not APART * by_memory <= by_speed <= CLOSE * by_memory:
            continue
        # the engine's share ignored: the whole HBM's batch (the speed may cap it) costs twice
        # the tolerance away
        full = min(by_speed, by_whole)
        filled = evaluate("cost_per_token", batch_size=Q_(full, "sequence"), **case)
        capped, uncapped = (
            evaluate("cost_per_token", batch_size=Q_(b, "sequence"), **case)
            for b in (by_memory, by_speed)
        )
        # and the two slips' batches differ (the whole HBM holds fewer than the speed allows),
        # so each value has one diagnosis
        if full < by_speed and all(
            abs((one / other).to("").m - 1) >= 2 * TOLERANCE
            for one, other in ((uncapped, capped), (filled, capped), (filled, uncapped))
        ):
            return dict(case), rate, by_speed, by_memory


# what a server and a context give whatever the speed target, once per presets object (a seed
# tries about a hundred and fifty scenarios, of a few hundred servers and contexts)
_SERVERS = PresetsMemo()


def _server(presets, model: str, hardware: str, chips: int, context: int):
    """The case, the weights' read time, one sequence's cache read time, the batch the HBM holds
    at the engine's share and the batch the whole HBM would hold."""
    key = (model, hardware, chips, context)
    return _SERVERS(presets, key, partial(_work_out, presets, model, hardware, chips, context))


def _work_out(presets, model: str, hardware: str, chips: int, context: int):
    case = dict(
        hardware=hardware,
        model=model,
        precision="bf16",
        n_chips=Q_(chips, "chip"),
        context_length=Q_(context, "token/sequence"),
        price_per_chip_hour=rents.rent(hardware),
        presets=presets,
    )
    weights = evaluate("weight_fetch_time", batch_size=1, **case).to("ms")
    kv_one = evaluate("kv_fetch_time", batch_size=1, **case).to("ms")
    spec = presets.get("hardware", hardware)
    used = evaluate("weight_fetch_time", detailed=True, batch_size=1, **case).inputs
    weight_bytes = (
        used["n_total"].value * used["weight_bytes_per_value"].value * Q_(1, "value/parameter")
    ).to("GB")
    kv_sequence = evaluate("kv_cache_per_sequence", **case).to("GB/sequence")
    usable = usable_share(presets)[0] * case["n_chips"] * spec.hbm_capacity
    free = usable.to("GB") - weight_bytes
    by_memory = math.floor((free / kv_sequence).to("sequence").magnitude)
    whole = (case["n_chips"] * spec.hbm_capacity).to("GB") - weight_bytes
    by_whole = math.floor((whole / kv_sequence).to("sequence").m)
    return case, weights, kv_one, by_memory, by_whole


def draw(rng, presets) -> Draw:
    case, rate, by_speed, batch = scenario(rng, presets)
    n, context, rent = case["n_chips"], case["context_length"], case["price_per_chip_hour"]
    spec = presets.get("hardware", case["hardware"])
    chip, bandwidth, flop_rate, hbm = (
        spec.name,
        spec.hbm_bandwidth,
        spec.dense_flops_bf16,
        spec.hbm_capacity,
    )
    per_param = number(flops_per_param_token.value.m)  # a multiply and an add
    combined = (n * bandwidth / Q_(1, "chip")).to("TB/s")
    model = presets.get("model", case["model"]).name
    used = evaluate("weight_fetch_time", detailed=True, batch_size=1, **case).inputs
    params, per_value = used["n_total"].value, used["weight_bytes_per_value"].value
    kv_used = evaluate("kv_fetch_time", detailed=True, batch_size=1, **case).inputs
    kv_token = kv_used["kv_bytes_per_token"].value

    limit = (Q_(1, "token/sequence") / rate).to("ms")  # one token per sequence per step
    weights = evaluate("weight_fetch_time", batch_size=1, **case).to("ms")
    kv_one = evaluate("kv_fetch_time", batch_size=1, **case).to("ms")  # per sequence
    weight_bytes = (params * per_value * Q_(1, "value/parameter")).to("GB")
    kv_sequence = evaluate("kv_cache_per_sequence", **case).to("GB/sequence")
    share, fill = usable_share(presets)
    usable = (share * n * hbm).to("GB")
    free = usable - weight_bytes
    batch_q = Q_(batch, "sequence")
    memory = evaluate("memory_time", batch_size=batch_q, **case).to("ms")
    compute = evaluate("compute_time", batch_size=batch_q, **case).to("ms")
    require(compute < memory, "the step must be memory-bound for this reasoning")
    require(memory < limit, "the HBM-capped batch meets the speed target")
    # the multiplies the solution counts, two FLOPs per parameter, and attention's on top
    short = dict(case, context_length=Q_(1, "token/sequence"))
    compute_weights = evaluate("compute_time", batch_size=batch_q, **short).to("ms")
    cost = evaluate("cost_per_token", batch_size=batch_q, **case).to("USD/Mtoken")
    speed = (Q_(1, "token") / memory).to("token/s")  # each user's

    text = (
        f"You serve {model} ({money(params, 4)}) in BF16, weights and KV cache, on a server of "
        f"{money(n)} ({chip}, {money(hbm, 3)} of HBM at {money(bandwidth, 3)} and "
        f"{money(flop_rate, 4)} dense in BF16, each) rented at {money(rent)}; {fill}. "
        "The model has "
        f"{kv_shape(case['model'], presets)}, and every conversation carries "
        f"{tokens(context)} of context ({attention_cost(case['model'], presets)}). Every "
        f"user must see at least {number(rate.magnitude)} tokens per second. At the largest "
        "batch you can run, what does a generated token cost, in USD per million tokens?"
    )
    solution = (
        f"A token of context caches a key and a value in every KV head of every layer, "
        f"{kv_values(case['model'], presets)}, two bytes each in BF16: "
        f"{money(kv_token.to('kB/token'), 4)}. A conversation of {tokens(context)} caches "
        f"{money(kv_sequence * Q_(1, 'sequence'), 3)}.",
        f"Memory: the weights take {money(params, 4)} × two bytes = {money(weight_bytes, 4)}; "
        f"the {number(n.m)} chips hold {money((n * hbm).to('GB'), 4)}, of which an engine "
        f"fills {number(100 * share)}%, {money(usable, 4)}, which leaves "
        f"{money(free, 4)} for caches: room for {number(batch)} conversations (rounded down).",
        "Speed: each sequence gets one token per step, so a step may take at most "
        f"1/{number(rate.magnitude)} s = {money(limit, 3)}. Every step reads all the weights, "
        f"{money(weight_bytes, 4)} over {money(n)} × {money(bandwidth, 3)} = "
        f"{money(combined, 3)}: {money(weights, 3)}; each conversation's cache adds "
        f"{money(kv_one, 3)}. The speed target alone would allow {number(by_speed)} "
        "conversations, so the HBM caps the batch first: "
        f"{number(batch)}.",
        f"That step reads the weights and {number(batch)} caches: {money(weights, 3)} + "
        f"{number(batch)} × {money(kv_one, 3)} = {money(memory, 3)}, shorter than the "
        f"{money(limit, 3)} allowed, so every user gets about {money(speed, 3)}, more than "
        "promised. The multiplies, "
        f"{per_param} FLOP per parameter per sequence, take {money(compute_weights, 3)}, and "
        f"attention over the long context brings them to {money(compute, 3)}: under the reads, "
        "so the step is memory-bound.",
        f"Cost: {money(n)} × {money(rent)} × {money(memory, 3)} per step, shared by "
        f"{number(batch)} tokens: **{money(cost, 3)}**.",
    )

    def solve(kv_scale=1.0, value_scale=1.0, capped=True):
        """The cost a student finds with the cache's bytes per token scaled by ``kv_scale`` and
        every value's bytes by ``value_scale`` (the batch both caps give, or the speed's alone
        if not ``capped``): the whole chain, each cap recomputed (reader 20)."""
        per_value = dict(case, kv_bytes_per_token=kv_token * kv_scale * value_scale)
        per_value["weight_bytes_per_value"] = used["weight_bytes_per_value"].value * value_scale
        read = evaluate("weight_fetch_time", batch_size=1, **per_value).to("ms")
        one = evaluate("kv_fetch_time", batch_size=1, **per_value).to("ms")
        by_speed = math.floor(((limit - read) / one).to("").m)
        room = usable - weight_bytes * value_scale
        by_memory = math.floor((room / (kv_sequence * kv_scale * value_scale)).to("sequence").m)
        b = min(by_speed, by_memory) if capped else by_speed
        return evaluate("cost_per_token", batch_size=Q_(b, "sequence"), **per_value).to(
            "USD/Mtoken"
        )

    require(abs((solve() / cost).to("").m - 1) < 1e-9, "the chain solves to the answer")
    at_limit = (n * rent * limit / (batch_q * Q_(1, "token/sequence"))).to("USD/Mtoken")
    slips = [
        (
            solve(capped=False),
            f"You ran the batch the speed target allows, {number(by_speed)} conversations; "
            f"their caches need {money((by_speed * Q_(1, 'sequence') * kv_sequence).to('GB'), 4)}"
            f" of HBM and only {money(free, 4)} is free beside the weights: the memory caps the "
            f"batch first, at {number(batch)}.",
        ),
        (
            at_limit,
            "You charged the whole step the speed target allows; the HBM-capped batch's step "
            "is shorter (it reads only the weights and those caches), so the users get more "
            "than promised and the token costs less.",
        ),
        (
            cost / n.m,
            "That is one chip's rent per token: the replica is all the server's chips, and "
            "every one of them is paid for every step.",
        ),
        (
            solve(kv_scale=0.5),
            "You cached half the bytes per token: each head caches a key and a value, two "
            "bytes each in BF16.",
        ),
        (solve(value_scale=0.5), "BF16 stores two bytes per value; you counted one."),
    ]
    whole = (n * hbm).to("GB")  # the whole HBM filled: a natural slip
    full_batch = min(by_speed, math.floor(((whole - weight_bytes) / kv_sequence).to("sequence").m))
    slips.append(
        (
            evaluate("cost_per_token", batch_size=Q_(full_batch, "sequence"), **case).to(
                "USD/Mtoken"
            ),
            f"You filled the whole HBM; {fill}.",
        )
    )
    for value, _ in slips:  # inside the window or twice its width away, never just outside
        require(lands_clear(value, cost, TOLERANCE), "each slip lands clear")
    mistakes = distinct_mistakes([Mistake(v, w) for v, w in slips], cost, TOLERANCE)
    return Draw(
        text=text,
        answer=cost,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
        hint="Find the largest batch the step-time limit allows and the largest the HBM "
        "holds; the smaller one is the batch, and its step is what you pay for.",
    )
