"""Checkpoint spacing in practice: every few layers, against the square-root optimum."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "A checkpoint every few layers"
USES = ("layer_activation_bytes", "revnet_activation_memory", "checkpoint_activation_memory")
LECTURE = "2:04:02"

CASES = (  # model and layers between checkpoints (divisors of its depth)
    ("llama_3_1_8b", (2, 4, 16)),
    ("llama_3_1_70b", (2, 4, 16, 20)),
    ("llama_3_1_405b", (2, 3, 6, 42)),
    ("qwen3_235b_a22b", (2, 47)),
)
BATCH = (1, 2, 4)
CONTEXTS = (8192, 32768)


def _size(q) -> str:
    return quantity(q.to("GB") if q >= Q_(1, "GB") else q.to("MB"))


def _every(n: int) -> str:
    """'every second layer', 'every 16th layer', 'every 42nd layer'."""
    words = {2: "second", 3: "third"}
    if n in words:
        return f"every {words[n]}"
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"every {n}{suffix}"


def draw(rng, presets) -> Draw:
    model_id, spacings = rng.choice(CASES)
    spacing = rng.choice(spacings)
    batch = Q_(rng.choice(BATCH), "sequence")
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    model = presets.get("model", model_id)
    case = dict(
        model=model_id,
        precision="bf16",
        batch_size=batch,
        context_length=context,
        presets=presets,
    )
    detail = get("checkpoint_activation_memory").evaluate_detailed(**case)
    best = detail.value.to("GB")
    one = detail.inputs["revnet_activation_memory"].value.to("GB")  # one layer's inputs
    layers = int(detail.inputs["n_layers"].value.m)
    d = int(detail.inputs["d_model"].value.m)
    per_value = detail.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    checkpoints = layers // spacing
    kept = ((checkpoints + spacing) * one).to("GB")  # K checkpoints, one segment's layers
    text = (
        f"You train {model.name} ({layers} layers, residual width {d:,}) on "
        f"{quantity(batch)} of {context_tokens(context, 5)} per GPU, with BF16 activations. "
        f"Your framework checkpoints the input of {_every(spacing)} layer and, on the way "
        "back, recomputes one segment at a time, holding the inputs of that segment's layers "
        "while its gradients are taken. Counting layer inputs only, how much activation "
        "memory does it keep at its peak? Answer in GB."
    )
    solution = (
        f"One layer's input for the batch: {quantity(batch)} × {context_tokens(context, 5)} × "
        f"{d:,} values × {quantity(per_value)} = {_size(one)}.",
        f"Checkpoints: {layers} / {spacing} = {checkpoints} layer inputs kept all along. While "
        f"a segment is recomputed, its {spacing} layers' inputs are held too: "
        f"{checkpoints} + {spacing} = {checkpoints + spacing} layers' worth.",
        f"{checkpoints + spacing} × {_size(one)} = **{quantity(kept, 3)}**. The best spacing, "
        f"√{layers} ≈ {number(layers**0.5, 3)} layers, would keep twice √{layers} ≈ "
        f"{number(2 * layers**0.5, 3)} layers' worth, {quantity(best)}: this spacing keeps "
        f"{number((kept / best).to('').m, 3)} times that.",
    )
    mistakes = [
        Mistake(
            (checkpoints * one).to("GB"),
            "You counted the checkpoints only; the segment "
            "being recomputed holds its layers' inputs as well.",
        ),
        Mistake(best, "That is the optimum at √L spacing; this framework uses its own."),
        Mistake(
            (layers * one).to("GB"),
            "That is every layer's input: ordinary backpropagation, no checkpointing.",
        ),
    ]
    return Draw(
        text=text,
        answer=kept,
        solution=solution,
        tolerance=0.02,
        mistakes=tuple(m for m in mistakes if abs((m.value / kept).to("").m - 1) > 0.02),
        hint="Layers' worth of inputs: the checkpoints, plus one segment.",
    )
