"""Floor three: the book generator (context, templates, site build) and the ``chalkboard`` CLI."""
