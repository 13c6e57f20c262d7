"""When `torch.cond` may take arms whose outputs differ in shape (`x.sum(0, keepdim=True)` vs `x * 2`).

`torch.where` broadcasts two arms of different shapes, so those branches get no `where`
rewrite. `torch.cond` runs only the taken arm and, on torch 2.13, accepts outputs of
different sizes: the result gets a size known only at run time (an unbacked symbol).
Measured on torch 2.13 CPU (benchmarks/cond_arms_calibration.py, results in
benchmarks/results/cond_arms_calibration.txt), that is exact only when:

- the arms have one rank and one dtype (else: "expected same dim but got 1 and 2",
  "expected same dtype but got torch.float32 and torch.int64", at compile time), and
  differ only in their first dimension: Inductor fails to compile outputs whose other
  dimensions differ ("NameError: name 'u0' is not defined"; the eager backend runs them);
- no gradient flows through it: its backward fails ("shape '[1, 3]' is invalid for input
  of size 12", eagerly and compiled), and Inductor fails to compile it when any input
  or parameter requires grad, so an `eval()` model outside `torch.no_grad()` fails too;
  under `torch.no_grad()` / `torch.inference_mode()` it compiles and runs;
- the result is not broadcast against another tensor afterwards: `y + x` with `y` of one
  row and `x` of four fails at run time under both backends ("Runtime assertion failed
  for expression u0 >= 4"); elementwise maths with numbers, reductions and softmax on
  the result alone, and returning it from the compiled function, run and match.

`differing_shapes_problem` says which of these the code does not show, or None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.branches.hazards import (
    ShapeModel,
    dtype_changes,
    enclosing_loop,
    is_bool_expression,
    short_code,
)

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

NOTE = "the result's size is known only at run time"
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.grad_mode.no_grad",
                      "torch.autograd.grad_mode.inference_mode", "torch.autograd.no_grad"})
# Methods that act on the result alone, elementwise or by reducing it (measured: they run on
# a tensor whose size is known only at run time; shape ops such as `view(4, 3)` assert it).
_LOCAL_METHODS = frozenset({
    "abs", "neg", "exp", "log", "sqrt", "rsqrt", "square", "sin", "cos", "tanh", "sigmoid", "relu",
    "clamp", "clamp_min", "clamp_max", "float", "half", "double", "bfloat16", "softmax", "log_softmax",
    "contiguous", "clone", "detach", "sum", "mean", "amax", "amin", "max", "min", "prod", "norm",
    "logsumexp", "argmax", "argmin", "any", "all", "cumsum", "nan_to_num", "pow",
})
_NUMBER_KINDS = (Kind.PY, Kind.SHAPE)


@dataclass(frozen=True)
class ResultSite:
    """Where a selection's result goes: `node` is the `if` statement assigning `name`, the
    `if` whose arms return, or the ternary itself (then its parents say where it goes)."""

    node: cst.CSTNode
    name: Optional[str] = None
    returned: bool = False


def differing_shapes_problem(context: FileContext, shapes: ShapeModel, if_true: cst.BaseExpression,
                             if_false: cst.BaseExpression, site: ResultSite) -> Optional[str]:
    """Why `torch.cond` cannot select between these arms of different shapes here, or None."""
    left, right = leading_change(shapes.term(if_true)), leading_change(shapes.term(if_false))
    if left is None or right is None or left[0] != right[0]:
        return ("the arms may differ in rank (torch.cond rejects that) or beyond their first dimension "
                "(Inductor fails on that)")
    if dtype_changes(if_true) != dtype_changes(if_false) or _dtype_class(if_true) != _dtype_class(if_false):
        return "the arms may differ in dtype, which torch.cond rejects"
    if not grad_free(context, site.node):
        return ("torch 2.13 cannot differentiate a torch.cond whose arms differ in shape (it can under "
                "torch.no_grad() or torch.inference_mode())")
    return result_use_problem(context, site)


def _dtype_class(expr: cst.BaseExpression) -> str:
    """"bool", "int" or "other": what an arm's spelling says of its dtype (a slice keeps it)."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if is_bool_expression(expr):
        return "bool"
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _INT_METHODS:
        return "int"
    return "other"


_INT_METHODS = frozenset({"argmax", "argmin", "long", "int", "count_nonzero", "argsort"})


# ----- which dimension differs ---------------------------------------------------------------


def leading_change(term: Optional[tuple]) -> Optional[tuple[tuple, bool]]:
    """(the term's base, whether it changes the leading dimension) when a `ShapeModel` term
    changes nothing but the size of dimension 0 of what it reads, else None.

    Measured: Inductor fails ("NameError: name 'u0' is not defined") when a cond output's
    size differs in any other dimension, or in two; a different rank is rejected outright.
    """
    if term is None:
        return None
    head = term[0]
    if head in ("name", "attribute"):
        return term, False
    if head == "reduce":
        _, base, dim, keepdim = term
        inner = leading_change(base)
        return (inner[0], True) if inner is not None and keepdim and dim == "0" else None
    if head == "index":
        inner = leading_change(term[1])
        parts = term[2] if isinstance(term[2], tuple) else (term[2],)
        if inner is None or not all(isinstance(part, str) for part in parts):
            return None
        first, rest = parts[0], parts[1:]
        if ":" not in first or any(part != ":" for part in rest):
            return None
        return inner[0], inner[1] or first != ":"
    return None


# ----- autograd ------------------------------------------------------------------------------------


def grad_free(context: FileContext, node: cst.CSTNode) -> bool:
    """True when `node` runs under `torch.no_grad()` / `torch.inference_mode()` in its function
    (a `with` around it, or the function's decorator)."""
    current = context.parent(node)
    while current is not None:
        if isinstance(current, cst.With) and any(_is_no_grad(context, item.item) for item in current.items):
            return True
        if isinstance(current, cst.FunctionDef):
            return any(_is_no_grad(context, decorator.decorator) for decorator in current.decorators)
        if isinstance(current, cst.Lambda):
            return False
        current = context.parent(current)
    return False


def _is_no_grad(context: FileContext, expr: cst.BaseExpression) -> bool:
    func = expr.func if isinstance(expr, cst.Call) else expr
    return (context.qualname(func) or "") in _NO_GRAD


# ----- where the result goes ---------------------------------------------------------------------


def result_use_problem(context: FileContext, site: ResultSite) -> Optional[str]:
    """Why the result's run-time size could meet another tensor's after the selection, or None."""
    if site.returned:
        return _returned_problem(context)
    if site.name is not None:
        return _name_use_problem(context, site.name, site.node, depth=0)
    return _expression_use_problem(context, site.node, depth=0)


def _returned_problem(context: FileContext) -> Optional[str]:
    """None when the function returns the result out of the compiled graph (an entry point)."""
    function = context.function
    owner = context.owner_class
    # A module's forward that another module's traced code calls is reached, not a root: say so first.
    if (function is not None and function.name.value == "forward" and owner is not None
            and _built_in_a_class(context, owner.name.value)):
        return f"`{owner.name.value}` is a submodule of another module, which may broadcast what it returns ({NOTE})"
    if function is None or function not in context.regions.roots or function in context.regions.external:
        return f"the result goes back to a caller that may broadcast it ({NOTE})"
    if owner is not None and _built_in_a_class(context, owner.name.value):
        return f"`{owner.name.value}` is a submodule of another module, which may broadcast what it returns ({NOTE})"
    return None


def _built_in_a_class(context: FileContext, class_name: str) -> bool:
    for call in context.calls_named(class_name):
        current = context.parent(call)
        while current is not None and not isinstance(current, cst.ClassDef):
            current = context.parent(current)
        if current is not None:
            return True
    return False


def _name_use_problem(context: FileContext, name: str, statement: cst.CSTNode, depth: int) -> Optional[str]:
    """Every read of `name` after `statement` must use the result alone."""
    function = context.function
    if function is None or depth > 2:
        return f"`{name}` flows further than the fix follows ({NOTE})"
    if enclosing_loop(context, statement) is not None:
        return f"the branch is in a loop, where `{name}` meets the next iteration ({NOTE})"
    nodes = list(iter_nodes(function))
    position = {id(node): index for index, node in enumerate(nodes)}
    end = max(position.get(id(inner), 0) for inner in iter_nodes(statement))
    for read in _reads_of(function, name):
        if position.get(id(read), -1) > end:
            problem = _expression_use_problem(context, read, depth)
            if problem is not None:
                return problem
    return None


def _reads_of(function: cst.FunctionDef, name: str) -> list[cst.Name]:
    stored: set[int] = set()
    skipped: set[int] = set()
    for node in iter_nodes(function):
        if isinstance(node, cst.Attribute):
            skipped.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            skipped.add(id(node.keyword))
        elif isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
            stored.update(id(inner) for inner in iter_nodes(node.target) if isinstance(inner, cst.Name))
    return [node for node in iter_nodes(function) if isinstance(node, cst.Name) and node.value == name
            and id(node) not in stored and id(node) not in skipped]


def _expression_use_problem(context: FileContext, node: cst.CSTNode, depth: int) -> Optional[str]:
    """Follow `node` (the result, or a read of it) up through uses of it alone to where it ends."""
    current = node
    while True:
        parent = context.parent(current)
        if isinstance(parent, cst.Return):
            return _returned_problem(context)
        if isinstance(parent, cst.Element) and isinstance(elements := context.parent(parent), cst.Tuple) \
                and isinstance(context.parent(elements), cst.Return):
            return _returned_problem(context)
        if isinstance(parent, cst.UnaryOperation):
            current = parent
            continue
        if isinstance(parent, cst.BinaryOperation) and not isinstance(parent.operator, cst.MatrixMultiply):
            other = parent.right if current is parent.left else parent.left
            if _is_number(context, other) or _same_expression(other, current):
                current = parent
                continue
        if isinstance(parent, cst.Attribute) and parent.value is current:
            call = context.parent(parent)
            method = parent.attr.value
            if isinstance(call, cst.Call) and call.func is parent and method in _LOCAL_METHODS \
                    and all(_is_number(context, arg.value) or arg.keyword is not None and arg.keyword.value == "dim"
                            for arg in call.args if not (arg.keyword is not None and arg.keyword.value == "keepdim")):
                if not call.args and method in ("sum", "mean", "amax", "amin", "prod", "norm", "any", "all",
                                                "logsumexp"):
                    return None  # reduced to 0-d: nothing of the run-time size is left
                current = call
                continue
        if isinstance(parent, cst.Assign) and parent.value is current and len(parent.targets) == 1 \
                and isinstance(parent.targets[0].target, cst.Name):
            statement = context.parent(parent)
            assert statement is not None  # an assignment sits in a statement line
            return _name_use_problem(context, parent.targets[0].target.value, statement, depth + 1)
        if isinstance(parent, cst.Expr):
            return None  # computed and dropped
        where = short_code(parent) if parent is not None else "the code after it"
        return f"`{where}` may broadcast the result ({NOTE}: torch.compile fails there)"


def _is_number(context: FileContext, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _is_number(context, expr.expression)
    return context.kind(expr) in _NUMBER_KINDS


def _same_expression(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value == b.value


def any_differ(shapes: ShapeModel, pairs: Sequence[tuple[cst.BaseExpression, cst.BaseExpression]]) -> bool:
    """True when the shape model says some pair of arms differs in shape."""
    return any(shapes.relation(a, b) == "differs" for a, b in pairs)
