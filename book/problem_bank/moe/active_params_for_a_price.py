"""A price target caps the active parameters; the total then sets how large a batch must be
before the weight reads stop adding to each token's cost."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    lands_clear,
    lecture_ratio,
    money,
    require,
    shown,
)
from book.problem_bank._rents import rent as rent_of
from book.problem_bank.batching._figures import chip_name, figures, size
from units import Q_

KIND = "multi"
TITLE = "From what batch does a price's worth of active parameters pay?"
USES = ("compute_cost_floor", "crossover_batch", "weight_fetch_time", "cost_per_token")
LECTURE = "32:09"

DOMAINS = ("h200", "b200", "gb200_nvl72", "gb300_nvl72")
BUDGETS = (0.02, 0.03, 0.05, 0.08)  # USD per million tokens, at the compute floor
TOTALS = (0.5, 0.75, 1, 1.5, 2)  # trillions of parameters, held at one byte each
MFUS = (0.4, 0.5, 0.6)  # of peak, on the multiplies, once the batch is large
SLACK = 0.1  # the weight reads may add this share to a token's cost


def scenario(rng, presets):
    """A domain, model size, utilisation and price whose design is a sparse MoE that fits."""
    while True:
        hardware = rng.choice(DOMAINS)
        rent, mfu = rent_of(hardware), rng.choice(MFUS)
        budget = Q_(rng.choice(BUDGETS), "USD/Mtoken")
        total = Q_(rng.choice(TOTALS), "Tparam")
        total = total.to("Gparam") if total < Q_(1, "Tparam") else total
        f = figures(hardware=hardware, model="deepseek_v3", precision="fp8", presets=presets)
        flops, bandwidth = shown(f["flops"].to("PFLOP/s")), shown(f["mem_bandwidth"].to("TB/s"))
        hbm = shown(f["hbm_capacity"].to("GB"))
        n = presets.get("hardware", hardware).scale_up_domain
        weights = (total * Q_(1, "byte/parameter")).to("TB")
        per_token = (budget * Q_(1, "token")).to("USD")
        flop_per_usd = (mfu * flops / (rent * Q_(1, "chip"))).to("FLOP/USD")
        active = (per_token * flop_per_usd / Q_(2, "FLOP/parameter")).to("Gparam")
        if (
            weights < 0.7 * n * hbm / Q_(1, "chip")  # the weights fit, with room for caches
            and active >= Q_(5, "Gparam")
            and total / active >= 5  # a sparse MoE
        ):
            return hardware, rent, mfu, budget, total, flops, bandwidth, hbm, n, weights, active


def draw(rng, presets) -> Draw:
    hardware, rent, mfu, budget, total, flops, bandwidth, hbm, n, weights, active = scenario(
        rng, presets
    )
    chip = Q_(1, "chip")
    sustained = mfu * flops
    per_token = (budget * Q_(1, "token")).to("USD")
    flop_per_usd = (sustained / (rent * chip)).to("FLOP/USD")
    step_reads = (weights / (n * bandwidth / chip)).to("ms")  # every expert read each step
    per_step_rent = (n * rent * step_reads).to("USD")
    # the cost at a batch below the balanced one is the reads' rent over the batch; the batch
    # at which it is 1 + SLACK times the price (the floor, with the active count the price buys)
    answer = (per_step_rent / ((1 + SLACK) * per_token) * Q_(1, "sequence")).to("sequence")
    balanced = (sustained / bandwidth / Q_(2, "FLOP/byte") * (total / active)).to("")
    require(abs(balanced.m / (1 + SLACK) / answer.m - 1) < 1e-9, "the two routes agree")
    compute_step = (answer * Q_(1, "token/sequence") * Q_(2, "FLOP/parameter/token") * active) / (
        n * sustained / chip
    )
    require(compute_step.to("ms") < step_reads, "just under the balanced batch the reads bind")
    per_gpu_rent = (rent * chip).to("USD/s")
    domain = chip_name(presets, hardware)
    box = "rack" if n.m > 8 else "server"
    ridge = (sustained / bandwidth).to("FLOP/B")

    text = (
        f"You are designing an MoE of {quantity(total, 3)} to serve in FP8 on {domain} "
        f"{box}s of {money(n)} (each GPU: {quantity(hbm, 3)} of HBM at "
        f"{quantity(bandwidth, 3)}, {quantity(flops, 3)} of dense FP8 math), rented at "
        f"{money(rent)}. At large batches the multiplies run at {number(100 * mfu)}% of peak; "
        "every expert is read each step at the batches that matter here, and contexts are "
        "short (leave the KV cache and attention out). Your target: once the batch is large, "
        f"the GPUs' rent comes to at most {money(budget)} generated, and you give the model as "
        "many active parameters as that allows. From what batch on is the rent per token at "
        f"most {number(100 * SLACK)}% over that target? Answer in sequences."
    )
    alone = (weights / bandwidth).to("ms")  # one GPU's read of every weight
    solution = (
        "Once the batch is large the weight reads are shared by so many tokens that only the "
        "multiplies cost: two FLOPs (a multiply and an add) per active parameter per token. "
        f"A GPU sustains {number(100 * mfu)}% × {quantity(flops, 3)} = "
        f"{quantity(sustained.to('PFLOP/s'), 3)} for {money(rent)}: "
        f"{quantity(flop_per_usd, 3)}. The target allows {quantity(per_token, 3)} a token, so "
        f"{quantity((per_token * flop_per_usd).to('GFLOP'), 3)}, half of it per active "
        f"parameter: {quantity(active, 3)} active.",
        f"The batch at which the multiplies take as long as the weight reads: the GPU "
        f"sustains {quantity(ridge, 3)}, {number(ridge.m / 2, 4)} multiply-adds per weight "
        f"byte read at one byte a weight, and only {quantity(active, 3)} of the "
        f"{quantity(total, 3)} multiply, so the batch is {number(ridge.m / 2, 4)} × "
        f"{number((total / active).to('').m, 4)} = {number(balanced.m, 4)} sequences. Above it "
        "a token costs the target.",
        f"Below it the reads set the step: {size(weights)} over {money(n)} × "
        f"{quantity(bandwidth, 3)} take {quantity(step_reads, 3)}, whose rent "
        f"({quantity(per_step_rent.to('USD'), 3)} for the {box}) the batch shares: a token "
        "costs the target times the balanced batch over the batch. It may cost "
        f"{number(1 + SLACK, 2)} times the target, so the batch must be "
        f"{number(balanced.m, 4)} / {number(1 + SLACK, 2)} = {quantity(answer, 4)}.",
        "The utilisation, the FLOP rate and even the FLOPs per parameter cancel (a student who "
        "counted six would buy a third of the active parameters, and need the same batch): a "
        "faster or busier GPU affords more active parameters, which need the same batch to hide "
        "the same reads. So only the total parameters, the bandwidth and the rent set the batch. "
        "One GPU reading all the weights alone would take "
        f"{quantity(weights, 3)} / {quantity(bandwidth, 3)} = {quantity(alone, 3)}; the batch "
        "is that time's rent over what a token may cost: "
        f"{quantity(alone, 3)} × {quantity(per_gpu_rent, 3)} / ({number(1 + SLACK, 2)} × "
        f"{quantity(per_token, 3)}). From **{quantity(answer, 4)}** on, a token costs at most "
        f"{number(100 * SLACK)}% over the target.",
    )
    slips = [
        (
            balanced * Q_(1, "sequence"),
            f"That is the balanced batch itself: a token may cost {number(100 * SLACK)}% more "
            "than the target, so a batch that much smaller will do.",
        ),
        (
            answer * mfu,
            f"You priced the active parameters at the peak rate, not the "
            f"{number(100 * mfu)}% the multiplies sustain.",
        ),
        (
            answer / mfu,
            f"You balanced the reads against multiplies at the peak rate: they run at "
            f"{number(100 * mfu)}% of it.",
        ),
        (answer * 2, "FP8 stores a weight in one byte, not two."),
        (  # the lecture's round B* ≈ 300 × total/active, at peak (reader 22)
            Q_(lecture_ratio(presets), "sequence") * (total / active).to("") / (1 + SLACK),
            f"You used the lecture's round B* ≈ {number(lecture_ratio(presets))} × total/active: "
            f"this GPU sustains {number(ridge.m / 2, 3)} multiplies per weight read (multiply-adds "
            "per byte at FP8).",
        ),
        (
            answer * (1 + SLACK) / SLACK,
            "You added the reads' time to the multiplies': they overlap, so a step takes the "
            "longer of the two.",
        ),
    ]
    # every figure is given: 2% grades the arithmetic, and the balanced batch (10% over) is
    # named outside twice the window
    tolerance = 0.02
    for value, _ in slips:  # inside the window or twice its width away, never just outside
        require(lands_clear(value, answer, tolerance), "each slip lands clear")
    mistakes = distinct_mistakes([Mistake(v, w) for v, w in slips], answer, tolerance)
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=tolerance,
        mistakes=mistakes,
        hint="First the active parameters the price buys (what does a token cost once the "
        "batch is large?); then how a token's share of the weight reads falls with the batch.",
    )
