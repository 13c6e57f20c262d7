"""What the tensor-branch rewrites are made of: the outcome, a branch's statements, and where it sits.

A rewrite gives a `BranchFix` (a fix, or the reason there is none); it reads the branch as
`NAME = value` steps and asks where the branch sits in its function (`Scope`: which names
are bound before it, read after it). Torch calls are spelled in `torch_calls`; the choice
between `torch.where` and `torch.cond` for two values, with the checks that keep it
meaning-preserving (`hazards`), is `selection`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence, Union

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.core.diagnostics import split_message
from compile_lint.fixes.branches.hazards import short_code
from compile_lint.fixes.guards import is_side_effect_free
from compile_lint.fixes.next_steps import next_step
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

WHERE_NOTE = "both branches are computed"
LOOP_NOTE = ("the skipped work still runs (slower; its random draws and zero gradients differ "
             "from skipping it)")


@dataclass
class BranchFix:
    """A fix for one tensor branch, or the reason there is none."""

    fix: Optional[FixPlan] = None
    reason: Optional[str] = None


NO_WHILE_FIX = BranchFix(None, "the number of iterations depends on data (see --explain JIT102)")


def no_fix(reason: str) -> BranchFix:
    """A result without a fix, saying why."""
    return BranchFix(None, reason)


def with_reason(message: str, outcome: BranchFix) -> str:
    """A finding's message, with the reason it has no fix and what to write by hand, when it has none.

    The recipe replaces the rule's general advice: the message keeps what breaks (its part
    before the first "; ") and gives one step, the one that fits the reason.
    """
    if outcome.fix is None and outcome.reason:
        step = next_step(outcome.reason)
        by_hand = f"; by hand: {step.recipe}" if step is not None else ""
        return f"{split_message(message)[0]}; no automatic fix: {outcome.reason}{by_hand}"
    return message


# ----- statements of a branch --------------------------------------------------------------------


@dataclass
class Step:
    """One `NAME = value` (augmented assignments expanded) of a branch."""

    name: str
    value: cst.BaseExpression
    line: cst.CSTNode  # the statement line it came from (its comments travel with it)


def block_lines(block: cst.BaseSuite) -> list[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [block]  # a SimpleStatementSuite: `if c: x = 1`


def only_statement(line: cst.CSTNode) -> Optional[cst.BaseSmallStatement]:
    if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and len(line.body) == 1:
        return line.body[0]
    return None


_AUGMENTED: dict[type[cst.BaseAugOp], type[cst.BaseBinaryOp]] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide, cst.PowerAssign: cst.Power,
    cst.ModuloAssign: cst.Modulo, cst.BitAndAssign: cst.BitAnd, cst.BitOrAssign: cst.BitOr,
}


def assignment_steps(context: FileContext, lines: Sequence[cst.CSTNode]) -> Union[list[Step], str]:
    """The branch as `NAME = value` steps, or why it is more than that."""
    steps: list[Step] = []
    for line in lines:
        small = only_statement(line)
        if isinstance(small, cst.Pass):
            continue
        if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
            continue
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            steps.append(Step(small.targets[0].target.value, small.value, line))
        elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
            steps.append(Step(small.target.value, small.value, line))
        elif (isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name)
              and type(small.operator) in _AUGMENTED):
            name = small.target.value
            if _may_alias(context, name):
                return (f"`{name} {short_code(small.operator).strip()}` updates `{name}` in place, "
                        "which may alias another tensor")
            operator = _AUGMENTED[type(small.operator)]()
            value = cst.BinaryOperation(cst.Name(name), operator, parenthesised(small.value))
            steps.append(Step(name, value, line))
        else:
            return _why_not_assignment(line, small)
    for step in steps:
        if not is_side_effect_free(context, step.value):
            return f"`{short_code(step.value)}` has a side effect"
    return steps


def _why_not_assignment(line: cst.CSTNode, small: Optional[cst.BaseSmallStatement]) -> str:
    if isinstance(small, (cst.Assign, cst.AugAssign)):
        target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
        if isinstance(target, cst.Attribute):
            return f"the branch assigns `{short_code(target)}`, state that outlives the call"
        if isinstance(target, cst.Subscript):
            return f"the branch writes into `{short_code(target)}` in place"
        return f"the branch unpacks into `{short_code(target)}`"
    if isinstance(small, cst.Expr):
        return f"the branch calls `{short_code(small.value)}` for its effect"
    if isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
        return f"the branch has `{short_code(small).split()[0]}` among other statements"
    if small is None and isinstance(line, cst.BaseCompoundStatement):
        return f"the branch has nested control flow (`{type(line).__name__.lower()}`)"
    return "the branch does more than assign names"


# Tensor methods whose result may share memory with the tensor they are called on.
VIEW_METHODS = frozenset({"view", "reshape", "transpose", "permute", "expand", "squeeze", "unsqueeze",
                          "flatten", "narrow", "select", "t", "detach", "view_as", "expand_as", "as_strided",
                          "unflatten", "diagonal", "movedim", "contiguous", "to", "float", "type_as"})


def _may_alias(context: FileContext, name: str) -> bool:
    """True when `name` may share memory with a tensor the caller sees (a parameter, a view)."""
    function = context.function
    if function is None or context.facts.param_kind(function, name) is not None:
        return True
    values = context.local_values(name)
    if not values:
        return True
    for value in values:
        if isinstance(value, tuple) and value[0] == "aug":
            continue  # the augmented assignment itself
        if not isinstance(value, cst.BaseExpression) or isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
            return True
        if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value in VIEW_METHODS):
            return True
    return False


# ----- where the branch sits in its function -----------------------------------------------------


class Scope:
    """Name reads and definite assignments in one function, for the rewrites' checks."""

    def __init__(self, context: FileContext, function: cst.FunctionDef) -> None:
        self.context = context
        self.function = function
        self.order: dict[int, int] = {}
        self.reads: dict[str, list[int]] = {}
        stores: set[int] = set()
        skip: set[int] = set()
        for index, node in enumerate(iter_nodes(function)):
            self.order[id(node)] = index
            if isinstance(node, cst.Attribute):
                skip.add(id(node.attr))
            elif isinstance(node, cst.Arg) and node.keyword is not None:
                skip.add(id(node.keyword))
            elif isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor,
                                   cst.NamedExpr)):
                target = node.target
                for inner in iter_nodes(target):
                    if isinstance(inner, cst.Name) and not isinstance(node, cst.AugAssign):
                        stores.add(id(inner))
            elif isinstance(node, (cst.Param, cst.FunctionDef, cst.ClassDef)):
                skip.add(id(node.name))
            elif isinstance(node, cst.AsName):
                skip.add(id(node.name))
            elif isinstance(node, cst.Name) and id(node) not in skip and id(node) not in stores:
                self.reads.setdefault(node.value, []).append(index)

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        """The first and last walk index of `node`'s subtree."""
        start = self.order[id(node)]
        last = start
        for inner in iter_nodes(node):
            last = max(last, self.order.get(id(inner), last))
        return start, last

    def read_outside(self, name: str, region: Sequence[cst.CSTNode], loop: Optional[cst.CSTNode]) -> bool:
        """True when `name` is read outside `region` where it could see a value set inside it."""
        spans = [self.span(node) for node in region]
        end = max(last for _, last in spans)
        loop_span = self.span(loop) if loop is not None else None
        for index in self.reads.get(name, []):
            if any(start <= index <= last for start, last in spans):
                continue
            if index > end or (loop_span is not None and loop_span[0] <= index <= loop_span[1]):
                return True
        return False

    def assigned_before(self, name: str, node: cst.CSTNode) -> bool:
        """True when `name` is a parameter or assigned by a statement every path to `node` runs."""
        if self.context.facts.param_kind(self.function, name) is not None:
            return True
        current: cst.CSTNode = node
        while current is not self.function:
            parent = self.context.parent(current)
            if parent is None:
                return False
            if isinstance(parent, cst.IndentedBlock):
                for sibling in parent.body:
                    if sibling is current:
                        break
                    if always_binds(sibling, name):
                        return True
            current = parent
        return False


def always_binds(line: cst.CSTNode, name: str) -> bool:
    """True when running `line` always binds `name` (an `if` counts when every branch does)."""
    if isinstance(line, cst.If):
        if line.orelse is None:
            return False
        others = block_lines(line.orelse.body) if isinstance(line.orelse, cst.Else) else [line.orelse]
        return any(always_binds(inner, name) for inner in block_lines(line.body)) and any(
            always_binds(inner, name) for inner in others)
    if isinstance(line, (cst.With, cst.Try)):
        return any(always_binds(inner, name) for inner in block_lines(line.body))
    if not isinstance(line, cst.SimpleStatementLine):
        return False
    for small in line.body:
        targets = []
        if isinstance(small, cst.Assign):
            targets = [target.target for target in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target] if not isinstance(small, cst.AnnAssign) or small.value is not None else []
        for target in targets:
            if isinstance(target, cst.Name) and target.value == name:
                return True
            if isinstance(target, (cst.Tuple, cst.List)) and any(
                    isinstance(e.value, cst.Name) and e.value.value == name for e in target.elements):
                return True
    return False


def scope_of(context: FileContext) -> Optional[Scope]:
    """The `Scope` of the function being visited (built once per function)."""
    function = context.function
    if function is None:
        return None
    return context.memo(("branch scope", function), lambda: Scope(context, function))


def fresh_name(context: FileContext, base: str) -> str:
    """`base`, or `base_2`, ... : a name the function being visited does not use."""
    scope = scope_of(context)
    used = set(scope.reads) | set(context.local_assignments()) if scope is not None else set()
    name, counter = base, 1
    while name in used:
        counter += 1
        name = f"{base}_{counter}"
    return name


def block_and_index(context: FileContext, node: cst.CSTNode) -> tuple[Optional[cst.IndentedBlock], int]:
    parent = context.parent(node)
    if isinstance(parent, cst.IndentedBlock):
        for index, line in enumerate(parent.body):
            if line is node:
                return parent, index
    return None, -1


# ----- small pieces of code ----------------------------------------------------------------------


def parenthesised(expr: cst.BaseExpression, call: bool = False) -> cst.BaseExpression:
    simple = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)
    if isinstance(expr, simple) or expr.lpar or (not call and isinstance(expr, (cst.UnaryOperation,))):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def reads_tensor_data(context: FileContext, expr: cst.BaseExpression) -> bool:
    return any(context.kind(n) in (Kind.TENSOR, Kind.DATA) for n in iter_nodes(expr)
               if isinstance(n, (cst.Name, cst.Call, cst.Comparison)))
