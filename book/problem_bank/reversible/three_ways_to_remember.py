"""Activation memory three ways: store every layer input, checkpoint, or run backwards."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "What does checkpointing keep?"
USES = (
    "layer_activation_bytes",
    "activation_memory",
    "revnet_activation_memory",
    "checkpoint_activation_memory",
)
LECTURE = "2:04:02"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b", "qwen3_235b_a22b")
BATCH = (1, 2, 4, 8)
CONTEXTS = (4096, 8192, 32768)


def _size(q) -> str:
    """Bytes in GB, or in MB below one GB."""
    return quantity(q.to("GB") if q >= Q_(1, "GB") else q.to("MB"))


def draw(rng, presets) -> Draw:
    model_id = rng.choice(MODELS)
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
    ckpt = detail.value.to("GB")
    plain = detail.inputs["activation_memory"].value.to("GB")
    rev = detail.inputs["revnet_activation_memory"].value.to("GB")
    per_layer = detail.inputs["layer_activation_bytes"].value.to("kB/token")
    layers = detail.inputs["n_layers"].value.m
    d = detail.inputs["d_model"].value.m
    segments = layers**0.5
    per_value = detail.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    fp8 = presets.get("precision", "fp8").bytes_per_value.to("byte/value")
    text = (
        f"You train {model.name} ({layers:g} layers, residual width {int(d):,}) with BF16 "
        f"activations, {quantity(batch)} of {context_tokens(context, 5)} per GPU. To save "
        "memory you keep only the inputs of a few evenly spaced layers (checkpoints) and, "
        "on the way back, recompute one segment at a time, holding its layers' inputs while "
        "its gradients are taken. With the number of segments K chosen to store the least "
        "(treat K as continuous: minimise K + L/K layers' worth over any real K), how much "
        "activation memory does the GPU keep, counting layer inputs only? Answer in GB."
    )
    solution = (
        f"One layer's input is a vector of {int(d):,} values per token at "
        f"{quantity(per_value)}: "
        f"{quantity(per_layer)}. For the batch that is {_size(rev)} per layer.",
        f"Stored for every layer, as ordinary backpropagation does, it would be {layers:g} × "
        f"{_size(rev)} = {_size(plain)}.",
        f"With K segments you keep K checkpoints plus one segment's {layers:g}/K layers: "
        f"K + {layers:g}/K layers' worth, least when K = √{layers:g} ≈ {number(segments, 3)}, "
        f"where both halves are equal: twice √{layers:g} ≈ {number(2 * segments, 3)} layers' "
        "worth.",
        f"{number(2 * segments, 3)} × {_size(rev)} = **{quantity(ckpt, 3)}**, "
        f"{number((plain / ckpt).to('').m, 3)} times less than storing every layer. The price "
        "is two extra forward passes: each segment is re-run once to rebuild its layers' "
        "inputs, and each layer once more for the internals its gradient needs.",
    )
    mistakes = (
        Mistake(
            ckpt / 2,
            "Half the answer: either you counted the checkpoints but not the segment being "
            "recomputed, whose layers' inputs are held while its gradients are taken (twice "
            f"√L layers' worth in all), or you stored BF16 at FP8's {quantity(fp8)} instead "
            f"of {quantity(per_value)}.",
        ),
        Mistake(plain, "That is ordinary backpropagation, every layer's input stored."),
        Mistake(
            rev,
            "That is what a reversible network keeps (the last layer's output); "
            "checkpointing keeps about twice √L layers' worth.",
        ),
    )
    return Draw(
        text=text,
        answer=ckpt,
        solution=solution,
        tolerance=0.02,
        mistakes=tuple(m for m in mistakes if abs((m.value / ckpt).to("").m - 1) > 0.02),
        hint="Count layers' worth of inputs: checkpoints plus one segment, as a function of K.",
    )
