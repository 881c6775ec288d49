"""Chapter F: KV bytes and parameters from architecture, crossovers, prices read backwards."""

import pytest
import sympy as sp
from hypothesis import assume, given
from hypothesis import strategies as st

from derivations import get
from tests import strategies as s
from units import Q_, ChalkboardError

# Hand computations from the model configs (facts.md, "Derived checks"), in bytes per token at
# BF16: 2 x layers x kv_heads x head_dim x 2 bytes; MLA: layers x (512 + 64) x 2 bytes.
KV_BF16 = {
    "llama_3_1_8b": 2 * 32 * 8 * 128 * 2,  # 131,072
    "llama_3_1_70b": 2 * 80 * 8 * 128 * 2,  # 327,680
    "llama_3_1_405b": 2 * 126 * 8 * 128 * 2,  # 516,096
    "qwen3_235b_a22b": 2 * 94 * 4 * 128 * 2,  # 192,512
    "deepseek_v3": 61 * (512 + 64) * 2,  # 70,272
    "kimi_k2": 61 * (512 + 64) * 2,
    "mixtral_8x7b": 2 * 32 * 8 * 128 * 2,
    "gpt_oss_120b": 2 * 18 * 8 * 64 * 2,  # only the 18 global layers of 36 grow with context
    "deepseek_r1": 61 * (512 + 64) * 2,  # V3's architecture
    "llama_2_70b": 2 * 80 * 8 * 128 * 2,  # MaxText llama2-70b.yml: 80 layers, 8 KV heads of 128
    "llama_3_3_70b": 2 * 80 * 8 * 128 * 2,  # Llama 3.1 70B's config
}


@pytest.mark.parametrize("model", sorted(KV_BF16))
def test_kv_bytes_per_token_matches_hand_computation(model):
    got = get("kv_bytes_per_token").evaluate(model=model).to("byte/token").magnitude
    assert got == pytest.approx(KV_BF16[model], rel=1e-12)


def test_every_model_preset_has_a_hand_checked_kv_figure():
    assert set(KV_BF16) == set(s.PRESETS.ids("model"))


@given(st.integers(1, 128), st.sampled_from([1, 2, 4, 8, 16, 32, 64]), st.sampled_from([64, 128]))
def test_gqa_special_cases_mha_and_mqa(layers, heads, head_dim):
    eq = get("gqa_kv_values_per_token")
    kw = dict(global_layers=Q_(layers, "layer"), head_dim=Q_(head_dim, "value/head"))
    mha = eq.evaluate(n_kv_heads=Q_(heads, "head"), **kw).to("value/token").magnitude
    mqa = eq.evaluate(n_kv_heads=Q_(1, "head"), **kw).to("value/token").magnitude
    # MHA: a key and a value for every one of the query heads; MQA: for a single shared head.
    assert mha == 2 * layers * heads * head_dim
    assert mqa == 2 * layers * head_dim
    assert mha == heads * mqa


# Parameter counts. Published figures (facts.md) and the config-derived checks facts.md gives
# (Llama 3.1 70B 70.55B; DeepSeek-V3 671.0B total, 37.6B active).
PRECISE = {  # published with three or more significant figures: within 1%
    ("llama_3_1_8b", "params_total"): 8.03e9,
    ("llama_3_1_70b", "params_total"): 70.55e9,
    ("llama_3_1_405b", "params_total"): 405.9e9,
    ("qwen3_235b_a22b", "params_total"): 235e9,
    ("mixtral_8x7b", "params_total"): 46.7e9,
    ("mixtral_8x7b", "params_active"): 12.9e9,
    ("deepseek_v3", "params_total"): 671.0e9,
    ("deepseek_v3", "params_active"): 37.6e9,
    ("gpt_oss_120b", "params_total"): 117e9,
    ("gpt_oss_120b", "params_active"): 5.13e9,  # OpenAI's model card, unembedding only
    ("qwen3_235b_a22b", "params_active"): 22e9,
    ("deepseek_r1", "params_total"): 671.0e9,  # V3's architecture and counts
    ("deepseek_r1", "params_active"): 37.6e9,
    ("llama_3_3_70b", "params_total"): 70.55e9,  # Llama 3.1 70B's config
    # by hand from MaxText's llama2-70b.yml: 80 x (8192 x 128 x (2 x 64 + 2 x 8)
    # + 3 x 8192 x 28672) + 2 x 32000 x 8192 = 68,975,329,280
    ("llama_2_70b", "params_total"): 68.975e9,
}
# Published as "1T" and "32B": the count lands within 3%, and the page shows by how much.
ROUNDED = {
    ("kimi_k2", "params_total"): 1e12,
    ("kimi_k2", "params_active"): 32e9,
}


@pytest.mark.parametrize(("model", "eq"), sorted(PRECISE))
def test_parameter_counts_within_one_percent(model, eq):
    got = get(eq).evaluate(model=model).to("parameter").magnitude
    assert got == pytest.approx(PRECISE[model, eq], rel=0.01)


@pytest.mark.parametrize(("model", "eq"), sorted(ROUNDED))
def test_rounded_parameter_counts_within_three_percent(model, eq):
    got = get(eq).evaluate(model=model).to("parameter").magnitude
    assert got == pytest.approx(ROUNDED[model, eq], rel=0.03)


def test_llama_70b_count_by_hand():
    # attention 8192*128*(2*64 + 2*8) = 151M, MLP 3*8192*28672 = 705M, per layer x 80,
    # plus two embeddings of 128256 x 8192.
    by_hand = 80 * (8192 * 128 * (2 * 64 + 2 * 8) + 3 * 8192 * 28672) + 2 * 128256 * 8192
    got = get("params_total").evaluate(model="llama_3_1_70b").to("parameter").magnitude
    assert got == by_hand


@pytest.mark.parametrize("model", ["llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b"])
def test_dense_models_are_all_active(model):
    assert get("params_active").evaluate(model=model) == get("params_total").evaluate(model=model)


@pytest.mark.parametrize("model", ["deepseek_v3", "qwen3_235b_a22b", "mixtral_8x7b", "kimi_k2"])
def test_moe_models_have_fewer_active_than_total(model):
    assert get("params_active").evaluate(model=model) < get("params_total").evaluate(model=model)


@given(s.machine_and_model(), s.batch_size)
def test_at_the_kv_compute_context_the_two_times_are_equal(inputs, batch):
    names = (
        "flops",
        "mem_bandwidth",
        "n_active",
        "kv_bytes_per_token",
        "attention_flops_per_token",
    )
    kw = {k: inputs[k] for k in names}
    # a crossover exists only while attention's FLOPs per KV byte stay below the chip's ridge
    ridge = (inputs["flops"] / inputs["mem_bandwidth"]).to("FLOP/byte").m
    per_byte = (inputs["attention_flops_per_token"] / inputs["kv_bytes_per_token"]).to("FLOP/byte")
    assume(per_byte.m < 0.99 * ridge)
    length = get("kv_compute_crossover_context").evaluate(**kw)
    common = dict(kw, batch_size=batch, context_length=length, n_chips=inputs["n_chips"])
    compute = get("compute_time").evaluate(
        **{k: v for k, v in common.items() if k not in ("mem_bandwidth", "kv_bytes_per_token")}
    )
    kv = get("kv_fetch_time").evaluate(
        **{
            k: v
            for k, v in common.items()
            if k not in ("flops", "n_active", "attention_flops_per_token")
        }
    )
    assert kv.to("s").magnitude == pytest.approx(compute.to("s").magnitude, rel=1e-9)


@given(s.flops, s.mem_bandwidth, s.n_total, s.context_length)
def test_price_kink_inverts_the_crossover(flops, bandwidth, active, kink):
    implied = get("kv_bytes_from_price_kink").evaluate(
        flops=flops, mem_bandwidth=bandwidth, n_active=active, price_kink_context=kink
    )
    # the kink's reading ignores attention FLOPs: it inverts the crossover as they vanish
    back = get("kv_compute_crossover_context").evaluate(
        flops=flops,
        mem_bandwidth=bandwidth,
        n_active=active,
        kv_bytes_per_token=implied,
        attention_flops_per_token=Q_(1e-30, "FLOP/token"),
    )
    assert back.to("token/sequence").magnitude == pytest.approx(
        kink.to("token/sequence").magnitude, rel=1e-9
    )


def test_kv_weight_context_halves_when_the_batch_doubles():
    eq = get("kv_weight_crossover_context")
    one = eq.evaluate(model="llama_3_1_70b", batch_size=100)
    two = eq.evaluate(model="llama_3_1_70b", batch_size=200)
    assert (one / two).to("").magnitude == pytest.approx(2)
    # an MoE once its batch touches every expert: (1 - 8/256)^2000 is below 1e-27
    one = eq.evaluate(model="deepseek_v3", batch_size=2000)
    two = eq.evaluate(model="deepseek_v3", batch_size=4000)
    assert (one / two).to("").magnitude == pytest.approx(2)
    # below that, a larger batch also reads more experts: less than halved
    one = eq.evaluate(model="deepseek_v3", batch_size=10)
    two = eq.evaluate(model="deepseek_v3", batch_size=20)
    assert 1 < (one / two).to("").magnitude < 2


def test_prices_read_backwards_by_hand():
    # Opus: 25 / 5 output over input; 5 / 0.5 uncached over cached (facts.md, API prices)
    assert get("decode_prefill_ratio_from_prices").evaluate(api="claude_opus_4_6").m == 5
    assert get("cache_discount_from_prices").evaluate(api="claude_opus_4_6").m == pytest.approx(10)


@given(s.log_uniform(low=1.01, high=20), s.log_uniform(low=1.01, high=10))
def test_fast_mode_batch_shrinks_by_price_times_speed(price, speed):
    ratio = get("fast_mode_batch_ratio").evaluate(
        fast_price_multiplier=price, fast_speed_multiplier=speed
    )
    assert ratio.m == pytest.approx(1 / (price * speed))
    assert ratio.m < 1


def test_lecture_fast_mode_by_hand():
    # 6x price for 2.5x speed: the batch is 1 / 15 of the standard one.
    assert get("fast_mode_batch_ratio").evaluate().m == pytest.approx(1 / 15)


TIER_DRAIN_S = {  # capacity / bandwidth from the datasheets (tiers.toml): the whole device
    "hbm_h100": 80e9 / 3.35e12,
    "dram_ddr5": 64e9 / 38.4e9,
    "flash_nvme": 15.36e12 / 13e9,
    "disk_hdd": 24e12 / 285e6,
}


@pytest.mark.parametrize("tier", sorted(TIER_DRAIN_S))
def test_tier_drain_times_by_hand(tier):
    got = get("storage_tier_drain_time").evaluate(tier=tier).to("s").magnitude
    assert got == pytest.approx(TIER_DRAIN_S[tier], rel=1e-9)


def test_flash_holds_about_twenty_minutes_and_disk_about_a_day():
    # Issue 11, item 1: retrieval time = hold time x fill fraction, with retrieval = bytes / W and
    # fill = bytes / C, so hold = C / W. PM1743: 15.36 TB / 13 GB/s = 1,181.5 s = 19.7 min;
    # Exos X24: 24 TB / 285 MB/s = 84,211 s = 23.4 h. (The old 10% fill gave 2 min and 2.3 h.)
    eq = get("storage_tier_drain_time")
    assert eq.evaluate(tier="flash_nvme").to("minute").m == pytest.approx(15.36e12 / 13e9 / 60)
    assert 19 < eq.evaluate(tier="flash_nvme").to("minute").m < 21
    assert eq.evaluate(tier="disk_hdd").to("hour").m == pytest.approx(24e12 / 285e6 / 3600)


@given(s.log_uniform(low=1e9, high=1e14), s.log_uniform(low=1e8, high=1e13))
def test_tier_hold_time_is_capacity_over_bandwidth(capacity, bandwidth):
    # The fill fraction is no input: the rule's bytes cancel, whatever the device's size.
    eq = get("storage_tier_drain_time")
    assert "tier_fill_fraction" not in {str(x) for x in eq.rhs.free_symbols}
    got = eq.evaluate(tier_capacity=Q_(capacity, "byte"), tier_bandwidth=Q_(bandwidth, "byte/s"))
    assert got.to("s").m == pytest.approx(capacity / bandwidth, rel=1e-9)


def test_tier_ladder_is_ordered_by_drain_time():
    order = ["hbm_h100", "dram_ddr5", "flash_nvme", "disk_hdd"]
    times = [get("storage_tier_drain_time").evaluate(tier=t).to("s").m for t in order]
    assert times == sorted(times)


def test_hbm_holding_price_is_the_chip_rent_over_its_capacity():
    # lecture_gpu: 2 USD per chip-hour over 80 GB; one Llama 70B sequence of 8192 tokens holds
    # 8192 x 327,680 bytes.
    hold = get("cache_hold_cost").evaluate(tier="hbm_h100", model="llama_3_1_70b")
    assert hold.to("USD/hour/sequence").m == pytest.approx(8192 * 327680 * 2 / 80e9)


def test_cheaper_tiers_hold_longer_before_recomputing_wins():
    # until a tier is so slow that its read back outweighs the recompute (disk, below)
    kw = dict(hardware="h100_sxm", model="llama_3_1_70b")
    even = [
        get("cache_breakeven_time").evaluate(tier=t, **kw).to("s").m
        for t in ("hbm_h100", "dram_ddr5", "flash_nvme")
    ]
    assert even == sorted(even)


def test_breakeven_is_recompute_less_read_back_over_hold_by_hand():
    # recompute: 8192 tokens x (2 FLOP x 70.6e9 + causal attention, on average half the prompt
    # at 4 FLOP x 64 heads x 128 x 80 layers per pair) / 989.4e12 FLOP/s x 2 USD/h; read back:
    # 8192 x 327,680 bytes at HBM's 3.35 TB/s, the chip rented at 2 USD/h while it waits
    per_token = 2 * 70.6e9 + 4 * 64 * 128 * 80 * 8192 / 2
    recompute_h = 8192 * per_token / 989.4e12 / 3600 * 2
    read_h = 8192 * 327680 / 3.35e12 / 3600 * 2
    hold_per_h = 8192 * 327680 * 2 / 80e9
    got = get("cache_breakeven_time").evaluate(
        tier="hbm_h100", hardware="h100_sxm", model="llama_3_1_70b"
    )
    assert got.to("hour").m == pytest.approx((recompute_h - read_h) / hold_per_h, rel=1e-9)


def test_a_tier_slower_to_read_than_a_recompute_never_breaks_even():
    # disk: 8192 x 327,680 bytes at 285 MB/s is 9.4 s, against 1.26 s of one H100's prefill
    # (above): the read back alone costs more than recomputing, so the time is negative
    kw = dict(tier="disk_hdd", hardware="h100_sxm", model="llama_3_1_70b")
    assert 8192 * 327680 / 285e6 > 8192 * (2 * 70.6e9 + 4 * 64 * 128 * 80 * 4096) / 989.4e12
    with pytest.raises(ChalkboardError, match="never: reading the cache back"):
        get("cache_breakeven_time").evaluate(**kw)


def test_solve_for_round_trip_on_the_crossover_context():
    eq = get("kv_compute_crossover_context")
    solved = eq.solve_for("kv_bytes_per_token")
    length = eq.evaluate(hardware="h100_sxm", model="llama_3_1_70b")
    k = solved.evaluate(hardware="h100_sxm", model="llama_3_1_70b", kv_compute_context=length)
    assert k.to("byte/token").m == pytest.approx(327680, rel=1e-9)
    # the price-kink reading is the solved crossover with attention FLOPs dropped
    no_attention = solved.rhs.subs(sp.Symbol("attention_flops_per_token", positive=True), 0)
    assert (
        sp.simplify(
            no_attention
            - get("kv_bytes_from_price_kink").rhs.subs(
                {
                    sp.Symbol("price_kink_context", positive=True): sp.Symbol(
                        "kv_compute_context", positive=True
                    )
                }
            )
        )
        == 0
    )


def test_global_layers_leave_out_sliding_window_layers():
    # gpt-oss-120b: 36 layers, every other one a 128-token sliding window
    assert get("global_attention_layers").evaluate(model="gpt_oss_120b").m == 36 - 18
    assert get("global_attention_layers").evaluate(model="llama_3_1_70b").m == 80


def test_mla_values_by_hand():
    # DeepSeek-V3: 61 layers x (kv_lora_rank 512 + rope 64)
    assert get("mla_kv_values_per_token").evaluate(model="deepseek_v3").m == 61 * 576


def test_attention_parameter_counts_by_hand():
    # Llama 3.1 8B: Q and O 4096 x 4096 each, K and V 4096 x 1024 each
    got = get("gqa_attention_params").evaluate(model="llama_3_1_8b").m
    assert got == 2 * 4096 * 4096 + 2 * 4096 * 1024
    # DeepSeek-V3 MLA: q_a 7168x1536, q_b 1536x(128x192), kv_a 7168x576, kv_b 512x(128x256),
    # o (128x128)x7168
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    assert get("mla_attention_params").evaluate(model="deepseek_v3").m == mla


@given(s.context_length, s.log_uniform(low=1.01, high=100))
def test_recompute_cost_grows_faster_than_the_context(length, factor):
    eq = get("cache_recompute_cost")
    kw = dict(hardware="h100_sxm", model="llama_3_1_70b")
    one = eq.evaluate(context_length=length, **kw).to("USD/sequence").m
    more = eq.evaluate(context_length=length * factor, **kw).to("USD/sequence").m
    assert one * factor < more < one * factor**2
    # by hand: L x (2 FLOP x 70.6e9 + 4 FLOP x 64 heads x 128 x 80 layers x L / 2)
    # / 989.4e12 FLOP/s x 2 USD per 3600 s
    n = length.to("token/sequence").m
    hand = n * (2 * 70.6e9 + 4 * 64 * 128 * 80 * n / 2) / 989.4e12 * 2 / 3600
    assert one == pytest.approx(hand)


# -- attention FLOPs in prefill and in the KV crossover (issue 11, item 4) ---------------------


def test_kv_compute_crossover_counts_mla_attention_by_hand():
    # DeepSeek-V3 on an H100 at BF16 (facts.md: 989.4 TFLOP/s, 3.35 TB/s): KV 61 x 576 values
    # x 2 bytes per token; attention 2 FLOP x 128 x (512 + 64 + 512) x 61 per context token.
    # KV time L k / W equals compute (2 N_active + a L) / F at L = 2 N_a W / (F k - W a):
    # about 19.7K tokens, not the 3.6K the attention-free formula gives.
    k, a = 61 * 576 * 2, 2 * 128 * (512 + 64 + 512) * 61
    hand = 2 * 37e9 * 3.35e12 / (989.4e12 * k - 3.35e12 * a)
    got = get("kv_compute_crossover_context").evaluate(hardware="h100_sxm", model="deepseek_v3")
    assert got.to("token/sequence").m == pytest.approx(hand, rel=1e-9)
    assert 19_000 < hand < 20_500


def test_mla_on_a_low_ridge_chip_never_crosses_over():
    # A100 (facts.md): 312 TFLOP/s over 2.039 TB/s is 153 FLOP/byte; DeepSeek's attention does
    # 2 x 128 x 1088 / (576 x 2) = 242 FLOP per KV byte: compute stays ahead at any context,
    # so there is no crossover, and the evaluation says so rather than give a negative length.
    with pytest.raises(ChalkboardError, match="no crossover"):
        get("kv_compute_crossover_context").evaluate(hardware="a100_sxm", model="deepseek_v3")


def test_causal_prefill_attention_equals_the_weights_near_100k_tokens_for_dense_models():
    # Llama 3.1 70B: a_pre = 4 x 64 x 128 x 80 FLOP per pair; a_pre L / 2 = 2 N at L = 4 N / a
    assert get("prefill_attention_context").evaluate(model="llama_3_1_70b").to(
        "token/sequence"
    ).m == pytest.approx(4 * 70.6e9 / (4 * 64 * 128 * 80), rel=1e-9)
    for model in ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b"):
        length = get("prefill_attention_context").evaluate(model=model).to("ktoken/sequence").m
        assert 60 < length < 200  # 61K (8B), 108K (70B), 197K (405B)
    # DeepSeek's prefill expands MLA per head: 2 x 128 x (128 + 64 + 128) x 61 per pair
    assert get("mla_prefill_attention_flops").evaluate(model="deepseek_v3").to(
        "FLOP/token"
    ).m == pytest.approx(2 * 128 * 320 * 61, rel=1e-12)


@given(s.context_length, s.log_uniform(low=1.01, high=100))
def test_prefill_flops_per_token_are_affine_in_the_prompt(length, factor):
    eq = get("prefill_flops_per_token")
    t = [
        eq.evaluate(model="llama_3_1_70b", context_length=length * f).to("FLOP/token").m
        for f in (1, factor, 2 * factor - 1)
    ]
    assert t[1] - t[0] == pytest.approx(t[2] - t[1], rel=1e-9)
    assert t[0] > 2 * 70.6e9


# -- KV cache per sequence and batch; the cache-write premium ----------------------------------


def test_kv_cache_per_sequence_and_batch_by_hand():
    # facts.md: Llama 3.1 70B caches 327,680 bytes per token at BF16; 8,192 tokens of context.
    seq = get("kv_cache_per_sequence").evaluate(model="llama_3_1_70b")
    batch = get("kv_cache_per_batch").evaluate(model="llama_3_1_70b", batch_size=64)
    assert seq.to("byte/sequence").m == pytest.approx(327_680 * 8192)
    assert batch.to("byte").m == pytest.approx(64 * 327_680 * 8192)


@given(s.model_ids, s.batch_size, s.context_length)
def test_a_batch_caches_b_sequences(model, batch, length):
    one = get("kv_cache_per_sequence").evaluate(model=model, context_length=length)
    many = get("kv_cache_per_batch").evaluate(model=model, context_length=length, batch_size=batch)
    assert many.to("byte").m == pytest.approx(batch.m * one.to("byte/sequence").m, rel=1e-9)


def test_cache_write_premium_against_holding_on_hbm_by_hand():
    # facts.md: Opus 4.6 input $5/M, 5-minute write $6.25/M -> premium $1.25/M. Holding Llama
    # 3.1 70B's 327,680 bytes per token on an H100's HBM ($2/h over 80 GB) for 5 minutes costs
    # 327,680 x (5/60) x 2 / 80e9 USD per token; the premium is 1.831 times that.
    premium = get("cache_write_premium").evaluate(api="claude_opus_4_6")
    assert premium.to("USD/Mtoken").m == pytest.approx(1.25)
    ratio = get("cache_premium_over_hold").evaluate(
        api="claude_opus_4_6", model="llama_3_1_70b", tier="hbm_h100"
    )
    assert ratio.m == pytest.approx(1.25e-6 / (327_680 * 5 / 60 * 2 / 80e9))


@given(st.sampled_from(["hbm_h100", "dram_ddr5", "flash_nvme", "disk_hdd"]), s.model_ids)
def test_a_longer_lifetime_lowers_the_premium_ratio(tier, model):
    kw = dict(api="claude_opus_4_6", model=model, tier=tier)
    short = get("cache_premium_over_hold").evaluate(cache_lifetime="5 minute", **kw)
    long = get("cache_premium_over_hold").evaluate(cache_lifetime="1 hour", **kw)
    assert long.m == pytest.approx(short.m / 12, rel=1e-9)
