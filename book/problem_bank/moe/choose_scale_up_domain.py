"""Choose the scale-up domain that holds a whole MoE and serves it most cheaply."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, evaluate
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
BATCHES = (128, 256, 512)
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
        row["step"] = evaluate("step_time", **here).to("ms")
        row["cost"] = evaluate("cost_per_token", **here).to("USD/Mtoken")
    return row


def draw(rng, presets) -> Draw:
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
    name = {
        r["hardware"]: presets.get("hardware", r["hardware"]).name.replace(" (per GPU)", "")
        for r in rows
    }
    model_name = presets.get("model", model).name

    offers = "; ".join(
        f"{name[r['hardware']]} ({quantity(r['chips'])} in one NVLink domain) "
        f"at {quantity(r['rent'])}"
        for r in rows
    )
    text = (
        f"You serve {model_name} in FP8, every expert layer inside one scale-up domain (no "
        f"pipelining), at a batch of {quantity(case['batch_size'])} with contexts of "
        f"{number(case['context_length'].m)} tokens. You are offered: {offers}. Which domain "
        "holds the weights and the batch's KV cache and makes the cheapest token, and what "
        "does that token cost, in USD per million tokens?"
    )

    def line(r) -> str:
        if not r["ok"]:
            return (
                f"{name[r['hardware']]}: needs {quantity(r['need'], 3)}, holds only "
                f"{quantity(r['hbm'], 3)}: out."
            )
        return (
            f"{name[r['hardware']]}: holds {quantity(r['hbm'], 3)} for "
            f"{quantity(r['need'], 3)}; step {quantity(r['step'], 3)} on "
            f"{quantity(r['chips'])}, {quantity(r['cost'], 3)}."
        )

    close = (
        f" That is close (under {CLOSE:.0%}): a slightly different rent would flip it."
        if margin < CLOSE
        else ""
    )
    solution = (
        "First, room: the weights at one byte each plus the KV cache of the whole batch must "
        "fit in the domain's HBM (chips × HBM per chip).",
        *(line(r) for r in rows),
        "Among those that fit, the cost per token is the domain's rent for one step over the "
        "batch; more chips make the step shorter, so what matters is each chip's bandwidth "
        "and FLOP rate for its rent.",
        f"Cheapest: {name[best['hardware']]}; the next costs {margin:.0%} more.{close}",
        f"Lowest cost: **{quantity(best['cost'], 3)}**.",
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
