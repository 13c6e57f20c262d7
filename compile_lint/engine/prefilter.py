"""Cheap checks, before the libcst parse, that prove a file cannot hold a finding.

A libcst parse costs about 12 times Python's own `ast.parse`, and most files of a model
codebase (configurations, tokenizers, processors, utilities) hold no compiled region. So
the engine first asks, with text search and `ast`, whether any rule could fire:

- every finding involves torch: a compiled region needs an nn.Module base, `torch.compile`
  or a configured module base, so a file that mentions none of them has no finding;
- a module-scoped rule with `trigger_words` fires only in files that contain one of them
  (and that match its `trigger_pattern`, if it has one);
- region-scoped rules only fire inside traced functions, whose roots are `forward` of a
  class with a base, or a function decorated with or passed to `torch.compile` /
  `torch._dynamo.optimize`, or methods of a class whose imported base is an nn.Module
  (its inherited forward may call them; `inherits_module` asks the symbol index); a file
  with none of these cannot have a traced function.

Each check is a superset of what `regions.find_regions` accepts, so skipping is exact:
`tests/test_fast_path.py` lints rule examples and real files both ways and compares. A
file that looks like a model (a top-level class with a base and a `def forward(`) skips
the `ast` check: it would only confirm that the file needs the full lint.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence

from compile_lint.analysis.file.regions import COMPILE_FUNCTIONS, DEFAULT_MODULE_BASE_NAMES
from compile_lint.analysis.project.expressions import dotted_parts as _dotted
from compile_lint.analysis.project.summariser import import_bindings
from compile_lint.analysis.syntax.ast_walk import ast_nodes

if TYPE_CHECKING:
    from compile_lint.rules.base import Rule

# A class with a base at the start of a line: with a `def forward(`, most likely an nn.Module.
_CLASS_WITH_BASE = re.compile(r"^class \w+\(\s*[\w.]", re.MULTILINE)


def relevant_words(module_bases: Iterable[str] = ()) -> tuple[str, ...]:
    """Words one of which a file must contain to hold any finding."""
    return ("torch", *sorted(DEFAULT_MODULE_BASE_NAMES), *module_bases)


def parse_ast(text: str) -> Optional[ast.Module]:
    """`ast.parse(text)`, or None when Python rejects it (libcst then reports it exactly)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(body: list) -> list[ast.stmt]:
    """Every statement in `body`, nested ones included (not those inside expressions, which hold none)."""
    found: list[ast.stmt] = []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        found.append(node)
        for field in _BODY_FIELDS:
            children = getattr(node, field, None)
            if children:
                stack.extend(reversed(children))
    return found


def _import_targets(tree: ast.Module) -> dict[str, set[str]]:
    """Local name -> every qualified name an import binds it to (as `ImportMap` resolves)."""
    names: dict[str, set[str]] = {}
    for node in _statements(tree.body):
        for local, qualified in import_bindings(node):
            names.setdefault(local, set()).add(qualified)
    return names


def _names_compile(node: ast.AST, imports: dict[str, set[str]]) -> bool:
    parts = _dotted(node)
    if not parts or parts[0] not in imports:
        return False
    rest = ".".join(parts[1:])
    return any((f"{base}.{rest}" if rest else base) in COMPILE_FUNCTIONS for base in imports[parts[0]])


def _defines_forward(cls: ast.ClassDef) -> bool:
    """A method named forward: in the class body, at any depth of if/try/with, as regions finds methods."""
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "forward"
        for node in _statements(cls.body)
    )


# Whether a qualified name (as imports spell it, relative ones with leading dots) is an
# nn.Module subclass defined in another file.
ImportedModuleTest = Callable[[str], bool]


def _inherits_imported_module(tree: ast.Module, inherits_module: ImportedModuleTest) -> bool:
    """A class of the file derives from an nn.Module class imported from another file."""
    imports: Optional[dict[str, set[str]]] = None
    for node in _statements(tree.body):
        if not (isinstance(node, ast.ClassDef) and node.bases):
            continue
        imports = _import_targets(tree) if imports is None else imports
        for base in node.bases:
            parts = _dotted(base)
            if not parts or parts[0] not in imports:
                continue
            rest = ".".join(parts[1:])
            if any(inherits_module(f"{target}.{rest}" if rest else target) for target in imports[parts[0]]):
                return True
    return False


def may_have_regions(tree: ast.Module, text: str, inherits_module: Optional[ImportedModuleTest] = None) -> bool:
    """False only when no function of the file can be traced by torch.compile."""
    if "forward" in text:
        for node in _statements(tree.body):
            if isinstance(node, ast.ClassDef) and node.bases and _defines_forward(node):
                return True
    if "compile" in text or "optimize" in text:
        imports = _import_targets(tree)
        for inner in ast_nodes(tree):
            if isinstance(inner, (ast.Attribute, ast.Name)) and _names_compile(inner, imports):
                return True
    return inherits_module is not None and _inherits_imported_module(tree, inherits_module)


def may_fire(rule: "type[Rule]", text: str) -> bool:
    """False when a module-scoped rule's trigger words are all absent from `text`, or its pattern is."""
    if rule.scope != "module":
        return True
    words = rule.trigger_words
    if words and not any(word in text for word in words):
        return False
    pattern = getattr(rule, "trigger_pattern", None)
    return pattern is None or _matches(pattern, text)


@functools.lru_cache(maxsize=16)
def _matches(pattern: str, text: str) -> bool:
    """`re.search(pattern, text)`, once per text: rules that share a pattern share the search."""
    return re.search(pattern, text) is not None


def needs_lint(
    text: str,
    rules: "Sequence[type[Rule]]",
    syntax_enabled: bool,
    module_bases: Iterable[str] = (),
    inherits_module: Optional[ImportedModuleTest] = None,
) -> bool:
    """Whether the full lint (libcst parse, analysis, rules) could report anything for `text`.

    `rules` are the enabled rule classes. A file Python cannot parse always needs it, so
    that the JIT000 finding comes out exactly as the full lint reports it. With
    `inherits_module`, a file whose class derives from an nn.Module class of another file
    is linted even when it never spells torch (the base's forward may call its methods).
    """
    relevant = bool(rules) and any(word in text for word in relevant_words(module_bases))
    # A file that never spells torch can still hold a module class whose base is imported.
    cross_file = bool(rules) and not relevant and inherits_module is not None and "class" in text
    if not (relevant or cross_file) and not syntax_enabled:
        return False
    if relevant and "def forward(" in text and _CLASS_WITH_BASE.search(text):
        # A model file: the `ast` check would only confirm it (and cost an eighth of a parse).
        return True
    tree = parse_ast(text)
    if tree is None:
        return True
    region_rules = any(rule.scope != "module" for rule in rules)
    if cross_file:
        return region_rules and _inherits_imported_module(tree, inherits_module)  # type: ignore[arg-type]
    if not relevant:
        return False
    if any(rule.scope == "module" and may_fire(rule, text) for rule in rules):
        return True
    return region_rules and may_have_regions(tree, text, inherits_module)
