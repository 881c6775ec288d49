"""Long-context training: with checkpointing, how long a sequence fits beside the state?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "The longest sequence one GPU can train on"
USES = (
    "training_state_memory",
    "layer_activation_bytes",
    "checkpoint_activation_memory",
    "full_activation_memory",
)
LECTURE = "2:04:02"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
SHARDS = (32, 64, 128, 256)


def draw(rng, presets) -> Draw:
    while True:  # the sharded state must leave at least a quarter of the HBM
        model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        shards = rng.choice(SHARDS)
        chip, model = presets.get("hardware", hardware), presets.get("model", model_id)
        state = get("training_state_memory").evaluate(model=model_id, presets=presets).to("GB")
        room = (chip.hbm_capacity - state / shards).to("GB")
        if room > chip.hbm_capacity / 4:
            break
    unit = Q_(1024, "token/sequence")  # everything is linear in the context: evaluate at 1K
    one = Q_(1, "sequence")
    case = dict(
        model=model_id, precision="bf16", batch_size=one, context_length=unit, presets=presets
    )
    ckpt = get("checkpoint_activation_memory").evaluate_detailed(**case)
    per_layer = ckpt.inputs["layer_activation_bytes"].value.to("kB/token")
    layers = int(ckpt.inputs["n_layers"].value.m)
    buffer_detail = get("full_activation_memory").evaluate_detailed(n_layers=1, **case)
    buffer = buffer_detail.value
    stored = buffer_detail.inputs["activation_bytes_factor"].value.to("byte/value")
    per_value = ckpt.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    per_param = (state / model.params_total).to("byte/parameter")
    per_token = ((ckpt.value + buffer) / (unit * one)).to("MB/token")
    ckpt_token = (ckpt.value / (unit * one)).to("MB/token")
    buffer_token = (buffer / (unit * one)).to("MB/token")
    longest = (room / per_token).to("token")
    d = model.d_model
    text = (
        f"You train {model.name} ({layers} layers, residual width {d:,}) one sequence per "
        f"GPU on {chip.name} GPUs ({quantity(chip.hbm_capacity)} of HBM), with its "
        f"mixed-precision Adam state sharded evenly over {shards} GPUs. Activations are BF16 "
        "and their layer inputs checkpointed at the best segment count; the layer "
        f"being differentiated also holds about {quantity(stored)} of residual stream per "
        "token. How long a sequence fits in what the state leaves free? Answer in tokens."
    )
    solution = (
        f"State: {quantity(per_param)} × {quantity(model.params_total)} = "
        f"{quantity(state)}; 1/{shards} per GPU leaves {quantity(room)}.",
        f"A layer's input is {int(d):,} values × {quantity(per_value)} = "
        f"{quantity(per_layer)}. Checkpointing at √{layers} segments keeps twice √{layers} ≈ "
        f"{number(2 * layers**0.5, 3)} layers' worth: {quantity(ckpt_token.to('kB/token'))}.",
        f"The working layer adds {quantity(stored)} × {int(d):,} values = "
        f"{quantity(buffer_token.to('kB/token'))}: {quantity(per_token.to('kB/token'))} in "
        "all, every term linear in the length.",
        f"{quantity(room)} / {quantity(per_token.to('kB/token'))} ≈ **{quantity(longest, 4)}**.",
    )
    mistakes = (
        Mistake(
            (room / ckpt_token).to("token"),
            "You left out the working buffer of the layer being differentiated: "
            f"{quantity(buffer_token.to('kB/token'))} beside the checkpoints' "
            f"{quantity(ckpt_token.to('kB/token'))}.",
        ),
        Mistake(
            (room / (ckpt_token / 2 + buffer_token)).to("token"),
            "Checkpointing keeps twice √L layers' worth (the checkpoints and one segment), not √L.",
        ),
        Mistake(
            (chip.hbm_capacity / per_token).to("token"),
            "You forgot the GPU's share of the training state.",
        ),
    )
    return Draw(
        text=text,
        answer=longest,
        solution=solution,
        tolerance=0.02,
        mistakes=tuple(m for m in mistakes if abs((m.value / longest).to("").m - 1) > 0.02),
        hint="Bytes per token of context under checkpointing, plus the working layer.",
    )
