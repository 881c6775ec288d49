"""The README as a reader uses it: its Python blocks and its `chalkboard` lines run as written,
every file it names exists, and its quick start's commands are the Makefile's."""

import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from book.cli import main, make_parser
from derivations import CHAPTERS, get

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
BASH = re.findall(r"```bash\n(.*?)```", README, re.S)


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert match, f"the README has no section '## {title}'"
    return match.group(1)


def _command_lines() -> list[str]:
    """Every `chalkboard ...` line of the ```bash blocks, continuation lines joined."""
    lines = []
    for block in BASH:
        for line in block.replace("\\\n", " ").splitlines():
            line = " ".join(line.split())
            if line.startswith(("chalkboard ", ".venv/bin/chalkboard ")):
                lines.append(line)
    return lines


COMMANDS = _command_lines()
# Lines too slow to run here (a whole build of the book): each is named, so a new slow line must
# be added here on purpose; they are still parsed, so a renamed flag fails.
SLOW = {"chalkboard --extra tests/fixtures/my_derivations.py build --out /tmp/my-book"}


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_each_python_block_runs_as_written(number):
    exec(compile(BLOCKS[number], f"README.md python block {number + 1}", "exec"), {})


def test_the_composed_floor_is_evaluated_on_presets_as_written():
    block = next(b for b in BLOCKS if "floor = (" in b)
    names: dict = {}
    exec(compile(block, "README.md", "exec"), names)
    floor = names["floor"]
    assert len(floor.id) <= 40 and floor.id.startswith("cost_per_token_at_crossover_batch")
    assert "n_chips" not in {s.name for s in floor.rhs.free_symbols}  # it cancelled
    at = dict(hardware="h100_sxm", model="deepseek_v3")
    # the same cost, by substituting numbers: the cost per token at the crossover batch
    direct = get("cost_per_token").evaluate(**at, batch_size=get("crossover_batch").evaluate(**at))
    assert floor.evaluate(**at).to("USD/token").m == pytest.approx(direct.to("USD/token").m)


# --- the command lines ------------------------------------------------------------------------


def test_the_readme_shows_each_product_on_the_command_line():
    subcommands = {shlex.split(line, comments=True)[1] for line in COMMANDS}
    assert {"eval", "solve", "sweep", "problems"} <= subcommands
    assert any("--check" in line for line in COMMANDS)
    assert any("--price" in line for line in COMMANDS)


def test_the_command_table_has_every_command():
    import argparse

    parser = make_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    table = _section("Reference").split("### ", 2)[1]  # the first subsection: the commands
    missing = [name for name in sub.choices if not re.search(rf"^\|[^|]*`{name}\b", table, re.M)]
    assert missing == []


def test_every_slow_line_is_in_the_readme_and_parses():
    assert set(COMMANDS) >= SLOW, "a line named in SLOW is no longer in the README"
    for line in SLOW:
        args = make_parser().parse_args(shlex.split(line, comments=True)[1:])
        assert args.command in {"build", "serve"} or getattr(args, "pdf", False)


@pytest.mark.parametrize("line", [c for c in COMMANDS if c not in SLOW], ids=str)
def test_each_command_line_runs_as_written(line, monkeypatch):
    argv = shlex.split(line, comments=True)[1:]
    if "--extra" in argv:
        # an extra module registers its equations and chapter for the life of the process:
        # run it in one of its own, as a reader's shell would
        done = subprocess.run(
            [sys.executable, "-m", "book.cli", *argv], capture_output=True, text=True, cwd=ROOT
        )
        code, out, err = done.returncode, done.stdout, done.stderr
    else:
        monkeypatch.chdir(ROOT)  # the README's paths are relative to the checkout
        out_io, err_io = io.StringIO(), io.StringIO()
        code = main(argv, out_io, err_io)
        out, err = out_io.getvalue(), err_io.getvalue()
    assert code == 0, err or out
    assert out.strip() and "error:" not in err


# --- the files it names -------------------------------------------------------------------------

EXTENSIONS = r"\.(py|toml|md|j2|yml|txt|js|html|apkg|tsv|json|ipynb|pdf)"
BUILT = "site/"  # written by `make book` and `make pdf`: looked for in the session's built site


def _named_paths() -> list[str]:
    """Every path the README names: the words of its `code` spans, and its link targets. A word
    is a path when it holds a '/' or ends with a file extension, and is neither an option, an
    assignment, a quoted value nor a unit (`TB/s`). `<chapter>` stands for every chapter, any
    other `<name>` for any name."""
    from units import ChalkboardError
    from units.registry import parse_unit

    prose = re.sub(r"^```.*?^```", "", README, flags=re.S | re.M)  # the fenced blocks are run
    spans = re.findall(r"`([^`]+)`", prose) + re.findall(r"\]\(([^)\s]+)\)", prose)
    found = []
    for word in (w for span in spans for w in span.split()):
        if re.search(r"[='\"]|://|^-|^[^\w.]+$", word):
            continue
        if "/" not in word and not re.search(EXTENSIONS + "$", word):
            continue
        try:
            parse_unit(word)
            continue  # a unit such as USD/Mtoken
        except (ChalkboardError, ValueError):
            pass
        found += (
            [word.replace("<chapter>", c.id) for c in CHAPTERS] if "<chapter>" in word else [word]
        )
    return sorted(set(found))


PATHS = _named_paths()


def test_the_readme_names_files():
    # the paths the reader needs first: the built site, the Anki deck, the two example files
    for path in (
        "site/index.html",
        "site/exports/flashcards.apkg",
        "tests/fixtures/example_presets.toml",
        "tests/fixtures/my_derivations.py",
        ".venv/bin/chalkboard",
        ".github/CONTRIBUTING.md",
    ):
        assert path in PATHS


@pytest.mark.parametrize("path", [p for p in PATHS if not p.startswith(BUILT)], ids=str)
def test_every_source_file_the_readme_names_exists(path):
    # .venv is made by `make`, before any test runs
    pattern = re.sub(r"<\w+>", "*", path.rstrip("/"))
    assert list(ROOT.glob(pattern)), f"README.md names {path}, which does not exist"


@pytest.fixture(scope="session")
def printed_site():
    """The session's one built site, as tests/book/conftest.py's fixture of this name gives it
    (the same background build, tests/sitebuild.py); the name puts this file last in a run."""
    from tests import sitebuild
    from tests.book.browser import chromium_path

    chromium_path()
    return sitebuild.wait()


def test_every_built_file_the_readme_names_is_built(printed_site):
    missing = [
        p for p in PATHS if p.startswith(BUILT) and not (printed_site / p[len(BUILT) :]).exists()
    ]
    assert missing == []


# --- the quick start ----------------------------------------------------------------------------


def _makefile_targets() -> dict[str, str]:
    """Each Makefile target with its prerequisites and recipe."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    rules = re.findall(r"^([\w.$()/-]+):(?!=)(.*?)(?=^\S|\Z)", text, re.S | re.M)
    return {target: body for target, body in rules}


def test_the_quick_start_commands_are_the_makefiles():
    quick = _section("Quick start")
    targets = _makefile_targets()
    named = set(re.findall(r"\bmake (?:\w+=\S+ )*(\w+)", quick))
    assert {"book", "test", "serve", "pdf"} <= named
    assert named <= set(targets), f"not in the Makefile: {named - set(targets)}"
    # what the quick start says make does: a venv at .venv; Chromium for `test` and `pdf`
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^VENV := \.venv$", makefile, re.M)
    for variable in re.findall(r"\bmake (\w+)=", quick):  # make PYTHON=python3.12 book
        assert re.search(rf"^{variable} \??=", makefile, re.M), variable
    assert ".venv/bin/chalkboard" in quick and "source .venv/bin/activate" in quick
    assert "bash .ci/install-browser" in targets["browser"]
    for target in ("test", "pdf"):
        assert "browser" in targets[target].splitlines()[0].split("##")[0]
    assert "chalkboard serve" in targets["serve"]


def test_the_quick_start_gives_the_servers_address():
    port = make_parser().parse_args(["serve"]).port
    assert f"http://127.0.0.1:{port}" in _section("Quick start")


def test_the_default_rental_price_is_the_one_the_readme_states():
    from derivations.inputs import DEFAULT_CHOICES

    stated = re.search(r"\*\*(\d+) USD per chip-hour\*\*.*?rental preset `(\w+)`", README, re.S)
    assert stated, "the README no longer states the default price"
    price, preset = stated.groups()
    assert DEFAULT_CHOICES["rental"] == preset
    # the same price whatever the chip: evaluated on two chips of different makers
    for hardware in ("h100_sxm", "mi300x"):
        r = get("cost_per_token").evaluate_detailed(
            hardware=hardware, model="llama_3_1_70b", batch_size=64
        )
        used = r.inputs["price_per_chip_hour"]
        assert preset in used.origin
        assert used.value.to("USD/chip/hour").m == pytest.approx(float(price))
