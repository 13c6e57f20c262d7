"""JIT1xx: tensor-valued control flow. One rule per module, named after its code."""
