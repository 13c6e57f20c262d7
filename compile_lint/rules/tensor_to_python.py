"""Tensor-to-Python: reading tensor data into Python values breaks the graph.

Measured with torch 2.13 (CPU): `.item()`, `int(t)`, `float(t)`, `bool(t)`, integer
`.tolist()`, a tensor passed as a size, and data-dependent output shapes pass
`fullgraph=True` (Dynamo captures an unbacked symbol) but graph-break under the default
`torch.compile`; `capture_scalar_outputs=True` / `capture_dynamic_output_shape_ops=True`
remove those breaks. Float `.tolist()`, `str(t)`, `repr(t)`, `%`-formatting, `and`/`or`/
`not` on tensor data, and a 0-d tensor used as an index fail under every setting.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from compile_lint.linter.facts import Kind, annotation_kind
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid
from compile_lint.rules.control_flow import data_dependent

# Receivers that are certainly not a tensor or an array: `.item()` on them is not ours.
_NOT_ARRAYS = frozenset({Kind.PY, Kind.SHAPE, Kind.LIST, Kind.DICT, Kind.MODULE, Kind.SELF})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)


def _assigned_values(rule: Rule, name: str) -> list[object]:
    """What the visited function assigns to local `name` (flow-insensitive)."""
    function = rule.context.function
    return rule.context.facts._assigned(function).get(name, []) if function is not None else []


def _bound_only_to(
    rule: Rule, expr: cst.BaseExpression, test: Callable[[Rule, cst.BaseExpression, int], bool], depth: int
) -> bool:
    """True when `expr` is a local name and every value assigned to it passes `test`."""
    if not isinstance(expr, cst.Name) or depth > 6:
        return False
    values = _assigned_values(rule, expr.value)
    return bool(values) and all(isinstance(v, cst.BaseExpression) and test(rule, v, depth + 1) for v in values)


SCALAR_CONFIG_NOTE = (
    "With torch._dynamo.config.capture_scalar_outputs = True the value is captured as an "
    "unbacked symbol and the default compile no longer breaks (fullgraph=True passes "
    "either way); Python control flow on the value still fails."
)


def holds_tensor_data(rule: Rule, expr: cst.BaseExpression) -> bool:
    """True when `expr` is certainly a tensor (or numpy array, which Dynamo traces as one).

    Bare parameters count only when annotated or reassigned as tensors (see
    `data_dependent`): an untyped `steps` argument is as often an int as a tensor.
    """
    if rule.context.kind(expr) is Kind.NDARRAY:
        return _derived_from_tensor(rule, expr, depth=0)
    if data_dependent(rule, expr) is not expr or isinstance(expr, (cst.BooleanOperation, cst.UnaryOperation)):
        return False
    return not _unpacked_from_untyped_param(rule, expr, depth=0)


def _untyped_param(rule: Rule, name: str) -> bool:
    """True for a parameter not declared a Tensor: no annotation, or `Tuple[int, int]`, `Size_`..."""
    function = rule.context.function
    if function is None:
        return False
    params = function.params
    return any(
        param.name.value == name and annotation_kind(param.annotation, rule.context.imports) not in (
            Kind.TENSOR, Kind.MAYBE_TENSOR)
        for param in (*params.posonly_params, *params.params, *params.kwonly_params)
    )


def _unpacked_from_untyped_param(rule: Rule, expr: cst.BaseExpression, depth: int) -> bool:
    """`h, w = size` or `n = size[0]` where `size` is a parameter not declared a Tensor.

    Facts call every untyped forward parameter (and one annotated `Tuple[int, int]` or
    with a type alias) a tensor; when code unpacks or indexes one to get sizes, it is far
    more often a tuple of ints (`output_size`, `image_size`).
    """
    if depth > 6:
        return False
    if isinstance(expr, cst.Subscript):
        inner = expr.value
        return (isinstance(inner, cst.Name) and _untyped_param(rule, inner.value)
                and not _assigned_values(rule, inner.value)) or _unpacked_from_untyped_param(rule, inner, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        # `(self.ws - W % self.ws) % self.ws` is as much a size as W itself.
        sides = [side for side in (expr.left, expr.right) if rule.context.kind(side).tensorish]
        return bool(sides) and all(_unpacked_from_untyped_param(rule, side, depth + 1) for side in sides)
    if isinstance(expr, cst.UnaryOperation):
        return _unpacked_from_untyped_param(rule, expr.expression, depth + 1)
    if not isinstance(expr, cst.Name) or _untyped_param(rule, expr.value):
        return False
    values = _assigned_values(rule, expr.value)
    if not values:
        return False
    for value in values:
        if isinstance(value, tuple) and value[0] == "element" and isinstance(value[1], cst.Name):
            source = value[1]
            if _untyped_param(rule, source.value) and not _assigned_values(rule, source.value):
                continue
            if _unpacked_from_untyped_param(rule, source, depth + 1):
                continue
            return False
        if isinstance(value, cst.BaseExpression) and _unpacked_from_untyped_param(rule, value, depth + 1):
            continue
        return False
    return True


def _derived_from_tensor(rule: Rule, expr: cst.BaseExpression, depth: int) -> bool:
    """True when a numpy expression reads a tensor (`x.numpy()`), directly or through locals.

    numpy on Python constants (`np.sqrt(8)`) is folded at trace time and compiles; numpy
    on tensor data is traced as tensors and breaks when read back into Python.
    """
    if depth > 8:
        return False
    context = rule.context
    found = False

    class _Scan(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            kind = context.kind(node)
            if kind is Kind.TENSOR:
                found = True
            elif kind is Kind.NDARRAY:
                for value in _assigned_values(rule, node.value):
                    if isinstance(value, cst.BaseExpression) and _derived_from_tensor(rule, value, depth + 1):
                        found = True

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            nonlocal found
            if context.kind(node) is Kind.TENSOR:
                found = True
            node.value.visit(self)
            return False

    expr.visit(_Scan())
    return found


def _method_call(node: cst.Call, names: frozenset[str]) -> Optional[cst.BaseExpression]:
    """The receiver of `receiver.NAME()` (no arguments) for NAME in `names`, else None."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in names and not node.args:
        return func.value
    return None


def _builtin_conversion(rule: Rule, node: cst.Call, names: tuple[str, ...]) -> Optional[str]:
    """`int`/`float`/... when `node` is `NAME(one tensor)`, else None."""
    qualified = rule.context.qualname(node.func) or ""
    if not qualified.startswith("builtins."):
        return None
    name = qualified[len("builtins."):]
    if name not in names or not node.args or node.args[0].keyword is not None or node.args[0].star:
        return None
    return name if holds_tensor_data(rule, node.args[0].value) else None


# ----- the keep-the-tensor fix ------------------------------------------------------


def _tensor_arithmetic_operand(rule: Rule, node: cst.CSTNode) -> bool:
    """True when `node` is an operand of `+ - * / // % **` whose other operand is a tensor."""
    parent = rule.context.parent(node)
    if not isinstance(parent, cst.BinaryOperation) or not isinstance(parent.operator, _ARITHMETIC):
        return False
    other = parent.right if parent.left is node else parent.left
    return rule.context.kind(other) is Kind.TENSOR


class _NameOccurrences(cst.CSTVisitor):
    """Every `Name` node spelling `name` in a function, except attribute and keyword names."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.found: list[cst.Name] = []
        self.shadowed = False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Param(self, node: cst.Param) -> None:
        if node.name.value == self.name:
            self.shadowed = True

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.found.append(node)


def _only_feeds_tensor_arithmetic(rule: Rule, conversion: cst.Call) -> bool:
    """True when every use of the Python number `conversion` produces is tensor arithmetic.

    Either the call is itself such an operand, or it is the whole value of `NAME = ...`,
    assigned once in the function, and every read of NAME is such an operand.
    """
    if _tensor_arithmetic_operand(rule, conversion):
        return True
    statement = rule.context.parent(conversion)
    function = rule.context.function
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1 or function is None:
        return False
    target = statement.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    if len(_assigned_values(rule, target.value)) != 1:
        return False
    if rule.context.facts.param_kind(function, target.value) is not None:
        return False
    occurrences = _NameOccurrences(target.value)
    function.body.visit(occurrences)
    reads = [name for name in occurrences.found if name is not target]
    if occurrences.shadowed or not reads:
        return False
    return all(_tensor_arithmetic_operand(rule, name) for name in reads)


def _chain(value: cst.BaseExpression, *methods: str) -> cst.BaseExpression:
    """`value.m1().m2()`, parenthesising `value` when the call would bind tighter."""
    if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not value.lpar:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    for method in methods:
        value = cst.Call(func=cst.Attribute(value=value, attr=cst.Name(method)))
    return value


KEEP_TENSOR_MESSAGE = "Keep the 0-d tensor (detached) instead of a Python number"


def keep_tensor_fix(rule: Rule, conversion: cst.Call, replacement: cst.BaseExpression) -> Optional[FixPlan]:
    """Replace a tensor-to-number conversion by `replacement` when only tensor arithmetic uses it.

    Unsafe: a 0-d tensor promotes like a Python number against a tensor with dimensions,
    but not against another 0-d tensor, and a float16 0-d tensor times an integer tensor
    gives float16 where a Python float gives float32.
    """
    if not _only_feeds_tensor_arithmetic(rule, conversion):
        return None
    replacement = replacement.with_changes(lpar=conversion.lpar, rpar=conversion.rpar)
    return FixPlan([(conversion, replacement)], KEEP_TENSOR_MESSAGE, "unsafe")


# ----- rules ------------------------------------------------------------------------


class TensorItem(Rule):
    """`.item()` on a tensor reads its value into Python and breaks the graph.

    Why: a Python number cannot live in the graph, so the default `torch.compile` stops
    the graph at `.item()` ("Unsupported Tensor.item() call with capture_scalar_outputs=
    False"), runs it eagerly and starts a new graph; the GPU also has to sync.
    `fullgraph=True` passes (the value becomes an unbacked symbol) until Python branches
    on it. With `torch._dynamo.config.capture_scalar_outputs = True` the default compile
    captures it too.

    Instead: keep the value as a 0-d tensor (`t.detach()` where `.item()` cut the
    gradient) and do the arithmetic with tensors; branch with `torch.where`. The fix
    (unsafe: 0-d tensors promote dtypes slightly differently from Python numbers)
    replaces `.item()` with `.detach()` when the number only feeds tensor arithmetic.
    """

    code = "JIT201"
    name = "tensor-item"
    kind = "break"
    gb_type = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    gb_id = "GB0124"
    fix_applicability = "unsafe"
    config_note = SCALAR_CONFIG_NOTE
    message = (
        "`.item()` reads tensor data into Python and breaks the graph; "
        "keep it a tensor (`.detach()`) and compute with tensors"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class AbsMaxQuant(nn.Module):
                def forward(self, x):
                    scale = x.abs().max().item()
                    q = torch.round(x / scale * 127)
                    return q * scale / 127
            """,
            fixed="""
            import torch
            from torch import nn

            class AbsMaxQuant(nn.Module):
                def forward(self, x):
                    scale = x.abs().max().detach()
                    q = torch.round(x / scale * 127)
                    return q * scale / 127
            """,
            entry="AbsMaxQuant",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class TemperatureSoftmax(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.log_temp = nn.Parameter(torch.zeros(()))

                def forward(self, logits):
                    return (logits / (self.log_temp.exp().item())).softmax(-1)
            """,
            fixed="""
            import torch
            from torch import nn

            class TemperatureSoftmax(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.log_temp = nn.Parameter(torch.zeros(()))

                def forward(self, logits):
                    return (logits / (self.log_temp.exp().detach())).softmax(-1)
            """,
            entry="TemperatureSoftmax",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class GreedyPolicy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.q = nn.Linear(8, 4)

                def forward(self, obs):
                    values = self.q(obs)
                    action = values[0].argmax().item()
                    return values[:, action]
            """,
            entry="GreedyPolicy",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MeanPooler(nn.Module):
                def forward(self, hidden_states, attention_mask):
                    mask = attention_mask.unsqueeze(-1).to(hidden_states.dtype)
                    num_tokens = attention_mask.sum().item()
                    return (hidden_states * mask).sum(dim=(0, 1)) / num_tokens
            """,
            calls="[(torch.randn(2, 4, 8), torch.ones(2, 4, dtype=torch.long))]",
            fixed="""
            import torch
            from torch import nn

            class MeanPooler(nn.Module):
                def forward(self, hidden_states, attention_mask):
                    mask = attention_mask.unsqueeze(-1).to(hidden_states.dtype)
                    num_tokens = attention_mask.sum().detach()
                    return (hidden_states * mask).sum(dim=(0, 1)) / num_tokens
            """,
            entry="MeanPooler",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class AbsMaxQuant(nn.Module):
                def forward(self, x):
                    scale = x.abs().max().clamp(min=1e-8)
                    return torch.round(x / scale * 127) * scale / 127
            """,
            entry="AbsMaxQuant",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Losses(nn.Module):
                def forward(self, x):
                    losses = {"l1": x.abs().mean(), "l2": x.pow(2).mean()}
                    total = sum(v for k, v in losses.items())
                    return total
            """,
            entry="Losses",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Normalize(nn.Module):
                def forward(self, x):
                    n = x.size(-1)
                    d = x.shape[1]
                    return x / (n * d) ** 0.5
            """,
            entry="Normalize",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.head = nn.Linear(8, 4)
                    self.last_confidence = 0.0

                def forward(self, x):
                    probs = self.head(x).softmax(-1)
                    if not torch.compiler.is_compiling():
                        self.last_confidence = probs.max().item()
                    return probs
            """,
            entry="Classifier",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        receiver = _method_call(node, frozenset({"item"}))
        if receiver is None or self.context.kind(receiver) in _NOT_ARRAYS:
            return
        fix = None
        if self.context.kind(receiver).tensorish:
            assert isinstance(node.func, cst.Attribute)
            fix = keep_tensor_fix(self, node, node.with_changes(func=node.func.with_changes(attr=cst.Name("detach"))))
        self.report(node, fix=fix)


class TensorToPythonScalar(Rule):
    """`int(t)`, `float(t)`, `bool(t)` or `complex(t)` on a tensor breaks the graph.

    Why: the conversion calls `t.item()`, so the default `torch.compile` breaks the graph
    there ("Unsupported Tensor.item() call with capture_scalar_outputs=False").
    `fullgraph=True` passes while the number is only used in arithmetic, but fails as
    soon as Python decides something with it (`if bool(t):`, `range(int(t))`). The same
    holds for a numpy array in forward: Dynamo traces arrays as tensors.

    Instead: keep tensors (`t.detach()`, `t.float()`, `t.long()`), branch with
    `torch.where`. `capture_scalar_outputs = True` removes the break for arithmetic
    uses. The fix (unsafe: 0-d tensors promote dtypes slightly differently from Python
    floats) turns `float(t)` into `t.detach().float()` when only tensor arithmetic uses it.
    """

    code = "JIT202"
    name = "tensor-to-python-scalar"
    kind = "break"
    gb_type = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    gb_id = "GB0124"
    fix_applicability = "unsafe"
    config_note = SCALAR_CONFIG_NOTE
    message = (
        "`int()`/`float()`/`bool()` on a tensor reads its data into Python and breaks the graph; "
        "keep a tensor (`t.detach()`, `t.float()`) and use torch ops"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class LayerScale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gamma = nn.Parameter(torch.full((), 0.1))

                def forward(self, x):
                    gamma = float(self.gamma)
                    return x * gamma + x
            """,
            fixed="""
            import torch
            from torch import nn

            class LayerScale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gamma = nn.Parameter(torch.full((), 0.1))

                def forward(self, x):
                    gamma = self.gamma.detach().float()
                    return x * gamma + x
            """,
            entry="LayerScale",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, x, mask):
                    total = x.masked_fill(~mask, 0).sum()
                    return total / float(mask.sum() + 1)
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8) > 0)]",
            fixed="""
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, x, mask):
                    total = x.masked_fill(~mask, 0).sum()
                    return total / (mask.sum() + 1).detach().float()
            """,
            entry="MaskedMean",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class EarlyExit(nn.Module):
                def forward(self, x):
                    done = bool((x.abs() < 1e-3).all())
                    return x * 2 if done else x + 1
            """,
            entry="EarlyExit",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class RepeatSteps(nn.Module):
                def forward(self, x):
                    steps = int(x.abs().mean() > 0.5) + 1
                    for _ in range(steps):
                        x = torch.tanh(x)
                    return x
            """,
            entry="RepeatSteps",
        ),
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class NumpyScale(nn.Module):
                def forward(self, x):
                    peak = float(np.abs(x.numpy()).max())
                    return x / peak
            """,
            entry="NumpyScale",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, q, k):
                    scale = float(q.size(-1)) ** -0.5
                    heads = int(q.shape[1])
                    return (q @ k.transpose(-1, -2) * scale).softmax(-1) * heads
            """,
            calls="[(torch.randn(2, 4, 8), torch.randn(2, 4, 8))]",
            entry="Attention",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Dropout(nn.Module):
                def __init__(self, p=0.1, inplace=False):
                    super().__init__()
                    self.p = float(p)
                    self.inplace = bool(inplace)

                def forward(self, x):
                    keep = int(self.p * 10)
                    return x * (1 - self.p) + keep
            """,
            entry="Dropout",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class LayerScale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gamma = nn.Parameter(torch.full((), 0.1))

                def forward(self, x):
                    return x * self.gamma.float() + x.to(torch.float32)
            """,
            entry="LayerScale",
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class NumpyClip(nn.Module):
                def forward(self, x):
                    return torch.from_numpy(np.clip(x.numpy(), -1.0, 1.0)) * float(np.pi)
            """,
            entry="NumpyClip",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = _builtin_conversion(self, node, ("int", "float", "bool", "complex"))
        if name is None:
            return
        fix = None
        value = node.args[0].value
        if name == "float" and self.context.kind(value) is Kind.TENSOR:
            fix = keep_tensor_fix(self, node, _chain(value, "detach", "float"))
        message = self.message.replace("`int()`/`float()`/`bool()`", f"`{name}()`", 1)
        self.report(node, message=message, fix=fix)


class TensorToList(Rule):
    """`.tolist()` on a tensor reads all its values into Python.

    Why: on a floating-point tensor Dynamo cannot trace it at all ("Tensor.tolist()
    with non-integer tensor"): `fullgraph=True` fails, whatever the config. On an
    integer tensor the default `torch.compile` breaks the graph ("Data dependent
    operator"), `fullgraph=True` passes with unbacked symbols, and
    `capture_scalar_outputs = True` removes the break. Feeding the list to
    `torch.split` or `range` makes sizes depend on data.

    Instead: stay in tensors (`unbind`, `torch.stack`, vectorised ops); for split sizes
    known ahead, pass Python ints (from config or shapes).
    """

    code = "JIT203"
    name = "tensor-tolist"
    kind = "break"
    gb_type = "Tensor.tolist() with non-integer tensor"
    gb_id = "GB0109"
    config_note = (
        "Integer tensors: capture_scalar_outputs = True removes the break. Float tensors: "
        "fails under every setting."
    )
    message = (
        "`.tolist()` reads tensor data into Python: fails on float tensors, breaks the graph "
        "on integer ones; keep tensors (`unbind`, vectorised ops)"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class PerRowScale(nn.Module):
                def forward(self, x):
                    scales = x.abs().amax(1).tolist()
                    return torch.stack([row / s for row, s in zip(x, scales)])
            """,
            entry="PerRowScale",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class SplitByLength(nn.Module):
                def forward(self, tokens, lengths):
                    chunks = tokens.split(lengths.tolist())
                    return torch.stack([c.sum(0) for c in chunks])
            """,
            calls="[(torch.randn(6, 8), torch.tensor([2, 3, 1]))]",
            entry="SplitByLength",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BoxAreas(nn.Module):
                def forward(self, boxes):
                    areas = []
                    for x1, y1, x2, y2 in boxes.tolist():
                        areas.append((x2 - x1) * (y2 - y1))
                    return boxes.new_tensor(areas)
            """,
            calls="[(torch.rand(5, 4),)]",
            entry="BoxAreas",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class PerRowScale(nn.Module):
                def forward(self, x):
                    scales = x.abs().amax(1, keepdim=True)
                    return torch.stack([row for row in x / scales])
            """,
            entry="PerRowScale",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class SplitHeads(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.sizes = [2, 6]

                def forward(self, x):
                    sizes = list(self.sizes)
                    dims = list(x.shape)
                    a, b = x.split(sizes, dim=-1)
                    return a.sum(-1) + b.sum(-1) + dims[0]
            """,
            entry="SplitHeads",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Unbind(nn.Module):
                def forward(self, x):
                    rows = x.unbind(0)
                    return torch.stack(list(rows[::-1]))
            """,
            entry="Unbind",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        receiver = _method_call(node, frozenset({"tolist"}))
        if receiver is not None and self.context.kind(receiver) not in _NOT_ARRAYS:
            self.report(node)


# Where torch wants Python ints. `None` means every positional argument; keywords listed.
_ALL = None
_SIZE_FUNCTIONS: dict[str, tuple[Optional[tuple[int, ...]], tuple[str, ...]]] = {
    "builtins.range": (_ALL, ()),
    "torch.arange": (_ALL, ("start", "end", "step")),
    "torch.zeros": (_ALL, ("size",)),
    "torch.ones": (_ALL, ("size",)),
    "torch.empty": (_ALL, ("size",)),
    "torch.rand": (_ALL, ("size",)),
    "torch.randn": (_ALL, ("size",)),
    "torch.randint": (_ALL, ("size",)),
    "torch.full": ((0,), ("size",)),
    "torch.eye": (_ALL, ("n", "m")),
    "torch.linspace": ((2,), ("steps",)),
    "torch.logspace": ((2,), ("steps",)),
    "torch.split": ((1,), ("split_size_or_sections",)),
    "torch.chunk": ((1,), ("chunks",)),
    "torch.narrow": ((2, 3), ("start", "length")),
    "torch.topk": ((1,), ("k",)),
    "torch.kthvalue": ((1,), ("k",)),
    "torch.nn.functional.pad": ((1,), ("pad",)),
}
_SIZE_METHODS: dict[str, tuple[Optional[tuple[int, ...]], tuple[str, ...]]] = {
    "view": (_ALL, ("size",)),
    "reshape": (_ALL, ("shape",)),
    "expand": (_ALL, ("size",)),
    "repeat": (_ALL, ("repeats",)),
    "new_zeros": (_ALL, ("size",)),
    "new_ones": (_ALL, ("size",)),
    "new_empty": (_ALL, ("size",)),
    "new_full": ((0,), ("size",)),
    "narrow": ((1, 2), ("start", "length")),
    "topk": ((0,), ("k",)),
    "kthvalue": ((0,), ("k",)),
    "split": ((0,), ("split_size",)),
    "chunk": ((0,), ("chunks",)),
}
# Reductions that return a 0-d integer tensor when called without a dim.
_SCALAR_INDEX_REDUCTIONS = frozenset({"argmax", "argmin", "count_nonzero"})


def _size_arguments(call: cst.Call, spec: tuple[Optional[tuple[int, ...]], tuple[str, ...]]) -> list[cst.BaseExpression]:
    """The expressions in `call` that must be Python ints, tuple and list literals opened."""
    positions, keywords = spec
    chosen: list[cst.BaseExpression] = []
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for index, arg in enumerate(positional):
        if positions is None or index in positions:
            chosen.append(arg.value)
    chosen += [arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value in keywords]
    opened: list[cst.BaseExpression] = []
    for value in chosen:
        if isinstance(value, (cst.Tuple, cst.List)):
            opened += [element.value for element in value.elements if not isinstance(element, cst.StarredElement)]
        else:
            opened.append(value)
    return opened


def _is_scalar_index(rule: Rule, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True for a 0-d integer tensor: `t.argmax()`, `torch.argmax(t)`, or a local bound to one."""
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SCALAR_INDEX_REDUCTIONS:
            if not expr.args and rule.context.kind(func.value).tensorish:
                return True
        qualified = rule.context.qualname(func) or ""
        if qualified.startswith("torch.") and qualified[6:] in _SCALAR_INDEX_REDUCTIONS:
            return len(expr.args) == 1 and expr.args[0].keyword is None
        return False
    return _bound_only_to(rule, expr, _is_scalar_index, depth)


class TensorAsSize(Rule):
    """A tensor used where Python needs an int (a size, count or index) breaks the graph.

    Why: `torch.arange(lengths.max())`, `torch.zeros(mask.sum())`, `x.view(n, -1)`,
    `x.topk(k)` with a tensor `k` turn the tensor into an int behind the scenes; the
    default `torch.compile` breaks the graph there ("Data dependent operator").
    `range(t)`, `torch.split`/`torch.chunk`/`torch.linspace` with tensor sizes, and
    indexing with a 0-d integer tensor (`x[scores.argmax()]`) fail even with
    `fullgraph=True`.

    Instead: take sizes from shapes (`x.shape[0]`, guarded, not data), or pass Python
    ints from config; index with a 1-d tensor (`x[i.view(1)]`, `x.index_select(0, i)`,
    `x.gather`) so the index stays in the graph. When a size truly depends on data,
    `capture_scalar_outputs = True` removes the break for factory and view sizes.
    """

    code = "JIT204"
    name = "tensor-as-size"
    kind = "break"
    gb_type = "Data dependent operator"
    gb_id = "GB0033"
    config_note = (
        "capture_scalar_outputs = True removes the break for factory/view/topk sizes; "
        "range(t), split/chunk/linspace sizes and 0-d tensor indices fail under every setting."
    )
    message = (
        "a tensor used as a Python int (size, count or index) breaks the graph; "
        "use shapes or Python ints, or index with a 1-d tensor"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class PositionIds(nn.Module):
                def forward(self, x, lengths):
                    positions = torch.arange(lengths.max())
                    return x[:, :4] + positions[:4]
            """,
            calls="[(torch.randn(4, 8), torch.tensor([5, 7, 3, 6]))]",
            entry="PositionIds",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class KeepPositive(nn.Module):
                def forward(self, scores):
                    k = (scores > 0).sum()
                    return scores.flatten().topk(k).values.sum()
            """,
            entry="KeepPositive",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BestRow(nn.Module):
                def forward(self, x):
                    best = x.sum(1).argmax()
                    return x[best]
            """,
            entry="BestRow",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Refine(nn.Module):
                def forward(self, x, steps: torch.Tensor):
                    for _ in range(steps):
                        x = torch.tanh(x)
                    return x
            """,
            calls="[(torch.randn(4, 8), torch.tensor(2))]",
            entry="Refine",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LengthMask(nn.Module):
                def forward(self, features, lengths):
                    max_len = lengths.max()
                    mask = torch.arange(max_len)[None, :] < lengths[:, None]
                    return features[:, :4] * mask[:, :4]
            """,
            calls="[(torch.randn(3, 8), torch.tensor([4, 6, 5]))]",
            entry="LengthMask",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class PositionIds(nn.Module):
                def forward(self, x):
                    batch, length = x.shape
                    positions = torch.arange(length).expand(batch, length)
                    return x + positions.view(batch, -1)
            """,
            entry="PositionIds",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class BestRow(nn.Module):
                def forward(self, x):
                    best = x.sum(1).argmax()
                    columns = x.argmax(1, keepdim=True)
                    return x.index_select(0, best.view(1)) + x.gather(1, columns)
            """,
            entry="BestRow",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Heads(nn.Module):
                def __init__(self, heads=2):
                    super().__init__()
                    self.heads = heads

                def forward(self, x, steps=2):
                    b, n = x.shape
                    x = x.reshape(b, self.heads, n // self.heads)
                    for _ in range(steps):
                        x = torch.zeros(b, self.heads, 1) + x
                    return x.topk(2, dim=-1).values
            """,
            entry="Heads",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class LengthMask(nn.Module):
                def forward(self, features, lengths):
                    positions = torch.arange(features.shape[1], device=features.device)
                    mask = positions[None, :] < lengths[:, None]
                    return features * mask
            """,
            calls="[(torch.randn(3, 8), torch.tensor([4, 6, 5]))]",
            entry="LengthMask",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.context.qualname(func)
        spec = _SIZE_FUNCTIONS.get(qualified or "")
        if spec is None and qualified is None and isinstance(func, cst.Attribute):
            method_spec = _SIZE_METHODS.get(func.attr.value)
            if method_spec is not None and self.context.kind(func.value) is Kind.TENSOR:
                spec = method_spec
        if spec is None:
            return
        for value in _size_arguments(node, spec):
            if holds_tensor_data(self, value):
                self.report(value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.context.kind(node.value).tensorish:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and _is_scalar_index(self, index.value):
                self.report(index.value)


def _string_literal(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.SimpleString, cst.ConcatenatedString))


class TensorToString(Rule):
    """`str(t)`, `repr(t)`, `format(t)` or `"..." % t` on a tensor fails to compile.

    Why: Dynamo cannot trace turning a tensor into text ("Failed to trace builtin
    operator", "repr() on tensor"): `fullgraph=True` fails and the default compile
    breaks the graph, whatever the config; `format(t, spec)` even raises an internal
    Dynamo error. f-strings and `str.format` with tensors, measured on torch 2.13,
    are traced and stay correct.

    Instead: build messages with f-strings, or format shapes and dtypes (`str(x.shape)`
    is fine); move logging of values out of the compiled region.
    """

    code = "JIT205"
    name = "tensor-to-string"
    kind = "break"
    gb_type = "Failed to trace builtin operator"
    gb_id = "GB0059"
    message = (
        "turning a tensor into text with str()/repr()/format()/% fails to compile; "
        "use an f-string, or format shapes instead of values"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Tagged(nn.Module):
                def forward(self, x):
                    key = str(x.mean())
                    return x * len(key)
            """,
            entry="Tagged",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Report(nn.Module):
                def forward(self, x):
                    loss = x.pow(2).mean()
                    summary = "loss=%.4f" % loss
                    return loss, summary
            """,
            entry="Report",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Debug(nn.Module):
                def forward(self, x):
                    probs = x.softmax(-1)
                    text = repr(probs)
                    return probs, text
            """,
            entry="Debug",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Report(nn.Module):
                def forward(self, x):
                    loss = x.pow(2).mean()
                    return loss, f"loss={loss:.4f}", "loss={}".format(loss)
            """,
            entry="Report",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ShapeKey(nn.Module):
                def forward(self, x):
                    key = str(x.shape) + str(x.dtype) + "%d" % x.shape[0]
                    return x * len(key)
            """,
            entry="ShapeKey",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Modulo(nn.Module):
                def forward(self, x):
                    name = "layer_%d" % 3
                    return x % 2.0, name
            """,
            entry="Modulo",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = _builtin_conversion(self, node, ("str", "repr", "format", "ascii"))
        if name is not None:
            self.report(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Modulo) or not _string_literal(node.left):
            return
        right = node.right
        values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
        if any(holds_tensor_data(self, value) for value in values):
            self.report(node)


def _condition_chain(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`test` and the and/or/not operations inside it, down to their operands."""
    chain: list[cst.BaseExpression] = []
    pending = [test]
    while pending:
        expr = pending.pop()
        if isinstance(expr, cst.BooleanOperation):
            chain.append(expr)
            pending += [expr.left, expr.right]
        elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            chain.append(expr)
            pending.append(expr.expression)
    return chain


def _truth_tested(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of an and/or chain whose truth Python tests: all but the last."""
    operands: list[cst.BaseExpression] = []

    def flatten(value: cst.BaseExpression) -> None:
        if isinstance(value, cst.BooleanOperation) and not value.lpar:
            flatten(value.left)
            flatten(value.right)
        else:
            operands.append(value)

    flatten(expr)
    return operands[:-1]


class TensorTruthValue(Rule):
    """`and`/`or`/`not` on tensor data outside a condition breaks the graph.

    Why: `a and b`, `a or b` and `not a` call `bool(a)`; on a tensor that needs its
    value ("Data-dependent branching"), so `fullgraph=True` fails. This includes
    `y = mask.any() and z`, `valid = not torch.isnan(x).any()` and `assert not
    x.isnan().any()` (a plain `assert (x > 0).all()` compiles).

    Instead: use tensor logic: `a & b`, `a | b`, `~a` or `torch.logical_and/or/not`,
    and `torch.where(cond, a, b)` to pick values. (`if`/`while`/ternary conditions are
    reported by JIT101-JIT103.)
    """

    code = "JIT206"
    name = "tensor-truth-value"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    message = (
        "`and`/`or`/`not` on a tensor calls bool() on its data and breaks the graph; "
        "use `&`, `|`, `~` (torch.logical_*) or torch.where"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x, z):
                    mask = x > 0
                    y = mask.any() and z
                    return y * 2
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="Gate",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class NanGuard(nn.Module):
                def forward(self, x):
                    finite = not torch.isnan(x).any()
                    return x * finite
            """,
            entry="NanGuard",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class CheckedNorm(nn.Module):
                def forward(self, x):
                    assert not torch.isnan(x).any(), "NaN in input"
                    return x / x.norm()
            """,
            entry="CheckedNorm",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x, z):
                    mask = x > 0
                    y = torch.where(mask.any(), z, mask.to(z.dtype))
                    valid = ~torch.isnan(x) & (x < 10) | mask
                    return y * 2 + valid
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="Gate",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Options(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.use_bias = True
                    self.bias = nn.Parameter(torch.zeros(8))

                def forward(self, x, scale=None, mask=None):
                    scale = scale or 1.0
                    apply = self.use_bias and not self.training
                    mask = mask is not None and mask
                    return x * scale + (self.bias if apply else 0)
            """,
            entry="Options",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Checked(nn.Module):
                def forward(self, x):
                    assert x.dim() == 2 and (x == x).all(), "bad input"
                    if x.shape[0] > 1 and not x.is_floating_point():
                        x = x.float()
                    return x * 2
            """,
            entry="Checked",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        # if/while/ternary/comprehension tests are JIT101-JIT103's to report.
        self._in_conditions: set[cst.BaseExpression] = set()
        # Inner links of an `a and b and c` chain: the outermost one reports.
        self._inner: set[cst.BooleanOperation] = set()

    def _condition(self, test: cst.BaseExpression) -> None:
        self._in_conditions.update(_condition_chain(test))

    def visit_If(self, node: cst.If) -> None:
        self._condition(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._condition(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._condition(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._condition(node.test)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        for side in (node.left, node.right):
            if isinstance(side, cst.BooleanOperation) and not side.lpar:
                self._inner.add(side)
        if node in self._inner or node in self._in_conditions:
            return
        for operand in _truth_tested(node):
            if holds_tensor_data(self, operand):
                self.report(operand)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if not isinstance(node.operator, cst.Not) or node in self._in_conditions:
            return
        if holds_tensor_data(self, node.expression):
            self.report(node)


# Ops whose output size depends on tensor values.
_DYNAMIC_SHAPE_OPS = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount"})
_MASK_FUNCTIONS = frozenset({
    "torch.isnan", "torch.isinf", "torch.isfinite", "torch.isneginf", "torch.isposinf", "torch.isin",
    "torch.logical_and", "torch.logical_or", "torch.logical_not", "torch.logical_xor",
    "torch.eq", "torch.ne", "torch.gt", "torch.ge", "torch.lt", "torch.le", "torch.isclose",
})
_MASK_METHODS = frozenset({
    "bool", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor",
    "eq", "ne", "gt", "ge", "lt", "le", "isclose",
})
_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def _is_mask(rule: Rule, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True for an expression that is certainly a boolean tensor (a comparison, `~m`, `m & n`...)."""
    context = rule.context
    if depth > 6:
        return False
    if isinstance(expr, cst.Comparison):
        return all(isinstance(t.operator, _ORDERING) for t in expr.comparisons) and context.kind(expr).tensorish
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _is_mask(rule, expr.expression, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return _is_mask(rule, expr.left, depth + 1) or _is_mask(rule, expr.right, depth + 1)
    if isinstance(expr, cst.Call):
        qualified = context.qualname(expr.func)
        if qualified is not None:
            return qualified in _MASK_FUNCTIONS
        func = expr.func
        return (isinstance(func, cst.Attribute) and func.attr.value in _MASK_METHODS
                and context.kind(func.value).tensorish)
    return _bound_only_to(rule, expr, _is_mask, depth)


class DataDependentShape(Rule):
    """Boolean-mask indexing and ops like `nonzero` give outputs whose size depends on data.

    Why: `x[mask]`, `torch.nonzero`, one-argument `torch.where(mask)`, `masked_select`,
    `unique`, `bincount` and `repeat_interleave` with tensor repeats cannot know their
    output size without the values, so the default `torch.compile` breaks the graph
    ("Dynamic shape operator"). `fullgraph=True` passes (the size becomes an unbacked
    symbol), and so does the default compile with
    `torch._dynamo.config.capture_dynamic_output_shape_ops = True`.

    Instead: keep shapes static: `torch.where(mask, x, 0)`, `x * mask`,
    `x.masked_fill(~mask, 0)`, masked sums (`(x * mask).sum() / mask.sum()`); assigning
    through a mask (`x[mask] = 0`) is fine, but `x[mask] += 1` reads `x[mask]` and
    breaks (write `x = x + mask`); pass `output_size=` to `repeat_interleave`.
    """

    code = "JIT207"
    name = "data-dependent-shape"
    kind = "break"
    gb_type = "Dynamic shape operator"
    gb_id = "GB0036"
    config_note = (
        "With torch._dynamo.config.capture_dynamic_output_shape_ops = True the default "
        "compile captures these ops without a break; fullgraph=True passes either way."
    )
    message = (
        "output size depends on tensor data (mask indexing, nonzero, one-arg where...) and "
        "breaks the graph; keep shapes static with torch.where(mask, x, 0) or x * mask"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, loss, weights):
                    valid = weights > 0
                    return loss[valid].mean()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="MaskedMean",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class FgIndices(nn.Module):
                def forward(self, labels):
                    fg = torch.where(labels > 0)[0]
                    return fg.float().mean()
            """,
            calls="[(torch.randint(0, 3, (16,)),)]",
            entry="FgIndices",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ActiveTokens(nn.Module):
                def forward(self, x):
                    keep = torch.isfinite(x) & (x.abs() > 0.1)
                    return x.masked_select(keep).sum() + keep.nonzero().sum()
            """,
            entry="ActiveTokens",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Classes(nn.Module):
                def forward(self, labels):
                    return torch.unique(labels).sum()
            """,
            calls="[(torch.randint(0, 5, (16,)),)]",
            entry="Classes",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ScoreFilter(nn.Module):
                def __init__(self, score_thresh=0.05):
                    super().__init__()
                    self.score_thresh = score_thresh

                def forward(self, boxes, scores):
                    keep = scores > self.score_thresh
                    boxes, scores = boxes[keep], scores[keep]
                    return boxes * scores[:, None]
            """,
            calls="[(torch.rand(10, 4), torch.rand(10))]",
            entry="ScoreFilter",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BumpPositives(nn.Module):
                def forward(self, x):
                    y = x.clone()
                    y[y > 0] += 1
                    return y
            """,
            entry="BumpPositives",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, loss, weights):
                    valid = weights > 0
                    total = torch.where(valid, loss, 0).sum()
                    return total / valid.sum().clamp(min=1) + (loss * valid).mean()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="MaskedMean",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ClampNegatives(nn.Module):
                def forward(self, x):
                    y = x.clone()
                    y[y < 0] = 0
                    y[torch.isnan(y)] = 0.0
                    return y.masked_fill(y > 5, 5)
            """,
            entry="ClampNegatives",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Gather(nn.Module):
                def forward(self, x, idx):
                    rows = x[idx]
                    last = x[:, -1]
                    return rows + last.unsqueeze(-1) + x[x.shape[0] - 1]
            """,
            calls="[(torch.randn(4, 8), torch.tensor([0, 2, 1, 3]))]",
            entry="Gather",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Repeat(nn.Module):
                def forward(self, x, counts):
                    fixed = torch.repeat_interleave(x, 2, dim=0)
                    sized = x.repeat_interleave(counts, dim=0, output_size=8)
                    return fixed + sized
            """,
            calls="[(torch.randn(4, 8), torch.tensor([2, 2, 2, 2]))]",
            entry="Repeat",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._store_targets: set[cst.BaseExpression] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        # `x[mask] = v` writes in place (index_put) and keeps shapes static. `x[mask] += v`
        # is no such target: it reads `x[mask]` first, and that breaks (measured).
        self._store_targets.add(node.target)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if node in self._store_targets or not self.context.kind(node.value).tensorish:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and _is_mask(self, index.value):
                self.report(node)
                return

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.context.qualname(func)
        if qualified is not None:
            if not qualified.startswith("torch."):
                return
            op = qualified[len("torch."):]
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if op in _DYNAMIC_SHAPE_OPS or (op == "where" and len(node.args) == 1 and positional):
                self.report(node)
            elif op == "repeat_interleave" and self._tensor_repeats(node, positional[1:2]):
                self.report(node)
            return
        if isinstance(func, cst.Attribute) and self.context.kind(func.value) is Kind.TENSOR:
            method = func.attr.value
            if method in _DYNAMIC_SHAPE_OPS:
                self.report(node)
            elif method == "repeat_interleave":
                positional = [a for a in node.args if a.keyword is None and not a.star]
                if self._tensor_repeats(node, positional[:1]):
                    self.report(node)

    def _tensor_repeats(self, node: cst.Call, repeats: list[cst.Arg]) -> bool:
        """`repeat_interleave` with a tensor of repeats and no `output_size=`."""
        if any(a.keyword is not None and a.keyword.value == "output_size" for a in node.args):
            return False
        values = [a.value for a in repeats] + [
            a.value for a in node.args if a.keyword is not None and a.keyword.value == "repeats"
        ]
        return any(self.context.kind(value) is Kind.TENSOR for value in values)
