"""JIT701 custom-op-without-fake: A `torch.library.custom_op` with no fake implementation cannot be compiled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from compile_lint.analysis.file.module_facts import string_value
from compile_lint.analysis.file.regions import OPAQUE_OP_DECORATORS
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid


class CustomOpWithoutFake(Rule):
    """A `torch.library.custom_op` with no fake implementation cannot be compiled.

    Why: Dynamo traces with fake tensors (shapes and dtypes, no data), so it must know
    what the op returns without running it. A custom op with no `register_fake`
    fails with "RuntimeError when making fake tensor call" as soon as compiled code
    calls it: a hard error, even without `fullgraph=True`. A "Meta" kernel
    (`register_kernel(op, "meta")`, `Library.impl(..., "Meta")`) does not count for
    `custom_op` (measured on torch 2.13). Ops annotated `-> None` (pure mutation) need
    no fake implementation.

    Instead: register one next to the op: `@my_op.register_fake` on a function that
    returns `torch.empty_like(x)` (or `x.new_empty(shape)`) with the output's shape and
    dtype. The fix (unsafe: it infers the shape rule from the code) adds that stub when
    the op returns one tensor shaped like an input (`x.clone()`, `torch.empty_like(x)`,
    `x * scale`); it assumes the output keeps the input's dtype.
    """

    code = "JIT701"
    name = "custom-op-without-fake"
    kind = "break"
    gb_type = "RuntimeError when making fake tensor call"
    gb_id = "GB4315"
    fix_applicability = "unsafe"
    scope = "module"
    trigger_words = ("custom_op",)
    message = (
        "custom op `{op}` has no fake implementation: calling it under torch.compile fails "
        "(even without fullgraph); add `@{name}.register_fake` returning an empty tensor of the output's shape"
    )
    steps = ("@{name}.register_fake",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit701::fused_scale", mutates_args=())
            def fused_scale(x: torch.Tensor, scale: float) -> torch.Tensor:
                out = torch.empty_like(x)
                out.copy_(x * scale)
                return out


            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    return fused_scale(self.proj(x), 0.5) + x
            """,
            fixed="""
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit701::fused_scale", mutates_args=())
            def fused_scale(x: torch.Tensor, scale: float) -> torch.Tensor:
                out = torch.empty_like(x)
                out.copy_(x * scale)
                return out


            @fused_scale.register_fake
            def _fused_scale_fake(x, scale):
                return torch.empty_like(x)


            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    return fused_scale(self.proj(x), 0.5) + x
            """,
            entry="Block",
            lines=[5],
        ),
        Invalid(
            """
            import torch as T
            from torch.library import custom_op

            @custom_op("demo_jit701::swish", mutates_args=())
            def swish(x: T.Tensor) -> T.Tensor:
                return x * T.sigmoid(x)

            @T.compile(backend="eager")
            def head(x):
                return swish(x).sum(-1)
            """,
            entry="head",
            note="no fix: `x * sigmoid(x)` multiplies two tensors, so the shape rule is not evident",
            lines=[5],
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("demo_jit701::topk_mask", mutates_args=())
            def topk_mask(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
                values, index = scores.topk(k, dim=-1)
                return values.clone(), index.clone()


            def route(scores):
                values, index = topk_mask(scores, 2)
                return values.softmax(-1), index

            compiled_route = torch.compile(route, backend="eager")
            """,
            entry="route",
            lines=[4],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit701v::fused_scale", mutates_args=())
            def fused_scale(x: torch.Tensor, scale: float) -> torch.Tensor:
                return x * scale

            @fused_scale.register_fake
            def _(x, scale):
                return torch.empty_like(x)

            class Block(nn.Module):
                def forward(self, x):
                    return fused_scale(x, 0.5) + x
            """,
            entry="Block",
        ),
        Valid(
            """
            import torch

            @torch.library.custom_op("demo_jit701v::gather_rows", mutates_args=())
            def gather_rows(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
                return table[index].clone()

            @torch.library.register_fake("demo_jit701v::gather_rows")
            def _gather_rows_fake(table, index):
                return table.new_empty((index.shape[0], table.shape[1]))

            @torch.compile(backend="eager")
            def embed(table, index):
                return gather_rows(table, index) * 2
            """,
            calls="[(torch.randn(10, 8), torch.tensor([1, 3, 5]))]",
            entry="embed",
        ),
        Valid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit701v::scale_", mutates_args=("x",))
            def scale_(x: torch.Tensor, factor: float) -> None:
                x.mul_(factor)

            class InPlace(nn.Module):
                def forward(self, x):
                    y = x.clone()
                    scale_(y, 2.0)
                    return y
            """,
            entry="InPlace",
            note="an op annotated `-> None` gets a fake implementation automatically",
        ),
        Valid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit701v::clamp_norm", mutates_args=())
            def clamp_norm(x: torch.Tensor, limit: float) -> torch.Tensor:
                return x.clamp(-limit, limit)

            torch.library.register_fake("demo_jit701v::clamp_norm", lambda x, limit: torch.empty_like(x))

            class Head(nn.Module):
                def forward(self, x):
                    return clamp_norm(x, 1.0)
            """,
            entry="Head",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._registered = self.context.fake_registrations
        self._functions_returning_none: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        """`op = custom_op("ns::op", fn, mutates_args=())` or `custom_op("ns::op", ...)(fn)`: no fix."""
        call = node.value
        if not isinstance(call, cst.Call) or len(node.targets) != 1:
            return
        imports = self.context.imports
        if imports.qualname(call.func) in CUSTOM_OP_DECORATORS and len(call.args) >= 2 and call.args[1].keyword is None:
            qualname, function = string_value(call.args[0].value), call.args[1].value
        elif isinstance(call.func, cst.Call) and imports.qualname(call.func.func) in CUSTOM_OP_DECORATORS and call.args:
            qualname, function = string_value(call.func.args[0].value) if call.func.args else None, call.args[0].value
        else:
            return
        name = dotted_name(node.targets[0].target)
        if qualname is None or name is None or qualname in self._registered or name in self._registered:
            return
        if isinstance(function, cst.Name) and function.value in self._functions_returning_none:
            return
        self.report(call, self.message.format(op=qualname, name=name))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if _returns_none(node):
            self._functions_returning_none.add(node.name.value)
        imports = self.context.imports
        definition = custom_op_definition(node, imports)
        if definition is None or _returns_none(node):
            return
        if definition.qualname in self._registered or node.name.value in self._registered:
            return
        message = self.message.format(op=definition.qualname, name=node.name.value)
        self.report(node.name, message, fix=self._fix(definition))

    def _fix(self, definition: CustomOpDefinition) -> Optional[FixPlan]:
        function = definition.function
        if not _returns_single_tensor(function, self.context.imports):
            return None
        parameter = _ShapeRule(function, self.context.imports).source_parameter()
        if parameter is None:
            return None
        parent = self.context.parent(function)
        top_level = isinstance(parent, cst.Module)
        stub, imports = _fake_stub(self, definition, parameter, 2 if top_level else 1)
        return FixPlan(
            [(function, cst.FlattenSentinel([function, stub]))],
            f"Register a fake implementation returning torch.empty_like({parameter})",
            "unsafe",
            imports,
        )


CUSTOM_OP_DECORATORS = OPAQUE_OP_DECORATORS


# Calls that keep the input's shape: a fake output of `empty_like(input)` matches them.
_SHAPE_KEEPING_FACTORIES = frozenset(
    {"torch.empty_like", "torch.zeros_like", "torch.ones_like", "torch.clone", "torch.sigmoid",
     "torch.tanh", "torch.relu", "torch.exp", "torch.abs", "torch.neg", "torch.sqrt",
     "torch.nn.functional.relu", "torch.nn.functional.gelu", "torch.nn.functional.silu"}
)


_SHAPE_KEEPING_METHODS = frozenset(
    {"clone", "contiguous", "detach", "sigmoid", "tanh", "relu", "exp", "abs", "neg", "sqrt"}
)


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


@dataclass
class CustomOpDefinition:
    """A function decorated with `@torch.library.custom_op("ns::name", ...)`."""

    function: cst.FunctionDef
    qualname: str  # "ns::name"


def custom_op_definition(function: cst.FunctionDef, imports: ImportMap) -> Optional[CustomOpDefinition]:
    """The custom op `function` defines, if it is decorated with torch.library.custom_op."""
    for decorator in function.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call) and imports.qualname(expr.func) in CUSTOM_OP_DECORATORS and expr.args:
            qualname = string_value(expr.args[0].value)
            if qualname is not None:
                return CustomOpDefinition(function, qualname)
    return None


def _returns_none(function: cst.FunctionDef) -> bool:
    returns = function.returns
    return returns is not None and isinstance(returns.annotation, cst.Name) and returns.annotation.value == "None"


def _returns_single_tensor(function: cst.FunctionDef, imports: ImportMap) -> bool:
    returns = function.returns
    if returns is None:
        return False
    name = imports.qualname(returns.annotation) or dotted_name(returns.annotation) or ""
    return name == "torch.Tensor" or name.rsplit(".", 1)[-1] == "Tensor"


def _parameter_annotations(function: cst.FunctionDef, imports: ImportMap) -> dict[str, str]:
    """Parameter name -> "tensor", "scalar" or "other", from its annotation."""
    kinds = {}
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        annotation = param.annotation.annotation if param.annotation is not None else None
        name = (imports.qualname(annotation) or dotted_name(annotation) or "") if annotation is not None else ""
        if name == "torch.Tensor" or name.rsplit(".", 1)[-1] == "Tensor":
            kinds[param.name.value] = "tensor"
        elif name in ("builtins.float", "builtins.int", "float", "int"):
            kinds[param.name.value] = "scalar"
        else:
            kinds[param.name.value] = "other"
    return kinds


class _ShapeRule:
    """Finds the tensor parameter whose shape a custom op's single output keeps, if evident."""

    def __init__(self, function: cst.FunctionDef, imports: ImportMap) -> None:
        self.function = function
        self.imports = imports
        self.params = _parameter_annotations(function, imports)
        self.assigned: dict[str, list[cst.BaseExpression]] = {}
        self.returns: list[Optional[cst.BaseExpression]] = []
        owner = self

        class _Collect(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is function

            def visit_Assign(self, node: cst.Assign) -> None:
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        owner.assigned.setdefault(target.target.value, []).append(node.value)

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                if isinstance(node.target, cst.Name):
                    owner.assigned.setdefault(node.target.value, []).append(node.value)

            def visit_Return(self, node: cst.Return) -> None:
                owner.returns.append(node.value)

        visit(function, _Collect())

    def source_parameter(self) -> Optional[str]:
        """The tensor parameter every return keeps the shape of, or None."""
        found: set[str] = set()
        for value in self.returns:
            if value is None:
                return None
            parameter = self._shape_of(value, depth=0)
            if parameter is None:
                return None
            found.add(parameter)
        return found.pop() if len(found) == 1 else None

    def _shape_of(self, expr: cst.BaseExpression, depth: int) -> Optional[str]:
        if depth > 8:
            return None
        if isinstance(expr, cst.Name):
            if self.params.get(expr.value) == "tensor" and expr.value not in self.assigned:
                return expr.value
            values = self.assigned.get(expr.value)
            if values and len(values) == 1 and expr.value not in self.params:
                return self._shape_of(values[0], depth + 1)
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
            left, right = self._shape_of(expr.left, depth + 1), self._shape_of(expr.right, depth + 1)
            if left and self._is_scalar(expr.right):
                return left
            if right and self._is_scalar(expr.left):
                return right
            return None
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self._shape_of(expr.expression, depth + 1)
        if isinstance(expr, cst.Call):
            qualified = self.imports.qualname(expr.func) or ""
            if qualified in _SHAPE_KEEPING_FACTORIES and expr.args and expr.args[0].keyword is None:
                return self._shape_of(expr.args[0].value, depth + 1)
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _SHAPE_KEEPING_METHODS and not expr.args:
                return self._shape_of(func.value, depth + 1)
        return None

    def _is_scalar(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        return isinstance(expr, cst.Name) and self.params.get(expr.value) == "scalar"


def _unannotated(param: cst.Param) -> cst.Param:
    """`x: Tensor` -> `x`, `alpha: float = 1.0` -> `alpha=1.0` (PEP 8 spacing without annotation)."""
    if param.default is None:
        return param.with_changes(annotation=None)
    tight = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return param.with_changes(annotation=None, equal=tight)


def _fake_stub(
    rule: Rule, definition: CustomOpDefinition, parameter: str, leading_blank_lines: int
) -> tuple[cst.FunctionDef, tuple[str, ...]]:
    """`@op.register_fake` + `def _op_fake(<op's params>): return torch.empty_like(param)`."""
    function = definition.function
    empty_like, imports = spell(rule.context, "torch.empty_like")
    params = function.params.with_changes(
        params=[_unannotated(p) for p in function.params.params],
        posonly_params=[_unannotated(p) for p in function.params.posonly_params],
        kwonly_params=[_unannotated(p) for p in function.params.kwonly_params],
    )
    name = function.name.value
    stub = cst.parse_statement(f"@{name}.register_fake\ndef _{name}_fake():\n    return {empty_like}({parameter})\n")
    assert isinstance(stub, cst.FunctionDef)
    stub = stub.with_changes(
        params=params,
        leading_lines=[cst.EmptyLine(indent=False)] * leading_blank_lines,
    )
    return stub, imports
