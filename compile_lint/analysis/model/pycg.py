"""The model's call graph in PyCG's JSON: node -> the callees it may call.

As PyCG spells it (github.com/vitsalis/PyCG, whose micro-benchmark scores it): module code is
the node named after the module (`main`, `pkg.mod`, a package's `__init__.py` by the
package's name); functions are `module.qualname` (`main.A.f`, `main.f.g`, `main.<lambda1>`);
a class body that calls something is the node named after the class; a builtin called by
name is `<builtin>.len`; an external name is its import path (`ext.Cls.fun`). Every function
of an analysed module is a node, called or not, and every callee is one too. Calls of
builtins' own methods (`fh.read()`, `d.update()`) and the builtin decorators `staticmethod`,
`classmethod` and `property` are no edges, as in PyCG.
"""

from __future__ import annotations

from typing import Optional

from compile_lint.analysis.model.program import Model
from compile_lint.analysis.model.values import FunctionV, ModuleV

_NO_EDGE = frozenset({"builtins.staticmethod", "builtins.classmethod", "builtins.property",
                      "builtins.property.setter", "builtins.__name__"})


def pycg_graph(model: Model) -> dict[str, list[str]]:
    """Node name -> sorted callee names, for every analysed project module."""
    graph: dict[str, set[str]] = {}
    for path, module in model.modules.items():
        if module is None or module.library or (ModuleV(path), ()) not in model.evaluations:
            continue
        graph.setdefault(module.name, set())
        module.scopes.walk_all()
        for qualname in module.scopes.functions:
            graph.setdefault(f"{module.name}.{_plain(qualname)}", set())
    for caller, calls in model.edges.items():
        module = model.module_of(caller)
        if module is None or module.library:
            continue
        for record in calls.values():
            source = f"{module.name}.{_plain(record.scope)}" if record.scope else module.name
            for target, how in record.targets:
                if how == "dynamo":
                    continue  # a call only Dynamo makes (Python's goes through the metaclass's `__call__`)
                name = _callee_name(model, target)
                if name is None:
                    continue
                graph.setdefault(source, set()).add(name)
                graph.setdefault(name, set())
    return {node: sorted(callees) for node, callees in sorted(graph.items())}


def _plain(qualname: str) -> str:
    """`Cls.f#2` (a name defined again) as PyCG names it: `Cls.f`."""
    return ".".join(part.split("#")[0] for part in qualname.split("."))


def _callee_name(model: Model, target: object) -> Optional[str]:
    if isinstance(target, tuple):
        value = target[0]
        if isinstance(value, FunctionV):
            module = model.modules.get(value.key[0])
            return f"{module.name}.{_plain(value.key[1])}" if module is not None else None
        return None
    if not isinstance(target, str) or target in _NO_EDGE or "<" in target:
        return None
    if target.startswith("builtins."):
        rest = target[len("builtins."):]
        return None if "." in rest else f"<builtin>.{rest}"
    return target
