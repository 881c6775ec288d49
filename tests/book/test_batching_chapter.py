"""The batching chapter's argument: the numbers its prose interprets, against hand computations."""

import pytest

from book.chapters.batching import _argument
from units.presets import load


def _n(text: str) -> float:
    """The leading number of a display string ('5,357 sequences' -> 5357.0)."""
    return float(text.split()[0].replace(",", "").rstrip("×"))


@pytest.fixture(scope="module")
def arg():
    return _argument(load())


def test_fast_mode_runs_a_batch_fifteen_times_smaller(arg):
    # parameters.toml (Anthropic's fast-mode page): 6x the price, 2.5x the speed -> 1/(6 x 2.5)
    assert _n(arg["fast"]["smaller"]) == pytest.approx(6 * 2.5)


def test_multiplies_per_byte_of_weight_is_about_300_at_bf16_and_fp8(arg):
    # facts.md: GB200 2,500 TFLOP/s BF16, 5,000 FP8 (dense), 8 TB/s; one multiply-add = 2 FLOP
    assert _n(arg["per_byte"]["bf16"]) == pytest.approx(2500 / 8 * 2 / 2, rel=1e-3)
    assert _n(arg["per_byte"]["fp8"]) == pytest.approx(5000 / 8 * 1 / 2, rel=1e-3)
    assert arg["per_byte_round"] == "300"


def test_the_running_example_s_crossover_multiplies_out_as_shown(arg):
    # the worked example prints B* = 312.5 x 671/37: the product it shows must be the one it names
    rack = arg["rack"]
    shown = _n(arg["per_byte"]["fp8"]) * float(rack["total_b"]) / float(rack["active_b"])
    assert shown == pytest.approx(5000 / 8 / 2 * 671 / 37)
    assert arg["b_star_round"].said == "5,700"  # 5,667 as a person says it, 2 figures


def test_paying_more_buys_speed_only_down_to_the_weight_read(arg):
    pay = arg["pay"]
    # facts.md: Llama 3.1 70B, 70.6e9 BF16 weights; 12 H100s at 3.35 TB/s each
    assert _n(pay["weight_fetch"]) == pytest.approx(70.6e9 * 2 / (12 * 3.35e12) * 1e3, rel=1e-2)
    # one sequence's step is (almost) the weight read, so it cannot be faster than that
    assert _n(pay["step_1"]) >= _n(pay["weight_fetch"])
    assert _n(pay["speedup"]) > 1
    # the price grows faster than the speed: that is why Fast mode is dear
    assert _n(pay["price"]) > _n(pay["speedup"])


def test_doubling_the_context_past_the_balance_nearly_halves_mfu(arg):
    rows = arg["dense"]["mfu"]
    assert [r["times"] for r in rows] == ["1", "2", "4"]
    mfu = [_n(r["mfu"]) for r in rows]
    # past the balance the KV reads double with the context while compute stays: MFU about halves
    # (a little less than halves while the weights' fetch is still part of the memory time)
    assert 1.6 < mfu[1] / mfu[2] <= 2
    assert all(r["bound"] == "memory" for r in rows[1:])


def test_sparse_attention_grows_as_the_square_root(arg):
    s = arg["sparse_attention"]
    # parameters.toml: 8,192-token default context; 200,000-token price kink
    assert _n(s["dense_growth"]) == pytest.approx(200_000 / 8192, rel=1e-3)
    assert _n(s["sqrt_growth"]) == pytest.approx((200_000 / 8192) ** 0.5, rel=1e-3)


def test_running_at_triple_the_crossover_is_cheaper_but_above_the_floor(arg):
    star, practice, floor = (_n(arg[k]) for k in ("cost_star", "cost_practice", "floor"))
    assert floor < practice < star


def test_sparsity_quality_is_about_four_times(arg):
    # Clark et al. 2022 (arXiv 2202.01169), as the lecture reads it: 1.3B dense / 370M active
    assert _n(arg["quality"]["ratio"]) == pytest.approx(1.3e9 / 370e6, rel=1e-2)
    assert arg["quality"]["ratio_round"] == "4"


def test_a_providers_rate_needs_many_replicas(arg):
    g = arg["global"]
    # By hand (facts.md; physics audit L9): DeepSeek-V3 at FP8 on GB200s (5,000 TFLOP/s, 8 TB/s
    # each) at 8,192 tokens, batched by the chapter's rule: to the turn, where compute catches
    # memory. Per chip-second, compute per sequence is (2 x 37e9 + MLA attention
    # 2 x 128 x (1,024 + 64) x 61 x 8,192) / 5e15, KV per sequence (512 + 64) x 61 x 8,192 / 8e12,
    # and the weights 671e9 / 8e12: the turn is weights / (compute - KV), 12,598.6 sequences,
    # whatever the chip count (every term is over n).
    compute = (2 * 37e9 + 2 * 128 * (1024 + 64) * 61 * 8192) / 5000e12
    kv = (512 + 64) * 61 * 8192 / 8e12
    weights = 671e9 / 8e12
    b = -(-weights // (compute - kv))  # rounded up to a whole sequence
    assert _n(g["batch"]) == b
    n = _n(g["chips"])  # 24: the fewest 186 GB chips that hold 671 GB and b caches
    assert (n - 1) * 186e9 < 671e9 + b * (512 + 64) * 61 * 8192 <= n * 186e9
    step = max(b * compute, weights + b * kv) / n
    replica = b / step
    assert _n(g["replica"]) == pytest.approx(replica, rel=2e-3)  # 562,900 tokens/s
    assert _n(g["replicas"]) == pytest.approx(5e7 / replica, rel=1e-2)
    assert g["replicas_whole"] == "89"  # 50M / 562,900 = 88.8, rounded up
    assert g["chips_total"] == f"{89 * int(n):,} chips"
    # a step batched by the rule lasts at most one drain time: 186 GB / 8 TB/s = 23.25 ms
    assert step <= 186e9 / 8e12


def test_the_lecture_replica_is_about_a_thousandth_of_a_big_provider(arg):
    r = arg["lecture_replica"]
    # the lecture: 64 tokens/s x 2,000 sequences = 128,000 tokens/s; 50M and 500M tokens/s
    assert _n(r["replica"]) == pytest.approx(128_000)
    assert _n(r["model_share"]) == pytest.approx(5e7 / 128e3, rel=1e-3)
    assert _n(r["global_share"]) == pytest.approx(5e8 / 128e3, rel=1e-3)


def test_at_b_equal_to_experts_over_k_only_two_thirds_of_experts_are_read(arg):
    # physics audit L6: 1 - (1 - 8/256)^32 = 0.638; 99% takes ln 0.01 / ln(31/32) = 145.05, so
    # the first whole batch that reads 99% is 146 sequences
    r = arg["expert_reads"]
    assert _n(r["share"]) == pytest.approx(100 * (1 - (1 - 8 / 256) ** 32), rel=1e-3)
    assert r["batch"] == "146 sequences"


def test_the_running_example_s_all_to_all_is_small_and_h100s_would_not_pass(arg):
    a = arg["alltoall"]
    # By hand (facts.md): DeepSeek-V3 at FP8 (576 KV bytes x 61 layers per token at 8,192
    # tokens), a batch of 5,668. On GB200s (186 GB each): (671e9 + 5,668 x 576 x 61 x 8,192) /
    # 186e9 = 12.4 -> 13 chips, inside one 72-chip NVLink domain, nothing off-rack. One layer's
    # all-to-all: a token goes out to its 8 experts at FP8 (1 byte x 7,168 values) and comes back
    # in BF16 (2 bytes; DeepSeek-V3 report section 3.3.3), 8 x 7,168 x 3 = 172,032 B; x 5,668 /
    # (13 x 900 GB/s); x 58 MoE layers. The step is the memory time: all 671e9 weight bytes plus
    # the KV caches over 13 x 8 TB/s.
    held = 671e9 + 5668 * 576 * 61 * 8192
    one = 8 * 7168 * 3 * 5668 / (13 * 900e9)
    step = held / (13 * 8e12)
    assert a["inside"] and _n(a["chips"]) == 13
    assert _n(a["per_step"]) == pytest.approx(58 * one * 1e3, rel=2e-3)  # 4.8 ms
    assert _n(a["share"]) == float(f"{100 * 58 * one / step:.2g}")  # 22%, printed at 2 figures
    # The same batch on the fewest H100s (80 GB): 2.302e12 / 80e9 = 28.8 -> 29 chips, 3.6 nodes
    # of 8; off-node share 1 - 1/3.625, penalty 450 / 50 = 9 (physics audit M2).
    h = a["h100"]
    assert not h["inside"] and _n(h["chips"]) == 29
    one = 8 * 7168 * 3 * 5668 * (1 - 1 / 3.625) * 9 / (29 * 450e9)
    step = held / (29 * 3.35e12)
    assert _n(h["per_step"]) == pytest.approx(58 * one * 1e3, rel=2e-3)  # 28 ms
    assert _n(h["share"]) == float(f"{100 * 58 * one / step:.2g}")  # 120%, 2 figures
    assert _n(h["share"]) > 5 * _n(a["share"])


def test_deepseek_at_8k_context_turns_compute_bound_past_b_star(arg):
    # By hand, facts.md: DeepSeek-V3 on 13 GB200s at FP8 (5,000 TFLOP/s, 8 TB/s each), 8,192
    # tokens of context. Compute per sequence: 2 x 37e9 for the weights plus MLA attention
    # 2 h (2 r_KV + d_rope) layers = 2 x 128 x (1,024 + 64) x 61 FLOP per context token. KV per
    # sequence: (512 + 64) x 61 bytes per token. Weights: all 671e9 bytes (every expert is read).
    compute = (2 * 37e9 + 2 * 128 * (1024 + 64) * 61 * 8192) / (13 * 5000e12)
    kv = (512 + 64) * 61 * 8192 / (13 * 8e12)
    weights = 671e9 / (13 * 8e12)
    assert _n(arg["turn"]) == pytest.approx(weights / (compute - kv), rel=1e-2)
    assert arg["regime"]["bound"] == "memory"  # at B* the step is still memory-bound
    b_star = 5000 / 8 / 2 * 671 / 37
    memory = weights + kv * b_star
    assert _n(arg["regime"]["by"]) == pytest.approx(memory / (compute * b_star), rel=2e-2)


def test_exercise_answers_multiply_out_as_they_are_shown():
    from book.chapters.batching import _exercises

    x = _exercises(load())
    slow, fast = x["slow"], x["fast"]
    # Kimi K2 (facts.md: 1T total, 32B active) on GB200 (5,000 TFLOP/s FP8, 8 TB/s): the answer
    # shows 312.5 x 31.25 = 9,765.6, a batch of 9,766 once rounded up to a whole sequence
    assert float(slow["per_byte"]) == 5000 / 8 / 2 and float(slow["sparsity"]) == 1000 / 32
    assert slow["star"] == "9,766 sequences"
    # memory-bound at B* and at 3 B*: per token the weights' share falls to a third, so the
    # saving the answer derives (two thirds of the weights' share) is the saving it states
    assert not slow["turns"]
    assert _n(slow["weight_saving"]) == pytest.approx(_n(slow["weight_share"]) * 2 / 3, abs=0.5)
    assert _n(slow["weight_saving"]) == pytest.approx(_n(slow["saving"]), abs=1)
    # the small model: the price ratio is the batch ratio over the speed-up (same chips)
    assert _n(fast["batch_ratio"]) / _n(fast["speedup"]) == pytest.approx(
        _n(fast["price"]), rel=0.05
    )


def test_fast_mode_s_speed_is_a_batch_six_and_a_half_times_smaller_on_the_roofline():
    # reader bl18's independent script (DeepSeek-V3 on 72 GB200 at FP8, 8,192 tokens): the step
    # at 2.5x the speed of B* = 5,668 is reached at about 871 sequences, 7.35 cents per million
    from book.chapters.batching import _speed

    s = _speed(load())
    assert _n(s["frontier_batch"]) == pytest.approx(871, rel=0.01)
    assert _n(s["frontier_smaller"]) == pytest.approx(5668 / 871, abs=0.06)
    assert _n(s["frontier_cost"]) == pytest.approx(0.0735, rel=0.01)  # USD per million tokens
    f = s["floors"]
    # one expert of every MoE layer: 653.9e9 routed parameters / 256 experts, 1 byte each at FP8,
    # over one GB200's 8 TB/s; 2 all-to-alls x 58 MoE layers x 5.56 us (the NCCL floor)
    assert f["expert"].endswith(" ms") and f["collectives"].endswith(" ms")
    assert _n(f["expert"]) == pytest.approx(653.9e9 / 256 / 8e12 * 1e3, rel=0.01)
    assert _n(f["collectives"]) == pytest.approx(2 * 58 * 5.56e-3, rel=0.01)
    # together they bound one sequence well below the roofline's 15,000 tokens/s
    assert _n(f["bound_speed"]) == pytest.approx(1e6 / (319.3 + 645.0), rel=0.02)
    assert _n(f["bound_speed"]) < _n(s["fastest_speed"]) / 10


def test_exercise_c_fp8_doubles_the_ridge_and_keeps_the_dense_crossover():
    # reader bl18: exercise 2(c) listed three identical sizes. Now it asks what FP8 does. By hand
    # (facts.md, H100 SXM dense): 1,978.9 TFLOP/s FP8 over 3.35 TB/s = 590.7 FLOP/byte; one byte
    # per weight over 2 FLOP per multiply-add -> 295 sequences, the BF16 crossover (989.4 / 3.35)
    from book.chapters.batching import context

    ctx = context(load())
    assert _n(ctx["dense_fp8"]["ridge"]) == pytest.approx(1978.9 / 3.35, rel=1e-3)
    assert _n(ctx["dense_fp8"]["crossover"]) == pytest.approx(1978.9 / 3.35 / 2, abs=0.5)
    assert ctx["dense_fp8"]["crossover"] == ctx["dense_crossover"]
    # the lecture's Rubin and the per-GPU racks are named as prose names them, in tables too
    names = [d["name"] for d in ctx["drain"].values()]
    assert "The lecture's Rubin" in names and "GB200 NVL72" in names
    assert not any("(per GPU)" in r["name"] for r in ctx["hardware_table"]["rows"])


def test_doubled_bandwidth_moves_the_crossover_batch_out_of_the_memory_bound_regime(arg):
    # reader blo23, fault 2: at B* of the running example the KV reads keep today's step
    # memory-bound; with twice the bandwidth memory falls to 0.144 chip-s against 0.242 of
    # compute, so the step turns compute-bound and the saving is compute over old memory
    doubled = arg["doubled"]
    assert doubled["regime"] == "memory-bound"
    assert doubled["regime_fast"] == "compute-bound"
    assert 0 < _n(doubled["saving"]) < 50
