"""RL at the same compute as pre-training: how many rollout tokens does that buy?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, require
from book.problem_bank.overtraining._runs import model_and_tokens
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "How many RL tokens cost as much as pre-training?"
USES = ("training_flops", "rl_flops", "pretrain_rl_token_ratio")
LECTURE = "1:18:59"

MODELS = (("deepseek_v3", None), ("kimi_k2", None), ("llama_3_1_405b", (15,)))
TRAINED_SHARE = ((0.1, "a tenth"), (0.25, "a quarter"), (0.5, "half"))
SLOWDOWN = ((2, "half"), (3, "a third"), (4, "a quarter"))


def draw(rng, presets) -> Draw:
    model_id, model, tokens = model_and_tokens(rng, presets, MODELS)
    trained, trained_text = rng.choice(TRAINED_SHARE)
    eta, share = rng.choice(SLOWDOWN)
    # every rollout token is generated (a forward pass); the share trained on runs forward and
    # backward again, as a pre-training token does
    forward = flops_per_param_token.value.to("FLOP/parameter/token")
    one = dict(n_active=Q_(1, "parameter"), training_tokens=Q_(1, "token"), presets=presets)
    train = (get("training_flops").evaluate(**one) / Q_(1, "parameter*token")).to(forward.units)
    per_token = forward + trained * train
    case = dict(rl_flops_per_param_token=per_token, rl_inefficiency=Q_(eta, ""), presets=presets)
    ratio = get("pretrain_rl_token_ratio").evaluate(**case).to("")
    lecture = get("pretrain_rl_token_ratio").evaluate_detailed(presets=presets)  # its own factors
    lecture_flops = lecture.inputs["rl_flops_per_param_token"].value.to(forward.units)
    lecture_eta = lecture.inputs["rl_inefficiency"].value.to("")
    rl_tokens = (tokens / ratio).to("token")
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    rl = get("rl_flops").evaluate(model=model_id, rl_tokens=rl_tokens, **case).to("FLOP")
    require(abs((rl / compute).to("").m - 1) < 1e-9)
    text = (
        f"{model.name} ({quantity(model.params_active)} active per token) was pre-trained on "
        f"{quantity(tokens)}. Its RL phase generates rollouts and then trains on "
        f"{trained_text} of the generated tokens (a forward and backward pass over them); "
        f"the whole RL phase, rollouts and training alike, runs at {share} of the MFU "
        "pre-training reached. How many rollout tokens can RL generate for the same GPU time "
        "as pre-training?"
    )
    solution = (
        f"A rollout token costs {number(forward.m)} FLOP per active parameter to generate, "
        f"and {trained_text} of them cost {number(train.m)} more to train on: "
        f"{number(per_token.m)} FLOP per parameter per token, at 1/{eta} of training's "
        f"utilisation, so {number(eta * per_token.m)} in chip time.",
        f"A pre-training token costs {number(train.m)}. Equal cost: pre-training tokens = "
        f"{number(eta * per_token.m)}/{number(train.m)} = {number(ratio.m)} times the RL "
        "tokens (the active parameters cancel).",
        f"{quantity(tokens)} / {number(ratio.m)} = **{quantity(rl_tokens, 3)}** of rollouts.",
    )
    mistakes = (
        Mistake(
            rl_tokens * eta,
            "You left out the rollouts' low utilisation: RL tokens cost "
            "more chip time than their FLOPs suggest.",
        ),
        Mistake(
            (rl_tokens * per_token / forward).to("token"),
            f"You counted generation only ({number(forward.m)} FLOP per parameter); training on "
            f"part of the rollouts costs {number(train.m)} more per token trained.",
        ),
        Mistake(
            (tokens / lecture.value).to("token"),
            f"That is the lecture's ratio for its own factors ({number(lecture_flops.m)} FLOP "
            f"per parameter, 1/{number(lecture_eta.m)} of the MFU); this RL recipe gives "
            "another one.",
        ),
    )
    return Draw(
        text=text,
        answer=rl_tokens,
        solution=solution,
        tolerance=0.02,
        mistakes=tuple(m for m in mistakes if abs((m.value / rl_tokens).to("").m - 1) > 0.02),
        hint="FLOPs per rollout token first, then the utilisation, then equal bills.",
    )
