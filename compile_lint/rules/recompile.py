"""Recompile triggers: Python values Dynamo guards on that change from call to call.

Measured with torch 2.13 (backend="eager", default recompile_limit of 8):
- an int attribute of an nn.Module updated in forward recompiles on every call, then
  the frame runs eagerly once the limit is hit; a float attribute recompiles once, then
  is dynamic; a list attribute that grows recompiles on every call;
- a Python float/int argument recompiles once, then is dynamic, unless it reaches an
  argument Dynamo specializes (`range(n)`, `F.interpolate(scale_factor=)`, `F.dropout(p=)`,
  `F.layer_norm(eps=)`) or a `.to()` dtype: then every new value recompiles;
- `for i in range(x.shape[0])` unrolls the loop for one size: every new size recompiles,
  even after the dim was made dynamic (a branch on a shape only recompiles when it flips).
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from compile_lint.autofix.builders import spell
from compile_lint.linter.facts import Kind, annotation_kind
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid

# ----- shared helpers -----------------------------------------------------------


def _self_attribute(expr: cst.BaseExpression) -> Optional[str]:
    """`NAME` for an expression `self.NAME`, else None."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def _int_literal(expr: cst.BaseExpression) -> Optional[int]:
    """The value of an int literal (`3`, `-1`), else None; bools are not ints here."""
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _int_literal(expr.expression)
        return None if inner is None else -inner
    return None


def _mentions_self_attribute(expr: cst.CSTNode, name: str) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal found
            if _self_attribute(node) == name:
                found = True

    expr.visit(_Find())
    return found


def _all_params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def _find_param(function: cst.FunctionDef, name: str) -> Optional[cst.Param]:
    for param in _all_params(function):
        if param.name.value == name:
            return param
    return None


def _root_python_param(rule: Rule, expr: cst.BaseExpression) -> Optional[cst.Param]:
    """The parameter `expr` names when it is a non-tensor input of a compiled entry point.

    Only parameters of roots (forward, @torch.compile functions) are inputs Dynamo guards
    on; a helper's parameters are whatever its traced caller passes. A parameter
    annotated as a Tensor, or `self`, is not a Python value.
    """
    context = rule.context
    function = context.function
    if not isinstance(expr, cst.Name) or function is None or function not in context.regions.roots:
        return None
    param = _find_param(function, expr.value)
    if param is None or context.facts.param_kind(function, expr.value) is Kind.SELF:
        return None
    if annotation_kind(param.annotation, context.imports) in (Kind.TENSOR, Kind.MAYBE_TENSOR):
        return None
    if rule.context.facts._assigned(function).get(expr.value):
        return None  # reassigned in the body: no longer the raw input
    return param


def _is_numeric_literal(expr: Optional[cst.BaseExpression]) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        return _is_numeric_literal(expr.expression)
    return isinstance(expr, (cst.Integer, cst.Float))


def _annotation_name(param: cst.Param) -> str:
    if param.annotation is None:
        return ""
    expr = param.annotation.annotation
    return expr.value if isinstance(expr, cst.Name) else ""


# ----- JIT501 --------------------------------------------------------------------


class _AttributeUses(cst.CSTVisitor):
    """Every read of `self.NAME` in a class, with the function it is read in."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.functions: list[cst.FunctionDef] = []
        self.reads: list[tuple[cst.Attribute, Optional[cst.FunctionDef], list[cst.CSTNode]]] = []
        self.plain_assigns: list[cst.Assign] = []
        self.updates: list[cst.AugAssign] = []
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.FunctionDef):
            self.functions.append(node)
        if isinstance(node, cst.Attribute) and _self_attribute(node) == self.name:
            parent = self._stack[-1] if self._stack else None
            is_target = (isinstance(parent, cst.AugAssign) and parent.target is node) or (
                isinstance(parent, cst.AssignTarget) and parent.target is node)
            if not is_target:
                self.reads.append((node, self.functions[-1] if self.functions else None, list(self._stack)))
        if isinstance(node, cst.AugAssign) and _self_attribute(node.target) == self.name:
            self.updates.append(node)
        if isinstance(node, cst.Assign) and any(_self_attribute(t.target) == self.name for t in node.targets):
            self.plain_assigns.append(node)
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        if isinstance(original_node, cst.FunctionDef):
            self.functions.pop()


class MutatedModuleState(Rule):
    """Python state on `self` updated in forward (`self.step += 1`) recompiles on every call.

    Why: Dynamo treats an int attribute of an nn.Module as a constant and guards on its
    value, so a forward that changes it invalidates its own graph: every call recompiles,
    and after `recompile_limit` (8) recompiles the forward runs eagerly for good. A list
    attribute that grows (`self.cache.append(x)`) is guarded on its length: the same.
    (A float attribute, or a flag set once, costs a single recompile and is not flagged.)

    Instead: keep counters in a buffer,
    `self.register_buffer("step", torch.tensor(0), persistent=False)`, and update it in
    place (`self.step += 1` on a tensor is in-place and traced). The fix does this when
    the attribute is an int set once in `__init__` and only incremented; it is safe when
    every other read is tensor arithmetic, unsafe when code outside the compiled region
    reads it as a Python number (it becomes a 0-d tensor), and not offered when traced
    code branches on it. Move growing lists out of the compiled region.
    """

    code = "JIT501"
    name = "mutated-module-state"
    kind = "recompile"
    fix_applicability = "safe"
    message = (
        "updating Python state on `self` in forward recompiles on every call (eager after 8); "
        "keep counters in a registered buffer updated in place"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class WarmupScale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    self.step = 0

                def forward(self, x):
                    self.step += 1
                    return self.proj(x) * self.step
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            fixed="""
            import torch
            from torch import nn

            class WarmupScale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    self.register_buffer("step", torch.tensor(0), persistent=False)

                def forward(self, x):
                    self.step += 1
                    return self.proj(x) * self.step
            """,
            entry="WarmupScale",
        ),
        Invalid(
            """
            import torch.nn as nn

            class BatchNormStats(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.bn = nn.BatchNorm1d(8)
                    self.num_batches = 0

                def forward(self, x):
                    if self.training:
                        self.num_batches = self.num_batches + 1
                    self.num_batches += 1
                    return self.bn(x)
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            fixed="""
            import torch.nn as nn
            import torch

            class BatchNormStats(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.bn = nn.BatchNorm1d(8)
                    self.register_buffer("num_batches", torch.tensor(0), persistent=False)

                def forward(self, x):
                    if self.training:
                        self.num_batches = self.num_batches + 1
                    self.num_batches += 1
                    return self.bn(x)
            """,
            entry="BatchNormStats",
            note="the fix adds `import torch` where the file has none",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class KVCache(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.past = []

                def forward(self, k):
                    self.past.append(k)
                    return torch.cat(self.past[-2:], dim=0)
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="KVCache",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LoggedBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.calls = 0

                def forward(self, x):
                    self.calls += 1
                    return self.fc(x)

                def should_log(self):
                    return self.calls % 100 == 0
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="LoggedBlock",
            note="read as a Python number outside forward: the buffer fix is unsafe",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Tracker(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("step", torch.zeros((), dtype=torch.long), persistent=False)
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    self.step += 1
                    return self.fc(x)
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="Tracker",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class EMA(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.decay = 0.9
                    self.num_layers = 2
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(self.num_layers)])
                    self.register_buffer("avg", torch.zeros(8))

                def forward(self, x):
                    for layer in self.layers:
                        x = layer(x)
                    self.avg.mul_(self.decay).add_(x.mean(0) * (1 - self.decay))
                    return x + self.avg
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="EMA",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Capture(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.last_attention = None
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    attn = self.fc(x).softmax(-1)
                    self.last_attention = attn.detach()
                    steps = 0
                    steps += 1
                    return attn * steps
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="Capture",
        ),
    ]

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        name = _self_attribute(node.target)
        if name is not None and self._is_int_state(name):
            self.report(node, fix=self._buffer_fix(name))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = _self_attribute(target.target)
            if name is not None and _mentions_self_attribute(node.value, name) and self._is_int_state(name):
                self.report(node, fix=self._buffer_fix(name))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("append", "extend", "insert"):
            return
        name = _self_attribute(func.value)
        function = self.context.function
        if name is None or function is None:
            return
        if self._is_list_state(name):
            self.report(
                node,
                message=(
                    f"`self.{name}.{func.attr.value}(...)` in forward grows a list Dynamo guards on: "
                    "a recompile on every call (eager after 8); keep the list outside the compiled region"
                ),
            )

    def _is_list_state(self, name: str) -> bool:
        """True when every value the class gives `self.NAME` is a list."""
        cls = self.context.owner_class
        if cls is None:
            return False
        values = self.context.facts.self_attributes(cls).values.get(name, [])
        return bool(values) and all(
            isinstance(v, (cst.List, cst.ListComp))
            or (isinstance(v, cst.Call) and self.context.qualname(v.func) == "builtins.list")
            for v in values
        )

    def _is_int_state(self, name: str) -> bool:
        """True when `self.NAME` is a plain int the class initialises with a literal."""
        cls = self.context.owner_class
        if cls is None:
            return False
        attrs = self.context.facts.self_attributes(cls)
        if name in attrs.buffers:
            return False
        values = attrs.values.get(name, [])
        literals = [v for v in values if _int_literal(v) is not None]
        others = [v for v in values if _int_literal(v) is None and not _mentions_self_attribute(v, name)]
        return bool(literals) and not others

    def _buffer_fix(self, name: str) -> Optional[FixPlan]:
        cls = self.context.owner_class
        if cls is None:
            return None
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if init is None:
            return None
        uses = _AttributeUses(name)
        cls.visit(uses)
        if len(uses.plain_assigns) != 1 + sum(1 for a in uses.plain_assigns if _mentions_self_attribute(a.value, name)):
            return None  # reset elsewhere (`self.step = 0`): a buffer needs `.zero_()` there
        statement = self._init_statement(init, name)
        if statement is None:
            return None
        initial = _int_literal(statement.body[0].value)  # type: ignore[attr-defined]
        if any(not isinstance(u.operator, (cst.AddAssign, cst.SubtractAssign)) for u in uses.updates):
            return None  # `//=`, `/=`... differ on a long tensor
        traced = self.context.regions.functions
        applicability = "safe"
        for read, function, stack in uses.reads:
            if self._tensor_arithmetic(read, function, stack):
                continue
            if function is not None and function in traced:
                return None  # traced code reads it as a number: a tensor there would break the graph
            applicability = "unsafe"
        tensor_name, imports = spell(self.context, "torch.tensor")
        new = statement.with_changes(
            body=[cst.Expr(cst.parse_expression(
                f'self.register_buffer("{name}", {tensor_name}({initial}), persistent=False)'))]
        )
        return FixPlan(
            [(statement, new)],
            f"Keep `{name}` in a non-persistent buffer updated in place",
            applicability,
            imports,
        )

    @staticmethod
    def _init_statement(init: cst.FunctionDef, name: str) -> Optional[cst.SimpleStatementLine]:
        """`self.NAME = <int>` as a top-level statement of __init__, after super().__init__()."""
        seen_super = False
        for statement in init.body.body:
            if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
                continue
            small = statement.body[0]
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                func = small.value.func
                if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
                    seen_super = True
            if (isinstance(small, cst.Assign) and len(small.targets) == 1
                    and _self_attribute(small.targets[0].target) == name and _int_literal(small.value) is not None):
                return statement if seen_super else None
        return None

    def _tensor_arithmetic(self, read: cst.Attribute, function: Optional[cst.FunctionDef], stack: list) -> bool:
        """True when `read` is an operand of arithmetic whose other operand is a tensor,
        or part of its own update (`self.n = self.n + 1`)."""
        parent = stack[-1] if stack else None
        if isinstance(parent, cst.BinaryOperation) and function is not None:
            other = parent.right if parent.left is read else parent.left
            if self.context.facts.kind(other, function) is Kind.TENSOR:
                return True
            grand = stack[-2] if len(stack) > 1 else None
            if isinstance(grand, cst.Assign) and any(_self_attribute(t.target) == read.attr.value for t in grand.targets):
                return _int_literal(other) is not None and isinstance(parent.operator, (cst.Add, cst.Subtract))
        return False


# ----- JIT502 --------------------------------------------------------------------

# Arguments Dynamo bakes into the graph as constants: every new value recompiles.
_SPECIALIZED_KEYWORDS = {
    "torch.nn.functional.interpolate": ("scale_factor", 3),
    "torch.nn.functional.upsample": ("scale_factor", 3),
    "torch.nn.functional.dropout": ("p", 1),
    "torch.nn.functional.dropout1d": ("p", 1),
    "torch.nn.functional.dropout2d": ("p", 1),
    "torch.nn.functional.dropout3d": ("p", 1),
    "torch.nn.functional.alpha_dropout": ("p", 1),
    "torch.nn.functional.feature_alpha_dropout": ("p", 1),
    "torch.nn.functional.layer_norm": ("eps", 4),
    "builtins.range": (None, 0),
}


def _specialized_arguments(rule: Rule, call: cst.Call) -> Iterator[tuple[cst.BaseExpression, str]]:
    """(argument, description) pairs of `call` that Dynamo specializes on."""
    qualified = rule.context.qualname(call.func) or ""
    if qualified in _SPECIALIZED_KEYWORDS:
        keyword, position = _SPECIALIZED_KEYWORDS[qualified]
        short = qualified.rsplit(".", 1)[-1]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if keyword is None:  # range(): every argument
            for arg in positional:
                yield arg.value, "range()"
            return
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                yield arg.value, f"{short}({keyword}=)"
        if len(positional) > position:
            yield positional[position].value, f"{short}({keyword}=)"
        return
    func = call.func
    if (isinstance(func, cst.Attribute) and func.attr.value == "to"
            and rule.context.kind(func.value).tensorish):
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value in ("dtype", "device"):
                yield arg.value, ".to()"


class SpecializedScalarArgument(Rule):
    """A per-call Python value reaching an argument Dynamo specializes recompiles for every value.

    Why: most Python float/int inputs cost one recompile and then become dynamic, but
    some arguments are burned into the graph as constants: `range(n)` (the loop is
    unrolled), `F.interpolate(scale_factor=)`, `F.dropout(p=)`, `F.layer_norm(eps=)`, and
    the dtype or device of `.to()`. A forward parameter passed there recompiles for
    every new value, and after 8 values runs eagerly.

    Instead: fix the value at construction (`self.p = p` in `__init__`, an `nn.Dropout`
    or `nn.Upsample` module), pass an output `size=` instead of a varying
    `scale_factor`, and keep a small set of dtypes per compiled function.
    """

    code = "JIT502"
    name = "specialized-scalar-argument"
    kind = "recompile"
    message = "this argument is compiled in as a constant: every new value recompiles (eager after 8)"
    invalid = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Upsampler(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv2d(2, 2, 3, padding=1)

                def forward(self, x, scale: float = 2.0):
                    return self.conv(F.interpolate(x, scale_factor=scale, mode="nearest"))
            """,
            calls='[{"args": (torch.randn(1, 2, 8, 8),), "kwargs": {"scale": s}} for s in (1.5, 2.0, 2.5, 3.0)]',
            entry="Upsampler",
        ),
        Invalid(
            """
            import torch
            from torch.nn import functional as F

            @torch.compile(backend="eager")
            def mc_dropout(x, rate):
                return F.dropout(x, rate, training=True).mean(0)
            """,
            calls="[(torch.randn(4, 8), p) for p in (0.1, 0.2, 0.3)]",
            entry="mc_dropout",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Refiner(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, num_steps: int = 2):
                    for _ in range(num_steps):
                        x = x + self.fc(x).tanh()
                    return x
            """,
            calls='[{"args": (torch.randn(4, 8),), "kwargs": {"num_steps": n}} for n in (1, 2, 3, 4)]',
            entry="Refiner",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Caster(nn.Module):
                def forward(self, x, dtype=torch.float32):
                    return x.to(dtype) * 2
            """,
            calls="[(torch.randn(4, 8), d) for d in (torch.float32, torch.float64, torch.bfloat16)]",
            entry="Caster",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Decoder(nn.Module):
                def __init__(self, scale=2.0, p=0.1, eps=1e-5):
                    super().__init__()
                    self.scale, self.p, self.eps = scale, p, eps
                    self.num_layers = 2

                def forward(self, x):
                    x = F.interpolate(x, scale_factor=self.scale, mode="nearest")
                    x = F.dropout(x, p=self.p, training=self.training)
                    for _ in range(self.num_layers):
                        x = F.layer_norm(x, x.shape[-1:], eps=self.eps)
                    return x
            """,
            calls="[(torch.randn(1, 2, 8, 8),)] * 3",
            entry="Decoder",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Temperature(nn.Module):
                def forward(self, logits, temperature: float = 1.0):
                    return (logits / temperature).softmax(-1)
            """,
            calls='[{"args": (torch.randn(4, 8),), "kwargs": {"temperature": 0.7}}] * 3',
            entry="Temperature",
            note="a float used in arithmetic is not specialized (one recompile when it varies, then dynamic)",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Mixed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, ref):
                    h = self.fc(x.to(ref.dtype))
                    for i in range(x.shape[-1] // 4):
                        h = h + i
                    return h.to(x)
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))] * 3",
            entry="Mixed",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        for value, where in _specialized_arguments(self, node):
            param = _root_python_param(self, value)
            if param is None:
                continue
            if where == ".to()" and not self._python_dtype_or_device(param):
                continue
            self.report(
                value,
                message=(
                    f"`{param.name.value}` is an input compiled in as a constant by {where}: every new "
                    "value recompiles (eager after 8); fix it at construction or keep it constant"
                ),
            )

    def _python_dtype_or_device(self, param: cst.Param) -> bool:
        """True for a parameter that holds a dtype, device or device string."""
        if _annotation_name(param) in ("str", "dtype", "device"):
            return True
        if param.annotation is not None:
            qualified = self.context.qualname(param.annotation.annotation) or ""
            if qualified in ("torch.dtype", "torch.device"):
                return True
        default = param.default
        if isinstance(default, cst.SimpleString):
            return True
        if default is not None:
            qualified = self.context.qualname(default) or ""
            return qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in _DTYPE_NAMES
        return False


_DTYPE_NAMES = frozenset({
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8", "uint8",
    "int16", "short", "int32", "int", "int64", "long", "bool", "complex64", "complex128",
})
