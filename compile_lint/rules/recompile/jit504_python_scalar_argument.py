"""JIT504 python-scalar-argument: A Python float/int input of a compiled function
recompiles the first time it changes."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.specializing import specialized_arguments
from compile_lint.rules.support.syntax import all_params, annotation_name, argument_for


class PythonScalarArgument(Rule):
    """A Python float/int input of a compiled function recompiles the first time it changes.

    Why: Dynamo first compiles a Python number as a constant; the first call with a new
    value recompiles with the number as a dynamic scalar, which later values reuse. So
    `temperature`, `alpha` or `step` passed as Python numbers cost one extra compile
    (with Inductor, seconds to minutes), paid again in every process. Off by default:
    it is one recompile, and a value that never changes costs nothing.

    Instead: pass a 0-d tensor (`torch.tensor(0.7)`), which is traced as data from the
    first call. The fix (unsafe) wraps the value at call sites in this file and changes a
    `float`/`int` annotation to `torch.Tensor`; it is offered only when the function uses
    the value solely in arithmetic with tensors. Unsafe because a 0-d float32 tensor is
    not the same operand as a Python float: against a float64 tensor `0.1` is rounded to
    float32 first, and against another 0-d tensor or an int tensor the result dtype can
    change. Callers outside this file, and calls that rely on the default, still pass
    Python numbers.
    """

    code = "JIT504"
    name = "python-scalar-argument"
    kind = "recompile"
    default_enabled = False
    fix_applicability = "unsafe"
    fix_edits_call_sites = True
    message = (
        "a Python number input is compiled as a constant, then recompiled once as dynamic "
        "when it first changes; pass a 0-d tensor (`torch.tensor(value)`) instead"
    )
    invalid = [
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def sample(logits, temperature: float):
                return (logits / temperature).softmax(-1)

            def sweep(logits):
                return [sample(logits, t) for t in (0.5, 0.7, 1.0)]
            """,
            fixed="""
            import torch

            @torch.compile(backend="eager")
            def sample(logits, temperature: torch.Tensor):
                return (logits / temperature).softmax(-1)

            def sweep(logits):
                return [sample(logits, torch.tensor(t)) for t in (0.5, 0.7, 1.0)]
            """,
            calls="[(torch.randn(4, 8), t) for t in (0.5, 0.7, 1.0)]",
            fixed_calls="[(torch.randn(4, 8), torch.tensor(t)) for t in (0.5, 0.7, 1.0)]",
            entry="sample",
            lines=[4],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ScaledResidual(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, alpha=0.5):
                    return x + alpha * self.fc(x)
            """,
            calls='[{"args": (torch.randn(4, 8),), "kwargs": {"alpha": a}} for a in (0.1, 0.2, 0.3)]',
            entry="ScaledResidual",
            lines=[9],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, return_logits: bool = False, temperature=None):
                    y = self.fc(x)
                    if return_logits:
                        return y
                    return y.softmax(-1)
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="Head",
        ),
        Valid(
            """
            import torch

            @torch.compile(backend="eager")
            def sample(logits, temperature: torch.Tensor):
                return (logits / temperature).softmax(-1)
            """,
            calls="[(torch.randn(4, 8), torch.tensor(t)) for t in (0.5, 0.7, 1.0)]",
            entry="sample",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Scaler(nn.Module):
                def __init__(self, scale: float = 2.0):
                    super().__init__()
                    self.scale = scale

                def forward(self, x):
                    return self._apply(x, self.scale)

                def _apply(self, x, factor: float):
                    return x * factor
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="Scaler",
            note="only inputs of compiled entry points are guarded; a helper's parameters are traced values",
        ),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node not in self.context.regions.roots:
            return
        for param in all_params(node):
            if self._numeric_param(param) and self._used_only_as_operand(node, param) is not None:
                self.report(param.name, fix=self._tensor_fix(node, param))

    def _numeric_param(self, param: cst.Param) -> bool:
        if annotation_name(param) in ("float", "int"):
            return True
        return param.annotation is None and _is_numeric_literal(param.default)

    def _used_only_as_operand(self, function: cst.FunctionDef, param: cst.Param) -> Optional[bool]:
        """None when `param` never meets a tensor in arithmetic; else whether every use does.

        A parameter reassigned in the body, or reaching an argument JIT502 reports, is left
        alone here.
        """
        name = param.name.value
        if self.context.local_values(name, function):
            return None
        tensor_operand = False
        only_operand = True
        for use, stack in _name_uses(function, name):
            parent = stack[-1]
            if isinstance(parent, cst.BinaryOperation):
                other = parent.right if parent.left is use else parent.left
                if self.context.facts.kind(other, function) is Kind.TENSOR:
                    tensor_operand = True
                    continue
            if isinstance(parent, cst.Arg) and len(stack) > 1 and isinstance(stack[-2], cst.Call):
                if any(value is use for value, _ in specialized_arguments(self, stack[-2])):
                    return None
            only_operand = False
        return only_operand if tensor_operand else None

    def _tensor_fix(self, function: cst.FunctionDef, param: cst.Param) -> Optional[FixPlan]:
        if function in self.context.regions.owner_class or not self._used_only_as_operand(function, param):
            return None
        tensor_name, imports = spell(self.context, "torch.tensor")
        replacements: list[tuple[cst.CSTNode, object]] = []
        for arg in self._call_site_arguments(function, param):
            value = arg.value
            if isinstance(value, cst.Call) and self.context.qualname(value.func) in ("torch.tensor", "torch.as_tensor"):
                continue
            wrapped = cst.Call(func=cst.parse_expression(tensor_name), args=[cst.Arg(value)])
            replacements.append((arg, arg.with_changes(value=wrapped)))
        if not replacements:
            return None
        if param.annotation is not None:
            annotation_name, annotation_imports = spell(self.context, "torch.Tensor")
            imports = tuple(dict.fromkeys((*imports, *annotation_imports)))
            replacements.append((param.annotation, param.annotation.with_changes(
                annotation=cst.parse_expression(annotation_name))))
        return FixPlan(
            replacements,
            f"Pass `{param.name.value}` as a 0-d tensor at this file's call sites",
            "unsafe",
            imports,
        )

    def _call_site_arguments(self, function: cst.FunctionDef, param: cst.Param) -> list[cst.Arg]:
        """The argument given for `param` at each `function(...)` call in this file."""
        calls = self.context.calls_named(function.name.value)
        found = [argument_for(function, param, call) for call in calls]
        return [arg for arg in found if arg is not None]


def _is_numeric_literal(expr: Optional[cst.BaseExpression]) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        return _is_numeric_literal(expr.expression)
    return isinstance(expr, (cst.Integer, cst.Float))


def _name_uses(function: cst.FunctionDef, name: str) -> list[tuple[cst.Name, list[cst.CSTNode]]]:
    """Each load of `name` in `function` (not in nested defs), with its ancestors."""
    finder = _NameUses(function, name)
    visit(function, finder)
    return finder.uses


class _NameUses(cst.CSTVisitor):
    """Loads of one name in one function, with their ancestors (a module-level class: no reference cycle)."""

    def __init__(self, function: cst.FunctionDef, name: str) -> None:
        self.function, self.name = function, name
        self.uses: list[tuple[cst.Name, list[cst.CSTNode]]] = []
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        stack = self.stack
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and node is not self.function:
            stack.append(node)  # libcst still calls on_leave for a node whose children it skips
            return False
        if isinstance(node, cst.Name) and node.value == self.name and stack:
            parent = stack[-1]
            is_declaration = isinstance(parent, cst.Param) or (
                isinstance(parent, cst.Attribute) and parent.attr is node) or (
                isinstance(parent, cst.Arg) and parent.keyword is node)
            if not is_declaration:
                self.uses.append((node, list(stack)))
        stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()

