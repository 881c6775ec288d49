"""Read the equal-cost rule backwards: what serving would justify a reported training run?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "How much serving justifies that much training?"
USES = ("training_flops", "inference_flops", "inference_tokens")
LECTURE = "1:18:59"

MODELS = (("deepseek_v3", None), ("kimi_k2", None), ("llama_3_1_70b", (15,)))
MONTHS = (2, 3, 6, 12)
SLOWDOWN = ((2, "half"), (3, "a third"), (4, "a quarter"))


def draw(rng, presets) -> Draw:
    model_id, token_choices = rng.choice(MODELS)
    model = presets.get("model", model_id)
    tokens = (
        model.training_tokens
        if token_choices is None
        else Q_(rng.choice(token_choices), "Ttoken").to("token")
    )
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
    assert abs((check / served).to("").m - 1) < 1e-9
    month_word = "month" if months.m == 1 else "months"
    text = (
        f"{model.name} ({quantity(model.params_active)} active per token) was pre-trained on "
        f"{quantity(tokens)}. Serving it reaches {share} of the MFU pre-training did. At what "
        f"steady rate would it have to be served for {number(months.m)} {month_word} for the "
        "compute spent on serving to equal the compute spent on pre-training? Answer in "
        "tokens per second."
    )
    solution = (
        f"Pre-training: 6 FLOP per active parameter per token, {quantity(compute)}.",
        f"A served token costs 2 FLOP per active parameter, but at 1/{eta} of the utilisation, "
        f"so in chip time it weighs as much as {2 * eta}. The active parameters cancel: equal "
        f"cost needs 6/{2 * eta} of the training tokens served, {quantity(served)}.",
        f"Over {number(months.m)} {month_word} ({quantity(months.to('s'))}) that is "
        f"**{quantity(rate)}**.",
    )
    mistakes = (
        Mistake(
            rate * eta,
            "You left out serving's lower utilisation: each served token "
            "takes more chip time than its 2 FLOP per parameter suggest.",
        ),
        Mistake(
            rate / 3,
            "You served as many tokens as were trained; a trained token costs "
            "6 FLOP per parameter, a served one 2 (before the utilisation penalty).",
        ),
        Mistake(
            rate * 3,
            "You counted a trained token at 2 FLOP per parameter; the backward pass makes it 6.",
        ),
    )
    return Draw(
        text=text,
        answer=rate,
        solution=solution,
        tolerance=0.02,
        mistakes=tuple(m for m in mistakes if abs((m.value / rate).to("").m - 1) > 0.02),
        hint="Make the two compute bills equal; the parameters cancel.",
    )
