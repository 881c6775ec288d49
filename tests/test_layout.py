"""The three floors: units -> derivations -> book; a floor never imports one above it."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ["units", "derivations", "book"]


def imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("floor", FLOORS)
def test_no_floor_imports_one_above_it(floor):
    above = set(FLOORS[FLOORS.index(floor) + 1 :])
    for path in (ROOT / floor).rglob("*.py"):
        assert not imported_packages(path) & above, path


def test_derivations_import_without_the_book_stack():
    code = (
        "import sys, derivations; "
        "print(sorted(m for m in ('jinja2', 'mkdocs', 'matplotlib', 'book') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_licence_is_an_spdx_string():
    """A `license = {text = ...}` table makes setuptools print a deprecation warning on every
    install (issue 15); the SPDX expression does not."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    requires = project["build-system"]["requires"]
    assert any(r.startswith("setuptools>=77") for r in requires), requires  # SPDX needs 77+
