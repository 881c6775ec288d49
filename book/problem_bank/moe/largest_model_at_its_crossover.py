"""A sparser model needs a larger batch, so its caches grow with it: the rack's true size limit."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, evaluate, require
from book.problem_bank.batching._figures import chip_name, figures, size, tokens
from units import Q_

KIND = "multi"
TITLE = "The largest MoE a rack can serve at its crossover"
USES = ("crossover_batch", "kv_cache_per_batch", "scaleup_memory", "max_total_params")
LECTURE = "32:09"

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "gpt_oss_120b")
RACKS = ("gb200_nvl72", "gb300_nvl72")
CONTEXTS = (256, 512, 1024, 2048, 4096)  # short: the caches' reads must not outgrow the weights'


def need(case, total):
    """Bytes of the weights and of the caches of the crossover batch, for ``total`` params."""
    here = dict(case, n_total=total)
    batch = evaluate("crossover_batch", **here).to("sequence")
    f = figures(**here)
    weights = (total * f["weight_bytes_per_value"] * Q_(1, "value/parameter")).to("TB")
    caches = evaluate("kv_cache_per_batch", **here, batch_size=batch).to("TB")
    return weights, caches, batch


def largest(case):
    """The total parameters whose weights and crossover caches just fill the rack (both grow
    in proportion to the total, so one evaluation at a trillion scales)."""
    trillion = Q_(1, "Tparam")
    weights, caches, _ = need(case, trillion)
    return (evaluate("scaleup_memory", **case).to("TB") / (weights + caches) * trillion).to(
        "Tparam"
    )


def draw(rng, presets) -> Draw:
    while True:  # a context short enough that the weight reads, not the caches', set the step
        model, hardware = rng.choice(MODELS), rng.choice(RACKS)
        n = presets.get("hardware", hardware).scale_up_domain
        case = dict(
            model=model,
            hardware=hardware,
            precision="fp8",
            n_chips=n,
            context_length=Q_(rng.choice(CONTEXTS), "token/sequence"),
            presets=presets,
        )
        total = largest(case)
        weights, caches, batch = need(case, total)
        if caches < 0.8 * weights:
            break
    f = figures(**case)
    active, own_total = f["n_active"], f["n_total"]
    hbm = evaluate("scaleup_memory", **case).to("TB")
    at = dict(case, n_total=total, batch_size=batch)
    weight_read = evaluate("weight_fetch_time", **at).to("ms")
    kv_read = evaluate("kv_fetch_time", **at).to("ms")
    require(kv_read < weight_read, "the caches' reads stay below the weights': the step balances")
    require(abs(((weights + caches) / hbm).to("").m - 1) < 1e-9, "the rack is just full")
    require(total > own_total, "the sibling is larger than the model it starts from")
    per_byte = evaluate("dense_crossover_batch", **case).to("sequence")
    trillion = Q_(1, "Tparam")
    w1, c1, b1 = need(case, trillion)
    context, kv = case["context_length"], f["kv_bytes_per_token"].to("kB/token")
    per_sequence = (kv * context).to("GB/sequence")
    rack, name = chip_name(presets, hardware), presets.get("model", model).name
    flops, bandwidth = f["flops"].to("PFLOP/s"), f["mem_bandwidth"]

    text = (
        f"{name} has {quantity(active, 3)} active per token, and its KV cache takes "
        f"{quantity(kv, 3)} of context in FP8. You plan a sibling with the same attention and "
        "the same active parameters but many more experts, to serve in FP8 on one "
        f"{rack} rack of {quantity(n)} (each: {quantity(f['hbm_capacity'], 3)} of HBM at "
        f"{quantity(bandwidth, 3)}, {quantity(flops, 3)} of dense FP8 math). It will run at the "
        "batch where a decode step's multiplies just keep pace with its weight reads (attention's "
        "own FLOPs aside), every "
        f"sequence with {tokens(context)} of context. At most how many parameters in all can "
        "the sibling have, for its weights and every cache to fit in the rack? Answer in "
        "trillions of parameters."
    )
    solution = (
        f"The batch grows with the total: a GPU does {number(per_byte.m, 3)} multiply-adds per "
        "byte of weight it reads (its FLOPs per byte, halved for the two FLOPs of a "
        "multiply-add, at one byte per FP8 weight), and every weight is read while only the "
        f"active ones multiply, so the batch is {number(per_byte.m, 3)} × total / "
        f"{quantity(active, 3)}: {quantity(b1, 6)} for each trillion parameters.",
        f"Each sequence's cache is {tokens(context)} × {quantity(kv, 3)} = "
        f"{size(per_sequence * Q_(1, 'sequence'))}. So a trillion parameters bring "
        f"{size(w1)} of weights and {size(c1)} of caches: {size(w1 + c1)} in all.",
        f"The rack holds {quantity(n)} × {quantity(f['hbm_capacity'], 3)} = {size(hbm)}: "
        f"**{quantity(total, 3)}** at most, run at a batch of {quantity(batch, 6)} whose caches "
        f"take {number((caches / hbm).to('').m, 2)} of the rack. ({name} itself has "
        f"{quantity(own_total.to('Tparam'), 3)}.) "
        f"Check the plan holds: the caches ({size(caches)}) weigh less than the weights "
        f"({size(weights)}), so a step reads them in {quantity(kv_read, 3)} against "
        f"{quantity(weight_read, 3)} for the weights, and the step stays balanced between the "
        "weight reads and the multiplies. At a context long enough for the caches to outweigh "
        "the weights, their reads would set the step and no batch would be compute-bound.",
    )
    mistakes = [
        Mistake(
            evaluate("max_total_params", **case).to("Tparam"),
            "You left no room for the caches: the batch, and with it the KV cache, grows with "
            "the total parameters.",
        ),
    ]
    own_batch = evaluate("crossover_batch", **case).to("sequence")
    own_caches = evaluate("kv_cache_per_batch", **case, batch_size=own_batch).to("TB")
    if own_caches < hbm:
        mistakes.append(
            Mistake(
                ((hbm - own_caches) / (w1 / trillion)).to("Tparam"),
                f"You kept {name}'s own batch: a sparser sibling needs a larger batch to keep "
                "its multiplies up with its weight reads, and more caches with it.",
            )
        )
    mistakes.append(
        Mistake(
            largest(dict(case, weight_precision="bf16")),
            "FP8 stores a weight in one byte, not two.",
        )
    )
    mistakes = [m for m in mistakes if abs((m.value / total).to("").m - 1) > 0.05]
    return Draw(
        text=text,
        answer=total,
        solution=solution,
        tolerance=0.03,
        mistakes=tuple(mistakes),
        hint="Write the crossover batch as a function of the total parameters; then the bytes "
        "of weights and caches are both proportional to the total.",
    )
