"""The chalkboard command: outputs that parse, and one clean error line for every bad input."""

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from book.cli import main
from derivations import get

SOLVE_BANDWIDTH = (
    "solve crossover_batch --for mem_bandwidth --hardware h100_sxm --model deepseek_v3".split()
)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_list_names_every_equation_with_its_symbols():
    code, out, _ = run("list", "--json")
    data = json.loads(out)
    assert code == 0
    ids = {e["id"] for e in data}
    assert {
        "step_time",
        "compute_time",
        "memory_time",
        "cost_per_token",
        "crossover_batch",
        "hbm_drain_time",
        "worst_case_latency",
        "throughput",
    } <= ids
    crossover = next(e for e in data if e["id"] == "crossover_batch")
    assert crossover["chapter"] == "batching"
    assert {"name": "mem_bandwidth", "unit": "byte/s"}.items() <= next(
        s for s in crossover["symbols"] if s["name"] == "mem_bandwidth"
    ).items()
    code, text, _ = run("list")
    assert code == 0 and "crossover_batch" in text


def test_eval_json_matches_the_python_api():
    code, out, _ = run(
        "eval", "crossover_batch", "--hardware", "h100_sxm", "--model", "deepseek_v3", "--json"
    )
    data = json.loads(out)
    assert code == 0
    assert {"id", "value", "unit", "inputs"} <= set(data)
    expected = get("crossover_batch").evaluate(hardware="h100_sxm", model="deepseek_v3")
    assert data["value"] == pytest.approx(expected.magnitude, rel=1e-12)
    assert data["inputs"]["mem_bandwidth"]["from"] == "hardware h100_sxm: hbm_bandwidth"


def test_eval_with_set_and_unit():
    code, out, _ = run(
        "eval",
        "hbm_drain_time",
        "--set",
        "hbm_capacity=288 GB",
        "--set",
        "mem_bandwidth=20 TB/s",
        "--unit",
        "s",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["unit"] == "s" and data["value"] == pytest.approx(0.0144)  # 288e9 / 20e12


def test_solve_returns_the_input_that_was_used():
    code, out, _ = run(
        "eval", "crossover_batch", "--hardware", "h100_sxm", "--model", "deepseek_v3", "--json"
    )
    b_star = json.loads(out)["value"]
    code, out, _ = run(
        *SOLVE_BANDWIDTH,
        "--set",
        f"crossover_batch={b_star!r}",
        "--unit",
        "TB/s",
        "--json",
    )
    assert code == 0
    assert json.loads(out)["value"] == pytest.approx(3.35, rel=1e-9)  # facts.md: H100 3.35 TB/s


def test_presets_json():
    code, out, _ = run("presets", "hardware", "--json")
    data = json.loads(out)
    h100 = next(h for h in data["hardware"] if h["id"] == "h100_sxm")
    assert h100["hbm_bandwidth"]["unit"] == "TB / s" and h100["hbm_bandwidth"]["value"] == 3.35
    code, out, _ = run("presets")
    assert code == 0 and "[rental]" in out and "lecture_gpu" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["eval", "crossover"], "did you mean 'crossover_batch'"),
        (["eval", "crossover_batch", "--hardware", "h100"], "did you mean 'h100_sxm'"),
        (
            [
                "eval",
                "crossover_batch",
                "--hardware",
                "h100_sxm",
                "--model",
                "deepseek_v3",
                "--set",
                "mem_bandwith=3 TB/s",
            ],
            "did you mean 'mem_bandwidth'",
        ),
        (
            ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--set", "mem_bandwidth=80 GB"],
            "expected a quantity of [information] / [time]",
        ),
        (
            ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--set", "mem_bandwidth=0 TB/s"],
            "must be positive",
        ),
        (
            ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--set", "mem_bandwidth=nan TB/s"],
            "expected a number",
        ),
        (
            ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--set", "mem_bandwidth"],
            "SYMBOL=VALUE",
        ),
        (["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--unit", "GB"], "--unit 'GB'"),
        (["eval", "hbm_drain_time"], "missing input"),
        (["solve", "step_time", "--for", "flops"], "no single inverse"),
        (["frobnicate"], "invalid choice"),
        (["eval"], "required"),
        (["list", "--chapter", "batch"], "did you mean 'batching'"),
    ],
)
def test_bad_input_gives_one_error_line_and_status_2(argv, fragment):
    code, out, err = run(*argv)
    assert code == 2
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert fragment in err


def test_malformed_preset_file_is_one_error_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[hardware.x]\nname = 'x'\nsource = 'me'\nhbm_capacity = '80 GB/s'\n")
    code, _, err = run("--presets", str(bad), "presets")
    assert code == 2 and err.startswith(f"error: {bad}") and err.count("\n") == 1


def test_user_preset_file_is_usable(tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text(
        "[hardware.my_chip]\nname = 'Mine'\nsource = 'my bench'\n"
        "hbm_capacity = '100 GB'\nhbm_bandwidth = '5 TB/s'\n"
    )
    code, out, _ = run(
        "--presets", str(mine), "eval", "hbm_drain_time", "--hardware", "my_chip", "--json"
    )
    assert code == 0 and json.loads(out)["value"] == pytest.approx(20.0)  # 100 GB / 5 TB/s in ms


def test_console_script_exits_2_without_traceback():
    exe = Path(sys.executable).with_name("chalkboard")
    done = subprocess.run(
        [str(exe), "eval", "nope"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: unknown equation 'nope'")
    assert "Traceback" not in done.stderr


def test_failed_build_writes_nothing(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("not toml [")
    out = tmp_path / "site"
    code, _, err = run("--presets", str(bad), "build", "--out", str(out))
    assert code == 2 and not out.exists()


def test_solve_needs_the_original_output():
    code, _, err = run(*SOLVE_BANDWIDTH)
    assert code == 2 and "give it with --set crossover_batch=VALUE" in err


def test_unwritable_output_is_one_error_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = run("build", "--out", str(blocker / "site"))
    assert code == 2 and err.startswith("error: cannot write the site") and err.count("\n") == 1


def test_list_into_a_closed_pipe_exits_quietly():
    exe = Path(sys.executable).with_name("chalkboard")
    done = subprocess.run(f"'{exe}' list | head -1", shell=True, capture_output=True, text=True)
    assert done.stdout.count("\n") == 1 and "Traceback" not in done.stderr


def test_eval_kv_bytes_per_token_json_with_a_model_preset():
    out = io.StringIO()
    assert main(["eval", "kv_bytes_per_token", "--model", "llama_3_1_70b", "--json"], out=out) == 0
    data = json.loads(out.getvalue())
    # 2 x 80 layers x 8 KV heads x 128 x 2 bytes (facts.md, derived checks)
    assert data["value"] == pytest.approx(327.68) and data["unit"] == "kB / tok"
    assert data["inputs"]["kv_values_per_token"]["from"].startswith("equation gqa_kv_values")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["eval", "decode_prefill_ratio_from_prices", "--api", "claude_opus_4_6"], 5.0),
        (["eval", "storage_tier_drain_time", "--tier", "dram_ddr5"], 0.1 * 64 / 38.4),
        (["eval", "experts_per_chip", "--model", "deepseek_v3"], 4.0),
    ],
)
def test_eval_with_api_tier_and_model_presets(argv, expected):
    out = io.StringIO()
    assert main([*argv, "--json"], out=out) == 0
    assert json.loads(out.getvalue())["value"] == pytest.approx(expected)


def test_eval_with_a_fit_preset():
    out = io.StringIO()
    argv = ["eval", "chinchilla_loss", "--fit", "epoch_2024", "--json"]
    argv += ["--set", "n_active=70e9 parameter", "--set", "training_tokens=1.4e12 token"]
    assert main(argv, out=out) == 0
    expected = 1.8172 + 482.01 / 70e9**0.3478 + 2085.43 / 1.4e12**0.3658
    assert json.loads(out.getvalue())["value"] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "feistel_inverse"], "verified symbolically"),
        (["eval", "cache_hold_cost", "--tier", "flash"], "did you mean 'flash_nvme'"),
        (["eval", "chinchilla_loss", "--fit", "hofman_2022"], "did you mean 'hoffmann_2022'"),
        (["eval", "decode_prefill_ratio_from_prices"], "missing input 'input_price'.*--api"),
    ],
)
def test_new_preset_kinds_fail_clearly(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.splitlines()) == 1
    assert re.search(message, err)
