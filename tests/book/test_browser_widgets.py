"""The built site's widgets in a real headless Chromium: calculators and their preset pickers
match the Python library, the answer checker grades every kind of problem, flashcards reveal
their answers, over http and opened from the file system (the Study page is in
test_browser_study.py). Fixtures are in conftest.py, helpers in browser.py.
"""

import re

import pytest

from derivations import get


def form_values(calc) -> dict:
    return calc.evaluate(
        """box => Object.fromEntries([...box.querySelectorAll('input[data-arg]')]
              .map(i => [i.dataset.arg, i.value]))"""
    )


def python_value(eq_id: str, calc, units: dict) -> float:
    values = form_values(calc)
    overrides = {name: f"{values[name]} {units[name]}" for name in values}
    eq = get(eq_id)
    return eq.evaluate(**overrides).to(eq.lhs.display_unit).m


def open_calculator(page, eq_id: str):
    """Open the equation's collapsed reference block (the calculator lives there since issue
    12), then its calculator."""
    page.locator(f"details#{eq_id} > summary").click()
    calc = page.locator(f'details.chalkboard-calc[data-eq="{eq_id}"]')
    calc.locator("summary").click()
    return calc


CALCULATORS = [
    ("batching", "crossover_batch", "mem_bandwidth", "4.8"),
    ("batching", "cost_per_token", "batch_size", "512"),
    ("long_context", "kv_bytes_per_token", "kv_bytes_per_value", "1"),
]


@pytest.mark.parametrize(("chapter", "eq_id", "arg", "new"), CALCULATORS)
def test_calculators_match_python_and_update(server, page, chapter, eq_id, arg, new):
    from book.calculators import calculator

    base, _ = server
    page.goto(f"{base}/chapters/{chapter}/")
    calc = open_calculator(page, eq_id)
    units = {a["name"]: a["unit"] for a in calculator(eq_id)["args"]}
    shown = float(calc.locator("output").get_attribute("data-value"))
    assert shown == pytest.approx(python_value(eq_id, calc, units), rel=1e-9)
    calc.locator(f'input[data-arg="{arg}"]').fill(new)
    changed = float(calc.locator("output").get_attribute("data-value"))
    assert changed != pytest.approx(shown, rel=1e-12)
    assert changed == pytest.approx(python_value(eq_id, calc, units), rel=1e-9)
    assert page.errors == []


def test_a_preset_picker_refills_the_calculator(server, page):
    base, _ = server
    page.goto(f"{base}/chapters/batching/")
    calc = open_calculator(page, "ridge_intensity")
    calc.locator('select[data-kind="hardware"]').select_option("b200")
    # B200: 2,250 TFLOP/s over 8 TB/s at BF16 (facts.md)
    calc.locator('select[data-kind="compute_precision"]').select_option("bf16")
    assert float(calc.locator("output").get_attribute("data-value")) == pytest.approx(2250 / 8)


def test_weight_and_compute_precision_pickers_refill_their_own_inputs(server, page):
    base, _ = server
    page.goto(f"{base}/chapters/batching/")
    calc = open_calculator(page, "crossover_batch")
    calc.locator('select[data-kind="hardware"]').select_option("b200")
    calc.locator('select[data-kind="model"]').select_option("deepseek_v3")
    calc.locator('select[data-kind="compute_precision"]').select_option("fp8")
    calc.locator('select[data-kind="weight_precision"]').select_option("fp4")
    assert calc.locator('input[data-arg="weight_bytes_per_value"]').input_value() == "0.5"
    assert calc.locator('input[data-arg="flops"]').input_value() == "4500"
    # FP4 weights, FP8 math on a B200: 4,500 TFLOP/s / 8 TB/s x 0.5 B / 2 FLOP x 671 / 37
    # (facts.md; DeepSeek-V3 671B total, 37B active)
    hand = 4500 / 8 * 0.5 / 2 * 671 / 37
    assert float(calc.locator("output").get_attribute("data-value")) == pytest.approx(hand)
    assert page.errors == []


def test_answer_checker_grades_right_and_wrong_answers(server, page):
    from units import Q_, parse_unit

    base, _ = server
    page.goto(f"{base}/problems/batching/")
    box = page.locator(".chalkboard-problem").first
    spec = box.evaluate("b => JSON.parse(b.getAttribute('data-answer'))")
    shown = spec["value"] / Q_(1, parse_unit(spec["unit"])).to_base_units().m

    def grade(text):
        box.locator("input").fill(text)
        box.locator(".chalkboard-check").click()
        return box.locator(".chalkboard-result").inner_text()

    assert grade(f"{shown!r} {spec['unit']}") == "Correct."
    assert grade(f"{shown * 1.5!r} {spec['unit']}").startswith("Not right")
    assert grade("3 USD").startswith("That is a cost; the question asks for")
    assert page.errors == []


def test_a_flashcard_reveals_its_answer(server, page):
    base, _ = server
    page.goto(f"{base}/cards/batching/")
    card = page.locator(".chalkboard-card details").first
    answer = card.locator("p").first
    assert not answer.is_visible()
    card.locator("summary").click()
    answer.wait_for(state="visible")
    assert answer.is_visible()


def test_the_validation_chapter_shows_its_figure_tables_and_exercises(server, page):
    from book.validation import summary, validate

    base, _ = server
    page.goto(f"{base}/chapters/validation/")
    page.wait_for_load_state("load")
    assert page.errors == []
    figure = page.locator("#figure-measured_vs_bound svg")
    assert figure.count() == 1 and figure.is_visible()
    # every measurement's preset id sits in its scenario's collapsed block, never in the main flow
    ids = {r.id for r in validate()}
    shown = set(page.eval_on_selector_all("details li code", "els => els.map(e => e.textContent)"))
    assert ids <= shown
    visible = page.eval_on_selector_all(
        "details li code", "els => els.filter(e => e.checkVisibility()).length"
    )
    assert visible == 0  # the appendix's blocks start closed
    # no table is wider than the column it sits in (no horizontal scroll)
    wide = page.eval_on_selector_all(
        "article table", "els => els.filter(t => t.scrollWidth > t.clientWidth + 2).length"
    )
    assert wide == 0
    # the takeaways state the computed offline median as a person says it (two figures)
    offline = summary(validate())["offline"]
    takeaways = page.locator(".admonition.abstract").inner_text()
    assert f"≈{100 * offline['median']:.2g}%" in takeaways
    # an exercise shows its question; only its answer is collapsed, and opens
    exercise = page.locator(".admonition.question").first
    answer = exercise.locator("details.success").first
    assert exercise.is_visible()
    assert not answer.locator("p").first.is_visible()
    answer.locator("summary").click()
    answer.locator("p").first.wait_for(state="visible")


# -- the answer checker on every kind of problem, and the Study page ---------------------------


def shown_value(spec) -> float:
    from units import Q_, parse_unit

    return spec["value"] / Q_(1, parse_unit(spec["unit"])).to_base_units().m


@pytest.mark.parametrize("kind", ["multi", "estimate", "design"])  # the authored kinds
def test_answer_checker_on_each_kind_of_problem(server, page, kind):
    base, site = server
    chapters = ["batching", "moe", "pipeline", "overtraining", "long_context", "reversible"]
    # the first chapter whose problem page has one (read on disk: one page load, not six)
    chapter = next(
        (
            c
            for c in chapters
            if f'data-kind="{kind}"'
            in (site / "problems" / c / "index.html").read_text(encoding="utf-8")
        ),
        None,
    )
    assert chapter is not None, f"no {kind} problem on the site"
    page.goto(f"{base}/problems/{chapter}/")
    box = page.locator(f'.chalkboard-problem[data-kind="{kind}"]').first
    spec = box.evaluate("b => JSON.parse(b.getAttribute('data-answer'))")
    shown = shown_value(spec)

    def grade(text):
        box.locator("input").fill(text)
        box.locator(".chalkboard-check").click()
        return box.locator(".chalkboard-result").inner_text()

    assert grade(f"{shown!r} {spec['unit']}") == "Correct.", spec
    wrong = 10 if kind == "estimate" else 1.5  # outside a factor of sqrt(10) / outside 1%
    diagnosis = "That is 10 times too large" if kind == "estimate" else "Not right"
    said = grade(f"{shown * wrong!r} {spec['unit']}")
    whys = [m["why"] for m in spec.get("mistakes", [])]  # a listed mistake is named first
    assert said.startswith(diagnosis) or said in whys, (said, spec)
    other = "3 USD/s" if spec["dims"] != [0, 0, 0, 1] else "3 s"
    message = grade(other)
    # "That is a cost per unit of time; the question asks for a time (in ms)."
    assert re.match(r"That is .+; the question asks for \S", message), message
    if kind == "estimate":  # graded on the true value, within its factor either way
        assert grade(f"{spec['tolerance'] ** 0.5 * shown!r} {spec['unit']}") == "Correct."
    assert page.errors == []


# dims: time, information, compute, currency, token, sequence (book/problems.py DIMENSIONS)
CHECKS = [  # text, answer (value in base units, dims, counts, unit), accepted
    ("36 milliseconds", [0.036, [1, 0, 0, 0, 0, 0], {}, "ms"], True),
    ("5,356 sequences", [5356, [0, 0, 0, 0, 0, 1], {}, "sequence"], True),
    ("560 chip", [560, [0, 0, 0, 0, 0, 1], {}, "sequence"], False),
    ("560 tokens", [560, [0, 0, 0, 0, 0, 1], {}, "sequence"], False),
    ("2.6e14 tokens", [2.6e14, [0, 0, 0, 0, 1, 0], {}, "token"], True),
    ("1,000 FLOPs", [1000, [0, 0, 1, 0, 0, 0], {}, "FLOP"], True),
    ("25%", [0.25, [0, 0, 0, 0, 0, 0], {}, ""], True),
    ("8x", [8, [0, 0, 0, 0, 0, 0], {}, ""], True),
    ("8x", [8, [1, 0, 0, 0, 0, 0], {}, "s"], False),
]


def test_checker_in_the_browser_reads_words_separators_percentages_and_counts(server, page):
    base, _ = server
    page.goto(f"{base}/problems/batching/")
    results = page.evaluate(
        """cases => { chalkboardAnswers.setUnits(window.CHALKBOARD_UNITS);
            return cases.map(([text, [value, dims, counts, unit]]) => chalkboardAnswers.check(
              text, {value, dims, counts, unit, tolerance: 0.01, mode: "relative"})); }""",
        [[t, a] for t, a, _ in CHECKS],
    )
    for (text, _, accepted), got in zip(CHECKS, results, strict=True):
        assert got["ok"] is accepted, (text, got)
    assert (
        "That is a number of chips; the question asks for a number of sequences"
        in results[2]["message"]
    )
    assert "That is a number of tokens" in results[3]["message"]


# -- the same widgets opened from the file system (issue 23) ------------------------------------


def test_widgets_work_opened_from_a_file(server, page):
    """From file:// Material's page signal never fires and web workers are refused: the
    calculators still recompute, search still finds a chapter (and its result opens the page,
    not a folder listing), and a problem is still graded. The Study page from a file is in
    test_browser_study.py."""
    from book.calculators import calculator

    _, site = server
    page.goto((site / "chapters" / "batching" / "index.html").as_uri())
    calc = open_calculator(page, "crossover_batch")
    units = {a["name"]: a["unit"] for a in calculator("crossover_batch")["args"]}
    shown = float(calc.locator("output").get_attribute("data-value"))
    assert shown == pytest.approx(python_value("crossover_batch", calc, units), rel=1e-9)
    calc.locator('input[data-arg="mem_bandwidth"]').fill("4.8")
    changed = float(calc.locator("output").get_attribute("data-value"))
    assert changed != pytest.approx(shown, rel=1e-12)
    assert changed == pytest.approx(python_value("crossover_batch", calc, units), rel=1e-9)

    # search: Material's own, its worker in an iframe (the vendored shim), on search_index.js;
    # typed key by key, as Material reads keyup (see test_browser.py's search test)
    box, item = page.locator("input.md-search__input"), page.locator(".md-search-result__item")
    assert box.is_visible()
    box.click()
    box.press_sequentially("pipeline bubble", delay=20)
    item.first.wait_for(timeout=30_000)
    assert "bubble" in page.locator(".md-search-result").inner_text().lower()
    hrefs = page.eval_on_selector_all(
        ".md-search-result__link", "els => els.map(e => e.getAttribute('href'))"
    )
    assert any("chapters/pipeline/" in h for h in hrefs), hrefs
    page.locator(".md-search-result__link[href*='chapters/pipeline/']").first.click()
    page.wait_for_url("**/chapters/pipeline/index.html**")  # the page, not a folder listing
    assert page.locator("h1").first.inner_text().strip() != ""

    page.goto((site / "problems" / "batching" / "index.html").as_uri())
    problem = page.locator(".chalkboard-problem").first
    spec = problem.evaluate("b => JSON.parse(b.getAttribute('data-answer'))")
    problem.locator("input").fill(f"{shown_value(spec)!r} {spec['unit']}")
    problem.locator("input").press("Enter")
    assert problem.locator(".chalkboard-result").inner_text() == "Correct."
    assert page.errors == []
