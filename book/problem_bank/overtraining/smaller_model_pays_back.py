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
TOLERANCE = 0.02
FIGURES = 4  # significant figures a student keeps in each term of the loss


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
        big_param_term = a / big.m**alpha
        big_data_term = b / (big_tokens / unit).to("").m ** beta
        param_term = a / small.to("parameter").m ** alpha
        # equal losses, so E cancels: what the smaller model's data term may still cost
        data_left = big_param_term + big_data_term - param_term
        if data_left <= 0:
            continue
        small_tokens = (unit * (b / data_left) ** (1 / beta)).to("token")
        train_big = get("training_flops").evaluate(n_active=big, training_tokens=big_tokens)
        train_small = get("training_flops").evaluate(n_active=small, training_tokens=small_tokens)
        extra = (train_small - train_big).to("FLOP")
        # not a small difference of two large bills; and not so large that the smaller model's
        # whole bill (planned + extra) lands within twice the tolerance of the extra alone
        if not 0.3 * train_big < extra < train_big / (2.5 * TOLERANCE):
            continue
        # well conditioned: the student's route, each loss term kept to FIGURES significant
        # figures, lands well inside the window
        kept = sum(
            sign * float(f"{term:.{FIGURES - 1}e}")
            for sign, term in ((1, big_param_term), (1, big_data_term), (-1, param_term))
        )
        rounded_tokens = (unit * (b / kept) ** (1 / beta)).to("token")
        rounded_train = get("training_flops").evaluate(
            n_active=small, training_tokens=rounded_tokens
        )
        if abs((rounded_train - train_big) / extra - 1) < TOLERANCE / 4:
            break
    # from here on the fit as the statement prints it, so the solution follows from the page
    e, a, b, alpha, beta = (float(number(x).replace(",", "")) for x in (e, a, b, alpha, beta))
    big_param_term = a / big.m**alpha
    big_data_term = b / (big_tokens / unit).to("").m ** beta
    param_term = a / small.to("parameter").m ** alpha
    # the data term as the solution works it: each term at FIGURES significant figures
    data_left = float(
        number(
            sum(float(number(t, FIGURES)) for t in (big_param_term, big_data_term))
            - float(number(param_term, FIGURES)),
            FIGURES,
        )
    )
    loss = e + big_param_term + big_data_term
    small_tokens = (unit * (b / data_left) ** (1 / beta)).to("token")
    train_big = get("training_flops").evaluate(n_active=big, training_tokens=big_tokens)
    train_small = get("training_flops").evaluate(n_active=small, training_tokens=small_tokens)
    extra = (train_small - train_big).to("FLOP")
    check = get("chinchilla_loss").evaluate(
        fit=fit_id, n_active=small, training_tokens=small_tokens, presets=presets
    )
    require(abs(check.to("").m / loss - 1) < 1e-3, "the printed fit is the source's, rounded")
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
    text = (
        f"Under the {fit.name} fit of the loss law, L = E + A / N^α + B / D^β with E = "
        f"{number(e)}, A = {number(a)}, B = {number(b)}, "
        f"α = {number(alpha)} and β = {number(beta)} (N in "
        "parameters, D in tokens), a lab plans a model with "
        f"{quantity(big.to('Gparameter'))} trained on {quantity(big_tokens)}. It could instead "
        f"train a model with {quantity(small.to('Gparameter'))} to the same loss. Counting "
        "compute in FLOPs (attention ignored, equal utilisation), after how many served tokens "
        "does the smaller model's extra training pay for itself? Answer in tokens. (The answer "
        f"is sensitive to rounding: keep {FIGURES} significant figures in each term of the "
        "loss.)"
    )
    solution = (
        "The two models reach the same loss, so E cancels: the smaller model's data term is "
        "what the planned model's two terms leave after the smaller model's parameter term, "
        "B / D₂^β = A / N₁^α + B / D₁^β − A / N₂^α = "
        f"{number(big_param_term, FIGURES)} + {number(big_data_term, FIGURES)} − "
        f"{number(param_term, FIGURES)} = {number(data_left, FIGURES)}. (Through the loss "
        f"itself, {number(loss, FIGURES)}, this small term would come out as the difference "
        "of two numbers near the loss, and the next step raises it to the power 1/β: a rounding "
        "of the loss would move the answer by several percent.)",
        f"So D₂ = (B / {number(data_left, FIGURES)})^(1/β) = {quantity(small_tokens)}.",
        f"Training at {trn} FLOP per parameter per token: {quantity(train_big.to('FLOP'))} for "
        f"the planned model, {quantity(train_small.to('FLOP'))} for the smaller one, "
        f"{quantity(extra)} more.",
        f"Each served token costs {fwd} FLOP per parameter, so the smaller model saves "
        f"{quantity(per_token)} per token. It pays back after {quantity(extra)} / "
        f"{quantity(per_token)} = **{quantity(breakeven, 4)}** served.",
    )
    mistakes = (
        Mistake(
            (breakeven * forward / train).to("token"),
            "You priced a trained token and a served one alike: training runs forward and "
            f"backward, {trn} FLOP per parameter, serving forward only, {fwd}.",
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
        hint=(
            "The two losses are equal, so the irreducible E cancels: find the smaller model's "
            f"tokens from the other terms (keep {FIGURES} significant figures in each), then "
            "compare the two bills."
        ),
    )
