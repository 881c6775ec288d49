"""Cutting a MoE between layers: the hop to the next rack against the experts' own traffic."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Is a pipeline cut cheap next to the all-to-all?"
USES = ("moe_layers_per_stage", "hardware_scale_out_penalty", "scaleup_scaleout_ratio")
LECTURE = "47:12"

# models whose FP8 weights overflow one domain's HBM, so the pipeline is needed, not chosen
MODELS = ("deepseek_v3", "kimi_k2")
CHIPS = ("h100_sxm", "h200", "b200", "b300")  # on these presets only H100 servers are too small
STAGES = (2, 4, 8)


def _weights(model, chip, presets):
    """FP8 weights and one scale-up domain's HBM."""
    fp8 = presets.get("precision", "fp8").bytes_per_value
    weights = (model.params_total * fp8 * Q_(1, "value/param")).to("GB")
    return weights, (chip.hbm_capacity * chip.scale_up_domain / Q_(1, "chip")).to("GB")


def draw(rng, presets) -> Draw:
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # what an engine fills
    options = []
    for m in MODELS:
        for h in CHIPS:
            weights, domain = _weights(presets.get("model", m), presets.get("hardware", h), presets)
            for n in STAGES:
                # needs two domains; fits in n, each filled to at most the usable share
                if weights > domain and n * usable * domain > weights:
                    options.append((m, h, n))
    model_id, hardware, n = rng.choice(options)
    stages = Q_(n, "stage")
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    weights, domain = _weights(model, chip, presets)
    case = dict(hardware=hardware, model=model_id, pipeline_stages=stages, presets=presets)
    penalty_detail = get("hardware_scale_out_penalty").evaluate_detailed(
        hardware=hardware, presets=presets
    )
    penalty = penalty_detail.value.to("")
    up = penalty_detail.inputs["scale_up_bandwidth"].value.to("GB/s")
    out = penalty_detail.inputs["scale_out_bandwidth"].value
    detail = get("scaleup_scaleout_ratio").evaluate_detailed(scale_out_penalty=penalty, **case)
    ratio = detail.value.to("")
    k = detail.inputs["experts_active"].value.m
    layers = detail.inputs["n_layers"].value.m
    dense = detail.inputs["dense_layers"].value.m
    moe_per_stage = detail.inputs["moe_layers_per_stage"].value.m
    p = int(stages.m)
    name = chip.name.replace(" (per GPU)", "")
    bits = Q_(1, "byte").to("bit").m  # bits to a byte
    lecture_penalty = presets.get("parameter", "scale_out_penalty").value.to("").m
    dense_text = (
        (
            f"Its first layer of {layers:g} is dense (no experts)"
            if dense == 1
            else f"Its first {dense:g} of {layers:g} layers are dense (no experts)"
        )
        + f"; the rest are MoE layers that route each token to {k:g} experts."
        if dense
        else f"All {layers:g} of its layers are MoE layers that route each token to {k:g} experts."
    )

    fp8 = presets.get("precision", "fp8").bytes_per_value.to("byte/value").m
    comb = presets.parameter["combine_bytes_per_value"].value.to("byte/value").m
    gpus = int(chip.scale_up_domain.m)
    away = (gpus - 1) / gpus  # a token's routed experts off its own GPU, spread evenly

    def solve(moe_layers=moe_per_stage, pen=penalty.m, dispatch=fp8, combine=comb, off=away):
        """The stage's all-to-all time over the hop's, per token: each MoE layer sends the
        token's activation to its k experts (dispatch) and back (combine), the share ``off``
        of them leaving the GPU over NVLink; one activation hops over the network."""
        return moe_layers * k * off * (dispatch + combine) / (fp8 * pen)

    answer = Q_(solve(), "")
    require(abs(answer.m / ratio.m * 2 * fp8 / (fp8 + comb) / away - 1) < 1e-9, "the equation")
    text = (
        f"You serve {model.name} in FP8 ({quantity(weights)} of weights, more than the "
        f"{quantity(domain)} of HBM in one {number(gpus)}-GPU server) on "
        f"{name} GPUs, each with {quantity(up)} of NVLink bandwidth "
        f"per direction inside its server and its own {quantity(out.to('Gb/s'))} network "
        f"link to other servers. {dense_text} The layers are cut into {p} pipeline stages, "
        "one server each (count a stage's MoE layers as their average over the stages), and "
        "each layer's experts are spread evenly over the server's GPUs. An MoE layer "
        "dispatches a token's activation to its experts in FP8 and combines their outputs "
        "back in BF16; between stages the activation hops in FP8. Time each transfer as its "
        "bytes over the sending GPU's own link. How many times longer does a stage spend per "
        "token on its experts' traffic than on the hop to the next stage?"
    )
    solution = (
        f"Per GPU, scale-out is slower than scale-up by {quantity(up)} over "
        f"{quantity(out.to('Gb/s'))}, which is {quantity(out.to('GB/s'))} "
        f"({number(bits)} bits to a byte): a factor of {number(penalty.m)}.",
        f"A stage holds {number(layers / p)} layers on average"
        + (
            f", but only the MoE ones do an all-to-all: ({layers:g} − {dense:g}) / {p} = "
            f"{number(moe_per_stage)} per stage."
            if dense
            else f", all with experts: {number(moe_per_stage)} MoE layers per stage."
        ),
        f"Each MoE layer sends a token's activation to its {k:g} experts and back. With the "
        f"experts spread over {number(gpus)} GPUs, one in {number(gpus)} sits on the token's "
        f"own GPU and moves nothing, so {k:g} × {number(gpus - 1)}/{number(gpus)} = "
        f"{number(k * away)} round trips leave it, each {number(fp8)} byte out (FP8) and "
        f"{number(comb)} back (BF16) per value: {number(k * away * (fp8 + comb))} bytes per "
        f"value per layer, against {number(fp8)} for the hop.",
        "The activation's width cancels, and so does the bandwidth once the penalty is "
        f"counted: {number(moe_per_stage)} × {number(k * away * (fp8 + comb))} / "
        f"({number(fp8)} × {number(penalty.m)}) = **{number(answer.m)}**. The hop is that many "
        "times cheaper, so the cut costs little.",
    )
    candidates = [
        (
            solve(pen=penalty.m / bits),
            f"You read the network's gigabits per second as gigabytes; {number(bits)} bits "
            f"make a byte, so scale-out is {number(bits)} times slower than that.",
        ),
        (
            solve(off=1),
            f"One expert in {number(gpus)} sits on the token's own GPU: its dispatch and "
            "combine never touch NVLink.",
        ),
        (
            solve(dispatch=fp8, combine=fp8),
            "You counted the combine at one byte a value, like the dispatch; it is sent "
            f"back in BF16, {number(comb)} bytes.",
        ),
        (
            solve(off=1, combine=fp8),
            "That is the lecture's ratio, 2k layers over the penalty, as it stands: it counts "
            "the same bytes every way and every expert off the GPU; build it from this "
            "stage's bytes instead.",
        ),
        (
            solve(combine=0),
            "Each MoE layer moves a token's activation twice per expert: out "
            "to the expert (dispatch) and back (combine).",
        ),
        (
            solve(pen=lecture_penalty),
            "You used the lecture's round eightfold penalty; this "
            "GPU's own links give a different one.",
        ),
    ]
    lecture = (  # the lecture's ratio with its own round penalty, as a student brings it
        "That is the lecture's ratio, 2k layers over its round eightfold penalty, as it "
        "stands: it counts the same bytes every way and every expert off the GPU, and this "
        "GPU's own links give a different penalty; build it from this stage's bytes instead."
    )
    candidates.append((solve(off=1, combine=fp8, pen=lecture_penalty), lecture))
    if dense:
        candidates.append(
            (
                solve(moe_layers=layers / p),
                "The dense layers have no experts and no all-to-all; count only the MoE layers.",
            )
        )
        candidates.append(
            (solve(moe_layers=layers / p, off=1, combine=fp8, pen=lecture_penalty), lecture)
        )
    # every figure is given exactly (whole layers, experts, the penalty), so half a percent
    # holds a student's rounding to three figures, keeps the lecture's eightfold penalty (9/8
    # here) apart from the experts on the token's own GPU (8/7), and names Kimi K2's one dense
    # layer counted (61/60)
    tolerance = 0.005
    # every slip reruns the whole ratio: it lands twice the window away (named), never between
    require(
        all(abs(v / answer.m - 1) >= 2 * tolerance for v, _ in candidates),
        "every slip lands clear of the window",
    )
    mistakes = [Mistake(Q_(v, ""), why) for v, why in candidates]
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=tolerance,
        mistakes=distinct_mistakes(mistakes, answer, tolerance),
        hint="Count the bytes each transfer moves per token, and how much slower the slow link is.",
    )
