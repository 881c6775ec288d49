"""The light layer the fast CLI runs on: numbers and units without pint, sympy or numpy.

Two parts, both plain Python:

- **scalar functions**: an equation's compiled source (sympy's numpy printer, as lambdify
  writes it) run on Python floats with :data:`PURE`, a namespace of ``math`` equivalents of the
  numpy names that source uses. The full library evaluates one point with the same function
  (``derivations.core``), so both give the same bits; an overflow, a division by zero or a
  domain error raises instead of giving ``inf`` or ``NaN``, and the caller then takes numpy.
- **a unit table**: unit text -> (factor to base units, dimension), compiled from the registry
  by :func:`unit_table` (so a new base dimension in ``definitions.txt`` is picked up), used by
  :func:`read_number` to read ``--set`` values; text it does not know is the caller's cue to
  ask pint.

>>> f = scalar_function("def f(a, b):\\n    return reduce(maximum, [a, b])/sqrt(a)\\n")
>>> f(4.0, 1.0)
2.0
>>> read_number("3.35 TB/s", {"TB/s": [1e12, "[information] / [time]"]}, "([0-9.]+) *(.*)")
(3.35, 1000000000000.0, '[information] / [time]', 'TB/s')
"""

from __future__ import annotations

import functools
import math
import re


def _maximum(a, b):
    """numpy.maximum on two floats: NaN wins."""
    return a if a >= b or a != a else b


def _minimum(a, b):
    """numpy.minimum on two floats: NaN wins."""
    return a if a <= b or a != a else b


def _ceil(x):
    return float(math.ceil(x))


def _floor(x):
    return float(math.floor(x))


# numpy names (as sympy's numpy printer writes them) -> their float equivalents.
PURE = {
    "reduce": functools.reduce,
    "maximum": _maximum,
    "minimum": _minimum,
    "amax": lambda xs, axis=0: functools.reduce(_maximum, xs),
    "amin": lambda xs, axis=0: functools.reduce(_minimum, xs),
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "ceil": _ceil,
    "floor": _floor,
    "pi": math.pi,
    "e": math.e,
    "__builtins__": {},
}


def _function(source: str, namespace: dict):
    name = re.match(r"\s*def (\w+)\(", source)[1]
    code = compile(source, "<chalkboard compiled>", "exec")
    names = dict(namespace)
    exec(code, names)  # noqa: S102 - source printed by sympy from the catalogue, never user text
    return names[name]


def scalar_function(source: str):
    """The compiled function ``source`` defines, run on floats (see :data:`PURE`)."""
    return _function(source, PURE)


def array_function(source: str, names: dict[str, list[str]]):
    """The compiled function ``source`` defines, run on numpy arrays: ``names`` maps each global
    it uses to ``[module, attribute]`` (numpy, functools or builtins), as lambdify bound it."""
    import builtins
    import functools as ft

    import numpy

    modules = {"numpy": numpy, "functools": ft, "builtins": builtins}
    namespace = {name: getattr(modules[mod], attr) for name, (mod, attr) in names.items()}
    return _function(source, namespace)


def global_names(fn) -> dict[str, list[str]] | None:
    """For :func:`array_function`: where each global of a lambdified ``fn`` comes from, or None
    when one is not a numpy, functools or builtins object."""
    import builtins

    import numpy

    out = {}
    for name in fn.__code__.co_names:
        if name not in fn.__globals__:
            if hasattr(builtins, name):
                out[name] = ["builtins", name]
            continue
        obj = fn.__globals__[name]
        if getattr(numpy, name, None) is obj:
            out[name] = ["numpy", name]
        elif obj is functools.reduce:
            out[name] = ["functools", "reduce"]
        elif getattr(builtins, name, None) is obj:
            out[name] = ["builtins", name]
        else:
            return None
    return out


def read_number(text: str, table: dict, pattern: str):
    """``(magnitude, factor to base units, dimension, unit text)`` of ``"3.35 TB/s"`` by
    ``table``, or None when the text is not a plain number with a unit the table holds (ask
    pint then). A bare
    number has unit ``""`` (the caller decides what it means). ``pattern`` is the registry's
    number pattern, so the two read the same text."""
    match = re.match(pattern, text)
    if not match:
        return None
    number, unit_text = match.groups()
    if len(number) > 40:
        return None
    try:
        magnitude = float(number.replace("_", "").replace(",", ""))
    except ValueError:
        return None
    if not unit_text:
        return magnitude, None, None, ""
    entry = table.get(unit_text)
    if entry is None:
        return None
    return magnitude, entry[0], entry[1], unit_text


def unit_table(texts) -> dict[str, list]:
    """Compile the table :func:`read_number` reads: each unit text pint reads, with its factor
    to base units (pint's own, so the product is the one pint computes) and its dimension as
    the registry states it. Texts pint rejects are left out."""
    from units.registry import Q_, ChalkboardError, parse_unit

    table = {}
    for text in texts:
        if not isinstance(text, str) or not text.strip() or text != text.strip():
            continue
        try:
            unit = parse_unit(text)
        except ChalkboardError:
            continue
        one = Q_(1.0, unit)
        table[text] = [float(one.to_base_units().magnitude), dimension_key(unit)]
    return table


def dimension_key(unit) -> str:
    """A unit's dimension as comparable text, from the registry's own dimensionality."""
    from units.registry import Q_

    return repr(sorted(dict(Q_(1, unit).dimensionality).items()))
