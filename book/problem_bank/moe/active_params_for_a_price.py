"""A price target caps the active parameters; the total then sets how large a batch must be
before the weight reads stop adding to each token's cost."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    money,
    require,
    shown,
)
from book.problem_bank._rents import rent as rent_of
from book.problem_bank.batching._figures import chip_name, figures, size
from units import Q_

KIND = "multi"
TITLE = "How many active parameters can a price afford, and at what batch?"
USES = ("compute_cost_floor", "crossover_batch", "weight_fetch_time", "cost_per_token")
LECTURE = "32:09"

DOMAINS = ("h200", "b200", "gb200_nvl72", "gb300_nvl72")
BUDGETS = (0.02, 0.03, 0.05, 0.08)  # USD per million tokens, at the compute floor
TOTALS = (0.5, 0.75, 1, 1.5, 2)  # trillions of parameters, held at one byte each
MFUS = (0.4, 0.5, 0.6)  # of peak, on the multiplies, once the batch is large
SLACK = 0.1  # the weight reads may add this share to a token's cost
BILLION = Q_(1, "Gparam")


def ceil_batch(quotient) -> Q_:
    """A batch threshold: the least batch at which the reads add no more than the slack (a
    threshold, graded as a figure: any batch at or above it will do)."""
    return Q_(quotient, "sequence")


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
        afforded = (per_token * flop_per_usd / Q_(2, "FLOP/parameter")).to("Gparam")
        active = math.floor(afforded.m) * BILLION  # a whole number of billions
        if (
            weights < 0.7 * n * hbm / Q_(1, "chip")  # the weights fit, with room for caches
            and active >= 5 * BILLION
            and total / active >= 5  # a sparse MoE
            and afforded / active > 1.02  # the rounding down shows, outside the tolerance
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
    afforded = (per_token * flop_per_usd / Q_(2, "FLOP/parameter")).to("Gparam")
    floor = (Q_(2, "FLOP/parameter") * active / sustained * rent * chip / Q_(1, "token")).to(
        "USD/Mtoken"
    )
    step_reads = (weights / (n * bandwidth / chip)).to("ms")  # every expert read each step
    per_step_rent = (n * rent * step_reads).to("USD")
    quotient = (per_step_rent / ((1 + SLACK) * floor * Q_(1, "token/sequence"))).to("sequence")
    answer = ceil_batch(quotient.m)
    balanced = (sustained / bandwidth / Q_(2, "FLOP/byte") * (total / active)).to("")
    require(abs(balanced.m / (1 + SLACK) / quotient.m - 1) < 1e-9, "the two routes agree")
    compute_step = (answer * Q_(1, "token/sequence") * Q_(2, "FLOP/parameter/token") * active) / (
        n * sustained / chip
    )
    compute_step = compute_step.to("ms")
    require(compute_step < step_reads, "just under the balanced batch the reads set the step")
    cost_at = (per_step_rent / (answer * Q_(1, "token/sequence"))).to("USD/Mtoken")
    domain = chip_name(presets, hardware)
    box = "rack" if n.m > 8 else "server"
    ridge = (sustained / bandwidth).to("FLOP/B")

    text = (
        f"You are designing an MoE of {quantity(total, 3)} to serve in FP8 on {domain} "
        f"{box}s of {money(n)} (each GPU: {quantity(hbm, 3)} of HBM at "
        f"{quantity(bandwidth, 3)}, {quantity(flops, 3)} of dense FP8 math), rented at "
        f"{money(rent)}. At large batches the multiplies run at {number(100 * mfu)}% of peak; "
        "a decode step takes the longer of its multiplies and its reads (they overlap), every "
        "expert is read each step at the batches that matter here, and contexts are short "
        "(leave the KV cache and attention out). Your price target: a generated token may cost "
        f"no more than {money(budget)} once the batch is large. You give the model the largest "
        "whole number of billions of active parameters the target allows. From what batch on do "
        f"the weight reads add no more than {number(100 * SLACK)}% to a token's cost? Answer "
        "in sequences."
    )
    solution = (
        "Once the batch is large the weight reads are shared by so many tokens that only the "
        "multiplies cost: two FLOPs (a multiply and an add) per active parameter per token. "
        f"A GPU sustains {number(100 * mfu)}% × {quantity(flops, 3)} = "
        f"{quantity(sustained.to('PFLOP/s'), 3)} for {money(rent)}: "
        f"{quantity(flop_per_usd, 3)}. The target allows {quantity(per_token, 3)} a token, so "
        f"{quantity((per_token * flop_per_usd).to('GFLOP'), 3)}, half of it per active "
        f"parameter: {quantity(afforded, 3)}, so {quantity(active)} active. At that size a "
        f"token's floor is {money(floor, 3)}.",
        f"The batch at which the multiplies take as long as the weight reads: the GPU "
        f"sustains {quantity(ridge, 3)}, {number(ridge.m / 2, 4)} multiply-adds per weight "
        f"byte read at one byte a weight, and only {quantity(active)} of the "
        f"{quantity(total, 3)} multiply, so the batch is {number(ridge.m / 2, 4)} × "
        f"{number(total.to('Gparam').m)} / {number(active.m)} = {number(balanced.m, 4)} "
        "sequences. Above it "
        "the cost is the floor.",
        f"Below it the reads set the step: {size(weights)} over {money(n)} × "
        f"{quantity(bandwidth, 3)} take {quantity(step_reads, 3)}, whose rent "
        f"({quantity(per_step_rent.to('USD'), 3)} for the {box}) the batch shares: the cost "
        "falls as one over the batch, and is the floor times the balanced batch over the "
        f"batch. It may be {number(1 + SLACK, 2)} times the floor, so the batch must be "
        f"{number(balanced.m, 4)} / {number(1 + SLACK, 2)}: from **{quantity(answer, 4)}** on "
        f"(a token then costs {money(cost_at, 3)}). The utilisation "
        "and the FLOP rate all but cancel (they would, had the active count not been rounded "
        "down): this is the batch at which each token's share of the reads' rent is that much "
        "of the price.",
    )
    slips = [
        (
            ceil_batch(balanced.m),
            f"That is the balanced batch itself: the reads may add "
            f"{number(100 * SLACK)}%, so a batch that much smaller will do.",
        ),
        (
            ceil_batch(quotient.m * mfu),
            f"You priced the active parameters at the peak rate, not the "
            f"{number(100 * mfu)}% the multiplies sustain.",
        ),
        (
            ceil_batch(quotient.m / mfu),
            f"You balanced the reads against multiplies at the peak rate: they run at "
            f"{number(100 * mfu)}% of it.",
        ),
        (
            ceil_batch(quotient.m * 3),
            "Six FLOPs per parameter is training: serving a token is a forward pass, two FLOPs "
            "per active parameter.",
        ),
        (ceil_batch(quotient.m * 2), "FP8 stores a weight in one byte, not two."),
        (
            ceil_batch(quotient.m * (1 + SLACK) / SLACK),
            "You added the reads' time to the multiplies': they overlap, so a step takes the "
            "longer of the two.",
        ),
        (
            ceil_batch(quotient.m * (active / afforded).to("").m),
            "You kept the fraction of a billion: the design takes a whole number of billions "
            "of active parameters.",
        ),
    ]
    tolerance = 0.01
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
