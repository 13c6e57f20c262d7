"""JIT706 custom-op-impl-abstract: A `torch.library.custom_op` object has no `impl_abstract`:
the module fails at import."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.file.module_facts import string_value
from compile_lint.analysis.file.regions import OPAQUE_OP_DECORATORS
from compile_lint.analysis.syntax.imports import dotted_name
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid


class CustomOpImplAbstract(Rule):
    """A `torch.library.custom_op` object has no `impl_abstract`: the module fails at import.

    Why: many guides still print the recipe `@my_op.impl_abstract("ns::my_op")` under a
    `@torch.library.custom_op` definition. The object `custom_op` returns (a
    `CustomOpDef`) has never had that method: it has `register_fake`. On torch 2.13 the
    decorator line raises `AttributeError: 'CustomOpDef' object has no attribute
    'impl_abstract'` when the module is imported, before anything is compiled (and
    without the line, compiled callers would fail for want of a fake implementation).
    `torch.library.impl_abstract("ns::op")`, the deprecated function, still works and
    is JIT702's; the older `torch._custom_ops.custom_op` objects, which do have an
    `impl_abstract`, are not reported.

    Instead: `@my_op.register_fake` on the fake function. It takes the function only
    (`register_fake(self, fn, /)` on torch 2.13), so the fix (safe) drops the qualname
    argument: `@my_op.impl_abstract("ns::my_op")` -> `@my_op.register_fake`, when the
    decorator passes nothing else.
    """

    code = "JIT706"
    name = "custom-op-impl-abstract"
    kind = "break"
    fails_at = "import"
    fix_applicability = "safe"
    scope = "module"
    trigger_words = ("impl_abstract",)
    message = (
        "`{name}` is a torch.library.custom_op, which has no `impl_abstract`: this line raises "
        "AttributeError when the module is imported; write `@{name}.register_fake` for "
        "`@{name}.impl_abstract(...)` (it takes only the function)"
    )
    steps = ("@{name}.register_fake",)
    invalid = [
        Invalid(
            """
            import torch
            from torch.library import custom_op

            @custom_op("demo_jit706::my_fast_op", mutates_args=())
            def my_fast_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                return a * b + a

            @my_fast_op.impl_abstract("demo_jit706::my_fast_op")
            def my_fast_op_abstract(a, b):
                return torch.empty_like(a)

            @torch.compile(backend="eager")
            def fused(a, b):
                return my_fast_op(a, b).relu()
            """,
            fixed="""
            import torch
            from torch.library import custom_op

            @custom_op("demo_jit706::my_fast_op", mutates_args=())
            def my_fast_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                return a * b + a

            @my_fast_op.register_fake
            def my_fast_op_abstract(a, b):
                return torch.empty_like(a)

            @torch.compile(backend="eager")
            def fused(a, b):
                return my_fast_op(a, b).relu()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="fused",
            lines=[8],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            def _scale(x: torch.Tensor) -> torch.Tensor:
                return x * 2

            scale = torch.library.custom_op("demo_jit706b::scale", _scale, mutates_args=())
            scale.impl_abstract("demo_jit706b::scale")(lambda x: torch.empty_like(x))

            class Head(nn.Module):
                def forward(self, x):
                    return scale(x) + 1
            """,
            entry="Head",
            lines=[8],
            note="no fix: the call form passes the function to what `impl_abstract(...)` returns",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch.library import custom_op

            @custom_op("demo_jit706v::my_fast_op", mutates_args=())
            def my_fast_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                return a * b + a

            @my_fast_op.register_fake
            def my_fast_op_abstract(a, b):
                return torch.empty_like(a)

            @torch.compile(backend="eager")
            def fused(a, b):
                return my_fast_op(a, b).relu()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="fused",
        ),
        Valid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit706v::shift", mutates_args=())
            def shift(x: torch.Tensor) -> torch.Tensor:
                return x + 1

            torch.library.register_fake("demo_jit706v::shift", lambda x: torch.empty_like(x))

            class ShapeRules:
                def impl_abstract(self, name):
                    return lambda fn: fn

            rules = ShapeRules()

            @rules.impl_abstract("demo_jit706v::shift")
            def shift_rule(x):
                return x

            class Head(nn.Module):
                def forward(self, x):
                    return shift(shift_rule(x))
            """,
            entry="Head",
            note="`impl_abstract` of an object that is not a custom op",
        ),
        Valid(
            """
            import torch
            from torch import nn

            def _double(x: torch.Tensor) -> torch.Tensor:
                return x * 2

            double = torch.library.custom_op("demo_jit706v::double", _double, mutates_args=())
            double.register_fake(lambda x: torch.empty_like(x))

            class Head(nn.Module):
                def forward(self, x):
                    return double(x) - 1
            """,
            entry="Head",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._ops = _custom_op_names(self)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "impl_abstract":
            return
        owner = dotted_name(node.value)
        if owner is None or owner not in self._ops:
            return
        self.report(node, self.message.format(name=owner), fix=self._fix(node))

    def _fix(self, attribute: cst.Attribute) -> Optional[FixPlan]:
        """`@op.impl_abstract()` / `@op.impl_abstract("ns::op")` as a decorator -> `@op.register_fake`."""
        call = self.context.parent(attribute)
        if not isinstance(call, cst.Call) or call.func is not attribute:
            return None
        if not isinstance(self.context.parent(call), cst.Decorator):
            return None
        if len(call.args) > 1 or any(arg.keyword is not None or arg.star for arg in call.args):
            return None
        if call.args and string_value(call.args[0].value) is None:
            return None
        new = attribute.with_changes(attr=cst.Name("register_fake"))
        return FixPlan([(call, new)], "Use the custom op's register_fake", "safe")


def _custom_op_names(rule: Rule) -> set[str]:
    """Names this file binds to a `torch.library.custom_op` object (decorated functions, assignments)."""
    imports = rule.context.imports
    names: set[str] = set()
    for node in rule.context.module_index.of_type(cst.FunctionDef, cst.Assign):
        if isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                expr = decorator.decorator
                func = expr.func if isinstance(expr, cst.Call) else expr
                if imports.qualname(func) in OPAQUE_OP_DECORATORS:
                    names.add(node.name.value)
        elif isinstance(node.value, cst.Call) and len(node.targets) == 1:
            func = node.value.func
            if isinstance(func, cst.Call):  # custom_op("ns::op", mutates_args=())(fn)
                func = func.func
            name = dotted_name(node.targets[0].target)
            if name and imports.qualname(func) in OPAQUE_OP_DECORATORS:
                names.add(name)
    return names
