"""The lecture's chain: tokens served set the tokens worth training on, far past Chinchilla."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from derivations.inputs import reachable
from units import Q_

KIND = "multi"
TITLE = "How over-trained should a served model be?"
USES = (
    "inference_tokens",
    "pretrain_inference_token_ratio",
    "balanced_training_tokens",
    "chinchilla_tokens",
    "overtraining_factor",
)
LECTURE = "1:18:59"

ACTIVE_B = (30, 70, 100, 200, 400)  # billions of active parameters
RATES_M = (10, 20, 50, 100)  # millions of tokens per second
MONTHS = (1, 2, 3, 6)
SLOWDOWN = ((2, "half"), (4, "a quarter"), (5, "a fifth"))  # serving MFU against training's


def _value(eq_id: str, **given):
    """``eq_id`` evaluated on the inputs it reads among ``given``."""
    reads = reachable(get(eq_id))
    return get(eq_id).evaluate(**{k: v for k, v in given.items() if k in reads or k == "presets"})


def draw(rng, presets) -> Draw:
    active = Q_(rng.choice(ACTIVE_B), "Gparameter")
    rate = Q_(rng.choice(RATES_M), "Mtoken/s")
    months = Q_(rng.choice(MONTHS), "month")
    eta, share = rng.choice(SLOWDOWN)
    case = dict(
        n_active=active,
        inference_rate=rate,
        deployment_time=months,
        inference_inefficiency=Q_(eta, ""),
        presets=presets,
    )
    served = _value("inference_tokens", **case).to("token")
    ratio = _value("pretrain_inference_token_ratio", **case).to("")
    trained = _value("balanced_training_tokens", **case).to("token")
    chinchilla = _value("chinchilla_tokens", **case).to("token")
    factor = _value("overtraining_factor", training_tokens=trained, **case).to("")
    per_param = (chinchilla / active).to("token/parameter")
    month_word = "month" if months.m == 1 else "months"

    text = (
        f"A lab will serve a model with {quantity(active)} active per token at a steady "
        f"{quantity(rate)} for {number(months.m)} {month_word}, and serving reaches only "
        f"{share} of the MFU pre-training does. It wants to spend as much compute on "
        "pre-training as on serving. How many times more tokens than the compute-optimal "
        "(Chinchilla) count should it pre-train on?"
    )
    solution = (
        f"Tokens served: {quantity(rate)} × {number(months.m)} {month_word} = {quantity(served)}.",
        f"A trained token costs 6 FLOP per active parameter (forward and backward); a served "
        f"one costs 2 (forward only), but at 1/{eta} of the utilisation, so in chip time it "
        f"costs as much as {2 * eta} at training's MFU. Equal cost means pre-training tokens = "
        f"{2 * eta}/6 of the served ones, a ratio of {number(ratio.m)}: {quantity(trained)}.",
        f"Chinchilla's rule is {quantity(per_param)}: {quantity(chinchilla)} for "
        f"{quantity(active)}.",
        f"{quantity(trained)} / {quantity(chinchilla)}: **{number(factor.m)} times** the "
        "compute-optimal count.",
    )
    mistakes = (
        Mistake(
            factor / eta,
            "You left out serving's lower utilisation: a served token costs "
            f"2 FLOP per parameter at 1/{eta} of training's MFU, so it is dearer than 2.",
        ),
        Mistake(
            factor * 3 / eta,
            "You trained on as many tokens as are served; a trained token "
            "costs 6 FLOP per parameter, a served one 2 (times the utilisation penalty).",
        ),
        Mistake(
            factor * 3,
            "You counted a trained token as costing 2 FLOP per parameter "
            "like a served one; the backward pass makes it 6.",
        ),
    )
    kept = tuple(m for m in mistakes if abs((m.value / factor).to("").m - 1) > 0.02)
    return Draw(
        text=text,
        answer=factor,
        solution=solution,
        tolerance=0.02,
        mistakes=kept,
        hint="Count the tokens served, then make the two compute bills equal.",
    )
