"""What a name was made by: `LOCK = threading.Lock()` binds `LOCK` to a threading lock.

Rules about loggers, locks, ctypes libraries and numpy generators recognise an object by
the call that created it (at module level, in the function, or as `self.attr` in the
class), not by how the variable happens to be spelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from compile_lint.linter.imports import dotted_name

if TYPE_CHECKING:
    from compile_lint.linter.context import FileContext

_CACHE_ATTRIBUTE = "_compile_lint_module_assignments"


def _module_assignments(context: "FileContext") -> dict[str, list[cst.BaseExpression]]:
    """Top-level `NAME = value` bindings (also inside top-level if/try blocks), once per file."""
    cached = getattr(context, _CACHE_ATTRIBUTE, None)
    if cached is not None:
        return cached
    found: dict[str, list[cst.BaseExpression]] = {}

    def scan(statements) -> None:
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign):
                        for target in small.targets:
                            if isinstance(target.target, cst.Name):
                                found.setdefault(target.target.value, []).append(small.value)
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        if isinstance(small.target, cst.Name):
                            found.setdefault(small.target.value, []).append(small.value)
            elif isinstance(statement, (cst.If, cst.Try)):
                scan(statement.body.body)
                for handler in getattr(statement, "handlers", ()):
                    scan(handler.body.body)
                orelse = statement.orelse
                while isinstance(orelse, cst.If):
                    scan(orelse.body.body)
                    orelse = orelse.orelse
                if orelse is not None:
                    scan(orelse.body.body)

    scan(context.module.body)
    setattr(context, _CACHE_ATTRIBUTE, found)
    return found


def assigned_values(context: "FileContext", expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The expressions `expr` (a local or global name, or `self.attr`) was assigned."""
    function = context.function
    if isinstance(expr, cst.Name):
        if function is not None:
            local = context.facts._assigned(function).get(expr.value)
            if local:
                return [value for value in local if isinstance(value, cst.BaseExpression)]
        return list(_module_assignments(context).get(expr.value, ()))
    if (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)
            and expr.value.value == "self"):
        cls = context.owner_class
        if cls is not None:
            return list(context.facts.self_attributes(cls).values.get(expr.attr.value, ()))
    return []


def call_name(context: "FileContext", call: cst.Call) -> Optional[str]:
    """The qualified name a call calls (`np.random.rand` -> `numpy.random.rand`), or its spelling."""
    return context.qualname(call.func) or dotted_name(call.func)


def made_by(context: "FileContext", expr: cst.BaseExpression) -> Iterator[str]:
    """Qualified names of the calls that created `expr`'s value.

    `expr` may be the call itself (`threading.Lock()`), or a name / `self.attr` assigned
    from one; `ctypes.CDLL(path).abs` style chains are followed to their first call.
    """
    while isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Call):
        expr = expr.value
    if isinstance(expr, cst.Call):
        name = call_name(context, expr)
        if name:
            yield name
        return
    for value in assigned_values(context, expr):
        if isinstance(value, cst.Call):
            name = call_name(context, value)
            if name:
                yield name
