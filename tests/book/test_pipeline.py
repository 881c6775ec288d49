"""The book floor is a one-way pipeline: compute contexts (book.compute) -> products (pages,
cards, problems, calculators, figures) -> write (book.site, exports). No import circle inside
book/, counting imports inside functions too (before issue 12: context -> figures -> chapters ->
context, cards -> site -> cards, calculators -> cards -> site -> calculators)."""

import ast
from pathlib import Path

BOOK = Path(__file__).resolve().parents[2] / "book"


def module_name(path: Path) -> str:
    parts = path.relative_to(BOOK.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = BOOK) -> dict[str, set[str]]:
    files = {module_name(p): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in files:
                deps.add(node.module)
                deps |= {f"{node.module}.{a.name}" for a in node.names} & set(files)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names} & set(files)
        # a package's __init__ is not a dependency of its own modules
        graph[name] = {d for d in deps if d != name and not name.startswith(d + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_book_has_no_import_circle():
    assert find_cycle(import_graph()) == []


def test_the_cycle_finder_can_fail():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_computing_contexts_imports_no_product():
    graph = import_graph()
    products = {"book.site", "book.cards", "book.problems", "book.calculators", "book.figures"}
    for stage in ("book.compute", "book.context", "book.chapters", "book.claims"):
        reached, todo = set(), [stage]
        while todo:
            for dep in graph[todo.pop()] - reached:
                reached.add(dep)
                todo.append(dep)
        assert not reached & products, (stage, reached & products)
