"""Custom ops: registration that torch.compile needs to trace through user kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from compile_lint.autofix.builders import spell
from compile_lint.linter.imports import ImportMap, dotted_name
from compile_lint.linter.regions import OPAQUE_OP_DECORATORS
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid
from compile_lint.linter.walk import visit

CUSTOM_OP_DECORATORS = OPAQUE_OP_DECORATORS
FAKE_REGISTRARS = frozenset({"torch.library.register_fake", "torch.library.impl_abstract"})
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


def _string_value(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


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
            qualname = _string_value(expr.args[0].value)
            if qualname is not None:
                return CustomOpDefinition(function, qualname)
    return None


def _op_reference(expr: cst.BaseExpression) -> Optional[str]:
    """What a registration call names: "ns::name", a Python name, or "torch.ops.ns.name"."""
    text = _string_value(expr)
    if text is not None:
        return text.split(".")[0]  # "ns::name.default" -> "ns::name"
    dotted = dotted_name(expr)
    if dotted and dotted.startswith("torch.ops.") and dotted.count(".") >= 3:
        parts = dotted.split(".")
        return f"{parts[2]}::{parts[3]}"
    return dotted


class _FakeRegistrations(cst.CSTVisitor):
    """Every op this file gives a fake (abstract) implementation, by name or "ns::name"."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.registered: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if self.imports.qualname(node.func) in FAKE_REGISTRARS and node.args:
            reference = _op_reference(node.args[0].value)
            if reference:
                self.registered.add(reference)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "register_fake":
            owner = dotted_name(node.func.value)
            if owner:
                self.registered.add(owner)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        expr = node.decorator
        if isinstance(expr, cst.Attribute) and expr.attr.value == "register_fake":
            owner = dotted_name(expr.value)
            if owner:
                self.registered.add(owner)


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
        imports = self.context.imports
        registrations = _FakeRegistrations(imports)
        visit(node, registrations)
        self._registered = registrations.registered
        self._functions_returning_none: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        """`op = custom_op("ns::op", fn, mutates_args=())` or `custom_op("ns::op", ...)(fn)`: no fix."""
        call = node.value
        if not isinstance(call, cst.Call) or len(node.targets) != 1:
            return
        imports = self.context.imports
        if imports.qualname(call.func) in CUSTOM_OP_DECORATORS and len(call.args) >= 2 and call.args[1].keyword is None:
            qualname, function = _string_value(call.args[0].value), call.args[1].value
        elif isinstance(call.func, cst.Call) and imports.qualname(call.func.func) in CUSTOM_OP_DECORATORS and call.args:
            qualname, function = _string_value(call.func.args[0].value) if call.func.args else None, call.args[0].value
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


class DeprecatedImplAbstract(Rule):
    """`torch.library.impl_abstract` is deprecated: use `torch.library.register_fake`.

    Why: `impl_abstract` was renamed to `register_fake` in PyTorch 2.4. On torch 2.13
    it still works (it forwards to `register_fake`) but warns at every registration
    ("we will remove `torch.library.impl_abstract` in a future version"); once it is
    removed the op loses its fake implementation and every compiled caller fails.
    This is a deprecation, not a graph break today, so it is reported as a warning.

    Instead: `torch.library.register_fake(op)`, which takes the same arguments. The fix
    (safe) renames `torch.library.impl_abstract(...)` calls and decorators; a call that
    passes the op as `qualname=` is left alone, since `register_fake` takes it only
    positionally.
    """

    code = "JIT702"
    name = "deprecated-impl-abstract"
    kind = "perf"
    fix_applicability = "safe"
    scope = "module"
    trigger_words = ("impl_abstract",)
    torch_versions = ">=2.4"
    message = (
        "torch.library.impl_abstract is deprecated (renamed in torch 2.4, to be removed); "
        "use torch.library.register_fake with the same arguments"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit702::rms_scale", mutates_args=())
            def rms_scale(x: torch.Tensor, eps: float) -> torch.Tensor:
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

            @torch.library.impl_abstract("demo_jit702::rms_scale")
            def _(x, eps):
                return torch.empty_like(x)

            class RMSNorm(nn.Module):
                def forward(self, x):
                    return rms_scale(x, 1e-6)
            """,
            fixed="""
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit702::rms_scale", mutates_args=())
            def rms_scale(x: torch.Tensor, eps: float) -> torch.Tensor:
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

            @torch.library.register_fake("demo_jit702::rms_scale")
            def _(x, eps):
                return torch.empty_like(x)

            class RMSNorm(nn.Module):
                def forward(self, x):
                    return rms_scale(x, 1e-6)
            """,
            entry="RMSNorm",
        ),
        Invalid(
            """
            import torch
            import torch.library as library

            @library.custom_op("demo_jit702b::double", mutates_args=())
            def double(x: torch.Tensor) -> torch.Tensor:
                return x * 2

            library.impl_abstract("demo_jit702b::double", lambda x: torch.empty_like(x))

            @torch.compile(backend="eager")
            def twice(x):
                return torch.ops.demo_jit702b.double(x) + 1
            """,
            fixed="""
            import torch
            import torch.library as library

            @library.custom_op("demo_jit702b::double", mutates_args=())
            def double(x: torch.Tensor) -> torch.Tensor:
                return x * 2

            library.register_fake("demo_jit702b::double", lambda x: torch.empty_like(x))

            @torch.compile(backend="eager")
            def twice(x):
                return torch.ops.demo_jit702b.double(x) + 1
            """,
            entry="twice",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit702v::rms_scale", mutates_args=())
            def rms_scale(x: torch.Tensor, eps: float) -> torch.Tensor:
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

            @torch.library.register_fake("demo_jit702v::rms_scale")
            def _(x, eps):
                return torch.empty_like(x)

            class RMSNorm(nn.Module):
                def forward(self, x):
                    return rms_scale(x, 1e-6)
            """,
            entry="RMSNorm",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Registry:
                def impl_abstract(self, name):
                    return lambda fn: fn

            registry = Registry()

            @registry.impl_abstract("not a torch op")
            def shape_rule(x):
                return x

            class Head(nn.Module):
                def forward(self, x):
                    return shape_rule(x) * 2
            """,
            entry="Head",
        ),
        Valid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit702v::softcap", mutates_args=())
            def softcap(x: torch.Tensor, cap: float) -> torch.Tensor:
                return torch.tanh(x / cap) * cap

            @softcap.register_fake
            def _(x, cap):
                return torch.empty_like(x)

            class Logits(nn.Module):
                def forward(self, x):
                    return softcap(x, 30.0)
            """,
            entry="Logits",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) != "torch.library.impl_abstract":
            return
        fix = None
        if not any(arg.keyword is not None and arg.keyword.value == "qualname" for arg in node.args):
            fix = self._rename(node.func)
        self.report(node.func, fix=fix)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        # A bare `@impl_abstract` is not a call; the usual `@impl_abstract("ns::op")` is
        # reported by visit_Call.
        if isinstance(node.decorator, (cst.Name, cst.Attribute)):
            if self.context.qualname(node.decorator) == "torch.library.impl_abstract":
                self.report(node.decorator)

    def _rename(self, func: cst.BaseExpression) -> Optional[FixPlan]:
        if isinstance(func, cst.Attribute):
            new: cst.BaseExpression = func.with_changes(attr=cst.Name("register_fake"))
            imports: tuple[str, ...] = ()
        else:
            spelled, imports = spell(self.context, "torch.library.register_fake")
            new = cst.parse_expression(spelled)
        return FixPlan([(func, new)], "Use torch.library.register_fake", "safe", imports)


# Calls that load native code whose functions Dynamo cannot trace.
NATIVE_LOADERS = frozenset(
    {
        "ctypes.CDLL", "ctypes.PyDLL", "ctypes.WinDLL", "ctypes.OleDLL",
        "ctypes.cdll.LoadLibrary", "ctypes.pydll.LoadLibrary", "ctypes.windll.LoadLibrary",
        "numpy.ctypeslib.load_library",
        "torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline",
    }
)


class _NativeHandles(cst.CSTVisitor):
    """Module-level names and `self.` attributes bound to a loaded native library."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.names: set[str] = set()
        self.attributes: set[str] = set()
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if not (isinstance(node.value, cst.Call) and self.imports.qualname(node.value.func) in NATIVE_LOADERS):
            return
        for target in node.targets:
            expr = target.target
            if isinstance(expr, cst.Name) and self._depth == 0:
                self.names.add(expr.value)
            elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
                self.attributes.add(expr.attr.value)


class OpaqueExtensionCall(Rule):
    """A call into a ctypes library or a C++ extension inside forward breaks the graph.

    Why: Dynamo can only trace Python and torch operators. A function of a library
    loaded with `ctypes.CDLL(...)` or `torch.utils.cpp_extension.load(...)` is native
    code it cannot see into, so it stops the graph there ("Unsupported method call"
    for ctypes, measured on torch 2.13); with `fullgraph=True` compilation fails.
    Raw Triton launches (`kernel[grid](...)`) are NOT flagged: Dynamo traces
    user-defined Triton kernels (measured on an H200 with torch 2.11 and Triton 3.6:
    fullgraph compiles, outputs match).

    Instead: wrap the native call in a `torch.library.custom_op` and give it a
    `register_fake` that returns empty outputs of the right shape; Dynamo then puts
    the op in the graph as one opaque node.
    """

    code = "JIT703"
    name = "opaque-extension-call"
    kind = "break"
    gb_type = "Unsupported method call"
    gb_id = "GB0156"
    message = (
        "call into native code (ctypes / C++ extension) inside a compiled region breaks the graph; "
        "wrap it in torch.library.custom_op with a register_fake"
    )
    invalid = [
        Invalid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn

            libc = ctypes.CDLL(ctypes.util.find_library("c"))


            class NativeCopy(nn.Module):
                def forward(self, x):
                    out = torch.empty_like(x)
                    libc.memcpy(ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()), x.numel() * x.element_size())
                    return out * 2
            """,
            entry="NativeCopy",
        ),
        Invalid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn


            class Packed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lib = ctypes.cdll.LoadLibrary(ctypes.util.find_library("c"))
                    self.fc = nn.Linear(8, 8)

                def _native_copy(self, src):
                    dst = torch.empty_like(src)
                    nbytes = src.numel() * src.element_size()
                    self.lib.memcpy(ctypes.c_void_p(dst.data_ptr()), ctypes.c_void_p(src.data_ptr()), nbytes)
                    return dst

                def forward(self, x):
                    return self._native_copy(self.fc(x).contiguous())
            """,
            entry="Packed",
        ),
    ]
    valid = [
        Valid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn

            libc = ctypes.CDLL(ctypes.util.find_library("c"))


            @torch.library.custom_op("demo_jit703v::native_copy", mutates_args=())
            def native_copy(x: torch.Tensor) -> torch.Tensor:
                out = torch.empty_like(x)
                libc.memcpy(ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()), x.numel() * x.element_size())
                return out


            @native_copy.register_fake
            def _(x):
                return torch.empty_like(x)


            class NativeCopy(nn.Module):
                def forward(self, x):
                    return native_copy(x.contiguous()) * 2
            """,
            entry="NativeCopy",
        ),
        Valid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn

            libc = ctypes.CDLL(ctypes.util.find_library("c"))


            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.pid = libc.getpid()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    return self.fc(x).relu()
            """,
        ),
        Valid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn

            libc = ctypes.CDLL(ctypes.util.find_library("c"))


            class Logged(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        libc.getpid()
                    return x.sigmoid()
            """,
            entry="Logged",
        ),
        Valid(
            """
            import torch
            from torch import nn


            class Checkpointed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    state = self.fc.state_dict()
                    return self.fc(x) + state["bias"]
            """,
            entry="Checkpointed",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._handles: Optional[_NativeHandles] = None

    def _native_handles(self) -> _NativeHandles:
        if self._handles is None:
            self._handles = _NativeHandles(self.context.imports)
            visit(self.context.module, self._handles)
        return self._handles

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        receiver = func.value
        if isinstance(receiver, cst.Call) and self.context.qualname(receiver.func) in NATIVE_LOADERS:
            self.report(node)
            return
        handles = self._native_handles()
        if isinstance(receiver, cst.Name) and receiver.value in handles.names:
            if receiver.value not in self._local_names():
                self.report(node)
        elif (
            isinstance(receiver, cst.Attribute)
            and isinstance(receiver.value, cst.Name)
            and receiver.value.value == "self"
            and receiver.attr.value in handles.attributes
        ):
            self.report(node)

    def _local_names(self) -> set[str]:
        function = self.context.function
        if function is None:
            return set()
        params = function.params
        return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}


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
        return isinstance(func, cst.Attribute) and func.attr.value in _POINTWISE_NAMES and _is_pointwise(func.value, imports)
    return False


def _pointwise_body(function: cst.FunctionDef, imports: ImportMap) -> bool:
    """True when every statement is a docstring, a plain assignment or a return of pointwise math."""
    body = function.body
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
                    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                        called.add(func.attr.value)

            for function in self.context.regions.functions:
                visit(function, _Calls())
            self._called = called
        return self._called


def _decorator_callee(decorator: cst.Decorator) -> cst.BaseExpression:
    expr = decorator.decorator
    return expr.func if isinstance(expr, cst.Call) else expr


LIBRARY_CLASS = "torch.library.Library"
KERNEL_REGISTRARS = frozenset({"torch.library.impl", "torch.library.register_kernel"})
# Dispatch keys whose kernel also serves fake tensors: with one of them Dynamo can trace the op.
FAKE_CAPABLE_KEYS = frozenset({"meta", "compositeexplicitautograd", "compositeimplicitautograd"})


def _strings_in(expr: cst.BaseExpression) -> list[str]:
    """String literals of an argument: a string, or the strings of a list/tuple."""
    value = _string_value(expr)
    if value is not None:
        return [value]
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [s for element in expr.elements for s in _strings_in(element.value)]
    return []


class _LibraryOps(cst.CSTVisitor):
    """Ops a file defines with `Library.define` / `torch.library.define`, and their kernels' keys."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.namespaces: dict[str, str] = {}  # library variable -> namespace
        self.defined: dict[str, cst.Call] = {}  # "ns::name" -> the define call
        self.keys: dict[str, set[str]] = {}  # "ns::name" -> lower-cased dispatch keys, "?" when unknown
        self.fake: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and self.imports.qualname(value.func) == LIBRARY_CLASS and value.args:
            namespace = _string_value(value.args[0].value)
            for target in node.targets:
                name = dotted_name(target.target)
                if name and namespace:
                    self.namespaces[name] = namespace

    def _qualify(self, op: str, library: Optional[str]) -> Optional[str]:
        op = op.split("(")[0].split(".")[0].strip()
        if "::" in op:
            return op
        namespace = self.namespaces.get(library or "")
        return f"{namespace}::{op}" if namespace else None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.imports.qualname(func)
        strings = [s for arg in node.args for s in _strings_in(arg.value)]
        if qualified in FAKE_REGISTRARS and node.args:
            reference = _op_reference(node.args[0].value)
            if reference:
                self.fake.add(reference)
            return
        library = dotted_name(func.value) if isinstance(func, cst.Attribute) else None
        if isinstance(func, cst.Attribute) and library in self.namespaces and strings:
            method = func.attr.value
            op = self._qualify(strings[0], library)
            if op is None:
                return
            if method == "define" and "->" in strings[0]:
                self.defined[op] = node
            elif method == "impl":
                self._add_keys(op, node, strings[1:])
        elif qualified == "torch.library.define" and strings:
            self.defined[self._qualify(strings[0], None) or strings[0]] = node
        elif qualified in KERNEL_REGISTRARS and strings:
            op_strings = [s for s in strings if "::" in s]
            if op_strings:
                self._add_keys(op_strings[0].split(".")[0], node, [s for s in strings if s is not op_strings[0]])

    def _add_keys(self, op: str, node: cst.Call, keys: list[str]) -> None:
        has_func_or_key = len(node.args) >= 2
        found = self.keys.setdefault(op, set())
        if keys:
            found.update(key.lower() for key in keys)
        elif has_func_or_key:
            found.add("?")


class LibraryOpWithoutFake(Rule):
    """An op defined with `torch.library.Library.define` and only device kernels breaks the graph.

    Why: Dynamo runs every op on fake tensors to learn output shapes. An op whose only
    kernels are for real devices ("CPU", "CUDA") has none that accepts fake tensors,
    so Dynamo stops the graph at each call ("Operator does not support running with
    fake tensors"); with `fullgraph=True` compilation fails. A "Meta" kernel, a
    `register_fake`, or a "CompositeExplicitAutograd"/"CompositeImplicitAutograd"
    kernel (written in torch ops) all make it traceable (measured on torch 2.13).

    Instead: add `torch.library.register_fake("ns::op")` (or `lib.impl("op", fn,
    "Meta")`) returning empty outputs of the right shape; for new code prefer
    `torch.library.custom_op`. Ops whose kernels are registered in another file are
    not reported.
    """

    code = "JIT704"
    name = "library-op-without-fake"
    kind = "break"
    gb_type = "Operator does not support running with fake tensors"
    gb_id = "GB0090"
    scope = "module"
    trigger_words = ("define",)
    message = (
        "op `{op}` has only device kernels ({keys}): Dynamo cannot run it on fake tensors and breaks the graph "
        "at every call; add torch.library.register_fake(\"{op}\") or a \"Meta\" kernel"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            lib = torch.library.Library("demo_jit704", "FRAGMENT")
            lib.define("bias_gelu(Tensor x, Tensor bias) -> Tensor")
            lib.impl("bias_gelu", lambda x, bias: torch.nn.functional.gelu(x + bias), "CPU")


            class FusedMLP(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.bias = nn.Parameter(torch.zeros(8))

                def forward(self, x):
                    return torch.ops.demo_jit704.bias_gelu(self.fc(x), self.bias)
            """,
            entry="FusedMLP",
        ),
        Invalid(
            """
            import torch

            torch.library.define("demo_jit704b::clip_grad_norm", "(Tensor x, float limit) -> Tensor")

            @torch.library.impl("demo_jit704b::clip_grad_norm", "cpu")
            def _clip_cpu(x, limit):
                return x.clamp(-limit, limit)

            @torch.compile(backend="eager")
            def step(x):
                return torch.ops.demo_jit704b.clip_grad_norm(x, 1.0) * 2
            """,
            entry="step",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            lib = torch.library.Library("demo_jit704v", "FRAGMENT")
            lib.define("bias_gelu(Tensor x, Tensor bias) -> Tensor")
            lib.impl("bias_gelu", lambda x, bias: torch.nn.functional.gelu(x + bias), "CPU")
            lib.impl("bias_gelu", lambda x, bias: torch.empty_like(x), "Meta")


            class FusedMLP(nn.Module):
                def forward(self, x):
                    return torch.ops.demo_jit704v.bias_gelu(x, x)
            """,
            entry="FusedMLP",
        ),
        Valid(
            """
            import torch
            from torch import nn

            lib = torch.library.Library("demo_jit704v2", "FRAGMENT")
            lib.define("scale(Tensor x, float s) -> Tensor")
            lib.impl("scale", lambda x, s: x * s, "CompositeExplicitAutograd")


            class Scale(nn.Module):
                def forward(self, x):
                    return torch.ops.demo_jit704v2.scale(x, 2.0)
            """,
            entry="Scale",
        ),
        Valid(
            """
            import torch

            torch.library.define("demo_jit704v3::clip", "(Tensor x, float limit) -> Tensor")

            @torch.library.impl("demo_jit704v3::clip", "cpu")
            def _clip_cpu(x, limit):
                return x.clamp(-limit, limit)

            @torch.library.register_fake("demo_jit704v3::clip")
            def _clip_fake(x, limit):
                return torch.empty_like(x)

            @torch.compile(backend="eager")
            def step(x):
                return torch.ops.demo_jit704v3.clip(x, 1.0) * 2
            """,
            entry="step",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        ops = _LibraryOps(self.context.imports)
        visit(node, ops)
        for op, define in ops.defined.items():
            keys = ops.keys.get(op)
            if not keys or "?" in keys or keys & FAKE_CAPABLE_KEYS or op in ops.fake:
                continue
            self.report(define, self.message.format(op=op, keys=", ".join(sorted(keys))))
