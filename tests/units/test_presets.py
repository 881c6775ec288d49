"""Preset files: every figure sourced and dimension-checked; broken files give one clear error."""

import pytest

from units import Q_, ChalkboardError
from units.presets import load, parse_file

PRESETS = load()

HARDWARE = [
    "a100_sxm",
    "h100_sxm",
    "h200",
    "b200",
    "gb200_nvl72",
    "b300",
    "gb300_nvl72",
    "mi300x",
    "mi325x",
    "mi355x",
    "tpu_v5e",
    "tpu_v5p",
    "tpu_v6e",
    "tpu7x",
    "rubin",
]
MODELS = [
    "deepseek_v3",
    "llama_3_1_8b",
    "llama_3_1_70b",
    "llama_3_1_405b",
    "qwen3_235b_a22b",
    "mixtral_8x7b",
    "kimi_k2",
    "gpt_oss_120b",
]


def test_required_presets_exist():
    assert set(HARDWARE) <= set(PRESETS.ids("hardware"))
    assert set(MODELS) <= set(PRESETS.ids("model"))
    assert {"bf16", "fp8", "fp4", "int8", "mxfp4"} <= set(PRESETS.ids("precision"))
    assert "lecture_gpu" in PRESETS.ids("rental")


def test_every_figure_has_a_unit_and_a_source():
    for kind, table in PRESETS.by_kind.items():
        for preset in table.values():
            assert preset.source_of("source").strip(), (kind, preset.id)
            for name, value in preset.fields.items():
                if hasattr(value, "units"):
                    assert value.magnitude > 0
                    assert preset.source_of(name).strip()


def test_prices_carry_their_date():
    for kind in ("rental", "api"):
        for preset in PRESETS.by_kind[kind].values():
            assert preset.as_of


def test_flops_are_dense_not_the_sparse_headline():
    # facts.md: NVIDIA's H100/H200 headline 1,979 BF16 and 3,958 FP8 TFLOP/s are 2:4-sparse,
    # exactly twice the dense figures.
    for chip in ("h100_sxm", "h200"):
        hw = PRESETS.get("hardware", chip)
        assert hw.dense_flops_bf16.to("TFLOP/s").magnitude == pytest.approx(1979 / 2, rel=1e-3)
        assert hw.dense_flops_fp8.to("TFLOP/s").magnitude == pytest.approx(3958 / 2, rel=1e-3)


# Dense FP4 and INT8 per chip, each the half of a vendor's "with sparsity" figure where the
# vendor states one: (chip, precision, dense TFLOP/s, sparse headline or None, where from).
LOW_PRECISION_RATES = [
    ("a100_sxm", "int8", 624, 1248, "facts.md; NVIDIA A100 spec via N7"),
    ("h100_sxm", "int8", 1978.9, 3957.8, "N1 footnote halves 3,958; N2 matrix column"),
    ("h200", "int8", 1979, 3958, "N7: same compute as H100"),
    ("b200", "fp4", 9000, 18000, "N6 HGX B200 (1,000 W) table"),
    ("b200", "int8", 4500, 9000, "N6"),
    ("gb200_nvl72", "fp4", 10000, 20000, "GB200 NVL72 datasheet 1,440 PFLOPS / 72 GPUs sparse"),
    ("gb200_nvl72", "int8", 5000, 10000, "GB200 datasheet 10 POPS per GPU sparse"),
    ("b300", "fp4", 14000, None, "N11 per-GPU table, without sparsity"),
    ("gb300_nvl72", "fp4", 1.1e6 / 72, None, "facts.md: rack 1.1 EFLOP/s dense over 72 GPUs"),
    ("mi300x", "int8", 2614.9, None, "A1: INT8 equals the FP8 rate"),
    ("mi355x", "fp4", 10050, 20100, "A4/A6: 20.1 PFLOPS FP4/FP6 launch figure, with sparsity"),
    ("mi355x", "int8", 5000, None, "A6: 5 POPS dense (10.1 with sparsity, rounded up)"),
    ("tpu_v5e", "int8", 394, None, "facts.md (G1)"),
    ("tpu_v5p", "int8", 918, None, "N7"),
    ("tpu_v6e", "int8", 1836, None, "facts.md (G3)"),
]


@pytest.mark.parametrize("chip, precision, dense, sparse, where", LOW_PRECISION_RATES)
def test_low_precision_rates_are_dense(chip, precision, dense, sparse, where):
    got = PRESETS.get("hardware", chip).get(f"dense_flops_{precision}").to("TFLOP/s").magnitude
    assert got == pytest.approx(dense, rel=1e-3), where
    if sparse is not None:
        assert got == pytest.approx(sparse / 2, rel=1e-3), where
    assert PRESETS.get("hardware", chip).source_of(f"dense_flops_{precision}").strip()


def test_no_chip_claims_a_rate_it_lacks():
    # Hopper and Ampere have no FP4 tensor cores; the sources disagree on Blackwell Ultra's INT8
    # (N10 4,500 vs N11 150 TOP/s), so none is given and asking for it is an error.
    for chip in ("a100_sxm", "h100_sxm", "h200", "mi300x", "tpu_v5e"):
        assert PRESETS.get("hardware", chip).get("dense_flops_fp4") is None
    for chip in ("b300", "gb300_nvl72", "tpu7x", "rubin"):
        assert PRESETS.get("hardware", chip).get("dense_flops_int8") is None


def test_low_precision_rates_never_fall_below_bf16_where_both_are_given():
    for hw in PRESETS.hardware.values():
        bf16 = hw.get("dense_flops_bf16")
        for name in ("dense_flops_fp8", "dense_flops_fp4", "dense_flops_int8"):
            if bf16 is not None and hw.get(name) is not None:
                assert hw.get(name) >= bf16, (hw.id, name)


def test_precision_presets_by_hand():
    def size(p):
        return PRESETS.get("precision", p).bytes_per_value.to("byte/value").magnitude

    assert (size("bf16"), size("fp8"), size("int8"), size("fp4")) == (2, 1, 1, 0.5)
    # OCP MX v1.0: 32 four-bit values share one 8-bit scale: (32 x 4 + 8) / 32 bits = 4.25 bits
    assert size("mxfp4") == (32 * 4 + 8) / 32 / 8
    assert PRESETS.get("precision", "mxfp4").flops_precision == "fp4"


def test_lecture_rubin_figures():
    rubin = PRESETS.get("hardware", "rubin")
    assert rubin.hbm_capacity == Q_(288, "GB") and rubin.hbm_bandwidth == Q_(20, "TB/s")
    assert rubin.get("dense_flops_bf16") is None  # the lecture gave none


def test_unknown_preset_suggests_closest():
    with pytest.raises(ChalkboardError, match="did you mean 'h100_sxm'"):
        PRESETS.get("hardware", "h100")


def test_presets_are_frozen():
    hw = PRESETS.get("hardware", "h100_sxm")
    with pytest.raises(AttributeError):
        hw.id = "x"
    with pytest.raises(TypeError):
        hw.fields["hbm_capacity"] = Q_(1, "GB")


GOOD = """
[sources]
me = "my own measurement"

[hardware.my_chip]
name = "My chip"
source = "me"
hbm_capacity = "96 GB"
hbm_bandwidth = "4 TB/s"
dense_flops_bf16 = "1000 TFLOP/s"
"""


def test_user_file_is_loaded_and_validated(tmp_path, monkeypatch):
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    extra = load((str(path),))
    assert extra.get("hardware", "my_chip").hbm_bandwidth == Q_(4, "TB/s")
    assert extra.get("hardware", "my_chip").source_of("hbm_bandwidth") == "me: my own measurement"
    monkeypatch.setenv("CHALKBOARD_PRESETS", str(path))
    assert "my_chip" in load().ids("hardware")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[hardware.x\nname=1", "not valid TOML"),
        (GOOD.replace('"4 TB/s"', '"4 TB"'), "hbm_bandwidth: '4 TB' is [information]"),
        (GOOD.replace('"4 TB/s"', '"-4 TB/s"'), "must be positive"),
        (GOOD.replace('hbm_bandwidth = "4 TB/s"\n', ""), "missing required field 'hbm_bandwidth'"),
        (GOOD.replace("hbm_capacity", "hbm_capcity"), "did you mean 'hbm_capacity'"),
        (GOOD.replace("[hardware.my_chip]", "[hardwares.my_chip]"), "unknown preset kind"),
        (GOOD.replace('source = "me"', 'source = "N99"'), "source key 'N99'"),
        (GOOD.replace("[hardware.my_chip]", "[hardware.My-Chip]"), "lower_snake_case"),
        (GOOD.replace('"1000 TFLOP/s"', '"1000 TB/s"'), "dense_flops_bf16"),
    ],
)
def test_malformed_files_raise_one_clear_error(tmp_path, text, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ChalkboardError) as err:
        parse_file(path)
    message = str(err.value)
    assert str(path) in message and fragment in message
    assert "\n" not in message


def test_model_consistency_checks(tmp_path):
    text = """
[model.m]
name = "m"
source = "a model made up for this test"
layers = 2
d_model = 8
n_heads = 6
n_kv_heads = 4
head_dim = 2
attention = "gqa"
vocab = 10
params_total = "1e6 parameter"
params_active = "2e6 parameter"
"""
    path = tmp_path / "m.toml"
    path.write_text(text)
    with pytest.raises(ChalkboardError, match="params_active exceeds params_total"):
        parse_file(path)
    path.write_text(text.replace('"2e6 parameter"', '"1e6 parameter"'))
    with pytest.raises(ChalkboardError, match="multiple of n_kv_heads"):
        parse_file(path)


def test_duplicate_ids_across_files_are_rejected(tmp_path):
    path = tmp_path / "dup.toml"
    path.write_text(GOOD.replace("my_chip", "h100_sxm"))
    with pytest.raises(ChalkboardError, match="already defined"):
        load((str(path),))


def test_a_rack_total_is_stored_per_chip_and_says_so():
    gb300 = PRESETS.get("hardware", "gb300_nvl72")
    # facts.md: GB300 NVL72 is 1.1 EF dense FP4 for its 72 GPUs.
    assert gb300.dense_flops_fp4.to("FLOP/s").magnitude == pytest.approx(1.1e18 / 72)
    assert "over 72 chips" in gb300.source_of("dense_flops_fp4")


@pytest.mark.parametrize(
    "value, fragment",
    [
        ('{ total = "1 PFLOP/s" }', "exactly 'total' and 'chips'"),
        ('{ total = "1 PFLOP/s", chips = 0 }', "positive whole number"),
        ('{ total = "1 PB", chips = 8 }', "dense_flops_fp4: '1 PB' is [information]"),
        ('{ total = "x", chips = 8 }', "only a figure with a unit"),
    ],
)
def test_malformed_rack_totals(tmp_path, value, fragment):
    path = tmp_path / "rack.toml"
    field = "note" if '"x"' in value else "dense_flops_fp4"
    path.write_text(GOOD + f"{field} = {value}\n")
    with pytest.raises(ChalkboardError, match=None) as err:
        parse_file(path)
    assert fragment in str(err.value)
