"""A price kink bounds the KV cache per token; a Llama-shaped cache overshoots it by far."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, lands_clear, lecture_ratio, require
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "What a price kink rules out"
USES = ("kv_bytes_from_price_kink", "gqa_kv_values_per_token", "kv_bytes_per_token")
LECTURE = "1:33:02"

TOLERANCE = 0.03

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
    # the lecture's own rule: bytes per token = N_active / (300 × context), its round 300
    # multiply-adds per byte for this chip's FP8 rate over twice its bandwidth (reader 22)
    per_byte = (flops / bandwidth).to("FLOP/B").m / 2  # one byte a weight, two FLOPs a multiply
    lecture = ratio * lecture_ratio(presets) / per_byte
    require(lands_clear(lecture, ratio, TOLERANCE), "the lecture's round figure lands clear")
    mistakes = [
        Mistake(
            ratio / 2,
            "You counted one vector per KV head; each caches a key and a value, two vectors.",
        ),
        Mistake(  # one FLOP per parameter doubles it (as would a two-byte cache: one message)
            ratio * 2,
            "That is twice the ratio: a token's compute is two FLOPs per active parameter (a "
            "multiply and an add), not one.",
        ),
    ]
    if abs((lecture / ratio).to("").m - 1) > TOLERANCE:  # named where it lands outside
        mistakes.insert(
            0,
            Mistake(
                lecture,
                f"You used the lecture's round {number(lecture_ratio(presets))} multiply-adds "
                f"per byte; this chip's FP8 rate over twice its bandwidth is "
                f"{number(per_byte, 3)}.",
            ),
        )
    # reader 26: the lecture's ≈300 halved (as if FP8 halved it; FP8 doubles a chip's FLOPs and
    # halves a weight's bytes). On a chip whose figure is near 300 it lands on the one-vector
    # slip, whatever the draw: there one message names both
    rule = lecture_ratio(presets)
    halved = ratio * (rule / 2) / per_byte
    require(lands_clear(halved, ratio, TOLERANCE), "the lecture's figure halved lands clear")
    halved_words = (
        f"You halved the lecture's ≈{number(rule)} multiply-adds per byte for FP8; at FP8 a "
        "chip does twice the FLOPs and a weight takes one byte, so this chip's FP8 rate over "
        f"twice its bandwidth is {number(per_byte, 3)}."
    )
    one_vector = mistakes[-2]
    if abs((halved / one_vector.value).to("").m - 1) < 2 * TOLERANCE:
        mistakes[-2] = Mistake(
            one_vector.value,
            "Two slips give this value: you counted one vector per KV head (each caches a key "
            f"and a value), and halving the lecture's ≈{number(rule)} for FP8 does too (this "
            f"chip's FP8 rate over twice its bandwidth is {number(per_byte, 3)}).",
        )
    else:
        require(
            all(abs((halved / m.value).to("").m - 1) >= 2 * TOLERANCE for m in mistakes),
            "the lecture's figure halved lands apart from the other slips",
        )
        mistakes.append(Mistake(halved, halved_words))
    return Draw(
        text=text,
        answer=ratio,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, ratio, TOLERANCE),
        hint="At the step, a token's KV read takes as long as its compute; solve for the bytes.",
    )
