"""JIT2xx: tensor data read into Python (`.item()`, `.tolist()`, data-dependent sizes).
One rule per module, named after its code."""
