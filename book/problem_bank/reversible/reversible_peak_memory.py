"""What a reversible network still holds at the peak of its backward pass: the last layer's
output, both streams, and the internals of the one layer being differentiated, counted tensor by
tensor as the chapter counts Llama's layer. The depth does not enter; the stored-whole total and
per-layer checkpointing do grow with it."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, slips_apart
from book.problem_bank._activations import gated_factor
from units import Q_

KIND = "estimate"
TITLE = "What does a reversible network still hold at its peak?"
USES = (
    "gated_activation_bytes_factor",
    "revnet_activation_memory",
    "full_activation_memory",
)
LECTURE = "2:04:02"

# model: the GPUs a replica splits it over by tensor and sequence parallelism, which split every
# activation evenly over them (Korthikanti et al.), so each GPU holds its share of the peak
MODELS = {"llama_3_1_8b": 1, "llama_3_1_70b": 8}
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
BATCH = (2, 4, 8)  # sequences a replica runs at a time
CONTEXTS = (4096, 8192, 16384)
STREAMS = 2  # the Reformer's reversible block carries two full-width streams, x and y
# The lesson's slips, storing every layer's internals and per-layer checkpointing (at least
# 2.3 times the peak), and one sequence's (half or less) lie outside the factor's square; the
# count's fine points (one stream of the output, Korthikanti's 34 bytes for a GPT layer, keys
# and values for every head: within a factor of 1.19) land inside. The chapter's estimate.
FACTOR = 1.25


def draw(rng, presets) -> Draw:
    while True:  # until storing everything overflows the HBM, the reversible peak fits easily
        model_id, hardware = rng.choice(tuple(MODELS)), rng.choice(CHIPS)
        batch = Q_(rng.choice(BATCH), "sequence")
        context = Q_(rng.choice(CONTEXTS), "token/sequence")
        factor = gated_factor(presets, model_id)  # the chapter's count, bytes per value
        case = dict(
            model=model_id,
            precision="bf16",
            batch_size=batch,
            context_length=context,
            activation_bytes_factor=factor,
            presets=presets,
        )
        gpus = MODELS[model_id]
        stored = (evaluate("full_activation_memory", **case) / gpus).to("GB")  # every layer's
        layer = evaluate("full_activation_memory", n_layers=Q_(1, "layer"), **case)
        internals = (layer / gpus).to("GB")  # the one layer being differentiated
        one_stream = (evaluate("revnet_activation_memory", **case) / gpus).to("GB")
        peak = (STREAMS * one_stream + internals).to("GB")
        chip = presets.get("hardware", hardware)
        hbm = chip.hbm_capacity.to("GB")
        mistakes = _mistakes(presets, model_id, case, gpus, stored, internals, one_stream, peak)
        if stored > hbm and peak < hbm / 2 and slips_apart(mistakes, peak, FACTOR, factor=True):
            break
    model = presets.get("model", model_id)
    layers, d = int(model.layers), int(model.d_model)
    heads, kv_heads, head_dim = int(model.n_heads), int(model.n_kv_heads), int(model.head_dim)
    d_ff = int(model.d_ff)
    tokens = (batch * context).to("token")
    detail = evaluate("gated_activation_bytes_factor", detailed=True, **case)
    per_value = detail.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    counts = (4 * d, 2 * heads * head_dim, 2 * kv_heads * head_dim, 4 * d_ff)
    values = sum(counts)
    layer_bytes = (values * Q_(1, "value/token") * per_value).to("kB/token")
    output_bytes = (STREAMS * d * Q_(1, "value/token") * per_value).to("kB/token")
    name = chip.name.replace(" (per GPU)", "")
    if gpus == 1:
        replica = "each GPU holding a whole replica of the model and running"
        share = ""
    else:
        replica = (
            f"{number(gpus)} GPUs to a replica, with tensor and sequence parallelism splitting "
            "every activation evenly over them; each replica runs"
        )
        share = f", split over the replica's {number(gpus)} GPUs"
    text = (
        f"You train {model.name} ({layers} layers, residual width {d:,}; {heads} query heads "
        f"and {kv_heads} key-value heads of dimension {head_dim}; a SwiGLU MLP of width "
        f"{d_ff:,}; RMSNorm before attention and before the MLP; no dropout) on {name} GPUs, "
        f"{replica} {quantity(batch)} of {context_tokens(context)} at a time, with BF16 "
        "activations. FlashAttention recomputes attention's scores, never storing them. Today "
        "every layer stores its internals for the backward pass, and the activations overflow "
        "the HBM. You make every layer reversible, as the Reformer builds it: two full-width "
        "streams, each layer's input rebuilt from its output on the way back. Counting "
        "activations only (not the gradients passed between layers, nor the softmax "
        "statistics), roughly how much activation memory does each GPU hold at the peak of "
        f"the backward pass? Answer in GB; within a factor of {number(FACTOR)} either way "
        "will do."
    )
    solution = (
        "A layer's internals, every tensor its backward pass reads, counted as the chapter "
        f"counts Llama's layer: the two RMSNorms' inputs and outputs ({number(counts[0])} "
        f"values per token), the queries and the attention output ({number(counts[1])}), the "
        f"keys and values of the {kv_heads} key-value heads only ({number(counts[2])}), and "
        f"the MLP's gate, up projection, SiLU and product ({number(counts[3])}): "
        f"{number(values)} values, {quantity(layer_bytes, 3)} at {quantity(per_value)} "
        f"({quantity(factor)} of residual stream).",
        "The backward pass rebuilds each layer's input from its output, so it must start from "
        f"the last layer's output, both streams: {STREAMS} × {d:,} values, "
        f"{quantity(output_bytes, 3)}. While it works on a layer it holds that one layer's "
        "internals; nothing else waits, whatever the depth.",
        f"Together {quantity(output_bytes + layer_bytes, 3)}, times "
        f"{quantity(batch)} × {context_tokens(context)} = {quantity(tokens)}{share}: "
        f"**{quantity(peak, 3)}** on each GPU. Stored whole, all {layers} layers' internals "
        f"would take {quantity(stored, 3)} a GPU, more than its {quantity(hbm)} of HBM: that "
        "memory grows with the depth, the reversible network's does not.",
    )
    return Draw(
        text=text,
        answer=peak,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(mistakes, peak, FACTOR, factor=True),
        hint="The backward pass rebuilds each layer's input from its output, one layer at a "
        "time: what must it keep to start from, and what does the layer it is working on need "
        "for its gradient?",
    )


def _mistakes(presets, model_id, case, gpus, stored, internals, one_stream, peak):
    """The lesson's slips, each the count rerun with the one thing it gets wrong (every term is
    linear in it). The count's fine points (one stream of the output, the output left out,
    Korthikanti's 34 bytes for a GPT layer, keys and values for every head) land inside the
    window, as an estimate's approximations."""
    layers = int(presets.get("model", model_id).layers)
    out = [
        Mistake(
            stored,
            f"That is what plain backpropagation stores, all {layers} layers' internals; a "
            "reversible network rebuilds each layer's input from its output and holds one "
            "layer's internals at a time.",
        ),
        Mistake(
            (layers * one_stream + internals - one_stream).to("GB"),
            "That is per-layer checkpointing, every layer's input kept and each layer re-run; "
            "a reversible network rebuilds the inputs from the last layer's output instead.",
        ),
        Mistake(  # reader 30: the output alone, the working layer forgotten
            (STREAMS * one_stream).to("GB"),
            "That is the stored output alone, both streams; while the backward pass works on a "
            "layer it also holds that layer's internals, the larger part of the peak.",
        ),
        Mistake(
            peak / case["batch_size"].m,
            f"That is one sequence's; each {'GPU' if gpus == 1 else 'replica'} runs "
            f"{quantity(case['batch_size'])} at a time.",
        ),
    ]
    if gpus > 1:
        out.append(
            Mistake(
                peak * gpus,
                f"That is the whole replica's; tensor and sequence parallelism split it over "
                f"{number(gpus)} GPUs.",
            )
        )
    return out
