"""The analysis the rules share: syntax helpers, one file's facts, value kinds, and the project's other files."""
