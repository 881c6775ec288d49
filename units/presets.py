"""Sourced presets: hardware, models, precisions, prices and named parameters, read from TOML.

Every figure is a string with its unit ("3.35 TB/s"), checked against the dimension its field
expects, positive and finite, and carries a source. The built-in files live in ``units/data``;
users add their own files (same format) through ``load(extra=[path])`` or the environment
variable ``CHALKBOARD_PRESETS`` (paths separated by ``os.pathsep``), validated the same way.
A figure published for a group of chips is written as ``{ total = "1.1 EFLOP/s", chips = 72 }``
and stored per chip, its source saying so.
In a file with a ``[sources]`` table, ``source`` lists its keys (a typo is an error); in a file
without one, ``source`` is the citation itself.

>>> p = load()
>>> p.get("hardware", "h100_sxm").hbm_bandwidth
<Quantity(3.35, 'terabyte / second')>
>>> p.get("hardware", "h100").name
Traceback (most recent call last):
...
units.errors.ChalkboardError: unknown hardware preset 'h100' (did you mean 'h100_sxm' or ...?)
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

import pint

from units import reads
from units.errors import ChalkboardError, closest
from units.registry import parse_quantity

DATA = Path(__file__).with_name("data")
BUILTIN_FILES = tuple(sorted(DATA.glob("*.toml")))

# Measurement rows (kind "measurement"): a published figure of a real system, with the chip,
# model and precision presets it ran on. Scenario words, the features that can make a
# measurement beat a roofline bound, and the suffixes of a plausible range for an assumed input.
SCENARIOS = (
    "offline",
    "server",
    "interactive",
    "decode_only",
    "single_stream",
    "latency_sweep",
    "training",
)
FEATURES = ("mtp", "prefix_cache", "disaggregated", "interpolated", "open_division", "saturated")
# the serving engine (or training framework) a measurement ran on, as its source names it
ENGINES = (
    "tensorrt_llm",
    "vllm",
    "sglang",
    "jetstream",
    "nemo",
    "maxtext",
    "in_house",
    "unknown",
)
RANGE = ("", "_low", "_high")
MEASURED = ("throughput_per_chip", "per_user_rate", "mfu")

# Field schemas per kind: a unit string (a quantity of that dimension), int (a positive whole
# number), bool (true or false), str (free text) or a tuple of allowed words. Required fields are
# listed separately. A model may omit params_total and params_active: they are then counted from
# its architecture (derivations' params_total and params_active equations), which must be
# complete (``architecture_gaps``); stated counts are cross-checked against that count.
_COMMON = {"name": str, "source": str, "note": str, "as_of": str}
SCHEMAS: dict[str, dict[str, object]] = {
    "hardware": {
        "hbm_capacity": "byte",
        "hbm_bandwidth": "byte/s",
        "dense_flops_*": "FLOP/s",
        "scale_up_domain": "chip",
        "scale_up_topology": ("switch", "torus"),
        "scale_up_bandwidth_per_direction": "byte/s",
        "scale_out_bandwidth_per_direction": "byte/s",
    },
    "model": {
        "attention": ("gqa", "mla"),
        **dict.fromkeys(
            [
                "layers",
                "d_model",
                "n_heads",
                "n_kv_heads",
                "head_dim",
                "kv_lora_rank",
                "qk_rope_head_dim",
                "qk_nope_head_dim",
                "v_head_dim",
                "q_lora_rank",
                "d_ff",
                "d_ff_expert",
                "experts_routed",
                "experts_active",
                "experts_shared",
                "dense_layers",
                "vocab",
                "sliding_window_layers",
                "embeddings_active",
            ],
            int,
        ),
        "params_total": "parameter",
        "params_active": "parameter",
        "params_tolerance": "dimensionless",
        "tied_embeddings": bool,
        "sliding_window": "token",
        "training_tokens": "token",
    },
    "precision": {"bytes_per_value": "byte/value", "flops_precision": str},
    "rental": {"price": "USD/chip/hour"},
    "api": dict.fromkeys(
        ["input", "output", "cache_write_5min", "cache_write_1h", "cache_read"], "USD/token"
    ),
    "tier": {
        "medium": str,
        "capacity": "byte",
        "bandwidth": "byte/s",
        "price": "USD/byte/hour",
    },
    "fit": dict.fromkeys(
        [
            "loss_irreducible",
            "loss_param_coeff",
            "loss_data_coeff",
            "loss_param_exponent",
            "loss_data_exponent",
        ],
        "dimensionless",
    ),
    "parameter": {"value": None},
    "measurement": {
        **dict.fromkeys(["system", "hardware", "model", "weights", "activations", "kv"], str),
        **dict.fromkeys(["features", "assumed", "date"], str),
        "scenario": SCENARIOS,
        "engine": ENGINES,
        "chips": int,
        "chips_per_replica": int,
        **dict.fromkeys(
            [f"{f}{s}" for f in ("input_tokens", "output_tokens", "context") for s in RANGE],
            "token",
        ),
        **dict.fromkeys([f"concurrency{s}" for s in RANGE], "sequence"),
        "throughput_per_chip": "token/s",
        "per_user_rate": "token/s",
        "tpot": "s",
        "ttft": "s",
        **dict.fromkeys(["mfu", "mfu_low", "mfu_high"], "dimensionless"),  # a stated range
        "draft_tokens": "token",
        "accepted_tokens": "token",
    },
}
REQUIRED = {
    "hardware": ("name", "source", "hbm_capacity", "hbm_bandwidth"),
    "model": (
        "name",
        "source",
        "layers",
        "d_model",
        "n_heads",
        "attention",
        "vocab",
    ),
    "precision": ("name", "source", "bytes_per_value"),
    "rental": ("name", "source", "as_of", "price"),
    "api": ("name", "source", "as_of", "input", "output"),
    "tier": ("name", "source", "medium", "capacity", "bandwidth"),
    "fit": (
        "name",
        "source",
        "loss_irreducible",
        "loss_param_coeff",
        "loss_data_coeff",
        "loss_param_exponent",
        "loss_data_exponent",
    ),
    "parameter": ("name", "source", "value"),
    "measurement": ("name", "source", "system", "hardware", "chips", "model", "scenario"),
}
KINDS = tuple(SCHEMAS)
_ID = re.compile(r"^[a-z][a-z0-9_]*$")


class Fields(Mapping):
    """A preset's fields (or the sources of its fields, under ``prefix`` "source:") by name,
    read-only; each read is noted for ``chalkboard serve`` (:mod:`units.reads`) as
    ``(kind, id, name)``, listing the names as ``(kind, id, ALL)``."""

    __slots__ = ("_at", "_prefix", "_table")

    def __init__(self, kind: str, preset_id: str, table: dict, prefix: str = ""):
        self._at, self._prefix, self._table = (kind, preset_id), prefix, table

    def _note(self, name) -> None:
        reads.note(*self._at, f"{self._prefix}{name}")

    def __getitem__(self, name):
        if reads._FRAMES:
            self._note(name)
        return self._table[name]

    def get(self, name, default=None):
        if reads._FRAMES:
            self._note(name)
        return self._table.get(name, default)

    def __contains__(self, name) -> bool:
        if reads._FRAMES:
            self._note(name)
        return name in self._table

    def __iter__(self):
        if reads._FRAMES:
            self._note(reads.ALL)
        return iter(self._table)

    def __len__(self) -> int:
        if reads._FRAMES:
            self._note(reads.ALL)
        return len(self._table)

    def keys(self):
        if reads._FRAMES:
            self._note(reads.ALL)
        return self._table.keys()

    def values(self):
        if reads._FRAMES:
            self._every()
        return self._table.values()

    def items(self):
        if reads._FRAMES:
            self._every()
        return self._table.items()

    def _every(self) -> None:
        self._note(reads.ALL)
        for name in self._table:
            self._note(name)

    def __repr__(self) -> str:
        return repr(self._table)


@dataclass(frozen=True)
class Preset:
    """One preset: its fields (Quantities, whole numbers or text) and the source of each.

    Fields read as attributes: ``preset.hbm_bandwidth``; ``preset.get(name)`` returns None when a
    field is absent, and ``preset.source_of(name)`` the citation behind a figure.
    """

    kind: str
    id: str
    fields: Mapping[str, object]
    sources: Mapping[str, str]
    path: str = ""

    def __getattr__(self, name):
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(f"{self.kind} preset {self.id!r} has no field {name!r}") from None

    def get(self, name, default=None):
        return self.fields.get(name, default)

    def source_of(self, name: str) -> str:
        return self.sources.get(name, self.sources["source"])


class Kind(Mapping):
    """The presets of one kind by id, read-only; each read is noted for ``chalkboard serve``
    (:mod:`units.reads`): a lookup as ``(kind, id)``; listing or counting the ids as
    ``(kind, ALL)`` (which presets there are); ``values()`` and ``items()`` as every preset."""

    __slots__ = ("_kind", "_table")

    def __init__(self, kind: str, table: dict):
        self._kind, self._table = kind, table

    def __getitem__(self, preset_id):
        if reads._FRAMES:
            reads.note(self._kind, preset_id)
        return self._table[preset_id]

    def get(self, preset_id, default=None):
        if reads._FRAMES:
            reads.note(self._kind, preset_id)
        return self._table.get(preset_id, default)

    def __contains__(self, preset_id) -> bool:
        if reads._FRAMES:
            reads.note(self._kind, preset_id)
        return preset_id in self._table

    def __iter__(self):
        if reads._FRAMES:
            reads.note(self._kind, reads.ALL)
        return iter(self._table)

    def __len__(self) -> int:
        if reads._FRAMES:
            reads.note(self._kind, reads.ALL)
        return len(self._table)

    def keys(self):
        if reads._FRAMES:
            reads.note(self._kind, reads.ALL)
        return self._table.keys()

    def values(self):
        if reads._FRAMES:
            self._every()
        return self._table.values()

    def items(self):
        if reads._FRAMES:
            self._every()
        return self._table.items()

    def _every(self) -> None:
        reads.note(self._kind, reads.ALL)
        for preset_id in self._table:
            reads.note(self._kind, preset_id)

    def __repr__(self) -> str:
        return f"Kind({self._kind!r}, {list(self._table)!r})"


@dataclass(frozen=True)
class Presets:
    """Every preset by kind and id, with the files they came from."""

    by_kind: Mapping[str, Mapping[str, Preset]]
    files: tuple[str, ...] = field(default=())

    def get(self, kind: str, preset_id: str) -> Preset:
        table = self.by_kind[kind]
        if preset_id not in table:
            raise ChalkboardError(f"unknown {kind} preset {preset_id!r}{closest(preset_id, table)}")
        return table[preset_id]

    def ids(self, kind: str) -> list[str]:
        return list(self.by_kind[kind])

    def __getattr__(self, kind):
        try:
            return self.__dict__["by_kind"][kind]
        except KeyError:
            raise AttributeError(kind) from None


def read_value(presets: Presets, item: tuple) -> object:
    """What one read of :mod:`units.reads` found in ``presets`` (as text), without noting it:
    the ids of a kind, whether a preset is there (and its file), a field's value or its names.

    >>> read_value(load(), ("hardware", "h100_sxm", "hbm_capacity"))
    "<Quantity(80.0, 'gigabyte')>"
    """
    kind, preset_id, *field = item
    table = presets.by_kind.get(kind)
    table = table._table if isinstance(table, Kind) else dict(table or {})
    if preset_id == reads.ALL:
        return repr(sorted(table))
    preset = table.get(preset_id)
    if preset is None or not field:
        return repr(None if preset is None else preset.path)
    name = field[0]
    values = preset.sources if name.startswith("source:") else preset.fields
    name = name.removeprefix("source:")
    values = values._table if isinstance(values, Fields) else dict(values)
    return repr(sorted(values)) if name == reads.ALL else repr(values.get(name, KeyError))


def _schema_unit(kind: str, name: str, where: str):
    schema = SCHEMAS[kind]
    if name in schema:
        return schema[name]
    for pattern, unit in schema.items():
        if pattern.endswith("*") and name.startswith(pattern[:-1]) and len(name) > len(pattern) - 1:
            return unit
    if name in _COMMON:
        return _COMMON[name]
    known = [*schema, *_COMMON, "sources"]
    raise ChalkboardError(f"{where}: unknown field{closest(name, known)}")


def _read_value(kind: str, name: str, raw, where: str):
    expected = _schema_unit(kind, name, where)
    if expected is str:
        if not isinstance(raw, str) or not raw.strip():
            raise ChalkboardError(f"{where}: expected non-empty text")
        return raw
    if expected is bool:
        if not isinstance(raw, bool):
            raise ChalkboardError(f"{where}: expected true or false, got {raw!r}")
        return raw
    if expected is int:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
            raise ChalkboardError(f"{where}: expected a positive whole number, got {raw!r}")
        return raw
    if isinstance(expected, tuple):
        if raw not in expected:
            raise ChalkboardError(f"{where}: expected one of {', '.join(expected)}, got {raw!r}")
        return raw
    if not isinstance(raw, str | int | float) or isinstance(raw, bool):
        raise ChalkboardError(f"{where}: expected a value with its unit, like '3.35 TB/s'")
    return parse_quantity(raw, expect=expected, what=where)


def _shared_total(table: dict, where: str) -> tuple[str, int]:
    """Read ``{ total = "1.1 EFLOP/s", chips = 72 }``: a figure given for a group of chips."""
    if set(table) != {"total", "chips"}:
        raise ChalkboardError(f"{where}: a table value needs exactly 'total' and 'chips'")
    chips = table["chips"]
    if isinstance(chips, bool) or not isinstance(chips, int) or chips <= 0:
        raise ChalkboardError(f"{where}.chips: expected a positive whole number, got {chips!r}")
    return table["total"], chips


def _cite(keys: str, citations: Mapping[str, str], where: str) -> str:
    """Resolve source keys against the file's [sources]; without one the text is the citation."""
    if not citations:
        return keys
    words = keys.split()
    unknown = [w for w in words if w not in citations]
    if unknown or not words:
        name = unknown[0] if unknown else keys
        raise ChalkboardError(
            f"{where}: source key {name!r} is not in this file's [sources]"
            f"{closest(name, citations)}"
        )
    return "; ".join(f"{w}: {citations[w]}" for w in words)


def architecture_gaps(p: Mapping[str, object]) -> list[str]:
    """Architecture fields a model lacks for its parameters to be counted from them.

    >>> architecture_gaps({"attention": "gqa", "n_kv_heads": 8, "head_dim": 128})
    ['d_ff']
    """
    need = ["n_kv_heads", "head_dim"] if p.get("attention") == "gqa" else []
    if p.get("attention") == "mla":
        need += ["kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"]
        need += ["q_lora_rank"]
    if p.get("experts_routed") is None:
        need.append("d_ff")  # a dense model: every layer has a dense MLP
    else:
        need += ["d_ff_expert", "experts_active"]
        if p.get("dense_layers", 0):
            need.append("d_ff")
    return [n for n in need if n not in p]


def _check_model(p: dict, where: str) -> None:
    stated = [n for n in ("params_total", "params_active") if n in p]
    if len(stated) == 2 and p["params_active"] > p["params_total"]:
        raise ChalkboardError(f"{where}: params_active exceeds params_total")
    if p["attention"] == "gqa":
        for need in ("n_kv_heads", "head_dim"):
            if need not in p:
                raise ChalkboardError(f"{where}: gqa attention needs {need}")
        if p["n_heads"] % p["n_kv_heads"]:
            raise ChalkboardError(f"{where}: n_heads must be a multiple of n_kv_heads")
    else:
        for need in ("kv_lora_rank", "qk_rope_head_dim"):
            if need not in p:
                raise ChalkboardError(f"{where}: mla attention needs {need}")
    if p.get("experts_active", 0) > p.get("experts_routed", 0):
        raise ChalkboardError(f"{where}: experts_active exceeds experts_routed")
    if p.get("sliding_window_layers", 0) > p["layers"]:
        raise ChalkboardError(f"{where}: sliding_window_layers exceeds layers")
    gaps = architecture_gaps(p)
    if len(stated) < 2 and gaps:
        missing = next(n for n in ("params_total", "params_active") if n not in stated)
        raise ChalkboardError(
            f"{where}: without {missing}, the parameters are counted from the architecture, "
            f"which needs {', '.join(gaps)}"
        )


MAX_FILE_BYTES = 1_000_000  # the built-in files are a few kB each


def read_text(path: Path, what: str = "preset file", limit: int = MAX_FILE_BYTES) -> str:
    """The text of a regular file of at most ``limit`` bytes (a FIFO, device or folder is
    refused before it is opened, so reading never blocks)."""
    label = str(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise ChalkboardError(f"{label}: cannot read {what}: not a regular file")
        if info.st_size > limit:
            raise ChalkboardError(f"{label}: {what} is larger than {limit:,} bytes")
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise ChalkboardError(f"{label}: cannot read {what}: {err.strerror or err}") from None
    if len(data) > limit:
        raise ChalkboardError(f"{label}: {what} is larger than {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ChalkboardError(f"{label}: {what} is not UTF-8 text: {err.reason}") from None


def _check_measurement(p: dict, where: str) -> None:
    """A row must state what was measured, and any range must hold its value."""
    if not any(m in p for m in MEASURED):
        raise ChalkboardError(f"{where}: missing throughput (give one of {', '.join(MEASURED)})")
    unknown = [w for w in p.get("features", "").split() if w not in FEATURES]
    if unknown:
        raise ChalkboardError(
            f"{where}.features: unknown feature {unknown[0]!r}{closest(unknown[0], FEATURES)}"
        )
    for name in p.get("assumed", "").split():
        if name not in p:
            raise ChalkboardError(f"{where}.assumed: {name!r} is not a field of this row")
    for name in ("input_tokens", "output_tokens", "context", "concurrency"):
        low, high = p.get(f"{name}_low"), p.get(f"{name}_high")
        if (low is None) != (high is None) or (low is not None and name not in p):
            raise ChalkboardError(f"{where}: {name}_low and {name}_high go together with {name}")
        if low is not None and not low <= p[name] <= high:
            raise ChalkboardError(f"{where}: {name} must lie within {name}_low..{name}_high")
    lengths = "input_tokens" in p and "output_tokens" in p
    if p["scenario"] not in ("training", "decode_only") and not lengths:
        raise ChalkboardError(f"{where}: a serving row needs input_tokens and output_tokens")
    if p["scenario"] == "decode_only" and not (lengths or "context" in p):
        raise ChalkboardError(f"{where}: a decode-only row needs context or input/output lengths")
    chips, per_replica = p["chips"], p.get("chips_per_replica", p["chips"])
    if per_replica > chips:
        raise ChalkboardError(f"{where}: chips_per_replica exceeds chips")
    _check_speculation(p, where)
    if "mfu" in p and not 0 < p["mfu"].to("").magnitude <= 1:
        raise ChalkboardError(f"{where}.mfu: expected a fraction between 0 and 1")


def _check_speculation(p: dict, where: str) -> None:
    """Speculative decoding: k draft tokens verified per step, of which a sequence keeps on
    average between 1 (none accepted: the step's own token) and k + 1 (all accepted)."""
    draft, accepted = p.get("draft_tokens"), p.get("accepted_tokens")
    if (draft is None) != (accepted is None):
        raise ChalkboardError(f"{where}: draft_tokens and accepted_tokens go together")
    if draft is None:
        return
    k, a = draft.to("token").magnitude, accepted.to("token").magnitude
    if k < 1 or k != int(k):
        raise ChalkboardError(f"{where}.draft_tokens: expected a whole number of tokens >= 1")
    if not 1 <= a <= k + 1:
        raise ChalkboardError(
            f"{where}.accepted_tokens: expected between 1 and draft_tokens + 1 tokens per step"
        )


def _check_references(merged: dict[str, dict[str, Preset]]) -> None:
    """A measurement names presets of other kinds; each must exist (in any loaded file)."""
    refs = {"hardware": "hardware", "model": "model"}
    refs.update(dict.fromkeys(("weights", "activations", "kv"), "precision"))
    for row in merged["measurement"].values():
        for name, kind in refs.items():
            value = row.get(name)
            if value is not None and value not in merged[kind]:
                raise ChalkboardError(
                    f"{row.path}: measurement.{row.id}.{name}: unknown {kind} preset "
                    f"{value!r}{closest(value, merged[kind])}"
                )


def parse_file(path: Path) -> dict[str, dict[str, Preset]]:
    """Read and validate one preset file; any problem raises ChalkboardError naming the file."""
    return {kind: dict(table) for kind, table in _parsed(str(path), read_text(Path(path))).items()}


@lru_cache(maxsize=32)
def _parsed(label: str, text: str) -> dict[str, dict[str, Preset]]:
    """``parse_file`` of a file's text, once per name and text: loading the built-in presets with
    a file of one's own parses only that file (its presets are read-only, so preset sets share
    the ones of a file they both read); a file edited is parsed again, an error each time."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ChalkboardError(f"{label}: not valid TOML: {err}") from None
    except RecursionError:
        raise ChalkboardError(f"{label}: not valid TOML: nested too deeply") from None
    citations = data.pop("sources", {})
    if not isinstance(citations, dict) or not all(isinstance(v, str) for v in citations.values()):
        raise ChalkboardError(f"{label}: [sources] must map keys to citation text")
    out: dict[str, dict[str, Preset]] = {}
    for kind, table in data.items():
        if kind not in SCHEMAS:
            raise ChalkboardError(f"{label}: unknown preset kind [{kind}]{closest(kind, KINDS)}")
        if not isinstance(table, dict):
            raise ChalkboardError(f"{label}: [{kind}] must hold tables like [{kind}.my_id]")
        for preset_id, raw in table.items():
            where = f"{label}: {kind}.{preset_id}"
            if not _ID.match(preset_id):
                raise ChalkboardError(f"{where}: ids are lower_snake_case")
            if not isinstance(raw, dict):
                raise ChalkboardError(f"{where}: must be a table of fields")
            overrides = raw.get("sources", {})
            if not isinstance(overrides, dict):
                raise ChalkboardError(f"{where}.sources: must map field names to source keys")
            values, shared = {}, {}
            for name, value in raw.items():
                if name == "sources":
                    continue
                if isinstance(value, dict):  # a total shared by N chips, e.g. a rack's FLOP/s
                    value, shared[name] = _shared_total(value, f"{where}.{name}")
                values[name] = _read_value(kind, name, value, f"{where}.{name}")
                if name in shared:
                    if not isinstance(values[name], pint.Quantity):
                        raise ChalkboardError(
                            f"{where}.{name}: only a figure with a unit can be shared by chips"
                        )
                    values[name] = (values[name] / shared[name]).to_compact()
            missing = [r for r in REQUIRED[kind] if r not in raw]
            if missing:
                raise ChalkboardError(f"{where}: missing required field {missing[0]!r}")
            sources = {"source": _cite(values["source"], citations, f"{where}.source")}
            for name, keys in overrides.items():
                _schema_unit(kind, name, f"{where}.sources")
                sources[name] = _cite(str(keys), citations, f"{where}.sources.{name}")
            for name, chips in shared.items():
                total = raw[name]["total"]
                sources[name] = (
                    f"{sources.get(name, sources['source'])} (total {total} over {chips} chips)"
                )
            if kind == "model":
                _check_model(values, where)
            if kind == "measurement":
                _check_measurement(values, where)
            out.setdefault(kind, {})[preset_id] = Preset(
                kind,
                preset_id,
                Fields(kind, preset_id, values),
                Fields(kind, preset_id, sources, prefix="source:"),
                label,
            )
    return out


def user_files() -> list[Path]:
    """Preset files named by the CHALKBOARD_PRESETS environment variable."""
    env = os.environ.get("CHALKBOARD_PRESETS", "")
    return [Path(p) for p in env.split(os.pathsep) if p.strip()]


@lru_cache(maxsize=8)
def _load(files: tuple[str, ...]) -> Presets:
    with reads.unrecorded():  # checking the presets is no page's reading of them
        return _merged(files)


def _merged(files: tuple[str, ...]) -> Presets:
    merged: dict[str, dict[str, Preset]] = {kind: {} for kind in KINDS}
    for path in files:
        for kind, table in parse_file(Path(path)).items():
            for preset_id, preset in table.items():
                if preset_id in merged[kind]:
                    first = merged[kind][preset_id].path
                    raise ChalkboardError(
                        f"{path}: {kind} preset {preset_id!r} is already defined in {first}; "
                        "choose a new id"
                    )
                merged[kind][preset_id] = preset
    _check_references(merged)
    frozen = {kind: Kind(kind, table) for kind, table in merged.items()}
    return Presets(MappingProxyType(frozen), files)


def load(extra=()) -> Presets:
    """The built-in presets plus CHALKBOARD_PRESETS files plus ``extra`` paths (cached)."""
    files = [*BUILTIN_FILES, *user_files(), *map(Path, extra)]
    return _load(tuple(str(p) for p in files))
