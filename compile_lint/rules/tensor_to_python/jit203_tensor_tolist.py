"""JIT203 tensor-tolist: `.tolist()` on a tensor reads all its values into Python."""

from __future__ import annotations

import dataclasses
from typing import Optional

import libcst as cst

from compile_lint.analysis.syntax.walk import walk
from compile_lint.fixes.branches.conditions import operand_evidence, unsafe_operand
from compile_lint.fixes.plan import FixPlan
from compile_lint.fixes.setting_hazards import integer_evidence, list_hazard
from compile_lint.fixes.settings import CAPTURE_SCALARS, file_sets, setting_message, setting_outcome
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.tensor_data import (
    NOT_ARRAYS,
    method_call,
)


class TensorTolist(Rule):
    """`.tolist()` on a tensor reads all its values into Python.

    Why: on a floating-point tensor Dynamo cannot trace it at all ("Tensor.tolist()
    with non-integer tensor"): `fullgraph=True` fails, whatever the config. On an
    integer tensor the default `torch.compile` breaks the graph ("Data dependent
    operator"), `fullgraph=True` passes with unbacked symbols, and
    `capture_scalar_outputs = True` removes the break. Feeding the list to
    `torch.split` or `range` makes sizes depend on data.

    Instead: for integer values (split sizes, lengths) set
    `torch._dynamo.config.capture_scalar_outputs = True`, which compiles the read (measured
    on the examples, split sizes computed or passed in); otherwise stay in tensors
    (`t.unbind(0)`, `torch.stack`, vectorised ops), or pass Python ints from config or shapes.

    The fix vectorises a loop over a 2-D tensor's rows whose body is elementwise
    arithmetic collected into a list that only becomes a tensor again
    (`for x1, y1, x2, y2 in boxes.tolist(): areas.append((x2 - x1) * (y2 - y1))` ...
    `boxes.new_tensor(areas)`, or the same as a list comprehension): the columns come
    from `boxes.double().unbind(-1)`, so the arithmetic runs in float64 as Python's does
    and `.to(boxes.dtype)` rounds once, as `new_tensor` did: identical values (integers
    while they stay below 2**53). Unsafe: float64 is unsupported on some backends (MPS).
    Data-dependent split sizes, per-item Python bookkeeping and lists used otherwise get
    no fix: there is no tensor form with the same meaning.
    """

    code = "JIT203"
    name = "tensor-tolist"
    kind = "break"
    gb_type = "Tensor.tolist() with non-integer tensor"
    gb_id = "GB0109"
    gb_types = ("Data dependent operator",)  # the same pattern, reported differently
    fix_applicability = "unsafe"
    config_note = (
        "Integer tensors: capture_scalar_outputs = True removes the break. Float tensors: "
        "fails under every setting."
    )
    message = (
        "`.tolist()` reads tensor data into Python: fails on float tensors, breaks the graph "
        "on integer ones; for integer values set `torch._dynamo.config.capture_scalar_outputs = True`, "
        "else keep tensors (`t.unbind(0)`)"
    )
    steps = ("torch._dynamo.config.capture_scalar_outputs = True", "t.unbind(0)")
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
            lines=[6],
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
            lines=[6],
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
            fixed="""
            import torch
            from torch import nn

            class BoxAreas(nn.Module):
                def forward(self, boxes):
                    x1, y1, x2, y2 = boxes.double().unbind(-1)
                    areas = (x2 - x1) * (y2 - y1)
                    return areas.to(boxes.dtype)
            """,
            calls="[(torch.rand(5, 4),)]",
            entry="BoxAreas",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Centers(nn.Module):
                def forward(self, boxes):
                    cx = [(x1 + x2) / 2 - 0.5 for x1, _, x2, _ in boxes.tolist()]
                    return boxes.new_tensor(cx) * 3
            """,
            fixed="""
            import torch
            from torch import nn

            class Centers(nn.Module):
                def forward(self, boxes):
                    x1, _, x2, _ = boxes.double().unbind(-1)
                    cx = (x1 + x2) / 2 - 0.5
                    return cx.to(boxes.dtype) * 3
            """,
            calls="[(torch.rand(6, 4) * 100,)]",
            entry="Centers",
            note="a list comprehension over the rows; unused columns keep their `_`",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Groups(nn.Module):
                def forward(self, x: torch.Tensor, counts: torch.Tensor):
                    parts = torch.split(x, counts.long().tolist())
                    return torch.cat([part.mean(0, keepdim=True) for part in parts[:2]])

            model = torch.compile(Groups())
            """,
            calls="[(torch.randn(8, 4), torch.tensor([3, 5])), (torch.randn(8, 4), torch.tensor([2, 6]))]",
            fixed="""
            import torch
            from torch import nn

            class Groups(nn.Module):
                def forward(self, x: torch.Tensor, counts: torch.Tensor):
                    parts = torch.split(x, counts.long().tolist())
                    return torch.cat([part.mean(0, keepdim=True) for part in parts[:2]])

            torch._dynamo.config.capture_scalar_outputs = True
            model = torch.compile(Groups())
            """,
            entry="Groups",
            lines=[6],
            note="Integer split sizes: the fix sets capture_scalar_outputs right before the compile call.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class EraseBox(nn.Module):
                def forward(self, image: torch.Tensor, box: torch.Tensor):
                    left, top, width, height = box.long().tolist()
                    return image[:, :, top : top + height, left : left + width] * 2

            model = torch.compile(EraseBox())
            """,
            calls="[(torch.randn(2, 3, 8, 8), torch.tensor([1, 2, 3, 2]))]",
            entry="EraseBox",
            lines=[6],
            note=("No fix (kornia's random erasing): read with starts in two dims, the captured box makes "
                  "Dynamo fail (PendingUnbackedSymbolNotFound), so the message names no setting."),
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
            fix = _RowLoop(self.context, node, receiver).vectorised()
            if fix is not None:
                # `T.double().unbind(-1)` rests on `T` being a tensor in eager code too (an array has `.tolist()`)
                fix = None if unsafe_operand(self.context, receiver) else dataclasses.replace(
                    fix, rests_on=operand_evidence(self.context, receiver))
            if fix is not None:
                self.report(node, fix=fix)
                return
            self._report_capture(node, receiver)

    def _report_capture(self, node: cst.Call, receiver: cst.BaseExpression) -> None:
        """Report the read with `capture_scalar_outputs`'s fix where its numbers compile once captured
        and the tensor certainly holds integers; nothing where the file sets it and they would."""
        hazard = list_hazard(self.context, node)
        if hazard is None and not integer_evidence(self.context, receiver):
            if not file_sets(self.context, CAPTURE_SCALARS):
                self.report(node, f"{HEADLINE}; for integer values set `{CAPTURE_SCALARS.line}` before "
                                  "`torch.compile`, else keep tensors (`t.unbind(0)`)")
            return
        if hazard is None and file_sets(self.context, CAPTURE_SCALARS):
            return
        outcome = setting_outcome(self.context, CAPTURE_SCALARS, hazard, "`.tolist()`")
        self.report(node, setting_message(HEADLINE, outcome), outcome.fix)


# What breaks, the first sentence of the messages.
HEADLINE = "`.tolist()` reads tensor data into Python: fails on float tensors, breaks the graph on integer ones"


class _RowLoop:
    """A loop over `T.tolist()` rows whose body is elementwise arithmetic, collected in a list
    that only becomes a tensor again through `T.new_tensor(list)`."""

    def __init__(self, context, call: cst.Call, receiver: cst.BaseExpression) -> None:
        self.context = context
        self.call = call
        self.receiver = receiver

    def vectorised(self) -> Optional[FixPlan]:
        """The fix: columns by `unbind`, the arithmetic on them, the list's tensor by `.to`."""
        function = self.context.function
        if function is None or not isinstance(self.receiver, cst.Name):
            return None
        shape = self._loop_shape()
        if shape is None:
            return None
        statements, building, target, element = shape
        columns = {name.value for name in _columns(target)} - {"_"}
        if not columns or not _elementwise(element, columns) or not _mentions(element, columns):
            return None
        consumer = self._only_consumer(function, building)
        if consumer is None:
            return None
        name, tensor = building[0].value, self.receiver.value
        code = cst.Module([]).code_for_node
        head = cst.parse_statement(f"{code(target.with_changes(lpar=[], rpar=[]))} = {tensor}.double().unbind(-1)\n")
        body = cst.parse_statement(f"{name} = {code(element.with_changes(lpar=[], rpar=[]))}\n")
        cast = cst.parse_expression(f"{name}.to({tensor}.dtype)").with_changes(lpar=consumer.lpar, rpar=consumer.rpar)
        first = statements[0]
        head = head.with_changes(leading_lines=first.leading_lines)
        replacements: list[tuple[cst.CSTNode, object]]
        if len(statements) == 1:
            replacements = [(first, cst.FlattenSentinel([head, body]))]
        else:
            replacements = [(first, head),
                            (statements[1], body.with_changes(leading_lines=statements[1].leading_lines))]
        replacements.append((consumer, cast))
        return FixPlan(replacements, "Vectorise the row loop: columns by `unbind`, arithmetic on tensors", "unsafe")

    def _loop_shape(self):
        """(statements to replace, the list's own Name nodes, row target, element), or None."""
        parent = self.context.parent(self.call)
        if isinstance(parent, cst.For) and parent.iter is self.call:
            return self._append_loop(parent)
        if isinstance(parent, cst.CompFor) and parent.iter is self.call:
            comprehension = self.context.parent(parent)
            small = self.context.parent(comprehension)
            line = self.context.parent(small)
            if (isinstance(comprehension, cst.ListComp) and comprehension.for_in is parent and not parent.ifs
                    and parent.inner_for_in is None and isinstance(small, cst.Assign) and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
                return [line], [small.targets[0].target], parent.target, comprehension.elt
        return None

    def _append_loop(self, loop: cst.For):
        """`NAME = []` then `for ROW in T.tolist(): NAME.append(ELEMENT)`."""
        block = self.context.parent(loop)
        if loop.orelse is not None or not isinstance(block, cst.IndentedBlock):
            return None
        body = loop.body
        if not (isinstance(body, cst.IndentedBlock) and len(body.body) == 1
                and isinstance(body.body[0], cst.SimpleStatementLine) and len(body.body[0].body) == 1):
            return None
        append = body.body[0].body[0]
        if not (isinstance(append, cst.Expr) and isinstance(append.value, cst.Call)):
            return None
        call = append.value
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "append"
                and isinstance(call.func.value, cst.Name) and len(call.args) == 1 and call.args[0].keyword is None):
            return None
        name = call.func.value
        statements = list(block.body)
        index = statements.index(loop)
        previous = statements[index - 1] if index else None
        if not (isinstance(previous, cst.SimpleStatementLine) and len(previous.body) == 1
                and isinstance(previous.body[0], cst.Assign) and len(previous.body[0].targets) == 1):
            return None
        init = previous.body[0]
        target = init.targets[0].target
        if not (isinstance(target, cst.Name) and target.value == name.value
                and isinstance(init.value, cst.List) and not init.value.elements):
            return None
        return [previous, loop], [target, name], loop.target, call.args[0].value

    def _only_consumer(self, function: cst.FunctionDef, building: list[cst.Name]) -> Optional[cst.Call]:
        """`T.new_tensor(NAME)`, when it is the list's only use besides building it, and `T`
        is bound at most once in the function."""
        name, tensor = building[0].value, self.receiver.value  # type: ignore[attr-defined]
        reads: list[cst.Name] = []

        def enter(node: cst.CSTNode) -> bool:
            if isinstance(node, cst.Name) and node.value == name and all(node is not b for b in building):
                reads.append(node)
            return True

        walk(function.body, enter)
        if len(reads) != 1 or len(self.context.local_values(tensor, function)) > 1:
            return None
        arg = self.context.parent(reads[0])
        call = self.context.parent(arg) if isinstance(arg, cst.Arg) else None
        if (isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0] is arg and arg.keyword is None
                and isinstance(call.func, cst.Attribute) and call.func.attr.value == "new_tensor"
                and isinstance(call.func.value, cst.Name) and call.func.value.value == tensor):
            return call
        return None


def _columns(target: cst.BaseExpression) -> list[cst.Name]:
    """The names a row unpacks into (`x1, y1, x2, y2`), or [] for any other target."""
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) < 2:
        return []
    names = [element.value for element in target.elements]
    if not all(isinstance(n, cst.Name) for n in names) or any(
            isinstance(element, cst.StarredElement) for element in target.elements):
        return []
    return names  # type: ignore[return-value]


def _mentions(expr: cst.BaseExpression, names: set[str]) -> bool:
    found = False

    def enter(node: cst.CSTNode) -> bool:
        nonlocal found
        found = found or (isinstance(node, cst.Name) and node.value in names)
        return True

    walk(expr, enter)
    return found


def _elementwise(expr: cst.BaseExpression, columns: set[str]) -> bool:
    """True for `+ - * /` and unary minus over the row's columns and numeric literals: the
    same on float64 tensors as on Python numbers."""
    if isinstance(expr, cst.Name):
        return expr.value in columns
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _elementwise(expr.expression, columns)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply,
                                                                          cst.Divide)):
        return _elementwise(expr.left, columns) and _elementwise(expr.right, columns)
    return False

