"""A lab's token rate in replicas run at a given batch (their crossover batch, not said so): is
the step bound by the multiplies, or by the weights and caches it reads?"""

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
    whole_count_tolerance,
)
from book.problem_bank.batching._figures import (
    cache_derived,
    cache_given,
    chip_name,
    figures,
    flop_rate,
    size,
    tokens,
    usable_share,
    windowed,
)
from units import Q_

KIND = "multi"
TITLE = "The fewest GPUs for a token rate"
USES = ("kv_cache_per_batch", "compute_time", "memory_time", "step_time")
LECTURE = "0:00"

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "gpt_oss_120b")
CHIPS = {"h200": 8, "b200": 8, "gb200_nvl72": 72, "mi300x": 8}  # chip: GPUs per replica
SHARES = (0.1, 0.2, 0.5, 1.0)  # of one frontier model's traffic
CONTEXTS = (512, 1024, 2048)
EDGE = 0.05  # the replicas, unrounded, keep the bank's design margin from a whole number
PER = Q_(1, "token")  # a figure per token of context, said "... per token of context"


def scenario(rng, presets):
    """A model, replica and context whose crossover batch's caches fit beside the weights, and
    whose step is clearly bound by its reads (not a near tie with the multiplies); with the
    replica's throughput, the weights' read time and the multiplies' time at its batch."""
    while True:
        model, hardware = rng.choice(MODELS), rng.choice(tuple(CHIPS))
        found = _checked(presets, model, hardware, rng.choice(CONTEXTS))
        if found is not None:
            case, *times = found
            return dict(case), *times


# each model, chip and context (four dozen) checked once per presets object, not on each of
# the dozen scenarios a seed tries: the case and its times, or None
_CHECKED = PresetsMemo()


def _checked(presets, model: str, hardware: str, context: int):
    return _CHECKED(
        presets, (model, hardware, context), partial(_timed, presets, model, hardware, context)
    )


def _timed(presets, model: str, hardware: str, context: int):
    case = _check(presets, model, hardware, context)
    return case and (
        case,
        evaluate("throughput", **case).to("token/s"),
        evaluate("weight_fetch_time", **case),
        evaluate("compute_time", **case),
    )


def _check(presets, model: str, hardware: str, context: int):
    """The triple's case if its crossover batch's caches fit and its reads clearly bind, else
    None."""
    case = dict(
        hardware=hardware,
        model=model,
        precision="fp8",
        n_chips=Q_(CHIPS[hardware], "chip"),
        context_length=Q_(context, "token/sequence"),
        presets=presets,
    )
    # gpt-oss's sliding-window layers keep each sequence's last window too: a fixed cache
    # per sequence, counted as bytes per token of this context (reader 17)
    kv = figures(**case)["kv_bytes_per_token"].to("kB/token")
    window = windowed(presets.get("model", model), kv, case["context_length"])
    if window:
        case["kv_bytes_per_token"] = kv + window[2] / case["context_length"]
    crossover = evaluate("crossover_batch", **case).to("sequence")
    case["batch_size"] = Q_(round(crossover.m), "sequence")
    f = figures(**case)
    weights = (f["n_total"] * f["weight_bytes_per_value"] * Q_(1, "value/parameter")).to("GB")
    caches = evaluate("kv_cache_per_batch", **case).to("GB")
    room = (f["hbm_capacity"] * case["n_chips"] / Q_(1, "chip")).to("GB")
    ratio = (evaluate("compute_time", **case) / evaluate("memory_time", **case)).to("").m
    # at the crossover the caches' reads outgrow attention's FLOPs on every preset drawn
    # here (attention does fewer FLOPs per cache byte than the chip's ridge): memory-bound
    if weights + caches < usable_share(presets)[0] * room and ratio < 0.95:
        return case
    return None


def replicas_for(rate, batch, step) -> float:
    """The replicas, unrounded, that make ``rate`` at ``batch`` tokens per ``step``."""
    return (rate * step / (batch * Q_(1, "token/sequence"))).to("").m


def draw(rng, presets) -> Draw:
    while True:  # redraw until every count a slip gives is clear of the answer's (reader 20)
        case, per_replica, reads, multiplies = scenario(rng, presets)
        rate = (presets.parameter["inference_rate"].value * rng.choice(SHARES)).to("token/s")
        exact = (rate / per_replica).to("").m
        batch = case["batch_size"]
        # the step a student takes: the multiplies alone, or the longer of them and the weight
        # reads (the caches left out); each must give a count of replicas clear of the answer's
        slips = [
            replicas_for(rate, batch, multiplies),
            replicas_for(rate, batch, max(multiplies, reads)),
        ]
        if (
            exact > 1
            and clear_of_rounding(exact, EDGE)
            and all(clear_of_rounding(s, EDGE / 2) for s in slips)
            and all(math.ceil(s) != math.ceil(exact) for s in slips)
        ):
            break
    model, hardware, batch = case["model"], case["hardware"], case["batch_size"]
    n, context = case["n_chips"], case["context_length"]
    f = figures(**case)
    total, active = f["n_total"], f["n_active"]
    reads = evaluate("weight_fetch_time", detailed=True, **case)
    require(reads.inputs["expert_read_fraction"].value.m > 0.99, "the batch reads every expert")
    weights_time = reads.value.to("ms")
    kv_time = evaluate("kv_fetch_time", **case).to("ms")
    compute = evaluate("compute_time", **case).to("ms")
    step = evaluate("step_time", **case).to("ms")
    weights = (total * f["weight_bytes_per_value"] * Q_(1, "value/parameter")).to("GB")
    caches = evaluate("kv_cache_per_batch", **case).to("GB")
    room = (f["hbm_capacity"] * n / Q_(1, "chip")).to("GB")
    share, fill = usable_share(presets)
    require(weights + caches < share * room, "the caches fit beside the weights, in usable HBM")
    replicas = math.ceil(exact)
    gpus = Q_(replicas * n.m, "chip")
    per_gpu = n.m  # GPUs per replica
    attention = f["attention_flops_per_token"].to("MFLOP/token")
    spec = presets.get("model", model)
    plain = {k: v for k, v in case.items() if k != "kv_bytes_per_token"}  # the preset's cache
    preset = figures(**plain)
    kv = preset["kv_bytes_per_token"].to("kB/token")  # per token, full layers
    window = windowed(spec, kv, context)
    per_sequence = (evaluate("kv_cache_per_sequence", **case) * Q_(1, "sequence")).to("MB")
    if window:
        layers, kept, held = window
        full = spec.fields["layers"] - layers
        given = (
            f"its KV cache takes {quantity(kv * PER, 4)} per token of context in its "
            f"{number(full)} full-attention layers (its {number(layers)} sliding-window layers "
            f"hold as much per token for each conversation's last {quantity(kept)})"
        )
        summed = (
            f"{size(per_sequence)} each (({tokens(context)} + {quantity(kept)} in the window "
            f"layers) × {quantity(kv * PER, 4)})"
        )
    else:
        given = cache_given(model, presets, kv)
        summed = f"{tokens(context)} × {quantity(kv * PER, 4)}"
    chip, name = chip_name(presets, hardware), presets.get("model", model).name
    replica = f"an {number(per_gpu)}-GPU server" if per_gpu < 72 else "a rack"
    ridge = (f["flops"] / f["mem_bandwidth"]).to("FLOP/B")
    require(step > compute, "the reads bind")
    weights_only = (2 * active * Q_(1, "FLOP/parameter") * batch.m).to("TFLOP")  # a step's

    text = (
        f"A lab must generate {quantity(rate, 2)} of {name} ({quantity(total, 3)} in all, "
        f"{quantity(active, 3)} active per token), in FP8 (weights, KV cache and math) on "
        f"replicas of {replica} of {chip} GPUs ({number(per_gpu)} GPUs, each with "
        f"{quantity(f['hbm_capacity'], 3)} of HBM at {quantity(f['mem_bandwidth'], 3)} and "
        f"{flop_rate(f['flops'])} of dense FP8 math; {fill}). Every conversation carries "
        f"{tokens(context)} of context; {given}, and attention "
        f"costs {quantity(attention * PER, 4)} per token "
        "of context for each new token (count attention's FLOPs as well as the weights'). "
        f"Each replica runs batches of {number(batch.m)} conversations. "
        "How many GPUs does the lab need? It deploys whole replicas; answer in GPUs."
    )
    solution = (
        f"Room: a token of context caches "
        f"{cache_derived(model, presets, kv, preset['kv_bytes_per_value'])}"
        f"{' in the full-attention layers' if window else ''}. The weights take "
        f"{size(weights)} and the batch's caches, {quantity(batch, 4)} × {summed}, "
        f"{size(caches)}: together "
        f"within {number(100 * share)}% of the replica's {size(room)}.",
        f"The step: reading every weight once takes {quantity(weights_time, 3)} and the caches "
        f"{quantity(kv_time, 3)}, {quantity(weights_time + kv_time, 3)} in all; the multiplies, "
        f"{quantity(weights_only, 3)} in the weights plus attention over each context, take "
        f"{quantity(compute, 3)}. "
        + "The reads take longer: the batch is about where the multiplies in the weights "
        f"alone would keep pace with the weight reads ({number(ridge.m, 3)} FLOP/B × "
        f"{number((total / active).to('').m, 3)}, total over active, halved: a multiply-add is "
        "two FLOPs), "
        "and the caches push the step past them." + f" A step is {quantity(step, 3)}.",
        f"A replica makes {number(batch.m)} tokens per step, "
        f"{quantity(per_replica, 3)}; {quantity(rate, 2)} needs {number(exact, 4)} replicas, "
        f"so {number(replicas)} (a replica is whole): **{quantity(gpus, 4)}**.",
    )
    wrong = []

    def gpus_for(step_time) -> Q_:
        made = (batch * Q_(1, "token/sequence") / step_time).to("token/s")
        return Q_(math.ceil((rate / made).to("").m) * per_gpu, "chip")

    # leaving out the caches' reads while still taking the longer of reads and multiplies
    # gives the multiplies' step when they outlast the weight reads alone: one slip, one message
    if compute >= weights_time:
        wrong.append(
            (
                gpus_for(compute),
                "You took the multiplies as the step: at this batch reading the weights and "
                "every conversation's cache takes longer.",
            )
        )
    else:
        wrong.append(
            (
                gpus_for(weights_time),
                "You left out the KV reads: every conversation's cache is read every step.",
            )
        )
        wrong.append(
            (
                gpus_for(compute),
                "You took the multiplies as the step: at this batch "
                "the reads of the weights and caches take longer.",
            )
        )
    wrong.append(
        (Q_(replicas, "chip"), f"That is the number of replicas: each has {number(per_gpu)} GPUs.")
    )
    wrong.append(
        (  # two bytes per value doubles the reads, and so the step the reads set
            gpus_for(max(compute, 2 * (weights_time + kv_time))),
            "FP8 stores one byte per value: you counted two bytes per value.",
        )
    )
    if replicas > 1:  # reader 26: the replicas rounded down, short of the rate
        wrong.append(
            (
                Q_((replicas - 1) * per_gpu, "chip"),
                f"You rounded {number(exact, 4)} replicas down: {number(replicas - 1)} make "
                f"less than the rate, so round up to {number(replicas)}.",
            )
        )
    loose = math.ceil(exact * per_gpu)  # the GPUs rounded up, the replicas not (reader 29)
    if loose % per_gpu:
        wrong.append(
            (
                Q_(loose, "chip"),
                f"You rounded the GPUs up, not the replicas: {number(loose)} GPUs are not a "
                f"whole number of replicas of {number(per_gpu)}; round {number(exact, 4)} "
                f"replicas up to {number(replicas)}.",
            )
        )
    tolerance = whole_count_tolerance(gpus.m)
    mistakes = distinct_mistakes([Mistake(v, why) for v, why in wrong], gpus, tolerance)
    require(len(mistakes) == len(wrong), "every slip gives its own count")
    return Draw(
        text=text,
        answer=gpus,
        solution=solution,
        tolerance=tolerance,
        mistakes=tuple(mistakes),
        hint="Check the batch's caches fit beside the weights; then ask which takes longer at "
        "that batch, the reads (weights and caches) or the multiplies (attention included).",
    )
