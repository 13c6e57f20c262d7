"""Property reads: `self.dist.variance` on an object of a known class runs the getter of `variance`.

The summariser keeps each attribute read of a function (`self.x`, `self.a.b`, `dist.mean`
with `dist` a local or a parameter; not a call's callee, not a module's attribute, not an
attribute every tensor or module has) once, as a call site spelled `READ` + the dotted
name. Resolved over the project, a read calls a function only when its receiver is an
instance of a project class whose attribute of that name is a `@property` (or a
`cached_property`) getter: the class's or a base's, and for a read on `self` also the
getters of the same name that subclasses define. A property with a setter (both `def`s
share one name, the summary keeps the last) is not followed: its getter's body is not
the function the summary holds.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Container, Optional

from compile_lint.analysis.project.expressions import dotted
from compile_lint.analysis.project.summary import CallSite, FunctionInfo

if TYPE_CHECKING:
    from compile_lint.analysis.project.callgraph import CallGraph, Key

READ = "@"  # the prefix of a call site that is an attribute read
# Attributes of every tensor or module (and dunders): reading them calls no project getter.
_DATA_ATTRIBUTES = frozenset({
    "shape", "dtype", "device", "T", "mT", "H", "ndim", "data", "grad", "weight", "bias", "training",
    "requires_grad", "is_cuda", "real", "imag", "config", "layout", "is_sparse",
})
_MAX_PARTS = 3


def read_spelling(node: ast.Attribute, module_names: Container[str]) -> Optional[str]:
    """The spelling of an attribute read worth keeping (`self.dist.variance`), or None."""
    if type(node.ctx) is not ast.Load or node.attr in _DATA_ATTRIBUTES or node.attr.startswith("__"):
        return None
    spelling = dotted(node)
    if spelling is None or spelling.count(".") >= _MAX_PARTS:
        return None
    if spelling.partition(".")[0] in module_names:  # `torch.float32`, `math.pi`, `Cls.attr`
        return None
    return READ + spelling


def is_property(function: Optional[FunctionInfo]) -> bool:
    """Whether the function is a property getter (`@property`, `@functools.cached_property`)."""
    return function is not None and any(
        decorator == "property" or decorator.endswith("cached_property") for decorator in function.decorators)


def getter_targets(graph: "CallGraph", key: "Key", scope: FunctionInfo, read: CallSite) -> list["Key"]:
    """The property getters the attribute read `read` (in function `key`) runs; [] for a plain attribute."""
    receiver, _, name = read.callee[len(READ):].rpartition(".")
    if name not in graph.property_names():
        return []
    found: dict["Key", None] = {}
    for kind, path, qualname in graph.resolve(key[0], scope, receiver):
        if kind != "instance":  # `Cls.prop` is the property object, not a call of its getter
            continue
        method = graph.method(path, qualname, name)
        if method is not None and is_property(graph.function(method)):
            found[method] = None
        if receiver == "self":  # an object of a subclass runs the subclass's getter
            for override in graph.overrides(path, qualname, name):
                if is_property(graph.function(override)):
                    found[override] = None
    return list(found)
