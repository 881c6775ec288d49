"""A deadline sets the cluster's size in whole racks; the racks, rented for the whole window,
set the bill: more than the run's FLOPs cost, by the part of the last rack the run leaves idle."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    clear_of_rounding,
    distinct_mistakes,
    lands_clear,
    money,
    require,
)
from book.problem_bank._rents import rent
from book.problem_bank.overtraining._runs import model_and_tokens
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "The bill for a run rented in whole blocks of GPUs"
USES = ("training_flops", "training_time")
LECTURE = "1:18:59"

MODELS = (  # model, training tokens in trillions (None: the model's reported count)
    ("deepseek_v3", None),
    ("kimi_k2", None),
    ("llama_3_1_8b", (15, 18, 24)),
    ("llama_3_1_70b", (10, 12, 15, 20)),
    ("llama_3_1_405b", (12, 15, 18)),
    ("qwen3_235b_a22b", (20, 25, 30)),
    ("mixtral_8x7b", (5, 8, 10)),
    ("gpt_oss_120b", (20, 25, 40)),
)
CHIPS = ("h100_sxm", "h200", "b200", "b300", "mi300x", "mi355x", "gb200_nvl72", "gb300_nvl72")
DEADLINES = (21, 30, 40, 45, 60, 75, 90)  # days
MFUS = (0.3, 0.35, 0.4, 0.45, 0.5)
PRECISIONS = ("bf16", "fp8")
TOLERANCE = 0.02
IDLE = 0.05  # the idle part of the last block is at least this share of the bill's work
# the blocks, unrounded, keep the bank's design margin (5%) from a whole number, so a slightly
# different MFU or FLOP count lands on the same count (reader 16: 3.098 racks sat 3.2% above 3)
EDGE = 0.05


def scenario(rng, presets):
    """A run whose count of servers or racks is the same however the givens are rounded as
    shown, whose last block leaves enough idle to tell the bill from the FLOPs' cost, and
    whose one block more or fewer the tolerance tells apart."""
    while True:
        model_id, model, tokens = model_and_tokens(rng, presets, MODELS)
        hardware, precision = rng.choice(CHIPS), rng.choice(PRECISIONS)
        deadline, mfu = Q_(rng.choice(DEADLINES), "day"), Q_(rng.choice(MFUS), "")
        case = dict(hardware=hardware, model=model_id, training_tokens=tokens, presets=presets)
        compute = get("training_flops").evaluate(**case).to("FLOP")
        chip = presets.get("hardware", hardware)
        peak = chip.get(f"dense_flops_{precision}")
        unit = chip.scale_up_domain
        exact = (compute / (peak * mfu * deadline) * Q_(1, "chip")).to("chip")
        units = (exact / unit).to("").m
        idle = math.ceil(units) / units - 1
        if (
            2 <= units <= 0.5 / TOLERANCE
            and clear_of_rounding(units, EDGE)
            and idle >= IDLE
            and abs(unit.m * math.ceil(units) / math.ceil(exact.m) - 1) > 2 * TOLERANCE
        ):
            return case, model, chip, precision, deadline, mfu, compute, peak, unit, exact


def draw(rng, presets) -> Draw:
    case, model, chip, precision, deadline, mfu, compute, peak, unit, exact = scenario(rng, presets)
    tokens, hardware = case["training_tokens"], case["hardware"]
    units = math.ceil((exact / unit).to("").m)
    gpus = units * unit
    price = rent(hardware)
    days = (
        get("training_time")
        .evaluate(precision=precision, training_chips=gpus, mfu=mfu, **case)
        .to("day")
    )
    require(days <= deadline, "the rounded-up cluster finishes in time")
    bill = (gpus * deadline * price).to("USD")
    gpu_hours = (compute / (peak * mfu) * Q_(1, "chip")).to("chip * hour")
    work = (gpu_hours * price).to("USD")
    require((bill / work).to("").m - 1 >= IDLE, "the idle part of the last block shows")
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    name = chip.name.replace(" (per GPU)", "")
    block = "rack" if unit.m > 8 else "server"
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    train = (compute / (model.params_active * tokens)).to(forward.units)  # forward and backward
    reported = "its reported " if token_choices_reported(model, tokens) else ""
    other = "fp8" if precision == "bf16" else "bf16"
    other_peak = chip.get(f"dense_flops_{other}")

    def bill_for(flops, rate, whole=unit):
        """The bill if the work were ``flops`` at ``rate`` per GPU, rented in ``whole`` GPUs."""
        need = (flops / (rate * mfu * deadline) * Q_(1, "chip") / whole).to("").m
        return (math.ceil(need) * whole * deadline * price).to("USD")

    text = (
        f"You must pre-train {model.name} ({params}) on {reported}{quantity(tokens)} within "
        f"{quantity(deadline)}, in {precision.upper()} on {name} GPUs (dense peak "
        f"{quantity(chip.get('dense_flops_bf16'))} at BF16, "
        f"{quantity(chip.get('dense_flops_fp8'))} at FP8); the run sustains "
        f"{number(100 * mfu.m)}% MFU. The GPUs are rented only in whole {block}s of "
        f"{quantity(unit)}, at {money(price)}, each for the whole {quantity(deadline)}, used "
        "or not. Ignoring attention FLOPs, what is the bill for the fewest GPUs that finish "
        "in time? Answer in USD."
    )
    solution = (
        f"Pre-training costs {number(train.m)} FLOP per active parameter per token "
        f"({number(forward.m)} forward, {number((train - forward).m)} backward): "
        f"{number(train.m)} × {quantity(model.params_active)} × {quantity(tokens)} = "
        f"{quantity(compute)}" + (". Only the active parameters work on a token." if moe else "."),
        f"One GPU delivers {quantity(peak)} × {number(100 * mfu.m)}% at {precision.upper()}; in "
        f"{quantity(deadline)} that is {quantity((peak * mfu * deadline).to('FLOP'))}. The run "
        f"needs {quantity(compute)} over that, {number(exact.m)} GPUs: "
        f"{number((exact / unit).to('').m)} {block}s, so {number(units)} {block}s, "
        f"{quantity(gpus)} (rounded up: a fraction short misses the deadline). They finish in "
        f"{quantity(days, 3)} and stand idle for the rest of the window.",
        f"The FLOPs alone take {number(gpu_hours.m)} GPU-hours, {quantity(work, 3)} at the "
        "rent, at any deadline: a tighter one rents more GPUs for fewer days. But the rent is "
        f"for whole {block}s and the whole window: {quantity(gpus)} × {quantity(deadline)} × "
        f"{money(price)} = **{quantity(bill, 4)}**, "
        f"{number(100 * ((bill / work).to('').m - 1), 2)}% more, paying for the part of the "
        f"last {block} the run does not need.",
    )
    mistakes = [
        Mistake(
            work,
            "That is what the FLOPs alone cost: the GPUs are rented in whole "
            f"{block}s for the whole window, and the last {block} is partly idle.",
        ),
        Mistake(
            bill_for(compute, peak, Q_(1, "chip")),
            f"You rented whole GPUs; they come only in {block}s of {quantity(unit)}.",
        ),
        Mistake(
            bill_for(compute * forward / train, peak),
            f"You counted {number(forward.m)} FLOP per parameter per token, a forward pass "
            f"only; training adds the backward pass, {number(train.m)} in all.",
        ),
        Mistake(
            bill_for(compute, other_peak),
            f"You used the {other.upper()} peak; the run trains in {precision.upper()}.",
        ),
        Mistake(
            bill_for(compute * mfu.m, peak),
            "You left out the MFU: the GPUs deliver only a share of their peak.",
        ),
    ]
    if units > 1:  # the racks rounded down miss the deadline (reader 29: told to check working)
        short = ((units - 1) * unit * deadline * price).to("USD")
        require(lands_clear(short, bill, TOLERANCE), "the racks rounded down land clear")
        mistakes.append(
            Mistake(
                short,
                f"You rounded {number((exact / unit).to('').m)} {block}s down to "
                f"{number(units - 1)}: they would not finish in time, so round up to "
                f"{number(units)}.",
            )
        )
    if moe:
        mistakes.append(
            Mistake(
                bill_for(compute * model.params_total / model.params_active, peak),
                "You counted every parameter; a token passes through the active ones only.",
            )
        )
    return Draw(
        text=text,
        answer=bill,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, bill, TOLERANCE),
        hint="The run's FLOPs first; then what one GPU delivers by the deadline, and how many "
        f"whole {block}s that takes. You pay for all of them, all the time.",
    )


def token_choices_reported(model, tokens) -> bool:
    """Whether ``tokens`` is the model's own reported training count."""
    reported = getattr(model, "training_tokens", None)
    return reported is not None and abs((tokens / reported).to("").m - 1) < 1e-9
