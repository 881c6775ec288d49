"""Issue 12's reader rules over the CLI's text output and the flashcard exports (the site's pages
are checked in test_site.py). Before that issue these printed "Gparam", "USD/Mtok", "seq",
"YFLOP" and "FLOP**2"; JSON output may keep pint's machine unit strings (book/format.py)."""

import io
import json
from contextlib import redirect_stdout

import pytest

from book.cli import main
from tests.book.reader_text import problems

BATCH = ("--set", "batch_size=1024", "--precision", "fp8")


def run(*argv: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ("eval", "crossover_batch", "--hardware", "h100_sxm", "--model", "deepseek_v3"),
        ("eval", "cost_per_token", "--hardware", "b200", "--model", "kimi_k2", *BATCH),
        ("eval", "weight_fetch_time", "--hardware", "h100_sxm", "--model", "deepseek_v3", *BATCH),
        ("eval", "kv_bytes_per_token", "--model", "llama_3_1_70b"),
        ("eval", "alltoall_time", "--hardware", "gb200_nvl72", "--model", "deepseek_v3", *BATCH),
        ("symbols",),
        ("show", "crossover_batch"),
        ("list",),
    ],
)
def test_cli_text_output_reads_as_a_reader_says_it(argv):
    assert problems(run(*argv), skip={"raw math"}) == []


def test_flashcard_exports_read_as_a_reader_says_it(tmp_path):
    from book.cards import write_exports

    write_exports(tmp_path)
    cards = json.loads((tmp_path / "flashcards.json").read_text())
    found = [p for card in cards for side in ("front", "back") for p in problems(card[side])]
    assert found == []
