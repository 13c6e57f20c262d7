"""Rewrites of tensor branches as one graph, one module per shape; `dispatch` says which shape gets which."""
