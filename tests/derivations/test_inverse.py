"""derivations/inverse.py and the solve path: a target price gives its batch, numerically when
the step time and the default chip count depend on the batch; a solve too large is capped."""

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from book.cli import main
from derivations import get
from derivations.inverse import inverse
from units import Q_, ChalkboardError

H100_DSV3 = ["--hardware", "h100_sxm", "--model", "deepseek_v3"]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_the_batch_that_meets_a_price_target_is_solved():
    code, out, err = run(
        "solve", "cost_per_token", "--for", "batch_size", *H100_DSV3,
        "--set", "cost_per_token=1 USD/Mtoken", "--json",
    )  # fmt: skip
    assert code == 0, err
    import json

    data = json.loads(out)
    batch = data["value"]
    assert data["unit"] == "seq" and data["inputs"]["cost_per_token"]["from"] == "given"
    # evaluating at that batch, default chips and all, gives the target back
    back = get("cost_per_token").evaluate(
        hardware="h100_sxm", model="deepseek_v3", batch_size=Q_(batch, "sequence")
    )
    assert back.to("USD/Mtoken").magnitude == pytest.approx(1, rel=1e-9)
    # and a batch 1% smaller costs more: it is the smallest that meets the target
    less = get("cost_per_token").evaluate(
        hardware="h100_sxm", model="deepseek_v3", batch_size=Q_(batch * 0.99, "sequence")
    )
    assert less.to("USD/Mtoken").magnitude > 1


def test_a_memory_bound_batch_by_hand():
    """Llama 3.1 70B on 8 H100s, bf16: the step reads 141 GB of weights and 2.68 GB of KV per
    sequence (80 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes x 8,192 tokens) at 8 x 3.35
    TB/s: 5.27 ms + 0.1 ms per sequence. At 2 USD per chip-hour, 8 chips cost 4.44e-3 USD/s, so
    1 USD per million tokens needs step/B = 0.225 ms: 5.27/B + 0.1 = 0.225, B = 42."""
    given = dict(hardware="h100_sxm", model="llama_3_1_70b", n_chips=8)
    r = inverse(get("cost_per_token"), "batch_size").evaluate_detailed(
        **given, cost_per_token=Q_(1, "USD/Mtoken")
    )
    assert r.value.to("sequence").magnitude == pytest.approx(42, rel=0.03)


def test_a_target_below_the_cost_floor_says_what_the_range_is():
    code, _, err = run(
        "solve", "cost_per_token", "--for", "batch_size", *H100_DSV3,
        "--set", "cost_per_token=0.0001 USD/Mtoken",
    )  # fmt: skip
    assert code == 2 and err.count("\n") == 1
    assert "no batch_size gives cost_per_token = 0.0001 USD per million tokens" in err
    assert "it is between" in err


def test_the_target_must_be_given():
    code, _, err = run("solve", "cost_per_token", "--for", "batch_size", *H100_DSV3)
    assert code == 2 and "--set cost_per_token=VALUE" in err


def test_a_symbolic_solution_stays_symbolic():
    solver = inverse(get("hbm_drain_time"), "mem_bandwidth")
    r = solver.evaluate_detailed(hardware="h100_sxm", hbm_drain_time=Q_(10, "ms"))
    assert r.value.to("TB/s").magnitude == pytest.approx(8.0)  # 80 GB in 10 ms
    assert str(solver.rhs) == "hbm_capacity/hbm_drain_time"


BLOWS_UP = """
from derivations import Chapter, Equation, Source, add_chapter, register, symbol
add_chapter(Chapter("blow", "Blow", "x", ""))
a = symbol("blow_a", "second", "a", "a")
b = symbol("blow_b", "", "b", "b")
c = symbol("blow_c", "second", "c", "c")
register(Equation(id="blow_eq", title="t", lhs=a, rhs=b.sym**99999999 * c.sym, chapter="blow",
                  source=Source("me"), summary="x"))
"""


def test_a_solve_too_large_for_algebra_is_one_error_saying_what(tmp_path):
    path = tmp_path / "blow.py"
    path.write_text(textwrap.dedent(BLOWS_UP))
    # in a process of its own: an --extra file registers its chapter and symbols for the life
    # of the process, which would leak into every later test of this worker
    exe = Path(sys.executable).with_name("chalkboard")
    done = subprocess.run(
        [str(exe), "--extra", str(path), "solve", "blow_eq", "--for", "blow_b",
         "--set", "blow_a=1 s", "--set", "blow_c=2 s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    code, err = done.returncode, done.stderr
    assert code == 2 and err.count("\n") == 1
    assert "the power blow_b**99999999 is too large to solve symbolically" in err


def test_a_slow_solve_is_stopped(monkeypatch):
    import time

    import sympy

    from derivations import core

    def slow(*args, **kwargs):
        time.sleep(30)

    monkeypatch.setattr(core, "MAX_SOLVE_SECONDS", 0.5)
    monkeypatch.setattr(sympy, "solve", slow)
    monkeypatch.setenv("CHALKBOARD_CACHE", "0")  # solve now, not a solution kept by a build
    start = time.monotonic()
    with pytest.raises(ChalkboardError, match="sympy took longer than 0.5 s"):
        get("hbm_drain_time").solve_for("hbm_capacity")
    assert time.monotonic() - start < 10
