"""A pipelined decode step: latency neutral, except for the hops between racks."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Time between tokens when the model spans several racks"
USES = ("weight_fetch_time", "kv_fetch_time", "compute_time", "pipelined_decode_latency")
LECTURE = "1:03:37"

MODELS = ("deepseek_v3", "kimi_k2")
RACKS = ("gb200_nvl72", "gb300_nvl72")
STAGES = (2, 3, 4)
MICRO = (512, 1024, 2048, 4096)
CONTEXTS = (4096, 8192, 16384)
HOPS_US = (100, 150, 200)  # a hop of 50 µs or less is under 4% of a ~2 ms step
TOLERANCE = 0.02


def draw(rng, presets) -> Draw:
    model_id, rack = rng.choice(MODELS), rng.choice(RACKS)
    stages, micro = rng.choice(STAGES), Q_(rng.choice(MICRO), "sequence")
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    hop = Q_(rng.choice(HOPS_US), "µs")
    model, chip = presets.get("model", model_id), presets.get("hardware", rack)
    domain = chip.scale_up_domain
    # all P stages together do what one rack would do for the whole model: the step of one
    # domain's GPUs at the micro-batch (each stage has 1/P of the weights, layers and FLOPs)
    case = dict(
        hardware=rack,
        model=model_id,
        precision="fp8",
        batch_size=micro,
        context_length=context,
        n_chips=domain,
        presets=presets,
    )
    detail = get("step_time").evaluate_detailed(**case)
    used = detail.inputs
    compute = used["compute_time"].value.to("ms")
    weights = used["weight_fetch_time"].value.to("ms")
    kv = used["kv_fetch_time"].value.to("ms")
    memory = weights + kv
    step = detail.value.to("ms")
    latency = (
        get("pipelined_decode_latency")
        .evaluate(train_period=step, pipeline_stages=Q_(stages, "stage"), hop_latency=hop)
        .to("ms")
    )
    # the hops must show: leaving them out lands at least twice the 2% window from the answer
    # ... and so must one hop: counting only the P - 1 hops between stages (forgetting the way
    # back to the first) lands at least twice the window away, and is named
    require((hop / latency).to("").m >= 2 * TOLERANCE, "one hop is a visible part of the wait")
    kv_token = used["kv_bytes_per_token"].value.to("kB/token")
    rack_name = chip.name.replace(" (per GPU)", "")
    require(memory > compute, "the reads bind: attention's FLOPs, not given, never set the step")
    bound = "memory"

    text = (
        f"{model.name} ({quantity(model.params_total)}, {quantity(model.params_active)} active "
        f"per token) is served in FP8 across {stages} {rack_name} racks, one pipeline stage per "
        f"rack, each stage spreading its layers' experts over the rack's {number(domain.m)} "
        f"GPUs ({quantity(chip.hbm_bandwidth)} of HBM bandwidth and "
        f"{quantity(used['flops'].value)} at FP8 each). Every stage works on micro-batches of "
        f"{quantity(micro)} with {context_tokens(context, 5)} of context; the KV cache takes "
        f"{quantity(kv_token)}. Passing the activations from one rack to the next costs "
        f"{quantity(hop)} per hop, and the last stage hands the new token back to the first. "
        "Taking the roofline view of each stage and ignoring attention's FLOPs (counting "
        "them would not change the answer here), how long does one sequence wait between two "
        "of its tokens? Answer in milliseconds."
    )
    solution = (
        f"Each stage holds 1/{stages} of the layers, so it reads 1/{stages} of the weights and "
        f"of the micro-batch's KV cache and does 1/{stages} of its FLOPs, on one rack's GPUs. "
        "A token visits the stages one after the other, so the stages' times add up to one "
        "rack doing the whole model: pipelining is latency neutral.",
        f"Whole model on one rack's {number(domain.m)} GPUs at this micro-batch: reading the "
        f"weights takes {quantity(weights)}, the KV cache {quantity(kv)}: {quantity(memory)}. "
        "The weights' multiplies take less at this micro-batch (attention's FLOPs, left out "
        f"as the question says, would not change that), so the step is {quantity(step)}, "
        f"{bound}-bound.",
        f"Add one hop per stage: {stages} × {quantity(hop)}. Between two tokens a sequence "
        f"waits **{quantity(latency)}**.",
    )
    mistakes = [
        Mistake(
            (step / stages + stages * hop).to("ms"),
            "You divided the step by the stages: each stage is faster, but a token must "
            "pass through all of them, so pipelining saves no time.",
        ),
        Mistake(step, "You left out the hops between racks, one per stage."),
        Mistake(
            (step + (stages - 1) * hop).to("ms"),
            f"You counted only the {stages - 1} hop{'s' if stages > 2 else ''} between the "
            f"stages; the last stage also hands the new token back to the first: {stages} "
            "hops in all.",
        ),
        Mistake(
            (weights + stages * hop).to("ms"),
            "You left out the KV cache's reads: each stage reads its layers' cache of the "
            "micro-batch as well as their weights.",
        ),
    ]
    total = get("step_time").evaluate(**{**case, "batch_size": stages * micro}).to("ms")
    mistakes.append(
        Mistake(
            (total + stages * hop).to("ms"),
            "You used the whole pipeline's batch; each stage works on one micro-batch at "
            "a time, and the others are in the other stages.",
        )
    )
    return Draw(
        text=text,
        answer=latency,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, latency, TOLERANCE),
        hint="Does cutting the layers into stages make a token's trip through them shorter?",
    )
