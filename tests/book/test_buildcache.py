"""The MkDocs pass's caches (book/buildcache.py), on a small site built with the book's hooks and
theme: a second build reads what the first stored, an edited page is converted and indexed again,
and what the caches give is what mkdocs would have made."""

import json
from pathlib import Path

import jinja2
import pytest

from book import buildcache
from book.mkdocs_hooks import CALCULATOR, HELD, SVG

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "book" / "mkdocs_hooks.py"

CONFIG = """site_name: Small
docs_dir: docs
site_dir: site
strict: true
theme:
  name: material
plugins:
  - search
markdown_extensions:
  - admonition
  - attr_list
  - md_in_html
  - tables
  - toc:
      permalink: true
  - pymdownx.superfences
  - pymdownx.arithmatex:
      generic: true
hooks:
  - {hooks}
nav:
  - Home: index.md
  - Batch: batch.md
"""
FIGURE = (
    '<figure class="chalkboard-figure" id="figure-f">\n<svg role="img" viewBox="0 0 10 10">\n'
    "<text>tokens per second</text>\n</svg>\n<figcaption>The figure.</figcaption>\n</figure>\n"
)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """A cache of the test's own: what another test stored is never read here."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(folder))


def _project(tmp_path: Path, batch: str) -> Path:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "mkdocs.yml").write_text(CONFIG.format(hooks=HOOKS), encoding="utf-8")
    (tmp_path / "docs" / "index.md").write_text(
        "# Home\n\nSee [the batch](batch.md#cost).\n\n" + FIGURE, encoding="utf-8"
    )
    (tmp_path / "docs" / "batch.md").write_text(batch, encoding="utf-8")
    return tmp_path


def _build(project: Path) -> dict:
    """Build the small site; the number of Markdown conversions read from the store and done,
    and the search index."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    counts = {}
    real = buildcache.MarkdownCache.render

    def counting(self, page, config, files, render):
        real(self, page, config, files, render)
        counts["hits"], counts["misses"] = self.hits, self.misses

    buildcache.MarkdownCache.render = counting
    try:
        build(load_config(str(project / "mkdocs.yml")))
    finally:
        buildcache.MarkdownCache.render = real
    index = json.loads((project / "site" / "search" / "search_index.json").read_text())
    return {**counts, "index": index["docs"]}


BATCH = "# Batch\n\n## Cost {#cost}\n\nThe step costs $t = 2 N B / F$ of time.\n"


def test_a_second_build_reads_every_page_and_an_edit_is_converted_again(tmp_path):
    project = _project(tmp_path, BATCH)
    first = _build(project)
    assert (first["hits"], first["misses"]) == (0, 2)
    html = (project / "site" / "batch" / "index.html").read_text()
    second = _build(project)
    assert (second["hits"], second["misses"]) == (2, 0)
    assert (project / "site" / "batch" / "index.html").read_text() == html
    assert second["index"] == first["index"]

    (project / "docs" / "batch.md").write_text(BATCH.replace("of time", "per step"))
    third = _build(project)
    assert (third["hits"], third["misses"]) == (1, 1)
    page = (project / "site" / "batch" / "index.html").read_text()
    assert "per step" in page and "of time" not in page
    texts = " ".join(doc["text"] for doc in third["index"])
    assert "per step" in texts and "of time" not in texts  # the search entry is not stale


def test_a_page_whose_conversion_warned_is_not_stored(tmp_path):
    from mkdocs.exceptions import Abort

    project = _project(tmp_path, BATCH + "\nSee [nowhere](missing.md).\n")
    for _ in range(2):  # the second build warns again: nothing was stored to skip the warning
        with pytest.raises(Abort):
            _build(project)


def test_figures_pass_through_markdown_untouched(tmp_path):
    project = _project(tmp_path, BATCH)
    _build(project)
    home = (project / "site" / "index.html").read_text()
    assert '<svg role="img" viewBox="0 0 10 10">\n<text>tokens per second</text>\n</svg>' in home
    assert "data-chalkboard-held" not in home
    index = json.loads((project / "site" / "search" / "search_index.json").read_text())
    assert any("tokens per second" in d["text"] for d in index["docs"])  # indexed as before


def test_svg_and_calculators_are_held_and_put_back():
    from book.calculators import calculator, calculator_html

    form = calculator_html(calculator("crossover_batch"))
    markdown = "Text\n\n" + FIGURE + "\nMore\n\n" + form + "\n\nLast\n"
    held: list[str] = []
    import book.mkdocs_hooks as hooks

    kept = SVG.sub(lambda m: hooks._hold(held, m[0], "svg"), markdown)
    kept = CALCULATOR.sub(lambda m: hooks._hold(held, m[0], "details"), kept)
    assert "<text>" not in kept and "<table>" not in kept and len(held) == 2
    assert HELD.sub(lambda m: held[int(m[2])], kept) == markdown


def test_an_edited_template_is_compiled_again(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    cache = buildcache.TemplateCache()

    def render() -> str:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), bytecode_cache=cache)
        return env.get_template("page.j2").render(n=3)

    (folder / "page.j2").write_text("{{ n }} chips", encoding="utf-8")
    assert render() == "3 chips"
    assert render() == "3 chips"  # read back from the store
    (folder / "page.j2").write_text("{{ n * 2 }} chips", encoding="utf-8")
    assert render() == "6 chips"


def test_options_of_the_environment_are_part_of_the_key(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "page.j2").write_text("{{ text }}", encoding="utf-8")
    cache = buildcache.TemplateCache()
    plain = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), bytecode_cache=cache)
    escaping = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder), bytecode_cache=cache, autoescape=True
    )
    assert plain.get_template("page.j2").render(text="<b>") == "<b>"
    assert escaping.get_template("page.j2").render(text="<b>") == "&lt;b&gt;"


def test_typeset_math_is_read_back_without_node_and_a_new_formula_starts_it(monkeypatch):
    from book import mathrender

    monkeypatch.setattr(mathrender, "_TYPESET", {})
    formulas = [("B^{*} = F / M", False), ("t = 2 N B / F", True)]
    with mathrender.MathRenderer() as first:
        typeset = first.render(formulas)
    assert first.proc is not None and all('class="katex' in h for h in typeset)
    monkeypatch.setattr(mathrender, "_TYPESET", {})  # a new build: only the disk has them
    with mathrender.MathRenderer() as second:
        assert second.render(formulas) == typeset
        assert second.proc is None  # no node started
        new = second.render([("x^2", False)])
        assert second.proc is not None and "katex" in new[0]


API_CONFIG = CONFIG.replace(
    "plugins:\n  - search\n",
    "plugins:\n  - search\n  - mkdocstrings:\n      handlers:\n        python:\n"
    f"          paths: [{ROOT}]\n",
).replace("  - Batch: batch.md\n", "  - Batch: batch.md\n  - API: api.md\n")


def test_an_api_page_is_read_back_with_what_it_registered(tmp_path, monkeypatch):
    """A page of the API reference comes from the store with its anchors and inventory items
    registered again: another page's cross-reference to it still resolves (strict: a lost
    anchor would stop the build), and objects.inv is the one the rendering wrote."""
    from book import resultcache

    project = _project(tmp_path, BATCH + "\nRaises [the error][units.errors.ChalkboardError].\n")
    (project / "mkdocs.yml").write_text(API_CONFIG.format(hooks=HOOKS), encoding="utf-8")
    (project / "docs" / "api.md").write_text("# API\n\n::: units.errors\n", encoding="utf-8")
    site = project / "site"
    first = _build(project)
    made = {p: (site / p).read_bytes() for p in ("api/index.html", "batch/index.html")}
    inventory = (site / "objects.inv").read_bytes()
    assert (first["hits"], first["misses"]) == (0, 3)
    assert b'href="../api/#units.errors.ChalkboardError"' in made["batch/index.html"]
    second = _build(project)
    assert (second["hits"], second["misses"]) == (3, 0)
    assert {p: (site / p).read_bytes() for p in made} == made
    assert (site / "objects.inv").read_bytes() == inventory
    monkeypatch.setattr(resultcache, "_library_digest", lambda: "an edited library")
    third = _build(project)
    assert (third["hits"], third["misses"]) == (2, 1)  # the API page is rendered again


def test_an_entry_that_registers_anything_else_is_refused():
    """A stored registration is only ever one of the three kinds recorded (a KeyError makes the
    page render again); nothing in it is looked up or called by name."""
    from types import SimpleNamespace

    config = SimpleNamespace(
        plugins={"autorefs": None, "mkdocstrings": SimpleNamespace(handlers=0)}
    )
    with pytest.raises(KeyError):
        buildcache._register(config, None, [["run", "os.system"]])
