"""Read a lab's report backwards: its GPU bill gives the chip-hours, and those the MFU."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from book.problem_bank import _rents as rents
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "What MFU did the lab reach?"
USES = ("chinchilla_tokens", "training_flops", "training_mfu")
# DeepSeek-V3 is left out: its published run is validation.training_days, on its own figures
LECTURE = "1:18:59"

# a model and how many times its compute-optimal (Chinchilla) count the lab trained it on
MODELS = (
    ("kimi_k2", (20, 25)),
    ("llama_3_1_70b", (5, 10)),
    ("llama_3_1_405b", (4, 5)),  # not 2 or 3: the other-peak and 2-FLOP slips
    ("qwen3_235b_a22b", (50, 80)),
)
CHIPS = ("h100_sxm", "h800", "b200")
TRUE_MFU = (0.22, 0.28, 0.33, 0.38, 0.45)


def draw(rng, presets) -> Draw:
    model_id, times = rng.choice(MODELS)
    model, times = presets.get("model", model_id), rng.choice(times)
    optimal = get("chinchilla_tokens").evaluate(n_active=model.params_active, presets=presets)
    per_param = (optimal / model.params_active).to("token/parameter")  # Chinchilla's 20
    tokens = (times * optimal).to("Ttoken")
    hardware, precision = rng.choice(CHIPS), rng.choice(("bf16", "fp8"))
    chip = presets.get("hardware", hardware)
    case = dict(
        hardware=hardware,
        model=model_id,
        precision=precision,
        training_tokens=tokens,
        presets=presets,
    )
    compute = get("training_flops").evaluate(**case).to("FLOP")
    peak = get("training_mfu").evaluate_detailed(training_chip_hours=Q_(1, "chip*hour"), **case)
    peak = peak.inputs["flops"].value
    # the lab's report: chip-hours as a lab would print them, to three figures
    exact = (compute / (peak * rng.choice(TRUE_MFU))).to("chip*hour").m
    rent = rents.rent(hardware)
    require(
        rent.m not in (2, 3), "a rent of two or three makes the bill-as-hours slip another slip"
    )
    bill = Q_(float(f"{(exact * rent.m):.3g}"), "USD")  # as a lab would print it
    hours = (bill / rent).to("chip*hour")
    mfu = get("training_mfu").evaluate(training_chip_hours=hours, **case).to("")
    training = (compute / (model.params_active * tokens)).to("FLOP/parameter/token")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    other = "fp8" if precision == "bf16" else "bf16"
    other_peak = chip.get(f"dense_flops_{other}")
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )

    text = (
        f"Suppose a lab reports pre-training {model.name} ({params}) on {number(times)} times "
        "its compute-optimal (Chinchilla) token count, "
        f"in {precision.upper()}, on {chip.name} GPUs (dense peak "
        f"{quantity(chip.get('dense_flops_bf16'))} at BF16, "
        f"{quantity(chip.get('dense_flops_fp8'))} at FP8) rented at {quantity(rent)}, for a "
        f"GPU bill of {quantity(bill, 3)}. Ignoring attention FLOPs, what model FLOPs "
        "utilisation (MFU) did the run reach against the peak of the precision it trained "
        "in? Answer as a fraction of that peak (or a percentage)."
    )
    solution = (
        f"The bill buys {quantity(bill, 3)} / {quantity(rent)} = {number(hours.m, 4)} GPU-hours.",
        f"Chinchilla's count is {quantity(per_param)}"
        + (", counting the active ones" if moe else "")
        + ": "
        f"{number(per_param.m)} × {quantity(model.params_active)} = "
        f"{quantity(optimal.to('Ttoken'))}; {number(times)} times that is {quantity(tokens)}.",
        f"Useful work: {number(training.m)} FLOP per active parameter per token, "
        f"{number(training.m)} × {quantity(model.params_active)} × {quantity(tokens)} = "
        f"{quantity(compute)}.",
        f"What the GPU-hours could have delivered at peak: {number(hours.m)} h × "
        f"{quantity(peak)} at {precision.upper()} = "
        f"{quantity((hours * peak).to('FLOP'))}.",
        f"The ratio is the MFU: **{quantity(mfu, 3)}**, that is {number(100 * mfu.m, 3)}%.",
    )
    mistakes = [
        Mistake(
            mfu * forward / training,
            f"You counted {number(forward.m)} FLOP per parameter per token; training costs "
            f"{number(training.m)} (forward and backward).",
        ),
        Mistake(
            mfu * peak / other_peak,
            f"You divided by the {other.upper()} peak; the run trained in {precision.upper()}.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                mfu * model.params_total / model.params_active,
                "You counted every parameter; a token only runs through the active ones, and "
                "Chinchilla's count is per active parameter too.",
            )
        )
    mistakes.append(
        Mistake(
            mfu / times,
            f"You took the compute-optimal count itself; the lab trained on {number(times)} "
            "times it.",
        )
    )
    mistakes.append(
        Mistake(
            (compute / (bill / Q_(1, "USD/chip/hour") * peak)).to(""),
            "You took the bill in dollars for GPU-hours; divide it by the rent first.",
        )
    )
    kept = distinct_mistakes(mistakes, mfu, 0.02)
    return Draw(
        text=text,
        answer=mfu,
        solution=solution,
        tolerance=0.02,
        mistakes=kept,
        hint="The bill gives the GPU-hours; Chinchilla gives the tokens; then useful FLOPs "
        "over what those hours could have delivered at peak.",
    )
