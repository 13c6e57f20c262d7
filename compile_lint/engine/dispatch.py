"""One walk of a module for every rule: each rule's visit_/leave_ hooks called as the walk passes,
region rules only inside traced code."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import libcst as cst

from compile_lint.analysis.file.context import FileContext
from compile_lint.analysis.syntax.walk import WHITESPACE_TYPES, code_fields, concrete_types, walk
from compile_lint.core.results import LintCancelled
from compile_lint.engine.positions import Anchor
from compile_lint.rules import ALL_RULES
from compile_lint.rules.base import Rule

# Nodes that can contain a function definition; outside compiled regions nothing else
# needs walking when only region-scoped rules run.
_DEF_CONTAINERS = concrete_types(
    cst.Module, cst.BaseCompoundStatement, cst.IndentedBlock, cst.Else, cst.ExceptHandler,
    cst.ExceptStarHandler, cst.Finally, cst.MatchCase,
)


_HOOK_NAMES: dict[tuple[type, str], tuple[str, ...]] = {}


def _hooks(rule: Rule, prefix: str) -> dict[str, object]:
    """Node type name -> the rule's bound `visit_`/`leave_` method that it defines itself."""
    key = (type(rule), prefix)
    names = _HOOK_NAMES.get(key)
    if names is None:  # once per rule class: `dir` of a class is not cheap, and every file asks
        names = tuple(
            attribute for attribute in dir(type(rule))
            if attribute.startswith(prefix) and not attribute.startswith("__")
            and callable(getattr(type(rule), attribute))
            and getattr(type(rule), attribute) is not getattr(Rule, attribute, None)
        )
        _HOOK_NAMES[key] = names
    return {attribute[len(prefix):]: getattr(rule, attribute) for attribute in names}


def warm_up() -> None:
    """Fill the per-class tables every lint reads (rule hooks, node fields), e.g. before forking workers.

    Each is built on first need; a process that forks workers builds them once here
    instead of once per worker.
    """
    for rule in ALL_RULES:
        for prefix in ("visit_", "leave_"):
            _hooks(rule.__new__(rule), prefix)
    for node_type in concrete_types(cst.CSTNode):
        if not getattr(node_type, "__abstractmethods__", None):
            code_fields(node_type)


class Dispatcher:
    """Walks the tree once and calls every rule's visit_/leave_ methods for each node.

    Region-scoped rules see only nodes inside traced functions and outside eager-only
    branches; with no module-scoped rule, the walk skips everything outside the
    statements that can hold a function, and files without a traced function are not
    walked at all.
    """

    def __init__(
        self, context: FileContext, rules: Sequence[Rule], prune: bool = True,
        cancelled: Optional[Callable[[], bool]] = None,
    ) -> None:
        self.context = context
        self.prune = prune
        self.cancelled = cancelled
        self.region_visitors: dict[str, list] = {}
        self.module_visitors: dict[str, list] = {}
        self.region_leavers: dict[str, list] = {}
        self.module_leavers: dict[str, list] = {}
        for rule in rules:
            module_scoped = rule.scope == "module"
            visit_table = self.module_visitors if module_scoped else self.region_visitors
            leave_table = self.module_leavers if module_scoped else self.region_leavers
            for name, method in _hooks(rule, "visit_").items():
                visit_table.setdefault(name, []).append(method)
            for name, method in _hooks(rule, "leave_").items():
                leave_table.setdefault(name, []).append(method)
        self.needs_regions = bool(self.region_visitors or self.region_leavers)
        self.has_module_rules = bool(self.module_visitors or self.module_leavers)
        hooked = (set(self.region_visitors) | set(self.module_visitors)
                  | set(self.region_leavers) | set(self.module_leavers))
        self.skip_whitespace = not (hooked & {t.__name__ for t in WHITESPACE_TYPES})
        self.eager_depth = 0
        self.traced_depth = 0
        self.functions: frozenset = frozenset()
        self.eager_only: frozenset = frozenset()
        # Where the walk is, for placing findings without positioning the whole module:
        # the top-level statement, then every statement of a block around the current node
        # (functions included), each with the indentation libcst's codegen has at its start.
        self.anchors: list[Anchor] = []
        self.block_statements: set[int] = set()  # ids of the statements of the blocks walked into
        self.indents: list[str] = []
        self.top_level: frozenset = frozenset()
        self.default_indent = "    "

    def run(self, module: cst.Module) -> None:
        """Walk `module` once, dispatching to the rules."""
        # Sets of ids: a libcst node hashes by identity, but through a Python-level __hash__,
        # which on every node of the walk cost more than the walk.
        self.top_level = frozenset(map(id, module.body))
        self.default_indent = module.default_indent
        if self.needs_regions:
            regions = self.context.regions
            self.functions = frozenset(map(id, regions.functions))
            self.eager_only = frozenset(map(id, regions.eager_only))
        if not self.prune:
            walk(module, self.on_visit, self.on_leave)
            return
        if not self.has_module_rules and not self.functions:
            return
        walk(
            module, self.on_visit, self.on_leave,
            WHITESPACE_TYPES if self.skip_whitespace else None,
            None if self.has_module_rules else self._descend,
        )

    def _descend(self, node: cst.CSTNode) -> bool:
        return self.traced_depth > 0 or type(node) in _DEF_CONTAINERS

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Enter `node`: track functions and eager-only branches, call the visitors."""
        name = type(node).__name__
        key = id(node)
        if name == "FunctionDef":
            # A class of a model file is one top-level statement of hundreds of lines: a
            # lint whose text changed stops at the next function, not at the class's end.
            if self.cancelled is not None and self.cancelled():
                raise LintCancelled()
            self.context.function_stack.append(node)  # type: ignore[arg-type]
            self.anchors.append((node, tuple(self.indents)))
            if key in self.functions:
                self.traced_depth += 1
        elif key in self.top_level:
            self.anchors.append((node, ()))
            if self.cancelled is not None and self.cancelled():
                raise LintCancelled()
        elif key in self.block_statements:
            self.anchors.append((node, tuple(self.indents)))
        if name == "IndentedBlock" or name == "Match":
            indent = node.indent  # type: ignore[attr-defined]
            self.indents.append(self.default_indent if indent is None else indent)
            if name == "IndentedBlock":
                self.block_statements.update(map(id, node.body))  # type: ignore[attr-defined]
        if key in self.eager_only:
            self.eager_depth += 1
        visitors = self.module_visitors.get(name)
        if visitors:
            for visitor in visitors:
                visitor(node)
        if self.traced_depth > 0 and self.eager_depth == 0:
            visitors = self.region_visitors.get(name)
            if visitors:
                for visitor in visitors:
                    visitor(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        """Leave `original_node`: call the leavers, then undo what on_visit tracked."""
        name = type(original_node).__name__
        if self.traced_depth > 0 and self.eager_depth == 0:
            leavers = self.region_leavers.get(name)
            if leavers:
                for leaver in leavers:
                    leaver(original_node)
        leavers = self.module_leavers.get(name)
        if leavers:
            for leaver in leavers:
                leaver(original_node)
        key = id(original_node)
        if key in self.eager_only:
            self.eager_depth -= 1
        if name == "FunctionDef":
            self.context.function_stack.pop()
            self.anchors.pop()
            if key in self.functions:
                self.traced_depth -= 1
        elif key in self.top_level or key in self.block_statements:
            self.anchors.pop()
        if name == "IndentedBlock" or name == "Match":
            self.indents.pop()
