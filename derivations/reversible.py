"""Chapter G: reversible networks, borrowed from cryptography.

A Feistel round keeps one half and adds a function of it to the other, so it can be undone
whatever the function: f need not be invertible. A reversible (RevNet) transformer block has the
same shape, so the backward pass can recompute each layer's input from its output instead of
storing it: activation memory stops growing with depth, paid for by one more forward pass.

>>> from derivations import get
>>> get("feistel_inverse").rhs
feistel_z - f(feistel_x)
"""

import sympy as sp

from derivations.core import Equation, Source, register
from derivations.derivation import (
    Derivation,
    differentiate,
    given,
    solve,
    stationary,
    substitute,
)
from derivations.notation import (
    activation_bytes_per_value,
    activation_memory,
    backward_flops,
    batch_size,
    checkpoint_activation_memory,
    checkpoint_segments,
    context_length,
    d_ff,
    d_model,
    feistel_x,
    feistel_y,
    feistel_z,
    flops_per_param_token,
    forward_flops,
    gated_activation_bytes_factor,
    head_dim,
    layer_activation_bytes,
    n_active,
    n_heads,
    n_kv_heads,
    n_layers,
    recompute_flops,
    revnet_activation_memory,
    revnet_training_flops,
    revnet_x,
    revnet_x_next,
    revnet_y,
    revnet_y_next,
    training_tokens,
    vectors_per_token,
)

CHAPTER = "reversible"
LECTURE = "Lecture section G, cryptography and RevNets"
SECTION_G = "2:04:02-2:13:00"
REVNET = "Gomez et al. 2017, 'The Reversible Residual Network' (arXiv 1707.04585)"
KORTHIKANTI = (
    "Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models' "
    "(arXiv 2205.05198), section 4.1 (the method: count every tensor a layer keeps for its "
    "backward pass)"
)
LLAMA_LAYER = (
    "meta-llama/llama-models, models/llama3/model.py (at d42f3959): RMSNorm before attention "
    "and before the MLP; wq of n_heads x head_dim, wk and wv of n_kv_heads x head_dim; the MLP "
    "w2(silu(w1(x)) * w3(x)); no dropout"
)

f = sp.Function("f")
x, y, z = feistel_x.sym, feistel_y.sym, feistel_z.sym

register(
    Equation(
        id="feistel_inverse",
        title="Undoing a Feistel round",
        lhs=feistel_y,
        rhs=z - f(x),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_G, "(x, y) -> (x, y + f(x)); inverse y = z - f(x)"),
        assumptions=("f is any function: it is only ever evaluated, never inverted",),
        derivation=Derivation(
            given(z, y + f(x), "the round keeps x and adds f(x) to y"),
            solve(y, z - f(x), "x is still known, so f(x) can be recomputed and subtracted"),
        ),
        summary="The round is undone by recomputing f on the half it kept.",
    )
)

x1, y1 = revnet_x_next.sym, revnet_y_next.sym
xr, yr = revnet_x.sym, revnet_y.sym
register(
    Equation(
        id="revnet_inverse",
        title="Undoing a reversible transformer block",
        lhs=revnet_y,
        rhs=x1 - f(y1),
        chapter=CHAPTER,
        source=Source(REVNET, "", "x' = y + f(x), y' = x"),
        assumptions=("f is the block's attention or MLP: any function",),
        derivation=Derivation(
            given(x1, yr + f(xr), "the block adds f of one stream to the other"),
            substitute({xr: y1}, x1, yr + f(y1), "and hands x on unchanged as y'"),
            solve(yr, x1 - f(y1), "recompute f(y') and subtract it"),
        ),
        summary="x is read off as y'; y is x' minus f(y'). No layer's input needs storing: "
        "the last layer's output rebuilds every earlier one, at the price of recomputing f.",
    )
)

a = layer_activation_bytes.sym
B, L, layers = batch_size.sym, context_length.sym, n_layers.sym
register(
    Equation(
        id="layer_activation_bytes",
        title="Activation bytes stored per token per layer",
        lhs=layer_activation_bytes,
        rhs=vectors_per_token.sym * d_model.sym * activation_bytes_per_value.sym,
        chapter=CHAPTER,
        source=Source(REVNET),
        assumptions=(
            "only each layer's input (the residual stream, nu = 1 vector of d values per token) "
            "is kept, the lecture's count; a real backward pass also holds each layer's "
            "internals, which every strategy pays, so the reversible network's lead is far "
            "smaller than this count's (the chapter counts both)",
            "activations are stored at the compute precision, b_act bytes per value",
        ),
        summary="One residual-stream vector per token per layer.",
    )
)

register(
    Equation(
        id="activation_memory",
        title="Activation memory of every layer's input (per-layer checkpointing)",
        lhs=activation_memory,
        rhs=layers * B * L * a,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_G, "activation memory O(L) in layers"),
        assumptions=("every layer's input is kept until the backward pass reaches it",),
        summary="Grows linearly with depth.",
    )
)

register(
    Equation(
        id="revnet_activation_memory",
        title="Activation memory of a reversible network",
        lhs=revnet_activation_memory,
        rhs=B * L * a,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_G, "activation memory O(1) in layers"),
        assumptions=(
            "the last layer's output is kept (a reversible network does not store nothing: "
            "one layer's activations remain); earlier inputs are recomputed from it",
            "the output is counted as one vector of d values per token, as a RevNet that splits "
            "the width into two halves keeps; two full-width streams, as the lecture draws the "
            "layer, keep twice this",
            "one layer's internals, held while that layer runs backwards, are not counted here: "
            "every strategy that recomputes holds them, and the chapter adds them to each",
        ),
        summary="One layer's worth, whatever the depth: the ratio to keeping every layer's input "
        "is the number of layers. Square-root checkpointing of layer inputs keeps twice the "
        "square root of the layers' worth, at two extra forward passes (one, if each segment "
        "keeps its internals, which holds more).",
    )
)

c_f, N, D = flops_per_param_token.sym, n_active.sym, training_tokens.sym
register(
    Equation(
        id="revnet_training_flops",
        title="Training compute with recomputed activations",
        lhs=revnet_training_flops,
        rhs=4 * c_f * N * D,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_G, "paid by recompute"),
        assumptions=("each layer's forward pass is run once more during the backward pass",),
        derivation=Derivation(
            given(
                revnet_training_flops.sym,
                forward_flops.sym + recompute_flops.sym + backward_flops.sym,
                "forward, recompute on the way back, backward",
            ),
            substitute(
                {
                    forward_flops.sym: c_f * N * D,
                    recompute_flops.sym: c_f * N * D,
                    backward_flops.sym: 2 * c_f * N * D,
                },
                revnet_training_flops.sym,
                4 * c_f * N * D,
                "a recompute costs one more forward pass",
            ),
        ),
        summary="8 N D instead of 6 N D: a third more compute buys memory flat in depth. "
        "KV caching makes the opposite trade.",
    )
)

M_A, M_R, K = activation_memory.sym, revnet_activation_memory.sym, checkpoint_segments.sym
M_CKPT = K * M_R + M_A / K
register(
    Equation(
        id="checkpoint_activation_memory",
        title="Activation memory of square-root checkpointing",
        lhs=checkpoint_activation_memory,
        rhs=2 * sp.sqrt(M_A * M_R),
        chapter=CHAPTER,
        source=Source(
            "Chen et al. 2016, 'Training Deep Nets with Sublinear Memory Cost' (arXiv 1604.06174)"
        ),
        assumptions=(
            "the layers are cut into K equal segments; only each segment's input is stored, and "
            "on the way back each segment is recomputed, one at a time",
            "while a segment is recomputed it holds its share of M_act, M_act over K. If M_act "
            "is every activation (each layer's internals), one recompute suffices: one extra "
            "forward pass, a reversible network's compute (Chen et al.). If M_act counts layer "
            "inputs only, each layer must be re-run once more for its internals: two extra "
            "forward passes, and one layer's internals held besides",
            "a segment's first input is its checkpoint, so the count takes one checkpoint twice: "
            "the chapter's whole-segment count holds one layer input less",
            "K is free to take its best value, the square root of M_act over one layer's input "
            "(of the layer count for layer inputs only, at four layers or more so that it stores "
            "less than keeping every layer's input)",
        ),
        derivation=Derivation(
            given(
                checkpoint_activation_memory.sym,
                M_CKPT,
                "K checkpoints of one layer's input each, plus one segment's layers' inputs",
            ),
            differentiate(
                K,
                sp.Derivative(checkpoint_activation_memory.sym, K),
                M_R - M_A / K**2,
                "differentiate by the segment count",
            ),
            stationary(M_R - M_A / K**2, "at the minimum the slope is zero"),
            solve(K, sp.sqrt(M_A / M_R), "K is the square root of M_act over one layer's input"),
            substitute(
                {M_A: layers * M_R},
                K,
                sp.sqrt(layers),
                "when M_act counts layer inputs only, it is n_layers of them: K is the square "
                "root of the layer count",
            ),
            given(checkpoint_activation_memory.sym, M_CKPT, "the memory again"),
            substitute(
                {K: sp.sqrt(M_A / M_R)},
                checkpoint_activation_memory.sym,
                2 * sp.sqrt(M_A * M_R),
                "at the best K the two halves are equal",
            ),
        ),
        summary="Twice the geometric mean of what the whole network would hold and one layer's "
        "input: grows as the square root of depth, where a reversible network stays flat. "
        "Holding a recomputed segment's internals costs one extra forward pass; holding only "
        "its layers' inputs, two.",
    )
)

b_act = activation_bytes_per_value.sym
d_, h_, h_kv, d_h, f_ff = d_model.sym, n_heads.sym, n_kv_heads.sym, head_dim.sym, d_ff.sym
register(
    Equation(
        id="gated_activation_bytes_factor",
        title="Activation bytes a Llama layer stores per residual-stream value",
        lhs=gated_activation_bytes_factor,
        rhs=b_act * (4 * d_ + 2 * h_ * d_h + 2 * h_kv * d_h + 4 * f_ff) / d_,
        chapter=CHAPTER,
        source=Source(KORTHIKANTI, "", LLAMA_LAYER),
        assumptions=(
            "Korthikanti et al.'s count, made for Llama's layer: every tensor an operation needs "
            "for its gradient is kept, at b_act bytes a value, per token",
            "two RMSNorms: each keeps its input and its output (the next matmul's input), "
            "4 d values",
            "grouped-query attention with FlashAttention: Q (h d_h values), K and V (h_KV d_h "
            "each) and the attention output (h d_h); the scores are not stored, and the "
            "softmax statistics (one FP32 value per head and token) are left out: a few "
            "hundredths of a byte per residual value",
            "the SwiGLU MLP: the gate and up projections, the SiLU of the gate and their "
            "product, d_ff values each, 4 d_ff",
            "no dropout (Korthikanti's GPT layer keeps two dropout masks, a byte per value each)",
            "no tensor or sequence parallelism: one replica holds the whole layer",
        ),
        summary="More than the GPT layer Korthikanti et al. count stores: a gated MLP keeps "
        "four tensors of its hidden width where GeLU keeps two, which outweighs the dropout "
        "masks Llama does without and the smaller keys and values of grouped-query attention.",
    )
)
