"""Predict a chip's throughput from its roofline bound and the share a sibling chip reached."""

from __future__ import annotations

from functools import cache

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
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
# the answer is a given rate times a ratio of given FLOP rates: a student's rounding to three
# figures moves it under half a percent. The wrong regime (memory-bound, each chip at its batch
# cap) lands 1.7% off on two pairs of chips: the window keeps it twice its width away (reader 24)
TOLERANCE = 0.0075
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
        hbm_capacity=usable(presets) * chip.hbm_capacity,  # what an engine fills
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


def usable(presets) -> float:
    """The share of a GPU's HBM a serving engine fills with weights and caches."""
    return presets.parameter["usable_hbm_share"].value.to("").m


def _chip_text(chip, row, case) -> str:
    precision = row.get("activations", row.weights)
    return (
        f"{quantity(chip.hbm_capacity)} of HBM at {quantity(chip.hbm_bandwidth)} and "
        f"{quantity(case['flops'])} dense in {NAMES[precision]}, up to "
        f"{quantity(row.concurrency)} at once"
    )


def draw(rng, presets) -> Draw:
    while True:  # two chips whose FLOP rates differ: else the sibling's rate is the answer
        group = rng.choice(GROUPS)
        known_id, target_id = rng.sample(group, 2)
        known, target = presets.get("measurement", known_id), presets.get("measurement", target_id)
        known_bound, known_batch, known_step, known_case, known_work = _bound(known, presets)
        bound, batch, step, case, work = _bound(target, presets)
        flop_ratio = (case["flops"] / known_case["flops"]).to("").m
        if abs(flop_ratio - 1) >= 2.5 * TOLERANCE:
            break
    model = presets.get("model", target.model)
    chip = presets.get("hardware", target.hardware)
    known_chip = presets.get("hardware", known.hardware)
    sibling = known_chip.name.split(" (")[0]
    name = chip.name.split(" (")[0]
    benchmark = target.name.split(": ")[0]  # "MLPerf Inference v5.1"

    known_rate = (known.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    share = (
        get("serving_efficiency")
        .evaluate(measured_rate=known_rate, serving_rate_per_chip=known_bound, presets=presets)
        .to("")
    )
    counted = _bound(target, presets, attention=True)[0]
    require(
        abs((counted / bound).to("").m - 1) < 0.01,
        "attention's FLOPs are under a hundredth of the step: leaving them out is fair",
    )
    for w in (work, known_work):  # the lesson: both steps are compute-bound
        require(w["busy"] >= 1.2 * w["memory"], "the multiplies bind on both chips")
    predicted = (bound * share).to("token/s/chip")
    require(abs((predicted / (known_rate * flop_ratio)).to("").m - 1) < 1e-6, "rate × FLOP ratio")
    actual = (target.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    precision = target.get("activations", target.weights)

    text = (
        f"In {benchmark}'s offline {model.name} test, one {sibling} GPU served "
        f"{quantity(known_rate)} ({_chip_text(known_chip, known, known_case)}). Predict what "
        f"one {name} GPU would serve in the same test, reaching the same share of its roofline "
        f"bound ({_chip_text(chip, target, case)}). Both run {model.name} "
        f"({quantity(model.params_total)}, dense; {number(model.layers)}-layer cache of "
        f"{quantity(_ev('kv_bytes_per_token', case).to('kB/token'))}) with weights in "
        f"{NAMES[target.weights]} and cache in {NAMES[target.kv]}, one replica per GPU "
        f"filling at most {number(100 * usable(presets))}% of its HBM, on "
        f"requests of about {quantity(target.input_tokens)} in and "
        f"{quantity(target.output_tokens)} out, prompts prefilled on the same GPU. Leave "
        "attention's own FLOPs out (at this context they are under a hundredth of the "
        "multiplies); the caches' reads count. How many tokens per second per GPU?"
    )
    ratio = number((target.input_tokens / target.output_tokens).to("").m, 3)

    def regime(label, chip_, row, b, w) -> str:
        return (
            f"{label}: the weights ({quantity(w['weights'], 3)}) leave room, in "
            f"{number(100 * usable(presets))}% of {quantity(chip_.hbm_capacity)}, for "
            f"{number(w['fit'].m)} caches, the test allows {quantity(row.concurrency)}, so "
            f"{quantity(b)} a step; the reads take {quantity(w['memory'], 3)} at "
            f"{quantity(chip_.hbm_bandwidth)}, the multiplies {quantity(w['busy'], 3)} "
            f"(prefill included)"
        )

    solution = (
        f"First the regime, on both chips. A request's context averages "
        f"{quantity(target.input_tokens)} + half of {quantity(target.output_tokens)} = "
        f"{number(work['context'].m)} tokens, a cache of about {quantity(work['kv'], 3)}. "
        + regime(sibling, known_chip, known, known_batch, known_work)
        + "; "
        + regime(name, chip, target, batch, work)
        + ". Both steps are compute-bound.",
        "Compute-bound, the batch cancels: a token costs the same FLOPs at any batch, two per "
        f"parameter for itself and for its {ratio} prompt tokens of prefill, on either chip. "
        "So each bound is the chip's FLOP rate over that cost, and at the same share the "
        "rates stand as the FLOP rates: the HBM, the batch and the context only decided the "
        "regime.",
        f"{quantity(known_rate)} × {quantity(case['flops'])} / {quantity(known_case['flops'])} "
        f"= **{quantity(predicted, 4)}** (a share of {number(100 * share.m, 2)}% of a bound of "
        f"{quantity(bound, 3)}). MLPerf measured {quantity(actual)}, "
        f"{number(abs(actual / predicted - 1).to('').m * 100, 2)}% "
        f"{'above' if actual > predicted else 'below'} the prediction: a share of the bound "
        "carries only roughly from one vendor's chip and software to another's.",
    )
    slow_bytes = predicted / 2
    reads_only = (
        known_rate * (batch / work["memory"]) / (known_batch / known_work["memory"]) * Q_(1, "")
    )
    candidates = (
        (predicted / share.m, "That is the bound itself; real systems reach only a share of it."),
        (
            known_rate,
            f"That is the {sibling}'s own rate; the step is compute-bound, so the rate scales "
            "with the chip's FLOP rate.",
        ),
        (
            slow_bytes,
            "You took the FLOP rate of a precision twice as wide for this chip; it computes "
            f"in {NAMES[precision]}.",
        ),
        (
            reads_only,
            "You scaled by the batch over the reads' time, as if the steps were memory-bound; "
            "on both chips the multiplies, prefill included, take longer.",
        ),
    )
    # a slip lands inside the window or at least twice the tolerance away, and is named
    require(
        all(
            not TOLERANCE < abs((v / predicted).to("").m - 1) <= 2 * TOLERANCE
            for v, _ in candidates
        ),
        "no slip lands just outside the window",
    )
    require(
        abs((reads_only / predicted).to("").m - 1) >= 2 * TOLERANCE,
        "the wrong regime's prediction is named, never accepted",
    )
    clear = [Mistake(v.to("token/s/chip"), why) for v, why in candidates]
    mistakes = distinct_mistakes(clear, predicted, TOLERANCE)
    return Draw(
        hint=(
            "First decide, on both chips, which binds: a step's reads or its multiplies "
            "(prefill included). If the multiplies, what does a token cost, whatever the batch?"
        ),
        text=text,
        answer=predicted,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
    )
