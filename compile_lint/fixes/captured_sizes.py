"""The uses of a number read from a tensor that compile once `capture_scalar_outputs` is set (torch 2.13).

Measured by benchmarks/scalar_size_capture.py and benchmarks/config_fix_calibration.py
(results in benchmarks/results/): a slice bound (`x[:n]`, `x[n:]`, `x[:, :n]`; starts in two
dimensions of one read make Dynamo fail), the one index of a tensor (`x[n]`), a size of
`torch.zeros/ones/empty/full/arange/randn`, of `x.new_zeros/new_ones`, `x.expand`,
`x.repeat`, `x.narrow`, `x.topk`, `x.roll`, or a pad of `F.pad`. Not: `x.view(n, ...)`/
`reshape` and `split` sizes (a recompile per value read from a 0-d input; split fails when
computed), an index after the first (`x[:, n]`: IndexError).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

# torch functions whose positional arguments are sizes (`torch.arange` only with one argument).
_SIZE_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.randn"})
# Tensor methods whose positional arguments measured clean: sizes, `narrow`'s start and length,
# `topk`'s k, `roll`'s shift.
_SIZE_METHODS = {"new_zeros": None, "new_ones": None, "expand": None, "repeat": None,
                 "narrow": (1, 2), "topk": (0,), "roll": (0,)}
# The same for a 0-d tensor passed as the size: `narrow`'s start and a `roll` shift failed
# ("Pending unbacked symbols not in returned outputs").
_TENSOR_SIZE_METHODS = {name: positions for name, positions in _SIZE_METHODS.items() if name != "roll"} | {
    "narrow": (2,)}
# Functions taking a tuple of sizes at a positional argument: `torch.full((n,), v)`, `F.pad(x, (0, n))`.
_SIZE_TUPLES = {"torch.full": 0, "torch.nn.functional.pad": 1}



def captured_size(context: FileContext, node: cst.CSTNode, implicit: bool = False) -> bool:
    """True when `node` is a slice bound, the one index of a tensor, or a size argument measured clean.

    `implicit`: `node` is the 0-d tensor itself, which torch reads (JIT204's uses), not a number.
    """
    parent = context.parent(node)
    if isinstance(parent, cst.Slice):
        return (node in (parent.lower, parent.upper) and _subscripted_tensor(context, context.parent(parent), False)
                and not _starts_in_two_dims(context, parent))
    if isinstance(parent, cst.Index):
        return not implicit and parent.value is node and _subscripted_tensor(context, context.parent(parent), True)
    if isinstance(parent, cst.Element):
        sequence = context.parent(parent)
        argument = context.parent(sequence) if isinstance(sequence, (cst.Tuple, cst.List)) else None
        return isinstance(argument, cst.Arg) and argument.value is sequence and _size_tuple(context, argument, implicit)
    if isinstance(parent, cst.Arg) and parent.value is node and parent.keyword is None and parent.star == "":
        return _size_argument(context, parent, implicit)
    return False


def _subscripted_tensor(context: FileContext, element: Optional[cst.CSTNode], only_index: bool) -> bool:
    """`element` is part of `x[...]` with `x` a tensor; with `only_index`, its one element."""
    subscript = context.parent(element) if isinstance(element, cst.SubscriptElement) else None
    if not isinstance(subscript, cst.Subscript) or (only_index and len(subscript.slice) != 1):
        return False
    return context.kind(subscript.value).tensorish


def _starts_in_two_dims(context: FileContext, bound: cst.Slice) -> bool:
    """`x[:, a:, b:]` read (not written): slices with computed starts in more than one dimension.

    Measured on torch 2.13: with the starts captured, Dynamo fails on the read
    ("PendingUnbackedSymbolNotFound"), under `fullgraph=True` too; one such dimension, or
    the same slices written into (`y[:, a:, b:] = v`), compile.
    """
    element = context.parent(bound)
    subscript = context.parent(element) if isinstance(element, cst.SubscriptElement) else None
    if not isinstance(subscript, cst.Subscript) or isinstance(context.parent(subscript), cst.AssignTarget):
        return False
    starts = [item.slice.lower for item in subscript.slice
              if isinstance(item.slice, cst.Slice) and item.slice.lower is not None]
    return sum(not isinstance(start, cst.Integer) for start in starts) > 1


def _call_of(context: FileContext, argument: cst.Arg) -> tuple[Optional[cst.Call], int]:
    """The call `argument` is passed to, and its position among the positional arguments."""
    call = context.parent(argument)
    if not isinstance(call, cst.Call):
        return None, -1
    positional = [arg for arg in call.args if arg.keyword is None and arg.star == ""]
    return call, next((index for index, arg in enumerate(positional) if arg is argument), -1)


def _size_argument(context: FileContext, argument: cst.Arg, implicit: bool) -> bool:
    call, position = _call_of(context, argument)
    if call is None or position < 0:
        return False
    qualified = context.qualname(call.func) or ""
    if qualified in _SIZE_FACTORIES:
        return True
    if qualified == "torch.arange":
        return len(call.args) == 1
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SIZE_METHODS and qualified == "":
        positions = (_TENSOR_SIZE_METHODS if implicit else _SIZE_METHODS).get(func.attr.value, ())
        return (positions is None or position in positions) and context.kind(func.value).tensorish
    return False


def _size_tuple(context: FileContext, argument: cst.Arg, implicit: bool) -> bool:
    call, position = _call_of(context, argument)
    if call is None:
        return False
    qualified = context.qualname(call.func) or ""
    return (_SIZE_TUPLES.get(qualified, -1) == position) and not (implicit and qualified == "torch.nn.functional.pad")
