"""Syntax: one walker over libcst trees, import names resolved to qualified names."""
