"""JIT6xx: side effects and untraceable calls. One rule per module, named after its code."""
