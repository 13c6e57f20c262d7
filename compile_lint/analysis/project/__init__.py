"""The project: other files' symbols, and the call graph across files."""
