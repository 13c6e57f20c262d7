"""Shared rule helpers: questions several rules ask of the code (bindings, compile sites,
state on self, tensor data, ...)."""
