"""Turn a rule's node replacements (`FixPlan`) into minimal text edits (`Fix`)."""

from __future__ import annotations

import difflib
from typing import Iterable, Mapping, Optional, Sequence

import libcst as cst

from compile_lint.analysis.imports import ImportMap
from compile_lint.linter.diagnostics import Edit, Fix
from compile_lint.linter.text_offsets import line_and_column, line_starts, split_lines


class _Replace(cst.CSTTransformer):
    def __init__(self, mapping: Mapping[cst.CSTNode, object]) -> None:
        self.mapping = mapping

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        if original_node in self.mapping:
            return self.mapping[original_node]
        return updated_node


def _insertion_index(body: Sequence[cst.BaseStatement]) -> int:
    """Where a new import goes: after the docstring, `__future__` and other imports."""
    index = 0
    for position, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        first = statement.body[0] if statement.body else None
        is_docstring = position == 0 and isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString)
        if is_docstring or isinstance(first, (cst.Import, cst.ImportFrom)):
            index = position + 1
            continue
        break
    return index


def add_imports(module: cst.Module, modules: Iterable[str]) -> cst.Module:
    """Add `import NAME` for each module the file does not import yet, once, after its imports."""
    imports = ImportMap(module)
    missing = [name for name in dict.fromkeys(modules) if imports.names.get(name.split(".")[0]) != name.split(".")[0]]
    if not missing:
        return module
    new_lines = [cst.parse_statement(f"import {name}\n") for name in missing]
    body = list(module.body)
    index = _insertion_index(body)
    return module.with_changes(body=body[:index] + new_lines + body[index:])


def diff_edits(old: str, new: str) -> tuple[Edit, ...]:
    """Minimal edits (by line blocks, trimmed to characters) that turn `old` into `new`."""
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    starts = line_starts(old)
    line_offsets = [0]
    for line in old_lines:
        line_offsets.append(line_offsets[-1] + len(line))
    new_offsets = [0]
    for line in new_lines:
        new_offsets.append(new_offsets[-1] + len(line))
    edits = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = line_offsets[a1], line_offsets[a2]
        new_start, new_end = new_offsets[b1], new_offsets[b2]
        old_chunk, new_chunk = old[start:end], new[new_start:new_end]
        prefix = 0
        while prefix < min(len(old_chunk), len(new_chunk)) and old_chunk[prefix] == new_chunk[prefix]:
            prefix += 1
        suffix = 0
        while (suffix < min(len(old_chunk), len(new_chunk)) - prefix
               and old_chunk[-1 - suffix] == new_chunk[-1 - suffix]):
            suffix += 1
        line, column = line_and_column(starts, start + prefix)
        end_line, end_column = line_and_column(starts, end - suffix)
        edits.append(Edit(line, column, end_line, end_column, new_chunk[prefix:len(new_chunk) - suffix]))
    return tuple(edits)


def build_fix(
    module: cst.Module,
    replacements: Sequence[tuple[cst.CSTNode, object]],
    message: str,
    applicability: str,
    imports: Sequence[str] = (),
) -> Optional[Fix]:
    """The Fix for replacing nodes of `module`; None when the result would not parse."""
    try:
        new_module = module.visit(_Replace(dict(replacements)))
        if imports:
            new_module = add_imports(new_module, imports)
        new_code = new_module.code
        cst.parse_module(new_code)
    except Exception:  # a fix that cannot be rendered or parsed is no fix
        return None
    edits = diff_edits(module.code, new_code)
    if not edits:
        return None
    return Fix(applicability=applicability, message=message, edits=edits)  # type: ignore[arg-type]


def _render(module: cst.Module, node: object) -> str:
    """Source of a (possibly replaced) top-level statement; sentinels render as their parts."""
    if isinstance(node, cst.RemovalSentinel):
        return ""
    if isinstance(node, cst.FlattenSentinel):
        return "".join(module.code_for_node(part) for part in node.nodes)
    return module.code_for_node(node)  # type: ignore[arg-type]


def _shift(edit: Edit, lines: int) -> Edit:
    return Edit(edit.line + lines, edit.column, edit.end_line + lines, edit.end_column, edit.content)


class FixBuilder:
    """Builds fixes for one module, re-rendering only the top-level statement each fix touches.

    Rendering and diffing the whole module per fix is quadratic in file size; a fix only
    changes its own top-level statement (plus, perhaps, an import line), so that is all
    we render. Fixes spanning several top-level statements take the whole-module path.
    """

    def __init__(self, module: cst.Module, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> None:
        self.module = module
        self.parents = parents
        self.code = module.code
        self._layout: Optional[list[tuple[int, int, int]]] = None  # (offset, length, first line)

    def _top_level(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        while node in self.parents and self.parents[node] is not self.module:
            node = self.parents[node]
        return node if self.parents.get(node) is self.module else None

    def layout(self) -> Optional[list[tuple[int, int, int]]]:
        """Offset, length and first line of each top-level statement, or None if unsure."""
        if self._layout is None:
            offset = sum(len(self.module.code_for_node(line)) for line in self.module.header)
            layout = []
            starts = line_starts(self.code)
            for statement in self.module.body:
                length = len(self.module.code_for_node(statement))
                layout.append((offset, length, line_and_column(starts, offset)[0]))
                offset += length
            consistent = all(
                self.code[start:start + length] == self.module.code_for_node(statement)
                for (start, length, _), statement in zip(layout[:1], self.module.body[:1])
            )
            self._layout = layout if consistent and offset <= len(self.code) else []
        return self._layout or None

    def _import_edit(self, modules: Sequence[str]) -> Optional[Edit]:
        imports = ImportMap(self.module)
        missing = [name for name in dict.fromkeys(modules)
                   if imports.names.get(name.split(".")[0]) != name.split(".")[0]]
        if not missing:
            return None
        layout = self.layout()
        if layout is None:
            return None
        index = _insertion_index(list(self.module.body))
        offset = layout[index][0] if index < len(layout) else layout[-1][0] + layout[-1][1] if layout else 0
        if index >= len(layout) and not self.code[:offset].endswith(("\n", "\r")) and offset:
            return None  # no newline to insert after: let the slow path handle it
        newline = self.module.default_newline
        content = "".join(f"import {name}{newline}" for name in missing)
        line, column = line_and_column(line_starts(self.code), offset)
        return Edit(line, column, line, column, content)

    def build(
        self,
        replacements: Sequence[tuple[cst.CSTNode, object]],
        message: str,
        applicability: str,
        imports: Sequence[str] = (),
    ) -> Optional[Fix]:
        """The Fix for `replacements`; None when the result would not parse."""
        layout = self.layout()
        tops = {self._top_level(old) for old, _ in replacements}
        if layout is None or len(tops) != 1 or None in tops:
            return build_fix(self.module, replacements, message, applicability, imports)
        top = tops.pop()
        index = next(i for i, statement in enumerate(self.module.body) if statement is top)
        start, length, first_line = layout[index]
        mapping = dict(replacements)
        try:
            replaced = mapping[top] if top in mapping else top.visit(_Replace(mapping))
            new_text = _render(self.module, replaced)
            if new_text:
                cst.parse_module(new_text)
        except Exception:  # a fix that cannot be rendered or parsed is no fix
            return None
        old_text = self.code[start:start + length]
        edits = [_shift(edit, first_line - 1) for edit in diff_edits(old_text, new_text)]
        if not edits:
            return None
        if imports:
            import_edit = self._import_edit(imports)
            if import_edit is None and any(
                ImportMap(self.module).names.get(m.split(".")[0]) != m.split(".")[0] for m in imports
            ):
                return build_fix(self.module, replacements, message, applicability, imports)
            if import_edit is not None:
                edits.insert(0, import_edit)
        return Fix(applicability=applicability, message=message, edits=tuple(edits))  # type: ignore[arg-type]
