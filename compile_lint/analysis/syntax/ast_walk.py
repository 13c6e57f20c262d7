"""`ast.walk`'s walk, without its per-node generators: the project index walks every function of every file."""

from __future__ import annotations

import ast
from collections import deque
from typing import Iterator

_AST = ast.AST


def ast_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """Every node of `root`'s tree, `root` first, in exactly the order `ast.walk` gives."""
    pending = deque((root,))
    popleft, append = pending.popleft, pending.append
    while pending:
        node = popleft()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, _AST):
                append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        append(item)
        yield node
