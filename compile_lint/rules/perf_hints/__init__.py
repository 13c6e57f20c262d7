"""JIT8xx: inference performance hints (off by default). One rule per module, named after its code."""
