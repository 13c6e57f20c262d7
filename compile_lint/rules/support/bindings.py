"""What a name was made by: `LOCK = threading.Lock()` binds `LOCK` to a threading lock.

Rules about loggers, locks, ctypes libraries and numpy generators recognise an object by
the call that created it (at module level, in the function, or as `self.attr` in the
class), not by how the variable happens to be spelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from compile_lint.analysis.syntax.imports import dotted_name

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


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
    for value in context.bound_values(expr):
        if isinstance(value, cst.Call):
            name = call_name(context, value)
            if name:
                yield name
    yield from (name for name in context.inherited_makers(expr) or () if name)


def made_only_by(context: "FileContext", expr: cst.BaseExpression, names: frozenset[str]) -> bool:
    """True when `expr` is a name or `self.attr` and every value bound to it is a call of one of `names`.

    A value bound otherwise as well (`self.gen = None` beside `torch.Generator()`) makes it False.
    """
    made = list(made_by(context, expr))
    bindings = len(context.bound_values(expr)) + len(context.inherited_makers(expr) or ())
    return bool(made) and len(made) == bindings and all(name in names for name in made)
