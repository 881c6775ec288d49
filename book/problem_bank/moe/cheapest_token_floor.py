"""Active parameters set the floor of a token's cost; total parameters only need room."""

from __future__ import annotations

from book.problem_bank import Draw, Mistake, evaluate, money
from book.problem_bank.moe._rents import RENTS
from units import Q_

KIND = "estimate"
TITLE = "The cheapest token an MoE can make"
USES = ("compute_time", "compute_cost_floor")
LECTURE = "32:09"

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "gpt_oss_120b")
RACKS = ("gb200_nvl72", "gb300_nvl72")
FACTOR = 1.5  # narrower than a factor of two (FP8 against BF16 rate; 2N against N)


def draw(rng, presets) -> Draw:
    model, hardware = rng.choice(MODELS), rng.choice(RACKS)
    rent = Q_(rng.choice(RENTS[hardware]), "USD/chip/hour")
    case = dict(
        model=model, hardware=hardware, precision="fp8", price_per_chip_hour=rent, presets=presets
    )
    floor = evaluate("compute_cost_floor", detailed=True, **case)
    used = floor.inputs
    flops, active = used["flops"].value.to("PFLOP/s"), used["n_active"].value
    total = (
        evaluate("weight_fetch_time", detailed=True, **case, batch_size=Q_(1, "sequence"))
        .inputs["n_total"]
        .value
    )
    answer = floor.value.to("USD/Mtoken")
    name = presets.get("model", model).name
    rack = presets.get("hardware", hardware).name.replace(" (per GPU)", "")
    text = (
        f"{name} ({money(total, 3)} in all, {money(active, 3)} active per token) is "
        f"served in FP8 on {rack} racks rented at {money(rent)}; each GPU does "
        f"{money(flops, 3)} of dense FP8 math. Contexts are short, so reading the KV cache and "
        "attention's own FLOPs are negligible. However large the batch, what is the least a "
        "generated token can cost, in USD per million tokens? Any answer within a factor of "
        f"{FACTOR:g} is accepted."
    )
    per_token = (2 * active * Q_(1, "FLOP/parameter")).to("GFLOP")
    gpu_seconds = (per_token / flops).to("µs")
    solution = (
        "Past the crossover batch the step is compute-bound, and the weight reads are shared "
        "by so many sequences that they cost nothing per token: what is left is the "
        "multiplies in the weights (the contexts are short: the KV cache's reads and "
        "attention's FLOPs, which grow with the context, are negligible).",
        f"A token costs two FLOPs per active parameter: {money(per_token, 3)}. The total "
        "parameters do not appear; they only need room in HBM.",
        f"At {money(flops, 3)} that is {money(gpu_seconds, 3)} of one GPU's time, at "
        f"{money(rent)}: **{money(answer, 2)}** at full utilisation (real serving runs "
        "below peak, so this is a floor). 'How many active parameters can a price afford?' "
        "reads the same floor backwards, from a price to the active parameters.",
    )
    mistakes = (
        Mistake(
            answer * (total / active).to("").m,
            "You counted every parameter: only the "
            "active ones do arithmetic for a token (total versus active parameters).",
        ),
        Mistake(
            answer * 3,
            "Six FLOPs per parameter is training (forward and backward); "
            "serving a token is a forward pass, two.",
        ),
        Mistake(answer / 2, "A multiply-add is two FLOPs per active parameter, not one."),
        Mistake(answer * 2, "That is the BF16 rate: FP8 math runs twice as fast."),
    )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
        hint="Once the batch is large, what is the only work left per token?",
    )
