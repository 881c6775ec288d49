"""One name per quantity (issue 12): every symbol of the notation shows a name no other has, and
the derivation steps show the notation's names, never a Python alias."""

import re

import derivations
from derivations.core import SYMBOLS

# What a reader sees of a LaTeX name: \mathrm{w} and w look alike, as do b_{w} and b_w.
_INVISIBLE = re.compile(r"\\(?:mathrm|text|operatorname|mathit)\b|[{}\s]")


def _as_read(latex: str) -> str:
    """``b_{\\mathrm{w}}`` -> ``b_w``: the name with the typesetting a reader does not see removed.

    >>> _as_read(r"t_{\\mathrm{out}}")
    't_out'
    """
    return _INVISIBLE.sub("", latex)


def _notation():
    """Every symbol the library declares (fixtures of other tests may add their own; not here)."""
    names = {s.name for e in derivations.equations() for s in (e.lhs, *e.inputs)}
    names |= {s.name for s in vars(derivations.notation).values() if hasattr(s, "latex")}
    return [SYMBOLS[n] for n in sorted(names)]


def test_every_symbol_shows_a_name_no_other_symbol_shows():
    seen: dict[str, str] = {}
    clashes = []
    for s in _notation():
        shown = _as_read(s.latex)
        if shown in seen:
            clashes.append(f"${s.latex}$ names both {seen[shown]} and {s.name}")
        seen.setdefault(shown, s.name)
    assert not clashes, "; ".join(clashes)


def test_a_name_with_a_slash_is_bracketed():
    """``D_pre / D_inf`` times ``D_inf`` would read as ``D_pre``: a ratio's name stands in
    brackets wherever it appears, as one factor."""
    slashed = [s.latex for s in _notation() if "/" in s.latex]
    assert slashed, "the notation names some ratios with a slash"
    bare = [x for x in slashed if not (x.startswith(r"\left(") and x.endswith(r"\right)"))]
    assert not bare, bare


def test_derivation_steps_show_the_notations_names():
    r"""Every symbol in a checked step is declared, so it prints with its LaTeX name; and a
    shorthand in the step's reason (``c_fwd``, ``t_mu``, which the book typesets as
    $c_{\mathrm{fwd}}$, $t_{\mu}$) reads as the name of a symbol of the notation, never as a
    Python alias (``t_up`` where the notation says $t_{\mathrm{scaleup}}$)."""
    from book.format import prose

    inline = re.compile(r"\$([^$]*)\$")
    names = {_as_read(s.latex) for s in _notation()}
    bad = []
    for eq in derivations.equations():
        if eq.derivation is None:
            continue
        for number, step in enumerate(eq.derivation.steps, 1):
            undeclared = [str(s) for s in step.relation.free_symbols if str(s) not in SYMBOLS]
            if undeclared:
                bad.append(f"{eq.id} step {number}: undeclared {undeclared}")
            for m in inline.finditer(prose(step.why)):
                if "_" in m[1] and _as_read(m[1]) not in names:
                    bad.append(f"{eq.id} step {number}: ${m[1]}$ in {step.why!r}")
    assert not bad, "\n".join(bad)


def test_equation_prose_never_spells_an_identifier():
    """Summaries, assumptions and step reasons are read on the page: they say "the step time",
    never the id ``step_time`` (shorthand such as ``d_h`` is typeset as $d_{h}$ and may stay)."""
    ids = {s for s in SYMBOLS if "_" in s} | {e.id for e in derivations.equations()}
    ids = {i for i in ids if "_" in i and not re.fullmatch(r"[A-Za-z]_[A-Za-z]+", i)}
    word = re.compile(r"(?<![\w/.#-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/-])")
    bad = []
    for eq in derivations.equations():
        texts = [eq.summary, *eq.assumptions]
        texts += [step.why for step in (eq.derivation.steps if eq.derivation else ())]
        for text in texts:
            prose = re.sub(r"`[^`]*`|\$[^$]*\$", " ", text)
            bad += [f"{eq.id}: {m[0]!r} in {text!r}" for m in word.finditer(prose) if m[0] in ids]
    assert not bad, "\n".join(bad)


# The episode's chapter marks (shared/reference/lecture.md, "Chapters:"): each section's start,
# and the next one's start as its end; G runs to the episode's end.
SECTION_TIMES = {
    "A": "00:00-32:09",
    "B": "32:09-47:12",
    "C": "47:12-1:03:37",
    "D": "1:03:37-1:18:59",
    "E": "1:18:59-1:33:02",
    "F": "1:33:02-2:04:02",
    "G": "2:04:02-2:13:00",
}


def _seconds(stamp: str) -> int:
    """'1:03:37' -> 3817, '15:16' -> 916."""
    total = 0
    for part in stamp.split(":"):
        total = 60 * total + int(part)
    return total


def test_a_source_names_the_section_its_time_range_is_from():
    # decode_attention_context once said "section F" with section A's time range
    checked = 0
    for eq in derivations.equations():
        named = re.search(r"section ([A-G])\b", eq.source.section)
        stamps = re.findall(r"\d+(?::\d\d)+", eq.source.timestamp)
        if named and stamps:
            start, end = map(_seconds, SECTION_TIMES[named.group(1)].split("-"))
            for stamp in stamps:
                assert start <= _seconds(stamp) <= end, (eq.id, str(eq.source))
            checked += 1
    assert checked > 30  # most equations cite a section and a time


def test_the_batch_symbol_reads_right_in_a_training_equation_too():
    """B counts the sequences of a training step (activation_memory: every token of each is
    processed) as well as of a decode step (one new token each): its meaning, as a card shows
    it (asides in brackets dropped), claims neither, and an aside names the decode reading."""
    batch = SYMBOLS["batch_size"]
    training = derivations.get("activation_memory")
    assert batch.name in {s.name for s in training.inputs}  # a training equation reads B
    bare = re.sub(r" \(.*?\)", "", batch.meaning)
    assert "new token" not in bare and "sequences in the batch" in bare, batch.meaning
    assert "decod" in batch.meaning  # the serving reading still said, as an aside
