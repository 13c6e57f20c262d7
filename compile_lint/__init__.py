"""compile-lint: find and fix torch.compile graph breaks and recompiles."""

__version__ = "0.1.0"
