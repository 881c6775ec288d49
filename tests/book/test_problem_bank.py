"""Gates on the authored problems (book/problem_bank): every problem file of every chapter, over
many seeds, keeps the contract, gives a finite answer with a unit that its own solution shows,
lists mistakes its tolerance tells apart, reads cleanly, and types no number of its own; a page
never repeats a problem; a design problem's choice is clear or said to be close; every chapter
with problems has at least eight, a design and an estimate among them, mostly chains."""

import ast
import html
import inspect
import json
import math
import random
import re
import types
from functools import cache

import pytest

import derivations
from book import problem_bank
from book.problems import (
    PROBLEMS_PER_CHAPTER,
    REDRAWS,
    answer_spec,
    authored,
    lecture_seconds,
    problem_id,
    problem_pages,
    problem_set,
)
from tests.book.reader_text import problems as broken_rules
from tests.book.reader_text import reader_text
from units import Q_
from units.presets import load

SEEDS = range(40)  # each problem drawn this many times (a draw takes milliseconds)
CHAPTERS = [c.id for c in derivations.CHAPTERS]
MODULES = [m for c in CHAPTERS for m in problem_bank.modules(c)]
IDS = [".".join(m.__name__.rsplit(".", 2)[-2:]) for m in MODULES]


@cache
def presets():
    return load()


@cache
def draws(module) -> tuple:
    """``(seed, Draw)`` for every seed, drawn as the engine draws them."""
    return tuple((s, authored(module, s, presets())) for s in SEEDS)


def test_every_chapter_with_problems_has_at_least_eight():
    # authors-a and authors-b write the other chapters in parallel: every chapter that has a
    # folder of problems counts, and batching and moe have theirs here
    folders = {c for c in CHAPTERS if problem_bank.modules(c)}
    assert {"batching", "moe"} <= folders
    for chapter in folders:
        assert len(problem_bank.modules(chapter)) >= PROBLEMS_PER_CHAPTER, chapter


@pytest.mark.parametrize("module", MODULES, ids=IDS)
def test_the_contract_holds(module):
    assert module.KIND in problem_bank.KINDS
    assert isinstance(module.TITLE, str) and 0 < len(module.TITLE) <= 80
    assert module.USES and len(set(module.USES)) == len(module.USES)
    for eq in module.USES:
        derivations.get(eq)  # exists in the catalogue (raises otherwise)
    if module.KIND == "multi":
        assert len(module.USES) >= 2
    if hasattr(module, "LECTURE"):
        assert 0 <= lecture_seconds(module.LECTURE) <= 2 * 3600 + 13 * 60  # the lecture's length
    assert list(inspect.signature(module.draw).parameters) == ["rng", "presets"]


COUNTS = ("sequence", "chip", "rack", "stage", "layer", "expert")


def _whole_count(answer) -> bool:
    """Whether an answer is a whole count of things (sequences that fit, racks needed)."""
    whole = float(answer.magnitude).is_integer()
    return whole and any(answer.units == Q_(1, name).units for name in COUNTS)


def _numeric(p) -> bool:
    return p.kind != "concept"


@pytest.mark.parametrize("module", MODULES, ids=IDS)
def test_every_draw_has_a_finite_answer_with_a_unit_and_mistakes_it_tells_apart(module):
    for seed, p in draws(module):
        where = f"{p.id} seed {seed}"
        if not _numeric(p):
            assert p.answer is None, where
            continue
        a = p.answer
        assert math.isfinite(a.magnitude) and a.magnitude > 0, where
        # a pure number is allowed: a share (MFU, efficiency) or a ratio ("77.4 times")
        if p.mode == "factor":
            assert 1 < p.tolerance <= 3, where
        elif _whole_count(a):  # one more or one fewer is wrong: 61 sequences fit, 62 do not
            assert p.tolerance * a.magnitude < 0.5 and p.tolerance <= 0.1, where
        else:
            assert 0.005 <= p.tolerance <= 0.1, where
        assert p.mistakes, f"{where}: no likely mistake listed"
        spec = answer_spec(p)
        assert len(spec["mistakes"]) >= 1, f"{where}: no mistake in the answer's dimension"
        for m in p.mistakes:
            assert m.why.strip(), where
            if m.value.dimensionality != a.dimensionality:
                continue  # a wrong dimension: the checker diagnoses it on its own
            ratio = (m.value / a).to("").magnitude
            assert math.isfinite(ratio) and ratio > 0, where
            if p.mode == "factor":
                inside = 1 / p.tolerance <= ratio <= p.tolerance
            else:
                inside = abs(ratio - 1) <= p.tolerance
            assert not inside, f"{where}: the mistake {m.value:~} is accepted ({m.why})"


@pytest.mark.parametrize("module", MODULES, ids=IDS)
def test_the_solution_ends_on_the_answer_the_checker_grades(module):
    """The last step shows the answer in bold as a student may write it (a percentage for a
    share, "77.4 times" for a ratio, or the quantity itself), and the site's checker accepts
    that very text: a student who copies the book's answer is graded right."""
    from book.checker import answer_spec, check

    for seed, p in draws(module):
        where = f"{p.id} seed {seed}"
        assert len(p.solution) >= 2, f"{where}: a solution explains, step by step"
        if not _numeric(p):
            continue
        last = p.solution[-1]
        bold = re.findall(r"\*\*(.+?)\*\*", last)
        assert bold, f"{where}: the last step does not show the answer in bold: {last}"
        spec = answer_spec(p)
        verdicts = {b: check(b, spec) for b in bold}
        assert any(v["ok"] for v in verdicts.values()), f"{where}: {verdicts}"


def _texts(p) -> list[str]:
    return [p.text, *p.solution, p.hint, *(m.why for m in p.mistakes)]


DOUBLED = re.compile(r"\b([A-Za-z]+) \1\b", re.IGNORECASE)
LEFTOVER = re.compile(r"[{}]|\b(nan|inf|None|True|False)\b")


@pytest.mark.parametrize("module", MODULES, ids=IDS)
def test_the_text_reads_cleanly(module):
    texts = set()
    for seed, p in draws(module):
        texts.add(p.text)
        assert "?" in p.text, f"{p.id}: the statement asks no question"
        for text in _texts(p):
            prose = reader_text(text)
            assert not LEFTOVER.search(prose), f"{p.id} seed {seed}: {prose}"
            assert not DOUBLED.search(prose), f"{p.id} seed {seed}: {DOUBLED.search(prose)[0]}"
            assert not broken_rules(text), f"{p.id} seed {seed}: {broken_rules(text)}"
    assert len(texts) >= 4, f"{module.__name__}: {len(SEEDS)} seeds draw {len(texts)} problems"


# A number typed into a problem's text is a standalone numeral inside a string literal of the
# file (digits that are part of a name, like FP8 or H100, are not numbers). 0 and 1 are
# structure ("1/x"), not figures.
TYPED = re.compile(r"(?<![\w.$\\^_{])(\d+(?:[.,]\d+)*)(?![\w\\}^])")


def typed_numbers(module) -> list[str]:
    tree = ast.parse(inspect.getsource(module))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings or re.fullmatch(r"(\d+:)?\d+:\d\d", node.value):
                continue  # a docstring, or the LECTURE mark
            text = re.sub(r"\$[^$]*\$", " ", node.value)  # math: symbols, not figures
            for m in TYPED.finditer(text):
                if m[1] not in ("0", "1"):
                    found.append(f"line {node.lineno}: {node.value!r}")
    return found


@pytest.mark.parametrize("module", MODULES, ids=IDS)
def test_no_number_is_typed_into_the_text(module):
    assert typed_numbers(module) == []


def test_the_typed_number_check_can_fail():
    import types

    sample = types.ModuleType("sample")
    source = (
        'def draw(rng, presets):\n    return f"on 8 chips, FP8, H100, {x} and 1/{y} ${{2N}}$"\n'
    )
    code = compile(source, "sample", "exec")
    exec(code, sample.__dict__)
    original = inspect.getsource
    try:
        inspect.getsource = lambda m: source
        assert typed_numbers(sample) == [f"line 2: {'on 8 chips, FP8, H100, '!r}"]
    finally:
        inspect.getsource = original


@pytest.mark.parametrize("module", [m for m in MODULES if m.KIND == "design"], ids=problem_id)
def test_a_design_choice_is_clear_or_said_to_be_close(module):
    for seed, p in draws(module):
        assert p.choices, f"{p.id} seed {seed}: a design problem names its choice"
        assert p.margin is not None and p.margin > 0, f"{p.id} seed {seed}: no margin"
        if p.margin < 0.05:
            assert "close" in " ".join(p.solution).lower(), f"{p.id} seed {seed}"


def test_every_chapter_has_a_design_and_an_estimate_and_mostly_chains():
    for chapter in {c for c in CHAPTERS if problem_bank.modules(c)} | {"batching", "moe"}:
        kinds = [m.KIND for m in problem_bank.modules(chapter)]
        assert "design" in kinds and "estimate" in kinds, chapter
        assert kinds.count("multi") + kinds.count("design") >= len(kinds) / 2, chapter


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_no_problem_repeats_on_a_page(seed):
    for chapter in CHAPTERS:
        problems = problem_set(chapter, seed)
        texts = [p.text for p in problems]
        assert len(set(texts)) == len(texts), chapter
        answers = [p.answer.to_base_units().m for p in problems if p.answer is not None]
        for i, a in enumerate(answers):
            assert all(abs(a / b - 1) > 1e-6 for b in answers[:i]), (chapter, seed)


def _same_seed(chapter):
    """For each seed, the chapter's problems as a page draws them with it."""
    modules = problem_bank.modules(chapter)
    return [(seed, [draws(m)[i][1] for m in modules]) for i, seed in enumerate(SEEDS)]


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if problem_bank.modules(c)])
def test_no_two_problems_of_a_chapter_grade_the_same_value(chapter):
    """Drawn with the same seed, no two problems of a chapter grade the same value: the sign of
    one computation in two statements."""
    for seed, drawn in _same_seed(chapter):
        numeric = [p for p in drawn if _numeric(p)]
        for k, a in enumerate(numeric):
            for b in numeric[:k]:
                if a.answer.dimensionality == b.answer.dimensionality:
                    ratio = (a.answer / b.answer).to("").magnitude
                    assert abs(ratio - 1) > 1e-3, f"seed {seed}: {a.id}, {b.id}: {a.answer:~}"


def shown_in(answer: str, text: str) -> bool:
    """Whether an answer as shown ("4.84 × 10⁶ USD") stands in ``text`` as a figure of its own
    (not "154%" for "54%"), when it has three figures or more (a "2 s" or "72 chips" meets
    others by chance).

    >>> shown_in("54.1%", "a share of 54.1% of it"), shown_in("54.1%", "it is 154.1%")
    (True, False)
    """
    if len(re.findall(r"\d", re.sub(r"×\s*10\S*", "", answer))) < 3:  # the mantissa's figures
        return False
    return re.search(r"(?<![\d.,])" + re.escape(answer) + r"(?![\d])", text) is not None


# the chapters this gate holds; batching and pipeline still show it (batching seed 37:
# choose_server_for_speed's price in fast_mode_cost's solution, seed 14: fewest_gpus_for_a_rate's
# chips in racks_for_a_global_rate's; pipeline seeds 12 and 20: node_or_rack's time in
# hops_on_the_token's)
NOT_SHOWN_ELSEWHERE = ("overtraining", "validation")


@pytest.mark.parametrize("chapter", NOT_SHOWN_ELSEWHERE)
def test_no_problem_shows_another_s_answer_in_its_solution(chapter):
    """Drawn with the same seed, no problem's bold answer stands in another's solution: one
    computation in two statements (overtraining.training_run_days once drew the model, tokens,
    chip and MFU of choose_training_cluster and printed its graded bill as a step)."""
    assert shown_in("4.84 × 10⁶ USD", "The FLOPs alone take 4.84 × 10⁶ USD, at any deadline")
    assert not shown_in("54.1%", "it is 154.1%") and not shown_in("72 chips", "72 chips")
    for seed, drawn in _same_seed(chapter):
        for p in (p for p in drawn if _numeric(p)):
            for shown in re.findall(r"\*\*(.+?)\*\*", p.solution[-1]):
                for q in drawn:
                    where = f"seed {seed}: {p.id}'s answer {shown} is in {q.id}'s solution"
                    assert q is p or not shown_in(shown, " ".join(q.solution)), where


def test_a_problem_is_the_same_for_the_same_seed_whatever_else_is_drawn():
    everything = {p.id: p for p in problem_set(seed=5)}
    assert list(everything) == IDS
    alone = problem_set("batching", seed=5, kind="design")
    assert alone and all(p.to_dict() == everything[p.id].to_dict() for p in alone)
    for chapter in {p.chapter for p in everything.values()}:  # drawn again, chapter by chapter
        again = problem_set(chapter, seed=5)
        assert all(p.to_dict() == everything[p.id].to_dict() for p in again), chapter
    for attempt in range(REDRAWS):  # the engine's rng, drawn again when a check refuses
        rng = random.Random(f"5:{IDS[0]}" + (f":{attempt}" if attempt else ""))
        try:
            drawn = MODULES[0].draw(rng, presets())
            break
        except problem_bank.Refused:
            continue
    assert drawn.text == everything[IDS[0]].text


def test_the_problem_pages_show_each_problem_with_its_checker_spec():
    from book.site import rendered
    from book.templating import environment

    env = environment()
    pages = problem_pages(presets())
    for chapter in ("batching", "moe"):
        template, ctx = pages[f"problems/{chapter}.md"]
        text = rendered(env, template, ctx)
        for p in problem_set(chapter, 0, presets=presets()):
            assert f"{p.title} {{: #" in text
            assert p.text in text
            anchor = p.id.replace(".", "-").replace("_", "-")
            found = re.search(f'id="check-{anchor}" [^>]*data-answer="([^"]*)"', text)
            spec = json.loads(html.unescape(found[1]))
            assert spec == json.loads(json.dumps(answer_spec(p)))
            assert spec["mistakes"] and all(m["why"] for m in spec["mistakes"])
            if p.lecture is not None:
                assert f"https://www.youtube.com/watch?v=xmkSf5IS-zw&t={p.lecture}s" in text
    index = rendered(env, *pages["problems/index.md"])
    for chapter in derivations.CHAPTERS:
        count = len(problem_bank.modules(chapter.id))
        assert f"| [{chapter.title}]({chapter.id}.md) | {count} |" in index


SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
SHOWN = re.compile(r"(\d[\d,]*(?:\.(\d+))?)(?:\s*×\s*10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+))?")


def shown_matches(bold: str, spec) -> bool:
    """Whether the bold text reads as the answer rounded to the figures it shows: "1,420 tokens"
    is not 1,424.8 tokens (its last figure is a unit), "2.5¢" is 2.467¢ (its last is a tenth),
    "603,600 tokens" is 603,573 (four figures, as the checker shows an answer)."""
    from book.checker import _measure, unit_table

    found = SHOWN.search(bold)
    if not found:
        return False
    try:
        got = _measure(bold, unit_table())
    except Exception:  # not an answer's text (a word in bold)
        return False
    if got["dims"] != spec["dims"]:
        return False
    mantissa = float(found[1].replace(",", ""))
    digits = found[1].replace(",", "")
    if found[2]:  # the last figure shown
        place = 10.0 ** -len(found[2])
    else:  # a whole number's trailing zeros are figures down to the fourth ("1,420" is four)
        zeros = len(digits) - len(digits.rstrip("0"))
        place = 10.0 ** min(zeros, max(0, len(digits) - 4))
    half = 0.5 * place / mantissa  # rounding to it moves the value this much, relatively
    return abs(spec["value"] / got["value"] - 1) <= half * (1 + 1e-6) + 1e-9


def test_the_shown_number_check_can_fail():
    from book.checker import _measure, unit_table

    dims = _measure("1,425 tokens per sequence", unit_table())["dims"]
    spec = {"value": 1424.81, "dims": dims}
    assert shown_matches("1,425 tokens per sequence", spec)
    assert not shown_matches("1,420 tokens per sequence", spec)
    assert shown_matches("1.42 × 10³ tokens per sequence", spec)
    assert not shown_matches("1.43 × 10³ tokens per sequence", spec)
    assert not shown_matches("1,400 tokens per sequence", spec)
    spec["value"] = 603573
    assert shown_matches("603,600 tokens per sequence", spec)
    assert not shown_matches("604,000 tokens per sequence", spec)


@pytest.mark.parametrize("module", MODULES, ids=IDS)
def test_the_bold_answer_is_the_graded_answer_at_the_figures_it_shows(module):
    """The answer in bold, read back, rounds the graded answer to its last shown figure: the book
    never shows 1,420 where the checker grades 1,425 (within its tolerance is not enough). An
    estimate is exempt: it says "about" a rounded figure and is graded within a factor."""
    for seed, p in draws(module):
        if not _numeric(p) or p.mode == "factor":
            continue
        bold = re.findall(r"\*\*(.+?)\*\*", p.solution[-1])
        spec = answer_spec(p)
        assert any(shown_matches(b, spec) for b in bold), (
            f"{p.id} seed {seed}: {bold} is not {p.answer:~.6g} at the figures shown"
        )


def _figure(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in {text!r}"
    return float(found[1].replace(",", ""))


def _size(pattern: str, text: str) -> float:
    """A model size as the statement says it: "671 B" or "1 T" (parameters)."""
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in {text!r}"
    figure, scale = found[1].split()
    return float(figure.replace(",", "")) * {"B": 1e9, "T": 1e12}[scale]


def test_the_context_at_the_crossover_micro_batch_follows_from_the_statement():
    """A student who works from the statement's figures gets the graded context (hand
    computation: each GPU's HBM less its stage's share of the weights, over the given
    micro-batch's cache per GPU per token of context)."""
    from book.problem_bank.pipeline import micro_batch_beside_weights as module

    for seed, p in draws(module):
        where = f"{p.id} seed {seed}"
        text, answer = p.text, p.answer.to("token/sequence").m
        total = _size(r"\(([\d,.]+ [BT]) parameters in all", text)  # bytes at FP8
        stages = _figure(r"on (\d+) eight-GPU nodes", text)
        gpus = _figure(r"spread over its node's (\d+) GPUs", text)
        hbm = _figure(r"has ([\d,.]+) GB of HBM", text) * 1e9
        hbm *= _figure(r"fills at most (\d+)% with weights", text) / 100  # the usable share
        kv = _figure(r"takes ([\d,]+) bytes per token", text)
        micro = _figure(r"micro-batches of ([\d,]+) sequences", text)
        context = (hbm - total / (gpus * stages)) * gpus / (micro * kv)
        assert context == pytest.approx(answer, rel=0.005), where


@pytest.mark.parametrize("module", MODULES, ids=IDS)
def test_every_problem_gives_a_hint(module):
    for seed, p in draws(module)[:3]:
        assert p.hint.strip(), f"{p.id} seed {seed}: no hint"


RENT = re.compile(r'Q_\((?!1,)(?:[^()]|\([^()]*\))*"USD/(?:chip|GPU)/h(?:our)?"\)')


def test_a_chip_rent_comes_from_the_one_table():
    """A chip's rent is the declared one of book/problem_bank/_rents.py, so the same chip costs
    the same in every problem: no problem file types or draws a rent of its own."""
    from book.problem_bank import _rents

    assert RENT.search('rent = Q_(rng.choice(RENTS), "USD/chip/hour")')  # the check can fail
    assert not RENT.search('per_hour = bill / Q_(1, "USD/chip/hour")')  # a unit, not a rent
    for module in MODULES:
        assert not RENT.search(inspect.getsource(module)), module.__name__
    assert all(v > 0 for v in _rents.DECLARED.values())


def test_a_draw_its_own_checks_refuse_is_drawn_again_and_the_first_drawing_stays():
    """full_hbm_throughput refused seed 77 (a batch too small to read every expert) and the
    whole problem set crashed; the engine now draws that problem again."""
    from book.problem_bank import Refused
    from book.problems import REDRAWS, authored
    from units import ChalkboardError

    presets = load()
    module = next(m for m in MODULES if m.__name__.endswith(".full_hbm_throughput"))
    # seed 41's first drawing (since the problem became the chapter's estimate) is refused
    with pytest.raises(Refused):
        module.draw(random.Random("41:batching.full_hbm_throughput"), presets)
    assert authored(module, 41, presets).answer is not None  # so the engine draws again
    calls = []

    def refuse(rng, presets):
        calls.append(rng.random())
        raise Refused("never valid")

    refusing = types.SimpleNamespace(  # a problem file whose every scenario fails its check
        __name__="book.problem_bank.batching.refusing",
        KIND=module.KIND,
        TITLE=module.TITLE,
        USES=module.USES,
        draw=refuse,
    )
    with pytest.raises(ChalkboardError, match="no valid scenario for seed 3"):
        authored(refusing, 3, presets)
    assert len(calls) == REDRAWS and len(set(calls)) == REDRAWS  # each try a new drawing
    first = random.Random("3:batching.refusing").random()
    assert calls[0] == first  # the first try is the drawing the site has always shown


def test_a_draw_checks_its_scenario_with_require_never_assert():
    """A draw's checks refuse scenarios; an ``assert`` would vanish under ``python -O`` and let
    a scenario its author refused reach the page. Every problem file checks with ``require``."""
    import ast

    def asserts(source: str) -> int:
        return sum(isinstance(n, ast.Assert) for n in ast.walk(ast.parse(source)))

    assert asserts("def draw(rng, presets):\n    assert 1 < 2\n") == 1  # the check can fail
    for module in MODULES:
        assert asserts(inspect.getsource(module)) == 0, module.__name__


def test_a_problem_uses_the_bank_s_public_helpers_never_its_private_ones():
    """A problem file imports from book.problem_bank only its public helpers (``within``,
    ``lands_clear``, ``slips_apart``...) and its helper modules (``_rents``), never a private
    function such as the old ``_within``: a private name may change under it unannounced."""

    def private(source: str) -> list[str]:
        return [
            a.name
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.ImportFrom) and n.module == "book.problem_bank"
            for a in n.names
            if a.name.startswith("_")
            and not isinstance(getattr(problem_bank, a.name, None), types.ModuleType)
        ]

    # the check can fail: a private function is caught, a helper module is not
    assert private("from book.problem_bank import Draw, _within, _rents\n") == ["_within"]
    for module in MODULES:
        assert private(inspect.getsource(module)) == [], module.__name__


def test_no_problem_defines_its_own_copy_of_a_bank_helper():
    """A problem file never defines a function under a name of book.problem_bank's own helpers
    (million_token_conversation's ``slips_apart`` once asked named slips to sit ×f apart where
    the bank's asks ×f²): a reader of the file takes the name for the shared rule."""
    shared = {
        n for n, v in vars(problem_bank).items() if callable(v) and not isinstance(v, type)
    } - {"draw"}
    assert {"slips_apart", "lands_clear", "within"} <= shared  # the check has names to catch

    def shadows(source: str) -> list[str]:
        tree = ast.parse(source)
        return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in shared]

    assert shadows("def slips_apart(a, b):\n    return True\n") == ["slips_apart"]  # can fail
    for module in MODULES:
        assert shadows(inspect.getsource(module)) == [], module.__name__


# Every problem keeps the attention rule (issue 21).
CONTEXT = re.compile(r"context", re.IGNORECASE)
COUNTS_FLOPS = re.compile(r"FLOP|multipl|compute", re.IGNORECASE)
SAYS_ATTENTION = re.compile(r"attention|short context|contexts are short|prompts are short", re.I)


def attention_unsaid(text: str, solution: str) -> bool:
    """Whether a statement leaves open how attention is treated: it gives a context, its solution
    counts FLOPs, and it neither speaks of attention nor says the contexts are short (then
    attention's FLOPs may flip the answer, and a careful student cannot know which is graded)."""
    return bool(
        CONTEXT.search(text) and COUNTS_FLOPS.search(solution) and not SAYS_ATTENTION.search(text)
    )


def test_the_attention_check_can_fail():
    solution = "The multiplies take 3 ms, under the reads."
    assert attention_unsaid("Each sequence carries 8,192 tokens of context.", solution)
    assert not attention_unsaid("8,192 tokens of context; ignore attention's FLOPs.", solution)
    assert not attention_unsaid("Prompts are short (512 tokens of context).", solution)
    assert not attention_unsaid("8,192 tokens of context.", "The cache is 2.7 GB.")


@pytest.mark.parametrize("module", MODULES, ids=IDS)
def test_a_statement_with_a_context_says_how_attention_counts(module):
    """A problem whose statement gives a context and whose solution counts FLOPs says how
    attention is treated: it gives attention's cost (or shape) or says to leave it out."""
    for seed, p in draws(module):
        assert not attention_unsaid(p.text, " ".join(p.solution)), f"{p.id} seed {seed}"
