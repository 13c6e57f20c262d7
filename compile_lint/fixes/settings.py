"""Compiler settings that remove a break: which ones, whether the file sets them, and the fix that does.

Measured on torch 2.13 CPU (benchmarks/config_fix_calibration.py, results in
benchmarks/results/config_fix_calibration.txt):

- `capture_scalar_outputs` captures `.item()`, `int(t)`/`float(t)` and `.tolist()` of an
  integer tensor; `capture_dynamic_output_shape_ops` captures mask indexing, `nonzero`,
  one-argument `torch.where`, `unique`, `bincount` (with or without `minlength`),
  `repeat_interleave` with tensor repeats, `masked_select` and `argwhere`; `allow_rnn` lets
  Dynamo trace `nn.LSTM`/`nn.GRU`/`nn.RNN` (not packed sequences); and
  `reorderable_logging_functions` takes `print`, `warnings.warn` and `logging`'s module
  functions (never a `logging.Logger` method).
- A setting is read when Dynamo traces, not when `torch.compile` is called: a
  `torch._dynamo.config.patch(...)` around the compile call changes nothing, and
  `torch.compile(options=...)` takes Inductor's options only (Dynamo's are refused). So the
  fix is the setting's line right before the file's one compile call (a decorator's
  function, or the statement holding the call), where every trace after it reads it. A fix
  for a file with no compile call (JIT207's loop fix in a library's modeling file) puts it after
  the imports instead (`setting_after_imports`): importing the file sets it.

What each setting costs downstream is the callers' part (fixes/setting_hazards.py): a
setting is offered only where the captured value reaches no use that would break, crash
or recompile later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from compile_lint.analysis.syntax.predicates import COMPILE_FUNCTIONS
from compile_lint.fixes.branches.blocks import BranchFix, with_reason
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


@dataclass(frozen=True)
class Setting:
    """One Dynamo setting: its name in `torch._dynamo.config`, the statement that sets it, what it does."""

    name: str
    statement: str  # with `{torch}` for the file's spelling of torch
    does: str  # what it makes Dynamo do, for the fix's message

    @property
    def key(self) -> str:
        """What tells this setting apart in a reason: its name (`reorderable_logging_functions.add(print)`)."""
        return self.statement.split("config.", 1)[1].split(" ", 1)[0]

    @property
    def line(self) -> str:
        """The statement as a message spells it."""
        return self.statement.format(torch="torch")

    def spelled(self, torch_name: str) -> str:
        """The statement in a file that spells torch `torch_name`."""
        return self.statement.format(torch=torch_name)


CAPTURE_SCALARS = Setting("capture_scalar_outputs", "{torch}._dynamo.config.capture_scalar_outputs = True",
                          "keeps the number in the graph")
CAPTURE_SHAPES = Setting("capture_dynamic_output_shape_ops",
                         "{torch}._dynamo.config.capture_dynamic_output_shape_ops = True",
                         "keeps the data-dependent size in the graph")
ALLOW_RNN = Setting("allow_rnn", "{torch}._dynamo.config.allow_rnn = True", "lets Dynamo trace the RNN module")


def reorderable(function: str) -> Setting:
    """The setting that lets Dynamo run `function` (`print`, `warnings.warn`) after the graph."""
    return Setting("reorderable_logging_functions",
                   "{torch}._dynamo.config.reorderable_logging_functions.add(" + function + ")",
                   f"runs `{function}` after the graph, with the values the graph computed")




def file_sets(context: FileContext, setting: Setting) -> bool:
    """True when the file sets `setting` at its top level or in a function (an assignment of True, or `.add(...)`).

    For `reorderable_logging_functions` any `.add(...)`/`.update(...)` or assignment counts
    only with the function the setting names. Answered once per file and setting: each finding asks.
    """
    return context.memo(("file-sets", setting.key), lambda: _file_sets(context, setting))


def _file_sets(context: FileContext, setting: Setting) -> bool:
    qualified = f"torch._dynamo.config.{setting.name}"
    if setting.name == "reorderable_logging_functions":
        return _lists_function(context, qualified, setting.key.split("(", 1)[1].rstrip(")"))
    for assign in context.module_index.of_type(cst.Assign):
        if (isinstance(assign.value, cst.Name) and assign.value.value == "True"
                and any(context.qualname(target.target) == qualified for target in assign.targets)):
            return True
    return False


def _lists_function(context: FileContext, qualified: str, function: str) -> bool:
    """`X.add(f)`, `X.update({f, ...})` or `X = {f, ...}` for the set setting `qualified`."""
    code = cst.Module([]).code_for_node

    def names(value: cst.BaseExpression) -> set[str]:
        if isinstance(value, (cst.Set, cst.List, cst.Tuple)):
            return {code(element.value) for element in value.elements}
        return {code(value)}

    for call in context.module_index.calls:
        func = call.func
        if (isinstance(func, cst.Attribute) and context.qualname(func.value) == qualified and call.args
                and (func.attr.value == "add" and code(call.args[0].value) == function
                     or func.attr.value == "update" and function in names(call.args[0].value))):
            return True
    return any(any(context.qualname(target.target) == qualified for target in assign.targets)
               and function in names(assign.value) for assign in context.module_index.of_type(cst.Assign))


def setting_fix(context: FileContext, setting: Setting) -> tuple[Optional[FixPlan], Optional[str]]:
    """The fix that sets `setting` right before the file's one compile call, or why there is none."""
    sites = _compile_sites(context)
    if not sites:
        return None, f"this file has no `torch.compile` call to set `{setting.key}` before"
    if len(sites) > 1:
        return None, f"this file has more than one `torch.compile` call to set `{setting.key}` before"
    statement = sites[0]
    torch_name, imports = spell(context, "torch")
    line = cst.parse_statement(setting.spelled(torch_name) + "\n")
    # Blank lines above the statement go above the setting; comment lines stay with the statement.
    leading = list(getattr(statement, "leading_lines", ()))
    blank = next((index for index, item in enumerate(leading) if item.comment is not None), len(leading))
    moved = [line.with_changes(leading_lines=leading[:blank]), statement.with_changes(leading_lines=leading[blank:])]
    message = f"Set `{setting.line}` before `torch.compile`, which {setting.does}"
    return FixPlan([(statement, cst.FlattenSentinel(moved))], message, "unsafe", imports), None


def setting_after_imports(context: FileContext, setting: Setting,
                          note: str) -> tuple[Optional[tuple[cst.CSTNode, object]], Sequence[str]]:
    """The replacement that puts `setting` after the module's docstring and leading imports, under the
    comment `note`, and the imports it needs; (None, ()) for an empty module.

    For a fix in a file with no compile call of its own (a library's modeling file, JIT207's
    loop fix): importing the file turns the setting on for the process, before any trace.
    """
    torch_name, imports = spell(context, "torch")
    line = cst.parse_statement(setting.spelled(torch_name) + "\n")
    line = line.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(comment=cst.Comment("# " + note))])
    body = list(context.module.body)
    if not body:
        return None, ()
    index = 0
    for position, statement in enumerate(body):
        first = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
        docstring = position == 0 and isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString)
        if docstring or isinstance(first, (cst.Import, cst.ImportFrom)):
            index = position + 1
            continue
        break
    if index == 0:
        return (body[0], cst.FlattenSentinel([line, body[0]])), imports
    return (body[index - 1], cst.FlattenSentinel([body[index - 1], line])), imports


def compile_site_count(context: FileContext) -> int:
    """How many places in the file a setting could go before (compile calls and decorators)."""
    return len(_compile_sites(context))


def _compile_sites(context: FileContext) -> list[cst.CSTNode]:
    """The statement holding each `torch.compile` call or decorator of the file, in a block.

    Found once per file: every finding with a setting fix asks (10,000 findings of one file
    each scanned every call)."""
    return context.memo("compile-setting-sites", lambda: _find_compile_sites(context))


def _find_compile_sites(context: FileContext) -> list[cst.CSTNode]:
    compiles = [call for call in context.module_index.calls if context.qualname(call.func) in COMPILE_FUNCTIONS]
    decorators = [node for node in context.module_index.of_type(cst.Decorator)
                  if context.qualname(node.decorator) in COMPILE_FUNCTIONS]
    sites: list[cst.CSTNode] = []
    for node in compiles + decorators:
        statement = _statement_in_block(context, node)
        if statement is None:
            return [node, node]  # a compile call the fix cannot stand before: no single site
        if statement not in sites:
            sites.append(statement)
    return sites


def _statement_in_block(context: FileContext, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The statement that holds `node` and stands in a module or a function's block.

    In a class body it is the class: the setting belongs before the class, not among its attributes.
    """
    current: Optional[cst.CSTNode] = node
    while current is not None:
        parent = context.parent(current)
        if isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) \
                and (isinstance(parent, cst.Module)
                     or isinstance(parent, cst.IndentedBlock) and not isinstance(context.parent(parent), cst.ClassDef)):
            return current
        current = parent
    return None


def setting_outcome(context: FileContext, setting: Setting, hazard: Optional[str], subject: str) -> BranchFix:
    """The setting's fix for a break it captures, or why there is none: `hazard` (what would break
    later, fixes/setting_hazards.py), no single compile call in the file. `subject` names what is
    captured (`torch.bincount`), for the reason."""
    if hazard is not None:
        return BranchFix(None, f"`{setting.name}` would not help {subject}: {hazard}")
    fix, reason = setting_fix(context, setting)
    return BranchFix(fix, reason)


def setting_message(headline: str, outcome: BranchFix) -> str:
    """A finding's message: what breaks, then the setting the fix writes, or why none and what to do by hand."""
    if outcome.fix is not None:
        return f"{headline}; {outcome.fix.message[0].lower()}{outcome.fix.message[1:]}"
    return with_reason(headline, outcome)
