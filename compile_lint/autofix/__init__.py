"""Autofix: fixes as edits on the libcst tree, applied to a fixed point and written atomically."""
