"""The named count constants (issue 10): the hidden factors of the lecture's formulas, each with
its value, its unit and a meaning a reader can follow."""

import pytest

from derivations import Constant, lookup_symbol
from units import Q_

# name -> (value, unit, LaTeX, a phrase its meaning must contain). Values by definition: a decode
# step appends one token per sequence; a token is one residual vector; attention caches a key and
# a value per token; a token attends within its own sequence; the loss fits count tokens.
COUNT_CONSTANTS = {
    "decode_tokens_per_sequence": (1, "token/sequence", "u", "one"),
    "vectors_per_token": (1, "vector/token", r"\nu", "one"),
    "kv_vectors_per_token": (2, "vector/token", r"\nu_{\mathrm{KV}}", "two (a key and a value)"),
    "sequences_per_token": (1, "sequence/token", r"\sigma", "its own"),
    "fit_token_unit": (1, "token", r"D_{0}", "loss fits"),
}


@pytest.mark.parametrize("name", sorted(COUNT_CONSTANTS))
def test_count_constants_have_their_values_and_units(name):
    value, unit, latex, phrase = COUNT_CONSTANTS[name]
    c = lookup_symbol(name)
    assert isinstance(c, Constant)
    assert c.value.to(unit).magnitude == pytest.approx(value, rel=1e-15)
    assert c.value.dimensionality == Q_(1, unit).dimensionality
    assert c.latex == latex
    assert phrase in c.meaning


def test_tokens_and_sequences_are_dimensions_and_the_factors_carry_them():
    u = lookup_symbol("decode_tokens_per_sequence").value
    sigma = lookup_symbol("sequences_per_token").value
    assert dict(u.dimensionality) == {"[token]": 1, "[sequence]": -1}
    assert (u * sigma).dimensionless  # one token per sequence, one sequence per token
    # a vector is a dimensionless count, like a value: nu turns d values into d values per token
    nu = lookup_symbol("vectors_per_token").value
    assert dict(nu.dimensionality) == {"[token]": -1}
    assert lookup_symbol("fit_token_unit").value.dimensionality == Q_(1, "token").dimensionality
