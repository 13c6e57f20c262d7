"""A call's arguments as values, the context they make, and where a call is.

`Args` holds a call's evaluated arguments; `specialise` picks the parameters whose value is
one exact value (a constant, a callable, an object): the context a function is analysed in,
as Dynamo specialises on them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

from compile_lint.analysis.model.values import (
    BoundV,
    ClassV,
    ConstV,
    ExternalInstanceV,
    ExternalV,
    FlagV,
    FunctionV,
    InstanceV,
    KeywordsV,
    ModuleV,
    PartialV,
    SuperV,
    TupleV,
    Value,
    WrappedV,
)

_SPECIALISED = (ConstV, FunctionV, ClassV, InstanceV, BoundV, PartialV, WrappedV, ModuleV, ExternalV,
                ExternalInstanceV, FlagV, SuperV)
_MAX_SPECIALISED_ITEMS = 4


def site_of(where: Optional[ast.AST]) -> tuple[int, int]:
    """(line, column) of a node, the key of a call site; (0, 0) for no node."""
    return (getattr(where, "lineno", 0), getattr(where, "col_offset", 0)) if where is not None else (0, 0)


@dataclass
class Args:
    """A call's evaluated arguments: positional, the values of `*x` splats (and what follows them),
    keywords, and the values of `**x` splats."""

    positional: list = field(default_factory=list)
    starred: list = field(default_factory=list)
    keywords: dict = field(default_factory=dict)
    double_starred: list = field(default_factory=list)
    positional_after_star: bool = False
    nodes: Optional[ast.Call] = None

    def prepend(self, *values: frozenset) -> "Args":
        """These arguments with `values` passed first (a bound receiver, a partial's arguments)."""
        return Args([*values, *self.positional], list(self.starred), dict(self.keywords), list(self.double_starred),
                    self.positional_after_star, self.nodes)


def specialise(bound: dict[str, frozenset]) -> tuple:
    """The context a call's bound parameters make: each parameter whose value is one exact value."""
    context = []
    for name, found in bound.items():
        if len(found) != 1:
            continue
        value = next(iter(found))
        if _specialisable(value):
            context.append((name, value))
    return tuple(context)


def _specialisable(value: Value, depth: int = 0) -> bool:
    if getattr(value, "depth", 0) > 2:
        return False  # a deeply nested value (a partial of a bound method of ...) makes too fine a context
    if isinstance(value, _SPECIALISED):
        return True
    if depth < 2 and isinstance(value, TupleV) and len(value.items) <= _MAX_SPECIALISED_ITEMS:
        return all(len(item) == 1 and _specialisable(next(iter(item)), depth + 1) for item in value.items)
    if depth < 2 and isinstance(value, KeywordsV) and len(value.items) <= _MAX_SPECIALISED_ITEMS:
        return all(len(item) == 1 and _specialisable(next(iter(item)), depth + 1) for _, item in value.items)
    return False
