"""Order of magnitude: the pre-training compute of a reported MoE run."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "estimate"
TITLE = "What did that pre-training run cost in FLOPs?"
USES = ("training_flops",)
LECTURE = "1:18:59"

MODELS = (  # model, training tokens in trillions (None: the model's reported count)
    ("deepseek_v3", None),
    ("kimi_k2", None),
    ("qwen3_235b_a22b", (18, 24, 36)),
    ("gpt_oss_120b", (10, 20)),
)
FACTOR = 2.0


def draw(rng, presets) -> Draw:
    model_id, token_choices = rng.choice(MODELS)
    model = presets.get("model", model_id)
    tokens = (
        model.training_tokens
        if token_choices is None
        else Q_(rng.choice(token_choices), "Ttoken").to("token")
    )
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    sparsity = (model.params_total / model.params_active).to("").m
    training = (compute / (model.params_active * tokens)).to("FLOP/parameter/token")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    said = "is reported to have been" if token_choices is None else "is"
    text = (
        f"{model.name} has {quantity(model.params_total)} in all, of which "
        f"{quantity(model.params_active)} are active per token, and {said} pre-trained on "
        f"{quantity(tokens)}. Roughly how many FLOPs did pre-training take? An order of "
        "magnitude is enough; ignore attention."
    )
    solution = (
        f"Each token runs forward ({number(forward.m)} FLOP per parameter it touches: a "
        "multiply and an add) and backward (twice the forward): "
        f"{number(training.m)} FLOP per active parameter per token.",
        f"Only the {quantity(model.params_active)} that are active work on a token; the "
        f"other experts sit idle for it.",
        f"{number(training.m)} × {quantity(model.params_active)} × {quantity(tokens)} ≈ "
        f"**{quantity(compute, 2)}** "
        f"(exactly {quantity(compute)}).",
    )
    mistakes = (
        Mistake(
            compute * forward / training,
            f"You counted {number(forward.m)} FLOP per parameter per token, the forward pass "
            "only; training adds a backward pass twice as costly, "
            f"{number(training.m)} in all.",
        ),
        Mistake(
            compute * sparsity,
            "You counted all the parameters; a token is routed "
            f"through the active ones only, {number(sparsity)} times fewer.",
        ),
    )
    return Draw(
        text=text,
        answer=compute,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
        hint="FLOPs per parameter per token, for the parameters a token actually uses.",
    )
