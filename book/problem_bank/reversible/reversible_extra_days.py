"""Reversibility is paid in compute: the chips must run faster to keep the deadline."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require
from units import Q_

KIND = "multi"
TITLE = "The utilisation a reversible run needs for its deadline"
USES = ("training_flops", "revnet_training_flops", "training_mfu")
LECTURE = "2:04:02"

MODELS = (
    ("deepseek_v3", None),
    ("kimi_k2", None),
    ("llama_3_1_70b", (15,)),
    ("llama_3_1_405b", (15,)),
)
CHIPS = ("h100_sxm", "b200", "gb200_nvl72")
GPUS = (2048, 4096, 8192, 16384)
DAYS = tuple(range(10, 201, 5))  # the deadline, in days
LOW, HIGH = 0.3, 0.6  # a share of peak a run can sustain


def draw(rng, presets) -> Draw:
    while True:  # a deadline that asks for a reachable share of peak
        model_id, token_choices = rng.choice(MODELS)
        model = presets.get("model", model_id)
        tokens = (
            model.training_tokens
            if token_choices is None
            else Q_(rng.choice(token_choices), "Ttoken").to("token")
        )
        hardware = rng.choice(CHIPS)
        gpus, days = Q_(rng.choice(GPUS), "chip"), Q_(rng.choice(DAYS), "day")
        case = dict(
            model=model_id,
            training_tokens=tokens,
            hardware=hardware,
            precision="bf16",
            training_chip_hours=(gpus * days).to("chip*hour"),
            presets=presets,
        )
        rev = evaluate("revnet_training_flops", **case).to("FLOP")
        needed = evaluate("training_mfu", **case, training_flops=rev).to("")
        if LOW <= needed.m <= HIGH:
            break
    chip = presets.get("hardware", hardware)
    plain = evaluate("training_flops", **case).to("FLOP")
    peak = chip.get("dense_flops_bf16")
    delivered = (gpus * peak * days).to("FLOP")
    require(abs((rev / delivered / needed).to("").m - 1) < 1e-9, "the share is FLOPs over peak")
    work = model.params_active * tokens  # FLOPs per active parameter per token, from the bills:
    train = (plain / work).to("FLOP/parameter/token")  # forward and backward
    revnet = (rev / work).to("FLOP/parameter/token")  # and one more forward pass
    forward = revnet - train
    trn, rvn, fwd = (number(q.m) for q in (train, revnet, forward))
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    name = chip.name.replace(" (per GPU)", "")
    text = (
        f"A lab must pre-train {model.name} ({params}) on {quantity(tokens)} in BF16 within "
        f"{quantity(days)} on {int(gpus.m):,} {name} GPUs ({quantity(peak)} dense at BF16). "
        "To train with far less activation memory it makes every layer reversible: during "
        "the backward pass each layer's input is rebuilt once from its output, and nothing "
        "else is recomputed. What share of the GPUs' BF16 peak must the run sustain, counting "
        "every FLOP the GPUs run, to finish in time? Ignore attention FLOPs. Answer as a "
        "fraction of peak (or a percentage)."
    )
    model_share = (plain / delivered).to("")
    solution = (
        f"Ordinary training costs {trn} FLOP per active parameter per token, forward and "
        f"backward: {trn} × {quantity(model.params_active)} × {quantity(tokens)} = "
        f"{quantity(plain)}.",
        "Rebuilding a layer's input from its output means running the layer forward once "
        f"more on the way back: one extra forward pass, {fwd} FLOP per active parameter per "
        f"token, so {rvn} in all, a third more: {quantity(rev)}.",
        f"At full peak the GPUs would run {int(gpus.m):,} × {quantity(peak)} × "
        f"{quantity(days)} = {quantity(delivered)} in the time allowed.",
        f"The run must sustain {quantity(rev)} / {quantity(delivered)} = "
        f"**{quantity(needed, 3)}** of peak, that is {number(100 * needed.m, 3)}%. (Its model "
        f"FLOPs utilisation, which counts only the {trn} FLOP per parameter the model needs, "
        f"is {number(100 * model_share.m, 3)}%: the recompute is work the GPUs do that the "
        "model's own count leaves out.)",
    )
    mistakes = [
        Mistake(
            model_share,
            f"You counted {trn} FLOP per parameter per token; the reversible run also rebuilds "
            f"every layer's input, one more forward pass: {rvn}.",
        ),
        Mistake(
            needed * (train + train) / revnet,
            f"You counted a whole extra training pass ({trn} FLOP per parameter); the rebuild "
            f"is one forward pass, {fwd}.",
        ),
        Mistake(
            needed * (train + train - forward) / revnet,
            f"You added a backward pass for the rebuild as well; it runs each layer forward "
            f"once more, {fwd} FLOP per parameter.",
        ),
        Mistake(
            needed * peak / chip.get("dense_flops_fp8"),
            "You divided by the FP8 peak; the run trains in BF16.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                needed * model.params_total / model.params_active,
                "You counted every parameter; a token runs through the active ones only.",
            )
        )
    return Draw(
        text=text,
        answer=needed,
        solution=solution,
        tolerance=0.02,
        mistakes=distinct_mistakes(mistakes, needed, 0.02),
        hint="How many FLOP per parameter per token does rebuilding every layer's input add? "
        "Then compare the run's FLOPs with what the GPUs could do at peak before the deadline.",
    )
