"""Run a Markdown page's Python blocks at build time and show what they print.

The tutorial's code cannot rot: every ```python block is executed in order (sharing one
namespace) when the book is built, and its output is inserted after it. A block that raises
fails the build, naming the block. Symbols and equations the tutorial declares are removed again
afterwards, so the rest of the book never sees them.

>>> print(run_blocks("Text\\n```python\\nprint(6 * 7)\\n```\\n"))
Text
```python
print(6 * 7)
```
<BLANKLINE>
```text
42
```
<BLANKLINE>
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from units import ChalkboardError

TUTORIAL = Path(__file__).with_name("tutorial") / "derive_your_own.md"
BLOCK = re.compile(r"```python\n(.*?)```\n", re.S)


def run_blocks(markdown: str, name: str = "tutorial") -> str:
    """``markdown`` with each Python block's printed output appended as a text block."""
    import derivations
    from derivations import core

    saved = dict(core.SYMBOLS), dict(core.CATALOGUE), dict(core._BY_OUTPUT)
    namespace: dict = {"__name__": f"chalkboard_{name}"}
    pieces, last = [], 0
    try:
        for number, match in enumerate(BLOCK.finditer(markdown), 1):
            code = match.group(1)
            buffer = io.StringIO()
            try:
                with contextlib.redirect_stdout(buffer):
                    exec(compile(code, f"<{name} block {number}>", "exec"), namespace)  # noqa: S102 - the book's own code
            except Exception as err:
                raise ChalkboardError(
                    f"{name}: block {number} raised {type(err).__name__}: {err}"
                ) from None
            pieces.append(markdown[last : match.end()])
            if buffer.getvalue():
                pieces.append(f"\n```text\n{buffer.getvalue().rstrip()}\n```\n")
            last = match.end()
    finally:
        for table, old in zip((core.SYMBOLS, core.CATALOGUE, core._BY_OUTPUT), saved, strict=True):
            table.clear()
            table.update(old)
        assert derivations  # the package stays imported for the next page
    pieces.append(markdown[last:])
    return "".join(pieces)


def tutorial_page() -> str:
    """The tutorial with its blocks' output; remembered across builds (``book.resultcache``) under
    its text, this module and the library with the presets the blocks read."""
    from book.resultcache import remembered
    from units.presets import load

    text = TUTORIAL.read_text(encoding="utf-8")
    return remembered(
        "tutorial",
        ("book/tutorial.py",),
        (text,),
        lambda: run_blocks(text, TUTORIAL.stem),
        presets_files=load().files,
    )
