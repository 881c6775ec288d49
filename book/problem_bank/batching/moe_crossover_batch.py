"""The batch at which an MoE stops paying for its weight reads: sparsity times the chip's ratio."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, evaluate, require

KIND = "numeric"  # one formula, worked in steps
TITLE = "When does an MoE stop being bound by its weights?"
USES = ("weight_fetch_time", "compute_time", "crossover_batch")
LECTURE = "15:16"

MODELS = ("deepseek_v3", "qwen3_235b_a22b", "kimi_k2", "gpt_oss_120b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
PRECISIONS = ("bf16", "fp8")


def draw(rng, presets) -> Draw:
    model, hardware, precision = rng.choice(MODELS), rng.choice(CHIPS), rng.choice(PRECISIONS)
    case = dict(hardware=hardware, model=model, precision=precision, presets=presets)
    result = evaluate("crossover_batch", detailed=True, **case)
    used = result.inputs
    flops, bandwidth = used["flops"].value, used["mem_bandwidth"].value
    total, active = used["n_total"].value, used["n_active"].value
    per_value = used["weight_bytes_per_value"].value
    answer = result.value.to("sequence")
    chip, name = presets.get("hardware", hardware).name, presets.get("model", model).name
    words = "BF16" if precision == "bf16" else "FP8"
    per_byte = (flops / bandwidth).to("FLOP/B")
    sparsity = (total / active).to("").magnitude
    saturation = evaluate("expert_saturation_batch", **case).to("sequence")
    require(answer > 4 * saturation, "every expert must be read at the crossover batch")

    text = (
        f"You serve {name} ({quantity(total, 3)} in all, {quantity(active, 3)} active per "
        f"token) on {chip} GPUs, weights and math in {words}. The chip does "
        f"{quantity(flops.to('TFLOP/s'), 4)} at this precision and reads HBM at "
        f"{quantity(bandwidth.to('TB/s'), 3)}. Ignoring the KV cache and attention, at what "
        "batch does a decode step's arithmetic take as long as reading the weights? Answer in "
        "sequences."
    )
    solution = (
        "A step reads every weight once (at a batch this large every expert is hit), whatever "
        f"the batch: {quantity(total, 3)} × {quantity(per_value)} over the bandwidth.",
        "Its arithmetic is two FLOPs (one multiply-add) per active parameter per sequence: "
        f"B × twice {quantity(active, 3)}, over the FLOP rate.",
        "Set the two equal: B = (FLOP rate / bandwidth) × (bytes per weight / two FLOPs) × "
        f"(total / active). Here {quantity(per_byte, 3)} × {quantity(per_value)} / two FLOPs "
        f"× {number(sparsity, 3)}.",
        f"The chip count cancels (more chips speed both sides alike): **{quantity(answer, 4)}**.",
    )
    dense = (answer / sparsity).to("sequence")
    mistakes = (
        Mistake(
            dense,
            "That is a dense model's crossover: multiply by the sparsity, total over "
            "active parameters, since every weight is read but only the active ones compute.",
        ),
        Mistake(
            answer * 2,
            "You counted one FLOP per parameter (a multiply-add is two FLOPs)"
            + (", or two bytes per FP8 weight (FP8 stores one)." if precision == "fp8" else "."),
        ),
    )
    if precision == "bf16":
        mistakes += (Mistake(answer / 2, "BF16 stores two bytes per weight, not one."),)
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=0.03,
        mistakes=mistakes,
        hint="Write the weight-read time and the compute time as functions of the batch, and "
        "set them equal.",
    )
