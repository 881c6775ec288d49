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
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the fast CLI imports this module without pint
    import pint

SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
SCIENTIFIC_FROM = 1e6  # at and above this magnitude a number is written as a power of ten
SCIENTIFIC_BELOW = 1e-4


def superscript(n: int) -> str:
    """``'¹⁴'`` for 14."""
    return str(n).translate(SUPERSCRIPT)


def number(x: float, digits: int = 4) -> str:
    """``x`` with ``digits`` significant figures, thousands separated, no trailing zeros; a huge
    or tiny magnitude as ``'2.63 × 10¹⁴'``."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    x = float(f"{x:.{digits - 1}e}")  # round first: -0.9999999999999999 is -1
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


def _parts(u: pint.Unit):
    """``[(prefix, unit name, exponent)]`` of a unit, e.g. USD/Mtok -> USD^1, mega token^-1."""
    registry = u._REGISTRY
    out = []
    for name, exp in u._units.items():
        prefix, base, _ = registry.parse_unit_name(name)[0]
        out.append((prefix, base, exp, name))
    return out


def _symbol(u: pint.Unit, name: str) -> str:
    return f"{u._REGISTRY.Unit(name):~P}"


def _power(exp: float) -> str:
    exp = abs(exp)
    return "" if exp == 1 else superscript(int(exp)) if float(exp).is_integer() else f"^{exp}"


SPOKEN_TIME = {"s": "second", "min": "minute", "h": "hour"}


def unit(u: pint.Unit, singular: bool = False) -> str:
    """A unit as a reader says it: ``TB/s``, ``USD per million tokens``, ``bytes per token``,
    ``B parameters``; '' for a pure number."""
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


def quantity(q: pint.Quantity, digits: int = 4) -> str:
    """A scalar quantity as ``'14.4 ms'``; counts of ten or more are whole numbers.

    >>> from units import Q_
    >>> quantity(Q_(2.976, "YFLOP")), quantity(Q_(263, "Ttok")), quantity(Q_(295.3, "seq"))
    ('2.976 × 10²⁴ FLOP', '2.63 × 10¹⁴ tokens', '295 sequences')
    >>> quantity(Q_(6.71e11, "parameter")), quantity(Q_(1.871e8, "parameter"))
    ('671 B parameters', '1.871 × 10⁸ parameters')
    >>> quantity(Q_(1, "sequence")), quantity(Q_(1, "Tparameter"))
    ('1 sequence', '1 T parameters')
    >>> quantity(Q_(64, "token/s/sequence"))
    '64 tokens per second per sequence'
    """
    q = _plain(q)
    if _parts(q.units) == _parts(q.units._REGISTRY.Unit("parameter")) and abs(q.magnitude) >= 1e9:
        q = q.to("Gparameter")  # model sizes are said in billions: "671 B parameters"
    magnitude = float(q.magnitude)
    if _is_count(q.units) and math.isfinite(magnitude) and WHOLE_FROM <= abs(magnitude) < 1e6:
        magnitude = float(round(magnitude))
    value = number(magnitude, digits)
    text = unit(q.units, singular=value in ("1", "-1"))
    return f"{value} {text}" if text else value
