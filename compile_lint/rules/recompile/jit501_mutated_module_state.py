"""JIT501 mutated-module-state: Python state on `self` updated in forward
(`self.step += 1`) recompiles on every call."""

from __future__ import annotations

import struct
from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.literals import int_literal
from compile_lint.analysis.syntax.walk import iter_nodes, visit, walk
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.syntax import self_attribute


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
    place (`self.step.add_(1)`): one graph, no recompile, and the buffer stays the same
    tensor, which CUDA graphs (`mode="reduce-overhead"`) need. Rebinding it
    (`self.step = self.step + 1`) makes the buffer an output of the CUDA graph, which the
    next replay overwrites ("accessing tensor output of CUDAGraphs that has been
    overwritten by a subsequent run", measured on an H200 with torch 2.11). The fix does
    this when the attribute is an int set once in `__init__` and changed by `+=`, `-=`,
    `*=` with int steps or `self.step = self.step + k` (`add_`, `sub_`, `mul_`;
    `self.step = k - self.step` becomes `copy_`), and resets to a literal become `fill_`;
    the buffer is int64, as the int was exact. Python arithmetic the counter feeds into
    tensor math stays exact (`min(1.0, self.step / self.warmup)` becomes
    `torch.clamp(self.step / self.warmup, max=1.0)`). It is always unsafe: every other
    reader, in this file or another, now sees a 0-d tensor; a model materialised from the
    meta device must refill the buffer; an in-place update raises where the int did not
    on a model built under `torch.inference_mode()` and run outside it, and in a backward
    through two calls of the module (one module applied twice, or two calls' losses
    summed) when the counter multiplies a tensor that needs grad ("modified by an inplace
    operation"). No fix where traced code branches on the counter, indexes with it or
    passes it to a function, or where code formats it as text. Move growing lists out of
    the compiled region.
    """

    code = "JIT501"
    name = "mutated-module-state"
    kind = "recompile"
    fix_applicability = "unsafe"
    config_note = (
        "torch._dynamo.config.allow_unspec_int_on_nn_module = True makes int attributes dynamic "
        "after one recompile (measured on 2.13); globals and growing lists still recompile every call"
    )
    message = (
        "updating Python state on `self` in forward recompiles on every call (eager after 8); "
        "keep counters in a registered buffer, updated in place (`self.step.add_(1)`)"
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
                    self.step.add_(1)
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
                        self.num_batches.add_(1)
                    self.num_batches.add_(1)
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
                    self.calls.add_(1)
                    return self.fc(x)

                def should_log(self):
                    return self.calls % 100 == 0
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="LoggedBlock",
            note="read as a Python number outside forward: `should_log` now returns a 0-d bool tensor",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LinearWarmup(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    self.warmup = 3
                    self.step = 0

                def forward(self, x):
                    self.step += 1
                    scale = min(1.0, self.step / self.warmup)
                    return self.proj(x) * scale

                def restart(self):
                    self.step = 0
            """,
            fixed="""
            import torch
            from torch import nn

            class LinearWarmup(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    self.warmup = 3
                    self.register_buffer("step", torch.tensor(0), persistent=False)

                def forward(self, x):
                    self.step.add_(1)
                    scale = torch.clamp(self.step / self.warmup, max=1.0)
                    return self.proj(x) * scale

                def restart(self):
                    self.step.fill_(0)
            """,
            calls="[(torch.randn(4, 8),)] * 5",
            entry="LinearWarmup",
            note="Python arithmetic on the counter becomes tensor arithmetic; the reset refills the buffer",
            lines=[12],
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
                    "(eager after 8); keep the count in a registered buffer, updated in place"
                ),
            )

    def _is_global_int(self, name: str) -> bool:
        """True for a `global NAME` of the visited function that the module sets to an int."""
        function = self.context.function
        if function is None:
            return False
        declared = any(
            type(node) is cst.Global and any(item.name.value == name for item in node.names)
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
        """Register `self.NAME` as a 0-d buffer and update it in place; None where that
        could change what the code computes."""
        cls = self.context.owner_class
        if cls is None or self._class_level_values(cls, name):
            return None  # register_buffer refuses a name the class itself defines
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        statement = self._init_statement(init, name) if init is not None else None
        if statement is None:
            return None
        uses = _AttributeUses(name)
        visit(cls, uses)
        imports: list[str] = []
        replacements: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        for assign, _ in uses.plain_assigns:
            if assign is statement.body[0]:
                continue
            if len(assign.targets) != 1:
                return None
            if _mentions_self_attribute(assign.value, name):
                if not _is_step(assign.value, name):
                    return None  # `self.n = self.n // 2`, `max(self.n - 1, 0)`: not an int step
                replacements.append((assign, _in_place_step(assign, name)))
                continue
            value = int_literal(assign.value)
            if value is None:
                return None
            # `self.n = 0` would replace the buffer by a Python int: refill it instead.
            replacements.append((assign, _in_place_call(assign.targets[0].target, "fill_", assign.value, assign)))
        for update, function in uses.updates:
            in_place = self._in_place(update, function)
            if in_place is None:
                return None
            replacements.append((update, in_place))
        traced = self.context.regions.functions
        clamped: dict[cst.BaseExpression, None] = {}  # roots of arithmetic with min()/max(), in order
        for read, function, stack in uses.reads:
            if _own_update(read, stack):
                continue
            if function is None or function not in traced:
                if _formats_or_checks_type(self.context, stack):
                    return None  # str(), f-strings, isinstance(..., int) see a tensor
                continue
            tree = _ScalarTree(self.context, name, function, read, stack)
            if not tree.feeds_tensor_arithmetic():
                return None  # traced code reads it as a number: a tensor there would break the graph
            if tree.has_min_max():
                clamped[tree.root] = None
        if clamped:
            clamp, needed = spell(self.context, "torch.clamp")
            imports.extend(needed)
            replacements.extend((root, _clamped(root, clamp)) for root in clamped)
        tensor_name, needed = spell(self.context, "torch.tensor")
        imports.extend(needed)
        initial = int_literal(statement.body[0].value)  # type: ignore[attr-defined]
        new_init = statement.with_changes(
            body=[cst.Expr(cst.parse_expression(
                f'self.register_buffer("{name}", {tensor_name}({initial}), persistent=False)'))]
        )
        return FixPlan(
            [(statement, new_init), *replacements],
            f"Keep `{name}` in a non-persistent 0-d buffer, updated in place "
            "(code that reads it as a Python int now sees a tensor)",
            "unsafe",
            tuple(dict.fromkeys(imports)),
        )

    def _in_place(self, update: cst.AugAssign, function: Optional[cst.FunctionDef]) -> Optional[cst.Expr]:
        """`self.n.add_(k)` for `self.n += k`: the buffer stays the same tensor (CUDA graphs
        replay into it), and int64 keeps an int step exact."""
        method = _IN_PLACE.get(type(update.operator))
        if method is None:
            return None  # `//=`, `/=`... differ on a long tensor
        step = update.value
        exact = int_literal(step) is not None or (
            function is not None and self.context.facts.kind(step, function) is Kind.SHAPE)
        if not exact:
            return None  # a float or tensor step changes the counter's type in Python too
        return _in_place_call(update.target, method, step, update)

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


# Augmented updates and the in-place method the fix writes for each; exact on an int64
# tensor as on an int.
_IN_PLACE = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_"}


def _in_place_call(target: cst.BaseExpression, method: str, argument: cst.BaseExpression,
                   replaced: cst.BaseSmallStatement) -> cst.Expr:
    """`TARGET.METHOD(ARGUMENT)` as a statement, in the place (and with the `;`) of `replaced`."""
    argument = argument.with_changes(lpar=[], rpar=[]) if argument.lpar else argument
    return cst.Expr(
        cst.Call(func=cst.Attribute(value=target, attr=cst.Name(method)), args=[cst.Arg(argument)]),
        semicolon=replaced.semicolon,
    )


def _in_place_step(assign: cst.Assign, name: str) -> cst.Expr:
    """The in-place form of `self.n = self.n + k`, `k + self.n`, `self.n - k` (`add_`/`sub_`)
    or `k - self.n` (`copy_`, which writes the out-of-place value back into the buffer)."""
    value = assign.value
    assert isinstance(value, cst.BinaryOperation)
    target = assign.targets[0].target
    counter_left = self_attribute(value.left) == name and int_literal(value.right) is not None
    if isinstance(value.operator, cst.Add):
        step = value.right if counter_left else value.left
        return _in_place_call(target, "add_", step, assign)
    if counter_left:
        return _in_place_call(target, "sub_", value.right, assign)
    return _in_place_call(target, "copy_", value, assign)


def _is_step(value: cst.BaseExpression, name: str) -> bool:
    """True for `self.NAME + k` or `self.NAME - k` with an int literal `k`."""
    if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Add, cst.Subtract))):
        return False
    operands = (value.left, value.right)
    return any(self_attribute(a) == name and int_literal(b) is not None for a, b in (operands, operands[::-1]))


def _own_update(read: cst.Attribute, stack: list[cst.CSTNode]) -> bool:
    """True for the read in `self.n = self.n + k` (or `- k`) with an int literal `k`."""
    parent = stack[-1] if stack else None
    grand = stack[-2] if len(stack) > 1 else None
    name = read.attr.value
    return (isinstance(grand, cst.Assign) and grand.value is parent and parent is not None
            and _is_step(parent, name) and any(self_attribute(t.target) == name for t in grand.targets))


_FORMATTERS = frozenset({"builtins.str", "builtins.repr", "builtins.format", "builtins.print",
                         "builtins.isinstance", "builtins.type", "json.dumps", "json.dump"})


def _formats_or_checks_type(context, stack: list[cst.CSTNode]) -> bool:
    """True when the read is formatted as text or its type is checked: a 0-d tensor prints
    as `tensor(3)` and is no `int`."""
    for node in reversed(stack):
        if isinstance(node, cst.FormattedString):
            return True
        if isinstance(node, cst.Call) and context.qualname(node.func) in _FORMATTERS:
            return True
        if (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo)
                and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString))):
            return True
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
    return False


class _ScalarTree:
    """The Python arithmetic a counter read sits in, and whether a 0-d tensor there keeps
    every value: `x * min(1.0, self.step / self.warmup)`.

    The counter's value is an exact integer; integer `+ - *` with int literals or int
    attributes stays exact on an int64 tensor, one division (or one product with a float
    that float32 holds exactly) rounds once (float32 here, float64 then float32 in Python,
    the same float32 value), and `min`/`max` with a literal become `torch.clamp`. The value
    must then meet a tensor in `+ - * /`, directly or through a local used only so, where a
    Python float and a 0-d float32 tensor give the same result (measured on float32,
    float16 and bfloat16 tensors; a float64 tensor sees the float32 rounding).
    """

    def __init__(self, context, name: str, function: cst.FunctionDef, read: cst.Attribute,
                 stack: list[cst.CSTNode]) -> None:
        self.context = context
        self.name = name
        self.function = function
        self.root: cst.BaseExpression = read
        parents = list(reversed(stack))
        index = 0
        while index < len(parents):
            parent = parents[index]
            if isinstance(parent, cst.Arg):  # an argument of min()/max(): judge the call
                index += 1
                continue
            if isinstance(parent, cst.BaseExpression) and self._exactness(parent) is not None:
                self.root = parent
                index += 1
                continue
            break
        self.consumer = parents[index] if index < len(parents) else None

    def feeds_tensor_arithmetic(self) -> bool:
        """True when the tree's value meets a tensor in `+ - * /`, directly or through a local."""
        consumer = self.consumer
        if self._tensor_operand_of(consumer, self.root):
            return True
        if (isinstance(consumer, cst.Assign) and len(consumer.targets) == 1
                and isinstance(consumer.targets[0].target, cst.Name)):
            return self._local_meets_tensors(consumer.targets[0].target.value)
        return False

    def _tensor_operand_of(self, node: Optional[cst.CSTNode], operand: cst.CSTNode) -> bool:
        if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _TENSOR_OPERATORS)):
            return False
        other = node.right if node.left is operand else node.left
        return self.context.facts.kind(other, self.function) is Kind.TENSOR

    def _local_meets_tensors(self, local: str) -> bool:
        """True when `local` is assigned once in the function and every read of it is an
        operand of tensor arithmetic."""
        uses = _NameUses(local)
        visit(self.function.body, uses)
        return uses.bindings == 1 and bool(uses.reads) and all(
            self._tensor_operand_of(parent, read) for read, parent in uses.reads)

    def _exactness(self, expr: cst.BaseExpression) -> Optional[str]:
        """"int" for exact integer arithmetic on the counter, "rounded" after one rounding
        step, None for anything else."""
        if self_attribute(expr) == self.name or int_literal(expr) is not None or self._int_attribute(expr):
            return "int"
        if isinstance(expr, cst.BinaryOperation):
            left, right = self._exactness(expr.left), self._exactness(expr.right)
            if isinstance(expr.operator, cst.Divide):
                # Python raises on `1 / self.step` at 0 where a tensor gives inf: divide only
                # by what is not the counter (and not a literal 0).
                divisor_ok = not _mentions_self_attribute(expr.right, self.name) and int_literal(expr.right) != 0
                return "rounded" if left == right == "int" and divisor_ok else None
            if not isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply)):
                return None
            if left == right == "int":
                return "int"
            if {left, right} == {"int", None} and (_float32_literal(expr.left) or _float32_literal(expr.right)):
                return "rounded"
            return None
        bound = self._min_max_bound(expr) if isinstance(expr, cst.Call) else None
        return self._exactness(bound[2]) if bound is not None else None

    def _int_attribute(self, expr: cst.BaseExpression) -> bool:
        """`self.warmup` where the class only ever assigns it int literals."""
        attr = self_attribute(expr)
        cls = self.context.owner_class
        if attr is None or cls is None:
            return False
        values = self.context.facts.self_attributes(cls).values.get(attr, [])
        return bool(values) and all(int_literal(v) is not None for v in values)

    def _min_max_bound(self, call: cst.Call) -> Optional[tuple[str, cst.BaseExpression, cst.BaseExpression]]:
        """("max" or "min" keyword of torch.clamp, the literal bound, the other argument) for
        `min(c, v)`/`max(v, c)` with a numeric literal `c`."""
        name = self.context.qualname(call.func)
        if name not in ("builtins.min", "builtins.max") or len(call.args) != 2:
            return None
        if any(arg.keyword is not None or arg.star for arg in call.args):
            return None
        first, second = (arg.value for arg in call.args)
        for bound, value in ((first, second), (second, first)):
            if int_literal(bound) is not None or _float32_literal(bound):
                return ("max" if name == "builtins.min" else "min"), bound, value
        return None

    def has_min_max(self) -> bool:
        """True when the arithmetic holds a `min`/`max` with a literal bound (made `torch.clamp`)."""
        calls: list[cst.Call] = []

        def collect(node: cst.CSTNode) -> bool:
            if isinstance(node, cst.Call):
                calls.append(node)
            return True

        walk(self.root, collect)
        return any(self._min_max_bound(call) is not None for call in calls)


_TENSOR_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


def _float32_literal(expr: cst.BaseExpression) -> bool:
    """A float literal that float32 holds exactly (`1.0`, `0.5`), so rounding it is a no-op."""
    if not isinstance(expr, cst.Float):
        return False
    value = float(expr.evaluated_value)
    return struct.unpack("f", struct.pack("f", value))[0] == value


def _clamped(tree: cst.BaseExpression, clamp: str) -> cst.BaseExpression:
    """`tree` with every `min(c, v)`/`max(v, c)` (c a literal) as `torch.clamp(v, max=c)`."""

    class _ToClamp(cst.CSTTransformer):
        def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
            func = updated_node.func
            if not (isinstance(func, cst.Name) and func.value in ("min", "max") and len(updated_node.args) == 2):
                return updated_node
            first, second = (arg.value for arg in updated_node.args)
            literal_first = int_literal(first) is not None or isinstance(first, cst.Float)
            bound, value = (first, second) if literal_first else (second, first)
            keyword = "max" if func.value == "min" else "min"
            return cst.Call(
                func=cst.parse_expression(clamp),
                args=[
                    cst.Arg(value.with_changes(lpar=[], rpar=[]) if isinstance(value, cst.BinaryOperation) else value,
                            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    cst.Arg(bound, keyword=cst.Name(keyword), equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))),
                ],
                lpar=updated_node.lpar,
                rpar=updated_node.rpar,
            )

    return tree.visit(_ToClamp())  # type: ignore[return-value]


def _is_label(name: cst.Name, parent: Optional[cst.CSTNode]) -> bool:
    """True for a Name that reads no variable: `obj.NAME`, `f(NAME=...)`."""
    return (isinstance(parent, cst.Attribute) and parent.attr is name) or (
        isinstance(parent, cst.Arg) and parent.keyword is name)


class _NameUses(cst.CSTVisitor):
    """Bindings of a local name in a function body, and each read with its parent node."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.bindings = 0
        self.reads: list[tuple[cst.Name, Optional[cst.CSTNode]]] = []
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name) and node.value == self.name:
            parent = self._stack[-1] if self._stack else None
            if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor,
                                   cst.AsName, cst.NamedExpr)):
                self.bindings += 1 if isinstance(parent, cst.AssignTarget) else 2
            elif not _is_label(node, parent):
                self.reads.append((node, parent))
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


def _mentions_self_attribute(expr: cst.CSTNode, name: str) -> bool:
    return any(type(node) is cst.Attribute and self_attribute(node) == name for node in iter_nodes(expr))


class _AttributeUses(cst.CSTVisitor):
    """Every read of `self.NAME` in a class, with the function it is read in."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.functions: list[cst.FunctionDef] = []
        self.reads: list[tuple[cst.Attribute, Optional[cst.FunctionDef], list[cst.CSTNode]]] = []
        self.plain_assigns: list[tuple[cst.Assign, Optional[cst.FunctionDef]]] = []
        self.updates: list[tuple[cst.AugAssign, Optional[cst.FunctionDef]]] = []
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
        function = self.functions[-1] if self.functions else None
        if isinstance(node, cst.AugAssign) and self_attribute(node.target) == self.name:
            self.updates.append((node, function))
        if isinstance(node, cst.Assign) and any(self_attribute(t.target) == self.name for t in node.targets):
            self.plain_assigns.append((node, function))
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        if isinstance(original_node, cst.FunctionDef):
            self.functions.pop()
