"""The project's single pint registry and the safe parsing of quantities typed by people.

>>> parse_quantity("3.35 TB/s").to("GB/s")
<Quantity(3350.0, 'gigabyte / second')>
>>> parse_quantity("80 GB", expect="byte/s")
Traceback (most recent call last):
...
units.errors.ChalkboardError: '80 GB' is [information], expected ... (like B/s)
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pint

from units.errors import ChalkboardError

DEFINITIONS = Path(__file__).with_name("definitions.txt")

ureg = pint.UnitRegistry(str(DEFINITIONS), autoconvert_offset_to_baseunit=False)
ureg.formatter.default_format = "~P"
Q_ = ureg.Quantity
Quantity = ureg.Quantity
Unit = ureg.Unit

_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d_,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
_UNIT_TEXT = re.compile(r"^[A-Za-zµ_ /*^·0-9().\-]*$")


def parse_unit(text: str) -> pint.Unit:
    """Parse a unit such as ``"TB/s"`` or ``"USD/Mtoken"``; unknown units raise ChalkboardError.

    >>> parse_unit("ms")
    <Unit('millisecond')>
    """
    text = text.strip().replace("·", "*")
    if not text:
        return ureg.dimensionless
    if not _UNIT_TEXT.match(text):
        raise ChalkboardError(f"unit {text!r} has characters a unit cannot contain")
    try:
        return ureg.parse_units(text)
    except (pint.errors.UndefinedUnitError, pint.errors.DefinitionSyntaxError) as err:
        raise ChalkboardError(f"unknown unit in {text!r}: {err}") from None
    except Exception as err:  # pint raises assorted errors on malformed text
        raise ChalkboardError(f"cannot read unit {text!r}: {err}") from None


def dimension_of(unit: str | pint.Unit) -> str:
    """The dimension of a unit as text, e.g. ``'[information] / [time]'``."""
    if isinstance(unit, str):
        unit = parse_unit(unit)
    dims = Q_(1, unit).dimensionality
    return str(dims) if dims else "dimensionless"


def check_positive(q: pint.Quantity, what: str) -> pint.Quantity:
    """Reject non-finite and non-positive magnitudes, naming ``what``."""
    m = q.magnitude
    if not isinstance(m, int | float) or not math.isfinite(m):
        raise ChalkboardError(f"{what}: value must be a finite number, got {m!r}")
    if m <= 0:
        raise ChalkboardError(f"{what}: value must be positive, got {q:~P}")
    return q


def parse_quantity(
    text, expect: str | pint.Unit | None = None, what: str | None = None
) -> pint.Quantity:
    """Turn ``"3.35 TB/s"`` (or a number, or a Quantity) into a positive, finite Quantity.

    With ``expect``, the value must have that unit's dimension; a bare number then takes the
    ``expect`` unit. User text is matched by a regular expression and pint's unit parser, never
    passed to ``eval`` or ``sympify``.
    """
    label = what or repr(text)
    if isinstance(text, pint.Quantity):
        q = text
        if q._REGISTRY is not ureg:
            q = Q_(q.magnitude, str(q.units))
    elif isinstance(text, bool):
        raise ChalkboardError(f"{label}: expected a number with a unit, got {text!r}")
    elif isinstance(text, int | float):
        q = Q_(float(text), parse_unit(str(expect)) if expect is not None else ureg.dimensionless)
    elif isinstance(text, str):
        match = _NUMBER.match(text)
        if not match:
            raise ChalkboardError(
                f"{label}: expected a number followed by a unit, like '3.35 TB/s'"
            )
        number, unit_text = match.groups()
        try:
            magnitude = float(number.replace("_", "").replace(",", ""))
        except ValueError:
            raise ChalkboardError(f"{label}: {number!r} is not a number") from None
        if unit_text:
            unit = parse_unit(unit_text)
        elif expect is not None:
            unit = parse_unit(str(expect))
        else:
            unit = ureg.dimensionless
        q = Q_(magnitude, unit)
    else:
        raise ChalkboardError(f"{label}: expected a number with a unit, got {type(text).__name__}")
    if expect is not None:
        want = parse_unit(str(expect)) if not isinstance(expect, pint.Unit) else expect
        if q.dimensionality != Q_(1, want).dimensionality:
            shown = text if isinstance(text, str) else f"{q:~P}"
            prefix = f"{what}: " if what else ""
            raise ChalkboardError(
                f"{prefix}{shown!r} is {dimension_of(q.units)}, expected a quantity of "
                f"{dimension_of(want)} (like {want:~P})"
            )
    return check_positive(q, label)
