"""units/light.py: compiled functions kept as data, built back into arithmetic only."""

import math

import numpy as np
import pytest

from derivations import CATALOGUE
from units.light import PURE, NotData, expression_data, function_of, scalar_function


def test_every_catalogued_function_round_trips_through_data_to_the_same_bits():
    checked = 0
    for eq in CATALOGUE.values():
        if not eq.evaluable:
            continue
        source, names = eq.compiled_source()
        if names is None or not all(n in PURE for n in names):
            continue
        data = expression_data(source)
        fn = function_of(data, PURE)
        args = [1.0 + 0.37 * i for i in range(len(eq.arguments()))]
        with np.errstate(all="ignore"):
            want = eq.compiled()(*args)
        try:
            got = fn(*args)
        except (ArithmeticError, ValueError):
            continue
        if math.isfinite(want):
            assert got == float(want), eq.id  # the same operations in the same order
            checked += 1
    assert checked > 50


@pytest.mark.parametrize(
    "source",
    [
        "def f(a):\n    return __import__('os').system('true')\n",
        "def f(a):\n    return a.__class__\n",
        "def f(a):\n    return a[0]\n",
        "def f(a):\n    import os\n    return a\n",
        "def f(a):\n    return 'text'\n",
        "def f(a):\n    return (lambda: a)()\n",
        "def f(a):\n    return [x for x in a]\n",
        "def f(a, b=exec('1')):\n    return a\n",
        "@exec\ndef f(a):\n    return a\n",
        "def f(a): return a\nprint(1)\n",
        "def f(a):\n    return a if a else a\n",
    ],
)
def test_source_that_is_more_than_arithmetic_is_refused(source):
    with pytest.raises(NotData):
        expression_data(source)


@pytest.mark.parametrize(
    "data",
    [
        {"args": ["a"], "steps": [], "result": ["call", "open", ["a"], {}]},  # not in namespace
        {"args": ["a"], "steps": [], "result": ["call", "__import__", ["a"], {}]},
        {"args": ["a"], "steps": [], "result": "__builtins__"},
        {"args": ["a"], "steps": [], "result": ["attr", "a", "x"]},
        {"args": ["a"], "steps": [], "result": "os"},
        {"args": ["a"], "steps": [], "result": True},
        {"args": ["a"], "steps": [], "result": "a; import os"},
        {"args": ["a"], "steps": [["exec", 1]], "result": "a", "code": "x"},
        {"args": ["a)"], "steps": [], "result": 1},
        {"args": ["a"], "steps": [], "result": ["+", "a"]},
        {"args": ["a"], "steps": [], "result": "b"},  # a name defined nowhere
        "def f(a): return a",
        [],
    ],
)
def test_data_that_is_more_than_arithmetic_is_refused(data):
    with pytest.raises(NotData):
        function_of(data, PURE)


def test_deeply_nested_data_is_refused_not_a_crash():
    data = 1.0
    for _ in range(100_000):
        data = ["neg", data]
    with pytest.raises(NotData):
        function_of({"args": [], "steps": [], "result": data}, PURE)


def test_a_scalar_function_computes_what_its_source_says():
    f = scalar_function("def f(a, b):\n    x0 = a*b\n    return reduce(maximum, [x0, b])/sqrt(a)\n")
    assert f(4.0, 3.0) == 6.0


@pytest.mark.parametrize(
    "source",
    [
        "def f(a, b, c):\n    return (-a)**b\n",
        "def f(a, b, c):\n    return -a**b\n",
        "def f(a, b, c):\n    return a - (b - c)\n",
        "def f(a, b, c):\n    return a - b - c\n",
        "def f(a, b, c):\n    return a/(b*c)\n",
        "def f(a, b, c):\n    return a**(b**c)\n",
        "def f(a, b, c):\n    return (a**b)**c\n",
        "def f(a, b, c):\n    return a**-b + -(-c)\n",
        "def f(a, b, c):\n    return " + " + ".join(["a*b/c"] * 400) + "\n",  # flat, not nested
    ],
)
def test_data_is_built_back_into_the_same_arithmetic(source):
    import ast

    f = scalar_function(source)
    namespace = {}
    exec(compile(ast.parse(source), "<test>", "exec"), namespace)  # noqa: S102 - test source
    for args in ((1.5, 2.0, 3.0), (2.0, 0.5, 2.0)):
        assert f(*args) == namespace["f"](*args)
