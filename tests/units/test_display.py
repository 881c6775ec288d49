"""Numbers as a person writes them (units/display.py): whole numbers whole, 3-4 figures in
reference text, 2-3 figures in natural units in prose."""

import re

from hypothesis import assume, given
from hypothesis import strategies as st

from tests.strategies import log_uniform
from units import Q_, parse_quantity
from units.display import SCIENTIFIC_FROM, is_whole, number, quantity, spoken, spoken_number

SUPERSCRIPT_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def read_number(text: str) -> float:
    """The value of a number as :func:`number` prints it ('16,384', '2.63 × 10¹⁴', '10²⁵')."""
    text = text.replace(",", "")
    if "10" in text and text.translate(SUPERSCRIPT_DIGITS) != text:
        mantissa, _, power = text.rpartition("10")  # the base, not a '10' in '3.107 × 10⁶'
        mantissa = mantissa.replace("×", "").strip() or "1"
        return float(mantissa) * 10 ** int(power.translate(SUPERSCRIPT_DIGITS))
    return float(text)


def figures(text: str) -> int:
    """Significant figures of a printed decimal ('0.062' -> 2, '5,400' -> 2, '295' -> 3)."""
    if text.translate(SUPERSCRIPT_DIGITS) != text and "×" not in text:
        return 1  # '10⁸'
    digits = text.split("×")[0].replace(",", "").replace("-", "").strip()
    if "." in digits:
        return len(digits.replace(".", "").lstrip("0"))
    return len(digits.lstrip("0").rstrip("0")) or 1


# The review's cases (book-vs-scaling-book.md, "Number formatting"): d_model, a KV value count
# and a vocabulary were printed rounded to four figures.
def test_the_reviewed_whole_numbers_print_whole():
    assert number(16_384) == "16,384"
    assert number(163_840) == "163,840"
    assert number(129_280, 3) == "129,280"
    assert quantity(Q_(16_384, "byte/token")) == "16,384 bytes per token"
    assert quantity(Q_(18_432, "value/token")) == "18,432 values per token"


@given(st.integers(1, int(SCIENTIFIC_FROM) - 1), st.sampled_from([3, 4]))
def test_a_whole_number_below_a_million_prints_every_digit(n, digits):
    assert number(n, digits) == f"{n:,}"
    assert number(float(n) * (1 + 1e-13), digits) == f"{n:,}"  # float noise is still whole
    assert spoken_number(n) == f"{n:,}"


def test_a_rough_figure_of_a_whole_number_is_rounded():
    assert number(29, 1) == "30" and number(5_357, 2) == "5,400"
    assert spoken_number(107_700, most=1) == "100,000"


@given(log_uniform(low=1e-4, high=1e12), st.sampled_from([2, 3, 4]))
def test_a_fraction_prints_at_most_its_figures_and_rounds_to_them(x, digits):
    assume(not is_whole(x))
    text = number(x, digits)
    assert figures(text) <= digits
    assert abs(read_number(text) - x) <= 0.5 * 10 ** (1 - digits) * x * 1.0001


@given(log_uniform(low=1e-4, high=1e12))
def test_prose_numbers_have_two_or_three_figures(x):
    assume(not is_whole(x))
    text = spoken_number(x)
    three_exactly = number(x, 3) == number(x, 15)
    assert figures(text) <= (3 if 100 <= x < 1000 or three_exactly else 2)
    assert abs(read_number(text) - x) <= 0.05 * x


def _value_of(text: str) -> float:
    """The number that opens a spoken text ('about 2.1¢ per …' -> 2.1)."""
    text = text.removeprefix("about ")
    m = re.match(r"-?[\d,.]+(?: × 10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)?|10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", text)
    assert m, text
    return read_number(m[0])


@given(log_uniform(low=1e-9, high=1e9))
def test_a_time_is_said_in_the_unit_its_size_calls_for(seconds):
    assume(not is_whole(seconds))
    text = spoken(Q_(seconds, "s"))
    shown = _value_of(text)
    assert 1 <= shown < 1000, text  # never "0.6249 min" nor "37,000 ms"
    assert abs(parse_quantity(text).to("s").magnitude - seconds) <= 0.05 * seconds


@given(log_uniform(low=1e-5, high=1e3))
def test_a_price_below_a_dollar_is_said_in_cents(usd):
    text = spoken(Q_(usd, "USD/Mtoken"))
    assert text.endswith(" per million tokens")
    said = _value_of(text) * (0.01 if "¢" in text else 1)
    assert figures(text.split()[0].rstrip("¢")) <= (3 if usd >= 1 else 2)
    assert ("¢" in text) == (usd < 1) and ("USD" in text) == (usd >= 1)
    assert abs(said - usd) <= 0.05 * usd


@given(log_uniform(low=1.0, high=1e16))
def test_bytes_are_said_with_the_prefix_their_size_calls_for(n):
    assume(not is_whole(n))
    text = spoken(Q_(n, "byte"))
    assert 1 <= _value_of(text) < 1000, text
    assert abs(parse_quantity(text).to("byte").magnitude - n) <= 0.05 * n


def test_about_is_said_only_of_a_rounded_value():
    assert spoken(Q_(0.02077, "USD/Mtoken"), about=True) == "about 2.1¢ per million tokens"
    assert spoken(Q_(0.6249, "min"), about=True) == "about 37 s"
    assert spoken(Q_(5, "min"), about=True) == "5 min"
    assert spoken(Q_(1.0, "hour")) == "1 hour" and spoken(Q_(1.0, "month")) == "1 month"
    assert spoken(Q_(16_384, "byte/token"), about=True) == "16,384 bytes per token"


def test_speculative_decoding_steps_are_said_as_words():
    # Accepted tokens per verification step (issue 21): a reader says "tokens per step".
    assert quantity(Q_(2.21, "token/step")) == "2.21 tokens per step"
    assert quantity(Q_(3, "step")) == "3 steps"
    assert quantity(Q_(1, "step")) == "1 step"


def test_the_reader_takes_the_base_not_a_ten_inside_the_mantissa():
    # Hypothesis (ci profile) found x = exp(14.94921875) = 3,107,157 at four figures: its
    # mantissa holds a '10', which the test's reader once split on
    assert number(3_107_157.1, 4) == "3.107 × 10⁶"
    assert read_number("3.107 × 10⁶") == 3.107e6
    assert read_number("10⁶") == 1e6


@given(st.integers(10, 99), st.sampled_from([1, -1]))
def test_a_half_rounds_away_from_zero_as_a_person_rounds(whole, sign):
    """14.5 to two figures is 15 and 12.25 to three is 12.3, as a reader rounds them (Python's
    own rounding gives the even neighbours, 14 and 12.2); the expectations are the hand rule."""
    minus = "-" if sign < 0 else ""
    assert number(sign * (whole + 0.5), 2) == f"{minus}{whole + 1}"
    assert number(sign * (whole + 0.25), 3) == f"{minus}{whole}.3"
