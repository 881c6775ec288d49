"""Max and min give the answers sympy's own code gives, only sooner (derivations.minmax)."""

import itertools

import pytest
import sympy as sp

import derivations
from derivations import minmax

a, b, c = sp.symbols("a b c", positive=True)
n = sp.Symbol("n", positive=True, integer=True)
r = sp.Symbol("r", real=True)  # may be negative: outside what the intervals settle


def sympys(x, y):
    return minmax._original(minmax.MinMaxBase, x, y)


def test_installed():
    assert sp.Max._is_connected.__func__ is minmax._is_connected


@pytest.mark.parametrize(
    "x, y",
    [
        (a, a + b),  # ordered: sympy proves it
        (a * b, c),  # not ordered, a sign change at the sample points
        (a / n, b),
        (sp.exp(a) - 1, a),  # ordered, but sympy cannot prove it: never shown to change sign
        (a + 1 / a, sp.Integer(2)),
        (sp.log(a), b - 1),
        (a ** sp.Rational(1, 2), b),
        (sp.Max(a, b), c),
        (r, a),  # a symbol that may be negative: left to sympy
        (a, a),
    ],
)
def test_same_answer_as_sympy(x, y):
    assert minmax._connected(x, y) == sympys(x, y)
    assert minmax._connected(y, x) == sympys(y, x)


def test_a_sign_change_is_only_claimed_where_sympy_finds_no_order():
    # every pair of arguments of every max or min in the catalogue
    found = 0
    for eq in derivations.equations():
        for m in eq.rhs.atoms(sp.Max, sp.Min):
            for x, y in itertools.combinations(m.args, 2):
                if minmax._orders_differ(x, y):
                    found += 1
                    assert sympys(x, y) is False, (eq.id, x, y)
    assert found  # the shortcut is taken somewhere


def test_sign_change_needs_both_signs():
    assert minmax._orders_differ(a * b, c)
    assert not minmax._orders_differ(a, a + b)  # a - (a + b) < 0 everywhere
    assert not minmax._orders_differ(sp.exp(a), a)
    assert not minmax._orders_differ(r, a)


def test_intervals_hold_the_value():
    point = {a: 0.125, b: 3.0}  # exact in binary: the value below is at the same point
    for e in (a + b, a * b / 3, sp.exp(a) * sp.log(b), a**b, sp.Max(a, b) - sp.Min(a, b), 1 / a):
        lo, hi = minmax._interval(e, point)
        value = float(e.subs({a: sp.Rational(1, 8), b: 3}).evalf(30))
        assert lo <= value <= hi and hi - lo <= 1e-13 * abs(value)
