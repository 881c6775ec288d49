"""Per-chapter context: what a chapter's page shows beyond its equations.

Each module's ``context(presets)`` returns the worked examples, tables and cited figures of its
chapter, every value computed from equations and presets.
"""

from book.chapters import batching

CONTEXTS = {"batching": batching.context}
