"""Chapters C and D: memory per chip, traffic, latency and the bubble."""

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from derivations import get
from tests import strategies as s
from units import Q_

stages = st.integers(1, 64)
micro = st.integers(1, 512)


def mem(**kw):
    return get("memory_per_gpu").evaluate(**kw).to("byte").m


@given(s.n_total, s.kv_bytes_per_token, s.context_length, s.batch_size, stages)
def test_kv_per_chip_does_not_depend_on_stages(n_total, k, length, micro_batch, p):
    kw = dict(
        n_total=n_total,
        kv_bytes_per_token=k,
        context_length=length,
        micro_batch=micro_batch,
        weight_bytes_per_value=Q_(1, "byte/value"),
    )
    one, many = mem(pipeline_stages=Q_(1, "stage"), **kw), mem(pipeline_stages=Q_(p, "stage"), **kw)
    weights_one = n_total.to("parameter").m / 64  # default E = 64 chips, 1 byte each
    kv = micro_batch.m * length.m * k.to("byte/token").m / 64
    assert one == pytest.approx(weights_one + kv, rel=1e-9)
    assert many == pytest.approx(weights_one / p + kv, rel=1e-9)


def test_p_cancels_symbolically():
    eq = get("memory_per_gpu")
    P = sp.Symbol("pipeline_stages", positive=True)
    kv_term = [
        t for t in eq.rhs.args if sp.Symbol("kv_bytes_per_token", positive=True) in t.free_symbols
    ]
    assert len(kv_term) == 1 and P not in kv_term[0].free_symbols


def test_micro_batch_defaults_to_the_crossover_batch():
    r = get("memory_per_gpu").evaluate_detailed(hardware="gb200_nvl72", model="deepseek_v3")
    assert r.inputs["micro_batch"].origin == "equation micro_batch_size"
    b = get("crossover_batch").evaluate(hardware="gb200_nvl72", model="deepseek_v3")
    assert r.inputs["micro_batch"].value.m == pytest.approx(b.m)


@given(stages, micro)
def test_bubble_limits_and_monotonicity(p, m):
    eq = get("pipeline_bubble_fraction")
    kw = dict(pipeline_stages=Q_(p, "stage"))
    here = eq.evaluate(microbatches=m, **kw).m
    assert here == pytest.approx((p - 1) / (m + p - 1))
    assert 0 <= here < 1
    assert eq.evaluate(microbatches=m + 1, **kw).m <= here
    assert eq.evaluate(microbatches=m, pipeline_stages=Q_(p + 1, "stage")).m > here


def test_one_stage_has_no_bubble():
    assert get("pipeline_bubble_fraction").evaluate(pipeline_stages=Q_(1, "stage")).m == 0


def test_lecture_traffic_ratio_by_hand():
    # (1/8) x 2 x 8 activated experts x 1 MoE layer per stage = 2
    got = get("scaleup_scaleout_ratio").evaluate(
        model="deepseek_v3", moe_layers_per_stage="1 layer"
    )
    assert got.m == pytest.approx(2)


def test_dense_layers_are_not_counted_as_moe_layers():
    # Issue 11, item 6: DeepSeek-V3 has 61 layers of which the first 3 are dense (facts.md), so
    # 4 stages hold (61 - 3) / 4 = 14.5 MoE layers: (1/8) x 2 x 8 x 14.5 = 29 (not 30.5).
    got = get("scaleup_scaleout_ratio").evaluate(model="deepseek_v3", pipeline_stages="4 stage")
    assert got.m == pytest.approx(2 * 8 * (61 - 3) / 4 / 8)


@given(s.log_uniform(low=1, high=64), s.log_uniform(low=1.01, high=100))
def test_traffic_ratio_scales_with_layers_and_penalty(layers, pi):
    eq = get("scaleup_scaleout_ratio")
    base = eq.evaluate(
        model="deepseek_v3", moe_layers_per_stage=Q_(layers, "layer"), scale_out_penalty=pi
    ).m
    double = eq.evaluate(
        model="deepseek_v3", moe_layers_per_stage=Q_(2 * layers, "layer"), scale_out_penalty=pi
    ).m
    assert double == pytest.approx(2 * base)
    assert base == pytest.approx(2 * 8 * layers / pi)


def test_lecture_latency_by_hand():
    # 20 ms + 4 stages x 2.5 ms
    assert get("pipelined_decode_latency").evaluate().to("ms").m == pytest.approx(30)


def test_domain_weight_fetch_falls_with_domain_size():
    # DeepSeek-V3 at FP8: 671 GB over 8 H100s at 3.35 TB/s, or 72 GB200s at 8 TB/s
    h100 = get("domain_weight_fetch_time").evaluate(
        hardware="h100_sxm", model="deepseek_v3", precision="fp8"
    )
    assert h100.to("s").m == pytest.approx(671e9 / (8 * 3.35e12))
    rack = get("domain_weight_fetch_time").evaluate(
        hardware="gb200_nvl72", model="deepseek_v3", precision="fp8"
    )
    assert rack.to("s").m == pytest.approx(671e9 / (72 * 8e12))


def test_one_trillion_parameters_at_one_byte_is_one_terabyte():
    got = get("weight_memory").evaluate(precision="fp8", n_total="1e12 parameter")
    assert got.to("TB").m == pytest.approx(1)


def test_real_hop_latency_barely_moves_the_step():
    # Issue 11, item 6: 2.5 ms per hop is the lecture's guess; at the parameter file's 100 us,
    # 4 stages add 0.4 ms to the 20 ms period: 20.4 ms, not 30 ms.
    from units.presets import load

    hop = load().parameter["hop_latency_network"].value
    got = get("pipelined_decode_latency").evaluate(hop_latency=hop)
    assert got.to("ms").m == pytest.approx(20 + 4 * 0.1)


# -- training memory ---------------------------------------------------------------------------


def test_training_state_is_sixteen_bytes_per_parameter():
    # ZeRO section 3.1: mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes per parameter.
    # Llama 3.1 70B: 70.6e9 x 16 = 1.1296e12 bytes.
    q = get("training_state_memory").evaluate(model="llama_3_1_70b")
    assert q.to("byte").m == pytest.approx(70.6e9 * 16)


def test_activation_memory_with_and_without_recompute_by_hand():
    # Llama 3.1 70B, one sequence of 8,192 tokens: 80 layers x 8,192 x 8,192 values x 34 bytes
    # (Korthikanti et al.) without recompute; x 2 bytes (the layer's BF16 input) with it.
    one = Q_(1, "sequence")
    full = get("full_activation_memory").evaluate(model="llama_3_1_70b", batch_size=one)
    kept = get("activation_memory").evaluate(model="llama_3_1_70b", batch_size=one)
    assert full.to("byte").m == pytest.approx(80 * 8192 * 8192 * 34)
    assert kept.to("byte").m == pytest.approx(80 * 8192 * 8192 * 2)
    total = get("training_memory").evaluate(model="llama_3_1_70b", batch_size=one)
    remat = get("training_memory_recompute").evaluate(model="llama_3_1_70b", batch_size=one)
    assert total.to("byte").m == pytest.approx(70.6e9 * 16 + 80 * 8192 * 8192 * 34)
    assert remat.to("byte").m == pytest.approx(70.6e9 * 16 + 80 * 8192 * 8192 * 2)


@given(s.model_ids, s.batch_size, s.context_length)
def test_recompute_never_needs_more_memory(model, batch, length):
    kw = dict(model=model, batch_size=batch, context_length=length)
    full = get("training_memory").evaluate(**kw).to("byte").m
    remat = get("training_memory_recompute").evaluate(**kw).to("byte").m
    state = get("training_state_memory").evaluate(model=model).to("byte").m
    assert state < remat <= full
    # the saving is the activations' 34 / 2 = 17-fold shrink at BF16
    assert full - state == pytest.approx(17 * (remat - state), rel=1e-9)
