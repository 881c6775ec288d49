"""Order of magnitude: the training state of a big MoE, in GPUs' worth of HBM."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "estimate"
TITLE = "How many GPUs just to hold the training state?"
USES = ("training_state_memory",)

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "llama_3_1_405b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
FACTOR = 2.0


def draw(rng, presets) -> Draw:
    model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    state = get("training_state_memory").evaluate(model=model_id, presets=presets).to("TB")
    hbm = chip.hbm_capacity
    answer = Q_((state / hbm).to("").m, "chip")
    per_param = (state / model.params_total).to("byte/parameter")
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    text = (
        f"Roughly how many {chip.name} GPUs ({quantity(hbm)} of HBM each) does it take just "
        f"to hold the training state of {model.name} ({params}) under mixed-precision Adam, "
        "before a single activation? An order-of-magnitude answer will do."
    )
    solution = (
        "Mixed-precision Adam keeps, per parameter, a BF16 weight and gradient (2 + 2 bytes) "
        f"and an FP32 master weight and two FP32 moments (12 bytes): {quantity(per_param)}.",
        f"Every parameter is trained{', experts included' if moe else ''}, so the state is "
        f"{quantity(per_param)} × "
        f"{quantity(model.params_total)} = {quantity(state)}.",
        f"Over {quantity(hbm)} per GPU that is {number(answer.m)} GPUs' worth of HBM: **about "
        f"{number(answer.m, 1 if answer.m < 10 else 2)} GPUs**, before activations, buffers or "
        "any room to spare.",
    )
    mistakes = [
        Mistake(
            answer / 8,
            "You counted only the BF16 weights (2 bytes per parameter); "
            "training also holds gradients and Adam's FP32 state, 16 bytes in all.",
        ),
        Mistake(
            answer / 4,
            "You counted weights and gradients but not Adam's FP32 master "
            "weights and moments (12 more bytes per parameter).",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                answer * model.params_active / model.params_total,
                "You counted only the active parameters; every expert has its own weights, "
                "gradients and optimizer state.",
            )
        )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=FACTOR,
        mistakes=tuple(mistakes),
        hint="Bytes per parameter of the whole training state, times every parameter.",
    )
