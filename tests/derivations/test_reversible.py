"""Chapter G: Feistel and RevNet inverses, activation memory and the recompute cost."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from derivations import get
from units import ChalkboardError

f = sp.Function("f")
x, y, z = sp.symbols("feistel_x feistel_y feistel_z", positive=True)


def test_feistel_round_trip_for_any_f():
    forward_z = y + f(x)
    inverse = get("feistel_inverse").rhs
    assert sp.simplify(inverse.subs(z, forward_z) - y) == 0


NON_INVERTIBLE = [lambda v: v * v, np.sin, lambda v: math.floor(v), lambda v: 3.0]


@given(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.sampled_from(NON_INVERTIBLE))
def test_feistel_inverse_numerically_with_non_invertible_f(xv, yv, fn):
    zv = yv + fn(xv)
    inverse = sp.lambdify([x, z], get("feistel_inverse").rhs, modules=[{"f": fn}, "math"])
    assert inverse(xv, zv) == pytest.approx(yv, abs=1e-9 * (1 + abs(zv)))


def test_revnet_block_round_trip():
    xr, yr = sp.symbols("revnet_x revnet_y", positive=True)
    x1, y1 = sp.symbols("revnet_x_next revnet_y_next", positive=True)
    forward = {x1: yr + f(xr), y1: xr}
    recovered_y = get("revnet_inverse").rhs.subs(forward)
    assert sp.simplify(recovered_y - yr) == 0


def test_arbitrary_function_equations_refuse_evaluation():
    with pytest.raises(ChalkboardError, match="verified symbolically"):
        get("feistel_inverse").evaluate()


@pytest.mark.parametrize("model", ["llama_3_1_8b", "llama_3_1_70b", "deepseek_v3"])
def test_reversible_saving_is_the_layer_count(model):
    kw = dict(model=model, batch_size=4)
    plain = get("activation_memory").evaluate(**kw)
    rev = get("revnet_activation_memory").evaluate(**kw)
    from units.presets import load

    assert (plain / rev).to("").m == pytest.approx(load().get("model", model).layers)


def test_activation_memory_by_hand():
    # Llama 3.1 70B: 80 layers x 8192 values x 2 bytes x 8192 tokens, one sequence
    got = get("activation_memory").evaluate(model="llama_3_1_70b", batch_size=1)
    assert got.to("byte").m == 80 * 8192 * 2 * 8192


def test_recompute_costs_a_third_more():
    kw = dict(model="kimi_k2")
    ratio = get("revnet_training_flops").evaluate(**kw) / get("training_flops").evaluate(**kw)
    assert ratio.to("").m == pytest.approx(8 / 6)


def test_layer_activation_bytes_by_hand():
    # one residual-stream vector of d_model values at 2 bytes (BF16)
    got = get("layer_activation_bytes").evaluate(model="llama_3_1_70b")
    assert got.to("byte/token/layer").m == 8192 * 2


def test_checkpointing_at_equal_compute_by_hand():
    # Issue 11, item 6: a reversible network keeps the last layer's activations (not nothing).
    # Llama 3.1 70B (80 layers, d_model 8192, BF16), one sequence of 8192 tokens: one layer is
    # 8192 x 8192 x 2 bytes = 0.134 GB; sqrt(80) checkpoints plus a segment of sqrt(80) layers
    # keep 2 sqrt(80) layers' worth = 2.40 GB, against 80 layers' worth = 10.7 GB.
    kw = dict(model="llama_3_1_70b", batch_size=1)
    one_layer = 8192 * 8192 * 2
    assert get("revnet_activation_memory").evaluate(**kw).to("byte").m == pytest.approx(one_layer)
    got = get("checkpoint_activation_memory").evaluate(**kw).to("byte").m
    assert got == pytest.approx(2 * math.sqrt(80) * one_layer)


@given(st.integers(4, 512), st.floats(1e6, 1e12))
def test_checkpoint_segments_step_minimises_the_memory(layers, one_input):
    # The derivation's step K = sqrt(n_layers) (layer inputs only) is the K that minimises
    # K a + L a / K: no whole K either side of it holds less than the continuous optimum.
    steps = get("checkpoint_activation_memory").derivation.steps
    k_step = next(
        s.relation for s in steps if {v.name for v in s.relation.rhs.free_symbols} == {"n_layers"}
    )
    k = float(k_step.rhs.subs({v: layers for v in k_step.rhs.free_symbols}))
    assert k == pytest.approx(math.sqrt(layers))

    def held(kk):
        return kk * one_input + layers * one_input / kk

    assert held(k) <= min(held(math.floor(k)), held(math.ceil(k))) * (1 + 1e-12)
    assert held(k) == pytest.approx(2 * math.sqrt(layers) * one_input)


@given(st.integers(4, 512))
def test_checkpointing_sits_between_revnet_and_plain_backprop(layers):
    # 2 sqrt(L) <= L from four layers on (below that, checkpointing does not pay)
    kw = dict(model="llama_3_1_70b", batch_size=1)
    deep = dict(kw, n_layers=f"{layers} layer")
    rev = get("revnet_activation_memory").evaluate(**kw).to("B").m
    ckpt = get("checkpoint_activation_memory").evaluate(**deep).to("B").m
    plain = get("activation_memory").evaluate(**deep).to("B").m
    assert rev < ckpt <= plain * (1 + 1e-9)


# Llama layers' activations counted tensor by tensor, by hand from the published configs
# (hidden_size, num_attention_heads x head_dim, num_key_value_heads x head_dim,
# intermediate_size): norms 4 d, Q and attention output 2 h d_h, K and V 2 h_KV d_h, SwiGLU 4 d_ff
# values per token, at 2 bytes, over d.
@pytest.mark.parametrize(
    "model, expected",
    [
        ("llama_3_1_70b", 2 * (4 * 8192 + 2 * 8192 + 2 * 1024 + 4 * 28672) / 8192),  # 40.5
        ("llama_3_1_8b", 2 * (4 * 4096 + 2 * 4096 + 2 * 1024 + 4 * 14336) / 4096),  # 41
        ("llama_3_1_405b", 2 * (4 * 16384 + 2 * 16384 + 2 * 1024 + 4 * 53248) / 16384),  # 38.25
    ],
)
def test_gated_activation_bytes_by_hand(model, expected):
    got = get("gated_activation_bytes_factor").evaluate(model=model)
    assert got.to("byte/value").m == pytest.approx(expected, rel=1e-12)


def test_a_gpt_shaped_layer_would_count_korthikanti_s_bytes_without_dropout():
    # a GPT layer has h_KV = h and h d_h = d; its GeLU MLP of 4 d keeps two tensors of 4 d where
    # SwiGLU keeps four of d_ff, so d_ff = 2 d puts the same 16 d values in the MLP. Korthikanti
    # et al.'s 34 bytes less their two 1-byte dropout masks is 32
    d = 4096
    got = get("gated_activation_bytes_factor").evaluate(
        activation_bytes_per_value="2 byte/value",
        d_model=f"{d} value",
        n_heads="32 head",
        n_kv_heads="32 head",
        head_dim="128 value/head",
        d_ff=f"{2 * d} value",
    )
    assert got.to("byte/value").m == pytest.approx(34 - 2, rel=1e-12)
