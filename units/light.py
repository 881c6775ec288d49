"""The light layer the fast CLI runs on: numbers and units without pint, sympy or numpy.

Two parts, both plain Python:

- **scalar functions**: an equation's compiled function (sympy's numpy printer, as lambdify
  writes it), read into plain data (:func:`expression_data`: arithmetic, numbers, names) and
  built back from that data alone (:func:`function_of`), run on Python floats with
  :data:`PURE`, a namespace of ``math`` equivalents of the numpy names it uses. The cache keeps
  the data, never code. The full library evaluates one point with the same function
  (``derivations.core``), so both give the same bits; an overflow, a division by zero or a
  domain error raises instead of giving ``inf`` or ``NaN``, and the caller then takes numpy.
- **a unit table**: unit text -> (factor to base units, dimension), compiled from the registry
  by :func:`unit_table` (so a new base dimension in ``definitions.txt`` is picked up), used by
  :func:`read_number` to read ``--set`` values; text it does not know is the caller's cue to
  ask pint.

>>> f = scalar_function("def f(a, b):\\n    return reduce(maximum, [a, b])/sqrt(a)\\n")
>>> f(4.0, 1.0)
2.0
>>> scalar_function("def f(a):\\n    return __import__('os').getcwd()\\n")
Traceback (most recent call last):
...
units.light.NotData: Call is not arithmetic
>>> read_number("3.35 TB/s", {"TB/s": [1e12, "[information] / [time]"]}, "([0-9.]+) *(.*)")
(3.35, 1000000000000.0, '[information] / [time]', 'TB/s')
"""

from __future__ import annotations

import functools
import keyword
import math
import re


def _maximum(a, b):
    """numpy.maximum on two floats: NaN wins."""
    return a if a >= b or a != a else b


def _minimum(a, b):
    """numpy.minimum on two floats: NaN wins."""
    return a if a <= b or a != a else b


def _ceil(x):
    return float(math.ceil(x))


def _floor(x):
    return float(math.floor(x))


# numpy names (as sympy's numpy printer writes them) -> their float equivalents.
PURE = {
    "reduce": functools.reduce,
    "maximum": _maximum,
    "minimum": _minimum,
    "amax": lambda xs, axis=0: functools.reduce(_maximum, xs),
    "amin": lambda xs, axis=0: functools.reduce(_minimum, xs),
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "ceil": _ceil,
    "floor": _floor,
    "pi": math.pi,
    "e": math.e,
    "__builtins__": {},
}


# -- functions as data ------------------------------------------------------------------------
#
# A compiled function is kept (in the fast CLI's cache) and passed around as *data*, never as
# code: its argument names, its steps (local name, expression) and its result, each expression
# a number, a name, or a list headed by one of the operators below. :func:`expression_data` reads
# lambdify's source into that form, refusing anything else (attributes, subscripts, strings,
# imports, calls of names outside the namespace); :func:`function_of` builds the Python function
# back from the data alone, node by node, so data from anywhere can only ever compute arithmetic.

BINARY = {"+": "Add", "-": "Sub", "*": "Mult", "/": "Div", "**": "Pow"}  # ast's names
UNARY = {"neg": "USub", "pos": "UAdd"}
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "pos": 3, "**": 4}  # atoms: 5
MAX_NODES = 200_000  # a bigger function is not kept (the full library evaluates it)


class NotData(ValueError):
    """Source or data outside the arithmetic a compiled function is made of."""


def _name(text) -> str:
    if not (isinstance(text, str) and text.isidentifier() and not keyword.iskeyword(text)):
        raise NotData(f"not a name: {text!r}")
    if text.startswith("__"):
        raise NotData(f"not a name: {text!r}")
    return text


def _to_data(node, count: list[int]):
    import ast

    count[0] += 1
    if count[0] > MAX_NODES:
        raise NotData("too large")
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, float):
            raise NotData(f"not a number: {node.value!r}")
        return node.value
    if isinstance(node, ast.Name):
        return _name(node.id)
    if isinstance(node, ast.BinOp):
        op = next((k for k, v in BINARY.items() if type(node.op).__name__ == v), None)
        if op is None:
            raise NotData(f"operator {type(node.op).__name__}")
        return [op, _to_data(node.left, count), _to_data(node.right, count)]
    if isinstance(node, ast.UnaryOp):
        op = next((k for k, v in UNARY.items() if type(node.op).__name__ == v), None)
        if op is None:
            raise NotData(f"operator {type(node.op).__name__}")
        return [op, _to_data(node.operand, count)]
    if isinstance(node, ast.List | ast.Tuple):
        head = "list" if isinstance(node, ast.List) else "tuple"
        return [head, *(_to_data(e, count) for e in node.elts)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        keywords = {_name(k.arg): _to_data(k.value, count) for k in node.keywords}
        return ["call", _name(node.func.id), [_to_data(a, count) for a in node.args], keywords]
    raise NotData(f"{type(node).__name__} is not arithmetic")


def expression_data(source: str) -> dict:
    """The data form of a compiled function's ``source`` (NotData when it is more than
    arithmetic on its arguments and names of its namespace).

    >>> data = expression_data("def f(a, b):\\n    x0 = a*b\\n    return x0/sqrt(b)\\n")
    >>> data["args"], data["steps"]
    (['a', 'b'], [['x0', ['*', 'a', 'b']]])
    >>> data["result"]
    ['/', 'x0', ['call', 'sqrt', ['b'], {}]]
    """
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise NotData("not Python") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        raise NotData("not one function")
    fn = tree.body[0]
    a = fn.args
    if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or fn.decorator_list:
        raise NotData("not plain arguments")
    count = [0]
    steps = []
    try:
        for statement in fn.body[:-1]:
            if not (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                raise NotData(f"{type(statement).__name__} is not an assignment")
            steps.append([_name(statement.targets[0].id), _to_data(statement.value, count)])
        last = fn.body[-1]
        if not isinstance(last, ast.Return) or last.value is None:
            raise NotData("no return")
        result = _to_data(last.value, count)
    except RecursionError:
        raise NotData("nested too deeply") from None
    return {"args": [_name(x.arg) for x in a.args], "steps": steps, "result": result}


def _to_source(data, known: set[str]) -> tuple[str, int]:
    """Python text of one expression of the data and its precedence, parenthesized where the
    tree needs it (and only there: so a long sum stays flat, as sympy printed it)."""
    if type(data) in (int, float):
        if not math.isfinite(data):
            raise NotData("not a finite number")
        return repr(data), 5
    if type(data) is str:
        if _name(data) not in known:
            raise NotData(f"unknown name {data!r}")
        return data, 5
    if type(data) is not list or not data or type(data[0]) is not str:
        raise NotData("not an expression")
    head, rest = data[0], data[1:]
    if head in BINARY and len(rest) == 2:
        (left, lp), (right, rp) = (_to_source(e, known) for e in rest)
        mine = PRECEDENCE[head]
        if head == "**":  # right-associative: parenthesize all but atoms on either side
            left = left if lp == 5 else f"({left})"
            right = right if rp == 5 else f"({right})"
        else:
            left = left if lp >= mine else f"({left})"
            right = right if rp > mine else f"({right})"
        return f"{left} {head} {right}", mine
    if head in UNARY and len(rest) == 1:
        operand, op = _to_source(rest[0], known)
        sign = "-" if head == "neg" else "+"
        return f"{sign}{operand if op >= 4 else f'({operand})'}", 3
    if head in ("list", "tuple"):
        items = ", ".join(_to_source(e, known)[0] for e in rest)
        return (f"[{items}]" if head == "list" else f"({items},)"), 5
    if head == "call" and len(rest) == 3 and type(rest[1]) is list and type(rest[2]) is dict:
        func, fp = _to_source(rest[0], known)
        if fp != 5:
            raise NotData("not a name called")
        args = [_to_source(e, known)[0] for e in rest[1]]
        args += [f"{_name(k)}={_to_source(v, known)[0]}" for k, v in rest[2].items()]
        return f"{func}({', '.join(args)})", 5
    raise NotData(f"not an expression: {head!r}")


def function_of(data, namespace: dict):
    """The function the data of :func:`expression_data` describes, its globals from
    ``namespace`` only (NotData for anything else: this is the only way cached data runs). Its
    text is written here from the data alone, every name checked and every number a repr, so it
    can only compute; it parses to the very tree of the source the data was read from."""
    try:
        if type(data) is not dict or set(data) != {"args", "steps", "result"}:
            raise NotData("not a function's data")
        args = [_name(a) for a in data["args"]]
        if len(set(args)) != len(args):
            raise NotData("an argument named twice")
        known = set(args) | {n for n in namespace if not n.startswith("__")}
        lines = [f"def compiled({', '.join(args)}):"]
        for step in data["steps"]:
            if type(step) is not list or len(step) != 2:
                raise NotData("not a step")
            value = _to_source(step[1], known)[0]
            target = _name(step[0])
            known.add(target)
            lines.append(f"    {target} = {value}")
        lines.append(f"    return {_to_source(data['result'], known)[0]}")
        code = compile("\n".join(lines) + "\n", "<chalkboard compiled>", "exec")
    except (RecursionError, MemoryError, TypeError, KeyError, SyntaxError):
        raise NotData("not a function's data") from None
    names = dict(namespace)
    exec(code, names)  # noqa: S102 - written from checked data: arithmetic and named calls
    return names["compiled"]


def scalar_function(data):
    """The compiled function ``data`` describes (or lambdify's source for it), run on floats
    (see :data:`PURE`)."""
    if isinstance(data, str):
        data = expression_data(data)
    return function_of(data, PURE)


def array_function(data, names: dict[str, list[str]]):
    """The compiled function ``data`` describes, run on numpy arrays: ``names`` maps each global
    it uses to ``[module, attribute]`` (numpy, functools or builtins), as lambdify bound it."""
    import builtins
    import functools as ft

    import numpy

    modules = {"numpy": numpy, "functools": ft, "builtins": builtins}
    namespace = {}
    for name, (mod, attr) in names.items():
        if mod not in modules or not isinstance(attr, str) or attr.startswith("_"):
            raise NotData(f"not a name: {mod}.{attr}")
        if mod == "builtins" and attr not in SAFE_BUILTINS:
            raise NotData(f"not a name: {mod}.{attr}")
        namespace[_name(name)] = getattr(modules[mod], attr)
    if isinstance(data, str):
        data = expression_data(data)
    return function_of(data, namespace)


SAFE_BUILTINS = {"abs", "min", "max", "sum", "float", "int", "round", "pow", "range", "len"}


def global_names(fn) -> dict[str, list[str]] | None:
    """For :func:`array_function`: where each global of a lambdified ``fn`` comes from, or None
    when one is not a numpy, functools or builtins object."""
    import builtins

    import numpy

    out = {}
    for name in fn.__code__.co_names:
        if name not in fn.__globals__:
            if hasattr(builtins, name):
                out[name] = ["builtins", name]
            continue
        obj = fn.__globals__[name]
        if getattr(numpy, name, None) is obj:
            out[name] = ["numpy", name]
        elif obj is functools.reduce:
            out[name] = ["functools", "reduce"]
        elif getattr(builtins, name, None) is obj:
            out[name] = ["builtins", name]
        else:
            return None
    return out


def read_number(text: str, table: dict, pattern: str):
    """``(magnitude, factor to base units, dimension, unit text)`` of ``"3.35 TB/s"`` by
    ``table``, or None when the text is not a plain number with a unit the table holds (ask
    pint then). A bare
    number has unit ``""`` (the caller decides what it means). ``pattern`` is the registry's
    number pattern, so the two read the same text."""
    match = re.match(pattern, text)
    if not match:
        return None
    number, unit_text = match.groups()
    if len(number) > 40:
        return None
    try:
        magnitude = float(number.replace("_", "").replace(",", ""))
    except ValueError:
        return None
    if not unit_text:
        return magnitude, None, None, ""
    entry = table.get(unit_text)
    if entry is None:
        return None
    return magnitude, entry[0], entry[1], unit_text


def unit_table(texts) -> dict[str, list]:
    """Compile the table :func:`read_number` reads: each unit text pint reads, with its factor
    to base units (pint's own, so the product is the one pint computes) and its dimension as
    the registry states it. Texts pint rejects are left out."""
    from units.registry import Q_, ChalkboardError, parse_unit

    table = {}
    for text in texts:
        if not isinstance(text, str) or not text.strip() or text != text.strip():
            continue
        try:
            unit = parse_unit(text)
        except ChalkboardError:
            continue
        one = Q_(1.0, unit)
        table[text] = [float(one.to_base_units().magnitude), dimension_key(unit)]
    return table


def dimension_key(unit) -> str:
    """A unit's dimension as comparable text, from the registry's own dimensionality."""
    from units.registry import Q_

    return repr(sorted(dict(Q_(1, unit).dimensionality).items()))
