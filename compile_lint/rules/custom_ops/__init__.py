"""JIT7xx: custom ops and their registration. One rule per module, named after its code."""
