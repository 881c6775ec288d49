"""Pick the batch under a time-per-token limit, with real steps as slow as a measured run's."""

from __future__ import annotations

import math
from functools import cache

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, lands_clear, require
from book.problem_bank.batching._figures import kv_shape, kv_values
from book.problem_bank.validation._mlperf import NO_ATTENTION
from derivations import get
from derivations.inputs import reachable
from units import Q_

KIND = "design"
TITLE = "Choosing the batch under a time-per-token limit"
USES = ("chips_to_fit", "serving_step_time", "serving_rate_per_chip")

# offline runs with one replica per GPU: how far real steps sit above the bound. The FP4 runs
# only: validation.offline_share_of_bound asks for the share of the others, which this problem
# gives, so a page never gives one problem's answer in another's statement
ROWS = (
    "mlperf_b200_x8_llama2_70b_offline",
    "mlperf_gb200_x4_llama2_70b_offline",
    "mlperf_mi355x_x8_llama2_70b_offline",
)
MENUS = (  # the batches on offer; each row takes a menu none of whose batches sits near where
    # compute overtakes the reads, so the choice holds with attention's FLOPs counted or not
    (16, 32, 64, 128, 256, 512, 1024),
    (24, 48, 96, 192, 384, 768, 1536),
    (20, 40, 80, 160, 320, 640, 1280),
)
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


def _scenario(
    row, presets, menu, attention: bool = False, prefill: bool = True, kv: bool = True
) -> dict:
    """The row's setup, the slowdown its measurement shows (its share of the bound, as the
    statement gives it, to three figures) and every option's real step; attention's FLOPs are
    left out unless ``attention``; ``prefill=False`` is the slip that leaves the prefill out of
    one's own steps (the measured share, given, keeps it)."""
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
        **({} if attention else NO_ATTENTION),
    )
    fit = (
        _fits()
        .evaluate(
            **{k: v for k, v in case.items() if k in CHOICES or k == "context_length"},
            hbm_capacity=usable(presets) * chip.hbm_capacity,  # what an engine fills
            chips_to_fit=Q_(1, "chip"),
        )
        .to("sequence")
    )
    fit = Q_(math.floor(fit.m), "sequence")  # whole sequences fit: round down
    measured_batch = min(row.concurrency.to("sequence"), fit)
    bound_rate = _ev("serving_rate_per_chip", case, batch_size=measured_batch)
    measured = (row.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    memory = _ev("memory_time", case, batch_size=measured_batch)
    bound_step = _ev("serving_step_time", case, batch_size=measured_batch)
    require(bound_step > memory, "the measured run is compute-bound: its slowdown is compute's")
    share = float(f"{(measured / bound_rate).to('').m:.3g}")  # as the statement shows it
    slow = 1 / share  # at the same batch, real steps take this many times the bound

    if not prefill:
        case = dict(case, input_output_ratio=Q_(1e-12, ""))  # none (the input must be > 0)
    if not kv:  # the slip that leaves the caches' reads out of one's own steps (the fit keeps them)
        case = dict(case, context_length=Q_(1e-9, "token/sequence"))
    options = []  # (batch, bound step, real step, real rate, compute over memory)
    for b in menu:
        if Q_(b, "sequence") > fit:
            break
        batch = Q_(b, "sequence")
        step = _ev("serving_step_time", case, batch_size=batch).to("ms")
        memory = _ev("memory_time", case, batch_size=batch).to("ms")
        real = step * slow
        rate = (Q_(b, "token") / real / Q_(1, "chip")).to("token/s/chip")
        busy = _ev("serving_step_time", case, batch_size=batch, mem_bandwidth=Q_(1e9, "TB/s"))
        options.append((b, step, real, rate, (busy / memory).to("").m))
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
        measured=measured,
        share=share,
        slow=slow,
        options=options,
    )


TOLERANCE = 0.03  # the time per token, from figures shown to three places


def usable(presets) -> float:
    """The share of a GPU's HBM a serving engine fills with weights and caches."""
    return presets.parameter["usable_hbm_share"].value.to("").m


def _binds(option) -> bool:
    """Whether compute binds the option's step."""
    return option[4] > 1


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


def _clear_of_the_knee(options) -> bool:
    """No option's compute and reads within ``CLEAR`` of each other: whether compute binds is
    then the same however attention is counted."""
    return all(abs(o[4] - 1) >= CLEAR for o in options)


def draw(rng, presets) -> Draw:
    rows = list(ROWS)
    rng.shuffle(rows)
    menus = list(MENUS)
    limit = None
    for row_id in rows:  # a row and menu with a clear choice under some limit
        row = presets.get("measurement", row_id)
        rng.shuffle(menus)
        for menu in menus:
            s = _scenario(row, presets, menu)
            counted = _scenario(row, presets, menu, attention=True)  # attention's FLOPs in
            if not (_clear_of_the_knee(s["options"]) and _clear_of_the_knee(counted["options"])):
                continue
            limits = [Q_(t, "ms") for t in LIMITS]
            clear = [
                t
                for t in limits
                if min(_choose(s["options"], t)[1:]) >= CLEAR
                and min(_choose(counted["options"], t)[1:]) >= CLEAR
            ]
            if clear:
                limit = rng.choice(clear)
                break
        else:
            continue
        break
    require(limit is not None, "some row and menu give a clear choice")
    options, case, chip, slow = s["options"], s["case"], s["chip"], s["slow"]
    attention = max(c[4] / o[4] for c, o in zip(counted["options"], options, strict=True)) - 1
    require(attention < 0.01, "attention's FLOPs are under a hundredth of the multiplies")
    best, margin, _ = _choose(options, limit)
    other = _choose(counted["options"], limit)[0]  # the same choice, attention counted
    require(other[0] == best[0], "the choice does not hang on attention's FLOPs")
    require(abs((other[2] / best[2]).to("").m - 1) < TOLERANCE / 3, "nor the answer")
    model = presets.get("model", row.model)
    fit = s["fit"]
    version, _, _ = row.name.partition(":")
    kv_token = _ev("kv_bytes_per_token", case)
    kv_value = (kv_token / _ev("gqa_kv_values_per_token", case)).to("byte/value")

    text = (
        f"You serve {model.name} ({quantity(model.params_total)}, dense; weights in "
        f"{NAMES[row.weights]}; its KV cache is {kv_shape(row.model, presets)}, kept in "
        f"{NAMES[row.kv]}) on "
        f"{chip.name.split(' (')[0]} GPUs, one replica per GPU "
        f"({quantity(chip.hbm_capacity)} of HBM, of which the engine fills at most "
        f"{number(100 * usable(presets))}%, at {quantity(chip.hbm_bandwidth)}, "
        f"{quantity(s['flops'])} dense in {NAMES[s['compute_precision']]}). Requests bring "
        f"{quantity(s['prompt'])} of prompt and {quantity(s['output'])} of output, and "
        "prompts are prefilled between decode steps on the same GPU. This setup reached "
        f"{number(100 * s['share'], 3)}% of its roofline bound in {version}'s offline test: "
        f"assume every step you run, whether its reads or its multiplies bind, runs at "
        f"{number(100 * s['share'], 3)}% of its bound. Leave "
        "attention's own FLOPs out; the caches' reads count. You promise users a time per "
        f"output token within {quantity(limit)}. You want the most tokens per second per GPU "
        "the promise allows, and among batches that give it the fastest tokens. You choose "
        "the batch from " + ", ".join(number(b) for b in menu) + " sequences: what time "
        "per output token will its users see? Answer in ms."
    )
    listed = "; ".join(
        f"{number(b)}: {quantity(real, 3)}, {quantity(rate, 3)}"
        + ("" if real <= limit else " (too slow)")
        for b, _, real, rate, _ in options
    )
    knee = next(o for o in options if _binds(o))  # each row's offered batches reach compute
    solution = [
        f"A sequence's context averages {quantity(s['context'] * ONE)} (prompt plus half the "
        f"output), and each output token carries {number(s['rho'].m, 3)} prompt tokens of "
        f"prefill. A token of context caches {kv_values(row.model, presets)} at "
        f"{quantity(kv_value, 3)} in {NAMES[row.kv]}: {quantity(kv_token.to('kB/token'))}. "
        f"Beside the weights, the {number(100 * usable(presets))}% of one GPU's HBM the engine "
        f"fills holds {quantity(fit)}, so "
        + (
            "every batch offered fits."
            if len(options) == len(menu)
            else "batches above that are out."
        ),
        "A step's bound is the slower of its reads (the weights once, and every sequence's "
        "cache) and its multiplies (two FLOPs per parameter for each sequence's new token and "
        f"for the prompt tokens it carries). At {number(100 * s['share'], 3)}% of the bound, "
        f"real steps take {number(slow, 3)} times as long, as the statement assumes of every "
        "step. (The share was measured where compute binds; steps the reads bind may in truth "
        "run nearer their bound.)",
        f"For each batch, the real step (the bound times {number(slow, 3)}) and the tokens per "
        f"second per GPU (batch over real step): {listed}.",
    ]
    k = options.index(knee)
    solution.append(
        (
            f"Up to batch {number(options[k - 1][0])} the weight reads bind: the step hardly "
            "grows, so a bigger batch gives nearly proportionally more tokens per second. "
            if k > 0
            else ""
        )
        + f"From batch {number(knee[0])} on, compute binds (its multiplies take "
        f"{number(knee[4], 3)} times its reads): the step grows with the batch, and every "
        f"batch gives the same {quantity(knee[3], 3)} while its users wait longer for each "
        "token."
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
        f"**{quantity(best[2].to('ms'), 3)}**. (Counting attention's FLOPs in the measured "
        "run's bound as well as in yours, which re-derives the slowdown, would make it "
        f"{quantity(other[2].to('ms'), 3)}: the same batch.)"
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
    roofline = [(b, step, step, rate, ratio) for b, step, _, rate, ratio in options]
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
    if optimist is not None:
        candidates.append(
            (
                ("roofline choice", optimist[1]),
                f"That is the roofline step of batch {number(optimist[0])}; real steps take "
                f"{number(slow, 3)} times as long, as the measured run shows.",
            )
        )
    no_kv = _choose(_scenario(row, presets, menu, kv=False)["options"], limit)[0]
    if no_kv is not None:
        candidates.append(
            (
                ("no KV", no_kv[2]),
                "You left out the reads of the KV cache: every step reads each sequence's "
                "cache beside the weights.",
            )
        )
    candidates.append(
        (
            ("the batch", Q_(best[0], "ms")),
            f"That is the batch, {number(best[0])} sequences; the question asks the time per "
            "output token its users see, in ms.",
        )
    )
    no_prefill = _choose(_scenario(row, presets, menu, prefill=False)["options"], limit)[0]
    if no_prefill is not None:
        candidates.append(
            (
                ("no prefill", no_prefill[2]),
                "You left the prefill out of your steps: each output token also carries "
                f"{number(s['rho'].m, 3)} prompt tokens through the multiplies, as in the "
                "measured run.",
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
        if isinstance(b, tuple):  # a slip's own time, rerun through the choice
            b, value = b[0], b[1].to("ms")
        else:
            value = (best[1] if b is None else at[b][2]).to("ms")
        # a slip is named twice the window away; one between is redrawn, never dropped
        require(lands_clear(value, answer, TOLERANCE), "no slip lands just outside the window")
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
