"""Turn a rule's node replacements (`FixPlan`) into minimal text edits (`Fix`)."""

from __future__ import annotations

import bisect
import difflib
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Optional, Sequence

import libcst as cst

from compile_lint.analysis.syntax.codegen import render_at
from compile_lint.analysis.syntax.imports import ImportMap, runtime_module_imports
from compile_lint.analysis.syntax.walk import children
from compile_lint.core.diagnostics import Edit, Fix
from compile_lint.core.text_offsets import line_and_column, line_starts, split_lines

if TYPE_CHECKING:
    from compile_lint.engine.positions import Anchor, NodePositions


class _Replace(cst.CSTTransformer):
    def __init__(self, mapping: Mapping[cst.CSTNode, object]) -> None:
        self.mapping = mapping

    def on_leave(self, original_node, updated_node):
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
    missing = _missing_imports(module, ImportMap(module), modules)
    if not missing:
        return module
    new_lines = [cst.parse_statement(f"import {name}\n") for name in missing]
    body = list(module.body)
    index = _insertion_index(body)
    return module.with_changes(body=body[:index] + new_lines + body[index:])


def _missing_imports(module: cst.Module, imports: ImportMap, modules: Iterable[str]) -> list[str]:
    """The modules of `modules` the file does not import as themselves where its code runs."""
    runtime = runtime_module_imports(module)
    return [name for name in dict.fromkeys(modules)
            if imports.names.get(name.split(".")[0]) != name.split(".")[0] or name.split(".")[0] not in runtime]


def diff_edits(old: str, new: str) -> tuple[Edit, ...]:
    """Minimal edits (by line blocks, trimmed to characters) that turn `old` into `new`."""
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    starts = line_starts(old)
    line_offsets = [0]
    for old_line in old_lines:
        line_offsets.append(line_offsets[-1] + len(old_line))
    new_offsets = [0]
    for new_line in new_lines:
        new_offsets.append(new_offsets[-1] + len(new_line))
    edits = []
    # The lines both texts share at their start and end are kept as they are, and only the
    # lines between are matched: SequenceMatcher's time grows with the square of the number
    # of equal lines (a forward of 20,000 `x = x + i`: minutes for one fix).
    head = 0
    while head < min(len(old_lines), len(new_lines)) and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while (tail < min(len(old_lines), len(new_lines)) - head
           and old_lines[len(old_lines) - 1 - tail] == new_lines[len(new_lines) - 1 - tail]):
        tail += 1
    matcher = difflib.SequenceMatcher(None, old_lines[head:len(old_lines) - tail],
                                      new_lines[head:len(new_lines) - tail], autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        a1, a2, b1, b2 = a1 + head, a2 + head, b1 + head, b2 + head
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


def parses_at(statement: str, indent: str, newline: str) -> bool:
    """Whether `statement`, a statement's code indented by `indent`, parses where it stands.

    Python's grammar accepts a statement at some indentation or not whatever code is
    around it (a statement ends with its line or its block; `return`, `yield`, `break`
    or `await` in the wrong place are the compiler's errors, not the parser's), so one
    `if 1:` block gives it the indentation it has in its file. A statement that does
    not end its line cannot be judged alone.
    """
    if not statement.endswith(("\n", "\r")):
        return False
    try:
        cst.parse_module(("if 1:" + newline if indent else "") + statement)
    except Exception:  # noqa: BLE001 - any failure means it does not parse
        return False
    return True


_NO_FIX = object()


def _path(root: cst.CSTNode, target: cst.CSTNode, extents: dict) -> Optional[list[cst.CSTNode]]:
    """The nodes from `root` down to `target` (both included), found by the extents that hold `target`'s."""
    goal = extents.get(id(target))
    if goal is None:
        return None
    start, end = goal[:2], goal[2:]
    stack: list[list[cst.CSTNode]] = [[root]]
    while stack:
        path = stack.pop()
        node = path[-1]
        if node is target:
            return path
        for child in _children_around(children(node), start, end, extents):
            extent = extents.get(id(child))
            if extent is not None and extent[:2] <= start and end <= extent[2:]:
                stack.append(path + [child])
    return None


def _children_around(nodes: list[cst.CSTNode], start: tuple[int, int], end: tuple[int, int],
                     extents: dict) -> Sequence[cst.CSTNode]:
    """The nodes of a long list (a block's statements) that can hold the span from `start` to `end`.

    Siblings follow one another in the code, so only the last ones starting at or before it
    can: found by bisection, not by looking at each of a 20,000-statement body for every fix
    (all of them when none of those holds it).
    """
    if len(nodes) <= 32:
        return nodes
    position = bisect.bisect_right(nodes, start, key=lambda node: extents.get(id(node), (0, 0))[:2])
    first = position
    while first > 0 and extents.get(id(nodes[first - 1]), (0, 0, 0, 0))[2:] >= start:
        first -= 1
    around = nodes[max(first - 1, 0):position]
    if any(id(node) in extents and extents[id(node)][:2] <= start and end <= extents[id(node)][2:]
           for node in around):
        return around
    return nodes


_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


def _replaced_in_block(root: cst.CSTNode, olds: Sequence[cst.CSTNode], mapping: Mapping, extents: dict) -> bool:
    """Whether the one replaced node is a statement of an indented block below `root`, replaced by statements.

    Then the block stays a block (a removal could empty it) and the new statements parse where
    the old one stood exactly when they parse at its indentation (see `parses_at`).
    """
    if len(olds) != 1 or not isinstance(olds[0], _STATEMENTS) or olds[0] is root:
        return False
    new = mapping[olds[0]]
    parts = new.nodes if isinstance(new, cst.FlattenSentinel) else [new]
    if not parts or not all(isinstance(part, _STATEMENTS) for part in parts):
        return False
    path = _path(root, olds[0], extents)
    return path is not None and len(path) >= 2 and isinstance(path[-2], cst.IndentedBlock)


class FixBuilder:
    """Builds fixes for one module, re-rendering only the top-level statement each fix touches.

    Rendering and diffing the whole module per fix is quadratic in file size; a fix only
    changes its own top-level statement (plus, perhaps, an import line), so that is all
    we diff. Fixes spanning several top-level statements take the whole-module path.

    With the finding's anchors (see `positions`), the builder finds the top-level
    statement without a module-wide parent map or layout, rewrites only the innermost
    statement that holds every replaced node, splices its new code into the top-level
    statement's text, and checks that this statement parses where it stands instead of
    parsing the whole top-level statement again. The text diffed is the same either way,
    so are the edits.
    """

    def __init__(
        self,
        module: cst.Module,
        parents: "Mapping[cst.CSTNode, cst.CSTNode] | Callable[[], Mapping[cst.CSTNode, cst.CSTNode]]",
        code: Optional[str] = None,
        positions: "Optional[NodePositions]" = None,
    ) -> None:
        self.module = module
        self._parents = parents
        self._code = None if positions is not None and not positions.faithful else code
        self.positions = positions if positions is None or positions.faithful else None
        self._layout: Optional[list[tuple[int, int, int]]] = None  # (offset, length, first line)
        self._subtrees: dict[int, dict[cst.CSTNode, cst.CSTNode]] = {}
        self._top_texts: dict[int, Optional[tuple[str, int, int]]] = {}
        self._imports: Optional[ImportMap] = None
        self._top_ids: Optional[frozenset[int]] = None

    @property
    def code(self) -> str:
        """The module's code (its source, given one that libcst reproduces: no codegen then)."""
        if self._code is None:
            self._code = self.module.code
        return self._code

    @property
    def parents(self) -> Mapping[cst.CSTNode, cst.CSTNode]:
        """Child -> parent for the whole module (built on first use)."""
        if callable(self._parents):
            self._parents = self._parents()
        return self._parents

    def _top_level(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        parents = self.parents
        while node in parents and parents[node] is not self.module:
            node = parents[node]
        return node if parents.get(node) is self.module else None

    def _subtree(self, node: cst.CSTNode) -> dict[cst.CSTNode, cst.CSTNode]:
        """Child -> parent below `node` (computed once per node)."""
        key = id(node)
        if key not in self._subtrees:
            parents: dict[cst.CSTNode, cst.CSTNode] = {}
            stack = [node]
            while stack:
                current = stack.pop()
                for child in children(current):
                    parents[child] = current
                    stack.append(child)
            self._subtrees[key] = parents
        return self._subtrees[key]

    def _holder(self, anchors: Sequence[Anchor], olds: Sequence[cst.CSTNode]) -> Optional[int]:
        """Index of the innermost anchor holding every node of `olds`, or None."""
        positions = self.positions
        assert positions is not None  # asked only by `_placed_top`, which has positions
        for index in range(len(anchors) - 1, -1, -1):
            anchor = anchors[index]
            # Statements and functions inside the top-level statement are worth rendering (with
            # positions) to find out; the top-level statement itself only if already rendered.
            rendering = positions.rendering(anchor) if index or positions.is_rendered(anchor) else None
            if rendering is not None:
                # An anchor that is itself replaced cannot be rewritten around the replacement.
                if all(id(old) in rendering.spans for old in olds) and (index == 0 or anchor[0] not in olds):
                    return index
                continue
            if index == 0:
                inside = self._subtree(anchor[0])
                if all(old in inside or old is anchor[0] for old in olds):
                    return 0
        return None

    def _top_text(self, top: cst.CSTNode) -> Optional[tuple[str, int, int]]:
        """(code, offset, first line) of a top-level statement, placed by its text; None if unsure."""
        key = id(top)
        if key not in self._top_texts:
            found = None
            if self.positions is not None:
                text = self.positions.code_for(top)
                offset = self.positions.locate(text)
                if offset is not None:
                    text = self.code[offset:offset + len(text)]  # without a line break the file lacks at its end
                    found = (text, offset, self.positions.line_of(offset))
            self._top_texts[key] = found
        return self._top_texts[key]

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

    def _statement_offset(self, index: int) -> Optional[int]:
        """Where top-level statement `index` starts (or where the module's statements end)."""
        if self._layout is None and index < len(self.module.body):
            # The statements before an import insertion point are the docstring and the
            # imports: summing their lengths is what `layout` does, without the rest.
            offset = sum(len(self.module.code_for_node(line)) for line in self.module.header)
            offset += sum(len(self.module.code_for_node(statement)) for statement in self.module.body[:index])
            return offset
        layout = self.layout()
        if layout is None:
            return None
        return layout[index][0] if index < len(layout) else layout[-1][0] + layout[-1][1] if layout else 0

    def imports(self) -> ImportMap:
        """The module's imports (computed once)."""
        if self._imports is None:
            self._imports = ImportMap(self.module)
        return self._imports

    def _import_edit(self, modules: Sequence[str]) -> Optional[Edit]:
        missing = _missing_imports(self.module, self.imports(), modules)
        if not missing:
            return None
        index = _insertion_index(list(self.module.body))
        offset = self._statement_offset(index)
        if offset is None:
            return None
        if index >= len(self.module.body) and not self.code[:offset].endswith(("\n", "\r")) and offset:
            return None  # no newline to insert after: let the slow path handle it
        newline = self.module.default_newline
        content = "".join(f"import {name}{newline}" for name in missing)
        line, column = line_and_column(line_starts(self.code), offset)
        return Edit(line, column, line, column, content)

    def _placed_top(self, olds: Sequence[cst.CSTNode], anchors: Sequence[Anchor]):
        """(holder index, top-level statement, its code, offset, first line) when the anchors place the fix."""
        if not anchors or self.positions is None or id(anchors[0][0]) not in self._top_level_ids():
            return None
        holder = self._holder(anchors, olds)
        if holder is None:
            return None
        placed = self._top_text(anchors[0][0])
        return None if placed is None else (holder, anchors[0][0], *placed)

    def _top_level_ids(self) -> frozenset[int]:
        """Ids of the module's statements (asked once per fix: `in module.body` compared with each of them)."""
        if self._top_ids is None:
            self._top_ids = frozenset(map(id, self.module.body))
        return self._top_ids

    def _statement_holding(self, root: cst.CSTNode, olds: Sequence[cst.CSTNode],
                           extents: dict) -> Optional[cst.CSTNode]:
        """The innermost statement of a block below `root` that holds every node of `olds` (none of them itself).

        The path from `root` down to each node follows the rendered extents: only a child
        whose extent holds the node's can hold the node.
        """
        chains = []
        for old in olds:
            chain = _path(root, old, extents)
            if chain is None:
                return None
            chains.append(chain[:-1])  # the node's ancestors below `root`, outermost first
        common = set(map(id, chains[0])).intersection(*(map(id, chain) for chain in chains[1:]))
        for parent, node in zip(reversed(chains[0][:-1]), reversed(chains[0][1:])):
            if id(node) in common and isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                if isinstance(parent, cst.IndentedBlock):
                    return node
        return None

    def _narrowed(self, mapping, olds, anchors: Sequence[Anchor], holder: int, top_text: str, top_offset: int):
        """The new code of the top-level statement, rewriting only the innermost statement that holds every
        replaced node; None when it cannot be placed, `_NO_FIX` when the rewrite does not render or parse."""
        anchor = anchors[holder]
        rendering = self.positions.rendering(anchor)  # type: ignore[union-attr]
        if rendering is None:
            return None
        statement = self._statement_holding(anchor[0], olds, rendering.extents)
        whole = statement is None and _replaced_in_block(anchor[0], olds, mapping, rendering.extents)
        if whole:
            # A statement of a block replaced whole (a `print` guarded, an `if` rewritten): only it is
            # rendered and parsed again, not the function around it (a forward of 20,000 lines).
            statement = olds[0]
        if statement is None:
            if holder == 0 or anchor[0] in mapping:
                return None
            # The anchor itself (a function in a block) is the innermost statement holding them.
            statement, start, old_text, indent = anchor[0], 0, rendering.text, "".join(anchor[1])
        elif statement in mapping and not whole:
            return None
        else:
            first_line, first_column, last_line, last_column = rendering.extents[id(statement)]
            starts = rendering.line_starts()
            if last_line > len(starts):
                return None
            start, end = starts[first_line - 1] + first_column, starts[last_line - 1] + last_column
            old_text = rendering.text[start:end]
            code_line, code_column = rendering.spans[id(statement)][:2]
            indent = rendering.text[starts[code_line - 1]:starts[code_line - 1] + code_column]
        if self.positions.code_at(statement, indent) != old_text:  # type: ignore[union-attr]
            return None
        try:
            # A sentinel comes back only if `mapping` removes the statement itself: render_at raises, caught below.
            replaced = statement.visit(_Replace(mapping))
            parts = replaced.nodes if isinstance(replaced, cst.FlattenSentinel) else [replaced]
            new_text = "".join(render_at(self.module, part, [indent] if indent else [])  # type: ignore[arg-type]
                               for part in parts)
        except Exception:  # a fix that cannot be rendered is no fix
            return _NO_FIX
        if not parses_at(new_text, indent, self.module.default_newline):
            return _NO_FIX
        relative = rendering.offset + start - top_offset
        if relative < 0 or top_text[relative:relative + len(old_text)] != old_text:
            return None
        return top_text[:relative] + new_text + top_text[relative + len(old_text):]

    def build(
        self,
        replacements: Sequence[tuple[cst.CSTNode, object]],
        message: str,
        applicability: str,
        imports: Sequence[str] = (),
        anchors: Sequence[Anchor] = (),
    ) -> Optional[Fix]:
        """The Fix for `replacements`; None when the result would not parse.

        `anchors` (the finding's, see `positions`) let the builder avoid the module-wide
        parent map and layout; the fix is the same either way.
        """
        mapping = dict(replacements)
        olds = [old for old, _ in replacements]
        placed = self._placed_top(olds, anchors) if olds else None
        new_text: Optional[str] = None
        if placed is not None:
            holder, top, old_text, start, first_line = placed
            narrowed = self._narrowed(mapping, olds, anchors, holder, old_text, start)
            if narrowed is _NO_FIX:
                return None
            new_text = narrowed
        else:
            layout = self.layout()
            tops = {self._top_level(old) for old, _ in replacements}
            if layout is None or len(tops) != 1 or None in tops:
                return build_fix(self.module, replacements, message, applicability, imports)
            top = tops.pop()
            index = next(i for i, statement in enumerate(self.module.body) if statement is top)
            start, length, first_line = layout[index]
            old_text = self.code[start:start + length]
        if new_text is None:
            try:
                replaced = mapping[top] if top in mapping else top.visit(_Replace(mapping))
                new_text = _render(self.module, replaced)
                if new_text:
                    cst.parse_module(new_text)
            except Exception:  # a fix that cannot be rendered or parsed is no fix
                return None
        edits = [_shift(edit, first_line - 1) for edit in diff_edits(old_text, new_text)]
        if not edits:
            return None
        if imports:
            import_edit = self._import_edit(imports)
            if import_edit is None and _missing_imports(self.module, self.imports(), imports):
                return build_fix(self.module, replacements, message, applicability, imports)
            if import_edit is not None:
                edits.insert(0, import_edit)
        return Fix(applicability=applicability, message=message, edits=tuple(edits))  # type: ignore[arg-type]
