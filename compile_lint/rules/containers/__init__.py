"""JIT3xx: lists and dicts. One rule per module, named after its code."""
