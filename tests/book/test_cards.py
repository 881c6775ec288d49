"""Flashcards: coverage, traceability, and real Anki packages whose notes keep their identity."""

import csv
import json
import re
import sqlite3
import zipfile

import pytest

import derivations
from book import cards as cards_module
from book.cards import anki_math, flashcards, write_apkg, write_exports
from units.presets import load

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


def test_every_chapter_has_concept_questions(deck):
    for chapter in derivations.CHAPTERS:
        concepts = [c for c in deck if c.chapter == chapter.id and c.kind == "concept"]
        assert len(concepts) >= 3, chapter.id
        assert all("?" in c.front and c.back for c in concepts), chapter.id


# -- quality gates over the whole deck ----------------------------------------------------------

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?]\*\*)\s+|\n")
# a figure as the book writes it, scientific notation included ("5 × 10⁷", "10²⁵"): its
# mantissa and its power of ten are one figure, so a shared "10" is no leak
FIGURE = re.compile(r"(?<![\w.\-])\d[\d,]*(?:\.\d+)?(?: × 10)?[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]*")


def lead(back: str) -> str:
    """The answer: the back's first sentence."""
    return SENTENCE_END.split(back.strip(), maxsplit=1)[0].strip()


def test_no_front_contains_its_answer(deck):
    presets = load()
    names = sorted((p.name for t in presets.by_kind.values() for p in t.values()), key=len)
    for c in deck:
        answer = lead(c.back)
        if len(answer) >= 20:
            assert answer.lower() not in c.front.lower(), c.id
        front = c.front
        for name in reversed(names):  # "Llama 3.1 70B" names a choice, it is no figure
            front, answer = front.replace(name, ""), answer.replace(name, "")
        shown = set(FIGURE.findall(front))
        # a figure in the answer that the front already shows gives the answer away
        leaked = [f for f in FIGURE.findall(answer) if f in shown and len(f.strip(",")) > 1]
        assert not leaked, (c.id, leaked)


def test_the_gate_catches_an_answer_on_the_front():
    bad = "*Batching*: why, and by how much? **Cost per token falls as a hyperbola.**"
    assert lead("Cost per token falls as a hyperbola. More text.").lower() in bad.lower()


PUNCTUATION_LED = re.compile(r"^[\s]*[,.;:!?)\]}]")


def test_no_empty_or_punctuation_led_side(deck):
    for c in deck:
        for side in (c.front, c.back):
            assert side.strip(), c.id
            assert not PUNCTUATION_LED.match(side), (c.id, side[:40])


def test_no_duplicate_fronts(deck):
    fronts = [c.front for c in deck]
    assert len(fronts) == len(set(fronts)), [f for f in fronts if fronts.count(f) > 1][:3]


def test_every_given_on_a_card_is_used_by_its_answer(deck):
    """Evaluating with only a card's givens gives its answer, and dropping any one changes it
    (or makes the evaluation impossible): no given is decoration."""
    from book.cards import reference_case
    from units import ChalkboardError

    checked = 0
    for c in deck:
        if not c.givens:
            continue
        eq = derivations.get(c.source.split()[1])
        kw = {k: v for k, v in reference_case(eq, load()).items() if k in c.givens}
        assert set(kw) == set(c.givens), c.id
        full = eq.evaluate_detailed(**kw)
        for k in kw:
            try:
                other = eq.evaluate_detailed(**{n: v for n, v in kw.items() if n != k})
            except ChalkboardError:
                continue
            # some input the answer is computed from takes another value without it
            changed = [
                n
                for n, i in full.inputs.items()
                if n in other.inputs
                and i.value.to(other.inputs[n].value.units).m
                != pytest.approx(other.inputs[n].value.m, rel=1e-12)
            ]
            assert changed, (c.id, k)
        checked += 1
    assert checked >= 10


def test_a_number_card_names_only_the_presets_it_reads(deck):
    # was: "Estimate time to read the whole HBM once for NVIDIA H100 SXM, DeepSeek-V3 / R1, FP8"
    card = next(c for c in deck if c.id == "eq:hbm_drain_time:number")
    assert card.givens == ("hardware",)
    assert "DeepSeek" not in card.front and "FP8" not in card.front


def test_number_cards_only_for_memorable_figures(deck):
    from book.cards import MEMORABLE

    numbers = {c.source.split()[1] for c in deck if c.kind == "number"}
    assert numbers <= set(MEMORABLE) and "crossover_batch" in numbers


def test_all_lecture_deck_topics_are_covered(deck):
    from book.cards import lecture_topics

    topics = lecture_topics()
    assert len(topics) == ANCHOR
    covered = {t for c in deck for t in c.covers}
    assert set(topics) - covered == set()
    for topic in (  # the four the old deck missed
        "pipeline-parallelism.no_overlap",
        "ilya-pipelining.not_wise",
        "crypto-evolution.convergence",
        "crypto-evolution.opposite_goals",
    ):
        assert topic in covered


def test_concept_cards_have_no_typed_numbers():
    from book.cards import CONCEPTS
    from tests.book.test_site import JINJA, NUMBER

    text = "\n".join(line for line in CONCEPTS.read_text().splitlines() if not line.startswith("#"))
    assert NUMBER.findall(JINJA.sub("", text)) == []


def test_claim_cards_give_the_reason_for_a_wrong_verdict(deck):
    card = next(c for c in deck if c.id == "claim:deepseek_crossover")
    assert card.back.startswith("**Wrong.**") and "sparsity" in card.back


def test_generated_understanding_cards(deck):
    by_id = {c.id: c for c in deck}
    bandwidth = by_id["elasticity:mem_bandwidth"]
    # B* = F/W x N_total/N_active x bytes: halves when W doubles; the compute floor ignores W
    assert "($B^{*}$) halves" in bandwidth.back and "is unchanged" in bandwidth.back
    regime = by_id["regime:deepseek_v3:h100_sxm:fp8:256:8192"]
    assert regime.back.startswith("Memory-bound")
    drain = by_id["compare:hbm_drain_time:b200:rubin"]
    # facts.md: B200 180 GB / 8 TB/s = 22.5 ms; Rubin 288 GB / 20 TB/s = 14.4 ms: 1.5625
    assert drain.back.startswith("NVIDIA Rubin") and "factor of 1.56" in drain.back
    for c in deck:
        if c.kind in ("elasticity", "regime", "comparison"):
            assert "\n\n" in c.back, c.id  # the answer, then a line of reason


def test_every_equation_has_a_statement_card(deck):
    by_id = {c.id: c for c in deck}
    for eq in derivations.equations():
        assert by_id[f"eq:{eq.id}:statement"].chapter == eq.chapter  # in its equation's chapter
    # what book/cards.py's module doctest showed when it built the deck
    assert by_id["eq:crossover_batch:statement"].chapter == "batching"


def test_cards_that_a_figure_helps_have_one(deck):
    from book.cards import CARD_FIGURES, card_pages
    from book.site import environment, page_markdown

    # the batching cards page as book.site.render writes it (its template and context from
    # card_pages, through page_markdown), without rendering the rest of the site
    template, ctx = card_pages(load())["cards/batching.md"]
    text = page_markdown(environment(), template, ctx, "cards/batching.md")
    assert 'id="figure-latency_vs_batch"' in text and "<svg" in text
    assert set(CARD_FIGURES) <= {c.id for c in deck}


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


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """flashcards.apkg, .tsv and .json written once by write_exports (it builds its own deck)."""
    return write_exports(tmp_path_factory.mktemp("exports"))


def test_apkg_is_a_real_anki_collection(exports, deck):
    apkg, _, _ = exports
    rows = notes(apkg)
    assert len(rows) == len(deck)
    fields = rows[0][1].split("\x1f")
    assert len(fields) == 4  # Front, Back, Source, Id
    everything = " ".join(r[1] for r in rows)
    assert "$" not in everything.replace("USD", "")  # math is in Anki's delimiters
    assert r"\(" in everything and r"\[" in everything


def test_writing_the_apkg_leaves_no_temporary_file(tmp_path, deck, monkeypatch):
    # genanki's own temporary database was left in /tmp by every build
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    write_apkg(deck[:3], tmp_path / "deck.apkg")
    assert list(scratch.iterdir()) == [] and tempfile.tempdir == str(scratch)
    assert len(notes(tmp_path / "deck.apkg")) == 3


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


def test_tsv_and_json_exports(exports, deck):
    _, tsv, js = exports
    lines = [line for line in tsv.read_text().splitlines() if not line.startswith("#")]
    rows = list(csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert len(rows) == len(deck) and all(len(r) == 5 for r in rows)
    data = json.loads(js.read_text())
    assert [d["id"] for d in data] == [c.id for c in deck]
