"""Every chapter section drawn from the lecture links to its moment in the video (issue 22).

A section is a ``##`` or ``###`` heading of a chapter template and the text under it. It is
lecture-sourced unless its heading says ``{# not from the lecture #}``; a lecture-sourced section
carries ``{{ moment("MM:SS") }}`` (book/lecture.py) at a mark the sources give: a section start
of the episode or a moment of its timestamped summary (book/lecture_deck.toml). The Exercises are
the book's own and are not checked.

A link to the start of a lecture part is not a moment when it is repeated on every section of
that part. A lecture-sourced section inside a part whose sources mark nothing finer says so in
its heading, ``{# no finer lecture moment #}``, and carries no link: the chapter's head gives
the part's span, and the part's first section links its start.
"""

import re

import pytest

from book import lecture, site
from book.templating import environment

CHAPTERS = site.TEMPLATES / "chapters"
NOT_FROM_LECTURE = "{# not from the lecture #}"
NO_FINER = "{# no finer lecture moment #}"
HEADING = re.compile(r"^(#{2,3}) (.+)$", re.M)
MOMENT = re.compile(r"""{{\s*moment\(\s*["']([\d:]+)["']""")
# Chapters another helper is linking in the same pass (issue 22); empty them when they are done.
NOT_YET: set[str] = set()
BOOK_OWN = {"Exercises"}


def sections(text: str) -> list[tuple[str, str]]:
    """(heading line, body up to the next heading of any level) for each section."""
    marks = list(HEADING.finditer(text))
    ends = [m.start() for m in marks[1:]] + [len(text)]
    return [(m.group(2), text[m.end() : end]) for m, end in zip(marks, ends, strict=True)]


def unlinked(text: str) -> list[str]:
    """The lecture-sourced sections of a template with no moment link."""
    return [
        heading
        for heading, body in sections(text)
        if heading not in BOOK_OWN
        and NOT_FROM_LECTURE not in heading
        and NO_FINER not in heading
        and not MOMENT.search(body)
    ]


def sourced_marks() -> set[int]:
    """Every mark the sources give, in seconds: section starts and the summary's moments."""
    video = lecture.video()
    marks = [s["start"] for s in video["section"].values()] + list(video["moment"].values())
    return {lecture.seconds(m) for m in marks}


TEMPLATES = sorted(p for p in CHAPTERS.glob("*.md.j2") if not p.name.startswith("_"))


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_every_lecture_sourced_section_links_to_its_moment(template):
    chapter = template.name.removesuffix(".md.j2")
    missing = unlinked(template.read_text(encoding="utf-8"))
    if chapter in NOT_YET:
        pytest.skip(f"{chapter}: being linked by another helper ({len(missing)} sections left)")
    assert not missing, f"{template.name}: sections with no lecture moment: {missing}"


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_a_section_without_a_finer_moment_links_nothing_and_its_part_is_linked(template):
    text = template.read_text(encoding="utf-8")
    marked = [(h, body) for h, body in sections(text) if NO_FINER in h]
    stale = [h for h, body in marked if MOMENT.search(body)]
    assert not stale, f"{template.name}: marked {NO_FINER} but linked: {stale}"
    if marked:  # the part itself is linked somewhere in the chapter
        assert MOMENT.search(text), f"{template.name}: no lecture moment at all"


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_a_chapter_cites_only_moments_the_sources_give(template):
    marks = {lecture.seconds(m) for m in MOMENT.findall(template.read_text(encoding="utf-8"))}
    assert marks <= sourced_marks(), f"{template.name}: {sorted(marks - sourced_marks())}"


def test_the_check_finds_an_unlinked_section_and_accepts_a_marked_one():
    text = (
        '## Linked\n\n{{ moment("15:16") }}\n\nProse.\n\n### Unlinked\n\nProse.\n\n'
        "## Ours {# not from the lecture #}\n\nProse.\n\n## Exercises\n\nQ.\n"
        "## Later {# no finer lecture moment #}\n\nProse.\n"
    )
    assert unlinked(text) == ["Unlinked"]


def test_a_moment_renders_as_a_link_to_the_video_at_that_second():
    text = environment().from_string('{{ moment("1:10:08") }}').render()
    assert text.startswith("[▶ 1:10:08 in the lecture](https://www.youtube.com/watch?v=")
    assert text.split("](", 1)[1].split(")")[0].endswith("&t=4208s")


# A link's words say what the reader will find there. The default words at the very start of the
# video, or a bare section letter, are a placeholder (reader's report 3: "▶ 00:00 in lecture
# section A" on six batching sections): a section that starts at the top of a lecture part says so.
CALL = re.compile(r"""{{\s*moment\(\s*["']([\d:]+)["']\s*(?:,\s*["']([^"']*)["'])?\s*\)\s*}}""")
SECTION_LETTER = re.compile(r"^in (the )?lecture section [A-G]$")
DEFAULT_WORDS = "in the lecture"


def placeholder_links(text: str) -> list[str]:
    """The moment calls of a template whose words are a placeholder: a section letter, or the
    default words on a link to the very start of the video."""
    found = []
    for call in CALL.finditer(text):
        mark, words = call.group(1), call.group(2) or DEFAULT_WORDS
        at_start = lecture.seconds(mark) == 0
        if SECTION_LETTER.match(words) or (at_start and words == DEFAULT_WORDS):
            found.append(call.group(0))
    return found


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_no_lecture_link_is_a_placeholder(template):
    found = placeholder_links(template.read_text(encoding="utf-8"))
    assert not found, f"{template.name}: placeholder lecture links {found}"


def test_the_placeholder_check_finds_the_reported_links_and_passes_real_ones():
    bad = (
        '{{ moment("00:00", "in lecture section A") }} {{ moment("00:00:00") }} '
        '{{ moment("1:10:08", "in lecture section D") }}'
    )
    assert len(placeholder_links(bad)) == 3
    good = (
        '{{ moment("15:16") }} {{ moment("00:00", "where the lecture opens, on Fast mode") }} '
        "{{ moment(\"1:47:30\", 'in the lecture') }}"
    )
    assert placeholder_links(good) == []
