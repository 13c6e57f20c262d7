"""JIT304 min-max-key-over-tensors: `min(...)`/`max(...)` with `key=` over tensors breaks
the graph, whatever the key."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.certainty import EAGER_TENSOR, SAFE_OPERANDS, receives_tensor_only_method
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes, walk
from compile_lint.fixes.branches.conditions import operand_evidence
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.syntax import is_builtin_call, keyword_argument, positional_arguments


class MinMaxKeyOverTensors(Rule):
    """`min(...)`/`max(...)` with `key=` over tensors breaks the graph, whatever the key.

    Why: Dynamo 2.13 handles `min`/`max` of tensors only without `key=`; with a key
    (even `len` or a shape) over tensor elements it gives up ("invalid call to builtin
    op handler"); with `fullgraph=True` compilation fails.

    Instead: stack the candidates and pick with `argmin`/`argmax`, indexing with a
    1-element tensor (a 0-d index is itself data-dependent):
    `stacked = torch.stack(xs); best = stacked[scores.argmax(0, keepdim=True)][0]`.
    Over shapes or Python values `min`/`max` with `key=` is fine.

    The fix does this for `max(xs, key=lambda s: <full reduction of s>)` (`.mean()`,
    `.sum()`, `.norm()`...) where `xs` is a local list built once by a comprehension whose
    loop variable only enters arithmetic over `range(...)`, so every candidate has one
    shape and dtype: `torch.stack(xs)[torch.stack([f(s) for s in xs]).argmax(0,
    keepdim=True)][0]`. Ties pick the first candidate, as Python's `max`/`min` do
    (`argmax`/`argmin` return the first occurrence; measured on CPU eager and Inductor).
    Unsafe: a NaN score makes `argmax` pick it where Python's comparisons skip it, and the
    result is a new tensor rather than the list's own element. Candidates whose shapes may
    differ (module outputs, slices by the loop variable, several positional arguments)
    get no fix: `torch.stack` would raise.
    """

    code = "JIT304"
    name = "min-max-key-over-tensors"
    kind = "break"
    gb_type = "invalid call to builtin op handler"
    gb_id = "GB0193"
    fix_applicability = "unsafe"
    message = (
        "min()/max() with key= over tensors breaks the graph; stack them and pick with a 1-element "
        "index: `torch.stack(xs)[scores.argmax(0, keepdim=True)][0]`"
    )
    steps = ("torch.stack(xs)[scores.argmax(0, keepdim=True)][0]",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class BestOfN(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.score = nn.Linear(8, 1)

                def forward(self, x: torch.Tensor):
                    samples = [x + 0.1 * i for i in range(3)]
                    return max(samples, key=lambda s: self.score(s).mean())
            """,
            fixed="""
            import torch
            from torch import nn

            class BestOfN(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.score = nn.Linear(8, 1)

                def forward(self, x: torch.Tensor):
                    samples = [x + 0.1 * i for i in range(3)]
                    return torch.stack(samples)[torch.stack([self.score(s).mean() for s in samples]).argmax(0, keepdim=True)][0]
            """,  # noqa: E501 - example code, linted and compared as written
            entry="BestOfN",
            lines=[11],
        ),
        Invalid(
            """
            from torch import nn

            class SignFlip(nn.Module):
                def forward(self, x):
                    flips = [x * (1 - 2 * k) for k in range(2)]
                    chosen = min(flips, key=lambda h: h.abs().sum())
                    return chosen.tanh()
            """,
            fixed="""
            from torch import nn
            import torch

            class SignFlip(nn.Module):
                def forward(self, x):
                    flips = [x * (1 - 2 * k) for k in range(2)]
                    chosen = torch.stack(flips)[torch.stack([h.abs().sum() for h in flips]).argmin(0, keepdim=True)][0]
                    return chosen.tanh()
            """,
            entry="SignFlip",
            note="`x` and `-x` always tie: `min` and `argmin` both pick the first",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BestHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.heads = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

                def forward(self, x):
                    outs = [head(x) for head in self.heads]
                    return max(outs, key=lambda o: o.mean())
            """,
            entry="BestHead",
            note="each head's output shape is its own: no fix (torch.stack would need one shape)",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ShortestCrop(nn.Module):
                def forward(self, x):
                    return min(x, x[:2], x[:3], key=len) * 2
            """,
            entry="ShortestCrop",
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class BestOfNStacked(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.score = nn.Linear(8, 1)

                def forward(self, x):
                    samples = torch.stack([x + 0.1 * i for i in range(3)])
                    best = self.score(samples).mean(dim=(1, 2)).argmax(0, keepdim=True)
                    return samples[best][0]
            """,
            entry="BestOfNStacked",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class LargestLevel(nn.Module):
                def forward(self, x):
                    sizes = {"p3": x.shape[0], "p4": x.shape[0] // 2}
                    level = max(sizes, key=sizes.get)
                    return x * len(level)
            """,
            entry="LargestLevel",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class PeakLogit(nn.Module):
                def forward(self, x):
                    return max([x.amax(), x.mean()]) + min(x.shape, key=lambda d: -d) * x
            """,
            entry="PeakLogit",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not (is_builtin_call(self, node, "min") or is_builtin_call(self, node, "max")):
            return
        if keyword_argument(node, "key") is None:
            return
        positional = positional_arguments(node)
        function = self.context.function
        if function is None or not positional:
            return
        facts = self.context.facts
        if len(positional) == 1:
            element = facts.element_kind(positional[0], function)
        else:
            element = facts.element_kind(cst.List([cst.Element(p) for p in positional]), function)
        if element.tensorish:
            fix = self._stack_fix(node, positional, function) if len(positional) == 1 else None
            self.report(node, fix=fix)

    def _stack_fix(self, node: cst.Call, positional: list[cst.BaseExpression],
                   function: cst.FunctionDef) -> Optional[FixPlan]:
        """`torch.stack(xs)[torch.stack([f(s) for s in xs]).argmax(0, keepdim=True)][0]`, where the
        candidates provably share one shape and `f` is a full reduction."""
        items = positional[0]
        key = keyword_argument(node, "key")
        if not isinstance(items, cst.Name) or key is None or not _full_reduction_key(key.value):
            return None
        values = self.context.local_values(items.value, function)
        if len(values) != 1 or not isinstance(values[0], cst.ListComp) or not self._same_shapes(values[0]):
            return None
        if not _only_read(function, items.value):
            return None
        element = values[0].elt
        lam: cst.Lambda = key.value  # type: ignore[assignment]
        param = lam.params.params[0].name.value
        # torch.stack rests on the candidates being tensors in eager code too: on evidence, or
        # the key calls a method only tensors have on each (`key=lambda s: s.abs().sum()`)
        keyed = any(receives_tensor_only_method(n, param) for n in iter_nodes(lam.body))
        rests_on = ((cst.Module([]).code_for_node(element), EAGER_TENSOR),) if keyed else operand_evidence(
            self.context, element)
        if any(evidence not in SAFE_OPERANDS for _, evidence in rests_on):
            return None
        stack, imports = spell(self.context, "torch.stack")
        pick = "argmax" if self.context.qualname(node.func) == "builtins.max" else "argmin"
        body = cst.Module([]).code_for_node(lam.body)
        replacement = cst.parse_expression(
            f"{stack}({items.value})[{stack}([{body} for {param} in {items.value}]).{pick}(0, keepdim=True)][0]"
        )
        return FixPlan([(node, replacement.with_changes(lpar=node.lpar, rpar=node.rpar))],
                       f"Stack the candidates and pick with `{pick}`", "unsafe", imports, rests_on)

    def _same_shapes(self, comprehension: cst.ListComp) -> bool:
        """True when every element the comprehension makes has one shape and dtype: a tensor
        expression whose loop variable, an int from `range(...)`, only enters arithmetic."""
        loop = comprehension.for_in
        if loop.inner_for_in is not None or loop.ifs or not isinstance(loop.target, cst.Name):
            return False
        if not (isinstance(loop.iter, cst.Call) and self.context.qualname(loop.iter.func) == "builtins.range"):
            return False
        function = self.context.function
        if function is None or self.context.facts.kind(comprehension.elt, function) is not Kind.TENSOR:
            return False
        uses = [(found, parents) for found, parents in _names(comprehension.elt) if found.value == loop.target.value]
        return bool(uses) and all(self._scales_a_tensor(found, parents, function) for found, parents in uses)

    def _scales_a_tensor(self, use: cst.Name, parents: list[cst.CSTNode], function: cst.FunctionDef) -> bool:
        """True when the loop variable `use` (ancestors `parents`, nearest last) enters only
        Python arithmetic that then meets a tensor in `+ - * /`: `x * (1 - 2 * k)`, not
        `x[: k + 1]`; a Python number there broadcasts, so the shape cannot change."""
        node: cst.CSTNode = use
        for parent in reversed(parents):
            if not (isinstance(parent, cst.BinaryOperation)
                    and isinstance(parent.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide))):
                return False
            other = parent.right if parent.left is node else parent.left
            if self.context.facts.kind(other, function) is Kind.TENSOR:
                return True
            node = parent
        return False


# Tensor methods that, called without arguments, reduce a tensor to one 0-d value.
_FULL_REDUCTIONS = frozenset({"mean", "sum", "norm", "amax", "amin", "max", "min", "std", "var", "prod"})


def _full_reduction_key(key: cst.BaseExpression) -> bool:
    """`lambda s: <expr of s>.mean()`: one 0-d tensor score per candidate."""
    if not (isinstance(key, cst.Lambda) and len(key.params.params) == 1 and not key.params.kwonly_params
            and key.params.star_arg is cst.MaybeSentinel.DEFAULT and key.params.star_kwarg is None):
        return False
    body = key.body
    return (isinstance(body, cst.Call) and not body.args and isinstance(body.func, cst.Attribute)
            and body.func.attr.value in _FULL_REDUCTIONS
            and _mentions_name(body.func.value, key.params.params[0].name.value))


def _names(node: cst.CSTNode) -> list[tuple[cst.Name, list[cst.CSTNode]]]:
    """Every Name below `node`, with its ancestors (nearest last)."""
    found: list[tuple[cst.Name, list[cst.CSTNode]]] = []
    stack: list[cst.CSTNode] = []

    def enter(child: cst.CSTNode) -> bool:
        if isinstance(child, cst.Name):
            found.append((child, list(stack)))
        stack.append(child)
        return True

    def leave(child: cst.CSTNode) -> None:
        stack.pop()

    walk(node, enter, leave)
    return found


def _mentions_name(node: cst.CSTNode, name: str) -> bool:
    return any(found.value == name for found, _ in _names(node))


def _only_read(function: cst.FunctionDef, name: str) -> bool:
    """True when `function` never mutates the list `name` after building it: no method call
    on it (`append`, `sort`...), no item or slice assignment, no `del`."""
    for found, parents in _names(function.body):
        if found.value != name or not parents:
            continue
        parent = parents[-1]
        if isinstance(parent, cst.Attribute) and parent.value is found:
            return False
        if isinstance(parent, cst.Subscript) and len(parents) > 1 and isinstance(
                parents[-2], (cst.AssignTarget, cst.AugAssign, cst.Del)):
            return False
        if isinstance(parent, (cst.AugAssign, cst.Del)):
            return False
    return True
