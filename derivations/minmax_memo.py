"""sympy's max and min, told once whether two arguments are ordered.

Every ``Max(...)`` or ``Min(...)`` that sympy builds with evaluation (each ``subs`` or
``xreplace`` that changes an argument, ``doit``, ``simplify``, lambdify's common
subexpressions) asks, for each pair of its arguments, whether one is provably the larger
(``MinMaxBase._is_connected``: comparisons under the symbols' assumptions, then
``factor_terms`` of the difference). A build asks the same pair again and again (the same max of
step times recurs in every equation built on it, in each substitution of a dict, in every check
of a derived equation): about a third of sympy's time in max and min was repeats.

The answer is a pure function of the two expressions (their structure and the symbols'
assumptions; sympy's comparisons read no global state), so it is kept here by the pair and
given back as it was (one of True, False, Max, Min): every expression sympy builds is the one it
built before. Importing this module installs it; it keeps a bounded number of pairs.

>>> import sympy as sp
>>> a, b = sp.symbols("a b", positive=True)
>>> sp.Max(a, a + b), sp.Min(a, a + b), sp.Max(a, b).args
(a + b, a, (a, b))
>>> _connected.cache_info().currsize > 0
True
"""

from __future__ import annotations

import functools

from sympy.functions.elementary.miscellaneous import MinMaxBase

_original = MinMaxBase._is_connected.__func__


@functools.lru_cache(maxsize=8192)
def _connected(x, y):
    # sympy's own code reads neither cls nor anything but x and y (it names Max and Min itself)
    return _original(MinMaxBase, x, y)


def _is_connected(cls, x, y):
    return _connected(x, y)


if getattr(MinMaxBase._is_connected, "__func__", None) is _original:
    MinMaxBase._is_connected = classmethod(_is_connected)
