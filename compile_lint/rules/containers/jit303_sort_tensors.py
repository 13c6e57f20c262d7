"""JIT303 sort-tensors: `sorted(...)` or `list.sort()` that compares tensors breaks the graph."""

from __future__ import annotations

from typing import Optional, Union

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.syntax import is_builtin_call, keyword_argument, positional_arguments


class SortTensors(Rule):
    """`sorted(...)` or `list.sort()` that compares tensors breaks the graph.

    Why: Dynamo sorts lists only when every key is a Python constant; comparing tensors
    (no `key=` over a list of tensors, a `key=` that returns a tensor, or
    `sorted(d.items())` over a dict of tensors, whose tuples hold tensors) is
    "sort with non-constant keys"; with `fullgraph=True` compilation fails. Sorting by
    shapes, `len` or string keys is fine.

    Instead: stack the keys and use `torch.sort` / `torch.argsort`, then index. For
    `sorted(d.items())` the fix adds `key=lambda kv: kv[0]` (safe: dict keys are unique,
    so the values were never compared).
    """

    code = "JIT303"
    name = "sort-tensors"
    kind = "break"
    gb_type = "sort with non-constant keys"
    gb_id = "GB0207"
    fix_applicability = "safe"
    message = (
        "sorting compares tensors and breaks the graph (sort with non-constant keys); "
        "stack the keys, sort with `torch.argsort(torch.stack(keys))`, then index"
    )
    steps = ("torch.argsort(torch.stack(keys))",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            def merge(scores):
                return torch.stack(sorted(scores))

            class Pool(nn.Module):
                def forward(self, x):
                    return merge([x.sum(), x.mean(), x.amax()])
            """,
            entry="Pool",
            lines=[5],
            note="the list of tensors comes from the caller",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MultiTaskHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cls = nn.Linear(8, 8)
                    self.box = nn.Linear(8, 8)

                def forward(self, x):
                    outputs = {"cls": self.cls(x), "box": self.box(x)}
                    return torch.cat([v for _, v in sorted(outputs.items())], -1)
            """,
            fixed="""
            import torch
            from torch import nn

            class MultiTaskHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cls = nn.Linear(8, 8)
                    self.box = nn.Linear(8, 8)

                def forward(self, x):
                    outputs = {"cls": self.cls(x), "box": self.box(x)}
                    return torch.cat([v for _, v in sorted(outputs.items(), key=lambda kv: kv[0])], -1)
            """,
            entry="MultiTaskHead",
            lines=[12],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BeamRanker(nn.Module):
                def forward(self, beams):
                    candidates = [beams, beams * 0.5, beams - 1]
                    candidates.sort(key=lambda b: b.logsumexp(-1).sum(), reverse=True)
                    return candidates[0]
            """,
            entry="BeamRanker",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MedianOfMeans(nn.Module):
                def forward(self, x):
                    means = [chunk.mean() for chunk in x.chunk(4)]
                    return sorted(means)[len(means) // 2]
            """,
            entry="MedianOfMeans",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class FeaturePyramid(nn.Module):
                def forward(self, x):
                    levels = {}
                    levels["p4"] = x.mean(0, keepdim=True)
                    levels["p3"] = x.amax(0, keepdim=True)
                    return torch.cat([v for _, v in sorted(levels.items())])
            """,
            fixed="""
            import torch
            from torch import nn

            class FeaturePyramid(nn.Module):
                def forward(self, x):
                    levels = {}
                    levels["p4"] = x.mean(0, keepdim=True)
                    levels["p3"] = x.amax(0, keepdim=True)
                    return torch.cat([v for _, v in sorted(levels.items(), key=lambda kv: kv[0])])
            """,
            entry="FeaturePyramid",
            lines=[9],
            note="a dict filled key by key in forward",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            def ordered(sizes):
                return sorted(sizes)

            class Pad(nn.Module):
                def forward(self, x):
                    widths = ordered([x.shape[-1], 4, 2])
                    return x * widths[0]
            """,
            entry="Pad",
            note="the callers pass Python ints",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ByName(nn.Module):
                def forward(self, x):
                    heads = {"b": x * 2, "a": x}
                    return torch.cat([heads[k] for k in sorted(heads)], -1)
            """,
            entry="ByName",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ByLength(nn.Module):
                def forward(self, x):
                    crops = [x, x[:2], x[:3]]
                    crops.sort(key=lambda c: c.shape[0])
                    return torch.cat(sorted(crops, key=len))
            """,
            entry="ByLength",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class RankedBeams(nn.Module):
                def forward(self, beams):
                    candidates = torch.stack([beams, beams * 0.5, beams - 1])
                    order = candidates.logsumexp(-1).sum(-1).argsort(descending=True)
                    return candidates[order][0]
            """,
            entry="RankedBeams",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Strides(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.strides = {"p4": 16, "p3": 8}

                def forward(self, x):
                    order = sorted(self.strides.items())
                    return x * order[0][1]
            """,
            entry="Strides",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    scales = {}
                    scales["p4"] = 2
                    scales["p3"] = 3
                    for _, scale in sorted(scales.items()):
                        x = x * scale
                    return x
            """,
            note="a dict filled in forward with Python numbers",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if is_builtin_call(self, node, "sorted"):
            positional = positional_arguments(node)
            if positional:
                self._check(node, positional[0], allow_fix=True)
        elif isinstance(func, cst.Attribute) and func.attr.value == "sort" and not positional_arguments(node):
            if self.context.kind(func.value) is Kind.LIST:
                self._check(node, func.value, allow_fix=False)

    def _check(self, node: cst.Call, iterable: cst.BaseExpression, allow_fix: bool) -> None:
        key = keyword_argument(node, "key")
        if key is None:
            items_of = _items_receiver(iterable)
            if items_of is not None:
                # context.function is None at module level; the kinds' annotations (analysis/kinds/) say FunctionDef.
                if (self.context.facts.dict_value_kind(items_of, self.context.function).tensorish  # type: ignore[arg-type]
                        or _filled_with_tensors(self, items_of)):
                    self.report(node, fix=self._key_fix(node) if allow_fix else None)
                return
            if (self.context.facts.element_kind(iterable, self.context.function).tensorish  # type: ignore[arg-type]
                    or _callers_pass_tensors(self, iterable)):
                self.report(node)
            return
        if _key_kind(self, key.value, iterable) in (Kind.TENSOR, Kind.MAYBE_TENSOR, Kind.DATA):
            self.report(node)

    def _key_fix(self, node: cst.Call) -> FixPlan:
        first, *rest = node.args
        space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if isinstance(first.comma, cst.Comma):
            # The new argument takes the separator that followed the first one, so a
            # call written one argument per line stays that way.
            key_comma: Union[cst.Comma, cst.MaybeSentinel] = first.comma
            first_comma = first.comma if rest else cst.Comma(whitespace_after=node.whitespace_before_args)
            if not rest and isinstance(node.whitespace_before_args, cst.SimpleWhitespace):
                first_comma = space
        else:
            key_comma, first_comma = cst.MaybeSentinel.DEFAULT, space
        key = cst.Arg(
            keyword=cst.Name("key"),
            value=cst.parse_expression("lambda kv: kv[0]"),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                  whitespace_after=cst.SimpleWhitespace("")),
            comma=key_comma,
        )
        new = node.with_changes(args=[first.with_changes(comma=first_comma), key, *rest])
        return FixPlan([(node, new)], "Sort by key only: key=lambda kv: kv[0]", "safe")


def _callers_pass_tensors(rule: Rule, expr: cst.BaseExpression) -> bool:
    """`expr` is a parameter never rebound, and every call of its function in this file passes
    a list whose elements are tensors (`merge([a.sum(), b.sum()])` for `def merge(xs)`)."""
    context = rule.context
    function = context.function
    if not isinstance(expr, cst.Name) or function is None or context.local_values(expr.value):
        return False
    if not isinstance(context.parent(function), cst.Module):  # calls by its bare name are its own
        return False
    params = function.params
    names = [param.name.value for param in (*params.posonly_params, *params.params)]
    if expr.value not in names and expr.value not in [p.name.value for p in params.kwonly_params]:
        return False
    position = names.index(expr.value) if expr.value in names else None
    calls = context.calls_named(function.name.value)
    if not calls:
        return False
    for call in calls:
        caller = context.module_index.enclosing_function.get(call)
        argument = _argument(call, expr.value, position)
        if caller is None or argument is None or context.facts.element_kind(argument, caller) is not Kind.TENSOR:
            return False
    return True


def _argument(call: cst.Call, name: str, position: Optional[int]) -> Optional[cst.BaseExpression]:
    """What `call` passes to parameter `name` (at `position`), or None."""
    if any(arg.star for arg in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [arg.value for arg in call.args if arg.keyword is None]
    return positional[position] if position is not None and position < len(positional) else None


def _items_receiver(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`d` when `expr` is `d.items()`."""
    if (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "items" and not expr.args):
        return expr.func.value
    return None


def _filled_with_tensors(rule: Rule, expr: cst.BaseExpression) -> bool:
    """A local dict built in this function (`{}`, `dict(...)`, then `d[k] = v`) whose values are tensors."""
    context = rule.context
    function = context.function
    if not isinstance(expr, cst.Name) or function is None:
        return False
    bindings = context.local_values(expr.value)
    if not bindings or not all(_is_dict_constructor(rule, value) for value in bindings):
        return False
    values: list[cst.BaseExpression] = []
    for binding in bindings:
        if isinstance(binding, cst.Dict):
            values += [element.value for element in binding.elements if isinstance(element, cst.DictElement)]
        elif isinstance(binding, cst.Call):
            values += [arg.value for arg in binding.args if arg.keyword is not None]
    values += _subscript_assignments(function, expr.value)
    return bool(values) and all(context.kind(value) is Kind.TENSOR for value in values)


def _is_dict_constructor(rule: Rule, value: object) -> bool:
    """`{...}` or `dict(k=v, ...)` (keywords only: a mapping argument could hold anything)."""
    if isinstance(value, cst.Dict):
        return True
    return (isinstance(value, cst.Call) and is_builtin_call(rule, value, "dict")
            and all(arg.keyword is not None for arg in value.args))


def _subscript_assignments(function: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """The values of `name[key] = value` statements in `function` (not in nested functions)."""
    found: list[cst.BaseExpression] = []

    class _Stores(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                store = target.target
                if isinstance(store, cst.Subscript) and isinstance(store.value, cst.Name) and store.value.value == name:
                    found.append(node.value)

    visit(function, _Stores())
    return found


def _key_kind(rule: Rule, key: cst.BaseExpression, iterable: cst.BaseExpression) -> Kind:
    """The kind a `key=` function returns for the elements of `iterable`; UNKNOWN if unsure."""
    if not isinstance(key, cst.Lambda) or len(key.params.params) != 1:
        return Kind.UNKNOWN
    function = rule.context.function
    if function is None:
        return Kind.UNKNOWN
    facts = rule.context.facts
    element = facts.element_kind(iterable, function)
    return facts.kind_with_bindings(key.body, function, {key.params.params[0].name.value: element})

