"""The program model: one abstract interpretation of the program (see docs/architecture.md)."""
