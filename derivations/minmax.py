"""sympy's max and min, told sooner whether two arguments are ordered.

Every ``Max(...)`` or ``Min(...)`` that sympy builds with evaluation (each ``subs`` or
``xreplace`` that changes an argument, ``doit``, ``simplify``, lambdify's common
subexpressions) asks, for each pair of its arguments, whether one is provably the larger
(``MinMaxBase._is_connected``: comparisons under the symbols' assumptions, then the same on
``factor_terms`` of the difference). On a build nearly every pair asked is not ordered (a
compute time and a memory time), and proving that took sympy about ten milliseconds a pair, a
third of the pairs asked again.

Two things make the same answer cheaper, and neither changes it:

- the answer is a pure function of the two expressions (their structure and the symbols'
  assumptions; sympy's code reads nothing else), so it is kept by the pair and given back as it
  was (one of True, False, Max, Min);
- where both arguments are real at two points that satisfy every symbol's assumptions (positive
  symbols, integers where a symbol is one) and the difference is provably positive at one and
  negative at the other (interval arithmetic in floats, each operation rounded outward), no
  comparison can be proved either way, the two are not equal, and sympy's answer is False:
  given at once. Anything the intervals do not settle (an unsupported function, a symbol with
  other assumptions, no sign change found, a pole or a complex value) is sympy's own work.

Importing this module installs it.

>>> import sympy as sp
>>> a, b, c = sp.symbols("a b c", positive=True)
>>> sp.Max(a, a + b), sp.Min(a, a + b), sp.Max(a * b, c).args
(a + b, a, (c, a*b))
>>> _orders_differ(a * b, c), _orders_differ(a, a + b)
(True, False)
"""

from __future__ import annotations

import functools
import math
import zlib

import sympy as sp
from sympy.functions.elementary.miscellaneous import MinMaxBase

_original = MinMaxBase._is_connected.__func__


@functools.lru_cache(maxsize=8192)
def _connected(x, y):
    if _orders_differ(x, y):
        return False
    # sympy's own code reads neither cls nor anything but x and y (it names Max and Min itself)
    return _original(MinMaxBase, x, y)


def _is_connected(cls, x, y):
    return _connected(x, y)


if getattr(MinMaxBase._is_connected, "__func__", None) is _original:
    MinMaxBase._is_connected = classmethod(_is_connected)


# -- a sign change, proved in interval arithmetic --------------------------------------------

_POSITIVE = sp.Symbol("t", positive=True).assumptions0
_POSITIVE_INTEGER = sp.Symbol("t", positive=True, integer=True).assumptions0
POINTS = 16  # points tried for a sign change before leaving the question to sympy


class _Unsettled(Exception):
    """The intervals cannot say (an unsupported node, a pole, a complex or infinite value)."""


def _orders_differ(x: sp.Expr, y: sp.Expr) -> bool:
    """True when ``x - y`` is provably positive at one point and negative at another, both
    points satisfying every symbol's assumptions; False when that is not shown."""
    symbols = x.free_symbols | y.free_symbols
    if not symbols or any(s.assumptions0 not in (_POSITIVE, _POSITIVE_INTEGER) for s in symbols):
        return False
    names = sorted(symbols, key=lambda s: s.name)
    signs = set()
    for k in range(POINTS):
        point = {s: _value(s, k) for s in names}
        try:
            lo, hi = _sub(_interval(x, point), _interval(y, point))
        except (_Unsettled, OverflowError, ValueError, ZeroDivisionError):
            continue
        if lo > 0:
            signs.add(1)
        elif hi < 0:
            signs.add(-1)
        if len(signs) == 2:
            return True
    return False


def _value(symbol: sp.Symbol, k: int) -> float:
    """Point ``k``'s value of ``symbol``: fixed by its name, spread over six orders of magnitude
    (so that the terms of a max take turns to lead), a whole number where the symbol is one."""
    seed = zlib.crc32(f"{symbol.name}/{k}".encode())
    v = 10.0 ** ((seed % 6001) / 1000 - 3)
    return float(max(1, round(v))) if symbol.is_integer else v


def _down(v: float, ulps: int = 1) -> float:
    for _ in range(ulps):
        v = math.nextafter(v, -math.inf)
    return v


def _up(v: float, ulps: int = 1) -> float:
    for _ in range(ulps):
        v = math.nextafter(v, math.inf)
    return v


def _checked(lo: float, hi: float, ulps: int = 1) -> tuple[float, float]:
    lo, hi = _down(lo, ulps), _up(hi, ulps)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise _Unsettled
    return lo, hi


def _sub(a, b):
    return _checked(a[0] - b[1], a[1] - b[0])


def _mul(a, b):
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return _checked(min(products), max(products))


def _reciprocal(a):
    if a[0] <= 0 <= a[1]:
        raise _Unsettled
    return _checked(1 / a[1], 1 / a[0])


def _exp(a):
    return _checked(math.exp(a[0]), math.exp(a[1]), 4)  # libm's exp: within an ulp or two


def _log(a):
    if a[0] <= 0:
        raise _Unsettled
    return _checked(math.log(a[0]), math.log(a[1]), 4)


def _power(base, exponent: sp.Expr, point):
    if exponent.is_Integer:
        n = int(exponent)
        if abs(n) > 64:
            raise _Unsettled
        result = (1.0, 1.0)
        for _ in range(abs(n)):
            result = _mul(result, base)
        return _reciprocal(result) if n < 0 else result
    if base[0] <= 0:  # a fractional or symbolic power of a base that may be negative
        raise _Unsettled
    return _exp(_mul(_interval(exponent, point), _log(base)))


def _interval(e: sp.Expr, point) -> tuple[float, float]:
    """An interval that holds the value of ``e`` at ``point`` (raises _Unsettled)."""
    if e.is_Symbol:
        v = point[e]
        return v, v
    if e.is_Rational:
        v = float(e)  # correctly rounded: within half an ulp
        return _checked(v, v)
    if e.is_Add:
        lo = hi = 0.0
        for arg in e.args:
            a = _interval(arg, point)
            lo, hi = _checked(lo + a[0], hi + a[1])
        return lo, hi
    if e.is_Mul:
        result = (1.0, 1.0)
        for arg in e.args:
            result = _mul(result, _interval(arg, point))
        return result
    if e.is_Pow:
        return _power(_interval(e.base, point), e.exp, point)
    if isinstance(e, sp.exp):
        return _exp(_interval(e.args[0], point))
    if isinstance(e, sp.log) and len(e.args) == 1:
        return _log(_interval(e.args[0], point))
    if isinstance(e, MinMaxBase):
        pick = max if isinstance(e, sp.Max) else min
        parts = [_interval(a, point) for a in e.args]
        return pick(p[0] for p in parts), pick(p[1] for p in parts)
    raise _Unsettled
