"""How long a cache may wait in HBM before a recompute is cheaper: the ratio of a token's
recompute time to its read time, times the drain time."""

from __future__ import annotations

from book.format import context_tokens, number, quantity, said_number
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lands_clear,
    money,
    require,
)
from book.problem_bank.batching._figures import attention_cost
from units import Q_

KIND = "multi"
TITLE = "How long may a cache wait in HBM?"
USES = (
    "kv_bytes_per_token",
    "prefill_flops_per_token",
    "cache_hold_cost",
    "cache_readback_cost",
    "cache_recompute_cost",
    "cache_breakeven_time",
)
LECTURE = "1:47:30"

HARDWARE, TIER = "h100_sxm", "hbm_h100"  # the HBM tier preset is an H100's
MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b", "qwen3_235b_a22b")
PRECISIONS = {"bf16": "BF16", "fp8": "FP8"}
CONTEXTS = (8192, 32_768, 131_072)
ONE = Q_(1, "sequence")
TOLERANCE = 0.03


def draw(rng, presets) -> Draw:
    name, precision = rng.choice(MODELS), rng.choice(tuple(PRECISIONS))
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    case = dict(
        hardware=HARDWARE,
        model=name,
        precision=precision,
        price="lecture_gpu",
        context_length=context,
        tier=TIER,
        presets=presets,
    )
    model, chip = presets.get("model", name), presets.get("hardware", HARDWARE)
    word = PRECISIONS[precision]
    tokens = (context * ONE).to("token")
    recompute = evaluate("cache_recompute_cost", detailed=True, **case)
    rent, flops = recompute.inputs["price_per_chip_hour"].value, recompute.inputs["flops"].value
    per_token = recompute.inputs["prefill_flops_per_token"].value.to("GFLOP/token")
    weights_only = (2 * model.params_active * Q_(1, "FLOP/parameter/token")).to("GFLOP/token")
    kv = evaluate("kv_bytes_per_token", **case).to("kB/token")
    capacity, bandwidth = chip.hbm_capacity, chip.hbm_bandwidth
    hold = (evaluate("cache_hold_cost", **case) * ONE / tokens).to("USD/Mtoken/hour")
    readback = (evaluate("cache_readback_cost", **case) * ONE / tokens).to("USD/Mtoken")
    rebuild = (recompute.value * ONE / tokens).to("USD/Mtoken")
    even = evaluate("cache_breakeven_time", **case).to("s")
    drain = (capacity / bandwidth).to("ms")
    read_time = (kv / bandwidth).to("ns/token")
    compute_time = (per_token / flops).to("ns/token")
    corner = (compute_time / read_time).to("").m  # a token's prefill over its cache's read
    require(abs((even / (drain * (corner - 1))).to("").m - 1) < 1e-6, "the chapter's HBM rule")
    require(even > Q_(1, "s"), "a hold worth asking about")
    # leaving attention out, or counting it over the whole context (not causal), moves the
    # answer by attention's share of the prefill: redraw until that is twice the 3% window, so
    # either slip is graded wrong and told why (reader 17: 4.0% slipped past undiagnosed)
    share = ((per_token - weights_only) / per_token).to("").m
    require(share >= 2 * TOLERANCE, "attention's share of the prefill is clear of the window")
    gqa = model.n_kv_heads
    moe = model.params_total > model.params_active
    params = (
        f"{quantity(model.params_total, 4)} in all, {quantity(model.params_active, 3)} active "
        "per token"
        if moe
        else quantity(model.params_active, 4)
    )

    text = (
        f"You serve {model.name} in {word} (weights, KV cache and math) on {chip.name} GPUs "
        f"({money(capacity)} of HBM at {money(bandwidth)}, {quantity(flops.to('TFLOP/s'), 4)} "
        f"dense in {word}), rented at {money(rent)}. The model has {params}; its attention: "
        f"{number(model.layers)} layers, each with {number(model.n_heads)} query heads and "
        f"{number(gqa)} KV heads of {number(model.head_dim)} values; "
        f"{attention_cost(name, presets)}. A conversation of {context_tokens(context, 6)} goes "
        "quiet. You may hold its KV cache in HBM (paying the GPUs' rent for the share of HBM "
        "it fills, and their time to read it back when the user returns) or drop it and run "
        "the prefill again at the GPUs' dense peak, causal attention's FLOPs included. For how "
        "long can the user stay away before holding the cache costs more than recomputing it? "
        "Answer in seconds."
    )
    hourly = (hold * Q_(1, "Mtoken")).to("USD/hour")  # a million tokens' cache, for an hour

    def cents(q, said: bool = False) -> str:
        """A cost per million tokens in cents: "8.79¢"; ``said``, as a sentence says a figure
        nobody needs exactly: "0.0027¢"."""
        x = q.to("USD/Mtoken").m * 100
        return f"{said_number(x, 2).said if said else number(x, 3)}¢"

    solution = (
        f"Per token of context the cache holds a key and a value for each of {number(gqa)} KV "
        f"heads of {number(model.head_dim)} values in {number(model.layers)} layers, at "
        f"{word}'s bytes per value: {money(kv)}.",
        f"Holding it costs the rent of the HBM it fills: {money(kv)} of a GPU's "
        f"{money(capacity)}, rented at {money(rent)}, so a million tokens' cache costs "
        f"{number(hourly.m, 3)} USD an hour to hold. Reading it back takes "
        f"{quantity(read_time * Q_(1, 'token'), 3)} of GPU time per token at "
        f"{money(bandwidth)}: {cents(readback, said=True)} for a million tokens, next to nothing.",
        f"Recomputing costs the prefill: {money(weights_only)} for the weights (two FLOPs "
        f"per {'active ' if moe else ''}parameter) plus causal attention over half the "
        f"context on average, {money(per_token)} in all, "
        f"{quantity((compute_time * Q_(1, 'token')).to('µs'), 3)} of GPU time per token at "
        f"{quantity(flops.to('TFLOP/s'), 4)}: {cents(rebuild)} for a million tokens.",
        "Holding wins until its rent plus the read back adds up to one recompute: "
        f"({cents(rebuild)} − {cents(readback, said=True)}) ÷ {number(hourly.m, 3)} USD an "
        "hour, for a million tokens either way. The rent cancels, and so does the precision "
        "(half the bytes, twice the FLOP rate): the wait is (prefill time ÷ read-back time − 1) "
        f"drain times of HBM, ({number(corner, 3)} − 1) × {money(drain, 3)}.",
        f"The user may stay away **{quantity(even, 4)}**; any longer, recomputing is cheaper.",
    )
    weights_flops = (weights_only / flops).to("ns/token")
    # half the cache: one vector per KV head, or (in BF16) one byte per value; both halve the
    # cache's bytes and its read, so they land on one value by construction (reader 26)
    halved = (
        "You counted one vector per KV head, or one byte per value; each head caches a key "
        "and a value, at BF16's two bytes each."
        if precision == "bf16"
        else "You counted one vector per KV head; each caches a key and a value."
    )
    mistakes = [Mistake(drain * ((per_token / (kv / 2)) * (bandwidth / flops) - 1).to(""), halved)]
    if precision == "fp8":  # the cache at BF16's two bytes a value, the math still in FP8
        mistakes.append(
            Mistake(
                drain * ((per_token / (kv * 2)) * (bandwidth / flops) - 1).to(""),
                "You stored the cache at two bytes per value; FP8 stores one.",
            )
        )
    attention = compute_time - weights_flops  # causal: each token attends to half the context
    mistakes.append(  # six FLOPs per parameter for the weights; attention as counted
        Mistake(
            drain * (((3 * weights_flops + attention) / read_time).to("").m - 1),
            "Six FLOPs per parameter is training; a prefill is a forward pass, two.",
        )
    )
    mistakes += [
        Mistake(
            drain * ((weights_flops / read_time).to("").m - 1),
            "You left attention out of the prefill; over this context it adds "
            f"{number(100 * share, 2)}% to the prefill's FLOPs.",
        ),
        Mistake(
            drain * (((compute_time + attention) / read_time).to("").m - 1),
            "You counted attention over the whole context for every token; a causal prefill's "
            "token attends only to those before it, half the context on average.",
        ),
    ]
    if moe:  # reader 19: the prefill over every parameter, as sibling problems name it
        every = weights_flops * (model.params_total / model.params_active).to("").m
        mistakes.append(
            Mistake(
                drain * (((every + attention) / read_time).to("").m - 1),
                "You counted every parameter in the prefill; a token passes through only the "
                "active experts.",
            )
        )
    mistakes = [Mistake(m.value.to("s"), m.why) for m in mistakes]
    # inside the window or twice its width away (named), never between (reader 20)
    for m in mistakes:
        require(lands_clear(m.value, even, TOLERANCE), "each slip lands clear")
    named = [m for m in mistakes if abs((m.value / even).to("").m - 1) > TOLERANCE]
    require(len(distinct_mistakes(named, even, TOLERANCE)) == len(named), "one slip, one value")
    return Draw(
        text=text,
        answer=even,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, even, TOLERANCE),
        hint="Per token of context: what does an hour of holding cost, what does one read back "
        "cost, and what does one recompute cost? Holding wins until the first two add up to "
        "the third.",
    )
