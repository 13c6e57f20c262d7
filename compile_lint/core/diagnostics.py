"""The values that flow from rules to reporters and the fixer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

# Every rule code starts with it (JIT101); JIT000 is a file compile-lint cannot parse.
CODE_PREFIX = "JIT"
Kind = Literal["break", "recompile", "perf", "error"]
Applicability = Literal["safe", "unsafe"]
# The one mode a finding needs (Dynamo specialises on `self.training`); None: either mode.
Mode = Optional[Literal["training", "inference"]]

# Every code's documentation page is its section of docs/rules.md. compile-lint has no public
# repository or website to name, so a finding's `url` is a relative reference into the
# compile-lint source tree (docs/rules.md, the same text as `--explain CODE`): it is the same
# on every machine (stable CI output), and a JSON consumer can resolve it against the tree it
# has, where a file: URI would name one machine's install and a made-up https URL would lie.
RULES_PAGE = "docs/rules.md"


def rule_anchor(code: str, name: str) -> str:
    """The anchor of a code's section in docs/rules.md (`## JIT101 tensor-valued-if`)."""
    return f"{code.lower()}-{name}"


def rule_url(code: str, name: str) -> str:
    """The documentation page of a finding's code: its docs/rules.md section."""
    return f"{RULES_PAGE}#{rule_anchor(code, name)}"


def split_message(message: str) -> tuple[str, Optional[str]]:
    """A rule's message as (what breaks, what to do): split at its first "; " outside backticks.

    Every rule's message is one short sentence saying what breaks, then, after "; ", the fix
    or the step to take by hand; the text formats show the second part on a `help:` line.
    """
    quoted = False
    for index, char in enumerate(message):
        if char == "`":
            quoted = not quoted
        elif not quoted and message.startswith("; ", index):
            return message[:index], message[index + 2:]
    return message, None


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions with `content`."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_json(self) -> dict:
        """The edit as the JSON contract spells it."""
        return {
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "content": self.content,
        }


@dataclass(frozen=True)
class Fix:
    """A fix for one finding: text edits plus how safe it is to apply."""

    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]
    # `(source, evidence)` of each operand a rewrite into a torch op rests on; not in the
    # JSON contract (benchmarks/fix_operands.py reads it through the API).
    rests_on: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def to_json(self) -> dict:
        """The fix as the JSON contract spells it."""
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [edit.to_json() for edit in self.edits],
        }


Link = tuple[str, int, str]  # (path, line, calling function) of one call of a chain


def _links_json(links: tuple[Link, ...]) -> list[dict]:
    return [{"path": path, "line": line, "function": function} for path, line, function in links]


@dataclass(frozen=True)
class Inside:
    """Where a break reported at the user's call into an installed library happens, in the library."""

    path: str  # the library file (absolute)
    package_path: str  # the same file as the package spells it (`somelib/_impl/steps.py`)
    line: int
    function: str  # the library function holding the break
    code: str  # the rule that finds it there, and its message
    message: str
    package: str  # the distribution and its version
    version: str
    # The calls inside the library from the function the user calls to `function` (package paths).
    via: tuple[Link, ...] = ()
    count: int = 1  # how many sites of this code the user's call reaches inside the library

    def to_json(self) -> dict:
        """The `inside` object of docs/findings.schema.json."""
        return {"path": self.path, "package_path": self.package_path, "line": self.line,
                "function": self.function, "code": self.code, "message": self.message,
                "package": self.package, "version": self.version, "via": _links_json(self.via),
                "count": self.count}


@dataclass(frozen=True)
class InLibrary:
    """A finding inside an installed library's file (listed by `--show-library-findings`): the
    distribution, and the user's calls that reach it (each: the project file, the line, the
    calling function)."""

    package: str
    version: str
    called_from: tuple[Link, ...] = ()

    def to_json(self) -> dict:
        """The `library` object of docs/findings.schema.json."""
        return {"package": self.package, "version": self.version, "called_from": _links_json(self.called_from)}


@dataclass(frozen=True)
class Observed:
    """What a runtime log showed at a finding's line (`compile-lint explain-log`).

    `count`: how many times Dynamo logged it (the same site and reason, grouped);
    `static`: the (code, name) of the static findings at the line, the one whose fix the
    finding carries first, empty when no rule flags the line; `library_frames`: where in an
    installed library it happened, below the finding's line (path, line, function), outermost first.
    """

    count: int
    static: tuple[tuple[str, str], ...] = ()
    library_frames: tuple[tuple[str, int, str], ...] = ()


@dataclass(frozen=True)
class Diagnostic:
    """One finding at a source range (1-based lines and columns, end exclusive)."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    kind: Kind
    message: str
    gb_type: Optional[str] = None
    gb_id: Optional[str] = None
    fix: Optional[Fix] = None
    confirmed: Optional[bool] = field(default=None, compare=False)
    mode: Mode = None
    # The static part of the test a finding needs (`x.dtype == torch.float16` of
    # `if x.dtype == torch.float16 and torch.isinf(x).any():`), as source; None: none.
    condition: Optional[str] = None
    # How torch.compile reaches the function holding the finding when it is traced only from
    # other code (another file, a compiled method): the calls from the entry point to the
    # function's caller, each (path, line, calling function). Empty otherwise.
    reached_from: tuple[tuple[str, int, str], ...] = ()
    # Set on the findings `compile-lint explain-log` reads from a runtime log; None otherwise.
    observed: Optional[Observed] = field(default=None, compare=False)
    # A finding at the user's call into an installed library: where the library breaks.
    inside: Optional[Inside] = None
    # A finding in an installed library's own file (`--show-library-findings`), not the user's code.
    library: Optional[InLibrary] = None
    # What to do, as the rule's message says it after what breaks (`split_message`): the fix or
    # the step by hand; None when the message gives none. The message holds it too.
    help: Optional[str] = None

    @property
    def headline(self) -> str:
        """The message without its help: what breaks, with the mode, condition and chain the engine adds."""
        if self.help is None:
            return self.message
        return self.message.replace(f"; {self.help}", "", 1)

    def sort_key(self) -> tuple:
        """Stable output order: path, position, code."""
        return (self.path, self.line, self.column, self.code)

    def to_json(self) -> dict:
        """The finding as docs/findings.schema.json specifies it."""
        data = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "url": rule_url(self.code, self.name),
            "kind": self.kind,
            "message": self.message,
            "gb_type": self.gb_type,
            "fix": self.fix.to_json() if self.fix else None,
            "mode": self.mode,
            "condition": self.condition,
            "help": self.help,
        }
        if self.reached_from:
            data["reached_from"] = _links_json(self.reached_from)
        if self.inside is not None:
            data["inside"] = self.inside.to_json()
        if self.library is not None:
            data["library"] = self.library.to_json()
        if self.confirmed is not None:
            data["confirmed"] = self.confirmed
        if self.observed is not None:
            data["runtime"] = True
            data["count"] = self.observed.count
            data["static"] = [{"code": code, "name": name} for code, name in self.observed.static]
            if self.observed.library_frames:
                data["library_frames"] = [{"path": path, "line": line, "function": function}
                                          for path, line, function in self.observed.library_frames]
        return data
