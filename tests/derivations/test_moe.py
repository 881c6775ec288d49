"""Chapter B: experts per chip, the all-to-all, racks and what a domain holds."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from derivations import get
from tests import strategies as s
from units import Q_

penalty = s.log_uniform(low=1.01, high=100)
racks = st.integers(1, 64)


def test_lecture_experts_per_gpu():
    # 256 experts over the lecture's 64 GPUs
    assert get("experts_per_chip").evaluate(model="deepseek_v3").m == 256 / 64


@given(racks)
def test_offrack_fraction_limits(r):
    f = get("offrack_fraction").evaluate(racks_spanned=Q_(r, "rack")).m
    assert f == pytest.approx(1 - 1 / r)
    assert 0 <= f < 1


# With the two links running at once, leaving the rack only slows the layer when the off-rack
# share's time exceeds the one-rack time: from two racks on, that takes a penalty above 2
# (every real chip's is 8 or more).
real_penalty = s.log_uniform(low=2.01, high=100)


def test_a_fast_network_would_make_two_racks_faster():
    # f = 1/2 at two racks: with a penalty of 1.5, max(0.5, 0.75) = 0.75 < 1 (both links help)
    got = get("multi_rack_slowdown").evaluate(racks_spanned=Q_(2, "rack"), scale_out_penalty=1.5)
    assert got.m == pytest.approx(0.75)


@given(racks, real_penalty)
def test_slowdown_is_one_in_one_rack_and_grows_with_racks(r, pi):
    eq = get("multi_rack_slowdown")
    one = eq.evaluate(racks_spanned=Q_(1, "rack"), scale_out_penalty=pi).m
    here = eq.evaluate(racks_spanned=Q_(r, "rack"), scale_out_penalty=pi).m
    more = eq.evaluate(racks_spanned=Q_(r + 1, "rack"), scale_out_penalty=pi).m
    assert one == pytest.approx(1)
    assert one <= here < more <= pi


def test_two_racks_at_eight_times_is_four():
    # Issue 11, item 6: half the traffic at 1x on NVLink and half at 8x on the network ports,
    # at the same time on separate links: max(0.5, 0.5 x 8) = 4 (adding them gave 4.5).
    assert get("multi_rack_slowdown").evaluate().m == pytest.approx(max(0.5, 0.5 * 8))


@given(racks, penalty)
def test_slowdown_is_the_slower_of_the_two_shares(r, pi):
    f = 1 - 1 / r
    got = get("multi_rack_slowdown").evaluate(racks_spanned=Q_(r, "rack"), scale_out_penalty=pi)
    assert got.m == pytest.approx(max(1 - f, f * pi))


@given(s.batch_size, racks, penalty)
def test_alltoall_time_is_one_rack_time_times_slowdown(batch, r, pi):
    kw = dict(model="deepseek_v3", hardware="gb200_nvl72", batch_size=batch, scale_out_penalty=pi)
    many = get("alltoall_time").evaluate(racks_spanned=Q_(r, "rack"), **kw)
    one = get("alltoall_time").evaluate(racks_spanned=Q_(1, "rack"), **kw)
    slow = get("multi_rack_slowdown").evaluate(racks_spanned=Q_(r, "rack"), scale_out_penalty=pi)
    assert (many / one).to("").m == pytest.approx(slow.m, rel=1e-9)


def test_alltoall_bytes_by_hand():
    # DeepSeek-V3: 8 routed experts, d_model 7168. DeepSeek's own scheme dispatches at FP8
    # (1 byte) and combines at BF16 (2 bytes): 8 x 7168 x (1 + 2) = 172,032 bytes, the figure
    # the reader's independent check (reader-moepipe12 report, section 5) found.
    got = get("alltoall_bytes_per_token").evaluate(model="deepseek_v3", precision="fp8")
    assert got.to("byte/token").m == 8 * 7168 * (1 + 2) == 172_032
    # The optimistic variant, FP8 both ways: 2 x 8 x 7168; BF16 both ways: 4 x 8 x 7168.
    fp8_both = get("alltoall_bytes_per_token").evaluate(
        model="deepseek_v3", precision="fp8", combine_bytes_per_value=Q_(1, "byte/value")
    )
    assert fp8_both.to("byte/token").m == 2 * 8 * 7168
    bf16 = get("alltoall_bytes_per_token").evaluate(model="deepseek_v3", precision="bf16")
    assert bf16.to("byte/token").m == 4 * 8 * 7168


def test_domain_memory_by_hand():
    assert get("scaleup_memory").evaluate(hardware="h100_sxm").to("GB").m == pytest.approx(640)
    # GB200 NVL72: 72 chips x 186 GB
    assert get("scaleup_memory").evaluate(hardware="gb200_nvl72").to("TB").m == pytest.approx(
        72 * 0.186
    )


def test_max_params_doubles_from_bf16_to_fp8():
    bf16 = get("max_total_params").evaluate(hardware="gb200_nvl72")
    fp8 = get("max_total_params").evaluate(hardware="gb200_nvl72", precision="fp8")
    assert (fp8 / bf16).to("").m == pytest.approx(2)


# Issue 11, item 2: per chip and per direction (facts.md): NVLink 900 GB/s bidi = 450 GB/s each
# way, 1.8 TB/s bidi = 900; a 400 Gb/s port is 50 GB/s each way, 800 Gb/s 100 GB/s; MI300X
# Infinity Fabric 448 GB/s per direction as published.
PENALTY_BY_HAND = {
    "h100_sxm": 450 / 50,
    "h200": 450 / 50,
    "b200": 900 / 50,
    "gb200_nvl72": 900 / 50,
    "b300": 900 / 100,
    "gb300_nvl72": 900 / 100,
    "mi300x": 448 / 50,
}


@pytest.mark.parametrize("hw", sorted(PENALTY_BY_HAND))
def test_hardware_penalty_by_hand(hw):
    got = get("hardware_scale_out_penalty").evaluate(hardware=hw).m
    assert got == pytest.approx(PENALTY_BY_HAND[hw])


def test_every_chip_with_a_scale_up_domain_has_a_per_direction_bandwidth():
    # AMD presets used another field, so their scale-up bandwidth was missing.
    from units.presets import load

    for hw in load().hardware.values():
        if hw.get("scale_up_domain") is not None:
            assert hw.get("scale_up_bandwidth_per_direction") is not None, hw.id
            assert "direction" in hw.source_of("scale_up_bandwidth_per_direction").lower()
    mi = get("hardware_scale_out_penalty").evaluate(hardware="mi300x")
    assert mi.m == pytest.approx(448 / 50)


@given(s.machine_and_model(), s.batch_size)
def test_compute_floor_is_the_cost_in_the_compute_bound_limit(inputs, batch):
    kw = {k: inputs[k] for k in ("flops", "n_active", "price_per_chip_hour")}
    floor = get("compute_cost_floor").evaluate(**kw)
    # the floor is the short-context limit: no KV reads and no attention FLOPs
    huge = dict(
        inputs,
        batch_size=Q_(1e12, "sequence"),
        kv_bytes_per_token=Q_(1e-9, "byte/token"),
        attention_flops_per_token=Q_(1e-9, "FLOP/token"),
    )
    cost = get("cost_per_token").evaluate(**huge)
    assert cost.to("USD/token").m == pytest.approx(floor.to("USD/token").m, rel=1e-6)
    small = get("cost_per_token").evaluate(**dict(inputs, batch_size=batch))
    assert small >= floor * (1 - 1e-12)


# -- once-per-rack (deduplicated) dispatch: DeepSeek-V3 technical report, section 3.2.2 --------

experts_per_token = st.integers(1, 16)


def _copies(r, k):
    return get("offrack_copies").evaluate(racks_spanned=Q_(r, "rack"), experts_active=k).m


def test_two_racks_send_one_copy_unless_no_expert_is_remote():
    # k = 8 experts, each in the other rack with probability 1/2: 1 - (1/2)^8 = 0.99609375
    assert _copies(2, 8) == pytest.approx(1 - 0.5**8)


def test_independent_draws_match_drawing_distinct_experts_on_the_preset():
    # DeepSeek-V3: 8 distinct experts of 256, 128 per rack over 2 racks. The other rack holds
    # none with probability C(128, 8) / C(256, 8) (hypergeometric, by hand): the equation's
    # independent draws give 1 - 2^-8; the two counts of copies agree within 0.1%.
    exact = 1 - math.comb(128, 8) / math.comb(256, 8)
    assert _copies(2, 8) == pytest.approx(exact, rel=1e-3)


@given(racks, experts_per_token)
def test_distinct_racks_are_never_more_than_the_experts_sent_off_rack(r, k):
    c = _copies(r, k)
    f = 1 - 1 / r
    # at most one copy per other rack and per expert, and never more than the lecture's count
    assert 0 <= c <= min(r - 1, k) + 1e-9
    assert c <= k * f + 1e-9
    if k == 1:  # a single expert: deduplication changes nothing
        assert c == pytest.approx(f)


def test_once_per_rack_at_gb200s_penalty_by_hand():
    # max(1, 0.99609375 x 18 / 8) = 2.2412 at GB200's 18x; max(1, 0.996 x 8 / 8) = 1 at the
    # lecture's 8x: two racks take the one-rack time
    eq = get("once_per_rack_slowdown")
    assert eq.evaluate(model="deepseek_v3", scale_out_penalty=18).m == pytest.approx(
        (1 - 0.5**8) * 18 / 8
    )
    assert eq.evaluate(model="deepseek_v3").m == pytest.approx(1)


@given(racks, real_penalty, experts_per_token)
def test_sending_once_per_rack_is_never_slower_than_once_per_expert(r, pi, k):
    kw = dict(racks_spanned=Q_(r, "rack"), scale_out_penalty=pi)
    once = get("once_per_rack_slowdown").evaluate(experts_active=k, **kw).m
    per_expert = get("multi_rack_slowdown").evaluate(**kw).m
    assert once >= 1 - 1e-12  # NVLink still carries every copy once
    if r >= 2:  # off the rack the per-expert count pays f pi >= 1 at a real penalty
        assert once <= per_expert * (1 + 1e-12)


def test_the_new_derivations_check():
    for eq_id in ("offrack_copies", "once_per_rack_slowdown"):
        get(eq_id).check()
