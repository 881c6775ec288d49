"""The claims audit: every verdict, checked against an independent hand computation."""

import pytest

from book.claims import CLAIMS, VERDICTS, audit_claims, claims_context
from units import ChalkboardError
from units.presets import load

HOLDS, PARTLY, PREMISE, WRONG = VERDICTS

# claim id -> (expected verdict, the figure(s) computed by hand, in the claim's unit)
EXPECTED = {
    # FLOP/byte at BF16 (facts.md): A100 312 / 2.039 = 153, H100 989.4 / 3.35 = 295, B200 2250 / 8
    # = 281: only the A100 misses "about 300", so the claim partly holds
    "ridge_a100": (PARTLY, [312e12 / 2.039e12, 989.4 / 3.35, 2250 / 8]),
    # multiplies per weight byte F b / (c W), facts.md H100: BF16 989.4 TFLOP/s x 2 bytes, FP8
    # 1978.9 x 1 byte, over 2 FLOP x 3.35 TB/s: 295 at both precisions (issue 11, item 5)
    "ridge_h100": (HOLDS, [989.4 * 2 / (2 * 3.35), 1978.9 * 1 / (2 * 3.35)]),
    # both near 300 (the noted caveat, B100 not a preset, no longer changes the verdict)
    "ridge_b200": (HOLDS, [2250 / 8, 2500 / 8]),
    # FLOP/byte x (1 byte / 2 FLOP) x 671/37: H100 FP8 and GB200 FP8, 2.2 and 2.4 times the
    # claimed 2,400; on the lecture's own sparsity of 8 (premise cases) 2,363 and 2,500 land
    "deepseek_crossover": (PREMISE, [1978.9 / 3.35 / 2 * 671 / 37, 5000 / 8 / 2 * 671 / 37]),
    "rubin_drain": (HOLDS, [288 / 20]),  # ms
    "blackwell_drain_seed": (WRONG, [180 / 8, 186 / 8, 288 / 8, 288 / 8]),
    # the notes' 192 GB / 8 TB/s, and the 180 GB the preset exposes (6% short of 24 ms)
    "b200_drain": (PARTLY, [192 / 8, 180 / 8]),
    "worst_latency": (HOLDS, [40]),
    # Issue 11: an MoE at one sequence reads only its active experts, so the gain is about the
    # chip's multiplies per byte of weight (~300) for any model, no longer ~5,700 for DeepSeek
    # (was WRONG: 301 and 5,690, both outside 1000 / 3.16 .. 1000 x 3.16). Ignoring the KV cache
    # (a one-token context), H100 BF16 gives 295 and GB200 FP8 317, 317 just inside the
    # order-of-magnitude band (1000 / 3.16 = 316), a verdict on a 0.2% edge (reader 12). Judged on
    # one chip, the H100 (BF16 Llama 3.1 70B, FP8 DeepSeek-V3), both miss: about 3.3x under the
    # claim. The lecture's own floor reads every weight at a batch of one, which makes the gain
    # the crossover batch, 300 x its sparsity of 8: the premise case, 989.4 x 2 / (2 x 3.35) x 8 =
    # 2,363, lands. Figures checked by hand in the test below.
    "batching_gain": (PREMISE, None),
    "experts_per_gpu": (HOLDS, [256 / 64]),
    "two_racks_half": (HOLDS, [0.5]),
    # per direction (facts.md): NVLink 900 GB/s bidi -> 450 each way, 1.8 TB/s -> 900; a 400 Gb/s
    # port is 50 GB/s each way, 800 Gb/s 100 GB/s: H100 9, GB200 18, GB300 9 (issue 11, item 2)
    "scale_out_8x": (PARTLY, [450 / 50, 900 / 50, 900 / 100]),
    "hopper_640": (HOLDS, [8 * 80]),
    "blackwell_rack": (HOLDS, [72 * 0.186, 72 * 0.288]),
    # 2 k / penalty at one MoE layer, k = 8: the lecture's 8 (DeepSeek, Kimi K2), then the
    # chips' own per direction, H100 450/50 = 9 and GB200 900/50 = 18 (audit L17)
    "traffic_ratio": (PARTLY, [2 * 8 / 8, 2 * 8 / 8, 2 * 8 / 9, 2 * 8 / 18]),
    "one_tb": (HOLDS, [1]),
    "pre_rl": (HOLDS, [1.5]),
    "pre_inf": (HOLDS, [1]),
    "inference_tokens": (HOLDS, [50e6 * 2 * 365.25 / 12 * 86400]),
    "global_inference_tokens": (HOLDS, [500e6 * 2 * 365.25 / 12 * 86400]),
    "chinchilla_2t": (HOLDS, [2e12]),
    "overtrained_100x": (HOLDS, [50e6 * 2 * 365.25 / 12 * 86400 / 2e12]),
    "seed_150t": (WRONG, [50e6 * 2 * 365.25 / 12 * 86400]),
    # kB per token: 2 FLOP x 100e9 x bandwidth / (FLOP/s x 200e3 tokens)
    "kv_from_kink": (HOLDS, [2 * 100e6 * 3.35 / (1978.9 * 200e3), 2 * 100e6 * 8 / (5000 * 200e3)]),
    "kv_check": (HOLDS, [2 * 128 * 8]),
    "output_input": (PARTLY, [25 / 5, 15 / 3, 10 / 1.25, 10 / 1.25, 1.10 / 0.27, 0.42 / 0.28]),
    "cache_hit_10x": (PARTLY, [10, 10, 0.27 / 0.07, 10]),
    # attention FLOPs = weights' FLOPs per decoded token, 2 N / a_dec (models.toml configs):
    # DeepSeek MLA a = 2 x 128 heads x (2 x 512 + 64) x 61 layers; Llama GQA a = 2 x 2 x 64 x 128
    # x 80 (70B) and 2 x 2 x 128 x 128 x 126 (405B), against 2 x the published N_active (37B,
    # 70.6B, 405.9B). All far below 1e6.
    "attention_negligible": (
        WRONG,
        [
            2 * 37e9 / (2 * 128 * (2 * 512 + 64) * 61),
            2 * 70.6e9 / (2 * 2 * 64 * 128 * 80),
            2 * 405.9e9 / (2 * 2 * 128 * 128 * 126),
        ],
    ),
    "hbm_20ms": (HOLDS, [80 / 3.35, 180 / 8, 186 / 8]),
    # hold time = capacity / bandwidth, tiers.toml (issue 11, item 1): 64 GB / 38.4 GB/s;
    # 15.36 TB / 13 GB/s in minutes; 24 TB / 285 MB/s in hours
    "dram_seconds": (HOLDS, [64 / 38.4]),
    # whole devices miss by more than 3.16; the lecture's tenth in use (premise) lands:
    # 1.97 min. The disk claim states the tenth itself, so it is judged on it: 2.34 h
    "flash_minute": (PREMISE, [15.36e3 / 13 / 60]),
    "disk_hour": (HOLDS, [0.1 * 24e12 / 285e6 / 3600]),
    # tokens/s per sequence = 1 / drain time: Rubin 288 GB / 20 TB/s (lecture), GB200 186/8,
    # B200 180/8, H100 80/3.35 (facts.md); only Rubin is within 25% of 64.
    "throughput_64b": (PARTLY, [20e3 / 288, 8e3 / 186, 8e3 / 180, 3.35e3 / 80]),
    # 1 / (6 x 2.5): Anthropic's fast-mode multipliers (facts.md).
    "fast_mode_batch": (HOLDS, [1 / 15]),
}


@pytest.fixture(scope="module")
def audit():
    return audit_claims()


def test_every_claim_has_an_expectation(audit):
    assert set(audit) == set(EXPECTED)


@pytest.mark.parametrize("claim_id", sorted(EXPECTED))
def test_verdict_and_figures(audit, claim_id):
    verdict, figures = EXPECTED[claim_id]
    got = audit[claim_id]
    assert got.verdict == verdict
    if figures is not None:
        values = [c.value.m for c in got.cases]
        assert values == pytest.approx(figures, rel=1e-6)


def test_batching_gain_is_the_chips_multiplies_per_byte_for_any_model(audit):
    dense, sparse = (c.value.m for c in audit["batching_gain"].cases)
    # Llama 3.1 70B, H100 BF16 (facts.md: 989.4 TFLOP/s, 3.35 TB/s), one token of context (the
    # KV cache ignored): (70.6e9 x 2 B + 327,680 B) / 3.35e12 over 2 x 70.6e9 / 989.4e12, which is
    # F b / (2 W) = 989.4 x 2 / (2 x 3.35) = 295 to six figures
    hand_dense = (70.6e9 * 2 + 327680) / 3.35e12 / (2 * 70.6e9 / 989.4e12)
    assert dense == pytest.approx(hand_dense, rel=1e-6)
    assert dense == pytest.approx(989.4 * 2 / (2 * 3.35), rel=1e-5)
    # DeepSeek-V3, H100 FP8 (1,978.9 TFLOP/s, 3.35 TB/s): at one sequence it reads its
    # always-read weights and 8 of 256 experts, about 37.5e9 bytes, plus 61 x 576 bytes of KV:
    # (37.5e9 + 35,136) / 3.35e12 = 11.19 ms over 2 x 37e9 / 1,978.9e12 = 37.4 us, about 299
    hand_sparse = (37.5e9 + 61 * 576) / 3.35e12 / (2 * 37e9 / 1978.9e12)
    assert sparse == pytest.approx(hand_sparse, rel=0.01)
    # both under 1000 / 3.16 = 316: the premise (every weight read, sparsity 8) lands instead
    (premise,) = (c.value.m for c in audit["batching_gain"].premise_cases)
    assert premise == pytest.approx(989.4 * 2 / (2 * 3.35) * 8, rel=1e-5)


def test_a_preset_change_flips_a_verdict(tmp_path):
    # An A100 with half the bandwidth would reach the lecture's 300 FLOP/byte.
    extra = tmp_path / "a100.toml"
    extra.write_text(
        '[hardware.a100_half_bw]\nname = "A100, half bandwidth"\nsource = "test"\n'
        'dense_flops_bf16 = "312 TFLOP/s"\nhbm_capacity = "80 GB"\nhbm_bandwidth = "1.02 TB/s"\n'
    )
    claims = tmp_path / "claims.toml"
    claims.write_text(
        CLAIMS.read_text().replace(
            'cases = [{ hardware = "a100_sxm" }, ', 'cases = [{ hardware = "a100_half_bw" }, '
        )
    )
    audit = audit_claims(load((str(extra),)), claims)
    assert audit["ridge_a100"].verdict == HOLDS


def test_malformed_claims_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "claims.toml"
    bad.write_text("[claim.x\n")
    with pytest.raises(ChalkboardError, match="cannot read claims"):
        audit_claims(path=bad)


def test_page_context_counts_every_claim():
    ctx = claims_context()
    assert sum(ctx["counts"].values()) == ctx["total"] == len(EXPECTED)
    assert sum(len(ch["rows"]) for ch in ctx["chapters"]) == len(EXPECTED)


def test_every_verdict_shows_its_tolerance_and_the_reason_for_it():
    import tomllib

    data = tomllib.loads(CLAIMS.read_text())
    reasons = {name: std["reason"] for name, std in data["standard"].items()}
    rows = [r for ch in claims_context()["chapters"] for r in ch["rows"]]
    for row in rows:
        standard = data["claim"][row["id"]]["standard"]
        assert row["judged"].endswith(": " + reasons[standard]), row["id"]
    judged = {r["id"]: r["judged"] for r in rows}
    assert judged["rubin_drain"].startswith("within ±25%")  # said as "about 15 ms"
    assert judged["flash_minute"].startswith("within a factor of 3.16")  # a guess from memory
    assert judged["hopper_640"].startswith("within ±1%")  # 8 x 80 GB, worked out exactly


def _claims_with(tmp_path, old, new):
    path = tmp_path / "claims.toml"
    text = CLAIMS.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_claim_cannot_set_its_own_tolerance(tmp_path):
    path = _claims_with(
        tmp_path,
        'standard = "about"\nequation = "ridge_intensity"',
        'tolerance = 0.5\nstandard = "about"\nequation = "ridge_intensity"',
    )
    with pytest.raises(ChalkboardError, match="tolerance is set by the claim's standard"):
        audit_claims(path=path)


def test_an_unknown_standard_suggests_the_closest(tmp_path):
    path = _claims_with(tmp_path, 'standard = "about"', 'standard = "abuot"')
    with pytest.raises(ChalkboardError, match="did you mean 'about'"):
        audit_claims(path=path)


def test_a_missed_case_says_its_value_and_the_edge_it_missed(audit):
    # GB200: 2 x 8 / 18 = 0.889 against the bound 1; H100 Llama: 295 against 1000 / 3.16 = 316
    assert "(0.889, under 1)" in audit["traffic_ratio"].caveat
    assert "(18, over 10)" in audit["scale_out_8x"].caveat  # 900 / 50 against 8 x 1.25
    assert audit["b200_drain"].said_by.startswith("this book")  # the 24 ms is its own check


# -- the one verdict rule ----------------------------------------------------------------------

# each standard's band as a ratio of computed over claimed (claims.toml's [standard] tables,
# restated here): exact 1%, rounded 5%, about 25%, range 5% past either end, bound none, order
# a factor of 3.16 (half a decade) either way
BANDS = {"exact": 0.01, "rounded": 0.05, "about": 0.25, "range": 0.05, "bound": 0.0}
ORDER = 3.16


def _lands(value, raw) -> bool:
    """Whether one computed value lands within its claim's standard, by the ratio to the
    claimed figure (or to the nearer end of a claimed range)."""
    from units import Q_

    def read(text):
        return Q_(text) if " " in str(text) else Q_(float(text))

    low = read(raw.get("expected", raw.get("expected_low")))
    high = read(raw["expected"]) if "expected" in raw else raw.get("expected_high")
    high = read(high) if isinstance(high, str) else high
    value = value.to(low.units).m
    if raw["standard"] == "order":
        return low.m / ORDER <= value and (high is None or value <= high.to(low.units).m * ORDER)
    band = BANDS[raw["standard"]]
    above = high is None or value <= high.to(low.units).m * (1 + band)
    return low.m * (1 - band) * (1 - 1e-12) <= value and above


def rule_disagreements(audit) -> list[str]:
    """The claims whose verdict is not the one rule's: every case landing, holds; some,
    partly holds; none, premise wrong, method right when every premise case lands,
    else wrong."""
    import tomllib

    raw = tomllib.loads(CLAIMS.read_text(encoding="utf-8"))["claim"]
    off = []
    for cid, v in audit.items():
        hits = [_lands(c.value, raw[cid]) for c in v.cases]
        premise = [_lands(c.value, raw[cid]) for c in v.premise_cases]
        if all(hits):
            rule = HOLDS
        elif any(hits):
            rule = PARTLY
        elif premise and all(premise):
            rule = PREMISE
        else:
            rule = WRONG
        if v.verdict != rule:
            off.append(f"{cid}: {v.verdict!r}, the rule says {rule!r}")
    return off


def test_every_verdict_follows_the_one_rule(audit):
    assert rule_disagreements(audit) == []
    assert {v.verdict for v in audit.values()} == set(VERDICTS)  # every label is in use


def test_the_rule_check_finds_a_label_that_disagrees(audit):
    from dataclasses import replace

    # the old labels: a premise slip called wrong, a noted caveat downgrading a hit
    bad = dict(audit)
    bad["deepseek_crossover"] = replace(audit["deepseek_crossover"], verdict=WRONG)
    bad["ridge_b200"] = replace(audit["ridge_b200"], verdict=PARTLY)
    found = rule_disagreements(bad)
    assert [f.split(":")[0] for f in found] == ["ridge_b200", "deepseek_crossover"]


def test_a_premise_needs_its_cases(tmp_path):
    path = _claims_with(tmp_path, "premise_cases = [\n  {", "premise_cases_x = [\n  {")
    with pytest.raises(ChalkboardError, match="a premise needs premise_cases"):
        audit_claims(path=path)


def test_the_page_states_the_rule_and_shows_the_premise(audit):
    ctx = claims_context()
    assert ctx["counts"][PREMISE] == sum(v.verdict == PREMISE for v in audit.values()) >= 1
    assert [s["name"] for s in ctx["standards"]][:2] == ["exact", "rounded"]
    rows = {r["id"]: r for ch in ctx["chapters"] for r in ch["rows"]}
    # facts.md H100 FP8: 1978.9 / (2 x 3.35) = 295.4 multiply-adds per weight read, times 8
    assert rows["deepseek_crossover"]["premise_computed"].startswith("2,363 sequences")
    assert "sparsity of 8" in rows["deepseek_crossover"]["premise"]
