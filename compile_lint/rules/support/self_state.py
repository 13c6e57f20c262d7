"""Containers on `self` mutated in forward: which attributes, and where they are reset."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.rules.base import Rule
from compile_lint.rules.support.syntax import self_attribute

GROW_METHODS = frozenset({"append", "extend", "insert"})


SHRINK_METHODS = frozenset({"clear", "pop", "remove"})


def self_container(rule: Rule, cls: cst.ClassDef, attr: str, literals: tuple[type, ...], builtin: str) -> bool:
    """True when every value `cls` assigns to `self.attr` is a `literals` node or a `builtin(...)` call."""
    values = rule.context.facts.self_attributes(cls).values.get(attr, [])
    return bool(values) and all(
        isinstance(v, literals) or (isinstance(v, cst.Call) and rule.context.qualname(v.func) == f"builtins.{builtin}")
        for v in values
    )


def reset_in_traced_method(rule: Rule, cls: cst.ClassDef, attr: str) -> bool:
    """True when a traced method of `cls` rebinds, clears or shrinks `self.attr`."""
    regions = rule.context.regions
    methods = [f for f, owner in regions.owner_class.items() if owner is cls and f in regions.functions]
    return any(resets(method, attr) for method in methods)


def resets(function: cst.FunctionDef, attr: str) -> bool:
    """True when `function` rebinds `self.attr`, or clears, pops, removes or deletes from it."""
    for node in iter_nodes(function.body):
        if isinstance(node, cst.Assign) and any(self_attribute(t.target) == attr for t in node.targets):
            return True
        if isinstance(node, cst.AnnAssign) and self_attribute(node.target) == attr:
            return True
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in SHRINK_METHODS and self_attribute(node.func.value) == attr):
            return True
        if isinstance(node, cst.Del):
            for target in iter_nodes(node.target):
                if isinstance(target, cst.Subscript) and self_attribute(target.value) == attr:
                    return True
    return False

