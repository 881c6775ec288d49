"""Chapter G's context: reversible networks against stored and checkpointed activations.

One training sequence of Llama 3.1 70B at the default context, BF16 activations: what ordinary
backpropagation stores, what activation checkpointing stores for one more forward pass, and what
a reversible network stores for the same compute. Then the reverse trade, the KV cache, on the
same model.

>>> from units.presets import load
>>> ctx = context(load())
>>> ctx["model"], ctx["layers"]
('Llama 3.1 70B', '80 layers')
>>> ctx["layer_ratio"] == ctx["layers_count"]
True
"""

import numpy as np

from book.context import Evaluator
from book.format import chip_name, context_tokens, quantity, said, said_number
from units import Q_
from units.presets import Presets

MODEL = "llama_3_1_70b"
HARDWARE = "h100_sxm"
TRAIN_BATCH = Q_(1, "sequence")
EXERCISE_BATCH = Q_(4, "sequence")  # exercise 1: a larger per-replica batch
EXERCISE_ZERO_CHIPS = 64  # exercise 1: the data-parallel chips the training state is sharded over
EXERCISE_MODEL = "llama_3_1_405b"  # exercise 3: the KV cache trade on a larger model
STREAMS = 2  # a reversible layer carries two residual streams (x, y), each d wide
GRADIENTS = 2  # a layer running backwards holds its output's gradient and its input's
ONE_LAYER = Q_(1, "layer")
LAYER_SWEEP = (4, 1000)  # the figure's depths (square-root checkpointing needs four or more)


def memory_cases(presets: Presets, batch=TRAIN_BATCH) -> dict:
    """The activation memory of one training replica, as quantities (bytes), for ``batch``.

    ``plain`` counts layer inputs (the lecture's *O*(L)); ``ckpt`` checkpoints layer inputs in
    the best whole number of segments (two extra forward passes), ``ckpt_full`` in the best
    whole number of segments that each keep their internals while recomputed (one extra forward
    pass, Chen et al.); ``rev`` is the reversible network's last output. ``stored`` is every
    activation without recomputation, at ``factor`` bytes per residual-stream value (Llama's
    layer counted tensor by tensor); ``buffer`` is one layer's internals, which any scheme that
    recomputes holds while that layer runs backwards. ``rev_two`` is the reversible network's last
    output with both of its streams kept at the full width, as in the lecture's picture and the
    Reformer (``rev`` counts one, as a RevNet that splits the width into two halves does).
    ``segments`` and ``segments_full`` are the whole segment counts of ``ckpt`` and ``ckpt_full``.
    ``rerun`` is what keeping every layer's input and re-running each layer on the way back holds
    at its peak, and ``ckpt_rerun`` the same for checkpoints of layer inputs: the kept inputs
    plus one layer's internals, whose first tensor (the norm's input) is that layer's input,
    already kept, so it is counted once. The pipeline chapter counts recomputation with these.

    >>> from units.presets import load
    >>> m = memory_cases(load())
    >>> [float(round(m[k].to("GB").m, 3)) for k in ("plain", "ckpt", "ckpt_full", "rev")]
    [10.737, 2.282, 10.67, 0.134]
    >>> [float(round(m[k].to("GB").m, 3)) for k in ("rerun", "ckpt_rerun")]
    [13.321, 4.865]
    >>> m["segments"], m["segments_full"], m["factor"]
    (9, 40, <Quantity(40.5, 'byte / value')>)
    """
    ev = Evaluator(presets, model=MODEL, batch_size=batch)
    factor = Evaluator(presets, model=MODEL).q("gated_activation_bytes_factor").to("byte/value")
    stored = ev.q("full_activation_memory", activation_bytes_factor=factor)
    buffer = ev.q("full_activation_memory", activation_bytes_factor=factor, n_layers=ONE_LAYER)
    rev = ev.q("revnet_activation_memory")
    layers = presets.get("model", MODEL).layers
    k_in, ckpt = whole_segments(layers, rev, rev)
    k_full, ckpt_full = whole_segments(layers, buffer, rev)
    return {
        "factor": factor,
        "stored": stored,
        "plain": ev.q("activation_memory"),
        "ckpt": ckpt,
        "segments": k_in,
        "ckpt_full": ckpt_full,
        "segments_full": k_full,
        "rev": rev,
        "rev_two": STREAMS * rev,
        "buffer": buffer,
        "rerun": held_rerunning(ev.q("activation_memory"), buffer, rev),
        "ckpt_rerun": held_rerunning(ckpt, buffer, rev),
    }


def held_rerunning(inputs, internals, layer_input):
    """What a backward pass holds while it re-runs one layer from a kept input: the kept
    ``inputs``, plus that layer's ``internals`` without their first tensor, the layer's own
    input, which is among the kept ones. Any one unit, or plain numbers.

    >>> held_rerunning(80 * 2.0, 40.5, 2.0)  # Llama 3.1 70B: 80 inputs and one layer, per value
    198.5
    """
    return inputs + internals - layer_input


def whole_segments(layers: int, per_layer, checkpoint):
    """The best whole number of checkpointing segments for ``layers`` layers, and the memory it
    holds: K checkpoints of ``checkpoint`` each, plus the largest segment's layers (a whole
    number, ceil(layers / K)) at ``per_layer`` each while that segment is recomputed, less one
    checkpoint: the segment's first layer input is its checkpoint, and ``per_layer`` (a layer's
    input, or its internals, which start with its input) already counts it. The
    catalogue's checkpoint_activation_memory takes K = sqrt(M_act / checkpoint) free, the
    continuous optimum; a network can only be cut into whole segments of whole layers. Ties go to
    the K nearest that optimum. Any one unit, or plain numbers.

    >>> whole_segments(80, 1.0, 1.0)  # layer inputs only: 9 segments of 8 or 9 layers, 17 inputs
    (9, 17.0)
    >>> whole_segments(80, 40.5, 2.0)  # Llama 3.1 70B's internals over its input: 40 of 2 layers
    (40, 159.0)
    >>> whole_segments(4, 100.0, 1.0)  # shallow: one segment per layer
    (4, 103.0)
    """
    best = layers * per_layer / checkpoint  # K squared at the continuous optimum

    def held(k: int):
        return (k - 1) * checkpoint + -(-layers // k) * per_layer

    def rank(k: int):
        return (round(float(held(k) / checkpoint), 9), abs(k * k - best))

    # the rank's first part, in one sweep over every K (up to rounding), keeps only the K near
    # its least value; the exact rank then chooses among those, as over every K
    ks = np.arange(1, layers + 1)
    approx = (ks - 1) + -(-layers // ks) * float(per_layer / checkpoint)
    least = approx.min()
    near = ks[approx <= least + abs(least) * 1e-12 + 1e-6]
    k = min((int(k) for k in near), key=rank)
    return k, held(k)


def segment_sizes(layers: int, segments: int) -> str:
    """How many layers each of ``segments`` whole segments holds, as prose says it.

    >>> segment_sizes(80, 40), segment_sizes(80, 9)
    ('2 layers each', '8 or 9 layers')
    """
    small, large = layers // segments, -(-layers // segments)
    if small == large:
        return f"{said_number(small)} layers each"
    return f"{said_number(small)} or {said_number(large)} layers"


def checkpointed_memory(n_layers: int, every: float, layer_input: float) -> float:
    """Checkpointing whose recomputed segment keeps its internals, at its best whole segment
    count, for a network of ``n_layers`` layers holding ``every`` in all (any one unit): one
    layer's internals are every over n_layers. A network has at most one segment per layer, so a
    shallow one checkpoints every layer's input and holds one layer's internals: from two layers
    on, never less than a reversible network holds.

    >>> checkpointed_memory(80, 80 * 40.5, 2.0)  # Llama 3.1 70B, in units of one layer's values
    159.0
    >>> checkpointed_memory(4, 400.0, 1.0)  # K would be 20 > 4 layers
    103.0
    """
    return whole_segments(n_layers, every / n_layers, layer_input)[1]


def share_words(x: float) -> str:
    """A share as a sentence says it: a simple fraction in words when ``x`` is one (within
    0.5%), else the number.

    >>> share_words(0.25), share_words(0.125), share_words(0.5), share_words(0.3712)
    ('a quarter', 'an eighth', 'a half', '0.37')
    """
    names = {2: "a half", 3: "a third", 4: "a quarter", 5: "a fifth", 6: "a sixth"}
    names |= {7: "a seventh", 8: "an eighth", 9: "a ninth", 10: "a tenth"}
    for n, name in names.items():
        if abs(x * n - 1) < 0.005:
            return name
    return said_number(x, 2).said


def exact_ratio(x: float) -> str:
    """A ratio of small whole numbers written as one, else the number.

    >>> exact_ratio(8 / 6), exact_ratio(1.5), exact_ratio(1.3712)
    ('4/3', '3/2', '1.4')
    """
    from fractions import Fraction

    f = Fraction(x).limit_denominator(12)
    if abs(float(f) - x) < 1e-9 * x and f.denominator > 1:
        return f"{f.numerator}/{f.denominator}"
    return said_number(x, 3).said


def _ratio(a, b) -> float:
    return (a / b).to("").magnitude


def printed(q, unit: str = "GB"):
    """``q`` in ``unit`` at three significant figures, as a figure set beside another is
    printed, so that a ratio taken from the printed figures gives the printed ratio.

    >>> printed(Q_(10.67, "GB")), printed(Q_(2986, "MB"))
    (<Quantity(10.7, 'gigabyte')>, <Quantity(2.99, 'gigabyte')>)
    """
    from book.format import number

    return Q_(float(number(q.to(unit).m, 3).replace(",", "")), unit)


def context(presets: Presets) -> dict:
    model = presets.get("model", MODEL)
    hbm = presets.get("hardware", HARDWARE).hbm_capacity
    ev = Evaluator(presets, model=MODEL)
    m = memory_cases(presets)
    x = memory_cases(presets, EXERCISE_BATCH)
    one = Q_(1, "token")
    flops = Evaluator(presets, model=MODEL, training_tokens=one)
    plain_flops = flops.q("training_flops")
    rev_flops = flops.q("revnet_training_flops")
    context_length = presets.parameter["context_length"].value
    # the reverse trade: decode with a KV cache runs one forward pass per token; without it,
    # each token re-runs the forward pass over the whole context (inefficiency 1: no waste)
    infer = Evaluator(presets, model=MODEL, inference_inefficiency=Q_(1, ""))
    per_token = infer.q("inference_flops", inference_tokens=one)
    # the tokens of one sequence's context, and that sequence's cache
    rebuild = infer.q("inference_flops", inference_tokens=context_length * Q_(1, "sequence"))
    kv = ev.q("kv_cache_per_sequence") * Q_(1, "sequence")
    attention = cached_attention(presets, MODEL, context_length)
    state = ev.q("training_state_memory")
    share = state / EXERCISE_ZERO_CHIPS  # one chip's ZeRO share of the training state
    # a tensor-parallel group: the chips of one scale-up domain (an H100 server's eight)
    tp = presets.get("hardware", HARDWARE).scale_up_domain.to("chip").m
    big = presets.get("model", EXERCISE_MODEL)
    big_ev = Evaluator(presets, model=EXERCISE_MODEL, inference_inefficiency=Q_(1, ""))
    big_kv = Evaluator(presets, model=EXERCISE_MODEL).q("kv_cache_per_sequence") * Q_(1, "sequence")
    big_per_token = big_ev.q("inference_flops", inference_tokens=one)
    big_rebuild = big_ev.q("inference_flops", inference_tokens=context_length * Q_(1, "sequence"))
    big_attention = cached_attention(presets, EXERCISE_MODEL, context_length)
    big_plain = Evaluator(presets, model=EXERCISE_MODEL, batch_size=TRAIN_BATCH).q(
        "activation_memory"
    )

    # ZeRO-3's own working memory: the gathered BF16 weights of the layer being computed and its
    # whole BF16 gradient before the reduce-scatter (the model's parameters over its layers);
    # twice that when the next layer's gather and the last layer's reduce overlap the compute
    per_layer = model.params_total / model.layers
    buffers = per_layer * sum(
        presets.parameter[p].value for p in ("train_weight_bytes", "train_grad_bytes")
    )
    buffers_high = 2 * buffers
    # the LM head's logits, outside the transformer layers the table counts: every token of the
    # exercise's batch scores the whole vocabulary, at the activations' bytes per value
    per_value = ev.detailed("layer_activation_bytes").inputs["activation_bytes_per_value"].base
    ex_tokens = (EXERCISE_BATCH * context_length).to("token").m
    logits = Q_(ex_tokens * model.vocab * per_value.to("byte/value").m, "byte")

    def fits(q) -> str:
        # the spare room beside the state and the overlapped buffers with the loss chunked, and
        # whether the LM head's logits, unchunked, would still fit in it
        room = hbm - q - share - buffers_high
        if room <= 0:
            return "does not fit"
        spare = f"{said(room.to('GB')).said} spare"
        if room - logits <= 0:
            return f"fits only with a chunked loss, {spare}"
        return f"fits, {spare} ({said((room - logits).to('GB')).said} with unchunked logits)"

    ex_rows = (
        ("plain backpropagation: every activation stored", x["stored"]),
        ("per-layer checkpointing: every layer's input, each layer re-run", x["rerun"]),
        ("checkpointing at one extra forward pass", x["ckpt_full"]),
        ("reversible", x["rev_two"] + x["buffer"]),
    )
    # re-running each layer, with the state's share and ZeRO-3's buffers (low end)
    rerun = x["rerun"] + share + buffers
    return {
        "vocab": said_number(model.vocab),
        "ex_logits": said(logits.to("GB")),
        "ex_buffers": said(buffers.to("GB")),
        "ex_buffers_high": said(buffers_high.to("GB")),
        "ex_layer_weights": said(
            (per_layer * presets.parameter["train_weight_bytes"].value).to("GB")
        ),
        "ex_layer_grad": said((per_layer * presets.parameter["train_grad_bytes"].value).to("GB")),
        "ex_rerun_logits": said((rerun + logits).to("GB")),
        "ex_rerun_logits_fits": bool(rerun + logits <= hbm),
        "ex_rerun_spare": said((hbm - x["rerun"] - share - buffers_high).to("GB")),
        "ex_rerun_logits_fp32": said((rerun + 2 * logits).to("GB")),
        "o_one": "*O*(1)",  # big-O notation, not a figure
        "schneier": "Bruce Schneier's 'Memo to the Amateur Cipher Designer' (Crypto-Gram, "
        "October 1998)",
        "chen": "Chen et al., 'Training Deep Nets with Sublinear Memory Cost', arXiv 1604.06174",
        "korthikanti": "Korthikanti et al., 'Reducing Activation Recomputation in Large "
        "Transformer Models', arXiv 2205.05198",
        "rounds": said_number(model.layers),
        "segments_full": said_number(m["segments_full"]),
        "layers_per_segment": segment_sizes(model.layers, m["segments_full"]),
        "segments_in_sizes": segment_sizes(model.layers, m["segments"]),
        "segments_formula": said_number(_ratio(m["plain"], m["rev"]) ** 0.5, 2),
        "segments_full_formula": said_number(_ratio(m["stored"], m["rev"]) ** 0.5, 2),
        "ckpt_full_formula": said(
            Evaluator(presets, model=MODEL, batch_size=TRAIN_BATCH)
            .q("checkpoint_activation_memory", activation_memory=m["stored"])
            .to("GB")
        ),
        "rev_two": said(m["rev_two"].to("MB")),
        "zero_chips": said_number(EXERCISE_ZERO_CHIPS),
        "state_share": said(share.to("GB")),
        "ex_verdicts": [
            {
                "name": name,
                "held": said(printed(q)),
                "total": said((q + share + buffers).to("GB")),
                "total_high": said((q + share + buffers_high).to("GB")),
                "verdict": fits(q),
            }
            for name, q in ex_rows
        ],
        "big_model": big.name,
        "big_kv": said(big_kv.to("GB")),
        "big_kv_over_plain": share_words(_ratio(big_kv, big_plain)),
        "big_per_token_flops": said(big_per_token),
        "big_rebuild_flops": said(big_rebuild),
        "fwd_per_param": said_number(
            (per_token / (model.params_active * one)).to("FLOP/parameter/token").m
        ),
        "model": model.name,
        "layers": f"{model.layers} layers",
        "layers_count": said_number(model.layers),
        "d_model": said_number(model.d_model),
        "context": context_tokens(context_length),
        "batch": said(TRAIN_BATCH),
        "bytes_per_value": said(
            ev.detailed("layer_activation_bytes").inputs["activation_bytes_per_value"].base
        ),
        "layer_bytes": ev.text("layer_activation_bytes"),
        "act_factor": quantity(m["factor"]),
        # the same factor as a product's first term: bytes per value, times tokens, times values
        "act_factor_bare": said(m["factor"] * Q_(1, "value")),
        # Korthikanti et al.'s count for a GPT layer (GeLU MLP of 4 d, dropout), for comparison
        "gpt_factor_bare": said(
            presets.parameter["activation_bytes_factor"].value * Q_(1, "value")
        ),
        "d_ff": said_number(model.d_ff),
        "kv_heads": said_number(model.n_kv_heads),
        "q_heads": said_number(model.n_heads),
        "kv_head_share": share_words(model.n_kv_heads / model.n_heads),
        # the training state's bytes per parameter: BF16 weights and gradients, FP32 master copy
        # and Adam's two FP32 moments
        "bytes_per_param": said(
            sum(
                presets.parameter[p].value
                for p in ("train_weight_bytes", "train_grad_bytes", "optimizer_bytes")
            )
        ),
        "stored": said(m["stored"].to("GB")),
        # three figures everywhere (10.7 GB), so one quantity is never printed two ways
        "plain": said(printed(m["plain"])),
        # the formula's 2 sqrt(n) layer inputs, which count a segment's first input twice
        "ckpt_formula_inputs": said(
            printed(
                Evaluator(presets, model=MODEL, batch_size=TRAIN_BATCH).q(
                    "checkpoint_activation_memory"
                )
            )
        ),
        "ckpt": said(m["ckpt"].to("GB")),
        "rev": said(m["rev"].to("MB")),
        "buffer": said(m["buffer"].to("GB")),
        # one layer's internals beyond its own input, which is among the kept ones
        "buffer_beyond_input": said((m["buffer"] - m["rev"]).to("GB")),
        "segments": said_number(m["segments"]),
        "stored_over_plain": said_number(_ratio(m["stored"], m["plain"]), 3),
        "stored_over_plain_round": said_number(round(_ratio(m["stored"], m["plain"]))),
        "layer_ratio": said_number(_ratio(m["plain"], m["rev"])),
        "plain_over_ckpt": said_number(_ratio(m["plain"], m["ckpt"]), 3),
        "ckpt_over_rev": said_number(_ratio(m["ckpt"], m["rev"]), 3),
        "ckpt_over_rev_round": said_number(round(_ratio(m["ckpt"], m["rev"]))),
        "ckpt_minus_rev": said((m["ckpt"] - m["rev"]).to("GB")),
        "buffer_over_rev": said_number(_ratio(m["buffer"], m["rev"]), 3),
        "ratio_with_buffer": said_number(_ratio(m["ckpt_rerun"], m["rev_two"] + m["buffer"]), 3),
        # the strategies compared with every activation a backward pass needs counted: a layer's
        # internals are held while it runs backwards (once, in every scheme that recomputes)
        "strategies": _strategies(m, plain_flops, per_token, model.params_active * one),
        # the lead at equal compute, from the two figures as printed (10.7 GB against 2.99 GB)
        "equal_lead": said_number(
            _ratio(printed(m["ckpt_full"]), printed(m["rev_two"] + m["buffer"])), 2
        ),
        "per_layer_lead": said_number(_ratio(m["rerun"], m["rev_two"] + m["buffer"]), 2),
        # the activation gradients in flight while a layer runs backwards, left out of the
        # counts above: the gradient arriving at its output and the one it passes to its input,
        # one residual-stream vector each for a one-stream layer, two each for a two-stream one
        "grad_one": said((GRADIENTS * m["rev"]).to("MB")),
        "grad_rev": said((GRADIENTS * m["rev_two"]).to("MB")),
        "equal_lead_grads": said_number(
            _ratio(
                m["ckpt_full"] + GRADIENTS * m["rev"],
                m["rev_two"] + m["buffer"] + GRADIENTS * m["rev_two"],
            ),
            2,
        ),
        "hbm": said(hbm.to("GB")),
        "hardware": chip_name(presets.get("hardware", HARDWARE)),
        "stored_over_hbm": said_number(_ratio(m["stored"], hbm), 3),
        "state": said(state.to("GB")),
        "extra_compute": exact_ratio(_ratio(rev_flops, plain_flops)),
        "plain_per_param": said_number(
            (plain_flops / (model.params_active * one)).to("FLOP/parameter/token").m
        ),
        "rev_per_param": said_number(
            (rev_flops / (model.params_active * one)).to("FLOP/parameter/token").m
        ),
        "kv": said(kv.to("GB")),
        "kv_over_plain": share_words(_ratio(kv, m["plain"])),
        "per_token_flops": said(per_token),
        "rebuild_flops": said(rebuild),
        "rebuild_ratio": said_number(_ratio(rebuild, per_token)),
        "attention_flops": said(attention),
        # the saving with the cached step's attention counted and the rebuild's left out: a floor
        "rebuild_ratio_attention": said_number(_ratio(rebuild, per_token + attention), 2),
        "big_rebuild_ratio": said_number(_ratio(big_rebuild, big_per_token)),
        "big_rebuild_ratio_attention": said_number(
            _ratio(big_rebuild, big_per_token + big_attention), 2
        ),
        "ex_batch": said(EXERCISE_BATCH),
        "ex_stored": said(x["stored"].to("GB")),
        "ex_plain": said(printed(x["plain"])),
        "ex_ckpt": said(x["ckpt"].to("GB")),
        "ex_rev": said(x["rev_two"].to("MB")),
        "ex_buffer": said(printed(x["buffer"])),
        "ex_stored_over_hbm": said_number(_ratio(x["stored"], hbm), 3),
        "ex_plain_over_hbm": said_number(_ratio(x["plain"], hbm), 3),
        "ex_ckpt_over_rev": said_number(_ratio(x["ckpt"], x["rev"]), 3),
        "ex_ckpt_full": said(printed(x["ckpt_full"])),
        "ex_rev_total": said((x["rev_two"] + x["buffer"]).to("GB")),
        # the same sum and its two parts to three figures, so that the parts visibly add up
        "ex_rev_total3": said((x["rev_two"] + x["buffer"]).to("GB"), 3),
        "ex_rev3": said(x["rev_two"].to("GB"), 3),
        "ex_buffer3": said(x["buffer"].to("GB"), 3),
        "ex_plain_total": said((x["rerun"]).to("GB")),
        "ex_equal_lead": said_number(_ratio(x["ckpt_full"], x["rev_two"] + x["buffer"]), 2),
        "ckpt_full": said(printed(m["ckpt_full"])),
        # four figures where two quantities print alike at three: best checkpointing at equal
        # compute (10.67 GB) and every layer's input, the lecture's count (10.74 GB)
        "ckpt_full_precise": said(m["ckpt_full"].to("GB"), 4),
        "plain_precise": said(m["plain"].to("GB"), 4),
        # per-layer checkpointing at its peak, the table's row: every layer input and one
        # layer's internals beyond its input
        "rerun": said(printed(m["rerun"])),
        "rev_total": said(printed(m["rev_two"] + m["buffer"])),
        "ckpt_full_minus_rev": said((m["ckpt_full"] - m["rev_two"] - m["buffer"]).to("GB")),
        # the best whole segment count's two halves: its checkpoints and its largest segment
        "ckpt_full_inputs": said((m["segments_full"] * m["rev"]).to("GB")),
        "ckpt_full_layers": said_number(-(-model.layers // m["segments_full"])),
        "ckpt_full_internals": said((m["ckpt_full"] - m["segments_full"] * m["rev"]).to("GB")),
        # tensor and sequence parallelism over one server's chips (Korthikanti et al.): every
        # activation of a layer is split over the group
        "tp": said_number(tp),
        "stored_tp": said((m["stored"] / tp).to("GB")),
        "ckpt_full_tp": said((m["ckpt_full"] / tp).to("GB")),
        "saving_tp": said(((m["ckpt_full"] - m["rev_two"] - m["buffer"]) / tp).to("GB")),
        "ckpt_tex": checkpoint_tex(),
        "pope_post": "[Reiner Pope's post on neural nets and ciphers]"
        "(https://reiner.org/neural-net-ciphers)",
        "ex_stored_over_state": said_number(_ratio(x["stored"], share), 2),
    }


def cached_attention(presets: Presets, model: str, context_length):
    """The attention FLOPs of one decode step with a KV cache: the new token's queries against
    the whole cached context (grouped-query attention, the compute-time equation's a_dec), which
    a step without the cache would pay too.

    >>> from units.presets import load
    >>> q = cached_attention(load(), MODEL, load().parameter["context_length"].value)
    >>> f"{q.to('GFLOP').m:.3g}"
    '21.5'
    """
    return (
        Evaluator(presets, HARDWARE, model)
        .detailed("compute_time", batch_size=TRAIN_BATCH, n_chips=Q_(1, "chip"))
        .inputs["attention_flops_per_token"]
        .base
        * context_length
        * Q_(1, "sequence")
    ).to("FLOP")


def checkpoint_tex() -> dict:
    """The checkpointing derivation as the chapter writes it: the catalogue's CAS-checked steps,
    with the whole network's memory named M and one checkpoint (one layer's input) m_in, where
    the catalogue writes M_act and M_act^rev (the reversible network's output, of the same
    size). Renaming a symbol keeps each step true; the last line is written as a person writes
    it, 2 sqrt(M m_in), and checked equal to the catalogue's right side.

    >>> tex = checkpoint_tex()
    >>> print(tex["result"])
    M_{\\mathrm{act}}^{\\mathrm{ckpt}} = 2 \\sqrt{M\\, m_{\\mathrm{in}}}
    """
    import sympy as sp

    import derivations
    from derivations.notation import (
        activation_memory,
        checkpoint_activation_memory,
        checkpoint_segments,
        n_layers,
        revnet_activation_memory,
    )

    whole = sp.Symbol("M", positive=True)
    one = sp.Symbol(r"m_{\mathrm{in}}", positive=True)
    rename = {activation_memory.sym: whole, revnet_activation_memory.sym: one}
    eq = derivations.get("checkpoint_activation_memory")
    k = checkpoint_segments.sym
    relations = {}
    for st in eq.derivation.steps:
        relations.setdefault(st.kind, st.relation.subs(rename))
    M, m, K, n = (derivations.to_latex(x) for x in (whole, one, k, n_layers.sym))
    lhs = derivations.to_latex(checkpoint_activation_memory.sym)
    # each line as a person writes it, beside the checked step it must equal
    written = {
        "given": (f"{lhs} = {K}\\, {m} + \\frac{{{M}}}{{{K}}}", k * one + whole / k, "given"),
        "stationary": (f"{m} - \\frac{{{M}}}{{{K}^2}} = 0", one - whole / k**2, "stationary"),
        "solve": (f"{K} = \\sqrt{{\\frac{{{M}}}{{{m}}}}}", sp.sqrt(whole / one), "solve"),
        "result": (f"{lhs} = 2 \\sqrt{{{M}\\, {m}}}", 2 * sp.sqrt(whole * one), None),
    }
    for name, (_, expr, kind) in written.items():
        checked = relations[kind].rhs if kind else eq.rhs.subs(rename)
        if kind == "stationary":
            checked = relations[kind].lhs
        assert sp.simplify(expr - checked) == 0, f"{name}: {expr} is not {checked}"
    layers = [st.relation for st in eq.derivation.steps if st.kind == "substitute"][0]
    return {
        **{name: tex for name, (tex, _, _) in written.items()},
        "layers": derivations.to_latex(layers.subs(rename)),
        "whole": M,
        "one": m,
    }


def _strategies(m: dict, plain_flops, forward, per) -> list[dict]:
    """Each way to train, its compute in FLOP per parameter per token and the activations it
    holds at its peak, every activation the backward pass needs counted."""

    def flops(extra_forwards: int):
        return said_number(
            ((plain_flops + extra_forwards * forward) / per).to("FLOP/parameter/token").m
        )

    rows = (
        ("plain backpropagation: store every activation", 0, m["stored"]),
        ("per-layer checkpointing: keep each layer's input, re-run each layer", 1, m["rerun"]),
        (
            f"checkpoint {said_number(m['segments_full'])} segments; a recomputed segment keeps "
            "its internals",
            1,
            m["ckpt_full"],
        ),
        (
            f"checkpoint {said_number(m['segments'])} segments of layer inputs; re-run each "
            "layer again",
            2,
            m["ckpt_rerun"],
        ),
        (
            "reversible: rebuild each layer's input from its output (two streams)",
            1,
            # x', which y is rebuilt into, and the recomputed f(y'), beside one layer's
            # internals, whose first tensor is y' itself: the layer's input counted once
            m["rev_two"] + m["buffer"],
        ),
    )
    return [
        {"name": name, "flops": flops(extra), "memory": said(printed(q))} for name, extra, q in rows
    ]
