"""Order of magnitude: a lab gives its over-training, not its tokens; the FLOPs follow."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from derivations.notation import flops_per_param_token

KIND = "estimate"
TITLE = "Pre-training FLOPs from a lab's over-training"
USES = ("chinchilla_tokens", "training_flops")
LECTURE = "1:18:59"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "qwen3_235b_a22b", "gpt_oss_120b", "mixtral_8x7b")
OVERTRAINED = (5, 8, 12, 25, 40, 75)  # times the Chinchilla count for the active parameters
FACTOR = 1.5  # narrower than a factor-two slip; excludes forward-only (3x low), Chinchilla slips


def draw(rng, presets) -> Draw:
    model_id = rng.choice(MODELS)
    model = presets.get("model", model_id)
    times = rng.choice(OVERTRAINED)
    active = model.params_active
    optimal = get("chinchilla_tokens").evaluate(n_active=active, presets=presets).to("token")
    tokens = (optimal * times).to("token")
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    per_param = (optimal / active).to("token/parameter")
    training = (compute / (active * tokens)).to("FLOP/parameter/token")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    sparsity = (model.params_total / active).to("").m
    moe = sparsity > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    text = (
        f"A lab describes a {model.name}-shaped model ({params}) as over-trained "
        f"{number(times)} times: pre-trained on {number(times)} times the compute-optimal "
        "(Chinchilla) number of tokens for its active parameters. Roughly how many FLOPs did "
        "pre-training take? Ignore attention; any answer within a factor of "
        f"{number(FACTOR)} is accepted."
    )
    solution = (
        f"Chinchilla's rule is {quantity(per_param)}: {quantity(optimal)} for "
        f"{quantity(active)}; {number(times)} times that is {quantity(tokens)}.",
        f"Each token runs forward ({number(forward.m)} FLOP per parameter it touches: a "
        "multiply and an add) and backward (twice the forward): "
        f"{number(training.m)} FLOP per active parameter per token"
        + (", the idle experts aside." if moe else "."),
        f"{number(training.m)} × {quantity(active)} × {quantity(tokens)} ≈ "
        f"**{quantity(compute, 2)}** (exactly {quantity(compute)}). The FLOPs grow with the "
        "square of the parameters at a given over-training.",
    )
    mistakes = [
        Mistake(
            compute * forward / training,
            f"You counted {number(forward.m)} FLOP per parameter per token, the forward pass "
            f"only; training adds a backward pass twice as costly, {number(training.m)} in all.",
        ),
        Mistake(
            compute / per_param.m,
            f"You took the over-training factor as tokens per parameter; the compute-optimal "
            f"count is already {quantity(per_param)}, and the factor multiplies that.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                compute * sparsity,
                "You counted all the parameters in the FLOPs; a token is routed through the "
                f"active ones only, {number(sparsity)} times fewer.",
            )
        )
    return Draw(
        text=text,
        answer=compute,
        solution=solution,
        tolerance=FACTOR,
        mistakes=tuple(mistakes),
        hint="First the tokens: the compute-optimal count per active parameter, times the "
        "factor. Then FLOPs per parameter per token.",
    )
