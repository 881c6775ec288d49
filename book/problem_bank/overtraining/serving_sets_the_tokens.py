"""The lecture's chain: tokens served set the tokens worth training on, far past Chinchilla."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from book.problem_bank.overtraining._runs import month_text, served_text
from derivations import get
from derivations.inputs import reachable
from derivations.notation import flops_per_param_token
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
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    one = dict(n_active=Q_(1, "parameter"), training_tokens=Q_(1, "token"), presets=presets)
    train = (_value("training_flops", **one) / Q_(1, "parameter*token")).to(forward.units)
    fwd, trn, weight = number(forward.m), number(train.m), number(eta * forward.m)

    text = (
        f"A lab will serve a model with {quantity(active)} active per token at a steady "
        f"{quantity(rate)} for {month_text(months)}, and serving reaches only "
        f"{share} of the MFU pre-training does. It splits its GPU time between pre-training "
        "and serving the way the lecture argues two costs that trade against each other "
        "should be split. How many times more tokens than the compute-optimal (Chinchilla) "
        "count should it pre-train on? Answer as a multiple (a plain number)."
    )
    solution = (
        "More pre-training buys a smaller model for the same quality, so the two bills trade "
        "against each other, and their sum is smallest near where they are equal: give "
        "pre-training about the same GPU time as serving.",
        served_text(rate, months, served),
        f"A trained token costs {trn} FLOP per active parameter (forward and backward); a "
        f"served one costs {fwd} (forward only), but at 1/{eta} of the utilisation, so in chip "
        f"time it costs as much as {weight} at training's MFU. Equal cost means pre-training "
        f"tokens = {weight}/{trn} of the served ones, a ratio of {number(ratio.m)}: "
        f"{quantity(trained)}.",
        f"Chinchilla's rule is {quantity(per_param)}: {quantity(chinchilla)} for "
        f"{quantity(active)}.",
        f"{quantity(trained)} / {quantity(chinchilla)}: **{quantity(factor, 4)}** times the "
        "compute-optimal count.",
    )
    mistakes = (
        Mistake(
            factor / eta,
            "You left out serving's lower utilisation: a served token costs "
            f"{fwd} FLOP per parameter at 1/{eta} of training's MFU, so it is dearer than {fwd}.",
        ),
        Mistake(
            factor * train / (eta * forward),
            "You trained on as many tokens as are served; a trained token "
            f"costs {trn} FLOP per parameter, a served one {fwd} (times the utilisation penalty).",
        ),
        Mistake(
            factor * train / forward,
            f"You counted a trained token as costing {fwd} FLOP per parameter "
            f"like a served one; the backward pass makes it {trn}.",
        ),
    )
    kept = tuple(m for m in mistakes if abs((m.value / factor).to("").m - 1) > 0.02)
    return Draw(
        text=text,
        answer=factor,
        solution=solution,
        tolerance=0.02,
        mistakes=kept,
        hint="Count the tokens served, then make the two bills of GPU time equal.",
    )
