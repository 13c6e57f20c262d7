"""Recompile triggers: Python values Dynamo guards on that change from call to call.

Measured with torch 2.13 (backend="eager", default recompile_limit of 8):
- an int attribute of an nn.Module updated in forward recompiles on every call, then
  the frame runs eagerly once the limit is hit; a float attribute recompiles once, then
  is dynamic; a list attribute that grows recompiles on every call;
- a Python float/int argument recompiles once, then is dynamic, unless it reaches an
  argument Dynamo specializes (`range(n)`, `F.interpolate(scale_factor=)`, `F.dropout(p=)`,
  norm `eps`, `F.pad(value=)`) or a `.to()` dtype: then every new value recompiles;
- `for i in range(x.shape[0])` unrolls the loop for one size: every new size recompiles,
  even after the dim was made dynamic (a branch on a shape only recompiles when it flips).

Not a rule, because 2.13 copes: `torch.compile(fn)` called again per step (same backend
string, mode or options, even on a new module instance) reuses the cached graph.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from compile_lint.autofix.builders import spell
from compile_lint.linter.facts import Kind, annotation_kind
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid
from compile_lint.linter.walk import visit

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

    visit(expr, _Find())
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
    on. A same-file helper's parameter counts when a traced caller passes such an input
    straight through (`self._upsample(x, scale)`). A parameter annotated as a Tensor, or
    `self`, is not a Python value.
    """
    function = rule.context.function
    if not isinstance(expr, cst.Name) or function is None:
        return None
    return _input_param(rule, function, expr.value, depth=0)


_MAX_HELPER_DEPTH = 4


def _input_param(rule: Rule, function: cst.FunctionDef, name: str, depth: int) -> Optional[cst.Param]:
    context = rule.context
    param = _find_param(function, name)
    if param is None or context.facts.param_kind(function, name) is Kind.SELF:
        return None
    if annotation_kind(param.annotation, context.imports) in (Kind.TENSOR, Kind.MAYBE_TENSOR):
        return None
    if context.facts._assigned(function).get(name):
        return None  # reassigned in the body: no longer the raw input
    if function in context.regions.roots:
        return param
    if depth >= _MAX_HELPER_DEPTH or function not in context.regions.functions:
        return None
    for caller, call in context.facts.call_sites().get(function, []):
        passed = _argument_for(function, param, call)
        if passed is not None and isinstance(passed.value, cst.Name):
            found = _input_param(rule, caller, passed.value.value, depth + 1)
            if found is not None:
                return found
    return None


def _argument_for(function: cst.FunctionDef, param: cst.Param, call: cst.Call) -> Optional[cst.Arg]:
    """The argument `call` passes for `param` of `function`, or None (absent, or behind `*args`)."""
    positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if positional[:1] == ["self"] and isinstance(call.func, cst.Attribute):
        positional = positional[1:]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param.name.value:
            return arg
    plain = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in call.args):
        return None
    if param.name.value in positional:
        index = positional.index(param.name.value)
        if index < len(plain):
            return plain[index]
    return None


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
    attribute that grows (`self.cache.append(x)`), an int class attribute and a `global`
    int counter behave the same. (A float attribute, a flag set once, or a dict entry
    replaced under the same key costs a single recompile and is not flagged.)

    Instead: keep counters in a buffer,
    `self.register_buffer("step", torch.tensor(0), persistent=False)`, and update it in
    place (`self.step += 1` on a tensor is in-place and traced). The fix does this when
    the attribute is an int set once in `__init__` and only incremented; it is safe when
    every other read is tensor arithmetic, unsafe when code outside the compiled region
    reads it as a Python number (it becomes a 0-d tensor), and not offered when traced
    code branches on it. Code in other files that reads the attribute also sees a 0-d
    tensor. Move growing lists out of the compiled region.
    """

    code = "JIT501"
    name = "mutated-module-state"
    kind = "recompile"
    fix_applicability = "safe"
    config_note = (
        "torch._dynamo.config.allow_unspec_int_on_nn_module = True makes int attributes dynamic "
        "after one recompile (measured on 2.13); globals and growing lists still recompile every call"
    )
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
        Invalid(
            """
            import math
            import torch
            from torch import nn

            class EpsilonGreedy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.q = nn.Linear(8, 4)
                    self.steps_done = 0

                def forward(self, obs):
                    eps = 0.05 + 0.85 * math.exp(-self.steps_done / 200)
                    self.steps_done += 1
                    q = self.q(obs)
                    explore = torch.rand(q.shape[0]) < eps
                    return torch.where(explore, torch.randint(0, 4, (q.shape[0],)), q.argmax(-1))
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="EpsilonGreedy",
            note="read as a Python number in forward: no fix (a tensor would change the math)",
        ),
        Invalid(
            """
            import torch

            STEP = 0

            @torch.compile(backend="eager")
            def train_step(x):
                global STEP
                STEP += 1
                return x.relu()
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="train_step",
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
        elif isinstance(node.target, cst.Name) and self._is_global_int(node.target.value):
            self.report(
                node,
                message=(
                    f"updating the global `{node.target.value}` in forward recompiles on every call "
                    "(eager after 8); keep the count in a registered buffer updated in place"
                ),
            )

    def _is_global_int(self, name: str) -> bool:
        """True for a `global NAME` of the visited function that the module sets to an int."""
        function = self.context.function
        if function is None:
            return False
        declared = False

        class _Globals(cst.CSTVisitor):
            def visit_Global(self, node: cst.Global) -> None:
                nonlocal declared
                declared = declared or any(item.name.value == name for item in node.names)

        visit(function.body, _Globals())
        if not declared:
            return False
        values = [
            small.value
            for statement in self.context.module.body if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body
            if isinstance(small, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
        ]
        return bool(values) and all(_int_literal(v) is not None for v in values)

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
        values = attrs.values.get(name, []) + self._class_level_values(cls, name)
        literals = [v for v in values if _int_literal(v) is not None]
        others = [v for v in values if _int_literal(v) is None and not _mentions_self_attribute(v, name)]
        return bool(literals) and not others

    @staticmethod
    def _class_level_values(cls: cst.ClassDef, name: str) -> list[cst.BaseExpression]:
        """Values of a class attribute `NAME = ...` (instances shadow it on first `+=`)."""
        return [
            small.value
            for statement in cls.body.body if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body
            if isinstance(small, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
        ]

    def _buffer_fix(self, name: str) -> Optional[FixPlan]:
        cls = self.context.owner_class
        if cls is None:
            return None
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if init is None:
            return None
        uses = _AttributeUses(name)
        visit(cls, uses)
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
            name = read.attr.value
            if isinstance(grand, cst.Assign) and any(_self_attribute(t.target) == name for t in grand.targets):
                return _int_literal(other) is not None and isinstance(parent.operator, (cst.Add, cst.Subtract))
        return False


# ----- JIT502 --------------------------------------------------------------------

# Arguments Dynamo bakes into the graph as constants: every new value recompiles.
_SPECIALIZED_KEYWORDS = {
    "torch.nn.functional.interpolate": ("scale_factor", 2),
    "torch.nn.functional.upsample": ("scale_factor", 2),
    "torch.nn.functional.dropout": ("p", 1),
    "torch.nn.functional.dropout1d": ("p", 1),
    "torch.nn.functional.dropout2d": ("p", 1),
    "torch.nn.functional.dropout3d": ("p", 1),
    "torch.nn.functional.alpha_dropout": ("p", 1),
    "torch.nn.functional.feature_alpha_dropout": ("p", 1),
    "torch.nn.functional.layer_norm": ("eps", 4),
    "torch.nn.functional.group_norm": ("eps", 4),
    "torch.nn.functional.rms_norm": ("eps", 3),
    "torch.nn.functional.batch_norm": ("eps", 7),
    "torch.nn.functional.pad": ("value", 3),
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
    unrolled), `F.interpolate(scale_factor=)`, `F.dropout(p=)`, the `eps` of
    `F.layer_norm`/`group_norm`/`rms_norm`/`batch_norm`, `F.pad(value=)`, and the dtype
    or device of `.to()` (measured on torch 2.13). A forward parameter passed there recompiles for
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
            import torch.nn.functional as F
            from torch import nn

            class Upsample2D(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv2d(2, 2, 3, padding=1)

                def _resize(self, hidden_states, factor):
                    return F.interpolate(hidden_states, None, factor, "nearest")

                def forward(self, hidden_states, scale_factor=2.0):
                    return self.conv(self._resize(hidden_states, scale_factor))
            """,
            calls='[(torch.randn(1, 2, 8, 8), s) for s in (1.5, 2.0, 2.5)]',
            entry="Upsample2D",
            note="the input reaches interpolate through a helper",
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
            import torch.nn.functional as F

            @torch.compile(backend="eager")
            def pad_and_norm(waveform, pad_value: float, eps: float = 1e-5):
                padded = F.pad(waveform, (0, 4), value=pad_value)
                return F.group_norm(padded, 2, eps=eps)
            """,
            calls="[(torch.randn(2, 4, 16), v, e) for v, e in ((0.0, 1e-5), (0.5, 1e-6), (1.0, 1e-4))]",
            entry="pad_and_norm",
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


# ----- JIT503 --------------------------------------------------------------------

# Leading dims (batch, sequence) are the ones that vary between calls; trailing dims are
# features or channels, fixed by the model's weights.
_VARYING_DIMS = (0, 1)
# Ops that return a tuple of a fixed length (values, indices), not a tensor to iterate.
_TUPLE_RESULTS = frozenset({
    "max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "aminmax", "std_mean",
    "var_mean", "frexp", "unique", "unique_consecutive", "split", "chunk", "unbind", "tensor_split",
    "nonzero", "where", "meshgrid", "broadcast_tensors", "histogram", "slogdet", "svd", "qr", "eig",
    "eigh", "lu", "cummax", "cummin", "hsplit", "vsplit", "dsplit", "split_with_sizes",
})
# torch.nn layers whose call is not one tensor.
_MULTI_OUTPUT_MODULES = frozenset({
    "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "RNN", "LSTM", "GRU",
    "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "FractionalMaxPool2d",
    "FractionalMaxPool3d", "AdaptiveLogSoftmaxWithLoss",
})
_CONTAINER_METHODS = frozenset({"keys", "values", "items", "get", "pop", "copy", "tolist", "numpy"})


class ShapeDependentLoop(Rule):
    """A Python loop over a tensor's batch or sequence size recompiles for every new size.

    Why: Dynamo unrolls Python loops, so `for t in range(x.size(1))`, `for row in x` or
    `x.unbind(0)` bake the number of iterations into the graph. Each new batch or
    sequence length recompiles (after 8 sizes the function runs eagerly), even with the
    dim marked dynamic. Branches on a shape (`if x.shape[0] > 4`) only recompile when they
    flip and are not flagged; neither are loops over trailing (feature/channel) dims.

    Instead: use batched tensor ops over the dim (`x * w`, `torch.cumsum`, `bmm`,
    `torch.vmap`), pad to a fixed length, or loop over a constant (`self.max_len`).
    """

    code = "JIT503"
    name = "shape-dependent-loop"
    kind = "recompile"
    message = (
        "a Python loop over a batch/sequence size is unrolled: every new size recompiles "
        "(eager after 8); use batched ops, torch.vmap, or pad to a fixed length"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class RNNDecoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cell = nn.GRUCell(8, 8)

                def forward(self, x):
                    B, T, _ = x.shape
                    h = x.new_zeros(B, 8)
                    outputs = []
                    for t in range(T):
                        h = self.cell(x[:, t], h)
                        outputs.append(h)
                    return torch.stack(outputs, 1)
            """,
            calls="[(torch.randn(2, t, 8),) for t in (3, 4, 5, 6)]",
            entry="RNNDecoder",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class PerSampleNorm(nn.Module):
                def forward(self, x):
                    y = x.float()
                    return torch.stack([row / row.norm() for row in y])
            """,
            calls="[(torch.randn(b, 8),) for b in (2, 3, 4, 5)]",
            entry="PerSampleNorm",
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def pairwise(boxes: torch.Tensor):
                scores = []
                for i in range(boxes.size(0)):
                    scores.append((boxes[i] - boxes).abs().sum(-1))
                return torch.stack(scores)
            """,
            calls="[(torch.randn(n, 4),) for n in (3, 4, 5, 6)]",
            entry="pairwise",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class CausalConvCache(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv1d(8, 8, 1)

                def forward(self, input_ids: torch.Tensor, hidden: torch.Tensor):
                    seq_len = input_ids.shape[1]
                    states = []
                    for position in range(seq_len - 1):
                        states.append(self.conv(hidden[..., position : position + 2]))
                    return torch.cat(states, -1)
            """,
            calls="[(torch.ones(1, n, dtype=torch.long), torch.randn(1, 8, 8)) for n in (3, 4, 5, 6)]",
            entry="CausalConvCache",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Unbinder(nn.Module):
                def forward(self, x):
                    return torch.stack([t.softmax(-1) for t in x.unbind(0)])
            """,
            calls="[(torch.randn(b, 8),) for b in (2, 3, 4, 5)]",
            entry="Unbinder",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.num_heads = 2

                def forward(self, x):
                    for layer in self.layers:
                        x = layer(x)
                    heads = x.chunk(self.num_heads, -1)
                    for i in range(self.num_heads):
                        x = x + heads[i].sum(-1, keepdim=True)
                    return x
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="Encoder",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class FPN(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lateral = nn.ModuleList([nn.Conv2d(4, 4, 1) for _ in range(2)])

                def forward(self, features):
                    out = []
                    for feature, conv in zip(features, self.lateral):
                        out.append(conv(feature))
                    for i in range(len(out)):
                        out[i] = out[i] * 2
                    return out
            """,
            calls="[([torch.randn(1, 4, 8, 8), torch.randn(1, 4, 4, 4)],)] * 3",
            entry="FPN",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ChannelMix(nn.Module):
                def forward(self, x):
                    if x.shape[0] > 64:
                        x = x[:64]
                    for d in range(x.dim()):
                        x = x.flip(d)
                    C = x.shape[-1]
                    for c in range(C // 4):
                        x = x + c
                    return torch.cumsum(x, dim=0)
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="ChannelMix",
        ),
    ]

    def visit_For(self, node: cst.For) -> None:
        if self._varying_iterable(node.iter):
            self.report(node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if self._varying_iterable(node.iter):
            self.report(node.iter)

    def visit_While(self, node: cst.While) -> None:
        if isinstance(node.test, cst.Comparison) and self._varying_size(node.test):
            self.report(node.test)

    def _varying_iterable(self, iterable: cst.BaseExpression) -> bool:
        """True when the loop's trip count is a leading dim of a tensor."""
        if isinstance(iterable, cst.Call):
            qualified = self.context.qualname(iterable.func) or ""
            if qualified == "builtins.range":
                return any(self._varying_size(arg.value) for arg in iterable.args)
            if qualified in ("builtins.enumerate", "builtins.zip", "builtins.reversed"):
                return any(self._varying_iterable(arg.value) for arg in iterable.args)
            if qualified == "torch.unbind" and iterable.args:
                return self._dim_argument(iterable, 1) == 0
            func = iterable.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("chunk", "tensor_split"):
                return False  # a fixed number of pieces
            if isinstance(func, cst.Attribute) and func.attr.value in ("unbind", "split"):
                # Only dim 0 (the batch, or time in sequence-first code): `unbind(1)` over
                # stacked layers or memories is as common as over time.
                if func.attr.value == "unbind":
                    return self._dim_argument(iterable, 0) == 0
                # split(k) yields ceil(size / k) pieces; split([2, 3]) a fixed number
                sizes = iterable.args[0].value if iterable.args else None
                return _int_literal(sizes) is not None and self._dim_argument(iterable, 1) == 0
        return self._certain_tensor(iterable)

    @staticmethod
    def _dim_argument(call: cst.Call, position: int) -> Optional[int]:
        """The `dim` argument of unbind/split (0 when absent), None when not a literal."""
        positional = [a for a in call.args if a.keyword is None]
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "dim":
                return _int_literal(arg.value)
        if len(positional) > position:
            return _int_literal(positional[position].value)
        return 0

    def __init__(self, context) -> None:
        super().__init__(context)
        self._in_progress: set[str] = set()

    def _certain_tensor(self, expr: cst.BaseExpression) -> bool:
        """A tensor for sure: not a bare forward parameter (often a list of feature maps)."""
        if isinstance(expr, cst.Name):
            key = "tensor:" + expr.value
            if key in self._in_progress:
                return False  # `x = x.flip(0)`: judged by its other assignments
            self._in_progress.add(key)
            try:
                return self._certain_tensor_name_or_value(expr)
            finally:
                self._in_progress.discard(key)
        return self._certain_tensor_name_or_value(expr)

    def _certain_tensor_name_or_value(self, expr: cst.BaseExpression) -> bool:
        context = self.context
        function = context.function
        if function is None:
            return False
        if isinstance(expr, cst.Name):
            param = _find_param(function, expr.value)
            if param is not None:
                return annotation_kind(param.annotation, context.imports) is Kind.TENSOR
            values = context.facts._assigned(function).get(expr.value, [])
            return any(isinstance(v, cst.BaseExpression) and self._certain_tensor_value(v) for v in values)
        return self._certain_tensor_value(expr)

    def _certain_tensor_value(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "data"):
            return self._certain_tensor_value(expr.value)
        if isinstance(expr, cst.Name):
            return self._certain_tensor(expr)
        if isinstance(expr, cst.BinaryOperation):
            return self._certain_tensor_value(expr.left) or self._certain_tensor_value(expr.right)
        if isinstance(expr, cst.Subscript):
            return self._certain_tensor(expr.value)
        if isinstance(expr, cst.Call):
            func = expr.func
            qualified = self.context.qualname(func) or ""
            if qualified.startswith("torch."):
                short = qualified.rsplit(".", 1)[-1]
                return short not in _TUPLE_RESULTS and self.context.kind(expr) is Kind.TENSOR
            if _self_attribute(func) is not None:
                return self._tensor_submodule(_self_attribute(func) or "")
            # A tensor method (`x.float()`) on a tensor.
            return (isinstance(func, cst.Attribute) and func.attr.value not in _TUPLE_RESULTS
                    and func.attr.value not in _CONTAINER_METHODS and _self_attribute(func) is None
                    and self.context.kind(func.value) is Kind.TENSOR)
        return False

    def _tensor_submodule(self, name: str) -> bool:
        """True when `self.NAME` is a built-in torch.nn layer that returns one tensor.

        The model's own submodules may return dicts or tuples (detection heads, HF outputs),
        and so may recurrent and attention layers; those are not taken as tensors.
        """
        cls = self.context.owner_class
        if cls is None:
            return False
        values = self.context.facts.self_attributes(cls).values.get(name, [])
        for value in values:
            qualified = self.context.qualname(value.func) if isinstance(value, cst.Call) else None
            if not qualified or not qualified.startswith("torch.nn."):
                return False
            short = qualified.rsplit(".", 1)[-1]
            if short in _MULTI_OUTPUT_MODULES or not short[:1].isupper():
                return False
        return bool(values)

    def _varying_size(self, expr: cst.BaseExpression) -> bool:
        """True when the number `expr` computes depends on a leading dim of a tensor.

        Walks arithmetic only (`x.shape[0] - 1`, `min(T, 4)`, `T // 2`), so a name used
        inside an unrelated call (`x.view(B, -1)`) does not count.
        """
        if isinstance(expr, cst.BinaryOperation):
            return self._varying_size(expr.left) or self._varying_size(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self._varying_size(expr.expression)
        if isinstance(expr, cst.Comparison):
            return self._varying_size(expr.left) or any(self._varying_size(t.comparator) for t in expr.comparisons)
        if isinstance(expr, cst.Name):
            return self._leading_dim_name(expr.value)
        if isinstance(expr, cst.Subscript):
            value = expr.value
            if (isinstance(value, cst.Attribute) and value.attr.value == "shape"
                    and self.context.kind(value.value).tensorish and len(expr.slice) == 1):
                index = expr.slice[0].slice
                return isinstance(index, cst.Index) and _int_literal(index.value) in _VARYING_DIMS
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "size" and len(expr.args) == 1:
                return (self.context.kind(func.value).tensorish
                        and _int_literal(expr.args[0].value) in _VARYING_DIMS)
            qualified = self.context.qualname(func)
            if qualified == "builtins.len" and len(expr.args) == 1:
                return self._certain_tensor(expr.args[0].value)
            if qualified in ("builtins.min", "builtins.max", "builtins.int", "builtins.abs", "math.ceil",
                             "math.floor"):
                return any(self._varying_size(arg.value) for arg in expr.args)
        return False

    def _leading_dim_name(self, name: str) -> bool:
        """True for `B` in `B, T, C = x.shape` (positions 0 and 1) or `n = x.size(0)`."""
        function = self.context.function
        key = "dim:" + name
        if function is None or key in self._in_progress:
            return False
        self._in_progress.add(key)
        try:
            return self._leading_dim_assignment(function, name)
        finally:
            self._in_progress.discard(key)

    def _leading_dim_assignment(self, function: cst.FunctionDef, name: str) -> bool:
        for value in self.context.facts._assigned(function).get(name, []):
            if isinstance(value, cst.BaseExpression):
                if self._varying_size(value):
                    return True
            elif value[0] == "element":
                source = value[1]
                if self._shape_tuple(source) and self._unpacked_position(function, name, source) in _VARYING_DIMS:
                    return True
        return False

    def _shape_tuple(self, expr: object) -> bool:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
            return self.context.kind(expr.value).tensorish
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size":
            return not expr.args and self.context.kind(expr.func.value).tensorish
        return False

    @staticmethod
    def _unpacked_position(function: cst.FunctionDef, name: str, source: cst.BaseExpression) -> Optional[int]:
        """Where `name` sits in the tuple target assigned `source`; None after a starred target."""
        position: Optional[int] = None

        class _Find(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                nonlocal position
                if node.value is not source:
                    return
                for target in node.targets:
                    if isinstance(target.target, (cst.Tuple, cst.List)):
                        for index, element in enumerate(target.target.elements):
                            if isinstance(element, cst.StarredElement):
                                return
                            if isinstance(element.value, cst.Name) and element.value.value == name:
                                position = index

        visit(function, _Find())
        return position


# ----- JIT504 --------------------------------------------------------------------


def _name_uses(function: cst.FunctionDef, name: str) -> list[tuple[cst.Name, list[cst.CSTNode]]]:
    """Each load of `name` in `function` (not in nested defs), with its ancestors."""
    uses: list[tuple[cst.Name, list[cst.CSTNode]]] = []
    stack: list[cst.CSTNode] = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and node is not function:
                stack.append(node)  # libcst still calls on_leave for a node whose children it skips
                return False
            if isinstance(node, cst.Name) and node.value == name and stack:
                parent = stack[-1]
                is_declaration = isinstance(parent, cst.Param) or (
                    isinstance(parent, cst.Attribute) and parent.attr is node) or (
                    isinstance(parent, cst.Arg) and parent.keyword is node)
                if not is_declaration:
                    uses.append((node, list(stack)))
            stack.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            stack.pop()

    visit(function, _Find())
    return uses


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
        "when it first changes; pass a 0-d tensor (torch.tensor(value)) instead"
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
            calls="[(torch.randn(4, 8), t) for t in (0.5, 0.7, 1.0)]",
            entry="sample",
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
        for param in _all_params(node):
            if self._numeric_param(param) and self._used_only_as_operand(node, param) is not None:
                self.report(param.name, fix=self._tensor_fix(node, param))

    def _numeric_param(self, param: cst.Param) -> bool:
        if _annotation_name(param) in ("float", "int"):
            return True
        return param.annotation is None and _is_numeric_literal(param.default)

    def _used_only_as_operand(self, function: cst.FunctionDef, param: cst.Param) -> Optional[bool]:
        """None when `param` never meets a tensor in arithmetic; else whether every use does.

        A parameter reassigned in the body, or reaching an argument JIT502 reports, is left
        alone here.
        """
        name = param.name.value
        if self.context.facts._assigned(function).get(name):
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
                if any(value is use for value, _ in _specialized_arguments(self, stack[-2])):
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
        name = function.name.value
        calls: list[cst.Call] = []

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                if isinstance(node.func, cst.Name) and node.func.value == name:
                    calls.append(node)

        visit(self.context.module, _Calls())
        found = [_argument_for(function, param, call) for call in calls]
        return [arg for arg in found if arg is not None]
