"""How numbers and units are written on the page and in the terminal.

>>> from units import Q_
>>> number(5351.2)
'5,351'
>>> number(0.0123456)
'0.01235'
>>> quantity(Q_(14.4, "ms"))
'14.4 ms'
>>> quantity(Q_(989.4, "TFLOP/s"))
'989.4 TFLOP/s'
>>> quantity(Q_(5356.4, "sequence"))
'5,356 sequences'
"""

from __future__ import annotations

import math

import pint


def number(x: float, digits: int = 4) -> str:
    """``x`` with ``digits`` significant figures, thousands separated, no trailing zeros."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return str(x)
    exponent = math.floor(math.log10(abs(x)))
    if exponent >= 15 or exponent <= -5:
        mantissa, power = f"{x:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(power)}"
    decimals = max(digits - 1 - exponent, 0)
    text = f"{round(x, decimals):,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# A count unit standing alone reads better spelled out: "5,356 sequences", not "5,356 seq".
SPELLED_OUT = {
    "seq": "sequences",
    "tok": "tokens",
    "param": "parameters",
    "chip": "chips",
    "val": "values",
    "Gparam": "billion parameters",
    "rack": "racks",
    "stage": "stages",
    "layer": "layers",
    "month": "months",
    # context lengths are tokens per sequence
    "tok/seq": "tokens per sequence",
    "ktok/seq": "thousand tokens per sequence",
}


def unit(u: pint.Unit) -> str:
    """A unit in short form: ``TB/s``, ``USD/Mtok``; a lone count unit spelled out."""
    text = f"{u:~P}"
    return SPELLED_OUT.get(text, text)


def quantity(q: pint.Quantity, digits: int = 4) -> str:
    """A scalar quantity as ``'14.4 ms'``; dimensionless counts keep their unit name."""
    text = unit(q.units)
    value = number(q.magnitude, digits)
    return f"{value} {text}" if text else value
