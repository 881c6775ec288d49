"""A price kink bounds the KV cache per token; a Llama-shaped cache overshoots it by far."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import (
    LECTURE_RATIO_GLOSS,
    Draw,
    Mistake,
    distinct_mistakes,
    lands_clear,
    lecture_ratio,
    require,
    slips_apart,
)
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "What a price kink rules out"
USES = ("kv_bytes_from_price_kink", "gqa_kv_values_per_token", "kv_bytes_per_token")
LECTURE = "1:33:02"

TOLERANCE = 0.02  # the lecture's ≈300 lands 4% out on GB200 and MI355X

CHIPS = ("h100_sxm", "h200", "b200", "gb200_nvl72", "mi355x")
ACTIVE = (50, 100, 150, 200)  # billions of active parameters the provider is believed to run
KINKS = (128_000, 200_000, 256_000)  # tokens: where the price list steps up
SHAPES = (
    "llama_3_1_70b",
    "llama_3_1_405b",
    "llama_3_1_8b",
    "qwen3_235b_a22b",
    "mixtral_8x7b",
    "llama_2_70b",
)


def draw(rng, presets) -> Draw:
    hardware = rng.choice(CHIPS)
    active = Q_(rng.choice(ACTIVE), "Gparameter")
    kink = Q_(rng.choice(KINKS), "token/sequence")
    shape = rng.choice(SHAPES)
    chip = presets.get("hardware", hardware).name.split(" (")[0]
    model = presets.get("model", shape)

    implied = get("kv_bytes_from_price_kink").evaluate_detailed(
        hardware=hardware,
        precision="fp8",
        n_active=active,
        price_kink_context=kink,
        presets=presets,
    )
    flops, bandwidth = implied.inputs["flops"].value, implied.inputs["mem_bandwidth"].value
    per_param = implied.inputs["flops_per_param_token"].value
    implied = implied.value.to("byte/token")
    counted = get("gqa_kv_values_per_token").evaluate_detailed(model=shape, presets=presets)
    values, pair = counted.value, counted.inputs["kv_vectors_per_token"].value
    cached = get("kv_bytes_per_token").evaluate(model=shape, precision="fp8", presets=presets)
    cached = cached.to("kB/token")
    ratio = (cached / implied).to("")

    layers, kv_heads, head_dim = model.layers, model.n_kv_heads, model.head_dim
    per_token_flops = (per_param * active).to("GFLOP/token")
    per_token_time = (per_token_flops / flops).to("µs/token")
    text = (
        f"An API provider charges more per token for prompts longer than "
        f"{context_tokens(kink)}. You believe it serves a model with {quantity(active)} active "
        f"per token on {chip} GPUs ({quantity(flops)} dense at FP8, {quantity(bandwidth)} of HBM "
        "bandwidth), with weights and KV cache at FP8, and that the step in price sits where a "
        "token's KV-cache reads start to take longer than its matrix multiplies (attention's own "
        f"FLOPs aside). A colleague suggests the model has {model.name}'s attention: "
        f"{number(layers)} layers, each with {number(kv_heads)} KV heads of {number(head_dim)} "
        "values. How many times more KV-cache bytes per token would that attention store than "
        "the price step allows?"
    )
    solution = (
        "At the step, one token's KV read takes as long as its compute. Its compute is "
        f"{number(per_param.magnitude)} FLOPs per active parameter, "
        f"{quantity(per_token_flops)}, which takes {quantity(per_token_time)} at "
        f"{quantity(flops)}.",
        f"In that time HBM delivers {quantity((bandwidth * per_token_time).to('MB/token'))}, "
        f"and the read must cover all {context_tokens(kink)} of context: "
        f"{quantity(implied)}. That is all the KV cache a token may cost if the step sits where "
        "you think.",
        "Grouped-query attention caches a key and a value per KV head per layer: "
        f"{number(pair.magnitude)} × "
        f"{number(kv_heads)} × {number(head_dim)} × {number(layers)} = {quantity(values, 6)}, "
        f"at one byte each at FP8: {quantity(cached)}.",
        f"With such a cache the KV reads would overtake the compute at about "
        f"{context_tokens(kink / ratio, 2)}, long before the step: the provider's model must "
        "keep a full-context cache in only a few layers (sharing it or using sliding windows "
        f"elsewhere). This attention stores more than the step allows by {quantity(cached)} / "
        f"{quantity(implied)} = **{number(ratio.m, 3)} times**.",
    )
    # the lecture's own rule: bytes per token = N_active / (300 × context), its round ≈300
    # multiplies per weight read (lecture_ratio: FLOP/s over bandwidth at BF16, multiply-adds
    # per byte at FP8) for this chip's FP8 rate over twice its bandwidth, one byte a weight
    # (reader 22)
    ridge = (flops / bandwidth).to("FLOP/B").m
    per_byte = ridge / 2  # one byte a weight at FP8, two FLOPs a multiply-add
    rule = lecture_ratio(presets)
    lecture = ratio * rule / per_byte
    # the ≈300 read as FLOPs per byte at FP8, where it is FLOPs per byte only at BF16 (half
    # the multiply-adds; reader 26's 24.8)
    as_flops = ratio * rule / ridge
    for value in (lecture, as_flops):
        require(lands_clear(value, ratio, TOLERANCE), "the lecture's round figure lands clear")
    one_vector_words = (
        "You counted one vector per KV head; each caches a key and a value, two vectors."
    )
    as_flops_words = (
        f"You took the lecture's ≈{number(rule)} as FLOPs per byte at FP8; it counts "
        f"multiplies per weight read ({LECTURE_RATIO_GLOSS}): this chip's FP8 rate over twice "
        f"its bandwidth is {number(per_byte, 3)}."
    )
    merged = abs((as_flops / (ratio / 2)).to("").m - 1) < 2 * TOLERANCE
    if merged:
        # on a chip whose figure is near 300 the two land together whatever the draw: one
        # message names both
        one_vector_words = (
            "Two slips give this value: you counted one vector per KV head (each caches a key "
            f"and a value), and taking the lecture's ≈{number(rule)} as FLOPs per byte at FP8 "
            f"does too (it counts multiplies per weight read, {LECTURE_RATIO_GLOSS}: this "
            f"chip's FP8 rate over twice its bandwidth is {number(per_byte, 3)})."
        )
    mistakes = [
        Mistake(ratio / 2, one_vector_words),
        Mistake(  # one FLOP per parameter doubles it (as would a two-byte cache: one message)
            ratio * 2,
            "That is twice the ratio: a token's compute is two FLOPs per active parameter (a "
            "multiply and an add), not one.",
        ),
        Mistake(
            1 / ratio,
            "That is the ratio inverted: the question asks how many times more bytes the "
            "attention stores than the step allows.",
        ),
    ]
    if abs((lecture / ratio).to("").m - 1) > TOLERANCE:
        mistakes.insert(
            0,
            Mistake(
                lecture,
                f"You used the lecture's round ≈{number(rule)} multiplies per weight read "
                "(multiply-adds per byte at FP8, one byte a weight); this chip's FP8 rate over "
                f"twice its bandwidth is {number(per_byte, 3)}.",
            ),
        )
    if not merged and abs((as_flops / ratio).to("").m - 1) > TOLERANCE:
        mistakes.append(Mistake(as_flops, as_flops_words))
    require(slips_apart(mistakes, ratio, TOLERANCE), "no two slips land on one value")
    return Draw(
        text=text,
        answer=ratio,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, ratio, TOLERANCE),
        hint="At the step, a token's KV read takes as long as its compute; solve for the bytes.",
    )
