"""Torch calls spelled in the file's terms, and the code a rewrite puts in place of a branch.

`TorchCalls` spells `torch.where` / `torch.cond` (and any torch name) through the file's
imports, remembers the imports the new code needs and what each selection rests on, and
makes the `BranchFix`; `torch.cond`'s branch outputs are new tensors with one layout.
`assignment_line` and `replacement_for` lay the new statements out where the `if` was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Union

import libcst as cst

from compile_lint.fixes.branches.blocks import VIEW_METHODS, BranchFix, parenthesised
from compile_lint.fixes.branches.conditions import operand_evidence
from compile_lint.fixes.guards import GUARD_PREDICATE, spell
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


class TorchCalls:
    """Spells torch calls in the file's terms and remembers the imports they need."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.imports: list[str] = []
        self.operands: list[tuple[str, str]] = []  # what each torch.where / torch.cond rests on
        self.notes: list[str] = []  # what the fix's message must add (a result of run-time size)

    def name(self, qualified: str) -> cst.BaseExpression:
        """`qualified` spelled through the file's imports (`T.where`), noting a missing import."""
        spelled, imports = spell(self.context, qualified)
        self.imports.extend(imports)
        return cst.parse_expression(spelled)

    def call(self, qualified: str, *args: cst.BaseExpression) -> cst.Call:
        """`qualified(args...)`."""
        arguments = [cst.Arg(_strip(arg), comma=COMMA) for arg in args]
        if arguments:
            arguments[-1] = arguments[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return cst.Call(func=self.name(qualified), args=arguments)

    def where(self, condition: cst.BaseExpression, if_true: cst.BaseExpression,
              if_false: cst.BaseExpression) -> cst.Call:
        """`torch.where(condition, if_true, if_false)`."""
        self._rests_on(condition, if_true, if_false)
        return self.call("torch.where", condition, if_true, if_false)

    def cond(self, condition: cst.BaseExpression, if_true: cst.BaseExpression, if_false: cst.BaseExpression,
             operands: Sequence[str]) -> cst.Call:
        """`torch.cond(condition, lambda ops: if_true, lambda ops: if_false, (ops,))`."""
        self._rests_on(condition, if_true, if_false)
        params = cst.Parameters(params=[
            cst.Param(cst.Name(name), comma=COMMA if i < len(operands) - 1 else cst.MaybeSentinel.DEFAULT)
            for i, name in enumerate(operands)])
        elements = [cst.Element(cst.Name(name), comma=COMMA if i < len(operands) - 1 else cst.MaybeSentinel.DEFAULT)
                    for i, name in enumerate(operands)]
        if len(elements) == 1:
            elements = [cst.Element(cst.Name(operands[0]), comma=cst.Comma())]
        return self.call(
            "torch.cond", condition,
            cst.Lambda(params=params, body=_bracketed(self._output(if_true, if_false))),
            cst.Lambda(params=params, body=_bracketed(self._output(if_false, if_true))),
            cst.Tuple(elements=elements),
        )

    def _rests_on(self, *values: cst.BaseExpression) -> None:
        for value in values:
            parts = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
            self.operands.extend(operand_evidence(self.context, *parts))

    def _output(self, value: cst.BaseExpression, other: cst.BaseExpression) -> cst.BaseExpression:
        """A torch.cond branch output: a new tensor, with the memory layout the other branch has.

        torch.cond rejects a branch that returns an operand (or a view of one) and two
        branches whose outputs differ in strides (measured: cholesky is column-major).
        """
        if isinstance(value, cst.Tuple) and isinstance(other, cst.Tuple):
            return value.with_changes(elements=[
                e.with_changes(value=self._output(e.value, o.value)) for e, o in zip(value.elements, other.elements)])
        arithmetic = (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)
        if isinstance(value, arithmetic) and isinstance(other, arithmetic):
            return value  # elementwise results of the same inputs share their layout
        if _fresh(value, (), self.context) is value:
            return cst.Call(func=cst.Attribute(parenthesised(value, call=True), cst.Name("contiguous")))
        layout = cst.Arg(self.name("torch.contiguous_format"), keyword=cst.Name("memory_format"),
                         equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                               whitespace_after=cst.SimpleWhitespace("")))
        return cst.Call(func=cst.Attribute(parenthesised(value, call=True), cst.Name("clone")), args=[layout])

    def plan(self, replacements: list, message: str, applicability: str = "unsafe") -> BranchFix:
        """The fix: node replacements plus the imports the new code needs."""
        message = "; ".join([message, *dict.fromkeys(self.notes)])
        return BranchFix(FixPlan(replacements, message, applicability, tuple(dict.fromkeys(self.imports)),
                                  tuple(dict.fromkeys(self.operands))))


def compiling_predicate(builder: TorchCalls) -> cst.BaseExpression:
    """`torch.compiler.is_compiling()`, or the file's own `is_torchdynamo_compiling()`."""
    for local, qualified in builder.context.imports.names.items():
        if qualified.endswith("is_torchdynamo_compiling"):
            return cst.Call(func=cst.Name(local))
    return cst.Call(func=builder.name(GUARD_PREDICATE))


# Tensors `torch.cond` branches return must not alias an operand. New tensors: arithmetic,
# torch functions other than views, tensor methods other than views and no-op conversions.
_FRESH_RESULTS = (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)
_MAY_RETURN_INPUT = VIEW_METHODS | {"half", "double", "bool", "long", "int", "type", "cpu", "cuda",
                                    "requires_grad_", "__getitem__"}


def _fresh(value: cst.BaseExpression, operands: Sequence[str],
           context: Optional[FileContext] = None) -> cst.BaseExpression:
    """`value`, cloned unless it is certainly a new tensor (torch.cond rejects aliasing outputs)."""
    if isinstance(value, cst.Tuple):
        return value.with_changes(elements=[e.with_changes(value=_fresh(e.value, operands, context))
                                            for e in value.elements])
    if isinstance(value, _FRESH_RESULTS):
        return value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        name = value.func.attr.value
        receiver = value.func.value
        is_module = isinstance(receiver, cst.Name) and receiver.value == "self"
        if not is_module and name not in _MAY_RETURN_INPUT and (
                context is None or context.qualname(value.func) is None or
                (context.qualname(value.func) or "").startswith("torch.")):
            return value
    return cst.Call(func=cst.Attribute(parenthesised(value, call=True), cst.Name("clone")))


def _bracketed(body: cst.BaseExpression) -> cst.BaseExpression:
    """A lambda body: a tuple needs its parentheses (`lambda x: a, b` is a lambda and `b`)."""
    if isinstance(body, cst.Tuple) and not body.lpar:
        return body.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return body


def _strip(expr: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(expr, "lpar", None) and not isinstance(expr, (cst.Tuple, cst.GeneratorExp, cst.Lambda)):
        return expr.with_changes(lpar=[], rpar=[])
    return expr


def assignment_line(name: str, value: cst.BaseExpression,
                    like: Optional[cst.CSTNode] = None) -> cst.SimpleStatementLine:
    line = cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])
    if isinstance(like, cst.SimpleStatementLine):
        line = line.with_changes(leading_lines=like.leading_lines, trailing_whitespace=like.trailing_whitespace)
    return line


def _with_header_comment(lines: list[cst.CSTNode], node: cst.If) -> list[cst.CSTNode]:
    """Carry the `if` line's leading comments and its trailing comment to the new first line."""
    if not lines:
        return lines
    first = lines[0]
    changes: dict = {"leading_lines": [*node.leading_lines, *getattr(first, "leading_lines", ())]}
    header = node.body.header if isinstance(node.body, cst.IndentedBlock) else None
    if (header is not None and header.comment is not None and isinstance(first, cst.SimpleStatementLine)
            and first.trailing_whitespace.comment is None):
        changes["trailing_whitespace"] = header
    lines[0] = first.with_changes(**changes)
    return lines


def replacement_for(guard: Optional[cst.BaseExpression], lines: list[cst.CSTNode],
                    node: cst.If) -> Union[cst.CSTNode, cst.FlattenSentinel]:
    """`lines` as the replacement of `node`, under `if guard:` when there is one."""
    if guard is None:
        lines = _with_header_comment(lines, node)
        return cst.FlattenSentinel(lines) if len(lines) != 1 else lines[0]
    body = [line.with_changes(leading_lines=()) if i == 0 and hasattr(line, "leading_lines") else line
            for i, line in enumerate(lines)]
    # `lines` replace an `if` statement: statements, as an indented block holds.
    return cst.If(test=guard, body=cst.IndentedBlock(body=body, header=node.body.header  # type: ignore[arg-type]
                                                     if isinstance(node.body, cst.IndentedBlock) else
                                                     cst.TrailingWhitespace()),
                  leading_lines=node.leading_lines)
