"""Hostile input (issue 10): every reproducer is one ``error:`` line and exit 2, or a correct
exit 0; never a traceback, a hang, a non-finite number or a silently wrong answer.

Every test here runs twice: on the full library, and on the fast path (book/fast.py) with a
cache that holds what each command needs (a first run compiles it)."""

import io
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import book.cli
from book.cli import FAST_COMMANDS, main

H100_DSV3 = ["--hardware", "h100_sxm", "--model", "deepseek_v3"]
FAST = {"on": False}


@pytest.fixture(scope="module", autouse=True, params=["full", "fast"])
def cli_path(request, tmp_path_factory):
    """The path every test of this module runs on (the fast one with its own cache folder)."""
    saved = os.environ.get("CHALKBOARD_CACHE_DIR")
    os.environ["CHALKBOARD_CACHE_DIR"] = str(tmp_path_factory.mktemp("fast-cache"))
    FAST["on"] = request.param == "fast"
    yield request.param
    FAST["on"] = False
    if saved is None:
        del os.environ["CHALKBOARD_CACHE_DIR"]
    else:
        os.environ["CHALKBOARD_CACHE_DIR"] = saved


def _command(argv) -> str | None:
    words = [a for i, a in enumerate(argv) if i == 0 or argv[i - 1] not in ("--presets", "--extra")]
    return next((a for a in words if not a.startswith("-")), None)


def _main(argv, fast) -> tuple[tuple, bool]:
    """``main`` on ``argv``, and whether it filled the fast-start cache after a full run (the
    only step of a run that writes what a later run reads)."""
    filled, real = [], book.cli._fill_cache

    def recorded(*args):
        filled.append(True)
        return real(*args)

    out, err = io.StringIO(), io.StringIO()
    book.cli._fill_cache = recorded
    try:
        code = main(list(argv), out, err, fast=fast)
    finally:
        book.cli._fill_cache = real
    return (code, out.getvalue(), err.getvalue()), bool(filled)


def run(*argv):
    if FAST["on"] and _command(argv) in FAST_COMMANDS:  # compile what the fast path needs
        first, filled = _main(argv, True)
        if not filled:  # answered fast, or failed before any compiling: run again, the same run
            return first
    return _main(argv, FAST["on"])[0]


def one_error(*argv, match=""):
    """Run and assert exit 2 with exactly one ``error:`` line containing ``match``."""
    code, out, err = run(*argv)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert match in err, err
    return err


def preset_file(tmp_path, text, name="mine.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


CHIP = """\
[hardware.my_chip]
name = "My chip"
source = "me"
hbm_bandwidth = "1 TB/s"
"""


# -- worst first: bare numbers (4) and unchecked results (5) -----------------------------------


def test_a_bare_dimensional_set_is_an_error_naming_the_unit():
    one_error(
        "eval",
        "hbm_drain_time",
        "--hardware",
        "h100_sxm",
        "--set",
        "mem_bandwidth=3.35",
        match="--set mem_bandwidth=3.35 needs a unit, like 3.35 TB/s",
    )


def test_a_bare_count_is_read_in_its_unit():
    code, out, _ = run("eval", "cost_per_token", *H100_DSV3, "--set", "batch_size=64", "--json")
    assert code == 0 and json.loads(out)["inputs"]["batch_size"]["value"] == 64


# -- counts that can be told apart: tokens and sequences are dimensions ------------------------


@pytest.mark.parametrize(
    "value, found",
    [("5 chip", "is dimensionless"), ("5 token", "is [token]"), ("5 token/sequence", "is [token]")],
)
def test_a_batch_in_chips_or_tokens_is_not_a_number_of_sequences(value, found):
    # before: counts were dimensionless, so '5 chip' was silently read as 5 sequences
    err = one_error(
        "eval", "cost_per_token", *H100_DSV3, "--set", f"batch_size={value}", match=found
    )
    assert "expected a quantity of [sequence] (like 5 sequence)" in err
    assert "seq)" not in err and " seq " not in err  # the unit spelled out, not pint's 'seq'


def test_a_context_in_tokens_is_the_tokens_of_one_sequence():
    # issue 23: "8192 token" was refused; a context length is the tokens of one sequence, and a
    # bare number is read in tokens per sequence, as a bare batch is in sequences
    for context in ("8192 token", "8192"):
        code, out, _ = run(
            "eval",
            "cost_per_token",
            *H100_DSV3,
            "--set",
            "batch_size=64",
            "--set",
            f"context_length={context}",
            "--json",
        )
        assert code == 0 and json.loads(out)["inputs"]["context_length"]["value"] == 8192
    one_error(
        "eval",
        "cost_per_token",
        *H100_DSV3,
        "--set",
        "context_length=8192 sequence",
        match="expected a quantity of [token] / [sequence] (like 8192 token/sequence)",
    )


def test_over_follows_the_same_rule_as_set():
    # before: a bare --over number was read in the display unit, a bare --set one in base units
    one_error(
        "sweep",
        "hbm_drain_time",
        "--hardware",
        "h100_sxm",
        "--over",
        "mem_bandwidth=1:3:3",
        match="--over mem_bandwidth=1 needs a unit, like 1 TB/s",
    )


def test_python_keywords_follow_the_same_rule():
    from derivations import get
    from units import ChalkboardError

    with pytest.raises(ChalkboardError, match="mem_bandwidth=3.35 needs a unit"):
        get("hbm_drain_time").evaluate(hardware="h100_sxm", mem_bandwidth="3.35")


def test_a_bare_preset_figure_names_the_file_the_field_and_the_unit(tmp_path):
    path = preset_file(tmp_path, CHIP + "hbm_capacity = 80\n")
    one_error(
        "--presets", path, "presets", match=f"{path}: hardware.my_chip.hbm_capacity=80 needs a unit"
    )


def test_overflowing_input_is_an_error_not_inf():
    one_error(
        "eval",
        "cost_per_token",
        *H100_DSV3,
        "--set",
        "batch_size=1e308",
        match="not a finite number",
    )


def test_a_solve_with_no_positive_solution_says_so():
    # five H100s (5 x 80 GB) cannot hold DeepSeek-V3's 671 GB of weights: no batch fits
    one_error(
        "solve",
        "chips_to_fit",
        "--for",
        "batch_size",
        *H100_DSV3,
        "--set",
        "chips_to_fit=5",
        match="no positive solution for batch_size",
    )


def test_underflow_to_zero_in_base_units_is_an_error():
    # 5e-324 USD/GB/hour is 1.4e-336 USD/byte/s in base units: below the smallest double
    one_error(
        "eval",
        "storage_tier_drain_time",
        "--tier",
        "flash_nvme",
        "--set",
        "tier_price=5e-324 USD/GB/hour",
        match="out of range",
    )


def test_json_never_holds_infinity_or_nan():
    code, out, err = run(
        "eval", "cost_per_token", *H100_DSV3, "--set", "batch_size=1e308", "--json"
    )
    assert code == 2 and "Infinity" not in out and "NaN" not in out and out == ""


# -- tracebacks --------------------------------------------------------------------------------


def test_a_400_digit_integer_in_a_preset_file(tmp_path):
    path = preset_file(tmp_path, CHIP + f"hbm_capacity = {'9' * 400}\n")
    one_error("--presets", path, "presets", match="hbm_capacity")


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "cost_per_token", *H100_DSV3, "--set", "batch_size=5 Ytoken**20"],
        ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--unit", "ntoken**99"],
        ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--unit", "10**10**10"],
        ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--unit", "m" * 100_000],
        ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--set", "mem_bandwidth=1 TB**-99/s"],
        ["sensitivity", "cost_per_token", *H100_DSV3, "--set", "batch_size=1e308"],
        ["serve", "--port", "70000"],
        ["sweep", "cost_per_token", *H100_DSV3, "--over", "batch_size=1:100:²"],
        ["sweep", "cost_per_token", *H100_DSV3, "--over", "batch_size=1:100:" + "9" * 5000],
        [
            "sweep",
            "cost_per_token",
            *H100_DSV3,
            "--over",
            "batch_size=1:9:2",
            "--over",
            "batch_size=1:9:3",
        ],
    ],
    ids=[
        "Ytoken**20",
        "ntoken**99",
        "10**10**10",
        "long-unit",
        "TB**-99",
        "sens-1e308",
        "port",
        "superscript-N",
        "5000-digit-N",
        "duplicate-over",
    ],
)
def test_hostile_arguments_give_one_error_line(argv):
    one_error(*argv)


def test_a_huge_but_finite_batch_gives_finite_elasticities():
    """Once a traceback (the old expression overflowed); with the experts-touched weight fetch
    the cost per token at 1e155 sequences is finite and compute-bound: its elasticity to the
    chip's FLOP/s is exactly -1 and to the rent +1 (cost = rent x step FLOPs / FLOP/s)."""
    code, out, err = run("sensitivity", "cost_per_token", *H100_DSV3, "--set", "batch_size=1e155")
    assert code == 0 and err == "", (code, err)
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:] if line.strip()}
    assert float(rows["flops"]) == -1 and float(rows["price_per_chip_hour"]) == 1
    assert "nan" not in out.lower() and "inf" not in out.lower()


def test_a_preset_file_nested_1000_deep(tmp_path):
    path = preset_file(tmp_path, "a = " + "[" * 1000 + "]" * 1000 + "\n")
    one_error("--presets", path, "presets", match="nested too deeply")


def test_dev_zero_and_a_fifo_are_refused_without_reading(tmp_path):
    one_error("--presets", "/dev/zero", "presets", match="not a regular file")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    one_error("--presets", str(fifo), "presets", match="not a regular file")  # never blocks


def test_an_oversized_preset_file(tmp_path):
    path = preset_file(tmp_path, "# " + "x" * 1_100_000 + "\n")
    one_error("--presets", path, "presets", match="larger than")


def test_extra_with_any_extension_runs_as_python(tmp_path):
    path = tmp_path / "my.txt"
    path.write_text("x = 1\n")
    code, _, err = run("--extra", str(path), "list", "--chapter", "batching")
    assert code == 0, err


@pytest.mark.parametrize(
    "body, match",
    [
        ("import sys\nsys.exit(0)\n", "called sys.exit(0)"),
        ("raise GeneratorExit\n", "GeneratorExit"),
        ("raise BaseException('boo')\n", "BaseException: boo"),
        ("raise ValueError('two\\nlines')\n", "ValueError: two lines"),
    ],
)
def test_an_extra_module_that_exits_or_raises_anything_is_one_error(tmp_path, body, match):
    path = tmp_path / f"bad_{abs(hash(body))}.py"
    path.write_text(body)
    one_error("--extra", str(path), "list", match=match)


def test_two_extra_files_with_one_name_in_two_folders_both_load(tmp_path):
    for folder, eq in (("a", "first"), ("b", "second")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "same.py").write_text(
            f"import derivations\nderivations.symbol('hostile_{eq}', 'second', 'x', 'x')\n"
        )
    import derivations

    run(
        "--extra",
        str(tmp_path / "a" / "same.py"),
        "--extra",
        str(tmp_path / "b" / "same.py"),
        "symbols",
    )
    assert {"hostile_first", "hostile_second"} <= set(derivations.SYMBOLS)


def test_closed_stdout_is_one_error_line():
    cmd = [sys.executable, "-m", "book.cli", "list"]
    env = {**os.environ, "CHALKBOARD_FAST": "1" if FAST["on"] else "0"}  # this module's path
    done = subprocess.run(
        " ".join(cmd) + " >&-", shell=True, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


# -- one line means one line; wrong output with exit 0 -------------------------------------------


def test_a_newline_in_a_file_name_stays_on_one_line(tmp_path):
    path = preset_file(tmp_path, "[bogus]\n", name="two\nlines.toml")
    err = one_error("--presets", path, "presets", match="unknown preset kind")
    assert "two lines.toml" in err


def test_a_unit_error_in_a_preset_file_names_the_file_and_field(tmp_path):
    path = preset_file(tmp_path, CHIP + 'hbm_capacity = "80 GQ"\n')
    one_error(
        "--presets", path, "presets", match=f"{path}: hardware.my_chip.hbm_capacity: unknown unit"
    )


def test_an_empty_chapter_is_an_error_not_silence():
    one_error("list", "--chapter", "", match="unknown chapter ''")


def test_a_parameter_that_is_no_symbol_is_an_error(tmp_path):
    path = preset_file(
        tmp_path, '[parameter.not_a_symbol]\nname = "x"\nsource = "me"\nvalue = "3 s"\n'
    )
    one_error(
        "--presets",
        path,
        "eval",
        "hbm_drain_time",
        "--hardware",
        "h100_sxm",
        match="parameter.not_a_symbol: no symbol is named 'not_a_symbol'",
    )


def test_extra_is_documented_as_code(capsys):
    code, _, _ = run("--help")
    out = capsys.readouterr().out  # argparse prints help on sys.stdout
    assert code == 0
    assert "runs FILE as Python with your permissions" in " ".join(out.split())


# -- the invariant over generated hostile arguments ------------------------------------------------

NUMBERS = ["1", "0", "-1", "1e308", "1e-320", "nan", "inf", "3.35", "9" * 500, "5", "1_000", ".5"]
UNITS = [
    "",
    " TB/s",
    " Ytoken**20",
    " ms",
    " chip",
    " sequence",
    " 10**10**10",
    " ²",
    " GB",
    " USD/byte/hour",
    " byte**-99",
    "\n",
    " (",
]
SYMBOLS = ["batch_size", "mem_bandwidth", "tier_price", "chips_to_fit", "context_length", "x"]
IDS = ["cost_per_token", "crossover_batch", "hbm_drain_time", "chips_to_fit", "nope"]

value = st.builds(lambda n, u: n + u, st.sampled_from(NUMBERS), st.sampled_from(UNITS))
setting = st.builds(lambda s, v: ["--set", f"{s}={v}"], st.sampled_from(SYMBOLS), value)
over = st.builds(
    lambda s, a, b, n: ["--over", f"{s}={a}:{b}:{n}"],
    st.sampled_from(SYMBOLS),
    value,
    value,
    st.sampled_from(["2", "3", "0", "²", "x", "9" * 50]),
)
common = st.builds(
    lambda sets, unit, js, tier: [a for s in sets for a in s] + unit + js + tier + H100_DSV3,
    st.lists(setting, max_size=2),
    st.sampled_from([[], ["--unit", "ms"], ["--unit", "ntoken**99"], ["--unit", "USD/Mtoken"]]),
    st.sampled_from([[], ["--json"]]),
    st.sampled_from([[], ["--tier", "flash_nvme"]]),
)
argvs = st.one_of(
    st.builds(lambda i, c: ["eval", i, *c], st.sampled_from(IDS), common),
    st.builds(
        lambda i, f, c: ["solve", i, "--for", f, *c],
        st.sampled_from(IDS),
        st.sampled_from(SYMBOLS),
        common,
    ),
    st.builds(lambda i, o, c: ["sweep", i, *o, *c], st.sampled_from(IDS), over, common),
    st.builds(lambda i, c: ["sensitivity", i, *c], st.sampled_from(IDS), common),
    st.lists(st.text(max_size=12), max_size=4),  # anything at all
)


@settings(max_examples=60, deadline=None)
@given(argvs)
def test_any_arguments_exit_0_with_finite_output_or_2_with_one_error_line(argv):
    code, out, err = run(*argv)
    if code == 0:
        assert err == ""
        for word in ("inf", "nan", "Infinity", "NaN"):
            assert not any(w.strip(",[]{}") == word for w in out.split()), out
        if "--json" in argv:
            json.loads(out, parse_constant=lambda c: pytest.fail(f"non-finite JSON {c}"))
        for line in out.splitlines():
            for cell in line.split(","):
                try:
                    x = float(cell)
                except ValueError:
                    continue
                assert math.isfinite(x)
    else:
        assert code == 2, (argv, code, err)
        assert err.count("\n") == 1 and err.startswith("error: "), (argv, err)


def test_an_unexpected_exception_is_one_line_that_asks_for_a_bug_report(monkeypatch):
    import book.cli

    def broken(args, out):
        raise RuntimeError("boom\nsecond line")

    # `symbols` always runs on the full library (the fast path answers `list` from its cache)
    monkeypatch.setitem(book.cli.COMMANDS, "symbols", broken)
    one_error("symbols", match="internal error (RuntimeError: boom second line); this is a bug")


def test_sys_exit_during_a_command_is_not_a_silent_success(monkeypatch):
    import book.cli

    monkeypatch.setitem(book.cli.COMMANDS, "symbols", lambda args, out: sys.exit(0))
    one_error("symbols", match="sys.exit(0) was called")


def test_serve_passes_relative_presets_as_absolute_paths(tmp_path, monkeypatch):
    # the builder runs in the project folder, so a relative --presets served 404s forever
    from book import serve

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text("")
    seen = {}

    class Stop(Exception):
        pass

    def fake_builder(folder, options):
        seen["command"] = options
        raise Stop

    monkeypatch.setattr(serve, "Builder", fake_builder)
    with pytest.raises(Stop):
        serve.serve(0, extra_presets=("mine.toml",), out=io.StringIO())
    i = seen["command"].index("--presets")
    assert seen["command"][i + 1] == str(tmp_path / "mine.toml")


def test_an_extra_file_that_closes_stdout_is_one_error_line(tmp_path, cli_path):
    if cli_path == "fast":  # --extra turns the fast path off (book.cli.main): the same run twice
        pytest.skip("a command with --extra runs on the full library, as the full case does")
    path = tmp_path / "close.py"
    path.write_text("import sys\nsys.stdout.close()\n")
    done = subprocess.run(
        [sys.executable, "-m", "book.cli", "--extra", str(path), "list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done
    assert done.stderr == (
        "error: standard output was closed during the command; nothing can be printed\n"
    )
