"""The memory wall in one line: a very long conversation's cache alone fills several GPUs."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "estimate"
TITLE = "One very long conversation against HBM"
USES = ("gqa_kv_values_per_token", "kv_bytes_per_token", "kv_cache_per_sequence")

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b", "qwen3_235b_a22b")
CHIPS = ("h100_sxm", "h200", "b200")
CONTEXTS = (1_000_000, 2_000_000, 4_000_000)
FACTOR = 1.6  # graded within ×1.6: the ×2 slips (K and V once, one byte per value) fall outside


def draw(rng, presets) -> Draw:
    name = rng.choice(MODELS)
    hardware = rng.choice(CHIPS)
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    model = presets.get("model", name)
    chip = presets.get("hardware", hardware)
    chip_name = chip.name.split(" (")[0]

    counted = get("gqa_kv_values_per_token").evaluate_detailed(model=name, presets=presets)
    values, pair = counted.value, counted.inputs["kv_vectors_per_token"].value
    per_token = get("kv_bytes_per_token").evaluate_detailed(model=name, presets=presets)
    per_value = per_token.inputs["kv_bytes_per_value"].value
    per_token = per_token.value.to("kB/token")
    one = Q_(1, "sequence")
    cache = (
        get("kv_cache_per_sequence").evaluate(model=name, context_length=context, presets=presets)
        * one
    ).to("GB")
    chips = (cache / chip.hbm_capacity * Q_(1, "chip")).to("chip")

    millions = f"{number(context.to('Mtoken/sequence').magnitude)} million tokens"
    text = (
        f"A provider considers stretching {model.name}'s context window to {millions}. The "
        f"model has {number(model.layers)} "
        f"layers, each with {number(model.n_kv_heads)} KV heads of {number(model.head_dim)} "
        f"values, and caches in BF16. Roughly how many {chip_name} GPUs' worth of HBM "
        f"({quantity(chip.hbm_capacity)} each) would the KV cache of one conversation that fills "
        "the window take, before any weights are stored?"
    )
    solution = (
        f"Each token caches a key and a value per KV head per layer: "
        f"{number(pair.magnitude)} × {number(model.n_kv_heads)} × {number(model.head_dim)} × "
        f"{number(model.layers)} ≈ {quantity(values, 2)}, at {quantity(per_value)} in BF16: "
        f"about {quantity(per_token, 2)}.",
        f"Times {millions}: about {quantity(cache, 2)} for this one conversation. Batching "
        "shares weights between users, never caches, so a context this long leaves no room "
        "to batch: the memory wall behind the plateau of context windows.",
        f"Over {quantity(chip.hbm_capacity)} per GPU, that is about **{quantity(chips, 2)}**.",
    )
    mistakes = (
        Mistake(
            chips / 2,
            "You counted the keys only, or one byte per value; each KV head caches a key and a "
            "value, and BF16 is two bytes.",
        ),
        Mistake(
            chips / 4,
            "You counted one vector per KV head and one byte per value; both are two.",
        ),
        Mistake(
            chips / model.layers,
            "You counted one layer's cache; every layer keeps its own.",
        ),
    )
    return Draw(
        hint=(
            "Bytes per token of context first (a key and a value per KV head per layer), then"
            " the whole window, then divide by one GPU's HBM."
        ),
        text=text,
        answer=chips,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
    )
