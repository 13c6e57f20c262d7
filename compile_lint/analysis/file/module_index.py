"""One walk over a whole module, for the questions rules ask about all of it.

Region-scoped rules see only traced functions, but some questions span the file: which
names hold a `torch.compile` result, which ops have a fake implementation, where a
function is called. Each used to be answered by its own walk, per rule; the index walks
the module once, on first use, and keeps the nodes those questions need in source order.
"""

from __future__ import annotations

from typing import Optional, TypeVar, Union, overload

import libcst as cst

from compile_lint.analysis.syntax.walk import WHITESPACE_TYPES, walk

# The node types the index keeps; everything module-wide is answered from these.
INDEXED_TYPES = (cst.Call, cst.Assign, cst.AnnAssign, cst.FunctionDef, cst.Decorator, cst.For)
_Node = TypeVar("_Node", bound=cst.CSTNode)
_Other = TypeVar("_Other", bound=cst.CSTNode)


class ModuleIndex:
    """Calls, assignments, functions, decorators and `for` loops of a module, in source order.

    `enclosing_function[node]` is the innermost function a kept node sits in (None at
    module or class level).
    """

    def __init__(self, module: cst.Module) -> None:
        self.nodes: list[cst.CSTNode] = []
        self.enclosing_function: dict[cst.CSTNode, Optional[cst.FunctionDef]] = {}
        functions: list[cst.FunctionDef] = []
        kept = frozenset(INDEXED_TYPES)  # concrete node classes: no subclasses, so type() is isinstance

        def on_visit(node: cst.CSTNode) -> bool:
            if type(node) in kept:
                self.nodes.append(node)
                self.enclosing_function[node] = functions[-1] if functions else None
            if type(node) is cst.FunctionDef:
                functions.append(node)
            return True

        def on_leave(node: cst.CSTNode) -> None:
            if type(node) is cst.FunctionDef:
                functions.pop()

        walk(module, on_visit, on_leave, WHITESPACE_TYPES)

    @overload
    def of_type(self, kind: type[_Node], /) -> list[_Node]: ...

    @overload
    def of_type(self, kind: type[_Node], other: type[_Other], /) -> list[Union[_Node, _Other]]: ...

    @overload
    def of_type(self, *types: type) -> list[cst.CSTNode]: ...

    def of_type(self, *types: type) -> list:
        """The kept nodes of `types`, in source order."""
        return [node for node in self.nodes if isinstance(node, types)]

    @property
    def calls(self) -> list[cst.Call]:
        """Every call in the module, in source order."""
        return self.of_type(cst.Call)

    def replay(self, visitor: object, *types: type) -> None:
        """Call `visitor.visit_<Type>(node)` for each kept node of `types`, in source order.

        For collectors written as visitors whose hooks never prune (return nothing): the
        result is what walking the module with them would give, without another walk.
        """
        hooks = {kind: getattr(visitor, f"visit_{kind.__name__}") for kind in types}
        for node in self.nodes:
            hook = hooks.get(type(node))
            if hook is not None:
                hook(node)
