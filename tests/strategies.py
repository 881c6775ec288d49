"""Named Hypothesis strategies over realistic ranges, drawn log-uniformly.

Ranges span today's hardware and models with margin: a chip of 10 TFLOP/s to 20 PFLOP/s,
100 GB/s to 50 TB/s of HBM bandwidth, models of 100M to 5T parameters.
"""

import math

from hypothesis import strategies as st

from units import Q_
from units.presets import load


def log_uniform(*, low: float, high: float) -> st.SearchStrategy[float]:
    """Floats whose logarithm is uniform on [log low, log high]."""
    return st.floats(math.log(low), math.log(high)).map(math.exp)


def quantity(*, low: float, high: float, unit: str) -> st.SearchStrategy:
    units = Q_(1, unit).units  # parsed once: pint parses a unit string on every Quantity
    return log_uniform(low=low, high=high).map(lambda x: Q_(x, units))


flops = quantity(low=1e13, high=2e16, unit="FLOP/s")
mem_bandwidth = quantity(low=1e11, high=5e13, unit="byte/s")
hbm_capacity = quantity(low=8e9, high=1e12, unit="byte")
n_total = quantity(low=1e8, high=5e12, unit="parameter")
sparsity = log_uniform(low=1, high=64)
batch_size = quantity(low=1, high=1e5, unit="sequence")
context_length = quantity(low=128, high=2e6, unit="token/sequence")
kv_bytes_per_token = quantity(low=1e3, high=4e6, unit="byte/token")
price = quantity(low=0.5, high=20, unit="USD/chip/hour")
n_chips = quantity(low=1, high=1e4, unit="chip")
period = quantity(low=1e-4, high=1.0, unit="s")
attention_flops = quantity(low=1e4, high=1e8, unit="FLOP/token")  # Llama 8B 0.5M .. MLA 17M
routed_share = log_uniform(low=1e-3, high=0.995)
experts_routed = st.integers(2, 512)
bytes_per_value = st.sampled_from([Q_(b, "byte/value") for b in (0.5, 1.0, 2.0, 4.0)])

PRESETS = load()
hardware_ids = st.sampled_from(PRESETS.ids("hardware"))
hardware_with_flops = st.sampled_from(
    [h.id for h in PRESETS.hardware.values() if h.get("dense_flops_bf16") is not None]
)
model_ids = st.sampled_from(PRESETS.ids("model"))


EXPERT, DIMENSIONLESS = Q_(1, "expert").units, Q_(1, "dimensionless").units


@st.composite
def experts(draw) -> dict:
    """An MoE's routing: E_r routed experts per layer of which each token picks k."""
    routed = draw(experts_routed)
    active = draw(st.integers(1, max(1, routed // 2)))
    return {"experts_routed": Q_(routed, EXPERT), "experts_active": Q_(active, EXPERT)}


@st.composite
def machine_and_model(draw) -> dict:
    """A full set of chapter-A inputs as keyword overrides (an MoE: a routed share of the
    weights and its routing; attention FLOPs per context token)."""
    total = draw(n_total)
    return {
        "attention_flops_per_token": draw(attention_flops),
        "routed_weight_share": Q_(draw(routed_share), DIMENSIONLESS),
        **draw(experts()),
        "flops": draw(flops),
        "mem_bandwidth": draw(mem_bandwidth),
        "hbm_capacity": draw(hbm_capacity),
        "n_total": total,
        "n_active": Q_(total.m / draw(sparsity), total.units),  # total / sparsity
        "weight_bytes_per_value": draw(bytes_per_value),
        "kv_bytes_per_token": draw(kv_bytes_per_token),
        "context_length": draw(context_length),
        "price_per_chip_hour": draw(price),
        "n_chips": draw(n_chips),
    }
