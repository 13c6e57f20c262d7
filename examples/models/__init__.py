"""A small model package with real torch.compile graph breaks and recompile traps.

Each module also holds clean look-alikes that compile as one graph, so the linter's
precision shows as much as its recall.
"""
