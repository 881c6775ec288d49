"""More stages shrink the weights on each chip, never the KV cache of the micro-batches."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import (
    LECTURE_RATIO_GLOSS,
    Draw,
    Mistake,
    distinct_mistakes,
    lecture_ratio,
    require,
)
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "HBM per chip of a pipelined MoE rack"
USES = ("crossover_batch", "micro_batch_size", "memory_per_gpu")
LECTURE = "1:03:37"

MODELS = ("deepseek_v3", "kimi_k2")
RACKS = ("gb200_nvl72", "gb300_nvl72")
EXPERT_CHIPS = (64, 72)
# never 2: there the KV multiplied by the micro-batches in flight and the crossover batch not
# halved (the lecture's B* = (FLOP/s / bandwidth) x sparsity read literally) give one value
STAGES = (3, 4, 8)
# the lecture rounds the crossover to "about 300 x sparsity"; these racks' FP8 rate over
# bandwidth, halved, is 312.5: a student who takes the lecture's figure is 4% low on the KV
# term, and the problem's point (the KV does not shrink with the stages) does not hang on it
TOLERANCE = 0.05
CONTEXTS = (4096, 8192, 16384)


def _time(t):
    """A step's share in ms, or in µs below one ms."""
    return t.to("ms") if t >= Q_(1, "ms") else t.to("us")


def draw(rng, presets) -> Draw:
    model_id, rack = rng.choice(MODELS), rng.choice(RACKS)
    experts = Q_(rng.choice(EXPERT_CHIPS), "chip")
    stages = Q_(rng.choice(STAGES), "stage")
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    case = dict(
        hardware=rack,
        model=model_id,
        precision="fp8",
        expert_parallel_chips=experts,
        pipeline_stages=stages,
        context_length=context,
        presets=presets,
    )
    model, chip = presets.get("model", model_id), presets.get("hardware", rack)
    rack_name = chip.name.replace(" (per GPU)", "")
    detail = get("memory_per_gpu").evaluate_detailed(**case)
    used = detail.inputs
    flops, bandwidth = used["flops"].value, used["mem_bandwidth"].value
    n_total, n_active = used["n_total"].value, used["n_active"].value
    kv_token = used["kv_bytes_per_token"].value.to("kB/token")
    micro = used["micro_batch"].value.to("sequence")  # the crossover batch (micro_batch_size)
    ridge = (flops / bandwidth).to("FLOP/byte")
    weights = (n_total * used["weight_bytes_per_value"].value / (experts * stages)).to("GB")
    kv = (micro * context * kv_token / experts).to("GB")
    total = detail.value.to("GB")
    hbm = chip.hbm_capacity.to("GB")
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # an engine's fill
    require(total <= usable * hbm, "the weights and the KV cache fit what an engine fills")
    # the real regime of one micro-batch's step on one GPU: the crossover leaves the KV out
    weight_read = (weights / bandwidth).to("ms")
    multiplies = (
        micro
        * Q_(1, "token/sequence")
        * flops_per_param_token.value
        * n_active
        / (experts * stages)
        / flops
    ).to("ms")
    kv_read = (kv / stages.magnitude / bandwidth).to("ms")
    require(kv_read > multiplies)  # the KV reads bind: the crossover batch is not compute-bound
    p = stages.magnitude
    per_param = number(flops_per_param_token.value.m)  # a multiply and an add

    text = (
        f"You serve {model.name} ({quantity(n_total)} in all, {quantity(n_active)} active per "
        f"token) in FP8 on {rack_name} racks. Each GPU has {quantity(hbm)} of HBM at "
        f"{quantity(bandwidth)} and does {quantity(flops)} at FP8. The model is pipelined over "
        f"{quantity(stages)}, one rack each, and inside every stage the experts are spread "
        f"over {experts.magnitude:g} GPUs. Every sequence has a context of "
        f"{context_tokens(context, 5)}, and its KV cache takes {quantity(kv_token)} of context "
        "at FP8. Each stage runs micro-batches of the lecture's crossover size (where its "
        "weights' multiplies take as long as reading its weights, the KV cache and attention's "
        "FLOPs left out), and "
        "keeps the pipeline full. How much HBM does each GPU need for its weights and KV "
        "cache? Answer in GB per GPU."
    )
    solution = (
        f"The crossover batch, where the multiplies catch up with the weight reads: the chip's "
        f"{quantity(ridge)} (FLOP/s over bandwidth) divided by {per_param} FLOP per active "
        f"parameter, times the sparsity {quantity(n_total)} / {quantity(n_active)}, at one "
        f"byte per FP8 weight. That is a micro-batch of {quantity(micro)}. (The lecture's "
        "rounded figure for the ratio gives a micro-batch a few percent smaller, and a total "
        "the checker accepts.)",
        f"Weights: {quantity(n_total)} at one byte each, spread over {experts.magnitude:g} GPUs in "
        f"each of {quantity(stages)}, is {quantity(weights)} per GPU.",
        f"KV cache: a full pipeline holds {p:g} micro-batches, one per stage, but each stage "
        f"holds only its own layers' share of their caches; the {p:g} in the batch cancels the "
        f"{p:g} in the layers. Each GPU keeps {quantity(micro)} × {context_tokens(context, 5)} × "
        f"{quantity(kv_token)} over {experts.magnitude:g} GPUs: {quantity(kv)}, whatever the "
        "number of stages.",
        f"The step is not compute-bound for all that: per micro-batch each GPU reads its "
        f"weights in {quantity(_time(weight_read), 3)} and does the multiplies in "
        f"{quantity(_time(multiplies), 3)}, but reads that micro-batch's KV cache in "
        f"{quantity(_time(kv_read), 3)}. At this context the KV reads bind; the memory per GPU "
        "does not depend on which side does.",
        f"In all {quantity(weights)} + {quantity(kv)} = **{quantity(total, 3)}** per GPU, "
        f"within the {number(100 * usable)}% of its {quantity(hbm)} of HBM an engine fills.",
    )
    in_flight = (
        "You multiplied the KV cache by the number of micro-batches in flight, but each "
        "stage keeps the cache of its own layers only: the stages cancel from the KV term."
    )
    doubled = (
        "Your micro-batch is twice too large (the lecture's FLOP/s over bandwidth times the "
        f"sparsity, read without halving): each active parameter costs {per_param} FLOP "
        "(a multiply and an add), so the crossover is half of FLOP/s over bandwidth times "
        "the sparsity."
    )
    mistakes = (
        Mistake((weights + p * kv).to("GB"), in_flight),
        Mistake(
            (weights + kv / p).to("GB"),
            "You divided the KV cache by the stages as well; more stages means more "
            "micro-batches in flight, so the KV per GPU does not shrink.",
        ),
        Mistake((weights + 2 * kv).to("GB"), doubled),
        Mistake(  # two bytes a weight double the weights' read, so the crossover batch too
            (2 * (weights + kv)).to("GB"),
            "An FP8 weight takes one byte, not two (two bytes double the weights and, through "
            "the crossover batch, the KV cache).",
        ),
    )
    # reader 26: the lecture's ≈300 (multiplies per weight read, already multiply-adds per
    # byte at FP8) halved again, as if it were FLOPs per byte at FP8: a micro-batch of
    # 150 × sparsity; the KV term scales
    rule = lecture_ratio(presets)
    per_sparsity = (micro * n_active / n_total).to("sequence").m  # this rack's 312.5
    halved = Mistake(
        (weights + kv * (rule / 2) / per_sparsity).to("GB"),
        f"You halved the lecture's ≈{number(rule)}: it counts multiplies per weight read "
        f"({LECTURE_RATIO_GLOSS}), so it is already halved at FP8; these racks do "
        f"{quantity(ridge)} at FP8, so the micro-batch is {number(per_sparsity)} times the "
        "sparsity.",
    )
    require(
        all(abs((halved.value / m.value).to("").m - 1) >= 2 * TOLERANCE for m in mistakes),
        "the lecture's figure halved again lands apart from the other slips",
    )
    mistakes = (*mistakes, halved)
    # the lesson's slips (the cache scaled by the stages, either way, or an unhalved
    # crossover) must each be told from the answer: redraw where the KV cache is too small
    # a share of the total for any of them to land twice the window away
    require(
        all(abs((m.value / total).to("").m - 1) >= 2 * TOLERANCE for m in mistakes),
        "every slip on the KV term lands twice the window away",
    )
    require(p != 2, "the in-flight and the unhalved crossover slips differ")
    return Draw(
        text=text,
        answer=total,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, total, TOLERANCE),
        hint="Work out the micro-batch first, then split the memory into weights and KV.",
    )
