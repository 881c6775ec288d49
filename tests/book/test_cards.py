"""Flashcards: coverage, traceability, and real Anki packages whose notes keep their identity."""

import csv
import json
import sqlite3
import zipfile

import pytest

import derivations
from book import cards as cards_module
from book.cards import anki_math, flashcards, write_apkg, write_exports

ANCHOR = 27  # the lecture's own hand-written deck


@pytest.fixture(scope="module")
def deck():
    return flashcards()


def test_at_least_three_times_the_anchor_deck(deck):
    assert len(deck) >= 3 * ANCHOR


def test_every_chapter_has_cards_and_every_card_is_traced(deck):
    assert {c.chapter for c in deck} == {c.id for c in derivations.CHAPTERS}
    from book.claims import audit_claims

    claims = audit_claims()
    for c in deck:
        kind, _, name = c.source.partition(" ")
        assert (
            (kind == "equation" and name in derivations.CATALOGUE)
            or (kind == "claim" and name in claims)
            or (kind == "chapter" and name in {ch.id for ch in derivations.CHAPTERS})
        ), c.id
    assert len({c.id for c in deck}) == len(deck)


def test_every_chapter_s_takeaways_become_concept_cards(deck):
    for chapter in derivations.CHAPTERS:
        concepts = [c for c in deck if c.chapter == chapter.id and c.kind == "concept"]
        assert len(concepts) >= 3, chapter.id
        assert all(c.front.count("**") == 2 and c.back for c in concepts)


def test_every_equation_has_a_statement_card(deck):
    ids = {c.id for c in deck}
    for eq in derivations.equations():
        assert f"eq:{eq.id}:statement" in ids


def test_cards_that_a_figure_helps_have_one(tmp_path):
    from book import site
    from book.cards import CARD_FIGURES

    site.render(tmp_path)
    text = (tmp_path / "cards" / "batching.md").read_text()
    assert 'id="figure-latency_vs_batch"' in text and "<svg" in text
    assert set(CARD_FIGURES) <= {c.id for c in flashcards()}


def test_a_worked_number_card_by_hand(deck):
    card = next(c for c in deck if c.id == "eq:crossover_batch:number")
    # H100 at FP8: 1978.9 TFLOP/s over 3.35 TB/s x (1 byte / 2 FLOP) x 671 / 37 = 5,356
    assert card.back.startswith("5,356 sequences")


def test_anki_math_delimiters():
    assert anki_math("$$a = b$$ and $c$") == r"\[a = b\] and \(c\)"


def notes(apkg) -> list[tuple]:
    with zipfile.ZipFile(apkg) as z:
        db = z.read("collection.anki2")
    path = apkg.with_suffix(".anki2")
    path.write_bytes(db)
    with sqlite3.connect(path) as con:
        return con.execute("select guid, flds from notes order by guid").fetchall()


def test_apkg_is_a_real_anki_collection(tmp_path, deck):
    apkg, _, _ = write_exports(tmp_path)
    rows = notes(apkg)
    assert len(rows) == len(deck)
    fields = rows[0][1].split("\x1f")
    assert len(fields) == 4  # Front, Back, Source, Id
    everything = " ".join(r[1] for r in rows)
    assert "$" not in everything.replace("USD", "")  # math is in Anki's delimiters
    assert r"\(" in everything and r"\[" in everything


def test_guids_are_stable_across_builds_and_edits(tmp_path, deck, monkeypatch):
    first, second, edited = (tmp_path / f"{n}.apkg" for n in ("a", "b", "c"))
    write_apkg(deck, first)
    write_apkg(flashcards(), second)
    assert notes(first) == notes(second)
    changed = [c for c in deck]
    target = changed[5]
    changed[5] = cards_module.Card(
        target.id,
        target.chapter,
        target.kind,
        target.front + " (reworded)",
        target.back,
        target.source,
    )
    write_apkg(changed, edited)
    before, after = dict(notes(first)), dict(notes(edited))
    assert set(before) == set(after)  # same notes: an import updates, history kept
    differing = [g for g in before if before[g] != after[g]]
    assert len(differing) == 1 and "(reworded)" in after[differing[0]]


def test_tsv_and_json_exports(tmp_path, deck):
    _, tsv, js = write_exports(tmp_path)
    lines = [line for line in tsv.read_text().splitlines() if not line.startswith("#")]
    rows = list(csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert len(rows) == len(deck) and all(len(r) == 5 for r in rows)
    data = json.loads(js.read_text())
    assert [d["id"] for d in data] == [c.id for c in deck]
