"""Tensor-to-Python: `.item()`, `int/float/bool(t)` and `.tolist()` read tensor data into Python.

Measured with torch 2.13 (CPU): `.item()`, `int(t)`, `float(t)`, `bool(t)` and integer
`.tolist()` pass `fullgraph=True` (Dynamo captures an unbacked symbol) until Python
branches on the value, but graph-break under the default `torch.compile`;
`capture_scalar_outputs=True` removes those breaks. Float `.tolist()` fails under every
setting. Sizes and shapes: tensor_sizes.py; text and truth values: tensor_truth_and_text.py.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.linter.facts import Kind
from compile_lint.rules._tensor_data import (
    NOT_ARRAYS,
    assigned_values,
    builtin_conversion,
    method_call,
)
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid
from compile_lint.linter.walk import visit

SCALAR_CONFIG_NOTE = (
    "With torch._dynamo.config.capture_scalar_outputs = True the value is captured as an "
    "unbacked symbol and the default compile no longer breaks (fullgraph=True passes "
    "either way). Python control flow on the value still fails, and on torch 2.13 so does "
    "indexing with it (`x[:, t.item()]` raises IndexError once captured)."
)
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)
_AUGMENTED_ARITHMETIC = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)


# ----- the keep-the-tensor fix ------------------------------------------------------


def _tensor_arithmetic_operand(rule: Rule, node: cst.CSTNode) -> bool:
    """True when `node` is an operand of `+ - * / // % **` whose other operand is a tensor.

    `t += node` (and `-= *= /=`) on a tensor `t` counts too: in-place ops keep `t`'s dtype.
    """
    parent = rule.context.parent(node)
    if isinstance(parent, cst.AugAssign):
        return (parent.value is node and isinstance(parent.operator, _AUGMENTED_ARITHMETIC)
                and rule.context.kind(parent.target).tensorish)
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
        visit(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        visit(node.value, self)
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
    if len(assigned_values(rule, target.value)) != 1:
        return False
    if rule.context.facts.param_kind(function, target.value) is not None:
        return False
    occurrences = _NameOccurrences(target.value)
    visit(function.body, occurrences)
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

    Unsafe, as measured by benchmarks/keep_tensor_fix_dtypes.py (CPU, eager and Inductor):
    `x OP t.detach()` equals `x OP t.item()` in dtype and value whenever `x` is a floating
    tensor or `t` is float32/int64, but an integer or bool `x` with a float16, bfloat16 or
    float64 `t` gives `t`'s dtype instead of float32; `t.detach().float()` equals
    `float(t)` except that a float64 `t` is rounded to float32. Against another 0-d
    tensor, a 0-d tensor promotes where a Python number would not.
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
    on it or indexes with it. With `torch._dynamo.config.capture_scalar_outputs = True`
    the default compile captures it too.

    Instead: keep the value as a 0-d tensor (`t.detach()` where `.item()` cut the
    gradient) and do the arithmetic with tensors; branch with `torch.where`. The fix
    replaces `.item()` with `.detach()` when the number only feeds tensor arithmetic.
    It is unsafe: measured identical for floating-point operands, but an integer tensor
    combined with a float16/bfloat16/float64 `t` then takes `t`'s dtype, not float32.
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
        receiver = method_call(node, frozenset({"item"}))
        if receiver is None or self.context.kind(receiver) in NOT_ARRAYS:
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
    uses. The fix turns `float(t)` into `t.detach().float()` when only tensor arithmetic
    uses it; unsafe because a float64 `t` is rounded to float32 (otherwise measured
    identical in dtype and value).
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
        name = builtin_conversion(self, node, ("int", "float", "bool", "complex"))
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
        receiver = method_call(node, frozenset({"tolist"}))
        if receiver is not None and self.context.kind(receiver) not in NOT_ARRAYS:
            self.report(node)
