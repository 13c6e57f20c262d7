"""Per-file analysis the rules share: imports, traced regions, value kinds, and one index of the module."""
