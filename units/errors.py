"""The one error type the whole project raises for bad input."""


class ChalkboardError(ValueError):
    """Bad input: unknown name, wrong dimension, non-positive value, malformed preset file.

    The CLI prints its message after ``error:`` and exits with status 2.

    >>> str(ChalkboardError("unknown preset 'h100'"))
    "unknown preset 'h100'"
    """


def closest(name: str, choices) -> str:
    """A ' (did you mean ...?)' hint naming the closest choices, or '' if none is close.

    >>> closest("h100", ["h100_sxm", "h200", "b200"])
    " (did you mean 'h100_sxm' or 'h200'?)"
    """
    import difflib

    choices = list(choices)
    containing = sorted((c for c in choices if name.lower() in c.lower()), key=len)
    similar = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    matches = list(dict.fromkeys(containing + similar))[:3]
    if not matches:
        return ""
    return " (did you mean " + " or ".join(repr(m) for m in matches) + "?)"
