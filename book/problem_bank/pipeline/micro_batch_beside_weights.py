"""At the crossover micro-batch the caches, not the weights, cap the context: more stages shrink
the weights per GPU and buy little."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, require
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "How long a context can a pipelined MoE keep at its crossover micro-batch?"
USES = ("crossover_batch", "weight_memory", "memory_per_gpu")
LECTURE = "1:03:37"

MODELS = ("kimi_k2", "deepseek_v3")
NODES = ("h200", "b200", "mi300x", "b300", "mi355x")
STAGES = (2, 3, 4)
SHORTEST = 1024  # tokens: a shorter context is no serving plan


def longest(hbm, weights_all, gpus, stages, micro, kv_token):
    """The context at which the weights' share and the micro-batch's caches fill each GPU."""
    room = hbm - weights_all / (gpus * stages)
    return (room * gpus / (micro * kv_token)).to("token/sequence")


def draw(rng, presets) -> Draw:
    while True:  # the weights leave room for a context worth serving
        model_id, hardware = rng.choice(MODELS), rng.choice(NODES)
        p = rng.choice(STAGES)
        chip = presets.get("hardware", hardware)
        gpus = chip.scale_up_domain.to("chip").m
        case = dict(hardware=hardware, model=model_id, precision="fp8", presets=presets)
        weights_all = get("weight_memory").evaluate(**case).to("GB")
        hbm = chip.hbm_capacity.to("GB")
        detail = get("crossover_batch").evaluate_detailed(**case)
        micro = detail.value.to("sequence")
        used = detail.inputs
        flops, bandwidth = used["flops"].value, used["mem_bandwidth"].value
        n_total, n_active = used["n_total"].value, used["n_active"].value
        kv_token = (
            get("memory_per_gpu")
            .evaluate_detailed(
                **case,
                expert_parallel_chips=chip.scale_up_domain,
                pipeline_stages=Q_(p, "stage"),
                context_length=Q_(SHORTEST, "token/sequence"),
            )
            .inputs["kv_bytes_per_token"]
            .value.to("B/token")
        )
        if weights_all / (gpus * p) >= 0.8 * hbm:
            continue
        answer = longest(hbm, weights_all, gpus, p, micro, kv_token)
        if answer >= Q_(SHORTEST, "token/sequence"):
            break
    unlimited = (hbm * gpus / (micro * kv_token)).to("token/sequence")
    require(unlimited > 1.1 * answer, "the weights take a share worth naming")
    # the same memory, evaluated forward at the answer's context, fills the HBM exactly
    check = get("memory_per_gpu").evaluate(
        **case,
        expert_parallel_chips=chip.scale_up_domain,
        pipeline_stages=Q_(p, "stage"),
        context_length=answer,
    )
    require(abs((check / hbm).to("").m - 1) < 1e-6, "the memory equation agrees")
    model = presets.get("model", model_id)
    ridge = (flops / bandwidth).to("FLOP/B")
    sparsity = (n_total / n_active).to("").m
    per_gpu = (weights_all / (gpus * p)).to("GB")
    room = (hbm - per_gpu).to("GB")
    per_token = (micro * kv_token / gpus * Q_(1, "token/sequence")).to("MB")

    text = (
        f"You serve {model.name} ({quantity(n_total)} in all, {quantity(n_active)} active per "
        f"token) in FP8 on {number(p)} eight-GPU nodes of {chip.name} GPUs, one pipeline "
        f"stage per node; inside each stage the experts are spread over its node's "
        f"{number(gpus)} GPUs. Each GPU has {quantity(hbm)} of HBM at {quantity(bandwidth, 3)} "
        f"and does {quantity(flops.to('TFLOP/s'), 4)} of dense FP8 math. Every stage runs "
        "micro-batches of the crossover size, where its multiplies in the weights take as "
        "long as reading its weights (attention's FLOPs and the cache's reads aside), and the "
        "pipeline is kept full. The KV cache takes "
        f"{quantity(kv_token, 6)} of context at FP8. How long may each sequence's context be, "
        "at most, for the weights and caches to fit the HBM? Answer in tokens."
    )
    solution = (
        f"The micro-batch: the chip does {number(ridge.m, 3)} FLOPs per byte it reads from HBM, "
        f"so {number(ridge.m / 2, 3)} multiply-adds (two FLOPs each) per FP8 weight (one byte); "
        f"times the sparsity {quantity(n_total)} / {quantity(n_active)} = {number(sparsity, 3)} "
        f"(every weight is read, only the active ones multiply): {quantity(micro, 4)}. The "
        "stages do not change it: each reads and multiplies its own layers.",
        f"Weights: {quantity(weights_all)} at one byte each, over {number(gpus)} GPUs in each "
        f"of {number(p)} stages: {quantity(per_gpu, 4)} per GPU, leaving {quantity(room, 4)}.",
        f"Caches: a full pipeline holds {number(p)} micro-batches, but each stage keeps only "
        f"its own layers' share of their caches, so the {number(p)} cancels. Each GPU holds "
        f"{quantity(micro, 4)} × {quantity(kv_token, 6)} / {number(gpus)} = "
        f"{quantity(per_token, 4)} for each token of context.",
        f"{quantity(room, 4)} / {quantity(per_token, 4)} per token = "
        f"**{quantity(answer, 4)}**. "
        f"With as many stages as you like the weights' share would vanish, and the whole "
        f"{quantity(hbm)} would hold only {context_tokens(unlimited, 4)}, "
        f"{number((unlimited / answer).to('').m, 3)} times as long: past a few stages, the "
        "caches of the crossover micro-batch cap the context, not the weights.",
    )
    mistakes = [
        Mistake(
            longest(hbm, weights_all, gpus, p, micro, kv_token / p),
            "You divided the caches among the stages too; a full pipeline holds one "
            "micro-batch per stage, so the cache per GPU does not shrink with them.",
        ),
        Mistake(
            unlimited,
            "That leaves the weights out: each GPU holds its stage's share of them too.",
        ),
        Mistake(
            longest(hbm, weights_all, gpus, p, micro / sparsity, kv_token),
            "That micro-batch is a dense model's: an MoE reads every weight but multiplies "
            "only its active ones, so its crossover is larger by total over active.",
        ),
        Mistake(
            longest(hbm, weights_all, gpus, p, 2 * micro, kv_token),
            "A multiply-add is two FLOPs: counting one per parameter halves the micro-batch.",
        ),
        Mistake(
            longest(hbm, weights_all, gpus, p, micro, kv_token * gpus),
            "Each sequence's cache is spread over its stage's GPUs, not held whole by one.",
        ),
    ]
    whole = hbm - weights_all / gpus
    if whole > 0:
        mistakes.append(
            Mistake(
                (whole * gpus / (micro * kv_token)).to("token/sequence"),
                "You forgot that the weights are split among the stages: each GPU holds only "
                "its stage's share.",
            )
        )
    kept = tuple(
        m for m in mistakes if m.value.m > 0 and abs((m.value / answer).to("").m - 1) > 0.05
    )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=0.03,
        mistakes=kept,
        hint="Find the micro-batch first; then split each GPU's HBM into its share of the "
        "weights and the caches.",
    )
