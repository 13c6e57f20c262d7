"""Where evaluating both branches of a tensor `if` would change what the code computes.

`torch.where(cond, a, b)` computes `a` and `b` whatever `cond` says, and broadcasts them to
one shape. That keeps the meaning only when (1) `a` and `b` have one shape and dtype, (2)
computing the untaken one cannot raise, and cannot put NaN/inf into gradients, and (3)
computing it changes no state. This module finds the code that shows otherwise: arms whose
shapes differ (a reduction without `keepdim`, an `unsqueeze`/`expand`/indexing on one side
only), linalg and indexing guarded by the condition, `torch.autograd.grad` in forward, and
calls that mutate (in-place ops, `self.x = ...`, a cache passed to a layer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.imports import dotted_name
from compile_lint.analysis.syntax.names import names_read
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.guards import is_side_effect_free

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


# The lists below stay hand-written on purpose: they say how a Python spelling shapes,
# broadcasts or fails on some inputs (so both arms of a rewrite are safe to compute), which
# no torch tag records (`pointwise` is per ATen overload and says nothing of domains).
# ----- shapes -----------------------------------------------------------------------------

# Tensor methods whose result has the receiver's shape (the receiver broadcast with any
# tensor argument for the binary ones).
_ELEMENTWISE_METHODS = frozenset({
    "abs", "neg", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square",
    "sin", "cos", "tan", "tanh", "sigmoid", "relu", "erf", "sign", "round", "floor", "ceil", "trunc",
    "reciprocal", "clamp", "clamp_min", "clamp_max", "clip", "nan_to_num", "masked_fill", "float",
    "half", "double", "bfloat16", "bool", "long", "int", "to", "type_as", "contiguous", "clone",
    "detach", "logical_not", "isnan", "isinf", "isfinite", "softmax", "log_softmax", "cumsum",
    "cumprod", "flip", "roll", "fill_", "zero_", "zeros_like", "ones_like", "sigmoid_", "pow",
    "add", "sub", "mul", "div", "maximum", "minimum", "fmod", "remainder", "where", "lerp",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "type",
})
_BINARY_METHODS = frozenset({"add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder",
                             "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})
_REDUCTIONS = frozenset({
    "sum", "mean", "amax", "amin", "max", "min", "prod", "std", "var", "norm", "any", "all",
    "logsumexp", "argmax", "argmin", "count_nonzero", "nansum", "nanmean", "median",
})
# Methods (and torch functions) that change a shape in a way only their arguments tell.
_SHAPE_OPS = frozenset({
    "unsqueeze", "squeeze", "view", "reshape", "flatten", "unflatten", "transpose", "permute",
    "expand", "expand_as", "repeat", "repeat_interleave", "t", "narrow", "select", "unfold",
    "movedim", "view_as", "reshape_as", "index_select", "gather", "take", "masked_select",
    "nonzero", "matmul", "mm", "bmm", "cat", "stack", "concat", "split", "chunk", "diagonal",
    "tril", "triu", "pad", "interpolate", "new_zeros", "new_ones", "new_full", "new_empty",
})
_TORCH_ELEMENTWISE = frozenset({
    "torch.clamp", "torch.clip", "torch.abs", "torch.exp", "torch.log", "torch.sqrt", "torch.tanh",
    "torch.sigmoid", "torch.relu", "torch.nan_to_num", "torch.masked_fill", "torch.sign",
    "torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_like", "torch.rand_like",
    "torch.randn_like", "torch.logical_not", "torch.isnan", "torch.isinf", "torch.isfinite",
    "torch.nn.functional.relu", "torch.nn.functional.gelu", "torch.nn.functional.silu",
    "torch.nn.functional.dropout", "torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
    "torch.nn.functional.normalize", "torch.nn.functional.layer_norm", "torch.round", "torch.floor",
})
_TORCH_BINARY = frozenset({"torch.where", "torch.maximum", "torch.minimum", "torch.add", "torch.mul",
                           "torch.sub", "torch.div", "torch.pow", "torch.logical_and", "torch.logical_or"})
_TORCH_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.full", "torch.empty", "torch.rand",
                              "torch.randn", "torch.randint"})
_DTYPE_METHODS = frozenset({"float", "half", "double", "bfloat16", "bool", "long", "int", "to", "type",
                            "type_as", "byte", "char", "short"})
_BOOL_METHODS = frozenset({"isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_or",
                           "eq", "ne", "lt", "le", "gt", "ge", "any", "all", "bool"})

ShapeTerm = tuple


def enclosing_loop(context: FileContext, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The innermost `for`/`while` of the function around `node`, or None."""
    current = context.parent(node)
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.Lambda)):
        if isinstance(current, (cst.For, cst.While)):
            return current
        current = context.parent(current)
    return None


def short_code(node: cst.CSTNode) -> str:
    """`node`'s code on one line, cut to 60 characters (for messages)."""
    text = " ".join(cst.Module(body=[]).code_for_node(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _source(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


def _tensor_args(call: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def _arg(call: cst.Call, position: int, keyword: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = _tensor_args(call)
    return positional[position] if position < len(positional) else None


def _broadcast(*terms: Optional[ShapeTerm]) -> Optional[ShapeTerm]:
    known = [term for term in terms if term != ("scalar",)]
    if any(term is None for term in known):
        return None
    distinct = sorted(set(known), key=repr)
    if not distinct:
        return ("scalar",)
    if len(distinct) == 1:
        return distinct[0]
    return ("broadcast", tuple(distinct))


class ShapeModel:
    """Symbolic shapes of expressions, relative to the names they read.

    `x.masked_fill(m, 0)` has the shape of `x`; `x.sum(dim=1)` is `reduce(x, 1)`; a module
    call or an unknown function is unknown. Two arms are the same shape when their terms
    are equal; they differ when the terms differ and one of them changes a shape (a
    reduction, `unsqueeze`, indexing, ...). `bindings` substitutes names assigned earlier
    in the same branch.
    """

    def __init__(self, context: FileContext, bindings: Optional[dict[str, cst.BaseExpression]] = None) -> None:
        self.context = context
        self.bindings = dict(bindings or {})
        self._depth = 0

    def term(self, expr: cst.BaseExpression) -> Optional[ShapeTerm]:
        """The shape term of `expr`, or None when unknown."""
        self._depth += 1
        try:
            if self._depth > 40:
                return None
            return self._term(expr)
        finally:
            self._depth -= 1

    def _term(self, expr: cst.BaseExpression) -> Optional[ShapeTerm]:
        if (isinstance(expr, (cst.Integer, cst.Float))
                or (isinstance(expr, cst.Name) and expr.value in ("True", "False"))):
            return ("scalar",)
        if isinstance(expr, cst.Name):
            if expr.value in self.bindings:
                return self.term(self.bindings[expr.value])
            kind = self.context.kind(expr)
            if kind in (Kind.PY, Kind.SHAPE):
                return ("scalar",)
            return ("name", expr.value)
        if isinstance(expr, cst.UnaryOperation):
            return self.term(expr.expression)
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, cst.MatrixMultiply):
                return ("op", "matmul", self.term(expr.left), self.term(expr.right))
            return _broadcast(self.term(expr.left), self.term(expr.right))
        if isinstance(expr, cst.Comparison):
            return _broadcast(self.term(expr.left), *(self.term(c.comparator) for c in expr.comparisons))
        if isinstance(expr, cst.Subscript):
            return ("index", self.term(expr.value), _source(expr.slice[0]) if len(expr.slice) == 1 else
                    tuple(_source(element) for element in expr.slice))
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in ("values", "indices", "data", "real", "imag"):
                return self.term(expr.value)
            if expr.attr.value in ("T", "mT", "H", "mH"):
                return ("op", expr.attr.value, self.term(expr.value))
            kind = self.context.kind(expr)
            if kind in (Kind.PY, Kind.SHAPE):
                return ("scalar",)
            return ("attribute", _source(expr)) if kind is Kind.TENSOR else None
        if isinstance(expr, cst.Call):
            return self._call_term(expr)
        return None

    def _call_term(self, call: cst.Call) -> Optional[ShapeTerm]:
        qualified = self.context.qualname(call.func) or ""
        args = _tensor_args(call)
        if qualified in _TORCH_ELEMENTWISE and args:
            return self.term(args[0])
        if qualified in _TORCH_BINARY and args:
            return _broadcast(*(self.term(arg) for arg in args))
        if qualified in _TORCH_FACTORIES:
            return _factory_term(call, sizes_only_first=qualified == "torch.full")
        if qualified.startswith("torch."):
            name = qualified.rsplit(".", 1)[-1]
            if name in _REDUCTIONS and args:
                return self._reduction(call, self.term(args[0]), 1)
            if name in _SHAPE_OPS:
                return ("op", name, tuple(self.term(arg) for arg in args if self.context.kind(arg).tensorish),
                        tuple(_source(arg) for arg in call.args))
            return None
        if isinstance(call.func, cst.Attribute):
            method = call.func.attr.value
            receiver = call.func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                return None  # a submodule or a helper: unknown
            if method in _NEW_METHODS:
                return _factory_term(call, sizes_only_first=True)
            base = self.term(receiver)
            if method in _REDUCTIONS:
                return self._reduction(call, base, 0)
            if method in _SHAPE_OPS:
                return ("op", method, base, tuple(_source(arg) for arg in call.args))
            if method in _BINARY_METHODS and args:
                return _broadcast(base, self.term(args[0]))
            if method in _ELEMENTWISE_METHODS:
                return base
        return None

    def _reduction(self, call: cst.Call, base: Optional[ShapeTerm], first: int) -> Optional[ShapeTerm]:
        dim = _arg(call, first, "dim")
        keep = _arg(call, first + 1, "keepdim")
        if dim is None:
            return ("0d",)
        keepdim = isinstance(keep, cst.Name) and keep.value == "True"
        return ("reduce", base, _source(dim), keepdim)

    def relation(self, left: cst.BaseExpression, right: cst.BaseExpression) -> str:
        """"same", "differs" or "unknown" for the shapes of `left` and `right`."""
        a, b = self.term(left), self.term(right)
        if a == ("scalar",) or b == ("scalar",):
            return "same"  # a Python number broadcasts to the other arm and is that value
        if a is not None and a == b:
            return "same"
        if _changes_shape(a) or _changes_shape(b):
            return "differs"
        return "unknown"


_NEW_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full"})


def _factory_term(call: cst.Call, sizes_only_first: bool) -> ShapeTerm:
    """("new", sizes): `torch.zeros(2, 3)`, `x.new_ones(())` and `torch.full((2, 3), v)` by their sizes."""
    positional = [arg for arg in call.args if arg.keyword is None]
    sizes = positional[:1] if sizes_only_first else positional
    sizes += [arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "size"]
    return ("new", tuple(_source(arg.value) for arg in sizes))


def _changes_shape(term: object) -> bool:
    if not isinstance(term, tuple) or not term:
        return False
    if term[0] in ("reduce", "op", "index", "new", "0d"):
        return True
    return any(_changes_shape(part) for part in term[1:])


def dtype_changes(expr: cst.BaseExpression) -> set[str]:
    """The dtype conversions `expr` applies at its top (`.float()`, `.to(...)`, `dtype=`)."""
    found = set()
    node = expr
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method = node.func.attr.value
        if method in _DTYPE_METHODS:
            found.add(method + "(" + ",".join(_source(arg) for arg in node.args) + ")")
        node = node.func.value
    if isinstance(expr, cst.Call):
        for arg in expr.args:
            if arg.keyword is not None and arg.keyword.value == "dtype":
                found.add("dtype=" + _source(arg.value))
    return found


def is_bool_expression(expr: cst.BaseExpression) -> bool:
    """True when `expr` is syntactically a bool tensor: a comparison, `~x`, `.any()`, `isnan(...)`."""
    if isinstance(expr, cst.Comparison):
        return all(not isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return is_bool_expression(expr.expression)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return is_bool_expression(expr.left) and is_bool_expression(expr.right)
    if isinstance(expr, cst.Call):
        name = dotted_name(expr.func) or ""
        last = name.rsplit(".", 1)[-1] if name else (
            expr.func.attr.value if isinstance(expr.func, cst.Attribute) else "")
        return last in _BOOL_METHODS
    return False


# ----- what the untaken arm would do -----------------------------------------------------------

_LINALG_NAMES = frozenset({
    "cholesky", "cholesky_ex", "inverse", "inv", "solve", "lu", "lu_factor", "qr", "svd", "eig", "eigh",
    "eigvals", "eigvalsh", "det", "logdet", "slogdet", "pinverse", "pinv", "cholesky_solve",
    "triangular_solve", "solve_triangular", "lstsq", "matrix_power", "matrix_exp", "multinomial",
})
# Operations whose result is NaN/inf (or an error) outside a domain a condition may guard.
_PARTIAL_METHODS = frozenset({"log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "acos",
                              "asin", "atanh", "arccos", "arcsin", "arctanh", "div", "true_divide",
                              "floor_divide", "fmod", "remainder", "lgamma", "digamma"})
_INDEXING_METHODS = frozenset({"gather", "index_select", "take", "take_along_dim", "embedding", "scatter",
                               "scatter_add", "index_add", "index_copy", "index_fill"})
# Arguments a layer updates in place: passing one to a call the fix would now always make
# changes the state even when the branch is not taken.
STATEFUL_ARGUMENT_WORDS = ("cache", "past_key_value", "layer_past", "inference_session", "memory_state")


_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout"})
_METADATA_METHODS = frozenset({"size", "dim", "ndimension", "numel", "get_device"})


def data_reads(expr: cst.CSTNode) -> set[str]:
    """Names `expr` reads for their values, not only for their shape, dtype or device."""
    metadata: set[int] = set()
    for node in iter_nodes(expr):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            if node.attr.value in _METADATA_ATTRIBUTES:
                metadata.add(id(node.value))
        elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
              and isinstance(node.func.value, cst.Name)):
            if node.func.attr.value in _METADATA_METHODS:
                metadata.add(id(node.func.value))
    return names_read(expr, metadata)


def untaken_arm_hazard(context: FileContext, arms: Sequence[cst.CSTNode],
                       condition: cst.BaseExpression) -> Optional[str]:
    """Why computing `arms` when the condition says not to could fail or poison gradients, or None.

    Linalg decompositions and `torch.autograd.grad` are hazards anywhere in an arm; indexing
    with a tensor and partial maths (division, log, sqrt, ...) are hazards when they read
    a name the condition reads: then the condition is what keeps their inputs in range.
    """
    guarded = {name for name in names_read(condition) if context.kind(cst.Name(name)).tensorish}
    for arm in arms:
        for node in iter_nodes(arm):
            if isinstance(node, cst.Call):
                qualified = context.qualname(node.func) or ""
                method = node.func.attr.value if isinstance(node.func, cst.Attribute) else qualified.rsplit(".", 1)[-1]
                if qualified.startswith(("torch.autograd.", "torch.func.")) or method in ("backward", "grad"):
                    return ("an arm computes gradients (`torch.autograd.grad`): NaN/inf of the untaken arm "
                            "would reach them")
                if qualified.startswith("torch.linalg.") or method in _LINALG_NAMES:
                    return f"an arm calls `{method}`, which may raise on the inputs the condition rules out"
                if method in _PARTIAL_METHODS and names_read(node) & guarded:
                    return (f"an arm calls `{method}` on values the condition guards: the untaken arm "
                            "may be NaN/inf, and torch.where passes NaN into gradients")
                if method in _INDEXING_METHODS and names_read(node) & guarded:
                    return f"an arm indexes with `{method}` by values the condition guards: out of range when not taken"
            elif isinstance(node, cst.BinaryOperation) and isinstance(
                    node.operator, (cst.Divide, cst.FloorDivide, cst.Modulo)):
                if names_read(node.right) & guarded and context.kind(node.right).tensorish \
                        and not _bounded_away_from_zero(node.right):
                    return ("an arm divides by a value the condition guards: the untaken arm may be "
                            "NaN/inf, and torch.where passes NaN into gradients")
            elif isinstance(node, cst.Subscript):
                for element in node.slice:
                    index = element.slice
                    if isinstance(index, cst.Index) and context.kind(index.value) is Kind.TENSOR \
                            and names_read(index.value) & guarded:
                        return (f"an arm indexes with `{_source(index.value)}`, which the condition guards: "
                                "out of range when not taken")
    return None


def _positive_literal(expr: Optional[cst.BaseExpression]) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.evaluated_value) > 0
    return False


def _bounded_away_from_zero(divisor: cst.BaseExpression) -> bool:
    """True for `t.clamp(min=1)`, `t.clamp_min(1e-6)`, `torch.clamp(t, min=1)`: never zero."""
    if not isinstance(divisor, cst.Call):
        return False
    name = divisor.func.attr.value if isinstance(divisor.func, cst.Attribute) else ""
    if name == "clamp_min":
        return _positive_literal(_arg(divisor, 0, "min"))
    if name in ("clamp", "clip"):
        receiver_call = isinstance(divisor.func, cst.Attribute) and not (
            isinstance(divisor.func.value, cst.Name) and divisor.func.value.value == "torch")
        return _positive_literal(_arg(divisor, 0 if receiver_call else 1, "min"))
    return False


def stateful_argument(context: FileContext, arms: Sequence[cst.CSTNode]) -> Optional[str]:
    """A call argument that looks like a cache the callee updates (`past_key_values=...`), or None."""
    for arm in arms:
        for node in iter_nodes(arm):
            if not isinstance(node, cst.Arg):
                continue
            spelled = [node.keyword.value] if node.keyword is not None else []
            spelled += sorted(names_read(node.value)) if isinstance(node.value, (cst.Name, cst.Attribute)) else []
            for name in spelled:
                if any(word in name for word in STATEFUL_ARGUMENT_WORDS):
                    return (f"a call gets `{name}`, a cache it may update: computing it when the branch is not "
                            "taken changes that state")
    return None


def impure(context: FileContext, expr: cst.BaseExpression) -> bool:
    """True when evaluating `expr` once more than the original code does could change state."""
    return not is_side_effect_free(context, expr)
