"""Store every activation, checkpoint, or go reversible: memory against a third more compute,
decided by how many GPUs a deadline and the HBM demand."""

from __future__ import annotations

import math

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, require, whole_count_tolerance
from derivations import get
from units import Q_

KIND = "design"
TITLE = "Which activation strategy trains on the fewest GPUs?"
USES = (
    "training_state_memory",
    "full_activation_memory",
    "checkpoint_activation_memory",
    "revnet_activation_memory",
    "training_flops",
    "revnet_training_flops",
)
LECTURE = "2:04:02"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
STEP_MTOKENS = (8, 16, 32, 64)  # tokens per training step, millions (Llama 3: 16; DeepSeek-V3: 63)
CONTEXT = 8192
TOKENS_T = (2, 5, 10, 15)  # Llama 2 trained on 2, Llama 3 on 15
DEADLINES = (60, 90, 120, 180, 270, 360)  # days; not 365, read as a 365.25-day year
MFU = 0.4  # of peak, on every FLOP executed, recompute included (a hardware FLOPs utilisation)
MARGIN = 0.05  # the fewest GPUs are at least this much fewer than every other option's
SPLIT = 64  # the most GPUs one sequence is split over (tensor × pipeline parallel, 8 × 8)
NAMES = {
    "store": "store every activation",
    "checkpoint": "checkpoint the best number of segments",
    "reversible": "make the layers reversible",
}


def _options(presets, model_id, hardware, step_tokens, total_tokens, deadline):
    chip = presets.get("hardware", hardware)
    context = Q_(CONTEXT, "token/sequence")
    one = Q_(1, "sequence")  # per sequence, then scaled to the step's tokens
    case = dict(model=model_id, precision="bf16", context_length=context, presets=presets)
    sequences = (step_tokens / context).to("sequence").m
    state = get("training_state_memory").evaluate(model=model_id, presets=presets).to("TB")
    full_detail = get("full_activation_memory").evaluate_detailed(batch_size=one, **case)
    full = full_detail.value
    buffer = get("full_activation_memory").evaluate(batch_size=one, n_layers=1, **case)
    # the standard scheme (Chen et al.): a recomputed segment holds its layers' internals, so
    # the segment's share is of every activation, and one recompute is one extra forward pass
    ckpt = get("checkpoint_activation_memory").evaluate(
        batch_size=one, activation_memory=full, **case
    )
    rev = get("revnet_activation_memory").evaluate(batch_size=one, **case)
    flops = dict(model=model_id, training_tokens=total_tokens, presets=presets)
    six = get("training_flops").evaluate(**flops).to("FLOP")
    eight = get("revnet_training_flops").evaluate(**flops).to("FLOP")
    rate = (_as_shown(chip.get("dense_flops_bf16")) * MFU).to("FLOP/s")
    out = []
    for key, per_seq, compute in (
        ("store", full, six),
        ("checkpoint", ckpt, eight),
        ("reversible", rev + buffer, eight),
    ):
        acts = (per_seq * sequences).to("TB")
        by_memory = ((state + acts) / chip.hbm_capacity).to("").m
        by_time = (compute / (rate * deadline)).to("").m
        out.append(
            dict(
                key=key,
                acts=acts,
                compute=compute,
                by_memory=by_memory,
                by_time=by_time,
                gpus=math.ceil(max(by_memory, by_time)),
            )
        )
    work = presets.get("model", model_id).params_active * total_tokens
    figures = dict(  # the per-value and per-token figures the solution names
        stored=full_detail.inputs["activation_bytes_factor"].value.to("byte/value"),
        kept=get("revnet_activation_memory")
        .evaluate_detailed(batch_size=one, **case)
        .inputs["activation_bytes_per_value"]
        .value.to("byte/value"),
        state=(state / presets.get("model", model_id).params_total).to("byte/parameter"),
        train=(six / work).to("FLOP/parameter/token"),
        revnet=(eight / work).to("FLOP/parameter/token"),
    )
    figures["segments"] = math.sqrt((full / rev).to("").m)  # the best K, √(M_act / M_rev)
    # "segments of whole layers change it by under a percent": at s layers a segment, ceil(L/s)
    # checkpoints and s layers' internals while it is recomputed
    layers = presets.get("model", model_id).layers
    whole = min(math.ceil(layers / s) * rev + s * buffer for s in range(1, layers + 1))
    require(whole / ckpt < 1.01, "whole-layer segments store about what the formula says")
    figures["sequences"] = sequences
    return chip, state, out, figures


def _as_shown(q):
    """The peak as the statement shows it (four figures): the GPU count is a whole number
    rounded up, and a student working from the shown figure must get the same count."""
    return Q_(float(f"{q.m:.4g}"), q.units)


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def draw(rng, presets) -> Draw:
    while True:  # redraw until the fewest GPUs are clearly fewer than every other option's:
        # checkpointing never needs fewer than reversible layers (same FLOPs, more memory) and
        # ties with them whenever the deadline binds both, so it never wins
        model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        step = Q_(rng.choice(STEP_MTOKENS), "Mtoken").to("token")
        total = Q_(rng.choice(TOKENS_T), "Ttoken").to("token")
        deadline = Q_(rng.choice(DEADLINES), "day")
        chip, state, options, figures = _options(presets, model_id, hardware, step, total, deadline)
        ranked = sorted(options, key=lambda o: o["gpus"])
        best, runner_up = ranked[0], ranked[1]
        split = max(o["gpus"] for o in options) / figures["sequences"]
        if split <= SPLIT and runner_up["gpus"] >= (1 + MARGIN) * best["gpus"]:
            break
    margin = runner_up["gpus"] / best["gpus"] - 1
    stored, kept = quantity(figures["stored"]), quantity(figures["kept"])
    train, revnet = number(figures["train"].m), number(figures["revnet"].m)
    model = presets.get("model", model_id)
    answer = Q_(best["gpus"], "chip")
    lines = []
    for o in options:
        binding = "memory" if o["by_memory"] >= o["by_time"] else "the deadline"
        lines.append(
            f"{_upper(NAMES[o['key']])}: activations {quantity(o['acts'])} per step; "
            f"memory needs {math.ceil(o['by_memory']):,} GPUs, the deadline "
            f"{math.ceil(o['by_time']):,} GPUs ({quantity(o['compute'])}); {binding} binds: "
            f"{o['gpus']:,} GPUs."
        )
    text = (
        f"You must pre-train {model.name} ({quantity(model.params_total)}; {model.layers} "
        f"layers, residual width {model.d_model:,}) on {quantity(total)} within "
        f"{quantity(deadline)}, on {chip.name} GPUs ({quantity(chip.hbm_capacity)} of HBM, "
        f"{quantity(_as_shown(chip.get('dense_flops_bf16')))} dense at BF16) that sustain "
        f"{number(100 * MFU)}% of peak on every FLOP they execute, recompute included. Each "
        f"step trains on {quantity(step)} in sequences of "
        f"{context_tokens(Q_(CONTEXT, 'token/sequence'))}, spread evenly over the GPUs (data "
        "parallel, with tensor and pipeline parallelism splitting a sequence over at most "
        f"{number(SPLIT)} GPUs), and the mixed-precision Adam state is sharded over all of "
        "them. Ignore attention's FLOPs; its scores are recomputed, never stored. Activations "
        "are BF16; a "
        f"layer's internals (everything its backward pass needs) come to about {stored} of "
        "residual stream per token. You can store every activation; cut the layers into "
        "segments, checkpoint each segment's input and, on the way back, re-run one segment at "
        "a time, holding its layers' internals while its gradient is taken (the standard "
        "scheme, with the number of segments that stores least); or make the "
        "layers reversible (rebuilding each layer's input, and with it the layer's internals, "
        "from its output). Which needs the fewest GPUs, and how many?"
    )
    solution = (
        f"State: {quantity(figures['state'])}, {quantity(state)}, whatever the strategy; it "
        "is sharded, so it only adds to the total to be spread.",
        f"Storing everything keeps {stored} in every layer and trains at {train} FLOP per "
        "parameter per token (forward two, backward four). Checkpointing with K segments keeps "
        f"K layers' inputs ({kept}) plus one segment's internals, L/K layers at {stored}. "
        "The least is where the two are equal: K = √(L × "
        f"{number(figures['stored'].m)} / {number(figures['kept'].m)}) = "
        f"{number(figures['segments'], 3)} segments for L = {model.layers} (more than √L, "
        "because a stored input is much smaller than a layer's internals), and the memory is "
        "twice the geometric mean of the whole network's internals and one layer's input "
        "(segments hold whole layers, which changes it by under a percent). A reversible "
        f"network keeps the last output ({kept}) plus the one layer's internals being worked "
        f"on ({stored}). Here both re-run each layer's forward once on the way back (a segment "
        "is recomputed once, holding its internals; a reversible layer rebuilds its input and "
        f"its internals in one run): one extra forward pass, {revnet} FLOP per parameter per "
        "token. How many extra passes checkpointing costs depends on its scheme: one that "
        "keeps only layer inputs while a segment is recomputed must run each layer's forward "
        "a second time for its internals, two extra passes.",
        "Each option needs enough GPUs for its memory (state plus a step's activations over "
        "the HBM) and for the deadline (every FLOP executed, recompute included, over a GPU's "
        f"delivered rate, {number(100 * MFU)}% of peak, and the days), each rounded up: a "
        "fraction of a GPU short misses the deadline.",
        *lines,
        f"Fewest: {NAMES[best['key']]}, **{quantity(answer, 4)}**. Checkpointing never needs "
        "fewer than reversible layers: the same FLOPs, and more memory.",
    )
    mistakes = []
    if best["key"] != "store" and best["by_time"] > best["by_memory"]:
        for per, why in (
            (
                figures["train"],
                f"That charges {train} FLOP per parameter per token at "
                f"{number(100 * MFU)}% of peak, as if the recompute were free (or as if "
                f"{number(100 * MFU)}% were the model FLOPs utilisation, which leaves it out): "
                f"the GPUs run every FLOP at {number(100 * MFU)}% of peak, the recompute's too, "
                f"{revnet} FLOP per parameter per token.",
            ),
            (
                figures["revnet"] + figures["train"] / 3,
                "A segment recomputed with its internals "
                f"is run once more, not twice: {revnet} FLOP per parameter per token.",
            ),
        ):
            slower = best["by_time"] * (per / figures["revnet"]).to("").m
            mistakes.append(Mistake(Q_(math.ceil(max(slower, best["by_memory"])), "chip"), why))
    for o in options:
        if o["gpus"] == best["gpus"] or o["by_memory"] < o["by_time"]:
            continue
        mistakes.append(
            Mistake(
                Q_(math.ceil(o["by_time"]), "chip"),
                f"That is what the deadline alone asks of '{NAMES[o['key']]}'; its "
                "activations need more GPUs' worth of HBM than that.",
            )
        )
    mistakes.append(
        Mistake(
            Q_(runner_up["gpus"], "chip"),
            f"That is what '{NAMES[runner_up['key']]}' needs; '{NAMES[best['key']]}' "
            "needs fewer. Check both limits, memory and deadline, for every option.",
        )
    )
    mistakes.append(
        Mistake(
            Q_(math.ceil(max(best["by_time"], best["by_memory"])) - 1, "chip"),
            "Round the GPU count up: a fraction of a GPU short misses the deadline (or the "
            "memory).",
        )
    )
    # the exact whole count: every figure the counts use is shown exactly (the peak as shown)
    tolerance = whole_count_tolerance(answer.m, 0.02)
    slips = {m.value.m: m for m in reversed(mistakes) if abs(m.value.m / answer.m - 1) > tolerance}
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=tolerance,
        mistakes=tuple(slips.values())[::-1],
        hint="For each strategy, GPUs for memory and GPUs for the deadline; the larger binds.",
        choices={"strategy": best["key"]},
        margin=margin,
    )
