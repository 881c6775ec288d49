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
    detail = get("training_state_memory").evaluate_detailed(model=model_id, presets=presets)
    state = detail.value.to("TB")
    weight, grad, adam = (
        detail.inputs[name].value.to("byte/parameter")
        for name in ("train_weight_bytes", "train_grad_bytes", "optimizer_bytes")
    )
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
        "Mixed-precision Adam keeps, per parameter, a BF16 weight and gradient "
        f"({number(weight.m)} + {number(grad.m)} bytes) and an FP32 master weight and two FP32 "
        f"moments ({number(adam.m)} bytes): {quantity(per_param)}.",
        f"Every parameter is trained{', experts included' if moe else ''}, so the state is "
        f"{quantity(per_param)} × "
        f"{quantity(model.params_total)} = {quantity(state)}.",
        f"Over {quantity(hbm)} per GPU that is the HBM of about **{quantity(answer, 2)}**, "
        "before activations, buffers or any room to spare.",
    )
    mistakes = [
        Mistake(
            answer * weight / per_param,
            f"You counted only the BF16 weights ({quantity(weight)}); training also holds "
            f"gradients and Adam's FP32 state, {quantity(per_param)} in all.",
        ),
        Mistake(
            answer * (weight + grad) / per_param,
            "You counted weights and gradients but not Adam's FP32 master weights and moments "
            f"({number(adam.m)} more bytes per parameter).",
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
