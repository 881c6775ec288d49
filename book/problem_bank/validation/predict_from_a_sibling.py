"""Predict a chip's throughput from its roofline bound and the share a sibling chip reached."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from derivations.inputs import reachable
from units import Q_

KIND = "estimate"
TITLE = "Predicting a throughput from a sibling's share of its bound"
USES = ("chips_to_fit", "serving_step_time", "serving_rate_per_chip", "serving_efficiency")

# offline MLPerf rows of one model at one precision, one replica per GPU
GROUPS = (
    (
        "mlperf_h200_x8_llama2_70b_offline",
        "mlperf_mi300x_x8_llama2_70b_offline",
        "mlperf_mi325x_x8_llama2_70b_offline",
    ),
    (
        "mlperf_b200_x8_llama2_70b_offline",
        "mlperf_gb200_x4_llama2_70b_offline",
        "mlperf_mi355x_x8_llama2_70b_offline",
    ),
)
FACTOR = 1.5  # graded within ×1.5: a ×2 slip (bytes per value, FLOPs per parameter) falls out
NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}
CHOICES = ("model", "hardware", "presets", "weight_precision", "kv_precision", "precision")
ONE = Q_(1, "sequence")


def _ev(eq_id: str, case: dict, **extra):
    eq = get(eq_id)
    allowed = reachable(eq)
    return eq.evaluate(**{k: v for k, v in case.items() if k in CHOICES or k in allowed}, **extra)


def _bound(row, presets, **change):
    """The row's offline bound: the serving rate at the largest batch that fits and is allowed."""
    chip = presets.get("hardware", row.hardware)
    precision = row.get("activations", row.weights)
    context = ((row.input_tokens + row.output_tokens / 2) / ONE).to("token/sequence")
    case = dict(
        model=row.model,
        hardware=row.hardware,
        precision=row.weights,
        weight_precision=row.weights,
        kv_precision=row.kv,
        flops=chip.get(f"dense_flops_{precision}"),
        n_chips=Q_(1, "chip"),
        context_length=context,
        input_output_ratio=(row.input_tokens / row.output_tokens).to(""),
        presets=presets,
    )
    case.update(change)
    fit = (
        get("chips_to_fit")
        .solve_for("batch_size")
        .evaluate(
            **{k: v for k, v in case.items() if k in CHOICES or k == "context_length"},
            chips_to_fit=Q_(1, "chip"),
        )
    )
    batch = min(fit.to("sequence"), row.concurrency.to("sequence"))
    rate = _ev("serving_rate_per_chip", case, batch_size=batch).to("token/s/chip")
    step = _ev("serving_step_time", case, batch_size=batch).to("ms")
    return rate, batch, step, case


def draw(rng, presets) -> Draw:
    group = rng.choice(GROUPS)
    known_id, target_id = rng.sample(group, 2)
    known, target = presets.get("measurement", known_id), presets.get("measurement", target_id)
    model = presets.get("model", target.model)
    chip = presets.get("hardware", target.hardware)
    sibling = presets.get("hardware", known.hardware).name.split(" (")[0]
    name = chip.name.split(" (")[0]
    benchmark = target.name.split(": ")[0]  # "MLPerf Inference v5.1"

    known_bound, _, _, _ = _bound(known, presets)
    known_rate = (known.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    share = (
        get("serving_efficiency")
        .evaluate(measured_rate=known_rate, serving_rate_per_chip=known_bound, presets=presets)
        .to("")
    )
    bound, batch, step, case = _bound(target, presets)
    predicted = (bound * share).to("token/s/chip")
    actual = (target.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    precision = target.get("activations", target.weights)

    text = (
        f"In {benchmark}'s offline {model.name} test, {sibling} GPUs reached "
        f"{number(100 * share.m, 2)}% of their roofline bound (prefill counted, one replica per "
        f"GPU). Estimate what one {name} GPU would serve, reaching the same share: "
        f"{model.name} ({quantity(model.params_total)}, dense; "
        f"{number(model.layers)}-layer cache of "
        f"{quantity(_ev('kv_bytes_per_token', case).to('kB/token'))}) with weights in "
        f"{NAMES[target.weights]} and cache in {NAMES[target.kv]}, on "
        f"{quantity(chip.hbm_capacity)} of HBM at {quantity(chip.hbm_bandwidth)} and "
        f"{quantity(case['flops'])} dense in {NAMES[precision]}; requests of about "
        f"{quantity(target.input_tokens)} in and {quantity(target.output_tokens)} out, up to "
        f"{quantity(target.concurrency)} at once. Roughly how many tokens per second per GPU?"
    )
    solution = (
        f"The batch is what fits beside the weights or what the engine allows, whichever is "
        f"less: about {quantity(batch, 2)}.",
        f"At that batch the step is compute-bound with the prompts' prefill or bound by the "
        f"reads, whichever is slower: about {quantity(step, 2)}, so the bound is about "
        f"{quantity(bound, 2)}.",
        f"Times {number(100 * share.m, 2)}% (MLPerf measured {quantity(actual)}: a sibling's "
        "share predicts it to within "
        f"{number(abs(actual / predicted - 1).to('').m * 100, 2)}%): about "
        f"**{quantity(predicted, 2)}**.",
    )
    slow_bytes = _bound(target, presets, flops=case["flops"] / 2)[0] * share
    candidates = (
        (predicted / share.m, "That is the bound itself; real systems reach only a share of it."),
        (
            slow_bytes,
            "You took the FLOP rate of a precision twice as wide; the chip computes "
            f"in {NAMES[precision]}.",
        ),
        (
            predicted * target.chips,
            f"That is the whole {number(target.chips)}-GPU system; the question asks per GPU.",
        )
        if target.chips > 1
        else (None, ""),
    )
    mistakes = tuple(
        Mistake(v.to("token/s/chip"), why)
        for v, why in candidates
        if v is not None and not (1 / FACTOR <= (v / predicted).to("").m <= FACTOR)
    )
    return Draw(text=text, answer=predicted, solution=solution, tolerance=FACTOR, mistakes=mistakes)
