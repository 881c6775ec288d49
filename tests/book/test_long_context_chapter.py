"""The long-context chapter's worked examples, checked by hand against sourced figures."""

import pytest

from book.chapters.long_context import context
from units.presets import load


@pytest.fixture(scope="module")
def ctx():
    return context(load())


def _num(text: str) -> float:
    """The leading number of a formatted quantity: '1,693 bytes per token' -> 1693."""
    return float(text.split()[0].replace(",", ""))


def test_kink_implies_about_1_7_kb(ctx):
    # facts.md: H100 SXM 1,979 TFLOP/s dense FP8, 3.35 TB/s; lecture: 100e9 active, kink 200K.
    # 2 FLOP/parameter x 100e9 x 3.35e12 / (1979e15 x 200e3) = 1,693 bytes per token
    by_hand = 2 * 100e9 * 3.35e12 / (1979e12 * 200e3)
    assert _num(ctx["kink_bytes"]) == pytest.approx(by_hand, rel=2e-3)
    assert ctx["kink_round"] == "1.7 kB per token"
    assert ctx["ridge"] == "591"  # 1979 / 3.35


def test_lecture_two_kilobyte_check(ctx):
    # lecture section F: 1 unique KV layer x 2 x d_head 128 x 8 KV heads x 1 byte = 2,048 bytes
    assert ctx["shared"]["bytes"] == "2,048 bytes per token"
    assert _num(ctx["shared"]["over_kink"]) == pytest.approx(2048 / 1693, rel=3e-3)
    # Llama 3.1 70B at FP8: 80 layers x 2 x 8 x 128 = 163,840 bytes, ~97 x the implied 1,693
    assert ctx["llama_fp8"] == "163.8 kB per token"
    assert ctx["llama_over_kink"] == "97"


def test_sliding_windows_halve_gpt_oss(ctx):
    # gpt-oss-120b: 36 layers, half of them sliding-window; 8 KV heads x 64 x 2 x 2 bytes
    assert ctx["window"]["global"] == "18 layers"
    assert _num(ctx["window"]["bytes"]) == pytest.approx(18 * 2 * 8 * 64 * 2 / 1e3, rel=1e-3)


def test_memory_wall(ctx):
    # Llama 3.1 70B at BF16: 327,680 bytes per token; H100 80 GB
    assert _num(ctx["wall"]["seq_short"]) == pytest.approx(8192 * 327_680 / 1e9, rel=1e-3)
    assert _num(ctx["wall"]["seq_long"]) == pytest.approx(200_000 * 327_680 / 1e9, rel=1e-3)
    assert _num(ctx["wall"]["share"]) == pytest.approx(200_000 * 327_680 / 80e9, rel=2e-3)


def test_prices_read_backwards(ctx):
    # facts.md: Opus input 5, output 25, cache read 0.50; Gemini 2.5 Pro 1.25 -> 2.50 above 200K
    assert ctx["price_ratio"]["ratio"] == "5"
    assert ctx["price_ratio"]["discount"] == "10"
    assert ctx["gemini"]["in_ratio"] == "2"
    assert ctx["gemini"]["out_ratio"] == "1.5"


def test_drain_rule_against_the_lecture(ctx):
    # tiers.toml datasheets: PM1743 15.36 TB at 13 GB/s = 1,181.5 s = 19.7 min;
    # Exos X24 24 TB at 285 MB/s = 84,211 s = 23.4 h; the lecture said ~1 min and ~1 h
    assert ctx["drain"]["flash"] == "19.7 min"
    assert ctx["drain"]["disk"] == "23.4 h"
    assert ctx["drain"]["flash_off"] == "20"
    assert ctx["drain"]["disk_off"] == "23"
    # HBM: 80 GB / 3.35 TB/s = 23.88 ms, shown in ms rather than as a fraction of a minute
    assert ctx["hold"]["HBM"] == "23.88 ms"


def test_doubling_bandwidth_doubles_the_implied_bytes(ctx):
    assert _num(ctx["doubled"]["bytes"]) == pytest.approx(2 * _num(ctx["kink_bytes"]) / 1e3, 3e-3)


def test_flashcard_reads_the_kink(ctx):
    # book/concepts.toml's kv-from-kink card reads ctx.kink[0]
    assert ctx["kink"][0]["bytes"] == "1.693 kB per token"


def test_attention_readings(ctx):
    # DeepSeek-V3 absorbed MLA: 2 x 128 heads x (2 x 512 + 64) x 61 layers = 16.99 MFLOP per
    # context token, against 61 x 576 x 2 bytes of KV: 242 FLOP per KV byte
    a = ctx["attn"]
    assert a["mla_flops"] == "17 MFLOP per token"
    assert a["mla_per_byte"] == "242"
    # Llama 3.1 70B GQA: 2 x 2 x 64 heads x 128 x 80 FLOP over 80 x 2 x 8 x 128 x 2 bytes = 8
    assert a["gqa_per_byte"] == "8"
    # 2 x 37.55e9 active / 16.99e6 = 4,420: DeepSeek's weights equal attention at ~4.4K tokens
    assert _num(a["mla_decode"]) == pytest.approx(4355, rel=2e-3)
    assert a["ridge"] == "295" and a["low_ridge"] == "153"  # 989/3.35 and 312/2.039 (facts.md)


def test_a100_has_no_kv_compute_crossover_for_mla():
    from book.context import Evaluator
    from units.errors import ChalkboardError

    with pytest.raises(ChalkboardError, match="no crossover"):
        Evaluator(load(), "a100_sxm", "deepseek_v3").q("kv_compute_crossover_context")


def test_attention_table_has_no_dashes(ctx):
    # every model preset has either GQA or MLA fields: its decode attention FLOPs are computed
    assert all("—" not in r["cells"] for r in ctx["attention"]["rows"])


def test_price_dates_name_no_internal_file(ctx):
    """Issue 12: a reader sees when a price was read, never the file it was copied from."""
    dates = [d["as_of"] for d in ctx["api_dates"]]
    assert dates and not [d for d in dates if ".md" in d or ".toml" in d], dates


def test_fast_mode_batch_is_fifteen_times_smaller(ctx):
    # lecture: 6x the price for 2.5x the speed -> a batch 6 x 2.5 = 15 times smaller
    assert _num(ctx["fast"]["smaller"]) == pytest.approx(15)


def test_reading_a_cache_back_is_a_fraction_of_recomputing_it(ctx):
    # Llama 3.1 70B at BF16: 80 layers x 2 x 8 KV heads x 128 x 2 bytes = 327,680 bytes per token;
    # 8,192 tokens -> 2.684 GB; facts.md: DDR5-4800 RDIMM 38.4 GB/s -> 69.91 ms
    r = {row["medium"]: row for row in ctx["retrieval"]["rows"]}
    assert _num(r["DRAM"]["time"]) == pytest.approx(327_680 * 8192 / 38.4e9 * 1e3, rel=1e-3)
    assert r["DRAM"]["share"].endswith("% of") and r["disk"]["share"].endswith("times")
    percent = {m: float(r[m]["share"].split("%")[0]) for m in ("HBM", "DRAM", "flash")}
    assert percent["HBM"] < percent["DRAM"] < percent["flash"] < 100


def test_a_kink_sized_cache_can_sit_in_hbm_by_hand(ctx):
    # the physics audit's H1, recomputed: the kink's 1,693 bytes per token (above); HBM rented
    # with its chip at 2 USD per chip-hour over 80 GB (prices.toml, tiers.toml); Claude Opus
    # write premiums 1.25 and 5 USD per million tokens for 5 min and 1 h (prices.toml).
    k = 2 * 100e9 * 3.35e12 / (1978.9e12 * 200e3)  # bytes per token
    hbm_rent = 2 / 80e9  # USD per byte-hour
    kink = ctx["kink_cache"]
    assert _num(kink["covers"][0]["cells"][0]) == pytest.approx(
        1.25e-6 / (k * (5 / 60) * hbm_rent), rel=5e-3
    )  # about 354
    assert _num(kink["covers"][1]["cells"][0]) == pytest.approx(5e-6 / (k * hbm_rent), rel=5e-3)
    # holding in HBM beats recomputing (2 x 100e9 FLOP per token at the FP8 peak) less the read
    # back (k bytes at 3.35 TB/s, the chip's 2 USD/h) for the kink's 200,000 tokens less one,
    # times HBM's drain time, 80 GB / 3.35 TB/s: 1.33 h, whatever N or F
    recompute = 2 * 100e9 / 1978.9e12 * 2 / 3600  # USD per token
    read = k / 3.35e12 * 2 / 3600  # USD per token
    hours = (recompute - read) / (k * hbm_rent)
    assert hours == pytest.approx((200e3 - 1) * 80 / 3350 / 3600, rel=1e-3)
    assert _num(kink["hbm_even"]) == pytest.approx(hours, rel=5e-3)
    assert kink["identity"] == kink["hbm_even"]
    # and for Llama 3.1 70B's 327,680 bytes per token the long cache cannot sit in HBM
    assert (
        float(ctx["cache_write"]["rows"][1]["cells"][0]) < 1 < _num(kink["covers"][1]["cells"][0])
    )


def test_the_drain_rule_points_both_lifetimes_to_flash(ctx):
    # tiers.toml: flash 15.36 TB / 13 GB/s = 19.7 min; DRAM 64 GB / 38.4 GB/s; disk 24 TB /
    # 285 MB/s. 5 min is 3.9x from flash and 180x from DRAM; 1 h is 3x from flash, 23x from disk.
    near = ctx["drain_nearest"]
    assert [t["medium"] for t in near["short"]["tiers"]] == ["flash", "DRAM"]
    assert [t["medium"] for t in near["long"]["tiers"]] == ["flash", "disk"]
    flash = 15.36e12 / 13e9
    assert _num(near["short"]["tiers"][0]["off"]) == pytest.approx(flash / 300, rel=1e-2)
    assert _num(near["long"]["tiers"][0]["off"]) == pytest.approx(3600 / flash, rel=2e-2)


def test_every_reading_of_the_cache_lifetimes_in_one_table(ctx):
    # The lecture's drain rule on its guesses (flash ~1 min, disk ~1 h): 5 min is 5x from flash,
    # 12x from disk; 1 h is disk. On the true drain times (flash 19.7 min, disk 23.4 h) both are
    # flash. Break-even nearest the lifetime: Llama 3.1 70B (DRAM 3.7 min, flash 2.4 h); the
    # kink-sized cache's HBM break-even is 200,000 x 23.88 ms = 1.33 h, nearest both lifetimes.
    rows = [(r["lecture"], r["drain"], r["llama"], r["kink"]) for r in ctx["tier_readings"]]
    assert rows == [("flash", "flash", "DRAM", "HBM"), ("disk", "flash", "flash", "HBM")]


def test_kv_mechanics_by_hand(ctx):
    # Llama 3.1 70B: 327,680 bytes per token at BF16, half at FP8; 8,192 tokens; H100 80 GB;
    # 8 KV heads: a 200,000-token cache split by head over 8 chips
    m = ctx["kv_mechanics"]
    assert float(m["bf16_fit"]) == pytest.approx(80e9 / (8192 * 327_680), abs=0.5)
    assert float(m["fp8_fit"]) == pytest.approx(80e9 / (8192 * 163_840), abs=0.5)
    assert _num(m["per_chip"]) == pytest.approx(200_000 * 327_680 / 8 / 1e9, rel=1e-2)


def test_two_price_steps_two_mechanisms_by_hand(ctx):
    # Gemini 2.5 Pro (prices.toml): input 1.25 -> 2.50, output 10 -> 15 USD per million tokens
    steps = ctx["steps"]
    assert (steps["in_step"], steps["out_step"]) == ("2", "1.5")
    rows = {r["name"]: r for r in steps["rows"]}
    # Llama 3.1 405B prefill: attention 2 x 2 x 128 heads x 128 x 126 layers = 8.258 MFLOP per
    # context token, half a prompt on average, against 2 x 405.9e9: 1 + 200e3 / 196,620 = 2.02
    a_pre = 4 * 128 * 128 * 126
    assert float(rows["Llama 3.1 405B"]["prefill"]) == pytest.approx(
        1 + 200e3 * a_pre / (4 * 405.9e9), abs=0.05
    )
    assert steps["closest"]["name"] == "Llama 3.1 405B"  # the input step's 2x
    # Llama 3.1 70B decode on H100 FP8 (1,979 TFLOP/s, 3.35 TB/s): the KV read of 80 x 2 x 8 x
    # 128 bytes per context token equals 2 x 70.6e9 FLOPs at 1,459 tokens; at 200,000 tokens it
    # is 137 times the compute (attention, 2.6 MFLOP per context token, adds only 3.7x)
    l_kv = 2 * 70.6e9 * 3.35e12 / (163_840 * 1979e12)
    assert float(rows["Llama 3.1 70B"]["decode"]) == pytest.approx(200e3 / l_kv, rel=0.04)
    # every real cache is 38 to 140 times dearer at the line (405B 38, 70B 137, as above); the list
    # asks 1.5x
    assert all(float(r["decode"]) > 10 for r in steps["rows"])
    # the output step read as the cost at the line: the corner 1.5x earlier, 1.5 x 1,693 bytes
    assert _num(steps["at_line"]) == pytest.approx(1.5 * 1.693, abs=0.05)


def test_cache_verdict_by_hand(ctx):
    # HBM beats recomputing for the corner context times HBM's drain time (80 GB / 3.35 TB/s):
    # 5 min / 23.88 ms = 12,563 tokens, 1 h / 23.88 ms = 150,750 tokens (3,600 s × 3.35 TB/s /
    # 80 GB exactly), shown at 3 figures; a whole number below a million prints whole
    v = ctx["verdict"]
    short, long_ = v["lifetimes"]
    assert short["hbm_context"] == "12,600 tokens" and long_["hbm_context"] == "150,750 tokens"
    # the kink-sized cache (corner at 200,000 tokens) clears both; Llama's (1,459) neither, and
    # its DRAM break-even (3.7 min) falls short of 5 min, so both go to flash
    assert [(life["llama"], life["kink"]) for life in v["lifetimes"]] == [("flash", "HBM")] * 2
    # KV bytes below which HBM wins for 100e9 active at FP8: 1,693 bytes x 200,000 / 150,750
    assert _num(long_["hbm_below"]) == pytest.approx(1.693 * 200e3 / 150_750, abs=0.05)
    assert [r["medium"] for r in v["rows"]] == ["HBM", "DRAM", "flash", "disk"]


def test_no_duplicate_architectures_and_contexts_in_whole_tokens(ctx):
    # DeepSeek-R1 is DeepSeek-V3's network; Llama 3.3 70B is Llama 3.1 70B's (facts.md, Models)
    names = [r["name"] for r in ctx["models"]["rows"]]
    assert "DeepSeek-R1" not in names and "Llama 3.1 70B" not in names
    assert "Llama 3.3 70B / 3.1 70B" in names and len(names) == len(set(names))
    for table in ("attention", "crossovers"):
        assert not [h for h in ctx[table]["headers"] if "k tokens" in h or "per sequence" in h]
        cells = [c for r in ctx[table]["rows"] for c in r["cells"][-2:]]
        assert not [c for c in cells if "." in c], cells  # a context is a whole count of tokens


def test_disk_never_beats_recomputing_a_llama_cache(ctx):
    # Llama 3.1 70B, 8,192 tokens at BF16: 8192 x 327,680 bytes read from one disk at 285 MB/s
    # takes 9.4 s; one H100 recomputes it in 8192 x (2 x 70.6e9 + 4 x 64 x 128 x 80 x 4096)
    # / 989.4e12 = 1.26 s. The read back alone costs more, so holding there never pays.
    assert 8192 * 327680 / 285e6 > 8192 * (2 * 70.6e9 + 4 * 64 * 128 * 80 * 4096) / 989.4e12
    disk = next(r for r in ctx["tiers"]["rows"] if r["medium"] == "disk")
    assert disk["cells"][-1] == "never"
    assert next(r for r in ctx["verdict"]["rows"] if r["medium"] == "disk")["llama"] == "never"
    assert ctx["retrieval"]["slower"] == ["disk"]


def test_dsa_reads_grow_linearly_with_a_shallower_slope(ctx):
    # DeepSeek-V3.2 (config.json): an index key of 128 values per token and layer, read for every
    # cached token, plus 2,048 MLA entries of 512 + 64 values: from 200,000 tokens to 1e8
    dsa = ctx["long_contexts"]["dsa"]
    read = lambda n: 128 * n + 576 * 2048  # noqa: E731
    assert _num(dsa["growth"]) == pytest.approx(read(1e8) / read(2e5), rel=0.01)  # ~478
    assert _num(dsa["over_dense"]) == pytest.approx(576 * 1e8 / read(1e8), rel=0.01)  # ~4.5
    assert dsa["top_k"] == "2,048"


def test_the_corner_column_counts_attention_s_flops(ctx):
    # the KV read overtakes weights' plus attention's FLOPs: 1 / (1/kv - 1/attention); DeepSeek
    # at FP8 on H100: kv 3,565 and attention 4,355 tokens (reader bl18) -> about 19,650
    rows = {r["name"]: r for r in ctx["steps"]["rows"]}
    assert _num(rows["DeepSeek-V3 / R1"]["corner"]) == pytest.approx(
        1 / (1 / 3565 - 1 / 4355), rel=0.03
    )
    assert _num(rows["Llama 3.1 70B"]["corner"]) == pytest.approx(
        1 / (1 / 1459 - 1 / 53864), rel=0.03
    )


def test_the_dram_row_is_one_dimm_and_a_free_read_back_moves_no_verdict():
    # reader bl18, long-context fault 6: the DRAM tier is one DIMM at its own 38.4 GB/s (JEDEC
    # DDR5-4800: 4800 MT/s x 8 bytes). A host reads many behind one link, so the read back is the
    # part one DIMM gets wrong; with it free the break-even is recompute over rent, and the
    # Llama-style cache still misses the 5-minute lifetime on DRAM.
    from book.chapters import long_context as lc
    from book.context import Evaluator

    presets = load()
    verdict = lc._cache_verdict(presets)
    assert verdict["dram"]["bandwidth"] == "38.4 GB/s"  # 4800e6 * 8 bytes
    ev = Evaluator(presets, lc.HARDWARE, lc.KV_MODEL, tier="dram_ddr5")
    remat, read = ev.q("cache_recompute_cost"), ev.q("cache_readback_cost")
    free = (remat / ev.q("cache_hold_cost")).to("minute").m
    paid = ev.q("cache_breakeven_time").to("minute").m
    assert free == pytest.approx(paid * (remat / (remat - read)).to("").m, rel=1e-9)
    assert paid < free < 5  # minutes: the short cache lifetime's 5
    assert verdict["dram"]["short_of"]


def test_both_steps_are_judged_per_byte_read(ctx):
    # readers blo23 and lr26, fault 1, by hand. Input step 2x at 200,000 tokens for 100e9 active:
    # prefill's attention, a per (query, key) pair over half the prompt on average, equals the
    # weights' 2 x 100e9 at 200,000 tokens: a = 2 x 2 x 100e9 / 200e3 = 2e6 FLOP per context token.
    a = 2 * 2 * 100e9 / 200e3
    both = ctx["both"]
    assert both["attention"] == "2 MFLOP per token"
    # decode attends to the whole context: a x 200e3 = 4e11 = twice the weights' FLOPs -> 3x
    assert float(both["decode_at_line"]) == pytest.approx(1 + a * 200e3 / (2 * 100e9))
    # H100 FP8: 1,979 TFLOP/s, 3.35 TB/s; ridge 591; the kink's 1,693 bytes read per token.
    # The read overtakes weights' and attention's FLOPs at 200,000 tokens when
    # 200e3 k / W = (2 x 100e9 + a x 200e3) / F: k = 1,693 + 2e6 / 591 = 5,079 bytes, 3 x 1,693
    k = 2 * 100e9 * 3.35e12 / (1979e12 * 200e3)
    ridge = 1979e12 / 3.35e12
    corner = (2 * 100e9 + a * 200e3) / 200e3 / ridge
    assert _num(both["corner_bytes"]) == pytest.approx(corner / 1e3, abs=0.05)
    assert float(both["corner_over"]) == pytest.approx(corner / k, abs=0.05)
    # attention per byte READ that takes both steps: 2e6 / 5,079 = 394
    assert _num(both["needed_per_read"]) == pytest.approx(a / corner, rel=0.02)
    # per byte read, whatever the sharing (each attending layer re-reads its bytes): Llama 3.1
    # 70B at FP8, 2 x 2 x 64 heads x 128 per layer over 2 x 8 KV heads x 128 bytes = 16, far
    # below; DeepSeek-V3 absorbed MLA 16.99e6 FLOP over 61 x 576 bytes = 484, above the need
    assert _num(both["gqa_per_read"]) == 4 * 64 * 128 / (2 * 8 * 128)
    assert _num(both["mla_per_read"]) == pytest.approx(16.99e6 / (61 * 576), rel=0.02)
    assert _num(both["gqa_per_read"]) < a / corner < _num(both["mla_per_read"]) < ridge
    # sharing one layer's cache over all 80 layers reads what the unshared model reads: 164 kB
    assert both["shared_read"] == "164 kB per token"
    # DeepSeek-V3's latent reads 35,136 bytes, 6.9 x the 5,079 needed
    assert float(both["mla_over"]) == pytest.approx(61 * 576 / corner, abs=0.05)
    # windows or sparsity keep one part in 163,840 / 1,693 = 97 of the attention: +1%, not +100%
    assert both["kept_add"] == "1%" and both["step_add"] == "100%"


def test_exercises_change_the_worked_examples_inputs(ctx):
    # reader blo23, fault 4: the exercises' inputs differ from the text's, and are right by hand
    ex = ctx["exercise"]
    # a step at DeepSeek-V3's 128K (131,072 tokens) on a GB200 at FP4 (10 PFLOP/s dense, 8 TB/s,
    # hardware.toml): 2 x 100e9 x 8e12 / (10e15 x 131,072) = 1,221 bytes; Llama 3.1 70B at FP8
    # 163,840 bytes is 134 times more; Qwen3-235B's layer: 2 x 4 KV heads x 128 at 1 byte = 1,024
    k = 2 * 100e9 * 8e12 / (10e15 * 131072)
    assert _num(ex["kink"]["bytes"]) == pytest.approx(k / 1e3, abs=0.05)
    assert ex["kink"]["bytes"] != ctx["kink_round"]
    assert float(ex["kink"]["llama_over"]) == pytest.approx(163_840 / k, rel=0.05)
    assert ex["kink"]["layer"] == "1,024 bytes per token"
    assert float(ex["kink"]["layers"]) == pytest.approx(k / 1024, abs=0.05)
    # Qwen3-235B at BF16: 94 layers x 2 x 4 x 128 x 2 bytes = 192,512; 32,768 tokens -> 6.31 GB;
    # an H200's 141 GB holds 22
    w = ex["wall"]
    assert _num(w["per_seq"]) == pytest.approx(192_512 * 32_768 / 1e9, abs=0.05)
    assert float(w["fit"]) == pytest.approx(141e9 / (192_512 * 32_768), abs=0.5)
    # its corner on an H200 at FP8 (1,979 TFLOP/s, 4.8 TB/s): 96,256 KV bytes per context token,
    # attention 2 x 2 x 64 heads x 128 x 94 = 3.08 MFLOP: 2 x 22e9 x 4.8e12 /
    # (1979e12 x 96,256 - 4.8e12 x 3.08e6) = 1,200 tokens
    corner = 2 * 22e9 * 4.8e12 / (1979e12 * 96_256 - 4.8e12 * 4 * 64 * 128 * 94)
    assert _num(w["corner"]) == pytest.approx(corner, rel=0.05)
    # GPT-5 (prices.toml): 1.25 in, 10 out -> 8; Priority 2.50 and 20 -> 8, twice both prices
    r = ex["ratio"]
    assert (r["ratio"], r["priority_ratio"], r["priority_times"]) == ("8", "8", "2")
    assert r["ratio"] != ctx["price_ratio"]["ratio"]


def test_the_tier_figure_draws_the_verdict():
    # reader blo23, fault 5: the markers the figure draws give the tiers the verdict names
    from book.chapters import long_context as lc

    presets = load()
    rows = lc.breakeven_times(presets)
    verdict = lc._cache_verdict(presets)
    for key, life in (("cache_duration_short", 0), ("cache_duration_long", 1)):
        lifetime = presets.parameter[key].value
        for cache in ("llama", "kink"):
            home = next(r["medium"] for r in rows if r[cache] is not None and r[cache] >= lifetime)
            assert home == verdict["lifetimes"][life][cache]


def test_reader_lc27_one_reading_consistent_growth_and_whole_contexts(ctx):
    # reader lc27, faults 2-5, each against hand figures from hardware.toml and the tables above
    g = ctx["generations"]
    # dense BF16: A100 312, H100 989.4, B200 2,250 TFLOP/s -> x3.17, x2.27, x7.21 in all; HBM
    # bandwidth 2.039, 3.35, 8 TB/s -> x1.64, x2.39, x3.92; capacity 80, 80, 180 GB -> x1, x2.25
    assert g["flops"] == {"steps": ["×3.2", "×2.3"], "total": "×7.2"}
    assert g["bandwidth"] == {"steps": ["×1.6", "×2.4"], "total": "×3.9"}
    assert g["capacity"]["steps"][0] == "not at all"
    assert _num(g["capacity"]["total"].lstrip("×")) == pytest.approx(180 / 80, abs=0.05)
    # the kink's two chips at FP8: GB200 5,000 / H100 1,978.9 = x2.53; 8 / 3.35 = x2.39
    assert g["kink"] == {"flops": "×2.5", "bandwidth": "×2.4"}
    # HBM break-even for Llama 3.1 70B: corner 1,459 tokens x 23.88 ms (80 GB / 3.35 TB/s) less
    # one drain = 34.8 s with prefill's attention left out; counting it (2 x 70.6e9 + 2 x 2 x 64
    # x 128 x 80 x 8,192 / 2 FLOPs per prompt token, 7.6% more) the table's 37 s
    v = ctx["verdict"]
    drain = 80e9 / 3.35e12
    assert v["llama_corner"] == "1,459 tokens"
    assert _num(v["hbm_llama_bare"]) == pytest.approx(1458 * drain, abs=0.5)
    attention = 4 * 64 * 128 * 80 * 8192 / 2
    with_attention = (1458 + 1459 * attention / (2 * 70.6e9)) * drain
    assert _num(v["hbm_llama"]) == pytest.approx(with_attention, abs=0.5)
    # the output column spans Llama 3.1 405B's 38 to Llama 3.1 70B's 137 (shown 140)
    assert ctx["steps"]["decode_span"] == "38 to 140"
    # exact presets print whole: DeepSeek-V3's 128K and 32K windows
    assert ctx["exercise"]["kink"]["context"] == "131,072 tokens"
    assert ctx["exercise"]["wall"]["context"] == "32,768 tokens"


def test_new_exercises_transfer_to_another_chip(ctx):
    """Reader lr28: the hold-or-recompute exercise moved to Qwen3-235B on an H200, and the
    bandwidth exercise gained the A100 -> H100 step. Hand figures from the datasheets: Qwen3-235B
    caches 94 layers x 4 KV heads x 2 x 128 values = 96,256 bytes per token at FP8; an H200 does
    1,979 FP8 TFLOP/s over 4.8 TB/s of HBM and holds 141 GB; the A100 80GB reads 2.039 TB/s and
    does 312 BF16 TFLOP/s, the H100 SXM 3.35 TB/s and 989 TFLOP/s."""
    h = ctx["exercise"]["hold"]
    corner = 2 * 22e9 / (96_256 * 1979e12 / 4.8e12)  # about 1,109 tokens
    drain = 141e9 / 4.8e12  # about 29 ms
    assert _num(h["corner"]) == pytest.approx(corner, rel=0.05)
    assert _num(h["drain"]) == pytest.approx(drain * 1e3, rel=0.02)
    assert _num(h["even"]) == pytest.approx((corner - 1) * drain, rel=0.05)
    assert h["fits"] is False  # about 33 s, far short of 5 min
    assert _num(h["needed"]) == pytest.approx(300 / drain, rel=0.05)
    o = ctx["exercise"]["older"]
    assert float(o["factor"]) == pytest.approx((3.35 / 2.039) / (989 / 312), rel=0.02)


def test_the_input_kink_text_says_why_mla_and_whose_curve_overshoots(ctx):
    # reader lr29, clarity (a): the MLA curve in the input panel is DeepSeek's own model. Its
    # latent, 61 layers x (512 + 64) values at FP8 = 35,136 bytes, is 35,136 / 1,693 = 20.8 times
    # the kink's bytes (1,693 as in test_kink_implies_about_1_7_kb)
    both, mla = ctx["both"], ctx["steps"]["mla"]
    assert mla["name"].startswith("DeepSeek-V3")
    assert float(both["mla_over_kink"]) == pytest.approx(61 * 576 / 1693, abs=0.5)  # 2 figures
    # its prefill, at 7.8x the no-context cost at 200,000 tokens (the reader's 7.75), is far
    # past the list's 2x, and its prefill break-even (about 29,600 tokens) is far below 200,000
    assert 7.5 < mla["prefill_x"] < 8
    assert _num(mla["prefill_context"]) < 200_000 / 5


def test_the_two_qwen_corners_are_one_model_and_chip_with_and_without_attention(ctx):
    # reader lr29, contradiction 7: the hold exercise says its corner is the weights' FLOPs alone
    # and names the memory-wall exercise's larger one (attention counted). By hand, as in
    # test_new_exercises_transfer_to_another_chip: 2 x 22e9 x 4.8e12 / (1979e12 x 96,256) = 1,109
    # without attention; with it (3.08 MFLOP per context token) about 1,212
    w, h = ctx["exercise"]["wall"], ctx["exercise"]["hold"]
    assert (w["model"], w["chip"]) == (h["model"], h["chip"])
    bare = 2 * 22e9 * 4.8e12 / (1979e12 * 96_256)
    full = 2 * 22e9 * 4.8e12 / (1979e12 * 96_256 - 4.8e12 * 4 * 64 * 128 * 94)
    assert _num(h["corner"]) == pytest.approx(bare, rel=0.05)
    assert _num(w["corner"]) == pytest.approx(full, rel=0.05)
    assert h["corner"] != w["corner"]  # so the answer names both


def test_the_sharding_and_figure_exercises_by_hand(ctx):
    # reader lr29, exercises: one on the server mechanics, one that reads a figure.
    # Qwen3-235B at BF16 (config.json): 94 layers x 4 KV heads x 2 x 128 values x 2 bytes =
    # 192,512 bytes per token; 200,000 tokens -> 38.5 GB; by head over 4 chips, 9.6 GB each; an
    # H200 node is 8 chips (hardware.toml), so each head's context splits 2 ways: 4.8 GB, and
    # 2.4 GB at FP8
    s = ctx["exercise"]["shard"]
    seq = 192_512 * 200_000 / 1e9
    assert _num(s["seq"]) == pytest.approx(seq, rel=1e-3)
    assert (s["kv_heads"], s["ways"], s["node"]) == ("4", "2", "8 chips")
    assert _num(s["per_head_chip"]) == pytest.approx(seq / 4, abs=0.05)
    assert _num(s["per_node_chip"]) == pytest.approx(seq / 8, abs=0.05)
    assert _num(s["per_node_chip_fp8"]) == pytest.approx(seq / 16, abs=0.05)
    # the kink-sized model's corner is the kink (200,000), so at 10^6 tokens its decode costs
    # 10^6 / 200,000 = 5 times its no-context cost; Llama 3.1 405B at FP8 on an H100: the read
    # equals the weights' FLOPs at 2 x 405.9e9 x 3.35e12 / (1979e12 x 126 x 2 x 8 x 128) = 5,328
    # tokens, so 10x at ten times that, 53,000
    f = ctx["exercise"]["figure"]
    assert (f["inferred"], f["over_kink"], f["out_step"]) == ("5", "5", "1.5")
    kv = 2 * 405.9e9 * 3.35e12 / (1979e12 * 126 * 2 * 8 * 128)
    assert _num(f["kv"]) == pytest.approx(kv, rel=0.02)
    assert _num(f["at"]) == pytest.approx(10 * kv, rel=0.02)
