"""How long a pre-training run takes: 6ND over what the cluster really delivers."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "numeric"  # one formula, worked in steps
TITLE = "How many days will the run take?"
USES = ("training_flops", "training_time")
LECTURE = "1:18:59"

MODELS = (  # model, training tokens in trillions (None: the model's reported count)
    ("deepseek_v3", None),
    ("kimi_k2", None),
    ("llama_3_1_70b", (10, 15, 20)),
    ("llama_3_1_405b", (10, 15, 20)),
    ("qwen3_235b_a22b", (20, 30, 36)),
)
CHIPS = ("h100_sxm", "b200", "gb200_nvl72")
GPUS = (2048, 4096, 8192, 16384)
MFUS = (0.3, 0.35, 0.4, 0.45)
PRECISIONS = ("bf16", "fp8")


def draw(rng, presets) -> Draw:
    model_id, token_choices = rng.choice(MODELS)
    model = presets.get("model", model_id)
    tokens = (
        model.training_tokens
        if token_choices is None
        else Q_(rng.choice(token_choices), "Ttoken").to("token")
    )
    hardware, precision = rng.choice(CHIPS), rng.choice(PRECISIONS)
    gpus, mfu = Q_(rng.choice(GPUS), "chip"), Q_(rng.choice(MFUS), "")
    chip = presets.get("hardware", hardware)
    case = dict(hardware=hardware, model=model_id, training_tokens=tokens, presets=presets)
    compute = get("training_flops").evaluate(**case).to("FLOP")
    detail = get("training_time").evaluate_detailed(
        precision=precision, training_chips=gpus, mfu=mfu, **case
    )
    days = detail.value.to("day")
    peak = detail.inputs["flops"].value
    other = "fp8" if precision == "bf16" else "bf16"
    other_peak = chip.get(f"dense_flops_{other}")
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    name = chip.name.replace(" (per GPU)", "")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    train = (compute / (model.params_active * tokens)).to(forward.units)  # forward and backward
    reported = "its reported " if token_choices is None else ""

    text = (
        f"You pre-train {model.name} ({params}) on {reported}{quantity(tokens)}, in "
        f"{precision.upper()} on {int(gpus.m):,} {name} GPUs (dense peak "
        f"{quantity(chip.get('dense_flops_bf16'))} at BF16, "
        f"{quantity(chip.get('dense_flops_fp8'))} "
        f"at FP8). The run sustains {number(100 * mfu.m)}% MFU. Ignoring attention FLOPs, how "
        "many days does pre-training take?"
    )
    solution = (
        f"Pre-training costs {number(train.m)} FLOP per active parameter per token "
        f"({number(forward.m)} forward, {number((train - forward).m)} backward): "
        f"{number(train.m)} × {quantity(model.params_active)} × {quantity(tokens)} = "
        f"{quantity(compute)}" + (". Only the active parameters work on a token." if moe else "."),
        f"The cluster delivers {int(gpus.m):,} × {quantity(peak)} at {precision.upper()} × "
        f"{number(100 * mfu.m)}% = {quantity((gpus.m * peak * mfu).to('EFLOP/s'))}.",
        f"{quantity(compute)} over that is {quantity(days.to('s'))}: **{quantity(days, 3)}**.",
    )
    mistakes = [
        Mistake(
            (days * forward / train).to("day"),
            f"You counted {number(forward.m)} FLOP per parameter per token, a forward pass "
            f"only; training adds the backward pass, {number(train.m)} in all.",
        ),
        Mistake(
            days * peak / other_peak,
            f"You used the {other.upper()} peak; the run trains in {precision.upper()}.",
        ),
        Mistake(days / mfu.m, "You left out the MFU: the GPUs deliver only a share of their peak."),
    ]
    if moe:
        mistakes.append(
            Mistake(
                days * model.params_total / model.params_active,
                "You counted every parameter; a token passes through the active ones only.",
            )
        )
    kept = tuple(m for m in mistakes if abs((m.value / days).to("").m - 1) > 0.02)
    return Draw(
        text=text,
        answer=days,
        solution=solution,
        tolerance=0.02,
        mistakes=kept,
        hint="The compute first; then what the whole cluster really delivers per second.",
    )
