"""Reporters: findings as text, concise, JSON, GitHub annotations and SARIF; rule
documentation (`--explain`, docs/rules.md)."""
