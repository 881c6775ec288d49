"""The notation table the site and ``chalkboard symbols`` print (book/context.py)."""

import re

from book.context import notation_context

# name -> (unit, where the value comes from), as a reader says them (issue 10: the named count
# constants are in the table, never in pint's 'tok' or 'seq')
COUNT_CONSTANTS = {
    "decode_tokens_per_sequence": ("tokens per sequence", "constant, 1 token per sequence"),
    "vectors_per_token": ("vectors per token", "constant, 1 vector per token"),
    "kv_vectors_per_token": ("vectors per token", "constant, 2 vectors per token"),
    "sequences_per_token": ("sequences per token", "constant, 1 sequence per token"),
    "fit_token_unit": ("tokens", "constant, 1 token"),
}
SHORT = re.compile(r"\b(tok|seq|param|val)\b")


def test_the_count_constants_are_in_the_notation_table_as_a_reader_says_them():
    rows = {r["name"]: r for r in notation_context()["symbols"]}
    for name, (unit, origin) in COUNT_CONSTANTS.items():
        row = rows[name]
        assert (row["unit"], row["from"]) == (unit, origin), row
        assert len(row["meaning"]) > 30 and not SHORT.search(row["meaning"]), row
    assert rows["context_length"]["unit"] == "tokens per sequence"
    assert rows["batch_size"]["unit"] == "sequences"
    for row in rows.values():
        assert not SHORT.search(f"{row['unit']} {row['from']}"), row
