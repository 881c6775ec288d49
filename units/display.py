"""Numbers and units as a person writes them: 3-4 significant figures, powers of ten with
Unicode superscripts, counts as words ("5,356 sequences", "671 B parameters", "USD per million
tokens"). The book's pages and cards (:mod:`book.format`) and the Jupyter displays of equations and
results (:mod:`derivations.core`) share these rules, so a notebook prints a number as its chapter
does.

>>> from units import Q_
>>> quantity(Q_(5356.4, "sequence")), quantity(Q_(2.63e14, "token")), number(0.0123456)
('5,356 sequences', '2.63 × 10¹⁴ tokens', '0.01235')
"""

from __future__ import annotations

import math
import weakref
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the fast CLI imports this module without pint
    import pint

SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
SCIENTIFIC_FROM = 1e6  # at and above this magnitude a number is written as a power of ten
SCIENTIFIC_BELOW = 1e-4


def superscript(n: int) -> str:
    """``'¹⁴'`` for 14."""
    return str(n).translate(SUPERSCRIPT)


def is_whole(x: float) -> bool:
    """True for a whole number (to float rounding): a count such as d_model = 16,384.

    >>> is_whole(16384), is_whole(16383.999999999998), is_whole(5356.4), is_whole(0.0)
    (True, True, False, False)
    """
    x = float(x)
    return math.isfinite(x) and abs(x) >= 1 and abs(x - round(x)) <= 1e-9 * abs(x)


def _round_figures(x: float, digits: int) -> float:
    """``x`` to ``digits`` significant figures, a half rounded away from zero as a person rounds
    the decimal they read (Python's own rounding takes a half to the even neighbour).

    >>> _round_figures(14.5, 2), _round_figures(0.125, 2), _round_figures(-12.25, 3)
    (15.0, 0.13, -12.3)
    >>> _round_figures(9.995, 3), _round_figures(2.675, 3), _round_figures(-0.9999999999999999, 4)
    (10.0, 2.68, -1.0)
    """
    exact = Decimal(repr(x))
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return float(exact.quantize(step, rounding=ROUND_HALF_UP))


def number(x: float, digits: int = 4) -> str:
    """``x`` with ``digits`` significant figures, thousands separated, no trailing zeros; a huge
    or tiny magnitude as ``'2.63 × 10¹⁴'``. A whole number below a million is whole, however
    many figures it has (``d_model`` is 16,384, not 16,380), unless one or two figures are
    asked for: a rough figure ("≈30 times") is rounded.

    >>> number(16384), number(129_280, 3), number(16384.5), number(2_097_152), number(29, 1)
    ('16,384', '129,280', '16,380', '2.097 × 10⁶', '30')
    """
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if digits >= 3 and is_whole(x) and abs(x) < SCIENTIFIC_FROM:
        return f"{round(x):,}"
    x = _round_figures(x, digits)  # round first: -0.9999999999999999 is -1
    exponent = math.floor(math.log10(abs(x)))
    if abs(x) >= SCIENTIFIC_FROM or abs(x) < SCIENTIFIC_BELOW:
        mantissa, power = f"{x:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        power_text = f"10{superscript(int(power))}"
        if mantissa in ("1", "-1"):
            return mantissa.replace("1", "") + power_text
        return f"{mantissa} × {power_text}"
    decimals = max(digits - 1 - exponent, 0)
    text = f"{round(x, decimals):,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


# Count units as a reader says them: (singular, plural).
COUNT_WORDS = {
    "token": ("token", "tokens"),
    "parameter": ("parameter", "parameters"),
    "sequence": ("sequence", "sequences"),
    "value": ("value", "values"),
    "vector": ("vector", "vectors"),
    "chip": ("chip", "chips"),
    "expert": ("expert", "experts"),
    "layer": ("layer", "layers"),
    "head": ("head", "heads"),
    "stage": ("stage", "stages"),
    "step": ("step", "steps"),
    "rack": ("rack", "racks"),
    "day": ("day", "days"),
    "week": ("week", "weeks"),
    "month": ("month", "months"),
    "year": ("year", "years"),
}
WORDS = {w for pair in COUNT_WORDS.values() for w in pair}
# A prefix on a count: "671 B parameters" before the number's unit, "per million tokens" after.
COUNT_PREFIX = {"": "", "kilo": "k ", "mega": "M ", "giga": "B ", "tera": "T ", "peta": "P "}
COUNT_PREFIX_PER = {
    "": "",
    "kilo": "thousand ",
    "mega": "million ",
    "giga": "billion ",
    "tera": "trillion ",
}
# Counts of at least this many are shown as whole numbers ("295 sequences", not "295.3").
WHOLE_FROM = 10


def _parts(u: pint.Unit) -> tuple:
    """``((prefix, unit name, exponent, name), ...)`` of a unit, e.g. USD/Mtok -> USD^1, mega
    token^-1 (worked out once per registry and units)."""
    registry = u._REGISTRY
    key = (registry, u._units)
    found = _PARTS.get(key)
    if found is None:
        found = []
        for name, exp in u._units.items():
            prefix, base = _split(registry, name)
            found.append((prefix, base, exp, name))
        if len(_PARTS) >= 4096:
            _PARTS.clear()
        found = _PARTS[key] = tuple(found)
    return found


_PARTS: dict = {}  # (registry, units) -> _parts
_UNIT_TEXT: dict = {}  # (registry, units, singular) -> unit()


_SPLIT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # registry -> name -> split


def _split(registry, name: str) -> tuple[str, str]:
    """``(prefix, base)`` of a defined unit's name (``megatoken`` -> mega, token), parsed once
    per registry (pint's parse tries every prefix and suffix on each call)."""
    known = _SPLIT.get(registry)
    if known is None:
        known = _SPLIT[registry] = {}
    found = known.get(name)
    if found is None:
        prefix, base, _ = registry.parse_unit_name(name)[0]
        found = known[name] = (prefix, base)
    return found


def _symbol(u: pint.Unit, name: str) -> str:
    return f"{u._REGISTRY.Unit(name):~P}"


def _power(exp: float) -> str:
    exp = abs(exp)
    return "" if exp == 1 else superscript(int(exp)) if float(exp).is_integer() else f"^{exp}"


SPOKEN_TIME = {"s": "second", "min": "minute", "h": "hour"}


def unit(u: pint.Unit, singular: bool = False) -> str:
    """A unit as a reader says it: ``TB/s``, ``USD per million tokens``, ``bytes per token``,
    ``B parameters``; '' for a pure number (worked out once per registry and units)."""
    key = (u._REGISTRY, u._units, singular)
    text = _UNIT_TEXT.get(key)
    if text is None:
        if len(_UNIT_TEXT) >= 4096:
            _UNIT_TEXT.clear()
        text = _UNIT_TEXT[key] = _unit(u, singular)
    return text


def _unit(u: pint.Unit, singular: bool) -> str:
    parts = _parts(u)
    if not parts:
        return ""
    top, bottom = [], []
    spelled = False
    for prefix, base, exp, name in parts:
        if base in COUNT_WORDS and (prefix in COUNT_PREFIX):
            spelled = True
            if exp > 0:
                # "1 sequence", but "1 T parameters": a prefixed count is many
                word = COUNT_WORDS[base][0 if singular and not prefix else 1]
                top.append(COUNT_PREFIX[prefix] + word + _power(exp))
            else:
                if prefix not in COUNT_PREFIX_PER:
                    bottom.append(_symbol(u, name) + _power(exp))
                else:
                    word = COUNT_WORDS[base][1 if prefix else 0]  # per token, per million tokens
                    bottom.append(COUNT_PREFIX_PER[prefix] + word + _power(exp))
        else:
            text = _symbol(u, name) + _power(exp)
            (top if exp > 0 else bottom).append(text)
    if spelled:
        # "bytes per token": a lone byte above a spelled-out count reads as a word too
        top = ["bytes" if t == "B" and not singular else "byte" if t == "B" else t for t in top]
    numerator = "·".join(top)
    if not bottom:
        return numerator
    if any(b.split(" ")[-1].rstrip("⁰¹²³⁴⁵⁶⁷⁸⁹") in WORDS for b in bottom):
        # among words a time is a word too: "tokens per second per sequence", not "per s"
        denominator = " per ".join(SPOKEN_TIME.get(b, b) for b in bottom)
        return f"{numerator or '1'} per {denominator}"
    below = "·".join(bottom)
    return f"{numerator or '1'}/" + (below if len(bottom) == 1 else f"({below})")


def _is_count(u: pint.Unit) -> bool:
    parts = _parts(u)
    return (
        len(parts) == 1
        and parts[0][1] in COUNT_WORDS
        and parts[0][0] == ""
        and parts[0][2] == 1
        and parts[0][1] not in ("day", "week", "month", "year")
    )


def _plain(q: pint.Quantity) -> pint.Quantity:
    """Drop a prefix a reader does not say: 'YFLOP' and 'EB' become powers of ten of FLOP and
    bytes, 'Ttok' a count of tokens; 'B parameters' keeps its prefix (model sizes are said so)."""
    parts = _parts(q.units)
    unspoken = any(
        prefix in ("exa", "zetta", "yotta") or (base == "token" and prefix and exp > 0)
        for prefix, base, exp, _ in parts
    )
    if not unspoken:
        return q
    registry = q.units._REGISTRY
    target = registry.Unit("")
    for prefix, base, exp, name in parts:
        keep = prefix not in ("exa", "zetta", "yotta") and not (base == "token" and exp > 0)
        target *= registry.Unit(name if keep else base) ** exp
    return q.to(target)


def _model_size(q: pint.Quantity) -> pint.Quantity:
    """A count of parameters as model sizes are said: in billions ("671 B parameters"), from a
    trillion in trillions ("1 T parameters"); other quantities unchanged."""
    if [p[1:3] for p in _parts(q.units)] != [("parameter", 1)]:
        return q
    size = abs(q.to("parameter").magnitude)
    if size < 1e9:
        return q
    return q.to("Tparameter" if size >= 1e12 else "Gparameter")


def quantity(q: pint.Quantity, digits: int = 4) -> str:
    """A scalar quantity as ``'14.4 ms'``; counts of ten or more are whole numbers.

    >>> from units import Q_
    >>> quantity(Q_(2.976, "YFLOP")), quantity(Q_(263, "Ttok")), quantity(Q_(295.3, "seq"))
    ('2.976 × 10²⁴ FLOP', '2.63 × 10¹⁴ tokens', '295 sequences')
    >>> quantity(Q_(6.71e11, "parameter")), quantity(Q_(1.871e8, "parameter"))
    ('671 B parameters', '1.871 × 10⁸ parameters')
    >>> quantity(Q_(1, "sequence")), quantity(Q_(1, "Tparameter")), quantity(Q_(1040, "Gparameter"))
    ('1 sequence', '1 T parameters', '1.04 T parameters')
    >>> quantity(Q_(64, "token/s/sequence"))
    '64 tokens per second per sequence'
    >>> quantity(Q_(16384, "byte/token")), quantity(Q_(16068.3, "sequence"))
    ('16,384 bytes per token', '16,070 sequences')
    """
    q = _plain(q)
    q = _model_size(q)
    magnitude = float(q.magnitude)
    if _is_count(q.units) and WHOLE_FROM <= abs(magnitude) < 10 ** (digits - 1):
        magnitude = float(round(magnitude))  # "295 sequences"; above, the figures are whole
    value = number(magnitude, digits)
    text = unit(q.units, singular=value in ("1", "-1"))
    return f"{value} {text}" if text else value


# Prose says a number in 2-3 figures, in the unit a person would pick for its size. The exact
# value stays in the reference blocks (cards, tables), printed by :func:`quantity`.
TIME_UNITS = (  # (below this many seconds, say it in this unit)
    (1e-6, "ns"),
    (1e-3, "µs"),
    (1, "ms"),
    (100, "s"),
    (3600, "min"),
    (48 * 3600, "hour"),
    (2 * 365.25 * 86400, "day"),
    (math.inf, "year"),
)
BYTE_PREFIXES = ("", "k", "M", "G", "T", "P")


def spoken_number(x: float, most: int = 3) -> str:
    """``x`` as prose says it: 2 significant figures, 3 from 100 to 1,000 (so 295 stays 295) or
    where 3 say it exactly (14.5, 62.5), never more than ``most``; a whole number whole (unless
    ``most`` asks for a rough figure).

    >>> spoken_number(0.6249), spoken_number(295.3), spoken_number(5356.4), spoken_number(16384)
    ('0.62', '295', '5,400', '16,384')
    >>> spoken_number(107_700, most=1), spoken_number(14.5), spoken_number(15.25)
    ('100,000', '14.5', '15')
    >>> spoken_number(131.5), spoken_number(312.5), spoken_number(0.125)
    ('132', '313', '0.125')
    """
    if most >= 3 and is_whole(x) and abs(x) < SCIENTIFIC_FROM:
        return number(x)
    exactly_three = number(x, 3) == number(x, 15)
    x = float(x) * (1 + 1e-12)  # a half rounds up, as a person rounds it: 131.5 is said 132
    if most >= 3 and (100 <= abs(x) < 1000 or exactly_three):
        return number(x, 3)
    return number(x, min(most, 2))


def _rescaled(q: pint.Quantity) -> pint.Quantity:
    """``q`` in the unit prose picks for its size: a time in ns … years, bytes in B … PB."""
    registry = q._REGISTRY
    time = registry.Unit("s").dimensionality
    if all(registry.Unit(name).dimensionality == time for *_, name in _parts(q.units)):
        seconds = float(f"{abs(q.to('s').magnitude):.2e}")  # 0.9999 s is said "1 s"
        return q.to(next(u for below, u in TIME_UNITS if seconds < below))
    parts = _parts(q.units)
    byte_parts = [p for p in parts if p[1] == "byte" and p[2] == 1]
    if len(byte_parts) != 1 or any(p[0] in ("exa", "zetta", "yotta") for p in parts):
        return q
    target = registry.Unit("")
    for _prefix, base, exp, name in parts:
        target *= registry.Unit(name if base != "byte" else "byte") ** exp
    in_bytes = q.to(target)
    size = float(f"{abs(in_bytes.magnitude):.2e}")
    step = min(max(int(math.log10(size) // 3), 0), len(BYTE_PREFIXES) - 1) if size else 0
    return in_bytes.to(target / registry.Unit("byte") * registry.Unit(f"{BYTE_PREFIXES[step]}B"))


def spoken(q: pint.Quantity, about: bool = False, most: int = 3) -> str:
    """A quantity as a person says it in a sentence: 2-3 figures in a natural unit (cents below
    a dollar, 3 figures above it; seconds, minutes, hours or days by size; kB, MB, GB by size),
    in no more than ``most`` figures. With ``about``, a rounded value says so.

    >>> from units import Q_
    >>> spoken(Q_(0.02077, "USD/Mtoken"), about=True), spoken(Q_(0.6249, "min"), about=True)
    ('about 2.1¢ per million tokens', 'about 37 s')
    >>> spoken(Q_(6.275, "USD/Mtoken")), spoken(Q_(1693.4, "byte/token"))
    ('6.28 USD per million tokens', '1.7 kB per token')
    >>> spoken(Q_(143.2, "min")), spoken(Q_(5356.4, "sequence")), spoken(Q_(16384, "byte"))
    ('2.4 hours', '5,400 sequences', '16,384 B')
    >>> spoken(Q_(1, "month")), spoken(Q_(54.23, "day")), spoken(Q_(1.157e15, "FLOP"))
    ('1 month', '54 days', '1.2 × 10¹⁵ FLOP')
    >>> spoken(Q_(2.664e6, "chip*hour"))
    '2.7 × 10⁶ chips·h'

    """
    q = _plain(q)
    if q.units != q._REGISTRY.Unit("") and not is_whole(q.magnitude):
        q = _rescaled(q)  # a whole figure (16,384 bytes, 1 month) stays as it is given
    q = _model_size(q)
    value = float(q.magnitude)
    text = unit(q.units)
    if text.startswith("USD") and 0 < abs(value) < 1:
        value, text = value * 100, "¢" + text[3:]  # "2.1¢ per million tokens"
    dollars = text.startswith("USD") and abs(value) >= 1
    figures = number(value, min(most, 3)) if dollars else spoken_number(value, most)
    if text and not text.startswith("¢"):
        text = " " + unit(q.units, singular=figures in ("1", "-1"))
        if q.units == q._REGISTRY.Unit("hour"):
            text = " hour" if figures == "1" else " hours"
    rounded = figures != number(value, 15)
    return f"{'about ' if about and rounded else ''}{figures}{text}"
