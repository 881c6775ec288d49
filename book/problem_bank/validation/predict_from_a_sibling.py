"""Predict a chip's throughput from its roofline bound and the share a sibling chip reached.

The sibling's published offline run is compute-bound; the chip predicted runs at a small cap
on the batch, where its reads bind: the share must be computed from the sibling's bound, then
applied to this chip's, which no ratio of FLOP rates gives (reader 26: one multiplication)."""

from __future__ import annotations

from functools import cache

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, lands_clear, require
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
# the answer chains two computed bounds (the sibling's, compute-bound; this chip's at a small
# cap, memory-bound): a student's rounding of the share and the step to three figures moves it
# about a percent
TOLERANCE = 0.02
# sequences at once: small enough that the reads bind, and none on batch_under_a_tpot_limit's
# menus (powers of two, and one and a half times them), whose solution lists a measured
# share's rate at each: on these chips of one bandwidth, at the same share, the same figure
CAPS = (20, 28, 36, 40, 56, 72, 80, 88, 104, 112, 120)
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


def _bound(row, presets, attention=False, cap=None, **change):
    """The row's offline bound: the serving rate at the largest batch that fits and is allowed
    (``cap`` sequences at once, else the row's), attention's own FLOPs left out unless
    ``attention``."""
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
    allowed = row.concurrency if cap is None else Q_(cap, "sequence")
    batch = min(fit.to("sequence"), allowed.to("sequence"))
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


def _chip_text(chip, row, case, cap=None) -> str:
    precision = row.get("activations", row.weights)
    allowed = row.concurrency if cap is None else Q_(cap, "sequence")
    return (
        f"{quantity(chip.hbm_capacity)} of HBM at {quantity(chip.hbm_bandwidth)} and "
        f"{quantity(case['flops'])} dense in {NAMES[precision]}, up to "
        f"{quantity(allowed)} at once"
    )


def draw(rng, presets) -> Draw:
    group = rng.choice(GROUPS)
    known_id, target_id = rng.sample(group, 2)
    cap = rng.choice(CAPS)
    known, target = presets.get("measurement", known_id), presets.get("measurement", target_id)
    known_bound, known_batch, known_step, known_case, known_work = _bound(known, presets)
    bound, batch, step, case, work = _bound(target, presets, cap=cap)
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
    for row, kw in ((known, {}), (target, {"cap": cap})):
        counted = _bound(row, presets, attention=True, **kw)[0]
        plain = _bound(row, presets, **kw)[0]
        require(
            abs((counted / plain).to("").m - 1) < 0.01,
            "attention's FLOPs are under a hundredth of the step: leaving them out is fair",
        )
    require(known_work["busy"] >= 1.2 * known_work["memory"], "the sibling's multiplies bind")
    require(work["memory"] >= 1.2 * work["busy"], "at the cap, this chip's reads bind")
    require(batch.m == cap, "the cap, not the HBM, sets the batch")
    predicted = (bound * share).to("token/s/chip")

    text = (
        f"In {benchmark}'s offline {model.name} test, one {sibling} GPU served "
        f"{quantity(known_rate)} ({_chip_text(known_chip, known, known_case)}). A provider "
        f"runs the same model on the same requests on {name} GPUs "
        f"({_chip_text(chip, target, case, cap)}: it caps the batch to keep each user's steps "
        "short). Suppose it reaches the same share of its roofline bound as the "
        f"{sibling} did of its own. Both run {model.name} "
        f"({quantity(model.params_total)}, dense; {number(model.layers)}-layer cache of "
        f"{quantity(_ev('kv_bytes_per_token', case).to('kB/token'))}) with weights in "
        f"{NAMES[target.weights]} and cache in {NAMES[target.kv]}, one replica per GPU "
        f"filling at most {number(100 * usable(presets))}% of its HBM, on "
        f"requests of about {quantity(target.input_tokens)} in and "
        f"{quantity(target.output_tokens)} out, prompts prefilled on the same GPU. Leave "
        "attention's own FLOPs out (at this context they are under a hundredth of the "
        "multiplies); the caches' reads count. How many tokens per second per GPU should the "
        f"{name} serve?"
    )
    ratio = number((target.input_tokens / target.output_tokens).to("").m, 3)
    solution = (
        f"A request's context averages {quantity(target.input_tokens)} + half of "
        f"{quantity(target.output_tokens)} = {number(work['context'].m)} tokens, a cache of "
        f"about {quantity(work['kv'], 3)}; a generated token costs two FLOPs per parameter for "
        f"itself and for its {ratio} prompt tokens of prefill.",
        f"The {sibling}'s bound: the weights ({quantity(known_work['weights'], 3)}) leave room, "
        f"in {number(100 * usable(presets))}% of {quantity(known_chip.hbm_capacity)}, for "
        f"{number(known_work['fit'].m)} caches, the test allows {quantity(known.concurrency)}, "
        f"so {quantity(known_batch)} a step; the reads take {quantity(known_work['memory'], 3)}"
        f" at {quantity(known_chip.hbm_bandwidth)}, the multiplies "
        f"{quantity(known_work['busy'], 3)} (prefill included). Compute-bound: "
        f"{quantity(known_batch)} per {quantity(known_step, 3)}, {quantity(known_bound, 3)}. "
        f"It reached {quantity(known_rate)} / {quantity(known_bound, 3)} = "
        f"{number(100 * share.m, 3)}% of it.",
        f"The {name}'s bound at {quantity(batch)}: the reads, the weights plus "
        f"{number(batch.m)} caches, take {quantity(work['memory'], 3)} at "
        f"{quantity(chip.hbm_bandwidth)}; the multiplies only {quantity(work['busy'], 3)}. "
        f"Memory-bound: {quantity(batch)} per {quantity(step, 3)}, {quantity(bound, 3)}. "
        "A ratio of FLOP rates would not carry the share here: the reads set this step.",
        f"At the same share: {number(100 * share.m, 3)}% × {quantity(bound, 3)} = "
        f"**{quantity(predicted, 4)}**.",
    )

    def rerun(**change):
        """The prediction with one input changed, through the whole chain."""
        k = _bound(known, presets, **change)[0]
        t = _bound(target, presets, cap=cap, **change)[0]
        return (t * known_rate / k).to("token/s/chip")

    flop_ratio = (case["flops"] / known_case["flops"]).to("").m
    candidates = (
        (
            known_rate * flop_ratio,
            "You scaled the sibling's rate by the FLOP rates, as if both steps were "
            f"compute-bound; at {quantity(batch)} this chip's reads take longer than its "
            "multiplies.",
        ),
        (bound, "That is the bound itself; apply the sibling's share of its own bound to it."),
        (
            rerun(input_output_ratio=Q_(1e-9, "")),
            "You left the prompts' prefill out of the sibling's multiplies: each generated "
            f"token also pays for {ratio} prompt tokens.",
        ),
        (
            rerun(context_length=Q_(1e-9, "token/sequence")),
            "You left the caches' reads out: each of the batch's caches is read every step.",
        ),
        (
            rerun(weight_precision="fp8"),
            f"{NAMES[target.weights]} stores a weight in half a byte; you counted a byte.",
        ),
        (
            rerun(kv_precision="bf16"),
            f"The cache is {NAMES[target.kv]}, one byte per value; you counted two.",
        ),
        (known_rate, f"That is the {sibling}'s own rate, not this chip's at its cap."),
    )
    for value, _ in candidates:  # named and twice the window away, or inside it
        require(lands_clear(value, predicted, TOLERANCE), "each slip lands clear")
    clear = [Mistake(v.to("token/s/chip"), why) for v, why in candidates]
    mistakes = distinct_mistakes(clear, predicted, TOLERANCE)
    return Draw(
        hint=(
            "Two bounds: the sibling's, to find the share it reached (which binds there, the "
            "reads or the multiplies?), and this chip's at its cap (which binds here?)."
        ),
        text=text,
        answer=predicted,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
    )
