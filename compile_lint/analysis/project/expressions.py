"""How an `ast` expression is spelled for the project index.

A callee is kept as spelled (`commons.f`, `self.head.loss`, `super().forward`,
`Search().run`, `self.blocks[]`), a binding as what it names (`a`, `partial(a)` -> `a`,
`Cls(...)` -> `Cls()`, `nn.ModuleList([Block()])` -> `[]Block`). `summariser.py` records
them for the symbol index; what they evaluate to is the program model's.
"""

from __future__ import annotations

import ast
from typing import Optional

# Tensor methods whose result is no tensor.
_PYTHON_METHODS = frozenset({"item", "tolist", "size", "dim", "numel", "ndimension", "__len__", "is_contiguous",
                             "is_floating_point", "data_ptr", "element_size", "get_device", "nelement"})
_SIZE_METHODS = frozenset({"size", "dim", "numel", "ndimension", "__len__"})
_SIZE_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "range", "isinstance", "getattr", "hasattr"})
_PARTIAL = frozenset({"functools.partial", "partial"})
_SIZE_ATTRIBUTES = frozenset({"shape", "ndim", "training", "dtype", "device"})
# nn.Module methods that return the module itself: `Net().eval()` is the `Net` it was called on.
MODULE_SELF_METHODS = frozenset({"eval", "train", "to", "cuda", "cpu", "float", "half", "double", "bfloat16",
                                 "requires_grad_", "apply", "share_memory", "to_empty", "type"})


def dotted_parts(node: ast.AST) -> Optional[list[str]]:
    """["a", "b", "c"] for the `ast` Name/Attribute chain `a.b.c`, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    parts.reverse()
    return parts


def dotted(node: ast.AST) -> Optional[str]:
    """"a.b.c" for the `ast` Name/Attribute chain `a.b.c`, else None."""
    parts = dotted_parts(node)
    return ".".join(parts) if parts else None


def callee_spelling(func: ast.AST) -> Optional[str]:
    """How a call's callee is spelled: `a.b`, `super().m`, `Cls().m`, `self.blocks[]` (an element), or None."""
    name = dotted(func)
    if name is not None:
        return name
    if isinstance(func, ast.Subscript):
        inner = dotted(func.value)
        return f"{inner}[]" if inner else None
    if isinstance(func, ast.Call):
        inner = callee_spelling(func.func)
        if inner in _PARTIAL and func.args:
            return dotted(func.args[0])  # partial(f, ...)(x) calls f
        return None
    if isinstance(func, ast.Attribute):
        receiver = func.value
        if isinstance(receiver, ast.Call):
            made = callee_spelling(receiver.func)
            if made == "super":
                return f"super().{func.attr}"
            if made and "(" not in made:
                return f"{made}().{func.attr}"
        elif isinstance(receiver, ast.Subscript):
            inner = dotted(receiver.value)
            if inner:
                return f"{inner}[].{func.attr}"
    return None


def value_spellings(value: ast.AST, depth: int = 0) -> tuple[str, ...]:
    """What a binding makes a name call: `a`, `a if c else b`, `partial(a, ...)`, `Cls(...)` (an instance)."""
    if depth > 4:
        return ()
    if isinstance(value, ast.IfExp):
        return value_spellings(value.body, depth + 1) + value_spellings(value.orelse, depth + 1)
    name = dotted(value)
    if name is not None:
        return (name,)
    if isinstance(value, ast.Subscript):
        inner = dotted(value.value)
        return (f"{inner}[]",) if inner else ()
    if isinstance(value, ast.Call):
        callee = callee_spelling(value.func)
        if callee is None:
            return ()
        if callee.rsplit(".", 1)[-1] == "partial" and value.args:
            return value_spellings(value.args[0], depth + 1)
        if callee.rsplit(".", 1)[-1] in ("ModuleList", "Sequential"):
            elements = _container_elements(value)
            return tuple(f"[]{e}" for e in elements) if elements else ()
        if "(" not in callee and "[" not in callee:
            return (f"{callee}()",)
        if callee.endswith(tuple(f"().{name}" for name in MODULE_SELF_METHODS)):
            return (f"{callee}()",)  # `Net(...).eval()`: the call graph keeps it only for a module
    return ()


def compiled_spellings(target: ast.AST) -> tuple[str, ...]:
    """What `torch.compile(target)` compiles, as spelled: `fn`, `model`, `Net().eval()`, `f` of
    `partial(f, ...)`; the functions a lambda calls by a plain name (`lambda: solve(f, y0, t)`;
    a lambda's `x.sum()` is no project function anybody could name)."""
    if isinstance(target, ast.Lambda):
        parameters = {arg.arg for arg in ast.walk(target.args) if isinstance(arg, ast.arg)}
        called = (callee_spelling(node.func) for node in ast.walk(target.body) if isinstance(node, ast.Call))
        return tuple(dict.fromkeys(name for name in called
                                   if name and name.isidentifier() and name not in parameters))
    return value_spellings(target)


def _container_elements(call: ast.Call) -> tuple[str, ...]:
    """The class spellings of the modules in `nn.ModuleList([Block() for ...])` / `nn.Sequential(A(), B())`."""
    items: list[ast.AST] = []
    for arg in call.args:
        value = arg.value if isinstance(arg, ast.Starred) else arg
        if isinstance(value, (ast.List, ast.Tuple)):
            items.extend(value.elts)
        elif isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            items.append(value.elt)
        else:
            items.append(value)
    found = []
    for item in items:
        if isinstance(item, ast.Call):
            callee = dotted(item.func)
            if callee:
                found.append(callee)
    return tuple(dict.fromkeys(found))
