"""Order of magnitude: reversibility trades time for memory. Rebuilding a layer's input takes
far longer than writing it to HBM and reading it back would: it buys capacity, never time."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from derivations import get
from units import Q_

KIND = "estimate"
TITLE = "Rebuild a layer's input, or store it?"
USES = (
    "layer_activation_bytes",
    "activation_memory",
    "revnet_activation_memory",
    "training_flops",
    "revnet_training_flops",
)
LECTURE = "2:04:02"

MODELS = (
    "llama_3_1_8b",
    "llama_3_1_70b",
    "llama_3_1_405b",
    "mixtral_8x7b",
    "qwen3_235b_a22b",
    "gpt_oss_120b",
)
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
FACTOR = 1.7  # excludes a factor-two slip (the read-back, one byte for two, 4N for 2N)


def draw(rng, presets) -> Draw:
    model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    one = dict(
        model=model_id,
        precision="bf16",
        batch_size=Q_(1, "sequence"),
        context_length=Q_(1, "token/sequence"),
        presets=presets,
    )
    full = get("activation_memory").evaluate_detailed(**one)
    per_value = full.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    layers = int(model.layers)
    stored = full.value.to("byte")  # every layer's input, for one token
    kept = get("revnet_activation_memory").evaluate(**one).to("byte")  # the last output only
    freed = (stored - kept).to("byte")
    # one more forward pass: a multiply and an add per active parameter
    plain = get("training_flops").evaluate(
        model=model_id, training_tokens=Q_(1, "token"), presets=presets
    )
    rev = get("revnet_training_flops").evaluate(
        model=model_id, training_tokens=Q_(1, "token"), presets=presets
    )
    extra = (rev - plain).to("FLOP")
    per_param = (extra / model.params_active).to("FLOP/parameter")
    peak, bandwidth = chip.dense_flops_bf16, chip.hbm_bandwidth
    rebuild = (extra / peak).to("µs")
    traffic = (2 * freed).to("byte")  # written on the way forward, read on the way back
    keep = (traffic / bandwidth).to("ns")
    ratio = (rebuild / keep).to("")
    ridge = (peak / bandwidth).to("FLOP/byte")
    require(ratio.m > 10, "the rebuild is slower than the round trip through HBM")
    d = int(model.d_model)
    sparsity = (model.params_total / model.params_active).to("").m
    moe = sparsity > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    name = chip.name.replace(" (per GPU)", "")
    text = (
        f"You train {model.name} ({params}; {layers} layers, residual width {d:,}) with BF16 "
        f"activations on {name} GPUs. Ordinarily each layer's input is written to HBM on the "
        "way forward and read back on the way back. Made reversible, the network keeps only the "
        "last layer's output and rebuilds each layer's input from its output during the backward "
        "pass. Per token, roughly how many times longer does the rebuilding take than the "
        "HBM traffic it saves, both at the chip's peak rates? Ignore attention; an order of "
        "magnitude is enough."
    )
    solution = (
        f"The rebuild is one more forward pass: {number(per_param.m)} FLOP per active "
        f"parameter, {quantity(extra)} per token, {quantity(rebuild, 3)} at "
        f"the chip's {quantity(peak)} of dense BF16 math.",
        f"What it saves: {layers} − 1 layer inputs of {d:,} values × {quantity(per_value)} "
        f"per token, {quantity(freed.to('kB'), 3)}, written once and read once: "
        f"{quantity(traffic.to('kB'), 3)}, {quantity(keep, 3)} at its "
        f"{quantity(bandwidth)} of HBM bandwidth.",
        f"{quantity(rebuild, 3)} / {quantity(keep, 3)} ≈ **{number(ratio.m, 2)}** times "
        f"longer (exactly {number(ratio.m, 4)}). Put another way, the rebuild spends "
        f"{number((extra / traffic).to('FLOP/byte').m, 3)} FLOPs per byte of HBM traffic "
        "saved, against "
        f"the chip's ridge of {quantity(ridge, 3)}: reversibility buys memory capacity and "
        "pays for it in time.",
    )
    mistakes = [
        Mistake(
            ratio * 2,
            "You counted the stored inputs' traffic once; each is written on the way "
            "forward and read back on the way back.",
        ),
        Mistake(
            ratio * 2,
            f"You counted one byte per BF16 value; it takes {quantity(per_value)}.",
        ),
        Mistake(
            ratio * 3,
            "You charged the rebuild a whole training pass (forward and backward); it is one "
            "forward pass.",
        ),
        Mistake(
            ratio / 2,
            "You charged the rebuild half a forward pass; a forward pass is a multiply and an "
            "add per active parameter.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                ratio * sparsity,
                "You counted every parameter in the rebuild; a token runs through the active "
                f"ones only, {number(sparsity)} times fewer.",
            )
        )
    return Draw(
        text=text,
        answer=ratio,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(mistakes, ratio, FACTOR, factor=True),  # one slip a value
        hint="Time the extra forward pass at the chip's FLOP rate and the saved writes and "
        "reads at its HBM bandwidth.",
    )
