"""The registry's Quantity builds and converts directly in the common cases (units.registry's
_Quantity): every result is what pint itself gives, checked against a plain pint registry of the
same definitions (magnitude, its type, and units)."""

import numpy as np
import pint
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import log_uniform
from units import Q_
from units.registry import _DIRECT, DEFINITIONS, ureg

PLAIN = pint.UnitRegistry(str(DEFINITIONS), autoconvert_offset_to_baseunit=False)
PLAIN.formatter.default_format = ureg.formatter.default_format
UNITS = ["TB/s", "GB", "byte", "ms", "s", "hour", "minute", "USD/chip/hour", "token/s", "chip"]
UNITS += ["Mtoken", "FLOP/s", "PFLOP/s", "USD/Mtoken", "sequence", "dimensionless", "byte/value"]


def same(a, b) -> bool:
    """Equal magnitudes of the same type, and the same units written the same way."""
    return (
        type(a.magnitude) is type(b.magnitude)
        and np.array_equal(a.magnitude, b.magnitude)
        and str(a.units) == str(b.units)
    )


def test_the_direct_paths_are_on_for_this_pint():
    assert _DIRECT
    assert type(Q_(2.5, "GB")).__name__ == "Quantity"  # as pint's reprs and errors name it
    assert repr(Q_(2.5, "GB").to("MB")) == "<Quantity(2500.0, 'megabyte')>"


@given(
    log_uniform(low=1e-30, high=1e30) | st.integers(1, 10**6),
    st.sampled_from(UNITS),
    st.sampled_from(UNITS),
    st.sampled_from(UNITS),
)
def test_arithmetic_and_conversion_are_pints(x, a, b, target):
    ours, plain = Q_(x, a), PLAIN.Quantity(x, a)
    assert same(ours, plain)
    other, plain_other = Q_(3, b), PLAIN.Quantity(3, b)
    for got, want in [
        (ours * other, plain * plain_other),
        (ours / other, plain / plain_other),
        (ours * 2, plain * 2),
        (ours / 7.5, plain / 7.5),
        (2 / ours, 2 / plain),
        (ours**2, plain**2),
    ]:
        assert same(got, want)
    for q, p in [(ours, plain), (ours / other, plain / plain_other)]:
        try:
            want = p.to(target)
        except pint.DimensionalityError:
            with pytest.raises(pint.DimensionalityError):
                q.to(target)
            with pytest.raises(pint.DimensionalityError):
                q.to(ureg.parse_units(target))
            continue
        assert same(q.to(target), want)
        assert same(q.to(ureg.parse_units(target)), want)
        assert same(q.to(ureg.parse_units(target)._units), want)
        assert same(q.to(Q_(1, target)), want)  # a Quantity names its units


def test_other_magnitudes_and_cases_are_pints_own():
    arr = np.array([1.0, 2.5])
    assert same(Q_(arr, "GB").to("MB"), PLAIN.Quantity(arr, "GB").to("MB"))
    assert same(Q_([1, 2], "GB"), PLAIN.Quantity([1, 2], "GB"))  # a list becomes an array
    assert same(Q_("3.35 TB/s"), PLAIN.Quantity("3.35 TB/s"))
    assert same(Q_(np.float64(2.0), "s").to("ms"), PLAIN.Quantity(np.float64(2.0), "s").to("ms"))
    with pytest.raises(TypeError):
        Q_(True, "GB")  # pint refuses a bool magnitude, and so does the direct path
    with pytest.raises(pint.UndefinedUnitError):
        Q_(1, "GB").to("furlong")
    with pytest.raises(pint.UndefinedUnitError):  # the second time, from pint again
        Q_(1, "GB").to("furlong")
