"""Compile the fast CLI's cache (read by ``book/fast.py``) from the full library.

:func:`build` writes one folder per cache key: ``core.json`` (symbols with their units, the
catalogue's equations, every preset-bound input as a decision tree over the chosen presets,
presets in base units, the unit table and the plans that print units), ``out/`` (the text of
``list`` and ``presets``, printed by the full commands themselves) and ``fn/`` (each compiled
function an evaluation ran, as data: ``units.light.expression_data``, never code; :func:`record`
adds them after a full run). ``core.json`` and each function are sealed with the user's HMAC key
(``units.diskcache.seal``; the outputs are checked against their hashes in ``core.json``), every
folder is made 0700 and every file 0600, and a cache root that is not the user's own or that
others can write is never written (``units.diskcache``). Every file is written to a temporary
name and renamed, so a reader sees a whole file or none; a cache folder that cannot be written
(a read-only home) is simply not written.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from argparse import Namespace
from pathlib import Path

from book.fast import FORMAT, function_key
from units import diskcache

KEEP_CACHES = 8  # older cache folders (of earlier sources or other preset files) are removed


def _write(path: Path, text: str, root: Path, key: bytes | None = None) -> None:
    """Write ``text`` to ``path`` atomically, mode 0600 (sealed with ``key`` when given, under
    the name ``<cache folder>/<path in it>`` that book.fast.read_sealed checks)."""
    data = text.encode("utf-8")
    if key is not None:
        folder = path.relative_to(root).parts[0]
        name = f"{folder}/{path.relative_to(root / folder).as_posix()}"
        data = diskcache.seal(key, name, data)
    diskcache.write_private(path, data, root)


# -- bindings as decision trees -------------------------------------------------------------


class _Need(Exception):
    def __init__(self, key):
        self.key = key


class _Special(Exception):
    def __init__(self, name):
        self.name = name


class _Deferred:
    def __init__(self, eq):
        self.eq = eq


class _Stub:
    """What a binding's ``read`` sees of a Resolver, with the chosen presets filled in on
    demand: asking for one not yet chosen raises _Need, so the caller branches on it."""

    def __init__(self, presets, assign, roles):
        self.presets, self.assign, self.roles = presets, assign, roles

    def _get(self, key):
        if key not in self.assign:
            raise _Need(key)
        value = self.assign[key]
        kind = "precision" if key in self.roles else key
        return None if value is None else self.presets.get(kind, value)

    def preset(self, kind):
        return self._get(kind)

    def precision_of(self, role):
        from derivations.inputs import PRECISION_ROLES

        return self._get(PRECISION_ROLES[role][0])

    @property
    def precision(self):
        return self._get("precision")

    @property
    def price(self):
        return self._get("rental")

    def value_of(self, eq):
        return _Deferred(eq)

    nested = value_of  # Resolver.nested: value_of, memoised

    def quantity(self, name):
        raise _Special(name)


def binding_tree(name, presets, assign=None) -> dict:
    """How ``BINDINGS[name]`` reads its value, for every choice of the presets it looks at."""
    from derivations.core import lookup_symbol
    from derivations.inputs import BINDINGS, PRECISION_KEYWORDS
    from units import Q_

    assign = assign or {}
    sym = lookup_symbol(name)
    try:
        found = BINDINGS[name].read(_Stub(presets, assign, PRECISION_KEYWORDS))
    except _Need as need:
        kind = "precision" if need.key in PRECISION_KEYWORDS else need.key
        options = ["", *presets.ids(kind)]
        return {
            "k": need.key,
            "b": {o: binding_tree(name, presets, {**assign, need.key: o or None}) for o in options},
        }
    except _Special as special:
        if name != "n_chips":
            return {"err": 1}
        inner = lookup_symbol(special.name)
        stub = _Stub(presets, assign, PRECISION_KEYWORDS)
        stub.quantity = lambda _: Q_(1.0, inner.base_unit)
        q, origin, source = BINDINGS[name].read(stub)
        return {
            "special": "ceil",
            "q": special.name,
            "f1": float(Q_(1.0, inner.base_unit).to("chip").magnitude),
            "f2": float(Q_(1.0, "chip").to(sym.base_unit).magnitude),
            "o": origin,
            "s": source,
        }
    except Exception:  # noqa: BLE001 - an error the full path reports
        return {"err": 1}
    if found is None:
        return {"none": 1}
    q, origin, source = found
    if isinstance(q, _Deferred):
        if q.eq.lhs.base_unit != sym.base_unit:
            return {"err": 1}
        return {"eval": q.eq.id, "o": origin, "s": source}
    try:
        return {"v": float(q.to(sym.base_unit).magnitude), "o": origin, "s": source}
    except Exception:  # noqa: BLE001
        return {"err": 1}


# -- units ----------------------------------------------------------------------------------


def unit_key(unit) -> str:
    """A unit's name in the cache: its units in their order (book.format reads them in order)."""
    return " ".join(f"{name}^{exp}" for name, exp in unit._units.items())


def unit_plan(unit) -> dict:
    """What book.fast.quantity_text needs to print a value in ``unit`` as book.format does."""
    from units import Q_, ureg
    from units import display as F

    one = Q_(1.0, unit)
    plain = F._plain(one)
    params = [part[1:3] for part in F._parts(plain.units)] == [("parameter", 1)]
    giga, tera = ureg.Unit("Gparameter"), ureg.Unit("Tparameter")
    return {
        "short": f"{unit:~}",
        "words": F.unit(unit),
        "word": F.unit(unit, singular=True),  # beside a 1: "1 token per sequence"
        "plain": None if plain is one else float(plain.magnitude),
        "count": F._is_count(plain.units),
        "texts": [F.unit(plain.units), F.unit(plain.units, singular=True)],
        # model sizes (display._model_size): in billions from 1e9 parameters, trillions from 1e12
        "per_param": float(Q_(1.0, plain.units).to("parameter").magnitude) if params else None,
        "giga": float(Q_(1.0, plain.units).to(giga).magnitude) if params else None,
        "gcount": F._is_count(giga),
        "gtexts": [F.unit(giga), F.unit(giga, singular=True)],
        "tera": float(Q_(1.0, plain.units).to(tera).magnitude) if params else None,
        "ttexts": [F.unit(tera), F.unit(tera, singular=True)],
    }


def _units(symbols, presets) -> dict:
    from units import Q_, parse_unit
    from units.light import dimension_key, unit_table
    from units.registry import _NUMBER

    texts = set()
    for s in symbols.values():
        texts |= {s.unit, s.display or s.unit, f"{s.display_unit:~}", f"{s.base_unit:~}"}
    for table in presets.by_kind.values():
        for p in table.values():
            for v in p.fields.values():
                if hasattr(v, "units"):
                    texts.add(f"{v.units:~}")
    table = unit_table(sorted(texts))
    plans, convert, to_display = {}, {}, {}
    units = {text: parse_unit(text) for text in table}
    for unit in units.values():
        plans.setdefault(unit_key(unit), unit_plan(unit))
    shown_units = {unit_key(s.display_unit): s.display_unit for s in symbols.values()}
    for key, shown in shown_units.items():
        plans.setdefault(key, unit_plan(shown))
        dim = dimension_key(shown)
        for text, unit in units.items():
            if table[text][1] != dim:
                continue
            to = convert.setdefault(key, {})
            to[text] = [float(Q_(1.0, shown).to(unit).magnitude), unit_key(unit)]
            to_display.setdefault(key, {})[text] = float(Q_(1.0, unit).to(shown).magnitude)
    return {
        "number": _NUMBER.pattern,
        "table": table,
        "plans": plans,
        "convert": convert,
        "to_display": to_display,
    }


def _symbols() -> dict:
    from derivations.core import SYMBOLS, Constant
    from units import Q_, ChalkboardError
    from units.light import dimension_key
    from units.registry import bare_unit

    out = {}
    for s in SYMBOLS.values():
        try:
            bare = bare_unit("1", s.unit, s.display or s.unit, s.name)
        except ChalkboardError:
            bare = None
        out[s.name] = {
            "dim": dimension_key(s.unit),
            "unit": s.unit,
            "example": s.display or s.unit,
            "disp": unit_key(s.display_unit),
            "disp_f": float(Q_(1.0, s.base_unit).to(s.display_unit).magnitude),
            "disp_to_base": float(Q_(1.0, s.display_unit).to_base_units().magnitude),
            "bare": None if bare is None else float(Q_(1.0, bare).to_base_units().magnitude),
            "bare_to_display": (
                None if bare is None else float(Q_(1.0, bare).to(s.display_unit).magnitude)
            ),
            # a count is swept in whole numbers of its own unit (derivations.spaced)
            "count_scale": (float(Q_(1, s.display_unit).to(s.unit).magnitude) if s.count else None),
            "constant": (
                [float(s.value.to(s.base_unit).magnitude), s.source]
                if isinstance(s, Constant)
                else None
            ),
        }
    return out


# -- the whole cache ------------------------------------------------------------------------


def _printed(command, **args) -> str:
    buffer = io.StringIO()
    command(Namespace(**args), buffer)
    return buffer.getvalue()


def _outputs(extra, cli) -> dict[str, str]:
    """The text of ``list`` and ``presets``, printed by the full commands of ``cli`` (the
    book.cli module, passed in: it imports this one): each equation and each kind of preset
    printed once, the longer outputs joined from those pieces (as the commands join them)."""
    from unittest import mock

    import derivations

    outs = {}
    texts, datas = {}, {}
    for eq in derivations.equations():  # cmd_list on one equation at a time
        with mock.patch.object(derivations, "equations", lambda chapter, eq=eq: [eq]):
            texts[eq.id] = _printed(cli.cmd_list, chapter=None, json=False)
            datas[eq.id] = json.loads(_printed(cli.cmd_list, chapter=None, json=True))[0]
    for chapter in [None, *(c.id for c in derivations.CHAPTERS)]:
        eqs = derivations.equations(chapter)
        outs[f"list-{chapter or ''}-text"] = "".join(texts[e.id] for e in eqs)
        outs[f"list-{chapter or ''}-json"] = cli._json([datas[e.id] for e in eqs])
    everything = {"text": "", "sources": "", "json": {}}
    for kind in cli.KIND_ALIASES:
        for what in ("text", "sources", "json"):
            printed = _printed(
                cli.cmd_presets,
                kind=kind,
                sources=what == "sources",
                json=what == "json",
                presets=list(extra),
            )
            outs[f"presets-{kind}-{what}"] = printed
            if what == "json":
                everything["json"].update(json.loads(printed))
            else:
                everything[what] += printed
    outs["presets--text"] = everything["text"]
    outs["presets--sources"] = everything["sources"]
    outs["presets--json"] = cli._json(everything["json"])
    return outs


def compile_core(extra, cli) -> tuple[dict, dict[str, str]]:
    """``core.json``'s content and the cached outputs, for the preset files ``extra`` adds."""
    import derivations
    from derivations.core import CATALOGUE, SYMBOLS, defining
    from derivations.inputs import (
        BINDINGS,
        CHOICE_KINDS,
        DEFAULT_CHOICES,
        PRECISION_KEYWORDS,
        check_model,
        check_parameters,
        reachable,
    )
    from units import ChalkboardError
    from units.presets import load

    presets = load(tuple(extra))
    check_parameters(presets)
    models_ok = {}
    for model in presets.by_kind["model"].values():
        try:
            check_model(model, presets)
            models_ok[model.id] = True
        except ChalkboardError:
            models_ok[model.id] = False
    parameters = {}
    for name, parameter in presets.by_kind["parameter"].items():
        sym = SYMBOLS.get(name)
        if sym is None:
            continue
        q = parameter.value
        ok = q.dimensionality == sym.dimensionality
        parameters[name] = (
            [float(q.to(sym.base_unit).magnitude), parameter.source_of("source")] if ok else None
        )
    equations = {}
    for eq in CATALOGUE.values():
        equations[eq.id] = {
            "lhs": eq.lhs.name,
            "rhs": str(eq.rhs),
            "inputs": [s.name for s in eq.inputs],
            "source": str(eq.source),
            "reachable": list(reachable(eq)),
            # an equation with an arbitrary function never gets a compiled function, so the
            # fast path never evaluates it (see Cache.function)
            "solved_from": eq.solved_from,
        }
    symbols = _symbols()
    core = {
        "format": FORMAT,
        "chapters": [c.id for c in derivations.CHAPTERS],
        "symbols": symbols,
        "equations": equations,
        "defining": {s: e.id for s in SYMBOLS if (e := defining(s)) is not None},
        "choices": {
            "kinds": [k for k in CHOICE_KINDS],
            "defaults": DEFAULT_CHOICES,
            "roles": list(PRECISION_KEYWORDS),
        },
        "presets": {
            "ids": {kind: presets.ids(kind) for kind in presets.by_kind},
            "models_ok": models_ok,
            "parameters": parameters,
        },
        "bindings": {name: binding_tree(name, presets) for name in BINDINGS},
        "units": _units(SYMBOLS, presets),
    }
    outputs = _outputs(extra, cli)
    core["outputs"] = {name: _digest(text) for name, text in outputs.items()}
    return core, outputs


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build(key: str, extra, cli, root: Path, secret: bytes) -> Path | None:
    """Write the cache folder for ``key`` in the checked ``root``, sealed with ``secret`` (None
    when it cannot be written). Presets that do not load make a folder marked broken, so later
    runs go straight to the full path."""
    from units import ChalkboardError

    folder = root / key
    try:
        core, outputs = compile_core(extra, cli)
    except ChalkboardError:
        core, outputs = {"format": FORMAT, "broken": True}, {}
    try:
        staging = Path(tempfile.mkdtemp(dir=root, prefix=".tmp-"))  # mode 0700
        try:
            for name, text in outputs.items():
                _write(staging / "out" / f"{name}.txt", text, staging)
            (staging / "fn").mkdir(mode=0o700)
            text = json.dumps(core, separators=(",", ":"))
            # sealed under its name in the final folder
            data = diskcache.seal(secret, f"{key}/core.json", text.encode("utf-8"))
            diskcache.write_private(staging / "core.json", data, staging)
            if os.path.lexists(folder):  # another process wrote it meanwhile: keep theirs
                shutil.rmtree(staging)
            else:
                os.rename(staging, folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _prune(root, keep=folder)
    except OSError:
        return None
    return folder


def _prune(root: Path, keep: Path) -> None:
    from units.diskcache import FOLDER  # the build's caches (units/diskcache.py) are not ours

    folders = [
        p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != FOLDER
    ]
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[KEEP_CACHES:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)
    for tmp in root.glob(".tmp-*"):  # left by a killed writer, if old
        try:
            import time

            if time.time() - tmp.stat().st_mtime > 3600:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass


def record(folder: Path, secret: bytes) -> int:
    """Add to the cache the compiled functions this process's evaluations ran (catalogued
    equations only), as data (units.light.expression_data), each sealed; a damaged entry is
    replaced. Returns how many were written."""
    import sys

    from units.light import NotData, expression_data

    inputs = sys.modules.get("derivations.inputs")
    if inputs is None:
        return 0
    from derivations.core import CATALOGUE

    root = folder.parent
    new = 0
    for (eq_id, keep, arrays), eq in list(inputs.EVALUATED.items()):
        if CATALOGUE.get(eq_id) is not eq:
            continue
        path = folder / "fn" / f"{function_key(eq_id, keep, None)}.json"
        if not _readable(folder, path, secret):
            try:
                names = [s.name for s in eq.arguments(keep)]
                _write(path, json.dumps({"id": eq_id, "args": names}), root, secret)
            except OSError:
                return new
            new += 1
        path = folder / "fn" / f"{function_key(eq_id, keep, arrays)}.json"
        if _readable(folder, path, secret):
            continue
        source, names = eq.compiled_source(keep, arrays)
        try:
            expr = expression_data(source)
        except NotData:
            expr = None  # the fast path hands this function to the full library
        entry = {
            "id": eq_id,
            "keep": sorted(keep),
            "arrays": sorted(arrays),
            "args": [s.name for s in eq.arguments(keep)],
            "expr": expr,
            "names": names,
            "pure": not arrays and eq.scalar(keep) is not None,
        }
        try:
            _write(path, json.dumps(entry), root, secret)
        except OSError:
            return new
        new += 1
    return new


def update(args, cli) -> bool:
    """After a full run of a fast command: build the cache when it is missing or damaged (the
    damaged folder is removed first) and record the compiled functions. Nothing is written in a
    cache root that is not the user's own (units.diskcache.trusted_root). True when anything
    was written."""
    from book.fast import Fallback, cache_key

    try:
        key = cache_key(args.presets)
    except Fallback:
        return False
    try:
        root = diskcache.trusted_root(create=True)
        secret = diskcache.user_key(root)
    except (diskcache.Untrusted, OSError):
        return False
    folder = root / key
    built = False
    if os.path.lexists(folder) and not _valid(folder, secret) and not _remove(folder):
        return False  # damaged, and it stays
    if not os.path.lexists(folder):
        if build(key, args.presets, cli, root, secret) is None:
            return False
        built = True
    return record(folder, secret) > 0 or built


def _remove(path: Path) -> bool:
    """Remove a damaged cache folder (or whatever is in its place); False when it stays."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError:
        return False
    return True


CORE_KEYS = ("chapters", "symbols", "equations", "defining", "choices", "presets", "bindings")


def _readable(folder: Path, path: Path, secret: bytes) -> bool:
    """A whole sealed entry of this user's at ``path``."""
    from book.fast import Damaged, read_sealed

    try:
        return isinstance(read_sealed(folder, path.relative_to(folder).as_posix(), secret), dict)
    except (OSError, Damaged):
        return False


def _valid(folder: Path, secret: bytes) -> bool:
    """A folder of the user's holding a whole sealed core.json of this format (a broken-presets
    marker counts) and whole outputs."""
    from book.fast import Cache, Damaged, Fallback

    try:
        diskcache.check_folder(folder)
        cache = Cache(folder, secret)
    except Damaged:
        return False
    except Fallback:  # the marker of presets that do not load
        return True
    except (OSError, diskcache.Untrusted):
        return False
    core = cache.core
    if not all(k in core for k in (*CORE_KEYS, "units", "outputs")):
        return False
    try:
        for name in core["outputs"]:
            cache.output(name)
    except (Fallback, OSError, ValueError):
        return False
    return True
