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
        # a max has no single inverse: it is solved numerically, so it needs its target
        (["solve", "step_time", "--for", "flops"], "give the target with --set step_time="),
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
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: cannot write {blocker}")  # the path that failed, named


def test_the_console_script_exits_with_its_output_whole_and_exit_handlers_run(tmp_path):
    # run() ends the process without Python's teardown (book.cli._exit): what the command wrote
    # must still arrive whole, and exit handlers (temporary folders, logging) must still run
    flag = tmp_path / "handler-ran"
    code = (
        "import atexit, pathlib, sys; "
        f"atexit.register(pathlib.Path({str(flag)!r}).write_text, 'ran'); "
        "sys.argv = ['chalkboard', 'symbols', '--json']; from book.cli import run; run()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    out = io.StringIO()
    assert main(["symbols", "--json"], out=out) == 0
    assert done.returncode == 0, done.stderr
    assert len(out.getvalue()) > 8192  # more than one buffer of output, then the rest
    assert done.stdout == out.getvalue() and flag.read_text() == "ran"


def test_the_console_script_under_cprofile_still_writes_its_profile(tmp_path):
    # a profiler writes its results when the program returns: book.cli._exit must let it
    profile = tmp_path / "cli.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "book.cli", "nope"],
        capture_output=True,
        text=True,
    )
    assert done.stderr.startswith("error: argument command: invalid choice: 'nope'")
    assert profile.stat().st_size > 0


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
        # by hand: Opus output 25 over input 5 USD/Mtoken; DDR5: 64 GB at 38.4 GB/s (tiers.toml);
        # DeepSeek-V3: 256 experts over the lecture's 64 chips
        (["eval", "decode_prefill_ratio_from_prices", "--api", "claude_opus_4_6"], 5.0),
        (["eval", "storage_tier_drain_time", "--tier", "dram_ddr5"], 64 / 38.4),
        # PM1743 flash: 15.36 TB / 13 GB/s = 1,181.5 s, about 20 min (issue 11 acceptance)
        (["eval", "storage_tier_drain_time", "--tier", "flash_nvme"], 15.36e12 / 13e9),
        # H100: NVLink 900 GB/s bidi = 450 GB/s each way over a 400 Gb/s = 50 GB/s port
        (["eval", "hardware_scale_out_penalty", "--hardware", "h100_sxm"], 9.0),
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


def test_sweep_csv_has_units_in_the_header_and_matches_eval():
    import csv

    out = io.StringIO()
    argv = ["sweep", "cost_per_token", "--over", "batch_size=1:10000:5", "--log"]
    argv += ["--hardware", "h100_sxm", "--model", "deepseek_v3", "--unit", "USD/Mtoken", "--csv"]
    assert main(argv, out=out) == 0
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[0] == ["batch_size [seq]", "cost_per_token [USD / Mtok]"]
    batches = [float(r[0]) for r in rows[1:]]
    assert batches == pytest.approx([1, 10, 100, 1000, 10000])
    for r in rows[1:]:
        one = get("cost_per_token").evaluate(
            hardware="h100_sxm", model="deepseek_v3", batch_size=float(r[0])
        )
        assert float(r[1]) == pytest.approx(one.to("USD/Mtoken").m, rel=1e-12)


def test_a_log_sweep_over_a_count_gives_whole_numbers_without_repeats():
    argv = ["sweep", "cost_per_token", "--over", "batch_size=1:1000:40", "--log", "--json"]
    code, out, err = run(*argv, "--hardware", "h100_sxm", "--model", "deepseek_v3")
    assert code == 0, err
    batches = [row[0] for row in json.loads(out)["rows"]]
    assert all(b == int(b) for b in batches), batches  # no 1.19 sequences
    assert batches == sorted(set(batches)) and batches[0] == 1 and batches[-1] == 1000
    assert len(batches) < 40  # 1.19 and 1.42 both round to 1: one row each
    # a measure (not a count) keeps its geometric spacing
    argv = ["sweep", "hbm_drain_time", "--over", "mem_bandwidth=1 TB/s:2 TB/s:3", "--log"]
    code, out, _ = run(*argv, "--hardware", "h100_sxm", "--json")
    assert [r[0] for r in json.loads(out)["rows"]] == pytest.approx([1, 2**0.5, 2])


def test_sweep_json_over_two_inputs():
    out = io.StringIO()
    argv = ["sweep", "crossover_batch", "--over", "mem_bandwidth=1 TB/s:8000 GB/s:3"]
    argv += ["--over", "flops=500 TFLOP/s:2000 TFLOP/s:2", "--model", "deepseek_v3", "--json"]
    assert main(argv, out=out) == 0
    data = json.loads(out.getvalue())
    assert [c["unit"] for c in data["columns"]] == ["TB / s", "TFLOP / s", "seq"]
    assert len(data["rows"]) == 6
    for bw, fl, b in data["rows"]:
        # B* = F / W x (1 byte / 2 FLOP) x 671 / 37 at BF16's 2 bytes: F/W x 671/37
        assert b == pytest.approx(fl / bw * 671 / 37)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sweep", "cost_per_token", "--over", "batch_size=1:10"], "SYMBOL=START:STOP:N"),
        (["sweep", "cost_per_token", "--over", "batch_size=1:10:1"], "N must be"),
        (["sweep", "hbm_drain_time", "--over", "mem_bandwidth=80 GB:1 TB/s:3"], "expected"),
        (["sweep", "hbm_drain_time", "--over", "bandwith=1:2:3"], "did you mean"),
        (["sweep", "hbm_drain_time", "--over", "mem_bandwidth=-1 TB/s:2 TB/s:3"], "positive"),
        (
            ["sweep", "hbm_drain_time", "--over", "mem_bandwidth=1 TB/s:2 TB/s:100000"]
            + ["--over", "hbm_capacity=1 GB:2 GB:100000"],
            "at most 1,000,000",
        ),
    ],
)
def test_sweep_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.splitlines()) == 1 and message in err


def test_sensitivity_prints_a_tornado_sorted_by_size():
    out = io.StringIO()
    argv = ["sensitivity", "crossover_batch", "--hardware", "h100_sxm", "--model", "deepseek_v3"]
    assert main([*argv, "--json"], out=out) == 0
    el = json.loads(out.getvalue())["elasticities"]
    assert el["flops"] == pytest.approx(1) and el["mem_bandwidth"] == pytest.approx(-1)
    out = io.StringIO()
    assert main(argv, out=out) == 0
    assert "|####################" in out.getvalue()


def test_show_lists_dependencies_and_steps():
    out = io.StringIO()
    assert main(["show", "step_time", "--json"], out=out) == 0
    data = json.loads(out.getvalue())
    assert set(data["uses"]) == {"compute_time", "memory_time"}
    assert "cost_per_token" in data["used_by"]


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "my_derivations.py"


def run_cli(*argv, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "book.cli", *argv],
        capture_output=True,
        text=True,
        cwd=cwd or Path(__file__).resolve().parents[2],
    )


def test_python_dash_m_runs_every_helper_the_commands_use():
    # `python -m book.cli symbols` once failed with a NameError: a helper was defined below the
    # `if __name__ == "__main__"` block, so it did not exist yet when the command ran
    done = run_cli("symbols")
    assert done.returncode == 0, done.stderr
    assert "batch_size" in done.stdout and "sequences" in done.stdout


def test_extra_module_adds_equations_to_eval():
    done = run_cli(
        "--extra",
        str(FIXTURE),
        "eval",
        "tokens_per_dollar",
        "--hardware",
        "h100_sxm",
        "--model",
        "deepseek_v3",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    value = json.loads(done.stdout)["value"]
    floor = get("compute_cost_floor").evaluate(hardware="h100_sxm", model="deepseek_v3")
    assert value == pytest.approx(1 / floor.to("USD/Mtoken").m)
    # The whole strict build with the user's chapter in the navigation is tested on the live
    # server, which is started with this module (tests/book/test_serve.py): one build of the
    # book fewer per test session.


def test_extra_module_with_a_unit_error_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from derivations import Equation, Source, register\n"
        "from derivations.notation import flops, mem_bandwidth, ridge_intensity\n"
        "register(Equation(id='bad', title='bad', lhs=ridge_intensity,\n"
        "                  rhs=flops.sym + mem_bandwidth.sym, chapter='x', source=Source('x')))\n"
    )
    done = run_cli("--extra", str(bad), "list")
    assert done.returncode == 2
    assert done.stderr.startswith("error:") and len(done.stderr.splitlines()) == 1
    assert "term 'mem_bandwidth'" in done.stderr and "Traceback" not in done.stderr
    # a missing file loads nothing, so main in this process reads it as the command would
    # (the fresh process's exit status and error line for --extra are the run above)
    code, _, err = run("--extra", str(tmp_path / "missing.py"), "list")
    assert code == 2 and "no such file" in err


def test_problems_json_is_reproducible_and_complete():
    argv = ["problems", "--drill", "--chapter", "batching", "--seed", "9", "--count", "4"]
    argv.append("--json")
    first, second = io.StringIO(), io.StringIO()
    assert main(argv, out=first) == 0 and main(argv, out=second) == 0
    assert first.getvalue() == second.getvalue()
    data = json.loads(first.getvalue())
    assert len(data) == 4
    for p in data:
        assert p["id"].startswith("batching-9-") and p["text"]
        assert p["answer"]["value"] > 0 and "unit" in p["answer"]


def test_problems_text_with_answers():
    out = io.StringIO()
    argv = ["problems", "--drill", "--chapter", "moe", "--seed", "3", "--answers"]
    assert main(argv, out=out) == 0
    text = out.getvalue()
    assert text.count("answer:") == 3 and "given" in text


def test_problems_are_the_authored_ones_by_default():
    from book.problem_bank import modules

    out = io.StringIO()
    argv = ["problems", "--chapter", "batching", "--seed", "3", "--answers", "--json"]
    assert main(argv, out=out) == 0
    data = json.loads(out.getvalue())
    assert [p["id"] for p in data] == [
        f"batching.{m.__name__.rsplit('.', 1)[1]}" for m in modules("batching")
    ]
    assert all(p["title"] and p["solution"] and p["mistakes"] for p in data)
    out = io.StringIO()
    assert main(["problems", "--chapter", "batching", "--count", "1", "--answers"], out=out) == 0
    text = out.getvalue()
    assert text.startswith(f"[{data[0]['id']}] ({data[0]['kind']}) {data[0]['title']}\n    ")
    assert text.count("answer:") == 1


def test_problems_bad_chapter_is_one_line(capsys):
    assert main(["problems", "--chapter", "mo"]) == 2
    assert capsys.readouterr().err == "error: unknown chapter 'mo' (did you mean 'moe'?)\n"


def test_symbols_lists_units_and_defining_equations():
    out = io.StringIO()
    assert main(["symbols", "--json"], out=out) == 0
    rows = {r["name"]: r for r in json.loads(out.getvalue())}
    assert rows["mem_bandwidth"]["unit"] == "byte/s" and rows["mem_bandwidth"]["defined_by"] is None
    assert rows["kv_bytes_per_token"]["defined_by"] == "kv_bytes_per_token"
    assert rows["crossover_batch"]["defined_by"] == "crossover_batch"


def test_problems_filtered_by_kind():
    out = io.StringIO()
    argv = ["problems", "--drill", "--kind", "design", "--seed", "1", "--count", "1", "--json"]
    assert main(argv, out=out) == 0
    data = json.loads(out.getvalue())
    assert {p["kind"] for p in data} == {"design"}
    assert {p["chapter"] for p in data} == {"batching", "moe"}  # the chapters that support it
    out = io.StringIO()
    argv = ["problems", "--drill", "--chapter", "pipeline", "--kind", "concept", "--count", "1"]
    assert main(argv, out=out) == 0
    assert "(concept)" in out.getvalue() and "hint:" in out.getvalue()


def test_problems_bad_kind_is_one_line(capsys):
    assert main(["problems", "--kind", "mult"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "multi" in err
    assert main(["problems", "--kind", "forward"]) == 2  # a kind only the drill has
    err = capsys.readouterr().err
    assert (
        err
        == "error: no authored problem is of kind 'forward' (the formula drill has them: --drill)\n"
    )


# -- mixed precision ------------------------------------------------------------------------------


def test_precision_flags_match_the_python_keywords():
    argv = ["eval", "step_time", "--hardware", "b200", "--model", "deepseek_v3", "--json"]
    argv += ["--precision", "fp8", "--weight-precision", "fp4", "--set", "batch_size=256"]
    code, out, _ = run(*argv)
    data = json.loads(out)
    assert code == 0
    expected = get("step_time").evaluate(
        hardware="b200",
        model="deepseek_v3",
        precision="fp8",
        weight_precision="fp4",
        batch_size=256,
    )
    assert data["value"] == pytest.approx(expected.magnitude, rel=1e-12)
    inputs = data["inputs"]
    assert inputs["weight_bytes_per_value"]["value"] == 0.5  # FP4: half a byte per weight
    assert inputs["kv_bytes_per_value"]["value"] == 1  # FP8
    assert inputs["flops"]["from"] == "hardware b200: dense_flops_fp8"


@pytest.mark.parametrize(
    "flag, value, bytes_per_token",
    [  # Llama 3.1 70B: 2 x 80 layers x 8 KV heads x 128 values per token (facts.md)
        ("--kv-precision", "fp8", 2 * 80 * 8 * 128 * 1),
        ("--kv-precision", "fp4", 2 * 80 * 8 * 128 * 0.5),
        ("--weight-precision", "fp4", 2 * 80 * 8 * 128 * 2),  # weights do not move the cache
        ("--compute-precision", "fp8", 2 * 80 * 8 * 128 * 2),
    ],
)
def test_each_precision_flag_sets_its_own_bytes(flag, value, bytes_per_token):
    code, out, _ = run(
        "eval", "kv_bytes_per_token", "--model", "llama_3_1_70b", flag, value, "--json"
    )
    assert code == 0
    assert json.loads(out)["value"] * 1000 == pytest.approx(bytes_per_token)  # kB/token -> B


def test_compute_precision_flag_picks_the_chips_rate():
    # facts.md: GB200 5,000 TFLOP/s dense FP8; N6: 10,000 dense FP4 per GPU
    argv = ["eval", "ridge_intensity", "--hardware", "gb200_nvl72", "--json"]
    for precision, flops in (("fp8", 5000e12), ("fp4", 10000e12), ("mxfp4", 10000e12)):
        code, out, _ = run(*argv, "--compute-precision", precision)
        assert code == 0
        assert json.loads(out)["value"] == pytest.approx(flops / 8e12)


def test_sweep_and_sensitivity_take_the_precision_flags():
    common = ["--hardware", "h100_sxm", "--model", "deepseek_v3", "--precision", "fp8"]
    code, out, _ = run(
        "sweep", "weight_fetch_time", "--over", "batch_size=4096:8192:2", *common,
        "--weight-precision", "fp4", "--set", "n_chips=8 chip", "--json",
    )  # fmt: skip
    assert code == 0
    # a batch of 4,096 touches every expert ((1 - 8/256)^4096 ~ 1e-57 of them unread), so all
    # 671e9 weights x 0.5 byte over 8 chips x 3.35 TB/s (facts.md) are read, in ms
    assert json.loads(out)["rows"][0][1] == pytest.approx(671e9 * 0.5 / (8 * 3.35e12) * 1e3, 1e-3)
    code, out, _ = run("sensitivity", "crossover_batch", *common, "--compute-precision", "int8")
    assert code == 0 and "flops" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--kv-precision", "fp5"], "--kv-precision: unknown precision 'fp5' (did you mean"),
        (
            ["--weight-precision", "FP4"],
            "--weight-precision: unknown precision 'FP4' (did you mean 'fp4'",
        ),
        (["--compute-precision", "fp16"], "--compute-precision: unknown precision 'fp16'"),
        (["--precision", "bf61"], "--precision: unknown precision 'bf61' (did you mean 'bf16'"),
        (["--compute-precision", "fp4"], "hardware 'h100_sxm' has no dense fp4 FLOP/s figure"),
        (["--compute-precision", "fp4"], "compute precision 'fp4'"),
        (["--set", "bytes_per_value=1 byte/value"], "'bytes_per_value' is not an input"),
    ],
)
def test_bad_precision_input_is_one_error_line(argv, fragment):
    base = ["eval", "step_time", "--hardware", "h100_sxm", "--model", "deepseek_v3"]
    code, out, err = run(*base, "--set", "batch_size=1", *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert fragment in err


def test_no_kv_compute_crossover_is_one_clear_error_line():
    # A100 (facts.md: 312 TFLOP/s BF16 / 2.04 TB/s, about 153 FLOP per byte) with DeepSeek-V3's
    # absorbed MLA (2 x 128 x 1,088 x 61 FLOP per 61 x 576 x 2 bytes of KV, about 242 FLOP per
    # byte): attention alone outruns the KV reads, so the closed form is negative.
    assert 2 * 128 * 1088 * 61 / (61 * 576 * 2) > 312e12 / 2.04e12
    code, out, err = run(
        "eval", "kv_compute_crossover_context", "--hardware", "a100_sxm", "--model", "deepseek_v3"
    )
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "no crossover" in err and "every context" in err and "negative" not in err


# -- small things a newcomer hit (issue 15) ------------------------------------------------------


def test_help_reads_as_plain_text_without_rest_backquotes():
    out = io.StringIO()
    with pytest.raises(SystemExit) as stop:
        from book.cli import make_parser

        make_parser().print_help(out)
        raise SystemExit(0)
    assert stop.value.code == 0
    assert "``" not in out.getvalue()
    assert "The chalkboard command" in out.getvalue()


def test_presets_say_model_sizes_as_eval_does():
    # DeepSeek-V3's 671B total parameters (facts.md), said the way `eval` says it
    code, out, _ = run("presets", "models")
    assert code == 0
    line = next(x for x in out.splitlines() if x.strip().startswith("deepseek_v3 "))
    assert "params_total=671 B parameters" in line
    assert "671,000,000,000" not in out


def test_presets_print_their_sources_when_asked():
    code, out, _ = run("presets", "hardware", "--sources")
    assert code == 0
    h100 = out.split("h100_sxm", 1)[1].split("\n  h200", 1)[0]
    assert "source: N1: NVIDIA H100 Tensor Core GPU datasheet" in h100
    _, plain, _ = run("presets", "hardware")
    assert "source:" not in plain


def test_problems_print_plain_text_in_the_terminal():
    code, out, _ = run("problems", "--seed", "1", "--count", "6", "--answers")
    assert code == 0
    assert "$" not in out and "\\frac" not in out and "\\mathrm" not in out, out
    code, out, _ = run("problems", "--drill", "--seed", "1", "--count", "6", "--answers")
    assert code == 0
    assert "$" not in out and "\\frac" not in out and "\\mathrm" not in out, out


# -- a sweep holds the chip count fixed (issue 23, section 3) ------------------------------------

STEP_SWEEP = ["sweep", "step_time", "--over", "batch_size=1:10000:400"]
STEP_SWEEP += ["--hardware", "h100_sxm", "--model", "deepseek_v3", "--json"]


def _rows(*extra):
    code, out, err = run(*STEP_SWEEP, *extra)
    assert code == 0, err
    return json.loads(out)


def test_a_sweep_over_batch_holds_the_fewest_chips_of_its_largest_point():
    data = _rows()
    names = [c["name"] for c in data["columns"]]
    assert names == ["batch_size", "n_chips", "step_time"]
    assert "held" in data["note"] and "--chips-per-point" in data["note"]
    # DeepSeek-V3 at BF16 on 80 GB H100s, batch 10,000 at 8,192 tokens: (671e9 x 2 B weights +
    # 10,000 x 8,192 x 35,136 KV values x 2 B) / 80 GB = 88.7, so 89 chips, at every point
    assert {row[1] for row in data["rows"]} == {89.0}
    # at a fixed chip count the step only grows with the batch (compute and KV fetch both do)
    steps = [row[2] for row in data["rows"]]
    assert all(b >= a for a, b in zip(steps, steps[1:], strict=False))


def test_the_fewest_chips_at_each_point_is_what_made_the_sweep_jagged():
    data = _rows("--chips-per-point")
    assert [c["name"] for c in data["columns"]] == ["batch_size", "step_time"]
    steps = [row[1] for row in data["rows"]]
    assert any(b < a for a, b in zip(steps, steps[1:], strict=False))  # a chip added: a drop
    assert "note" not in data


def test_a_chip_count_the_user_sets_is_the_one_swept_at():
    data = _rows("--set", "n_chips=64")
    assert [c["name"] for c in data["columns"]] == ["batch_size", "step_time"]
    first = data["rows"][0]
    one = get("step_time").evaluate(
        hardware="h100_sxm", model="deepseek_v3", batch_size=first[0], n_chips=64
    )
    assert first[1] == pytest.approx(one.to("ms").m, rel=1e-12)


def test_a_chip_count_that_cancels_adds_no_column():
    # cost per token: n chips at the price of n, for a step n times shorter
    argv = ["sweep", "cost_per_token", "--over", "batch_size=1:10000:5"]
    code, out, _ = run(*argv, "--hardware", "h100_sxm", "--model", "deepseek_v3")
    assert code == 0 and out.splitlines()[0] == "batch_size [seq],cost_per_token [USD / Mtok]"
