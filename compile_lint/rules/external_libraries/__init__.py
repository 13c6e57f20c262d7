"""JIT4xx: calls into libraries Dynamo cannot trace. One rule per module, named after its code."""
