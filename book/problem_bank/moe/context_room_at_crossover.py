"""At its crossover batch an MoE needs a big batch: the HBM left beside the weights caps context."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, evaluate
from book.problem_bank.batching._figures import chip_name, figures, size, weight_bytes
from units import Q_

KIND = "multi"
TITLE = "How long can contexts be at the crossover batch?"
USES = ("crossover_batch", "scaleup_memory", "kv_cache_per_batch")
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
        if context_for(case, batch) >= Q_(SHORTEST, "token/sequence"):
            return case, batch


def draw(rng, presets) -> Draw:
    case, batch = scenario(rng, presets)
    saturation = evaluate("expert_saturation_batch", **case).to("sequence")
    assert batch > 10 * saturation, "at the crossover batch every expert is read"
    f = figures(**case)
    hbm = evaluate("scaleup_memory", **case).to("TB")
    weights = weight_bytes(f)
    room = (hbm - weights).to("GB")
    context = context_for(case, batch)
    kv = f["kv_bytes_per_token"].to("kB/token")
    per_sequence = (room / batch).to("GB/sequence")
    flops, bandwidth = f["flops"], f["mem_bandwidth"]
    per_byte = evaluate("dense_crossover_batch", **case).to("sequence")
    sparsity = (f["n_total"] / f["n_active"]).to("").m
    n = case["n_chips"]
    domain = chip_name(presets, case["hardware"])
    name = presets.get("model", case["model"]).name
    box = "rack" if n.m > 8 else "server"

    text = (
        f"You serve {name} ({quantity(f['n_total'], 3)} in all, {quantity(f['n_active'], 3)} "
        f"active per token) in FP8 on one {domain} {box} of {quantity(n)}: each has "
        f"{quantity(f['hbm_capacity'], 3)} of HBM at {quantity(bandwidth, 3)} and does "
        f"{quantity(flops.to('PFLOP/s'), 3)} of dense FP8 math. You run the batch at which a "
        "decode step's multiplies just keep pace with its weight reads, and the KV cache takes "
        f"{quantity(kv, 3)} of context in FP8. How long may each sequence's context be, at "
        "most, for the weights and every cache to fit in the HBM? Answer in tokens."
    )
    solution = (
        f"The batch: the chip does {quantity((flops / bandwidth).to('FLOP/B'), 3)} (FLOPs per "
        "byte it reads from HBM), so at one byte per weight and two FLOPs per multiply-add it "
        f"does {number(per_byte.m, 3)} multiply-adds per weight byte read. Every weight is read "
        "each step (at this batch every expert is hit) but only the active ones multiply, so "
        f"the batch is {number(per_byte.m, 3)} × {number(sparsity, 3)} (total over active) = "
        f"{quantity(batch)}.",
        f"The room: the {box} holds {quantity(n)} × {quantity(f['hbm_capacity'], 3)} = "
        f"{size(hbm)}; the weights take {size(weights)} at one byte each, leaving "
        f"{size(room)}, or {size(per_sequence * Q_(1, 'sequence'))} for each of the "
        f"{number(batch.m)} sequences.",
        f"At {quantity(kv, 3)}, that holds **{quantity(context, 4)}**.",
    )
    mistakes = [
        Mistake(
            context * sparsity,
            "That batch is a dense model's: an MoE reads every weight but multiplies only its "
            "active ones, so its batch is larger by total over active parameters.",
        ),
        Mistake(
            context / 2,
            "A multiply-add is two FLOPs: counting one per parameter doubles the batch.",
        ),
        Mistake(
            (hbm / (batch * kv)).to("token/sequence"),
            "You gave the whole HBM to the caches: the weights take their room first.",
        ),
    ]
    slipped = context_for(case, batch, weight_precision="bf16")
    if slipped.m > 0:
        mistakes.append(Mistake(slipped, "FP8 stores a weight in one byte, not two."))
    mistakes = [m for m in mistakes if abs((m.value / context).to("").m - 1) > 0.05]
    return Draw(
        text=text,
        answer=context,
        solution=solution,
        tolerance=0.03,
        mistakes=tuple(mistakes),
        hint="First find the batch (weight-read time equal to compute time); then share what "
        "the weights leave of the HBM among its caches.",
    )
