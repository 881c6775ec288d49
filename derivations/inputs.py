"""Where an equation's inputs come from: overrides, constants, other equations, presets, defaults.

For each input symbol, in order: a value the caller gave (``--set`` or a keyword); a declared
constant; the registered equation that outputs it (evaluated recursively); a preset binding
(hardware, model, the weight, KV-cache and compute precisions, rental price); a named
parameter's default; else a clear error that names the missing input and how to give it.

>>> from derivations import get
>>> r = get("crossover_batch").evaluate_detailed(hardware="h100_sxm", model="deepseek_v3")
>>> r.inputs["mem_bandwidth"].origin
'hardware h100_sxm: hbm_bandwidth'

Weights, KV cache and math may each run at their own precision; ``precision`` sets all three:

>>> r = get("crossover_batch").evaluate_detailed(
...     hardware="b200", model="deepseek_v3", precision="fp8", weight_precision="fp4"
... )
>>> r.inputs["weight_bytes_per_value"].origin, r.inputs["flops"].origin
('weight precision fp4: bytes_per_value', 'hardware b200: dense_flops_fp8')
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pint

from derivations.core import Constant, Equation, Input, defining, lookup_symbol, version
from units import Q_, ChalkboardError, closest, parse_quantity, reads
from units.presets import SCHEMAS, Preset, Presets, load
from units.registry import convert, new_quantity, to_base, ureg


class MissingInput(ChalkboardError):
    """An input with no override, preset or default: ``name`` says which."""

    def __init__(self, message: str, name: str):
        super().__init__(message)
        self.name = name


@dataclass(frozen=True)
class Binding:
    """How a symbol's value is read from presets; ``needs`` lists the other symbols it uses."""

    describe: str
    read: Callable[[Resolver], tuple[pint.Quantity, str, str] | None]
    needs: tuple[str, ...] = ()
    preset: str | None = None  # the kind of preset that supplies it: "hardware" or "model"


# The bindings whose value depends on nothing but the chosen presets (no equation, no other
# input): what a resolver reads through them is memoised per choice of presets (Resolver.quantity).
_PRESETS_ONLY: set[Callable] = set()


def _presets_only(read):
    _PRESETS_ONLY.add(read)
    return read


# The bindings that evaluate equations on the chosen presets (GQA or MLA, a parameter count):
# what they give is memoised per choice of presets when no override reaches it (Resolver._by).
_BY_EQUATIONS: set[Callable] = set()


def _by_equations(read):
    _BY_EQUATIONS.add(read)
    return read


def _figure(
    kind: str,
    name: str,
    default: Callable[[Preset], object] | None = None,
    symbol: str | None = None,
):
    """A binding that reads field ``name`` of the chosen ``kind`` preset; ``default(preset)``
    supplies a value (with its reason) when the field is absent, e.g. no experts in a dense model.
    A whole-number field (``layers``, ``vocab``) gets the unit of ``symbol``, the count it is
    (``vocab`` is in tokens, ``n_layers`` in layers).
    """

    def read(r: Resolver):
        preset = r.preset(kind)
        if preset is None:
            return None
        value, origin = preset.get(name), f"{kind} {preset.id}: {name}"
        if value is None and default is not None:
            value, why = default(preset)
            origin = f"{kind} {preset.id}: {why}"
        if value is None:
            raise ChalkboardError(f"{kind} preset {preset.id!r} has no {name} figure")
        if not isinstance(value, pint.Quantity):  # a whole-number field such as layers
            value = Q_(value, lookup_symbol(symbol).unit if symbol else "dimensionless")
        return value, origin, preset.source_of(name if name in preset.fields else "source")

    return _presets_only(read)


def _none_for(what: str):
    """Default for a count a model lacks: zero, because it has no ``what``."""
    return lambda preset: (0, f"no {what} (0)")


def _dense_layers(model: Preset):
    if model.get("experts_routed") is None:
        return model.layers, "a dense model: every layer is dense"
    return 0, "every layer is a MoE layer (0 dense)"


@_presets_only
def _flops(r: Resolver):
    hardware = r.preset("hardware")
    if hardware is None:
        return None
    precision = r.precision_of("compute")
    rate = precision.get("flops_precision", precision.id)
    name = f"dense_flops_{rate}"
    value = hardware.get(name)
    if value is None:
        have = [f[len("dense_flops_") :] for f in hardware.fields if f.startswith("dense_flops_")]
        raise ChalkboardError(
            f"hardware {hardware.id!r} has no dense {rate} FLOP/s figure (no published rate "
            f"at compute precision {precision.id!r}; it has: {', '.join(have) or 'none'}); "
            "choose another --compute-precision (or --precision), or give --set flops=..."
        )
    origin = f"hardware {hardware.id}: {name}"
    if rate != precision.id:
        origin += f" (compute precision {precision.id})"
    return value, origin, hardware.source_of(name)


def _bytes_per_value(role: str):
    """A binding that reads bytes per value from the precision chosen for ``role``."""

    def read(r: Resolver):
        p = r.precision_of(role)
        origin = f"{PRECISION_ROLES[role][1]} {p.id}: bytes_per_value"
        return p.bytes_per_value, origin, p.source_of("bytes_per_value")

    return _presets_only(read)


def _by_attention(gqa: str, mla: str):
    """A binding that evaluates the GQA or the MLA equation, by the model's attention type."""

    def read(r: Resolver):
        model = r.preset("model")
        if model is None:
            return None
        from derivations.core import get

        eq = get(gqa if model.attention == "gqa" else mla)
        return r.nested(eq), f"equation {eq.id} (model {model.id} uses {model.attention})", ""

    return _by_equations(read)


def _n_chips(r: Resolver):
    fit = r.quantity("chips_to_fit")
    whole = np.ceil(np.asarray(fit.to("chip").magnitude, dtype=float))
    q = Q_(whole if whole.ndim else float(whole), "chip")
    return (
        q,
        "fewest whole chips that hold the weights and the KV cache (chips_to_fit, rounded up)",
        "",
    )


@_presets_only
def _price(r: Resolver):
    p = r.price
    return p.price, f"rental {p.id}: price (as of {p.as_of})", p.source_of("price")


@_presets_only
def _tier_price(r: Resolver):
    tier = r.preset("tier")
    if tier is None:
        return None
    if tier.get("price") is not None:
        return (
            tier.price,
            f"tier {tier.id}: price ({tier.get('as_of', 'undated')})",
            (tier.source_of("price")),
        )
    if tier.medium != "HBM":
        raise ChalkboardError(f"tier preset {tier.id!r} has no price figure")
    per_chip = tier.capacity / Q_(1, "chip")
    q = (r.price.price / per_chip).to("USD/byte/hour")
    origin = (
        f"rental {r.price.id} price over tier {tier.id}'s capacity (HBM is rented with its chip)"
    )
    return q, origin, r.price.source_of("price")


# Architecture symbols read from a model preset: (field, value when a model lacks the field).
MODEL_FIELDS = {
    "n_layers": ("layers", None),
    **{f: (f, None) for f in ("d_model", "n_heads", "n_kv_heads", "head_dim", "vocab")},
    **{f: (f, None) for f in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim")},
    **{f: (f, None) for f in ("v_head_dim", "q_lora_rank")},
    "experts_active": ("experts_active", _none_for("experts")),
    "experts_routed": ("experts_routed", _none_for("experts")),
    "experts_shared": ("experts_shared", _none_for("shared experts")),
    "d_ff": ("d_ff", _none_for("dense MLP")),
    "d_ff_expert": ("d_ff_expert", _none_for("experts")),
    "dense_layers": ("dense_layers", _dense_layers),
    "sliding_window_layers": ("sliding_window_layers", _none_for("sliding-window layers")),
    "embeddings_active": ("embeddings_active", lambda p: _embedding_count(p, "active")),
    # no field of that name: always read from tied_embeddings by the default
    "embedding_matrices": ("embedding_matrices", lambda p: _embedding_count(p, "stored")),
}


def _embedding_count(model: Preset, what: str):
    """Embedding matrices stored, or counted as active: one when tied, else two."""
    if model.get("tied_embeddings"):
        return 1, f"tied input and output embeddings: one matrix {what} (1)"
    return 2, f"input and output embeddings {what} (2)"


# The published-count fields and the equations that count them from the architecture.
PARAM_COUNTS = {
    "n_total": ("params_total", "params_total"),
    "n_active": ("params_active", "params_active"),
}
PARAMS_TOLERANCE = 0.02  # stated counts may differ from the architecture's by this much
_checked: dict[tuple[str, str], None] = {}


def check_model(model: Preset, presets: Presets) -> None:
    """Cross-check a model's stated parameter counts against its architecture (once per preset).

    Skipped when the architecture is incomplete (then the stated counts are used as they are).
    A gap beyond ``params_tolerance`` (default 2%) is an error naming both figures.
    """
    from units.presets import architecture_gaps

    key = (model.path, model.id)
    if key in _checked or architecture_gaps(model.fields):
        return
    _checked[key] = None  # before evaluating: the evaluation below resolves this model again
    from derivations.core import get

    tolerance = model.get("params_tolerance")
    limit = PARAMS_TOLERANCE if tolerance is None else float(tolerance.to("").magnitude)
    try:
        for field, eq_id in PARAM_COUNTS.values():
            stated = model.get(field)
            if stated is None:
                continue
            counted = get(eq_id).evaluate(model=model, presets=presets).to("parameter")
            gap = abs((counted / stated).to("").magnitude - 1)
            if gap > limit:
                raise ChalkboardError(
                    f"model preset {model.id!r} ({model.path}): stated {field} "
                    f"{_count(stated.to('parameter').magnitude)} differs from the "
                    f"{_count(counted.magnitude)} counted from its architecture by "
                    f"{100 * gap:.1f}% (more than {100 * limit:g}%); fix the figure or the "
                    "architecture, or set params_tolerance"
                )
    except ChalkboardError:
        del _checked[key]
        raise


def _count(x: float) -> str:
    """A parameter count as a reader says it: '671 B', '37.6 M', '250,880' parameters."""
    for scale, word in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if x >= scale:
            return f"{x / scale:.4g} {word} parameters"
    return f"{x:,.0f} parameters"


def _params(field: str, eq_id: str):
    """A model's stated parameter count, or, when it states none, the architecture's count."""

    def read(r: Resolver):
        model = r.preset("model")
        if model is None:
            return None
        if model.get(field) is not None:
            return model.get(field), f"model {model.id}: {field}", model.source_of(field)
        from derivations.core import get

        eq = get(eq_id)
        origin = f"equation {eq.id} (model {model.id} states no {field})"
        return r.nested(eq), origin, model.source_of("source")

    return _by_equations(read)


BINDINGS: dict[str, Binding] = {
    "flops": Binding("hardware's dense FLOP/s at the compute precision", _flops, preset="hardware"),
    "mem_bandwidth": Binding(
        "hardware's HBM bandwidth", _figure("hardware", "hbm_bandwidth"), preset="hardware"
    ),
    "hbm_capacity": Binding(
        "hardware's HBM capacity", _figure("hardware", "hbm_capacity"), preset="hardware"
    ),
    "scale_up_domain": Binding(
        "hardware's scale-up domain", _figure("hardware", "scale_up_domain"), preset="hardware"
    ),
    "scale_up_bandwidth": Binding(
        "hardware's scale-up bandwidth per direction",
        _figure("hardware", "scale_up_bandwidth_per_direction"),
        preset="hardware",
    ),
    "scale_out_bandwidth": Binding(
        "hardware's scale-out bandwidth per direction",
        _figure("hardware", "scale_out_bandwidth_per_direction"),
        preset="hardware",
    ),
    **{
        name: Binding(
            f"model's {field.split('_')[1]} parameters (stated, else counted from the "
            "architecture)",
            _params(field, eq_id),
            (f"arch_{field}",),
            "model",
        )
        for name, (field, eq_id) in PARAM_COUNTS.items()
    },
    **{
        name: Binding(
            f"model's {field.replace('_', ' ')}",
            _figure("model", field, default, symbol=name),
            (),
            "model",
        )
        for name, (field, default) in MODEL_FIELDS.items()
    },
    "training_tokens": Binding(
        "model's training tokens", _figure("model", "training_tokens"), preset="model"
    ),
    "kv_values_per_token": Binding(
        "GQA or MLA equation, by the model's attention type",
        _by_attention("gqa_kv_values_per_token", "mla_kv_values_per_token"),
        ("gqa_kv_values", "mla_kv_values"),
        "model",
    ),
    "attention_params": Binding(
        "GQA or MLA equation, by the model's attention type",
        _by_attention("gqa_attention_params", "mla_attention_params"),
        ("gqa_attention_params", "mla_attention_params"),
        "model",
    ),
    "attention_flops_per_token": Binding(
        "GQA or MLA (absorbed) decode attention FLOPs, by the model's attention type",
        _by_attention("gqa_attention_flops", "mla_decode_attention_flops"),
        ("gqa_attention_flops", "mla_decode_attention_flops"),
        "model",
    ),
    "prefill_attention_flops": Binding(
        "GQA or MLA (expanded) prefill attention FLOPs, by the model's attention type",
        _by_attention("gqa_attention_flops", "mla_prefill_attention_flops"),
        ("gqa_attention_flops", "mla_prefill_attention_flops"),
        "model",
    ),
    "weight_bytes_per_value": Binding(
        "weight precision's bytes per value", _bytes_per_value("weight")
    ),
    "kv_bytes_per_value": Binding("KV-cache precision's bytes per value", _bytes_per_value("kv")),
    "activation_bytes_per_value": Binding(
        "compute precision's bytes per value (activations travel at the precision of the math)",
        _bytes_per_value("compute"),
    ),
    "n_chips": Binding("fewest chips that hold weights and KV", _n_chips, ("chips_to_fit",)),
    "price_per_chip_hour": Binding("rental price per chip-hour", _price),
    "input_price": Binding("API preset's input price", _figure("api", "input"), preset="api"),
    "output_price": Binding("API preset's output price", _figure("api", "output"), preset="api"),
    "cache_write_price": Binding(
        "API preset's 5-minute cache-write price",
        _figure("api", "cache_write_5min"),
        preset="api",
    ),
    "cache_read_price": Binding(
        "API preset's cache-read price", _figure("api", "cache_read"), preset="api"
    ),
    "tier_capacity": Binding("memory tier's capacity", _figure("tier", "capacity"), preset="tier"),
    "tier_bandwidth": Binding(
        "memory tier's bandwidth", _figure("tier", "bandwidth"), preset="tier"
    ),
    "tier_price": Binding(
        "memory tier's holding price (HBM: the chip's rent over its capacity)",
        _tier_price,
        preset="tier",
    ),
    **{
        name: Binding(
            # "loss_param_coeff" -> "loss parameter coeff": a reader's words, not a unit symbol
            f"scaling-law fit's {name.replace('_', ' ').replace('param ', 'parameter ')}",
            _figure("fit", name),
            (),
            "fit",
        )
        for name in SCHEMAS["fit"]  # every figure of a fit preset is an input of the loss law
    },
}


def reachable(eq: Equation) -> dict[str, None]:
    """Every symbol an evaluation of ``eq`` may read, in a stable order (a new dict each time;
    worked out once per equation and state of the catalogue and notation)."""
    key = ("reachable", version())
    if key not in eq._compiled:
        eq._compiled[key] = _reachable(eq)
    return dict(eq._compiled[key])


def _reachable(eq: Equation) -> dict[str, None]:
    seen: dict[str, None] = {}
    todo = [s.name for s in eq.inputs] + list(eq.cancelled)  # cancelled: accepted, unused
    replaced = dict(eq.replaced)
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        if name in replaced:  # read through its replacement, never given on its own
            todo += sorted(s.name for s in replaced[name].free_symbols)
            continue
        seen[name] = None
        inner = defining(name)
        if inner is not None and inner is not eq:
            todo += [s.name for s in inner.inputs]
        if name in BINDINGS:
            todo += list(BINDINGS[name].needs)
    return seen


def _reach(eq: Equation) -> frozenset[str]:
    """Every name an evaluation of ``eq`` inside another may read: its output, its inputs, and
    theirs through the equations that define them and the bindings' needs, and its own
    replaced inputs with what replaces them (its compiled form is expanded with them).
    Worked out once per equation and state of the catalogue and notation."""
    key = ("reach", version())
    found = eq._compiled.get(key)
    if found is None:
        todo = [s.name for s in eq.inputs] + list(eq.cancelled)
        for name, expr in eq.replaced:  # its expansion brings these in (Equation.expanded)
            todo += [name, *(s.name for s in expr.free_symbols)]
        found = eq._compiled[key] = _closure({eq.lhs.name}, todo)
    return found


_BINDING_REACH: dict[tuple[str, int], frozenset[str]] = {}


def _binding_reach(name: str) -> frozenset[str]:
    """Every name reading ``name`` through its binding may read (:func:`_reach`)."""
    key = (name, version())
    found = _BINDING_REACH.get(key)
    if found is None:
        found = _BINDING_REACH[key] = _closure(set(), [name])
    return found


def _closure(seen: set[str], todo: list[str]) -> frozenset[str]:
    """``seen`` and the names in ``todo`` with every name they reach through the equations
    that define them and the bindings' needs."""
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        inner = defining(name)
        if inner is not None:
            todo += [s.name for s in inner.inputs] + list(inner.cancelled)
        if name in BINDINGS:
            todo += list(BINDINGS[name].needs)
    return frozenset(seen)


# Inputs for which 0 is a legal value: a dense model has no experts, no routed weights and no
# dense-layer count to subtract (the zero defaults of MODEL_FIELDS), and reads no experts.
ZERO_ALLOWED = frozenset(
    {
        *(name for name, (_, default) in MODEL_FIELDS.items() if callable(default)),
        "routed_weight_share",
        "expert_read_fraction",
        "attention_flops_per_token",  # zero: attention's FLOPs left out, as the lecture does
        "prefill_attention_flops",
    }
    - {"embeddings_active", "embedding_matrices"}
)


def parse_override(name: str, value, what: str | None = None) -> pint.Quantity:
    """An override for symbol ``name``: a Quantity (scalar or array), a string, or a number.

    One rule for every number a person gives (``--set``, ``--over``, keywords, preset figures):
    a bare number is read in the symbol's unit only for counts and dimensionless symbols
    shown in that unit (``batch_size=64``); anything else needs its unit (``'3.35 TB/s'``).
    """
    sym = lookup_symbol(name)
    what = what or name
    if isinstance(value, np.ndarray | list | tuple):
        arr = np.asarray(value, dtype=float)
        value = Q_(arr, _bare_unit(sym, what, arr))
    if isinstance(value, pint.Quantity) and np.ndim(value.magnitude) > 0:
        q = Q_(np.asarray(value.magnitude, dtype=float), _units_read_back(value))
        if q.dimensionality != sym.dimensionality:
            raise ChalkboardError(
                f"{what}: values are {q.dimensionality}, expected {sym.dimension}"
            )
        with np.errstate(all="ignore"):
            base = to_base(q).magnitude
        zero = name in ZERO_ALLOWED
        least = "zero or positive" if zero else "positive"
        if not np.all(np.isfinite(q.magnitude)) or not np.all(
            q.magnitude >= 0 if zero else q.magnitude > 0
        ):
            raise ChalkboardError(f"{what}: every value must be {least} and finite")
        if not np.all(np.isfinite(base)) or not np.all(base >= 0 if zero else base > 0):
            raise ChalkboardError(f"{what}: a value is out of range (too large or too small)")
        return q
    example = sym.display or sym.unit
    zero = name in ZERO_ALLOWED
    return parse_quantity(value, expect=sym.unit, what=what, example=example, zero=zero)


# Overrides read into base units, by symbol and exact value (_override_key): a design search and
# a chapter's tables give the same few overrides (and sweeps) thousands of times. An error is
# raised again every time: nothing is kept for it.
_PARSED: dict[tuple, tuple] = {}
_PARSED_SWEEPS: dict[tuple, tuple] = {}  # arrays (each entry holds one): fewer are kept


def _parsed_override(name: str, value) -> pint.Quantity:
    """``to_base(parse_override(name, value))``, a new Quantity (and array) each time."""
    part = None if ureg._active_ctx else _override_key(name, value)
    if part is None:
        return to_base(parse_override(name, value))
    key = (version(), ureg.default_system, part)
    store, size = (_PARSED_SWEEPS, 256) if part[1] is np.ndarray else (_PARSED, 4096)
    hit = store.get(key)
    if hit is not None:
        return new_quantity(_fresh(hit[0]), hit[1])
    q = to_base(parse_override(name, value))
    if _keepable(q._magnitude):
        if len(store) >= size:
            store.clear()
        store[key] = (_fresh(q._magnitude), q._units)
    return q


_READ_BACK: dict = {}


def _units_read_back(value: pint.Quantity):
    """``str(value.units)``, or for a Quantity of this registry the units that text reads back
    as (worked out once per units and format: the same units, without formatting and parsing
    them on every call)."""
    if value._REGISTRY is not ureg:
        return str(value.units)
    key = (value._units, ureg.formatter.default_format)
    if key not in _READ_BACK:
        if len(_READ_BACK) >= 1024:
            _READ_BACK.clear()
        _READ_BACK[key] = Q_(1, str(value.units))._units  # raises as Q_ would: nothing kept
    return _READ_BACK[key]


def _bare_unit(sym, what: str, values) -> pint.Unit:
    """The unit of a bare array (the same rule as for one bare number)."""
    from units.registry import bare_unit

    first = values.flat[0] if values.size else 1
    return bare_unit(f"{first:g}", sym.unit, sym.display or sym.unit, what)


_CHECKED_PARAMETERS: set = set()


def check_parameters(presets: Presets) -> None:
    """Every ``[parameter.NAME]`` in a user's preset file must name a declared symbol and have
    its dimension (a typo such as ``[parameter.not_a_symbol]`` would otherwise be ignored
    silently). The built-in files also hold figures the book reads by name."""
    from derivations.core import SYMBOLS
    from units.presets import BUILTIN_FILES

    builtin = {str(p) for p in BUILTIN_FILES}

    key = (presets.files, len(SYMBOLS))
    if key in _CHECKED_PARAMETERS:
        return
    for name, parameter in presets.by_kind["parameter"].items():
        if parameter.path in builtin:
            continue
        where = f"{parameter.path}: parameter.{name}"
        if name not in SYMBOLS:
            raise ChalkboardError(f"{where}: no symbol is named {name!r}{closest(name, SYMBOLS)}")
        sym, q = SYMBOLS[name], parameter.value
        if q.dimensionality != sym.dimensionality:
            if not q.dimensionality and q.units == Q_(1).units:
                raise ChalkboardError(
                    f"{where}.value={q.magnitude:g} needs a unit, like "
                    f"{q.magnitude:g} {sym.display or sym.unit}"
                )
            raise ChalkboardError(
                f"{where}.value is {q.dimensionality or 'dimensionless'}, expected "
                f"{sym.dimension} (like {sym.display or sym.unit})"
            )
    _CHECKED_PARAMETERS.add(key)


CHOICE_KINDS = ("hardware", "model", "precision", "rental", "api", "tier", "fit")
DEFAULT_CHOICES = {"precision": "bf16", "rental": "lecture_gpu", "fit": "hoffmann_2022"}
# The three precisions one evaluation may mix: role -> (keyword, how messages name it). Each
# defaults to ``precision``, the shorthand that sets all three.
PRECISION_ROLES = {
    "weight": ("weight_precision", "weight precision"),
    "kv": ("kv_precision", "KV-cache precision"),
    "compute": ("compute_precision", "compute precision"),
}
PRECISION_KEYWORDS = tuple(keyword for keyword, _ in PRECISION_ROLES.values())


# (equation id, overridden names, swept names) -> the equation, for every compiled function an
# evaluation in this process ran: the fast CLI caches their sources (book/fastcache.py).
EVALUATED: dict[tuple[str, frozenset[str], frozenset[str]], Equation] = {}


# Values read from presets alone (a constant, a preset's figure, a named parameter's default),
# in base units with their origin and source: by choice of presets, then by input. The chosen
# Preset objects (and the Presets) are kept with their memo, so that an id is never reused.
_READS: dict[tuple[int, ...], tuple[tuple, dict]] = {}


def _reads_for(presets: Presets, chosen: dict) -> dict:
    """The memo of values read from presets alone for this choice of presets."""
    objects = (presets, *chosen.values())
    key = tuple(map(id, objects))
    entry = _READS.get(key)
    if entry is None or any(a is not b for a, b in zip(entry[0], objects, strict=True)):
        if len(_READS) >= 512:
            _READS.clear()
        entry = _READS[key] = (objects, {})
    return entry[1]


_ARRAY_OR_FLOAT = (float, np.float64, np.ndarray)
_NOTHING: frozenset[str] = frozenset()


# The values of whole evaluations by everything they depend on (below): a problem drawn on many
# seeds, a design search over options and a chapter's tables evaluate the same case again and
# again. An entry keeps the objects it was keyed on by identity (so that an id is never reused)
# and the preset fields its evaluation read, noted again on every hit (units.reads).
_VALUES: dict[tuple, tuple] = {}
_VALUES_SIZE = 8192  # entries kept (~3 kB each with their inputs); then the older half goes
# Evaluations over arrays (a bisection narrowing a sweep ends on the same arrays again and
# again): fewer entries, since each holds its arrays (at most SWEEP_SIZE values each).
_SWEEPS: dict[tuple, tuple] = {}
_SWEEPS_BYTES = 32 << 20  # the bytes of arrays its entries may hold; then the older half goes
_sweeps_held = [0]  # the bytes they hold now
_SWEPT = ("swept",)  # the last part of a sweep's key (no other part is a 1-tuple)


def evaluation_key(
    eq: Equation, presets: Presets, choices: dict, overrides: dict, detailed: bool = False
):
    """The memo key of ``eq.evaluate`` on these presets, choices (ids, Presets or None) and
    overrides (Quantities of this registry, numbers or text; an array of at most SWEEP_SIZE
    values), with the objects it holds by identity; None when an input cannot be keyed (a
    longer array, a list, a Quantity of another registry, an active pint context): that
    evaluation is not memoised. ``detailed``: the key of
    ``evaluate_detailed`` (the value and every input's origin).

    The key covers the version of the catalogue and notation (an equation or symbol declared or
    changed), the unit system base units are taken in, the equation and the Presets object (a
    preset edit loads new ones), each choice, and each override's exact value: its type (an int
    stays an int), its sign (-0.0 is not 0.0) and its units; an array's dtype, shape and
    bytes.
    """
    if ureg._active_ctx:
        return None
    objects = [eq, presets]
    parts: list = [detailed, version(), ureg.default_system, id(eq), id(presets)]
    for value in choices.values():
        if value is None or type(value) is str:
            parts.append(value)
        elif type(value) is Preset:
            parts.append(id(value))
            objects.append(value)
        else:
            return None
    swept = False
    for name, value in sorted(overrides.items()):
        part = _override_key(name, value)
        if part is None:
            return None
        swept = swept or part[1] is np.ndarray
        parts.append(part)
    if swept:
        parts.append(_SWEPT)  # kept in the store of sweeps (_store_of)
    return tuple(parts), tuple(objects)


SWEEP_SIZE = 1024  # the most values an array override may hold and still be keyed


def _override_key(name: str, value):
    """One override's exact value as a key (its type, sign and units; an array's dtype, shape
    and bytes when it holds at most SWEEP_SIZE values), or None when it cannot be keyed."""
    kind = type(value)
    if kind is str:
        return (name, value)
    units = None
    if isinstance(value, pint.Quantity):
        if value._REGISTRY is not ureg:
            return None
        value, units = value._magnitude, value._units
        kind = type(value)
    if kind is int:
        return (name, kind, value, units)
    if kind is float or kind is np.float64:
        return (name, kind, value, math.copysign(1.0, value), units)
    if kind is np.ndarray and value.size <= SWEEP_SIZE and value.dtype.kind in "fiu":
        return (name, kind, value.dtype.str, value.shape, value.tobytes(), units)
    return None


def _store_of(parts) -> dict:
    """Where the entry of a key lives: a key with an array override in the smaller store of
    sweeps (an entry holds arrays), any other in the store of numbers."""
    return _SWEEPS if parts[-1] == _SWEPT else _VALUES


def _fresh(magnitude):
    """A memoised magnitude as a caller may have it: an array is copied (a caller may change
    it in place), a number is immutable."""
    return magnitude.copy() if type(magnitude) is np.ndarray else magnitude


def _keepable(magnitude) -> bool:
    """Whether a value's magnitude may be memoised: a float, an int, or an array of floats of
    at most SWEEP_SIZE values."""
    kind = type(magnitude)
    if kind is float or kind is int:
        return True
    return kind is np.ndarray and magnitude.dtype == np.float64 and magnitude.size <= SWEEP_SIZE


def recall_value(key) -> pint.Quantity | None:
    """The memoised value under ``key`` (from :func:`evaluation_key`; a new Quantity each
    time), its reads noted again; or None."""
    parts, objects = key
    hit = _store_of(parts).get(parts)
    if hit is None or len(hit[0]) != len(objects):
        return None
    if any(a is not b for a, b in zip(hit[0], objects, strict=True)):
        return None
    _, magnitude, units, read, _, _ = hit
    reads.note_all(read)
    return new_quantity(_fresh(magnitude), units)


def recall_inputs(key) -> tuple[pint.Quantity, dict[str, Input]] | None:
    """The memoised value and inputs of ``evaluate_detailed`` under ``key`` (new Quantities and
    a new dict each time), its reads noted again; or None."""
    hit = recall_value(key)
    if hit is None:
        return None
    used = {
        name: Input(new_quantity(_fresh(magnitude), units), origin, source, sym)
        for name, magnitude, units, origin, source, sym in _store_of(key[0])[key[0]][4]
    }
    return hit, used


def remember_inputs(key, value: pint.Quantity, used: dict[str, Input], read) -> None:
    """Memoise ``evaluate_detailed``'s value and inputs (when each is a number, or a sweep's
    array of floats)."""
    kept = tuple(
        (name, _fresh(i.base._magnitude), i.base._units, i.origin, i.source, i.symbol)
        for name, i in used.items()
    )
    if all(_keepable(k[1]) for k in kept):
        remember_value(key, value, read, kept)


def remember_value(key, value: pint.Quantity, read, inputs: tuple = ()) -> None:
    """Memoise ``value`` (a float, or a sweep's array of floats: a copy) under ``key`` with the
    preset fields its evaluation read."""
    magnitude = value._magnitude
    if type(magnitude) is not float and not (
        type(magnitude) is np.ndarray and _keepable(magnitude)
    ):
        return
    parts, objects = key
    store = _store_of(parts)
    held = 0
    if store is _SWEEPS:  # by the bytes its arrays hold: the key's, the value's, the inputs'
        if not store:
            _sweeps_held[0] = 0  # emptied by someone else
        held = sum(len(p[4]) for p in parts if type(p) is tuple and len(p) == 6)
        held += sum(np.size(i[1]) * 8 for i in inputs) + np.size(magnitude) * 8
        if _sweeps_held[0] + held > _SWEEPS_BYTES:
            for old in list(itertools.islice(store, len(store) // 2 + 1)):  # first in, out
                gone = store.pop(old, None)
                _sweeps_held[0] -= gone[5] if gone is not None else 0
    elif len(store) >= _VALUES_SIZE:
        for old in list(itertools.islice(store, _VALUES_SIZE // 2)):  # first in, first out
            del store[old]
    if store is _SWEEPS and (before := store.get(parts)) is not None:
        _sweeps_held[0] -= before[5]
    _sweeps_held[0] += held
    store[parts] = (objects, _fresh(magnitude), value._units, frozenset(read), inputs, held)


# The presets chosen (preset objects by kind, defaults filled in) by the Presets and the
# choices (ids, Presets or None) they were chosen by, with the preset reads choosing them made
# (noted again on every hit); an entry keeps the objects it was keyed on by identity.
_CHOSEN: dict[tuple, tuple] = {}


def _chosen(presets: Presets, choices: dict) -> dict:
    """The presets chosen by ``choices`` (see :meth:`Resolver.make`), a new dict each time."""
    objects = [presets]
    parts: list = [id(presets)]
    for kind, value in choices.items():
        if value is None or type(value) is str:
            parts.append((kind, value))
        elif type(value) is Preset:
            parts.append((kind, id(value)))
            objects.append(value)
        else:
            parts = None
            break
    key = tuple(parts) if parts is not None else None
    hit = _CHOSEN.get(key) if key is not None else None
    if hit is not None and all(a is b for a, b in zip(hit[0], objects, strict=True)):
        reads.note_all(hit[2])
        chosen = dict(hit[1])
        if chosen["model"] is not None:
            check_model(chosen["model"], presets)  # once per model: a dictionary look-up
        return chosen

    def pick(kind, value):
        if value is None or isinstance(value, Preset):
            return value
        return presets.get(kind, str(value))

    with reads.recording(quiet=True) as read:
        chosen = {kind: pick(kind, choices.get(kind)) for kind in CHOICE_KINDS}
    if chosen["model"] is not None:  # its reads (the first time only) are not the choice's
        check_model(chosen["model"], presets)
    with reads.recording(quiet=True) as also:
        for kind, default in DEFAULT_CHOICES.items():
            if chosen[kind] is None and default in presets.by_kind[kind]:
                chosen[kind] = presets.get(kind, default)
        for keyword, label in PRECISION_ROLES.values():
            value = choices.get(keyword)
            if value is None or isinstance(value, Preset):
                chosen[keyword] = value or chosen["precision"]
            elif str(value) in presets.by_kind["precision"]:
                chosen[keyword] = presets.get("precision", str(value))
            else:
                known = presets.by_kind["precision"]
                raise ChalkboardError(
                    f"unknown {label} {str(value)!r}{closest(str(value), known)}; "
                    f"the precisions are: {', '.join(known)}"
                )
    if key is not None:
        if len(_CHOSEN) >= 1024:
            _CHOSEN.clear()
        _CHOSEN[key] = (tuple(objects), dict(chosen), frozenset(read | also))
    return chosen


class Resolver:
    """Resolves the inputs of one evaluation, in base units, and records where each came from."""

    def __init__(
        self,
        root: Equation,
        presets: Presets,
        chosen: dict[str, Preset | None],
        overrides: dict[str, pint.Quantity],
        memo: dict | None = None,
    ):
        self.root = root
        self.presets = presets
        self.chosen = chosen
        self.overrides = overrides
        # overridden intermediates stay symbols in the compiled function (an overridden leaf
        # input changes nothing there, so it does not make a function of its own)
        self.keep = frozenset(n for n in overrides if defining(n) is not None)
        self.used: dict[str, Input] = {}
        self._values: dict[str, pint.Quantity] = {}
        self._stack: list[str] = []
        self._replaced = dict(root.replaced)
        self._reads = _reads_for(presets, chosen) if memo is None else memo
        self._read: tuple = ()  # the preset fields the last binding read (units.reads)

    @classmethod
    def make(cls, root, choices: dict, presets, overrides) -> Resolver:
        """``choices`` maps preset kinds (hardware, model, precision, rental, api, tier, fit) to
        ids or Presets; precision, rental and fit fall back to their defaults. The
        ``weight_precision``, ``kv_precision`` and ``compute_precision`` choices each fall back
        to ``precision``."""
        presets = presets or load()
        check_parameters(presets)
        if not root.evaluable:
            raise ChalkboardError(
                f"{root.id} holds an arbitrary function, so it is verified symbolically but "
                "has no numeric value"
            )

        chosen = _chosen(presets, choices)
        allowed = reachable(root) if overrides else {}
        replaced = dict(root.replaced)
        parsed = {}
        for name, value in overrides.items():
            if name in replaced:
                raise ChalkboardError(
                    f"{name!r} is not an input of {root.id!r}: it was replaced by {replaced[name]}"
                )
            if name not in allowed:
                raise ChalkboardError(
                    f"{name!r} is not an input of {root.id!r}{closest(name, allowed)}; "
                    f"its inputs are: {', '.join(allowed)}"
                )
            parsed[name] = _parsed_override(name, value)
        if root.solved_from and root.solved_from not in parsed:
            raise ChalkboardError(
                f"{root.id}: solving for {root.lhs.name} needs the value of "
                f"{root.solved_from}; give it with --set {root.solved_from}=VALUE"
            )
        return cls(root, presets, chosen, parsed)

    @property
    def precision(self) -> Preset:
        """The shorthand precision (the default of the weight, KV-cache and compute ones)."""
        return self.chosen["precision"]

    def precision_of(self, role: str) -> Preset:
        """The precision chosen for ``role``: "weight", "kv" or "compute"."""
        return self.chosen[PRECISION_ROLES[role][0]]

    @property
    def price(self) -> Preset:
        return self.chosen["rental"]

    def preset(self, kind: str) -> Preset | None:
        return self.chosen[kind]

    def value_of(self, eq: Equation) -> pint.Quantity:
        """Evaluate ``eq`` (intermediates inlined unless overridden), in base units."""
        args = eq.arguments(self.keep)
        self._stack.append(eq.lhs.name)
        missing: list[MissingInput] = []
        try:
            # floats (an int is read as numpy reads it, and raises as numpy would), else numpy
            magnitudes = []
            swept = []  # the inputs that are arrays
            for s in args:
                try:
                    m = self.quantity(s.name)._magnitude
                except MissingInput as err:
                    missing.append(err)
                    magnitudes.append(None)
                    continue
                if type(m) is not float:
                    m = float(m) if type(m) is int else np.asarray(m, dtype=float)
                    if type(m) is not float:
                        if m.ndim:
                            swept.append(s.name)
                        else:
                            m = m[()]
                magnitudes.append(m)
        finally:
            self._stack.pop()
        if missing:
            return self._without(eq, args, magnitudes, missing)
        arrays = frozenset(swept) if swept else _NOTHING
        EVALUATED[(eq.id, self.keep, arrays)] = eq
        out = None
        scalar = None if arrays else eq.scalar(self.keep)
        if scalar is not None:  # floats: the fast CLI runs the same function (units.light)
            try:
                out = scalar(*(float(m) for m in magnitudes))
            except (ArithmeticError, ValueError):
                out = None
            if type(out) is not float:
                out = None
        if out is None:
            # numpy floats, so an overflow gives inf (checked by the caller) instead of raising
            magnitudes = [np.float64(m) if type(m) is float else m for m in magnitudes]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                out = eq.compiled(self.keep, arrays)(*magnitudes)
        if type(out) in _ARRAY_OR_FLOAT:  # what Q_(out, eq.lhs.base_unit) makes, sooner
            return new_quantity(out, eq.lhs.base_unit._units)
        return Q_(out, eq.lhs.base_unit)

    def nested(self, eq: Equation) -> pint.Quantity:
        """The value of an equation evaluated inside this evaluation (an intermediate, or one a
        binding evaluates), as ``value_of`` gives it, memoised for this choice of presets when
        nothing particular to this evaluation can reach it: no override, no input the root
        replaced, no equation being evaluated around it. Then its value, its inputs (added to
        ``used``, in the order it reads them) and the preset fields it reads depend on the
        chosen presets alone: a miss evaluates it in a resolver of its own, so that it reads
        (and notes) everything it uses, and a hit notes those reads again (units.reads) and
        adds the same inputs."""
        reach = _reach(eq)
        if (
            not reach.isdisjoint(self.overrides)
            or not reach.isdisjoint(self._replaced)
            or not reach.isdisjoint(self._stack)
        ):
            return self.value_of(eq)
        key = ("equation", id(eq), self.keep, version())
        hit = self._reads.get(key)
        if hit is not None and hit[0] is eq:
            _, magnitude, units, entries, read = hit
            reads.note_all(read)
            self._adopt(entries)
            return new_quantity(magnitude, units)
        q, entries, read = self._inside(lambda inside: inside.value_of(eq))
        if type(q._magnitude) is float and all(type(e[1]) in (float, int) for e in entries):
            self._reads[key] = (eq, q._magnitude, q._units, entries, read)
        return q

    def _by(self, name: str) -> pint.Quantity | None:
        """Input ``name`` read through a binding that evaluates equations (_BY_EQUATIONS),
        memoised as :meth:`nested` is: None when something particular to this evaluation can
        reach it (then it is read as any input is)."""
        reach = _binding_reach(name)
        if (
            not reach.isdisjoint(self.overrides)
            or not reach.isdisjoint(self._replaced)
            or not reach.isdisjoint(self._stack)
        ):
            return None
        key = ("binding", name, self.keep, version())
        hit = self._reads.get(key)
        sym, binding = lookup_symbol(name), BINDINGS[name]
        if hit is not None and hit[0] is sym and hit[1] is binding:
            reads.note_all(hit[3])
            self._adopt(hit[2])
            return self._values[name]
        _, entries, read = self._inside(lambda inside: inside._read_input(name, binding))
        if all(type(e[1]) in (float, int) for e in entries):
            self._reads[key] = (sym, binding, entries, read)
        return self._values[name]

    def _inside(self, evaluate):
        """``evaluate(resolver)`` in a resolver of its own on this choice of presets (no
        overrides; the same inputs kept and replaced, none of which it reaches), so that it reads
        and notes everything it uses: (what it gives, the inputs it used, the preset fields it
        read). Those inputs are added to this evaluation's, even when it raises."""
        inside = Resolver(self.root, self.presets, self.chosen, {}, self._reads)
        inside.keep = self.keep
        inside._replaced = self._replaced
        with reads.recording(quiet=True) as read:
            try:
                q = evaluate(inside)
            finally:  # what it read before an error is this evaluation's too
                entries = tuple(
                    (name, i.base._magnitude, i.base._units, i.origin, i.source, i.symbol)
                    for name, i in inside.used.items()
                )
                self._adopt(entries)
        return q, entries, frozenset(read)

    def _adopt(self, entries) -> None:
        """Add the inputs a nested evaluation used (new Quantities) that this one lacks."""
        for name, magnitude, units, origin, source, sym in entries:
            if name not in self._values:
                q = new_quantity(_fresh(magnitude), units)
                self._values[name] = q
                self.used[name] = Input(q, origin, source, sym)

    def _without(self, eq: Equation, args, magnitudes, missing) -> pint.Quantity:
        """``eq``'s value when the inputs it lacks drop out at the values it has (a dense
        model's routed share of 0 makes the experts a batch touches irrelevant, so no batch is
        asked for); else the first missing input's error. Only on this error path is sympy
        asked to substitute (``xreplace`` with Floats: the constructors simplify as ``subs``
        would, without its search, 70 times faster over the catalogue)."""
        known = {s.sym: m for s, m in zip(args, magnitudes, strict=True) if m is not None}
        if any(type(m) is not float for m in known.values()):
            raise missing[0]  # an array: no symbolic shortcut, ask for the input
        import sympy as sp

        expr = eq._fused(self.keep)[0].xreplace({s: sp.Float(m) for s, m in known.items()})
        if expr.free_symbols:
            raise missing[0]
        out = float(expr)
        if not np.isfinite(out):
            raise missing[0]
        return Q_(out, eq.lhs.base_unit)

    def record_intermediates(self) -> None:
        """Evaluate and record the intermediate equations the root inlined (for display)."""
        self._stack.append(self.root.lhs.name)
        todo = [s.name for s in self.root.inputs]
        while todo:
            name = todo.pop(0)
            inner = defining(name)
            if inner is None or name in self.keep or name in self._stack:
                continue
            try:
                self.quantity(name)
            except MissingInput:  # an intermediate the value did not need (see _without)
                continue
            todo += [s.name for s in inner.inputs]
        self._stack.pop()

    def quantity(self, name: str) -> pint.Quantity:
        """The value of input ``name`` in base units (cached), recording its origin."""
        if name in self._values:
            return self._values[name]
        binding = BINDINGS.get(name)
        if (
            binding is not None
            and binding.read in _BY_EQUATIONS
            and defining(name) is None
            and (q := self._by(name)) is not None
        ):
            return q
        return self._read_input(name, binding)

    def _read_input(self, name: str, binding: Binding | None) -> pint.Quantity:
        """:meth:`quantity` when it was not read before (nor through :meth:`_by`)."""
        sym = lookup_symbol(name)
        inner = defining(name)
        replaced = self._replaced
        key = None  # set for a value read from the chosen presets alone: memoised under it
        if name in self.overrides:
            q, origin, source = self.overrides[name], "given", ""
        elif name in replaced:
            q, origin, source = self._replacement(name, replaced[name]), f"{replaced[name]}", ""
        elif isinstance(sym, Constant):
            key = (name, "constant")
            if (q := self._recall(key, sym)) is not None:
                return q
            q, origin, source = sym.value, "constant", sym.source
        elif inner is not None and name not in self._stack and inner is not self.root:
            q, origin, source = self.nested(inner), f"equation {inner.id}", str(inner.source)
        elif binding is not None and (found := self._bound(name, binding, sym)) is not None:
            if not isinstance(found, tuple):
                return found  # recalled
            q, origin, source = found
            key = (name, binding.read) if binding.read in _PRESETS_ONLY else None
        elif (parameter := self.presets.by_kind["parameter"].get(name)) is not None:
            key = (name, "parameter")
            if (q := self._recall(key, sym)) is not None:
                return q
            q = parameter.value
            if q.dimensionality != sym.dimensionality:
                raise ChalkboardError(
                    f"parameter {name!r} ({parameter.path}) is {q.dimensionality}, "
                    f"expected {sym.dimension}"
                )
            origin, source = f"parameter {name} (default)", parameter.source_of("source")
        else:
            raise MissingInput(self._missing(name), name)
        q = convert(q, sym.base_unit)
        if key is not None and type(q.magnitude) in (float, int):
            read = () if key[1] == "constant" else self._read  # noted again on a recall
            if key[1] == "parameter":
                read = (("parameter", name, "value"), ("parameter", name, "source:source"))
            self._reads[key] = (sym, q.magnitude, q._units, origin, source, read)
        self._values[name] = q
        self.used[name] = Input(q, origin, source, sym)
        return q

    def _bound(self, name: str, binding: Binding, sym):
        """What ``binding`` reads: (q, origin, source), None, or the recalled value in base
        units when it reads the chosen presets alone and was read before."""
        if binding.read in _PRESETS_ONLY:
            q = self._recall((name, binding.read), sym)
            if q is not None:
                return q
            with reads.recording(quiet=True) as got:  # the preset fields it reads (units.reads)
                found = binding.read(self)
            self._read = tuple(got)
            return found
        return binding.read(self)

    def _recall(self, key, sym) -> pint.Quantity | None:
        """The value memoised under ``key`` for this choice of presets, recorded as read now
        (a new Quantity each time), or None."""
        hit = self._reads.get(key)
        if hit is None or hit[0] is not sym:
            return None
        _, magnitude, units, origin, source, read = hit
        if read:
            reads.note_all(read)
        q = new_quantity(magnitude, units)
        self._values[sym.name] = q
        self.used[sym.name] = Input(q, origin, source, sym)
        return q

    def _replacement(self, name: str, expr) -> pint.Quantity:
        """The value of an input the root equation replaced by ``expr`` (read, for example, by
        the default chip count, which depends on the batch)."""
        key = ("replacement", name)
        if key not in self.root._compiled:
            self.root._compiled[key] = Equation(
                id=f"{self.root.id}_{name}",
                title=f"{name} in {self.root.id}",
                lhs=lookup_symbol(name),
                rhs=expr,
                chapter=self.root.chapter,
                source=self.root.source,
            )
        return self.value_of(self.root._compiled[key])

    def _missing(self, name: str) -> str:
        sym = lookup_symbol(name)
        hint = f"give it with --set {name}=VALUE (in {sym.display or sym.unit})"
        binding = BINDINGS.get(name)
        if binding is not None and binding.preset is not None:
            hint = f"choose --{binding.preset} or " + hint[len("give it with ") :]
        return f"{self.root.id}: missing input {name!r} ({sym.meaning}); {hint}"
