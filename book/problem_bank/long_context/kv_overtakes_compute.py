"""The context at which a decode token's KV reads overtake its compute, attention FLOPs counted."""

from __future__ import annotations

import contextlib
import math
from functools import cache

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
from book.problem_bank.batching._figures import attention_cost
from derivations import get
from units import Q_, ChalkboardError

KIND = "multi"
TITLE = "Where KV reads overtake compute"
USES = (
    "kv_bytes_per_token",
    "gqa_attention_flops",
    "mla_decode_attention_flops",
    "kv_compute_crossover_context",
)

# Counting attention's FLOPs must matter (reader 14, issue 21: a 1.3% shift graded at 0.6% made
# the lecture's shortcut a "mistake" no practitioner would call one). It moves the crossing by
# 1 / (1 - attention's FLOPs per KV byte / the chip's ridge): materially for multi-head latent
# attention, whose heads all work on one cached latent, and for grouped-query attention with
# many query heads per KV head on a chip of few FLOPs per byte; never under MATERIAL.
MODELS = ("deepseek_v3", "kimi_k2", "llama_3_1_405b", "qwen3_235b_a22b")
CHIPS = ("h100_sxm", "h200", "b200", "gb200_nvl72", "mi300x", "a100_sxm")
PRECISIONS = ("bf16", "fp8")
NAMES = {"bf16": "BF16", "fp8": "FP8"}
# The answer is computed from the chip's figures and the active parameters as the statement
# prints them; the student derives the cache bytes and attention's FLOPs exactly from the shape.
# Every draw's tolerance is under half the gap between the answer and the lecture's shortcut
# (attention's FLOPs left out), so the shortcut is always graded wrong; at most MOST.
MOST, FLOOR, MATERIAL = 0.03, 0.005, 0.10
# nor may it magnify a slip in the cache bytes much (reader 19: 1.7 times made a 3% window act
# like 1.8% on the inputs; 5.5 times on some chips): at most MAGNIFY times
MAGNIFY = 2.0
# The crossing divides by a difference of two rates (the chip's FLOPs per byte less attention's),
# so it magnifies rounding: a student who writes the cache and attention's FLOPs to three
# figures must land within half the tolerance, or the scenario is drawn again.


@cache
def _solved(equation, name: str):
    """``equation.solve_for(name)``, once per catalogue equation (a new solved equation on
    every call compiles, and misses the evaluation memo, afresh)."""
    return equation.solve_for(name)


def _shown(q, digits):
    return Q_(float(f"{q.m:.{digits}g}"), q.units)


def printed(result):
    """The figures the statement prints: the chip's and attention's FLOPs at four figures (the
    lecture teaches no attention variant's count, so the statement gives it), the parameters
    at three."""
    used = result.inputs
    return dict(
        flops=_shown(used["flops"].value, 4),
        mem_bandwidth=_shown(used["mem_bandwidth"].value, 4),
        n_active=_shown(used["n_active"].value.to("Gparam"), 3),
        attention_flops_per_token=_shown(
            used["attention_flops_per_token"].value.to("MFLOP/token"), 4
        ),
    )


def from_shown(crossover, result, case):
    """The crossing from the printed figures and the cache at three figures, as a student
    would write it."""
    used = result.inputs
    return crossover.evaluate(
        **case,
        **printed(result),
        kv_bytes_per_token=_shown(used["kv_bytes_per_token"].value, 3),
    )


def shortcut(result, case):
    """The lecture's crossing, attention's FLOPs left out, from the printed figures."""
    kink = _solved(get("kv_bytes_from_price_kink"), "price_kink_context")
    per_token = result.inputs["kv_bytes_per_token"].value
    shown = {k: v for k, v in printed(result).items() if k != "attention_flops_per_token"}
    return kink.evaluate(implied_kv_bytes_per_token=per_token, **case, **shown)


def _attention(model, presets) -> str:
    if model.attention == "mla":
        return (
            f"multi-head latent attention: {number(model.n_heads)} query heads per layer read a "
            f"cached latent of {number(model.kv_lora_rank)} values and a rotary key of "
            f"{number(model.qk_rope_head_dim)} values, in {number(model.layers)} layers (the "
            "key and value projections absorbed, so each head works on the latent directly); "
            + attention_cost(model.id, presets)
        )
    return (
        f"grouped-query attention: {number(model.n_heads)} query heads and "
        f"{number(model.n_kv_heads)} KV heads of {number(model.head_dim)} values per layer, "
        f"in {number(model.layers)} layers; {attention_cost(model.id, presets)}"
    )


def draw(rng, presets) -> Draw:
    crossover = get("kv_compute_crossover_context")
    while True:  # draw until the KV reads do overtake compute (MLA may never, on some chips)
        name, hardware, precision = rng.choice(MODELS), rng.choice(CHIPS), rng.choice(PRECISIONS)
        chip = presets.get("hardware", hardware)
        if chip.get(f"dense_flops_{precision}") is None:
            continue
        case = dict(model=name, hardware=hardware, precision=precision, presets=presets)
        try:
            result = crossover.evaluate_detailed(**case)
            exact = crossover.evaluate(**case, **printed(result)).to("token/sequence")
        except ChalkboardError:
            continue
        plain = shortcut(result, case).to("token/sequence")
        gap = abs((plain / exact).to("").m - 1)  # the shortcut, from the answer
        tolerance = min(MOST, math.floor(gap / 2 * 1000) / 1000)  # as shown: 0.013
        rounded = abs((from_shown(crossover, result, case) / exact).to("").m - 1)
        used = result.inputs
        ridge = (used["flops"].value / used["mem_bandwidth"].value).to("FLOP/byte")
        per_byte = used["attention_flops_per_token"].value / used["kv_bytes_per_token"].value
        magnify = (ridge / (ridge - per_byte.to("FLOP/byte"))).to("").m
        if (
            gap >= MATERIAL
            and tolerance >= FLOOR
            and rounded < tolerance / 2
            and magnify <= MAGNIFY
        ):
            break  # else the shortcut is too near, or the crossing too near singular, to grade
    model = presets.get("model", name)
    context = exact
    used = {**result.inputs}
    shown = printed(result)
    flops, bandwidth = shown["flops"], shown["mem_bandwidth"]
    per_token = used["kv_bytes_per_token"].value.to("kB/token")
    attention = shown["attention_flops_per_token"]
    weights = (used["flops_per_param_token"].value * shown["n_active"]).to("GFLOP/token")
    ridge = (flops / bandwidth).to("FLOP/byte")
    per_byte = (attention / per_token).to("FLOP/byte")
    magnify = (ridge / (ridge - per_byte)).to("").m  # d ln L / d ln (cache bytes)
    active = (
        f"{quantity(shown['n_active'])} active per token"
        if model.get("experts_routed")
        else quantity(shown["n_active"])
    )

    text = (
        f"{model.name} ({active}) runs decode on {chip.name.split(' (')[0]} GPUs "
        f"({quantity(flops)} dense at {NAMES[precision]}, {quantity(bandwidth)} of HBM), with "
        f"weights and KV cache in {NAMES[precision]}. It uses {_attention(model, presets)}. "
        "At a large batch, which shares the weight reads, beyond what context length (in "
        "tokens per sequence) do a sequence's KV reads take longer than its multiplies, "
        "attention included?"
    )
    mac = used["flops_per_multiply_add"].value
    token = Q_(1, "token")
    if model.attention == "mla":
        attn_words = (
            f"each of {number(model.n_heads)} heads scores the latent and the rotary key "
            f"({number(model.kv_lora_rank)} + {number(model.qk_rope_head_dim)} multiply-adds) "
            f"and sums the latent ({number(model.kv_lora_rank)} more), at {quantity(mac)} a "
            f"multiply-add, in {number(model.layers)} layers"
        )
    else:
        attn_words = (
            f"each of {number(model.n_heads)} query heads scores a key and sums a value, "
            f"{number(model.head_dim)} multiply-adds each at {quantity(mac)}, in "
            f"{number(model.layers)} layers"
        )
    solution = (
        f"Each token of context adds {quantity(per_token * token)} to a sequence's cache, "
        "read once per step.",
        f"Each token of context also costs the new token {quantity(attention * token, 4)} of "
        f"attention, as given: {attn_words}. The weights cost {quantity(weights * token)} per "
        "new token, whatever the context.",
        f"Set the reads equal to the multiplies: L × {quantity(per_token * token)} / "
        f"{quantity(bandwidth)} = ({quantity(weights * token)} + L × "
        f"{quantity(attention * token, 4)}) / {quantity(flops)}. Attention spends "
        f"{number(per_byte.m, 3)} FLOPs per KV byte against the chip's {number(ridge.m, 3)} "
        "FLOPs per byte, so the reads do win, and solving for L gives the context."
        + (
            f" The answer is sensitive: L divides by the difference of those two rates, so a "
            f"relative error in the cache size comes out about {number(magnify, 2)} times larger "
            "in L; carry the figures unrounded."
            if magnify >= 1.5
            else ""
        ),
        f"Leaving attention's FLOPs out, as the lecture does, gives {context_tokens(plain, 3)}, "
        f"{number(100 * (1 - (plain / context).to('').m), 2)}% short. Here that matters: "
        + (
            f"all {number(model.n_heads)} heads work on the one cached latent"
            if model.attention == "mla"
            else f"{number(model.n_heads // model.n_kv_heads)} query heads share each KV head"
        )
        + ", so attention is no small part of the multiplies, which keep pace with the reads "
        "that much longer; the context where decode turns bound by its reads (where a bigger "
        f"batch stops paying) moves out with it. Counted in, L = **{quantity(context, 4)}**.",
    )
    candidates = [
        (
            plain,
            "You left attention's FLOPs out, as the lecture's shortcut does; they grow with "
            "the context too, so the multiplies keep up with the reads longer.",
        ),
    ]
    other_bytes = dict(bf16=0.5, fp8=2)[precision]
    byte_words = dict(
        bf16="A BF16 cache stores two bytes per value, not one",
        fp8="An FP8 cache stores one byte per value, not two",
    )[precision]
    if model.attention == "gqa" and precision == "bf16":  # the two halvings agree: one message
        byte_words = (
            "Your cache is half its size: each KV head caches a key and a value, two bytes per "
            "value in BF16"
        )
    slips = [
        (dict(kv_bytes_per_token=per_token * other_bytes), f"{byte_words}."),
        (
            dict(flops_per_param_token=used["flops_per_param_token"].value / 2),
            "A multiply-add is two FLOPs, not one: the weights cost two FLOPs per parameter per "
            "token.",
        ),
    ]
    if model.attention == "gqa" and precision == "fp8":
        slips.append(
            (
                dict(kv_bytes_per_token=per_token / 2),
                "You counted one vector per KV head; each caches a key and a value.",
            )
        )
    # the lecture's round ≈300 multiplies per weight read, brought as FLOPs per byte: right at
    # BF16 (the lecture's own estimate), a misreading at FP8, where it is multiply-adds per byte
    rule = Q_(lecture_ratio(presets), "FLOP/byte")
    reading = (  # what the student's ≈300 was, for the two messages that name it
        f"the lecture's round ≈{number(rule.m)} multiplies per weight read, which at BF16 is "
        f"FLOPs per byte; this chip does {number(ridge.m, 3)} at BF16"
        if precision == "bf16"
        else f"the lecture's round ≈{number(rule.m)} taken as FLOPs per byte at FP8, though it "
        f"counts multiplies per weight read ({LECTURE_RATIO_GLOSS}); this chip does "
        f"{number(ridge.m, 3)} FLOPs per byte at FP8"
    )
    rule_words = f"You used {reading}."
    slips.append(  # inside the window it is the lecture's own estimate, dropped below
        (dict(flops=(rule * bandwidth).to(flops.units)), rule_words)
    )
    # reader 26: the lecture's shortcut taken whole, its round figure with attention left out
    kink = _solved(get("kv_bytes_from_price_kink"), "price_kink_context")
    plain_shown = {k: v for k, v in shown.items() if k != "attention_flops_per_token"}
    plain_shown["flops"] = (rule * bandwidth).to(flops.units)
    with contextlib.suppress(ChalkboardError):
        lecture_whole = kink.evaluate(
            implied_kv_bytes_per_token=used["kv_bytes_per_token"].value, **case, **plain_shown
        )
        candidates.append(
            (
                lecture_whole.to("token/sequence"),
                f"You took the lecture's shortcut whole: attention's FLOPs left out (they grow "
                f"with the context too) and {reading}.",
            )
        )
    for change, why in slips:
        with contextlib.suppress(ChalkboardError):  # no crossing (attention out-spends the
            value = crossover.evaluate(**{**case, **shown, **change})  # reads): no value
            candidates.append((value, why))

    for value, _ in candidates:  # inside the window or twice its width away, never between
        require(lands_clear(value, context, tolerance), "each slip lands clear")
    # the lecture's round figure, where named, lands apart from the other slips (at BF16 on an
    # A100 it fell 3.6% from the one-FLOP slip): one value, one diagnosis. (Attention left out
    # may land near the one-FLOP slip too; listed first, the likelier names that value.)
    named = [v for v, _ in candidates if abs((v / context).to("").m - 1) > tolerance]
    for value, why in candidates:
        if why.startswith(("You used the lecture's round", "You took the lecture's")) and any(
            value is v for v in named
        ):
            pairs = ((Mistake(value, ""), Mistake(v, "")) for v in named if v is not value)
            apart = all(slips_apart(pair, context, tolerance) for pair in pairs)
            require(apart, "the lecture's round figure lands apart")
    mistakes = distinct_mistakes(
        [Mistake(v.to("token/sequence"), w) for v, w in candidates], context, tolerance
    )
    return Draw(
        hint=(
            "Write the cache read time and the compute time, attention included, per token of"
            " context; where do the two lines cross?"
        ),
        text=text,
        answer=context,
        solution=solution,
        tolerance=tolerance,
        mistakes=mistakes,
    )
