"""Keeping a 0-d tensor instead of reading it into Python: where it is safe, and the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from compile_lint.analysis.kinds.certainty import BY_DEFAULT, EAGER_TENSOR, tensor_evidence
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.branches.conditions import operand_evidence, unsafe_operand
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

SCALAR_CONFIG_NOTE = (
    "With torch._dynamo.config.capture_scalar_outputs = True the value is captured as an "
    "unbacked symbol and the default compile no longer breaks (fullgraph=True passes "
    "either way). Python control flow on the value still fails, and on torch 2.13 so do an "
    "index after the first (`x[:, t.item()]`: IndexError) and a split size; a view/reshape "
    "size read from a 0-d input recompiles per value (benchmarks/results/scalar_size_capture.txt)."
)


ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)


AUGMENTED_ARITHMETIC = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)


def tensor_arithmetic_operand(context: FileContext, node: cst.CSTNode) -> bool:
    """True when `node` is an operand of `+ - * / // % **` whose other operand is a tensor.

    `t += node` (and `-= *= /=`) on a tensor `t` counts too: in-place ops keep `t`'s dtype.
    The other operand must not be a random draw, a float in eager code, which the kept
    tensor would turn into a tensor.
    """
    parent = context.parent(node)
    if isinstance(parent, cst.AugAssign):
        return (parent.value is node and isinstance(parent.operator, AUGMENTED_ARITHMETIC)
                and tensor_evidence(context, parent.target) in _PARTNERS)
    if not isinstance(parent, cst.BinaryOperation) or not isinstance(parent.operator, ARITHMETIC):
        return False
    other = parent.right if parent.left is node else parent.left
    return tensor_evidence(context, other) in _PARTNERS


# What the other operand of the arithmetic may be: a tensor, or an untyped parameter taken
# for one (no torch call is written on it: it meets a 0-d tensor instead of a number), never
# a Python random draw (a float in eager code, which a kept tensor would turn into a tensor).
_PARTNERS = frozenset({EAGER_TENSOR, BY_DEFAULT})


class NameOccurrences(cst.CSTVisitor):
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


def only_feeds_tensor_arithmetic(context: FileContext, conversion: cst.Call) -> bool:
    """True when every use of the Python number `conversion` produces is tensor arithmetic."""
    return every_use(context, conversion, tensor_arithmetic_operand)


def every_use(context: FileContext, conversion: cst.Call, accepts: Callable[[FileContext, cst.CSTNode], bool]) -> bool:
    """True when `accepts(context, use)` holds for every use of the number `conversion` produces.

    Either the call itself is such a use, or it is the whole value of `NAME = ...`,
    assigned once in the function, and every read of NAME is such a use.
    """
    if accepts(context, conversion):
        return True
    reads = number_reads(context, conversion)
    return bool(reads) and all(accepts(context, name) for name in reads)


def number_reads(context: FileContext, conversion: cst.Call) -> list[cst.Name]:
    """The reads of NAME when `conversion` is the whole value of `NAME = ...`, assigned once in the function.

    Empty when the number is not bound to such a name (or the name is a parameter, or shadowed).
    """
    statement = context.parent(conversion)
    function = context.function
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1 or function is None:
        return []
    target = statement.targets[0].target
    if not isinstance(target, cst.Name):
        return []
    if len(context.local_values(target.value)) != 1:
        return []
    if context.facts.param_kind(function, target.value) is not None:
        return []
    occurrences = NameOccurrences(target.value)
    visit(function.body, occurrences)
    if occurrences.shadowed:
        return []
    return [name for name in occurrences.found if name is not target]


KEEP_TENSOR_MESSAGE = "Keep the 0-d tensor (detached) instead of a Python number"


def keep_tensor_fix(context: FileContext, conversion: cst.Call, replacement: cst.BaseExpression,
                    operand: cst.BaseExpression) -> Optional[FixPlan]:
    """Replace a tensor-to-number conversion by `replacement` when only tensor arithmetic uses it.

    Unsafe, as measured by benchmarks/keep_tensor_fix_dtypes.py (CPU, eager and Inductor):
    `x OP t.detach()` equals `x OP t.item()` in dtype and value whenever `x` is a floating
    tensor or `t` is float32/int64, but an integer or bool `x` with a float16, bfloat16 or
    float64 `t` gives `t`'s dtype instead of float32; `t.detach().float()` equals
    `float(t)` except that a float64 `t` is rounded to float32. Against another 0-d
    tensor, a 0-d tensor promotes where a Python number would not.

    `operand`, the tensor converted, must be one in eager code too (`float(random.uniform(...))`
    is a float there, which has no `.detach()`).
    """
    if not only_feeds_tensor_arithmetic(context, conversion) or unsafe_operand(context, operand):
        return None
    replacement = replacement.with_changes(lpar=conversion.lpar, rpar=conversion.rpar)
    return FixPlan([(conversion, replacement)], KEEP_TENSOR_MESSAGE, "unsafe", (), operand_evidence(context, operand))


RETURNED_NUMBER = "the number is returned (a tensor would change what the caller gets)"
