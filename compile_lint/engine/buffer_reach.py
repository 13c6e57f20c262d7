"""What an editor lints an unsaved buffer with: the project's stored answer for the file, moved to the buffer's lines.

The project's answer for a file (`FileReach`: which of its functions the entry points reach,
through which calls, with which hints) costs the whole project's model. An editor keeps the
answer last built for a text of the document and lints each new version with it, its line
numbers moved past the lines the edit inserted or removed: the cost of one file. The answer
stays exact while the edit leaves alone what the model reads across functions; `outline`
tells an edit that changes what other code sees (imports, signatures, class bases,
decorators), after which the host builds the project's answer again.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import os
import warnings
from typing import Optional

from compile_lint.analysis.project.reach import FileReach, Link, Reached
from compile_lint.settings.config import Config


class KnownReach:
    """A `ProjectIndex` stand-in for one lint of one file: it answers with the reach it was given.

    The lint reads nothing else of the project (see `engine.lint.lint_text`, which only asks `reach`).
    """

    # The answer is about the text being linted (moved to its lines), not the file on disk.
    answers_for_text = True

    def __init__(self, path: str, reach: Optional[FileReach]) -> None:
        self.path = os.path.abspath(path)
        self.answer = reach

    def reach(self, config: Config, path: str, map_function=None, strict: bool = False) -> Optional[FileReach]:
        """The given reach for the file it was given for; None (no project's reach) for any other."""
        return self.answer if os.path.abspath(path) == self.path else None

    def digest(self, config: Config, path: str) -> str:
        """A digest of the answer (as `ProjectIndex.digest`)."""
        reach = self.reach(config, path)
        return reach.digest if reach is not None and reach.functions else ""


class LineMap:
    """Where each line of an old text is in a new one: the lines before and after the one changed stretch."""

    def __init__(self, old: str, new: str) -> None:
        old_lines, new_lines = old.splitlines(), new.splitlines()
        limit = min(len(old_lines), len(new_lines))
        prefix = 0
        while prefix < limit and old_lines[prefix] == new_lines[prefix]:
            prefix += 1
        suffix = 0
        while (suffix < limit - prefix
               and old_lines[len(old_lines) - 1 - suffix] == new_lines[len(new_lines) - 1 - suffix]):
            suffix += 1
        self.unchanged = old_lines == new_lines
        self.first_changed = prefix + 1  # 1-based: lines before it are where they were
        self.old_after = len(old_lines) - suffix  # 1-based: lines after it moved by `shift`
        self.new_after = len(new_lines) - suffix
        self.shift = len(new_lines) - len(old_lines)

    def start(self, line: int) -> int:
        """The new line of old line `line`, a line of the changed stretch going to its first line."""
        if line < self.first_changed:
            return line
        if line > self.old_after:
            return line + self.shift
        return self.first_changed

    def end(self, line: int) -> int:
        """The new line of old line `line`, a line of the changed stretch going to its last line."""
        if line < self.first_changed:
            return line
        if line > self.old_after:
            return line + self.shift
        return max(self.first_changed, self.new_after)


def moved_reach(reach: FileReach, old: str, new: str) -> FileReach:
    """`reach`, an answer for the file's text `old`, with its lines in the file moved to where they are in `new`."""
    lines = LineMap(old, new)
    if lines.unchanged:
        return reach
    path = reach.path

    def link(item: Link) -> Link:
        return dataclasses.replace(item, line=lines.start(item.line)) if item.path == path else item

    def reached(item: Reached) -> Reached:
        return dataclasses.replace(
            item, chain=tuple(link(step) for step in item.chain),
            evidence=tuple((name, where, lines.start(line) if where == path else line, spelled)
                           for name, where, line, spelled in item.evidence),
            untraced=tuple((lines.start(first), lines.end(last)) for first, last in item.untraced))

    return dataclasses.replace(
        reach, functions={name: reached(item) for name, item in reach.functions.items()},
        library_calls=tuple(dataclasses.replace(call, line=lines.start(call.line)) for call in reach.library_calls))


def outline(text: str) -> Optional[str]:
    """A digest of what other code sees of a file: its imports, the names it binds at module and class level,
    its functions' signatures and decorators, its classes' bases; None when the text does not parse.

    Two texts with the same outline differ only inside function bodies (and in comments): other files'
    view of the file is the same.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    parts: list[str] = []
    _outline_block(tree.body, parts)
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


def _outline_block(body: list[ast.stmt], parts: list[str]) -> None:
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(" ".join((type(statement).__name__, statement.name, ast.dump(statement.args),
                                   *(ast.dump(item) for item in statement.decorator_list),
                                   ast.dump(statement.returns) if statement.returns else "")))
        elif isinstance(statement, ast.ClassDef):
            parts.append(" ".join(("class", statement.name, *(ast.dump(item) for item in statement.bases),
                                   *(ast.dump(item) for item in statement.keywords),
                                   *(ast.dump(item) for item in statement.decorator_list))))
            _outline_block(statement.body, parts)
            parts.append("end class")
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        else:
            # Imports, assignments, branches at module or class level: what other code can read.
            parts.append(ast.dump(statement))
