"""The memory wall: one very long conversation fills servers, and pipelining them buys room,
not speed."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    clear_of_rounding,
    distinct_mistakes,
    evaluate,
    require,
)
from book.problem_bank.batching._figures import attention_cost, flop_rate, size, usable_share
from derivations import get
from units import Q_

KIND = "estimate"
TITLE = "One very long conversation against HBM"
USES = ("gqa_kv_values_per_token", "kv_bytes_per_token", "kv_cache_per_sequence")
USES += ("memory_time", "compute_time")

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
# servers of eight, their figures given (reader 19: the lecture states only a Hopper server's
# 640 GB, not its bandwidth); the student brings the chapter's rules (bytes per token, servers
# rounded up, pipelining latency neutral), and the answer is graded within a factor. Wide
# enough that seeds give many scenarios (reader 26: four)
CHIPS = ("h100_sxm", "h200", "b200", "mi300x", "mi325x")
CONTEXTS = tuple(m * 1_000_000 for m in (1, 2, 3, 4, 5, 6, 8, 10, 12, 16))
PER_SERVER = 8  # GPUs in a server (one scale-up domain)
# graded within ×1.3: a slip is named only outside ×1.69 (twice the window), so the ×2 slips
# (every GPU at once, one byte per value) are named and a rounded recall of the chip is not
FACTOR = 1.3


def scenario(rng, presets):
    """A model, chip and context whose one conversation needs two servers or more."""
    while True:
        name, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        context = Q_(rng.choice(CONTEXTS), "token/sequence")
        case = dict(model=name, hardware=hardware, precision="bf16", presets=presets)
        case.update(context_length=context, batch_size=Q_(1, "sequence"))
        case["n_chips"] = Q_(PER_SERVER, "chip")
        held = evaluate("memory_time", detailed=True, **case).inputs
        weights = (
            held["n_total"].value * held["weight_bytes_per_value"].value * Q_(1, "value/parameter")
        ).to("GB")
        cache = (evaluate("kv_cache_per_sequence", **case) * Q_(1, "sequence")).to("GB")
        share = usable_share(presets)[0]  # of a server's HBM an engine fills
        server = (share * PER_SERVER * presets.get("hardware", hardware).hbm_capacity).to("GB")
        need = ((weights + cache) / server).to("").m
        layers = presets.get("model", name).layers
        # the fullest server of an uneven split of the layers still holds its share
        fullest = math.ceil(layers / math.ceil(need)) / layers * (weights + cache)
        if (
            need > 1
            and clear_of_rounding(need)
            and fullest <= server
            and slips_land_clear_and_distinct(weights, cache, math.ceil(need))
        ):
            return case, weights, cache, server, need


def slips_land_clear_and_distinct(weights, cache, servers) -> bool:
    """Whether each slip's speed, as a multiple of the answer, lands inside the window (×FACTOR)
    or outside twice it (×FACTOR²), and the named ones more than the window (×FACTOR) apart, as
    ``distinct_mistakes`` tells them apart (reader 23 P8, reader 24 P4): every GPU at once
    (× servers), one byte (× 2), the cache left out, one vector per head (which lands at the
    one-byte slip or inside: named with it), one GPU's bandwidth (÷ 8), the weights left out.
    Not book.problem_bank's ``slips_apart``, which asks named slips to sit ×FACTOR² apart."""
    total = (weights + cache).to("GB").m
    w, c = weights.to("GB").m, cache.to("GB").m
    ratios = [servers, 2, total / w, total / (w + c / 2), 1 / PER_SERVER, total / c]
    off = [max(r, 1 / r) for r in ratios]
    if any(FACTOR < o <= FACTOR**2 for o in off):
        return False
    named = [r for r, o in zip(ratios, off, strict=True) if o > FACTOR**2]
    named.remove(2)  # one vector per head, if named, shares the one-byte slip's diagnosis
    if total / (w + c / 2) > FACTOR:
        named.remove(total / (w + c / 2))
    return all(max(a / b, b / a) > FACTOR for i, a in enumerate(named) for b in named[:i]) and all(
        max(a / 2, 2 / a) > FACTOR for a in named
    )


def draw(rng, presets) -> Draw:
    case, weights, cache, server, need = scenario(rng, presets)
    name, context = case["model"], case["context_length"]
    model = presets.get("model", name)
    chip = presets.get("hardware", case["hardware"])
    chip_name = chip.name.split(" (")[0]
    servers = math.ceil(need)
    bandwidth = (PER_SERVER * chip.hbm_bandwidth).to("TB/s")

    counted = get("gqa_kv_values_per_token").evaluate_detailed(model=name, presets=presets)
    values, pair = counted.value, counted.inputs["kv_vectors_per_token"].value
    per_token = get("kv_bytes_per_token").evaluate_detailed(model=name, presets=presets)
    per_value = per_token.inputs["kv_bytes_per_value"].value
    per_token = per_token.value.to("kB/token")
    total = weights + cache
    # pipelined over the servers: a token passes the stages one after another, each reading
    # its share at one server's bandwidth, so the step reads everything at one server's rate
    step = evaluate("memory_time", **case).to("ms")
    require(abs((step / (total / bandwidth)).to("").m - 1) < 1e-6, "the step reads it all")
    compute = evaluate("compute_time", **case).to("ms")
    require(compute < step / 4, "one sequence's step is memory-bound")
    speed = (Q_(1, "token") / step).to("token/s")

    millions = f"{number(context.to('Mtoken/sequence').magnitude)} million tokens"
    text = (
        f"A provider serves {model.name} ({quantity(model.params_total, 4)}, dense) in BF16, "
        f"weights and KV cache, and stretches its context window to {millions} "
        f"({number(context.to('token/sequence').magnitude)} tokens). The model has "
        f"{number(model.layers)} layers, each with {number(model.n_kv_heads)} KV heads of "
        f"{number(model.head_dim)} values; {attention_cost(name, presets)}. It runs on servers "
        f"of {number(PER_SERVER)} {chip_name} GPUs ({quantity(chip.hbm_capacity)} of HBM at "
        f"{quantity(chip.hbm_bandwidth, 3)} and {flop_rate(chip.dense_flops_bf16)} dense in BF16, "
        f"each; {usable_share(presets)[1]}). One user fills the window; the weights and that "
        "conversation's "
        "cache are spread over as few servers as hold them, the layers split as evenly as they "
        "can be between the servers as a pipeline (ignore the hand-over between servers). "
        "Roughly how many "
        f"tokens per second does that user get? Any answer within a factor of {FACTOR:g} is "
        "accepted."
    )
    solution = (
        f"Each token caches a key and a value per KV head per layer: "
        f"{number(pair.magnitude)} × {number(model.n_kv_heads)} × {number(model.head_dim)} × "
        f"{number(model.layers)} = {quantity(values, 3)}, at {quantity(per_value)} in BF16: "
        f"{quantity(per_token, 3)}. Times {millions}: about {size(cache)} for this one "
        "conversation; batching shares weights between users, never caches.",
        f"The weights add {size(weights)} (two bytes a parameter): {size(total)} in all. An "
        f"{chip_name} has {quantity(chip.hbm_capacity)} of HBM at "
        f"{quantity(chip.hbm_bandwidth, 3)}; an engine fills "
        f"{number(100 * usable_share(presets)[0])}% of a server's {number(PER_SERVER)} × "
        f"{quantity(chip.hbm_capacity)}: {size(server)}, "
        f"so the model and cache take {number(need, 3)} servers' worth, rounded up to "
        f"**{number(servers)} servers**, "
        f"{number(servers * PER_SERVER)} GPUs for one user.",
        "A new token passes the pipeline's stages one after another: each stage reads its "
        f"share of the {size(total)} at one server's bandwidth, {number(PER_SERVER)} × "
        f"{quantity(chip.hbm_bandwidth, 3)} = {quantity(bandwidth, 3)}, while the other stages "
        f"wait. So a step reads all {size(total)} at {quantity(bandwidth, 3)}: "
        f"{quantity(step, 3)}, as if one server could hold it all. Pipelining buys room, not "
        "speed.",
        f"Check the regime: the multiplies (two FLOPs per parameter, plus attention over the "
        f"{millions}) take {quantity(compute, 2)} at one "
        f"server's {number(PER_SERVER)} × {flop_rate(chip.dense_flops_bf16)} of dense BF16 "
        "math, far under the reads.",
        f"One token per step: about **{quantity(speed, 2)}**.",
    )

    def solve(weights=weights, cache=cache, rate=bandwidth):
        """Tokens per second of a pipelined step that reads ``weights`` and ``cache`` at
        ``rate`` (one server's bandwidth): the chain each slip reruns."""
        return (Q_(1, "token") * rate / (weights + cache)).to("token/s")

    require(abs((solve() / speed).to("").m - 1) < 1e-6, "solve reruns the answer")
    # each slip rerun through the whole chain, the likelier first (reader 23 P8, reader 24 P4);
    # the server count a slip changes never enters the speed: pipelining is latency neutral
    keys_only = (solve(cache=cache / 2) / speed).to("").m  # inside, or at the one-byte slip
    candidates = [
        (
            speed * servers,
            f"You let all {number(servers * PER_SERVER)} GPUs read at once; in a pipeline a "
            "token's stages run one after another, so each server waits for the one before "
            "(pipelining is latency neutral).",
        ),
        (
            solve(weights / 2, cache / 2),
            "You stored one byte per value; BF16 is two, for the weights and the cache."
            if keys_only <= FACTOR
            # one vector per head lands here too (the cache is most of the bytes)
            else "You read about half the bytes a step reads: BF16 stores each weight and "
            "cached value in two bytes, and each KV head caches a key and a value.",
        ),
        (
            solve(cache=0 * cache),
            f"You left the KV cache out: the {size(cache)} of this conversation's cache is read "
            "every step, beside the weights.",
        ),
        (
            solve(rate=chip.hbm_bandwidth),
            f"You used one GPU's bandwidth: a pipeline stage is a server, whose "
            f"{number(PER_SERVER)} GPUs read their shares at once.",
        ),
        (
            solve(weights=0 * weights),
            "You left the weights out: every step reads them too.",
        ),
    ]
    outside = []  # named where it lands outside twice the window (×FACTOR²) either way
    for value, why in candidates:
        off = max((value / speed).to("").m, (speed / value).to("").m)
        require(off <= FACTOR or off > FACTOR**2, "each slip lands clear")  # never between
        if off > FACTOR**2:
            outside.append(Mistake(value, why))
    for i, a in enumerate(outside):  # two named slips never share a value: redraw
        for b in outside[:i]:
            apart = max((a.value / b.value).to("").m, (b.value / a.value).to("").m)
            require(apart > FACTOR, "each named slip lands apart")
    mistakes = distinct_mistakes(outside, speed, FACTOR, factor=True)  # one slip per value
    solution = solution[:1] + (solution[1].replace("**", ""),) + solution[2:]
    return Draw(
        hint=(
            "Bytes per token of context, then the whole window plus the weights, then the "
            "servers; a pipelined token visits the servers one after another."
        ),
        text=text,
        answer=speed,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
    )
