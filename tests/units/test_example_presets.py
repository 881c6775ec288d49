"""The README's preset-file example: the tested file, loaded and evaluated; models from their
architecture, and stated parameter counts cross-checked."""

import io
import re
from pathlib import Path

import pytest

from book.cli import main
from derivations import get
from units import ChalkboardError
from units.presets import load, parse_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "tests" / "fixtures" / "example_presets.toml"
MODEL = "llama_3_2_1b"


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_readme_shows_the_tested_example_file():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(
        r"<!-- example-presets:begin -->\n```toml\n(.*?)```\n<!-- example-presets:end -->",
        readme,
        re.S,
    )
    assert block is not None, "README lost its example preset file"
    assert block.group(1) == EXAMPLE.read_text(encoding="utf-8")


def test_example_model_is_counted_from_its_architecture():
    presets = load((str(EXAMPLE),))
    model = presets.get("model", MODEL)
    assert model.get("params_total") is None and model.tied_embeddings is True
    # Hand count from Llama 3.2 1B's config.json: attention 16 x 2048 x 64 x (2 x 32 + 2 x 8)
    # = 167,772,160; MLP 16 x 3 x 2048 x 8192 = 805,306,368; one tied embedding
    # 128,256 x 2048 = 262,668,288; sum 1,235,746,816 (Meta publishes 1.24B).
    total = get("params_total").evaluate(model=MODEL, presets=presets)
    assert total.to("parameter").magnitude == pytest.approx(1_235_746_816)
    active = get("params_active").evaluate(model=MODEL, presets=presets)
    assert active.to("parameter").magnitude == pytest.approx(1_235_746_816)
    # 2 (K and V) x 16 layers x 8 KV heads x 64 values x 2 bytes (BF16) = 32,768 bytes.
    kv = get("kv_bytes_per_token").evaluate(model=MODEL, presets=presets)
    assert kv.to("byte/token").magnitude == pytest.approx(32_768)


def test_example_step_time_uses_the_counted_parameters():
    presets = load((str(EXAMPLE),))
    r = get("step_time").evaluate_detailed(
        hardware="example_chip", model=MODEL, presets=presets, batch_size=64
    )
    assert "states no params_total" in r.inputs["n_total"].origin
    # Weight fetch: 1,235,746,816 parameters x 2 bytes / 4 TB/s = 0.6179 ms (one chip holds it).
    weights = get("weight_fetch_time").evaluate(
        hardware="example_chip", model=MODEL, presets=presets, batch_size=64
    )
    assert weights.to("ms").magnitude == pytest.approx(1_235_746_816 * 2 / 4e12 * 1e3)
    assert r.value >= weights


def test_example_evaluates_from_the_command_line():
    for argv, head in (
        (["params_total", "--model", MODEL], "arch_params_total"),
        (["kv_bytes_per_token", "--model", MODEL], "kv_bytes_per_token"),
        (
            ["step_time", "--hardware", "example_chip", "--model", MODEL, "--set", "batch_size=64"],
            "step_time",
        ),
    ):
        code, out, err = run("--presets", str(EXAMPLE), "eval", *argv)
        assert code == 0, err
        assert out.startswith(head)


def _with(tmp_path, extra: str) -> Path:
    path = tmp_path / "stated.toml"
    path.write_text(EXAMPLE.read_text(encoding="utf-8") + extra)
    return path


def test_a_right_stated_total_passes_the_cross_check(tmp_path):
    path = _with(tmp_path, 'params_total = "1.24e9 parameter"\n')  # Meta's published count
    code, _, err = run("--presets", str(path), "eval", "kv_bytes_per_token", "--model", MODEL)
    assert code == 0, err


def test_a_wrong_stated_total_is_one_error_line_naming_both_figures(tmp_path):
    path = _with(tmp_path, 'params_total = "1.5e9 parameter"\n')
    code, out, err = run("--presets", str(path), "eval", "params_total", "--model", MODEL)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert MODEL in err and "1.5 B parameters" in err and "1.236 B parameters" in err


def test_untied_embeddings_count_a_second_matrix(tmp_path):
    path = _with(tmp_path, "")
    path.write_text(path.read_text().replace("tied_embeddings = true", "tied_embeddings = false"))
    presets = load((str(path),))
    total = get("params_total").evaluate(model=MODEL, presets=presets)
    # One more 128,256 x 2048 matrix.
    assert total.to("parameter").magnitude == pytest.approx(1_235_746_816 + 262_668_288)


@pytest.mark.parametrize(
    "change, fragment",
    [
        (("d_ff = 8192\n", ""), "which needs d_ff"),
        (("tied_embeddings = true", "tied_embeddings = 1"), "expected true or false"),
    ],
)
def test_incomplete_or_malformed_architecture_fails_clearly(tmp_path, change, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(EXAMPLE.read_text(encoding="utf-8").replace(*change))
    with pytest.raises(ChalkboardError, match=fragment):
        parse_file(path)


def test_builtin_models_pass_the_cross_check():
    for model in load().model.values():  # choosing the model runs the cross-check
        assert get("kv_bytes_per_token").evaluate(model=model.id).magnitude > 0


def test_a_builtin_architecture_with_a_wrong_count_fails(tmp_path):
    # DeepSeek-V3's architecture counts 671.0B (facts.md); a stated 700B is 4.3% off.
    text = (ROOT / "units" / "data" / "models.toml").read_text(encoding="utf-8")
    start = text.index("[model.deepseek_v3]")
    block = text[start : text.index("\n\n", start)]
    block = block.replace("deepseek_v3", "deepseek_wrong").replace('"deepseek"', '"DeepSeek"')
    block = block.replace('"671e9 parameter"', '"700e9 parameter"')
    path = tmp_path / "wrong.toml"
    path.write_text(block + "\n")
    presets = load((str(path),))
    with pytest.raises(ChalkboardError, match="stated params_total 700 B parameters"):
        get("kv_bytes_per_token").evaluate(model="deepseek_wrong", presets=presets)


def test_presets_listing_says_the_counts_come_from_the_architecture():
    code, out, _ = run("--presets", str(EXAMPLE), "presets", "models")
    assert code == 0
    line = next(x for x in out.splitlines() if MODEL in x)
    assert "parameters counted from the architecture" in line
