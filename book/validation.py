"""Every published measurement held against its roofline bound: measured, bound, efficiency.

A measurement preset names its chip, model, precisions, workload and measured figure. Its bound
is the validation chapter's equation evaluated on the same inputs:

- a throughput with no latency limit (offline, saturated decode): ``serving_rate_per_chip`` (or
  ``decode_rate_per_chip`` where prefill ran elsewhere) at the largest batch the replica can
  hold (the configured maximum batch, or what fits in HBM beside the weights, whichever is less);
- a throughput at a stated TPOT or per-user speed (server, interactive, latency sweeps): the same
  rate at the largest batch whose step time stays within that TPOT, so the bound is the most any
  system could serve at the measured speed;
- a per-user speed at batch 1: ``serving_rate_per_user``;
- a training rate: ``training_rate_bound`` (6ND at peak FLOP/s), whose ratio is the MFU.

>>> rows = {r.id: r for r in validate()}
>>> r = rows["mlperf_h200_x8_llama2_70b_offline"]
>>> r.unit, 0 < r.efficiency < 1
('token/s/chip', True)
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache

import numpy as np
import pint
from pint.util import UnitsContainer

import derivations
from book.format import number, quantity, unit
from derivations.inputs import reachable
from units import Q_, ChalkboardError, reads
from units.presets import Preset, Presets, load

RATE = "token/s/chip"
CHOICES = ("precision", "weight_precision", "kv_precision", "compute_precision")
USER = "token/s"
# A measurement's lengths and per-user speed are those of one request: one sequence each
# (the equations count context in tokens per sequence and a user's speed per sequence).
PER_REQUEST = Q_(1, "sequence")
# u: the tokens one decode step gives each sequence (one), from the notation
ONE_TOKEN_PER_STEP = derivations.notation.decode_tokens_per_sequence.value
BAND = (10, 90)  # percentiles: the band holding the middle 80% of rows
# The fewest rows a group needs before a median, a band, a trend or a verdict is drawn from it.
# Below it a median is one row's value or the midpoint of two, and a verdict would rest on a row
# or two; the chapter, its figure and `chalkboard validate` print TOO_FEW in its place (enough).
MIN_ROWS = 5
TOO_FEW = "too few rows to test"


def enough(count: int) -> bool:
    """Whether a group of ``count`` rows is large enough for a median or a verdict (MIN_ROWS).

    >>> enough(4), enough(5)
    (False, True)
    """
    return count >= MIN_ROWS


LATENCY_BOUND = ("server", "interactive", "latency_sweep")
GRID = 4001  # batch sizes tried when solving for the largest batch within a TPOT
# a training row that published only an MFU: its rate is that MFU times the bound, so it measures
# nothing the bound could be held against and stays out of the bands (``summary``)
DERIVED = "rate = stated MFU x bound (no throughput published)"

CAUSES = {
    "mtp": "speculative decoding (MTP): several tokens per step, one weight read",
    "prefix_cache": "prefix caching: cached prompt tokens skip prefill",
    "open_division": "open division: the model or method may differ from the preset",
    "interpolated": "interpolated between measured points",
}


@dataclass(frozen=True)
class Row:
    """One measurement with its bound. ``efficiency`` is None when the bound is zero (the
    measured latency is below anything the bound allows)."""

    id: str
    name: str
    scenario: str
    measured: pint.Quantity
    bound: pint.Quantity
    efficiency: float | None
    flags: tuple[str, ...]
    stated: tuple[str, ...]
    assumed: tuple[str, ...]
    batch: float | None = None
    ttft: tuple[pint.Quantity, pint.Quantity] | None = None  # measured mean, lower bound
    mfu_attention: float | None = None  # training: measured over the attention-aware bound
    equation: str = ""
    source: str = ""
    preset: Preset | None = field(default=None, repr=False, compare=False)

    @property
    def unit(self) -> str:
        return USER if self.equation == "user" else RATE

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "measured": float(self.measured.m),
            "bound": float(self.bound.m),
            "unit": self.unit,
            "efficiency": self.efficiency,
            "flags": list(self.flags),
            "scenario": self.scenario,
            "stated": list(self.stated),
            "assumed": list(self.assumed),
            "batch": self.batch,
            "ttft": None
            if self.ttft is None
            else {"measured": self.ttft[0].to("s").m, "bound": self.ttft[1].to("s").m, "unit": "s"},
            "mfu_attention": self.mfu_attention,
            "source": self.source,
        }


@lru_cache(maxsize=1)
def _batch_that_fits():
    """chips_to_fit solved for the batch: the sequences whose KV fits beside the weights."""
    return derivations.get("chips_to_fit").solve_for("batch_size")


def _flops(row: Preset, hardware: Preset, assumed: list[str], act: str | None = None):
    """The chip's dense FLOP/s at the row's compute (activation) precision, or ``act``: a preset
    figure, never a guess (a chip without one is an error naming what to add)."""
    act = act or row.get("activations", row.get("weights", "bf16"))
    value = hardware.get(f"dense_flops_{act}")
    if value is None:
        raise ChalkboardError(
            f"measurement {row.id!r}: hardware {hardware.id!r} has no dense {act} FLOP/s "
            f"figure (dense_flops_{act}); add it in a --presets file"
        )
    return value


def bound_inputs(row: Preset, presets: Presets, changes=None, assumed=None) -> dict:
    """Inputs shared by every serving bound: chips, precisions, context and prompt share
    (``evaluate`` keyword arguments); what had to be assumed is appended to ``assumed``."""
    changes = {} if changes is None else changes
    assumed = [] if assumed is None else assumed
    hardware = presets.get("hardware", row.hardware)
    weights = row.get("weights", "bf16")
    get = {**row.fields, **changes}.get  # a sensitivity sweep may change a precision too
    compute = get("activations") or weights
    kw = {
        "hardware": row.hardware,
        "model": row.model,
        "precision": weights,
        "weight_precision": weights,
        "kv_precision": get("kv") or weights,
        "compute_precision": compute,
        "presets": presets,
        "flops": _flops(row, hardware, assumed, compute),
        "n_chips": Q_(row.get("chips_per_replica", row.chips), "chip"),
    }
    if get("context") is not None:
        kw["context_length"] = get("context") / PER_REQUEST
    else:
        kw["context_length"] = (get("input_tokens") + get("output_tokens") / 2) / PER_REQUEST
        assumed.append("context = input + output / 2 (the mean over a generation)")
    if row.scenario != "decode_only":
        kw["input_output_ratio"] = (get("input_tokens") / get("output_tokens")).to("")
        kw["input_tokens"] = get("input_tokens")
    return kw


def _only(eq_id: str, kw: dict) -> dict:
    """The keyword arguments an equation takes (preset choices and its reachable inputs)."""
    allowed = reachable(derivations.get(eq_id))
    keep = {"hardware", "model", "presets", *CHOICES}
    return {k: v for k, v in kw.items() if k in keep or k in allowed}


def _step(eq_id: str, kw: dict, batch) -> pint.Quantity:
    return derivations.get(eq_id).evaluate(**_only(eq_id, kw), batch_size=Q_(batch, "sequence"))


def _largest_batch(step_id: str, kw: dict, cap: float, target: pint.Quantity) -> float:
    """The largest batch (up to ``cap``) whose step time is within ``target``; 0 if none is.
    Step time rises with the batch, so the batches within the target form one interval."""
    batches = np.geomspace(1e-3, max(cap, 1e-3), GRID)
    times = _step(step_id, kw, batches).to("s").m
    ok = times <= target.to("s").m
    if not ok.any() or batches[ok][0] > 1:
        return 0.0
    i = int(np.flatnonzero(ok)[-1])
    if i == len(batches) - 1:
        return float(cap)
    # between grid points the step time is linear in the batch (each branch is): interpolate
    b0, b1, t0, t1 = batches[i], batches[i + 1], times[i], times[i + 1]
    return float(b0 + (target.to("s").m - t0) * (b1 - b0) / (t1 - t0))


def batch_cap(row: Preset, kw: dict, concurrency=None) -> float:
    """The largest batch a replica can hold, in sequences: what fits in HBM beside the weights
    (chips to fit, solved for the batch), or the configured maximum if that is less."""
    fit = (
        _batch_that_fits()
        .evaluate(**_only("chips_to_fit", kw), chips_to_fit=kw["n_chips"])
        .to("sequence")
        .m
    )
    if fit <= 0:
        raise ChalkboardError(
            f"measurement {row.id!r}: the weights alone overflow the replica's HBM"
        )
    return min(fit, concurrency.to("sequence").m) if concurrency is not None else fit


def tokens_per_step(row: Preset) -> float:
    """Tokens a sequence gains per decode step: 1, or under speculative decoding the stated mean
    accepted per verification step (the step's own token included; 1 to k + 1 of k drafts)."""
    accepted = row.get("accepted_tokens")
    if accepted is None:
        return 1.0
    return float((accepted / (ONE_TOKEN_PER_STEP * PER_REQUEST)).to("").m)


def verified_per_step(row: Preset) -> float:
    """Tokens per sequence a decode step runs through the model: 1 + the k draft tokens."""
    draft = row.get("draft_tokens")
    return (
        1.0 if draft is None else 1.0 + float((draft / (ONE_TOKEN_PER_STEP * PER_REQUEST)).to("").m)
    )


def tpot_target(row: Preset) -> pint.Quantity | None:
    """The time per output token a row was measured at: its TPOT, or one token over its speed
    per user; None for a throughput with no latency limit."""
    target = row.get("tpot")
    if target is None and row.get("per_user_rate") is not None:
        # one step gives the user's one sequence u = 1 token
        target = (ONE_TOKEN_PER_STEP * PER_REQUEST / row.per_user_rate).to("s")
    return target


def _serving(row: Preset, presets: Presets, changes: dict):
    assumed: list[str] = []
    kw = bound_inputs(row, presets, changes, assumed)
    decode_only = row.scenario == "decode_only"
    step_id = "step_time" if decode_only else "serving_step_time"
    rate_id = "decode_rate_per_chip" if decode_only else "serving_rate_per_chip"
    user_id = "decode_rate_per_user" if decode_only else "serving_rate_per_user"
    concurrency = changes.get("concurrency", row.get("concurrency"))
    # speculative decoding: a step gives each sequence `a` tokens, and a step that verifies
    # 1 + k tokens per sequence takes no less than a one-token step, so `a` times the one-token
    # bound (at the batch whose step meets `a` TPOTs) still bounds it
    a = tokens_per_step(row)
    if row.get("throughput_per_chip") is None:  # a per-user speed at a stated batch
        batch = concurrency.to("sequence").m if concurrency is not None else 1.0
        bound = derivations.get(user_id).evaluate(
            **_only(user_id, kw), batch_size=Q_(batch, "sequence")
        )
        bound = (a * bound * PER_REQUEST).to(USER)
        return row.per_user_rate.to(USER), bound, batch, "user", assumed
    cap = batch_cap(row, kw, concurrency)
    target = tpot_target(row)
    batch = cap if target is None else _largest_batch(step_id, kw, cap, a * target)
    if batch <= 0:
        return row.throughput_per_chip.to(RATE), Q_(0.0, RATE), 0.0, rate_id, assumed
    bound = derivations.get(rate_id).evaluate(
        **_only(rate_id, kw), batch_size=Q_(batch, "sequence")
    )
    return row.throughput_per_chip.to(RATE), (a * bound).to(RATE), batch, rate_id, assumed


def _training(row: Preset, presets: Presets):
    assumed: list[str] = []
    hardware = presets.get("hardware", row.hardware)
    bound = (
        derivations.get("training_rate_bound")
        .evaluate(
            hardware=row.hardware,
            model=row.model,
            presets=presets,
            flops=_flops(row, hardware, assumed),
        )
        .to(RATE)
    )
    measured = row.get("throughput_per_chip")
    if measured is not None:
        measured = measured.to(RATE)
    else:  # only an MFU was published
        measured = (row.mfu * bound).to(RATE)
        assumed.append(DERIVED)
    return measured, bound, None, "training_rate_bound", assumed


def _attention_mfu(row: Preset, presets: Presets, measured) -> float | None:
    """The measured rate over the bound that also counts attention FLOPs (GQA models with a
    stated sequence length)."""
    model = presets.get("model", row.model)
    # MLA (DeepSeek) trains on full heads: Q K^T at the query-key width (no-RoPE plus RoPE part),
    # A V at the value width, so the bound's two products of width d_h are one of each at their
    # mean width
    mla = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    width = model.get("head_dim")
    if width is None and all(model.get(k) is not None for k in mla):
        width = (model.qk_nope_head_dim + model.qk_rope_head_dim + model.v_head_dim) / 2
    if row.get("context") is None or width is None:
        return None
    hardware = presets.get("hardware", row.hardware)
    bound = derivations.get("attention_training_rate_bound").evaluate(
        hardware=row.hardware,
        model=row.model,
        presets=presets,
        flops=_flops(row, hardware, []),
        training_sequence=row.context,
        head_dim=width,
    )
    return float((measured / bound).to("").m)


def _ttft(row: Preset, presets: Presets, changes: dict):
    """The measured mean TTFT with its lower bound (the prompt's prefill alone on the replica)."""
    if row.get("ttft") is None or row.scenario == "decode_only":
        return None
    kw = bound_inputs(row, presets, changes)
    # the weight read counts the experts the prompt's tokens touch: the prompt is the batch, its
    # tokens read like a batch of sequences of u = 1 token each
    prompt = {"batch_size": (row.input_tokens / ONE_TOKEN_PER_STEP).to("sequence")}
    return row.ttft.to("ms"), derivations.get("ttft_bound").evaluate(
        **{**_only("ttft_bound", kw), **prompt}
    )


def _flags(row: Preset, presets: Presets, efficiency, bound, ttft=None) -> list[str]:
    features = row.get("features", "").split()
    flags = [f for f in features if f in CAUSES and f != "mtp"]
    if "mtp" in features:
        flags.append("mtp")
    if efficiency is None or efficiency > 1:
        causes = [CAUSES[f] for f in features if f in ("mtp", "prefix_cache")]
        model = presets.get("model", row.model)
        if model.get("experts_routed") and row.scenario != "training":
            causes.append(
                "MoE: at this batch not every expert is read, but weight_fetch_time reads all"
            )
        if row.scenario == "training":
            causes.append("a FLOP count other than 6ND (attention) or a higher peak than preset")
        if not causes:
            causes.append("an input of the bound is wrong for this system (check the row)")
        what = "no batch meets the measured latency" if efficiency is None else "beats the bound"
        flags.insert(0, f"{what}: likely {'; or '.join(causes)}")
    if ttft is not None and ttft[0] < ttft[1]:
        flags.insert(
            0,
            "TTFT below its bound: likely prefix caching or prompts shorter than assumed",
        )
    if row.get("mfu") is not None and row.get("throughput_per_chip") is not None:
        flags.append(f"stated MFU {number(row.mfu.to('').m, 3)} (its own FLOP count and peak)")
    if row.scenario == "training" and row.get("context") is not None:
        flags.append(
            f"attention-aware MFU counts {number(row.context.to('token').m)} tokens per sequence"
        )
    return flags


# A measured figure outside this range of its base units (token/s, token, s) is a typo, not a
# measurement: the bound of such a row would be computed outside any regime the equations hold.
PLAUSIBLE = (1e-9, 1e12)


def _check_row(row: Preset) -> None:
    """Every figure of the row finite, positive and within PLAUSIBLE in base units."""
    low, high = PLAUSIBLE
    for name, value in row.fields.items():
        if not isinstance(value, pint.Quantity):
            continue
        base = float(value.to_base_units().magnitude)
        if not (low <= base <= high):
            raise ChalkboardError(
                f"{name} = {quantity(value)} is not a plausible measurement (one is between "
                f"{low:g} and {high:g} {unit(value.to_base_units().units)})"
            )


def evaluate(row: Preset, presets: Presets | None = None, **changes) -> Row:
    """One measurement against its bound; ``changes`` replace assumed inputs (sensitivity). An
    error names the row and its preset file."""
    try:
        _check_row(row)
        return _evaluate(row, presets, **changes)
    except ChalkboardError as e:
        where = f"{row.path}: " if row.path else ""
        raise ChalkboardError(f"{where}measurement.{row.id}: {e}") from None


def _evaluate(row: Preset, presets: Presets | None = None, **changes) -> Row:
    presets = presets or load()
    if row.scenario == "training":
        measured, bound, batch, eq_id, assumed = _training(row, presets)
    else:
        measured, bound, batch, eq_id, assumed = _serving(row, presets, changes)
    efficiency = None if bound.m <= 0 else float((measured / bound).to("").m)
    ttft = _ttft(row, presets, changes)
    mfu_attention = _attention_mfu(row, presets, measured) if row.scenario == "training" else None
    named = row.get("assumed", "").split()
    listed = ("input_tokens", "output_tokens", "context", "concurrency", "tpot", "per_user_rate")
    stated = [
        n
        for n in ("chips_per_replica", *listed, "weights", "activations", "kv")
        if row.get(n) is not None and n not in named
    ]
    return Row(
        id=row.id,
        name=row.name,
        scenario=row.scenario,
        measured=measured,
        bound=bound,
        efficiency=efficiency,
        flags=tuple(_flags(row, presets, efficiency, bound, ttft)),
        stated=tuple(stated),
        assumed=tuple(named + assumed),
        batch=batch,
        ttft=ttft,
        mfu_attention=mfu_attention,
        equation=eq_id,
        source=row.source_of("source"),
        preset=row,
    )


_VALIDATED: dict[tuple, list[Row]] = reads.ReadsDict()  # by the preset files behind them


def validate(presets: Presets | None = None) -> list[Row]:
    """Every measurement preset against its bound, in file order (computed once per preset set:
    the CLI, the chapter and its figure share it)."""
    presets = presets or load()
    if presets.files not in _VALIDATED:
        with reads.recording():
            measurements = presets.by_kind["measurement"]

            def compute() -> list[dict]:
                return [_row_evaluated(row, presets) for row in measurements.values()]

            found = remembered_recording(
                "validation", VALIDATION_SOURCES, ("rows",), compute, presets
            )
            _VALIDATED[presets.files] = [_row_from(d, measurements[d["id"]]) for d in found]
    return list(_VALIDATED[presets.files])


VALIDATION_SOURCES = ("book/validation.py", "book/format.py")

# a row's data and the evaluations it made, by its id and the preset files (units.reads)
_ROWS: dict[tuple, tuple[dict, tuple]] = reads.ReadsDict()


def _row_evaluated(row: Preset, presets: Presets) -> dict:
    """``_row_data(evaluate(row, presets))``, kept per row with the evaluations it made (recorded
    again each time it is used): after a preset edit (``chalkboard serve``), only the rows that
    read an edited preset are evaluated again."""
    from derivations.core import _RECORDING

    key = (row.id, presets.files)
    if key not in _ROWS:
        with reads.recording():  # the entry keeps this row's reads alone
            with derivations.recording() as made:
                data = _row_data(evaluate(row, presets))
            _ROWS[key] = (data, tuple(made))
    data, made = _ROWS[key]
    outer = _RECORDING.get()
    if outer is not None:
        outer.extend(made)
    return data


def remembered_recording(namespace: str, sources: tuple, key: tuple, compute, presets: Presets):
    """``book.resultcache.remembered`` of ``compute()`` with the evaluations it makes (see
    ``derivations.recording``) kept beside its value and recorded again, in order, each time the
    value is used: a chapter's notebook replays them whether they were made now or before."""
    from book.resultcache import remembered
    from derivations.core import _RECORDING

    def run() -> dict:
        with derivations.recording() as made:
            value = compute()
        return {"value": value, "made": [_evaluation_data(e, presets) for e in made]}

    found = remembered(namespace, sources, key, run, presets.files)
    outer = _RECORDING.get()
    if outer is not None:
        outer.extend(_evaluation_from(d, presets) for d in found["made"])
    return found["value"]


_NUMBERS = {t.__name__: t for t in (int, float, np.float64, np.int64)}


def _datum(value, presets: Presets):
    """A keyword or value of an evaluation as JSON data; anything else is kept as the object
    itself (then the whole result is used and never stored: it is not JSON)."""
    if isinstance(value, str):
        return ["str", value]
    if value is presets:
        return ["presets"]
    if isinstance(value, pint.Quantity) and type(value.m).__name__ in _NUMBERS:
        return ["quantity", type(value.m).__name__, value.m, dict(value._units)]
    array = isinstance(value, pint.Quantity) and isinstance(value.m, np.ndarray)
    if array and value.m.dtype in (np.float64, np.int64):
        # the numbers' bytes (little-endian) in base64: exact, and far quicker to write and
        # read than a list of decimals (the bounds' batch sweeps hold thousands of them)
        m = value.m.astype(value.m.dtype.newbyteorder("<"))
        data = base64.b64encode(m.tobytes()).decode("ascii")
        return ["bytes", str(value.m.dtype), list(value.m.shape), data, dict(value._units)]
    return ["object", value]


def _from_datum(data, presets: Presets):
    kind = data[0]
    if kind == "quantity":
        return Q_(_NUMBERS[data[1]](data[2]), UnitsContainer(data[3]))
    if kind == "array":
        return Q_(np.array(data[2], dtype=data[1]), UnitsContainer(data[3]))
    if kind == "bytes":
        stored = np.frombuffer(base64.b64decode(data[3]), dtype=np.dtype(data[1]).newbyteorder("<"))
        return Q_(stored.astype(data[1]).reshape(data[2]), UnitsContainer(data[4]))
    return {"str": lambda: data[1], "presets": lambda: presets, "object": lambda: data[1]}[kind]()


def _evaluation_data(e, presets: Presets) -> dict:
    return {
        "equation": _equation_data(e.equation),
        "keywords": [[k, _datum(v, presets)] for k, v in e.keywords.items()],
        "value": _datum(e.value, presets),
    }


def _equation_data(eq):
    """A registered equation's id, or a solved one's [id, [unknowns solved for, in order]] read
    from its recipe; any other is kept as the object (not JSON: then nothing is stored)."""
    found = re.fullmatch(r'get\("(\w+)"\)((?:\.solve_for\("\w+"\))*)', eq.recipe)
    if not eq.recipe:
        try:
            return eq.id if derivations.get(eq.id) is eq else eq
        except ChalkboardError:
            return eq
    return [found[1], re.findall(r'solve_for\("(\w+)"\)', found[2])] if found else eq


@lru_cache(maxsize=64)
def _solved(eq_id: str, unknowns: tuple[str, ...]):
    eq = derivations.get(eq_id)
    for name in unknowns:
        eq = eq.solve_for(name)
    return eq


def _equation_from(data):
    if isinstance(data, str):
        return derivations.get(data)
    return _solved(data[0], tuple(data[1])) if isinstance(data, list) else data


def _evaluation_from(data: dict, presets: Presets):
    from derivations.core import Evaluation

    return Evaluation(
        _equation_from(data["equation"]),
        {k: _from_datum(v, presets) for k, v in data["keywords"]},
        _from_datum(data["value"], presets),
    )


def _quantity_data(q: pint.Quantity | None) -> list | None:
    return None if q is None else [q.m, dict(q._units)]


def _quantity_from(data: list | None) -> pint.Quantity | None:
    return None if data is None else Q_(data[0], UnitsContainer(data[1]))


def _row_data(row: Row) -> dict:
    """A row as JSON data that :func:`_row_from` reads back to an equal row (magnitudes with
    the units they were computed in), for the result cache."""
    data = {f.name: getattr(row, f.name) for f in fields(Row) if f.name != "preset"}
    data["measured"], data["bound"] = _quantity_data(row.measured), _quantity_data(row.bound)
    data["ttft"] = None if row.ttft is None else [_quantity_data(q) for q in row.ttft]
    return data


def _row_from(data: dict, preset: Preset) -> Row:
    return Row(
        **{
            **data,
            "measured": _quantity_from(data["measured"]),
            "bound": _quantity_from(data["bound"]),
            "ttft": None if data["ttft"] is None else tuple(map(_quantity_from, data["ttft"])),
            "flags": tuple(data["flags"]),
            "stated": tuple(data["stated"]),
            "assumed": tuple(data["assumed"]),
            "preset": preset,
        }
    )


SWEPT = ("input_tokens", "output_tokens", "context", "concurrency")
# an unpublished precision's plausible other end: the next wider format (an FP4 deployment may
# run some layers, and its attention, in FP8; an FP8 KV cache may be BF16)
WIDER = {"fp4": "fp8", "int8": "bf16", "fp8": "bf16"}
# an assumed batch cap with no stated range is swept from half to twice its value
CAP_FACTOR = 2.0


def sensitivity_ranges(row: Preset, presets: Presets | None = None) -> dict[str, tuple]:
    """Each unpublished input that can move a serving row's bound, with its plausible low and
    high end: a stated ``<field>_low`` / ``<field>_high``; an assumed batch cap from half to
    twice its value; an assumed KV or compute precision and the next wider format (where the
    chip has a rate for it)."""
    named = row.get("assumed", "").split()
    out = {}
    for name in SWEPT:
        if row.get(f"{name}_low") is not None:
            out[name] = (row.get(f"{name}_low"), row.get(f"{name}_high"))
        elif name == "concurrency" and name in named and row.get(name) is not None:
            out[name] = (row.get(name) / CAP_FACTOR, row.get(name) * CAP_FACTOR)
    if row.scenario == "training":
        return out
    hardware = (presets or load()).get("hardware", row.hardware)
    weights = row.get("weights", "bf16")
    for name in ("kv", "activations"):
        now = row.get(name, weights)
        wider = WIDER.get(now)
        rate = name == "kv" or hardware.get(f"dense_flops_{wider}") is not None
        if name in named and wider is not None and rate:
            out[name] = (now, wider)
    return out


def sensitivity(row: Preset, presets: Presets | None = None) -> dict[str, tuple[float, float]]:
    """For each unpublished input with a plausible range (``sensitivity_ranges``): the efficiency
    at its low and high end."""
    presets = presets or load()
    out = {}
    for name, ends in sensitivity_ranges(row, presets).items():
        effs = [evaluate(row, presets, **{name: end}).efficiency for end in ends]
        if None not in effs:
            out[name] = (effs[0], effs[1])
    return out


def derived(r: Row) -> bool:
    """Was the row's rate derived from a stated MFU rather than measured?"""
    return DERIVED in r.assumed


WIDEST = ("FP32", "BF16", "FP16", "FP8", "INT8", "FP4")  # the wider formats first


def peak_format(r: Row) -> str:
    """The number format of the peak a training row's MFU is a share of ("BF16", "FP8", "FP4"):
    the row's compute precision. An FP8 peak is twice a BF16 one and an FP4 peak higher again, so
    MFUs held against different formats are never pooled (``band_group``, ``summary``)."""
    return r.preset.get("activations", r.preset.get("weights", "bf16")).upper()


def by_width(fmt: str) -> int:
    """A sort key putting the wider formats first (``WIDEST``), an unknown one last.

    >>> sorted(["FP4", "BF16", "FP8"], key=by_width)
    ['BF16', 'FP8', 'FP4']
    """
    return WIDEST.index(fmt) if fmt in WIDEST else len(WIDEST)


def band_group(r: Row) -> str:
    """The group a row's efficiency is summed up in: its scenario, training split by the format
    of its peak ("training_bf16", "training_fp4"), as the validation chapter's table and figure
    split it."""
    return f"training_{peak_format(r).lower()}" if r.scenario == "training" else r.scenario


def summary(rows: list[Row]) -> dict[str, dict]:
    """Per group (``band_group``: a scenario, training by the format of its peak, never pooled;
    and all latency-bound scenarios together): the count, the median efficiency and the band
    holding the middle 80% of rows (10th to 90th percentile). A row whose rate was derived from a
    stated MFU (``DERIVED``) is left out: its efficiency is that MFU, not a measurement held
    against the bound. Training groups come widest format first."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        if r.efficiency is None or derived(r):
            continue
        groups.setdefault(band_group(r), []).append(r.efficiency)
        if r.scenario in LATENCY_BOUND:
            groups.setdefault("latency_bound", []).append(r.efficiency)
    training = sorted(
        (g for g in groups if g.startswith("training_")),
        key=lambda g: by_width(g.removeprefix("training_").upper()),
    )
    order = [g for g in groups if not g.startswith("training_")] + training
    out = {}
    for name, values in ((g, groups[g]) for g in order):
        arr = np.asarray(values)
        low, high = np.percentile(arr, BAND)
        out[name] = {
            "count": len(values),
            "median": float(np.median(arr)),
            "low": float(low),
            "high": float(high),
            "above_one": int((arr > 1).sum()),
        }
    return out
