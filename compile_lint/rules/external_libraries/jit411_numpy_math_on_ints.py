"""JIT411 numpy-math-on-ints: `np.sum(counts)`, `np.lcm(a, b)` give numpy integers, which break as sizes or in tests."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.guards import spell
from compile_lint.fixes.keep_tensor import number_reads
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid


class NumpyMathOnInts(Rule):
    """`np.sum`, `np.max`, `np.lcm`... of Python ints give a numpy integer, which breaks as a size or in a test.

    Why: Dynamo traces numpy through torch, so a numpy integer is a 0-d tensor under
    compile. Used as a size (`np.zeros((n, np.sum(counts)))`, `x.reshape(-1, n)`,
    `torch.zeros(n)`, `int(n)`) it breaks the default compile ("Data dependent operator");
    in a Python test (`if n > 2`, `length % n != 0`) or `range(n)` it fails even with
    `fullgraph=True`; a slice bound (`x[:n]`) breaks the default compile too (measured on
    torch 2.13). In tensor arithmetic (`x * n`) it compiles, and is not reported.
    transformers' BigBird (`np.sum` of its plan's block counts) and Reformer (`np.lcm` of
    two chunk lengths) break on exactly this.

    Instead: Python's own keep a Python int, which Dynamo treats as a constant:
    `sum(counts)`, `max(counts)`, `min(counts)`, `math.prod(counts)`, `math.lcm(a, b)`,
    `math.gcd(a, b)` (the fix, where the values are certainly Python ints: literals, sizes,
    or a list or tuple of them; a numpy shape's product is JIT408's). Unsafe in type only:
    a Python int instead of a numpy integer (no int64 wraparound, `type(n)` differs).
    """

    code = "JIT411"
    name = "numpy-math-on-ints"
    kind = "break"
    gb_type = "Data dependent operator"
    gb_id = "GB0033"
    gb_types = ("Data-dependent branching", "Failed to trace builtin operator")
    fix_applicability = "unsafe"
    message = ("numpy math on Python ints gives a numpy integer, a tensor under compile: as a size or in a test it "
               "breaks the graph; use Python's (`math.lcm(a, b)` for `np.lcm(a, b)`, `sum(xs)` for `np.sum(xs)`)")
    steps = ("math.lcm(a, b)", "sum(xs)")
    invalid = [
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class RandomBlocks(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.plan = [2, 3, 1]

                def forward(self, x):
                    blocks = np.zeros((x.shape[0], np.sum(self.plan[:2])), dtype=np.float32)
                    return x + torch.from_numpy(blocks).sum()
            """,
            fixed="""
            import numpy as np
            import torch
            from torch import nn

            class RandomBlocks(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.plan = [2, 3, 1]

                def forward(self, x):
                    blocks = np.zeros((x.shape[0], sum(self.plan[:2])), dtype=np.float32)
                    return x + torch.from_numpy(blocks).sum()
            """,
            entry="RandomBlocks",
            lines=[11],
            note="transformers' BigBird: np.sum of the plan's block counts sizes an array",
        ),
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            def chunk_length(lsh: int, local: int):
                return np.lcm(lsh, local)

            class Chunked(nn.Module):
                def forward(self, x):
                    n = chunk_length(4, 6)
                    if x.shape[-1] % n != 0:
                        x = torch.nn.functional.pad(x, (0, n - x.shape[-1] % n))
                    return x * 2
            """,
            fixed="""
            import numpy as np
            import torch
            from torch import nn
            import math

            def chunk_length(lsh: int, local: int):
                return math.lcm(lsh, local)

            class Chunked(nn.Module):
                def forward(self, x):
                    n = chunk_length(4, 6)
                    if x.shape[-1] % n != 0:
                        x = torch.nn.functional.pad(x, (0, n - x.shape[-1] % n))
                    return x * 2
            """,
            calls="[(torch.randn(2, 10),)]",
            entry="Chunked",
            lines=[6],
            note="transformers' Reformer: the least common multiple of two chunk lengths, tested against a length",
        ),
    ]
    valid = [
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Scaled(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.plan = [2, 3, 1]

                def forward(self, x):
                    return x * np.sum(self.plan) + np.max(self.plan) * x.sum()
            """,
            entry="Scaled",
            note="tensor arithmetic compiles with a numpy integer",
        ),
        Valid(
            """
            import math

            import torch
            from torch import nn

            class Chunked(nn.Module):
                def forward(self, x):
                    n = math.lcm(4, 6)
                    if x.shape[-1] % n != 0:
                        x = torch.nn.functional.pad(x, (0, n - x.shape[-1] % n))
                    return x[:, : sum([2, 3])] * 2
            """,
            calls="[(torch.randn(2, 10),)]",
            entry="Chunked",
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x):
                    total = np.sum(x.numpy(), axis=-1)
                    return x * torch.from_numpy(total)[:, None]
            """,
            entry="Gate",
            note="numpy on an array of tensor data is not a Python int's math (JIT202 and friends judge reads)",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.qualname(node.func) or ""
        python = _PYTHON_TWINS.get(qualified)
        if python is None or any(arg.keyword is not None or arg.star for arg in node.args):
            return
        arity = 2 if python.startswith("math.") and python != "math.prod" else 1
        if len(node.args) != arity:
            return
        certain = all(self._ints(arg.value, many=arity == 1) for arg in node.args)
        if not certain and not (arity == 2 and all(self._taken_for_int(arg.value) for arg in node.args)):
            return
        if qualified == "numpy.prod" and self.context.kind(node.args[0].value) is Kind.SHAPE:
            return  # JIT408's
        if not self._python_number(node):
            return
        name, imports = spell(self.context, python) if "." in python else (python, ())
        assumed = "" if certain else "; assumes its arguments are Python ints (math's raises on anything else)"
        plan = FixPlan([(node, node.with_changes(func=cst.parse_expression(name)))], f"Use {name}(...){assumed}",
                       "unsafe", imports)
        self.report(node, fix=plan)

    def _ints(self, expr: cst.BaseExpression, many: bool) -> bool:
        """Certainly a Python int, or with `many` a list or tuple of them (a literal, `self.x` bound to one,
        a slice of one, a shape)."""
        if many:
            if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
                return self._ints(expr.value, many=True)
            if isinstance(expr, (cst.List, cst.Tuple)):
                return bool(expr.elements) and all(
                    not isinstance(element, cst.StarredElement) and self._ints(element.value, many=False)
                    for element in expr.elements)
            values = self.context.bound_values(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else []
            return (self.context.kind(expr) is Kind.SHAPE
                    or bool(values) and all(self._ints(value, many=True) for value in values))
        if isinstance(expr, cst.Integer):
            return True
        return self.context.kind(expr) is Kind.SHAPE or self._int_parameter(expr)

    def _taken_for_int(self, expr: cst.BaseExpression) -> bool:
        """An int, or a value nothing says is not one: a config attribute (`config.chunk_length`). `math.lcm`
        raises on anything else, where `np.lcm` would have gone elementwise: the fix says it assumes ints."""
        if self._ints(expr, many=False):
            return True
        return (isinstance(expr, cst.Attribute) and self.context.kind(expr) is Kind.UNKNOWN
                and not self.context.kind(expr.value).tensorish)

    def _int_parameter(self, expr: cst.BaseExpression) -> bool:
        """A parameter annotated `int`."""
        function = self.context.function
        if not isinstance(expr, cst.Name) or function is None:
            return False
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == expr.value and param.annotation is not None:
                annotation = param.annotation.annotation
                return isinstance(annotation, cst.Name) and annotation.value == "int"
        return False

    def _python_number(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """True when the value is used as a Python number: a size, a slice bound, a test, `range`, returned to a
        caller. Tensor arithmetic compiles with a numpy integer (measured): not that alone."""
        if depth > 4:
            return True
        parent = self.context.parent(node)
        if isinstance(parent, cst.BinaryOperation):
            other = parent.right if parent.left is node else parent.left
            if self.context.kind(other).tensorish:
                return False
            return self._python_number(parent, depth + 1)  # a numpy integer still
        if isinstance(parent, cst.Assign) and isinstance(node, cst.Call):
            reads = number_reads(self.context, node)
            return not reads or any(self._python_number(read, depth + 1) for read in reads)
        return not isinstance(parent, (cst.Expr, cst.Arg)) or _breaking_argument(self, parent)


def _breaking_argument(rule: NumpyMathOnInts, argument: cst.CSTNode) -> bool:
    """An argument breaks unless it is one of a tensor's arithmetic (`torch.mul(x, n)`) or an expression statement."""
    if isinstance(argument, cst.Expr):
        return False
    call = rule.context.parent(argument)
    if not isinstance(call, cst.Call):
        return True
    qualified = rule.context.qualname(call.func) or ""
    return qualified not in _TENSOR_ARITHMETIC


_PYTHON_TWINS = {
    "numpy.sum": "sum", "numpy.max": "max", "numpy.amax": "max", "numpy.min": "min", "numpy.amin": "min",
    "numpy.prod": "math.prod", "numpy.lcm": "math.lcm", "numpy.gcd": "math.gcd",
}
_TENSOR_ARITHMETIC = frozenset({"torch.mul", "torch.add", "torch.sub", "torch.div"})
