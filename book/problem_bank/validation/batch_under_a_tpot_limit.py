"""Pick the batch under a time-per-token limit, with real steps as slow as a measured run's."""

from __future__ import annotations

import math
from functools import cache

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, require
from derivations import get
from derivations.inputs import reachable
from units import Q_

KIND = "design"
TITLE = "Choosing the batch under a time-per-token limit"
USES = ("chips_to_fit", "serving_step_time", "serving_rate_per_chip")

ROWS = (  # offline runs with one replica per GPU: how far real steps sit above the bound
    "mlperf_h200_x8_llama2_70b_offline",
    "mlperf_b200_x8_llama2_70b_offline",
    "mlperf_mi300x_x8_llama2_70b_offline",
    "mlperf_mi325x_x8_llama2_70b_offline",
    "mlperf_gb200_x4_llama2_70b_offline",
    "mlperf_mi355x_x8_llama2_70b_offline",
)
BATCHES = (16, 32, 64, 128, 256, 512, 1024)
LIMITS = (20, 30, 45, 60, 90)  # ms: the time per output token promised to users
CLEAR = 0.05  # redraw a scenario whose choice is closer than this (see Draw.margin)
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


def _scenario(row, presets) -> dict:
    """The row's setup, the slowdown its measurement shows, and every option's real step."""
    chip = presets.get("hardware", row.hardware)
    compute_precision = row.get("activations", row.weights)
    flops = chip.get(f"dense_flops_{compute_precision}")
    prompt, output = row.input_tokens, row.output_tokens  # the prompt mean is MLPerf's assumed one
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
    )
    fit = (
        _fits()
        .evaluate(
            **{k: v for k, v in case.items() if k in CHOICES or k == "context_length"},
            chips_to_fit=Q_(1, "chip"),
        )
        .to("sequence")
    )
    fit = Q_(math.floor(fit.m), "sequence")  # whole sequences fit: round down
    measured_batch = min(row.concurrency.to("sequence"), fit)
    bound_step = _ev("serving_step_time", case, batch_size=measured_batch).to("ms")
    bound_rate = _ev("serving_rate_per_chip", case, batch_size=measured_batch)
    measured = (row.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    memory = _ev("memory_time", case, batch_size=measured_batch)
    require(bound_step > memory, "the measured run is compute-bound: its slowdown is compute's")
    share = (measured / bound_rate).to("").m
    slow = 1 / share  # at the same batch, real steps take this many times the bound

    options = []  # (batch, bound step, real step, real rate, compute binds)
    for b in BATCHES:
        if Q_(b, "sequence") > fit:
            break
        batch = Q_(b, "sequence")
        step = _ev("serving_step_time", case, batch_size=batch).to("ms")
        memory = _ev("memory_time", case, batch_size=batch).to("ms")
        real = step * slow
        rate = (Q_(b, "token") / real / Q_(1, "chip")).to("token/s/chip")
        options.append((b, step, real, rate, step > memory * (1 + 1e-9)))  # compute binds
    return dict(
        case=case,
        chip=chip,
        flops=flops,
        compute_precision=compute_precision,
        prompt=prompt,
        output=output,
        context=context,
        rho=rho,
        fit=fit,
        measured_batch=measured_batch,
        bound_step=bound_step,
        bound_rate=bound_rate,
        measured=measured,
        share=share,
        slow=slow,
        options=options,
    )


TOLERANCE = 0.03  # the time per token, from figures shown to three places


def _choose(options, limit):
    """The smallest batch giving the most tokens per second per GPU within ``limit``; how far
    it is ahead (Draw.margin): of the next smaller batch in throughput, of the next larger in
    time per token (same throughput, slower tokens) or in missing the limit; and its slack
    under the limit (a rounded slowdown must not flip it)."""
    feasible = [o for o in options if o[2] <= limit]
    if not feasible:
        return None, 0.0, 0.0
    top = max(o[3] for o in feasible)
    best = next(o for o in feasible if o[3] >= top * (1 - 1e-9))  # ties exact: compute binds
    i = options.index(best)
    leads = []
    if i > 0:
        leads.append((best[3] / options[i - 1][3]).to("").m - 1)
    if i + 1 < len(options):
        after = options[i + 1]
        leads.append((after[2] / (best[2] if after[2] <= limit else limit)).to("").m - 1)
    return best, min(leads), (limit / best[2]).to("").m - 1


def draw(rng, presets) -> Draw:
    rows = list(ROWS)
    rng.shuffle(rows)
    for row_id in rows:  # a row with a clear choice under some limit (each row has one)
        row = presets.get("measurement", row_id)
        s = _scenario(row, presets)
        limits = [Q_(t, "ms") for t in LIMITS]
        clear = [t for t in limits if min(_choose(s["options"], t)[1:]) >= CLEAR]
        if clear:
            limit = rng.choice(clear)
            break
    options, case, chip, slow = s["options"], s["case"], s["chip"], s["slow"]
    best, margin, _ = _choose(options, limit)
    model = presets.get("model", row.model)
    measured, fit = s["measured"], s["fit"]

    text = (
        f"You serve {model.name} ({quantity(model.params_total)}, dense; weights in "
        f"{NAMES[row.weights]}, KV cache in {NAMES[row.kv]} at "
        f"{quantity(_ev('kv_bytes_per_token', case).to('kB/token'))}) on "
        f"{chip.name.split(' (')[0]} GPUs, one replica per GPU "
        f"({quantity(chip.hbm_capacity)} of HBM at {quantity(chip.hbm_bandwidth)}, "
        f"{quantity(s['flops'])} dense in {NAMES[s['compute_precision']]}). Requests bring "
        f"{quantity(s['prompt'])} of prompt and {quantity(s['output'])} of output, and prompts "
        "are prefilled between decode steps on the same GPU. MLPerf's offline run of this "
        f"setup, allowed up to {quantity(row.concurrency)} at once, measured "
        f"{quantity(measured)}. Assume your steps run as far above their roofline bound as "
        f"that run's did. You promise users a time per output token within {quantity(limit)}. "
        "You want the most tokens per second per GPU the promise allows, and among batches "
        "that give it, the fastest tokens. Which batch do you run, of "
        + ", ".join(number(b) for b in BATCHES)
        + " sequences, and what time per output token will its users see? Answer in ms."
    )
    rows = "; ".join(
        f"{number(b)}: {quantity(real, 3)}, {quantity(rate, 3)}"
        + ("" if real <= limit else " (too slow)")
        for b, _, real, rate, _ in options
    )
    knee = next(o for o in options if o[4])  # each row's offered batches reach compute
    solution = [
        f"A sequence's context averages {quantity(s['context'] * ONE)} (prompt plus half the "
        f"output), and each output token carries {number(s['rho'].m, 3)} prompt tokens of "
        f"prefill. Beside the weights, one GPU holds {quantity(fit)}, so "
        + (
            "every batch offered fits."
            if len(options) == len(BATCHES)
            else "batches above that are out."
        ),
        f"The measured run: at {quantity(s['measured_batch'])} the roofline step is "
        f"{quantity(s['bound_step'])} (compute with prefill against weights and caches read), "
        f"so at most {quantity(s['bound_rate'].to('token/s/chip'))}; it measured "
        f"{quantity(measured)}, {number(100 * s['share'], 3)}% of that: real steps take "
        f"{number(slow, 3)} times the bound.",
        f"For each batch, the real step (the bound times {number(slow, 3)}) and the tokens per "
        f"second per GPU (batch over real step): {rows}.",
    ]
    k = options.index(knee)
    solution.append(
        (
            f"Up to batch {number(options[k - 1][0])} the weight reads bind: the step hardly "
            "grows, so doubling the batch nearly doubles the tokens per second. "
            if k > 0
            else ""
        )
        + f"From batch {number(knee[0])} on, compute binds: the step grows with the batch, and "
        f"every batch gives the measured run's {quantity(knee[3], 3)} while its users wait "
        "longer for each token."
    )
    if best is knee:
        verdict = (
            f"Batch {number(best[0])} keeps the promise ({quantity(best[2], 3)} a token) and is "
            "the smallest that reaches the most tokens per second per GPU"
        )
    else:
        verdict = (
            f"Batch {number(best[0])} is the largest that keeps the promise "
            f"({quantity(best[2], 3)} a token), at {quantity(best[3], 3)}; the promise stops "
            "the batch short of where compute binds"
        )
    solution.append(
        f"{verdict}: batch {number(best[0])}, whose users see a token every "
        f"**{quantity(best[2].to('ms'), 3)}**."
    )

    at = {o[0]: o for o in options}
    feasible = [o for o in options if o[2] <= limit]
    candidates = []
    biggest = feasible[-1]
    if biggest is not best:
        candidates.append(
            (
                biggest[0],
                f"Batch {number(biggest[0])} keeps the promise but gives no more tokens per "
                f"second per GPU than batch {number(best[0])}: compute binds, so its users only "
                "wait longer.",
            )
        )
    roofline = [(b, step, step, rate, binds) for b, step, _, rate, binds in options]
    optimist = _choose(roofline, limit)[0]
    if optimist is not None and optimist[0] != best[0]:
        candidates.append(
            (
                optimist[0],
                f"You held the roofline steps against the limit; real steps take "
                f"{number(slow, 3)} times as long, as the measured run shows.",
            )
        )
    unlimited = _choose(options, max(o[2] for o in options))[0]
    if unlimited[0] != best[0]:
        candidates.append(
            (
                unlimited[0],
                f"Batch {number(unlimited[0])} breaks the promise: its real step is "
                f"{quantity(at[unlimited[0]][2], 3)}.",
            )
        )
    i = options.index(best)
    if i > 0:
        smaller = options[i - 1]
        candidates.append(
            (
                smaller[0],
                f"Batch {number(smaller[0])} keeps the promise with room to spare, but the "
                f"weight reads still bind it: only {quantity(smaller[3], 3)}.",
            )
        )
    # graded: the chosen batch's real time per token, a computed figure (the batch itself is
    # one of the listed options, which a guess could hit)
    answer = best[2].to("ms")
    candidates.append(
        (
            None,
            f"That is the roofline step; real steps take {number(slow, 3)} times as long, as "
            "the measured run shows.",
        )
    )
    mistakes: list[Mistake] = []
    for b, why in candidates:
        value = (best[1] if b is None else at[b][2]).to("ms")
        apart = abs((value / answer).to("").m - 1) > TOLERANCE
        if b != best[0] and apart and all(value != m.value for m in mistakes):
            mistakes.append(Mistake(value, why))
    require(mistakes, "every scenario has a time a student may give instead")
    return Draw(
        hint=(
            "For each batch compute the step (reads, multiplies and the prefill it carries) "
            "and the throughput per GPU; keep those that meet the promise."
        ),
        text=text,
        answer=answer,
        solution=tuple(solution),
        tolerance=TOLERANCE,
        mistakes=tuple(mistakes),
        choices={"batch_size": best[0]},
        margin=margin,
    )
