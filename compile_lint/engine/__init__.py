"""The engine: files, source text, the prefilter, one parse and one walk per file for every rule, positions, suppressions, the cache, and the entry point (`engine.api`)."""
