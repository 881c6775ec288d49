"""Store every activation, checkpoint, or go reversible: storing everything needs more GPUs for
its activations than its deadline asks, recomputing needs more for its FLOPs. The memory
analysis decides which cluster is cheaper to rent for the run."""

from __future__ import annotations

import math

from book.format import context_tokens, number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lands_clear,
    require,
    shown,
)
from book.problem_bank._activations import gated_factor
from book.problem_bank._rents import rent
from book.problem_bank.reversible._schemes import INPUTS_ONLY, PLAIN, REVERSIBLE
from units import Q_

KIND = "design"
TITLE = "Which activation strategy rents the cheapest cluster?"
USES = (
    "training_state_memory",
    "gated_activation_bytes_factor",
    "full_activation_memory",
    "layer_activation_bytes",
    "revnet_activation_memory",
    "training_flops",
    "revnet_training_flops",
)
LECTURE = "2:04:02"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
STEP_SEQUENCES = (512, 1024, 2048, 4096, 8192)  # sequences per step (Llama 3: 16 M tokens)
CONTEXT = 8192
TOKENS_T = (1, 2, 5, 10, 15)  # Llama 2 trained on 2 trillion tokens, Llama 3 on 15
DEADLINES = (30, 45, 60, 90, 120)  # days
MFU = 0.4  # of peak, on every FLOP executed, recompute included (a hardware FLOPs utilisation)
MARGIN = 0.10  # the cheapest cluster is at least this much cheaper than the next
BINDS = 0.10  # storing everything needs at least this much more for memory than for time
TOLERANCE = 0.02
SPLIT = 64  # the most GPUs one sequence may be split over (tensor x pipeline): never binds
NAMES = {
    "store": "plain backpropagation",
    "checkpoint": "checkpointing of layer inputs",
    "reversible": "reversible layers",
}


def segments(layers: int) -> int:
    """The whole number of checkpointed segments that keeps the fewest layer inputs: K
    checkpoints plus the other inputs of the longest segment, ⌈L/K⌉ − 1 (the one nearest √L
    of those that tie).

    >>> segments(32), segments(80), segments(126)
    (6, 9, 11)
    """
    kept = {k: k + math.ceil(layers / k) - 1 for k in range(1, layers + 1)}
    fewest = min(kept.values())
    return min((k for k in kept if kept[k] == fewest), key=lambda k: abs(k - math.sqrt(layers)))


def _inputs_kept(layers: int) -> int:
    """Layer inputs checkpointing keeps at its best whole number of segments."""
    k = segments(layers)
    return k + math.ceil(layers / k) - 1


def _figures(presets, model_id, hardware):
    """The per-token and per-parameter figures of a model on a chip, as the statement prints
    them: every strategy's activations per token at the peak, FLOPs per token, the state."""
    chip, model = presets.get("hardware", hardware), presets.get("model", model_id)
    one = Q_(1, "sequence")
    case = dict(
        model=model_id,
        precision="bf16",
        batch_size=one,
        context_length=Q_(CONTEXT, "token/sequence"),
        activation_bytes_factor=gated_factor(presets, model_id),  # the chapter's gated layer
        presets=presets,
    )
    tokens = (one * case["context_length"]).to("token")
    exact_state = evaluate("training_state_memory", model=model_id, presets=presets)
    per_param = (exact_state / model.params_total).to("byte/parameter")
    state = (per_param * shown(model.params_total.to("Gparam"))).to("TB")
    internals = evaluate("full_activation_memory", detailed=True, n_layers=1, **case)
    working = (internals.value / tokens).to("kB/token")  # one layer's internals
    layer = (evaluate("layer_activation_bytes", **case) / Q_(1, "layer")).to("kB/token")
    last = evaluate("revnet_activation_memory", detailed=True, **case)
    layers = model.layers
    per_token = {  # bytes per token of the step's activations, at the peak
        "store": layers * working,
        # K checkpoints plus the longest segment's other inputs (its first is its checkpoint),
        # and the one layer being differentiated holds its internals
        "checkpoint": _inputs_kept(layers) * layer + working,
        "reversible": (last.value / tokens).to("kB/token") + working,
    }
    unit = dict(model=model_id, training_tokens=Q_(1, "token"), presets=presets)
    per = Q_(1, "token")
    six = (evaluate("training_flops", **unit) / per).to("FLOP/token")
    eight = (evaluate("revnet_training_flops", **unit) / per).to("FLOP/token")
    ten = six + 2 * (eight - six)  # two extra forward passes
    active = model.params_active
    return dict(
        per_token=per_token,
        flops={"store": six, "checkpoint": ten, "reversible": eight},
        per_param=per_param,
        state=state,
        factor=case["activation_bytes_factor"],
        working=working,
        layer=layer,
        peak=shown(chip.dense_flops_bf16.to("TFLOP/s"), 4),
        hbm=shown(chip.hbm_capacity.to("GB")),
        train=(six / active).to("FLOP/parameter/token").m,
        revnet=(eight / active).to("FLOP/parameter/token").m,
        twice=(ten / active).to("FLOP/parameter/token").m,
        per_value=last.inputs["activation_bytes_per_value"].value.to("byte/value"),
    )


def _options(f, hardware, step, total, deadline, fill, **slip):
    """Each strategy's activations per step, FLOPs and GPUs (for memory, for the deadline),
    each GPU filled to at most ``fill`` of its HBM. ``slip`` replaces a figure of ``f``
    (``per_token``, ``flops``, ``state``): a student's slip, rerun through the whole choice."""
    f = {**f, **slip}
    rate = (f["peak"] * MFU).to("FLOP/s")
    out = {}
    for key in NAMES:
        acts = (f["per_token"][key] * step).to("TB")
        flops = (f["flops"][key] * total).to("FLOP")
        by_memory = ((f["state"] + acts) / (fill * f["hbm"])).to("").m
        by_time = (flops / (rate * deadline)).to("").m
        gpus = math.ceil(max(by_memory, by_time))
        out[key] = dict(
            key=key,
            per_token=f["per_token"][key],
            acts=acts,
            flops=flops,
            by_memory=by_memory,
            by_time=by_time,
            gpus=gpus,
            bill=_bill(gpus, deadline, hardware),
        )
    return out


def _cheapest(options):
    """The bill of the option that needs the fewest GPUs."""
    return min(options.values(), key=lambda o: o["gpus"])["bill"]


def _millions(q) -> str:
    """Dollars as a person says them: '4.85 million USD'."""
    return f"{number(q.to('USD').m / 1e6, 3)} million USD"


def _size(q) -> str:
    """Bytes per token in kB, or in MB from a thousand kB."""
    return quantity(q.to("MB/token") if q >= Q_(1, "MB/token") else q, 3)


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _bill(gpus, deadline, hardware):
    return (gpus * Q_(1, "chip") * deadline * rent(hardware)).to("USD")


def draw(rng, presets) -> Draw:
    # storing everything wins in a narrow band (memory binds it, yet by less than the third
    # more FLOPs the recompute costs): pick the winner first, so both lessons are drawn
    winner = rng.choice(("store", "reversible"))
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # what a run may fill
    known: dict = {}
    while True:  # until storing everything is held back by its memory, and the winner is
        # clearly cheapest (checkpointing never is: more memory and more FLOPs than reversible)
        model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        sequences = rng.choice(STEP_SEQUENCES)  # a whole number of sequences a step
        step = Q_(sequences * CONTEXT, "token")
        total = Q_(rng.choice(TOKENS_T), "Ttoken").to("token")
        deadline = Q_(rng.choice(DEADLINES), "day")
        if (model_id, hardware) not in known:
            known[model_id, hardware] = _figures(presets, model_id, hardware)
        figures = known[model_id, hardware]
        options = _options(figures, hardware, step, total, deadline, usable)
        store = options["store"]
        ranked = sorted(options.values(), key=lambda o: o["gpus"])
        best, runner_up = ranked[0], ranked[1]
        if (
            best["key"] == winner
            and store["by_memory"] >= (1 + BINDS) * store["by_time"]
            and runner_up["gpus"] >= (1 + MARGIN) * best["gpus"]
            and best["gpus"] >= 100  # one GPU more or less is within the tolerance
            and max(o["gpus"] for o in options.values()) <= SPLIT * sequences
        ):
            break
    require(best["key"] != "checkpoint", "reversible layers need no more than checkpointing")
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    margin = runner_up["gpus"] / best["gpus"] - 1
    answer = best["bill"]
    f = figures
    price = rent(hardware)
    layers, d = model.layers, model.d_model
    text = (
        f"You must pre-train {model.name} ({quantity(shown(model.params_total.to('Gparam')))}; "
        f"{layers} layers, residual width {d:,}) on {quantity(total)} within "
        f"{quantity(deadline)}, renting {chip.name} GPUs ({quantity(f['hbm'])} of HBM, of "
        f"which a run may fill {number(100 * usable)}%; {quantity(f['peak'])} dense at BF16) "
        f"at {quantity(price)} for the whole {quantity(deadline)}, whenever the run ends. The "
        f"GPUs sustain {number(100 * MFU)}% of peak on every FLOP they execute, recompute "
        f"included. Each step trains on {number(sequences)} sequences of "
        f"{context_tokens(Q_(CONTEXT, 'token/sequence'))} ({quantity(step, 4)}), all in "
        "flight at once (no gradient accumulation), its tokens spread evenly over the GPUs "
        "(a sequence may be split across several). The mixed-precision Adam state (BF16 "
        "weights and gradients, FP32 master weights and two moments) is sharded over all of "
        "them. Ignore attention's "
        "FLOPs; its scores are recomputed, never stored. Activations are BF16; a layer's "
        "internals (everything its backward pass needs) come "
        f"to about {quantity(f['factor'])} of residual stream per token for this gated "
        f"layer. Three strategies: {PLAIN}; {INPUTS_ONLY}, at the best number of segments; or "
        f"{REVERSIBLE}. Rent the fewest GPUs that hold a step and meet the deadline: what "
        "is the bill of the strategy that costs least? Answer in USD."
    )
    lines = []
    for o in options.values():
        binding = "memory" if o["by_memory"] >= o["by_time"] else "the deadline"
        lines.append(
            f"{_upper(NAMES[o['key']])}: {quantity(o['acts'])} of activations a step; memory "
            f"asks {math.ceil(o['by_memory']):,} GPUs, the deadline "
            f"{math.ceil(o['by_time']):,} ({quantity(o['flops'])}); {binding} binds: "
            f"{o['gpus']:,} GPUs, {_millions(o['bill'])}."
        )
    accumulated = math.ceil(store["by_time"])
    # with accumulation, a micro-batch of one sequence split over at most SPLIT GPUs fits
    one_sequence = (f["per_token"]["store"] * Q_(CONTEXT, "token")).to("GB")
    require(
        f["state"] / accumulated + one_sequence / SPLIT <= usable * f["hbm"], "a micro-batch fits"
    )
    k = segments(layers)
    long_segment = math.ceil(layers / k)
    solution = (
        f"State: {quantity(f['per_param'])} × {quantity(shown(model.params_total.to('Gparam')))}"
        f" = {quantity(f['state'])}, whatever the strategy; sharded, it adds to what the GPUs "
        "must hold together.",
        f"Activations per token. One layer's internals: {quantity(f['factor'])} × {d:,} = "
        f"{_size(f['working'])}; storing them all takes {layers} times that, "
        f"{_size(options['store']['per_token'])}. A layer's input is {d:,} × "
        f"{quantity(f['per_value'])} = {_size(f['layer'])}; checkpointing at {k} segments (of the "
        "whole numbers that keep the fewest inputs, the nearest "
        f"√{layers} ≈ {number(math.sqrt(layers), 3)}) "
        f"keeps {k} checkpoints plus up to {long_segment - 1} other inputs of the segment being "
        f"rebuilt, {_inputs_kept(layers)} inputs, plus the working layer's internals: "
        f"{_size(options['checkpoint']['per_token'])}. Reversible layers keep the last "
        "output and the working layer's internals: "
        f"{_size(options['reversible']['per_token'])}.",
        f"FLOPs per parameter per token: storing everything, {number(f['train'])} (forward "
        f"two, backward four). Every re-run of the layers' forward adds two: reversible layers "
        f"run it once more ({number(f['revnet'])}); this checkpointing runs it twice more, once "
        f"to rebuild a segment's inputs and once for each layer's internals "
        f"({number(f['twice'])}).",
        "Each option needs enough GPUs for its memory (state plus a step's activations over "
        f"the {number(100 * usable)}% of a GPU's {quantity(f['hbm'])} a run may fill, "
        f"{quantity(usable * f['hbm'])}) and for the deadline (its FLOPs over a GPU's "
        f"{number(100 * MFU)}% of peak for {quantity(deadline)}), each rounded up; the larger "
        f"binds, and the bill is GPUs × {quantity(deadline)} × {quantity(price)}.",
        *lines,
        f"Cheapest: {NAMES[best['key']]}, **{quantity(answer, 3)}** ({_millions(answer)}); "
        f"the next, "
        f"{NAMES[runner_up['key']]}, costs {number(100 * margin, 2)}% more. "
        + (
            "Storing everything needs more GPUs for its activations than its deadline does, "
            "and still fewer than the recompute's extra FLOPs would."
            if best["key"] == "store"
            else "With the whole step in flight, storing everything needs so much HBM that a "
            "third more FLOPs on fewer GPUs is cheaper."
        )
        + " The ban on accumulation decides this. Without it, the step would run as "
        "micro-batches one after another, only one holding its activations at a time, and "
        f"storing everything would need just the deadline's {accumulated:,} GPUs, "
        f"{_millions(_bill(accumulated, deadline, hardware))}, cheaper than any recompute"
        + (" and than the memory-bound count above." if best["key"] == "store" else ".")
        + " Recompute pays only when memory, not FLOPs, sets the "
        "number of GPUs.",
    )
    store = options["store"]
    mistakes = [
        Mistake(
            _bill(math.ceil(store["by_time"]), deadline, hardware),
            "That is what the deadline alone asks of storing everything, as if the step ran in "
            "micro-batches; with all of it in flight its activations need more GPUs' worth of "
            "HBM than that.",
        ),
    ]
    # every losing strategy's bill, the runner-up's and the third's (reader 28: plain
    # backpropagation picked, its memory-bound count), apart from each other
    for loser in ranked[1:]:
        mistakes.append(
            Mistake(
                loser["bill"],
                f"That is what '{NAMES[loser['key']]}' costs; '{NAMES[best['key']]}' costs "
                "less. Check both limits, memory and deadline, for every option.",
            )
        )
    require(
        abs((ranked[2]["bill"] / runner_up["bill"]).to("").m - 1) >= 2 * TOLERANCE,
        "the losing strategies' bills land apart",
    )
    args = (figures, hardware, step, total, deadline)
    # the FLOPs of a free rebuild: reversible layers at the six FLOPs of plain backpropagation
    free = _cheapest(
        _options(*args, usable, flops={**f["flops"], "reversible": f["flops"]["store"]})
    )
    if best["key"] == "reversible":
        mistakes.append(
            Mistake(
                free,
                f"You counted {number(f['train'])} FLOP per parameter per token for the "
                "reversible network, as if rebuilding each layer's input were free: it runs "
                f"each layer forward once more, {number(f['revnet'])}.",
            )
        )
    inputs_only = {**f["per_token"], "store": layers * f["layer"]}
    mistakes.append(
        Mistake(
            _cheapest(_options(*args, usable, per_token=inputs_only)),
            f"Storing everything keeps every layer's internals, about {quantity(f['factor'])}, "
            f"not only its input ({quantity(f['per_value'])}).",
        )
    )
    mistakes.append(
        Mistake(
            _cheapest(_options(*args, 1.0)),
            f"You filled each GPU's whole {quantity(f['hbm'])}; a run may fill "
            f"{number(100 * usable)}% of it.",
        )
    )
    stateless = _cheapest(_options(*args, usable, state=0 * f["state"]))
    mistakes.append(
        Mistake(
            stateless,
            f"You left out the training state, {quantity(f['state'])}: the GPUs hold it beside "
            "the activations.",
        )
    )
    # every slip, rerun through the choice, lands inside the window or twice it away
    require(
        all(lands_clear(m.value, answer, TOLERANCE) for m in mistakes),
        "no slip lands just outside the window",
    )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, answer, TOLERANCE),
        hint="For each strategy, GPUs for memory and GPUs for the deadline; the larger binds, "
        "and the rent is paid on that many for the whole period.",
        choices={"strategy": best["key"]},
        margin=margin,
    )
