"""Rewrite tensor control flow as one graph: `torch.where`, `torch.cond`, checks and eager-only shortcuts.

The shapes real code is written in, each with the rewrite that keeps its meaning:

- value selection: `if c: x = a` / `else: x = b` (several names, augmented assignments,
  `elif` chains, temporaries) -> one `x = torch.where(c, a, b)` per name;
- guarded update without `else`: `if c: x = f(x)` -> `x = torch.where(c, f(x), x)`;
- returns: `if c: return a` ... `return b` -> the statements between, then
  `return torch.where(c, a, b)`;
- checks: `if c: raise E(msg)` -> `torch._check_tensor_all_with(E, ~c, ...)`;
- skipped work in loops (layer-drop): `if c: continue` or a `to_drop = True` flag ->
  compute the rest of the body and keep the old values where `c` says skip;
- shortcuts: `if (mask == 1).all(): mask = None`, `if m.any(): x[m] = v` -> taken only
  eagerly (resp. always under compile), so the compiled path takes the general route.

Every rewrite is withheld where the code shows it would change the result (see
`_hazards`): arms of different shapes, an untaken arm that may raise or put NaN into
gradients, state mutated by an arm or between a guard and its return. `torch.cond` runs
only the taken branch; it is used when the configuration asks for it
(`tensor-branch-fix = "cond"`) or where `torch.where` is withheld for an untaken arm
that may fail, and only when both branches are single tensor expressions of one shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import libcst as cst

from compile_lint.analysis.facts import Kind
from compile_lint.analysis.walk import iter_nodes
from compile_lint.rules._branch_choice import BRANCH_FIX_CHOICES, DEFAULT_BRANCH_FIX
from compile_lint.rules._conditions import TensorCondition, certain_tensor, tensor_condition
from compile_lint.rules._fixes import GUARD_PREDICATE, is_side_effect_free, spell
from compile_lint.rules._hazards import (
    ShapeModel,
    data_reads,
    dtype_changes,
    names_read,
    stateful_argument,
    untaken_arm_hazard,
)
from compile_lint.rules.base import FixPlan, Rule

WHERE_NOTE = "both branches are computed"
UNUSED_NUMBER = ("the number is used beyond tensor arithmetic (as a size, an index, in Python control "
                 "flow or a call)")
LOOP_NOTE = ("the skipped work still runs (slower; its random draws and zero gradients differ "
             "from skipping it)")


@dataclass
class Linearised:
    """A fix for one tensor branch, or the reason there is none."""

    fix: Optional[FixPlan] = None
    reason: Optional[str] = None


NO_WHILE_FIX = Linearised(None, "the number of iterations depends on data (see --explain JIT102)")


def no_fix(reason: str) -> Linearised:
    """A result without a fix, saying why."""
    return Linearised(None, reason)


def with_reason(message: str, outcome: Linearised) -> str:
    """A finding's message, with the reason it has no fix when it has none."""
    if outcome.fix is None and outcome.reason:
        return f"{message}; no automatic fix: {outcome.reason}"
    return message


def branch_fix_choice(rule: Rule) -> str:
    """"where" or "cond": what the configuration asks for where both are valid."""
    choice = getattr(rule.context, "branch_fix", None)
    return choice if choice in BRANCH_FIX_CHOICES else DEFAULT_BRANCH_FIX


# ----- statements of a branch --------------------------------------------------------------------


@dataclass
class Step:
    """One `NAME = value` (augmented assignments expanded) of a branch."""

    name: str
    value: cst.BaseExpression
    line: cst.CSTNode  # the statement line it came from (its comments travel with it)


def _lines(block: cst.BaseSuite) -> list[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [block]  # a SimpleStatementSuite: `if c: x = 1`


def _small(line: cst.CSTNode) -> Optional[cst.BaseSmallStatement]:
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
        small = _small(line)
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
                return f"`{name} {_code(small.operator).strip()}` updates `{name}` in place, which may alias another tensor"
            operator = _AUGMENTED[type(small.operator)]()
            value = cst.BinaryOperation(cst.Name(name), operator, _parenthesised(small.value))
            steps.append(Step(name, value, line))
        else:
            return _why_not_assignment(line, small)
    for step in steps:
        if not is_side_effect_free(rule.context, step.value):
            return f"`{_code(step.value)}` has a side effect"
    return steps


def _why_not_assignment(line: cst.CSTNode, small: Optional[cst.BaseSmallStatement]) -> str:
    if isinstance(small, (cst.Assign, cst.AugAssign)):
        target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
        if isinstance(target, cst.Attribute):
            return f"the branch assigns `{_code(target)}`, state that outlives the call"
        if isinstance(target, cst.Subscript):
            return f"the branch writes into `{_code(target)}` in place"
        return f"the branch unpacks into `{_code(target)}`"
    if isinstance(small, cst.Expr):
        return f"the branch calls `{_code(small.value)}` for its effect"
    if isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
        return f"the branch has `{_code(small).split()[0]}` among other statements"
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
                    if _assigns(sibling, name):
                        return True
            current = parent
        return False


def _assigns(line: cst.CSTNode, name: str) -> bool:
    """True when running `line` always binds `name` (an `if` counts when every branch does)."""
    if isinstance(line, cst.If):
        if line.orelse is None:
            return False
        others = _lines(line.orelse.body) if isinstance(line.orelse, cst.Else) else [line.orelse]
        return any(_assigns(inner, name) for inner in _lines(line.body)) and any(
            _assigns(inner, name) for inner in others)
    if isinstance(line, (cst.With, cst.Try)):
        return any(_assigns(inner, name) for inner in _lines(line.body))
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


def _enclosing_loop(rule: Rule, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    current = rule.context.parent(node)
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.Lambda)):
        if isinstance(current, (cst.For, cst.While)):
            return current
        current = rule.context.parent(current)
    return None


def _block_and_index(rule: Rule, node: cst.CSTNode) -> tuple[Optional[cst.IndentedBlock], int]:
    parent = rule.context.parent(node)
    if isinstance(parent, cst.IndentedBlock):
        for index, line in enumerate(parent.body):
            if line is node:
                return parent, index
    return None, -1


# ----- building code -----------------------------------------------------------------------------

_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


class Builder:
    """Spells torch calls in the file's terms and remembers the imports they need."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.imports: list[str] = []

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
        return self.call("torch.where", condition, if_true, if_false)

    def cond(self, condition: cst.BaseExpression, if_true: cst.BaseExpression, if_false: cst.BaseExpression,
             operands: Sequence[str]) -> cst.Call:
        """`torch.cond(condition, lambda ops: if_true, lambda ops: if_false, (ops,))`."""
        params = cst.Parameters(params=[
            cst.Param(cst.Name(name), comma=_COMMA if i < len(operands) - 1 else cst.MaybeSentinel.DEFAULT)
            for i, name in enumerate(operands)])
        elements = [cst.Element(cst.Name(name), comma=_COMMA if i < len(operands) - 1 else cst.MaybeSentinel.DEFAULT)
                    for i, name in enumerate(operands)]
        if len(elements) == 1:
            elements = [cst.Element(cst.Name(operands[0]), comma=cst.Comma())]
        return self.call(
            "torch.cond", condition,
            cst.Lambda(params=params, body=self._output(if_true, if_false)),
            cst.Lambda(params=params, body=self._output(if_false, if_true)),
            cst.Tuple(elements=elements),
        )

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
            return cst.Call(func=cst.Attribute(_parenthesised(value, call=True), cst.Name("contiguous")))
        layout = cst.Arg(self.name("torch.contiguous_format"), keyword=cst.Name("memory_format"),
                         equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                               whitespace_after=cst.SimpleWhitespace("")))
        return cst.Call(func=cst.Attribute(_parenthesised(value, call=True), cst.Name("clone")), args=[layout])

    def plan(self, replacements: list, message: str, applicability: str = "unsafe") -> Linearised:
        """The fix: node replacements plus the imports the new code needs."""
        return Linearised(FixPlan(replacements, message, applicability, tuple(dict.fromkeys(self.imports))))


# Tensors `torch.cond` branches return must not alias an operand. New tensors: arithmetic,
# torch functions other than views, tensor methods other than views and no-op conversions.
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
    return cst.Call(func=cst.Attribute(_parenthesised(value, call=True), cst.Name("clone")))


def _strip(expr: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(expr, "lpar", None) and not isinstance(expr, (cst.Tuple, cst.GeneratorExp, cst.Lambda)):
        return expr.with_changes(lpar=[], rpar=[])
    return expr


def _parenthesised(expr: cst.BaseExpression, call: bool = False) -> cst.BaseExpression:
    simple = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)
    if isinstance(expr, simple) or expr.lpar or (not call and isinstance(expr, (cst.UnaryOperation,))):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _assignment(name: str, value: cst.BaseExpression, like: Optional[cst.CSTNode] = None) -> cst.SimpleStatementLine:
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


def _guarded(guard: Optional[cst.BaseExpression], lines: list[cst.CSTNode], node: cst.If) -> cst.CSTNode:
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


def _code(node: cst.CSTNode) -> str:
    text = " ".join(cst.Module(body=[]).code_for_node(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


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
                return f"cannot tell that `{_code(value)}` is a tensor or a number"
        if self.shapes.relation(if_true, if_false) == "differs":
            return (f"`{_code(if_true)}` and `{_code(if_false)}` may differ in shape (a reduction, reshape "
                    "or indexing on one side): torch.where would broadcast them")
        if dtype_changes(if_true) != dtype_changes(if_false):
            return f"`{_code(if_true)}` and `{_code(if_false)}` may differ in dtype: torch.where would promote"
        return None

    def _kind(self, value: cst.BaseExpression) -> Kind:
        return definite_kind(self.rule, value)

    def cond_problem(self, pairs: Sequence[tuple[cst.BaseExpression, cst.BaseExpression]]) -> Optional[str]:
        """Why `torch.cond` cannot take these branch values, or None."""
        for if_true, if_false in pairs:
            for value in (if_true, if_false):
                if self._kind(value) is not Kind.TENSOR:
                    return f"`{_code(value)}` is not certainly a tensor (torch.cond branches return tensors)"
            if self.shapes.relation(if_true, if_false) == "differs":
                return f"`{_code(if_true)}` and `{_code(if_false)}` may differ in shape"
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


def select(rule: Rule, builder: Builder, arms: Arms, if_true: cst.BaseExpression, if_false: cst.BaseExpression,
           prefer: str) -> Union[cst.BaseExpression, str]:
    """`torch.where` (or `torch.cond`) choosing between two values, or why neither is valid."""
    condition = arms.test
    if isinstance(if_true, cst.Tuple) and isinstance(if_false, cst.Tuple):
        if len(if_true.elements) != len(if_false.elements) or any(
                isinstance(e, cst.StarredElement) for e in (*if_true.elements, *if_false.elements)):
            return "the branches return tuples of different lengths"
        pairs = [(a.value, b.value) for a, b in zip(if_true.elements, if_false.elements)]
    else:
        pairs = [(if_true, if_false)]
    hazard = untaken_arm_hazard(rule, [value for pair in pairs for value in pair], arms.condition.tensor)
    use_cond = prefer == "cond" or hazard is not None
    if use_cond:
        problem = arms.cond_problem(pairs)
        if problem is None:
            operands = _operands(rule, [value for pair in pairs for value in pair])
            if not operands:
                problem = "the branches read no tensor to pass to torch.cond"
            else:
                return builder.cond(condition, if_true, if_false, operands)
        if hazard is not None:
            return f"{hazard}; torch.cond does not apply: {problem}"
    problems = [arms.pair_problem(a, b) for a, b in pairs]
    problem = next((p for p in problems if p), None)
    if problem is not None:
        return problem
    if len(pairs) == 1:
        return builder.where(condition, if_true, if_false)
    return cst.Tuple(elements=[
        cst.Element(builder.where(condition, a, b), comma=_COMMA if i < len(pairs) - 1 else cst.MaybeSentinel.DEFAULT)
        for i, (a, b) in enumerate(pairs)])


# ----- the shapes -------------------------------------------------------------------------------


def linearise_if(rule: Rule, node: cst.If, is_elif: bool = False) -> Linearised:
    """A one-graph rewrite of the tensor `if` statement `node`, or why there is none."""
    if is_elif:
        return no_fix("part of an `elif` chain: the rewrite starts at its first `if`")
    condition = tensor_condition(rule, node.test)
    if isinstance(condition, str):
        return no_fix(condition)
    lines = _lines(node.body)
    only = _small(lines[0]) if len(lines) == 1 else None
    if node.orelse is None:
        if isinstance(only, cst.Assign) and isinstance(only.value, cst.Name) and only.value.value == "None":
            return _shortcut_to_none(rule, node, only)
        if isinstance(only, cst.Raise):
            return _check(rule, node, condition, only)
        if isinstance(only, cst.Continue):
            return _skip_rest_of_loop(rule, node, condition)
        if isinstance(only, cst.Break):
            return no_fix("`break` ends the loop after a data-dependent number of iterations")
        if isinstance(only, cst.Assign) and _is_true(only.value) and isinstance(only.targets[0].target, cst.Name):
            name = only.targets[0].target.value
            flag = _flag_consumer(rule, node, name, condition)
            return flag or no_fix(f"the branch sets the Python flag `{name}`: only a flag read once, by a "
                                  f"following `if not {name}:` without `else`, is rewritten")
        masked = _masked_writes(rule, node, condition)
        if masked is not None:
            return masked
    if any(isinstance(_small(line), cst.Return) for line in lines):
        return _returns(rule, node, condition)
    return _assignments(rule, node, condition)


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def compiling_predicate(builder: Builder) -> cst.BaseExpression:
    """`torch.compiler.is_compiling()`, or the file's own `is_torchdynamo_compiling()`."""
    for local, qualified in builder.rule.context.imports.names.items():
        if qualified.endswith("is_torchdynamo_compiling"):
            return cst.Call(func=cst.Name(local))
    return cst.Call(func=builder.name(GUARD_PREDICATE))


def _shortcut_to_none(rule: Rule, node: cst.If, assign: cst.Assign) -> Linearised:
    """`if (mask == 1).all(): mask = None` -> taken only eagerly; compiled code keeps the mask."""
    target = assign.targets[0].target
    if not isinstance(target, cst.Name) or target.value not in names_read(node.test):
        return no_fix("the branch sets a name to None: the code after it would need that name to be optional")
    builder = Builder(rule)
    eager = cst.UnaryOperation(cst.Not(), compiling_predicate(builder))
    test = node.test
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    new_test = cst.BooleanOperation(eager, cst.And(), test)
    return builder.plan(
        [(node.test, new_test)],
        f"Drop `{target.value}` only eagerly: under torch.compile the general path keeps it "
        "(the shortcut must give the same result)")


_MASKED_WRITE_METHODS = ("masked_fill_", "masked_fill", "masked_scatter_", "index_put_")


def _masked_writes(rule: Rule, node: cst.If, condition: TensorCondition) -> Optional[Linearised]:
    """`if m.any(): x[m] = v` -> also taken under compile, where writing through an empty mask is a no-op."""
    mask = _any_of(rule, node.test)
    if mask is None or condition.guard is not None:
        return None
    spelled = _code(mask)
    for line in _lines(node.body):
        small = _small(line)
        target_index = None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Subscript):
            subscript = small.targets[0].target
            if len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index):
                target_index = subscript.slice[0].slice.value
            if target_index is None or _code(target_index) != spelled or not is_side_effect_free(rule.context, small.value):
                return None
            continue
        call = small.value if isinstance(small, cst.Expr) else small.value if isinstance(small, cst.Assign) else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in _MASKED_WRITE_METHODS and call.args and _code(call.args[0].value) == spelled):
            return None
    builder = Builder(rule)
    test = node.test.with_changes(lpar=[], rpar=[]) if node.test.lpar else node.test
    new_test = cst.BooleanOperation(compiling_predicate(builder), cst.Or(), test)
    return builder.plan(
        [(node.test, new_test)],
        f"Always write through `{spelled}` under torch.compile (a no-op when it has no True entry); "
        "eager runs keep the shortcut")


def _any_of(rule: Rule, test: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`m` for a test `m.any()` or `torch.any(m)` (one argument), else None."""
    if not isinstance(test, cst.Call) or not certain_tensor(rule, test):
        return None
    if isinstance(test.func, cst.Attribute) and test.func.attr.value == "any" and not test.args:
        return test.func.value
    if rule.context.qualname(test.func) == "torch.any" and len(test.args) == 1 and test.args[0].keyword is None:
        return test.args[0].value
    return None


def _check(rule: Rule, node: cst.If, condition: TensorCondition, statement: cst.Raise) -> Linearised:
    """`if c: raise E(msg)` -> under compile `torch._assert_async(~c, msg)`; eagerly the original `if`.

    `torch._check_tensor_all_with` would keep the error type but reads the value with
    `.item()`, which breaks the default compile (measured, torch 2.13); an assert compiles
    into `_assert_async` too but would raise AssertionError eagerly.
    """
    exception = statement.exc
    if statement.cause is not None or exception is None:
        return no_fix("a bare `raise` or `raise ... from ...` in the branch")
    message: Optional[cst.BaseExpression] = None
    if isinstance(exception, cst.Call):
        args = exception.args
        if len(args) > 1 or any(arg.keyword is not None or arg.star for arg in args):
            return no_fix("the exception takes more than one message argument")
        message = args[0].value if args else None
    problem = _message_problem(rule, message)
    if problem:
        return no_fix(problem)
    builder = Builder(rule)
    passes = cst.UnaryOperation(cst.BitInvert(), _parenthesised(condition.tensor))
    inner = condition.tensor
    if isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.BitInvert):
        passes = inner.expression.with_changes(lpar=[], rpar=[])
    args = [passes] + ([message] if message is not None else [])
    check: cst.CSTNode = cst.SimpleStatementLine(body=[cst.Expr(builder.call("torch._assert_async", *args))])
    if condition.guard is not None:
        check = cst.If(test=condition.guard, body=cst.IndentedBlock(body=[check]))
    compiled = cst.If(
        test=compiling_predicate(builder),
        body=cst.IndentedBlock(body=[check]),
        orelse=node.with_changes(leading_lines=()),
        leading_lines=node.leading_lines,
    )
    return builder.plan(
        [(node, compiled)],
        "Check with torch._assert_async under torch.compile (a RuntimeError there); eager runs keep the `raise`")


def _message_problem(rule: Rule, message: Optional[cst.BaseExpression]) -> Optional[str]:
    """Why Dynamo could not build the message as a constant string, or None."""
    if message is None or isinstance(message, cst.SimpleString):
        return None
    if not isinstance(message, (cst.FormattedString, cst.ConcatenatedString)):
        return "the error message is not a string literal"
    for node in iter_nodes(message):
        if isinstance(node, (cst.Call, cst.Subscript)):
            return "the error message formats values computed at run time"
        if isinstance(node, cst.Name) and rule.context.kind(node) in (Kind.TENSOR, Kind.MAYBE_TENSOR, Kind.DATA):
            return f"the error message formats `{node.value}`, a tensor"
    return None


# ----- assignments ----------------------------------------------------------------------------------


def branch_values(rule: Rule, steps: Sequence[Step], temporaries: frozenset = frozenset()
                  ) -> Union[tuple[dict[str, cst.BaseExpression], list[cst.CSTNode]], str]:
    """Name -> the value a branch leaves in it, in terms of the values before the branch.

    `temporaries` (names only this branch reads) are not selected: their assignments are
    returned as lines to run first, unconditionally. Another name assigned and then read
    once later in the branch is substituted into that read (`x = x * 2; x = x + 1` ->
    `x * 2 + 1`); anything else that reads a name the branch assigned earlier is a
    dependency this form cannot express.
    """
    values: dict[str, cst.BaseExpression] = {}
    hoisted: list[cst.CSTNode] = []
    uses: dict[str, int] = {}
    shapes = ShapeModel(rule)
    for step in steps:
        read = names_read(step.value)
        if step.name in temporaries:
            if read & set(values):
                return f"the temporary `{step.name}` reads `{sorted(read & set(values))[0]}`, set earlier in the branch"
            hoisted.append(_assignment(step.name, step.value, step.line))
            continue
        value = step.value
        for name in read & set(values):
            if name not in data_reads(step.value) and shapes.relation(values[name], cst.Name(name)) == "same" \
                    and not dtype_changes(values[name]):
                continue  # only `.shape`/`.dtype` is read, which the branch leaves as it was
            count = sum(1 for n in iter_nodes(step.value) if isinstance(n, cst.Name) and n.value == name)
            uses[name] = uses.get(name, 0) + count
            if uses[name] > 1:
                return f"`{name}` is assigned and then read more than once in the branch"
            value = _substitute(value, name, values[name])
        values[step.name] = value
    return values, hoisted


class _Substitute(cst.CSTTransformer):
    def __init__(self, name: str, value: cst.BaseExpression) -> None:
        self.name = name
        self.value = value

    def leave_Attribute(self, original_node, updated_node):  # keep attribute names
        return updated_node.with_changes(attr=original_node.attr)

    def leave_Name(self, original_node, updated_node):
        if original_node.value == self.name:
            return _parenthesised(self.value)
        return updated_node


def _substitute(expr: cst.BaseExpression, name: str, value: cst.BaseExpression) -> cst.BaseExpression:
    return expr.visit(_Substitute(name, value))


def _assignments(rule: Rule, node: cst.If, condition: TensorCondition) -> Linearised:
    """`if c: x = a` [`else: x = b`] (several names, elif chains) -> one select per name."""
    scope = scope_of(rule)
    if scope is None:
        return no_fix("not inside a function")
    if node.orelse is not None and condition.guard is not None:
        return no_fix("a Python test in front of the tensor test, with an `else`")
    loop = _enclosing_loop(rule, node)
    true_steps = assignment_steps(rule, _lines(node.body))
    if isinstance(true_steps, str):
        return no_fix(true_steps)
    false_steps: list[Step] = []
    if isinstance(node.orelse, cst.Else):
        found_steps = assignment_steps(rule, _lines(node.orelse.body))
        if isinstance(found_steps, str):
            return no_fix(found_steps)
        false_steps = found_steps
    true_names = {step.name for step in true_steps}
    false_names = {step.name for step in false_steps}
    temporaries = frozenset(
        name for name in true_names ^ false_names
        if not scope.assigned_before(name, node) and not scope.read_outside(name, [node], loop))
    found = branch_values(rule, true_steps, temporaries)
    if isinstance(found, str):
        return no_fix(found)
    true_values, hoisted = found
    false_values: dict[str, cst.BaseExpression] = {}
    if isinstance(node.orelse, cst.Else):
        found = branch_values(rule, false_steps, temporaries)
        if isinstance(found, str):
            return no_fix(found)
        false_values, more = found
        hoisted += more
    elif isinstance(node.orelse, cst.If):
        merged = _elif_values(rule, node.orelse)
        if isinstance(merged, str):
            return no_fix(merged)
        false_values = merged
    names = list(dict.fromkeys([*true_values, *false_values]))
    if not names:
        return no_fix("the branch assigns nothing")
    temporary_values = [step.value for step in (*true_steps, *false_steps) if step.name in temporaries]
    hazard = untaken_arm_hazard(rule, temporary_values, condition.tensor) if temporary_values else None
    if hazard:
        return no_fix(hazard)
    builder = Builder(rule)
    arms = Arms(rule, condition)
    prefer = branch_fix_choice(rule)
    lines: list[cst.CSTNode] = list(hoisted)
    written: set[str] = set()
    same_layout: set[str] = set()
    if len(names) > 1 and names_read(condition.tensor) & set(names):
        # The later selections must see the test as it was before the first one.
        taken = fresh_name(rule, "take_branch")
        lines.append(_assignment(taken, condition.tensor))
        arms.test = cst.Name(taken)
    for name in names:
        if_true = true_values.get(name)
        if_false = false_values.get(name)
        if (if_true is None or if_false is None) and not scope.assigned_before(name, node):
            return no_fix(f"`{name}` is assigned on one side only and has no value before the branch")
        if (if_true is None or if_false is None) and not _tensor_before(rule, name):
            return no_fix(f"`{name}` is not certainly a tensor before the branch (it may be None or a Python value)")
        value_true = if_true if if_true is not None else cst.Name(name)
        value_false = if_false if if_false is not None else cst.Name(name)
        reads = names_read(value_true) | names_read(value_false) | names_read(arms.test)
        values_read = data_reads(value_true) | data_reads(value_false) | data_reads(arms.test)
        # A selection whose arms have one shape and dtype leaves `.shape`/`.dtype` as they were.
        stale = (values_read & written) | (reads & (written - same_layout))
        if stale:
            return no_fix(f"the branch's assignments read `{sorted(stale)[0]}`, which another one sets")
        chosen = select(rule, builder, arms, value_true, value_false, prefer)
        if isinstance(chosen, str):
            return no_fix(chosen)
        lines.append(_assignment(name, chosen, _step_line(rule, node, name)))
        written.add(name)
        if arms.shapes.relation(value_true, value_false) == "same" and not (
                dtype_changes(value_true) or dtype_changes(value_false)):
            same_layout.add(name)
    used = "torch.cond" if any(_calls(line, "cond") for line in lines) else "torch.where"
    what = ", ".join(f"`{name}`" for name in names)
    note = WHERE_NOTE if used == "torch.where" else "one branch runs"
    return builder.plan([(node, _guarded(condition.guard, lines, node))],
                        f"Assign {what} with {used}(cond, a, b) ({note})")


def _calls(node: cst.CSTNode, attribute: str) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == attribute
               or isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == attribute
               for n in iter_nodes(node))


def _step_line(rule: Rule, node: cst.If, name: str) -> Optional[cst.CSTNode]:
    for line in _lines(node.body):
        small = _small(line)
        if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name) \
                and small.targets[0].target.value == name:
            return line
    return None


def _values_of(rule: Rule, block: cst.BaseSuite) -> Union[dict[str, cst.BaseExpression], str]:
    steps = assignment_steps(rule, _lines(block))
    if isinstance(steps, str):
        return steps
    found = branch_values(rule, steps)
    return found if isinstance(found, str) else found[0]


def _elif_values(rule: Rule, node: cst.If) -> Union[dict[str, cst.BaseExpression], str]:
    """The values an `elif ...` (and what follows it) leaves, as nested selections."""
    true_values = _values_of(rule, node.body)
    if isinstance(true_values, str):
        return true_values
    if isinstance(node.orelse, cst.Else):
        false_values = _values_of(rule, node.orelse.body)
    elif isinstance(node.orelse, cst.If):
        false_values = _elif_values(rule, node.orelse)
    else:
        false_values = {}
    if isinstance(false_values, str):
        return false_values
    condition = tensor_condition(rule, node.test)
    builder = Builder(rule)
    merged: dict[str, cst.BaseExpression] = {}
    for name in dict.fromkeys([*true_values, *false_values]):
        if_true = true_values.get(name, cst.Name(name))
        if_false = false_values.get(name, cst.Name(name))
        if isinstance(condition, str):
            if any(_reads_tensor_data(rule, part) for part in (node.test,)):
                return condition
            merged[name] = cst.IfExp(test=node.test, body=if_true, orelse=if_false)  # a Python elif
            continue
        if condition.guard is not None:
            return "an `elif` with a Python test in front of its tensor test"
        chosen = select(rule, builder, Arms(rule, condition), if_true, if_false, branch_fix_choice(rule))
        if isinstance(chosen, str):
            return chosen
        merged[name] = chosen
    return merged


def _reads_tensor_data(rule: Rule, expr: cst.BaseExpression) -> bool:
    return any(rule.context.kind(n) in (Kind.TENSOR, Kind.DATA) for n in iter_nodes(expr)
               if isinstance(n, (cst.Name, cst.Call, cst.Comparison)))


# ----- returns ----------------------------------------------------------------------------------------


def _returns(rule: Rule, node: cst.If, condition: TensorCondition) -> Linearised:
    """`if c: return a` then the rest of the block ending in `return b` -> `return torch.where(c, a, b)`."""
    true_value = _returned(rule, node.body)
    if isinstance(true_value, str):
        return no_fix(true_value)
    block, index = _block_and_index(rule, node)
    if isinstance(node.orelse, cst.Else):
        tail_lines = _lines(node.orelse.body)
        replaced_tail = False
    elif node.orelse is None:
        if block is None:
            return no_fix("the guard is not in a block of statements")
        tail_lines = list(block.body[index + 1:])
        replaced_tail = True
    else:
        return no_fix("an `elif` after a guarded return")
    if not tail_lines or not isinstance(_small(tail_lines[-1]), cst.Return):
        return no_fix("the code after the guard does not end in a `return`")
    final = _small(tail_lines[-1])
    assert isinstance(final, cst.Return)
    if final.value is None:
        return no_fix("the final `return` has no value")
    steps = assignment_steps(rule, tail_lines[:-1])
    if isinstance(steps, str):
        return no_fix(steps.replace("the branch", "the code between the guard and its return"))
    changed = {step.name for step in steps}
    stale = (names_read(true_value) | names_read(condition.tensor)) & changed
    if stale:
        return no_fix(f"the guarded return reads `{sorted(stale)[0]}`, which the code after the guard reassigns")
    tail_values = [step.value for step in steps]
    for value in tail_values:
        hazard = stateful_argument(rule, [value])
        if hazard:
            return no_fix(hazard)
    hazard = untaken_arm_hazard(rule, [*tail_values, final.value], condition.tensor)
    builder = Builder(rule)
    arms = Arms(rule, condition)
    if hazard is not None:
        if tail_values:
            return no_fix(hazard)
        prefer = "cond"
    else:
        prefer = branch_fix_choice(rule)
    chosen = select(rule, builder, arms, true_value, final.value, prefer)
    if isinstance(chosen, str):
        return no_fix(chosen)
    if condition.guard is not None:
        chosen = cst.IfExp(test=condition.guard, body=chosen, orelse=final.value)
    new_return = tail_lines[-1].with_changes(body=[final.with_changes(value=chosen)])
    message = ("Return torch.cond(cond, ...)" if _calls(chosen, "cond") else
               f"Return torch.where(cond, a, b) ({WHERE_NOTE})")
    if not replaced_tail:
        lines = [*tail_lines[:-1], new_return]
        return builder.plan([(node, _guarded(None, lines, node))], message)
    following = tail_lines[0]
    moved = following.with_changes(leading_lines=[*node.leading_lines, *following.leading_lines]) \
        if following is not tail_lines[-1] else new_return.with_changes(
            leading_lines=[*node.leading_lines, *new_return.leading_lines])
    replacements: list = [(node, cst.RemovalSentinel.REMOVE)]
    if following is tail_lines[-1]:
        replacements.append((tail_lines[-1], moved))
    else:
        replacements += [(following, moved), (tail_lines[-1], new_return)]
    return builder.plan(replacements, message)


def _returned(rule: Rule, block: cst.BaseSuite) -> Union[cst.BaseExpression, str]:
    """The value a branch of assignments then `return value` returns, in terms of values before it."""
    lines = _lines(block)
    last = _small(lines[-1])
    if not isinstance(last, cst.Return):
        return "the branch does not end in its `return`"
    if last.value is None:
        return "the branch returns nothing"
    steps = assignment_steps(rule, lines[:-1])
    if isinstance(steps, str):
        return steps
    found = branch_values(rule, steps)
    if isinstance(found, str):
        return found
    values = found[0]
    value = last.value
    for name, bound in values.items():
        if name in names_read(value):
            value = _substitute(value, name, bound)
    return value


# ----- loops -----------------------------------------------------------------------------------


def _skip_rest_of_loop(rule: Rule, node: cst.If, condition: TensorCondition) -> Linearised:
    """`if c: continue` (layer-drop) -> the rest of the body computed, old values kept where `c`."""
    loop = _enclosing_loop(rule, node)
    if loop is None:
        return no_fix("`continue` outside a loop body")
    inner_block, inner_index = _block_and_index(rule, node)
    anchor: cst.CSTNode = node
    owner = rule.context.parent(inner_block) if inner_block is not None else None
    nested = False
    if isinstance(owner, cst.If) and owner.orelse is None and inner_block is not None \
            and inner_index == len(inner_block.body) - 1 and owner is not loop:
        anchor, nested = owner, True
    block, index = _block_and_index(rule, anchor)
    if block is None or rule.context.parent(block) is not loop:
        return no_fix("the `continue` is nested in more than one block of the loop")
    rest = list(block.body[index + 1:])
    if not rest:
        return no_fix("nothing follows the `continue` in the loop body")
    if isinstance(loop, cst.For) and rule.context.kind(loop.iter) is Kind.TENSOR:
        return no_fix(f"the loop iterates over the tensor `{_code(loop.iter)}`: its steps depend on data")
    return _skip_with_where(rule, node, condition, rest, loop, nested or condition.guard is not None)


def _skip_with_where(rule: Rule, node: cst.If, condition: TensorCondition, rest: list[cst.CSTNode],
                     loop: Optional[cst.CSTNode], keep_rest: bool, flag: Optional[cst.CSTNode] = None) -> Linearised:
    """The code `node` skips, computed anyway with `NAME = torch.where(skip, NAME, new)` per name."""
    hazard = stateful_argument(rule, rest) or untaken_arm_hazard(rule, rest, condition.tensor) or _recorded_by_hooks(
        rule)
    if hazard:
        return no_fix(hazard)
    selector = _SkipSelector(rule, node, condition, rest, loop)
    new_lines = selector.lines(rest)
    if isinstance(new_lines, str):
        return no_fix(new_lines.replace("the branch", "the skipped code"))
    message = f"Keep one graph: compute the skipped code and select with torch.where ({LOOP_NOTE})"
    builder = selector.builder
    if flag is not None or keep_rest:
        copies = [line.with_changes(leading_lines=()) if i == 0 else line for i, line in enumerate(new_lines)]
        tail = [flag] if flag is not None else [cst.SimpleStatementLine(body=[cst.Continue()])]
        guard = condition.guard if flag is None else None
        return builder.plan([(node, _guarded(guard, [*copies, *tail], node))], message)
    # The `if` is directly in the loop body: the code after it becomes the selections.
    replacements: list = [(node, cst.RemovalSentinel.REMOVE)]
    for i, (old, new) in enumerate(zip(rest, new_lines)):
        if i == 0:
            new = new.with_changes(leading_lines=[*node.leading_lines, *new.leading_lines])
        replacements.append((old, new))
    return builder.plan(replacements, message)


# Decorators that install forward hooks recording every layer's outputs (transformers 5).
_OUTPUT_RECORDING_DECORATORS = ("capture_outputs", "check_model_inputs")


def _recorded_by_hooks(rule: Rule) -> Optional[str]:
    """Why running a skipped layer would show in the outputs through recording hooks, or None."""
    function = rule.context.function
    for decorator in function.decorators if function is not None else ():
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        name = _code(target).rsplit(".", 1)[-1]
        if name in _OUTPUT_RECORDING_DECORATORS:
            return (f"`@{name}` records each layer's outputs through hooks: a layer run when it "
                    "would be skipped adds to the returned hidden states and attentions")
    return None


class _SkipSelector:
    """Rewrites skipped lines one for one: outputs selected with torch.where, temporaries as they are.

    Python `if` statements among them keep their test (it does not depend on tensor data)
    and have their bodies rewritten the same way.
    """

    def __init__(self, rule: Rule, node: cst.If, condition: TensorCondition, rest: list[cst.CSTNode],
                 loop: Optional[cst.CSTNode]) -> None:
        self.rule = rule
        self.node = node
        self.condition = condition
        self.region = [node, *rest]
        self.loop = loop
        self.scope = scope_of(rule)
        self.builder = Builder(rule)
        self.arms = Arms(rule, condition)
        self.written: set[str] = set()

    def lines(self, lines: Sequence[cst.CSTNode]) -> Union[list[cst.CSTNode], str]:
        new_lines = []
        for line in lines:
            new = self.line(line)
            if isinstance(new, str):
                return new
            new_lines.append(new)
        return new_lines

    def line(self, line: cst.CSTNode) -> Union[cst.CSTNode, str]:
        if isinstance(line, cst.If):
            if _reads_tensor_data(self.rule, line.test) or not is_side_effect_free(self.rule.context, line.test):
                return "the skipped code branches on a tensor"
            body = self.lines(_lines(line.body))
            if isinstance(body, str):
                return body
            orelse = line.orelse
            if isinstance(orelse, cst.Else):
                other = self.lines(_lines(orelse.body))
                if isinstance(other, str):
                    return other
                orelse = orelse.with_changes(body=orelse.body.with_changes(body=other))
            elif orelse is not None:
                return "the skipped code has an `elif` chain"
            return line.with_changes(body=line.body.with_changes(body=body), orelse=orelse)
        steps = assignment_steps(self.rule, [line])
        if isinstance(steps, str):
            return steps
        if not steps:
            return line
        step = steps[0]
        if self.scope is None:
            return "not inside a function"
        output = self.scope.read_outside(step.name, self.region, self.loop) or self.scope.assigned_before(
            step.name, self.node)
        if not output:
            self.written.add(step.name)
            return line  # a temporary only the skipped code reads
        if not self.scope.assigned_before(step.name, self.node) or not _tensor_before(self.rule, step.name):
            return f"`{step.name}` has no tensor value before the skipped code"
        if names_read(self.condition.tensor) & self.written:
            return "the skip condition reads a value the skipped code changes"
        chosen = select(self.rule, self.builder, self.arms, cst.Name(step.name), step.value, "where")
        if isinstance(chosen, str):
            return chosen
        self.written.add(step.name)
        return _assignment(step.name, chosen, line)


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
    if maybes and not any(_may_be_none(rule, name) for name in maybes):
        return Kind.TENSOR
    return kind


def _tensor_before(rule: Rule, name: str) -> bool:
    """True when local `name` holds a tensor (not None) before a branch that may reassign it."""
    return definite_kind(rule, cst.Name(name)) is Kind.TENSOR


_NOT_TENSOR_VALUES = (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp,
                      cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)


def _may_be_none(rule: Rule, name: str) -> bool:
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


def _flag_consumer(rule: Rule, node: cst.If, flag: str, condition: TensorCondition) -> Optional[Linearised]:
    """`if c: to_drop = True` ... `if not to_drop: h = layer(h)` -> the selection, then the flag."""
    anchor: cst.CSTNode = node
    while True:
        block, index = _block_and_index(rule, anchor)
        if block is None:
            return None
        owner = rule.context.parent(block)
        if isinstance(owner, cst.If) and owner.orelse is None and index == len(block.body) - 1:
            anchor = owner
            continue
        break
    if index + 1 >= len(block.body):
        return None
    consumer = block.body[index + 1]
    if not (isinstance(consumer, cst.If) and consumer.orelse is None
            and isinstance(consumer.test, cst.UnaryOperation) and isinstance(consumer.test.operator, cst.Not)
            and isinstance(consumer.test.expression, cst.Name) and consumer.test.expression.value == flag):
        return None
    scope = scope_of(rule)
    if scope is None or len(scope.reads.get(flag, [])) != 1:
        return no_fix(f"`{flag}` is read more than once")
    if not any(_small(line) is not None and isinstance(_small(line), cst.Assign) and _assigns(line, flag)
               and isinstance(_small(line).value, cst.Name) and _small(line).value.value == "False"
               for line in block.body[:index]):
        return no_fix(f"`{flag}` is not reset to False before the branch that sets it")
    if condition.guard is not None:
        return no_fix("a Python test in front of the tensor test that sets the flag")
    flag_line = _lines(node.body)[0]
    return _skip_with_where(rule, node, condition, _lines(consumer.body), _enclosing_loop(rule, node),
                            keep_rest=True, flag=flag_line.with_changes(leading_lines=()) if hasattr(flag_line, "leading_lines")
                            else flag_line)


# ----- expressions ------------------------------------------------------------------------------------


def linearise_ifexp(rule: Rule, node: cst.IfExp) -> Linearised:
    """`a if c else b` on a tensor `c` -> `torch.where(c, a, b)` (or torch.cond), or why not."""
    condition = tensor_condition(rule, node.test)
    if isinstance(condition, str):
        return no_fix(condition)
    builder = Builder(rule)
    chosen = select(rule, builder, Arms(rule, condition), node.body, node.orelse, branch_fix_choice(rule))
    if isinstance(chosen, str):
        return no_fix(chosen)
    if condition.guard is not None:
        chosen = cst.IfExp(test=condition.guard, body=chosen, orelse=node.orelse,
                           lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    chosen = chosen.with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else chosen
    used = "torch.cond" if _calls(chosen, "cond") else "torch.where"
    return builder.plan([(node, chosen)], f"Use {used}(cond, a, b)"
                        + (f" ({WHERE_NOTE})" if used == "torch.where" else ""))


def linearise_assert(rule: Rule, node: cst.Assert) -> Linearised:
    """`assert t.item() <= n` -> `assert t <= n`, which Dynamo compiles into a runtime check."""
    condition = tensor_condition(rule, node.test)
    if isinstance(condition, str):
        return no_fix(condition)
    if condition.guard is not None:
        return no_fix("a Python test in front of the tensor test in the assert")
    if isinstance(condition.tensor, cst.UnaryOperation):
        return no_fix("a negated tensor assert")
    return Linearised(FixPlan([(node.test, condition.tensor)],
                              "Assert on the tensor (Dynamo compiles a tensor assert into a runtime check)",
                              "unsafe"))


class ElifTracker:
    """Rule mixin: remembers which `if` statements are the `elif` of another."""

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self.__dict__.setdefault("_elifs", set()).add(node.orelse)

    def is_elif(self, node: cst.If) -> bool:
        """True when `node` is written `elif ...`."""
        return node in self.__dict__.get("_elifs", set())


def linearise_data_read(rule: Rule, read: cst.BaseExpression, is_elif) -> Optional[Linearised]:
    """The fix for a value read into Python (`t.item()`, `float(t)`) that only feeds a test, or None.

    The read is kept a tensor and the whole `if`, ternary or assert it decides is rewritten
    (so JIT201/JIT202 and JIT101 agree on one fix). None when the read is not part of a test.
    """
    child: cst.CSTNode = read
    parent = rule.context.parent(child)
    while parent is not None:
        if isinstance(parent, cst.If) and parent.test is child:
            return linearise_if(rule, parent, is_elif(parent))
        if isinstance(parent, cst.IfExp) and parent.test is child:
            return linearise_ifexp(rule, parent)
        if isinstance(parent, cst.Assert) and parent.test is child:
            return linearise_assert(rule, parent)
        if isinstance(parent, cst.While) and parent.test is child:
            return NO_WHILE_FIX
        if not isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.UnaryOperation,
                                   cst.Arg, cst.Call)) or (isinstance(parent, cst.Call) and parent is not read
                                                            and not _is_conversion(rule, parent)):
            return None
        child, parent = parent, rule.context.parent(parent)
    return None


def _is_conversion(rule: Rule, call: cst.Call) -> bool:
    qualified = rule.context.qualname(call.func) or ""
    return qualified in ("builtins.int", "builtins.float", "builtins.bool")
