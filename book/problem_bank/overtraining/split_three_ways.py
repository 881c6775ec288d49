"""The lecture's balance brought, not given: a sum of costs that trade against each other is
smallest near where they are equal, so pre-training, RL and serving each get about the same GPU
time. A serving plan then sets the pre-training tokens, and those the RL rollouts."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require, slips_apart
from derivations import get
from derivations.inputs import reachable
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "Splitting the compute between pre-training, RL and serving"
USES = (
    "inference_tokens",
    "pretrain_inference_token_ratio",
    "balanced_training_tokens",
    "pretrain_rl_token_ratio",
)
LECTURE = "1:18:59"

ACTIVE_B = (20, 40, 60, 120, 300)  # billions of active parameters (they cancel)
USERS_M = (50, 100, 300, 800)  # millions of daily users (a serving load counted per user, not
PER_USER = (2_000, 5_000, 20_000)  # per second as serving_sets_the_tokens counts it); tokens a day
DAYS = (90, 180, 365)  # days served
SERVING = ((2, "half"), (3, "a third"), (4, "a quarter"))  # serving MFU against pre-training's
# the RL phase's MFU against pre-training's; not a third, where generating alone (two FLOPs at a
# third of the MFU) costs a rollout what a pre-training token costs (six), so the generation-only
# slip would land on the pre-training tokens, a figure of the chain (reader 29)
RL = ((2, "half"), (4, "a quarter"), (5, "a fifth"))
TRAINED = ((0.2, "a fifth"), (0.5, "half"), (1.0, "all"))  # of the rollouts, trained on
TOLERANCE = 0.02


def _value(eq_id: str, **given):
    """``eq_id`` evaluated on the inputs it reads among ``given``."""
    reads = reachable(get(eq_id))
    return get(eq_id).evaluate(**{k: v for k, v in given.items() if k in reads or k == "presets"})


def draw(rng, presets) -> Draw:
    active = Q_(rng.choice(ACTIVE_B), "Gparameter")
    users = Q_(rng.choice(USERS_M) * 1e6, "")  # a count of users
    per_user = Q_(rng.choice(PER_USER), "token/day")
    days = Q_(rng.choice(DAYS), "day")
    rate = (users * per_user).to("token/s")
    eta, serving_share = rng.choice(SERVING)
    rl_eta, rl_share = rng.choice(RL)
    trained, trained_text = rng.choice(TRAINED)
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    one = dict(n_active=Q_(1, "parameter"), training_tokens=Q_(1, "token"), presets=presets)
    train = (_value("training_flops", **one) / Q_(1, "parameter*token")).to(forward.units)
    per_rollout = forward + trained * train  # generated, then a share trained on
    case = dict(
        n_active=active,
        inference_rate=rate,
        deployment_time=days,
        inference_inefficiency=Q_(eta, ""),
        rl_flops_per_param_token=per_rollout,
        rl_inefficiency=Q_(rl_eta, ""),
        presets=presets,
    )
    served = _value("inference_tokens", **case).to("token")
    pretrain = _value("balanced_training_tokens", **case).to("token")
    rl_ratio = _value("pretrain_rl_token_ratio", **case).to("")
    rollouts = (pretrain / rl_ratio).to("token")
    # the three bills of GPU time, in pre-training's FLOPs: equal by construction
    bills = [
        train * active * pretrain,
        per_rollout * rl_eta * active * rollouts,
        forward * eta * active * served,
    ]
    require(all(abs((b / bills[0]).to("").m - 1) < 1e-9 for b in bills), "the bills balance")
    fwd, trn = number(forward.m), number(train.m)
    cost = number(per_rollout.m, 3)

    text = (
        f"A lab will serve a new model ({quantity(active)} active per token) to "
        f"{number(users.to('').m / 1e6)} million users a day, each generating about "
        f"{quantity(per_user)}, for {quantity(days)}; serving reaches {serving_share} "
        "of the MFU pre-training does. Before that, an RL phase generates rollouts and trains "
        f"on {trained_text} of the generated tokens (a forward and backward pass over them), "
        f"the whole phase at {rl_share} of pre-training's MFU. The lab splits its GPU time "
        "between pre-training, RL and serving the way the lecture argues costs that trade "
        "against each other should be split. Ignoring attention FLOPs, how many rollout "
        "tokens should the RL phase generate? Answer in tokens."
    )
    solution = (
        "Each phase's bill trades against the others (more pre-training and RL buy a better "
        "model for the same serving, or a smaller one), and a sum of such bills is smallest "
        "near where they are equal: give each phase about the same GPU time.",
        f"Tokens served: {number(users.to('').m / 1e6)} million users × "
        f"{quantity(per_user)} × {quantity(days)} = {quantity(served)}.",
        f"A served token costs {fwd} FLOP per active parameter at 1/{eta} of pre-training's "
        f"MFU, as much chip time as {number(eta * forward.m)} would at pre-training's; a "
        f"pre-training token costs {trn}. Equal GPU time: {quantity(served)} × "
        f"{number(eta * forward.m)}/{trn} = {quantity(pretrain)} of pre-training.",
        f"A rollout costs {fwd} FLOP per parameter to generate, plus {trn} for each token "
        f"trained on ({trained_text} of them): {cost} on average, at 1/{rl_eta} of the MFU, so "
        f"{number(rl_eta * per_rollout.m, 3)} in pre-training's chip time. Equal GPU time "
        f"with pre-training: {quantity(pretrain)} × {trn}/{number(rl_eta * per_rollout.m, 3)} "
        f"= **{quantity(rollouts, 4)}** of rollouts. (The active parameters cancel "
        "throughout.)",
    )
    mistakes = [
        Mistake(
            rollouts / eta,
            "You left out serving's lower utilisation: a served token takes more chip time "
            f"than its {fwd} FLOP per parameter suggest.",
        ),
        Mistake(
            rollouts * rl_eta,
            "You left out the RL phase's lower utilisation: a rollout takes more chip time "
            "than its FLOPs suggest.",
        ),
        Mistake(
            (rollouts * per_rollout / forward).to("token"),
            f"You counted a rollout as generation only ({fwd} FLOP per parameter); training on "
            f"{trained_text} of them costs {trn} more per token trained.",
        ),
        Mistake(
            (rollouts * per_rollout / (forward + train)).to("token"),
            f"You trained on every rollout; the phase trains on {trained_text} of them, so a "
            f"rollout costs {fwd} FLOP per parameter plus {trn} only for that share.",
        ),
    ]
    # the chain's own figures, where a student stops early: the pre-training tokens and the
    # tokens served, one value by construction when serving runs at a third of the MFU (a
    # served token's two FLOPs then cost the chip time of a pre-training token's six)
    rl_costs = (
        "the RL phase's tokens cost more chip time each, so equal GPU time buys fewer of them"
    )
    if abs((served / pretrain).to("").m - 1) <= TOLERANCE:
        mistakes.append(
            Mistake(
                pretrain,
                "That is the tokens served, and as many pre-training tokens (at this MFU a "
                f"served token costs the chip time of a pre-training one); {rl_costs}.",
            )
        )
    else:
        mistakes.append(Mistake(pretrain, f"That is the pre-training tokens; {rl_costs}."))
        mistakes.append(
            Mistake(
                served,
                "That is the tokens served; they set the pre-training tokens, and those the "
                "rollouts.",
            )
        )
    require(slips_apart(mistakes, rollouts, TOLERANCE), "each wrong value has one diagnosis")
    return Draw(
        text=text,
        answer=rollouts,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, rollouts, TOLERANCE),
        hint="How does the lecture say a budget split between costs that trade against each "
        "other comes out? Then count chip time per token in each phase.",
    )
