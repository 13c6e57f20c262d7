"""Per-file state shared by every rule: the parse, imports, regions and facts, computed once."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

from compile_lint.linter.facts import Facts, Kind
from compile_lint.linter.imports import ImportMap
from compile_lint.linter.regions import Regions, find_regions
from compile_lint.linter.walk import visit

if TYPE_CHECKING:
    from compile_lint.rules.base import FixPlan, Rule


@dataclass
class PendingFinding:
    """A finding before positions are resolved."""

    rule: "Rule"
    node: cst.CSTNode
    message: str
    fix: Optional["FixPlan"]


class FileContext:
    """One parsed file and the analyses rules share; each is computed lazily, once."""

    def __init__(
        self, path: str, module: cst.Module, module_bases: Iterable[str] = (), source: Optional[str] = None,
    ) -> None:
        self.path = path
        self.module = module
        self.source = source  # the module's text, when known: lets analyses skip work
        self.module_bases = tuple(module_bases)
        self.findings: list[PendingFinding] = []
        self.function_stack: list[cst.FunctionDef] = []

    @cached_property
    def imports(self) -> ImportMap:
        """Local names resolved to qualified names."""
        return ImportMap(self.module)

    @cached_property
    def regions(self) -> Regions:
        """The functions torch.compile traces in this file."""
        return find_regions(self.module, self.imports, self.module_bases, self.source)

    @cached_property
    def facts(self) -> Facts:
        """Kinds of expressions inside traced functions."""
        return Facts(self.imports, self.regions)

    @cached_property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """Child node -> parent node, for the whole module (built on first use)."""
        parents: dict[cst.CSTNode, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = []

        class _Parents(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                if stack:
                    parents[node] = stack[-1]
                stack.append(node)
                return True

            def on_leave(self, original_node: cst.CSTNode) -> None:
                stack.pop()

        visit(self.module, _Parents())
        return parents

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The node that contains `node`, or None for the module."""
        return self.parents.get(node)

    @property
    def function(self) -> Optional[cst.FunctionDef]:
        """The innermost function being visited."""
        return self.function_stack[-1] if self.function_stack else None

    @property
    def owner_class(self) -> Optional[cst.ClassDef]:
        """The class whose method is being visited, if any."""
        function = self.function
        return self.regions.owner_class.get(function) if function is not None else None

    def kind(self, expr: cst.BaseExpression) -> Kind:
        """The kind of `expr` in the function being visited."""
        return self.facts.kind(expr, self.function)

    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        """The qualified name `expr` refers to, through the file's imports."""
        return self.imports.qualname(expr)

    def add_finding(self, rule: "Rule", node: cst.CSTNode, message: str, fix: Optional["FixPlan"]) -> None:
        """Record a finding; positions are resolved once, after the traversal."""
        self.findings.append(PendingFinding(rule, node, message, fix))
