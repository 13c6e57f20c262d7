"""How a file spells a call of `torch.compile`: the names passed to it, and the text patterns
that let the engine skip a file (or a region search) that cannot compile anything.
"""

from __future__ import annotations

import re

import libcst as cst

from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.predicates import (
    COMPILE_FUNCTIONS,
)


class CompileCalls(cst.CSTVisitor):
    """Names of functions passed to `torch.compile(...)` anywhere in a file."""

    def __init__(self, imports: ImportMap, names: set[str]) -> None:
        self.imports = imports
        self.names = names

    def visit_Call(self, node: cst.Call) -> None:
        if self.imports.qualname(node.func) in COMPILE_FUNCTIONS and node.args:
            name = dotted_name(node.args[0].value)
            if name:
                self.names.add(name.split(".")[-1])


# Spaces, line breaks, backslash continuations and comments: what may separate a name from
# the `(` of its call (inside brackets), or from `as` in its import.
_SEPARATORS = r"(?:\s|\\|#[^\r\n]*)"


def call_or_alias_pattern(*names: str) -> str:
    """A regular expression for a call of a function that ends in one of `names`, or an alias import of it."""
    alternatives = "|".join(names)
    return rf"(?:{alternatives}){_SEPARATORS}*\(|(?:{alternatives}){_SEPARATORS}+as\b"


def decorator_pattern(*names: str) -> str:
    """A regular expression for a decorator whose callee spells one of `names` (`@torch.compile(...)`).

    A callee that resolves to a name is a dotted name: on the `@` line, unless it is
    parenthesized or continued with a backslash, so those decorators match too. Linear
    in the text (no nested repetition).
    """
    alternatives = "|".join(names)
    return rf"@[\w. \t]*(?:{alternatives})|@[ \t]*\(|@[\w. \t]*\\"


# A compile function is called (or imported under another name) by its name, so a file that
# spells neither has no compile call; a compiled callable also comes from a decorator.
COMPILE_CALL_OR_ALIAS = call_or_alias_pattern("compile", "optimize")
COMPILED_CALLABLE_SPELLING = f"{COMPILE_CALL_OR_ALIAS}|{decorator_pattern('compile', 'optimize')}"
_COMPILE_CALL = re.compile(COMPILE_CALL_OR_ALIAS)


def may_call_compile(source: str) -> bool:
    """False when no call in `source` can resolve to `torch.compile` or `torch._dynamo.optimize`."""
    return _COMPILE_CALL.search(source) is not None
