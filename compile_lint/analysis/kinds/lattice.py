"""The kinds of value the facts tell apart, and how they merge.

`join` merges the values one name is bound to (flow-insensitively); `combine` gives the kind
of arithmetic or a comparison over operands of given kinds.
"""

from __future__ import annotations

import enum
from typing import Iterable


class Kind(enum.Enum):
    """What an expression holds, as far as compile-lint can tell."""

    TENSOR = "tensor"  # certainly a tensor (or a tuple of tensors)
    MAYBE_TENSOR = "maybe-tensor"  # an optional tensor, or a tensor on some paths only
    SHAPE = "shape"  # sizes: x.shape, x.size(i), x.dim(), len(x); guarded by Dynamo
    DATA = "data"  # a Python value read out of tensor data: .item(), .tolist(), float(t)
    PY = "python"  # a Python value that does not depend on tensor data
    NDARRAY = "ndarray"
    LIST = "list"
    DICT = "dict"
    MODULE = "module"
    SELF = "self"
    UNKNOWN = "unknown"
    # A name read while its own definition is being analysed (`x = self.norm(x)`):
    # neutral in merges, so the other assignments decide.
    PENDING = "pending"

    @property
    def tensorish(self) -> bool:
        """True for certain and possible tensors."""
        return self in (Kind.TENSOR, Kind.MAYBE_TENSOR)


def join(kinds: Iterable[Kind]) -> Kind:
    """The kind of a name assigned several values (flow-insensitive merge)."""
    found = set(kinds) - {Kind.PENDING}
    if not found:
        return Kind.PENDING if Kind.PENDING in set(kinds) else Kind.UNKNOWN
    if len(found) == 1:
        return found.pop()
    if found <= {Kind.PY, Kind.SHAPE}:
        return Kind.SHAPE
    if found & {Kind.TENSOR, Kind.MAYBE_TENSOR}:
        return Kind.MAYBE_TENSOR
    if Kind.DATA in found:
        return Kind.DATA
    return Kind.UNKNOWN


def combine(kinds: list[Kind]) -> Kind:
    """The kind of arithmetic or a comparison over operands of `kinds`."""
    kinds = [k for k in kinds if k is not Kind.PENDING] or [Kind.PENDING]
    if kinds == [Kind.PENDING]:
        return Kind.PENDING
    if Kind.TENSOR in kinds:
        return Kind.TENSOR
    if Kind.MAYBE_TENSOR in kinds:
        return Kind.MAYBE_TENSOR
    if Kind.NDARRAY in kinds:
        return Kind.NDARRAY
    if Kind.DATA in kinds:
        return Kind.DATA
    if Kind.SHAPE in kinds and all(k in (Kind.SHAPE, Kind.PY) for k in kinds):
        return Kind.SHAPE
    if all(k is Kind.PY for k in kinds):
        return Kind.PY
    return Kind.UNKNOWN
