"""Display forms (derivations/core.py): each equation as a person writes it, proved equal to its
algebra with the unit constants set to 1, and given by ``chalkboard list --json``."""

import dataclasses
import io
import json

import pytest
import sympy as sp

import derivations
from derivations.core import readable, unit_constants
from derivations.derivation import DerivationError

EQUATIONS = derivations.equations()


def test_the_unit_constants_are_u_nu_sigma_and_d0():
    names = {s.name for s in derivations.SYMBOLS.values() if s.sym in unit_constants()}
    assert names == {
        "decode_tokens_per_sequence",  # u
        "vectors_per_token",  # ν
        "sequences_per_token",  # σ
        "fit_token_unit",  # D₀
    }


@pytest.mark.parametrize("eq", EQUATIONS, ids=lambda e: e.id)
def test_every_display_form_is_the_algebra_without_its_unit_constants(eq):
    eq.check_display()  # raises DerivationError unless sympy proves the two equal
    assert not eq.display_expr.free_symbols & set(unit_constants())


@pytest.mark.parametrize(
    "eq_id, shown",
    [
        # the review's cases (book-vs-scaling-book.md, "LaTeX"; issue 22 item 5)
        ("expert_read_fraction", r"1 - \left(1 - \frac{k}{E_{r}}\right)^{B}"),
        ("weight_fetch_time", r"\left(1 - s_{\mathrm{routed}} \left(1 - \phi_{B}\right)\right)"),
        ("moe_layers_per_stage", r"n_{\mathrm{layers}} - n_{\mathrm{dense}}"),
        ("kv_compute_crossover_context", r"{F k_{\mathrm{KV}} - a_{\mathrm{dec}} W}"),
        ("crossover_batch", r"= \frac{F N_{\mathrm{total}} b_{\mathrm{w}}}{c_{\mathrm{fwd}} W"),
        ("pretrain_rl_token_ratio", r"D_{\mathrm{pre}} / D_{\mathrm{RL}} ="),
        ("chinchilla_loss", r"\mathcal{B} D_{\mathrm{pre}}^{- \beta}"),
    ],
)
def test_the_reviewed_formulas_read_as_written(eq_id, shown):
    assert shown in derivations.get(eq_id).display_latex()


def test_a_solved_equation_is_shown_factored():
    # pipeline exercise 3: β = (P - 1)/(m + P - 1) solved for m; sympy gives (β(1-P) + P - 1)/β
    solved = derivations.get("pipeline_bubble_fraction").solve_for("microbatches")
    assert solved.display_latex() == (
        r"m = \frac{\left(1 - \beta_{\mathrm{bubble}}\right) \left(P - 1\right)}"
        r"{\beta_{\mathrm{bubble}}}"
    )
    solved.check_display()


def test_readable_keeps_a_form_that_factoring_would_lengthen():
    a, b, c = sp.symbols("a b c", positive=True)
    assert readable(a + b) == a + b
    assert readable(a * b + a * c) == a * (b + c)  # shorter factored


def test_a_written_form_that_is_not_the_algebra_fails_the_check():
    eq = derivations.get("pipeline_bubble_fraction")
    p, m = (derivations.lookup_symbol(n).sym for n in ("pipeline_stages", "microbatches"))
    wrong = dataclasses.replace(eq, written=(p - 1) / m)  # the small-bubble approximation
    with pytest.raises(DerivationError, match="display form"):
        wrong.check_display()
    right = dataclasses.replace(eq, written=(p - 1) / (p - 1 + m))
    right.check_display()
    assert right.display_latex().startswith(r"\beta_{\mathrm{bubble}} = \frac{P - 1}")


def test_list_json_gives_the_display_form_beside_the_latex():
    from book.cli import main

    out = io.StringIO()
    assert main(["list", "--json"], out, io.StringIO()) == 0
    data = {e["id"]: e for e in json.loads(out.getvalue())}
    phi = data["expert_read_fraction"]
    assert r"B u \nu" in phi["latex"] and phi["display"].endswith(r"\right)^{B}")
    assert all(e["display"] == derivations.get(i).display_latex() for i, e in data.items())
