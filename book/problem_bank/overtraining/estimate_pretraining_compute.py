"""Order of magnitude: an over-trained run's FLOPs could have trained a bigger compute-optimal
model; how big? Training's FLOPs per token, then Chinchilla's tokens per parameter."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "estimate"
TITLE = "The compute-optimal model an over-trained run could have been"
USES = ("training_flops", "chinchilla_tokens", "overtraining_factor")
LECTURE = "1:18:59"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "qwen3_235b_a22b", "gpt_oss_120b", "mixtral_8x7b")
TOKENS = (2, 5, 9, 15, 36)  # trillions of training tokens, a lab's choice
# The two rules of thumb are recalled, and Chinchilla's is itself rounded; narrower than the
# slips, the closest of which (forward-only FLOPs in the budget) is a factor √3 off.
FACTOR = 1.25
LEAST_OVERTRAINED = 3  # the Chinchilla count for the same tokens must sit clear of the answer


def draw(rng, presets) -> Draw:
    while True:
        model_id = rng.choice(MODELS)
        model = presets.get("model", model_id)
        tokens = Q_(rng.choice(TOKENS), "Ttoken").to("token")
        active = model.params_active
        optimal = get("chinchilla_tokens").evaluate(n_active=active, presets=presets)
        times = (tokens / optimal).to("").m
        if times >= LEAST_OVERTRAINED:
            break
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    per_param = (optimal / active).to("token/parameter")  # Chinchilla's 20
    training = (compute / (active * tokens)).to("FLOP/parameter/token")  # 6
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # 2
    # C = 6 N' D' with D' = 20 N': N' = √(C / (6 × 20))
    bigger = ((compute / (training * per_param)) ** 0.5).to("Gparam")
    bigger_tokens = (per_param * bigger).to("Ttoken")
    sparsity = (model.params_total / active).to("").m
    moe = sparsity > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    text = (
        f"A lab pre-trains a {model.name}-shaped model ({params}) on "
        f"{quantity(tokens.to('Ttoken'))}. With the same FLOPs it could instead have trained "
        "a compute-optimal (Chinchilla) model. About how many parameters would that model "
        "have? Ignore attention; any answer within a factor "
        f"of {number(FACTOR)} is accepted."
    )
    solution = (
        f"The run's FLOPs: {number(training.m)} FLOP per active parameter per token (forward "
        f"{number(forward.m)}, backward twice that) × {quantity(active)} × "
        f"{quantity(tokens.to('Ttoken'))} = {quantity(compute, 3)}"
        + (", the idle experts aside." if moe else "."),
        f"A compute-optimal model of N′ parameters trains on {quantity(per_param)}, so it "
        f"spends {number(training.m)} × N′ × {number(per_param.m)} N′ = "
        f"{number((training * per_param).m)} N′² FLOPs.",
        f"Set that equal to the run's budget: N′ = √({quantity(compute, 3)} / "
        f"{number((training * per_param).m)}) ≈ **{quantity(bigger, 3)}**, trained on "
        f"{quantity(bigger_tokens, 3)}. "
        f"The lab's model saw {number(times, 3)} times Chinchilla's count for its size, yet "
        f"the budget's optimal model is only {number((bigger / active).to('').m, 3)} times "
        "as large: the square root of the over-training. The FLOPs per token cancel (N′ = "
        f"√(N D / {number(per_param.m)})); what a lab buys with the smaller model is cheaper "
        "serving.",
    )
    mistakes = [
        Mistake(
            (tokens / per_param).to("Gparam"),
            f"That is the model Chinchilla would size for these {quantity(tokens.to('Ttoken'))}; "
            "at the same FLOPs the bigger model sees fewer tokens: set its training FLOPs "
            "equal to the budget.",
        ),
        Mistake(
            bigger * (forward / training).m ** 0.5,
            f"You counted the run at {number(forward.m)} FLOP per parameter per token, the "
            f"forward pass only, against {number(training.m)} for the optimal model.",
        ),
        Mistake(
            bigger * (training.m) ** 0.5,
            f"You left the {number(training.m)} FLOP per parameter per token out of the "
            "optimal model's budget.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                bigger * sparsity**0.5,
                "You counted all the parameters in the FLOPs; a token is routed through the "
                f"active ones only, {number(sparsity)} times fewer.",
            )
        )
    require(bigger > active, "the budget's optimal model is the bigger one")
    return Draw(
        text=text,
        answer=bigger,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(mistakes, bigger, FACTOR, factor=True),
        hint="The run's FLOPs first; then what a model of N′ parameters spends when trained on "
        "Chinchilla's tokens per parameter: a multiple of N′².",
    )
