"""The engine: the one pipeline (files, source text, the cache, the project index, a pool of workers),
the prefilter, one parse and one walk per file for every rule, positions, suppressions, the fix-point
loop, and the entry point (`engine.api`)."""
