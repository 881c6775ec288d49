"""Chapter A: properties of every equation over realistic ranges, plus hand-checked presets."""

import functools

import numpy as np
import pytest
import sympy as sp
from hypothesis import assume, example, given
from hypothesis import strategies as st

from derivations import get, to_latex
from derivations.inputs import reachable
from tests import strategies as s
from units import Q_, ChalkboardError


@functools.cache
def reads(eq_id: str) -> frozenset[str]:
    """What an evaluation of ``eq_id`` may read: found once per equation, not once per call."""
    return frozenset(reachable(get(eq_id)))


def ev(eq_id, **kw):
    """Evaluate with those of ``kw`` that ``eq_id`` reads (evaluate rejects the others)."""
    wanted = reads(eq_id)
    return get(eq_id).evaluate(**{k: v for k, v in kw.items() if k in wanted or k in PRESET_ARGS})


PRESET_ARGS = ("hardware", "model", "precision", "price")


@given(s.machine_and_model(), s.batch_size, s.log_uniform(low=1.01, high=100))
def test_times_grow_with_batch(inputs, batch, factor):
    for eq_id in ("compute_time", "kv_fetch_time", "memory_time", "step_time"):
        small = ev(eq_id, **inputs, batch_size=batch)
        large = ev(eq_id, **inputs, batch_size=batch * factor)
        assert large >= small


@given(s.machine_and_model(), s.batch_size)
def test_step_time_is_the_brute_force_max(inputs, batch):
    kw = dict(inputs, batch_size=batch)
    brute = max(
        ev("compute_time", **kw).to("s").magnitude,
        (ev("weight_fetch_time", **kw) + ev("kv_fetch_time", **kw)).to("s").magnitude,
    )
    assert ev("step_time", **kw).to("s").magnitude == pytest.approx(brute, rel=1e-12)


@given(s.machine_and_model())
def test_at_the_crossover_compute_equals_weight_fetch(inputs):
    # B* is the short-context limit (no attention FLOPs) with every expert read
    inputs["attention_flops_per_token"] = Q_(1e-30, "FLOP/token")
    b_star = ev("crossover_batch", **inputs)
    skip = 1 - inputs["experts_active"].m / inputs["experts_routed"].m
    assume(skip**b_star.m < 1e-12)
    compute = ev("compute_time", **inputs, batch_size=b_star)
    weights = ev("weight_fetch_time", **inputs, batch_size=b_star)
    assert compute.to("s").magnitude == pytest.approx(weights.to("s").magnitude, rel=1e-9)


@given(s.machine_and_model())
def test_at_the_compute_bound_batch_compute_equals_memory_and_crosses_it(inputs):
    """Below the batch, memory binds; above it, compute; at it they are equal (every expert
    read: the draws where routing leaves experts unread are skipped)."""
    try:
        b_kv = ev("compute_bound_batch", **inputs)
    except ChalkboardError as err:  # past the KV = compute context: no such batch
        assert "no batch makes the step compute-bound" in str(err)
        one = dict(inputs, batch_size=Q_(1, "sequence"))  # a sequence's KV outlasts its compute
        assert ev("compute_time", **one) <= ev("kv_fetch_time", **one)
        return
    skip = 1 - inputs["experts_active"].m / inputs["experts_routed"].m
    assume(skip ** (0.5 * b_kv.m) < 1e-12)
    for factor, compute_binds in ((0.5, False), (1.0, None), (2.0, True)):
        kw = dict(inputs, batch_size=b_kv * factor)
        compute = ev("compute_time", **kw).to("s").m
        memory = ev("memory_time", **kw).to("s").m
        if compute_binds is None:
            assert compute == pytest.approx(memory, rel=1e-9)
        else:
            assert (compute > memory) == compute_binds


@given(s.machine_and_model())
def test_the_compute_bound_batch_is_b_star_at_no_context_and_grows_with_it(inputs):
    inputs["attention_flops_per_token"] = Q_(1e-30, "FLOP/token")
    b_star = ev("crossover_batch", **inputs)
    one = dict(inputs, batch_size=Q_(1, "sequence"), context_length=Q_(1, "token/sequence"))
    assume(ev("compute_time", **one) > ev("kv_fetch_time", **one))  # a crossover exists
    tiny = ev("compute_bound_batch", **dict(inputs, context_length=Q_(1e-9, "token/sequence")))
    assert tiny.to("sequence").m == pytest.approx(b_star.to("sequence").m, rel=1e-6)
    short = ev("compute_bound_batch", **dict(inputs, context_length=Q_(1, "token/sequence")))
    assert short > b_star  # each sequence's KV reads push the turn to a larger batch


def test_compute_bound_batch_on_the_chapter_example():
    """DeepSeek-V3 on H100 at FP8 with 8,192 tokens of context: 9,185 sequences, as the
    newcomer's review found by sweeping compute and memory time (reviews/newcomer.md, b1)."""
    case = dict(hardware="h100_sxm", model="deepseek_v3", precision="fp8")
    b_kv = get("compute_bound_batch").evaluate(**case, context_length="8192 token/sequence")
    assert round(b_kv.to("sequence").m) == 9185
    phi = get("expert_read_fraction").evaluate(model="deepseek_v3", batch_size=b_kv)
    assert phi.m > 1 - 1e-12  # the assumption holds: every expert is read


@given(s.machine_and_model(), s.log_uniform(low=0.1, high=10))
def test_crossover_scales_with_flops_and_inversely_with_bandwidth(inputs, k):
    base = ev("crossover_batch", **inputs).magnitude
    more_flops = dict(inputs, flops=inputs["flops"] * k)
    more_bandwidth = dict(inputs, mem_bandwidth=inputs["mem_bandwidth"] * k)
    assert ev("crossover_batch", **more_flops).magnitude == pytest.approx(base * k, rel=1e-9)
    assert ev("crossover_batch", **more_bandwidth).magnitude == pytest.approx(base / k, rel=1e-9)


@given(s.machine_and_model(), s.log_uniform(low=1e-3, high=1e3))
def test_crossover_depends_on_sparsity_not_size(inputs, scale):
    bigger = dict(inputs, n_total=inputs["n_total"] * scale, n_active=inputs["n_active"] * scale)
    assert ev("crossover_batch", **bigger).magnitude == pytest.approx(
        ev("crossover_batch", **inputs).magnitude, rel=1e-9
    )


@given(s.machine_and_model(), s.batch_size, s.log_uniform(low=1.01, high=100))
def test_cost_per_token_falls_with_batch_toward_its_floor(inputs, batch, factor):
    small = ev("cost_per_token", **inputs, batch_size=batch)
    large = ev("cost_per_token", **inputs, batch_size=batch * factor)
    assert large <= small * (1 + 1e-12)
    # Hand-derived floor as B grows: p x max((2 N_active + a L) / F, L k / W), per chip-second.
    p = inputs["price_per_chip_hour"].to("USD/chip/s").magnitude
    attention = inputs["attention_flops_per_token"].to("FLOP/token").m * inputs["context_length"].m
    compute = (2 * inputs["n_active"].magnitude + attention) / inputs["flops"].to("FLOP/s").m
    kv = (
        inputs["context_length"].magnitude
        * inputs["kv_bytes_per_token"].to("B/token").magnitude
        / inputs["mem_bandwidth"].to("B/s").magnitude
    )
    floor = p * max(compute, kv)
    assert small.to("USD/token").magnitude >= floor * (1 - 1e-12)
    huge = ev("cost_per_token", **inputs, batch_size=Q_(1e15, "sequence"))
    assert huge.to("USD/token").magnitude == pytest.approx(floor, rel=1e-3)


@given(s.machine_and_model(), s.batch_size, s.n_chips)
def test_cost_per_token_does_not_depend_on_chip_count(inputs, batch, chips):
    a = ev("cost_per_token", **inputs, batch_size=batch)
    b = ev("cost_per_token", **dict(inputs, n_chips=chips), batch_size=batch)
    assert a.magnitude == pytest.approx(b.magnitude, rel=1e-9)


@given(s.machine_and_model(), s.batch_size)
def test_throughput_times_step_time_is_the_batch(inputs, batch):
    tokens = ev("throughput", **inputs, batch_size=batch) * ev(
        "step_time", **inputs, batch_size=batch
    )
    assert tokens.to("token").magnitude == pytest.approx(batch.magnitude, rel=1e-12)


@given(s.period)
def test_worst_case_latency_is_twice_the_period(period):
    assert ev("worst_case_latency", train_period=period).to("s").magnitude == pytest.approx(
        2 * period.to("s").magnitude, rel=1e-12
    )


@given(s.hbm_capacity, s.mem_bandwidth)
@example(Q_(288, "GB"), Q_(20, "TB/s"))
def test_drain_time_is_capacity_over_bandwidth(capacity, bandwidth):
    t = ev("hbm_drain_time", hbm_capacity=capacity, mem_bandwidth=bandwidth)
    assert t.to("s").magnitude == pytest.approx(
        capacity.to("B").magnitude / bandwidth.to("B/s").magnitude, rel=1e-12
    )


SOLVABLE = {
    "crossover_batch": ("flops", "mem_bandwidth", "n_total", "n_active", "weight_bytes_per_value"),
    "hbm_drain_time": ("hbm_capacity", "mem_bandwidth"),
    "compute_time": ("flops", "n_active", "batch_size", "n_chips"),
    "weight_fetch_time": ("n_total", "mem_bandwidth", "weight_bytes_per_value"),
    "cost_per_token": ("price_per_chip_hour", "step_time"),
}
SOLVED = {(e, x): get(e).solve_for(x) for e, xs in SOLVABLE.items() for x in xs}


@given(st.sampled_from(sorted(SOLVED)), s.machine_and_model(), s.batch_size)
def test_solve_for_round_trips(pair, inputs, batch):
    eq_id, unknown = pair
    eq, solved = get(eq_id), SOLVED[pair]
    given_ = {
        k: v
        for k, v in dict(inputs, batch_size=batch, step_time=Q_(20, "ms")).items()
        # what the equation reads, directly or through an intermediate it inlines (the weight
        # fetch reads batch_size through the share of experts the batch touches)
        if k in {x.name for x in eq.inputs} | {a.name for a in eq._fused(frozenset())[1]}
    }
    out = eq.evaluate(**given_)
    back = solved.evaluate(
        **{k: v for k, v in given_.items() if k != unknown}, **{eq.lhs.name: out}
    )
    assert back.to_base_units().magnitude == pytest.approx(
        given_[unknown].to_base_units().magnitude, rel=1e-9
    )


# Independent hand computations from facts.md figures (not from the presets or the code).
def test_crossover_on_presets_matches_hand_computation():
    # H100 SXM: 989.4 TFLOP/s BF16 dense, 3.35 TB/s; DeepSeek-V3: 671B total, 37B active.
    hand = 989.4e12 / 3.35e12 * 671 / 37  # about 5,356 (lecture.md: "B* ~ 5,400")
    assert ev(
        "crossover_batch", hardware="h100_sxm", model="deepseek_v3"
    ).magnitude == pytest.approx(hand, rel=1e-9)
    # At FP8 the FLOP/s double and the bytes per weight halve: the crossover stays put.
    hand_fp8 = 1978.9e12 / 3.35e12 * 671 / 37 * (1 / 2)
    assert ev(
        "crossover_batch", hardware="h100_sxm", model="deepseek_v3", precision="fp8"
    ).magnitude == pytest.approx(hand_fp8, rel=1e-9)


def test_lecture_drain_times():
    # lecture.md: Rubin 288 GB / 20 TB/s = 14.4 ms; B300 288/8 = 36 ms.
    assert ev("hbm_drain_time", hardware="rubin").to("ms").magnitude == pytest.approx(14.4)
    assert ev("hbm_drain_time", hardware="b300").to("ms").magnitude == pytest.approx(36)


def test_lecture_worst_case_latency():
    assert ev("worst_case_latency").to("ms").magnitude == pytest.approx(40)  # 2 x 20 ms


def test_cost_per_token_on_presets_by_hand():
    # GB200, Llama 3.1 405B at BF16, B = 1, the lecture's 2 USD per chip-hour, 8,192 tokens of
    # context: weight fetch 405.9e9 x 2 B over 8 TB/s per chip, plus KV 8192 x 516,096 B.
    seconds_per_chip = (405.9e9 * 2 + 8192 * 516096) / 8e12
    hand = 2 / 3600 * seconds_per_chip  # USD per token
    got = ev("cost_per_token", hardware="gb200_nvl72", model="llama_3_1_405b", batch_size=1)
    assert got.to("USD/token").magnitude == pytest.approx(hand, rel=1e-9)


def test_sweep_over_a_million_batches_is_monotone():
    batches = np.geomspace(1, 1e6, 1_000_000)
    cost = get("cost_per_token").sweep(
        "batch_size", batches, hardware="h100_sxm", model="deepseek_v3"
    )
    assert cost.shape == (1_000_000,)
    assert np.all(np.diff(cost.magnitude) <= 1e-12 * cost.magnitude[:-1])


@given(s.machine_and_model())
def test_ridge_times_bytes_per_flop_is_the_dense_crossover(inputs):
    dense = dict(inputs, n_active=inputs["n_total"])
    ridge = ev("ridge_intensity", **dense).to("FLOP/byte").magnitude
    # 2 FLOP per weight
    bytes_per_flop = inputs["weight_bytes_per_value"].to("byte/value").magnitude / 2
    assert ev("crossover_batch", **dense).magnitude == pytest.approx(
        ridge * bytes_per_flop, rel=1e-9
    )


@given(s.machine_and_model(), s.batch_size)
def test_default_chips_hold_the_weights_and_kv_with_less_than_one_spare(inputs, batch):
    inputs.pop("n_chips"), inputs.pop("price_per_chip_hour")
    kw = dict(inputs, batch_size=batch)
    fit = ev("chips_to_fit", **kw).to("chip").magnitude
    stored = (
        inputs["n_total"].magnitude * inputs["weight_bytes_per_value"].to("B/value").magnitude
        + batch.magnitude
        * inputs["context_length"].magnitude
        * inputs["kv_bytes_per_token"].to("B/token").magnitude
    )
    assert fit * inputs["hbm_capacity"].to("B").magnitude == pytest.approx(stored, rel=1e-9)
    used = get("step_time").evaluate_detailed(**kw).inputs["n_chips"].value.magnitude
    assert fit <= used < fit + 1


# -- an MoE's batch touches only some experts (issue 11, item 3) -------------------------------


@given(s.experts(), s.batch_size, s.log_uniform(low=1.01, high=100))
def test_distinct_experts_grow_with_batch_up_to_all_of_them(routing, batch, factor):
    small = ev("experts_touched", **routing, batch_size=batch).m
    large = ev("experts_touched", **routing, batch_size=batch * factor).m
    e, k = routing["experts_routed"].m, routing["experts_active"].m
    assert small <= large * (1 + 1e-12)
    assert large <= e * (1 + 1e-12)
    assert ev("experts_touched", **routing, batch_size=1).m == pytest.approx(k, rel=1e-9)
    assert ev("experts_touched", **routing, batch_size=1e6).m == pytest.approx(e, rel=1e-9)


def test_distinct_experts_of_deepseek_by_hand():
    # DeepSeek-V3 (models.toml): 8 of 256 routed experts per token. One token touches 8; a
    # hundred touch 256 (1 - (1 - 8/256)^100), about 245.
    assert ev("experts_touched", model="deepseek_v3", batch_size=1).m == pytest.approx(8)
    hand = 256 * (1 - (1 - 8 / 256) ** 100)
    assert ev("experts_touched", model="deepseek_v3", batch_size=100).m == pytest.approx(hand)
    assert hand == pytest.approx(245.3, abs=0.05)
    assert ev("expert_saturation_batch", model="deepseek_v3").m == pytest.approx(256 / 8)


def test_the_share_of_experts_read_is_shown_in_the_lecture_notation_and_computed_robustly():
    eq = get("expert_read_fraction")
    # shown: one minus the chance that all u B tokens (nu = 1 vector each) skip an expert
    assert eq.latex() == r"\phi_{B} = 1 - \left(1 - \frac{k}{E_{r}}\right)^{B u \nu}"
    expanded = to_latex(get("weight_fetch_time").expanded())
    assert r"\left(1 - \frac{k}{E_{r}}\right)^{B u \nu}" in expanded
    assert all(r"\log" not in t and r"\max" not in t for t in (eq.latex(), expanded))
    # computed: still the exponential over max(1, E_r), finite at any batch and for a dense model
    assert eq.rhs.has(sp.exp) and eq.rhs.has(sp.Max)
    assert ev("expert_read_fraction", model="deepseek_v3", batch_size=1e12).m == 1
    assert ev("expert_read_fraction", model="llama_3_1_70b", batch_size=64).m == 0
    eq.check()  # the form shown equals the one computed where E_r >= 1


DENSE = [m.id for m in s.PRESETS.model.values() if m.get("experts_routed") is None]
MOE = [m.id for m in s.PRESETS.model.values() if m.get("experts_routed") is not None]


@pytest.mark.parametrize("model", DENSE)
@pytest.mark.parametrize("batch", [1, 7, 300, 10_000])
def test_a_dense_model_reads_every_weight_at_any_batch(model, batch):
    # exactly the lecture's N_total b / (n W), whatever the batch
    kw = dict(hardware="h100_sxm", model=model, batch_size=batch, n_chips="1 chip")
    m = s.PRESETS.get("model", model)
    hand = m.params_total.to("parameter").m * 2 / 3.35e12  # BF16, H100 3.35 TB/s
    assert ev("weight_fetch_time", **kw).to("s").m == pytest.approx(hand, rel=1e-15)
    assert ev("routed_weight_share", model=model).m == 0


@pytest.mark.parametrize("model", MOE)
def test_an_moe_reads_every_weight_only_at_large_batch(model):
    kw = dict(hardware="h100_sxm", model=model, n_chips="1 chip")
    everything = s.PRESETS.get("model", model).params_total.to("parameter").m * 2 / 3.35e12
    huge = ev("weight_fetch_time", **kw, batch_size=1e6).to("s").m
    assert huge == pytest.approx(everything, rel=1e-12)  # the lecture's limit
    one = ev("weight_fetch_time", **kw, batch_size=1).to("s").m
    assert one < everything / 3


def test_deepseek_reads_about_its_active_parameters_at_batch_one():
    # DeepSeek-V3 (models.toml): routed experts 58 MoE layers x 256 x 3 x 7168 x 2048; each
    # token reads 8 of them plus everything else (attention, the shared expert, 3 dense layers,
    # embeddings) -- about N_active = 37B, not N_total = 671B.
    routed = 58 * 256 * 3 * 7168 * 2048
    assert ev("routed_expert_params", model="deepseek_v3").to("parameter").m == routed
    kw = dict(hardware="h100_sxm", model="deepseek_v3", n_chips="1 chip", batch_size=1)
    read = ev("weight_fetch_time", **kw).to("s").m * 3.35e12 / 2  # parameters read, BF16
    assert 37e9 <= read <= 37e9 * 1.1


@pytest.mark.parametrize("model", [*DENSE, *MOE])
def test_batching_gain_is_about_the_ridge_for_every_model(model):
    # cost at one sequence over the cost once compute-bound, at a short context (no KV, no
    # attention): (F / W) (b / c_fwd) (parameters read at B = 1 / N_active), about 295 on an
    # H100 at BF16 (989.4 TFLOP/s / 3.35 TB/s, 2 bytes per 2 FLOP), for any model
    short = dict(context_length="1 token/sequence", hardware="h100_sxm", model=model)
    gain = ev("cost_per_token", **short, batch_size=1) / ev("compute_cost_floor", **short)
    assert 0.97 * 989.4 / 3.35 < gain.to("").m < 1.15 * 989.4 / 3.35


HARDWARE_BF16 = [h.id for h in s.PRESETS.hardware.values() if h.get("dense_flops_bf16")]


@pytest.mark.parametrize("hardware", HARDWARE_BF16)
@pytest.mark.parametrize("model", MOE)
def test_the_closed_form_crossover_is_the_exact_root_on_every_preset(hardware, model):
    # B* assumes every expert is read: check (1 - k/E)^B* is negligible, and that bisection on
    # compute = weight fetch (short context) lands on the closed form.
    kw = dict(hardware=hardware, model=model, attention_flops_per_token="1e-30 FLOP/token")
    b_star = ev("crossover_batch", **kw).m
    m = s.PRESETS.get("model", model)
    assert (1 - m.experts_active / m.experts_routed) ** b_star < 1e-6
    assert b_star > 20 * m.experts_routed / m.experts_active

    def gap(b):  # b: an array of batches, evaluated in one call each
        return (
            ev("compute_time", **kw, batch_size=b) - ev("weight_fetch_time", **kw, batch_size=b)
        ).m

    low, high = 1.0, 10 * b_star
    ends = gap(np.array([low, high]))
    assert ends[0] < 0 < ends[1]
    # bisection 1024 ways at once: four rounds narrow [1, 10 B*] as far as 40 halvings would
    for _ in range(4):
        grid = np.linspace(low, high, 1025)
        first = int(np.argmax(gap(grid) >= 0))  # the first batch where compute catches up
        assert first > 0
        low, high = grid[first - 1], grid[first]
    assert low == pytest.approx(b_star, rel=1e-6)


def test_cost_curve_is_nearly_flat_up_to_the_saturation_batch():
    # Up to B = E/k = 32 each DeepSeek sequence brings its own experts: only the always-read
    # 2.5% of the weights (about 17B of the 37.5B read at B = 1) is shared, so the cost per token
    # falls about 2.8x (37.5 / (17.1/32 + 654 x (1 - (31/32)^32) / 32)); a dense model's falls
    # the full 32x. Past E/k the MoE's falls as 1/B too.
    kw = dict(hardware="h100_sxm", context_length="1 token/sequence")
    one, sat = (ev("cost_per_token", **kw, model="deepseek_v3", batch_size=b).m for b in (1, 32))
    assert 2.5 < one / sat < 3.1
    dense = [ev("cost_per_token", **kw, model="llama_3_1_70b", batch_size=b).m for b in (1, 32)]
    assert dense[0] / dense[1] == pytest.approx(32, rel=1e-3)  # one token of KV aside
    later = [ev("cost_per_token", **kw, model="deepseek_v3", batch_size=b).m for b in (256, 512)]
    assert later[0] / later[1] == pytest.approx(2, rel=0.01)


# -- attention FLOPs (issue 11, item 4) -------------------------------------------------------


def test_compute_time_counts_mla_attention_by_hand():
    # DeepSeek-V3 (models.toml): 128 heads, kv_lora_rank 512, rope 64, 61 layers. Absorbed MLA
    # decode: 2 FLOP x 128 x (512 + 64 + 512) x 61 per context token, besides 2 x 37e9 for the
    # weights. One sequence at 8,192 tokens on one H100 at BF16 (989.4 TFLOP/s):
    per_context_token = 2 * 128 * (512 + 64 + 512) * 61
    hand = (2 * 37e9 + per_context_token * 8192) / 989.4e12
    kw = dict(hardware="h100_sxm", model="deepseek_v3", batch_size=1, n_chips="1 chip")
    assert ev("compute_time", **kw).to("s").m == pytest.approx(hand, rel=1e-9)
    # equal to the weights' 2 N_active at about 4.4K tokens
    assert ev("decode_attention_context", model="deepseek_v3").to(
        "token/sequence"
    ).m == pytest.approx(2 * 37e9 / per_context_token, rel=1e-9)
    assert 4300 < 2 * 37e9 / per_context_token < 4400


def test_gqa_attention_flops_by_hand():
    # Llama 3.1 70B: 64 query heads of 128, 80 layers: QK and AV, 2 FLOP each per value
    per_token = ev("gqa_attention_flops", model="llama_3_1_70b").to("FLOP/token").m
    assert per_token == pytest.approx(2 * 2 * 64 * 128 * 80, rel=1e-12)
    # gpt-oss-120b: only its 18 global layers grow with the context
    assert ev("gqa_attention_flops", model="gpt_oss_120b").to("FLOP/token").m == (
        pytest.approx(2 * 2 * 64 * 64 * 18, rel=1e-12)
    )


@given(s.machine_and_model(), s.batch_size, s.log_uniform(low=1.01, high=100))
def test_compute_time_is_affine_in_context(inputs, batch, factor):
    kw = dict(inputs, batch_size=batch)
    length = inputs["context_length"]
    t = [
        ev("compute_time", **dict(kw, context_length=length * f)).m
        for f in (1, factor, 2 * factor - 1)
    ]
    assert t[1] - t[0] == pytest.approx(t[2] - t[1], rel=1e-9)
    assert t[1] > t[0]


def test_multiplies_per_weight_byte_is_the_same_at_bf16_and_fp8():
    # Issue 11, item 5, facts.md H100: 989.4 TFLOP/s x 2 bytes and 1978.9 TFLOP/s x 1 byte, each
    # over 2 FLOP x 3.35 TB/s: 295.3 at both precisions, where F / W alone doubles at FP8.
    bf16 = ev("dense_crossover_batch", hardware="h100_sxm").to("sequence").m
    fp8 = ev("dense_crossover_batch", hardware="h100_sxm", precision="fp8").to("sequence").m
    assert bf16 == pytest.approx(989.4e12 * 2 / (2 * 3.35e12))
    assert fp8 == pytest.approx(1978.9e12 * 1 / (2 * 3.35e12))
    assert fp8 / bf16 == pytest.approx(1, rel=1e-3)


@given(s.machine_and_model())
def test_crossover_is_multiplies_per_weight_byte_times_sparsity(inputs):
    factor = ev("dense_crossover_batch", **inputs).to("sequence").m
    sparsity = (inputs["n_total"] / inputs["n_active"]).to("").m
    assert ev("crossover_batch", **inputs).to("sequence").m == pytest.approx(
        factor * sparsity, rel=1e-9
    )


def test_throughput_per_sequence_is_one_token_per_drain_time():
    # Lecture: Rubin 288 GB / 20 TB/s = 14.4 ms -> 69.4 tokens/s per sequence (the "64 B"
    # rounds the step to 15.6 ms); H100 80 GB / 3.35 TB/s -> 41.9 (facts.md).
    rubin = get("throughput_per_sequence").evaluate(hardware="rubin")
    h100 = get("throughput_per_sequence").evaluate(hardware="h100_sxm")
    assert rubin.to("token/s/sequence").m == pytest.approx(20e3 / 288)
    assert h100.to("token/s/sequence").m == pytest.approx(3.35e3 / 80)


@given(s.hbm_capacity, s.mem_bandwidth, s.batch_size)
def test_throughput_per_sequence_times_batch_is_the_replica_throughput(cap, bw, batch):
    rate = get("throughput_per_sequence").evaluate(hbm_capacity=cap, mem_bandwidth=bw)
    drain = get("hbm_drain_time").evaluate(hbm_capacity=cap, mem_bandwidth=bw)
    total = get("throughput").evaluate(batch_size=batch, step_time=drain)
    assert (rate * batch).to("token/s").m == pytest.approx(total.to("token/s").m, rel=1e-9)
