"""Traced calls of functions registered with `allow_in_graph` whose bodies need tensor data.

Dynamo does not trace such a function: it runs it on fake tensors to put one call in the
graph. A body that reads a tensor's data (`.item()`, an `if` on a tensor) cannot run there
("Data dependent operator", measured on torch 2.13): the graph breaks at the call, and the
function is then compiled as a frame of its own. The project's program model finds these
calls (`FileReach.allowed_breaks`); the rule of the body's cause reports the call.
"""

from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from compile_lint.analysis.syntax.imports import dotted_name


def allowed_break(context, call: cst.Call, cause: str) -> Optional[str]:
    """"`helper()` (ops.py:31)" when `call` is a traced call of an `allow_in_graph` function that needs tensor
    data for `cause` ("item": `.item()` and the like, "branch": an `if` on a tensor); else None."""
    reach = context.reach
    function = context.function
    breaks = getattr(reach, "allowed_breaks", None) if reach is not None else None
    if not breaks or function is None:
        return None
    spelled = dotted_name(call.func)
    qualname = context.regions.qualnames.get(function)
    for caller, name, found, path, line in sorted(breaks):
        if caller == qualname and name == spelled and found == cause:
            return f"`{name.rsplit('.', 1)[-1]}()` ({display_path(context.path, path)}:{line})"
    return None


def display_path(linted: str, other: str) -> str:
    """`other` relative to the linted file's directory when it is beside or below it, else as found."""
    relative = os.path.relpath(other, os.path.dirname(os.path.abspath(linted)))
    return other if relative.startswith("..") else relative
