"""The CLI takes values as people type them (issue 23, item 3), on the full library and on the
fast path alike, and grades practice answers from the terminal (issue 21: problems --check)."""

import json

import pytest

# the full-and-fast fixture and the runner are the hostile-input tests' own: one copy
from tests.book.test_hostile import FAST, H100_DSV3, cli_path, run  # noqa: F401 (fixture)


def value(*argv) -> float:
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    return json.loads(out)["value"]


def one_error(*argv, match=""):
    code, out, err = run(*argv)
    assert code == 2 and not out, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error: ") and match in err, err
    return err


EVAL = ["eval", "cost_per_token", *H100_DSV3]
COST = [*EVAL, "--set", "batch_size=64"]


@pytest.mark.parametrize(
    "typed, plain",
    [
        # a context length is the tokens of one sequence
        ("context_length=8192 token", "context_length=8192"),
        ("context_length=8192 tokens", "context_length=8192 token/sequence"),
        ("context_length=128k", "context_length=128000"),
        ("context_length=128k tokens", "context_length=128000 token/sequence"),
        ("context_length=8,192 tokens per sequence", "context_length=8192"),
        # the CLI's own output read back: B before a count noun is billions
        ("n_total=671 B parameters", "n_total=671 Gparameter"),
        ("n_total=671B parameters", "n_total=6.71e11 parameter"),
        ("n_total=0.671 trillion parameters", "n_total=671 Gparameter"),
        ("n_total=6.71 × 10¹¹ parameters", "n_total=671 Gparameter"),
        ("n_total=6.71 x 10^11 parameters", "n_total=671 Gparameter"),
        # rates as the industry writes them
        ("mem_bandwidth=3.35 TBps", "mem_bandwidth=3.35 TB/s"),
        ("mem_bandwidth=3350 GBps", "mem_bandwidth=3.35 TB/s"),
        ("flops=989 TFLOPS", "flops=989 TFLOP/s"),
        ("flops=0.989 PFLOPS", "flops=989 TFLOP/s"),
        ("price_per_chip_hour=$2/chip/hour", "price_per_chip_hour=2 USD/chip/hour"),
        ("price_per_chip_hour=200¢ per chip per hour", "price_per_chip_hour=2 USD/chip/hour"),
    ],
)
def test_values_as_people_type_them(typed, plain):
    assert value(*COST, "--set", typed) == pytest.approx(value(*COST, "--set", plain), rel=1e-12)


@pytest.mark.parametrize("typed", ["15T", "15 trillion", "15,000 B tokens", "15 T tokens"])
def test_scaled_counts_need_no_unit_where_the_display_unit_is_scaled(typed):
    # training tokens are shown in Ttoken; "15T" says its own scale, so it is 15e12 tokens
    loss = ["eval", "chinchilla_loss", "--model", "llama_3_1_70b"]
    expected = value(*loss, "--set", "training_tokens=15e12 token")
    assert value(*loss, "--set", f"training_tokens={typed}") == pytest.approx(expected, rel=1e-12)


def test_prices_per_million_tokens():
    ratio = ["eval", "decode_prefill_ratio_from_prices", "--set", "input_price=3 USD/Mtok"]
    expected = value(*ratio, "--set", "output_price=15 USD/Mtoken")
    assert expected == pytest.approx(5)  # 15 / 3, by hand
    for typed in ("$15/Mtok", "15 USD per million tokens", "$15 per M tokens", "15 $/MTok"):
        got = value(*ratio, "--set", f"output_price={typed}")
        assert got == pytest.approx(expected, rel=1e-12), typed


def test_zero_where_zero_is_legal_and_nowhere_else():
    dense = [
        "eval",
        "weight_fetch_time",
        "--hardware",
        "h100_sxm",
        "--set",
        "n_total=200 B parameters",
        "--set",
        "n_chips=8",
        "--set",
        "batch_size=64",
        "--set",
        "expert_read_fraction=0",
    ]
    # 200e9 parameters x 2 bytes over 8 x 3.35 TB/s = 14.925 ms, by hand (JSON in ms)
    assert value(*dense, "--set", "routed_weight_share=0") == pytest.approx(14.925, rel=1e-3)
    one_error(*EVAL, "--set", "batch_size=0", match="must be positive")
    one_error(*COST, "--set", "mem_bandwidth=0 TB/s", match="must be positive")
    one_error(*dense, "--set", "routed_weight_share=-0.1", match="must be zero or positive")


@pytest.mark.parametrize(
    "typed, hint",
    [
        # a big bare number is a size in the plain unit: the hint converts it
        ("flops=989e12", "flops=989e12 needs a unit, like 989 TFLOP/s (989e12 FLOP/s)"),
        ("n_total=671e9", "n_total=671e9 needs a unit, like 671 B parameters (671e9 parameter)"),
        ("mem_bandwidth=3.35", "mem_bandwidth=3.35 needs a unit, like 3.35 TB/s"),
        ("mem_bandwidth=3.35 tb/s", "unknown unit 'tb' (did you mean 'TB'?)"),
        ("n_total=671B", "B alone means bytes"),
        ("mem_bandwidth=3.35 TB/s/", "a unit is missing around '/'"),
        ("mem_bandwidth=fast", "expected a number followed by a unit, like '3.35 TB/s'"),
        ("context_length=8192 chips", "expected a quantity of [token] / [sequence]"),
    ],
)
def test_refusals_say_how_to_write_it(typed, hint):
    one_error(*COST, "--set", typed, match=hint)


def test_a_bare_preset_capacity_hints_gigabytes(tmp_path):
    path = tmp_path / "chips.toml"
    path.write_text(
        '[hardware.my_chip]\nname = "My chip"\nsource = "a datasheet"\n'
        'hbm_bandwidth = "4 TB/s"\nhbm_capacity = 128\n'
    )
    one_error("--presets", str(path), "presets", match="hbm_capacity=128 needs a unit, like 128 GB")


# -- grading from the terminal ---------------------------------------------------------------


def _drill_id(chapter: str, equation: str) -> str:
    """The formula drill's id (chapter-seed-index) of its first problem on ``equation``: drill
    ids are positions, so they move when the chapter's concept problems change."""
    from book.problems import drill_set

    return next(p.id for p in drill_set(chapter, 0, 8, None, None) if p.equation == equation)


def test_check_grades_an_answer_with_exit_status_and_diagnosis():
    # the batching drill's experts_touched problem at seed 0, its answer by hand from the draw:
    # E_r (1 - (1 - k/E_r)^B) distinct experts, each of B tokens routed to k of E_r at random
    from book.problems import drill_set
    from units.presets import load

    pid = _drill_id("batching", "experts_touched")
    drawn = next(p for p in drill_set("batching", 0, 8, None, None) if p.id == pid)
    model = load().get("model", drawn.choices["model"])
    routed, active = model.get("experts_routed"), model.get("experts_active")
    batch = drawn.choices["batch_size"].to("sequence").magnitude
    touched = round(routed * (1 - (1 - active / routed) ** batch))
    code, out, err = run("problems", "--check", pid, f"{touched} experts")
    assert (code, err) == (0, "") and out.startswith(f"right: {touched} experts")
    code, out, err = run("problems", "--check", pid, f"{10 * touched} experts")
    assert code == 1 and out == "wrong: That is 10 times too large: check your powers of ten.\n"
    code, out, _ = run("problems", "--check", pid, "128 chips")
    assert code == 1 and "That counts chips; the question asks for experts" in out
    code, out, _ = run("problems", "--check", pid, "128 ms", "--json")
    got = json.loads(out)
    assert code == 1 and got["kind"] == "wrong" and got["message"].startswith("That is a time")


def test_check_reads_the_book_s_own_answer():
    from book.problems import answer_text, drill_set

    # a pipeline drill whose answer is a half layer (14.5, 23.5...) printed as a whole number of
    # layers ("14 layers"), further from the answer than its 1% window: the checker must take the
    # solution's own printed answer. Found by its answer, not its place in a set (which moves when
    # a chapter's concept cards change), over the first few seeds.
    drawn = (q for s in range(8) for q in drill_set("pipeline", s))
    p = next(
        q
        for q in drawn
        if str(q.answer.units) == "layer" and q.mode == "relative" and q.answer.magnitude % 1
    )
    printed = answer_text(p)
    whole = float(printed.split()[0])
    assert whole == int(whole) and abs(whole / p.answer.magnitude - 1) > p.tolerance, printed
    code, out, _ = run("problems", "--check", p.id, printed)
    assert code == 0, out
    # the same problem found by id, whatever --seed says
    assert run("problems", "--seed", "5", "--check", p.id, printed)[0] == 0


def test_check_refuses_bad_input_with_one_error_line():
    one_error("problems", "--check", "batching-0-3", "many", match="cannot read 'many'")
    one_error("problems", "--check", "batching-0-3", "12 parsecs", match="unknown unit 'parsecs'")
    one_error("problems", "--check", "batchng-0-3", "1", match="did you mean 'batching'")
    one_error("problems", "--check", "batching-0-x", "1", match="unknown problem")
    one_error("problems", "--check", "batching-0-0", "1", match="did you mean 'batching-0-1'")
    one_error("problems", "--check", "batching-0-3", match="expected 2 arguments")


def test_check_grades_an_authored_problem_and_names_its_listed_mistakes():
    from book.format import quantity
    from book.problems import problem_set

    p = next(q for q in problem_set("moe", 0) if q.id == "moe.two_racks_alltoall")
    code, out, _ = run("problems", "--check", p.id, quantity(p.answer))
    assert code == 0 and out.startswith("right: "), out
    code, out, _ = run("problems", "--check", p.id, quantity(p.answer * 1000))
    assert code == 1 and "1,000 times too large: a unit prefix slipped" in out
    for m in p.mistakes:
        if m.value.dimensionality == p.answer.dimensionality:
            code, out, _ = run("problems", "--check", p.id, quantity(m.value))
            assert (code, out) == (1, f"wrong: {m.why}\n")
    one_error("problems", "--check", "moe.two_rack_alltoall", "3 us", match="did you mean")


def test_check_takes_answers_written_the_way_the_statement_asks():
    # problems-reader20 at seed 419 (issue 21): a per-sequence speed typed as tokens/s (or per
    # user, or bare), and tokens per step, are read in the unit the statement names; per chip
    # and steps are not. The figures are the drawn answers at three figures (within 3%), so the
    # verdicts hold when a problem is redrawn.
    from book.problems import problem_set

    drawn = {q.id: q.answer for ch in ("long_context", "validation") for q in problem_set(ch, 419)}
    speed = f"{drawn['long_context.fast_mode_batch'].to('token/s/sequence').magnitude:.3g}"
    tokens = f"{drawn['validation.faster_than_the_bound'].to('token').magnitude:.3g}"
    for pid, text, code in [
        ("long_context.fast_mode_batch", f"{speed} tokens/s", 0),
        ("long_context.fast_mode_batch", f"{speed} tokens/s per user", 0),
        ("long_context.fast_mode_batch", speed, 0),
        ("long_context.fast_mode_batch", f"{speed} tokens/s per chip", 1),
        ("validation.faster_than_the_bound", f"{tokens} tokens per step", 0),
        ("validation.faster_than_the_bound", tokens, 0),
        ("validation.faster_than_the_bound", f"{tokens} steps", 1),
    ]:
        got, out, err = run("problems", "--seed", "419", "--check", pid, text)
        assert (got, err) == (code, ""), (pid, text, out, err)
        assert out.startswith("right: " if code == 0 else "wrong: That is"), (pid, text, out)
