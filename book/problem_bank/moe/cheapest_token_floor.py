"""At long context the HBM caps the batch: a rack's cheapest token pays for reading its cache."""

from __future__ import annotations

import math

from book.format import number
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lecture_ratio,
    money,
    require,
)
from book.problem_bank._rents import rent
from book.problem_bank.batching._figures import (
    as_shown,
    chip_name,
    figures,
    kv_shape,
    size,
    tokens,
    weight_bytes,
)
from units import Q_

KIND = "estimate"
TITLE = "The cheapest token a rack can make at long context"
USES = ("compute_cost_floor", "kv_cache_per_batch", "hbm_drain_time", "cost_per_token")

# GQA (Qwen3) and MLA with 64 heads (Kimi K2): attention's math stays well under the reads at
# these contexts. DeepSeek-V3's 128 MLA heads bring it to about 80% of them, inside the factor.
MODELS = ("kimi_k2", "qwen3_235b_a22b")
GQA = ("qwen3_235b_a22b",)  # a plain GQA cache: the statement gives its shape, not its bytes
# the chapter's rack, its GPUs' figures given (reader 19: the lecture states the B200's, not the
# GB200's); the student brings the chapter's rules (the weights' room, a full HBM read in one
# drain time, 2N plus attention), and the answer is graded within a factor
RACKS = ("gb200_nvl72",)
CONTEXTS = (32768, 65536, 131072)
# graded within ×1.3, so a slip is named only outside ×1.69 (twice the window): a KV cache in
# two bytes (×2) and the math-bound price are; recalling 192 GB of HBM for 186 moves the
# answer by well under 1% (the HBM sets both the batch and the drain time, and cancels)
FACTOR = 1.3


def scenario(rng, presets):
    """A model, rack and context whose largest batch leaves the token well above its compute
    floor, attention's math included (so that floor, a likely answer, falls outside the
    factor)."""
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
        # the statement's figures, as a student reads them
        case.update(
            as_shown(
                f,
                "flops",
                "mem_bandwidth",
                "hbm_capacity",
                "n_total",
                "n_active",
                "attention_flops_per_token",
            )
        )
        if case["model"] not in GQA:  # a GQA cache is given by its shape, so exactly
            case.update(as_shown(f, "kv_bytes_per_token"))
        f = figures(**case)
        share = presets.parameter["usable_hbm_share"].value  # what a serving engine fills
        room = (share * evaluate("scaleup_memory", **case)).to("GB") - weight_bytes(f)
        per_sequence = (f["kv_bytes_per_token"] * case["context_length"] * Q_(1, "sequence")).to(
            "GB"
        )
        batch = Q_(math.floor((room / per_sequence).to("").m), "sequence")
        case["batch_size"] = batch
        cost = evaluate("cost_per_token", **case).to("USD/Mtoken")
        if batch.m >= 100 and cost > 1.2 * FACTOR**2 * math_floor(case):
            return case, f, room, per_sequence


def math_floor(case):
    """What a token would cost if the step took only its multiplies, attention's included:
    the rack's rent for the batch's compute time, shared by its tokens."""
    compute = evaluate("compute_time", **case)
    tokens_per_step = case["batch_size"] * Q_(1, "token/sequence")
    rent_per_step = case["price_per_chip_hour"] * case["n_chips"] * compute
    return (rent_per_step / tokens_per_step).to("USD/Mtoken")


def draw(rng, presets) -> Draw:
    case, f, room, per_sequence = scenario(rng, presets)
    batch, context, n, price = (
        case["batch_size"],
        case["context_length"],
        case["n_chips"],
        case["price_per_chip_hour"],
    )
    answer = evaluate("cost_per_token", **case).to("USD/Mtoken")
    weights_floor = evaluate("compute_cost_floor", **case).to("USD/Mtoken")
    floor = math_floor(case)
    step = evaluate("step_time", **case).to("ms")
    memory = evaluate("memory_time", **case).to("ms")
    compute = evaluate("compute_time", **case).to("ms")
    drain = evaluate("hbm_drain_time", **case).to("ms")
    require(memory > compute, "a full rack at long context is bound by its reads")
    usable = presets.parameter["usable_hbm_share"].value
    filled = (memory / drain).to("").m  # the share of the HBM a step reads
    require(usable.m - 0.01 < filled <= usable.m, "the filled HBM reads in its share of a drain")
    kv, attention = f["kv_bytes_per_token"].to("kB/token"), f["attention_flops_per_token"]
    flops, bandwidth, hbm = f["flops"].to("PFLOP/s"), f["mem_bandwidth"], f["hbm_capacity"]
    per_token = (2 * f["n_active"] * Q_(1, "FLOP/parameter")).to("GFLOP")
    per_token_attention = (attention * context * Q_(1, "sequence")).to("GFLOP")
    require(per_token_attention > per_token, "at these contexts attention outweighs the weights")
    read_own = (per_sequence / bandwidth * price * Q_(1, "chip/token")).to(
        "USD/Mtoken"
    )  # one GPU's rent for reading one sequence's cache once
    rack, name = chip_name(presets, case["hardware"]), presets.get("model", case["model"]).name
    weights = weight_bytes(f)
    share = (compute / memory).to("").m
    intensity = (attention / f["kv_bytes_per_token"]).to("FLOP/B")
    ridge = (flops / bandwidth).to("FLOP/B")
    require(intensity < ridge, "attention alone is bound by its cache's reads")

    gqa = case["model"] in GQA
    cache_words = (
        f"the KV cache is {kv_shape(case['model'], presets)}, kept in FP8"
        if gqa
        else f"the KV cache takes {money(kv, 3)} of context in FP8"
    )
    kv_bytes = (
        f"A token of context caches a key and a value per KV head per layer, one byte each in "
        f"FP8: {money(kv.to('byte/token'))}. "
        if gqa
        else ""
    )
    # a true estimate (reader 22): the statement withholds the GPU's math; the student brings
    # the chapter's ≈300 multiplies per weight read (multiply-adds per byte at FP8, ≈600 FLOPs
    # per byte, one byte a weight, as kink_rules_out_gqa counts it) to see that attention's
    # few FLOPs per cache byte leave the reads, not the multiplies, to set the step (checked on
    # the withheld figures)
    text = (
        f"You serve {name} ({money(f['n_total'], 3)} in all, {money(f['n_active'], 3)} active "
        f"per token) in FP8 on one {rack} rack of {money(n)} (each with {money(hbm, 3)} of HBM "
        f"at {money(bandwidth, 3)}), rented at {money(price)}. Every conversation carries "
        f"{tokens(context)} of context; {cache_words}, and attention does about "
        f"{number(intensity.m, 2)} FLOPs per byte of cache it reads. You may run any batch "
        "that fits in the "
        f"{number(100 * usable.m)}% of HBM the serving engine fills. Roughly what is the least "
        "a generated token can cost, in USD per million tokens? Any answer within a factor of "
        f"{FACTOR:g} is accepted."
    )
    solution = (
        f"A bigger batch shares the rack's rent over more tokens, so run the largest that fits. "
        f"Room: the engine fills {number(100 * usable.m)}% of the rack's {money(n)} × "
        f"{money(hbm, 3)}; "
        f"the weights take {size(weights)} "
        f"at one byte each, leaving {size(room)}. {kv_bytes}One conversation's cache is "
        f"{tokens(context)} × {money(kv, 3)} = {size(per_sequence)}, so at most "
        f"{money(batch)} fit.",
        f"That batch fills the engine's share of the HBM, so a step reads all of it: "
        f"{number(100 * usable.m)}% of a drain time ({money(hbm, 3)} / {money(bandwidth, 3)} = "
        f"{money(drain, 3)}), {money(memory, 3)}.",
        f"Do the reads bind? A new token costs two FLOPs per active parameter, "
        f"{money(per_token, 3)}, plus attention over its {tokens(context)} of context; "
        f"attention does about {number(intensity.m, 2)} FLOPs per byte of cache it reads, far "
        f"under the ≈{number(2 * lecture_ratio(presets))} a GPU does per byte at FP8 (the "
        f"chapter's ≈{number(lecture_ratio(presets))} multiplies per weight read, at FP8 "
        f"multiply-adds per byte, two FLOPs each; this rack's: {money(flops, 3)} dense in FP8, "
        f"{number(ridge.m, 3)} FLOP/B). So the "
        f"multiplies take only {number(100 * share, 2)}% of the reads ({money(compute, 3)}): "
        f"the reads bind. (Had the math set the step, a token would cost {money(floor, 3)}; "
        f"with the weights' multiplies alone, {money(weights_floor, 3)}.)",
        f"The rack's rent for {money(step, 3)}, shared by {number(batch.m)} tokens: "
        f"**{money(answer, 3)}**, {number((answer / floor).to('').m, 2)} times what the math "
        f"alone would charge. The shortcut: each token pays one GPU's rent for reading its own "
        f"cache once ({size(per_sequence)} at {money(bandwidth, 3)}, {money(read_own, 3)}). "
        "Both the reads and attention's math grow with the context, but attention does far "
        "fewer FLOPs per byte than the GPU can: the cache, not the math, prices the token.",
    )
    slipped = dict(case, kv_precision="bf16")
    slipped_room = (room / (2 * per_sequence)).to("").m
    mistakes = [
        Mistake(
            floor,
            "That is what the math alone would charge, attention included: at this batch a "
            "step takes longer to read the weights and every cache than to do its multiplies.",
        ),
        Mistake(
            weights_floor,
            "You counted only the weights' multiplies, and as if they set the step: at this "
            "context attention's FLOPs outweigh them, and the reads outlast both.",
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
    if gqa:  # the slip the chapter names most: one vector per KV head, twice the batch
        halved = math.floor((room / (per_sequence / 2)).to("").m)
        mistakes.append(
            Mistake(
                evaluate(
                    "cost_per_token",
                    **dict(
                        case,
                        kv_bytes_per_token=f["kv_bytes_per_token"] / 2,
                        batch_size=Q_(halved, "sequence"),
                    ),
                ).to("USD/Mtoken"),
                "You cached one vector per KV head; each caches a key and a value, two vectors.",
            )
        )
    # a slip is named only outside twice the window (×FACTOR²) either way
    kept = tuple(m for m in mistakes if not FACTOR**-2 <= (m.value / answer).to("").m <= FACTOR**2)
    require(kept[0] is mistakes[0], "the factor excludes the math-bound cost")
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(kept, answer, FACTOR, factor=True),
        hint="How many conversations' caches fit beside the weights? At this context, what "
        "sets how long a step of that batch takes?",
    )
