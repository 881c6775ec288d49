"""The unit registry: independent dimensions, safe parsing, clear errors."""

import math

import pint
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import log_uniform
from units import Q_, ChalkboardError, parse_quantity, parse_unit, ureg


def test_flop_byte_second_usd_are_independent_dimensions():
    dims = [Q_(1, u).dimensionality for u in ("FLOP", "byte", "s", "USD")]
    assert len({str(d) for d in dims}) == 4
    assert all(d for d in dims)


def test_byte_per_second_is_not_hertz_or_flops():
    bandwidth = Q_(1, "byte/s")
    assert bandwidth.dimensionality != Q_(1, "1/s").dimensionality
    assert bandwidth.dimensionality != Q_(1, "FLOP/s").dimensionality
    assert (Q_(1, "FLOP/s") / bandwidth).dimensionality  # FLOP per byte is not dimensionless


def test_tokens_and_sequences_are_distinct_dimensions():
    # issue 10: USD and USD/token, or chips and sequences, cannot be confused
    for a, b in [("token", "sequence"), ("sequence", "chip"), ("USD", "USD/token")]:
        assert Q_(1, a).dimensionality != Q_(1, b).dimensionality
        with pytest.raises(pint.DimensionalityError):
            Q_(3, a).to(b)
    assert Q_(3, "ktoken/sequence").to("token/sequence").magnitude == 3000


def test_the_counts_kept_dimensionless_still_convert():
    # chip (and, until their conversions are named constants, parameter, value, layer, head,
    # expert, stage, rack) stay dimensionless: see units/definitions.txt
    for unit in ("parameter", "chip", "value"):
        assert Q_(3, unit).to("").magnitude == 3


def test_a_bare_number_is_read_in_a_count_unit_only():
    assert parse_quantity("64", expect="sequence") == Q_(64, "sequence")
    assert parse_quantity("8192", expect="token/sequence") == Q_(8192, "token/sequence")
    with pytest.raises(ChalkboardError, match=r"expected a quantity of \[sequence\]"):
        parse_quantity("5 chip", expect="sequence")


def test_decimal_and_binary_prefixes():
    assert Q_(1, "TB").to("byte").magnitude == 1e12
    assert Q_(1, "GiB").to("byte").magnitude == 2**30
    assert Q_(400, "Gb/s").to("GB/s").magnitude == pytest.approx(50)  # 8 bits per byte
    assert Q_(2, "USD/hour").to("USD/s").magnitude == pytest.approx(2 / 3600)


@given(log_uniform(low=1e-3, high=1e18), st.sampled_from(["TB/s", "GB/s", "B/s", "MB/s"]))
def test_parse_round_trips_any_bandwidth_unit(x, unit):
    q = parse_quantity(f"{x!r} {unit}", expect="byte/s")
    assert q.to(unit).magnitude == pytest.approx(x, rel=1e-12)


def test_parse_accepts_thousands_separators():
    assert parse_quantity("1,979 TFLOP/s").to("TFLOP/s").magnitude == 1979


def test_a_bare_number_is_read_only_as_a_count_and_otherwise_names_the_unit_it_needs():
    # issue 10, item 4: one rule everywhere; a bare number never silently means base units
    assert parse_quantity(64, expect="sequence") == Q_(64, "sequence")
    assert parse_quantity("64", expect="sequence") == Q_(64, "sequence")
    for bare in (5, "5"):
        with pytest.raises(ChalkboardError, match=r"^value=5 needs a unit, like 5 ms$"):
            parse_quantity(bare, expect="ms")
    with pytest.raises(ChalkboardError, match="mem_bandwidth=3.35 needs a unit, like 3.35 TB/s"):
        parse_quantity("3.35", expect="byte/s", what="mem_bandwidth", example="TB/s")
    # a count shown in a scaled unit (671 B parameters) is ambiguous bare, so it needs a unit
    with pytest.raises(ChalkboardError, match="needs a unit, like 671 Gparameter"):
        parse_quantity("671", expect="parameter", what="n_total", example="Gparameter")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("80 GB", "expected a quantity of [information] / [time]"),
        ("-3 TB/s", "must be positive"),
        ("0 TB/s", "must be positive"),
        ("1e400 TB/s", "finite"),
        ("nan TB/s", "expected a number"),
        ("fast", "expected a number"),
        ("3 furlongs/s", "unknown unit"),
        ("3 __import__('os')", "cannot contain"),
    ],
)
def test_parse_rejects_bad_text_with_clear_message(text, fragment):
    with pytest.raises(ChalkboardError, match=None) as err:
        parse_quantity(text, expect="byte/s")
    assert fragment in str(err.value)


def test_parse_unit_never_evaluates_code(tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(ChalkboardError):
        parse_unit(f"open('{marker}', 'w')")
    assert not marker.exists()


def test_one_registry():
    assert Q_(1, "s")._REGISTRY is ureg
    assert math.isclose(parse_quantity(Q_(1, "ms")).to("s").magnitude, 1e-3)


@pytest.mark.parametrize(
    "text", ["GB/s", "USD/(chip*hour)", "FLOP/s", "token/sequence", "TB/s", "byte/token"]
)
def test_a_unit_read_back_from_the_cache_is_what_pint_parses(text):
    """The registry reads parsed expressions back (units.registry._Registry); a stock pint
    registry on the same definitions parses each afresh, twice, to the same units."""
    from units.registry import DEFINITIONS

    stock = pint.UnitRegistry(str(DEFINITIONS), autoconvert_offset_to_baseunit=False)
    first = ureg.parse_units_as_container(text)
    again = ureg.parse_units_as_container(text)
    assert again is first  # read back, not parsed again
    assert first == stock.parse_units_as_container(text)
    mine, theirs = Q_(1, text).to_base_units(), stock.Quantity(1, text).to_base_units()
    assert (mine.magnitude, mine._units) == (theirs.magnitude, theirs._units)


def test_a_new_definition_empties_the_parse_cache():
    """What the registry reads back was parsed under today's definitions: a definition empties
    the cache, so a text is parsed again, here to a name that now means something else."""
    from units.registry import DEFINITIONS, _Registry

    mine = _Registry(str(DEFINITIONS), autoconvert_offset_to_baseunit=False)
    before = mine.parse_units_as_container("kB/s")
    assert mine.parse_units_as_container("kB/s") is before
    assert before == pint.util.UnitsContainer({"kilobyte": 1, "second": -1})
    mine.define("kB = 3 * byte")  # shadows the prefixed kilobyte
    assert mine.parse_units_as_container("kB/s") == pint.util.UnitsContainer(
        {"kB": 1, "second": -1}
    )
    assert mine.Quantity(1, "kB/s").to("byte/s").magnitude == 3  # by the new definition
