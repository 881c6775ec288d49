"""How long a pre-training run takes at the utilisation real runs reach."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "estimate"
TITLE = "How many days will the pre-training take?"
USES = ("training_flops", "training_rate_bound", "model_flops_utilization")
LECTURE = "1:18:59"

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "llama_3_1_405b", "llama_3_1_70b")
# a chip and the published run whose stated MFU it borrows (all BF16)
FLEETS = (
    ("h100_sxm", "llama3_405b_pretraining"),
    ("tpu_v6e", "maxtext_v6e_llama31_405b"),
    ("tpu_v5p", "maxtext_v5p_llama2_70b"),
)
CHIPS = (2048, 4096, 8192, 16_384)
TOKENS = (10, 15, 20, 30)  # trillions of training tokens
FACTOR = 1.8  # graded within ×1.8: 2N for 6N (×3) and total for active (×6 or more) fall outside


def draw(rng, presets) -> Draw:
    name = rng.choice(MODELS)
    hardware, run_id = rng.choice(FLEETS)
    chips = Q_(rng.choice(CHIPS), "chip")
    tokens = Q_(rng.choice(TOKENS), "Ttoken")
    model = presets.get("model", name)
    chip = presets.get("hardware", hardware)
    run = presets.get("measurement", run_id)
    mfu = run.mfu.to("")
    flops = chip.dense_flops_bf16

    total = get("training_flops").evaluate_detailed(
        model=name, training_tokens=tokens, presets=presets
    )
    forward = total.inputs["flops_per_param_token"].value
    total = total.value.to("FLOP")
    bound = (
        get("training_rate_bound")
        .evaluate(hardware=hardware, model=name, flops=flops, presets=presets)
        .to("token/s/chip")
    )
    # the rate the run reaches: MFU = measured / bound, read for the measured rate
    rate = (
        get("model_flops_utilization")
        .solve_for("measured_rate")
        .evaluate(model_flops_utilization=mfu, training_rate_bound=bound, presets=presets)
        .to("token/s/chip")
    )
    days = (tokens / (rate * chips)).to("day")

    sparse = model.get("experts_routed") is not None
    size = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if sparse
        else f"{quantity(model.params_total)}, dense"
    )
    text = (
        f"You plan to pre-train a model shaped like {model.name} ({size}) on "
        f"{number(tokens.to('Ttoken').m)} trillion tokens, in BF16 on {number(chips.m)} "
        f"{chip.name.split(' (')[0]} chips ({quantity(flops)} dense each). Expect the "
        f"utilisation a published large run reached, {number(100 * mfu.m, 3)}% of peak "
        f"({run.name.split(' (')[0]}). Roughly how many days will the run take?"
    )
    active = " active" if sparse else ""
    solution = (
        f"Each token costs a forward pass of {number(forward.m)} FLOPs per{active} parameter "
        f"and a backward pass of twice that: in all about {quantity(total, 2)} for "
        f"{number(tokens.to('Ttoken').m)} trillion tokens"
        + (
            ", counting only the active parameters: a token never touches the other experts."
            if sparse
            else "."
        ),
        f"The cluster does {number(chips.m)} × {quantity(flops)} × {number(100 * mfu.m, 3)}% "
        f"≈ {quantity((chips * flops * mfu / Q_(1, 'chip')).to('EFLOP/s'), 2)} of useful work.",
        f"{quantity(total, 2)} over that is about **{quantity(days, 2)}**.",
    )
    candidates = [
        (days / 3, "You counted two FLOPs per parameter, a forward pass only; training is six."),
        (days * mfu.m, "You assumed the chips run at peak; real runs reach only a fraction."),
        (days * chips.m, "You divided by one chip's FLOP/s instead of the cluster's."),
    ]
    if sparse:
        candidates.append(
            (
                days * (model.params_total / model.params_active).to("").m,
                "You counted every parameter; a token passes through only the active ones.",
            )
        )
    mistakes = tuple(
        Mistake(v, why)
        for v, why in candidates
        if not (1 / FACTOR <= (v / days).to("").m <= FACTOR)
    )
    return Draw(
        hint=(
            "The run's FLOPs (forward and backward for every token) over what the whole "
            "cluster delivers at that utilisation."
        ),
        text=text,
        answer=days,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
    )
