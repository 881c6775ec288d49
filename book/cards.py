"""Flashcards that test understanding, from the equation catalogue, the presets and the claims.

Each card has a stable id (``eq:crossover_batch:statement``), a chapter, a kind, a front and a
back in Markdown with ``$...$`` math, and the equation, chapter or claim it comes from. Kinds:

- *concept*: why / what-if / which-regime questions written in ``book/concepts.toml``, their
  numbers filled from equations and presets, together covering the lecture's own deck;
- *elasticity*: "X doubles: what happens to B*, the cost floor, the drain time?" from
  ``eq.elasticities``; *regime*: compute- or memory-bound, and by how much; *comparison*:
  which of two presets wins, by what factor, and which figures differ;
- *statement* (an equation to recall), *dominance* (which term dominates on a case), *number*
  (only the numbers worth memorising) and *claim* (a verdict with its reason).

``flashcards()`` builds the whole deck (it computes every chapter's context: seconds, so
tests/book/test_cards.py builds it once and checks it). A card, and what the exports keep of it:

>>> card = Card("eq:hbm_drain_time:statement", "batching", "statement",
...             "Write the HBM drain time.", "$$t = C / W$$", "equation hbm_drain_time")
>>> card.to_dict()["source"]
'equation hbm_drain_time'
>>> anki_math(card.back)  # the math delimiters Anki renders
'\\\\[t = C / W\\\\]'
>>> reworded = Card(card.id, "batching", "statement", "Reworded.", card.back, card.source)
>>> guid(reworded) == guid(card)  # the Anki note follows the id: an edit updates it
True
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import derivations
from book.cases import (  # noqa: F401 (public names)
    PRECISIONS,
    PRESET_KINDS,
    REFERENCE,
    precision_words,
    reference_case,
)
from book.format import given_text, markdown_text, named, number, prose, quantity, sentence
from derivations.core import Equation
from units import ChalkboardError
from units.presets import Presets, load


@dataclass(frozen=True)
class Card:
    id: str
    chapter: str
    kind: str
    front: str
    back: str
    source: str
    givens: tuple[str, ...] = ()  # the preset kinds and inputs the front names
    covers: tuple[str, ...] = ()  # lecture-deck topics (concept cards)

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("id", "chapter", "kind", "front", "back", "source")}
        return out | ({"covers": list(self.covers)} if self.covers else {})


NAMED_KINDS = ("hardware", "model", "api", "tier", "fit")  # presets shown by their names


def _describe(kw: dict, presets: Presets) -> str:
    parts = [presets.get(k, v).name for k, v in kw.items() if k in NAMED_KINDS]
    if precision_words(kw):
        parts.append(precision_words(kw))
    given = [given_text(k, v) for k, v in kw.items() if k not in PRESET_KINDS]
    return ", ".join(parts + given) or "the lecture's figures"


def _command(eq: Equation, kw: dict) -> str:
    flags = [f"--{k.replace('_', '-')} {v}" for k, v in kw.items() if k in PRESET_KINDS]
    sets = [f"--set {k}='{v}'" for k, v in kw.items() if k not in PRESET_KINDS]
    return " ".join(["chalkboard eval", eq.id, *flags, *sets])


def _statement(eq: Equation) -> Card:
    title = markdown_text(eq.title)
    front = f"**{title}.** Write ${eq.lhs.latex}$ ({eq.lhs.meaning}) in terms of its inputs."
    back = f"$${eq.latex()}$$\n\n{prose(eq.summary)}"
    return Card(f"eq:{eq.id}:statement", eq.chapter, "statement", front, back, f"equation {eq.id}")


def used_presets(eq: Equation, kw: dict, presets: Presets) -> dict:
    """``kw`` narrowed to what an evaluation of ``eq`` actually reads: a preset kind only when
    some input's value came from it (precision: a FLOP/s or bytes-per-value figure), a workload
    input only when the equation reads it."""
    result = eq.evaluate_detailed(presets=presets, **kw)
    origins = [i.origin for i in result.inputs.values()]
    read = {o.split(" ", 1)[0] for o in origins}
    if any("dense_flops_" in o for o in origins):
        read.add("precision")
    return {k: v for k, v in kw.items() if (k in read if k in PRESET_KINDS else k in result.inputs)}


def _dominance(eq: Equation, kw: dict, presets: Presets) -> Card | None:
    from derivations.algebra import split_terms

    parts = split_terms(eq)
    if not parts or kw is None:
        return None
    try:
        values = [part.evaluate(presets=presets, **kw) for part in parts]
    except ChalkboardError:
        return None
    if any(v.magnitude <= 0 for v in values):
        return None
    kw = used_presets(eq, kw, presets)
    terms = [part.rhs for part in parts]
    shown = [
        f"${derivations.to_latex(t)}$ = {quantity(v)}" for t, v in zip(terms, values, strict=True)
    ]
    top = max(range(len(values)), key=lambda i: values[i])
    title = markdown_text(eq.title)
    front = f"**{title}.** Which term of ${eq.latex()}$ dominates for {_describe(kw, presets)}?"
    back = (
        f"${derivations.to_latex(terms[top])}$.\n\n" + "; ".join(shown) + ".\n\n"
        f"Reproduce: `{_command(eq, kw)}`"
    )
    return Card(
        f"eq:{eq.id}:dominant",
        eq.chapter,
        "dominance",
        front,
        back,
        f"equation {eq.id}",
        givens=tuple(kw),
    )


# Numbers worth memorising: the rules of thumb and the lecture's headline figures. Other
# equations get no number card (their numbers live on the chapter pages and in problems).
MEMORABLE = (
    "crossover_batch",
    "ridge_intensity",
    "hbm_drain_time",
    "worst_case_latency",
    "experts_per_chip",
    "multi_rack_slowdown",
    "max_total_params",
    "kv_bytes_per_token",
    "kv_bytes_from_price_kink",
    "decode_prefill_ratio_from_prices",
    "cache_discount_from_prices",
    "storage_tier_drain_time",
    "inference_tokens",
    "chinchilla_tokens",
    "balanced_overtraining_factor",
)


def _number(eq: Equation, kw: dict, presets: Presets) -> Card | None:
    if kw is None or eq.id not in MEMORABLE:
        return None
    kw = used_presets(eq, kw, presets)
    value = eq.evaluate(presets=presets, **kw)
    front = f"Estimate {eq.lhs.meaning} {named(eq.lhs.latex)} for {_describe(kw, presets)}."
    back = f"{quantity(value)}, from ${eq.latex()}$.\n\nReproduce: `{_command(eq, kw)}`"
    return Card(
        f"eq:{eq.id}:number",
        eq.chapter,
        "number",
        front,
        back,
        f"equation {eq.id}",
        givens=tuple(kw),
    )


def _claim_cards(presets: Presets) -> list[Card]:
    from book.claims import audit_claims

    cards = []
    for v in audit_claims(presets).values():
        computed = "; ".join(f"{quantity(c.value)} ({c.label})" for c in v.cases)
        why = [s.strip().rstrip(".") for s in (v.caveat, v.note) if s and s.strip()]
        reason = " ".join(f"{s[:1].upper()}{s[1:]}." for s in why)
        front = f"The claim: *{v.claim}* ({v.said_by}). Does it hold, and why?"
        back = f"**{sentence(v.verdict)}.** Computed: {computed}."
        back += f"\n\n{reason}" if reason else ""
        cards.append(Card(f"claim:{v.id}", v.chapter, "claim", front, back, f"claim {v.id}"))
    return cards


# -- understanding cards from the engine -------------------------------------------------------

# "What if X doubles?": an input, the case it is varied around, and the outputs asked about.
ELASTICITIES = (
    (
        "mem_bandwidth",
        dict(hardware="h100_sxm", model="deepseek_v3", precision="fp8"),
        ("crossover_batch", "compute_cost_floor", "hbm_drain_time", "kv_compute_crossover_context"),
    ),
    (
        "flops",
        dict(hardware="h100_sxm", model="deepseek_v3", precision="fp8"),
        ("crossover_batch", "compute_cost_floor", "hbm_drain_time", "kv_compute_crossover_context"),
    ),
    (
        "n_total",
        dict(hardware="h100_sxm", model="deepseek_v3", precision="fp8"),
        ("crossover_batch", "compute_cost_floor", "domain_weight_fetch_time"),
    ),
    (
        "batch_size",
        dict(hardware="h100_sxm", model="deepseek_v3", precision="fp8", batch_size=64),
        ("cost_per_token", "step_time", "throughput"),
    ),
    (
        "batch_size",
        dict(hardware="h100_sxm", model="deepseek_v3", precision="fp8", batch_size=16384),
        ("cost_per_token", "step_time", "throughput"),
    ),
    (
        "context_length",
        dict(hardware="h100_sxm", model="llama_3_1_70b", precision="fp8", batch_size=64),
        ("cost_per_token", "kv_fetch_time", "compute_time"),
    ),
)


def _change(e: float) -> str:
    factor = 2.0**e
    if abs(e) < 1e-9:
        return "is unchanged"
    named = {1: "doubles", -1: "halves", 2: "quadruples", -2: "falls to a quarter"}
    for k, word in named.items():
        if abs(e - k) < 1e-9:
            return word
    return f"changes by a factor of {number(factor, 3)}"


def _why(e: float, meaning: str) -> str:
    if abs(e) < 1e-9:
        return f"it does not depend on {meaning}"
    if abs(e - round(e)) < 1e-9:
        power = round(e)
        how = "proportional" if power > 0 else "inversely proportional"
        extra = "" if abs(power) == 1 else f" to the power {abs(power)}"
        return f"it is {how} to {meaning}{extra}"
    return f"elasticity {number(e, 2)} here: only some of its terms depend on {meaning}"


def _elasticity_cards(presets: Presets) -> list[Card]:
    from units import Q_

    cards = []
    for name, case, outputs in ELASTICITIES:
        meaning = derivations.SYMBOLS[name].meaning
        answers, whys, givens, chapter = [], [], {}, None
        for eq_id in outputs:
            eq = derivations.get(eq_id)
            kw = used_presets(eq, case, presets)
            givens.update(kw)
            e = eq.elasticities(presets=presets, **kw).get(name, 0.0)
            label = f"{eq.lhs.meaning} {named(eq.lhs.latex)}"
            answers.append(f"{label} {_change(e)}")
            whys.append(f"${eq.lhs.latex}$: {_why(e, meaning)}.")
            chapter = chapter or eq.chapter
        asked = ", ".join(f"{derivations.get(o).lhs.meaning}" for o in outputs)
        where = _describe({k: v for k, v in case.items() if k != name}, presets)
        start = ""
        if name in case:
            start = f" from {quantity(Q_(case[name], derivations.SYMBOLS[name].display_unit))}"
        front = (
            f"What if {meaning} doubles{start}, everything else fixed "
            f"({where})? "
            f"What happens to {asked}?"
        )
        back = "; ".join(sentence(a) if i == 0 else a for i, a in enumerate(answers)) + "."
        back += "\n\n" + " ".join(whys)
        cid = f"elasticity:{name}" + (f":{case[name]}" if name in case else "")
        cards.append(
            Card(cid, chapter, "elasticity", front, back, f"equation {outputs[0]}", givens=())
        )
    return cards


# "Which regime?": a model, chips, precision, batch and context.
REGIMES = (
    ("deepseek_v3", "h100_sxm", "fp8", 256, 8192),
    ("deepseek_v3", "gb200_nvl72", "fp8", 8192, 8192),
    ("llama_3_1_70b", "h100_sxm", "fp8", 64, 131072),
    ("llama_3_1_405b", "b200", "fp8", 1024, 8192),
    ("kimi_k2", "gb300_nvl72", "fp8", 2048, 32768),
)


def _regime_cards(presets: Presets) -> list[Card]:
    from units import Q_

    cards = []
    for model, hardware, precision, batch, context in REGIMES:
        kw = dict(
            hardware=hardware,
            model=model,
            precision=precision,
            batch_size=Q_(batch, "sequence"),
            context_length=Q_(context, "token/sequence"),
        )
        r = derivations.get("step_time").evaluate_detailed(presets=presets, **kw)
        t_c, t_m = r.inputs["compute_time"].value, r.inputs["memory_time"].value
        weights, kv = r.inputs["weight_fetch_time"].value, r.inputs["kv_fetch_time"].value
        chips = r.inputs["n_chips"].value
        ratio = (t_m / t_c).to("").magnitude
        bound = "memory-bound" if ratio > 1 else "compute-bound"
        by = ratio if ratio > 1 else 1 / ratio
        slower = "memory time" if ratio > 1 else "compute time"
        crossover = derivations.get("crossover_batch").evaluate(
            presets=presets, hardware=hardware, model=model, precision=precision
        )
        front = (
            f"{presets.get('model', model).name} on {number(chips.magnitude)} "
            f"{presets.get('hardware', hardware).name} chips (the fewest that hold it) at "
            f"{precision.upper()}, batch {number(batch)} and {quantity(Q_(context, 'token'))} "
            "of context: "
            "compute- or memory-bound, and by how much?"
        )
        back = (
            f"{sentence(bound)}: the {slower} is {number(by, 3)} times the other.\n\n"
            f"Memory {quantity(t_m)} (weights {quantity(weights)}, KV cache {quantity(kv)}) "
            f"against compute {quantity(t_c)}; ignoring the KV cache the crossover batch is "
            f"{quantity(crossover)}."
        )
        cid = f"regime:{model}:{hardware}:{precision}:{batch}:{context}"
        cards.append(Card(cid, "batching", "regime", front, back, "equation step_time", givens=()))
    return cards


# "Which is bigger, and by what factor?": equation, preset kind, the pair, the question, and
# whether the question asks for the smaller value ("faster" = less time).
COMPARISONS = (
    ("hbm_drain_time", "hardware", "b200", "rubin", "drains its HBM faster", "min", {}),
    ("hbm_drain_time", "hardware", "h100_sxm", "b300", "drains its HBM faster", "min", {}),
    (
        "ridge_intensity",
        "hardware",
        "a100_sxm",
        "b200",
        "needs the higher arithmetic intensity to be compute-bound",
        "max",
        {"precision": "bf16"},
    ),
    (
        "crossover_batch",
        "model",
        "deepseek_v3",
        "kimi_k2",
        "needs the bigger batch to be compute-bound on an H100 at FP8",
        "max",
        {"hardware": "h100_sxm", "precision": "fp8"},
    ),
    (
        "kv_bytes_per_token",
        "model",
        "llama_3_1_70b",
        "deepseek_v3",
        "stores more KV cache per token at BF16",
        "max",
        {},
    ),
    (
        "max_total_params",
        "hardware",
        "h100_sxm",
        "gb200_nvl72",
        "can hold the bigger model in one scale-up domain at FP8",
        "max",
        {"precision": "fp8"},
    ),
    ("storage_tier_drain_time", "tier", "dram_ddr5", "flash_nvme", "drains faster", "min", {}),
)


def _comparison_cards(presets: Presets) -> list[Card]:
    cards = []
    for eq_id, kind, a, b, question, pick, fixed in COMPARISONS:
        eq = derivations.get(eq_id)
        ra = eq.evaluate_detailed(presets=presets, **fixed, **{kind: a})
        rb = eq.evaluate_detailed(presets=presets, **fixed, **{kind: b})
        va, vb = ra.value, rb.value.to(ra.value.units)
        name_a, name_b = presets.get(kind, a).name, presets.get(kind, b).name
        first_wins = (va < vb) if pick == "min" else (va > vb)
        winner = name_a if first_wins else name_b
        factor = (va / vb).to("").magnitude
        factor = factor if factor >= 1 else 1 / factor
        differing = [
            f"{derivations.SYMBOLS[n].meaning} {quantity(i.value)} against "
            f"{quantity(rb.inputs[n].value)}"
            for n, i in ra.inputs.items()
            if not i.origin.startswith(("equation", "constant"))
            and n in rb.inputs
            and n in derivations.SYMBOLS
            and abs((i.value / rb.inputs[n].value).to("").magnitude - 1) > 1e-9
        ]
        front = f"Which {question}: {name_a} or {name_b}, and by what factor?"
        back = (
            f"{winner}, by a factor of {number(factor, 3)}: {quantity(va)} against "
            f"{quantity(rb.value)}.\n\n${eq.latex()}$"
            + (f"; {'; '.join(differing)}." if differing else ".")
        )
        cards.append(
            Card(
                f"compare:{eq_id}:{a}:{b}",
                eq.chapter,
                "comparison",
                front,
                back,
                f"equation {eq_id}",
            )
        )
    return cards


# -- concept cards from book/concepts.toml -----------------------------------------------------

CONCEPTS = Path(__file__).with_name("concepts.toml")
LECTURE_DECK = Path(__file__).with_name("lecture_deck.toml")


def lecture_topics() -> dict[str, str]:
    """The lecture deck's topics: ``section.topic`` -> the question, paraphrased.

    >>> len(lecture_topics())
    27
    """
    with LECTURE_DECK.open("rb") as f:
        raw = tomllib.load(f)
    return {f"{s}.{k}": q for s, topics in raw.items() for k, q in topics.items()}


def _placeholders(chapter: str, presets: Presets) -> dict:
    """What a concept card's template may use: q(), tex(), param(), preset() and ctx."""
    from book.compute import chapter_context

    def q(eq_id: str, **kw) -> str:
        return quantity(derivations.get(eq_id).evaluate(presets=presets, **kw))

    return {
        "q": q,
        "tex": lambda eq_id: derivations.get(eq_id).latex(),
        "param": lambda name: quantity(presets.parameter[name].value),
        "preset": lambda kind, pid: presets.get(kind, pid).name,
        "ctx": chapter_context(chapter, presets),
    }


def concept_cards(presets: Presets) -> list[Card]:
    """The hand-written understanding cards, their numbers filled from equations and presets."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    with CONCEPTS.open("rb") as f:
        raw = tomllib.load(f)["card"]
    topics = lecture_topics()
    chapters = {c.id for c in derivations.CHAPTERS}
    cards, names = [], {}
    for entry in raw:
        where = f"concepts.toml card {entry.get('id')!r}"
        if entry["chapter"] not in chapters:
            continue  # a chapter not loaded (a user's catalogue)
        unknown = [t for t in entry.get("covers", []) if t not in topics]
        if unknown:
            raise ChalkboardError(f"{where}: unknown lecture-deck topic {unknown[0]!r}")
        if entry["chapter"] not in names:
            names[entry["chapter"]] = _placeholders(entry["chapter"], presets)
        try:
            front, back = (
                env.from_string(entry[side]).render(**names[entry["chapter"]]).strip()
                for side in ("front", "back")
            )
        except (jinja2.TemplateError, ChalkboardError) as err:
            raise ChalkboardError(f"{where}: {err}") from None
        cards.append(
            Card(
                f"concept:{entry['chapter']}:{entry['id']}",
                entry["chapter"],
                "concept",
                front,
                back,
                f"chapter {entry['chapter']}",
                covers=tuple(entry.get("covers", ())),
            )
        )
    return cards


def flashcards(presets: Presets | None = None) -> list[Card]:
    """Every card, in chapter order."""
    presets = presets or load()
    cards: list[Card] = concept_cards(presets)
    for chapter in derivations.CHAPTERS:
        for eq in derivations.equations(chapter.id):
            cards.append(_statement(eq))
            if not eq.evaluable:
                continue
            kw = reference_case(eq, presets)
            for make in (_dominance, _number):
                if (card := make(eq, kw, presets)) is not None:
                    cards.append(card)
    if "batching" in {c.id for c in derivations.CHAPTERS}:
        cards += _elasticity_cards(presets) + _regime_cards(presets)
        cards += _comparison_cards(presets)
    cards += _claim_cards(presets)
    order = {c.id: i for i, c in enumerate(derivations.CHAPTERS)}
    cards.sort(key=lambda c: order.get(c.chapter, len(order)))
    ids = [c.id for c in cards]
    if len(ids) != len(set(ids)):
        raise ChalkboardError("flashcard ids must be unique")
    return cards


# -- exports -------------------------------------------------------------------------------

DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
INLINE = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$", re.S)


def anki_math(text: str) -> str:
    """``$$x$$`` -> ``\\[x\\]`` and ``$x$`` -> ``\\(x\\)``: the delimiters Anki renders.

    >>> anki_math("a $x$ and $$y$$")
    'a \\\\(x\\\\) and \\\\[y\\\\]'
    """
    text = DISPLAY.sub(lambda m: f"\\[{m.group(1).strip()}\\]", text)
    return INLINE.sub(lambda m: f"\\({m.group(1)}\\)", text)


def site_math(text: str) -> str:
    """Each ``$$x$$`` as a paragraph of its own, where the site's Markdown (arithmatex) shows
    display math; within a line of prose it would read ``$x$`` as inline math between two
    stray dollar signs. Anki shows ``\\[x\\]`` as a block too (:func:`anki_math`).

    >>> site_math("So $$y$$ grows; $x$ too.").split("\\n")
    ['So', '', '$$y$$', '', 'grows; $x$ too.']
    """
    text = DISPLAY.sub(lambda m: f"\n\n$${m.group(1).strip()}$$\n\n", text)
    return re.sub(r"[ \t]*\n(?:[ \t]*\n)+[ \t]*", "\n\n", text).strip()


def _html(text: str) -> str:
    """Markdown-lite to HTML for Anki: bold, italics, code, paragraphs; math left for Anki."""
    import html

    out = html.escape(anki_math(text), quote=False)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"(?<![\\*])\*(?!\*)(.+?)\*", r"<i>\1</i>", out)
    out = re.sub(r"`(.+?)`", r"<code>\1</code>", out)
    return "<br><br>".join(p.strip() for p in out.split("\n\n"))


DECK_ID = 1_741_955_120  # fixed: a rebuilt package updates the same deck
MODEL_ID = 1_741_955_121
DECK_NAME = "Chalkboard: the math of training and serving LLMs"


def guid(card: Card) -> str:
    """The card's Anki note GUID, from its stable id (the Study page keys progress by it too)."""
    import genanki

    return genanki.guid_for("chalkboard", card.id)


def write_apkg(cards: list[Card], path) -> None:
    """An Anki package: one note per card, its GUID derived from the card's stable id, so a
    rebuilt deck updates notes (keeping review history) instead of duplicating them."""
    import genanki

    model = genanki.Model(
        MODEL_ID,
        "Chalkboard card",
        fields=[{"name": "Front"}, {"name": "Back"}, {"name": "Source"}, {"name": "Id"}],
        templates=[
            {
                "name": "Card",
                "qfmt": "{{Front}}",
                "afmt": '{{FrontSide}}<hr id="answer">{{Back}}<br><small>{{Source}}</small>',
            }
        ],
        sort_field_index=3,
    )
    deck = genanki.Deck(DECK_ID, DECK_NAME)
    for c in cards:
        deck.add_note(
            genanki.Note(
                model=model,
                fields=[_html(c.front), _html(c.back), c.source, c.id],
                guid=guid(c),
                tags=[c.chapter, c.kind],
            )
        )
    import tempfile

    # genanki writes the collection to a temporary file it never removes: give it a folder of
    # its own and remove that
    saved = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="chalkboard-anki-") as private:
        tempfile.tempdir = private
        try:
            genanki.Package(deck).write_to_file(str(path))
        finally:
            tempfile.tempdir = saved


def write_tsv(cards: list[Card], path) -> None:
    """Front, back, id, chapter, kind: tab-separated, newlines as <br>, Anki-importable."""

    def clean(text: str) -> str:
        return anki_math(text).replace("\t", " ").replace("\n", "<br>")

    lines = ["#separator:tab", "#html:true", "#columns:Front\tBack\tId\tChapter\tKind"]
    lines += ["\t".join([clean(c.front), clean(c.back), c.id, c.chapter, c.kind]) for c in cards]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_json(cards: list[Card], path) -> None:
    import json

    path.write_text(json.dumps([c.to_dict() for c in cards], indent=1) + "\n", encoding="utf-8")


def write_exports(folder, presets: Presets | None = None) -> list:
    """flashcards.apkg, .tsv and .json into ``folder``; returns the paths."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cards = flashcards(presets)
    paths = [folder / f"flashcards.{ext}" for ext in ("apkg", "tsv", "json")]
    for writer, path in zip((write_apkg, write_tsv, write_json), paths, strict=True):
        writer(cards, path)
    return paths


# -- the site's pages ------------------------------------------------------------------------

# Cards a figure helps with: the figure is shown with the question.
CARD_FIGURES = {
    "eq:step_time:dominant": "latency_vs_batch",
    "concept:batching:latency-floor": "latency_vs_batch",
    "concept:pipeline:bubbles": "pipeline_bubble",
    "concept:pipeline:kv-not-divided": "memory_vs_stages",
    "eq:cost_per_token:statement": "cost_vs_batch",
    "eq:ridge_intensity:statement": "roofline",
    "eq:memory_per_gpu:statement": "memory_vs_stages",
    "eq:pipeline_bubble_fraction:statement": "pipeline_bubble",
    "eq:chinchilla_loss:statement": "chinchilla_contours",
    "eq:storage_tier_drain_time:statement": "drain_ladder",
}


def card_pages(presets: Presets) -> dict:
    """One page per chapter plus an index: output path -> (template, context)."""
    from book.figures import drawn

    deck = flashcards(presets)
    pages, per_chapter = {}, []
    for chapter in derivations.CHAPTERS:
        cards = [
            _on_site(
                c,
                anchor=c.id.replace(":", "-"),
                figure=drawn(CARD_FIGURES[c.id], presets).html if c.id in CARD_FIGURES else "",
            )
            for c in deck
            if c.chapter == chapter.id
        ]
        pages[f"cards/{chapter.id}.md"] = (
            "cards/chapter.md.j2",
            {"chapter": chapter, "cards": cards},
        )
        per_chapter.append({"id": chapter.id, "title": chapter.title, "count": len(cards)})
    pages["cards/index.md"] = ("cards/index.md.j2", {"chapters": per_chapter, "total": len(deck)})
    pages["study.md"] = ("cards/study.md.j2", study_context(deck))
    return pages


def _on_site(card: Card, **extra) -> dict:
    """A card's fields for a site page, its math delimited for the site's Markdown."""
    return dict(card.to_dict(), front=site_math(card.front), back=site_math(card.back), **extra)


def study_context(deck: list[Card]) -> dict:
    """The Study page's deck: every card with the GUID its Anki note has (progress is kept by
    GUID, so it survives rebuilds), and the chapters to filter by."""
    return {
        "chapters": derivations.CHAPTERS,
        "cards": [_on_site(c, guid=guid(c)) for c in deck],
    }
