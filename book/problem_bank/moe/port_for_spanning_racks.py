"""How fast a network port must be for an expert layer to span racks without waiting on it."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require
from book.problem_bank.batching._figures import chip_name, figures
from units import Q_

KIND = "multi"
TITLE = "The network port that would let an expert layer span racks"
USES = (
    "alltoall_bytes_per_token",
    "alltoall_time",
    "compute_time",
    "offrack_fraction",
    "multi_rack_slowdown",
)
LECTURE = "32:09"

# Apart from two_racks_alltoall's models, so one draw never asks the same all-to-all twice.
MODELS = ("qwen3_235b_a22b", "gpt_oss_120b")
RACKS = ("gb200_nvl72", "gb300_nvl72")
SPANS = (2, 3, 4)
BATCHES = (8192, 12_288, 16_384, 24_576, 32_768, 49_152)  # past the crossover (checked)
SPAN_WORDS = {2: "two", 3: "three", 4: "four"}
TOLERANCE = 0.03


def draw(rng, presets) -> Draw:
    chips = presets.parameter["expert_parallel_chips"].value
    spans = [s for s in SPANS if chips.to("chip").m % s == 0]  # GPUs split evenly: whole racks
    model, hardware, span = rng.choice(MODELS), rng.choice(RACKS), rng.choice(spans)
    case = dict(
        model=model,
        hardware=hardware,
        precision="fp8",
        batch_size=Q_(rng.choice(BATCHES), "sequence"),
        expert_parallel_chips=chips,
        n_chips=chips,
        presets=presets,
    )
    spec = presets.get("model", model)
    layers = Q_(spec.layers, "layer")
    k, experts, d = spec.experts_active, spec.experts_routed, spec.d_model
    detail = evaluate("alltoall_bytes_per_token", detailed=True, **case)
    bytes_per_token = detail.value.to("kB/token")
    b_out = detail.inputs["activation_bytes_per_value"].value.to("byte/value").m  # FP8
    b_back = detail.inputs["combine_bytes_per_value"].value.to("byte/value").m  # BF16
    one = evaluate("alltoall_time", **case, racks_spanned=Q_(1, "rack")).to("µs")
    short = dict(case, context_length=Q_(1, "token/sequence"))  # the weights' FLOPs alone
    step_compute = evaluate("compute_time", **short).to("µs")
    layer = (step_compute / layers.m).to("µs")
    reads = evaluate("weight_fetch_time", detailed=True, **short)
    require(reads.inputs["expert_read_fraction"].value.m > 0.99, "the batch reads every expert")
    reads = reads.value.to("µs")
    require(step_compute > 1.2 * reads, "past the crossover: the layer's time is its compute")
    ratio = (one / layer).to("").m
    require(ratio < 1, "inside one rack the all-to-all hides behind the compute")
    offrack = evaluate("offrack_fraction", racks_spanned=Q_(span, "rack")).to("").m
    penalty = 1 / (offrack * ratio)  # the off-rack share, slowed by it, takes the layer's time
    at = dict(case, racks_spanned=Q_(span, "rack"), scale_out_penalty=Q_(penalty, ""))
    slowdown = evaluate("multi_rack_slowdown", **at).to("").m
    spanned = evaluate("alltoall_time", **at).to("µs")
    require(abs((spanned / layer).to("").m - 1) < 1e-6, "the port just keeps up")
    f = figures(**case)
    hw = presets.get("hardware", hardware)
    up, out = hw.scale_up_bandwidth_per_direction, hw.scale_out_bandwidth_per_direction
    port = (up / penalty).to("Gbit/s")
    rack = chip_name(presets, hardware)
    name = presets.get("model", model).name
    words = SPAN_WORDS[span]

    text = (
        f"{name} sends each token to {quantity(Q_(k, 'expert'))} of {number(experts)} in each of "
        f"its MoE layers; its activations are {number(d)} values wide, it has "
        f"{quantity(layers)} and {quantity(f['n_total'], 3)} in all, "
        f"{quantity(f['n_active'], 3)} active per token, and you run it in FP8, sending "
        "activations to the experts in FP8 and their outputs back in BF16. Its expert layers "
        f"are spread over {quantity(chips)} of {rack} racks, whose GPUs each have "
        f"{quantity(up, 3)} of NVLink per direction, {quantity(f['mem_bandwidth'], 3)} of HBM "
        f"and {quantity(f['flops'].to('PFLOP/s'), 3)} of dense FP8 math. A decode step runs a "
        f"batch of {quantity(case['batch_size'])}, one token each, with contexts so short that "
        "attention's FLOPs and the KV cache's reads can be ignored. If each expert layer instead "
        f"spans {words} racks, its GPUs split evenly among them "
        f"({quantity(chips / span)} each), how fast must each GPU's "
        "network port be, per direction, for the layer's all-to-all to take no longer than the "
        "layer's own time on the chips? Answer in Gb/s."
    )
    solution = (
        f"Bytes: each token's activation goes out to its {number(k)} experts and comes back, "
        f"{number(b_out)} byte per value out (FP8) and {number(b_back)} back (BF16): "
        f"{number(k)} × {number(d)} × {number(b_out + b_back)} = "
        f"{quantity(bytes_per_token, 3)} per MoE layer.",
        f"The layer's time: a step's multiplies, two FLOPs per active parameter per token, take "
        f"{quantity(step_compute.to('ms'), 3)} on the {quantity(chips)}; reading every weight "
        "once (at this batch every expert is hit), one byte each, takes "
        f"{quantity(reads.to('ms'), 3)}. The batch is past the crossover, so the multiplies "
        "set the step; shared over its "
        f"{quantity(layers)}, a layer's time is {quantity(layer, 3)}.",
        f"In one rack the batch's bytes leave {quantity(chips)} at {quantity(up, 3)} each: "
        f"{quantity(one, 3)}. So in one rack the all-to-all takes "
        f"{number(ratio, 3)} of the layer's time. Both grow with the batch and shrink with the "
        "chips alike, so neither changes that share.",
        f"Over {words} racks, a token's expert sits in another rack {number(offrack, 3)} of the "
        f"time. Those bytes cross the network while the rest ride NVLink at once, so the layer "
        f"waits for the slower share: {number(offrack, 3)} × penalty × {quantity(one, 3)}. "
        f"Setting that equal to {quantity(layer, 3)} gives a penalty of at most "
        f"{number(penalty, 3)} (the all-to-all is then {number(slowdown, 3)} times the one-rack "
        "time).",
        f"So the port must reach {quantity(up, 3)} / {number(penalty, 3)} = "
        f"**{quantity(port, 4)}** per direction, {number((port / out).to('').m, 2)} times "
        f"the {quantity(out, 3)} this rack's GPUs have.",
    )
    sparsity = (f["n_total"] / f["n_active"]).to("").m
    summed = (layer - (1 - offrack) * one) / (offrack * one)  # if the two shares added
    mistakes = (
        Mistake(
            port.to("GB/s").m * Q_(1, "Gbit/s"),
            "That is the rate in gigabytes per second: a network port is quoted in bits, "
            "eight to the byte.",
        ),
        Mistake(
            port * b_out / (b_out + b_back),
            "You counted the dispatch only: the experts' outputs come back too (the combine).",
        ),
        Mistake(
            port / 2,
            "A link's rate is per direction: sending and receiving at once do not double it.",
        ),
        Mistake(
            port / offrack,
            "Not every byte leaves the rack: a token's expert is in its own rack one time in "
            f"{words}.",
        ),
        Mistake(
            port / sparsity,
            "You gave the layer every parameter's FLOPs: a token multiplies only its active "
            "parameters.",
        ),
        Mistake(
            (up * offrack * one * layers.m / reads).to("Gbit/s"),
            "You gave the layer the weight reads' time: at this batch the multiplies take "
            "longer, and the all-to-all may fill the layer's whole step.",
        ),
        Mistake(
            port * step_compute / (step_compute + reads),
            "You gave the layer its weight reads plus its multiplies: they overlap, so the "
            "layer takes the longer of the two.",
        ),
        Mistake(
            port * 2 * b_back / (b_out + b_back),
            "The dispatch goes out in FP8, one byte per value, not BF16's two.",
        ),
        Mistake(  # reader 26: the outputs sent back in FP8 (the statement says BF16)
            port * 2 * b_out / (b_out + b_back),
            "The combine comes back in BF16, two bytes per value, not FP8's one.",
        ),
        Mistake(
            (up / summed).to("Gbit/s"),
            "You added the on-rack and off-rack times: the two kinds of link move bytes at "
            "once, so the layer waits for the slower, not the sum.",
        ),
    )
    # over four racks a BF16 dispatch and every byte off the rack both give 4/3 the port, by
    # construction, whatever the draw: one message names both (reader 26)
    if abs(2 * b_back / (b_out + b_back) * offrack - 1) < TOLERANCE:
        both = Mistake(
            port / offrack,
            "Two slips give this value: not every byte leaves the rack (a token's expert is in "
            f"its own rack one time in {words}), and the dispatch goes out in FP8, one byte per "
            "value, not BF16's two.",
        )
        mistakes = tuple(m for m in mistakes if "FP8, one byte per value, not BF16" not in m.why)
        mistakes = tuple(both if "Not every byte" in m.why else m for m in mistakes)
    combine = mistakes[-2]  # it lands apart from every other slip: one message per value
    require(
        all(
            abs((m.value / combine.value).to("").m - 1) >= 2 * TOLERANCE
            for m in mistakes
            if m is not combine
        ),
        "the combine in FP8 lands on a value of its own",
    )
    gaps = [abs((m.value / port).to("").m - 1) for m in mistakes]
    require(not any(TOLERANCE < g < 2 * TOLERANCE for g in gaps), "every slip clear or inside")
    mistakes = distinct_mistakes(mistakes, port, TOLERANCE)
    return Draw(
        text=text,
        answer=port,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
        hint="Is the layer's time set by its weight reads or its multiplies? Compare one "
        "layer's all-to-all inside one rack with that time; then ask how much slower the "
        "off-rack share may move.",
    )
