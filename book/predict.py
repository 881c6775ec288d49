"""A prediction with its error stated: the bound times an achievable fraction, fitted on the rows.

The roofline bound (book.validation) is a ceiling. A prediction keeps its physics and replaces
its idealisations by what a practitioner knows before running:

- matrix multiplies reach a share ``eta[format]`` of the chip's dense peak at the compute
  precision (FP4, FP8 or BF16: each format has its own share);
- attention's FLOPs run at the rate of the KV cache's precision (never faster than the compute
  precision): an FP4 deployment still does attention at FP8 or BF16;
- memory traffic reaches a share ``eta_memory`` of the HBM bandwidth;
- every layer of every step pays a fixed overhead (kernel launches, synchronisation), and a
  replica spread over several chips also pays a collective's latency per layer;
- tensor parallelism all-reduces each layer's output twice, expert parallelism sends each token
  to its experts and back: bytes over the scale-up bandwidth, added to the step (the bound has
  no network term);
- a training run reaches a further share ``training`` of the serving format's matmul rate
  (pipeline bubbles, communication, recomputation).

Predicted step at batch B (each term the bound's own, from the same equations)::

    T(B) = max(W(B)/eta[fmt] + A(B) F/(F_attn eta[attn]), M(B)/eta_memory)
           + n_layers (tau + [n > 1] tau_coll) + C(B)

A throughput with no latency limit runs at the largest batch the replica holds; a throughput
at a measured TPOT at the largest batch whose predicted step meets it (the bound's rule); a
speed per user at its batch. The seven shares and times are fitted by least squares on the
logarithm of measured over predicted, on the rows in the fit only; leave-one-out refits without
each row in turn and predicts it, which is the error a new row should expect.

>>> from units.presets import load
>>> model = fit_rows(load())
>>> 0 < model.params["fp8"] <= 1 and model.params["layer_overhead"] >= 0
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import derivations
from book.validation import (
    ONE_TOKEN_PER_STEP,
    PER_REQUEST,
    Row,
    _only,
    batch_cap,
    bound_inputs,
    tpot_target,
    validate,
)
from units import Q_, ChalkboardError
from units.presets import Preset, Presets, load

FORMATS = {"fp4": "fp4", "mxfp4": "fp4", "fp8": "fp8", "int8": "fp8", "bf16": "bf16"}
# the fitted parameters: shares of peak (0..1] and times per layer per step (s, >= 0)
SHARES = ("fp4", "fp8", "bf16", "memory", "expert_parallel", "latency", "training")
TIMES = ("layer_overhead", "collective")
PARAMS = SHARES + TIMES
GRID = 192  # batches tried between 1 and the replica's cap
# rows the prediction cannot describe: several tokens per step from one weight read
NOT_MODELLED = {"mtp": "speculative decoding (MTP): several tokens per step"}
# rows published on or after this date are kept out of the fit: the true out-of-sample test
HELD_OUT_FROM = "2026"


@dataclass(frozen=True)
class Case:
    """What the prediction needs of one row, on a grid of batches (arrays in seconds)."""

    id: str
    scenario: str
    measured: float  # in the row's unit (token/s/chip, or token/s per user)
    bound: float
    kind: str  # "rate", "user" or "training"
    fmt: str = "bf16"
    attn_fmt: str = "bf16"
    batch: np.ndarray = field(default_factory=lambda: np.ones(1))
    matmul: np.ndarray = field(default_factory=lambda: np.zeros(1))
    attention: np.ndarray = field(default_factory=lambda: np.zeros(1))  # at the attention rate
    memory: np.ndarray = field(default_factory=lambda: np.zeros(1))
    comm: np.ndarray = field(default_factory=lambda: np.zeros(1))
    layers: float = 0.0
    expert_parallel: bool = False  # an MoE whose experts are spread over several chips
    collectives: float = 0.0  # layers that pay a collective's latency (0 on one chip)
    chips: float = 1.0
    target: float | None = None  # the measured TPOT, s
    held_out: bool = False
    excluded: str = ""  # why the row is not in any fit


def _format(precision: str) -> str:
    return FORMATS.get(precision, "bf16")


def _rate(hardware: Preset, precision: str):
    return hardware.get(f"dense_flops_{precision}")


def _serving_case(r: Row, presets: Presets) -> Case:
    row = r.preset
    kw = bound_inputs(row, presets)
    hardware = presets.get("hardware", row.hardware)
    model = presets.get("model", row.model)
    n = kw["n_chips"].to("chip").m
    concurrency = row.get("concurrency")
    if r.unit == "token/s":  # a speed per user at a stated batch
        batch = np.array([concurrency.to("sequence").m if concurrency is not None else 1.0])
    else:
        cap = batch_cap(row, kw, concurrency)
        batch = np.geomspace(min(1.0, cap), cap, GRID) if cap > 1 else np.array([cap])
    b = Q_(batch, "sequence")

    def ev(eq_id, **extra):
        return derivations.get(eq_id).evaluate(**{**_only(eq_id, kw), "batch_size": b, **extra})

    # the decode compute time is linear in the context: doubling it doubles the attention part
    decode = ev("compute_time").to("s").m
    attention = ev("compute_time", context_length=2 * kw["context_length"]).to("s").m - decode
    matmul = decode - attention
    if row.scenario != "decode_only":
        # each output token brings rho prompt tokens at the causal prefill's FLOPs per token
        rho = kw["input_output_ratio"].to("").m
        prompt = row.input_tokens / PER_REQUEST
        per_token = derivations.get("prefill_flops_per_token").evaluate(
            **{**_only("prefill_flops_per_token", kw), "context_length": prompt}
        )
        seconds = (per_token * ONE_TOKEN_PER_STEP * b / (kw["n_chips"] * kw["flops"])).to("s").m
        prompt_matmul = rho * matmul
        matmul = matmul + prompt_matmul
        attention = attention + rho * seconds - prompt_matmul
    # attention at the KV cache's precision, never faster than the compute precision
    compute = kw["compute_precision"]
    fast = _rate(hardware, compute).to("FLOP/s").m
    attn_precision = kw["kv_precision"] if _rate(hardware, kw["kv_precision"]) else "bf16"
    attn_rate = min(fast, (_rate(hardware, attn_precision) or _rate(hardware, compute)).to("FLOP/s").m)
    attention = attention * fast / attn_rate
    if _format(attn_precision) == "fp4" or attn_rate == fast:
        attn_fmt = _format(compute)
    else:
        attn_fmt = _format(attn_precision)
    memory = (ev("weight_fetch_time") + ev("kv_fetch_time")).to("s").m
    layers = float(model.layers)
    comm = _communication(model, hardware, kw, batch, n)
    target = tpot_target(row)
    features = row.get("features", "").split()
    excluded = "; ".join(NOT_MODELLED[f] for f in features if f in NOT_MODELLED)
    return Case(
        id=r.id,
        scenario=row.scenario,
        measured=float(r.measured.m),
        bound=float(r.bound.m),
        kind="user" if r.unit == "token/s" else "rate",
        fmt=_format(compute),
        attn_fmt=attn_fmt,
        batch=batch,
        matmul=matmul,
        attention=attention,
        memory=memory,
        comm=comm,
        layers=layers,
        expert_parallel=bool(model.get("experts_routed")) and n > 1,
        collectives=layers if n > 1 else 0.0,
        chips=n,
        target=None if target is None else target.to("s").m,
        held_out=str(row.get("date", "")) >= HELD_OUT_FROM,
        excluded=excluded,
    )


def _communication(model: Preset, hardware: Preset, kw: dict, batch, n: float) -> np.ndarray:
    """Seconds per step the replica's chips spend moving activations, at the scale-up
    bandwidth: a dense model's tensor parallelism all-reduces two outputs per layer (a ring
    sends 2 (n - 1)/n of each per chip); an MoE's expert parallelism sends each of a chip's
    B/n tokens to its k experts and back (the alltoall_bytes_per_token equation), the share
    (n - 1)/n of them off the chip. One chip sends nothing."""
    if n <= 1:
        return np.zeros_like(batch)
    link = hardware.get("scale_up_bandwidth_per_direction")
    if link is None:
        return np.zeros_like(batch)
    width = max(derivations.get("alltoall_bytes_per_token").evaluate(
        **_only("alltoall_bytes_per_token", kw), experts_active=Q_(1, "expert")
    ).to("byte/token").m / 2, 0.0)  # one activation of d_model values, bytes
    if model.get("experts_routed"):
        moe_layers = model.layers - model.get("dense_layers", 0)
        per_token = derivations.get("alltoall_bytes_per_token").evaluate(
            **_only("alltoall_bytes_per_token", kw)
        ).to("byte/token").m
        sent = moe_layers * per_token * (n - 1) / n * batch / n
    else:
        sent = model.layers * 2 * 2 * (n - 1) / n * width * batch
    return sent / link.to("byte/s").m


def _training_case(r: Row, presets: Presets) -> Case:
    row = r.preset
    return Case(
        id=r.id,
        scenario="training",
        measured=float(r.measured.m),
        bound=float(r.bound.m),
        kind="training",
        fmt=_format(row.get("activations", row.get("weights", "bf16"))),
        held_out=str(row.get("date", "")) >= HELD_OUT_FROM,
        excluded="only an MFU was published" if row.get("throughput_per_chip") is None else "",
    )


def case(r: Row, presets: Presets) -> Case:
    if r.efficiency is None:
        return Case(r.id, r.scenario, float(r.measured.m), 0.0, "none", excluded="no bound")
    if r.scenario == "training":
        return _training_case(r, presets)
    return _serving_case(r, presets)


def predict_case(c: Case, p: dict) -> float:
    """The predicted figure of one case under parameters ``p`` (the row's own unit)."""
    if c.kind == "training":
        return c.bound * p[c.fmt] * p["training"]
    roof = np.maximum(c.matmul / p[c.fmt] + c.attention / p[c.attn_fmt], c.memory / p["memory"])
    if c.expert_parallel:
        roof = roof / p["expert_parallel"]
    step = roof + c.layers * p["layer_overhead"] + c.collectives * p["collective"] + c.comm
    if c.kind == "user":
        return float(ONE_TOKEN_PER_STEP.m / step[0])
    if c.target is None:
        return float(c.batch[-1] / (c.chips * step[-1]))
    # a scheduler holding a TPOT limit keeps the decode steps within a share of it (prefill
    # chunks and queueing take the rest): the largest batch whose step meets that share, with
    # the step linear in the batch between grid points (as in the bound)
    target = c.target * p["latency"]
    ok = np.flatnonzero(step <= target)
    if not len(ok):
        return float(c.batch[0] / (c.chips * step[0]))
    i = int(ok[-1])
    if i == len(step) - 1:
        return float(c.batch[i] / (c.chips * step[i]))
    b0, b1, t0, t1 = c.batch[i], c.batch[i + 1], step[i], step[i + 1]
    batch = b0 + (target - t0) * (b1 - b0) / (t1 - t0)
    return float(batch / (c.chips * target))


# -- fitting ------------------------------------------------------------------------------------


def _unpack(z: np.ndarray) -> dict:
    """Unconstrained numbers to parameters: shares through a logistic (0..1), times through an
    exponential (seconds, > 0)."""
    shares = 1 / (1 + np.exp(-z[: len(SHARES)]))
    times = np.exp(z[len(SHARES) :])
    return dict(zip(PARAMS, [*shares, *times], strict=True))


START = np.array([0.0, 0.5, 1.0, 1.5, 0.0, 1.0, 0.0, np.log(10e-6), np.log(10e-6)])


# the soft-L1 loss's scale: a row missed by more than about this log ratio (x1.5) counts less
# than its square, so a row the model cannot describe does not drag the others
ROBUST = float(np.log(1.5))


def _residuals(z: np.ndarray, cases: list[Case]) -> np.ndarray:
    """Each row's log(predicted / measured), through the soft-L1 loss (sign kept)."""
    p = _unpack(z)
    r = np.array([np.log(predict_case(c, p) / c.measured) for c in cases])
    return np.sign(r) * np.sqrt(2 * ROBUST**2 * (np.sqrt(1 + (r / ROBUST) ** 2) - 1))


def least_squares(cases: list[Case], z0: np.ndarray = START, iterations: int = 60) -> np.ndarray:
    """Levenberg-Marquardt on the log residuals (numpy only; a finite-difference Jacobian)."""
    z, lam = z0.astype(float).copy(), 1e-2
    r = _residuals(z, cases)
    cost = r @ r
    for _ in range(iterations):
        jac = np.empty((len(r), len(z)))
        for j in range(len(z)):
            dz = np.zeros_like(z)
            dz[j] = 1e-5
            jac[:, j] = (_residuals(z + dz, cases) - r) / 1e-5
        g, h = jac.T @ r, jac.T @ jac
        improved = False
        while lam < 1e8:
            step = np.linalg.solve(h + lam * np.diag(np.diag(h) + 1e-9), -g)
            trial = _residuals(z + step, cases)
            if trial @ trial < cost:
                z, r, cost, lam, improved = z + step, trial, trial @ trial, lam / 3, True
                break
            lam *= 4
        if not improved or np.abs(step).max() < 1e-6:
            break
    return z


@dataclass(frozen=True)
class Model:
    """Fitted parameters and the cases behind them."""

    params: dict
    fitted: tuple[str, ...]  # ids of the rows the parameters were fitted on
    z: np.ndarray = field(repr=False, compare=False, default=None)


def fit(cases: list[Case]) -> Model:
    if not cases:
        raise ChalkboardError("no measurement rows to fit the prediction on")
    z = least_squares(cases)
    return Model(_unpack(z), tuple(c.id for c in cases), z)


_CACHE: dict[tuple, dict] = {}


def study(presets: Presets | None = None) -> dict:
    """Cases, the fit on the fitted rows, and each fitted row's leave-one-out prediction
    (computed once per preset set)."""
    presets = presets or load()
    if presets.files in _CACHE:
        return _CACHE[presets.files]
    rows = validate(presets)
    cases = [case(r, presets) for r in rows]
    fitted = [c for c in cases if not c.excluded and not c.held_out]
    model = fit(fitted)
    predicted = {c.id: predict_case(c, model.params) for c in cases if c.kind != "none"}
    loo = {}
    for i, c in enumerate(fitted):
        others = fitted[:i] + fitted[i + 1 :]
        z = least_squares(others, model.z, iterations=20)
        loo[c.id] = predict_case(c, _unpack(z))
    out = {"cases": cases, "model": model, "predicted": predicted, "loo": loo}
    _CACHE[presets.files] = out
    return out


def fit_rows(presets: Presets | None = None) -> Model:
    return study(presets)["model"]


def errors(pairs: list[tuple[float, float]]) -> dict:
    """Ratio errors of (predicted, measured) pairs: each the larger over the smaller."""
    ratios = np.array([max(p / m, m / p) for p, m in pairs])
    if not len(ratios):
        return {"count": 0}
    return {
        "count": int(len(ratios)),
        "median": float(np.median(ratios)),
        "worst": float(ratios.max()),
        "within_1_25": float((ratios <= 1.25).mean()),
        "within_1_5": float((ratios <= 1.5).mean()),
        "p80": float(np.percentile(ratios, 80)),
    }
