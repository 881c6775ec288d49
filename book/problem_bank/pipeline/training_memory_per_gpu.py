"""Training memory per GPU: sharded state plus recomputed activations."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes
from book.problem_bank._activations import gated_factor
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Training memory per GPU: a sharded state beside recomputed activations"
USES = (
    "training_state_memory",
    "layer_activation_bytes",
    "training_memory_recompute",
    "gated_activation_bytes_factor",
    "full_activation_memory",
)

MODELS = (
    "llama_3_1_8b",
    "llama_3_1_70b",
    "llama_3_1_405b",
    "qwen3_235b_a22b",
    "mixtral_8x7b",
    "gpt_oss_120b",
)
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
SHARDS = (8, 16, 32, 64, 128)
BATCH = (1, 2, 4, 8)
CONTEXTS = (4096, 8192, 16384)
TOLERANCE = 0.02


def draw(rng, presets) -> Draw:
    while True:  # until the working layer is too big to leave out (see below)
        model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        shards = rng.choice(SHARDS)
        batch = Q_(rng.choice(BATCH), "sequence")
        context = Q_(rng.choice(CONTEXTS), "token/sequence")
        drawn = _draw(presets, model_id, hardware, shards, batch, context)
        if drawn is not None:
            return drawn


def _draw(presets, model_id, hardware, shards, batch, context) -> Draw | None:
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
    weight, grad, adam = (
        used[name].value.to("byte/parameter")
        for name in ("train_weight_bytes", "train_grad_bytes", "optimizer_bytes")
    )
    per_value = used["activation_bytes_per_value"].value.to("byte/value")  # BF16
    state_share = (state / shards).to("GB")
    # the peak: while a layer is recomputed for its backward pass, it holds its internals
    # counted as the reversible chapter counts a gated layer (SwiGLU MLP, grouped-query
    # attention, no dropout), a mixture of experts' routed experts together
    stored = gated_factor(presets, model_id)
    gated = {**case, "activation_bytes_factor": stored}
    working = get("full_activation_memory").evaluate(**{**gated, "n_layers": 1}).to("GB")
    total = (state_share + acts + working).to("GB")
    if abs(((state_share + acts) / total).to("").m - 1) <= 2 * TOLERANCE:
        return None  # leaving the working layer out must be graded wrong
    per_param = (state / model.params_total).to("byte/parameter")
    full = get("full_activation_memory").evaluate(**gated).to("GB")
    hbm = chip.hbm_capacity.to("GB")
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # what a run may fill
    verdict = "fits within" if total <= usable * hbm else "does not fit within"
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)}, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )

    sequences = "one sequence" if batch.m == 1 else quantity(batch)
    experts = (
        f", the {model.experts_active} experts a token is routed to counted together" if moe else ""
    )
    text = (
        f"You train {model.name} ({params}; {layers:g} layers, residual width {int(d):,}) "
        f"with mixed-precision Adam: BF16 weights and gradients, FP32 master weights and "
        f"moments. The whole training state is sharded evenly (ZeRO's third stage) over "
        f"{shards} {chip.name} GPUs, and each GPU trains on its own {sequences} of "
        f"{context_tokens(context, 5)}. With full recomputation, each layer keeps only its "
        "input in BF16 for the backward pass; on the way back each layer is run forward again "
        "and holds its internals (everything its backward pass needs, about "
        f"{quantity(stored)} of residual stream per token for this gated layer{experts}) while "
        "its "
        "gradient is taken. How "
        "much memory does each GPU need at the peak for its share of the state and its "
        "activations (communication buffers left out)? Answer in GB per GPU."
    )
    solution = (
        f"State per parameter: {number(weight.m)} bytes of BF16 weight, {number(grad.m)} of "
        f"gradient, and {number(adam.m)} of FP32 master weight and two Adam moments: "
        f"{quantity(per_param)}. Every parameter is trained, so "
        f"{quantity(model.params_total)} take {quantity(state)}; 1/{shards} of it per GPU is "
        f"{quantity(state_share)}.",
        f"A layer's input is one vector of {int(d):,} values per token at "
        f"{quantity(per_value)}: "
        f"{quantity(per_layer)} per layer. Over {layers:g} layers, {quantity(batch)} and "
        f"{context_tokens(context, 5)} each, that is {quantity(acts)}; activations are not "
        "sharded, each GPU keeps those of its own sequences.",
        f"At the peak one layer is being recomputed and holds its internals: "
        f"{quantity(stored)} × {int(d):,} values × {quantity(batch)} × "
        f"{context_tokens(context, 5)} = {quantity(working)}, on top of the stored inputs.",
        f"In all {quantity(state_share)} + {quantity(acts)} + {quantity(working)} = "
        f"**{quantity(total, 3)}** per GPU, "
        f"which {verdict} the {number(100 * usable)}% of one {chip.name}'s {quantity(hbm)} "
        "a run may fill (the rest goes to the runtime and communication buffers).",
    )
    mistakes = [
        Mistake(
            (model.params_total * weight / shards + acts + working).to("GB"),
            "You counted only the BF16 weights; training also keeps gradients and Adam's "
            f"FP32 master weights and two moments, {quantity(per_param)} in all.",
        ),
        Mistake(
            (state + acts + working).to("GB"),
            "ZeRO's third stage shards the whole state, so each GPU holds only its share of it.",
        ),
        Mistake(
            (state_share + full).to("GB"),
            f"You stored every activation (about {quantity(stored)}); with full "
            "recomputation only each layer's input is kept.",
        ),
        Mistake(
            (state_share + (acts + working) / shards).to("GB"),
            "Activations belong to each GPU's own sequences: sharding the state does "
            "not divide them.",
        ),
    ]
    mistakes.append(
        Mistake(
            (state_share + acts).to("GB"),
            "You left out the layer being recomputed: while its gradient is taken it holds its "
            f"internals, {quantity(stored)}, for the whole batch.",
        )
    )
    if moe:
        mistakes.append(
            Mistake(
                (state_share * model.params_active / model.params_total + acts + working).to("GB"),
                "Every expert is trained and has its gradient and Adam state: count all "
                "the parameters, not the active ones.",
            )
        )
    # reader 26: a state of 14 bytes per parameter, the gradients left out; named where it
    # lands on a value of its own
    no_grad = Mistake(
        (state_share * (per_param - grad) / per_param + acts + working).to("GB"),
        f"You left out the BF16 gradients ({quantity(grad)}); with Adam's FP32 master weights "
        f"and moments and the BF16 weights the state is {quantity(per_param)}.",
    )
    if any(abs((m.value / no_grad.value).to("").m - 1) < 2 * TOLERANCE for m in mistakes):
        return None
    mistakes.append(no_grad)
    kept = distinct_mistakes(mistakes, total, TOLERANCE)
    if any(abs((m.value / total).to("").m - 1) < 2 * TOLERANCE for m in kept):
        return None  # a slip (the weights alone, when the state's share is small) too close
    return Draw(
        text=text,
        answer=total,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=kept,
        hint="Bytes per parameter of the training state, then bytes per token per layer, and "
        "the one layer being recomputed.",
    )
