"""At the crossover batch, the context beyond which the KV cache, not the weights, fills the HBM
reads: two lecture results chained (reader 20: the problem rested on the KV formula alone)."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lands_clear,
    lecture_ratio,
    require,
    shown,
)
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "When the caches outweigh the weights"
USES = (
    "crossover_batch",
    "gqa_kv_values_per_token",
    "kv_bytes_per_token",
    "kv_weight_crossover_context",
)

# (model, chip, chips that hold the weights and, at the crossing, caches as heavy: checked)
SETUPS = (
    ("llama_3_1_8b", "h100_sxm", 2),
    ("llama_3_1_70b", "h100_sxm", 4),
    ("llama_3_3_70b", "b200", 2),
    ("llama_3_1_405b", "h200", 8),
)
PRECISIONS = (("fp8", "bf16"), ("fp8", "fp8"), ("bf16", "bf16"), ("fp4", "fp8"))
NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}
TOLERANCE = 0.03


def weight_bytes_per_value(result):
    """Bytes per weight value of a crossover evaluation, a plain number."""
    return result.inputs["weight_bytes_per_value"].value.to("B/value")


def draw(rng, presets) -> Draw:
    name, hardware, chips = rng.choice(SETUPS)
    weight_precision, kv_precision = rng.choice(PRECISIONS)
    model = presets.get("model", name)
    spec = presets.get("hardware", hardware)
    chip = spec.name.split(" (")[0]
    flops = spec.get(f"dense_flops_{weight_precision}")  # the math at the weights' precision
    require(flops is not None, "the chip does math at the weights' precision")
    # the batch: the crossover, where the weights' multiplies take as long as their reads,
    # from the chip's figures as printed, to the nearest sequence
    crossing = evaluate(
        "crossover_batch",
        hardware=hardware,
        model=name,
        precision=weight_precision,
        flops=shown(flops.to("TFLOP/s"), 4),
        mem_bandwidth=shown(spec.hbm_bandwidth.to("TB/s"), 3),
        presets=presets,
    ).to("sequence")
    batch = Q_(round(crossing.m), "sequence")
    case = dict(
        model=name,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        presets=presets,
    )

    counted = get("gqa_kv_values_per_token").evaluate_detailed(model=name, presets=presets)
    values, pair = counted.value, counted.inputs["kv_vectors_per_token"].value
    per_token = get("kv_bytes_per_token").evaluate_detailed(**case)
    per_value = per_token.inputs["kv_bytes_per_value"].value
    per_token = per_token.value.to("kB/token")
    result = get("kv_weight_crossover_context").evaluate_detailed(batch_size=batch, **case)
    context = result.value.to("token/sequence")
    weight_bytes = (
        result.inputs["n_total"].value * result.inputs["weight_bytes_per_value"].value
    ).to("GB")
    # at the crossing the caches weigh as much as the weights: both must fit the GPUs stated
    hbm = (Q_(chips, "chip") * presets.get("hardware", hardware).hbm_capacity).to("GB")
    share = presets.parameter["usable_hbm_share"].value.to("")
    require(2 * weight_bytes <= share * hbm, "usable HBM holds the weights and caches as heavy")
    # what one more token of context length adds to a step's reads, over the whole batch
    per_context_token = (batch * per_token * Q_(1, "token/sequence")).to("MB")

    text = (
        f"You serve {model.name} ({quantity(model.params_total)}, dense) on "
        f"{number(chips)} {chip} GPUs ({quantity(flops.to('TFLOP/s'), 4)} dense in "
        f"{NAMES[weight_precision]} and {quantity(spec.hbm_bandwidth, 3)} of HBM each), weights "
        f"and math in {NAMES[weight_precision]}, the KV cache in {NAMES[kv_precision]}. Its "
        f"attention: {number(model.layers)} layers, each with {number(model.n_kv_heads)} KV "
        f"heads of {number(model.head_dim)} values. The engine runs the model's crossover "
        "batch (attention's FLOPs and the caches' reads aside), to the nearest sequence, all "
        "sequences at the same context length. Beyond what context length (in tokens per "
        "sequence) does each decode step read more bytes of KV cache than of weights?"
    )
    ridge = (shown(flops.to("TFLOP/s"), 4) / shown(spec.hbm_bandwidth.to("TB/s"), 3)).to("FLOP/B")
    per_flop = flops_per_param_token.value * Q_(1, "parameter·token/FLOP")  # two: multiply-add
    solution = (
        f"The crossover batch: the chip does {number(ridge.m, 4)} FLOPs per byte it reads; "
        f"each weight read ({quantity(weight_bytes_per_value(result))}) serves two "
        f"FLOPs (a multiply-add) per sequence, so the multiplies keep pace at "
        f"{number(ridge.m, 4)} × {number(weight_bytes_per_value(result).m)} / "
        f"{number(per_flop.m)} = "
        f"{number(crossing.m, 4)} sequences: a batch of {quantity(batch)}.",
        f"Each step reads every weight once: {quantity(model.params_total)} at "
        f"{quantity(result.inputs['weight_bytes_per_value'].value)}, {quantity(weight_bytes)}. "
        f"The number of GPUs does not matter: weights and caches are spread over the same "
        f"{number(chips)} chips and read at the same bandwidth.",
        f"Each token of context caches a key and a value per KV head per layer: "
        f"{number(pair.magnitude)} × {number(model.n_kv_heads)} × {number(model.head_dim)} × "
        f"{number(model.layers)} = {quantity(values, 6)}, at {quantity(per_value)}: "
        f"{quantity(per_token)}.",
        f"The batch has {quantity(batch)}, each with its own cache, so each token of context "
        f"length adds {quantity(per_context_token)} to a step's reads.",
        "The caches outweigh the weights (and a longer context or a bigger batch then costs "
        "more HBM time than the whole model does) once the context passes "
        f"{quantity(weight_bytes)} / {quantity(per_context_token)} per token: "
        f"**{quantity(context, 4)}**.",
    )
    # slips a student makes with the bytes per value, each run through the whole chain: what
    # doubles the answer and what halves it (reader 20: three slips gave one value, one message)
    # one vector per KV head (or a BF16 cache as one byte) doubles it; one FLOP per multiply-add
    # (or an FP8 cache as two bytes) halves it; a weight's bytes cancel (the batch grows with
    # them as the weights do)
    fp8_cache = per_value.to("B/value").m == 1
    # two slips on one value get one message, naming the quantity both get wrong (reader 22)
    twice = (
        "That is twice the answer: your cache per token of context came out half its size; "
        f"each KV head caches a key and a value, at {quantity(per_value)} each."
    )
    half = (
        "That is half the answer: your batch's caches came out twice as heavy per token of "
        "context; "
        + (
            "the batch is where the weights' multiply-adds, two FLOPs each, keep pace with "
            f"their reads, and the {NAMES[kv_precision]} cache takes {quantity(per_value)}."
            if fp8_cache
            else "a multiply-add is two FLOPs, which sets the batch."
        )
    )
    # the lecture's round "about 300" multiplies per weight read: a batch of 300
    rule = Q_(lecture_ratio(presets), "sequence")
    lecture = get("kv_weight_crossover_context").evaluate(batch_size=rule, **case)
    per_byte = (crossing / Q_(1, "sequence")).to("").m
    require(lands_clear(lecture, context, TOLERANCE), "the lecture's round figure lands clear")
    candidates = [
        (
            lecture,
            f"You ran the lecture's round batch of {number(rule.m)}; this chip's "
            f"{NAMES[weight_precision]} math keeps pace with its weight reads at "
            f"{number(per_byte, 4)}.",
        ),
        (context * 2, twice),
        (context / 2, half),
        (
            get("kv_weight_crossover_context").evaluate(
                batch_size=batch, **dict(case, kv_precision=weight_precision)
            ),
            "You stored the cache at the weights' precision; here the two differ.",
        ),
        (
            context / chips,
            "You divided the weights over the GPUs but not the caches; both are spread over "
            "the same chips, so the count cancels.",
        ),
        (
            context * batch.magnitude,
            "You counted one sequence's cache; the batch reads one cache per sequence.",
        ),
    ]
    mistakes = distinct_mistakes(
        [Mistake(v.to("token/sequence"), w) for v, w in candidates], context, TOLERANCE
    )
    return Draw(
        hint=(
            "Both are read over the same chips at the same bandwidth: compare bytes, the "
            "weights once against the batch's caches."
        ),
        text=text,
        answer=context,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
    )
