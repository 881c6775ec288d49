"""Input resolution: presets, overrides, defaults, and the errors for each kind of bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import derivations
from derivations import get
from derivations.inputs import reachable
from tests.strategies import PRESETS, log_uniform
from units import Q_, ChalkboardError
from units.presets import load


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
        context_length="1 token/sequence",
    )
    # 671e9 one-byte weights (plus one token of KV) over 80e9-byte chips: 8.39 -> 9 chips
    assert r.inputs["n_chips"].value.magnitude == 9


def test_fp4_selects_the_fp4_figure_and_half_a_byte():
    r = get("crossover_batch").evaluate_detailed(
        hardware="gb300_nvl72", model="deepseek_v3", precision="fp4"
    )
    assert r.inputs["flops"].origin == "hardware gb300_nvl72: dense_flops_fp4"
    assert r.inputs["weight_bytes_per_value"].value.to("byte/value").magnitude == 0.5
    hand = 1.1e18 / 72 / 8e12 * 0.5 / 2 * 671 / 37  # facts.md rack FP4, 8 TB/s, DeepSeek-V3
    assert r.value.magnitude == pytest.approx(hand, rel=1e-9)


# -- mixed precision: weights, KV cache and math each at their own precision ---------------------

PRECISION_IDS = PRESETS.ids("precision")
CHIPS = Q_(8, "chip")  # a fixed replica: the default chip count itself depends on the bytes stored


def _rates(hardware) -> list[str]:
    """The precisions whose dense rate the chip publishes (mxfp4 runs at the fp4 rate)."""
    return [
        p.id
        for p in PRESETS.precision.values()
        if hardware.get(f"dense_flops_{p.get('flops_precision', p.id)}") is not None
    ]


@st.composite
def serving_case(draw) -> dict:
    """A chip with a published rate at the drawn precision, a model, a batch and a context."""
    hardware = draw(st.sampled_from([h for h in PRESETS.hardware.values() if _rates(h)]))
    return dict(
        hardware=hardware.id,
        model=draw(st.sampled_from(PRESETS.ids("model"))),
        precision=draw(st.sampled_from(_rates(hardware))),
        batch_size=Q_(draw(log_uniform(low=1, high=1e4)), "sequence"),
        context_length=Q_(draw(log_uniform(low=128, high=1e6)), "token/sequence"),
        n_chips=CHIPS,
    )


def _seconds(eq_id, **kw) -> float:
    return get(eq_id).evaluate(**kw).to("s").magnitude


@given(serving_case(), st.sampled_from(PRECISION_IDS))
def test_a_kv_only_precision_change_leaves_the_weight_fetch_time(case, kv):
    before = _seconds("weight_fetch_time", **case)
    assert _seconds("weight_fetch_time", **case, kv_precision=kv) == before
    # ...while the KV-fetch time follows the KV-cache precision's bytes per value
    ratio = (
        (
            PRESETS.get("precision", kv).bytes_per_value
            / PRESETS.get("precision", case["precision"]).bytes_per_value
        )
        .to("")
        .magnitude
    )
    kv_time = _seconds("kv_fetch_time", **case, kv_precision=kv)
    assert kv_time == pytest.approx(_seconds("kv_fetch_time", **case) * ratio, rel=1e-12)


@given(serving_case(), st.sampled_from(PRECISION_IDS))
def test_a_weight_only_precision_change_leaves_the_kv_fetch_time(case, weights):
    before = _seconds("kv_fetch_time", **case)
    assert _seconds("kv_fetch_time", **case, weight_precision=weights) == before
    assert _seconds("compute_time", **case, weight_precision=weights) == _seconds(
        "compute_time", **case
    )
    ratio = (
        (
            PRESETS.get("precision", weights).bytes_per_value
            / PRESETS.get("precision", case["precision"]).bytes_per_value
        )
        .to("")
        .magnitude
    )
    weight_time = _seconds("weight_fetch_time", **case, weight_precision=weights)
    assert weight_time == pytest.approx(_seconds("weight_fetch_time", **case) * ratio, rel=1e-12)


@given(serving_case(), st.data())
def test_a_compute_precision_change_changes_only_the_compute_time(case, data):
    hardware = PRESETS.get("hardware", case["hardware"])
    compute = data.draw(st.sampled_from(_rates(hardware)))
    for eq_id in ("weight_fetch_time", "kv_fetch_time"):
        assert _seconds(eq_id, **case, compute_precision=compute) == _seconds(eq_id, **case)

    def rate(p):
        return hardware.get(f"dense_flops_{PRESETS.get('precision', p).get('flops_precision', p)}")

    ratio = (rate(case["precision"]) / rate(compute)).to("").magnitude
    got = _seconds("compute_time", **case, compute_precision=compute)
    assert got == pytest.approx(_seconds("compute_time", **case) * ratio, rel=1e-12)


# Every equation that reads a precision, on a case where the three differ from the default
# (the cheap test first: ``evaluable`` expands the equation, at collection, in every xdist worker).
PRECISION_READERS = [
    eq.id
    for eq in derivations.equations()
    if {"flops", "weight_bytes_per_value", "kv_bytes_per_value", "activation_bytes_per_value"}
    & set(reachable(eq))
    and eq.evaluable
]


@pytest.mark.parametrize("eq_id", PRECISION_READERS)
@pytest.mark.parametrize("precision", ["fp8", "fp4"])
def test_the_shorthand_equals_setting_all_three(eq_id, precision):
    eq = get(eq_id)
    case = {
        k: v
        for k, v in dict(
            batch_size="64 sequence",
            micro_batch="64 sequence",
            training_chips="10000 chip",  # inputs no preset gives
            training_chip_hours="3e6 chip*hour",
            input_output_ratio=1.0,  # the validation chapter's workload inputs
            input_tokens="1000 token",
            measured_rate="1000 token/s/chip",
            training_sequence="4096 token",
            head_dim="128 value/head",  # the attention-aware training bound on an MLA model
            n_kv_heads="128 head",  # a gated layer's activations on MLA (K and V per head)
        ).items()
        if k in reachable(eq)
    }
    case.update(
        hardware="gb200_nvl72", model="deepseek_v3", tier="flash_nvme", api="claude_opus_4_6"
    )
    shorthand = eq.evaluate(**case, precision=precision)
    spelled = eq.evaluate(
        **case,
        precision="bf16",
        weight_precision=precision,
        kv_precision=precision,
        compute_precision=precision,
    )
    assert spelled.to(shorthand.units).magnitude == pytest.approx(shorthand.magnitude, rel=1e-12)


def test_fp4_weights_fp8_kv_and_math_on_an_h100_by_hand():
    # The H100 has no FP4 tensor cores, but FP4 weights with FP8 math (W4A8) run on it: the
    # weights are read at half a byte and multiplied at the FP8 rate. facts.md: 1,978.9 TFLOP/s
    # FP8 dense, 3.35 TB/s; DeepSeek-V3 671B total, 37B active; MLA caches 61 x (512 + 64) values
    # per token (stored at 1 byte in FP8).
    case = dict(hardware="h100_sxm", model="deepseek_v3", n_chips=CHIPS, batch_size=256)
    r = get("step_time").evaluate_detailed(**case, precision="fp8", weight_precision="fp4")
    assert r.inputs["weight_fetch_time"].value.to("s").magnitude == pytest.approx(
        671e9 * 0.5 / (8 * 3.35e12), rel=1e-3
    )
    assert r.inputs["kv_fetch_time"].value.to("s").magnitude == pytest.approx(
        256 * 8192 * 61 * 576 * 1 / (8 * 3.35e12), rel=1e-3
    )
    # compute: 2 FLOP per active parameter plus MLA's absorbed attention, 2 x 128 heads x
    # (2 x 512 + 64) x 61 layers FLOP per token of the default 8,192-token context
    attention = 2 * 128 * (2 * 512 + 64) * 61 * 8192
    assert r.inputs["compute_time"].value.to("s").magnitude == pytest.approx(
        256 * (2 * 37e9 + attention) / (8 * 1978.9e12), rel=1e-3
    )
    assert r.inputs["weight_bytes_per_value"].origin == "weight precision fp4: bytes_per_value"
    assert r.inputs["kv_bytes_per_value"].origin == "KV-cache precision fp8: bytes_per_value"
    assert r.inputs["flops"].origin == "hardware h100_sxm: dense_flops_fp8"


def test_fp4_weights_halve_the_crossover_at_the_same_math():
    # B* = F b_w / (c W) x sparsity: FP4 weights at FP8 math halve b_w and so B*.
    # facts.md: B200 4,500 TFLOP/s FP8 dense, 8 TB/s; DeepSeek-V3 671B / 37B.
    got = get("crossover_batch").evaluate(
        hardware="b200", model="deepseek_v3", precision="fp8", weight_precision="fp4"
    )
    assert got.magnitude == pytest.approx(4500e12 / 8e12 * 0.5 / 2 * 671 / 37, rel=1e-9)


def test_kv_precision_sets_the_kv_bytes_per_token():
    # Llama 3.1 70B: 2 x 80 layers x 8 KV heads x 128 values, at 1 byte (FP8) or 0.5 (FP4)
    for precision, size in (("fp8", 1), ("fp4", 0.5), ("int8", 1), ("bf16", 2)):
        got = get("kv_bytes_per_token").evaluate(model="llama_3_1_70b", kv_precision=precision)
        assert got.to("byte/token").magnitude == 2 * 80 * 8 * 128 * size
    # the weight precision does not touch it
    got = get("kv_bytes_per_token").evaluate(model="llama_3_1_70b", weight_precision="fp4")
    assert got.to("byte/token").magnitude == 2 * 80 * 8 * 128 * 2


def test_mxfp4_counts_its_block_scale_and_runs_at_the_fp4_rate():
    r = get("crossover_batch").evaluate_detailed(
        hardware="b200", model="deepseek_v3", precision="mxfp4"
    )
    # OCP MX: 32 FP4 values share one 8-bit scale, (32 x 4 + 8) / 32 / 8 bytes per value
    assert r.inputs["weight_bytes_per_value"].value.magnitude == (32 * 4 + 8) / 32 / 8
    assert r.inputs["flops"].origin == "hardware b200: dense_flops_fp4 (compute precision mxfp4)"
    # facts.md / N6: B200 9,000 TFLOP/s dense FP4 (18,000 sparse), 8 TB/s
    hand = 9000e12 / 8e12 * (4.25 / 8) / 2 * 671 / 37
    assert r.value.magnitude == pytest.approx(hand, rel=1e-9)


def test_int8_uses_the_chips_int8_rate():
    # facts.md: A100 INT8 624 TOP/s dense, 2.039 TB/s; one byte per weight
    got = get("crossover_batch").evaluate(
        hardware="a100_sxm", model="deepseek_v3", precision="int8"
    )
    assert got.magnitude == pytest.approx(624e12 / 2.039e12 * 1 / 2 * 671 / 37, rel=1e-9)


@pytest.mark.parametrize(
    "hardware, precision",
    [("h100_sxm", "fp4"), ("h100_sxm", "mxfp4"), ("tpu7x", "int8"), ("b300", "int8")],
)
def test_a_chip_without_a_published_rate_names_the_chip_and_the_precision(hardware, precision):
    with pytest.raises(ChalkboardError) as err:
        get("compute_time").evaluate(
            hardware=hardware,
            model="deepseek_v3",
            precision="fp8",
            compute_precision=precision,
            batch_size=1,
        )
    message = str(err.value)
    assert f"hardware {hardware!r}" in message and f"compute precision {precision!r}" in message
    # the weight and KV-cache precisions never need a rate: FP4 weights on an H100 evaluate
    get("weight_fetch_time").evaluate(
        hardware=hardware, model="deepseek_v3", weight_precision=precision, batch_size=1
    )


@pytest.mark.parametrize(
    "keyword, label", [("weight_precision", "weight"), ("kv_precision", "KV-cache")]
)
def test_unknown_role_precision_suggests_the_closest(keyword, label):
    with pytest.raises(
        ChalkboardError, match=f"unknown {label} precision 'fp5' \\(did you mean .*'fp4'"
    ):
        get("step_time").evaluate(
            hardware="h100_sxm", model="deepseek_v3", batch_size=1, **{keyword: "fp5"}
        )


def test_bytes_per_value_was_split_in_two():
    with pytest.raises(ChalkboardError, match="'bytes_per_value' is not an input"):
        get("weight_fetch_time").evaluate(
            hardware="h100_sxm", model="deepseek_v3", bytes_per_value="1 byte/value"
        )


def test_a_user_precision_may_run_at_another_formats_rate(tmp_path):
    path = tmp_path / "nvfp4.toml"
    path.write_text(
        "[precision.nvfp4]\nname = 'NVFP4'\nsource = 'NVIDIA NVFP4: one FP8 scale per 16 values'\n"
        "bytes_per_value = '0.5625 byte/value'\nflops_precision = 'fp4'\n"
    )
    presets = load(extra=[path])
    r = get("crossover_batch").evaluate_detailed(
        hardware="b200", model="deepseek_v3", precision="nvfp4", presets=presets
    )
    assert r.inputs["flops"].origin == "hardware b200: dense_flops_fp4 (compute precision nvfp4)"
    assert r.inputs["weight_bytes_per_value"].value.magnitude == 0.5625


def test_kv_bytes_per_value_can_be_given():
    # The override the precision file once documented now exists: 1 byte per cached value on
    # Llama 3.1 8B is 2 x 32 layers x 8 KV heads x 128 values (facts.md) = 65,536 B per token.
    r = get("kv_fetch_time").evaluate_detailed(
        hardware="h100_sxm", model="llama_3_1_8b", batch_size=1, kv_bytes_per_value="1 byte/value"
    )
    assert r.inputs["kv_bytes_per_value"].origin == "given"
    assert r.inputs["kv_bytes_per_token"].value.to("byte/token").magnitude == 65536
    assert r.inputs["weight_bytes_per_value"].value.magnitude == 2  # the weights stay BF16


def test_an_input_that_drops_out_is_not_asked_for():
    """A dense model's routed share of 0 makes the experts a batch touches irrelevant: the
    weight fetch needs no batch, no expert counts (issue 23: ask only for what the case needs).
    By hand: 200e9 parameters x 2 bytes / (3.35e12 B/s x 8 chips) = 14.925 ms."""
    case = dict(hardware="h100_sxm", n_total="200 B parameters", n_chips=8)
    t = get("weight_fetch_time").evaluate(**case, routed_weight_share=0)
    assert t.to("ms").m == pytest.approx(200e9 * 2 / (3.35e12 * 8) * 1e3, rel=1e-12)
    detailed = get("weight_fetch_time").evaluate_detailed(**case, routed_weight_share=0)
    assert "batch_size" not in detailed.inputs and "expert_read_fraction" not in detailed.inputs
    # a share above 0 needs the experts a batch touches: the batch is asked for, by name
    with pytest.raises(ChalkboardError, match="missing input 'batch_size'"):
        get("weight_fetch_time").evaluate(**case, routed_weight_share=0.5)
    with pytest.raises(ChalkboardError, match="missing input 'batch_size'"):
        get("weight_fetch_time").evaluate(**case)  # no share given: it needs the model
