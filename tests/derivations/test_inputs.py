"""Input resolution: presets, overrides, defaults, and the errors for each kind of bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from derivations import get
from tests.strategies import PRESETS, log_uniform
from units import Q_, ChalkboardError


def test_origins_are_recorded():
    r = get("cost_per_token").evaluate_detailed(
        hardware="h100_sxm", model="deepseek_v3", batch_size=64
    )
    assert r.inputs["flops"].origin == "hardware h100_sxm: dense_flops_bf16"
    assert r.inputs["batch_size"].origin == "given"
    assert r.inputs["context_length"].origin.startswith("parameter context_length")
    assert r.inputs["step_time"].origin == "equation step_time"
    assert r.inputs["price_per_chip_hour"].origin.startswith("rental lecture_gpu")
    assert "N1" in r.inputs["flops"].source


def test_missing_input_is_named_with_how_to_give_it():
    with pytest.raises(ChalkboardError, match="missing input 'mem_bandwidth'.*--hardware"):
        get("hbm_drain_time").evaluate(hbm_capacity="80 GB")
    with pytest.raises(ChalkboardError, match="missing input 'batch_size'.*--set batch_size"):
        get("compute_time").evaluate(hardware="h100_sxm", model="deepseek_v3")


def test_unknown_override_suggests_the_closest_input():
    with pytest.raises(ChalkboardError, match="did you mean 'mem_bandwidth'"):
        get("hbm_drain_time").evaluate(hardware="h100_sxm", mem_bandwith="3 TB/s")


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("80 GB", "expected a quantity of [information] / [time]"),
        ("-1 TB/s", "must be positive"),
        ("inf TB/s", "expected a number"),
        (3.35, "mem_bandwidth=3.35 needs a unit, like 3.35 TB/s"),
        (Q_(np.array([1.0, -2.0]), "TB/s"), "positive and finite"),
    ],
)
def test_bad_override_values(value, fragment):
    with pytest.raises(ChalkboardError) as err:
        get("hbm_drain_time").evaluate(hardware="h100_sxm", mem_bandwidth=value)
    assert fragment in str(err.value)


def test_precision_without_a_figure_is_explained():
    with pytest.raises(ChalkboardError, match="no dense fp8 FLOP/s figure .*it has: bf16"):
        get("crossover_batch").evaluate(hardware="a100_sxm", model="deepseek_v3", precision="fp8")


def test_unknown_presets_suggest_the_closest():
    with pytest.raises(ChalkboardError, match="did you mean 'deepseek_v3'"):
        get("crossover_batch").evaluate(hardware="h100_sxm", model="deepseek")
    with pytest.raises(ChalkboardError, match="unknown precision preset 'fp16'"):
        get("crossover_batch").evaluate(hardware="h100_sxm", model="deepseek_v3", precision="fp16")


@given(log_uniform(low=1e10, high=1e14), st.sampled_from(["TB/s", "GB/s", "B/s", "PB/s"]))
def test_unit_invariance_of_inputs(bandwidth, unit):
    reference = get("hbm_drain_time").evaluate(
        hbm_capacity="80 GB", mem_bandwidth=Q_(bandwidth, "B/s")
    )
    other = get("hbm_drain_time").evaluate(
        hbm_capacity="80 GB", mem_bandwidth=Q_(bandwidth, "B/s").to(unit)
    )
    assert other.to("s").magnitude == pytest.approx(reference.to("s").magnitude, rel=1e-12)


# Hand computations from facts.md ("Derived checks"): KV bytes per token in BF16 is
# 2 x layers x kv_heads x head_dim x 2 B for GQA; MLA caches (512 + 64) values per layer.
KV_BF16_BYTES = {
    "llama_3_1_8b": 2 * 32 * 8 * 128 * 2,  # 131,072
    "llama_3_1_70b": 2 * 80 * 8 * 128 * 2,  # 327,680
    "llama_3_1_405b": 2 * 126 * 8 * 128 * 2,  # 516,096
    "qwen3_235b_a22b": 2 * 94 * 4 * 128 * 2,  # 192,512
    "deepseek_v3": 61 * (512 + 64) * 2,  # 70,272
    "gpt_oss_120b": 2 * 18 * 8 * 64 * 2,  # only the 18 global-attention layers grow with context
}


@pytest.mark.parametrize("model, expected", KV_BF16_BYTES.items())
def test_kv_bytes_per_token_from_architecture(model, expected):
    r = get("kv_fetch_time").evaluate_detailed(hardware="h100_sxm", model=model, batch_size=1)
    got = r.inputs["kv_bytes_per_token"].value.to("byte/token").magnitude
    assert got == pytest.approx(expected, rel=1e-12)


def test_kv_values_are_half_the_bytes_at_fp8_and_every_model_has_them():
    for model in PRESETS.model.values():
        values = get("kv_bytes_per_token").evaluate(model=model.id, precision="fp8")
        assert values.to("byte/token").magnitude > 0
    r = get("kv_fetch_time").evaluate_detailed(
        hardware="h100_sxm", model="llama_3_1_8b", precision="fp8", batch_size=1
    )
    assert r.inputs["kv_bytes_per_token"].value.to("byte/token").magnitude == 131072 / 2
    assert r.inputs["kv_bytes_per_token"].origin == "equation kv_bytes_per_token"


def test_default_chip_count_is_the_fewest_that_hold_weights_and_kv():
    r = get("step_time").evaluate_detailed(
        hardware="h100_sxm",
        model="deepseek_v3",
        precision="fp8",
        batch_size=1,
        context_length="1 token",
    )
    # 671e9 one-byte weights (plus one token of KV) over 80e9-byte chips: 8.39 -> 9 chips
    assert r.inputs["n_chips"].value.magnitude == 9


def test_fp4_selects_the_fp4_figure_and_half_a_byte():
    r = get("crossover_batch").evaluate_detailed(
        hardware="gb300_nvl72", model="deepseek_v3", precision="fp4"
    )
    assert r.inputs["flops"].origin == "hardware gb300_nvl72: dense_flops_fp4"
    assert r.inputs["bytes_per_value"].value.to("byte/value").magnitude == 0.5
    hand = 1.1e18 / 72 / 8e12 * 0.5 / 2 * 671 / 37  # facts.md rack FP4, 8 TB/s, DeepSeek-V3
    assert r.value.magnitude == pytest.approx(hand, rel=1e-9)
