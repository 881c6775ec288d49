"""Choose the scale-up domain that holds a whole MoE and serves it most cheaply."""

from __future__ import annotations

from book.format import number
from book.problem_bank import Draw, Mistake, evaluate, money
from units import Q_

KIND = "design"
TITLE = "Which scale-up domain for a large MoE?"
USES = ("scaleup_memory", "max_total_params", "step_time", "cost_per_token")
LECTURE = "32:09"

DOMAINS = {  # chip: rents (USD per GPU-hour) quoted to you
    "h200": (2.2, 2.9, 3.6),
    "b200": (3.9, 4.6, 5.3),
    "gb200_nvl72": (4.4, 5.2, 6.1),
    "gb300_nvl72": (5.1, 6.3, 7.4),
}
MODELS = ("deepseek_v3", "kimi_k2")
BATCHES = (256, 512)  # large enough that every expert is read each step
CONTEXTS = (8192, 32768)
CLOSE = 0.05


def option(hardware, rent, case, presets):
    fit = evaluate("hbm_drain_time", detailed=True, hardware=hardware, presets=presets)
    n = evaluate("scaleup_memory", detailed=True, hardware=hardware, presets=presets)
    chips = n.inputs["scale_up_domain"].value
    hbm = n.value.to("TB")
    here = dict(case, hardware=hardware, n_chips=chips, price_per_chip_hour=rent)
    weights = evaluate("weight_fetch_time", detailed=True, **here).inputs
    weight_bytes = (
        weights["n_total"].value
        * weights["weight_bytes_per_value"].value
        * Q_(1, "value/parameter")
    ).to("TB")
    kv = evaluate("kv_fetch_time", detailed=True, **here).inputs["kv_bytes_per_token"].value
    kv_bytes = (kv * case["context_length"] * case["batch_size"]).to("TB")
    row = dict(
        hardware=hardware,
        rent=rent,
        chips=chips,
        hbm=hbm,
        need=weight_bytes + kv_bytes,
        ok=bool(weight_bytes + kv_bytes <= hbm),
        bandwidth=fit.inputs["mem_bandwidth"].value,
    )
    if row["ok"]:
        row["weights"] = evaluate("weight_fetch_time", **here).to("ms")
        row["kv"] = evaluate("kv_fetch_time", **here).to("ms")
        row["compute"] = evaluate("compute_time", **here).to("ms")
        short = dict(here, context_length=Q_(1, "token/sequence"))  # the weights' FLOPs alone
        row["weights_flops"] = evaluate("compute_time", **short).to("ms")
        row["step"] = evaluate("step_time", **here).to("ms")
        assert row["compute"] < row["weights"] + row["kv"]  # memory-bound, as the solution says
        row["cost"] = evaluate("cost_per_token", **here).to("USD/Mtoken")
    return row


def draw(rng, presets) -> Draw:
    while True:  # redraw until the cheapest domain is clearly ahead of the next
        model = rng.choice(MODELS)
        case = dict(
            model=model,
            precision="fp8",
            batch_size=Q_(rng.choice(BATCHES), "sequence"),
            context_length=Q_(rng.choice(CONTEXTS), "token/sequence"),
            presets=presets,
        )
        rows = [
            option(h, Q_(rng.choice(r), "USD/chip/hour"), case, presets) for h, r in DOMAINS.items()
        ]
        fits = sorted((r for r in rows if r["ok"]), key=lambda r: r["cost"].m)
        best = fits[0]
        margin = (fits[1]["cost"] / best["cost"]).to("").m - 1
        if margin >= CLOSE:
            break
    name = {
        r["hardware"]: presets.get("hardware", r["hardware"]).name.replace(" (per GPU)", "")
        for r in rows
    }
    spec = presets.get("model", model)
    model_name = spec.name
    kv = evaluate("kv_bytes_per_token", model=model, precision="fp8", presets=presets)

    def offer(r) -> str:
        chip = presets.get("hardware", r["hardware"])
        return (
            f"{name[r['hardware']]}, {money(r['chips'])} in one NVLink domain at "
            f"{money(r['rent'])}, each with {money(chip.hbm_capacity, 3)} of HBM at "
            f"{money(chip.hbm_bandwidth, 3)} and {money(chip.dense_flops_fp8, 3)} of "
            "dense FP8 math"
        )

    text = (
        f"You serve {model_name} ({money(spec.params_total, 3)} in all, "
        f"{money(spec.params_active, 3)} active per token; its KV cache takes "
        f"{money(kv.to('kB/token'), 3)} in FP8) with weights, cache and math in FP8, every "
        "expert layer inside one scale-up domain (no pipelining), at a batch of "
        f"{money(case['batch_size'])} with contexts of {number(case['context_length'].m)} "
        f"tokens. You are offered: {'; '.join(offer(r) for r in rows)}. Which domain makes "
        "the cheapest token, and what does that token cost, in USD per million tokens?"
    )

    def line(r) -> str:
        if not r["ok"]:
            return (
                f"{name[r['hardware']]}: needs {money(r['need'], 3)}, holds only "
                f"{money(r['hbm'], 3)}: out."
            )
        return (
            f"{name[r['hardware']]}: holds {money(r['hbm'], 3)} for "
            f"{money(r['need'], 3)}. A step reads the weights in "
            f"{money(r['weights'], 3)} and the caches in {money(r['kv'], 3)} over "
            f"{money(r['chips'])} × {money(r['bandwidth'], 3)}; the multiplies in the weights "
            f"take only {money(r['weights_flops'], 3)} ({money(r['compute'], 3)} with "
            f"attention's), so the step is {money(r['step'], 3)}. "
            f"{money(r['chips'])} × {money(r['rent'])} × {money(r['step'], 3)} over "
            f"{money(case['batch_size'])}: {money(r['cost'], 3)}."
        )

    close = (
        f" That is close (under {CLOSE:.0%}): a slightly different rent would flip it."
        if margin < CLOSE
        else ""
    )
    solution = (
        "First, room: the weights at one byte each plus the KV cache of the whole batch must "
        "fit in the domain's HBM (chips × HBM per chip).",
        "Then, for each that fits, the step: at this batch every expert is hit, so a step "
        "reads every weight once and each sequence's cache once, spread over the domain's "
        "chips; the multiplies (two FLOPs per active parameter per sequence; attention's own "
        "add to them, never enough to bind) take less. The cost per token is the domain's "
        "rent for one step over the batch.",
        *(line(r) for r in rows),
        "More chips make the step shorter, so what matters is each chip's bandwidth for its rent.",
        f"Cheapest: {name[best['hardware']]}; the next costs {margin:.0%} more.{close}",
        f"Lowest cost: **{money(best['cost'], 3)}**.",
    )
    # graded tighter than the gap to the runner-up, so the runner-up's cost is never "right"
    tolerance = min(0.03, margin / 2)
    mistakes = tuple(
        Mistake(r["cost"], f"{name[r['hardware']]} holds the model, but it is not the cheapest.")
        for r in fits[1:]
        if (r["cost"] / best["cost"]).to("").m - 1 > tolerance
    ) or (
        Mistake(
            best["cost"] * best["chips"].m,
            "That is the whole domain's rent per sequence-step, not per token.",
        ),
    )
    return Draw(
        text=text,
        answer=best["cost"],
        solution=solution,
        tolerance=tolerance,
        mistakes=mistakes,
        margin=margin,
        hint="Rule out the domains too small to hold the weights and the KV cache; then "
        "compare the rest by the rent of one step over the batch.",
        choices={"hardware": best["hardware"]},
    )
