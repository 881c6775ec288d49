"""An MLPerf offline result held against its roofline bound: which side binds, what share."""

from __future__ import annotations

from functools import cache

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from book.problem_bank.validation._mlperf import NO_ATTENTION, cited
from derivations import get
from derivations.inputs import reachable
from derivations.notation import flops_per_param_token
from units import Q_, ChalkboardError

KIND = "multi"
TITLE = "What share of its bound did an MLPerf offline run reach?"
USES = (
    "kv_bytes_per_token",
    "chips_to_fit",
    "serving_step_time",
    "serving_rate_per_chip",
    "serving_efficiency",
)

NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}
CHOICES = ("model", "hardware", "presets", "weight_precision", "kv_precision", "precision")
ONE = Q_(1, "sequence")  # one request is one sequence
TRIES = 20  # scenarios drawn, at most, to find one whose run stays under its bound
# validation.batch_under_a_tpot_limit gives these runs' shares in its statement: not asked here
GIVEN_ELSEWHERE = (
    "mlperf_b200_x8_llama2_70b_offline",
    "mlperf_gb200_x4_llama2_70b_offline",
    "mlperf_mi355x_x8_llama2_70b_offline",
)


@cache
def _solved(equation, name: str):
    """``equation.solve_for(name)``, once per catalogue equation (a new solved equation on
    every call compiles, and misses the evaluation memo, afresh)."""
    return equation.solve_for(name)


def pct(x: float) -> str:
    return f"{number(100 * x, 3)}%"


def _ev(eq_id: str, case: dict, **extra):
    eq = get(eq_id)
    allowed = reachable(eq)
    return eq.evaluate(**{k: v for k, v in case.items() if k in CHOICES or k in allowed}, **extra)


def _rows(presets):
    """Offline rows of a dense model, one chip per replica, with a configured batch."""
    for row in presets.measurement.values():
        model = presets.get("model", row.model)
        if (
            row.scenario == "offline"
            and row.get("chips_per_replica") == 1
            and row.get("concurrency") is not None
            and not model.get("experts_routed")
            and row.id not in GIVEN_ELSEWHERE
        ):
            yield row


def draw(rng, presets) -> Draw:
    for _ in range(TRIES):
        drawn = _draw(rng, presets)
        if drawn.answer < 1:
            return drawn
    raise AssertionError("no prompt length left the run under its bound")


def _draw(rng, presets) -> Draw:
    """One scenario; a run that measures above its bound (an input of the bound wrong for that
    system) is not a question to ask, and ``draw`` draws again."""
    row = rng.choice(sorted(_rows(presets), key=lambda r: r.id))
    prompt = row.input_tokens  # the mean prompt of the benchmark's dataset
    chip = presets.get("hardware", row.hardware)
    model = presets.get("model", row.model)
    compute_precision = row.get("activations", row.weights)
    flops = chip.get(f"dense_flops_{compute_precision}")
    output = row.output_tokens
    context = ((prompt + output / 2) / ONE).to("token/sequence")
    rho = (prompt / output).to("")
    case = dict(
        model=row.model,
        hardware=row.hardware,
        precision=row.weights,
        weight_precision=row.weights,
        kv_precision=row.kv,
        flops=flops,
        n_chips=Q_(1, "chip"),
        context_length=context,
        input_output_ratio=rho,
        presets=presets,
        **NO_ATTENTION,
    )
    measured = (row.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")

    per_token = _ev("kv_bytes_per_token", case).to("kB/token")
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # what an engine fills
    filled = usable * chip.hbm_capacity
    fit = (
        _solved(get("chips_to_fit"), "batch_size")
        .evaluate(
            **{k: v for k, v in case.items() if k in CHOICES or k == "context_length"},
            hbm_capacity=filled,
            chips_to_fit=Q_(1, "chip"),
        )
        .to("sequence")
    )
    configured = row.concurrency.to("sequence")
    batch = min(fit, configured)
    compute = _ev("compute_time", case, batch_size=batch).to("ms")
    weights = _ev("weight_fetch_time", case, batch_size=batch).to("ms")
    kv = _ev("kv_fetch_time", case, batch_size=batch).to("ms")
    step = _ev("serving_step_time", case, batch_size=batch).to("ms")
    bound = _ev("serving_rate_per_chip", case, batch_size=batch).to("token/s/chip")
    share = (
        get("serving_efficiency")
        .evaluate(measured_rate=measured, serving_rate_per_chip=bound, presets=presets)
        .to("")
    )
    # the step's arithmetic with the reads free: the decode's multiplies plus the prompts' prefill
    with_prompts = _ev(
        "serving_step_time", case, batch_size=batch, mem_bandwidth=Q_(1e9, "TB/s")
    ).to("ms")
    binds = "compute" if with_prompts >= weights + kv else "memory"

    counted = {k: v for k, v in case.items() if k not in NO_ATTENTION}  # attention's FLOPs in
    with_attention = _ev("serving_rate_per_chip", counted, batch_size=batch)
    require(
        abs((with_attention / bound).to("").m - 1) < 0.01,
        "attention's FLOPs are under a hundredth of the step: leaving them out is fair",
    )
    version, _, rest = row.name.partition(": ")
    _, system, _ = rest.split(", ")
    assumed = str(row.get("assumed", "")).split()
    allowed = (
        f"The engine is taken to allow up to {quantity(configured)} at once (the figure of "
        "the same engine's published configuration)"
        if "concurrency" in assumed
        else f"The engine allowed up to {quantity(configured)} at once"
    )
    text = (
        f"In the {version} offline scenario, {system} ran {model.name} "
        f"({quantity(model.params_total)}, dense; {number(model.layers)} layers with "
        f"{number(model.n_kv_heads)} KV heads of {number(model.head_dim)} values) with weights "
        f"in {NAMES[row.weights]} and KV cache in {NAMES[row.kv]}, one replica per GPU, at "
        f"{quantity(measured)}. Each GPU has "
        f"{quantity(chip.hbm_capacity)} of HBM at {quantity(chip.hbm_bandwidth)} (an engine "
        f"fills at most {number(100 * usable)}% of it) and does "
        f"{quantity(flops)} dense in {NAMES[compute_precision]}. {allowed}. Requests "
        f"averaged {quantity(output)} of output (the run's own mean: its output tokens per "
        f"second over its samples per second) and {quantity(prompt)} of prompt (the benchmark "
        "dataset's mean). Prompts are prefilled on the same GPUs, between decode "
        "steps. Leave attention's own FLOPs out (under a hundredth "
        "of the multiplies here); the caches' reads count. What share of its roofline bound did "
        "the run reach? Answer as a fraction (or a percentage, with its % sign)."
    )
    two = number(flops_per_param_token.value.to("FLOP/parameter/token").m)  # a multiply, an add
    solution = (
        f"A sequence's context averages its prompt plus half its output: "
        f"{quantity(context * ONE)}. Its KV cache costs {quantity(per_token)}.",
        f"Beside the weights, {number(100 * usable)}% of {quantity(chip.hbm_capacity)} holds "
        f"{quantity(fit)} of that "
        f"context; the engine allows {quantity(configured)}, so the bound takes "
        f"{quantity(batch)}.",
        f"Memory per step: the weights in {quantity(weights)} and the caches in {quantity(kv)}. "
        f"Compute per step: {quantity(compute)} for the decode tokens, and each output token "
        f"brings {number(rho.m, 3)} prompt tokens of prefill, which adds "
        f"{quantity(with_prompts - compute)}: {quantity(with_prompts)} in all. The step is "
        f"{binds}-bound at {quantity(step)}.",
        (
            "Compute-bound, so the batch cancels (the lecture's constant cost per token): an "
            f"output token costs {two} FLOPs per parameter for itself and for each of its "
            f"{number(rho.m, 3)} prompt tokens, so the bound is {quantity(flops)} / ({two} × "
            f"{quantity(model.params_total)} × {number(1 + rho.m, 4)}) = {quantity(bound)} "
            "whatever the batch; the HBM, the batch and the context only decided which side "
            "binds. "
            if binds == "compute"
            else "Memory-bound, so the batch matters: each sequence gets one token per step, "
            f"{number(batch.m)} tokens per {quantity(step)}, at most {quantity(bound)}. "
        )
        + f"The run measured {quantity(measured)}, so its share is "
        f"{quantity(measured)} / {quantity(bound)} = **{number(100 * share.m, 4)}%**. (Counting "
        "attention's FLOPs would lower the bound by "
        f"{number(100 * (1 - (with_attention / bound).to('').m), 2)}%. The result is "
        f"{cited(row)}.)",
    )
    decode_only = _ev("decode_rate_per_chip", case, batch_size=batch).to("token/s/chip")
    candidates = [
        (
            measured / decode_only,
            "You left out the prefill: every prompt token costs a "
            "decode token's FLOPs on the same GPUs.",
        ),
    ]
    inverted = _ev(
        "serving_rate_per_chip", dict(case, input_output_ratio=1 / rho), batch_size=batch
    )
    candidates.append(
        (
            measured / inverted,
            "You turned the ratio over: each output token carries "
            "the request's prompt tokens over its output tokens of prefill.",
        )
    )
    one_flop = _ev("serving_rate_per_chip", dict(case, flops=2 * flops), batch_size=batch)
    candidates.append(
        (
            measured / one_flop,
            "You counted one FLOP per parameter per token; a multiply and an add are two.",
        )
    )
    half = dict(case, kv_bytes_per_token=per_token / 2)
    try:
        more = _solved(get("chips_to_fit"), "batch_size").evaluate(
            **{
                k: v
                for k, v in half.items()
                if k in CHOICES or k in ("context_length", "kv_bytes_per_token")
            },
            hbm_capacity=filled,
            chips_to_fit=Q_(1, "chip"),
        )
        fewer_bytes = _ev("serving_rate_per_chip", half, batch_size=min(more, configured))
        candidates.append(
            (
                measured / fewer_bytes,
                "You counted one vector per KV head; each "
                "caches a key and a value, so fewer sequences fit and their "
                "caches take twice as long to read.",
            )
        )
    except ChalkboardError:
        pass
    if fit < configured:
        try:
            full = _ev("serving_rate_per_chip", case, batch_size=configured)
            candidates.append(
                (
                    measured / full,
                    f"The engine's {quantity(configured)} do not "
                    "fit beside the weights; the bound takes what fits.",
                )
            )
        except ChalkboardError:
            pass
    whole = (
        _solved(get("chips_to_fit"), "batch_size")
        .evaluate(
            **{k: v for k, v in case.items() if k in CHOICES or k == "context_length"},
            chips_to_fit=Q_(1, "chip"),
        )
        .to("sequence")
    )
    if fit < configured:
        candidates.append(
            (
                measured / _ev("serving_rate_per_chip", case, batch_size=min(whole, configured)),
                f"You filled the whole {quantity(chip.hbm_capacity)}; an engine fills at most "
                f"{number(100 * usable)}% of it, so fewer sequences fit.",
            )
        )
    # the other side of the roofline taken for the step (reader 26: the reads' step at the
    # batch that fits, 0.119 where the multiplies bind)
    other = weights + kv if binds == "compute" else with_prompts
    other_rate = (batch * Q_(1, "token/sequence") / other / Q_(1, "chip")).to("token/s/chip")
    candidates.append(
        (
            measured / other_rate,
            "You took the step as the weights' and caches' reads; the multiplies, the prompts' "
            "prefill included, take longer, so the step is compute-bound."
            if binds == "compute"
            else "You took the step as the multiplies, the prompts' prefill included; the "
            "weights' and caches' reads take longer, so the step is memory-bound.",
        )
    )
    # every slip, the whole chain rerun: inside the window, or twice it away and named
    require(
        all(not 0.03 < abs((v / share).to("").m - 1) < 0.06 for v, _ in candidates),
        "no slip lands just outside the window",
    )
    mistakes = distinct_mistakes([Mistake(v.to(""), why) for v, why in candidates], share, 0.03)
    return Draw(
        hint=(
            "Which binds, a step's reads or its multiplies (the prefill it must fit in "
            "included)? The bound follows from that; the share is the measured rate over it."
        ),
        text=text,
        answer=share,
        solution=solution,
        tolerance=0.03,
        mistakes=tuple(mistakes),
    )
