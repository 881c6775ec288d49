"""Every chapter as a Jupyter notebook (book/notebooks.py): generated from the evaluations the
chapter's context records and the values its page prints, linked under each chapter's title, and
executed here in a real ipykernel, so a notebook that no longer reproduces its chapter fails."""

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import derivations
from book.compute import chapter_evaluations
from book.notebooks import _literal, _weak, chapter_notebook, mismatches, with_notebook_link
from derivations import get, recording
from derivations.algebra import split_terms
from units import Q_, parse_quantity

CELL_TIMEOUT = 120  # seconds per cell: a first evaluation compiles its equation (≈6 s loaded)


def execute(nb, cwd) -> None:
    """Run ``nb`` top to bottom in one fresh python3 (ipykernel) session; raises on any error."""
    NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        startup_timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    ).execute()


# Between two chapters run in one kernel: the namespace emptied (a notebook that forgot an import
# fails, as in a fresh kernel) and the catalogue's size shown, which every separator must show
# alike (a notebook that registered an equation would leak it to the next).
SEPARATOR = '%reset -f\nprint(len(__import__("derivations").CATALOGUE))'
KERNELS = 2  # the 2-core machine: two kernels at a time, each running its share of the chapters


def execute_in_turn(notebooks: list, cwd) -> list[str]:
    """Run each notebook of ``notebooks`` top to bottom in one python3 kernel, one after another,
    each from an empty namespace (``SEPARATOR``); their cells get their outputs as if each had run
    alone. Returns what each separator printed. A kernel costs a second or two of CPU to start
    and import the library: one per chapter was most of this test."""
    separators = [nbformat.v4.new_code_cell(SEPARATOR) for _ in range(len(notebooks) + 1)]
    cells = [separators[0]]
    for nb, after in zip(notebooks, separators[1:], strict=True):
        cells += [*nb.cells, after]
    together = nbformat.v4.new_notebook(metadata=notebooks[0].metadata)
    together.cells = cells  # the very cells (new_notebook(cells=...) would copy them)
    execute(together, cwd)
    return [
        "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
        for cell in separators
    ]


def test_every_chapter_notebook_runs_and_reproduces_its_numbers(printed_site, tmp_path):
    """The site's notebooks, one per chapter, executed in real ipykernels (two at a time on the
    2-core machine, each running its chapters in turn from an empty namespace): every value reads
    as its chapter prints it."""
    folder = printed_site / "notebooks"
    paths = [folder / f"{c.id}.ipynb" for c in derivations.CHAPTERS]
    assert all(p.is_file() for p in paths), sorted(p.name for p in folder.iterdir())
    notebooks = {p.stem: nbformat.read(p, as_version=4) for p in paths}
    for chapter_id, nb in notebooks.items():
        nbformat.validate(nb)
        checks = [c for c in nb.cells if "prints" in c.metadata.get("chalkboard", {})]
        assert len(checks) >= 8, (chapter_id, len(checks))  # each chapter prints many numbers
        assert not any("assert" in c.source for c in nb.cells), chapter_id  # cells stay editable
        assert nb.cells[0].source.startswith("# "), chapter_id
        assert sum(c.source.startswith(("## ", "### ")) for c in nb.cells) >= 2, chapter_id

    started = time.monotonic()
    failures = {}
    ids = list(notebooks)
    shares = [ids[k::KERNELS] for k in range(KERNELS)]

    def run(share):
        try:
            printed = execute_in_turn([notebooks[i] for i in share], tmp_path)
        except CellExecutionError as err:
            failed = [
                chapter_id
                for chapter_id in share
                for c in notebooks[chapter_id].cells
                if any(o.get("output_type") == "error" for o in c.get("outputs", []))
            ]
            failures[failed[0] if failed else " or ".join(share)] = str(err)[:2000]
            return
        if len(set(printed)) != 1 or not printed[0].strip().isdigit():
            failures[" then ".join(share)] = f"the catalogue changed between chapters: {printed}"
        for chapter_id in share:
            cells = notebooks[chapter_id].cells
            if ran := [c for c in cells if c.cell_type == "code" and c.execution_count is None]:
                failures[chapter_id] = f"{len(ran)} cells did not run"
            elif wrong := mismatches(notebooks[chapter_id]):
                failures[chapter_id] = wrong

    with ThreadPoolExecutor(max_workers=KERNELS) as pool:
        list(pool.map(run, shares))
    elapsed = time.monotonic() - started
    print(f"executed {len(notebooks)} chapter notebooks in {elapsed:.1f} s")
    assert not failures, failures
    # what a reader sees: each checked cell shows its value and the inputs' origins
    shown = notebooks["batching"].cells
    outputs = [o for c in shown if c.cell_type == "code" for o in c.get("outputs", [])]
    markdown = [o["data"]["text/markdown"] for o in outputs if "text/markdown" in o.get("data", {})]
    assert any("hardware h100_sxm: hbm_bandwidth" in m for m in markdown)
    assert any(re.search(r"\*\*[\d,.]+ sequences\*\*", m) for m in markdown)


def test_a_number_the_chapter_no_longer_prints_is_a_mismatch_and_edited_cells_run(tmp_path):
    """The check can fail: in one kernel, the value the book prints matches, a cell whose
    recorded value the book does not compute is reported, and a reader's edit (another chip)
    runs without an error: the notebook holds no assertion."""
    page = "# Batching\n\n## Drain\n\nAn H100 drains its HBM in 23.88 ms.\n"
    nb = chapter_notebook("batching", page)
    right = next(c for c in nb.cells if "prints" in c.metadata.get("chalkboard", {}))
    wrong = nbformat.v4.new_code_cell(right.source, metadata={"chalkboard": {"prints": "23.9 ms"}})
    edited = nbformat.v4.new_code_cell(right.source.replace("h100_sxm", "b200"))
    nb.cells += [wrong, edited]
    execute(nb, tmp_path)
    assert mismatches(nb) == [
        f"cell {len(nb.cells) - 2}: the chapter prints 23.9 ms, the cell shows 23.88 ms"
    ]
    assert "22.5 ms" in edited.outputs[0]["data"]["text/markdown"]  # 180 GB / 8 TB/s, by hand


def test_each_chapter_page_links_its_notebook(printed_site):
    for chapter in derivations.CHAPTERS:
        html = (printed_site / "chapters" / chapter.id / "index.html").read_text(encoding="utf-8")
        link = re.search(r'<a [^>]*href="([^"]*\.ipynb)"[^>]*>Open as notebook</a>', html)
        assert link, chapter.id
        assert f'download="{chapter.id}.ipynb"' in link.group(0)
        target = (printed_site / "chapters" / chapter.id / link.group(1)).resolve()
        assert target == (printed_site / "notebooks" / f"{chapter.id}.ipynb").resolve()
        # near the top: right under the title, before the first section
        assert html.index("Open as notebook") < html.index("<h2"), chapter.id


def test_notebook_cells_follow_the_page():
    """Values go under the heading where the page prints them, in page order; a bare small
    number ("4") places nothing; the code is the library's own API."""
    page = (
        "# Batching\n\n*Intro.*\n\n## Memory\n\nThe HBM drains in 23.88 ms on an H100; "
        "[see](x.md) the crossover.\n\n## Crossover\n\nAt FP8 the crossover is 5,667 sequences."
    )  # the running example since issue 22: GB200 5,000 TFLOP/s FP8 / 8 TB/s / 2 x 671/37 = 5,667
    nb = chapter_notebook("batching", page)
    sources = [c.source for c in nb.cells]
    memory = sources.index(next(s for s in sources if s.startswith("## Memory")))
    crossover = sources.index(next(s for s in sources if s.startswith("## Crossover")))
    assert "see the crossover" in sources[memory]  # the section's first paragraph, links as text
    drain = next(i for i, s in enumerate(sources) if "the chapter prints 23.88 ms" in s)
    b_star = next(i for i, s in enumerate(sources) if "the chapter prints 5,667 sequences" in s)
    assert memory < drain < crossover < b_star
    assert sources[1] == "from derivations import get"
    assert 'get("crossover_batch")' in sources  # the equation is shown before it is evaluated
    assert 'precision="fp8"' in sources[b_star] and 'model="deepseek_v3"' in sources[b_star]
    assert _weak("4") and _weak("18") and not _weak("4.5") and not _weak("23.88 ms")


def test_notebooks_come_from_the_chapters_own_evaluations():
    made = chapter_evaluations("validation")
    solved = [e.equation for e in made if e.equation.id not in derivations.CATALOGUE]
    assert solved, "the validation chapter evaluates a solved equation"
    for eq in solved:
        # a notebook rebuilds it from the catalogue and gets the same equation
        rebuilt = eval(eq.recipe, {"get": get, "split_terms": split_terms})
        assert rebuilt.id == eq.id and rebuilt.rhs == eq.rhs


@pytest.mark.parametrize(
    "value",
    [
        Q_(28.0, "chip"),
        Q_(2.664e6, "chip*hour"),
        Q_(6.25, "USD/Mtok"),
        Q_(1e50, "FLOP**2"),
        Q_(5667.22973, "sequence"),
        Q_(0.173122741, ""),
    ],
)
def test_keyword_literals_read_back_as_the_same_quantity(value):
    source = _literal(value)
    text = json.loads(source) if source.startswith('"') else source
    back = parse_quantity(text, what="test")
    assert back.to(value.units).m == pytest.approx(value.m, rel=1e-12)


def test_the_link_sits_under_the_title_and_is_relative():
    page = "# Title\n\nFirst.\n\n## Section\n"
    out = with_notebook_link(page, "pipeline", "chapters/pipeline.md")
    assert out.split("\n")[2].startswith("[Open as notebook](../notebooks/pipeline.ipynb)")
    assert 'download="pipeline.ipynb"' in out and out.endswith("First.\n\n## Section\n")


# -- Jupyter displays of equations and results (derivations/core.py) --------------------------


def test_an_equation_shows_its_math_symbols_units_assumptions_and_source():
    eq = get("crossover_batch")
    md = eq._repr_markdown_()
    assert f"$${eq.latex()}$$" in md and eq._repr_latex_() == f"$${eq.latex()}$$"
    for s in (eq.lhs, *eq.inputs):
        assert f"`{s.name}`" in md and s.latex in md
    assert "| TB/s |" in md and "| sequences |" in md  # units as a reader says them
    assert all(a in md for a in eq.assumptions) and str(eq.source) in md


def test_a_result_shows_its_value_as_written_and_where_each_input_came_from():
    r = get("crossover_batch").evaluate_detailed(
        hardware="h100_sxm", model="deepseek_v3", precision="fp8", mem_bandwidth="3.35 TB/s"
    )
    md = r._repr_markdown_()
    assert r.text == "5,356 sequences"  # facts.md: H100 1,979 TFLOP/s FP8 / 3.35 TB/s × 671/37 / 2
    assert md.startswith("$B^{*}$ (`crossover_batch`") and "**5,356 sequences**" in md
    assert "| $W$ `mem_bandwidth` | 3.35 TB/s | given |" in md  # a keyword (--set): given
    assert "| hardware h100_sxm: dense_flops_fp8 |" in md  # a preset's field
    assert "model deepseek_v3: params_total" in md
    assert r._repr_latex_() == r"$B^{*} = 5{,}356\ \text{sequences}$"
    huge = get("inference_tokens").evaluate_detailed()
    assert "parameter inference_rate (default)" in huge._repr_markdown_()  # a named default
    assert re.fullmatch(
        r"\$D_\{[^$]*\} = [\d.]+ \\times 10\^\{\d+\}\\ \\text\{tokens\}\$", huge._repr_latex_()
    ), huge._repr_latex_()


def test_recording_names_every_keyword_and_skips_nested_evaluations():
    with recording() as made:
        get("hbm_drain_time").evaluate("h100_sxm")  # positional: hardware
        get("params_total").evaluate(model="llama_3_1_8b")
    assert [e.equation.id for e in made] == ["hbm_drain_time", "params_total"]
    assert made[0].keywords["hardware"] == "h100_sxm"
    with recording() as made:  # a preset cross-checked against its architecture evaluates inside
        get("weight_memory").evaluate(model="llama_3_1_8b")
    assert [e.equation.id for e in made] == ["weight_memory"]


def test_a_comment_in_a_code_block_is_no_heading():
    page = (
        "# Batching\n\n## Memory\n\nThe HBM drains in 23.88 ms.\n\n```bash\n# a comment\n"
        "chalkboard eval hbm_drain_time --hardware h100_sxm   # 23.88 ms\n```\n"
    )
    sources = [c.source for c in chapter_notebook("batching", page).cells]
    assert not any(s.startswith("# a comment") for s in sources)
    assert any(s.startswith("## Memory") for s in sources)
