"""The parts the tensor-branch rewrites are built from (see `_linearise`).

A branch's statements as `NAME = value` steps, where it sits in its function (which
names are bound before it, read after it), torch calls spelled through the file's
imports, and the choice between `torch.where` and `torch.cond` for two values, with the
checks that keep it meaning-preserving (`_hazards`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence, Union

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.branches.choice import BRANCH_FIX_CHOICES, DEFAULT_BRANCH_FIX, operation_kind, prefers_cond
from compile_lint.fixes.branches.conditions import EAGER_TENSOR, TensorCondition, operand_evidence, tensor_evidence
from compile_lint.fixes.branches.differing_shapes import NOTE as DIFFERING_SHAPES_NOTE
from compile_lint.fixes.branches.differing_shapes import ResultSite, any_differ, differing_shapes_problem
from compile_lint.fixes.guards import GUARD_PREDICATE, is_side_effect_free, spell
from compile_lint.fixes.next_steps import next_step
from compile_lint.fixes.branches.hazards import (
    ShapeModel,
    dtype_changes,
    names_read,
    short_code,
    untaken_arm_hazard,
)
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.rules.base import Rule

WHERE_NOTE = "both branches are computed"
UNUSED_NUMBER = ("the number is used beyond tensor arithmetic (as a size, an index, in Python control "
                 "flow or a call)")
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
    """A finding's message, with the reason it has no fix and what to write by hand, when it has none."""
    if outcome.fix is None and outcome.reason:
        step = next_step(outcome.reason)
        by_hand = f"; by hand: {step.recipe}" if step is not None else ""
        return f"{message}; no automatic fix: {outcome.reason}{by_hand}"
    return message


def branch_fix_choice(rule: Rule) -> str:
    """"where" or "cond": what the configuration asks for where both are valid."""
    choice = rule.context.branch_fix
    return choice if choice in BRANCH_FIX_CHOICES else DEFAULT_BRANCH_FIX


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


_AUGMENTED = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide, cst.PowerAssign: cst.Power,
    cst.ModuloAssign: cst.Modulo, cst.BitAndAssign: cst.BitAnd, cst.BitOrAssign: cst.BitOr,
}


def assignment_steps(rule: Rule, lines: Sequence[cst.CSTNode]) -> Union[list[Step], str]:
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
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and type(small.operator) in _AUGMENTED:
            name = small.target.value
            if _may_alias(rule, name):
                return f"`{name} {short_code(small.operator).strip()}` updates `{name}` in place, which may alias another tensor"
            operator = _AUGMENTED[type(small.operator)]()
            value = cst.BinaryOperation(cst.Name(name), operator, parenthesised(small.value))
            steps.append(Step(name, value, line))
        else:
            return _why_not_assignment(line, small)
    for step in steps:
        if not is_side_effect_free(rule.context, step.value):
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


_VIEW_METHODS = frozenset({"view", "reshape", "transpose", "permute", "expand", "squeeze", "unsqueeze",
                           "flatten", "narrow", "select", "t", "detach", "view_as", "expand_as", "as_strided",
                           "unflatten", "diagonal", "movedim", "contiguous", "to", "float", "type_as"})


def _may_alias(rule: Rule, name: str) -> bool:
    """True when `name` may share memory with a tensor the caller sees (a parameter, a view)."""
    function = rule.context.function
    if function is None or rule.context.facts.param_kind(function, name) is not None:
        return True
    values = rule.context.local_values(name)
    if not values:
        return True
    for value in values:
        if isinstance(value, tuple) and value[0] == "aug":
            continue  # the augmented assignment itself
        if not isinstance(value, cst.BaseExpression) or isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
            return True
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _VIEW_METHODS:
            return True
    return False


# ----- where the branch sits in its function -----------------------------------------------------


class Scope:
    """Name reads and definite assignments in one function, for the rewrites' checks."""

    def __init__(self, rule: Rule, function: cst.FunctionDef) -> None:
        self.rule = rule
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
            elif isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
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
        if self.rule.context.facts.param_kind(self.function, name) is not None:
            return True
        current: cst.CSTNode = node
        while current is not self.function:
            parent = self.rule.context.parent(current)
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


def scope_of(rule: Rule) -> Optional[Scope]:
    """The `Scope` of the function being visited (built once per function)."""
    function = rule.context.function
    if function is None:
        return None
    cache = rule.__dict__.setdefault("_linearise_scopes", {})
    if function not in cache:
        cache[function] = Scope(rule, function)
    return cache[function]


def fresh_name(rule: Rule, base: str) -> str:
    """`base`, or `base_2`, ... : a name the function being visited does not use."""
    scope = scope_of(rule)
    used = set(scope.reads) | set(rule.context.local_assignments()) if scope is not None else set()
    name, counter = base, 1
    while name in used:
        counter += 1
        name = f"{base}_{counter}"
    return name


def block_and_index(rule: Rule, node: cst.CSTNode) -> tuple[Optional[cst.IndentedBlock], int]:
    parent = rule.context.parent(node)
    if isinstance(parent, cst.IndentedBlock):
        for index, line in enumerate(parent.body):
            if line is node:
                return parent, index
    return None, -1


# ----- building code -----------------------------------------------------------------------------

_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


class TorchCalls:
    """Spells torch calls in the file's terms and remembers the imports they need."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.imports: list[str] = []
        self.operands: list[tuple[str, str]] = []  # what each torch.where / torch.cond rests on
        self.notes: list[str] = []  # what the fix's message must add (a result of run-time size)

    def name(self, qualified: str) -> cst.BaseExpression:
        """`qualified` spelled through the file's imports (`T.where`), noting a missing import."""
        spelled, imports = spell(self.rule.context, qualified)
        self.imports.extend(imports)
        return cst.parse_expression(spelled)

    def call(self, qualified: str, *args: cst.BaseExpression) -> cst.Call:
        """`qualified(args...)`."""
        arguments = [cst.Arg(_strip(arg), comma=_COMMA) for arg in args]
        if arguments:
            arguments[-1] = arguments[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return cst.Call(func=self.name(qualified), args=arguments)

    def where(self, condition: cst.BaseExpression, if_true: cst.BaseExpression, if_false: cst.BaseExpression) -> cst.Call:
        """`torch.where(condition, if_true, if_false)`."""
        self._rests_on(condition, if_true, if_false)
        return self.call("torch.where", condition, if_true, if_false)

    def cond(self, condition: cst.BaseExpression, if_true: cst.BaseExpression, if_false: cst.BaseExpression,
             operands: Sequence[str]) -> cst.Call:
        """`torch.cond(condition, lambda ops: if_true, lambda ops: if_false, (ops,))`."""
        self._rests_on(condition, if_true, if_false)
        params = cst.Parameters(params=[
            cst.Param(cst.Name(name), comma=_COMMA if i < len(operands) - 1 else cst.MaybeSentinel.DEFAULT)
            for i, name in enumerate(operands)])
        elements = [cst.Element(cst.Name(name), comma=_COMMA if i < len(operands) - 1 else cst.MaybeSentinel.DEFAULT)
                    for i, name in enumerate(operands)]
        if len(elements) == 1:
            elements = [cst.Element(cst.Name(operands[0]), comma=cst.Comma())]
        return self.call(
            "torch.cond", condition,
            cst.Lambda(params=params, body=_bracketed(self._output(if_true, if_false))),
            cst.Lambda(params=params, body=_bracketed(self._output(if_false, if_true))),
            cst.Tuple(elements=elements),
        )

    def _rests_on(self, *values: cst.BaseExpression) -> None:
        for value in values:
            parts = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
            self.operands.extend(operand_evidence(self.rule, *parts))

    def _output(self, value: cst.BaseExpression, other: cst.BaseExpression) -> cst.BaseExpression:
        """A torch.cond branch output: a new tensor, with the memory layout the other branch has.

        torch.cond rejects a branch that returns an operand (or a view of one) and two
        branches whose outputs differ in strides (measured: cholesky is column-major).
        """
        if isinstance(value, cst.Tuple) and isinstance(other, cst.Tuple):
            return value.with_changes(elements=[
                e.with_changes(value=self._output(e.value, o.value)) for e, o in zip(value.elements, other.elements)])
        arithmetic = (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)
        if isinstance(value, arithmetic) and isinstance(other, arithmetic):
            return value  # elementwise results of the same inputs share their layout
        if _fresh(value, (), self.rule) is value:
            return cst.Call(func=cst.Attribute(parenthesised(value, call=True), cst.Name("contiguous")))
        layout = cst.Arg(self.name("torch.contiguous_format"), keyword=cst.Name("memory_format"),
                         equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                               whitespace_after=cst.SimpleWhitespace("")))
        return cst.Call(func=cst.Attribute(parenthesised(value, call=True), cst.Name("clone")), args=[layout])

    def plan(self, replacements: list, message: str, applicability: str = "unsafe") -> BranchFix:
        """The fix: node replacements plus the imports the new code needs."""
        message = "; ".join([message, *dict.fromkeys(self.notes)])
        return BranchFix(FixPlan(replacements, message, applicability, tuple(dict.fromkeys(self.imports)),
                                  tuple(dict.fromkeys(self.operands))))


# Tensors `torch.cond` branches return must not alias an operand. New tensors: arithmetic,
# torch functions other than views, tensor methods other than views and no-op conversions.
def compiling_predicate(builder: TorchCalls) -> cst.BaseExpression:
    """`torch.compiler.is_compiling()`, or the file's own `is_torchdynamo_compiling()`."""
    for local, qualified in builder.rule.context.imports.names.items():
        if qualified.endswith("is_torchdynamo_compiling"):
            return cst.Call(func=cst.Name(local))
    return cst.Call(func=builder.name(GUARD_PREDICATE))


_FRESH_RESULTS = (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)
_MAY_RETURN_INPUT = _VIEW_METHODS | {"half", "double", "bool", "long", "int", "type", "cpu", "cuda",
                                     "requires_grad_", "__getitem__"}


def _fresh(value: cst.BaseExpression, operands: Sequence[str], rule: Optional[Rule] = None) -> cst.BaseExpression:
    """`value`, cloned unless it is certainly a new tensor (torch.cond rejects aliasing outputs)."""
    if isinstance(value, cst.Tuple):
        return value.with_changes(elements=[e.with_changes(value=_fresh(e.value, operands, rule))
                                            for e in value.elements])
    if isinstance(value, _FRESH_RESULTS):
        return value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        name = value.func.attr.value
        receiver = value.func.value
        is_module = isinstance(receiver, cst.Name) and receiver.value == "self"
        if not is_module and name not in _MAY_RETURN_INPUT and (
                rule is None or rule.context.qualname(value.func) is None or
                (rule.context.qualname(value.func) or "").startswith("torch.")):
            return value
    return cst.Call(func=cst.Attribute(parenthesised(value, call=True), cst.Name("clone")))


def _bracketed(body: cst.BaseExpression) -> cst.BaseExpression:
    """A lambda body: a tuple needs its parentheses (`lambda x: a, b` is a lambda and `b`)."""
    if isinstance(body, cst.Tuple) and not body.lpar:
        return body.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return body


def _strip(expr: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(expr, "lpar", None) and not isinstance(expr, (cst.Tuple, cst.GeneratorExp, cst.Lambda)):
        return expr.with_changes(lpar=[], rpar=[])
    return expr


def parenthesised(expr: cst.BaseExpression, call: bool = False) -> cst.BaseExpression:
    simple = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)
    if isinstance(expr, simple) or expr.lpar or (not call and isinstance(expr, (cst.UnaryOperation,))):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def assignment_line(name: str, value: cst.BaseExpression, like: Optional[cst.CSTNode] = None) -> cst.SimpleStatementLine:
    line = cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])
    if isinstance(like, cst.SimpleStatementLine):
        line = line.with_changes(leading_lines=like.leading_lines, trailing_whitespace=like.trailing_whitespace)
    return line


def _with_header_comment(lines: list[cst.CSTNode], node: cst.If) -> list[cst.CSTNode]:
    """Carry the `if` line's leading comments and its trailing comment to the new first line."""
    if not lines:
        return lines
    first = lines[0]
    changes: dict = {"leading_lines": [*node.leading_lines, *getattr(first, "leading_lines", ())]}
    header = node.body.header if isinstance(node.body, cst.IndentedBlock) else None
    if (header is not None and header.comment is not None and isinstance(first, cst.SimpleStatementLine)
            and first.trailing_whitespace.comment is None):
        changes["trailing_whitespace"] = header
    lines[0] = first.with_changes(**changes)
    return lines


def replacement_for(guard: Optional[cst.BaseExpression], lines: list[cst.CSTNode], node: cst.If) -> cst.CSTNode:
    """`lines` as the replacement of `node`, under `if guard:` when there is one."""
    if guard is None:
        lines = _with_header_comment(lines, node)
        return cst.FlattenSentinel(lines) if len(lines) != 1 else lines[0]
    body = [line.with_changes(leading_lines=()) if i == 0 and hasattr(line, "leading_lines") else line
            for i, line in enumerate(lines)]
    return cst.If(test=guard, body=cst.IndentedBlock(body=body, header=node.body.header
                                                     if isinstance(node.body, cst.IndentedBlock) else
                                                     cst.TrailingWhitespace()),
                  leading_lines=node.leading_lines)


# ----- the arms ---------------------------------------------------------------------------------


class Arms:
    """Checks on the values a rewrite would compute on both sides of a condition."""

    def __init__(self, rule: Rule, condition: TensorCondition) -> None:
        self.rule = rule
        self.condition = condition
        self.test = condition.tensor  # what the rewrite spells as the condition
        self.shapes = ShapeModel(rule)

    def pair_problem(self, if_true: cst.BaseExpression, if_false: cst.BaseExpression) -> Optional[str]:
        """Why `torch.where(cond, if_true, if_false)` could differ from the branch, or None."""
        kinds = [self._kind(if_true), self._kind(if_false)]
        if Kind.TENSOR not in kinds:
            return "neither value is certainly a tensor (torch.where would turn Python values into a tensor)"
        for value, kind in zip((if_true, if_false), kinds):
            if isinstance(value, cst.Name) and value.value == "None":
                return "one branch gives None"
            if kind not in (Kind.TENSOR, Kind.PY, Kind.SHAPE):
                return f"cannot tell that `{short_code(value)}` is a tensor or a number"
            if kind is Kind.TENSOR and tensor_evidence(self.rule, value) != EAGER_TENSOR:
                return (f"`{short_code(value)}` is a {tensor_evidence(self.rule, value)}, no evidence it is one "
                        "in eager code (torch.where would fail on, or change, what eager code passes)")
        if self.shapes.relation(if_true, if_false) == "differs":
            return (f"`{short_code(if_true)}` and `{short_code(if_false)}` may differ in shape (a reduction, reshape "
                    "or indexing on one side): torch.where would broadcast them")
        if dtype_changes(if_true) != dtype_changes(if_false):
            return f"`{short_code(if_true)}` and `{short_code(if_false)}` may differ in dtype: torch.where would promote"
        return None

    def pair_problem_of(self, pairs: Sequence[tuple[cst.BaseExpression, cst.BaseExpression]]) -> Optional[str]:
        """The first `pair_problem` of `pairs`, or None."""
        return next((problem for problem in (self.pair_problem(a, b) for a, b in pairs) if problem), None)

    def _kind(self, value: cst.BaseExpression) -> Kind:
        return definite_kind(self.rule, value)

    def cond_problem(self, pairs: Sequence[tuple[cst.BaseExpression, cst.BaseExpression]],
                     site: Optional[ResultSite] = None) -> Optional[str]:
        """Why `torch.cond` cannot take these branch values, or None.

        Arms that differ in shape are taken only where `site` (where the result goes) is
        known and `differing_shapes` finds the rewrite exact there.
        """
        for if_true, if_false in pairs:
            for value in (if_true, if_false):
                if self._kind(value) is not Kind.TENSOR:
                    return f"`{short_code(value)}` is not certainly a tensor (torch.cond branches return tensors)"
                if tensor_evidence(self.rule, value) != EAGER_TENSOR:
                    return (f"`{short_code(value)}` is a {tensor_evidence(self.rule, value)}, no evidence it is one "
                            "in eager code (torch.cond branches return tensors)")
            if self.shapes.relation(if_true, if_false) == "differs":
                if site is None:
                    return f"`{short_code(if_true)}` and `{short_code(if_false)}` may differ in shape"
                problem = differing_shapes_problem(self.rule, self.shapes, if_true, if_false, site)
                if problem is not None:
                    return problem
        return None


def _operands(rule: Rule, values: Sequence[cst.BaseExpression]) -> list[str]:
    """Tensor names the branch values read, in first-read order (torch.cond's operands)."""
    found: list[str] = []
    for value in values:
        for node in iter_nodes(value):
            if isinstance(node, cst.Name) and node.value not in found and node.value != "self":
                if rule.context.kind(node) in (Kind.TENSOR, Kind.MAYBE_TENSOR) and node.value in names_read(value):
                    found.append(node.value)
    return found


def select(rule: Rule, builder: TorchCalls, arms: Arms, if_true: cst.BaseExpression, if_false: cst.BaseExpression,
           prefer: str, site: Optional[ResultSite] = None) -> Union[cst.BaseExpression, str]:
    """`torch.where` (or `torch.cond`) choosing between two values, or why neither is valid.

    `site` says where the result goes; with it, arms that differ in shape may get torch.cond.
    """
    condition = arms.test
    if isinstance(if_true, cst.Tuple) and isinstance(if_false, cst.Tuple):
        if len(if_true.elements) != len(if_false.elements) or any(
                isinstance(e, cst.StarredElement) for e in (*if_true.elements, *if_false.elements)):
            return "the branches return tuples of different lengths"
        pairs = [(a.value, b.value) for a, b in zip(if_true.elements, if_false.elements)]
    else:
        pairs = [(if_true, if_false)]
    hazard = untaken_arm_hazard(rule, [value for pair in pairs for value in pair], arms.condition.tensor)
    values = [value for pair in pairs for value in pair]
    use_cond = hazard is not None or prefer == "cond" or (prefer == "auto" and any(does_heavy_work(rule, v) for v in values))
    shapes_differ = site is not None and any_differ(arms.shapes, pairs)
    if use_cond or shapes_differ:
        problem = arms.cond_problem(pairs, site)
        if problem is None:
            operands = _operands(rule, [value for pair in pairs for value in pair])
            if not operands:
                problem = "the branches read no tensor to pass to torch.cond"
            else:
                if shapes_differ:
                    builder.notes.append(f"the arms differ in shape: {DIFFERING_SHAPES_NOTE}")
                return builder.cond(condition, if_true, if_false, operands)
        if hazard is not None or shapes_differ:
            return f"{hazard or arms.pair_problem_of(pairs)}; torch.cond does not apply: {problem}"
    problem = arms.pair_problem_of(pairs)
    if problem is not None:
        return problem
    if len(pairs) == 1:
        return builder.where(condition, if_true, if_false)
    return cst.Tuple(elements=[
        cst.Element(builder.where(condition, a, b), comma=_COMMA if i < len(pairs) - 1 else cst.MaybeSentinel.DEFAULT)
        for i, (a, b) in enumerate(pairs)])


def does_heavy_work(rule: Rule, value: cst.BaseExpression) -> bool:
    """True when "auto" gives an arm computing `value` torch.cond: what it runs (submodule
    calls, matmuls, convolutions...) costs more than cond's overhead (the cost model in choice.py)."""
    context = rule.context
    kinds = []
    for node in iter_nodes(value):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
            kinds.append(operation_kind(matmul_operator=True))
        elif isinstance(node, cst.Call):
            qualified = context.qualname(node.func) or ""
            method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
            kinds.append(operation_kind(qualified, method, not qualified and context.kind(node.func) is Kind.MODULE))
    return prefers_cond(kinds)


def definite_kind(rule: Rule, value: cst.BaseExpression) -> Kind:
    """The kind of `value`, TENSOR where facts say MAYBE_TENSOR only for locals never None.

    Facts merge a local's assignments flow-insensitively (`scale = x.new_ones(())` then
    `scale = scale * 2` reads as a tensor or a number); a local never assigned None, and
    not an optional parameter, is a tensor wherever one of its values is.
    """
    kind = rule.context.kind(value)
    if kind is not Kind.MAYBE_TENSOR:
        return kind
    maybes = [name for name in names_read(value) if rule.context.kind(cst.Name(name)) is Kind.MAYBE_TENSOR]
    if maybes and not any(may_hold_non_tensor(rule, name) for name in maybes):
        return Kind.TENSOR
    return kind


def tensor_before(rule: Rule, name: str) -> bool:
    """True when local `name` holds a tensor (not None) before a branch that may reassign it."""
    return definite_kind(rule, cst.Name(name)) is Kind.TENSOR


_NOT_TENSOR_VALUES = (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp,
                      cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)


def may_hold_non_tensor(rule: Rule, name: str) -> bool:
    """True when `name` may hold something other than a tensor: an optional parameter, or a
    local ever assigned None, a literal number or string, or a Python container."""
    function = rule.context.function
    if function is None:
        return True
    for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
        if param.name.value == name:
            if param.default is not None and isinstance(param.default, (cst.Name, *_NOT_TENSOR_VALUES)) and (
                    not isinstance(param.default, cst.Name) or param.default.value == "None"):
                return True
            if rule.context.facts.param_kind(function, name) is Kind.MAYBE_TENSOR:
                return True
    for value in rule.context.local_values(name):
        if isinstance(value, tuple) and value[0] == "aug":
            value = value[2]
        if not isinstance(value, cst.BaseExpression):
            continue
        for inner in (value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,):
            if isinstance(inner, cst.Name) and inner.value in ("None", "True", "False"):
                return True
            if isinstance(inner, _NOT_TENSOR_VALUES):
                return True
    return False


def reads_tensor_data(rule: Rule, expr: cst.BaseExpression) -> bool:
    return any(rule.context.kind(n) in (Kind.TENSOR, Kind.DATA) for n in iter_nodes(expr)
               if isinstance(n, (cst.Name, cst.Call, cst.Comparison)))
