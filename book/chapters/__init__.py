"""Per-chapter context: what a chapter's page shows beyond its equations.

Each module's ``context(presets)`` returns the worked examples, tables and cited figures of its
chapter, every value computed from equations and presets.
"""

from book.chapters import (
    batching,
    long_context,
    moe,
    overtraining,
    pipeline,
    reversible,
    validation,
)

CONTEXTS = {
    "batching": batching.context,
    "moe": moe.context,
    "pipeline": pipeline.context,
    "overtraining": overtraining.context,
    "long_context": long_context.context,
    "reversible": reversible.context,
    "validation": validation.context,
}
