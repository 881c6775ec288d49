"""Cutting a MoE between layers: the hop to the next rack against the experts' own traffic."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
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

    text = (
        f"You serve {model.name} in FP8 ({quantity(weights)} of weights, more than the "
        f"{quantity(domain)} of HBM in one {number(chip.scale_up_domain.m)}-GPU server) on "
        f"{name} GPUs, each with {quantity(up)} of NVLink bandwidth "
        f"per direction inside its scale-up domain and its own {quantity(out.to('Gb/s'))} network "
        f"link to other domains. {dense_text} The layers are cut into {p} pipeline stages, "
        "one scale-up domain each, with the experts of each layer spread over the domain; "
        "count a stage's MoE layers as their average over the stages"
        + (" (a dense layer does no all-to-all)" if dense else "")
        + ", so the answer does not hang on where the cuts fall. Time each transfer as its "
        "bytes over the sending GPU's own link, per direction. How many times longer does a "
        "stage spend per token on its experts' all-to-all traffic than on sending the "
        "activation on to the next stage?"
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
        f"Each MoE layer sends a token's activation to its {k:g} experts and back: "
        f"{2 * k:g} activations per token per layer over the fast links. Between stages one "
        "activation crosses the slow link. The activation's size and the bandwidth cancel, "
        f"leaving {2 * k:g} × {number(moe_per_stage)} / {number(penalty.m)} = "
        f"**{number(ratio.m)}**: the hop is that many times cheaper, so the cut costs little.",
    )
    mistakes = [
        Mistake(
            ratio * bits,
            f"You read the network's gigabits per second as gigabytes; {number(bits)} bits "
            f"make a byte, so scale-out is {number(bits)} times slower than that.",
        ),
        Mistake(
            ratio / 2,
            "Each MoE layer moves a token's activation twice per expert: out "
            "to the expert and back (dispatch and combine).",
        ),
        Mistake(
            ratio * penalty.m / lecture_penalty,
            "You used the lecture's round eightfold penalty; this "
            "GPU's own links give a different one.",
        ),
    ]
    if dense:
        mistakes.append(
            Mistake(
                ratio * layers / (layers - dense),
                "The dense layers have no experts and no all-to-all; count only the MoE layers.",
            )
        )
    kept = tuple(m for m in mistakes if abs((m.value / ratio).to("").m - 1) > 0.02)
    return Draw(
        text=text,
        answer=ratio,
        solution=solution,
        tolerance=0.02,
        mistakes=kept,
        hint="Count the activations each crosses per token, and how much slower the slow link is.",
    )
