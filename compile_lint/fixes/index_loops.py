"""A `for` loop over the indices `nonzero()` found -> a loop over every candidate index.

The mixture-of-experts loop of transformers' MoE models (mixtral, qwen2_moe, gpt_oss, dbrx,
nllb_moe, switch_transformers, 5.23) is

    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        expert_idx = expert_idx[0]
        top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
        ...
        final.index_add_(0, token_idx, out)

Measured on torch 2.13 (CPU, backend "eager"; benchmarks/graphmend_table.py): the default
compile breaks at `nonzero()` ("Dynamic shape operator"), and with
`capture_dynamic_output_shape_ops` the break moves to the `for` (its trip count is an
unbacked size). Looping over every candidate instead, `for expert_idx in range(N)` with `N`
the mask's static length, and capturing the one-argument `torch.where` inside, the six
models compile as one graph with outputs equal to the original's: an expert no token picked
selects nothing, and its gather and `index_add_` do nothing.

The fix rests on what the loop body does with an empty selection, so it is offered only
where the body changes nothing but locals it alone reads and in-place scatters
(`index_add_`, `index_copy_`, `x[sel] = v`) through an index a one-argument `torch.where` /
`nonzero()` of the body selects. It stays unsafe: every candidate now runs its gather and
matmuls on the empty selection (on a GPU that is a launch per candidate, but no
`nonzero()` sync: benchmarks/moe_loop_payoff.py prices it), an op that fails on an empty
tensor (a module's batch norm in training) would raise, and a random draw of a candidate
not picked changes the random stream. The capture setting is global: the fix writes
`torch._dynamo.config.capture_dynamic_output_shape_ops = True` after the file's imports
(unless the file sets it), so importing the file turns it on for the process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from compile_lint.analysis.syntax.literals import int_literal
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.branches.blocks import BranchFix, no_fix
from compile_lint.fixes.guards import inside
from compile_lint.fixes.hit_tests import hit_test
from compile_lint.fixes.keep_tensor import NameOccurrences
from compile_lint.fixes.plan import FixPlan
from compile_lint.fixes.settings import CAPTURE_SHAPES, file_sets, setting_after_imports

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

LOOP_FIX_MESSAGE = ("Loop over every candidate index, `for {target} in range({count})`, and capture the "
                    "selection inside (capture_dynamic_output_shape_ops = True after the imports): candidates "
                    "not picked run on an empty selection, which costs where few tokens meet many experts "
                    "(check with --fix --verify --bench)")
SETTING_NOTE = "Lets `torch.where(mask)` compile in a loop over every candidate index (compile-lint JIT207)."

# In-place scatters that do nothing for an empty index.
_INDEX_SCATTERS = frozenset({"index_add_", "index_copy_", "index_fill_", "index_reduce_"})
# Calls that fail on an empty tensor (a reduction with no identity) or leave the graph.
_EMPTY_HOSTILE = frozenset({"max", "min", "argmax", "argmin", "median", "mode", "kthvalue", "item", "tolist",
                            "amax", "amin", "nanmedian", "quantile"})


# ----- finding the loop ---------------------------------------------------------------------------


def iterating_loop(context: FileContext, call: cst.Call) -> Optional[tuple[cst.For, Optional[cst.CSTNode]]]:
    """The `for` loop that iterates the rows `call` (a `nonzero()`) returns, and the statement binding them
    to a name when it is not the loop's own iterable; None when nothing but one loop reads them."""
    parent = context.parent(call)
    if isinstance(parent, cst.For) and parent.iter is call:
        return parent, None
    function = context.function
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1 or function is None:
        return None
    target = parent.targets[0].target
    statement = context.parent(parent)
    if not isinstance(target, cst.Name) or not isinstance(statement, cst.SimpleStatementLine) \
            or len(statement.body) != 1 or len(context.local_values(target.value)) != 1:
        return None
    occurrences = NameOccurrences(target.value)
    visit(function.body, occurrences)
    reads = [name for name in occurrences.found if name is not target]
    if occurrences.shadowed or len(reads) != 1:
        return None
    loop = context.parent(reads[0])
    if isinstance(loop, cst.For) and loop.iter is reads[0]:
        return loop, statement
    return None


def nonzero_operand(context: FileContext, call: cst.Call) -> Optional[cst.BaseExpression]:
    """`m` of `m.nonzero()`, `torch.nonzero(m)`, `torch.argwhere(m)` or `m.argwhere()`, with no other argument."""
    qualified = context.qualname(call.func)
    if qualified in ("torch.nonzero", "torch.argwhere"):
        return call.args[0].value if len(call.args) == 1 and not call.args[0].keyword and not call.args[0].star \
            else None
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("nonzero", "argwhere") and not call.args:
        return call.func.value
    return None


# ----- the candidates ----------------------------------------------------------------------------

def in_index_loop(context: FileContext, node: cst.CSTNode) -> bool:
    """True when `node` lies in the body of a `for` loop over the indices a `nonzero()` found."""
    current = context.parent(node)
    while current is not None and not isinstance(current, cst.FunctionDef):
        if isinstance(current, cst.For) and _iterates_nonzero(context, current.iter):
            return True
        current = context.parent(current)
    return False


def _iterates_nonzero(context: FileContext, iterable: cst.BaseExpression) -> bool:
    if isinstance(iterable, cst.Name):
        values = context.local_values(iterable.value)
        return len(values) == 1 and isinstance(values[0], cst.BaseExpression) and _iterates_nonzero(context,
                                                                                                  values[0])
    return isinstance(iterable, cst.Call) and nonzero_operand(context, iterable) is not None


# ----- the loop body -----------------------------------------------------------------------------


@dataclass
class _Body:
    """What the loop body does, as far as the fix needs it."""

    assigned: set[str] = field(default_factory=set)
    selections: set[str] = field(default_factory=set)
    problem: Optional[str] = None


class _BodyCheck(cst.CSTVisitor):
    """Walks a loop body: its bindings, its selections, and anything an empty selection would not undo."""

    def __init__(self, context: FileContext, body: _Body, mask: str, variable: str) -> None:
        self.context = context
        self.body = body
        self.mask = mask
        self.variable = variable

    def _fail(self, problem: str) -> bool:
        self.body.problem = self.body.problem or problem
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._fail("the loop body defines a function")

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self._fail("the loop body defines a function")

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self._fail("the loop body defines a class")

    def visit_For(self, node: cst.For) -> bool:
        return self._fail("the loop body holds another loop")

    def visit_While(self, node: cst.While) -> bool:
        return self._fail("the loop body holds another loop")

    def visit_Try(self, node: cst.Try) -> bool:
        return self._fail("the loop body catches exceptions")

    def visit_Break(self, node: cst.Break) -> bool:
        return self._fail("the loop body ends the loop with `break`")

    def visit_Return(self, node: cst.Return) -> bool:
        return self._fail("the loop body returns")

    def visit_Raise(self, node: cst.Raise) -> bool:
        return self._fail("the loop body raises")

    def visit_Yield(self, node: cst.Yield) -> bool:
        return self._fail("the loop body yields")

    def visit_Del(self, node: cst.Del) -> bool:
        return self._fail("the loop body deletes a name")

    def visit_Global(self, node: cst.Global) -> bool:
        return self._fail("the loop body declares a global")

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return self._fail("the loop body declares a global")

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        return self._fail("the loop body binds a name with `:=`")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, None)

    def _target(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        selecting = value is not None and self._selects(value)
        if isinstance(target, cst.Name):
            self.body.assigned.add(target.value)
            if selecting:
                self.body.selections.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, value)
        elif isinstance(target, cst.Subscript):
            if not self._indexed_by_selection(target):
                self._fail("the loop body writes an element no selection of it picks")
        else:
            self._fail("the loop body assigns an attribute")

    def _selects(self, value: cst.BaseExpression) -> bool:
        """`torch.where(m[v])` (one argument) or `m[v].nonzero()`, `m[v].squeeze(0)` too: the candidate's row
        of the tested mask, empty for a candidate the test did not pick."""
        if not isinstance(value, cst.Call):
            return False
        if self.context.qualname(value.func) == "torch.where":
            return len(value.args) == 1 and not value.args[0].keyword and self._candidate_row(value.args[0].value)
        operand = nonzero_operand(self.context, value)
        return operand is not None and self._candidate_row(operand)

    def _candidate_row(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "squeeze" \
                and len(expr.args) == 1 and int_literal(expr.args[0].value) == 0:
            expr = expr.func.value
        if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value == self.mask
                and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)):
            return False
        index = expr.slice[0].slice.value
        return isinstance(index, cst.Name) and index.value == self.variable

    def _indexed_by_selection(self, subscript: cst.Subscript) -> bool:
        return any(isinstance(element.slice, cst.Index) and isinstance(element.slice.value, cst.Name)
                   and element.slice.value.value in self.body.selections for element in subscript.slice)

    def visit_Expr(self, node: cst.Expr) -> bool:
        value = node.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in _INDEX_SCATTERS and len(value.args) >= 2 \
                and isinstance(value.args[1].value, cst.Name) and value.args[1].value.value in self.body.selections:
            return True
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
            return False  # a docstring-like string
        return self._fail("the loop body has a statement that acts on more than its selection")

    def visit_Call(self, node: cst.Call) -> None:
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else (
            node.func.value if isinstance(node.func, cst.Name) else "")
        if name in _EMPTY_HOSTILE:
            self._fail(f"`{name}()` in the loop body fails on an empty selection")


class _LoopIndex(cst.CSTTransformer):
    """Rewrites the reads of the loop variable: it was a row of `nonzero()` (a 1-element tensor), now an int."""

    def __init__(self, name: str, row: bool) -> None:
        self.name = name
        self.row = row  # True: the body reads the row itself (`v[0]`, `m[v]`), not an int bound from it
        self.problem: Optional[str] = None

    def _is_variable(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def _sole_index(self, node: cst.Subscript) -> Optional[cst.BaseExpression]:
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            return node.slice[0].slice.value
        return None

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        index = self._sole_index(original_node)
        if self.row and self._is_variable(original_node.value) and index is not None and int_literal(index) == 0:
            return cst.Name(self.name)  # `v[0]` -> `v`
        if self.row and index is not None and self._is_variable(index):
            # `m[v]` with `v` a 1-element index tensor keeps a leading dim of 1: `m[[v]]`.
            element = updated_node.slice[0].with_changes(slice=cst.Index(cst.List([cst.Element(cst.Name(self.name))])))
            return updated_node.with_changes(slice=[element])
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        # `m[v].squeeze(0)` -> `m[v]` (the row's leading dim of 1, dropped): read as the int index.
        func = original_node.func
        if self.row and isinstance(func, cst.Attribute) and func.attr.value == "squeeze" \
                and len(original_node.args) == 1 and int_literal(original_node.args[0].value) == 0 \
                and isinstance(func.value, cst.Subscript) and self._sole_index(func.value) is not None \
                and self._is_variable(self._sole_index(func.value)):  # type: ignore[arg-type]
            return func.value
        return updated_node



def _variable_uses_are_indexes(context: FileContext, loop: cst.For, name: str, row: bool,
                               skipped: Optional[cst.CSTNode]) -> Optional[str]:
    """Why the reads of the loop variable do not read the same as an int, or None when they all do."""
    occurrences = NameOccurrences(name)
    visit(loop.body, occurrences)
    for node in occurrences.found:
        if skipped is not None and inside(context, node, skipped):
            continue
        parent = context.parent(node)
        grand = context.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Index) and isinstance(grand, cst.SubscriptElement):
            subscript = context.parent(grand)
            if isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1:
                continue  # `m[v]`: the one index
        if row and isinstance(parent, cst.Subscript) and parent.value is node:
            index = parent.slice[0].slice if len(parent.slice) == 1 else None
            if isinstance(index, cst.Index) and int_literal(index.value) == 0:
                if not _int_use(context, parent):
                    return f"`{name}[0]` is used as more than an index or a label"
                continue
        if not row and _int_use(context, node):
            continue
        return f"`{name}` is used as more than an index"
    return None


def _int_use(context: FileContext, node: cst.CSTNode) -> bool:
    """A read that sees the same as an int or a 0-d integer tensor: the one index, `== n`, a label in an f-string."""
    parent = context.parent(node)
    if isinstance(parent, cst.Index):
        grand = context.parent(parent)
        subscript = context.parent(grand) if grand is not None else None
        return isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1
    if isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.Equal, cst.NotEqual)):
        return True
    if isinstance(parent, cst.Comparison) and len(parent.comparisons) == 1 \
            and isinstance(parent.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
        return True
    return isinstance(parent, cst.FormattedStringExpression)


def _rebinding(loop: cst.For, name: str) -> Optional[cst.SimpleStatementLine]:
    """The loop's first statement when it is `v = v[0]` (the index read out of the row)."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
    first = body[0] if body else None
    if not isinstance(first, cst.SimpleStatementLine) or len(first.body) != 1:
        return None
    assign = first.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value
    if isinstance(target, cst.Name) and target.value == name and isinstance(value, cst.Subscript) \
            and isinstance(value.value, cst.Name) and value.value.value == name and len(value.slice) == 1 \
            and isinstance(value.slice[0].slice, cst.Index) and int_literal(value.slice[0].slice.value) == 0:
        return first
    return None


# ----- the fix -----------------------------------------------------------------------------------


def index_loop_fix(context: FileContext, call: cst.Call, loop: cst.For, binding: Optional[cst.CSTNode]) -> BranchFix:
    """The loop over every candidate, or why there is none."""
    function = context.function
    mask = nonzero_operand(context, call)
    if mask is None or function is None:
        return no_fix("the indices come from `nonzero()` with arguments (`as_tuple=`)")
    if not isinstance(loop.target, cst.Name) or loop.asynchronous is not None or loop.orelse is not None:
        return no_fix("the loop unpacks its rows, is async or has an `else`")
    hit = hit_test(context, mask)
    if hit is None:
        return no_fix("the number of candidates is not known statically: the tensor `nonzero()` reads is not "
                      "`m.sum(dims) > 0` over every dim but the first of a mask of known rank")
    count = hit.count
    name = loop.target.value
    rebinding = _rebinding(loop, name)
    body = _Body()
    visit(loop.body, _BodyCheck(context, body, hit.mask, name))
    if body.problem:
        return no_fix(body.problem)
    if not body.selections:
        return no_fix(f"the loop body selects nothing with `torch.where({hit.mask}[{name}])`")
    if rebinding is not None:
        body.assigned.discard(name)
    if name in body.assigned:
        return no_fix(f"the loop body rebinds `{name}`")
    problem = _variable_uses_are_indexes(context, loop, name, rebinding is None, rebinding)
    if problem:
        return no_fix(problem)
    problem = _read_elsewhere(context, function, loop, body.assigned | {name}, binding, count, hit.mask)
    if problem:
        return no_fix(problem)
    new_body = loop.body.visit(_LoopIndex(name, row=rebinding is None))
    if not isinstance(new_body, cst.IndentedBlock):
        return no_fix("the loop body is on the line of its `for`")
    statements = list(new_body.body)[1 if rebinding is not None else 0:]
    count, statements, note = _without_padding_class(context, count, statements, name, hit.mask)
    if not statements:
        return no_fix("the loop body only reads the index")
    if len(statements) < len(new_body.body):
        statements[0] = _without_leading_blank_lines(statements[0])
    new_body = new_body.with_changes(body=statements)
    new_loop = loop.with_changes(iter=cst.parse_expression(f"range({count})"), body=new_body)
    replacements: list[tuple[cst.CSTNode, object]] = [(loop, new_loop)]
    if binding is not None:
        block = context.parent(binding)
        if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
            return no_fix("the `nonzero()` is the only statement of its block")
        replacements.append((binding, cst.RemovalSentinel.REMOVE))
    imports: Sequence[str] = ()
    if not file_sets(context, CAPTURE_SHAPES):
        setting, imports = setting_after_imports(context, CAPTURE_SHAPES, SETTING_NOTE)
        if setting is None:
            return no_fix("the file has no statement to put the capture setting after")
        replacements.append(setting)
    message = LOOP_FIX_MESSAGE.format(target=name, count=count) + note
    if not hit.nonnegative:
        message += f"; assumes `{hit.mask}` holds no negative values (a mask or counts)"
    return BranchFix(FixPlan(replacements, message, "unsafe", imports))


def _without_padding_class(context: FileContext, count: str, statements: list[cst.BaseStatement], name: str,
                           mask: str) -> tuple[str, list[cst.BaseStatement], str]:
    """The count, body and message note without the last class of `F.one_hot(t, num_classes=n + 1)`.

    transformers' experts loops add a class for padding ("masking is also a class") that no
    expert owns: the body either skips it first (`if expert_idx == n: continue`, dead once the
    loop stops at `n`: dropped) or indexes the experts' weights with it, which fails (so the
    original never picks it: it is left out, and the note says so). A body that only reads the
    mask keeps the padding class.
    """
    if not count.endswith("+ 1"):
        return count, statements, ""
    classes = count[: count.rindex("+")].rstrip()
    if statements and _skips(context, statements[0], name, classes):
        return classes, statements[1:], ""
    if _indexes_other_than(statements, name, mask):
        return classes, statements, (f"; leaves out the last class, `{classes}`, a padding class the original "
                                     f"could not index the experts with either")
    return count, statements, ""


def _skips(context: FileContext, statement: cst.BaseStatement, name: str, value: str) -> bool:
    """`if name == value: continue`."""
    if not isinstance(statement, cst.If) or statement.orelse is not None:
        return False
    test = statement.test
    if not (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == name
            and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal)
            and context.module.code_for_node(test.comparisons[0].comparator) == value):
        return False
    body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
    return (len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1
            and isinstance(body[0].body[0], cst.Continue))


class _IndexedBy(cst.CSTVisitor):
    """Finds `x[name]` with `x` other than the mask."""

    def __init__(self, name: str, mask: str) -> None:
        self.name = name
        self.mask = mask
        self.found = False

    def visit_Subscript(self, node: cst.Subscript) -> None:
        index = node.slice[0].slice if len(node.slice) == 1 else None
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Name) and index.value.value == self.name \
                and not (isinstance(node.value, cst.Name) and node.value.value == self.mask):
            self.found = True


def _indexes_other_than(statements: Sequence[cst.BaseStatement], name: str, mask: str) -> bool:
    finder = _IndexedBy(name, mask)
    for statement in statements:
        visit(statement, finder)
    return finder.found


def _without_leading_blank_lines(statement: cst.BaseStatement) -> cst.BaseStatement:
    """`statement` without the blank lines above its first comment (it now opens its block)."""
    lines = list(getattr(statement, "leading_lines", ()))
    while lines and lines[0].comment is None:
        lines.pop(0)
    return statement.with_changes(leading_lines=lines)


def _read_elsewhere(context: FileContext, function: cst.FunctionDef, loop: cst.For, names: set[str],
                    binding: Optional[cst.CSTNode], count: str, mask: str) -> Optional[str]:
    """Why the rewrite would change what code outside the loop sees, or None.

    A name the body binds must not be read outside the loop (the extra iterations rebind
    it), and the locals the count and the selections read must not be rebound between the
    `nonzero()` and the loop.
    """
    for name in sorted(names):
        occurrences = NameOccurrences(name)
        visit(function.body, occurrences)
        if any(not inside(context, node, loop) for node in occurrences.found):
            return f"`{name}`, which the loop body binds, is read outside the loop"
    locals_read = {mask, count.split(".")[0].split("[")[0]} - {"self"}
    for local in sorted(name for name in locals_read if name.isidentifier()):
        if binding is not None and len(context.local_values(local)) > 1 \
                and not _bound_before(context, function, local, binding):
            return f"`{local}` may be rebound between the `nonzero()` and the loop"
    return None


def _bound_before(context: FileContext, function: cst.FunctionDef, name: str, statement: cst.CSTNode) -> bool:
    """True when every binding of `name` in `function` comes before `statement` in source order."""
    order = _StatementOrder(name, statement)
    visit(function.body, order)
    return not order.bound_after


class _StatementOrder(cst.CSTVisitor):
    def __init__(self, name: str, marker: cst.CSTNode) -> None:
        self.name = name
        self.marker = marker
        self.seen_marker = False
        self.bound_after = False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if node is self.marker:
            self.seen_marker = True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if self.seen_marker and isinstance(node.target, cst.Name) and node.target.value == self.name:
            self.bound_after = True
