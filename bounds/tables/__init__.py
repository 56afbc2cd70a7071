"""Numbers transcribed from the papers, kept apart from the declarations, for the reproductions
that recompute them (one module per paper)."""
