"""Shared by the batching and moe problem files: every figure a decode step of a case reads."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import evaluate, shown
from units import Q_

STEP = ("compute_time", "weight_fetch_time", "kv_fetch_time", "hbm_drain_time")


def figures(**case) -> dict:
    """The inputs the step's equations read for ``case`` (at one sequence unless it sets the
    batch), by their catalogue names: ``n_total``, ``n_active``, ``weight_bytes_per_value``,
    ``kv_bytes_per_token``, ``flops``, ``mem_bandwidth``, ``hbm_capacity``, ...

    >>> from book.format import quantity
    >>> from units.presets import load
    >>> f = figures(hardware="h200", model="llama_3_1_70b", precision="bf16", presets=load())
    >>> quantity(f["hbm_capacity"]), quantity(f["kv_bytes_per_token"].to("kB/token"))
    ('141 GB', '327.7 kB per token')
    """
    case.setdefault("batch_size", Q_(1, "sequence"))
    out = {}
    for equation in STEP:
        result = evaluate(equation, detailed=True, **case)
        out.update({name: used.value for name, used in result.inputs.items()})
    return out


# the units a statement prints a step's figures in
SHOWN_IN = {
    "flops": "PFLOP/s",
    "mem_bandwidth": "TB/s",
    "hbm_capacity": "GB",
    "n_total": "Gparam",
    "n_active": "Gparam",
    "attention_flops_per_token": "MFLOP/token",
    "kv_bytes_per_token": "kB/token",
}


def as_shown(f: dict, *names: str) -> dict:
    """The named figures of ``f`` as the statement prints them (:func:`shown`), so that an
    answer computed from them follows from the page."""
    return {name: shown(f[name].to(SHOWN_IN[name])) for name in names}


def weight_bytes(f: dict):
    """Bytes of all the weights: total parameters times bytes per weight."""
    return (f["n_total"] * f["weight_bytes_per_value"] * Q_(1, "value/parameter")).to("GB")


def chip_name(presets, hardware: str) -> str:
    """The chip's name without the rack's per-GPU note: 'NVIDIA GB200 NVL72'."""
    return presets.get("hardware", hardware).name.replace(" (per GPU)", "")


def size(q) -> str:
    """Bytes as a reader says them: '69.5 MB', '569 GB', '1.44 TB'."""
    q = q.to("GB")
    if q >= Q_(1000, "GB"):
        q = q.to("TB")
    elif q < Q_(1, "GB"):
        q = q.to("MB")
    return quantity(q, 3)


def tokens(context) -> str:
    """A context length exactly, as the model's card gives it: '16,384 tokens'."""
    return context_tokens(context, 6)


def flop_rate(q) -> str:
    """A FLOP rate as a chip's sheet gives it, to four figures so that what a student computes
    from it is the solution's figure: '989.4 TFLOP/s', '2.615 PFLOP/s' (not 2.61, 0.2% off).

    >>> flop_rate(Q_(989.4, "TFLOP/s")), flop_rate(Q_(2614.9, "TFLOP/s"))
    ('989.4 TFLOP/s', '2.615 PFLOP/s')
    """
    q = q.to("TFLOP/s")
    return quantity(q.to("PFLOP/s") if q >= Q_(1000, "TFLOP/s") else q, 4)


def attention_cost(model: str, presets) -> str:
    """Attention's FLOPs as a statement gives them, so a student can count them (the solution
    does), to four figures: 'attention costs 2.621 MFLOP per token of context for each new token'.

    >>> from units.presets import load
    >>> attention_cost("llama_3_1_70b", load())
    'attention costs 2.621 MFLOP per token of context for each new token'
    """
    f = figures(hardware="h100_sxm", model=model, presets=presets)
    per = (f["attention_flops_per_token"] * Q_(1, "token")).to("MFLOP")
    return f"attention costs {quantity(per, 4)} per token of context for each new token"


def kv_shape(model: str, presets) -> str:
    """A GQA or MHA model's cache as its config gives it, for a student to turn into bytes:
    '80 layers, each caching 8 key-value heads of dimension 128'.

    >>> from units.presets import load
    >>> kv_shape("llama_3_1_70b", load())
    '80 layers, each caching 8 key-value heads of dimension 128'
    """
    fields = presets.get("model", model).fields
    return (
        f"{number(fields['layers'])} layers, each caching {number(fields['n_kv_heads'])} "
        f"key-value heads of dimension {number(fields['head_dim'])}"
    )


def kv_values(model: str, presets) -> str:
    """The values a token of context caches, as a product of the config's figures: a key and a
    value per head per layer, '2 × 80 × 8 × 128 values' (the 2 from the chapter's equation).

    >>> from units.presets import load
    >>> kv_values("llama_3_1_70b", load())
    '2 × 80 × 8 × 128 values'
    """
    counted = evaluate("gqa_kv_values_per_token", detailed=True, model=model, presets=presets)
    pair = counted.inputs["kv_vectors_per_token"].value.magnitude  # a key and a value
    fields = presets.get("model", model).fields
    return (
        f"{number(pair)} × {number(fields['layers'])} × {number(fields['n_kv_heads'])} × "
        f"{number(fields['head_dim'])} values"
    )


def plain_gqa(model: str, presets) -> bool:
    """Whether every layer of ``model`` caches full-length keys and values per KV head (GQA or
    MHA, no sliding window): its bytes per token follow from its shape by the chapter's formula.
    """
    spec = presets.get("model", model)
    return spec.get("attention") == "gqa" and not spec.get("sliding_window_layers")


def cache_given(model: str, presets, kv) -> str:
    """The cache as a statement gives it: a GQA or MHA model's shape, for the student to turn
    into bytes; a latent (MLA) or sliding-window cache's bytes per token, which a student cannot
    derive from a shape as simply.

    >>> from units.presets import load
    >>> cache_given("llama_3_1_70b", load(), None)
    'its attention has 80 layers, each caching 8 key-value heads of dimension 128'
    """
    if plain_gqa(model, presets):
        return f"its attention has {kv_shape(model, presets)}"
    return f"its KV cache takes {quantity(kv.to('kB/token'), 4)} of context"


def cache_derived(model: str, presets, kv, per_value) -> str:
    """The bytes a token of context caches, as a solution derives them (or recalls them, for a
    cache the statement gave in bytes).

    >>> from units.presets import load
    >>> from units import Q_
    >>> cache_derived("llama_3_1_70b", load(), Q_(163840, "B/token"), Q_(1, "B/value"))[-40:]
    '128 values at 1 byte per value: 163.8 kB'
    """
    one = (kv * Q_(1, "token")).to("kB")
    if plain_gqa(model, presets):
        return (
            f"a key and a value per KV head per layer, {kv_values(model, presets)} at "
            f"{quantity(per_value.to('B/value'))}: {quantity(one, 4)}"
        )
    return quantity(one, 4)


def windowed(spec, kv, context):
    """For a model with sliding-window layers (gpt-oss): the layers, the tokens each keeps (the
    window, or the whole context if shorter) and the bytes they hold per sequence, at ``kv``
    bytes per token in the full-context layers (the same shape of layer); None without them.
    The chapter's cache per token counts the full-context layers only, right for a long context;
    at 512 tokens gpt-oss's window layers add a quarter (reader 17).

    >>> from units.presets import load
    >>> spec = load().get("model", "gpt_oss_120b")
    >>> layers, kept, held = windowed(spec, Q_(18.4, "kB/token"), Q_(512, "token/sequence"))
    >>> layers, quantity(kept), quantity(held, 3)
    (18, '128 tokens', '2.36 MB per sequence')
    """
    layers = spec.fields.get("sliding_window_layers", 0)
    if not layers:
        return None
    full = spec.fields["layers"] - layers
    kept = min(context * Q_(1, "sequence"), spec.fields["sliding_window"])
    return layers, kept, (kv * kept * layers / full / Q_(1, "sequence")).to("MB/sequence")


def usable_share(presets):
    """The share of HBM an engine fills with weights and caches (vLLM's default), and how a
    statement says it: (0.9, 'an engine fills at most 90% of HBM').

    >>> from units.presets import load
    >>> usable_share(load())
    (0.9, 'an engine fills at most 90% of HBM')
    """
    share = presets.parameter["usable_hbm_share"].value.to("").m
    return share, f"an engine fills at most {number(100 * share)}% of HBM"
