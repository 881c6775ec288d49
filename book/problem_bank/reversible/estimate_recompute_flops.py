"""Order of magnitude: the compute a reversible network adds to a reported training run."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "estimate"
TITLE = "The price of rebuilding every layer's input"
USES = ("training_flops", "revnet_training_flops")
LECTURE = "2:04:02"

MODELS = (
    ("deepseek_v3", None),
    ("kimi_k2", None),
    ("qwen3_235b_a22b", (18, 36)),
    ("mixtral_8x7b", (2, 8)),
)
FACTOR = 1.9


def draw(rng, presets) -> Draw:
    model_id, token_choices = rng.choice(MODELS)
    model = presets.get("model", model_id)
    tokens = (
        model.training_tokens
        if token_choices is None
        else Q_(rng.choice(token_choices), "Ttoken").to("token")
    )
    case = dict(model=model_id, training_tokens=tokens, presets=presets)
    plain = get("training_flops").evaluate(**case).to("FLOP")
    rev = get("revnet_training_flops").evaluate(**case).to("FLOP")
    extra = (rev - plain).to("FLOP")
    sparsity = (model.params_total / model.params_active).to("").m
    per = model.params_active * tokens  # FLOPs per active parameter per token, from the bills:
    train = number((plain / per).to("FLOP/parameter/token").m)  # forward and backward
    revnet = number((rev / per).to("FLOP/parameter/token").m)  # and one more forward pass
    forward = number((extra / per).to("FLOP/parameter/token").m)
    said = "was" if token_choices is None else "is"
    suppose = "" if token_choices is None else "Suppose "
    text = (
        f"{suppose}{model.name} ({quantity(model.params_total)} in all, "
        f"{quantity(model.params_active)} "
        f"active per token) {said} pre-trained on {quantity(tokens)}. If it were built from "
        "reversible layers, so that the backward pass rebuilds each layer's input from its "
        "output instead of storing it, roughly how many extra FLOPs would its pre-training "
        "cost? An order of magnitude will do; ignore attention."
    )
    solution = (
        "Rebuilding a layer's input evaluates the layer once more on the way back: one extra "
        f"forward pass, {forward} FLOP per active parameter per token (on top of the usual "
        f"{train}).",
        f"Only the {quantity(model.params_active)} active per token are evaluated; the other "
        "experts sit idle for it.",
        f"{forward} × {quantity(model.params_active)} × {quantity(tokens)} ≈ "
        f"**{quantity(extra, 2)}** extra (exactly {quantity(extra)}): a third more than the "
        f"{quantity(plain)} of ordinary training.",
    )
    mistakes = (
        Mistake(
            plain,
            f"You counted a whole training pass ({train} FLOP per parameter); the rebuild "
            f"is one forward pass, {forward}.",
        ),
        Mistake(
            rev,
            f"That is the whole reversible run, {revnet} FLOP per parameter per token; the "
            "question asks for the extra.",
        ),
        Mistake(
            extra * sparsity,
            "You counted every parameter; a token only runs through "
            f"the active ones, {number(sparsity)} times fewer.",
        ),
    )
    return Draw(
        text=text,
        answer=extra,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
        hint="What does one more forward pass cost per active parameter per token?",
    )
