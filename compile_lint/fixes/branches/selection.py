"""`torch.where` or `torch.cond` for the two values of a branch, or why neither keeps its meaning.

`Arms` checks the values a rewrite would compute on both sides of a condition (kinds,
what they rest on in eager code, shapes, dtypes); `select` writes the selection, taking
`torch.cond` where an untaken arm would fail or change state, where the setting or the
arms' heavy work asks for it, or where the arms differ in shape where that is exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Union

import libcst as cst

from compile_lint.analysis.kinds.certainty import EAGER_TENSOR, definite_kind, tensor_evidence
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.names import names_read
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.branches.choice import operation_kind, prefers_cond
from compile_lint.fixes.branches.conditions import TensorCondition
from compile_lint.fixes.branches.differing_shapes import NOTE as DIFFERING_SHAPES_NOTE
from compile_lint.fixes.branches.differing_shapes import ResultSite, any_differ, differing_shapes_problem
from compile_lint.fixes.branches.hazards import ShapeModel, dtype_changes, short_code, untaken_arm_hazard
from compile_lint.fixes.branches.torch_calls import COMMA, TorchCalls

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


class Arms:
    """Checks on the values a rewrite would compute on both sides of a condition."""

    def __init__(self, context: FileContext, condition: TensorCondition) -> None:
        self.context = context
        self.condition = condition
        self.test = condition.tensor  # what the rewrite spells as the condition
        self.shapes = ShapeModel(context)

    def pair_problem(self, if_true: cst.BaseExpression, if_false: cst.BaseExpression) -> Optional[str]:
        """Why `torch.where(cond, if_true, if_false)` could differ from the branch, or None."""
        kinds = [self._kind(if_true), self._kind(if_false)]
        if Kind.TENSOR not in kinds:
            return "neither value is certainly a tensor (torch.where would turn Python values into a tensor)"
        for value, kind in zip((if_true, if_false), kinds):
            if isinstance(value, cst.Name) and value.value == "None":
                return "one branch gives None"
            if kind not in (Kind.TENSOR, Kind.PY, Kind.SHAPE):
                return f"cannot tell that `{short_code(value)}` is a tensor or a number"
            if kind is Kind.TENSOR and tensor_evidence(self.context, value) != EAGER_TENSOR:
                return (f"`{short_code(value)}` is a {tensor_evidence(self.context, value)}, no evidence it is one "
                        "in eager code (torch.where would fail on, or change, what eager code passes)")
        if self.shapes.relation(if_true, if_false) == "differs":
            return (f"`{short_code(if_true)}` and `{short_code(if_false)}` may differ in shape (a reduction, reshape "
                    "or indexing on one side): torch.where would broadcast them")
        if dtype_changes(if_true) != dtype_changes(if_false):
            return (f"`{short_code(if_true)}` and `{short_code(if_false)}` may differ in dtype: "
                    "torch.where would promote")
        return None

    def pair_problem_of(self, pairs: Sequence[tuple[cst.BaseExpression, cst.BaseExpression]]) -> Optional[str]:
        """The first `pair_problem` of `pairs`, or None."""
        return next((problem for problem in (self.pair_problem(a, b) for a, b in pairs) if problem), None)

    def _kind(self, value: cst.BaseExpression) -> Kind:
        return definite_kind(self.context, value)

    def cond_problem(self, pairs: Sequence[tuple[cst.BaseExpression, cst.BaseExpression]],
                     site: Optional[ResultSite] = None) -> Optional[str]:
        """Why `torch.cond` cannot take these branch values, or None.

        Arms that differ in shape are taken only where `site` (where the result goes) is
        known and `differing_shapes` finds the rewrite exact there.
        """
        for if_true, if_false in pairs:
            for value in (if_true, if_false):
                if self._kind(value) is not Kind.TENSOR:
                    return f"`{short_code(value)}` is not certainly a tensor (torch.cond branches return tensors)"
                if tensor_evidence(self.context, value) != EAGER_TENSOR:
                    return (f"`{short_code(value)}` is a {tensor_evidence(self.context, value)}, no evidence it is one "
                            "in eager code (torch.cond branches return tensors)")
            if self.shapes.relation(if_true, if_false) == "differs":
                if site is None:
                    return f"`{short_code(if_true)}` and `{short_code(if_false)}` may differ in shape"
                problem = differing_shapes_problem(self.context, self.shapes, if_true, if_false, site)
                if problem is not None:
                    return problem
        return None


def _operands(context: FileContext, values: Sequence[cst.BaseExpression]) -> list[str]:
    """Tensor names the branch values read, in first-read order (torch.cond's operands)."""
    found: list[str] = []
    for value in values:
        for node in iter_nodes(value):
            if isinstance(node, cst.Name) and node.value not in found and node.value != "self":
                if context.kind(node) in (Kind.TENSOR, Kind.MAYBE_TENSOR) and node.value in names_read(value):
                    found.append(node.value)
    return found


def select(context: FileContext, builder: TorchCalls, arms: Arms, if_true: cst.BaseExpression,
           if_false: cst.BaseExpression, prefer: str,
           site: Optional[ResultSite] = None) -> Union[cst.BaseExpression, str]:
    """`torch.where` (or `torch.cond`) choosing between two values, or why neither is valid.

    `site` says where the result goes; with it, arms that differ in shape may get torch.cond.
    """
    condition = arms.test
    if isinstance(if_true, cst.Tuple) and isinstance(if_false, cst.Tuple):
        if len(if_true.elements) != len(if_false.elements) or any(
                isinstance(e, cst.StarredElement) for e in (*if_true.elements, *if_false.elements)):
            return "the branches return tuples of different lengths"
        pairs = [(a.value, b.value) for a, b in zip(if_true.elements, if_false.elements)]
    else:
        pairs = [(if_true, if_false)]
    hazard = untaken_arm_hazard(context, [value for pair in pairs for value in pair], arms.condition.tensor)
    values = [value for pair in pairs for value in pair]
    use_cond = hazard is not None or prefer == "cond" or (
        prefer == "auto" and any(does_heavy_work(context, v) for v in values))
    shapes_differ = site is not None and any_differ(arms.shapes, pairs)
    if use_cond or shapes_differ:
        problem = arms.cond_problem(pairs, site)
        if problem is None:
            operands = _operands(context, [value for pair in pairs for value in pair])
            if not operands:
                problem = "the branches read no tensor to pass to torch.cond"
            else:
                if shapes_differ:
                    builder.notes.append(f"the arms differ in shape: {DIFFERING_SHAPES_NOTE}")
                return builder.cond(condition, if_true, if_false, operands)
        if hazard is not None or shapes_differ:
            return f"{hazard or arms.pair_problem_of(pairs)}; torch.cond does not apply: {problem}"
    problem = arms.pair_problem_of(pairs)
    if problem is not None:
        return problem
    if len(pairs) == 1:
        return builder.where(condition, if_true, if_false)
    return cst.Tuple(elements=[
        cst.Element(builder.where(condition, a, b), comma=COMMA if i < len(pairs) - 1 else cst.MaybeSentinel.DEFAULT)
        for i, (a, b) in enumerate(pairs)])


def does_heavy_work(context: FileContext, value: cst.BaseExpression) -> bool:
    """True when "auto" gives an arm computing `value` torch.cond: what it runs (submodule
    calls, matmuls, convolutions...) costs more than cond's overhead (the cost model in choice.py)."""
    kinds = []
    for node in iter_nodes(value):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
            kinds.append(operation_kind(matmul_operator=True))
        elif isinstance(node, cst.Call):
            qualified = context.qualname(node.func) or ""
            method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
            kinds.append(operation_kind(qualified, method, not qualified and context.kind(node.func) is Kind.MODULE))
    return prefers_cond(kinds)
