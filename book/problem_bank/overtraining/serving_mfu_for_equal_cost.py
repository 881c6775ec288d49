"""The equal-cost rule as a target for serving: what MFU must a deployment reach to cost no
more GPU time than the run that trained the model?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from book.problem_bank.overtraining._runs import model_and_tokens, month_text, served_text
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "What MFU must serving reach to cost no more than training?"
USES = ("inference_tokens", "training_flops", "inference_flops")
LECTURE = "1:18:59"

MODELS = (
    ("kimi_k2", None),
    ("llama_3_1_70b", (12, 15)),
    ("llama_3_1_405b", (12, 15)),
    ("qwen3_235b_a22b", (24, 36)),
    ("gpt_oss_120b", (20, 30)),
)
RATES_M = (0.5, 1, 2, 4, 8)  # millions of tokens per second, served
MONTHS = (3, 6, 12)
TRAIN_MFU = (0.35, 0.4, 0.45)
TOLERANCE = 0.02


def draw(rng, presets) -> Draw:
    model_id, model, tokens = model_and_tokens(rng, presets, MODELS)
    rate = Q_(rng.choice(RATES_M), "Mtoken/s")
    months = Q_(rng.choice(MONTHS), "month")
    train_mfu = rng.choice(TRAIN_MFU)
    served = (
        get("inference_tokens")
        .evaluate(inference_rate=rate, deployment_time=months, presets=presets)
        .to("token")
    )
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    useful = (
        get("inference_flops")
        .evaluate(
            model=model_id, inference_tokens=served, inference_inefficiency=1, presets=presets
        )
        .to("FLOP")
    )
    # equal GPU time: useful / serving MFU = compute / training MFU
    mfu = (useful / compute).to("").m * train_mfu
    require(0.04 < mfu < 0.8 * train_mfu, "serving's MFU lies below training's and above noise")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    train = (compute / (model.params_active * tokens)).to(forward.units)  # forward and backward
    fwd, trn = number(forward.m), number(train.m)
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    text = (
        f"A lab pre-trained {model.name} ({params}) on {quantity(tokens)} at "
        f"{number(100 * train_mfu)}% MFU. It plans to serve it at a steady {quantity(rate)} "
        f"for {month_text(months)}, on the same kind of GPU, and wants the serving "
        "to take no more GPU time than the pre-training did. What MFU must serving reach, at "
        "least? Ignore attention; answer as a fraction of peak (or a percentage)."
    )
    solution = (
        served_text(rate, months, served),
        f"A trained token costs {trn} FLOP per active parameter (forward and backward), a "
        f"served one {fwd} (forward only): pre-training did {quantity(compute)} of useful "
        f"work, serving will do {quantity(useful)}.",
        f"GPU time is useful work over (peak × MFU), and the peak is the same, so equal time "
        f"needs MFU in proportion to the work: {number(100 * train_mfu)}% × "
        f"{quantity(useful)} / {quantity(compute)} = **{quantity(Q_(mfu, ''), 3)}**, that is "
        f"{number(100 * mfu, 3)}%. Any lower and serving costs more GPU time than training.",
    )
    # The two natural 6-vs-2 slips land on one value by construction (training at 2, or
    # serving at 6, each makes the ratio 3x too big), so one message names both (reader 24).
    mistakes = (
        Mistake(
            Q_(mfu * train.m / forward.m, ""),
            "You used the same FLOPs per parameter for a trained and a served token: a trained "
            f"token costs {trn} (forward and backward), a served one {fwd} (forward only).",
        ),
        Mistake(
            Q_(mfu / train_mfu, ""),
            "That is serving's MFU as a share of training's; multiply by training's "
            f"{number(100 * train_mfu)}%.",
        ),
    )
    answer = Q_(mfu, "")
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, answer, TOLERANCE),
        hint="Useful FLOPs over MFU is the GPU time (the peak cancels); make the two equal.",
    )
