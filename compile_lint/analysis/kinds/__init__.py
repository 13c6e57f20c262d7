"""Kinds: what kind of value an expression holds (tensor, shape, data, Python), and the torch tables it is read from."""
