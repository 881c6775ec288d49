"""Over-training as a trade: a smaller model at the same loss costs more to train and less to
serve. After how many served tokens does it pay back?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "When does a smaller, longer-trained model pay back?"
USES = ("chinchilla_loss", "training_flops", "inference_flops")
LECTURE = "1:18:59"

FITS = ("hoffmann_2022", "epoch_2024")
BIG_B = (70, 100, 200)  # active parameters of the larger model, billions
TOKENS_PER_PARAM = (40, 100, 200)
SHRINK = (0.5, 0.6, 0.75)
TOLERANCE = 0.05  # the power 1/β amplifies the rounding of the printed loss figures


def draw(rng, presets) -> Draw:
    while True:  # the smaller model must reach the loss at all, and cost more to train
        fit_id = rng.choice(FITS)
        big = Q_(rng.choice(BIG_B), "Gparameter").to("parameter")
        big_tokens = (big * Q_(rng.choice(TOKENS_PER_PARAM), "token/parameter")).to("token")
        small = big * rng.choice(SHRINK)
        detail = get("chinchilla_loss").evaluate_detailed(
            fit=fit_id, n_active=big, training_tokens=big_tokens, presets=presets
        )
        loss = detail.value.to("").m
        c = {k: v.value for k, v in detail.inputs.items()}
        e, a, b = (
            c[k].to("").m for k in ("loss_irreducible", "loss_param_coeff", "loss_data_coeff")
        )
        alpha, beta = c["loss_param_exponent"].to("").m, c["loss_data_exponent"].to("").m
        unit = c["fit_token_unit"]
        param_term = a / small.to("parameter").m ** alpha
        data_left = loss - e - param_term  # what the data term may still cost
        if data_left <= 0:
            continue
        small_tokens = (unit * (b / data_left) ** (1 / beta)).to("token")
        train_big = get("training_flops").evaluate(n_active=big, training_tokens=big_tokens)
        train_small = get("training_flops").evaluate(n_active=small, training_tokens=small_tokens)
        extra = (train_small - train_big).to("FLOP")
        # not a small difference of two large bills; and not so large that the smaller model's
        # whole bill (planned + extra) lands within twice the tolerance of the extra alone
        if 0.3 * train_big < extra < train_big / (2.5 * TOLERANCE):
            break
    check = get("chinchilla_loss").evaluate(
        fit=fit_id, n_active=small, training_tokens=small_tokens, presets=presets
    )
    require(abs(check.to("").m - loss) < 1e-9)
    one = Q_(1, "token")
    per_token = (
        get("inference_flops").evaluate(
            n_active=big, inference_tokens=one, inference_inefficiency=1
        )
        - get("inference_flops").evaluate(
            n_active=small, inference_tokens=one, inference_inefficiency=1
        )
    ).to("FLOP")
    breakeven = (extra / per_token * one).to("token")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    train = (train_big / (big * big_tokens)).to(forward.units)  # forward and backward
    fwd, trn = number(forward.m), number(train.m)
    small_serve = (forward * small * one).to("FLOP")  # the smaller model's own cost per token
    fit = presets.get("fit", fit_id)
    big_param_term = a / big.m**alpha
    text = (
        f"Under the {fit.name} fit of the loss law, L = E + A / N^α + B / D^β with E = "
        f"{number(e)}, A = {number(a)}, B = {number(b)}, α = {number(alpha)} and β = "
        f"{number(beta)} (N in parameters, D in tokens), a lab plans a model with "
        f"{quantity(big.to('Gparameter'))} trained on {quantity(big_tokens)}. It could instead "
        f"train a model with {quantity(small.to('Gparameter'))} to the same loss. Counting "
        "compute in FLOPs (attention ignored, equal utilisation), after how many served tokens "
        "does the smaller model's extra training pay for itself?"
    )
    solution = (
        f"The planned model's loss: {number(e)} + {number(big_param_term, 4)} (parameter term) "
        f"+ {number(loss - e - big_param_term, 4)} (data term) = {number(loss, 5)}. Keep these "
        "figures: the next step takes a small difference and raises it to the power 1/β.",
        f"The smaller model's parameter term is larger, {number(param_term, 4)}, so its data "
        f"term must shrink to {number(data_left, 4)}: D = (B / {number(data_left, 4)})^(1/β) = "
        f"{quantity(small_tokens)}.",
        f"Training at {trn} FLOP per parameter per token: {quantity(train_big.to('FLOP'))} for "
        f"the planned model, {quantity(train_small.to('FLOP'))} for the smaller one, "
        f"{quantity(extra)} more.",
        f"Each served token costs {fwd} FLOP per parameter, so the smaller model saves "
        f"{quantity(per_token)} per token. It pays back after {quantity(extra)} / "
        f"{quantity(per_token)} = **{quantity(breakeven, 3)}** served.",
    )
    mistakes = (
        Mistake(
            (breakeven * forward / train).to("token"),
            f"You priced a served token at {trn} FLOP per parameter like a trained one; "
            f"serving is a forward pass, {fwd}.",
        ),
        Mistake(
            (train_small / per_token * one).to("token"),
            "You set the smaller model's whole training bill against the saving; only its "
            "extra training over the planned model has to be paid back.",
        ),
        Mistake(
            (extra / small_serve * one).to("token"),
            "You divided by what a served token costs the smaller model; what pays back is the "
            "saving, the difference between the two models' costs per token.",
        ),
    )
    tolerance = TOLERANCE
    kept = distinct_mistakes(mistakes, breakeven, tolerance)
    return Draw(
        text=text,
        answer=breakeven,
        solution=solution,
        tolerance=tolerance,
        mistakes=kept,
        hint="Find the smaller model's tokens from the loss law; then compare the two bills.",
    )
