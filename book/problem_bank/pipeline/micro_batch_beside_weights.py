"""Stages free HBM for the KV cache, but the micro-batch that fits may still be far too small."""

from __future__ import annotations

import math

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, require, whole_count_tolerance
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "A frontier MoE on eight-GPU nodes"
USES = ("weight_memory", "memory_per_gpu", "crossover_batch")
LECTURE = "1:03:37"

MODELS = ("kimi_k2", "deepseek_v3")
NODES = ("h200", "b200", "mi300x", "b300", "mi355x")
STAGES = (2, 4)  # a pipeline: the cache per sequence does not shrink with its stages
CONTEXTS = (8192, 16384, 32768)


def shown(q, places: int = 4):
    """``q`` rounded to ``places`` significant figures, as the text shows it."""
    return Q_(float(f"{q.m:.{places}g}"), q.units)


def counts(hbm, weights, kv_token, context, gpus) -> list[int]:
    """The sequences that fit, from the statement's exact figures and from the solution's
    intermediates as it shows them (four places)."""

    def fit(room, per_gpu):
        return math.floor((room / per_gpu).to("").m)

    per_gpu = (kv_token * context * Q_(1, "sequence") / gpus.m).to("MB")
    room = (hbm - weights).to("GB")
    return [
        fit(room, per_gpu),
        fit(shown(room), shown(per_gpu)),
        fit(shown(hbm - shown(weights)), shown(per_gpu)),
    ]


def draw(rng, presets) -> Draw:
    while True:  # the weights leave a fifth of each GPU's HBM; the count is clear of rounding
        model_id, hardware = rng.choice(MODELS), rng.choice(NODES)
        stages = Q_(rng.choice(STAGES), "stage")
        context = Q_(rng.choice(CONTEXTS), "token/sequence")
        chip = presets.get("hardware", hardware)
        gpus = chip.scale_up_domain
        case = dict(
            hardware=hardware,
            model=model_id,
            precision="fp8",
            expert_parallel_chips=gpus,
            pipeline_stages=stages,
            context_length=context,
            presets=presets,
        )
        weights_all = get("weight_memory").evaluate(
            model=model_id, precision="fp8", presets=presets
        )
        weights = (weights_all / (gpus.m * stages.m)).to("GB")
        if weights >= 0.8 * chip.hbm_capacity:
            continue
        model = presets.get("model", model_id)
        hbm = chip.hbm_capacity.to("GB")
        fits = get("memory_per_gpu").solve_for("micro_batch")
        detail = fits.evaluate_detailed(memory_per_chip=hbm, **case)
        # the cache per token in whole bytes, as the statement shows it: the count is rounded down,
        # and a student working from the shown figures must get the same count (tests check it)
        kv_token = detail.inputs["kv_bytes_per_token"].value.to("B/token")
        require(float(kv_token.m).is_integer(), "an FP8 cache holds whole bytes per token")
        kv_seq = (kv_token * context * Q_(1, "sequence")).to("GB")
        per_gpu_seq = (kv_seq / gpus.m).to("GB")
        micro_exact = ((hbm - weights) / per_gpu_seq).to("").m
        require(abs(micro_exact / detail.value.to("sequence").m - 1) < 1e-9, "the shown figures")
        # the count must not hang on rounding: the solution's figures as shown (four places)
        # give the count the statement's exact figures give
        if len(set(counts(hbm, weights, kv_token, context, gpus))) == 1:
            break
    micro = math.floor(micro_exact)
    crossover = (
        get("crossover_batch")
        .evaluate(hardware=hardware, model=model_id, precision="fp8", presets=presets)
        .to("sequence")
    )
    room = (hbm - weights).to("GB")
    p = int(stages.m)
    name = chip.name
    where = "one eight-GPU node" if p == 1 else f"{p} eight-GPU nodes, one pipeline stage per node,"

    spread = (
        f"the experts are spread over the node's {number(gpus.m)} GPUs"
        if p == 1
        else f"inside each stage the experts are spread over its node's {number(gpus.m)} GPUs"
    )
    question = (
        "how many sequences can a batch hold at most, with weights and KV cache filling the HBM?"
        if p == 1
        else "Keeping every stage busy (one micro-batch in each), how many sequences can each "
        "micro-batch hold at most, with weights and KV cache filling the HBM?"
    )
    part, part_batch = ("node", "batch") if p == 1 else ("stage", "micro-batch")
    text = (
        f"You serve {model.name} ({quantity(model.params_total)}, {quantity(model.params_active)} "
        f"active per token) in FP8 on {where} of {name} GPUs with "
        f"{quantity(hbm)} of HBM each; {spread}. Each sequence has {context_tokens(context, 5)} "
        f"of context, and its KV cache takes {quantity(kv_token, 6)} at FP8; leave attention's "
        "FLOPs aside. " + (question[:1].upper() + question[1:])
    )
    if micro_exact < crossover.m:
        verdict = (
            f"That is {number(crossover.m / micro_exact, 3)} times below the crossover batch of "
            f"{quantity(crossover)} that would make a step compute-bound (attention's FLOPs and "
            "the cache's reads aside): the node stays "
            "memory-bound, and more stages only shrink the weights, never the cache per sequence."
        )
    else:
        verdict = (
            f"That reaches the crossover batch of {quantity(crossover)}: this node's HBM is "
            "large enough for micro-batches that keep a step compute-bound."
        )
    solution = [
        f"Weights: {quantity(model.params_total)} at one byte in FP8 is "
        f"{quantity(weights_all.to('GB'))}; spread over {number(gpus.m)} GPUs"
        + (f" in each of {p} stages" if p > 1 else "")
        + f", {quantity(weights, 4)} per GPU, leaving {quantity(room, 4)} for the KV cache.",
        f"One sequence's cache is {context_tokens(context, 5)} × {quantity(kv_token, 6)} = "
        f"{quantity(kv_seq.to('MB'))}, spread over the {part}'s {number(gpus.m)} GPUs: "
        f"{quantity(per_gpu_seq.to('MB'), 4)} per GPU."
        + (
            f" A full pipeline holds {p} micro-batches, but each stage keeps only its own "
            f"layers' share of their caches, so the {p} cancels."
            if p > 1
            else ""
        ),
        f"{quantity(room, 4)} at {quantity(per_gpu_seq.to('MB'), 4)} per sequence holds "
        f"**{quantity(Q_(micro, 'sequence'), 4)}** per {part_batch} (whole sequences, rounded "
        f"down). {verdict}",
    ]
    mistakes = [
        Mistake(
            Q_(math.floor(micro_exact * p), "sequence"),
            "You divided the KV cache by the stages too; the stages hold one micro-batch "
            "each, so the cache per GPU does not shrink with them.",
        ),
        Mistake(
            Q_(math.floor(micro_exact / gpus.m), "sequence"),
            f"Each sequence's cache is spread over the {part}'s GPUs, not held whole by one.",
        ),
        Mistake(
            crossover,
            f"That is the batch a {part} would need to be compute-bound; the "
            "question is how many sequences fit in the HBM.",
        ),
    ]
    if p > 1:
        left = (hbm - weights * p).m
        if left > 0:
            mistakes.append(
                Mistake(
                    Q_(math.floor(left / per_gpu_seq.m), "sequence"),
                    "You forgot that the weights are split among the stages: each GPU holds "
                    "only its stage's share.",
                )
            )
    answer = Q_(micro, "sequence")
    kept = tuple(
        m for m in mistakes if m.value.m > 0 and abs((m.value / answer).to("").m - 1) > 0.02
    )
    return Draw(
        text=text,
        answer=answer,
        solution=tuple(solution),
        tolerance=whole_count_tolerance(answer.m, 0.02),
        mistakes=kept,
        hint="What is left of each GPU's HBM once it holds its share of the weights?",
    )
