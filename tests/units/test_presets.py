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
    assert {"bf16", "fp8", "fp4"} <= set(PRESETS.ids("precision"))
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
