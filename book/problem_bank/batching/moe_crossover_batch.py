"""The batch at which an MoE stops paying for its weight reads, and the servers its caches need."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    clear_of_rounding,
    distinct_mistakes,
    evaluate,
    lands_clear,
    lecture_ratio,
    require,
)
from book.problem_bank.batching._figures import (
    figures,
    kv_shape,
    kv_values,
    size,
    tokens,
    usable_share,
)
from units import Q_

KIND = "multi"
TITLE = "How much HBM must an MoE's crossover batch fill?"
USES = ("weight_fetch_time", "compute_time", "crossover_batch", "kv_cache_per_batch")
LECTURE = "15:16"

MODELS = ("deepseek_v3", "qwen3_235b_a22b", "kimi_k2")
MLA = ("deepseek_v3", "kimi_k2")  # a latent cache: its bytes per token are given, not derived
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
PRECISIONS = ("bf16", "fp8")
CONTEXTS = (2048, 4096, 8192)
SERVER = 8  # GPUs in a server


def scenario(rng, presets):
    while True:  # a server count that the figures as shown give alike
        model, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        precision = rng.choice(PRECISIONS)
        context = Q_(rng.choice(CONTEXTS), "token/sequence")
        case = dict(hardware=hardware, model=model, precision=precision, presets=presets)
        batch = evaluate("crossover_batch", **case).to("sequence")
        f = figures(**case, context_length=context)
        weights = (f["n_total"] * f["weight_bytes_per_value"] * Q_(1, "value/parameter")).to("TB")
        caches = evaluate(
            "kv_cache_per_batch", **case, batch_size=batch, context_length=context
        ).to("TB")
        server = (usable_share(presets)[0] * SERVER * f["hbm_capacity"]).to("TB")
        quotient = ((weights + caches) / server).to("").m
        if quotient > 1.2 and clear_of_rounding(quotient, 5e-3):  # one server is no question
            return case, context, batch, f, weights, caches, server, quotient


def draw(rng, presets) -> Draw:
    case, context, batch, f, weights, caches, server, quotient = scenario(rng, presets)
    model, hardware, precision = case["model"], case["hardware"], case["precision"]
    flops, bandwidth = f["flops"], f["mem_bandwidth"]
    total, active = f["n_total"], f["n_active"]
    servers = math.ceil(quotient)
    answer = (weights + caches).to("TB")
    spec = presets.get("model", model)
    chip, name = presets.get("hardware", hardware).name, spec.name
    words = "BF16" if precision == "bf16" else "FP8"
    per_byte = (flops / bandwidth).to("FLOP/B")
    sparsity = (total / active).to("").magnitude
    saturation = evaluate("expert_saturation_batch", **case).to("sequence")
    require(batch > 4 * saturation, "every expert must be read at the crossover batch")
    kv = f["kv_bytes_per_token"].to("kB/token")
    per_token = Q_(1, "token")
    per_sequence = (kv * context).to("MB/sequence")
    if model in MLA:
        cache = f"its latent KV cache takes {quantity(kv * per_token, 4)} per token of context"
        cache_step = f"Each sequence's cache is {tokens(context)} × {quantity(kv, 4)}"
    else:
        cache = f"its attention has {kv_shape(model, presets)}"
        cache_step = (
            f"A token of context caches a key and a value in every head of every layer: "
            f"{kv_values(model, presets)} at "
            f"{quantity(f['weight_bytes_per_value'])}, {quantity(kv, 4)}; each sequence's "
            f"cache is {tokens(context)} of it"
        )

    ratio = (caches / weights).to("").m
    # the cache reads the crossover leaves out make the step memory-bound: 1 + ratio times its
    # multiplies; counting them, the balanced batch is B / (1 - ratio), if the ratio is under one
    if ratio < 1:
        balanced = evaluate(
            "compute_bound_batch",
            **case,
            context_length=context,
            attention_flops_per_token=Q_(0, "FLOP/token"),
        ).to("sequence")
        require(abs((balanced * (1 - ratio) / batch).to("").m - 1) < 1e-6, "B / (1 - ratio)")
        reads = (
            f"(Reading those caches adds {number(ratio, 3)} of the weights' read time to every "
            f"step, so at this batch the step is in fact memory-bound, {number(1 + ratio, 3)} "
            "times its multiplies. Counting the cache reads, the multiplies keep pace only at "
            f"{quantity(batch, 4)} / (1 − {number(ratio, 3)}) = {quantity(balanced, 4)}, with "
            "caches to match, as the MoE chapter's problem 'The largest MoE a rack can serve at "
            "its crossover' counts them.)"
        )
    else:
        reads = (
            f"(Reading those caches would take {number(ratio, 3)} times as long as the weights: "
            "at this batch the step is memory-bound, bound by the cache reads, and at this "
            "context no batch balances, for each sequence's cache takes longer to read than its "
            "multiplies take. The crossover that leaves the caches out holds only for short "
            "contexts.)"
        )
    text = (
        f"You serve {name} ({quantity(total, 3)} in all, {quantity(active, 3)} active per "
        f"token) on {chip} GPUs, weights, math and KV cache in {words}. The chip does "
        f"{quantity(flops.to('TFLOP/s'), 4)} at this precision, reads HBM at "
        f"{quantity(bandwidth.to('TB/s'), 3)} and holds {quantity(f['hbm_capacity'], 3)}. You "
        "run the batch at which a decode step's multiplies in the weights take as long as "
        "reading the weights (attention's FLOPs and the cache's reads aside). Every sequence "
        f"has {tokens(context)} of context, and {cache}. How much HBM must hold the weights "
        "and that batch's caches? Answer in TB."
    )
    solution = (
        "A step reads every weight once, whatever the batch (at a batch this large every "
        f"expert is hit), and does two FLOPs (a multiply-add) per active parameter per "
        "sequence. Set the two times equal: B = (FLOP rate / bandwidth) × (bytes per weight / "
        f"two FLOPs) × (total / active) = {quantity(per_byte, 3)} × "
        f"{quantity(f['weight_bytes_per_value'])} / two FLOPs × {number(sparsity, 3)}: a batch "
        f"of {quantity(batch, 4)}; the chip count cancels.",
        f"{cache_step}: {quantity(per_sequence, 3)}. The batch's caches take "
        f"{quantity(batch, 4)} × {quantity(per_sequence, 3)} = {size(caches)}.",
        f"The weights take {quantity(total, 3)} × {quantity(f['weight_bytes_per_value'])} = "
        f"{size(weights)}. {reads}",
        f"In all, {size(weights)} + {size(caches)} = **{quantity(answer, 3)}**. A server of "
        f"{number(SERVER)} GPUs holds {number(SERVER)} × {quantity(f['hbm_capacity'], 3)}, "
        f"and {usable_share(presets)[1]}: {size(server)}, so that is "
        f"{number(quotient, 3)} servers' worth: "
        f"{quantity(Q_(servers * SERVER, 'chip'))} in whole servers. The crossover batch is as "
        "much a question of room as of arithmetic.",
    )

    def need(room):
        return room.to("TB")

    rule = lecture_ratio(presets)  # the lecture's round "about 300", B* ≈ 300 × total/active

    dense = (batch / sparsity).to("sequence")
    mistakes = [
        Mistake(
            need(weights + caches / sparsity),
            "You used a dense model's crossover batch: an MoE reads every weight but "
            "multiplies only its active ones, so its batch is larger by total over active.",
        ),
        Mistake(need(weights + 2 * caches), "A multiply-add is two FLOPs, not one."),
        Mistake(need(weights), "The batch's KV caches need room beside the weights."),
        Mistake(need(caches), "The weights need room beside the caches."),
        Mistake(
            need(weights + caches * rule * sparsity / batch.m),
            f"You used the lecture's round B* ≈ {number(rule)} × total/active; this chip at "
            f"this precision does {number(batch.m / sparsity, 3)} multiplies per weight read.",
        ),
    ]
    if precision == "fp8":
        mistakes.append(
            Mistake(need(2 * weights + 4 * caches), "FP8 stores a value in one byte, not two.")
        )
    else:
        mistakes.append(Mistake(need(weights / 2 + caches / 4), "BF16 stores two bytes a value."))
    require(dense < batch)
    tolerance = 0.03  # the batch at four figures and the cache at three leave well under this
    # a slip is named only where it lands twice the tolerance from the answer (the rule of
    # thumb is harmless on a chip whose ridge is near 300 FLOP/B), and apart from the others;
    # one between the window and twice it is redrawn (reader 20)
    for m in mistakes:
        require(lands_clear(m.value, answer, tolerance), "each slip lands clear")
    kept = distinct_mistakes(
        [m for m in mistakes if abs((m.value / answer).to("").m - 1) >= 2 * tolerance],
        answer,
        tolerance,
    )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=tolerance,
        mistakes=kept,
        hint="Find the batch first, from the two times per step; then weigh its caches.",
    )
