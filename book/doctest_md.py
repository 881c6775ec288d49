"""A Markdown extension for the API reference: a docstring's ``>>>`` example renders as code.

Docstrings here put doctests in the running text (no "Examples:" section), which Markdown reads
as nested block quotes. This preprocessor fences each run of ``>>>`` lines, with their ``...``
continuations and expected output, as a ``pycon`` block; text inside fences is left alone.

>>> import markdown
>>> "<code" in markdown.markdown(">>> 1 + 1\\n2", extensions=[DoctestExtension(), "fenced_code"])
True
"""

from __future__ import annotations

from markdown import Extension
from markdown.preprocessors import Preprocessor


class DoctestFences(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        fence = None  # the indent of an open ``` fence of the text, or None
        example = None  # the indent of the open doctest block, or None
        for line in lines:
            stripped = line.lstrip()
            indent = line[: len(line) - len(stripped)]
            if example is not None and (not stripped or not line.startswith(example)):
                out.append(example + "```")
                example = None
            if fence is None and example is None and stripped.startswith(">>>"):
                example = indent
                out.append(indent + "```pycon")
            elif example is None and stripped.startswith(("```", "~~~")):
                fence = None if fence is not None else indent
            out.append(line)
        if example is not None:
            out.append(example + "```")
        return out


class DoctestExtension(Extension):
    def extendMarkdown(self, md) -> None:  # noqa: N802 (Markdown's API)
        md.preprocessors.register(DoctestFences(md), "chalkboard_doctest", 40)


def makeExtension(**kwargs):  # noqa: N802 (Markdown's API)
    return DoctestExtension(**kwargs)
