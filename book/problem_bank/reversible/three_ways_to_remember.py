"""Store every activation, checkpoint, or run each layer backwards: how many sequences one
GPU's activation budget holds each way, at the same extra compute for the last two."""

from __future__ import annotations

import math

from book.format import context_tokens, number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    clear_of_rounding,
    distinct_mistakes,
    evaluate,
    require,
    whole_count_tolerance,
)
from book.problem_bank._activations import gated_factor
from units import Q_

KIND = "multi"
TITLE = "One activation budget, three ways to remember"
USES = (
    "gated_activation_bytes_factor",
    "full_activation_memory",
    "revnet_activation_memory",
    "checkpoint_activation_memory",
    "training_flops",
    "revnet_training_flops",
)
LECTURE = "2:04:02"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
CONTEXTS = (2048, 4096, 8192, 16384)
BUDGETS_GB = (16, 24, 40, 64)


def _size(q) -> str:
    """Bytes in GB, or in MB below one GB."""
    return quantity(q.to("GB") if q >= Q_(1, "GB") else q.to("MB"))


def _segmented(layers: int, length: int, stored, layer):
    """Peak memory with segments of ``length`` whole layers: every checkpoint, and the
    internals of the one segment being recomputed."""
    return (math.ceil(layers / length) * stored + length * layer).to("GB")


def _layers(n: int) -> str:
    return "one layer" if n == 1 else f"{n} layers"


def _fit(budget, per_sequence) -> float:
    return (budget / per_sequence).to("").m


def draw(rng, presets) -> Draw:
    model_id = rng.choice(MODELS)
    model = presets.get("model", model_id)
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    budget = Q_(rng.choice(BUDGETS_GB), "GB")
    one = Q_(1, "sequence")
    factor = gated_factor(presets, model_id)  # the chapter's count for a gated layer
    case = dict(model=model_id, precision="bf16", context_length=context, presets=presets)
    case["activation_bytes_factor"] = factor
    full_detail = evaluate("full_activation_memory", detailed=True, batch_size=one, **case)
    full = full_detail.value.to("GB")  # every layer's internals
    layer = evaluate("full_activation_memory", batch_size=one, n_layers=1, **case).to("GB")
    rev_detail = evaluate("revnet_activation_memory", detailed=True, batch_size=one, **case)
    stored = rev_detail.value.to("GB")  # one BF16 layer input (or output)
    per_value = rev_detail.inputs["activation_bytes_per_value"].value.to("byte/value")
    # the standard scheme (Chen et al.): a segment recomputed with its internals held
    ckpt = evaluate(
        "checkpoint_activation_memory", batch_size=one, activation_memory=full, **case
    ).to("GB")
    segments = math.sqrt((full / stored).to("").m)  # the continuous optimum's K
    # segments hold whole layers: at s layers a segment, ceil(L/s) checkpoints and s layers'
    # internals while it is recomputed
    layers = model.layers
    length = min(range(1, layers + 1), key=lambda s: _segmented(layers, s, stored, layer).m)
    whole = _segmented(layers, length, stored, layer)
    reversible = (stored + layer).to("GB")
    fits = {
        key: _fit(budget, q) for key, q in (("full", full), ("ckpt", whole), ("rev", reversible))
    }
    counts = {key: math.floor(v) for key, v in fits.items()}
    require(all(clear_of_rounding(v) for v in fits.values()), "counts clear of rounding")
    require(1 <= counts["ckpt"] < counts["rev"], "checkpointing fits some, reversible more")
    gain = counts["rev"] - counts["ckpt"]
    answer = Q_(gain, "sequence")
    d = int(model.d_model)
    unit = dict(n_active=Q_(1, "parameter"), training_tokens=Q_(1, "token"), presets=presets)
    forward = (evaluate("revnet_training_flops", **unit) - evaluate("training_flops", **unit)).to(
        "FLOP"
    )
    text = (
        f"You train {model.name} ({layers} layers, residual width {d:,}) on sequences of "
        f"{context_tokens(context, 5)}, with BF16 activations. After the training state, each "
        f"GPU has {quantity(budget)} of HBM for activations. A layer's internals come to about "
        f"{number(factor.m)} bytes per residual value per token (attention's scores are "
        "recomputed, never stored). Two schemes pay the same one extra forward pass: "
        "checkpointing that holds the recomputed segment's internals, at its best whole "
        "segments, and a reversible network whose blocks split the residual into halves x and "
        "y (so the output it keeps is one residual-width tensor). How many more whole "
        "sequences per GPU does the reversible network fit?"
    )
    solution = (
        f"Storing everything: {layers} layers × {context_tokens(context, 5)} × {d:,} values "
        f"× {number(factor.m)} bytes = {_size(full)} per sequence; "
        f"{counts['full']:,} fit in {quantity(budget)}.",
        f"Checkpointing with K segments keeps K layer inputs ({_size(stored)} each, BF16) and "
        f"one segment's internals, {layers}/K layers at {_size(layer)}. The sum is least where "
        f"the two parts are equal: K = √({layers} × {number(factor.m)} / "
        f"{number(per_value.m)}) ≈ {number(segments, 3)} (more than √{layers}, because an "
        "input is much smaller than a layer's internals), segments of "
        f"{number(layers / segments, 2)} layers, and twice either part: {_size(ckpt)}.",
        "A segment holds whole layers, though. The best whole length is "
        f"{_layers(length)}: {math.ceil(layers / length)} checkpoints × {_size(stored)} + "
        f"{length} × {_size(layer)} = {_size(whole)} per sequence; {counts['ckpt']:,} fit.",
        f"Reversible: the last output ({_size(stored)}) plus one layer's internals "
        f"({_size(layer)}), {_size(reversible)} per sequence whatever the depth; "
        f"{counts['rev']:,} fit.",
        f"Both schemes pay one extra forward pass, {number(forward.m)} FLOP per parameter per "
        "token on top of training's usual cost, a third more (this checkpointing holds a "
        "segment's internals as it recomputes it; a scheme that kept only layer inputs would "
        "pay a second pass); storing pays nothing but fits "
        f"{counts['full']:,}. At equal price the reversible network fits {counts['rev']:,} − "
        f"{counts['ckpt']:,} = **{quantity(answer, 4)}** more per GPU.",
    )
    sqrt_l = math.sqrt(layers)
    naive = sqrt_l * stored + full / sqrt_l  # K = √L, the inputs-only optimum
    mistakes = [
        Mistake(
            Q_(math.floor(_fit(budget, stored)) - counts["ckpt"], "sequence"),
            "You left out the reversible network's working layer: it still holds the "
            "internals of the one layer whose gradient it is taking.",
        ),
        Mistake(
            Q_(counts["rev"] - math.floor(_fit(budget, naive)), "sequence"),
            f"You checkpointed with √{layers} segments, the rule when every stored thing is "
            "the same size; a segment holds internals, far bigger than the inputs kept, so "
            "the best K is larger.",
        ),
        Mistake(
            Q_(counts["rev"] - math.floor(_fit(budget, ckpt)), "sequence"),
            "You took the continuous optimum, segments of a fraction of a layer; a segment "
            "holds whole layers.",
        ),
        Mistake(
            Q_(counts["rev"], "sequence"),
            "That is the reversible count itself; the question asks how many more than "
            "checkpointing.",
        ),
    ]
    # two streams stored (x and y each taken as the residual width): a natural reading of a
    # Feistel pair the statement rules out; named, and redrawn unless it lands clear (reader 21)
    two_streams = Q_(math.floor(_fit(budget, 2 * stored + layer)) - counts["ckpt"], "sequence")
    tolerance = whole_count_tolerance(gain, 0.02)
    require(abs((two_streams / answer).to("").m - 1) >= 2 * tolerance, "two streams land clear")
    mistakes.insert(
        1,
        Mistake(
            two_streams,
            "You kept two residual-width streams for the last output; x and y are the two "
            "halves of one residual, so the output is one residual-width tensor.",
        ),
    )
    gib = Q_(budget.m, "GiB")  # the budget read in binary gigabytes
    mistakes.append(
        Mistake(
            Q_(math.floor(_fit(gib, reversible)) - math.floor(_fit(gib, whole)), "sequence"),
            f"You read {quantity(budget)} as {budget.m:g} GiB; a GB is a billion bytes.",
        )
    )
    for up in ("rev", "ckpt"):  # one count rounded up: a fraction of a sequence does not fit
        mistakes.append(
            Mistake(
                answer + Q_(1 if up == "rev" else -1, "sequence"),
                f"You rounded the {'reversible' if up == 'rev' else 'checkpointing'} count up; "
                "only whole sequences fit, so round each count down.",
            )
        )
    if counts["full"]:
        mistakes.append(
            Mistake(
                Q_(counts["rev"] - counts["full"], "sequence"),
                "That compares with storing everything; the question compares the two "
                "schemes that cost the same extra forward pass.",
            )
        )
    mistakes = [m for m in mistakes if m.value.m > 0]
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=tolerance,
        mistakes=distinct_mistakes(mistakes, answer, tolerance),
        hint="Memory per sequence each way: every layer's internals; K inputs plus one "
        "segment's internals at the best K; one output plus one layer's internals.",
    )
