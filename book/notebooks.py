"""A product of the pipeline: each chapter as a Jupyter notebook that reproduces its numbers.

A notebook is generated, never written by hand, from two things: the evaluations made while the
chapter's context was computed (:func:`book.compute.chapter_evaluations`: which equation, on
which presets and inputs) and the chapter's rendered page, which says which of those values the
chapter prints and under which heading. Each such value becomes a code cell that imports the
library, evaluates the same equation on the same presets and shows the result (its value and
where every input came from). The value the chapter prints is kept in the cell's metadata
(``chalkboard.prints``) and in a comment, not in an assertion, so a reader can edit any cell and
run it again; :func:`mismatches` compares an executed notebook's values with what the chapter
prints, which is how tests/book/test_notebooks.py checks the book.

The site writer (:mod:`book.site`) passes the page text in and writes
the notebooks to ``notebooks/<chapter>.ipynb``; tests/book/test_notebooks.py executes them.

>>> page = "# Batch size\\n\\n## The drain\\n\\nAn H100 drains its HBM in 23.88 ms.\\n"
>>> nb = chapter_notebook("batching", page)
>>> [c.cell_type for c in nb.cells][:3]
['markdown', 'code', 'markdown']
>>> print(nb.cells[-1].source)
r = get("hbm_drain_time").evaluate_detailed(hardware="h100_sxm")
r  # the chapter prints 23.88 ms
>>> nb.cells[-1].metadata["chalkboard"]
{'prints': '23.88 ms'}
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pint

import derivations
from book.compute import chapter_evaluations
from book.format import quantity
from units import ChalkboardError, parse_quantity
from units.display import spoken
from units.presets import Presets, load

FOLDER = "notebooks"  # in the site: notebooks/<chapter>.ipynb
DEFAULTS = {"precision": "bf16"}  # keywords equal to evaluate()'s defaults are left out
REFERENCE_HEADING = re.compile(r"^## Reference\b", re.M)
HEADING = re.compile(r"^(#{1,3}) (.+)$", re.M)
LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
FENCE = re.compile(r"^( *)(```|~~~).*?^\1\2[ \t]*$", re.M | re.S)
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def notebook_path(chapter_id: str) -> str:
    """Where a chapter's notebook sits in the site: ``'notebooks/batching.ipynb'``."""
    return f"{FOLDER}/{chapter_id}.ipynb"


def with_notebook_link(page: str, chapter_id: str, page_path: str) -> str:
    """``page`` (a chapter's Markdown) with an "Open as notebook" download link under its title.

    >>> print(with_notebook_link("# Title\\n\\nText.", "moe", "chapters/moe.md"))
    # Title
    <BLANKLINE>
    [Open as notebook](../notebooks/moe.ipynb){ .md-button .notebook download="moe.ipynb" }
    <BLANKLINE>
    Text.
    """
    depth = page_path.count("/")
    href = "../" * depth + notebook_path(chapter_id)
    link = f'[Open as notebook]({href}){{ .md-button .notebook download="{chapter_id}.ipynb" }}'
    title = re.search(r"^# .*$", page, re.M)
    if title is None:
        return f"{link}\n\n{page}"
    return f"{page[: title.end()]}\n\n{link}{page[title.end() :]}"


def _literal(value) -> str | None:
    """Python source for a keyword's value, or None when it cannot be written as a literal."""
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | np.integer):
        return repr(int(value))
    if isinstance(value, float | np.floating):
        return repr(float(value))
    if isinstance(value, pint.Quantity) and np.ndim(value.magnitude) == 0:
        magnitude = float(value.magnitude)
        number = repr(int(magnitude)) if magnitude.is_integer() else repr(magnitude)
        if value.dimensionless and str(value.units) in ("", "dimensionless"):
            return number
        text = f"{number} {value.units:D}"
        try:
            back = parse_quantity(text, what="notebook")
        except ChalkboardError:
            return None
        return _string(text) if np.isclose(back.to(value.units).m, magnitude, rtol=1e-12) else None
    return None


def _string(text: str) -> str:
    """A Python string literal in double quotes, as the project's code writes them."""
    return json.dumps(text, ensure_ascii=False)


def _equation(eq) -> str | None:
    """Python that gives ``eq``: ``get("id")`` for a registered equation, its recipe for one made
    from the catalogue (a solve, a term), None for one the notebook cannot rebuild."""
    if derivations.CATALOGUE.get(eq.id) is eq:
        return f'get("{eq.id}")'
    return eq.recipe or None


def _call(made: str, keywords: dict, presets_given: bool) -> str | None:
    """``r = <made>.evaluate_detailed(...)`` for one recorded evaluation (None: not writable)."""
    args = []
    for name, value in keywords.items():
        if name == "presets" or value is None or DEFAULTS.get(name) == value:
            continue
        source = _literal(value)
        if source is None:
            return None
        args.append(f"{name}={source}")
    if presets_given:
        args.append("presets=presets")
    head = f"r = {made}.evaluate_detailed("
    one_line = head + ", ".join(args) + ")"
    if len(one_line) <= 99:
        return one_line
    if len(packed := "    " + ", ".join(args)) <= 99:
        return f"{head}\n{packed}\n)"
    return head + "\n" + "".join(f"    {a},\n" for a in args) + ")"


def _weak(text: str) -> bool:
    """A bare small number ("4", "18") is found in too many sentences to place an evaluation."""
    return " " not in text and "." not in text and sum(c.isdigit() for c in text) < 3


def _first_paragraph(body: str) -> str:
    """The first paragraph of prose in a section (links reduced to their text), or ''."""
    for block in re.split(r"\n\s*\n", body.strip()):
        block = block.strip()
        if not block or block[0] in "<|!?{$#" or re.match(r"([-*+]|\d+\.) ", block):
            continue
        if "<" in block and ">" in block:
            return ""  # HTML (a figure, a calculator) does not belong in a notebook cell
        return LINK.sub(r"\1", block)
    return ""


def _sections(page: str) -> list[tuple[int, str, str]]:
    """``[(start, heading line, first paragraph)]`` of a page, the title first."""
    found = list(HEADING.finditer(page))
    out = []
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(page)
        out.append((m.start(), m.group(0), _first_paragraph(page[m.end() : end])))
    return out


NOT_BEFORE = re.compile(r"[\w.,]")  # a figure printed alone: no letter, digit or point before
NOT_AFTER = re.compile(r"[\w²³⁰-⁹]")  # nor a letter, digit or exponent after


def _find(page: str, text: str) -> int | None:
    """Where ``text`` first stands alone in ``page`` (neither NOT_BEFORE just before it nor
    NOT_AFTER just after it), or None. str.find skips ahead far faster than a regex with a
    lookbehind, run over the whole page for each of a chapter's thousands of figures.

    >>> _find("1.25 s or 25 s", "25 s"), _find("25 sm", "25 s"), _find("x25 s", "25 s")
    (10, None, None)
    """
    at = page.find(text)
    while at >= 0:
        end = at + len(text)
        if (at == 0 or not NOT_BEFORE.match(page, at - 1)) and not NOT_AFTER.match(page, end):
            return at
        at = page.find(text, at + 1)
    return None


def _placed(chapter_id: str, page: str, presets: Presets) -> list[tuple[int, object, str]]:
    """The chapter's evaluations whose value the page prints: ``[(position, evaluation, text)]``
    in page order, each (equation, printed value) once."""
    seen, placed, first, said = set(), [], {}, {}
    for order, ev in enumerate(chapter_evaluations(chapter_id, presets)):
        value = ev.value
        if not isinstance(value, pint.Quantity) or np.ndim(value.magnitude) != 0:
            continue
        # a chapter evaluates the same case many times: each value is written once
        key = (type(value.magnitude), value.magnitude, value.units)
        if key not in said:
            said[key] = quantity(value), spoken(value)
        exact, roughly = said[key]
        if (ev.equation.id, exact) in seen:
            continue
        # prose says a figure in 2-3 figures (book.format.Said): look for either reading
        for text in dict.fromkeys((exact, roughly)):
            if _weak(text):
                continue
            if text not in first:
                first[text] = _find(page, text)
            if first[text] is not None:
                seen.add((ev.equation.id, exact))
                placed.append((first[text], order, ev, (text, exact)))
                break
    placed.sort(key=lambda p: p[:2])
    return [(pos, ev, text) for pos, _, ev, text in placed]


def chapter_notebook(
    chapter_id: str, page: str, presets: Presets | None = None
) -> nbformat.NotebookNode:
    """The notebook of one chapter, from its recorded evaluations and its rendered ``page``."""
    presets = presets or load()
    chapter = next(c for c in derivations.CHAPTERS if c.id == chapter_id)
    reference = REFERENCE_HEADING.search(page)
    page = page[: reference.start()] if reference else page
    # a fenced block's "# comment" is no heading: blank it, keeping every other position
    page = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), page)
    extra_files = presets.files != load().files
    new_md, new_code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    sections = _sections(page)
    intro = sections[0][2] if sections and sections[0][1].startswith("# ") else ""
    where = f"Lecture section {chapter.section}" + (
        f", {chapter.timestamps}" if chapter.timestamps else ""
    )
    cells = [
        new_md(
            f"# {chapter.title}\n\n{intro or f'*{where}.*'}\n\n"
            "> This notebook is generated from the chapter's own computations: each code cell "
            "evaluates one of the chapter's equations on the presets the chapter uses and shows "
            "the value and where every input came from; a comment says what the chapter prints. "
            "Change a keyword (another `hardware=` or `model=`, or an input such as "
            '`batch_size=64` or `mem_bandwidth="4.8 TB/s"`) to work your own case; `get(...)` '
            "alone shows an equation with its symbols, units and assumptions. It needs the "
            "`chalkboard` package (`pip install -e .` in a checkout of the project)."
        ),
        new_code(
            "from derivations import get"
            + (
                "\nfrom units.presets import load\n\n"
                f"presets = load({[f for f in presets.files if f not in load().files]!r})"
                if extra_files
                else ""
            )
        ),
    ]
    # the chapter's question is always there, with or without numbers of its own
    questions = [s for s in sections if "question" in s[1].lower() and s[1].startswith("## ")]
    shown_heading, shown_equations = None, set()

    def heading_cell(section) -> None:
        nonlocal shown_heading
        _, heading, paragraph = section
        if heading != shown_heading and not heading.startswith("# "):
            cells.append(new_md(heading + (f"\n\n{paragraph}" if paragraph else "")))
        shown_heading = heading

    for pos, ev, (text, exact) in _placed(chapter_id, page, presets):
        made = _equation(ev.equation)
        call = made and _call(made, ev.keywords, extra_files)
        if not call:
            continue
        while questions and questions[0][0] <= pos:
            heading_cell(questions.pop(0))
        heading_cell(max((s for s in sections if s[0] <= pos), default=(0, "", "")))
        if made not in shown_equations:
            shown_equations.add(made)
            cells.append(new_code(made))
        cell = new_code(f"{call}\nr  # the chapter prints {text}")
        cell.metadata["chalkboard"] = {"prints": text} | ({"shows": exact} if text != exact else {})
        cells.append(cell)
    for section in questions:
        heading_cell(section)
    if any("split_terms(" in c.source for c in cells):
        cells[1].source = cells[1].source.replace(
            "from derivations import get",
            "from derivations import get\nfrom derivations.algebra import split_terms",
        )
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["chalkboard"] = {"chapter": chapter_id, "generated_by": "chalkboard build"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{chapter_id}-{i}"  # stable: a rebuilt notebook differs only where it must
    return nb


def mismatches(nb: nbformat.NotebookNode) -> list[str]:
    """The cells of an executed notebook whose value differs from what the chapter prints (each
    said as "cell N: the chapter prints X, the cell shows Y"); [] when the notebook reproduces
    its chapter. A cell with no output counts as a mismatch.

    >>> cell = nbformat.v4.new_code_cell("r", metadata={"chalkboard": {"prints": "23.88 ms"}})
    >>> shown = {"text/markdown": "$t$ = **23.9 ms**"}
    >>> cell.outputs = [nbformat.v4.new_output("execute_result", data=shown)]
    >>> mismatches(nbformat.v4.new_notebook(cells=[cell]))
    ['cell 0: the chapter prints 23.88 ms, the cell shows 23.9 ms']
    """
    out = []
    for i, cell in enumerate(nb.cells):
        marks = cell.get("metadata", {}).get("chalkboard", {})
        if "prints" not in marks:
            continue
        prints = marks.get("shows", marks["prints"])  # the exact value of a figure said roughly
        shown = [
            m.group(1)
            for o in cell.get("outputs", [])
            for m in [re.search(r"= \*\*(.+?)\*\*", o.get("data", {}).get("text/markdown", ""))]
            if m
        ]
        if shown != [prints]:
            said = ", ".join(shown) or "nothing"
            out.append(f"cell {i}: the chapter prints {prints}, the cell shows {said}")
    return out


def write_notebooks(folder: Path, pages: dict[str, str], presets: Presets | None = None) -> list:
    """Write ``folder/<chapter>.ipynb`` for each chapter's rendered page in ``pages`` (by
    chapter id); returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter_id, page in pages.items():
        nb = chapter_notebook(chapter_id, page, presets)
        nbformat.validate(nb)
        path = folder / f"{chapter_id}.ipynb"
        path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
        written.append(path)
    return written
