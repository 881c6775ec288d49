"""The fast CLI: ``eval``, ``list``, ``presets`` and ``sweep`` from a compiled cache, without
sympy, pint or numpy (``sweep`` imports numpy).

``book/fastcache.py`` compiles the catalogue once (each equation's numeric function as Python
source, each symbol's units and meaning, how every preset-bound input is read, the presets in
base units, the text of ``list`` and ``presets``) into a folder under the user's cache
(``$CHALKBOARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/chalkboard``, else ``~/.cache/chalkboard``),
named by a hash of every source it depends on: ``derivations/``, ``units/`` (definitions and
data), the preset files in use, these modules and the library versions. A command runs here
only when everything it needs is in that folder and every check passes; otherwise
:func:`run` returns None and the full library runs the command (and fills the cache), so both
give the same bytes: errors are always the full library's own.

>>> isinstance(cache_dir(), Path)
True
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import stat
import sys
from pathlib import Path

from units import diskcache
from units.diskcache import Untrusted, cache_dir  # the cache root the build's caches share

ROOT = Path(__file__).resolve().parents[1]
FORMAT = 3  # bump when the cache's layout changes
SOURCES = ("book/cli.py", "book/format.py", "book/fast.py", "book/fastcache.py")
MAX_FILE_BYTES = 1_000_000  # as units.presets.MAX_FILE_BYTES: a bigger file is the full path's
FAST_COMMANDS = ("eval", "list", "presets", "sweep")


class Fallback(Exception):
    """The fast path cannot answer this command; the full library will."""


class Damaged(Fallback):
    """A cache file that does not read back whole and sealed (the full run rewrites it)."""


def preset_files(extra) -> list[str]:
    """The preset files a command reads, in the order units.presets.load reads them."""
    data = ROOT / "units" / "data"
    builtin = sorted(str(p) for p in data.glob("*.toml"))
    env = os.environ.get("CHALKBOARD_PRESETS", "")
    users = [str(Path(p)) for p in env.split(os.pathsep) if p.strip()]
    return [*builtin, *users, *(str(Path(p)) for p in extra)]


def _versions() -> list[str]:
    """The numeric libraries' installed versions (their ``.dist-info`` folders on ``sys.path``),
    listed again only when ``sys.path`` or one of its folders changed (an install adds or removes
    a ``.dist-info`` folder, which changes its folder's modification time)."""
    stamp = []
    for entry in sys.path:
        try:
            info = os.stat(entry or ".")
        except OSError:
            continue
        stamp.append((entry, info.st_ino, info.st_mtime_ns, info.st_ctime_ns))
    stamp = tuple(stamp)
    if _VERSIONS.get("stamp") != stamp:
        _VERSIONS.update(stamp=stamp, names=_listed_versions())
    return list(_VERSIONS["names"])


_VERSIONS: dict = {}  # the last listing and the sys.path folders' stamp it was made under


def _listed_versions() -> list[str]:
    names = []
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        names += [
            n
            for n in listing
            if n.endswith(".dist-info") and n.startswith(("pint-", "sympy-", "numpy-"))
        ]
    return sorted(names)


def cache_key(extra=()) -> str:
    """A hash of everything a compiled cache depends on; Fallback when a preset file is not a
    regular file of at most 1 MB (the full path reports that)."""
    h = hashlib.sha256(f"{FORMAT} {sys.version} {_versions()}".encode())
    files = [ROOT / s for s in SOURCES] + [ROOT / "units" / "definitions.txt"]
    for folder in ("derivations", "units"):
        files += sorted((ROOT / folder).glob("*.py"))
    for path in files:
        h.update(f"\0{path.relative_to(ROOT)}\0".encode())
        h.update(_source_digest(path))
    for name in preset_files(extra):
        try:
            info = os.stat(name)
        except OSError:
            raise Fallback(f"cannot read {name}") from None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            raise Fallback(f"{name} is not a small regular file")
        h.update(f"\0{name}\0".encode("utf-8", "surrogateescape"))
        with open(name, "rb") as f:
            h.update(f.read(MAX_FILE_BYTES + 1))
    return h.hexdigest()[:32]


_SOURCE_DIGESTS: dict = {}  # path -> (its stat stamp, the SHA-256 of its bytes)


def _source_digest(path: Path) -> bytes:
    """The SHA-256 of one of the project's own sources, hashed again only when the file's
    identity, size or times changed (a process that answers many commands, a test session's,
    asks for the key each time; a user's preset files are hashed every time, as read)."""
    info = os.stat(path)
    stamp = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    known = _SOURCE_DIGESTS.get(path)
    if known is None or known[0] != stamp:
        known = _SOURCE_DIGESTS[path] = (stamp, hashlib.sha256(path.read_bytes()).digest())
    return known[1]


# -- the cache ------------------------------------------------------------------------------


def read_sealed(folder: Path, relative: str, key: bytes):
    """The JSON of a sealed file of a cache folder (units.diskcache.seal, under the name
    ``<folder name>/<relative>``); FileNotFoundError when absent, Damaged when it is anything
    but a regular file of the user's carrying the user's seal."""
    try:
        blob = diskcache.read_private(folder / relative)
        return _unsealed_json(key, f"{folder.name}/{relative}", blob)
    except (diskcache.Damaged, ValueError, RecursionError) as e:
        raise Damaged(
            f"{relative}: {e}" if isinstance(e, diskcache.Damaged) else relative
        ) from None


@functools.lru_cache(maxsize=256)
def _unsealed_json(key: bytes, name: str, blob: bytes):
    """The JSON sealed in ``blob`` under ``name``: a function of those bytes alone, so a file
    read again unchanged is not checked and decoded again (a test session answers thousands of
    commands in one process). Its callers only read what it returns."""
    return json.loads(diskcache.unseal(key, name, blob))


class Cache:
    """One compiled cache folder: ``core.json``, ``out/`` (list and presets text) and ``fn/``
    (one compiled function per file, added as evaluations need them); ``key`` is the user's
    (units.diskcache.user_key) that seals each file."""

    def __init__(self, folder: Path, key: bytes):
        self.folder, self.key = folder, key
        core = read_sealed(folder, "core.json", key)
        if not isinstance(core, dict) or core.get("format") != FORMAT:
            raise Damaged("core.json has another format")
        if core.get("broken") is True:
            raise Fallback("the presets do not load; the full path reports why")
        self.core = core
        self._functions: dict = {}

    def output(self, name: str) -> str:
        """A cached command output, checked against its hash in core.json."""
        path = self.folder / "out" / f"{name}.txt"
        try:
            text = diskcache.read_private(path).decode("utf-8")
        except (OSError, ValueError, diskcache.Damaged):
            raise Damaged(f"no cached output {name}") from None
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != self.core["outputs"].get(name):
            raise Damaged(f"the cached output {name} is damaged")
        return text

    def _entry(self, key: str, eq_id: str) -> dict:
        try:
            entry = read_sealed(self.folder, f"fn/{key}.json", self.key)
        except FileNotFoundError:
            raise Fallback(f"{eq_id} is not compiled yet") from None
        if not isinstance(entry, dict):
            raise Damaged(f"the compiled {eq_id} is damaged")
        return entry

    def arguments(self, eq_id: str, keep: frozenset) -> list[str]:
        """The argument names of the equation's compiled functions, for these overrides."""
        key = function_key(eq_id, keep, None)
        if key not in self._functions:
            entry = self._entry(key, eq_id)
            if entry.get("id") != eq_id:
                raise Fallback("a cache entry does not match its name")
            self._functions[key] = entry["args"]
        return self._functions[key]

    def function(self, eq_id: str, keep: frozenset, arrays: frozenset):
        """``(argument names, function)`` compiled for these overrides and swept inputs."""
        key = function_key(eq_id, keep, arrays)
        if key not in self._functions:
            entry = self._entry(key, eq_id)
            if entry.get("id") != eq_id:
                raise Fallback("a cache entry does not match its name")
            from units.light import NotData, array_function, scalar_function

            if entry.get("expr") is None:
                raise Fallback(f"{eq_id} is more than arithmetic")
            try:
                if arrays:
                    if entry.get("names") is None:
                        raise Fallback(f"{eq_id} needs names the fast path cannot bind")
                    fn = array_function(entry["expr"], entry["names"])
                else:
                    if not entry.get("pure"):
                        raise Fallback(f"{eq_id} has no float function")
                    fn = scalar_function(entry["expr"])
            except NotData as e:
                raise Damaged(f"the compiled {eq_id}: {e}") from None
            self._functions[key] = (entry["args"], fn)
        return self._functions[key]


def function_key(eq_id: str, keep, arrays) -> str:
    """The file name of a compiled function; ``arrays`` None names its argument list."""
    swept = "(arguments)" if arrays is None else ",".join(sorted(arrays))
    text = f"{eq_id}|{','.join(sorted(keep))}|{swept}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def open_cache(extra) -> tuple[Cache | None, str, str]:
    """``(cache, key, why)``: the cache for these preset files, or None and why not ("missing",
    or "damaged: what"). Untrusted when the cache root or its folder for this key is not the
    user's own or others can write it (units.diskcache.check_folder): then nothing is read; a
    folder in it that fails the same check is damage."""
    key = cache_key(extra)
    root = cache_dir()
    try:
        diskcache.check_folder(root)
    except OSError:
        return None, key, "missing"
    folder = root / key
    try:
        diskcache.check_folder(folder)
    except FileNotFoundError:
        return None, key, "missing"
    except OSError as e:
        return None, key, f"damaged: {folder.name} ({e.strerror})"
    except Untrusted as e:  # in the user's own root: damage, not read, and replaced
        return None, key, f"damaged: {e}"
    try:
        secret = diskcache.user_key(root, create=False)
    except OSError:
        return None, key, f"damaged: no usable {diskcache.KEY_FILE}"
    try:
        return Cache(folder, secret), key, ""
    except FileNotFoundError:
        return None, key, "damaged: core.json is missing"
    except Damaged as e:
        return None, key, f"damaged: {e}"


# -- evaluation -----------------------------------------------------------------------------


class Evaluation:
    """The fast twin of derivations.inputs.Resolver: the same order of lookups and the same
    floats, from the cache. Anything it cannot settle raises Fallback."""

    def __init__(self, cache: Cache, root: str, choices: dict, overrides: dict, numpy=None):
        core = cache.core
        self.cache, self.core, self.np = cache, core, numpy
        eq = core["equations"].get(root)
        if eq is None or eq["solved_from"]:
            raise Fallback(f"{root} is not a catalogued equation the fast path evaluates")
        self.root, self.eq = root, eq
        ids = core["presets"]["ids"]
        chosen = {}
        for kind in core["choices"]["kinds"]:
            value = choices.get(kind)
            if value is not None and value not in ids[kind]:
                raise Fallback(f"unknown {kind} preset")
            chosen[kind] = value
        model = chosen.get("model")
        if model is not None and not core["presets"]["models_ok"].get(model):
            raise Fallback("the model's stated counts do not check")
        for kind, default in core["choices"]["defaults"].items():
            if chosen[kind] is None and default in ids[kind]:
                chosen[kind] = default
        for keyword in core["choices"]["roles"]:
            value = choices.get(keyword)
            if value is None:
                chosen[keyword] = chosen["precision"]
            elif value in ids["precision"]:
                chosen[keyword] = value
            else:
                raise Fallback("unknown precision")
        allowed = set(eq["reachable"])
        for name in overrides:
            if name not in allowed:
                raise Fallback(f"{name} is not an input of {root}")
        self.chosen = chosen
        self.overrides = overrides
        self.keep = frozenset(n for n in overrides if n in core["defining"])
        self.used: dict[str, tuple] = {}
        self.values: dict[str, object] = {}
        self.stack: list[str] = []

    def value_of(self, eq_id: str):
        """The equation's value in base units (a float, or an array in a sweep)."""
        lhs = self.core["equations"][eq_id]["lhs"]
        args = self.cache.arguments(eq_id, self.keep)
        self.stack.append(lhs)
        try:
            mags = [self.quantity(name) for name in args]
        finally:
            self.stack.pop()
        if self.np is None:
            _, fn = self.cache.function(eq_id, self.keep, frozenset())
            try:
                out = fn(*mags)
            except (ArithmeticError, ValueError):
                raise Fallback("out of range for floats") from None
            if type(out) is not float:
                raise Fallback("not a float")
            return out
        np = self.np
        mags = [np.asarray(m, dtype=float) for m in mags]
        mags = [m if m.ndim else m[()] for m in mags]
        arrays = frozenset(a for a, m in zip(args, mags, strict=True) if np.ndim(m))
        if not arrays:
            _, fn = self.cache.function(eq_id, self.keep, frozenset())
            try:
                out = fn(*(float(m) for m in mags))
            except (ArithmeticError, ValueError):
                raise Fallback("out of range for floats") from None
            if type(out) is not float:
                raise Fallback("not a float")
            return out
        _, fn = self.cache.function(eq_id, self.keep, arrays)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(*mags)

    def record_intermediates(self) -> None:
        defining = self.core["defining"]
        equations = self.core["equations"]
        self.stack.append(self.eq["lhs"])
        todo = list(self.eq["inputs"])
        while todo:
            name = todo.pop(0)
            inner = defining.get(name)
            if inner is None or name in self.keep or name in self.stack:
                continue
            self.quantity(name)
            todo += equations[inner]["inputs"]
        self.stack.pop()

    def quantity(self, name: str):
        if name in self.values:
            return self.values[name]
        core = self.core
        sym = core["symbols"].get(name)
        if sym is None:
            raise Fallback(f"unknown symbol {name}")
        inner = core["defining"].get(name)
        parameter = core["presets"]["parameters"].get(name, False)
        found = None
        if name in self.overrides:
            found = (self.overrides[name], "given", "")
        elif sym["constant"] is not None:
            found = (sym["constant"][0], "constant", sym["constant"][1])
        elif inner is not None and name not in self.stack and inner != self.root:
            eq = core["equations"][inner]
            found = (self.value_of(inner), f"equation {inner}", eq["source"])
        if found is None and name in core["bindings"]:
            found = self.binding(name, core["bindings"][name])
        if found is None and parameter is not False:
            if parameter is None:
                raise Fallback(f"parameter {name} does not have its symbol's dimension")
            found = (parameter[0], f"parameter {name} (default)", parameter[1])
        if found is None:
            raise Fallback(f"missing input {name}")
        q, origin, source = found
        self.values[name] = q
        self.used[name] = (q, origin, source)
        return q

    def binding(self, name: str, node: dict):
        while "k" in node:
            node = node["b"].get(self.chosen.get(node["k"]) or "")
            if node is None:
                raise Fallback(f"no cached reading of {name} for these presets")
        if "none" in node:
            return None
        if "v" in node:
            return node["v"], node["o"], node["s"]
        if "eval" in node:
            return self.value_of(node["eval"]), node["o"], node["s"]
        if node.get("special") == "ceil":  # n_chips: the fewest whole chips (inputs._n_chips)
            fit = self.quantity(node["q"])
            if self.np is not None and self.np.ndim(fit):
                whole = self.np.ceil(self.np.asarray(fit * node["f1"], dtype=float))
            else:
                try:
                    whole = float(math.ceil(fit * node["f1"]))
                except (OverflowError, ValueError):
                    raise Fallback("out of range") from None
            return whole * node["f2"], node["o"], node["s"]
        raise Fallback(f"{name} cannot be read on the fast path")


# -- reading numbers ------------------------------------------------------------------------


def read_value(core: dict, name: str, text: str, what: str) -> tuple[float, float]:
    """``(magnitude, base magnitude)`` of a value typed for symbol ``name``, by the same rule
    as units.registry.parse_quantity; a unit the table does not know is read by pint."""
    from units.light import read_number

    sym = core["symbols"][name]
    got = read_number(text, core["units"]["table"], core["units"]["number"])
    if got is not None and got[1] is None:  # a bare number
        if sym["bare"] is None:
            raise Fallback("a bare number needs a unit here")
        magnitude, factor = got[0], sym["bare"]
    elif got is not None:
        magnitude, factor, dim, _ = got
        if dim != sym["dim"]:
            raise Fallback("wrong dimension")
    else:  # a unit the table does not know: pint reads it, as the full path does
        from units.registry import parse_quantity

        try:
            q = parse_quantity(text, expect=sym["unit"], what=what, example=sym["example"])
            base = float(q.to_base_units().magnitude)
            magnitude = float(q.magnitude)
        except Exception:  # noqa: BLE001 - the full path reports it
            raise Fallback("pint does not read it") from None
        if not (math.isfinite(base) and base > 0 and math.isfinite(magnitude) and magnitude > 0):
            raise Fallback("out of range")
        return magnitude, base
    if not (math.isfinite(magnitude) and magnitude > 0):
        raise Fallback("not a finite positive number")
    base = magnitude * factor
    if not (math.isfinite(base) and base > 0):
        raise Fallback("out of range in base units")
    return magnitude, base


def overrides(core: dict, pairs: list[str]) -> dict[str, float]:
    """``--set`` pairs in base units (book.cli._overrides, then Resolver.make's parse)."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value or name in out or name not in core["symbols"]:
            raise Fallback("--set")
        out[name] = read_value(core, name, value, f"--set {name}")[1]
    return out


# -- showing results ------------------------------------------------------------------------


def quantity_text(mag: float, plan: dict) -> str:
    """book.format.quantity of ``mag`` in the unit ``plan`` describes (fastcache.unit_plan)."""
    from book.format import WHOLE_FROM, number

    if plan["plain"] is not None:
        mag = mag * plan["plain"]
    count, texts = plan["count"], plan["texts"]
    size = abs(mag * plan["per_param"]) if plan["giga"] is not None else 0.0
    if size >= 1e12:
        mag, count, texts = mag * plan["tera"], plan["gcount"], plan["ttexts"]
    elif size >= 1e9:
        mag, count, texts = mag * plan["giga"], plan["gcount"], plan["gtexts"]
    magnitude = float(mag)
    if count and math.isfinite(magnitude) and WHOLE_FROM <= abs(magnitude) < 1e6:
        magnitude = float(round(magnitude))
    value = number(magnitude, 4)
    text = texts[1] if value in ("1", "-1") else texts[0]
    return f"{value} {text}" if text else value


def _dumps(data, indent=2) -> str:
    try:
        return json.dumps(data, indent=indent, allow_nan=False) + "\n"
    except ValueError:
        raise Fallback("not finite") from None


def _choices(args) -> dict:
    return {
        "hardware": args.hardware,
        "model": args.model,
        "precision": args.precision,
        "rental": args.price,
        "api": args.api,
        "tier": args.tier,
        "fit": args.fit,
        "weight_precision": args.weight_precision,
        "kv_precision": args.kv_precision,
        "compute_precision": args.compute_precision,
    }


def _precisions_known(core, args) -> None:
    known = core["presets"]["ids"]["precision"]
    for name in ("precision", "weight_precision", "kv_precision", "compute_precision"):
        value = getattr(args, name)
        if value is not None and value not in known:
            raise Fallback("unknown precision")


def _target(core: dict, display: str, text: str) -> tuple[float, dict]:
    """``--unit``: the factor from the display unit and the target's plan (same dimension)."""
    pair = core["units"]["convert"].get(display, {}).get(text)
    if pair is None:
        raise Fallback("--unit not in the table")
    return pair[0], core["units"]["plans"][pair[1]]


def fast_eval(cache: Cache, args) -> str:
    core = cache.core
    _precisions_known(core, args)
    given = overrides(core, args.set)
    ev = Evaluation(cache, args.id, _choices(args), given)
    out = ev.value_of(args.id)
    if not (math.isfinite(out) and out > 0):
        raise Fallback("the result is not finite and positive")
    lhs = ev.eq["lhs"]
    sym = core["symbols"][lhs]
    value = out * sym["disp_f"]
    plan = core["units"]["plans"][sym["disp"]]
    ev.record_intermediates()
    if args.unit:
        factor, plan = _target(core, sym["disp"], args.unit)
        converted = value * factor
        if not math.isfinite(converted) or (converted == 0 and value != 0):
            raise Fallback("--unit out of range")
        value = converted
    equation = f"{lhs} = {ev.eq['rhs']}"
    shown = []
    for name, (q, origin, source) in ev.used.items():
        s = core["symbols"][name]
        shown.append((name, q * s["disp_f"], s, origin, source))
    if args.json:
        data = {
            "id": args.id,
            "symbol": lhs,
            "value": float(value),
            "unit": plan["short"],
            "equation": equation,
            "inputs": {
                name: {
                    "value": float(v),
                    "unit": core["units"]["plans"][s["disp"]]["short"],
                    "from": origin,
                    "source": source,
                }
                for name, v, s, origin, source in shown
            },
        }
        return _dumps(data)
    from book.format import number

    if args.unit and plan["plain"] is not None:  # a unit prose would not say: kept (cli._shown)
        result = f"{number(float(value), 4)} {plan['short']}"
    else:
        result = quantity_text(value, plan)
    lines = [f"{lhs} = {result}\n", f"    {equation}\n"]
    for name, v, s, origin, _ in shown:
        magnitude, plan = number(v), core["units"]["plans"][s["disp"]]
        words = plan["word"] if magnitude in ("1", "-1") else plan["words"]
        lines.append(f"    {name:<22} {magnitude:>12} {words:<18} {origin}\n")
    return "".join(lines)


def fast_list(cache: Cache, args) -> str:
    chapters = cache.core["chapters"]
    if args.chapter is not None and args.chapter not in chapters:
        raise Fallback("unknown chapter")
    name = f"list-{args.chapter or ''}-{'json' if args.json else 'text'}"
    return cache.output(name)


def fast_presets(cache: Cache, args) -> str:
    kind = args.kind or ""
    what = "json" if args.json else ("sources" if args.sources else "text")
    return cache.output(f"presets-{kind}-{what}")


MAX_SWEEP_POINTS = 1_000_000


HELD_CHIPS = (
    "n_chips is held at the fewest chips that fit the sweep's largest point, the same at every "
    "point; --set n_chips to choose it, --chips-per-point to let it follow each point"
)


def same_values(a, b) -> bool:
    """Two sweeps' values equal to rounding (both paths' test of whether a held chip count
    changed anything)."""
    import numpy as np

    return bool(np.allclose(a, b, rtol=1e-12, atol=0))


def fast_sweep(cache: Cache, args) -> str:
    import csv
    import io

    import numpy as np

    core = cache.core
    if len(args.over) > 2:
        raise Fallback("--over")
    ranges = []
    for spec in args.over:
        name, sep, rest = spec.partition("=")
        parts = rest.split(":")
        name = name.strip()
        if not sep or len(parts) != 3 or name not in core["symbols"]:
            raise Fallback("--over")
        sym = core["symbols"][name]
        ends = []
        for p in parts[:2]:
            ends.append(read_value(core, name, p, f"--over {name}"))  # checks as _range does
        count = parts[2].strip()
        if not (count.isascii() and count.isdigit() and len(count) <= 7):
            raise Fallback("--over N")
        if not 2 <= int(count) <= 1_000_000:
            raise Fallback("--over N")
        start, stop = (_to_display(core, name, p) for p in parts[:2])
        ranges.append((name, sym, start, stop, int(count)))
    if len(ranges) == 2 and ranges[0][0] == ranges[1][0]:
        raise Fallback("twice")
    points = 1
    for *_, count in ranges:
        points *= count
    if points > MAX_SWEEP_POINTS:
        raise Fallback("too many points")
    space = np.geomspace if args.log else np.linspace

    def spaced(sym, a, b, n):
        """As derivations.spaced: a count in whole numbers of its unit, repeats dropped."""
        values = space(a, b, n)
        scale = sym["count_scale"]
        if scale is not None:
            whole = np.maximum(np.rint(values * scale), 1)
            _, first = np.unique(whole, return_index=True)
            values = whole[np.sort(first)] / scale
        return values

    axes = [(name, sym, spaced(sym, a, b, n)) for name, sym, a, b, n in ranges]
    grids = np.meshgrid(*(values for *_, values in axes), indexing="ij")
    _precisions_known(core, args)
    given = overrides(core, args.set)
    for name, *_ in axes:
        if name in given:
            raise Fallback("swept and set")
    swept = {}
    for (name, sym, _), g in zip(axes, grids, strict=True):
        mags = np.asarray(g.ravel(), dtype=float)
        with np.errstate(all="ignore"):
            base = mags * sym["disp_to_base"]
        if not (np.all(np.isfinite(mags)) and np.all(mags > 0)):
            raise Fallback("range")
        if not (np.all(np.isfinite(base)) and np.all(base > 0)):
            raise Fallback("range")
        swept[name] = base
    ev = Evaluation(cache, args.id, _choices(args), {**given, **swept}, numpy=np)
    out = np.asarray(ev.value_of(args.id), dtype=float)
    chips = ev.used.get("n_chips")
    held = None
    if chips and chips[1].startswith("fewest") and not args.chips_per_point:
        held = float(np.max(chips[0]))  # as book.cli._held_chips: chips are a base unit
        ev_held = Evaluation(
            cache, args.id, _choices(args), {**given, **swept, "n_chips": held}, np
        )
        at_held = np.asarray(ev_held.value_of(args.id), dtype=float)
        if same_values(at_held, out):
            held = None  # the chip count changed nothing (it was the same, or it cancels)
        else:
            ev, out = ev_held, at_held
    if not (np.all(np.isfinite(out)) and np.all(out > 0)):
        raise Fallback("a result is not finite and positive")
    lhs = ev.eq["lhs"]
    sym = core["symbols"][lhs]
    value = out * sym["disp_f"] if out.ndim else float(out) * sym["disp_f"]
    plan = core["units"]["plans"][sym["disp"]]
    if args.unit:
        factor, plan = _target(core, sym["disp"], args.unit)
        with np.errstate(all="ignore"):
            converted = value * factor
        mags = np.asarray(converted, dtype=float)
        if not np.all(np.isfinite(mags)) or np.any((mags == 0) & (np.asarray(value) != 0)):
            raise Fallback("--unit out of range")
        value = converted
    mags = np.broadcast_to(value, grids[0].ravel().shape)
    columns = [
        (name, core["units"]["plans"][sym["disp"]]["short"], g.ravel())
        for (name, sym, _), g in zip(axes, grids, strict=True)
    ]
    if held is not None:
        columns.append(("n_chips", "chip", np.full(len(mags), held)))
    columns.append((lhs, plan["short"], mags))
    if args.json:
        data = {
            "id": args.id,
            "columns": [{"name": n, "unit": u} for n, u, _ in columns],
            "rows": [[float(c[2][i]) for c in columns] for i in range(len(mags))],
        }
        if held is not None:
            data["note"] = HELD_CHIPS
        return _dumps(data, None)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([f"{n} [{u}]" for n, u, _ in columns])
    for i in range(len(mags)):
        writer.writerow([repr(float(c[2][i])) for c in columns])
    return buffer.getvalue()


def _to_display(core: dict, name: str, text: str) -> float:
    """START or STOP of ``--over`` in the symbol's display unit, as pint converts it."""
    from units.light import read_number

    sym = core["symbols"][name]
    got = read_number(text, core["units"]["table"], core["units"]["number"])
    if got is None:
        raise Fallback("unit not in the table")
    magnitude, factor, _, unit_text = got
    if factor is None:
        return magnitude * sym["bare_to_display"]
    pair = core["units"]["to_display"].get(sym["disp"], {}).get(unit_text)
    if pair is None:
        raise Fallback("no display factor for that unit")
    return magnitude * pair


COMMANDS = {"eval": fast_eval, "list": fast_list, "presets": fast_presets, "sweep": fast_sweep}


def run(args) -> tuple[str | None, str]:
    """``(stdout text, "")`` when the fast path answers, else ``(None, why)``: why is
    "missing", "stale", "damaged: what" or "untrusted: why" when the cache is, "" when the
    command is simply not one the fast path answers (an error, an unusual input, a function not
    compiled yet). :func:`note` turns it into the line the CLI prints."""
    try:
        cache, _, why = open_cache(args.presets)
        if cache is None:
            stale = why == "missing" and any(cache_dir().glob("*/core.json"))
            return None, "stale" if stale else why
        return COMMANDS[args.command](cache, args), ""
    except Untrusted as e:
        diskcache.NOTED.add(diskcache.untrusted_note(str(e)))  # said once, by the CLI
        return None, f"untrusted: {e}"
    except Damaged as e:
        return None, f"damaged: {e}"
    except Fallback:
        return None, ""
    except Exception as e:  # noqa: BLE001 - damaged data: the full path answers (and reports)
        return None, f"damaged: {type(e).__name__}"


def note(why: str, written: bool) -> str | None:
    """The one ``note:`` line (without ``note: ``) after a full run that :func:`run` handed on
    with ``why``, when the cache was ``written``: always for an untrusted cache (it is never
    written), and for a missing, stale or damaged one when it was compiled again.

    >>> note("damaged: core.json", True)
    'the fast-start cache was damaged (core.json); this run used the full library and \
compiled it again'
    >>> note("missing", False) is None
    True
    """
    kind, _, detail = why.partition(": ")
    if kind == "untrusted":
        return diskcache.untrusted_note(detail)
    if not kind or not written:
        return None
    if kind == "damaged":
        return (
            f"the fast-start cache was damaged ({detail}); this run used the full library and "
            "compiled it again"
        )
    return f"the fast-start cache was {kind}; this run used the full library and compiled it"
