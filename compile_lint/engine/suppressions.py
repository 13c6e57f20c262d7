"""`# noqa` comments: read the way ruff and flake8 read them, and written by `--add-noqa`.

One parser serves the CLI, the language server and the flake8 plugin. The grammar is
ruff's, with flake8's prefix matching:

- A directive is `#`, optional whitespace, then `noqa` in any case. Other comments may
  come before it on the line (`# why  # noqa: JIT101`); the first directive counts.
- `# noqa` alone (then the end of the comment, another `#`, or words with no colon) is a
  blanket noqa: it suppresses every finding on the line.
- `# noqa: CODES` (spaces allowed around the colon) lists codes, separated by commas or
  whitespace. A code is upper-case letters then digits (`JIT101`, or a prefix such as
  `JIT1`) and suppresses every code it starts, as in flake8. The list ends at the first
  word that is not a code, so an explanation may follow (`# noqa: JIT101 eager on CPU`).
- A malformed list suppresses nothing (ruff warns about it): no code at all (`# noqa: foo`,
  `# noqa:`, `# noqa: jit101`), or a code joined to other text (`# noqa: JIT1O1`, a typo
  that must not become the prefix `JIT1`; `# noqa: JIT101abc`; `# noqaJIT101`).

flake8 applies its own noqa to every plugin on top of this: it also reads a comment with
a malformed list (`# noqa: foo`) as a blanket `# noqa`, for every plugin alike.

A file-level directive, a comment line that starts at column 1 (as flake8 requires),
exempts the whole file: `# compile-lint: noqa` (ruff's `# ruff: noqa`) or flake8's
`# flake8: noqa` every code, `# compile-lint: noqa: JIT1, JIT203` the codes listed (as
ruff reads `# ruff: noqa: CODES`); a malformed list exempts nothing.

A normal CLI run warns about every malformed directive (`malformed_noqa`), as ruff does;
JIT001 (unused-noqa, ruff's RUF100, off by default) reports the compile-lint codes of a
`# noqa: CODES` list that suppressed nothing on their line (`unused_noqa`).
"""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from compile_lint.core.diagnostics import CODE_PREFIX, Diagnostic, Edit, Fix
from compile_lint.core.source_index import SourceIndex

_DIRECTIVE = re.compile(r"#\s*noqa", re.IGNORECASE)
_FILE_DIRECTIVE = re.compile(r"#[ \t]*(?:compile-lint|flake8)[ \t]*[:=][ \t]*noqa(?![A-Za-z0-9_])", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+")
_SPACE = " \t\f\v"


@dataclass(frozen=True)
class Noqa:
    """One parsed directive: where it is in its text and what it suppresses."""

    start: int  # offset of its `#`
    end: int  # offset just past `noqa` (blanket or invalid) or past its last code
    codes: Optional[tuple[str, ...]]  # None: a blanket noqa; a tuple: the listed codes
    problem: Optional[str] = None  # why the directive is malformed (then it suppresses nothing)

    def covers(self, code: str) -> bool:
        """Whether this directive suppresses findings of `code`."""
        if self.problem is not None:
            return False
        return self.codes is None or any(code.startswith(listed) for listed in self.codes)


def parse_noqa(text: str) -> Optional[Noqa]:
    """The first `# noqa` directive in `text` (a line or a comment), or None."""
    match = _DIRECTIVE.search(text)
    if match is None:
        return None
    start, position = match.start(), match.end()
    rest = text[position:]
    stripped = rest.lstrip(_SPACE)
    if not rest or rest[0] in "#\r\n" or (rest[0] in _SPACE and not stripped.startswith(":")):
        return Noqa(start, position, None)
    if not stripped.startswith(":"):
        return Noqa(start, position, None, "expected `:` and codes after `noqa`")
    position += len(rest) - len(stripped) + 1
    return _parse_codes(text, start, position)


def _parse_codes(text: str, start: int, position: int) -> Noqa:
    """The code list of `# noqa:` starting at `position` (just past the colon)."""
    codes: list[str] = []
    end = position
    while True:
        while position < len(text) and (text[position] in _SPACE or text[position] == ","):
            position += 1
        code = _CODE.match(text, position)
        if code is None:
            break  # the end of the comment, or a word that explains the noqa
        after = code.end()
        if after < len(text) and text[after] not in _SPACE + ",#\r\n":
            return Noqa(start, after, None, f"`{text[position:after + 1]}` is not a code: "
                                            "codes are upper-case letters then digits, apart")
        codes.append(code.group())
        position = end = after
    if not codes:
        return Noqa(start, end, None, "expected codes after `noqa:` (e.g. `# noqa: JIT101`)")
    return Noqa(start, end, tuple(codes))


def is_suppressed(code: str, line: str) -> bool:
    """True when `line` carries a noqa that covers `code` (a listed code or its prefix)."""
    directive = parse_noqa(line)
    return directive is not None and directive.covers(code)


def file_noqa(line: str) -> Optional[Noqa]:
    """The file-level directive `line` is (`# compile-lint: noqa[: CODES]`, `# flake8: noqa`), or None."""
    match = _FILE_DIRECTIVE.match(line)
    if match is None:
        return None
    rest = line[match.end():]
    stripped = rest.lstrip(_SPACE)
    if not stripped.startswith(":"):
        return Noqa(0, match.end(), None)
    return _parse_codes(line, 0, match.end() + len(rest) - len(stripped) + 1)


def without_suppressed(diagnostics: Iterable[Diagnostic], source: SourceIndex) -> list[Diagnostic]:
    """The findings that no file-level directive and no noqa on their line (as the parser counts lines) cover."""
    lines = source.lines
    exemptions = _file_exemptions(source)
    return [d for d in diagnostics
            if not any(exemption.covers(d.code) for exemption in exemptions)
            and not (0 < d.line <= len(lines) and is_suppressed(d.code, lines[d.line - 1]))]


def _file_exemptions(source: SourceIndex) -> list[Noqa]:
    """The file-level directives of the text (comment lines at column 1)."""
    return [found for line in source.lines if line.startswith("#") for found in (file_noqa(line),) if found]


UNUSED_NOQA_CODE = CODE_PREFIX + "001"


def _directives(source: SourceIndex) -> list[tuple[int, int, str, Noqa, bool]]:
    """Every directive in a comment token: (line, comment column, comment, directive, file-level).

    Read from tokens, so `# noqa` inside a string is no directive; [] when the text does
    not tokenize (the syntax error is the finding then).
    """
    try:
        comments = source.comments
    except (tokenize.TokenError, SyntaxError):
        return []
    found = []
    for line, (column, comment) in sorted(comments.items()):
        exemption = file_noqa(comment) if column == 0 else None
        directive = exemption or parse_noqa(comment)
        if directive is not None:
            found.append((line, column, comment, directive, exemption is not None))
    return found


def malformed_noqa(source: SourceIndex) -> list[tuple[int, str]]:
    """(line, why) of every malformed directive in the text: each suppresses nothing.

    None in a file a blanket `# compile-lint: noqa` exempts: nothing in it is reported, so a
    directive there that suppresses nothing changes nothing (ruff does not lint such a file).
    """
    if "noqa" not in source.text.lower() or not _may_hold_malformed(source):
        return []
    if any(exemption.codes is None and exemption.problem is None for exemption in _file_exemptions(source)):
        return []
    return [(line, directive.problem) for line, _, _, directive, _ in _directives(source)
            if directive.problem is not None]


def _may_hold_malformed(source: SourceIndex) -> bool:
    """False when no `#` on a line that says noqa starts a malformed directive.

    A comment token runs from a `#` to the end of its line, so every directive the
    tokenizer can find is one of these suffixes: when none of them is malformed, the
    file needs no tokenizing (a cached run checks every file with a `# noqa`).
    """
    for line in source.lines:
        if "noqa" not in line.lower():
            continue
        line = line.rstrip("\r\n")
        start = line.find("#")
        while start >= 0:
            comment = line[start:]
            directive = (file_noqa(comment) if start == 0 else None) or parse_noqa(comment)
            if directive is not None and directive.problem is not None:
                return True
            start = line.find("#", start + 1)
    return False


def unused_noqa(source: SourceIndex, path: str, diagnostics: Sequence[Diagnostic],
                checked: Callable[[str], bool]) -> list[Diagnostic]:
    """JIT001 findings: the codes of a `# noqa: CODES` list that covered no finding on their line.

    `diagnostics` are the findings before suppression; `checked(code)` says whether this run
    looked for the code at all (an off rule's code is not unused, only unchecked). Other
    tools' codes (`E501`), blanket and file-level directives are never reported. The safe
    fix removes the unused codes, or the whole directive when none is left (keeping any
    explanation after it as a plain comment).
    """
    if "noqa" not in source.text.lower():
        return []
    lines = source.lines
    found: list[Diagnostic] = []
    for number, column, comment, directive, file_level in _directives(source):
        if file_level or directive.codes is None or directive.problem is not None or number > len(lines):
            continue
        codes_here = {d.code for d in diagnostics if d.line == number}
        unused = [code for code in directive.codes
                  if code.startswith(CODE_PREFIX) and not UNUSED_NOQA_CODE.startswith(code) and checked(code)
                  and not any(here.startswith(code) for here in codes_here)]
        if not unused:
            continue
        start, end = column + directive.start, column + directive.end
        kept = [code for code in directive.codes if code not in unused]
        body = lines[number - 1].rstrip("\r\n")
        rest = comment[directive.end:]
        if kept:
            edit = Edit(number, start + 1, number, end + 1, f"# noqa: {', '.join(kept)}")
        elif rest.strip() and not rest.lstrip(_SPACE).startswith("#"):
            edit = Edit(number, start + 1, number, end + 1, "#")  # the explanation stays a comment
        elif rest.strip():
            edit = Edit(number, start + 1, number, end + 1, "")
        else:
            edit = Edit(number, len(body[:start].rstrip(_SPACE)) + 1, number, column + len(comment) + 1, "")
        words = "code" if len(unused) == 1 else "codes"
        found.append(Diagnostic(
            path, number, start + 1, number, end + 1, UNUSED_NOQA_CODE, "unused-noqa", "perf",
            f"unused `# noqa` {words}: {', '.join(unused)} suppressed nothing on this line",
            fix=Fix("safe", f"Remove the unused `# noqa` {words}", (edit,)),
        ))
    return found


# --- Writing directives (`--add-noqa`, the language server's "add noqa" action) ---


@dataclass
class NoqaAddition:
    """The text with `# noqa` directives added, and the findings that could not get one."""

    text: str
    added: list[Diagnostic]
    skipped: list[tuple[Diagnostic, str]]  # (finding, why its line cannot carry a directive)


def _merged(existing: Sequence[str], new: Iterable[str]) -> str:
    codes = list(existing) + [code for code in sorted(set(new)) if code not in existing]
    return ", ".join(codes)


def add_noqa(text: str, diagnostics: Sequence[Diagnostic]) -> NoqaAddition:
    """`text` with a `# noqa: CODE` directive for every finding, merged into existing ones.

    A finding whose line already has a valid directive gets its code added to that
    directive's list; a line without one gets `  # noqa: CODES` at its end. Line endings and
    everything else on the line are kept. Findings on lines that cannot carry a comment, or
    whose line has a malformed directive (fix it by hand), are returned in `skipped`.
    """
    by_line: dict[int, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_line.setdefault(diagnostic.line, []).append(diagnostic)
    source = SourceIndex(text)
    comments, closed = source.comments, source.closed_lines
    lines = list(source.lines)
    added: list[Diagnostic] = []
    skipped: list[tuple[Diagnostic, str]] = []
    for number, found in sorted(by_line.items()):
        if not 0 < number <= len(lines):
            skipped.extend((d, "the finding is not on a line of the file") for d in found)
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        codes = [d.code for d in found]
        comment = comments.get(number)
        directive = parse_noqa(comment[1]) if comment else None
        if directive is not None and directive.problem is not None:
            skipped.extend((d, f"its line has a malformed `# noqa` ({directive.problem})") for d in found)
            continue
        if directive is not None and directive.codes is not None:
            column = comment[0]  # type: ignore[index]
            start, end = column + directive.start, column + directive.end
            body = f"{body[:start]}# noqa: {_merged(directive.codes, codes)}{body[end:]}"
        elif number in closed:
            skipped.extend((d, "its line ends inside a string or a backslash continuation") for d in found)
            continue
        else:
            body = f"{body.rstrip(_SPACE)}  # noqa: {_merged((), codes)}"
        lines[number - 1] = body + ending
        added.extend(found)
    return NoqaAddition("".join(lines), added, skipped)
