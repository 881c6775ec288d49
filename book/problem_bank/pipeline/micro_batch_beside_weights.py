"""At a large micro-batch (the crossover, given) the caches, not the weights, cap the context: more
stages shrink the weights per GPU and buy little."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require, within
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "How long a context can a pipelined MoE keep beside a large micro-batch?"
USES = ("weight_memory", "kv_cache_per_batch", "memory_per_gpu")
LECTURE = "1:03:37"

# a grouped-query MoE: pipeline.kv_does_not_shrink asks the same memory the other way round
# on the MLA models (DeepSeek-V3, Kimi K2), so the two never share a cache figure (reader 18)
MODELS = ("qwen3_235b_a22b",)
SIZES = (  # the micro-batch against the crossover, and how the statement says so
    (1, "about where its multiplies take as long as its weight reads"),
    (0.5, "about half the size at which its multiplies would take as long as its weight reads"),
)
TOLERANCE = 0.03
NAMED = 1.08  # the weights' share moves the answer by at least this: leaving them out is a slip
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
        usable = presets.parameter["usable_hbm_share"].value.to("").m  # an engine's fill
        fill = (usable * hbm).to("GB")
        detail = get("crossover_batch").evaluate_detailed(**case)
        size, said = rng.choice(SIZES)
        micro = Q_(round(size * detail.value.to("sequence").m), "sequence")  # as said
        used = detail.inputs
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
        if weights_all / (gpus * p) >= 0.8 * fill:
            continue
        answer = longest(fill, weights_all, gpus, p, micro, kv_token)
        unlimited = (fill * gpus / (micro * kv_token)).to("token/sequence")
        if answer >= Q_(SHORTEST, "token/sequence") and unlimited > NAMED * answer:
            break
    require(unlimited > NAMED * answer, "the weights take a share worth naming")
    # the same memory, evaluated forward at the answer's context, fills the usable HBM exactly
    check = get("memory_per_gpu").evaluate(
        **case,
        expert_parallel_chips=chip.scale_up_domain,
        pipeline_stages=Q_(p, "stage"),
        context_length=answer,
        micro_batch=micro,
    )
    require(abs((check / fill).to("").m - 1) < 1e-6, "the memory equation agrees")
    model = presets.get("model", model_id)
    per_gpu = (weights_all / (gpus * p)).to("GB")
    room = (fill - per_gpu).to("GB")
    per_token = (micro * kv_token / gpus * Q_(1, "token/sequence")).to("MB")

    text = (
        f"You serve {model.name} ({quantity(n_total)} in all, {quantity(n_active)} active per "
        f"token) in FP8 on {number(p)} eight-GPU nodes of {chip.name} GPUs, one pipeline "
        f"stage per node; inside each stage the experts are spread over its node's "
        f"{number(gpus)} GPUs. Each GPU has {quantity(hbm)} of HBM, of which the engine fills "
        f"at most {number(100 * usable)}% with weights and caches. "
        "Every stage runs micro-batches of "
        f"{number(micro.m)} sequences ({said}), and the pipeline is kept full. The KV cache takes "
        f"{quantity(kv_token, 6)} of context at FP8. How long may each sequence's context be, "
        "at most, for the weights and caches to fit? Answer in tokens."
    )
    solution = (
        f"Weights: {quantity(weights_all)} at one byte each, over {number(gpus)} GPUs in each "
        f"of {number(p)} stages: {quantity(per_gpu, 4)} per GPU, leaving {quantity(room, 4)} "
        f"of the {number(100 * usable)}% of {quantity(hbm)} the engine fills, "
        f"{quantity(fill, 4)}.",
        f"Caches: a full pipeline holds {number(p)} micro-batches, but each stage keeps only "
        f"its own layers' share of their caches, so the {number(p)} cancels. With "
        f"{number(micro.m)} sequences spread over {number(gpus)} GPUs, every token of context "
        f"length costs each GPU {quantity(micro, 4)} × {quantity(kv_token, 6)} / "
        f"{number(gpus)} = {quantity(per_token, 3)}.",
        f"{quantity(room, 4)} / {quantity(per_token, 3)} per token = "
        f"**{quantity(answer, 4)}**. "
        f"With as many stages as you like the weights' share would vanish, and the "
        f"{quantity(fill, 4)} would hold only {context_tokens(unlimited, 4)}, "
        f"{number((unlimited / answer).to('').m, 3)} times as long: past a few stages, the "
        "caches of a micro-batch this large cap the context, not the weights.",
    )
    mistakes = [
        Mistake(
            longest(fill, weights_all, gpus, p, micro, kv_token / p),
            "You divided the caches among the stages too; a full pipeline holds one "
            "micro-batch per stage, so the cache per GPU does not shrink with them.",
        ),
        Mistake(
            unlimited,
            "That leaves the weights out: each GPU holds its stage's share of them too.",
        ),
        Mistake(
            longest(fill, weights_all, gpus, p, micro, kv_token * gpus),
            "Each sequence's cache is spread over its stage's GPUs, not held whole by one.",
        ),
    ]
    mistakes.append(
        Mistake(
            longest(fill, weights_all, gpus, p, micro, kv_token * p),
            f"You kept all {number(p)} micro-batches' caches, of every layer, on each stage; "
            f"a stage holds only its own layers' share of them, so the {number(p)} cancels.",
        )
    )
    full_hbm = Mistake(
        longest(hbm, weights_all, gpus, p, micro, kv_token),
        f"You filled the whole {quantity(hbm)}; the engine fills at most "
        f"{number(100 * usable)}% of it.",
    )
    # the weights fill about as much as the reserve, so leaving either out lands on about the
    # same context: one message names the two slips that give it (reader 24)
    if within(full_hbm.value, mistakes[1].value, TOLERANCE):
        mistakes[1] = Mistake(
            mistakes[1].value,
            "Two slips land here: leaving the weights out (each GPU holds its stage's share of "
            f"them too), and filling the whole {quantity(hbm)} (the engine fills at most "
            f"{number(100 * usable)}% of it). Count both.",
        )
    else:
        mistakes.append(full_hbm)
    # the lesson's slips (caches divided by the stages, weights left out) are told apart
    require(
        all(abs((m.value / answer).to("").m - 1) >= 2 * TOLERANCE for m in mistakes[:2]),
        "the lesson's slips land twice the window away",
    )
    whole = fill - weights_all / gpus
    if whole > 0:
        mistakes.append(
            Mistake(
                (whole * gpus / (micro * kv_token)).to("token/sequence"),
                "You forgot that the weights are split among the stages: each GPU holds only "
                "its stage's share.",
            )
        )
    kept = tuple(
        m
        for m in mistakes
        if m.value.m > 0 and abs((m.value / answer).to("").m - 1) >= 2 * TOLERANCE
    )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(kept, answer, TOLERANCE),
        hint="Split each GPU's HBM into its share of the weights and the caches; ask how many "
        "micro-batches' caches a GPU holds, and of which layers.",
    )
