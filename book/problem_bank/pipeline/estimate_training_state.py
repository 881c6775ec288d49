"""Estimate: the training state of a big model sets how many nodes a run needs, and the nodes
set how long a step takes."""

from __future__ import annotations

import math
from functools import partial

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    PresetsMemo,
    clear_of_rounding,
    distinct_mistakes,
    evaluate,
    require,
)
from units import Q_

KIND = "estimate"
TITLE = "How long is a step on the fewest nodes that hold the training state?"
USES = ("training_state_memory", "training_flops", "training_time")

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "llama_3_1_405b")
CHIPS = ("h100_sxm", "h200", "b200", "b300", "mi300x", "mi325x", "mi355x")
STEP_MTOKENS = (2, 4, 8, 16)  # tokens per step, millions
MFUS = (0.35, 0.4, 0.45)
FILLS = (
    0.6,
    0.65,
    0.7,
    0.75,
    0.8,
    0.85,
    0.9,
)  # the share of each GPU's HBM the state may take (the rest:
# activations and buffers)
NODE = 8  # GPUs per node
FACTOR = 1.1  # the window, said in the statement: tight enough that Adam's state counted at
# 12 bytes a parameter, not 16, lands outside its square and is named


def _nodes(state, hbm, fill) -> tuple[float, int]:
    quotient = (state / (fill * NODE * hbm)).to("").m
    return quotient, math.ceil(quotient)


def _between(ratio: float) -> bool:
    """Whether a slip's step, ``ratio`` times the answer, is outside the window but inside its
    square: graded wrong, yet too near to name (reader 21: the uncapped HBM at ×1.20)."""
    r = max(ratio, 1 / ratio)
    return FACTOR < r < FACTOR**2


# the scenarios of the last presets object drawn on: the same for every seed
_SCENARIOS = PresetsMemo()


def _scenarios_of(presets) -> tuple:
    """:func:`_scenarios`, worked out once per presets object (two hundred node counts, each in
    pint: most of a draw's time when done on every draw)."""
    return _SCENARIOS(presets, (), partial(_scenarios, presets))


def _scenarios(presets) -> tuple:
    """(model, chip, fill) whose whole node count is clear of rounding, where Adam's state at
    12 bytes a parameter lands clear and named, and where the natural small slips (the
    gradients left out, the cap or the round-up forgotten) land inside the window or clear."""
    out = []
    for model_id in MODELS:
        model = presets.get("model", model_id)
        state = evaluate("training_state_memory", model=model_id, presets=presets).to("TB")
        per = (state / model.params_total).to("byte/parameter").m
        for hardware in CHIPS:
            hbm = presets.get("hardware", hardware).hbm_capacity
            for fill in FILLS:
                quotient, nodes = _nodes(state, hbm, fill)

                # a slip's step over the answer's: Adam at 12 bytes, the gradients left out, the
                # cap left out, the nodes not rounded up
                slips = (
                    nodes / _nodes(state * (per - 4) / per, hbm, fill)[1],
                    nodes / _nodes(state * (per - 2) / per, hbm, fill)[1],
                    nodes / _nodes(state, hbm, 1.0)[1],
                    nodes / quotient,
                )
                named = [r for r in slips if max(r, 1 / r) >= FACTOR**2]
                if (
                    clear_of_rounding(quotient)
                    and slips[0] >= FACTOR**2
                    and not any(_between(r) for r in slips)
                    and all(  # two slips on one value: the message could name only one
                        max(a / b, b / a) > FACTOR for i, a in enumerate(named) for b in named[:i]
                    )
                ):
                    out.append((model_id, hardware, fill))
    return tuple(out)


def draw(rng, presets) -> Draw:
    model_id, hardware, fill_share = rng.choice(_scenarios_of(presets))
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    detail = evaluate("training_state_memory", detailed=True, model=model_id, presets=presets)
    state = detail.value.to("TB")
    quotient, nodes = _nodes(state, chip.hbm_capacity, fill_share)
    weight, grad, adam = (
        detail.inputs[name].value.to("byte/parameter")
        for name in ("train_weight_bytes", "train_grad_bytes", "optimizer_bytes")
    )
    per_param = (state / model.params_total).to("byte/parameter")
    hbm, peak = chip.hbm_capacity, chip.get("dense_flops_bf16")
    tokens = Q_(rng.choice(STEP_MTOKENS), "Mtoken").to("token")
    mfu = Q_(rng.choice(MFUS), "")
    gpus = Q_(NODE * nodes, "chip")
    case = dict(
        model=model_id,
        training_tokens=tokens,
        hardware=hardware,
        precision="bf16",
        mfu=mfu,
        presets=presets,
    )
    flops = evaluate("training_flops", **case).to("FLOP")
    step = evaluate("training_time", training_chips=gpus, **case).to("s")
    six = (flops / (model.params_active * tokens)).to("FLOP/parameter/token")
    # the whole run at this pace (reader 15: a 23-minute step is 40 years of pre-training):
    # the published token count where the preset has one, else Chinchilla's
    run_tokens = model.get("training_tokens")
    run_words = "its published pre-training"
    if run_tokens is None:
        run_tokens = evaluate("chinchilla_tokens", model=model_id, presets=presets).to("token")
        run_words = "a Chinchilla-sized pre-training"
    run_days = (step * (run_tokens / tokens).to("").m).to("day")
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    fill = number(100 * fill_share)
    text = (
        f"You pre-train {model.name} ({params}) with mixed-precision Adam on eight-GPU nodes "
        f"of {chip.name} ({quantity(hbm)} of HBM and {quantity(peak)} of dense BF16 math per "
        "GPU). You rent the fewest whole nodes whose HBM holds the whole training state, "
        f"sharded evenly, with the state filling at most {fill}% of every GPU. Each step trains "
        f"on {quantity(tokens)}, at {number(100 * mfu.m)}% MFU. Ignoring attention's FLOPs, "
        "about how long does one step take? Answer in seconds; within a factor of "
        f"{number(FACTOR)} either way will do."
    )
    solution = (
        "Mixed-precision Adam keeps, per parameter, a BF16 weight and gradient "
        f"({number(weight.m)} + {number(grad.m)} bytes) and an FP32 master weight and two FP32 "
        f"moments ({number(adam.m)} bytes): {quantity(per_param)}.",
        f"Every parameter is trained{', experts included' if moe else ''}, so the state is "
        f"{quantity(per_param)} × {quantity(model.params_total)} = {quantity(state)}.",
        f"Each {chip.name} GPU has {quantity(hbm)} of HBM; a node may give the state {fill}% of "
        f"{NODE} × {quantity(hbm)} = "
        f"{quantity((fill_share * NODE * hbm).to('TB'))}: {quantity(state)} / "
        f"{quantity((fill_share * NODE * hbm).to('TB'))} = {number(quotient, 3)}, rounded up to "
        f"{nodes} nodes, {int(gpus.m)} GPUs.",
        f"A step costs {number(six.m)} FLOP per active parameter per token (forward and "
        f"backward): {number(six.m)} × {quantity(model.params_active)} × {quantity(tokens)} = "
        f"{quantity(flops)}.",
        f"At {quantity(peak)} dense BF16 per GPU, the nodes deliver {int(gpus.m)} × "
        f"{quantity(peak)} × {number(100 * mfu.m)}%, so a "
        f"step takes about **{quantity(step, 3)}**. That is the floor memory sets, not a "
        f"cluster anyone would train on: at this pace {run_words} of "
        f"{quantity(run_tokens, 2)} would take {number(run_days.m, 2)} days. Memory sets the "
        "fewest GPUs; the deadline and the FLOPs set how many you rent.",
    )

    def with_state(bytes_per_param) -> Q_:
        """The step time had the state been counted at ``bytes_per_param``."""
        _, n = _nodes(state * (bytes_per_param / per_param).to("").m, hbm, fill_share)
        return (step * nodes / n).to("s")

    mistakes = [
        Mistake(
            step / 3,
            f"You counted {number(six.m / 3)} FLOP per active parameter per token, a forward "
            f"pass; training also "
            f"runs the backward pass: {number(six.m)} in all.",
        ),
        Mistake(
            with_state(weight),
            f"You counted only the BF16 weights ({quantity(weight)}); training also holds "
            f"gradients and Adam's FP32 state, {quantity(per_param)} in all, so it needs more "
            "nodes and each step is shorter.",
        ),
        Mistake(
            with_state(weight + grad),
            "You counted weights and gradients but not Adam's FP32 master weights and moments "
            f"({number(adam.m)} more bytes per parameter).",
        ),
        Mistake(
            with_state(per_param - grad),
            f"You left out the BF16 gradients ({quantity(grad)}); the state is "
            f"{quantity(per_param)} in all.",
        ),
        Mistake(
            step * nodes / quotient,
            f"You used {number(quotient, 3)} nodes; nodes come whole, so round up to {nodes}.",
        ),
        Mistake(
            with_state(adam),
            f"You counted Adam's FP32 copies ({quantity(adam)}) but not the BF16 weights and "
            f"gradients: {quantity(per_param)} in all.",
        ),
        Mistake(
            step / 2,
            "You used the chip's sparse peak, twice its dense one; MFU is quoted on dense FLOP/s.",
        ),
        Mistake(
            step * nodes / _nodes(state, hbm, 1.0)[1],
            f"You let the state fill every GPU's HBM; it may take only {fill}% of it.",
        ),
    ]
    if moe:
        mistakes += [
            Mistake(
                (step * model.params_total / model.params_active).to("s"),
                "You counted every parameter's FLOPs; a token runs through the active "
                "ones only (the state, though, holds every expert).",
            ),
            Mistake(
                with_state(per_param * model.params_active / model.params_total),
                "You sized the state on the active parameters; every expert has its own "
                "weights, gradients and optimizer state.",
            ),
        ]
    kept = {}
    for m in mistakes:
        ratio = (m.value / step).to("").m
        if not 1 / FACTOR**2 < ratio < FACTOR**2:  # twice the window away, in log space
            kept.setdefault(round(m.value.to("s").m, 9), m)
    require(len(kept) >= 3, "the window rejects the classic slips")
    return Draw(
        text=text,
        answer=step,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(kept.values(), step, FACTOR, factor=True),
        hint="Bytes per parameter of the whole training state sets the nodes; the nodes and "
        "the FLOPs per token set the time.",
    )
