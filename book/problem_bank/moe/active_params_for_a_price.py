"""A price target caps the active parameters; the scale-up domain caps the total."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, evaluate, money, require
from book.problem_bank._rents import rent as rent_of
from book.problem_bank.batching._figures import chip_name, figures, size
from units import Q_

KIND = "multi"
TITLE = "How many active parameters can a price afford?"
USES = ("compute_cost_floor", "scaleup_memory", "max_total_params")
LECTURE = "32:09"

DOMAINS = ("h200", "b200", "gb200_nvl72", "gb300_nvl72")
BUDGETS = (0.01, 0.02, 0.03, 0.05)  # USD per million tokens, at the compute floor


def draw(rng, presets) -> Draw:
    hardware = rng.choice(DOMAINS)
    rent = rent_of(hardware)
    budget = Q_(rng.choice(BUDGETS), "USD/Mtoken")
    case = dict(
        hardware=hardware,
        model="deepseek_v3",  # only for the figures a model carries; n_active is set below
        precision="fp8",
        price_per_chip_hour=rent,
        presets=presets,
    )
    unit = Q_(1, "Gparam")
    per_unit = evaluate("compute_cost_floor", **case, n_active=unit).to("USD/Mtoken")
    active = (budget / per_unit * unit).to("Gparam")
    check = evaluate("compute_cost_floor", **case, n_active=active).to("USD/Mtoken")
    require(abs((check / budget).to("").m - 1) < 1e-9)
    hbm = evaluate("scaleup_memory", **case).to("TB")
    total = evaluate("max_total_params", **case).to("Tparam")
    f = figures(**case)
    flops = f["flops"].to("PFLOP/s")
    n = presets.get("hardware", hardware).scale_up_domain
    domain = chip_name(presets, hardware)
    box = "rack" if n.m > 8 else "server"
    hour = Q_(1, "hour")
    per_hour = (flops * hour).to("FLOP")
    flops_per_dollar = (flops / (rent * Q_(1, "chip"))).to("FLOP/USD")
    per_token = (budget * Q_(1, "token")).to("USD")

    text = (
        f"You are designing an MoE to serve in FP8 on {domain} {box}s of {money(n)} (each "
        f"GPU: {money(f['hbm_capacity'], 3)} of HBM, {money(flops, 3)} of dense FP8 "
        f"math), rented at {money(rent)}. Your price target is that a generated token cost "
        f"you no more than {money(budget)}, at batches large enough that batching more "
        "saves nothing, with short contexts and every FLOP used. At most how many parameters "
        "may be active per token? Answer in billions of parameters."
    )
    solution = (
        "At batches that large the weight reads are shared by so many tokens that they cost "
        "nothing per token: a token's cost is its multiplies, two FLOPs (a multiply and an "
        "add) per active parameter. The total parameters do not enter.",
        f"A GPU-hour does {money(flops, 3)} × {money(hour.to('s'))} = "
        f"{money(per_hour, 3)} for {money(rent * Q_(1, 'chip') * hour)}: "
        f"{money(flops_per_dollar, 3)}. The target allows {quantity(per_token, 3)} per token, "
        f"so {quantity((per_token * flops_per_dollar).to('GFLOP'), 3)} per token.",
        f"Half of that, one multiply-add per active parameter: **{money(active, 3)}**. "
        f"The total is capped by room instead: the {box} holds {size(hbm)}, "
        f"{money(total, 3)} at one byte each before any KV cache, so its total could be up "
        f"to {number((total / active).to('').m, 2)} times its active parameters and still fit.",
    )
    mistakes = (
        Mistake(
            active / 3,
            "Six FLOPs per parameter is training: serving a token is a forward "
            "pass, two FLOPs per active parameter.",
        ),
        Mistake(active * 2, "A multiply-add is two FLOPs, not one."),
        Mistake(active / 2, "That is the BF16 rate: the math runs in FP8, twice as fast."),
        Mistake(
            active / n.m,
            f"You charged the whole {box}'s rent against one GPU's FLOPs: the rent is per GPU.",
        ),
    )
    return Draw(
        text=text,
        answer=active,
        solution=solution,
        tolerance=0.03,
        mistakes=mistakes,
        hint="Once batching no longer helps, what is the only work a token pays for?",
    )
