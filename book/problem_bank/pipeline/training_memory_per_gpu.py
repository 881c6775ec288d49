"""Training memory per GPU: sharded state plus recomputed activations."""

from __future__ import annotations

from book.format import context_tokens, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Does a training shard fit on one GPU?"
USES = ("training_state_memory", "layer_activation_bytes", "training_memory_recompute")

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b", "qwen3_235b_a22b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
SHARDS = (8, 16, 32, 64, 128)
BATCH = (1, 2, 4, 8)
CONTEXTS = (4096, 8192, 16384)


def draw(rng, presets) -> Draw:
    model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
    shards = rng.choice(SHARDS)
    batch = Q_(rng.choice(BATCH), "sequence")
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    case = dict(
        hardware=hardware,
        model=model_id,
        precision="bf16",
        batch_size=batch,
        context_length=context,
        presets=presets,
    )
    detail = get("training_memory_recompute").evaluate_detailed(**case)
    used = detail.inputs
    state = used["training_state_memory"].value.to("GB")
    acts = used["activation_memory"].value.to("GB")
    per_layer = used["layer_activation_bytes"].value.to("kB/token")
    layers = used["n_layers"].value.m
    d = used["d_model"].value.m
    state_share = (state / shards).to("GB")
    total = (state_share + acts).to("GB")
    per_param = (state / model.params_total).to("byte/parameter")
    full = get("full_activation_memory").evaluate(**case).to("GB")
    hbm = chip.hbm_capacity.to("GB")
    verdict = "fits in" if total <= hbm else "does not fit in"
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)}, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )

    text = (
        f"You train {model.name} ({params}; {layers:g} layers, residual width {int(d):,}) "
        f"with mixed-precision Adam: BF16 weights and gradients, FP32 master weights and "
        f"moments. The whole training state is sharded evenly (ZeRO-3) over {shards} "
        f"{chip.name} GPUs, and each GPU trains on its own {quantity(batch)} of "
        f"{context_tokens(context, 5)}. With full recomputation, each layer keeps only its "
        "input in BF16 for the backward pass. How much memory does each GPU need for its "
        "share of the state and its activations (buffers left out)? Answer in GB per GPU."
    )
    solution = (
        f"State per parameter: 2 bytes of BF16 weight, 2 of gradient, and 12 of FP32 master "
        f"weight and two Adam moments: {quantity(per_param)}. Every parameter is trained, "
        f"so {quantity(model.params_total)} take {quantity(state)}; a {shards}th of it per "
        f"GPU is {quantity(state_share)}.".replace(f"a {shards}th of it", f"1/{shards} of it"),
        f"A layer's input is one vector of {int(d):,} values per token at 2 bytes: "
        f"{quantity(per_layer)} per layer. Over {layers:g} layers, {quantity(batch)} and "
        f"{context_tokens(context, 5)} each, that is {quantity(acts)}; activations are not "
        "sharded, each GPU keeps those of its own sequences.",
        f"In all {quantity(state_share)} + {quantity(acts)} = **{quantity(total)} per GPU**, "
        f"which {verdict} the {quantity(hbm)} of one {chip.name}.",
    )
    mistakes = [
        Mistake(
            (model.params_total * Q_(2, "byte/parameter") / shards + acts).to("GB"),
            "You counted only the BF16 weights; training also keeps gradients and Adam's "
            "FP32 master weights and two moments, 16 bytes per parameter in all.",
        ),
        Mistake(
            (state + acts).to("GB"),
            "ZeRO-3 shards the state, so each GPU holds only its share of it.",
        ),
        Mistake(
            (state_share + full).to("GB"),
            "You stored every activation (about 34 bytes per value); with full "
            "recomputation only each layer's input is kept.",
        ),
        Mistake(
            (state_share + acts / shards).to("GB"),
            "Activations belong to each GPU's own sequences: sharding the state does "
            "not divide them.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                (state_share * model.params_active / model.params_total + acts).to("GB"),
                "Every expert is trained and has its gradient and Adam state: count all "
                "the parameters, not the active ones.",
            )
        )
    kept = tuple(m for m in mistakes if abs((m.value / total).to("").m - 1) > 0.02)
    return Draw(
        text=text,
        answer=total,
        solution=solution,
        tolerance=0.02,
        mistakes=kept,
        hint="Bytes per parameter of the training state, then bytes per token per layer.",
    )
