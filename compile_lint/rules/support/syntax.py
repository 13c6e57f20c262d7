"""Small syntactic questions about libcst nodes: `self.NAME`, literals, call arguments, parameters."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.rules.base import Rule


def self_attribute(expr: cst.BaseExpression) -> Optional[str]:
    """`NAME` when `expr` is `self.NAME`."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def keyword_argument(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_arguments(call: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def is_builtin_call(rule: Rule, call: cst.Call, name: str) -> bool:
    return rule.context.qualname(call.func) == f"builtins.{name}"


def all_params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def find_param(function: cst.FunctionDef, name: str) -> Optional[cst.Param]:
    for param in all_params(function):
        if param.name.value == name:
            return param
    return None


def argument_for(function: cst.FunctionDef, param: cst.Param, call: cst.Call) -> Optional[cst.Arg]:
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


def class_method(cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
    """The method `name` defined in the body of `cls` (not its bases), or None."""
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def annotation_name(param: cst.Param) -> str:
    if param.annotation is None:
        return ""
    expr = param.annotation.annotation
    return expr.value if isinstance(expr, cst.Name) else ""
