"""One file: its FileContext, traced regions, modes (paths), reaching definitions, call targets
and one index of the module."""
