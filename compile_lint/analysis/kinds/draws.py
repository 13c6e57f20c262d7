"""Python `random` draws Dynamo traces as 0-d tensors, and the Python arithmetic on them it cannot trace.

`random.uniform/randint/randrange` are traced (torch 2.13): each draw becomes a 0-d tensor
input of the graph, so it is a tensor here (`calls.TRACED_RANDOM_DRAWS`). Arithmetic between
a draw and a tensor compiles; between a draw and a Python number, a size or another draw
(`random.randint(0, 3) + 1`, `h - draw`, `-draw`, `k += 1`) Dynamo has no operator for it and
fails (GB0213, measured: benchmarks/results/issue39_calibration.txt). Such a value never
exists in a compiled run, so it has no kind (`Kind.UNKNOWN`): the rules about what a tensor
is used for stay silent on it, and JIT410 reports the arithmetic itself.
"""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.calls import TRACED_RANDOM_DRAWS
from compile_lint.analysis.kinds.lattice import Kind
from compile_lint.analysis.kinds.parts import FactsParts

# How many `a = b` steps a local is followed back to its draw.
_DEPTH = 6


class DrawKinds(FactsParts):
    """Traced Python random draws and arithmetic on them (a part of `Facts`)."""

    def python_draw(self, expr: cst.BaseExpression, function: cst.FunctionDef, depth: int = 0) -> bool:
        """True when `expr` is a traced random draw: the call, or a local every binding reaching it makes one."""
        if isinstance(expr, cst.Call):
            return self.imports.qualname(expr.func) in TRACED_RANDOM_DRAWS
        if not isinstance(expr, cst.Name) or depth > _DEPTH:
            return False
        reaching = self.reaching(function).reads.get(expr)
        if reaching is not None:
            values = [binding.value for binding in reaching]
        else:  # a read inside a lambda or a comprehension: every binding of the local
            values = list(self.assignments(function).get(expr.value, ()))
        return bool(values) and all(
            isinstance(value, cst.BaseExpression) and self.python_draw(value, function, depth + 1) for value in values)

    def draw_arithmetic(self, node: cst.CSTNode, function: cst.FunctionDef) -> bool:
        """True when `node` is Python arithmetic between a traced draw and a Python number or another draw.

        `node` is a binary operation, a unary `-`, `+` or `~`, or an augmented assignment.
        """
        if isinstance(node, cst.UnaryOperation):
            # `not draw` breaks too, as a truth test of a tensor: JIT206's
            return not isinstance(node.operator, cst.Not) and self.python_draw(node.expression, function)
        if isinstance(node, cst.BinaryOperation):
            return self.draw_operands(node.left, node.right, function)
        if isinstance(node, cst.AugAssign):
            return self.draw_operands(node.target, node.value, function)
        return False

    def draw_operands(self, left: cst.BaseExpression, right: cst.BaseExpression, function: cst.FunctionDef) -> bool:
        """True when one operand is a traced draw and the other a Python number, a size or another draw."""
        if self.python_draw(left, function):
            return self.python_draw(right, function) or self.kind(right, function) in (Kind.PY, Kind.SHAPE)
        return self.python_draw(right, function) and self.kind(left, function) in (Kind.PY, Kind.SHAPE)
