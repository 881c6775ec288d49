"""Read the equal-cost rule backwards: what serving would justify a reported training run?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from book.problem_bank.overtraining._runs import model_and_tokens
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "How much serving justifies that much training?"
USES = ("training_flops", "inference_flops", "inference_tokens")
LECTURE = "1:18:59"

MODELS = (("deepseek_v3", None), ("kimi_k2", None), ("llama_3_1_70b", (15,)))
MONTHS = (2, 3, 6, 12)
SLOWDOWN = ((2, "half"), (2.5, "two fifths"), (4, "a quarter"))  # not a third: with 6N over 2N
# it makes a served token weigh a trained one, and two slips land on the same number


def draw(rng, presets) -> Draw:
    model_id, model, tokens = model_and_tokens(rng, presets, MODELS)
    months = Q_(rng.choice(MONTHS), "month")
    eta, share = rng.choice(SLOWDOWN)
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    # the served tokens whose FLOPs (at serving's lower utilisation) equal pre-training's
    per_token = get("inference_flops").evaluate(
        model=model_id,
        inference_tokens=Q_(1, "token"),
        inference_inefficiency=eta,
        presets=presets,
    )
    served = (compute / per_token * Q_(1, "token")).to("token")
    rate = (served / months).to("token/s")
    check = (
        get("inference_tokens")
        .evaluate(inference_rate=rate, deployment_time=months, presets=presets)
        .to("token")
    )
    require(abs((check / served).to("").m - 1) < 1e-9)
    month_word = "month" if months.m == 1 else "months"
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    train = (compute / (model.params_active * tokens)).to(forward.units)  # forward and backward
    fwd, trn, weight = number(forward.m), number(train.m), number(eta * forward.m)
    text = (
        f"{model.name} ({quantity(model.params_active)} active per token) was pre-trained on "
        f"{quantity(tokens)}. Serving it reaches {share} of the MFU pre-training did. At what "
        f"steady rate would it have to be served for {number(months.m)} {month_word} for the "
        "GPU time spent on serving to equal the GPU time spent on pre-training? Answer in "
        "tokens per second."
    )
    solution = (
        f"A pre-training token costs {trn} FLOP per active parameter (forward and backward), "
        f"a served one {fwd} (forward only). Serving reaches {share} of pre-training's MFU, so "
        f"a served token's FLOPs take as much chip time as {weight} would at pre-training's "
        "MFU.",
        f"The active parameters cancel: equal GPU time needs {trn}/{weight} = "
        f"{number(train.m / (eta * forward.m), 3)} served tokens for each trained one, "
        f"{quantity(tokens)} × {number(train.m / (eta * forward.m), 3)} = {quantity(served)}.",
        f"Over {number(months.m)} {month_word} ({quantity(months.to('s'))}) that is "
        f"**{quantity(rate, 4)}**.",
    )
    mistakes = (
        Mistake(
            rate * eta,
            "You left out serving's lower utilisation: each served token "
            f"takes more chip time than its {fwd} FLOP per parameter suggest.",
        ),
        Mistake(
            (rate * forward * eta / train).to(rate.units),
            "You served as many tokens as were trained; a trained token costs "
            f"{trn} FLOP per parameter, a served one {fwd} (before the utilisation penalty).",
        ),
        Mistake(
            (rate * train / forward).to(rate.units),
            f"You counted a trained token at {fwd} FLOP per parameter; the backward pass makes "
            f"it {trn}.",
        ),
    )
    return Draw(
        text=text,
        answer=rate,
        solution=solution,
        tolerance=0.02,
        mistakes=distinct_mistakes(mistakes, rate, 0.02),
        hint="Make the two bills of GPU time equal; the parameters cancel.",
    )
