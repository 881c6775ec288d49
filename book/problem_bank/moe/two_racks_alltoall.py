"""One expert layer's all-to-all, inside one rack and spread over two."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate
from units import Q_

KIND = "multi"
TITLE = "Spreading an expert layer over two racks"
USES = (
    "alltoall_bytes_per_token",
    "hardware_scale_out_penalty",
    "offrack_fraction",
    "multi_rack_slowdown",
    "alltoall_time",
)
LECTURE = "32:09"

# Apart from port_for_spanning_racks's models, so one draw never asks the same all-to-all twice.
MODELS = ("deepseek_v3", "kimi_k2")
RACKS = ("gb200_nvl72", "gb300_nvl72")
BATCHES = (1024, 2048, 4096, 8192)


def draw(rng, presets) -> Draw:
    model, hardware = rng.choice(MODELS), rng.choice(RACKS)
    batch = Q_(rng.choice(BATCHES), "sequence")
    chips = Q_(64, "chip")
    case = dict(
        model=model,
        hardware=hardware,
        precision="fp8",
        batch_size=batch,
        expert_parallel_chips=chips,
        presets=presets,
    )
    penalty = evaluate("hardware_scale_out_penalty", detailed=True, **case)
    up, out = (
        penalty.inputs["scale_up_bandwidth"].value,
        penalty.inputs["scale_out_bandwidth"].value,
    )
    pi = penalty.value.to("").m
    two = dict(case, racks_spanned=Q_(2, "rack"), scale_out_penalty=penalty.value)
    one_rack = evaluate("alltoall_time", **dict(two, racks_spanned=Q_(1, "rack"))).to("µs")
    answer = evaluate("alltoall_time", detailed=True, **two)
    used = answer.inputs
    per_token = used["alltoall_bytes"].value.to("kB/token")
    k, d = used["experts_active"].value, used["d_model"].value
    b_out = used["activation_bytes_per_value"].value.to("byte/value").m  # FP8 dispatch
    b_back = used["combine_bytes_per_value"].value.to("byte/value").m  # BF16 combine
    answer = answer.value.to("µs")
    f = used["offrack_fraction"].value.to("").m
    name, rack = (
        presets.get("model", model).name,
        presets.get("hardware", hardware).name.replace(" (per GPU)", ""),
    )

    text = (
        f"{name} routes each token to {quantity(k)} per MoE layer, with activations of "
        f"{number(d.m)} values; you run it in FP8 and, as DeepSeek-V3 does, send activations to "
        "the experts in FP8 and their outputs back in BF16. Its experts are spread over "
        f"{quantity(chips)} "
        f"of {rack} racks, whose GPUs each have {quantity(up.to('GB/s'), 3)} of NVLink per "
        f"direction and a network port of {quantity(out.to('Gbit/s'), 3)} per direction. A "
        f"decode step of {quantity(batch)} (one token each) passes through one MoE layer. How "
        "long does that layer's all-to-all (dispatch and combine) take when its experts span "
        "two racks, half the chips in each? Answer in microseconds."
    )
    solution = (
        f"Each token's activation goes to each of its {quantity(k)} and comes back: "
        f"{number(k.m)} × {number(d.m)} values × ({number(b_out)} byte out in FP8 + "
        f"{number(b_back)} back in BF16) = {quantity(per_token, 3)}.",
        f"In one rack the batch's bytes spread over the {quantity(chips)}, each sending at "
        f"{quantity(up.to('GB/s'), 3)}: {quantity(one_rack, 3)}.",
        f"The network port is {quantity(out.to('Gbit/s'), 3)} = "
        f"{quantity(out.to('GB/s'), 3)} per direction, so scale-out is {number(pi, 3)} times "
        "slower than NVLink per chip.",
        f"With two racks a token's expert is in the other rack half the time. The on-rack half "
        f"takes {number(1 - f, 2)} of the one-rack time, the off-rack half {number(f, 2)} × "
        f"{number(pi, 3)} = {number(f * pi, 3)} of it; the two kinds of link work at once, so "
        f"the layer waits for the slower: **{quantity(answer, 3)}**.",
    )
    mistakes = (
        Mistake(
            one_rack, "That is the one-rack time: half the tokens now cross the slower network."
        ),
        Mistake(
            one_rack * (1 - f + f * pi),
            "You added the on-rack and off-rack times: they "
            "run on separate links at once, so the layer waits for the slower, not the sum.",
        ),
        Mistake(
            one_rack * f * 8,
            "That uses the lecture's round 8x; this rack's own ports make "
            "scale-out slower than that.",
        ),
        Mistake(
            answer / 8, "The network port's rate is in bits per second: divide by eight for bytes."
        ),
        Mistake(
            answer * b_out / (b_out + b_back),
            "You counted the dispatch only: the experts' outputs come back too (the combine).",
        ),
        Mistake(
            answer / 2,
            "A link's rate is per direction: sending and receiving at once do not double it.",
        ),
        Mistake(
            one_rack * pi,
            "You sent every token's bytes over the network: with two racks, a token's expert "
            "is in its own rack half the time.",
        ),
        Mistake(
            answer * 2 * b_out / (b_out + b_back),
            "The combine comes back in BF16, two bytes per value, not FP8's one.",
        ),
        Mistake(
            answer * 2 * b_back / (b_out + b_back),
            "The dispatch goes out in FP8, one byte per value, not BF16's two.",
        ),
    )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        # every figure is given exactly: 2% grades the arithmetic and keeps the summed links
        # (one eighteenth over the answer on a 400 Gb/s port) twice the window away
        tolerance=0.02,
        mistakes=distinct_mistakes(mistakes, answer, 0.02),
        hint="Find the one-rack time first, then ask what share of the bytes leave the "
        "rack and how much slower they move.",
    )
