"""The local names an expression reads."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.syntax.walk import iter_nodes


def names_read(expr: cst.CSTNode, skip: Optional[set[int]] = None) -> set[str]:
    """Local names an expression reads (attribute names, keywords and `skip`ped names excluded)."""
    found: set[str] = set()
    skip = set(skip or ())
    for node in iter_nodes(expr):
        if isinstance(node, cst.Attribute):
            skip.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            skip.add(id(node.keyword))
        elif isinstance(node, cst.Name) and id(node) not in skip:
            found.add(node.value)
    return found
