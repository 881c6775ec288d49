"""Long-context training: how many times longer a sequence fits beside the state when the layers
are reversible than when their inputs are checkpointed?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lands_clear,
    require,
    shown,
    slips_apart,
)
from book.problem_bank._activations import gated_factor
from book.problem_bank.reversible._schemes import INPUTS_ONLY, every_nth
from units import Q_

KIND = "multi"
TITLE = "How much longer a sequence with reversible layers?"
USES = (
    "training_state_memory",
    "layer_activation_bytes",
    "gated_activation_bytes_factor",
    "checkpoint_activation_memory",
    "full_activation_memory",
    "revnet_activation_memory",
)
LECTURE = "2:04:02"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
SHARDS = (1, 2, 4, 8, 16, 32, 64)
TOLERANCE = 0.02
STREAMS = 2  # the Reformer's reversible block carries two full-width streams, x and y
SHARE = (0.15, 0.7)  # the state's share of each GPU's HBM: enough to matter, room left


def draw(rng, presets) -> Draw:
    model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
    chip, model = presets.get("hardware", hardware), presets.get("model", model_id)
    exact_state = evaluate("training_state_memory", model=model_id, presets=presets)
    per_param = (exact_state / model.params_total).to("byte/parameter")
    params = shown(model.params_total.to("Gparam"))  # as the statement prints it
    hbm = shown(chip.hbm_capacity.to("GB"))
    state = (per_param * params).to("GB")
    low, high = SHARE
    shardings = [n for n in SHARDS if low <= (state / n / hbm).to("").m <= high]
    require(bool(shardings), "some sharding leaves the state a real share of the HBM")
    shards = rng.choice(shardings)
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # what a run may fill
    room = (usable * hbm - state / shards).to("GB")
    unit = Q_(1024, "token/sequence")  # everything is linear in the context: evaluate at 1K
    one = Q_(1, "sequence")
    case = dict(
        model=model_id,
        precision="bf16",
        batch_size=one,
        context_length=unit,
        activation_bytes_factor=gated_factor(presets, model_id),  # the chapter's gated layer
        presets=presets,
    )
    ckpt = evaluate("checkpoint_activation_memory", detailed=True, **case)
    per_layer = ckpt.inputs["layer_activation_bytes"].value.to("kB/token")
    layers = int(ckpt.inputs["n_layers"].value.m)
    buffer_detail = evaluate("full_activation_memory", detailed=True, n_layers=1, **case)
    stored = case["activation_bytes_factor"]
    per_value = ckpt.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    rev = evaluate("revnet_activation_memory", **case)
    tokens = unit * one

    def per_token(q):
        return (q / tokens).to("kB/token")

    buffer_token, one_stream = (per_token(q) for q in (buffer_detail.value, rev))
    # the reversible layer keeps both full-width streams of the last output: running a layer
    # backwards needs both (the chapter and reversible_peak_memory count two)
    rev_token = (STREAMS * one_stream).to("kB/token")
    # reader 30: the spacing is given, a whole number of layers that divides L, so the count is
    # exact: L/S checkpoints plus the segment's other S - 1 inputs (its first is its checkpoint,
    # counted once, as the chapter and spacing_the_checkpoints count), near S = sqrt(L)
    root = layers**0.5
    spacings = [s for s in range(2, layers) if layers % s == 0 and root / 2 <= s <= 2 * root]
    require(bool(spacings), "a spacing near the square root divides the layers")
    spacing = rng.choice(spacings)
    checkpoints = layers // spacing
    held = checkpoints + spacing - 1
    ckpt_token = (held * per_layer).to("kB/token")
    with_ckpt = ckpt_token + buffer_token
    with_rev = rev_token + buffer_token
    longest_ckpt = (room / with_ckpt).to("token")
    longest_rev = (room / with_rev).to("token")
    d = model.d_model
    state_words = "unsharded on each GPU" if shards == 1 else f"sharded evenly over {shards} GPUs"
    ratio = (longest_rev / longest_ckpt).to("")
    logits = (Q_(model.vocab, "value") * per_value / Q_(1, "token")).to(
        "kB/token"
    )  # one token's, held
    text = (
        f"You train {model.name} ({quantity(params)}, {layers} layers, residual width "
        f"{d:,}) on one long sequence per GPU on {chip.name} GPUs ({quantity(hbm)} of HBM, "
        f"of which a run may fill {number(100 * usable)}%), "
        "with its mixed-precision Adam state (BF16 weights and gradients, FP32 master "
        f"weights and two FP32 moments) {state_words}. Activations "
        "are BF16; attention's scores are recomputed, never stored; the logits and other "
        f"buffers are left out. Today the run uses {INPUTS_ONLY}, with a checkpoint at "
        f"the input of {every_nth(spacing)} layer. The internals of a layer, held while it is "
        f"differentiated, take about {quantity(stored)} of residual stream per token for this "
        "gated layer. A reversible version of the network would carry two full-width streams, "
        "as the Reformer's block does. How many times longer a sequence would the reversible "
        "version fit in the memory the state leaves free? (Work out both lengths; answer their "
        "ratio.)"
    )
    solution = (
        f"State: {quantity(per_param)} × {quantity(params)} = "
        f"{quantity(state)}; "
        + (
            f"unsharded it leaves {quantity(room)} of the {number(100 * usable)}% of each "
            "GPU's HBM a run may fill."
            if shards == 1
            else f"1/{shards} per GPU leaves {quantity(room)} of the {number(100 * usable)}% "
            "of its HBM a run may fill."
        ),
        f"A layer's input is {int(d):,} values × {quantity(per_value)} = "
        f"{quantity(per_layer)}. Checkpointing holds {checkpoints} checkpoints ({layers} / "
        f"{spacing}) and the other {spacing - 1} inputs of the segment being rebuilt, {held} "
        f"inputs, {quantity(ckpt_token)}; the working layer adds {quantity(stored)} × "
        f"{int(d):,} values = {quantity(buffer_token)}: {quantity(with_ckpt)} in all, so "
        f"{quantity(room)} / {quantity(with_ckpt)} = {quantity(longest_ckpt, 4)} today.",
        f"Reversible: the last layer's output, both streams (running a layer backwards needs "
        f"both), {STREAMS} × {quantity(one_stream)} = {quantity(rev_token)}, plus the same "
        "working layer: "
        f"{quantity(with_rev)}, whatever the depth; {quantity(room)} / {quantity(with_rev)} = "
        f"{quantity(longest_rev, 4)}.",
        f"The free HBM cancels: {quantity(with_ckpt)} / {quantity(with_rev)} = "
        f"**{number(ratio.m, 3)}** times the length. Not {layers} times, nor √{layers}: the "
        "working layer, not the stored inputs, dominates both. (It also recomputes less: one "
        "extra forward pass against this scheme's two, one to rebuild a segment's layer inputs "
        "and one for each layer's internals.) "
        f"A caveat: the BF16 logits alone, {int(model.vocab):,} vocabulary values × "
        f"{quantity(per_value)}, take {quantity(logits)}, "
        f"{number((logits / with_rev).to('').m, 2)} times what the reversible version holds "
        "per token; held whole at these lengths they would shorten both, so a real run computes "
        "the loss in chunks (and tiles the MLP), which is why they are left out here.",
    )

    def times(ckpt_per_token, rev_per_token):
        return (ckpt_per_token / rev_per_token).to("")

    mistakes = (
        Mistake(
            1 / ratio,
            "That is the ratio upside down: the length is the free memory over the bytes per "
            "token, so the version holding fewer bytes fits the longer sequence.",
        ),
        Mistake(
            times(with_ckpt, one_stream + buffer_token),
            "You kept one stream of the reversible layer's output; it carries two full-width "
            "streams, and running a layer backwards needs both.",
        ),
        Mistake(
            times(ckpt_token, rev_token),
            "You left out the working layer: both versions hold the internals of the layer "
            "being differentiated.",
        ),
        Mistake(
            times(per_layer * checkpoints + buffer_token, with_rev),
            f"You counted only the {checkpoints} checkpoints; rebuilding a segment also holds "
            f"its other {spacing - 1} layer inputs.",
        ),
        Mistake(
            times(per_token(evaluate("activation_memory", **case)) + buffer_token, with_rev),
            "You compared with storing every layer's input; today's run checkpoints.",
        ),
    )
    for slip in mistakes:  # inside the window or clear of it, never just outside
        require(lands_clear(slip.value, ratio, TOLERANCE), "each slip lands clear")
    require(slips_apart(mistakes, ratio, TOLERANCE), "each wrong value has one diagnosis")
    return Draw(
        text=text,
        answer=ratio,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, ratio, TOLERANCE),
        hint="Free HBM over bytes per token, each way: what does each scheme hold at its peak "
        "while it differentiates a layer? What cancels in the ratio?",
    )
