"""Program generators and the properties every generated program must satisfy.

Shared by benchmarks/fuzz.py (long runs) and tests/test_fuzz.py (a bounded run in CI).
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Callable

import libcst as cst
from hypothesis import strategies as st

from compile_lint.engine.api import fix_text
from compile_lint.engine.lint import lint_text
from compile_lint.fixes.edits import apply_fixes
from compile_lint.rules import ALL_RULES
from compile_lint.settings.config import Config

RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}

ALL_CONFIG = Config(select=("ALL",))
EXAMPLES = [example.code for rule in ALL_RULES for example in (*rule.invalid, *rule.valid)]


def _indent(code: str, levels: int = 1) -> str:
    return textwrap.indent(code, "    " * levels)


def nest_in_class(code: str) -> str:
    """Move every top-level class into an outer class (nested classes)."""
    return re.sub(r"^class ", "class Outer:\n    pass\n\nclass ", code, count=1, flags=re.M)


def add_decorators(code: str) -> str:
    """Decorate methods with a harmless decorator defined in the file."""
    header = ("import functools\n\ndef traced(fn):\n    @functools.wraps(fn)\n    def inner(*a, **k):\n"
              "        return fn(*a, **k)\n    return inner\n\n")
    return header + re.sub(r"^(\s+)def forward", r"\1@traced\n\1def forward", code, flags=re.M)


def make_async(code: str) -> str:
    """Turn helper methods async (the linter must not crash on async defs in classes)."""
    return re.sub(r"^(\s+)def (_\w+)", r"\1async def \2", code, flags=re.M)


def add_walrus_and_match(code: str) -> str:
    """Insert walrus and match statements at the top of every forward."""
    def insert(match: re.Match) -> str:
        indent = match.group(1) + "    "
        block = (
            f"{indent}if (rank := x.dim()) > 8:\n{indent}    pass\n"
            f"{indent}match rank:\n{indent}    case 0:\n{indent}        pass\n"
            f"{indent}    case _:\n{indent}        pass\n"
        )
        return match.group(0) + block
    return re.sub(r"^(\s+)def forward\(self, x[^)]*\):\n", insert, code, flags=re.M)


def add_lambdas(code: str) -> str:
    """Route a value through a lambda at module level."""
    return code + "\nidentity = lambda t: (t if t is not None else None)\n"


def deep_nesting(code: str) -> str:
    """Wrap the whole module body in nested `if True:` blocks."""
    depth = 6
    wrapped = code
    for _ in range(depth):
        wrapped = "if True:\n" + _indent(wrapped)
    return wrapped


def crlf(code: str) -> str:
    """Windows line endings."""
    return code.replace("\n", "\r\n")


def tabs(code: str) -> str:
    """Indent with tabs instead of four spaces."""
    return re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), code, flags=re.M)


def alias_torch(code: str) -> str:
    """Spell torch as T everywhere."""
    code = re.sub(r"^import torch$", "import torch as T", code, flags=re.M)
    return re.sub(r"\btorch\.", "T.", code)


TRANSFORMS: list[Callable[[str], str]] = [
    nest_in_class, add_decorators, make_async, add_walrus_and_match, add_lambdas,
    deep_nesting, crlf, tabs, alias_torch,
]


def example_programs() -> st.SearchStrategy[str]:
    """Rule examples, combined and transformed."""
    def build(parts: list[str], transforms: list[Callable[[str], str]]) -> str:
        code = "\n\n".join(parts)
        for transform in transforms:
            code = transform(code)
        return code

    return st.builds(
        build,
        st.lists(st.sampled_from(EXAMPLES), min_size=1, max_size=3),
        st.lists(st.sampled_from(TRANSFORMS), max_size=4),
    )


def grammar_programs() -> st.SearchStrategy[str]:
    """Syntactically valid programs from hypothesmith, with torch imported so rules engage."""
    import hypothesmith

    return hypothesmith.from_grammar().map(lambda code: "import torch\nfrom torch import nn\n" + code)


def _parses(code: str) -> bool:
    try:
        cst.parse_module(code)
        return True
    except Exception:
        return False


def _top_level_spans(code: str) -> list[tuple[int, int]]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    spans = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", [])
        start = min([node.lineno] + [d.lineno - 1 for d in decorators])  # the `@` line
        spans.append((start, node.end_lineno or node.lineno))
    return spans


def _is_import_insertion(edit) -> bool:
    return _inserts_only(edit, r"(import|from) \w")


# The capture fix (fixes/capture_scalars.py) sets a Dynamo config right before the file's one
# compile call, wherever that is: a global setting, by design outside the finding's statement.
_DYNAMO_SETTING = r"\s*\w+(\.\w+)*\._dynamo\.config\.\w+ = \w+$"


def _is_setting_insertion(edit) -> bool:
    return _inserts_only(edit, _DYNAMO_SETTING)


def _inserts_only(edit, line_pattern: str) -> bool:
    """True when `edit` inserts whole lines, each matching `line_pattern`, and replaces nothing."""
    lines = [line for line in edit.content.splitlines() if line.strip()]
    pure_insertion = (edit.line, edit.column) == (edit.end_line, edit.end_column)
    return pure_insertion and bool(lines) and all(re.match(line_pattern, line) for line in lines)


def check_program(code: str) -> list[str]:
    """Every property a program must satisfy; returns the violations (empty when fine).

    - linting does not raise;
    - every fix, applied alone, gives code that parses;
    - every fix edits only inside the top-level statement that holds its finding (or just
      after it, or adds an import line, or sets a Dynamo config before the compile call);
    - fixing (with unsafe fixes) twice equals fixing once, and the result parses.
    """
    problems: list[str] = []
    try:
        diagnostics = lint_text(code, "fuzz.py", ALL_CONFIG)
    except Exception as error:  # noqa: BLE001 - any crash is the finding
        return [f"lint crashed: {type(error).__name__}: {error}"]
    if not _parses(code):
        return []  # a program the parser rejects gets JIT000 and no fixes: nothing more to check
    spans = _top_level_spans(code)
    lines = re.split(r"\r\n|\r|\n", code)  # as Python counts lines (a lone "\r" breaks one)
    for diagnostic in diagnostics:
        if diagnostic.fix is None:
            continue
        fixed, used = apply_fixes(code, [diagnostic.fix])
        if not used or not _parses(fixed):
            problems.append(f"{diagnostic.code} fix at line {diagnostic.line} does not parse")
        holder = next(((s, e) for s, e in spans if s <= diagnostic.line <= e), None)
        if RULES_BY_CODE[diagnostic.code].fix_edits_call_sites:
            holder = None  # its fix rewrites call sites wherever they are in the file
        for edit in diagnostic.fix.edits:
            if _is_import_insertion(edit) or _is_setting_insertion(edit) or holder is None:
                continue
            start, end = holder
            # Blank lines right after the statement are not another statement (in a
            # "\r\r\n" file every line is followed by one).
            while end < len(lines) and not lines[end].strip():
                end += 1
            if not (start <= edit.line and edit.end_line <= end + 1):
                problems.append(f"{diagnostic.code} fix edits lines {edit.line}-{edit.end_line} outside {start}-{end}")
    try:
        once = fix_text(code, "fuzz.py", ALL_CONFIG, unsafe=True)
        twice = fix_text(once.text, "fuzz.py", ALL_CONFIG, unsafe=True)
    except Exception as error:  # noqa: BLE001
        return problems + [f"fix crashed: {type(error).__name__}: {error}"]
    if not _parses(once.text):
        problems.append("fixed file does not parse")
    if twice.text != once.text:
        problems.append("fixing twice differs from fixing once")
    return problems
