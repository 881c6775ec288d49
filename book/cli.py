"""The ``chalkboard`` command: list, evaluate and solve equations, show presets, build the book.

Bad input (unknown names, wrong dimensions, non-positive values, malformed preset files) prints
one line starting with ``error:`` on stderr and exits with status 2. Heavy imports (sympy, pint,
mkdocs) happen inside the commands that need them, so start-up stays quick.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import json
import os
import re
import sys

EPILOG = """\
Numbers: a value with a dimension needs its unit (--set mem_bandwidth='3.35 TB/s'); a bare
number is accepted only for counts and dimensionless inputs (--set batch_size=64 means 64
sequences), and is an error naming the unit otherwise. The same rule holds for --over, Python
keywords and preset files. Every result is checked: one that is not a finite positive number
is an error, not output.

--extra FILE runs FILE as Python with your permissions, like `python FILE`: use only files
you trust.
"""

KIND_ALIASES = {
    "hardware": ("hardware",),
    "models": ("model",),
    "prices": ("rental", "api"),
    "precisions": ("precision",),
    "parameters": ("parameter",),
    "tiers": ("tier",),
    "fits": ("fit",),
    "measurements": ("measurement",),
}


class UsageError(Exception):
    """A command line argparse rejected."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise UsageError(message)


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hardware", metavar="H", help="hardware preset id, e.g. h100_sxm")
    p.add_argument("--model", metavar="M", help="model preset id, e.g. deepseek_v3")
    p.add_argument(
        "--precision",
        metavar="P",
        default="bf16",
        help="shorthand for the three below (default bf16; see `chalkboard presets precisions`)",
    )
    p.add_argument(
        "--weight-precision", metavar="P", help="precision of the stored weights (bytes per weight)"
    )
    p.add_argument(
        "--kv-precision", metavar="P", help="precision of the KV cache (bytes per cached value)"
    )
    p.add_argument(
        "--compute-precision",
        metavar="P",
        help="precision of the math: the chip's dense FLOP/s and the activations' bytes",
    )
    p.add_argument("--price", metavar="R", help="rental price preset (default lecture_gpu)")
    p.add_argument("--api", metavar="A", help="API price preset, e.g. claude_opus_4_6")
    p.add_argument("--tier", metavar="T", help="memory tier preset, e.g. flash_nvme")
    p.add_argument("--fit", metavar="F", help="scaling-law fit (default hoffmann_2022)")
    p.add_argument(
        "--set",
        metavar="SYMBOL=VALUE",
        action="append",
        default=[],
        help="give an input, e.g. --set mem_bandwidth='3.35 TB/s' (repeatable)",
    )
    p.add_argument("--unit", metavar="U", help="show the result in this unit")
    p.add_argument("--json", action="store_true", help="print JSON")


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"a port is a whole number from 1 to 65535, not {text!r}")
    return int(text)


class _Skipped:
    """A subcommand left out of a parser built for one command (see make_parser)."""

    def add_argument(self, *args, **kwargs):
        pass


class _Only:
    def __init__(self, sub, command):
        self.sub, self.command = sub, command

    def add_parser(self, name, **kwargs):
        return self.sub.add_parser(name, **kwargs) if name == self.command else _Skipped()


@functools.cache
def make_parser(only: str | None = None) -> Parser:
    """The argument parser; ``only`` builds just that subcommand (the fast path's start-up:
    a command line it parses is parsed the same by the whole parser). Built once per process
    (parsing leaves a parser as it was): tests and the server call ``main`` many times."""
    parser = Parser(
        prog="chalkboard",
        description=__doc__.splitlines()[0].replace("``", ""),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--presets",
        metavar="FILE",
        action="append",
        default=[],
        help="extra preset file (TOML), validated like the built-in ones",
    )
    parser.add_argument(
        "--extra",
        metavar="FILE",
        action="append",
        default=[],
        help="a Python file of your own symbols, equations and chapters (repeatable); it runs "
        "as Python with your permissions, like `python FILE`",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    if only is not None:
        sub = _Only(sub, only)

    p = sub.add_parser("list", help="every equation with its symbols")
    p.add_argument("--chapter", help="only this chapter")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("eval", help="evaluate an equation on presets and overrides")
    p.add_argument("id")
    _add_inputs(p)

    p = sub.add_parser("solve", help="solve an equation for one of its inputs and evaluate it")
    p.add_argument("id")
    p.add_argument("--for", dest="unknown", required=True, metavar="SYMBOL")
    _add_inputs(p)

    p = sub.add_parser("sweep", help="evaluate over a range of one or two inputs (CSV or JSON)")
    p.add_argument("id")
    p.add_argument(
        "--over",
        metavar="SYMBOL=START:STOP:N",
        action="append",
        required=True,
        help="an input and its range, in the symbol's unit unless given (once or twice)",
    )
    p.add_argument(
        "--log",
        action="store_true",
        help="space the values geometrically (a count is rounded to whole numbers)",
    )
    p.add_argument(
        "--chips-per-point",
        action="store_true",
        help="let n_chips be the fewest that fit at each point (by default it is held at the "
        "fewest that fit the sweep's largest point, so the curve is one replica's)",
    )
    _add_inputs(p)
    p.add_argument("--csv", action="store_true", help="print CSV (the default)")

    p = sub.add_parser("sensitivity", help="elasticities d ln y / d ln x, largest first")
    p.add_argument("id")
    _add_inputs(p)

    p = sub.add_parser("symbols", help="every symbol: unit, meaning, and the equation defining it")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("show", help="an equation's symbols, assumptions, source and dependencies")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("problems", help="practice problems, their numbers drawn from a seed")
    p.add_argument("--chapter", help="only this chapter")
    p.add_argument("--seed", type=int, default=0, help="the same seed gives the same numbers")
    p.add_argument("--count", type=int, help="problems per chapter (default: all; the drill's: 3)")
    p.add_argument(
        "--kind",
        choices=["multi", "design", "estimate", "numeric", "concept", "forward", "inverse"],
        help="only problems of this kind (forward and inverse: the drill's)",
    )
    p.add_argument(
        "--drill", action="store_true", help="the formula drill: one-equation generated problems"
    )
    p.add_argument("--answers", action="store_true", help="show worked solutions and answers")
    p.add_argument(
        "--check",
        nargs=2,
        metavar=("ID", "ANSWER"),
        help="grade ANSWER to problem ID (e.g. batching-0-3 '128 experts'): exit 0 right, 1 wrong",
    )
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("presets", help="list presets with their figures (and, asked, sources)")
    p.add_argument("kind", nargs="?", choices=list(KIND_ALIASES), help="default: all")
    p.add_argument("--sources", action="store_true", help="print each preset's sources")
    p.add_argument("--json", action="store_true", help="figures and sources as JSON")

    p = sub.add_parser("validate", help="every published measurement against its roofline bound")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser(
        "predict",
        help="predicted throughput of a scenario of yours, with the error to expect",
        description="The roofline bound and a prediction (the bound's physics at fitted shares "
        "of peak; see the validation chapter), with the leave-one-out error of the fit.",
    )
    p.add_argument("--hardware", required=True, help="hardware preset, e.g. h200")
    p.add_argument("--model", required=True, help="model preset, e.g. llama_2_70b")
    p.add_argument("--precision", required=True, help="weights and math, e.g. fp8")
    p.add_argument("--kv", help="KV-cache precision (default: --precision)")
    p.add_argument("--chips", type=int, default=1, help="chips per replica (default 1)")
    p.add_argument("--input", required=True, help="mean prompt length, e.g. 1000 or '1k token'")
    p.add_argument("--output", required=True, help="mean output length, e.g. 200")
    p.add_argument(
        "--scenario",
        default="offline",
        help="offline, server, interactive or single_stream (default offline)",
    )
    p.add_argument("--tpot", help="time per output token a server holds, e.g. '50 ms'")
    p.add_argument(
        "--max-batch",
        type=int,
        help="the engine's maximum batch per replica (max_batch_size, max_num_seqs); "
        "default: what fits in HBM",
    )
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("build", help="build the static site")
    p.add_argument("--out", default="site", help="output folder (default: site)")
    p.add_argument(
        "--pdf",
        action="store_true",
        help="also print the whole book to OUT/chalkboard.pdf (needs Chromium and playwright)",
    )

    p = sub.add_parser("serve", help="preview the site, rebuilding when sources change")
    p.add_argument("--port", type=_port, default=8000, help="1 to 65535 (default 8000)")
    return parser


# -- commands ---------------------------------------------------------------------------------


def _json(data, indent: int | None = 2) -> str:
    """JSON text; a non-finite number is an error, never ``Infinity`` or ``NaN`` in the output."""
    from units import ChalkboardError

    try:
        return json.dumps(data, indent=indent, allow_nan=False) + "\n"
    except ValueError:
        raise ChalkboardError("a result is not a finite number, so it has no JSON form") from None


def _symbol_json(s) -> dict:
    return {"name": s.name, "unit": s.unit, "meaning": s.meaning, "latex": s.latex}


def cmd_list(args, out) -> None:
    import derivations

    if args.chapter is not None and args.chapter not in {c.id for c in derivations.CHAPTERS}:
        from units import ChalkboardError, closest

        ids = [c.id for c in derivations.CHAPTERS]
        raise ChalkboardError(f"unknown chapter {args.chapter!r}{closest(args.chapter, ids)}")
    eqs = derivations.equations(args.chapter)
    if args.json:
        data = [
            {
                "id": e.id,
                "chapter": e.chapter,
                "title": e.title,
                "equation": f"{e.lhs.name} = {e.rhs}",
                "latex": e.latex(),
                "display": e.display_latex(),
                "output": _symbol_json(e.lhs),
                "symbols": [_symbol_json(s) for s in e.inputs],
                "assumptions": list(e.assumptions),
                "source": str(e.source),
            }
            for e in eqs
        ]
        out.write(_json(data))
        return
    for e in eqs:
        out.write(f"{e.id}  [{e.chapter}]  {e.title}\n    {e.lhs.name} = {e.rhs}\n")
        for s in (e.lhs, *e.inputs):
            out.write(f"    {s.name:<22} {_unit_words(s):<20} {s.meaning}\n")


def _overrides(pairs: list[str]) -> dict[str, object]:
    """``--set`` pairs, each value read by the one rule for user numbers (see parse_override);
    a name that is not a symbol is left for the evaluation to report with its inputs."""
    from derivations import SYMBOLS
    from derivations.inputs import parse_override
    from units import ChalkboardError

    result = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise ChalkboardError(f"--set takes SYMBOL=VALUE, got {pair!r}")
        if name in result:
            raise ChalkboardError(f"--set {name} is given twice")
        result[name] = parse_override(name, value, f"--set {name}") if name in SYMBOLS else value
    return result


PRECISION_FLAGS = ("precision", "weight_precision", "kv_precision", "compute_precision")


def _precisions(args, presets) -> dict[str, str | None]:
    """The four precision flags, each checked against the precision presets."""
    from units import ChalkboardError, closest

    known = presets.ids("precision")
    chosen = {name: getattr(args, name) for name in PRECISION_FLAGS}
    for name, value in chosen.items():
        if value is not None and value not in known:
            flag = "--" + name.replace("_", "-")
            raise ChalkboardError(
                f"{flag}: unknown precision {value!r}{closest(value, known)}; "
                f"the precisions are: {', '.join(known)}"
            )
    return chosen


def _evaluate(eq, args, out) -> None:
    from book.format import number, unit
    from units.presets import load

    presets = load(tuple(args.presets))
    result = eq.evaluate_detailed(
        hardware=args.hardware,
        model=args.model,
        price=args.price,
        presets=presets,
        api=args.api,
        tier=args.tier,
        fit=args.fit,
        **_precisions(args, presets),
        **_overrides(args.set),
    )
    value = result.value
    if args.unit:
        value = _convert(value, _target_unit(args.unit, eq))
    if args.json:
        data = {
            "id": eq.id,
            "symbol": eq.lhs.name,
            "value": float(value.magnitude),
            "unit": f"{value.units:~}",
            "equation": f"{eq.lhs.name} = {eq.rhs}",
            "inputs": {
                name: {
                    "value": float(i.value.magnitude),
                    "unit": f"{i.value.units:~}",
                    "from": i.origin,
                    "source": i.source,
                }
                for name, i in result.inputs.items()
            },
        }
        out.write(_json(data))
        return
    out.write(f"{eq.lhs.name} = {_shown(value, bool(args.unit))}\n")
    out.write(f"    {eq.lhs.name} = {eq.rhs}\n")
    for name, i in result.inputs.items():
        magnitude = number(i.value.magnitude)
        shown = unit(i.value.units, singular=magnitude in ("1", "-1"))  # "1 token per sequence"
        out.write(f"    {name:<22} {magnitude:>12} {shown:<18} {i.origin}\n")


def _shown(value, asked: bool) -> str:
    """The result as prose says it, except that a --unit prose would not say (Ys, EB: shown
    in powers of ten of s and B) is kept, as --json keeps it (book.fast does the same)."""
    from book.format import number, quantity
    from units.display import _plain

    if asked and _plain(value) is not value:
        return f"{number(float(value.magnitude), 4)} {value.units:~}"
    return quantity(value)


def cmd_eval(args, out) -> None:
    import derivations

    _evaluate(derivations.get(args.id), args, out)


def cmd_solve(args, out) -> None:
    import derivations
    from derivations.inverse import inverse  # numerically, when algebra alone cannot

    _evaluate(inverse(derivations.get(args.id), args.unknown), args, out)


def _preset_json(preset) -> dict:
    import pint

    fields = {}
    for name, value in preset.fields.items():
        if isinstance(value, pint.Quantity):
            fields[name] = {
                "value": float(value.magnitude),
                "unit": f"{value.units:~}",
                "source": preset.source_of(name),
            }
        else:
            fields[name] = value
    return {"id": preset.id, "kind": preset.kind, **fields}


MAX_SWEEP_POINTS = 1_000_000


def _range(spec: str):
    """``SYMBOL=START:STOP:N`` -> (symbol, start, stop, n); START and STOP may carry units."""
    from derivations import lookup_symbol
    from derivations.inputs import parse_override
    from units import ChalkboardError

    name, sep, rest = spec.partition("=")
    parts = rest.split(":")
    if not sep or len(parts) != 3:
        raise ChalkboardError(f"--over takes SYMBOL=START:STOP:N, got {spec!r}")
    sym = lookup_symbol(name.strip())
    start, stop = (parse_override(sym.name, p, f"--over {sym.name}") for p in parts[:2])
    count = parts[2].strip()
    if not (count.isascii() and count.isdigit() and len(count) <= 7) or not (
        2 <= int(count) <= 1_000_000
    ):
        raise ChalkboardError(f"--over {sym.name}: N must be a whole number from 2 to 1000000")
    unit = sym.display_unit
    return sym, start.to(unit).magnitude, stop.to(unit).magnitude, int(count)


def cmd_sweep(args, out) -> None:
    import csv

    import numpy as np

    import derivations
    from book.fast import HELD_CHIPS, same_values
    from units import Q_, ChalkboardError
    from units.presets import load

    eq = derivations.get(args.id)
    if len(args.over) > 2:
        raise ChalkboardError("--over can be given once or twice")
    ranges = [_range(spec) for spec in args.over]
    if len(ranges) == 2 and ranges[0][0].name == ranges[1][0].name:
        raise ChalkboardError(f"--over {ranges[0][0].name} is given twice; sweep two inputs")
    points = 1
    for *_, count in ranges:
        points *= count
    if points > MAX_SWEEP_POINTS:
        raise ChalkboardError(
            f"--over asks for {points:,} points; at most {MAX_SWEEP_POINTS:,} in one sweep"
        )
    # a count's values are whole numbers (rounded, repeats dropped), so there may be fewer than N
    axes = [
        (
            sym,
            derivations.spaced(
                sym.name, Q_(a, sym.display_unit), Q_(b, sym.display_unit), n, args.log
            ).magnitude,
        )
        for sym, a, b, n in ranges
    ]
    grids = np.meshgrid(*(values for _, values in axes), indexing="ij")
    overrides = _overrides(args.set)
    for sym, _ in axes:
        if sym.name in overrides:
            raise ChalkboardError(f"{sym.name} is both swept (--over) and set (--set)")
    presets = load(tuple(args.presets))
    kwargs = dict(presets=presets, api=args.api, tier=args.tier, fit=args.fit)
    kwargs.update(_precisions(args, presets))
    swept = {
        sym.name: Q_(g.ravel(), sym.display_unit) for (sym, _), g in zip(axes, grids, strict=True)
    }
    kwargs.update(hardware=args.hardware, model=args.model, price=args.price)
    detailed = eq.evaluate_detailed(**kwargs, **overrides, **swept)
    value, held = detailed.value, None
    if not args.chips_per_point:
        held = _held_chips(detailed, overrides)
    if held is not None:
        at_held = eq.evaluate(**kwargs, **overrides, **swept, n_chips=held)
        if same_values(at_held.to(value.units).magnitude, value.magnitude):
            held = None  # the chip count changed nothing (it was the same, or it cancels)
        else:
            value = at_held
    if args.unit:
        value = _convert(value, _target_unit(args.unit, eq))
    mags = np.broadcast_to(value.magnitude, grids[0].ravel().shape)
    columns = [
        (sym.name, f"{sym.display_unit:~}", g.ravel())
        for (sym, _), g in zip(axes, grids, strict=True)
    ]
    if held is not None:  # said in the output: a column of the one chip count
        columns.append(("n_chips", "chip", np.full(len(mags), held.to("chip").magnitude)))
    columns.append((eq.lhs.name, f"{value.units:~}", mags))
    if args.json:
        data = {
            "id": eq.id,
            "columns": [{"name": n, "unit": u} for n, u, _ in columns],
            "rows": [[float(c[2][i]) for c in columns] for i in range(len(mags))],
        }
        if held is not None:
            data["note"] = HELD_CHIPS
        out.write(_json(data, None))
        return
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([f"{n} [{u}]" for n, u, _ in columns])
    for i in range(len(mags)):
        writer.writerow([repr(float(c[2][i])) for c in columns])


def _held_chips(detailed, overrides: dict):
    """The chip count a sweep holds fixed: when n_chips is not given and the equation took the
    fewest chips that fit at each point (which jumps with the swept inputs and makes the curve
    jagged), the fewest that fit every point, its largest; else None."""
    import numpy as np

    from units import Q_

    used = detailed.inputs.get("n_chips")
    if "n_chips" in overrides or used is None or not used.origin.startswith("fewest"):
        return None
    return Q_(float(np.max(used.value.to("chip").magnitude)), "chip")


def _convert(value, target):
    """``value`` in the ``--unit`` target; a conversion that overflows or underflows is an error."""
    import numpy as np

    from units import ChalkboardError

    with np.errstate(all="ignore"):
        try:
            converted = value.to(target)
        except OverflowError:
            converted = None
    mags = None if converted is None else np.asarray(converted.magnitude, dtype=float)
    if (
        mags is None
        or not np.all(np.isfinite(mags))
        or np.any((mags == 0) & (value.magnitude != 0))
    ):
        raise ChalkboardError(f"--unit {target:~P}: the result is out of range in that unit")
    return converted


def _target_unit(text: str, eq):
    from units import ChalkboardError, dimension_of, parse_unit

    target = parse_unit(text)
    if eq.lhs.dimensionality != (1 * target).dimensionality:
        raise ChalkboardError(
            f"--unit {text!r} is {dimension_of(target)}, but {eq.lhs.name} is {eq.lhs.dimension}"
        )
    return target


def cmd_sensitivity(args, out) -> None:
    import derivations
    from book.format import number
    from units.presets import load

    eq = derivations.get(args.id)
    presets = load(tuple(args.presets))
    result = eq.elasticities(
        hardware=args.hardware,
        model=args.model,
        price=args.price,
        presets=presets,
        api=args.api,
        tier=args.tier,
        fit=args.fit,
        **_precisions(args, presets),
        **_overrides(args.set),
    )
    if args.json:
        out.write(_json({"id": eq.id, "elasticities": result}))
        return
    out.write(f"d ln {eq.lhs.name} / d ln x: a 1% rise in x moves {eq.lhs.name} by this many %\n")
    widest = max(abs(v) for v in result.values()) or 1.0
    for name, v in result.items():
        bar = "#" * round(20 * abs(v) / widest)
        side = f"{bar:>20}|" if v < 0 else f"{'':>20}|{bar}"
        out.write(f"    {name:<26} {number(v, 3):>8}  {side}\n")


def cmd_symbols(args, out) -> None:
    import derivations

    rows = []
    for s in derivations.SYMBOLS.values():
        defined = derivations.defining(s.name)
        rows.append({**_symbol_json(s), "defined_by": defined.id if defined else None})
    if args.json:
        out.write(_json(rows))
        return
    for s, r in zip(derivations.SYMBOLS.values(), rows, strict=True):
        by = f"  = {r['defined_by']}" if r["defined_by"] else ""
        out.write(f"{r['name']:<30} {_unit_words(s):<20} {r['meaning']}{by}\n")


def cmd_show(args, out) -> None:
    import derivations

    eq = derivations.get(args.id)
    data = {
        "id": eq.id,
        "title": eq.title,
        "chapter": eq.chapter,
        "equation": f"{eq.lhs.name} = {eq.rhs}",
        "output": _symbol_json(eq.lhs),
        "symbols": [_symbol_json(s) for s in eq.inputs],
        "assumptions": list(eq.assumptions),
        "source": str(eq.source),
        "uses": [e.id for e in eq.uses],
        "used_by": [e.id for e in eq.used_by],
        "derivation": [
            {"kind": st.kind, "why": st.why, "relation": f"{st.relation.lhs} = {st.relation.rhs}"}
            for st in (eq.derivation.steps if eq.derivation else ())
        ],
    }
    if args.json:
        out.write(_json(data))
        return
    out.write(f"{eq.id}: {eq.title}  [{eq.chapter}]\n    {data['equation']}\n")
    for s in (eq.lhs, *eq.inputs):
        out.write(f"    {s.name:<26} {_unit_words(s):<20} {s.meaning}\n")
    for a in eq.assumptions:
        out.write(f"  assumes: {a}\n")
    out.write(f"  source: {data['source']}\n")
    out.write(f"  uses: {', '.join(data['uses']) or 'nothing'}\n")
    out.write(f"  used by: {', '.join(data['used_by']) or 'nothing'}\n")
    for i, st in enumerate(data["derivation"], 1):
        out.write(f"  step {i} ({st['kind']}): {st['relation']}  -- {st['why']}\n")


def cmd_problems(args, out) -> int | None:
    import re

    from book.format import plain_math, quantity
    from book.problems import problem_set, tolerance_text
    from units.presets import load

    presets = load(tuple(args.presets))
    if args.check:
        return _check_answer(args, out, presets)
    problems = problem_set(
        args.chapter, args.seed, args.count, presets, kind=args.kind, drill=args.drill
    )
    if args.json:
        out.write(_json([p.to_dict() for p in problems]))
        return

    def plain(text: str) -> str:  # terminal: no Markdown emphasis, math in plain characters
        return plain_math(re.sub(r"\*\*(.+?)\*\*", r"\1", text))

    for p in problems:
        title = f" {p.title}\n   " if p.title else ""
        out.write(f"[{p.id}] ({p.kind}){title} {plain(p.text)}\n")
        for g in p.givens:
            out.write(f"    given {g.name} = {g.text}\n")
        if p.hint:
            out.write(f"    hint: {plain(p.hint)}\n")
        if args.answers:
            for line in p.solution:
                out.write(f"    => {plain(line)}\n")
            if p.answer is not None:
                out.write(f"    answer: {quantity(p.answer)} ({tolerance_text(p)})\n")
        out.write("\n")


def _find_problem(pid: str, seed: int, presets):
    """The problem ``pid``: an authored one (``chapter.slug``, drawn with ``seed``; the site
    shows seed 0) or one of the formula drill (``chapter-seed-n``, its seed in its id)."""
    import derivations
    from book.problems import MAX_COUNT, drill_set, problem_set
    from units import ChalkboardError, closest

    chapters = [c.id for c in derivations.CHAPTERS]
    chapter = next((c for c in sorted(chapters, key=len, reverse=True) if pid.startswith(c)), None)
    if chapter is None:
        raise ChalkboardError(
            f"unknown problem {pid!r}: an id starts with its chapter, like batching.moe_crossover_"
            f"batch{closest(pid.split('-')[0].split('.')[0], chapters)}"
        )
    drill = re.fullmatch(r"-(\d+)-(\d+)", pid[len(chapter) :])
    if drill:
        count = min(max(int(drill[2]), 1), MAX_COUNT)  # a drill's ids count from 1
        problems = drill_set(chapter, int(drill[1]), count, presets)
    else:
        problems = problem_set(chapter, seed, presets=presets)
    for p in problems:
        if p.id == pid:
            return p
    raise ChalkboardError(f"unknown problem {pid!r}{closest(pid, [p.id for p in problems])}")


def _check_answer(args, out, presets) -> int:
    """``problems --check ID ANSWER``: 0 right, 1 wrong (with why), 2 unreadable (an error)."""
    from book.checker import answer_spec, check
    from book.format import quantity
    from book.problems import tolerance_text
    from units import ChalkboardError

    pid, text = args.check
    problem = _find_problem(pid.strip(), args.seed, presets)
    if problem.answer is None:
        raise ChalkboardError(
            f"{pid} is answered in words, not a number: see its answer with --answers"
        )
    verdict = check(text, answer_spec(problem))
    if verdict["kind"] == "unreadable":
        why = verdict["message"].rstrip(".")
        raise ChalkboardError(f"cannot read {text!r}: {why[:1].lower()}{why[1:]}")
    if args.json:
        out.write(_json({"id": pid, "answer": text} | verdict))
    elif verdict["ok"]:
        out.write(
            f"right: {text} (the solution's answer: {quantity(problem.answer)}, "
            f"{tolerance_text(problem)})\n"
        )
    else:
        out.write(f"wrong: {verdict['message']}\n")
    return 0 if verdict["ok"] else 1


def cmd_presets(args, out) -> None:
    import pint

    from book.format import quantity
    from units.presets import load

    presets = load(tuple(args.presets))
    kinds = (
        KIND_ALIASES[args.kind]
        if args.kind
        else tuple(k for ks in KIND_ALIASES.values() for k in ks)
    )
    if args.json:
        data = {kind: [_preset_json(p) for p in presets.by_kind[kind].values()] for kind in kinds}
        out.write(_json(data))
        return
    for kind in kinds:
        out.write(f"[{kind}]\n")
        for p in presets.by_kind[kind].values():
            figures = ", ".join(
                f"{n}={quantity(v)}" for n, v in p.fields.items() if isinstance(v, pint.Quantity)
            )
            if kind == "model" and p.get("params_total") is None:
                figures = ", ".join(
                    filter(None, ("parameters counted from the architecture", figures))
                )
            out.write(f"  {p.id:<22} {p.name}: {figures}\n")
            if args.sources:
                out.write(f"  {'':<22} source: {p.sources.get('source', '—')}\n")
                for name, cited in p.sources.items():
                    if name != "source" and cited != p.sources.get("source"):
                        out.write(f"  {'':<22}   {name}: {cited}\n")


def cmd_validate(args, out) -> None:
    from book.format import number
    from book.validation import TOO_FEW, enough, summary, validate
    from units.presets import load

    presets = load(tuple(args.presets))
    rows = validate(presets)
    bands = summary(rows)
    if args.json:
        from book import predict

        made = predict.prediction(presets)  # the fits, bootstrap and ablation, kept across runs
        honest = made["out_of_sample"]
        data = {
            "rows": [
                {
                    **r.to_json(),
                    "predicted": honest[r.id][0] if r.id in honest else None,
                    "predicted_how": honest[r.id][1] if r.id in honest else None,
                    # no batch of the prediction meets the row's speed target
                    "unmet_target": r.id in made["summary"].get("unmet", ()),
                }
                for r in rows
            ],
            "summary": bands,
            "prediction": made["summary"],
        }
        out.write(json.dumps(data, indent=2) + "\n")
        return

    def pct(x):
        return "-" if x is None else f"{number(100 * x)}%"

    for r in rows:
        out.write(
            f"{r.id}  [{r.scenario}]  measured {number(r.measured.m)} {r.unit}, "
            f"bound {number(r.bound.m)} {r.unit}, efficiency {pct(r.efficiency)}\n"
        )
        out.write(
            f"    stated: {', '.join(r.stated) or '-'}; assumed: {'; '.join(r.assumed) or '-'}\n"
        )
        for flag in r.flags:
            out.write(f"    flag: {flag}\n")
    out.write(
        "\nefficiency by scenario (median; band holding the middle 80% of rows; training by the "
        "format of the peak its MFU is a share of, never pooled):\n"
    )
    for name, s in bands.items():
        if not enough(s["count"]):  # a median of a few rows is one of them: no verdict
            out.write(f"  {name:<14} {s['count']:>3} rows  {TOO_FEW}\n")
            continue
        out.write(
            f"  {name:<14} {s['count']:>3} rows  median {pct(s['median'])}  "
            f"band {pct(s['low'])} to {pct(s['high'])}\n"
        )


def cmd_predict(args, out) -> None:
    from book.format import number
    from book.predict import predict_scenario
    from units import ChalkboardError
    from units.presets import load

    if args.chips < 1:
        raise ChalkboardError(f"--chips: expected a whole number of chips >= 1, got {args.chips}")
    p = predict_scenario(
        args.hardware,
        args.model,
        args.precision,
        args.chips,
        args.input,
        args.output,
        args.scenario,
        args.tpot,
        args.kv,
        load(tuple(args.presets)),
        args.max_batch,
    )
    if args.json:
        out.write(json.dumps(p, indent=2) + "\n")
        return
    unit = "tokens/s per user" if p["unit"] == "token/s" else "tokens/s per chip"
    out.write(f"bound      {number(p['bound'])} {unit} (the roofline: no system exceeds it)\n")
    out.write(f"predicted  {number(p['predicted'])} {unit}\n")
    if p.get("unmet"):
        out.write(
            "warning    no batch meets the --tpot: the fitted fixed cost per step alone is "
            "longer, so this is the speed at one sequence, not a throughput at that TPOT\n"
        )
        return  # the fit's error is for rows it serves in time: none is stated here
    out.write(
        f"expected   {number(p['low'])} to {number(p['high'])} {unit}: the fit missed 4 in 5 "
        f"rows it had not seen by less than ×{number(p['error_p80'], 3)} (median "
        f"×{number(p['error_median'], 3)})\n"
    )


def cmd_build(args, out) -> None:
    from pathlib import Path

    from book.site import build

    site = build(
        Path(args.out).expanduser().absolute(), extra_presets=tuple(args.presets), pdf=args.pdf
    )
    out.write(f"site built: {site / 'index.html'}\n")
    if args.pdf:
        out.write(f"pdf written: {site / 'chalkboard.pdf'}\n")


def cmd_serve(args, out) -> None:
    from book.serve import serve

    serve(args.port, extra_presets=tuple(args.presets), out=out, extra=tuple(args.extra))


COMMANDS = {
    "list": cmd_list,
    "eval": cmd_eval,
    "solve": cmd_solve,
    "sweep": cmd_sweep,
    "sensitivity": cmd_sensitivity,
    "symbols": cmd_symbols,
    "show": cmd_show,
    "problems": cmd_problems,
    "presets": cmd_presets,
    "validate": cmd_validate,
    "predict": cmd_predict,
    "build": cmd_build,
    "serve": cmd_serve,
}


def main(argv: list[str] | None = None, out=None, err=None, fast: bool = False) -> int:
    """Run the CLI; returns the exit status (0; 2 for bad input; 1 for a wrong answer to
    ``problems --check``).

    Every failure is one ``error:`` line on ``err``; an exception that is not bad input is a
    bug, and says so in that line (a safety net, not the way errors are meant to be reported).
    With ``fast`` (the ``chalkboard`` command's default), eval, list, presets and sweep are
    answered from the compiled cache when it holds what they need (book/fast.py); otherwise they
    run on the full library, which then fills the cache, and a run that found the cache missing
    or stale says so in one line on ``err``.
    """
    err = err or sys.stderr or open(os.devnull, "w")  # noqa: SIM115 - stderr may be closed
    out = out or sys.stdout

    def fail(message) -> int:
        from units.registry import one_line

        try:
            err.write(f"error: {one_line(message)}\n")
            err.flush()
        except (OSError, ValueError):
            pass
        return 2

    try:
        args = _fast_args(argv) if fast else None
        args = args or make_parser().parse_args(argv)
    except UsageError as e:
        return fail(e)
    except SystemExit as e:  # --help prints and exits 0; anything else is argparse's own exit
        return e.code if isinstance(e.code, int) else 0
    if out is None:
        return fail("standard output is closed; nothing can be printed")
    text, why = None, ""
    fast = fast and args.command in FAST_COMMANDS and not args.extra
    if fast:
        from book import fast as fastpath

        text, why = fastpath.run(args)
    try:
        if text is not None:
            out.write(text)
            out.flush()
            return 0
        if getattr(args, "presets", None):
            from units.presets import load

            load(tuple(args.presets))  # validate extra preset files before anything else
        if getattr(args, "extra", None):
            import derivations

            for path in args.extra:
                derivations.load_extra(path)
        code = COMMANDS[args.command](args, out)
        out.flush()
    except BrokenPipeError:  # e.g. `chalkboard list | head`: stop quietly
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit flush quiet
        return 0
    except KeyboardInterrupt:
        return 130
    except UsageError as e:
        return fail(e)
    except OSError as e:
        if e.errno == errno.EBADF:  # `chalkboard list >&-`
            return fail("standard output is closed; nothing can be printed")
        return fail(f"{e.strerror or e} ({e.filename})" if e.filename else (e.strerror or e))
    except SystemExit as e:
        return fail(
            f"sys.exit({e.code!r}) was called during the command; this is a bug, please "
            "report it (or in an --extra file)"
        )
    except BaseException as e:  # noqa: BLE001 - the safety net: one line, never a traceback
        from units import ChalkboardError

        if isinstance(e, ChalkboardError):
            return fail(e)
        if isinstance(e, ValueError) and getattr(out, "closed", False):  # closed by --extra
            return fail("standard output was closed during the command; nothing can be printed")
        return fail(
            f"internal error ({type(e).__name__}: {e}); this is a bug in chalkboard, please "
            "report it with the command you ran"
        )
    if fast:
        _fill_cache(args, why, err)
    return code or 0


FAST_COMMANDS = ("eval", "list", "presets", "sweep")


def _fast_args(argv):
    """The arguments of a fast command parsed by a parser of that command alone, or None (then
    the whole parser parses them, and reports any problem or prints any help)."""
    words = sys.argv[1:] if argv is None else list(argv)
    if any(w == "-h" or (len(w) > 2 and "--help".startswith(w)) for w in words):
        return None
    for i, word in enumerate(words):
        if word.startswith("-") or (i and words[i - 1] in ("--presets", "--extra")):
            continue
        if word not in FAST_COMMANDS:
            return None
        try:
            return make_parser(only=word).parse_args(words)
        except (UsageError, SystemExit):
            return None
    return None


def _fill_cache(args, why: str, err) -> None:
    """After a full run of a fast command: compile what the fast path lacked (never fails)."""
    try:
        from book.fast import note
        from book.fastcache import update

        line = note(why, update(args, sys.modules[__name__]))
        if line:
            err.write(f"note: {line}\n")
    except Exception:  # noqa: BLE001 - a cache that cannot be written only costs speed
        pass


def run() -> None:
    """Console-script entry point: the fast path unless CHALKBOARD_FAST=0."""
    code = main(fast=os.environ.get("CHALKBOARD_FAST", "1") != "0")
    if sys.stdout is not None:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):  # closed or broken stdout: the error line is written
            sys.stdout = None
    _exit(code)


def _exit(code: int) -> None:
    """End the process with ``code`` once the exit handlers ran, without Python's teardown.

    A build leaves a large heap (sympy's caches, every page's context); the interpreter frees it
    object by object on the way out, about a second of CPU, where the system frees it at once.
    Everything the CLI writes is closed by then (files are written whole and renamed into
    place), and the exit handlers (temporary folders, logging) still run. Under a profiler or a
    tracer (``python -m cProfile -m book.cli``, a debugger), which write their results when the
    program returns, it exits as Python does.
    """
    import atexit

    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):  # what an exit handler wrote
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    os._exit(code)


def _unit_words(s) -> str:
    """A symbol's unit in text output as a reader says it (JSON keeps pint's string)."""
    from book.format import unit

    return unit(s.display_unit) or "(pure number)"


if __name__ == "__main__":
    run()
