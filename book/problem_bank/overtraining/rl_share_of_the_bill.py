"""A model's RL phase as a share of its training bill: rollouts cost more chip time per token
than pre-training does, so a modest RL run can take a large share."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, lands_clear, require
from book.problem_bank.overtraining._runs import model_and_tokens
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "What share of the training bill went to RL?"
USES = ("training_flops", "rl_flops")
LECTURE = "1:18:59"

MODELS = (("deepseek_v3", None), ("kimi_k2", None), ("llama_3_1_405b", (15,)))
ROLLOUTS_T = (1, 2, 3, 5)  # trillions of rollout tokens generated
TRAINED_SHARE = ((0.1, "a tenth"), (0.25, "a quarter"), (0.5, "half"))
SLOWDOWN = ((2, "half"), (3, "a third"), (4, "a quarter"))
TOLERANCE = 0.02


def draw(rng, presets) -> Draw:
    model_id, model, tokens = model_and_tokens(rng, presets, MODELS)
    rollouts = Q_(rng.choice(ROLLOUTS_T), "Ttoken").to("token")
    trained, trained_text = rng.choice(TRAINED_SHARE)
    eta, share = rng.choice(SLOWDOWN)
    # every rollout token is generated (a forward pass); the share trained on runs forward and
    # backward again, as a pre-training token does
    forward = flops_per_param_token.value.to("FLOP/parameter/token")
    one = dict(n_active=Q_(1, "parameter"), training_tokens=Q_(1, "token"), presets=presets)
    train = (get("training_flops").evaluate(**one) / Q_(1, "parameter*token")).to(forward.units)
    per_token = forward + trained * train
    case = dict(rl_flops_per_param_token=per_token, rl_inefficiency=Q_(eta, ""), presets=presets)
    pretrain = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    rl = get("rl_flops").evaluate(model=model_id, rl_tokens=rollouts, **case).to("FLOP")

    def rl_share(rl_bill):
        return (rl_bill / (pretrain + rl_bill)).to("")

    answer = rl_share(rl)
    require(0.05 < answer.m < 0.95, "RL is neither negligible nor everything")
    require(rollouts < tokens / 2, "RL sees far fewer tokens than pre-training")
    text = (
        f"{model.name} ({quantity(model.params_active)} active per token) was pre-trained on "
        f"{quantity(tokens)}. Its RL phase then generated {quantity(rollouts)} of rollouts and "
        f"trained on {trained_text} of them (a forward and backward pass over those); the whole "
        f"RL phase, rollouts and training alike, ran at {share} of the MFU pre-training reached. "
        "What share of the GPU time of pre-training and RL together went to RL? Answer as a "
        "fraction (or a percentage)."
    )
    active = model.params_active
    solution = (
        f"Pre-training costs {number(train.m)} FLOP per active parameter per token: "
        f"{number(train.m)} × {quantity(active)} × {quantity(tokens)} = {quantity(pretrain, 3)}.",
        f"A rollout token costs {number(forward.m)} FLOP per active parameter to generate, and "
        f"{trained_text} of them cost {number(train.m)} more to train on: "
        f"{number(per_token.m, 3)} FLOP per parameter per token.",
        f"At 1/{eta} of pre-training's MFU, RL's GPU time is worth {number(eta)} × "
        f"{number(per_token.m, 3)} × {quantity(active)} × {quantity(rollouts)} = "
        f"{quantity(rl, 3)} at pre-training's rate.",
        f"RL's share: {quantity(rl, 3)} / ({quantity(pretrain, 3)} + {quantity(rl, 3)}) = "
        f"**{quantity(answer, 3)}**, though RL saw far fewer tokens than pre-training: each "
        "costs more FLOPs per token and runs at a lower MFU.",
    )
    mistakes = [
        Mistake(
            rl_share(rl / eta),
            "You left out the RL phase's low utilisation: its tokens cost more chip time than "
            "their FLOPs suggest.",
        ),
        Mistake(
            rl_share(rl * forward / per_token),
            f"You counted generation only ({number(forward.m)} FLOP per parameter); training on "
            f"part of the rollouts costs {number(train.m)} more per token trained.",
        ),
        Mistake(
            (rl / pretrain).to(""),
            "That is RL's time over pre-training's; the share is over the two together.",
        ),
        Mistake(
            rl_share(rl * train / per_token),
            f"Generating a rollout is a forward pass, {number(forward.m)} FLOP per parameter, "
            f"not {number(train.m)}: only the share trained on runs backward too.",
        ),
    ]
    inverted = Mistake(  # reader 28: the MFU factor applied the wrong way round
        rl_share(rl / eta**2),
        f"You divided RL's FLOPs by {number(eta)}; at 1/{eta} of the MFU the same FLOPs take "
        f"{number(eta)} times the GPU time, so multiply.",
    )
    require(
        all(abs((inverted.value / m.value).to("").m - 1) >= 2 * TOLERANCE for m in mistakes),
        "the inverted MFU lands apart from the other slips",
    )
    mistakes.insert(1, inverted)
    mistakes.append(
        Mistake(
            rl_share(rl * (forward + train) / per_token),
            f"You trained on every rollout; the phase trains on {trained_text} of them, so a "
            f"rollout costs {number(train.m)} more only for that share.",
        )
    )
    require(
        all(lands_clear(m.value, answer, TOLERANCE) for m in mistakes), "every slip clear or inside"
    )
    kept = distinct_mistakes(mistakes, answer, TOLERANCE)
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=kept,
        hint="Weigh both phases in pre-training's chip time: FLOPs per token, times tokens, "
        "and RL's FLOPs scaled up by its lower MFU.",
    )
