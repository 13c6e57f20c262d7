"""The callers a finding rests on: "(`scale` is a tensor: pkg/model.py:19 passes `scale`)".

A helper's parameter is a tensor in its file because a traced caller in another file
passes one (the program model, `Model.passes`); a finding whose expression uses that parameter
says which call, so the reader can follow the value without the other file open.
"""

from __future__ import annotations

import os
from typing import Optional

import libcst as cst


def _names(node: cst.CSTNode) -> set[str]:
    found = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        pending.extend(current.children)
    return found


def with_evidence(message: str, node: cst.CSTNode, record: Optional[object]) -> str:
    """`message`, naming for each parameter `node` uses the other file's call that makes it a tensor."""
    evidence = getattr(record, "evidence", ())
    if not evidence:
        return message
    names = _names(node)
    parts = []
    for name, path, line, spelled in evidence:
        if name in names:
            relative = os.path.relpath(path)
            shown = path if relative.startswith("..") else relative
            passes = f"`{spelled}`" if spelled else "a tensor"
            parts.append(f"`{name}` is a tensor: {shown}:{line} passes {passes}")
    return f"{message} ({'; '.join(parts)})" if parts else message
