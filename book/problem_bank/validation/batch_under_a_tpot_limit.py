"""Pick the batch under a time-per-token limit, with real steps as slow as a measured run's."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
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
)
BATCHES = (16, 32, 64, 128, 256, 512, 1024)
LIMITS = (20, 30, 45, 60, 90)  # ms: the time per output token promised to users
CLOSE = 1.05  # throughputs within 5% are a tie, and the smaller batch (faster users) wins
NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}
CHOICES = ("model", "hardware", "presets", "weight_precision", "kv_precision", "precision")
ONE = Q_(1, "sequence")


def _ev(eq_id: str, case: dict, **extra):
    eq = get(eq_id)
    allowed = reachable(eq)
    return eq.evaluate(**{k: v for k, v in case.items() if k in CHOICES or k in allowed}, **extra)


def draw(rng, presets) -> Draw:
    row = presets.get("measurement", rng.choice(ROWS))
    chip = presets.get("hardware", row.hardware)
    model = presets.get("model", row.model)
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
    fits = get("chips_to_fit").solve_for("batch_size")
    fit = fits.evaluate(
        **{k: v for k, v in case.items() if k in CHOICES or k == "context_length"},
        chips_to_fit=Q_(1, "chip"),
    ).to("sequence")
    measured_batch = min(row.concurrency.to("sequence"), fit)
    bound_step = _ev("serving_step_time", case, batch_size=measured_batch).to("ms")
    bound_rate = _ev("serving_rate_per_chip", case, batch_size=measured_batch)
    measured = (row.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    share = (measured / bound_rate).to("").m
    slow = 1 / share  # at the same batch, real steps take this many times the bound

    def option(b):
        step = _ev("serving_step_time", case, batch_size=Q_(b, "sequence")).to("ms")
        real = step * slow
        rate = (Q_(b, "token") / real / Q_(1, "chip")).to("token/s/chip")
        return b, step, real, rate

    options = [option(b) for b in BATCHES if Q_(b, "sequence") <= fit]
    while True:
        limit = Q_(rng.choice(LIMITS), "ms")
        feasible = [o for o in options if o[2] <= limit]
        if feasible:
            break
    top = max(o[3].m for o in feasible)
    best = min((o for o in feasible if o[3].m * CLOSE >= top), key=lambda o: o[0])
    others = [o for o in feasible if o is not best]
    runner = max(others, key=lambda o: o[3].m) if others else None

    text = (
        f"You serve {model.name} ({quantity(model.params_total)}, dense; weights in "
        f"{NAMES[row.weights]}, KV cache in {NAMES[row.kv]} at "
        f"{quantity(_ev('kv_bytes_per_token', case).to('kB/token'))}) on "
        f"{chip.name.split(' (')[0]} GPUs, one replica per GPU ({quantity(chip.hbm_capacity)} "
        f"of HBM at {quantity(chip.hbm_bandwidth)}, {quantity(flops)} dense in "
        f"{NAMES[compute_precision]}). Requests bring {quantity(prompt)} of prompt and "
        f"{quantity(output)} of output, and prompts are prefilled between decode steps on the "
        f"same GPU. MLPerf's offline run of this setup, allowed up to "
        f"{quantity(row.concurrency)} at once, measured {quantity(measured)}. Assume your "
        "steps run as far above their roofline bound as that run's did. You must keep "
        f"the time per output token within {quantity(limit)}. Which batch, of "
        + ", ".join(number(b) for b in BATCHES)
        + ", gives the most tokens per second per GPU (when two are within 5%, take the "
        "smaller: its users get faster tokens), and how many tokens per second per GPU do "
        "you predict?"
    )
    rows = "; ".join(
        f"{number(b)}: {quantity(real, 3)}, {quantity(rate, 3)}"
        + ("" if real <= limit else " (too slow)")
        for b, _, real, rate in options
    )
    solution = [
        f"A sequence's context averages {quantity(context * ONE)} (prompt plus half the "
        f"output), and each output token carries {number(rho.m, 3)} prompt tokens of prefill. "
        f"Beside the weights, one GPU holds {quantity(fit)}, so batches above that are out.",
        f"The measured run: at {quantity(measured_batch)} the roofline step is "
        f"{quantity(bound_step)} (compute with prefill against weights and caches read), so "
        f"at most {quantity(bound_rate.to('token/s/chip'))}; it measured {quantity(measured)}, "
        f"{number(100 * share, 3)}% of that: real steps take {number(slow, 3)} times the "
        "bound.",
        f"For each batch, the real step (the bound times {number(slow, 3)}) and the tokens per "
        f"second per GPU (batch over real step): {rows}.",
    ]
    verdict = f"Within {quantity(limit)}, batch {number(best[0])} "
    if runner is not None:
        margin = max(best[3], runner[3]) / min(best[3], runner[3])
        if margin.to("").m < CLOSE:
            verdict += (
                f"and batch {number(runner[0])} are close ({quantity(runner[3], 3)}, within "
                "5%): past the point where compute binds, a bigger batch buys only slower "
                f"tokens, so take batch {number(best[0])}"
            )
        else:
            verdict += f"beats batch {number(runner[0])} by {number(margin.to('').m, 3)} times"
    else:
        verdict += "is the only one that keeps the promise"
    solution.append(f"{verdict}: **{quantity(best[3], 3)}**.")

    candidates = []
    too_slow = [o for o in options if o[2] > limit]
    if too_slow:
        fastest = max(too_slow, key=lambda o: o[3].m)
        candidates.append(
            (
                fastest[3],
                f"Batch {number(fastest[0])} breaks the time-per-token "
                "limit once steps run as slowly as the measured ones.",
            )
        )
    candidates.append(
        (
            (Q_(best[0], "token") / best[1] / Q_(1, "chip")).to("token/s/chip"),
            "That is the roofline bound itself; real steps run slower, as the measured run shows.",
        )
    )
    if runner is not None:
        candidates.append(
            (
                runner[3],
                f"Batch {number(runner[0])} keeps the limit too, but "
                "gives fewer tokens per second per GPU, or no more at slower tokens.",
            )
        )
    mistakes: list[Mistake] = []
    for value, why in candidates:
        if all(
            abs((value / o).to("").m - 1) > 0.04 for o in [best[3], *(m.value for m in mistakes)]
        ):
            mistakes.append(Mistake(value, why))
    return Draw(
        text=text,
        answer=best[3],
        solution=tuple(solution),
        tolerance=0.03,
        mistakes=tuple(mistakes),
        choices={"batch_size": best[0]},
    )
