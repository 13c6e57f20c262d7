"""Rewrite tensor control flow as one graph: `torch.where`, `torch.cond`, checks and eager-only shortcuts.

The shapes real code is written in, each with the rewrite that keeps its meaning:

- value selection: `if c: x = a` / `else: x = b` (several names, augmented assignments,
  `elif` chains, temporaries) -> one `x = torch.where(c, a, b)` per name;
- guarded update without `else`: `if c: x = f(x)` -> `x = torch.where(c, f(x), x)`;
- returns: `if c: return a` ... `return b` -> the statements between, then
  `return torch.where(c, a, b)`;
- checks: `if c: raise E(msg)` -> `torch._assert_async(~c, msg)` under compile, the
  original `raise` eagerly;
- skipped work in loops (layer-drop): see `_skipped_work`;
- shortcuts: `if (mask == 1).all(): mask = None`, `if m.any(): x[m] = v` -> taken only
  eagerly (resp. always under compile), so the compiled path takes the general route.

Every rewrite is withheld where the code shows it would change the result (see
`_hazards`): arms of different shapes, an untaken arm that may raise or put NaN into
gradients, state mutated by an arm or between a guard and its return. `torch.cond` runs
only the taken branch; it is used when the configuration asks for it
(`tensor-branch-fix = "cond"`) or where `torch.where` is withheld for an untaken arm
that may fail, and only when both branches are single tensor expressions of one shape.
The parts these rewrites are built from live in `_branch_code`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Union

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.branch_code import (
    NO_WHILE_FIX,
    WHERE_NOTE,
    Arms,
    Builder,
    Linearised,
    Step,
    assignment_line,
    assignment_steps,
    block_and_index,
    block_lines,
    branch_fix_choice,
    enclosing_loop,
    fresh_name,
    no_fix,
    only_statement,
    parenthesised,
    reads_tensor_data,
    replacement_for,
    scope_of,
    select,
    short_code,
    tensor_before,
)
from compile_lint.fixes.conditions import (
    TensorCondition,
    certain_tensor,
    converted_tensors,
    operand_evidence,
    tensor_condition,
)
from compile_lint.fixes.guards import GUARD_PREDICATE, is_side_effect_free
from compile_lint.fixes.hazards import (
    ShapeModel,
    data_reads,
    dtype_changes,
    names_read,
    stateful_argument,
    untaken_arm_hazard,
)
from compile_lint.fixes.skipped_work import (
    flag_consumer,
    skip_rest_of_loop,
)
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.rules.base import Rule

# ----- the shapes -------------------------------------------------------------------------------


def linearise_if(rule: Rule, node: cst.If, is_elif: bool = False) -> Linearised:
    """A one-graph rewrite of the tensor `if` statement `node`, or why there is none."""
    if is_elif:
        return no_fix("part of an `elif` chain: the rewrite starts at its first `if`")
    condition = tensor_condition(rule, node.test)
    if isinstance(condition, str):
        return no_fix(condition)
    lines = block_lines(node.body)
    only = only_statement(lines[0]) if len(lines) == 1 else None
    if node.orelse is None:
        if isinstance(only, cst.Assign) and isinstance(only.value, cst.Name) and only.value.value == "None":
            return _shortcut_to_none(rule, node, only)
        if isinstance(only, cst.Raise):
            return _check(rule, node, condition, only)
        if isinstance(only, cst.Continue):
            return skip_rest_of_loop(rule, node, condition)
        if isinstance(only, cst.Break):
            return no_fix("`break` ends the loop after a data-dependent number of iterations")
        if isinstance(only, cst.Assign) and _is_true(only.value) and isinstance(only.targets[0].target, cst.Name):
            name = only.targets[0].target.value
            flag = flag_consumer(rule, node, name, condition)
            return flag or no_fix(f"the branch sets the Python flag `{name}`: only a flag read once, by a "
                                  f"following `if not {name}:` without `else`, is rewritten")
        masked = _masked_writes(rule, node, condition)
        if masked is not None:
            return masked
    if any(isinstance(only_statement(line), cst.Return) for line in lines):
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
    spelled = short_code(mask)
    for line in block_lines(node.body):
        small = only_statement(line)
        target_index = None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Subscript):
            subscript = small.targets[0].target
            if len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index):
                target_index = subscript.slice[0].slice.value
            if target_index is None or short_code(target_index) != spelled or not is_side_effect_free(rule.context, small.value):
                return None
            continue
        call = small.value if isinstance(small, cst.Expr) else small.value if isinstance(small, cst.Assign) else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in _MASKED_WRITE_METHODS and call.args and short_code(call.args[0].value) == spelled):
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
    passes = cst.UnaryOperation(cst.BitInvert(), parenthesised(condition.tensor))
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
            hoisted.append(assignment_line(step.name, step.value, step.line))
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
            return parenthesised(self.value)
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
    loop = enclosing_loop(rule, node)
    true_steps = assignment_steps(rule, block_lines(node.body))
    if isinstance(true_steps, str):
        return no_fix(true_steps)
    false_steps: list[Step] = []
    if isinstance(node.orelse, cst.Else):
        found_steps = assignment_steps(rule, block_lines(node.orelse.body))
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
        lines.append(assignment_line(taken, condition.tensor))
        arms.test = cst.Name(taken)
    for name in names:
        if_true = true_values.get(name)
        if_false = false_values.get(name)
        if (if_true is None or if_false is None) and not scope.assigned_before(name, node):
            return no_fix(f"`{name}` is assigned on one side only and has no value before the branch")
        if (if_true is None or if_false is None) and not tensor_before(rule, name):
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
        lines.append(assignment_line(name, chosen, _step_line(rule, node, name)))
        written.add(name)
        if arms.shapes.relation(value_true, value_false) == "same" and not (
                dtype_changes(value_true) or dtype_changes(value_false)):
            same_layout.add(name)
    used = "torch.cond" if any(_calls(line, "cond") for line in lines) else "torch.where"
    what = ", ".join(f"`{name}`" for name in names)
    note = WHERE_NOTE if used == "torch.where" else "one branch runs"
    return builder.plan([(node, replacement_for(condition.guard, lines, node))],
                        f"Assign {what} with {used}(cond, a, b) ({note})")


def _calls(node: cst.CSTNode, attribute: str) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == attribute
               or isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == attribute
               for n in iter_nodes(node))


def _step_line(rule: Rule, node: cst.If, name: str) -> Optional[cst.CSTNode]:
    for line in block_lines(node.body):
        small = only_statement(line)
        if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name) \
                and small.targets[0].target.value == name:
            return line
    return None


def _values_of(rule: Rule, block: cst.BaseSuite) -> Union[dict[str, cst.BaseExpression], str]:
    steps = assignment_steps(rule, block_lines(block))
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
            if any(reads_tensor_data(rule, part) for part in (node.test,)):
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


# ----- returns ----------------------------------------------------------------------------------------


def _returns(rule: Rule, node: cst.If, condition: TensorCondition) -> Linearised:
    """`if c: return a` then the rest of the block ending in `return b` -> `return torch.where(c, a, b)`."""
    true_value = _returned(rule, node.body)
    if isinstance(true_value, str):
        return no_fix(true_value)
    block, index = block_and_index(rule, node)
    if isinstance(node.orelse, cst.Else):
        tail_lines = block_lines(node.orelse.body)
        replaced_tail = False
    elif node.orelse is None:
        if block is None:
            return no_fix("the guard is not in a block of statements")
        tail_lines = list(block.body[index + 1:])
        replaced_tail = True
    else:
        return no_fix("an `elif` after a guarded return")
    if not tail_lines or not isinstance(only_statement(tail_lines[-1]), cst.Return):
        return no_fix("the code after the guard does not end in a `return`")
    final = only_statement(tail_lines[-1])
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
        return builder.plan([(node, replacement_for(None, lines, node))], message)
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
    lines = block_lines(block)
    last = only_statement(lines[-1])
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
                              "unsafe", (), operand_evidence(rule, *converted_tensors(rule, node.test))))


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
