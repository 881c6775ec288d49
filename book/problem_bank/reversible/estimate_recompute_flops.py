"""Order of magnitude: what a reversible network buys for its extra forward pass. It costs a
third more compute and frees nearly all the activation memory: capacity, never time."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate
from book.problem_bank._activations import gated_factor
from units import Q_

KIND = "estimate"
TITLE = "What does a reversible network buy for its extra pass?"
USES = (
    "gated_activation_bytes_factor",
    "full_activation_memory",
    "revnet_activation_memory",
    "training_flops",
    "revnet_training_flops",
)
LECTURE = "2:04:02"

# model: GPUs a replica splits it over (tensor and pipeline parallel); the activations of the
# replica's sequences are spread over them, so the replica's HBM is what they must fit in
MODELS = {"llama_3_1_8b": 1, "llama_3_1_70b": 8}
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
BATCH = (2, 4, 8)  # sequences a replica runs at a time
CONTEXTS = (4096, 8192, 16384)
# The per-value count is printed at two figures and the reversible residue may be neglected
# (a few per cent of what is freed); narrower than the closest slip, one sequence of two (x2).
FACTOR = 1.25


def draw(rng, presets) -> Draw:
    while True:  # until storing everything overflows the HBM and the reversible version fits
        model_id, hardware = rng.choice(tuple(MODELS)), rng.choice(CHIPS)
        batch = Q_(rng.choice(BATCH), "sequence")
        context = Q_(rng.choice(CONTEXTS), "token/sequence")
        case = dict(
            model=model_id,
            precision="bf16",
            batch_size=batch,
            context_length=context,
            activation_bytes_factor=gated_factor(presets, model_id),  # the chapter's count
            presets=presets,
        )
        full = evaluate("full_activation_memory", detailed=True, **case)
        stored = full.value.to("GB")  # every layer's internals
        working = evaluate("full_activation_memory", n_layers=1, **case).to("GB")
        last = evaluate("revnet_activation_memory", detailed=True, **case)
        kept = (last.value + working).to("GB")  # the last output and the working layer
        gpus = MODELS[model_id]
        hbm = (gpus * presets.get("hardware", hardware).hbm_capacity).to("GB")
        if stored > hbm and kept < hbm / 2:
            break
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    freed = (stored - kept).to("GB")
    factor = case["activation_bytes_factor"]
    per_value = last.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    layers, d = int(model.layers), int(model.d_model)
    tokens = (batch * context).to("token")
    one = dict(model=model_id, training_tokens=Q_(1, "token"), presets=presets)
    six = evaluate("training_flops", **one)
    eight = evaluate("revnet_training_flops", **one)
    per_param = ((eight - six) / model.params_active).to("FLOP/parameter")
    more = (eight / six).to("").m - 1
    inputs = (layers * last.value + working).to("GB")  # full recomputation: every layer's input
    name = chip.name.replace(" (per GPU)", "")
    replica = (
        "each GPU holding a whole replica of the model"
        if gpus == 1
        else f"{number(gpus)} GPUs to a replica (the model split over them by tensor and "
        "pipeline parallelism, its activations spread evenly)"
    )
    where = "each GPU" if gpus == 1 else "each replica"
    text = (
        f"You train {model.name} ({layers} layers, residual width {d:,}) on {name} GPUs, "
        f"{replica}; {where} runs "
        f"{quantity(batch)} of {context_tokens(context)} at a time, with BF16 activations. "
        "Today every layer stores its internals for the backward pass, about "
        f"{number(factor.m)} bytes per residual value per token (a SwiGLU MLP, grouped-query "
        "attention, no dropout; attention's scores are recomputed, never stored). Roughly how "
        "much activation memory would making every layer reversible "
        f"free on {where} at the peak? Answer in GB; within a factor of {number(FACTOR)} "
        "either way will do."
    )
    solution = (
        f"First what the switch costs, the other side of the trade (not asked): rebuilding "
        f"every layer's input runs each layer forward once more, "
        f"{number(per_param.m)} FLOP per parameter per token on top of training's "
        f"{number((six / model.params_active).to('FLOP/parameter').m)}: "
        f"{number(100 * more, 2)}% more compute, so a third more GPU-hours for the run.",
        "Stored whole, a layer's internals come to about "
        f"{quantity(factor)} of residual stream per token: {quantity(factor)} × {d:,} values × "
        f"{number(tokens.m)} tokens × "
        f"{layers} layers = {quantity(stored, 3)}, more than the {quantity(hbm)} of HBM "
        + ("its GPU has" if gpus == 1 else f"its {number(gpus)} GPUs have")
        + ": the run does not fit as it is.",
        f"Reversible, the peak holds the last layer's output ({quantity(per_value)}) and the "
        f"internals of the one layer being rebuilt and differentiated ({quantity(factor)}): "
        f"{quantity(kept, 3)}, whatever the depth.",
        f"The switch frees {quantity(stored, 3)} − {quantity(kept, 3)} ≈ "
        f"**{quantity(freed, 2)}** on {where}: capacity bought with time, never time saved. "
        "(Per-layer checkpointing, which keeps each layer's input and re-runs each layer forward "
        f"once, costs the same extra pass and still keeps {quantity(inputs, 3)} here: "
        "reversibility's further saving is those inputs, which grow with the depth.)",
    )
    mistakes = [
        Mistake(
            (layers - 1) * last.value.to("GB"),
            f"You counted each layer's input only ({quantity(per_value)}); stored whole, a "
            f"layer keeps all its internals for the backward pass, about {quantity(factor)}.",
        ),
        Mistake(
            freed / batch.m,
            f"That is one sequence's; {where} runs {quantity(batch)} at a time.",
        ),
        Mistake(
            freed / layers,
            "That is one layer's worth; stored whole, every layer's internals wait for the "
            "backward pass.",
        ),
    ]
    return Draw(
        text=text,
        answer=freed,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(mistakes, freed, FACTOR, factor=True),
        hint="The bytes per residual value a layer stores for its backward pass (given), "
        "times the values, tokens and layers; then what a reversible network still holds at "
        "its peak.",
    )
