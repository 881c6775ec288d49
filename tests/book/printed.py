"""Figures read back from a problem's printed text, independently of the book's own answer
reader (units/reading.py): the tests that recompute an answer from the statement use this."""

SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def figure(text: str) -> float:
    """A figure printed as '2,085.43', '4,096', '1.4 × 10¹³' or '10¹³'.

    >>> figure("2,085.43"), figure("1.4 × 10¹³"), figure("10¹³"), figure("102")
    (2085.43, 14000000000000.0, 10000000000000, 102.0)
    """
    mantissa, times, power = text.partition("10")
    if times and power and power[0] in "⁰¹²³⁴⁵⁶⁷⁸⁹":
        scale = 10 ** int(power.translate(SUPERSCRIPT))
        return scale * (float(mantissa.rstrip("× ").replace(",", "")) if mantissa else 1)
    return float(text.replace(",", ""))
