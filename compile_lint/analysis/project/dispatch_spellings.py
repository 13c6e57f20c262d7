"""How calls dispatched through a table or `getattr` are spelled for the project index (`dispatch.py` resolves them).

- A literal table, `SOLVERS = {"dopri5": Dopri5Solver, "rk4": RK4}` (or a list or tuple of
  classes or functions), binds its name to each value, spelled with the `{}` prefix:
  `{}Dopri5Solver`, `{}RK4`. `SOLVERS[method](...)` is spelled `SOLVERS[]` as any subscript
  call is; a table's element is any of its values.
- `TABLE.get(key, default)` is the element `TABLE[]`, or the default.
- `getattr(obj, "name")` is `obj.name`; `getattr(self, "_reduce_" + name)` and
  `getattr(self, f"_{mode}_step")` are patterns, `self._reduce_*` and `self._*_step`, kept
  only when their constant part is long enough that the methods they match can be listed
  (`getattr(self, name)` names nothing).
- A local bound to a dispatched call, `solver = SOLVERS[method](...)`, holds an instance of
  any of the values: `SOLVERS[]()`.
- A function that returns a dispatch (`return getattr(self, f"{kind}_reduction")`) keeps it
  as its local alias `RETURNED_ALIAS`: calling what the function returns calls any of those.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from compile_lint.analysis.project.expressions import callee_spelling, dotted, value_spellings

TABLE_ENTRY = "{}"  # the prefix of a spelling that is one value of a literal table
RETURNED_ALIAS = "<return>"  # the local alias that holds what a function returns through a dispatch
PATTERN = "*"  # stands for the part of an attribute name `getattr` builds at run time
_MAX_TABLE = 64  # a longer literal is data, not a dispatch table
_MIN_CONSTANT = 2  # letters and digits a `getattr` pattern must fix to be enumerable
_FIELD = re.compile(r"\{[^{}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdrif]")
_IDENTIFIER_PART = re.compile(r"[A-Za-z0-9_*]+")


def table_spellings(value: ast.AST, lists: bool = True) -> tuple[str, ...]:
    """`{}A`, `{}B` for a literal table `{"a": A, "b": B}` (with `lists`, also `[A, B]` and `(A, B)`)."""
    if isinstance(value, ast.Dict):
        items = [item for item in value.values if item is not None]
    elif lists and isinstance(value, (ast.List, ast.Tuple)):
        items = [item for item in value.elts if not isinstance(item, ast.Starred)]
    else:
        return ()
    if len(items) > _MAX_TABLE:
        return ()
    found: dict[str, None] = {}
    for item in items:
        for spelling in value_spellings(item, 1):
            if not spelling.startswith(("[]", TABLE_ENTRY)):
                found[TABLE_ENTRY + spelling] = None
    return tuple(found)


def dispatched_callee(func: ast.AST) -> Optional[str]:
    """The callee spelling of a call whose callee is itself a dispatch: `T.get(k, d)(...)` -> `T[]`,
    `getattr(self, "_a_" + n)(...)` -> `self._a_*`, `self.pick(kind)(...)` -> `self.pick()`; else None."""
    if not isinstance(func, ast.Call):
        return None
    made = dotted(func.func)  # `self._reduction()(x)`: what the function returns is called
    return _table_get(func) or getattr_spelling(func) or (f"{made}()" if made and made != "getattr" else None)


def dispatch_defaults(func: ast.AST) -> tuple[str, ...]:
    """What the default of a dispatch callee makes the call run: `d` of `T.get(k, d)(...)`, `getattr(o, n, d)(...)`."""
    if not isinstance(func, ast.Call) or len(func.args) != (2 if _table_get(func) else 3):
        return ()
    if _table_get(func) is None and getattr_spelling(func) is None:
        return ()
    return tuple(s for s in value_spellings(func.args[-1], 1) if not s.endswith("()"))


def dispatched_spellings(value: ast.AST) -> tuple[str, ...]:
    """What a binding to a dispatch makes its name call: `T[k](...)` -> `T[]()` (an instance of a value),
    `T.get(k, d)` -> `T[]`, `d`; `getattr(self, "_a_" + n)` -> `self._a_*`; () for any other value."""
    if not isinstance(value, ast.Call):
        return ()
    func = value.func
    made = callee_spelling(func) if isinstance(func, ast.Subscript) else dispatched_callee(func)
    if made is not None and "(" not in made:
        return (f"{made}()",) + tuple(f"{default}()" for default in dispatch_defaults(func))
    element = _table_get(value) or getattr_spelling(value)
    if element is None:
        return ()
    return (element,) + dispatch_defaults(value)


def returned_dispatch(value: ast.AST) -> tuple[str, ...]:
    """What a function returning a dispatch hands back to call: `return getattr(self, "_a_" + n)` -> `self._a_*`,
    `return T.get(k, d)` -> `T[]`, `d` (not an instance made: that is a factory's business)."""
    return tuple(spelling for spelling in dispatched_spellings(value) if not spelling.endswith("()"))


def _table_get(call: ast.Call) -> Optional[str]:
    """`T[]` for `T.get(key)` / `T.get(key, default)` with `T` a dotted name, else None."""
    func = call.func
    if (isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(call.args) <= 2 and not call.keywords):
        table = dotted(func.value)
        if table is not None:
            return f"{table}[]"
    return None


def getattr_spelling(call: ast.Call) -> Optional[str]:
    """`obj.name` for `getattr(obj, "name")`, `obj._a_*` for an enumerable pattern, else None."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "getattr" and 2 <= len(call.args) <= 3
            and not call.keywords):
        return None
    receiver = dotted(call.args[0])
    pattern = _name_pattern(call.args[1])
    if receiver is None or pattern is None or not _IDENTIFIER_PART.fullmatch(pattern):
        return None
    if PATTERN in pattern and sum(ch.isalnum() for ch in pattern) < _MIN_CONSTANT:
        return None
    return f"{receiver}.{pattern}"


def _name_pattern(node: ast.AST, depth: int = 0) -> Optional[str]:
    """The attribute name an expression builds, with `*` for each part known only at run time."""
    if depth > 8:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = [part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else PATTERN
                 for part in node.values]
        return _collapse("".join(parts))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _name_pattern(node.left, depth + 1), _name_pattern(node.right, depth + 1)
        return _collapse(f"{left or PATTERN}{right or PATTERN}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
        return _formatted(node.left.value)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant)):
        return _formatted(node.func.value.value)
    return PATTERN


def _formatted(template: object) -> Optional[str]:
    """`"_{}_step"` / `"_%s_step"` -> `_*_step`."""
    return _collapse(_FIELD.sub(PATTERN, template)) if isinstance(template, str) else None


def _collapse(pattern: str) -> str:
    while PATTERN * 2 in pattern:
        pattern = pattern.replace(PATTERN * 2, PATTERN)
    return pattern
