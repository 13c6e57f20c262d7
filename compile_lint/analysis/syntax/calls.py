"""The calls a function makes: the one walker the regions, the file context and the facts share."""

from __future__ import annotations

from typing import Collection

import libcst as cst

from compile_lint.analysis.syntax.walk import WHITESPACE_TYPES, visit, walk


def calls_in(function: cst.FunctionDef, skip: Collection[cst.CSTNode] = (),
             into_classes: bool = True) -> list[cst.Call]:
    """The calls in `function` (its decorators too), in source order; nested functions left out.

    The subtrees of `skip` are left out too (the regions and the context pass the eager-only
    branches: code compiled runs never reach), and so are classes defined in the function
    unless `into_classes` (the regions leave them out: their methods are not called by
    being defined).
    """
    if not skip:  # nothing to prune but definitions: a visitor's hook table walks faster
        collector = _Calls(function, into_classes)
        visit(function, collector)
        return collector.found
    found: list[cst.Call] = []

    def on_visit(node: cst.CSTNode) -> bool:
        if node in skip:
            return False
        kind = type(node)
        if kind is cst.Call:
            found.append(node)  # type: ignore[arg-type]
        elif kind is cst.FunctionDef:
            return node is function
        elif kind is cst.ClassDef:
            return into_classes
        return True

    walk(function, on_visit, None, WHITESPACE_TYPES)
    return found


class _Calls(cst.CSTVisitor):
    """The calls of one function's body, nested functions (and classes, unless asked) left out."""

    def __init__(self, function: cst.FunctionDef, into_classes: bool) -> None:
        self.function = function
        self.into_classes = into_classes
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.found.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.function

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self.into_classes
