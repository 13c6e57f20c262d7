"""Imports by meaning: resolve the names a file binds to fully qualified names.

`import torch as T`, `from torch import nn` and `from torch.nn import functional as F`
all make `T.nn.functional.relu`, `nn.functional.relu` and `F.relu` resolve to
`torch.nn.functional.relu`, so rules match on what code means, not how it is spelled.
"""

from __future__ import annotations

import builtins
from typing import Optional

import libcst as cst

from compile_lint.analysis.syntax.walk import visit

_BUILTIN_NAMES = frozenset(dir(builtins))


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    # `type() is`: libcst's node classes are ABCs (slow isinstance) and these have no subclasses.
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _module_name(node: cst.ImportFrom) -> str:
    dots = "." * len(node.relative)
    module = dotted_name(node.module) if node.module is not None else ""
    return dots + (module or "")


class ImportMap:
    """Local name -> qualified name, for every import in a file (any nesting depth)."""

    def __init__(self, module: cst.Module) -> None:
        self.names: dict[str, str] = {}
        self.defined: set[str] = set()
        self._collect(module)
        # Names imported at module level when the module runs (also under a top-level `if`/`try`,
        # not under `if TYPE_CHECKING:`), so in scope in every function: `runtime_module_imports`.
        self.module_level: frozenset[str] = frozenset(runtime_module_imports(module))
        # id(node) -> (node, its qualified name): every rule asks about every call's callee.
        # The node is kept so that its id cannot be reused; `names` no longer change.
        self._qualnames: dict[int, tuple[cst.BaseExpression, Optional[str]]] = {}

    def _collect(self, module: cst.Module) -> None:
        collector = _ImportCollector(self)
        visit(module, collector, statements_only=True)  # imports and defs are statements

    def qualname(self, node: cst.BaseExpression) -> Optional[str]:
        """The qualified name `node` refers to, e.g. `torch.nn.functional.relu`, or None.

        Names that are not imported resolve to `builtins.NAME` when they are builtins
        that the file does not rebind, else to None.
        """
        known = self._qualnames.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        found = self._qualname(node)
        self._qualnames[id(node)] = (node, found)
        return found

    def _qualname(self, node: cst.BaseExpression) -> Optional[str]:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.names:
            base = self.names[head]
        elif head in _BUILTIN_NAMES and head not in self.defined:
            base = "builtins." + head
        else:
            return None
        return f"{base}.{rest}" if rest else base

    def local_name_for(self, qualified: str) -> Optional[str]:
        """How this file spells `qualified` through its existing imports, if it can."""
        best: Optional[str] = None
        for local, target in self.names.items():
            if qualified == target:
                return local
            if qualified.startswith(target + "."):
                candidate = local + qualified[len(target):]
                if best is None or len(candidate) < len(best):
                    best = candidate
        return best


class _ImportCollector(cst.CSTVisitor):
    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.imports.names[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                self.imports.names[head] = head

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        module = _module_name(node)
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            # `from . import utils` is ".utils", like `from .utils import f` is ".utils.f".
            self.imports.names[local] = f"{module}{name}" if module.endswith(".") else (
                f"{module}.{name}" if module else name)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.imports.defined.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.imports.defined.add(node.name.value)


def runtime_module_imports(module: cst.Module) -> set[str]:
    """Names an import binds at module level when the module runs (also under a top-level `if`/`try`),
    so in scope in every function: not one under `if TYPE_CHECKING:` (never imported at run time), nor
    one inside a function. A fix that spells a name must find it here, or import it."""
    names: set[str] = set()
    pending: list[cst.CSTNode] = list(module.body)
    while pending:
        node = pending.pop()
        if isinstance(node, cst.If) and dotted_name(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            if node.orelse is not None:
                pending.append(node.orelse)
            continue
        if isinstance(node, (cst.If, cst.Else, cst.Try, cst.ExceptHandler, cst.Finally)):
            pending.extend(node.body.body)
            pending.extend(getattr(node, "handlers", ()))
            for branch in ("orelse", "finalbody"):
                child = getattr(node, branch, None)
                if child is not None:
                    pending.append(child)
        elif isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname is not None else alias.name
                        if isinstance(bound, cst.Name):
                            names.add(bound.value)
                        elif isinstance(bound, cst.Attribute) and alias.asname is None:
                            names.add((dotted_name(bound) or "").split(".")[0])  # `import a.b` binds `a`
    return names
