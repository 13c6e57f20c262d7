"""JIT615 method-binding-in-forward: Binding a method at run time with `types.MethodType`, or `__get__` on a lambda,
a nested function or a torch builtin, breaks the graph."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.syntax.walk import visit
from compile_lint.rules.base import Invalid, Rule, Valid


class MethodBindingInForward(Rule):
    """Binding a method at run time with `types.MethodType`, or `__get__` on a lambda, a nested function or a torch builtin, breaks the graph.

    Why: Dynamo binds methods itself only through `function.__get__(obj)` on a function
    defined with `def` at module or class level. `types.MethodType(f, obj)` is
    "Unsupported function call"; `__get__` on a lambda or on a function defined inside
    forward raises inside Dynamo ("Observed exception"), and on a builtin such as
    `torch.Tensor.add` it is an unsupported method call; the forward then runs eagerly
    (measured on torch 2.13).

    Instead: call the function with the object as its first argument (`helper(self, x)`),
    use `functools.partial(helper, self)`, or bind once in `__init__`.
    """  # noqa: E501 - the rule's documentation (--explain, docs/rules.md) as written

    code = "JIT615"
    name = "method-binding-in-forward"
    kind = "break"
    gb_type = "Unsupported function call"
    gb_id = "GB0147"
    gb_types = (  # the same pattern, reported differently
        "Observed exception",
        "Unsupported method call",
        "Attempted to call function marked as skipped",
    )
    message = (
        "binding a method here is not traceable and breaks the graph; call the function "
        "with the object as first argument (`helper(self, x)`), or use `functools.partial(helper, self)`"
    )
    steps = ("helper(self, x)", "functools.partial(helper, self)")
    invalid = [
        Invalid(
            """
            import types

            import torch
            from torch import nn

            def scaled_forward(self, x):
                return self.proj(x) * 2

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    bound = types.MethodType(scaled_forward, self)
                    return bound(x)
            """,
            lines=[15],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    def scaled(self, y):
                        return self.proj(y) * 2

                    return scaled.__get__(self)(x)
            """,
            lines=[13],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    add = torch.Tensor.add.__get__(x)
                    return add(x)
            """,
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            def scaled_forward(self, x):
                return self.proj(x) * 2

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    bound = scaled_forward.__get__(self, Model)
                    return bound(x)
            """,
            note="__get__ on a module-level function is traced",
        ),
        Valid(
            """
            import functools

            import torch
            from torch import nn

            class Scaler:
                def scale(self, x):
                    return x * 3

            def shift(module, x, by):
                return x + by

            class Model(nn.Module):
                def forward(self, x):
                    triple = Scaler.scale.__get__(self)
                    return functools.partial(shift, self, by=1)(triple(x))
            """,
        ),
        Valid(
            """
            import types

            import torch
            from torch import nn

            def scaled_forward(self, x):
                return self.proj(x) * 2

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    self.scaled = types.MethodType(scaled_forward, self)

                def forward(self, x):
                    return scaled_forward(self, x)
            """,
            note="bound once in __init__",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self.context.qualname(func) == "types.MethodType":
            self.report(node)
        elif isinstance(func, cst.Attribute) and func.attr.value == "__get__" and self._untraceable_binding(func.value):
            self.report(node)

    def _untraceable_binding(self, target: cst.BaseExpression) -> bool:
        """A lambda, a function defined in the traced function, or a torch/builtin callable."""
        if isinstance(target, cst.Lambda):
            return True
        qualified = self.context.qualname(target) or ""
        if qualified.startswith(("torch.", "builtins.")):
            return True
        if not isinstance(target, cst.Name):
            return False
        values = self.context.local_values(target.value)
        if values and all(isinstance(value, cst.Lambda) for value in values):
            return True
        return _nested_function(self.context.function, target.value) is not None


def _nested_function(function: Optional[cst.FunctionDef], name: str) -> Optional[cst.FunctionDef]:
    """The function named `name` defined inside `function`'s body, if any."""
    if function is None:
        return None
    found: Optional[cst.FunctionDef] = None

    class _Defs(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            nonlocal found
            if node is function:
                return True
            if node.name.value == name:
                found = node
            return False

    visit(function, _Defs())
    return found
