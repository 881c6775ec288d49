"""The reversible chapter's names for the ways to run a backward pass, in the same words in every
problem (reader 19: three problems defined "checkpointing" three ways). The chapter
(book/templates/chapters/reversible.md.j2) names them: plain backpropagation stores every layer's
internals; checkpointing cuts the layers into segments and keeps each segment's input, and what a
segment holds while it is recomputed sets its compute.
"""

PLAIN = "plain backpropagation (store every layer's internals)"

# the chapter's names, each with what tells it apart; the mechanics are the chapter's lesson
# (reader 22: statements that spell out each scheme's memory rule leave the student nothing)
INPUTS_ONLY_NAME = "checkpointing of layer inputs"  # the bare name, for a problem on its mechanics
INPUTS_ONLY = f"{INPUTS_ONLY_NAME} (keep each segment's input; two extra forward passes)"

WITH_INTERNALS = (
    "checkpointing that holds a segment's internals while it is recomputed (one extra forward pass)"
)

REVERSIBLE = "reversible layers (one extra forward pass)"


def every_nth(n: int) -> str:
    """How a statement names a checkpoint spacing, in the same words in every problem.

    >>> every_nth(2), every_nth(16), every_nth(42), every_nth(11)
    ('every second', 'every 16th', 'every 42nd', 'every 11th')
    """
    words = {2: "second", 3: "third"}
    if n in words:
        return f"every {words[n]}"
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"every {n}{suffix}"
