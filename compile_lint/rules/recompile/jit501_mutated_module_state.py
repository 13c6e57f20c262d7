"""JIT501 mutated-module-state: Python state on `self` updated in forward (`self.step += 1`) recompiles on every call."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.facts import Kind
from compile_lint.analysis.walk import iter_nodes, visit
from compile_lint.rules._fixes import spell
from compile_lint.rules._syntax import int_literal, self_attribute
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid


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
            lines=[11],
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
            lines=[11, 12],
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
            lines=[10],
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
            fixed="""
            import torch
            from torch import nn

            class LoggedBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.register_buffer("calls", torch.tensor(0), persistent=False)

                def forward(self, x):
                    self.calls += 1
                    return self.fc(x)

                def should_log(self):
                    return self.calls % 100 == 0
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="LoggedBlock",
            note="read as a Python number outside forward: the buffer fix is unsafe",
            lines=[11],
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
            lines=[13],
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
            lines=[8],
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
        name = self_attribute(node.target)
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
        declared = any(
            type(node) is cst.Global and any(item.name.value == name for item in node.names)  # type: ignore[attr-defined]
            for node in iter_nodes(function.body)
        )
        if not declared:
            return False
        values = [
            small.value
            for statement in self.context.module.body if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body
            if isinstance(small, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
        ]
        return bool(values) and all(int_literal(v) is not None for v in values)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = self_attribute(target.target)
            if name is not None and _mentions_self_attribute(node.value, name) and self._is_int_state(name):
                self.report(node, fix=self._buffer_fix(name))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("append", "extend", "insert"):
            return
        name = self_attribute(func.value)
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
        literals = [v for v in values if int_literal(v) is not None]
        others = [v for v in values if int_literal(v) is None and not _mentions_self_attribute(v, name)]
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
        initial = int_literal(statement.body[0].value)  # type: ignore[attr-defined]
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
                    and self_attribute(small.targets[0].target) == name and int_literal(small.value) is not None):
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
            if isinstance(grand, cst.Assign) and any(self_attribute(t.target) == name for t in grand.targets):
                return int_literal(other) is not None and isinstance(parent.operator, (cst.Add, cst.Subtract))
        return False


def _mentions_self_attribute(expr: cst.CSTNode, name: str) -> bool:
    return any(type(node) is cst.Attribute and self_attribute(node) == name for node in iter_nodes(expr))


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
        if isinstance(node, cst.Attribute) and self_attribute(node) == self.name:
            parent = self._stack[-1] if self._stack else None
            is_target = (isinstance(parent, cst.AugAssign) and parent.target is node) or (
                isinstance(parent, cst.AssignTarget) and parent.target is node)
            if not is_target:
                self.reads.append((node, self.functions[-1] if self.functions else None, list(self._stack)))
        if isinstance(node, cst.AugAssign) and self_attribute(node.target) == self.name:
            self.updates.append(node)
        if isinstance(node, cst.Assign) and any(self_attribute(t.target) == self.name for t in node.targets):
            self.plain_assigns.append(node)
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        if isinstance(original_node, cst.FunctionDef):
            self.functions.pop()

