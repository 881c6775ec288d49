"""Predict a chip's throughput from its roofline bound and the share a sibling chip reached."""

from __future__ import annotations

from functools import cache

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, require
from book.problem_bank.validation._mlperf import NO_ATTENTION
from derivations import get
from derivations.inputs import reachable
from units import Q_

KIND = "multi"  # every given is listed: a computed prediction, graded as one
TITLE = "Predicting a throughput from a sibling's share of its bound"
USES = ("chips_to_fit", "serving_step_time", "serving_rate_per_chip", "serving_efficiency")

# offline MLPerf rows of one model at one precision, one replica per GPU. The FP8 runs (H200,
# MI300X, MI325X) are left out: validation.offline_share_of_bound asks for their shares, which
# this problem would give a sibling's
GROUPS = (
    (
        "mlperf_b200_x8_llama2_70b_offline",
        "mlperf_gb200_x4_llama2_70b_offline",
        "mlperf_mi355x_x8_llama2_70b_offline",
    ),
)
TOLERANCE = 0.03
NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}
CHOICES = ("model", "hardware", "presets", "weight_precision", "kv_precision", "precision")
ONE = Q_(1, "sequence")


def _ev(eq_id: str, case: dict, **extra):
    eq = get(eq_id)
    allowed = reachable(eq)
    return eq.evaluate(**{k: v for k, v in case.items() if k in CHOICES or k in allowed}, **extra)


@cache
def _fits():
    """``chips_to_fit`` solved for the batch (solving takes a while; do it once)."""
    return get("chips_to_fit").solve_for("batch_size")


def _bound(row, presets, attention=False, **change):
    """The row's offline bound: the serving rate at the largest batch that fits and is allowed
    (attention's own FLOPs left out unless ``attention``)."""
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
        **({} if attention else NO_ATTENTION),
    )
    case.update(change)
    fit = _fits().evaluate(
        **{k: v for k, v in case.items() if k in CHOICES or k == "context_length"},
        chips_to_fit=Q_(1, "chip"),
    )
    batch = min(fit.to("sequence"), row.concurrency.to("sequence"))
    rate = _ev("serving_rate_per_chip", case, batch_size=batch).to("token/s/chip")
    step = _ev("serving_step_time", case, batch_size=batch).to("ms")
    weights = (
        presets.get("model", row.model).params_total
        * presets.get("precision", row.weights).bytes_per_value
        * Q_(1, "value/parameter")
    ).to("GB")
    kv = (_ev("kv_bytes_per_token", case) * context).to("MB/sequence")
    work = dict(  # the figures the solution names, each from the same case
        context=context,
        weights=weights,
        kv=kv,
        fit=fit.to("sequence"),
        memory=_ev("memory_time", case, batch_size=batch).to("ms"),
        decode=_ev("compute_time", case, batch_size=batch).to("ms"),
        # the step with the reads free: the decode's multiplies plus the prompts' prefill
        busy=_ev("serving_step_time", case, batch_size=batch, mem_bandwidth=Q_(1e9, "TB/s")).to(
            "ms"
        ),
    )
    return rate, batch, step, case, work


def draw(rng, presets) -> Draw:
    group = rng.choice(GROUPS)
    known_id, target_id = rng.sample(group, 2)
    known, target = presets.get("measurement", known_id), presets.get("measurement", target_id)
    model = presets.get("model", target.model)
    chip = presets.get("hardware", target.hardware)
    sibling = presets.get("hardware", known.hardware).name.split(" (")[0]
    name = chip.name.split(" (")[0]
    benchmark = target.name.split(": ")[0]  # "MLPerf Inference v5.1"

    known_bound, *_ = _bound(known, presets)
    known_rate = (known.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    share = (
        get("serving_efficiency")
        .evaluate(measured_rate=known_rate, serving_rate_per_chip=known_bound, presets=presets)
        .to("")
    )
    share = Q_(float(f"{share.m:.2g}"), "")  # the share as the statement shows it, two figures
    bound, batch, step, case, work = _bound(target, presets)
    counted = _bound(target, presets, attention=True)[0]
    require(
        abs((counted / bound).to("").m - 1) < 0.01,
        "attention's FLOPs are under a hundredth of the step: leaving them out is fair",
    )
    predicted = (bound * share).to("token/s/chip")
    actual = (target.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    precision = target.get("activations", target.weights)

    text = (
        f"In {benchmark}'s offline {model.name} test, {sibling} GPUs reached "
        f"{number(100 * share.m, 2)}% of their roofline bound (prefill counted, one replica per "
        f"GPU). Predict what one {name} GPU would serve, reaching the same share: "
        f"{model.name} ({quantity(model.params_total)}, dense; "
        f"{number(model.layers)}-layer cache of "
        f"{quantity(_ev('kv_bytes_per_token', case).to('kB/token'))}) with weights in "
        f"{NAMES[target.weights]} and cache in {NAMES[target.kv]}, on "
        f"{quantity(chip.hbm_capacity)} of HBM at {quantity(chip.hbm_bandwidth)} and "
        f"{quantity(case['flops'])} dense in {NAMES[precision]}; requests of about "
        f"{quantity(target.input_tokens)} in and {quantity(target.output_tokens)} out, up to "
        f"{quantity(target.concurrency)} at once. Leave attention's own FLOPs out (at this "
        "context they are under a hundredth of the multiplies); the caches' reads count. How "
        "many tokens per second per GPU?"
    )
    prefill = work["busy"] - work["decode"]
    binds = "the multiplies" if work["busy"] >= work["memory"] else "the reads"
    ratio = number((target.input_tokens / target.output_tokens).to("").m, 3)
    solution = (
        f"A request's context averages {quantity(target.input_tokens)} + half of "
        f"{quantity(target.output_tokens)} = {number(work['context'].m)} tokens over its "
        f"generation, so its cache takes about {quantity(work['kv'], 3)}.",
        f"The weights take {quantity(work['weights'], 3)} ({NAMES[target.weights]}); the "
        f"rest of the {quantity(chip.hbm_capacity)} holds {number(work['fit'].m)} caches, "
        f"and the benchmark allows {quantity(target.concurrency)}: the batch is about "
        f"{quantity(batch)}.",
        f"A step reads the weights and every cache: {quantity(work['memory'], 3)} at "
        f"{quantity(chip.hbm_bandwidth)}. Its multiplies, two FLOPs per parameter for each "
        f"sequence's new token, take {quantity(work['decode'], 3)}; and every "
        f"output token also carries {ratio} prompt tokens of prefill, which adds "
        f"{quantity(prefill, 3)}, {quantity(work['busy'], 3)} of arithmetic in all. The "
        f"slower, {binds}, sets the step: {quantity(step, 3)}.",
        f"One token per sequence per step: {quantity(batch)} over {quantity(step, 3)} is "
        f"a bound of about {quantity(bound, 3)}.",
        f"Times {number(100 * share.m, 2)}% (MLPerf measured {quantity(actual)}: a sibling's "
        "share predicts it to within "
        f"{number(abs(actual / predicted - 1).to('').m * 100, 2)}%): "
        f"**{quantity(predicted, 4)}**.",
    )
    slow_bytes = _bound(target, presets, flops=case["flops"] / 2)[0] * share
    require(abs((step - max(work["busy"], work["memory"])) / step).to("").m < 1e-6)
    per_step = batch * Q_(1, "token/sequence") / Q_(1, "chip")  # a token per sequence per step
    no_prefill = (per_step / max(work["decode"], work["memory"]) * share).to("token/s/chip")
    reads_only = (per_step / work["memory"] * share).to("token/s/chip")
    candidates = (
        (predicted / share.m, "That is the bound itself; real systems reach only a share of it."),
        (
            slow_bytes,
            "You took the FLOP rate of a precision twice as wide; the chip computes "
            f"in {NAMES[precision]}.",
        ),
        (
            no_prefill,
            f"You left out the prefill: each output token also brings {ratio} prompt tokens "
            "through the model, and the offline test counts them in the step.",
        ),
        (
            reads_only,
            "You timed the step by its reads alone; at this batch its multiplies, prefill "
            "included, take longer.",
        )
        if work["busy"] > work["memory"]
        else (None, ""),
    )
    mistakes = tuple(
        Mistake(v.to("token/s/chip"), why)
        for v, why in candidates
        if v is not None and abs((v / predicted).to("").m - 1) > TOLERANCE
    )
    return Draw(
        hint=(
            "The sibling's share is given: apply it to this GPU's own bound. For the bound, "
            "the batch the HBM holds (and the test allows), then a step's reads against its "
            "multiplies, the prompts' prefill included."
        ),
        text=text,
        answer=predicted,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
    )
