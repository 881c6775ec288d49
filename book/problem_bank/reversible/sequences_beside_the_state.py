"""Reversible layers shrink stored activations to one layer; what is left is the backward
pass's working buffer. How many sequences fit per GPU?"""

from __future__ import annotations

import math

from book.format import context_tokens, number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    clear_of_rounding,
    distinct_mistakes,
    lands_clear,
    require,
    whole_count_tolerance,
)
from book.problem_bank._activations import gated_factor
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Sequences per GPU with a reversible network"
USES = (
    "training_state_memory",
    "revnet_activation_memory",
    "gated_activation_bytes_factor",
    "full_activation_memory",
)
LECTURE = "2:04:02"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
SHARDS = (8, 16, 32, 64, 128)
CONTEXTS = (8192, 16384, 32768, 65536, 131072)
# a handful of long sequences, whose unrounded count keeps the bank's design margin (5%) from
# a whole number, so a student who rounds a step to three figures lands on the same count
# (reader 16: 132.375 sat 0.3% above 132); the state's share must change the count
FEWEST, MOST = 2, 10
EDGE = 0.05
STREAMS = 2  # the Reformer's reversible block carries two full-width streams, x and y


def _size(q) -> str:
    """Bytes in GB, or in MB below one GB."""
    return quantity(q.to("GB") if q >= Q_(1, "GB") else q.to("MB"))


def draw(rng, presets) -> Draw:
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # what a run may fill
    while True:  # redraw until the count is clear of a whole number and the state matters
        model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        shards, context = rng.choice(SHARDS), Q_(rng.choice(CONTEXTS), "token/sequence")
        model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
        one = Q_(1, "sequence")
        factor = gated_factor(presets, model_id)  # the chapter's count for a gated layer
        case = dict(model=model_id, precision="bf16", context_length=context, presets=presets)
        state_detail = get("training_state_memory").evaluate_detailed(
            model=model_id, presets=presets
        )
        state = state_detail.value.to("GB")
        rev_detail = get("revnet_activation_memory").evaluate_detailed(batch_size=one, **case)
        rev = rev_detail.value.to("GB")
        buffer = get("full_activation_memory").evaluate_detailed(
            batch_size=one, n_layers=Q_(1, "layer"), activation_bytes_factor=factor, **case
        )
        buffer = buffer.value.to("GB")
        fill = (usable * chip.hbm_capacity).to("GB")
        room = (fill - state / shards).to("GB")
        per_seq = (STREAMS * rev + buffer).to("GB")
        fit = (room / per_seq).to("").m
        stateless = (fill / per_seq).to("").m
        if (
            FEWEST <= fit <= MOST
            and clear_of_rounding(fit, EDGE)
            and math.floor(stateless) != math.floor(fit)
        ):
            break
    count = math.floor(fit)

    def tokens(n: int):
        """Whole sequences as the tokens they hold (the graded unit: a count of sequences this
        small meets another problem's by chance)."""
        return (Q_(n, "sequence") * context).to("token")

    answer = tokens(count)
    per_param = (state / model.params_total).to("byte/parameter")
    weight = state_detail.inputs["train_weight_bytes"].value.to("byte/parameter")
    per_value = rev_detail.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    d = model.d_model
    text = (
        f"You train a reversible version of {model.name} ({quantity(model.params_total)}, "
        f"residual width {int(d):,}, {model.layers} layers), built as the Reformer builds it: "
        "two full-width streams. Activations are BF16; the GPUs are "
        f"{chip.name} ({quantity(chip.hbm_capacity)} of HBM each, of which a run may fill "
        f"{number(100 * usable)}%). The mixed-precision "
        "Adam state (BF16 weights and gradients, FP32 master weights and two moments) is "
        f"sharded evenly over {shards} GPUs. The backward pass rebuilds each layer's input "
        "from its output, and while it works on a layer it holds that layer's internals, "
        f"about {number(factor.m)} bytes for every residual value of every token for this gated "
        "layer. Attention's scores are recomputed, never stored; the loss is computed in "
        "chunks; other buffers are left out. Each GPU takes whole sequences of "
        f"{context_tokens(context, 5)}: how many tokens can it train on at once? Answer in "
        "tokens."
    )
    solution = (
        f"State: {quantity(per_param)} (BF16 weight and gradient, FP32 master weight and two "
        f"moments) × {quantity(model.params_total)} = {quantity(state)}; 1/{shards} per GPU "
        f"leaves {quantity(room)} of the {number(100 * usable)}% of "
        f"{quantity(chip.hbm_capacity)} a run may fill, {quantity(fill)}.",
        f"A reversible network keeps only the last layer's output, both streams (running a "
        f"layer backwards needs both): {STREAMS} × {context_tokens(context, 5)} "
        f"× {int(d):,} values × {quantity(per_value)} = {_size(STREAMS * rev)} per sequence, "
        "whatever the depth.",
        f"The layer being differentiated holds {number(factor.m)} bytes per value: "
        f"{_size(buffer)} per sequence, {number((buffer / (STREAMS * rev)).to('').m)} times "
        "the stored output. This working buffer, not the stored activations, now sets the limit.",
        f"{quantity(room)} / ({_size(STREAMS * rev)} + {_size(buffer)}) = {number(fit)}, "
        f"rounded down to {quantity(Q_(count, 'sequence'))} of {context_tokens(context, 5)}: "
        f"**{quantity(answer)}** per GPU.",
    )
    mistakes = [
        Mistake(
            tokens(math.floor((room / (STREAMS * rev)).to("").m)),
            "You left out the working buffer of the layer being differentiated; a "
            "reversible network stores one layer's output but still works on one layer "
            "at a time, with all its internals.",
        ),
        Mistake(
            tokens(math.floor((fill / per_seq).to("").m)),
            "You forgot the GPU's share of the training state.",
        ),
        Mistake(
            tokens(math.floor(((chip.hbm_capacity - state / shards) / per_seq).to("").m)),
            f"You filled the whole {quantity(chip.hbm_capacity)}; a run may fill "
            f"{number(100 * usable)}% of it.",
        ),
    ]
    left = fill - state * (weight / per_param) / shards
    mistakes.append(
        Mistake(
            tokens(math.floor((left / per_seq).to("").m)),
            "You counted only the BF16 weights of the state; gradients and Adam's FP32 "
            f"copies make it {quantity(per_param)}.",
        )
    )
    grad = state_detail.inputs["train_grad_bytes"].value.to("byte/parameter")
    no_grad = fill - state * ((per_param - grad) / per_param) / shards
    no_grad = tokens(math.floor((no_grad / per_seq).to("").m))
    # reader 26: a state of 14 bytes per parameter, the gradients left out: named where its
    # count is neither the answer's nor another slip's
    if no_grad != answer and all(m.value != no_grad for m in mistakes):
        mistakes.append(
            Mistake(
                no_grad,
                f"You left out the BF16 gradients ({quantity(grad)}); with the weights and "
                f"Adam's FP32 copies the state is {quantity(per_param)}.",
            )
        )
    tolerance = whole_count_tolerance(count, 0.02)
    # reader 30: one stream of the output kept, as a RevNet that halves the width; named where
    # its count lands clear of the answer and of the other slips, redrawn where it falls between
    one_fit = (room / (rev + buffer)).to("").m
    one_stream = tokens(math.floor(one_fit))
    require(clear_of_rounding(one_fit, EDGE), "the one-stream count is clear of rounding")
    require(
        one_stream == answer or lands_clear(one_stream, answer, tolerance),
        "the one-stream count lands clear",
    )
    if one_stream != answer:
        mistakes.insert(
            0,
            Mistake(
                one_stream,
                "You kept one stream of the last layer's output; running a layer backwards "
                f"needs both of its outputs, {STREAMS} full-width streams.",
            ),
        )
    # reader 28: the quotient not rounded down to whole sequences, named where it lands twice
    # the window out (inside it, a fraction of a sequence the window takes in)
    unfloored = (Q_(fit, "sequence") * context).to("token")
    require(lands_clear(unfloored, answer, tolerance), "the unrounded count lands clear")
    mistakes.insert(
        0,
        Mistake(
            unfloored,
            f"You kept {number(fit)} sequences; a GPU takes whole sequences, so round down "
            f"to {number(count)}.",
        ),
    )
    mistakes = [m for m in mistakes if m.value.m > 0]
    require(  # apart from the whole-count slips (those may share a count: one message)
        all(abs((unfloored / m.value).to("").m - 1) >= 2 * tolerance for m in mistakes[1:]),
        "the unrounded count lands clear of the other slips",
    )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=tolerance,
        mistakes=distinct_mistakes(mistakes, answer, tolerance),
        hint="What is left of the HBM after the state, and what does one sequence need?",
    )
