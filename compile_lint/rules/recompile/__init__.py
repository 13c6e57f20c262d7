"""JIT5xx: recompile triggers. One rule per module, named after its code."""
