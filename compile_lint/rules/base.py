"""The rule framework: a rule is one small class whose examples are its docs and tests."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Optional, Sequence

import libcst as cst

from compile_lint.core.diagnostics import CODE_PREFIX
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

__all__ = ["CODE_PREFIX", "Example", "Finding", "Invalid", "Rule", "Valid"]


@dataclass(frozen=True)
class Example:
    """A runnable example: `code` defines `entry` (an nn.Module class or a function).

    `calls` is a Python expression (with `torch` in scope) that evaluates to the list of
    argument tuples the calibration test calls the compiled entry with. `fixed` is the
    expected source after `--fix --unsafe-fixes`; an invalid example whose rule fixes it
    must state it. `fixed_calls`, when the fix changes how the entry is called (a Python
    float becomes a tensor), are the calls for the fixed code. `lines`, when given, are
    the lines (1-based, of the dedented code) the rule must flag, no more, no fewer.
    """

    code: str
    calls: str = "[(torch.randn(4, 8),)]"
    entry: str = "Model"
    fixed: Optional[str] = None
    fixed_calls: Optional[str] = None
    lines: Sequence[int] = ()
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", textwrap.dedent(self.code).lstrip("\n"))
        if self.fixed is not None:
            object.__setattr__(self, "fixed", textwrap.dedent(self.fixed).lstrip("\n"))
        object.__setattr__(self, "lines", tuple(self.lines))


def Invalid(code: str, **kwargs) -> Example:  # noqa: N802 - reads like Fixit's examples
    """An example the rule must flag; the compiler must break or recompile on it."""
    return Example(code, **kwargs)


def Valid(code: str, **kwargs) -> Example:  # noqa: N802
    """An example the rule must stay silent on; it must compile with fullgraph=True."""
    return Example(code, **kwargs)


@dataclass
class Finding:
    """What a rule reported, before positions are resolved."""

    rule: "Rule"
    node: cst.CSTNode
    message: str
    fix: Optional[FixPlan]
    function: Optional[cst.FunctionDef] = None  # where the rule was looking (for the path condition)
    path_node: Optional[cst.CSTNode] = None  # the part that breaks, when only part of `node` does


class Rule:
    """Base class: subclasses set the metadata and define libcst `visit_*` methods.

    By default visitors run only inside compiled regions (`scope = "region"`); rules that
    check module-level code (custom op registration, `torch.compile` call sites) set
    `scope = "module"`.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    kind: ClassVar[str]  # "break" | "recompile" | "perf"
    # Where the invalid code fails: "compile" (Dynamo breaks or recompiles), or "import"
    # (Python raises when the module is imported, before anything is compiled).
    fails_at: ClassVar[str] = "compile"
    message: ClassVar[str]
    # The code a message tells the user to write, spelled as the message spells it between
    # backticks (`torch.where(cond, a, b)`, a config line, a decorator); `{name}` stands for what
    # the message fills in. Every message of a `break` rule ends in a clause holding one of them,
    # or, where a fix is withheld, in the recipe fixes/next_steps.py gives (tests/test_next_steps.py).
    steps: ClassVar[tuple[str, ...]] = ()
    gb_type: ClassVar[Optional[str]] = None
    gb_id: ClassVar[Optional[str]] = None
    # Other graph-break types Dynamo reports for the same pattern (`repr(t)` vs `str(t)`);
    # the calibration test accepts any of them, `gb_type` first.
    gb_types: ClassVar[tuple[str, ...]] = ()
    fix_applicability: ClassVar[Optional[str]] = None  # "safe" | "unsafe" | None
    default_enabled: ClassVar[bool] = True
    scope: ClassVar[str] = "region"
    torch_versions: ClassVar[str] = ""  # e.g. ">=2.4"; empty means every version we know
    # Module-scoped rules only: words one of which a file must contain for the rule to fire
    # (e.g. ("custom_op",)), so files without them skip the parse and the whole-module walk.
    # Empty means any file that mentions torch. Checked against the examples by the tests.
    trigger_words: ClassVar[tuple[str, ...]] = ()
    # Module-scoped rules only: a regular expression the file's text must match for the rule
    # to fire, where words are too loose (`compile` is in many docstrings; a compile call is not).
    trigger_pattern: ClassVar[Optional[str]] = None
    config_note: ClassVar[str] = ""  # a config that changes the verdict, if any
    # True when the rule's fix can be withheld with a reason (`fixes/branches/blocks.with_reason`):
    # its docs then list what to write by hand for each kind of reason (`fixes/next_steps.py`).
    withheld_fix_steps: ClassVar[bool] = False
    # True when a fix also edits other top-level statements (e.g. call sites of a function).
    fix_edits_call_sites: ClassVar[bool] = False
    invalid: ClassVar[Sequence[Example]] = ()
    valid: ClassVar[Sequence[Example]] = ()

    def __init__(self, context: "FileContext") -> None:
        self.context = context
        self.findings: list[Finding] = []

    def report(
        self,
        node: cst.CSTNode,
        message: Optional[str] = None,
        fix: Optional[FixPlan] = None,
        path_node: Optional[cst.CSTNode] = None,
    ) -> None:
        """Record a finding at `node`, with an optional fix; positions are resolved after the walk.

        `path_node`, the part of `node` that breaks (`b` in `if a and b:`), decides the
        mode the finding needs: `b` in `self.training and b` runs only in training.
        """
        self.findings.append(Finding(self, node, message or self.message, fix, self.context.function, path_node))

    @classmethod
    def summary(cls) -> str:
        """The first line of the rule's docstring."""
        return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else cls.message

    @classmethod
    def documentation(cls) -> str:
        """The rule's docstring, dedented."""
        return inspect.cleandoc(cls.__doc__ or "")
