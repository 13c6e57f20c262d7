"""Turn a rule's node replacements into text edits, and apply edits to text."""

from __future__ import annotations

import difflib
import re
from typing import Iterable, Mapping, Optional, Sequence

import libcst as cst

from compile_lint.linter.diagnostics import Edit, Fix
from compile_lint.linter.imports import ImportMap


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


# Line breaks as Python and libcst count them (findings' positions come from libcst):
# "\r\n", "\n" and a lone "\r".
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _offsets_to_positions(text: str) -> list[int]:
    return [0] + [match.end() for match in _LINE_BREAK.finditer(text)]


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    low, high = 0, len(starts) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if starts[mid] <= offset:
            low = mid
        else:
            high = mid - 1
    return low + 1, offset - starts[low] + 1


def _lines(text: str) -> list[str]:
    """Lines with their line breaks, split where `_offsets_to_positions` starts a line."""
    starts = _offsets_to_positions(text)
    ends = starts[1:] + [len(text)]
    return [text[start:end] for start, end in zip(starts, ends) if end > start]


def diff_edits(old: str, new: str) -> tuple[Edit, ...]:
    """Minimal edits (by line blocks, trimmed to characters) that turn `old` into `new`."""
    old_lines = _lines(old)
    new_lines = _lines(new)
    starts = _offsets_to_positions(old)
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
        line, column = _position(starts, start + prefix)
        end_line, end_column = _position(starts, end - suffix)
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


def edit_offsets(text: str, edit: Edit) -> tuple[int, int]:
    """Character offsets of an edit's range in `text`."""
    starts = _offsets_to_positions(text)
    start = starts[edit.line - 1] + edit.column - 1 if edit.line - 1 < len(starts) else len(text)
    end = starts[edit.end_line - 1] + edit.end_column - 1 if edit.end_line - 1 < len(starts) else len(text)
    return start, end


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, list[Fix]]:
    """Apply the fixes whose edits do not overlap an earlier one; return text and applied fixes."""
    taken: list[tuple[int, int]] = []
    chosen: list[tuple[Fix, list[tuple[int, int, str]]]] = []
    for fix in fixes:
        spans = [(*edit_offsets(text, edit), edit.content) for edit in fix.edits]
        overlaps = any(
            start < t_end and t_start < end or (start == end == t_start) or (t_start == t_end == start)
            for start, end, _ in spans
            for t_start, t_end in taken
        )
        if overlaps:
            continue
        taken.extend((start, end) for start, end, _ in spans)
        chosen.append((fix, spans))
    all_spans = sorted((span for _, spans in chosen for span in spans), key=lambda s: (s[0], s[1]), reverse=True)
    for start, end, content in all_spans:
        text = text[:start] + content + text[end:]
    return text, [fix for fix, _ in chosen]


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
            starts = _offsets_to_positions(self.code)
            for statement in self.module.body:
                length = len(self.module.code_for_node(statement))
                layout.append((offset, length, _position(starts, offset)[0]))
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
        line, column = _position(_offsets_to_positions(self.code), offset)
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
