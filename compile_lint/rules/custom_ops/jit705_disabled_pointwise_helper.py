"""JIT705 disabled-pointwise-helper: `@torch.compiler.disable` on a helper that only does
elementwise math costs a graph break."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.file.compile_spellings import call_or_alias_pattern, decorator_pattern
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid


class DisabledPointwiseHelper(Rule):
    """`@torch.compiler.disable` on a helper that only does elementwise math costs a graph break.

    Why: every call of a disabled function from compiled code ends the graph, runs the
    helper eagerly and starts a new graph ("Skip calling `torch.compiler.disable()`d
    function"; "Skip inlining ..." for methods). For cheap pointwise code (activations,
    scaling, residual adds) that is all cost: Inductor would have fused it into the
    neighbouring kernels, and the break also splits the graph around it.

    Instead: drop the decorator and let the helper compile. The fix (unsafe: the
    decorator may have been hiding a numerical or compiler issue) removes it. Helpers
    that read tensor data, call into Python libraries or loop are left alone.
    """

    code = "JIT705"
    name = "disabled-pointwise-helper"
    kind = "perf"
    gb_type = "Skip calling `torch.compiler.disable()`d function"
    gb_id = "GB0098"
    fix_applicability = "unsafe"
    default_enabled = False
    scope = "module"
    trigger_words = ("disable",)
    trigger_pattern = f"{decorator_pattern('disable')}|{call_or_alias_pattern('disable')}"  # it reports a decorator
    message = (
        "`{name}` only does elementwise math, yet torch.compiler.disable makes every compiled call "
        "of it a graph break; remove the decorator so Inductor can fuse it"
    )
    invalid = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn


            @torch.compiler.disable
            def gelu_tanh(x):
                return F.gelu(x, approximate="tanh")


            class FeedForward(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.up = nn.Linear(8, 16)
                    self.down = nn.Linear(16, 8)

                def forward(self, x):
                    return self.down(gelu_tanh(self.up(x)))
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch import nn


            def gelu_tanh(x):
                return F.gelu(x, approximate="tanh")


            class FeedForward(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.up = nn.Linear(8, 16)
                    self.down = nn.Linear(16, 8)

                def forward(self, x):
                    return self.down(gelu_tanh(self.up(x)))
            """,
            entry="FeedForward",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn


            class LayerScaleBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.gamma = nn.Parameter(torch.full((8,), 0.1))

                @torch._dynamo.disable
                def residual(self, x, h):
                    scaled = h * self.gamma
                    return x + scaled.clamp(-1.0, 1.0)

                def forward(self, x):
                    return self.residual(x, self.fc(x))
            """,
            fixed="""
            import torch
            from torch import nn


            class LayerScaleBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.gamma = nn.Parameter(torch.full((8,), 0.1))

                def residual(self, x, h):
                    scaled = h * self.gamma
                    return x + scaled.clamp(-1.0, 1.0)

                def forward(self, x):
                    return self.residual(x, self.fc(x))
            """,
            entry="LayerScaleBlock",
            lines=[11],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn


            def gelu_tanh(x):
                return F.gelu(x, approximate="tanh")


            class FeedForward(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.up = nn.Linear(8, 16)

                def forward(self, x):
                    return gelu_tanh(self.up(x))
            """,
            entry="FeedForward",
        ),
        Valid(
            """
            import torch
            from torch import nn


            @torch.compiler.disable
            def postprocess(logits):
                return logits.softmax(-1) * 100


            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 4)

                def forward(self, x):
                    return self.fc(x)


            def predict(model, x):
                return postprocess(model(x))
            """,
            entry="Classifier",
            note="the disabled helper is only called from eager code",
        ),
        Valid(
            """
            import torch
            from torch import nn


            class Decoder(nn.Module):
                @torch.compiler.disable
                def trim(self, tokens, eos):
                    stop = (tokens == eos).nonzero()
                    return tokens[: int(stop[0, 0])] if len(stop) else tokens

                def forward(self, x):
                    return x * 2
            """,
            entry="Decoder",
        ),
        Valid(
            """
            import torch
            from torch import nn


            @torch.jit.ignore
            def scale(x):
                return x * 2


            class Scaled(nn.Module):
                def forward(self, x):
                    return x + 1
            """,
            entry="Scaled",
        ),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        imports = self.context.imports
        disable = [d for d in node.decorators if imports.qualname(_decorator_callee(d)) in COMPILER_DISABLE]
        if len(disable) != 1 or isinstance(disable[0].decorator, cst.Call) and disable[0].decorator.args:
            return  # `disable(recursive=False)` and the like are deliberate choices
        if not _pointwise_body(node, imports) or node.name.value not in self._called_from_compiled_code():
            return
        # The function's own leading_lines sit above its first decorator, so they stay.
        new = node.with_changes(decorators=[d for d in node.decorators if d is not disable[0]])
        fix = FixPlan([(node, new)], "Remove torch.compiler.disable", "unsafe")
        self.report(disable[0], self.message.format(name=node.name.value), fix=fix)

    def _called_from_compiled_code(self) -> set[str]:
        if not hasattr(self, "_called"):
            called: set[str] = set()

            class _Calls(cst.CSTVisitor):
                def visit_Call(self, node: cst.Call) -> None:
                    func = node.func
                    if isinstance(func, cst.Name):
                        called.add(func.value)
                    elif (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                          and func.value.value == "self"):
                        called.add(func.attr.value)

            for function in self.context.regions.functions:
                visit(function, _Calls())
            self._called = called
        return self._called


# `torch.compiler.disable` proper; `torch.jit.ignore` & co. are about TorchScript.
COMPILER_DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo"})


_POINTWISE_NAMES = frozenset(
    {"add", "sub", "mul", "div", "true_divide", "exp", "exp2", "expm1", "log", "log1p", "log2",
     "sigmoid", "tanh", "relu", "abs", "neg", "sqrt", "rsqrt", "clamp", "clamp_min", "clamp_max",
     "clip", "where", "maximum", "minimum", "pow", "erf", "sin", "cos", "square", "reciprocal",
     "lerp", "addcmul", "float", "half", "bfloat16", "to", "type_as"}
)


_POINTWISE_FUNCTIONAL = frozenset(
    {"relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "leaky_relu", "elu", "selu", "celu",
     "softplus", "mish", "hardswish", "hardsigmoid", "hardtanh", "logsigmoid"}
)


_POINTWISE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.FloorDivide, cst.Modulo)


def _is_pointwise(expr: cst.BaseExpression, imports: ImportMap) -> bool:
    """True when `expr` is built only from names, literals and elementwise torch ops."""
    if isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Attribute):  # `self.gamma`, `torch.float16`
        return dotted_name(expr) is not None
    if isinstance(expr, cst.BinaryOperation):
        return (
            isinstance(expr.operator, _POINTWISE_OPERATORS)
            and _is_pointwise(expr.left, imports)
            and _is_pointwise(expr.right, imports)
        )
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.operator, (cst.Minus, cst.Plus)) and _is_pointwise(expr.expression, imports)
    if isinstance(expr, cst.Call):
        if not all(_is_pointwise(arg.value, imports) for arg in expr.args if arg.star == ""):
            return False
        if any(arg.star for arg in expr.args):
            return False
        qualified = imports.qualname(expr.func)
        if qualified is not None:
            head, _, last = qualified.rpartition(".")
            if head == "torch":
                return last in _POINTWISE_NAMES
            if head == "torch.nn.functional":
                return last in _POINTWISE_FUNCTIONAL
            return False
        func = expr.func
        return (isinstance(func, cst.Attribute) and func.attr.value in _POINTWISE_NAMES
                and _is_pointwise(func.value, imports))
    return False


def _pointwise_body(function: cst.FunctionDef, imports: ImportMap) -> bool:
    """True when every statement is a docstring, a plain assignment or a return of pointwise math."""
    body = function.body
    body_lines: list[cst.CSTNode]
    if not isinstance(body, cst.IndentedBlock):
        body_lines = [body]
    else:
        body_lines = list(body.body)
    returned = False
    for index, line in enumerate(body_lines):
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return False
        for statement in line.body:
            if isinstance(statement, cst.Expr) and index == 0 and isinstance(statement.value, cst.SimpleString):
                continue
            if isinstance(statement, cst.Assign) and all(isinstance(t.target, cst.Name) for t in statement.targets):
                if not _is_pointwise(statement.value, imports):
                    return False
            elif isinstance(statement, cst.Return) and statement.value is not None:
                if not _is_pointwise(statement.value, imports):
                    return False
                returned = True
            else:
                return False
    return returned


def _decorator_callee(decorator: cst.Decorator) -> cst.BaseExpression:
    expr = decorator.decorator
    return expr.func if isinstance(expr, cst.Call) else expr

