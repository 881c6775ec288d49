"""The reversible chapter's names for the ways to run a backward pass, in the same words in every
problem (reader 19: three problems defined "checkpointing" three ways). The chapter
(book/templates/chapters/reversible.md.j2) names them: plain backpropagation stores every layer's
internals; checkpointing cuts the layers into segments and keeps each segment's input, and what a
segment holds while it is recomputed sets its compute.
"""

PLAIN = "plain backpropagation (store every layer's internals; nothing is re-run)"

INPUTS_ONLY = (
    "checkpointing of layer inputs (cut the layers into segments and keep each segment's "
    "input; on the way back re-run a segment to rebuild its layers' inputs, then run each "
    "layer forward again for its internals while its gradient is taken: two extra forward "
    "passes)"
)

WITH_INTERNALS = (
    "checkpointing that holds a segment's internals (cut the layers into segments and keep "
    "each segment's input; on the way back re-run one segment at a time, holding its layers' "
    "internals while their gradients are taken: one extra forward pass)"
)

REVERSIBLE = (
    "reversible layers (rebuild each layer's input, and its internals with it, from its "
    "output: one extra forward pass)"
)
