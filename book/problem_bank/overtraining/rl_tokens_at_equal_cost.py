"""RL at the same compute as pre-training: how many rollout tokens does that buy?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "How many RL tokens cost as much as pre-training?"
USES = ("training_flops", "rl_flops", "pretrain_rl_token_ratio")
LECTURE = "1:18:59"

MODELS = (("deepseek_v3", None), ("kimi_k2", None), ("llama_3_1_405b", (15,)))
TRAINED_SHARE = ((0.1, "a tenth"), (0.25, "a quarter"), (0.5, "half"))
SLOWDOWN = ((2, "half"), (3, "a third"), (4, "a quarter"))


def draw(rng, presets) -> Draw:
    model_id, token_choices = rng.choice(MODELS)
    model = presets.get("model", model_id)
    tokens = (
        model.training_tokens
        if token_choices is None
        else Q_(rng.choice(token_choices), "Ttoken").to("token")
    )
    trained, trained_text = rng.choice(TRAINED_SHARE)
    eta, share = rng.choice(SLOWDOWN)
    # every rollout token is generated (2 FLOP per parameter); the share trained on runs
    # forward and backward again (6 more)
    per_token = Q_(2 + 6 * trained, "FLOP/parameter/token")
    case = dict(rl_flops_per_param_token=per_token, rl_inefficiency=Q_(eta, ""), presets=presets)
    ratio = get("pretrain_rl_token_ratio").evaluate(**case).to("")
    rl_tokens = (tokens / ratio).to("token")
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    rl = get("rl_flops").evaluate(model=model_id, rl_tokens=rl_tokens, **case).to("FLOP")
    assert abs((rl / compute).to("").m - 1) < 1e-9
    text = (
        f"{model.name} ({quantity(model.params_active)} active per token) was pre-trained on "
        f"{quantity(tokens)}. Its RL phase generates rollouts and then trains on "
        f"{trained_text} of the generated tokens (a forward and backward pass over them); "
        f"rollouts run at {share} of the MFU pre-training reached. How many rollout tokens "
        "can RL generate for the same compute as pre-training?"
    )
    solution = (
        f"A rollout token costs 2 FLOP per active parameter to generate, and {trained_text} of "
        f"them cost 6 more to train on: {number(per_token.m)} FLOP per parameter per token, "
        f"at 1/{eta} of training's utilisation, so {number(eta * per_token.m)} in chip time.",
        f"A pre-training token costs 6. Equal cost: pre-training tokens = "
        f"{number(eta * per_token.m)}/6 = {number(ratio.m)} times the RL tokens (the active "
        "parameters cancel).",
        f"{quantity(tokens)} / {number(ratio.m)} = **{quantity(rl_tokens)}** of rollouts.",
    )
    mistakes = (
        Mistake(
            rl_tokens * eta,
            "You left out the rollouts' low utilisation: RL tokens cost "
            "more chip time than their FLOPs suggest.",
        ),
        Mistake(
            rl_tokens * per_token.m / 2,
            "You counted generation only (2 FLOP per "
            "parameter); training on part of the rollouts costs 6 more per token trained.",
        ),
        Mistake(
            tokens / 1.5,
            "That is the lecture's ratio for its own factors (3 FLOP per "
            "parameter, a third of the MFU); this RL recipe gives another one.",
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
