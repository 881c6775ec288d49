"""At its crossover batch an MoE's caches soon cost more reads than its weights: bandwidth, not
HBM room, caps the context that keeps the step balanced."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, evaluate, require
from book.problem_bank.batching._figures import chip_name, figures, size, weight_bytes
from units import Q_

KIND = "multi"
TITLE = "At the crossover batch, how long before the caches dominate?"
USES = ("crossover_batch", "weight_fetch_time", "kv_fetch_time", "scaleup_memory")
LECTURE = "32:09"

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "gpt_oss_120b")
DOMAINS = ("h200", "b200", "mi300x", "gb200_nvl72", "gb300_nvl72")
SHORTEST = 1024  # tokens per sequence: a context shorter than this is no serving plan


def context_for(case, batch, **change):
    """The longest context whose caches, for ``batch`` sequences, fit beside the weights."""
    here = dict(case, **change)
    f = figures(**here)
    room = evaluate("scaleup_memory", **here).to("GB") - weight_bytes(f)
    one_token = Q_(1, "token/sequence")
    per_token = evaluate("kv_cache_per_batch", **here, batch_size=batch, context_length=one_token)
    return (room / per_token * one_token).to("token/sequence")


def scenario(rng, presets):
    while True:
        case = dict(
            model=rng.choice(MODELS), hardware=rng.choice(DOMAINS), precision="fp8", presets=presets
        )
        case["n_chips"] = presets.get("hardware", case["hardware"]).scale_up_domain
        batch = evaluate("crossover_batch", **case).to("sequence")
        balanced = balanced_context(case, batch)
        if balanced >= Q_(SHORTEST, "token/sequence") and context_for(case, batch) > 2 * balanced:
            return case, batch


def balanced_context(case, batch):
    """The context at which ``batch`` caches take as long to read as the weights."""
    at = dict(case, batch_size=batch)
    one = Q_(1, "token/sequence")
    per_token_of_context = evaluate("kv_fetch_time", **at, context_length=one) / one
    return (evaluate("weight_fetch_time", **at) / per_token_of_context).to("token/sequence")


def draw(rng, presets) -> Draw:
    case, batch = scenario(rng, presets)
    saturation = evaluate("expert_saturation_batch", **case).to("sequence")
    require(batch > 10 * saturation, "at the crossover batch every expert is read")
    f = figures(**case)
    weights = weight_bytes(f)
    kv = f["kv_bytes_per_token"].to("kB/token")
    # the context at which the batch's cache reads take as long as its weight reads
    at = dict(case, batch_size=batch)
    read = evaluate("weight_fetch_time", **at).to("ms")
    answer = balanced_context(case, batch)
    balanced = dict(at, context_length=answer)
    require(abs((evaluate("kv_fetch_time", **balanced) / read).to("").m - 1) < 1e-9)
    held = context_for(case, batch)  # what the HBM would hold beside the weights
    require(held > 2 * answer, "the bandwidth caps the context long before the room does")
    long_step = evaluate("step_time", **dict(at, context_length=held)).to("ms")
    drain = evaluate("hbm_drain_time", **case).to("ms")
    flops, bandwidth = f["flops"], f["mem_bandwidth"]
    ratio = (flops / bandwidth).to("FLOP/B")
    per_byte = evaluate("dense_crossover_batch", **case).to("sequence")
    sparsity = (f["n_total"] / f["n_active"]).to("").m
    n = case["n_chips"]
    domain = chip_name(presets, case["hardware"])
    name = presets.get("model", case["model"]).name
    box = "rack" if n.m > 8 else "server"
    shortcut = (2 * f["n_active"] * Q_(1, "FLOP/parameter") / (ratio * kv)).to("token")

    text = (
        f"You serve {name} ({quantity(f['n_total'], 3)} in all, {quantity(f['n_active'], 3)} "
        f"active per token) in FP8 on one {domain} {box} of {quantity(n)}: each has "
        f"{quantity(f['hbm_capacity'], 3)} of HBM at {quantity(bandwidth, 3)} and does "
        f"{quantity(flops.to('PFLOP/s'), 3)} of dense FP8 math. You run the batch at which a "
        "decode step's multiplies in the weights just keep pace with its weight reads "
        "(attention's own FLOPs aside); the KV "
        f"cache takes {quantity(kv, 3)} of context in FP8. Up to what context per sequence do "
        "the batch's cache reads take no longer than its weight reads? Answer in tokens."
    )
    solution = (
        f"The batch: the chip does {quantity(ratio, 3)} (FLOPs per byte it reads from HBM), so "
        "at one byte per weight and two FLOPs per multiply-add it does "
        f"{number(per_byte.m, 3)} multiply-adds per weight byte read. Every weight is read "
        "each step (at this batch every expert is hit) but only the active ones multiply, so "
        f"the batch is {number(per_byte.m, 3)} × {number(sparsity, 3)} (total over active) = "
        f"{quantity(batch)}.",
        f"The weight reads: {size(weights)} at one byte each over {quantity(n)} × "
        f"{quantity(bandwidth, 3)}, {quantity(read, 3)} a step.",
        f"The cache reads match them when the {number(batch.m)} caches together weigh "
        f"{size(weights)}: each may hold {size(weights)} / ({number(batch.m)} × "
        f"{quantity(kv, 3)}) = {quantity(answer, 4)}. (The total parameters and the chips "
        f"cancel: the same figure is twice the active parameters over the chip's "
        f"{quantity(ratio, 3)} times {quantity(kv, 3)}, {quantity(shortcut, 4)}.)",
        f"The HBM is not what stops you: beside the weights it would hold "
        f"{context_tokens(held, 3)} per sequence, but at that context a step reads the whole "
        f"HBM, {quantity(long_step, 3)} (about one drain time, a chip's HBM over its bandwidth: "
        f"{quantity(drain, 3)}), "
        f"{number((long_step / (2 * read)).to('').m, 2)} times the balanced step. Past "
        f"**{quantity(answer, 4)}** the caches, not the weights, set the step.",
    )
    mistakes = [
        Mistake(
            answer / sparsity,
            "That batch is a dense model's: an MoE reads every weight but multiplies only its "
            "active ones, so its batch is larger by total over active parameters, and each of "
            "its caches must be shorter.",
        ),
        Mistake(
            answer * 2,
            "A multiply-add is two FLOPs: counting one per parameter halves the batch and "
            "doubles the context.",
        ),
        Mistake(
            held,
            "That is the context the HBM holds beside the weights: there the cache reads take "
            "far longer than the weight reads.",
        ),
        Mistake(answer / 2, "FP8 stores a cache value in one byte, not two."),
    ]
    mistakes = [m for m in mistakes if abs((m.value / answer).to("").m - 1) > 0.05]
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=0.03,
        mistakes=tuple(mistakes),
        hint="First find the batch (multiplies as long as the weight reads); then ask how long "
        "each cache may grow before the batch's caches weigh as much as the weights.",
    )
